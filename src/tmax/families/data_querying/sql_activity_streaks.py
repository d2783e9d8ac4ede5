"""Gaps and islands over daily activity: runs of consecutive calendar days on which a user was active in
one app. A SQLite product-analytics database holds the events of several apps, each stored under a
SHA-256 prefix of the app's name (the delivered value). Variants: every user's longest streak, the
streak each user is on as of the report date, and each user's longest idle stretch between two active
days. Traps by level: several events a day (one active day), streaks across month ends and leap days,
then local calendar days through a UTC offset with events near midnight, internal test accounts and
event kinds that are not activity, and timestamps mixing ISO text with epoch seconds."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from tmax.families import sql as dbsql
from tmax.families.base import Family, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.data_querying._keyed import key_how, keyed, pose, rules_at
from tmax.families.unseen import distinct

REFERENCE = r'''
import datetime as dt
import sqlite3
import sys

OFFSET = @OFFSET@  # minutes east of UTC: activity days are local calendar days
ACTIVE = @ACTIVE@  # event kinds that count as activity (None: every kind)
USERS = @USERS@  # join the users table and leave internal accounts out


def local_day(ts):
    """The local calendar day of an ISO UTC stamp (`YYYY-MM-DD HH:MM:SS`, or with `T` and `Z`) or epoch seconds."""
    if isinstance(ts, (int, float)):
        when = dt.datetime.fromtimestamp(ts, dt.timezone.utc)
    else:
        when = dt.datetime.strptime(ts.strip().rstrip("Z").replace("T", " "), "%Y-%m-%d %H:%M:%S")
        when = when.replace(tzinfo=dt.timezone.utc)
    return (when + dt.timedelta(minutes=OFFSET)).date()


def streaks(conn, app):
    """user -> list of (first day, last day) runs of consecutive active days, in order."""
    q = "SELECT e.user_id, e.ts, e.kind FROM events e"
    if USERS:
        q += " JOIN users u ON u.id = e.user_id AND u.is_internal = 0"
    days = {}
    for user, ts, kind in conn.execute(q + " WHERE e.app = ?", (app,)):
        if ACTIVE is None or kind in ACTIVE:
            days.setdefault(user, set()).add(local_day(ts))
    out = {}
    for user in sorted(days):
        runs = []
        for d in sorted(days[user]):
            if runs and (d - runs[-1][1]).days == 1:
                runs[-1][1] = d
            else:
                runs.append([d, d])
        out[user] = runs
    return out


def report(conn, app, variant, today):
    lines = []
    for user, runs in streaks(conn, app).items():
        if variant == "longest":
            a, b = max(runs, key=lambda r: ((r[1] - r[0]).days, -r[0].toordinal()))
            lines.append(f"{user},{a},{b},{(b - a).days + 1}")
        elif variant == "current":
            a, b = runs[-1]
            if (today - b).days in (0, 1):  # active today or yesterday: the streak is still alive
                lines.append(f"{user},{a},{(b - a).days + 1}")
        else:
            gaps = [(runs[i + 1][0] - runs[i][1]).days - 1 for i in range(len(runs) - 1)]
            if gaps:
                i = gaps.index(max(gaps))  # the first of the longest
                first = runs[i][1] + dt.timedelta(days=1)
                lines.append(f"{user},{first},{runs[i + 1][0] - dt.timedelta(days=1)},{gaps[i]}")
    return "".join(ln + "\n" for ln in lines)


if __name__ == "__main__":
    today = dt.date.fromisoformat(sys.argv[4])
    sys.stdout.write(report(sqlite3.connect(sys.argv[1]), sys.argv[2], sys.argv[3], today))
'''

KINDS = ("login", "view", "purchase", "share")
NOISE = ("push_sent", "email_bounce", "heartbeat")  # logged by the servers, not by the user
SCHEMA = ("CREATE TABLE events (id INTEGER PRIMARY KEY, app TEXT NOT NULL, user_id TEXT NOT NULL, ts NOT NULL, "
          "kind TEXT NOT NULL);\n")
USERS_DDL = "CREATE TABLE users (id TEXT PRIMARY KEY, email TEXT, is_internal INTEGER NOT NULL);\n"
OFFSETS = (330, -420, 540, -300, 60, 600)  # minutes east of UTC


@dataclass(frozen=True)
class Knobs:
    users: int  # users per app
    days: int  # days of history
    decoys: int  # other apps in the same table
    traps: int  # 1: several events a day; 2: a local UTC offset; 3: internal users, non-activity kinds;
    #             4: epoch seconds beside ISO stamps


@register
class SqlActivityStreaks(Family):
    name = "sql_activity_streaks"
    domain = "data_querying"
    skill_types = ("Temporal Queries", "Analytical Queries")
    primitive_skills = ("lag and lead comparisons", "window functions", "deduplication by key",
                        "timezone conversion", "date range filtering", "gaps and islands")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("longest", "current", "gaps")
    levels = {0: Knobs(users=3, days=20, decoys=1, traps=0), 1: Knobs(users=5, days=40, decoys=2, traps=1),
              2: Knobs(users=8, days=60, decoys=3, traps=2), 3: Knobs(users=10, days=75, decoys=3, traps=3),
              4: Knobs(users=12, days=90, decoys=3, traps=4)}

    def _app(self, t, today, offset, taken):
        """(user, utc datetime, kind) events of one app, and its internal users; user ids are not in ``taken``
        (the users table is shared by every app) and are added to it."""
        k, rng = t.knobs, t.rng
        users = distinct(lambda: f"u{rng.randrange(100, 1000)}", k.users, taken)
        taken += users
        internal = users[-2:] if k.traps >= 3 else []
        rows = []
        for ui, user in enumerate(users):
            on = ui < 2  # the first two users are active at the end: the current variant has lines
            for age in range(k.days):
                day = today - dt.timedelta(days=age)
                on = on if age == 0 else rng.random() < (0.75 if on else 0.35)
                if age <= 1 and ui < 2:
                    on = True
                if not on:
                    if k.traps >= 3 and rng.random() < 0.3:  # server-side noise on an idle day
                        rows.append((user, self._when(t, day, offset), rng.choice(NOISE)))
                    continue
                for _ in range(rng.choice([1, 1, 2, 3]) if k.traps >= 1 else 1):
                    rows.append((user, self._when(t, day, offset), rng.choice(KINDS)))
        return rows, internal

    def _when(self, t, day, offset):
        """A UTC instant on the local ``day``; with an offset, often close to local midnight."""
        rng = t.rng
        if offset and rng.random() < 0.4:
            minute = rng.choice([rng.randrange(0, 90), rng.randrange(1350, 1440)])
        else:
            minute = rng.randrange(6 * 60, 23 * 60)
        local = dt.datetime(day.year, day.month, day.day) + dt.timedelta(minutes=minute, seconds=rng.randrange(60))
        return local - dt.timedelta(minutes=offset)

    def _stamp(self, t, when):
        k, rng = t.knobs, t.rng
        if k.traps >= 4 and rng.random() < 0.35:
            return int(when.replace(tzinfo=dt.timezone.utc).timestamp())
        if k.traps >= 4 and rng.random() < 0.4:
            return when.strftime("%Y-%m-%dT%H:%M:%SZ")
        return when.strftime("%Y-%m-%d %H:%M:%S")

    def output_case(self, t: TaskBuilder) -> None:
        k, rng, variant = t.knobs, t.rng, t.variant
        # Around a month end, in a leap year half the time: day arithmetic on strings breaks there.
        year = rng.choice([2023, 2024, 2025])
        today = dt.date(year, rng.choice([3, 5, 8, 10]), rng.randrange(2, 12))
        offset = rng.choice(OFFSETS) if k.traps >= 2 else 0
        src = fill(REFERENCE, OFFSET=offset, ACTIVE=KINDS if k.traps >= 3 else None, USERS=k.traps >= 3)
        ref = run_python(src)
        taken: list[str] = []
        apps = [self._app(t, today, offset, taken) for _ in range(1 + k.decoys)]
        placeholder = [(i, e) for i, (rows, _) in enumerate(apps) for e in rows]
        rng.shuffle(placeholder)
        stamped = [(i, u, self._stamp(t, w), kind) for i, (u, w, kind) in placeholder]
        target, keys = keyed(t, k.decoys, "\n".join(repr(r) for r in stamped))
        tables = {"events": [(n + 1, keys[i], u, ts, kind) for n, (i, u, ts, kind) in enumerate(stamped)]}
        schema = SCHEMA
        if k.traps >= 3:
            schema += USERS_DDL
            everyone = sorted({(u, u in internal) for rows, internal in apps for u, _, _ in rows})
            tables["users"] = [(u, f"{u}@{'corp.example' if inside else 'mail.example'}", int(inside))
                               for u, inside in everyone]
        sql = dbsql.script(schema, tables)
        truth = ref["report"](dbsql.in_memory(sql), keys[0], variant, today)
        dbsql.ship(t, sql, "/app/db/product.db")
        sign = "+" if offset >= 0 else "-"
        rules = rules_at(k.traps, [
            (0, "A user is active on a day if they have at least one event that day; a streak is a run of "
                "consecutive active days."),
            (1, "Users often have several events a day: that is still one active day."),
            (2, f"Timestamps are UTC, but days are the app's local calendar days, at UTC{sign}"
                f"{abs(offset) // 60:02d}:{abs(offset) % 60:02d} all year (no daylight saving)."),
            (3, f"Only the kinds {', '.join(f'`{x}`' for x in KINDS)} are user activity; other kinds are sent by "
                "our servers. Leave out internal accounts (`users.is_internal = 1`)."),
            (4, "`ts` was written by two SDK generations: ISO 8601 text (with a space, or with `T` and `Z`) or an "
                "integer of Unix epoch seconds.")])
        days = "days as `YYYY-MM-DD`" + (" (local)" if offset else "")
        ask = {"longest": (f"every user's longest streak as CSV lines `user_id,first_day,last_day,days`, {days}; on "
                           "a tie the earliest streak"),
               "current": (f"the streak each user is on as of today, {today}: a streak is current if its last "
                           "active day is today or yesterday. As CSV lines `user_id,first_day,days`, "
                           f"{days}; users without a current streak are left out"),
               "gaps": ("every user's longest idle stretch, the run of inactive days between two active days, as "
                        f"CSV lines `user_id,first_idle_day,last_idle_day,idle_days`, {days}; on a tie the "
                        "earliest; users who were never idle between two active days are left out")}[variant]
        intro = ("`/app/db/product.db` (SQLite) holds the events of every app we ship in one table, "
                 "`events(id, app, user_id, ts, kind)`, with `ts` in UTC. `app` is " + key_how("app's "
                 "name") + "; other apps' rows are in the same table and must be left out.")
        out = f"/app/out/{variant}.csv"
        pose(t, intro, rules, f"For the app named below I need {ask}. No header; sort by `user_id`.", target,
             "the app's name", "streaks.py", src, f'/app/db/product.db "$key" {variant} {today}', out)
        t.expect_output(out, truth, "the streak report")
