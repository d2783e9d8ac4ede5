"""Daily alarm counts for one site in the site's local time: UTC timestamps bucketed into local calendar
days through a fixed UTC offset, distinct devices per day, gap-filled days, retransmitted duplicates
(the same instant written with different offsets at the top level) and the busiest local hour. The
site is the delivered value: its ID in the program variant; in the database variant its site code, of
which the database keeps only a SHA-256 prefix (a site ID there would be guessable among the few)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from tmax.families import sql as dbsql
from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.unseen import key_cmd, key_of, unseen

# One reference for both shapes of the task: the database (the truth of the file variant) and the
# line-based export read on stdin (the program variant). @LEVEL@ is fixed per task, @@SITE@@ is the
# delivered site id (put in at solve time).
REFERENCE = r'''
import sys
from datetime import datetime, timedelta, timezone

SITE = "@@SITE@@"
LEVEL = @LEVEL@


def instant(text):
    d = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if d.tzinfo is None:
        d = d.replace(tzinfo=timezone.utc)
    return int(d.timestamp())


def daily(offset_min, events, start, end, level=LEVEL):
    """events: (device, recorded_at, kind) of one site; start/end: local dates YYYY-MM-DD, inclusive."""
    seen = {}
    per_day = {}
    for dev, at, kind in events:
        if kind.lower() != "alarm":
            continue
        ts = instant(at)
        if (dev, ts) in seen:
            continue
        seen[(dev, ts)] = True
        local = datetime.fromtimestamp(ts + offset_min * 60, timezone.utc)
        day = local.strftime("%Y-%m-%d")
        if start <= day <= end:
            per_day.setdefault(day, []).append((dev, local.hour))
    days = []
    d = datetime.strptime(start, "%Y-%m-%d")
    while d.strftime("%Y-%m-%d") <= end:
        days.append(d.strftime("%Y-%m-%d"))
        d += timedelta(days=1)
    out = []
    for day in days:
        rows = per_day.get(day, [])
        if not rows and level < 3:
            continue
        cols = [day, str(len(rows))]
        if level >= 2:
            cols.append(str(len({dev for dev, _ in rows})))
        if level >= 4:
            if rows:
                counts = {}
                for _, h in rows:
                    counts[h] = counts.get(h, 0) + 1
                cols.append(f"{min(counts, key=lambda h: (-counts[h], h)):02d}")
            else:
                cols.append("-")
        out.append(",".join(cols) + "\n")
    return "".join(out)


def from_export(text, site=SITE):
    start = end = None
    offsets, owner, events = {}, {}, []
    for line in text.splitlines():
        f = line.split()
        if not f:
            continue
        if f[0] == "range":
            start, end = f[1], f[2]
        elif f[0] == "site":
            offsets[f[1]] = int(f[2])
        elif f[0] == "device":
            owner[f[1]] = f[2]
        elif f[0] == "event" and owner.get(f[1]) == site:
            events.append((f[1], f[2], f[3]))
    return daily(offsets[site], events, start, end)


if __name__ == "__main__":
    sys.stdout.write(from_export(sys.stdin.read(), sys.argv[1] if len(sys.argv) > 1 else SITE))
'''

# The oracle's SQL for the database variant: the full report; columns and rows are cut per level.
# @START@/@END@ are filled on the host, @@SITE@@ at solve time.
QUERY = """WITH RECURSIVE days(d) AS (
  SELECT '@START@' UNION ALL SELECT date(d, '+1 day') FROM days WHERE d < '@END@'
),
site AS (SELECT utc_offset_minutes AS off FROM sites WHERE id = @@SITE@@),
ev AS (
  SELECT DISTINCT r.device_id, unixepoch(r.recorded_at) AS ts
  FROM readings r JOIN devices d ON d.id = r.device_id
  WHERE d.site_id = @@SITE@@ AND lower(r.kind) = 'alarm'
),
loc AS (SELECT device_id, datetime(ts + (SELECT off FROM site) * 60, 'unixepoch') AS lt FROM ev),
per AS (SELECT date(lt) AS day, COUNT(*) AS n, COUNT(DISTINCT device_id) AS devs FROM loc GROUP BY 1),
hours AS (SELECT date(lt) AS day, strftime('%H', lt) AS h, COUNT(*) AS c FROM loc GROUP BY 1, 2),
peak AS (
  SELECT day, h FROM (SELECT day, h, ROW_NUMBER() OVER (PARTITION BY day ORDER BY c DESC, h) AS rn FROM hours)
  WHERE rn = 1
)
SELECT days.d, COALESCE(per.n, 0), COALESCE(per.devs, 0), COALESCE(peak.h, '-')
FROM days LEFT JOIN per ON per.day = days.d LEFT JOIN peak ON peak.day = days.d
ORDER BY days.d;
"""
CUT = {0: "$2 > 0 {print $1\",\"$2}", 1: "$2 > 0 {print $1\",\"$2}", 2: "$2 > 0 {print $1\",\"$2\",\"$3}",
       3: "{print $1\",\"$2\",\"$3}", 4: "{print}"}
OFFSETS = [330, -300, 60, 540, -210, 345, -420, 600, 120, -180, 480]
KINDS = ["heartbeat", "heartbeat", "alarm", "alarm", "door_open", "battery_low"]


def fmt_offset(minutes: int) -> str:
    sign = "+" if minutes >= 0 else "-"
    return f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def gen(rng, lv: int, n_sites: int, n_events: int, start: datetime, days: int, site_id: int, quiet_days: bool = True):
    """Sites (id, offset), devices (id, site), events (id, device, recorded_at, kind, value); ``site_id`` is
    one of the sites, the others are random. ``quiet_days``: two days of the site without readings (lv >= 3)."""
    site_ids = [site_id] + rng.sample([i for i in range(11, 99) if i != site_id], n_sites - 1)
    rng.shuffle(site_ids)
    sites = [(sid, rng.choice(OFFSETS)) for sid in site_ids]
    if lv == 0:  # every site on UTC: the day is the timestamp's date
        sites = [(sid, 0) for sid, _ in sites]
    devices = []
    dev_ids = rng.sample(range(100, 999), n_sites * (2 + lv))
    for i, did in enumerate(dev_ids):
        devices.append((did, sites[i % n_sites][0]))
    off = dict(sites)
    quiet = rng.sample(range(days), 2) if quiet_days and lv >= 3 and days > 4 else []  # days without alarms at the site
    events, used = [], set()
    for _ in range(50 * n_events):
        if len(events) >= n_events:
            break
        did, sid = rng.choice(devices)
        # Mostly near local midnights, so the offset decides the day.
        day = rng.randrange(-2, days + 2)
        local_midnight = start + timedelta(days=day) - timedelta(minutes=off[sid])
        if rng.random() < 0.5:
            ts = local_midnight + timedelta(seconds=rng.randrange(-3 * 3600, 3 * 3600))
        else:
            ts = local_midnight + timedelta(seconds=rng.randrange(86400))
        if (did, ts) in used:
            continue
        if sid == site_id and (ts + timedelta(minutes=off[sid]) - start).days in quiet:
            continue
        used.add((did, ts))
        kind = rng.choice(KINDS)
        if lv >= 2 and rng.random() < 0.3:
            kind = rng.choice([kind.upper(), kind.title()])
        events.append([did, ts, kind, round(rng.uniform(0, 100), 1)])
    if len(events) < n_events:
        raise FamilyError(f"alarm_daily_buckets: only {len(events)} of {n_events} events drawn")
    if lv >= 3:  # retransmissions: the same reading again
        for e in rng.sample(events, len(events) // 10):
            events.append(list(e))
    rng.shuffle(events)
    rows = []
    for i, (did, ts, kind, value) in enumerate(events):
        if lv >= 4 and rng.random() < 0.4:
            o = rng.choice(OFFSETS)
            text = (ts + timedelta(minutes=o)).strftime("%Y-%m-%dT%H:%M:%S") + fmt_offset(o)
        else:
            text = ts.strftime("%Y-%m-%dT%H:%M:%SZ")
        rows.append((i + 1, did, text, kind, value))
    return sites, devices, rows


@dataclass(frozen=True)
class Knobs:
    sites: int  # sites in the database
    events: int  # readings before retransmitted copies
    days: int  # local days in the report range


@register
class AlarmDailyBuckets(Family):
    name = "alarm_daily_buckets"
    domain = "data_querying"
    skill_types = ("Temporal Queries", "Analytical Queries")
    primitive_skills = ("time bucketing", "timezone conversion", "gap filling", "distinct counting",
                        "deduplication by key", "group-by aggregation", "window functions", "date range filtering",
                        "case-insensitive matching")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol", "fuzz_equivalence")
    levels = {0: Knobs(sites=2, events=40, days=3), 1: Knobs(sites=3, events=150, days=5),
              2: Knobs(sites=4, events=500, days=7), 3: Knobs(sites=5, events=1000, days=10),
              4: Knobs(sites=6, events=2000, days=14)}

    programs = {"Python": REFERENCE}  # the task's own copy is filled in per level

    def rules(self, lv: int, offset: str) -> tuple[str, str]:
        """(the counting rules as a bullet list, the output format): both cases state them alike;
        ``offset`` names a site's UTC offset."""
        cols = ["the local date (YYYY-MM-DD)", "the number of alarms"]
        if lv >= 2:
            cols.append("the number of distinct devices that raised them")
        if lv >= 4:
            cols.append("the busiest local hour of the day as two digits (`00`-`23`; the hour with the most alarms, "
                        "the earliest on ties; `-` when there were none)")
        rules = ["Alarms are readings whose `kind` is `alarm`" + (" (in any letter case)" if lv >= 2 else "")
                 + "; ignore every other kind.",
                 f"Each site keeps a fixed local time, {offset} ahead of UTC (negative: behind); a "
                 "reading belongs to the local calendar day on which it happened at its site."]
        if lv == 0:
            rules[1] = "Every site keeps UTC: a reading belongs to the calendar day of its timestamp."
        if lv >= 3:
            rules.append("Devices retransmit: a reading from the same device at the same instant as another is a "
                         "duplicate and counts once"
                         + (" (the copies do not always carry the same UTC offset in their timestamps)" if lv >= 4
                            else "") + ".")
            rules.append("List every day of the range, including days without alarms (with zero counts).")
        else:
            rules.append("List only days that had at least one alarm.")
        fmt = f"CSV without a header, one line per local day in date order: {', '.join(cols)}"
        return "\n".join(f"- {r}" for r in rules), fmt

    def program_case(self, t: TaskBuilder) -> None:
        rng, lv = t.rng, t.level
        site_id = rng.randrange(11, 99)
        src = fill(REFERENCE, LEVEL=lv)
        ns = run_python(src)
        bullets, fmt = self.rules(lv, "its offset")
        cases = []
        for _ in range(12):
            n_days = rng.randrange(2, 8)
            st = datetime(2025, rng.randrange(1, 12), rng.randrange(1, 20))
            sites, devices, rows = gen(rng, lv, rng.randrange(2, 5), rng.randrange(40, 160), st, n_days, site_id)
            lines = [f"range {st.strftime('%Y-%m-%d')} {(st + timedelta(days=n_days - 1)).strftime('%Y-%m-%d')}"]
            lines += [f"site {sid} {o}" for sid, o in sites]
            lines += [f"device {did} {sid}" for did, sid in devices]
            lines += [f"event {did} {at} {kind}" for _, did, at, kind, _ in rows]
            text = "\n".join(lines) + "\n"
            cases.append((text, ns["from_export"](text, str(site_id))))
        t.say("Our monitoring system exports readings as lines of whitespace-separated fields: `range START END` "
              "(local dates, inclusive), `site ID UTC_OFFSET_MINUTES`, `device ID SITE_ID`, and "
              "`event DEVICE_ID TIMESTAMP KIND`, TIMESTAMP being ISO-8601 with its UTC offset (`Z`"
              + (" or `+HH:MM`/`-HH:MM`" if lv >= 4 else "") + "; see the examples). I need a tool that turns one "
              "export on standard input into the daily alarm report of one site, whose ID is given below.\n\n"
              + bullets + f"\n\nOutput: {fmt}.")
        v = t.deliver(str(site_id), "the site ID")
        t.expect_program("The site ID is the one given above; hard-code it in the program.", cases,
                         {"Python": src})
        t.solve(f'sed -i "s/@@SITE@@/{v}/" /app/solution.py')

    def output_case(self, t: TaskBuilder) -> None:
        k, rng, lv = t.knobs, t.rng, t.level
        start = datetime(2025, rng.randrange(1, 12), rng.randrange(1, 20))
        end = start + timedelta(days=k.days - 1)
        s_start, s_end = start.strftime("%Y-%m-%d"), end.strftime("%Y-%m-%d")
        site_id = rng.randrange(11, 99)
        ns = run_python(fill(REFERENCE, LEVEL=lv))
        bullets, fmt = self.rules(lv, "`utc_offset_minutes`")
        # Under partial credit no day of the site is without alarms: the zero lines a site that does not
        # exist gets would earn credit.
        for _ in range(20):
            sites, devices, rows = gen(rng, lv, k.sites, k.events, start, k.days, site_id,
                                       quiet_days=not t.partial_credit)
            offset = dict(sites)[site_id]
            site_devs = {did for did, sid in devices if sid == site_id}
            events = [(did, at, kind) for _, did, at, kind, _ in rows if did in site_devs]
            truth = ns["daily"](offset, events, s_start, s_end)
            if not t.partial_credit or all(line.split(",")[1] != "0" for line in truth.splitlines()):
                break
        else:
            raise FamilyError("alarm_daily_buckets: no data without a day free of alarms in 20 draws")
        schema = ("CREATE TABLE sites (id INTEGER PRIMARY KEY, name TEXT NOT NULL, utc_offset_minutes INTEGER NOT "
                  "NULL, code_key TEXT NOT NULL UNIQUE);\nCREATE TABLE devices (id INTEGER PRIMARY KEY, site_id "
                  "INTEGER NOT NULL REFERENCES sites(id), serial TEXT NOT NULL);\nCREATE TABLE readings (id INTEGER "
                  "PRIMARY KEY, device_id INTEGER NOT NULL REFERENCES devices(id), recorded_at TEXT NOT NULL, kind "
                  "TEXT NOT NULL, value REAL);\n")
        # Every code key but the site's hashes a code nobody is ever shown.
        site_rows = [[sid, f"Site {sid}", o, key_of(f"{rng.getrandbits(64):x}")] for sid, o in sites]
        tables = {"sites": site_rows,
                  "devices": [(did, sid, f"SN{did * 7919 % 100000:05d}") for did, sid in devices],
                  "readings": rows}
        t.say("Our telemetry database is `/app/db/telemetry.db` (SQLite; tables `sites`, `devices`, `readings`). "
              "`readings.recorded_at` is an ISO-8601 timestamp with its UTC offset"
              + (" (`Z` or `+HH:MM`/`-HH:MM`)" if lv >= 4 else " (`Z`: all are UTC)") + ". "
              f"I need the daily alarm report of one site for the local dates {s_start} to {s_end} inclusive. The "
              "site is named by its site code, given below. Site codes are kept nowhere: `sites.code_key` holds "
              "the first 16 hex digits of the SHA-256 of each site's code (what `printf %s CODE | sha256sum` "
              f"prints).\n\n" + bullets + f"\n\nReport format: {fmt}.")
        code = unseen(t, lambda: t.code(2), dbsql.script(schema, tables))
        next(r for r in site_rows if r[0] == site_id)[-1] = key_of(code)
        dbsql.ship(t, dbsql.script(schema, tables), "/app/db/telemetry.db")
        v = t.deliver(code, "the site code")
        t.add_solution_file("daily.sql", fill(QUERY, START=s_start, END=s_end))
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\n'
                f"site=$(sqlite3 -batch -noheader /app/db/telemetry.db \"SELECT id FROM sites WHERE code_key = "
                f"'{key_cmd(v)}'\")\n"
                'test -n "$site"\n'
                'sed "s/@@SITE@@/$site/g" /solution/daily.sql | sqlite3 -batch -noheader -separator , '
                f"/app/db/telemetry.db | awk -F, '{CUT[lv]}' > /app/out/daily_alarms.csv")
        t.expect_output("/app/out/daily_alarms.csv", truth, "the report")
