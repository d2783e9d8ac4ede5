"""Stitch a web property's page views into visits: a user's visit ends when they are idle for more
than a gap. A SQLite analytics database holds the events of several tracked properties, each stored
under a SHA-256 prefix of its tracking name (the delivered value), so only the name selects the
property. Variants: visits per user, each user's longest visit, and the number of bounce visits
(one page view). Traps by level: views exactly one gap apart (same visit), retransmitted duplicate
views, crawler traffic, ISO timestamps with a `T` and `Z`, then UTC offsets that must be compared as
instants."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from tmax.families import sql as dbsql
from tmax.families.base import Family, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.unseen import distinct, key_cmd, key_of, unseen

REFERENCE = r'''
import datetime as dt
import re
import sqlite3
import sys

GAP = @GAP@  # minutes of inactivity after which the next view starts a new visit (a gap of exactly GAP does not)
DROP_BOTS = @DROP_BOTS@  # drop views whose user agent mentions "bot" (any case)
STAMP = re.compile(r"^(\d{4})-(\d\d)-(\d\d)[ T](\d\d):(\d\d):(\d\d)(Z|[+-]\d\d:\d\d)?$")


def instant(text):
    """Seconds since the epoch; a stamp without an offset is UTC."""
    m = STAMP.match(text.strip())
    y, mo, d, h, mi, s = (int(m.group(i)) for i in range(1, 7))
    secs = int(dt.datetime(y, mo, d, h, mi, s, tzinfo=dt.timezone.utc).timestamp())
    off = m.group(7)
    if off and off != "Z":
        sign = 1 if off[0] == "+" else -1
        secs -= sign * (int(off[1:3]) * 3600 + int(off[4:6]) * 60)
    return secs


def utc(secs):
    return dt.datetime.fromtimestamp(secs, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def visits(conn, key):
    """user -> list of visits, each a sorted list of (instant, page) without repeats."""
    views = {}
    for user, ts, page, agent in conn.execute(
            "SELECT user_id, ts, page, user_agent FROM events WHERE property = ?", (key,)):
        if DROP_BOTS and "bot" in (agent or "").lower():
            continue
        views.setdefault(user, set()).add((instant(ts), page))  # a retransmission is the same view
    out = {}
    for user in sorted(views):
        cur, runs = [], []
        for v in sorted(views[user]):
            if cur and v[0] - cur[-1][0] > GAP * 60:
                runs.append(cur)
                cur = []
            cur.append(v)
        runs.append(cur)
        out[user] = runs
    return out


def report(conn, key, variant):
    vs = visits(conn, key)
    if variant == "per_user":
        return "".join(f"{u},{len(r)}\n" for u, r in vs.items())
    if variant == "longest":
        lines = []
        for u, runs in vs.items():
            best = max(runs, key=lambda r: (r[-1][0] - r[0][0], -r[0][0]))  # longest, then earliest
            lines.append(f"{u},{utc(best[0][0])},{utc(best[-1][0])},{best[-1][0] - best[0][0]}\n")
        return "".join(lines)
    return f"{sum(1 for runs in vs.values() for r in runs if len(r) == 1)}\n"  # bounces


if __name__ == "__main__":
    sys.stdout.write(report(sqlite3.connect(sys.argv[1]), sys.argv[2], sys.argv[3]))
'''

PAGES = ("/", "/pricing", "/docs", "/blog", "/signup", "/login", "/cart", "/checkout", "/about", "/search")
AGENTS = ("Mozilla/5.0 (X11; Linux x86_64) Firefox/128.0", "Mozilla/5.0 (Macintosh) Safari/17.4",
          "Mozilla/5.0 (Windows NT 10.0) Chrome/126.0")
BOTS = ("Googlebot/2.1 (+http://www.google.com/bot.html)", "Mozilla/5.0 (compatible; bingbot/2.0)",
        "AhrefsBot/7.0")
SCHEMA = ("CREATE TABLE events (id INTEGER PRIMARY KEY, property TEXT NOT NULL, user_id TEXT NOT NULL, "
          "ts TEXT NOT NULL, page TEXT NOT NULL, user_agent TEXT);\n")


@dataclass(frozen=True)
class Knobs:
    users: int  # users per property
    visits: int  # visits per user, at most
    decoys: int  # other properties in the same table
    traps: int  # 1: exact-gap views, duplicates; 2: crawlers, ISO stamps; 3: UTC offsets


@register
class SqlSessionStitching(Family):
    name = "sql_session_stitching"
    domain = "data_querying"
    skill_types = ("Temporal Queries", "Analytical Queries")
    primitive_skills = ("lag and lead comparisons", "window functions", "group-by aggregation",
                        "deduplication by key", "timezone conversion", "sessionization by inactivity gap")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("per_user", "longest", "bounces")
    levels = {0: Knobs(users=3, visits=2, decoys=1, traps=0),
              1: Knobs(users=6, visits=3, decoys=2, traps=0),
              2: Knobs(users=10, visits=4, decoys=3, traps=1),
              3: Knobs(users=14, visits=5, decoys=3, traps=2),
              4: Knobs(users=18, visits=6, decoys=3, traps=3)}

    def _views(self, t, gap, start):
        """(user, instant, page, agent) rows for one property."""
        k, rng = t.knobs, t.rng
        rows = []
        users = distinct(lambda: f"u{rng.randrange(1000, 10000)}", k.users)
        for user in users:
            now = start + rng.randrange(0, 6 * 3600)
            agent = rng.choice(AGENTS)
            for vi in range(rng.randint(1, k.visits)):
                views = rng.choice([1, 1, 2, 3, 4, 6])
                for i in range(1 if user == users[0] and vi == 0 else views):  # at least one bounce
                    if i:
                        step = rng.randrange(5, gap * 60)
                        if k.traps >= 1 and rng.random() < 0.15:
                            step = gap * 60  # exactly one gap: still the same visit
                        now += step
                    rows.append((user, now, rng.choice(PAGES), agent))
                    if k.traps >= 1 and rng.random() < 0.08:  # retransmitted view
                        rows.append(rows[-1])
                now += gap * 60 + rng.choice([1, 60, 900, 4 * 3600, 20 * 3600])
        if k.traps >= 2:  # crawlers hammer the site in many one-view "visits"
            for bot in distinct(lambda: f"u{rng.randrange(1000, 10000)}", 2, users):
                now = start + rng.randrange(0, 3600)
                agent = rng.choice(BOTS)
                for _ in range(rng.randrange(4, 9)):
                    rows.append((bot, now, rng.choice(PAGES), agent))
                    now += gap * 60 + rng.randrange(60, 3000)
        return rows

    def _stamp(self, t, secs):
        k, rng = t.knobs, t.rng
        when = dt.datetime.fromtimestamp(secs, dt.timezone.utc)
        r = rng.random()
        if k.traps >= 3 and r < 0.35:  # the same instant, written in a local offset
            hours = rng.choice([-5, -4, 1, 2, 5.5, 9])
            local = when + dt.timedelta(hours=hours)
            sign = "+" if hours >= 0 else "-"
            hh, mm = int(abs(hours)), int(abs(hours) * 60) % 60
            return local.strftime("%Y-%m-%dT%H:%M:%S") + f"{sign}{hh:02d}:{mm:02d}"
        if k.traps >= 2 and r < 0.6:
            return when.strftime("%Y-%m-%dT%H:%M:%SZ")
        return when.strftime("%Y-%m-%d %H:%M:%S")

    def output_case(self, t: TaskBuilder) -> None:
        k, rng, variant = t.knobs, t.rng, t.variant
        gap = rng.choice([15, 20, 30, 45])
        day = dt.datetime(2025, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(days=rng.randrange(300))
        start = int(day.timestamp())
        src = fill(REFERENCE, GAP=gap, DROP_BOTS=k.traps >= 2)
        ref = run_python(src)
        props = [self._views(t, gap, start) for _ in range(1 + k.decoys)]
        placeholder = [(i, v) for i, rows in enumerate(props) for v in rows]
        rng.shuffle(placeholder)
        stamped = [(i, u, self._stamp(t, s), p, a) for i, (u, s, p, a) in placeholder]
        # The tracking names are drawn once the data exist, so the target's name shows nowhere in them.
        target = unseen(t, lambda: t.code(2), "\n".join(repr(r) for r in stamped))
        keys = [key_of(n) for n in [target, *distinct(lambda: t.code(2), k.decoys, [target])]]
        rows = [(n + 1, keys[i], u, ts, p, a) for n, (i, u, ts, p, a) in enumerate(stamped)]
        sql = dbsql.script(SCHEMA, {"events": rows})
        truth = ref["report"](dbsql.in_memory(sql), keys[0], variant)
        dbsql.ship(t, sql, "/app/db/analytics.db")

        rules = [f"A user's visit is a run of their page views in which each view follows the previous one by "
                 f"at most {gap} minutes; a longer pause starts a new visit. Visits are per user (`user_id`)."]
        if k.traps >= 1:
            rules.append(f"Views exactly {gap} minutes apart belong to the same visit. The tracker sometimes "
                         "sends a view twice: rows with the same user, instant and page are one view.")
        if k.traps >= 2:
            rules.append("Crawler traffic does not count: drop every row whose `user_agent` contains `bot` in any "
                         "letter case. Timestamps are UTC, written either `YYYY-MM-DD HH:MM:SS` or ISO 8601 "
                         "with `T` and `Z`.")
        if k.traps >= 3:
            rules.append("Some clients report local time with a UTC offset (`2025-03-01T10:00:00+02:00` is "
                         "08:00:00 UTC): compare instants, not strings.")
        ask = {"per_user": ("the number of visits of every user of the property, as CSV lines `user_id,visits` "
                            "without a header, sorted by `user_id`"),
               "longest": ("every user's longest visit (from its first to its last view; on a tie the earlier "
                           "visit), as CSV lines `user_id,first_view,last_view,seconds` without a header, the "
                           "views in UTC as `YYYY-MM-DD HH:MM:SS`, sorted by `user_id`"),
               "bounces": "the number of bounce visits of the property: visits of exactly one page view"}[variant]
        if t.level == 0:
            t.say(f"`/app/db/analytics.db` (SQLite) has a table `events(property, user_id, ts, page, ...)`, "
                  f"timestamps in UTC. {rules[0]} I need {ask}. `property` is the first 16 hex digits of the "
                  "SHA-256 of the property's tracking name (`printf %s <name> | sha256sum | cut -c1-16`).")
        else:
            t.say("Our analytics replica `/app/db/analytics.db` (SQLite) keeps the page views of every property "
                  "we track in one table, `events(id, property, user_id, ts, page, user_agent)`. `property` is "
                  "the first 16 hex digits of the SHA-256 of the property's tracking name (`printf %s <name> | "
                  "sha256sum | cut -c1-16`); other properties' rows are in the same table and must be left out."
                  "\n\n" + "\n".join(f"- {r}" for r in rules) + f"\n\nFor the property named below I need {ask}.")
        v = t.deliver(target, "the property's tracking name")
        t.add_solution_file("visits.py", src)
        out = "/app/out/bounces.txt" if variant == "bounces" else "/app/out/visits.csv"
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\nkey={key_cmd(v)}\n'
                f'python3 /solution/visits.py /app/db/analytics.db "$key" {variant} > {out}')
        if variant == "bounces":
            t.expect_number(out, float(truth), what="the number of bounce visits")
        else:
            t.expect_output(out, truth, "the report")
