"""Alarm counts for one site in the site's local time: UTC timestamps bucketed into local calendar
days through a fixed UTC offset, distinct devices, gap-filled rows, retransmitted duplicates (the same
instant written with different offsets at the top level). Variants: the daily report with each day's
busiest local hour (daily), a per-device tally ranked by alarms with active days and first alarm
(by_device), or an hour-of-day profile over the range with each hour's busiest date (hour_profile). The
site is the delivered value: its ID in the program case; in the database case its site code, of
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
CORE = r'''
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
'''
MAIN = r'''

if __name__ == "__main__":
    sys.stdout.write(from_export(sys.stdin.read(), sys.argv[1] if len(sys.argv) > 1 else SITE))
'''
REFERENCE = CORE + MAIN

# The other variants' functions, appended to CORE: the alarms of a site per device (by_device) or per
# local hour of the day (hour_profile). @FILL@: list the rows without alarms too (levels 3 and 4, except
# under partial credit, where such rows would be credit any site earns).
VARIANT_TAIL = r'''

VARIANT = "@VARIANT@"
FILL = @FILL@


def alarms(offset_min, events, start, end):
    """(device, local datetime) of the alarms in the range, retransmitted copies dropped."""
    seen, out = {}, []
    for dev, at, kind in events:
        ts = instant(at)
        if kind.lower() != "alarm" or (dev, ts) in seen:
            continue
        seen[(dev, ts)] = True
        local = datetime.fromtimestamp(ts + offset_min * 60, timezone.utc)
        if start <= local.strftime("%Y-%m-%d") <= end:
            out.append((dev, local))
    return out


def by_device(offset_min, events, devices, start, end, level=LEVEL, fill=FILL):
    """One line per device of the site: alarms, distinct local days, first alarm (local time)."""
    per = {}
    for dev, local in alarms(offset_min, events, start, end):
        per.setdefault(dev, []).append(local)
    out = []
    for dev in devices:
        got = per.get(dev, [])
        if not got and not fill:
            continue
        cols = [str(dev), str(len(got))]
        if level >= 2:
            cols.append(str(len({d.strftime("%Y-%m-%d") for d in got})))
        if level >= 4:
            cols.append(min(got).strftime("%Y-%m-%d %H:%M:%S") if got else "-")
        out.append((-len(got), int(dev), ",".join(cols) + "\n"))
    return "".join(line for _, _, line in sorted(out))


def hour_profile(offset_min, events, start, end, level=LEVEL, fill=FILL):
    """One line per local hour of the day (00-23): alarms, distinct devices, busiest local date."""
    per = {}
    for dev, local in alarms(offset_min, events, start, end):
        per.setdefault(local.hour, []).append((dev, local.strftime("%Y-%m-%d")))
    out = []
    for h in range(24):
        got = per.get(h, [])
        if not got and not fill:
            continue
        cols = [f"{h:02d}", str(len(got))]
        if level >= 2:
            cols.append(str(len({dev for dev, _ in got})))
        if level >= 4:
            if got:
                counts = {}
                for _, day in got:
                    counts[day] = counts.get(day, 0) + 1
                cols.append(min(counts, key=lambda day: (-counts[day], day)))
            else:
                cols.append("-")
        out.append(",".join(cols) + "\n")
    return "".join(out)


def variant_report(text, site=SITE):
    start = end = None
    offsets, devices, events = {}, [], []
    for line in text.splitlines():
        f = line.split()
        if not f:
            continue
        if f[0] == "range":
            start, end = f[1], f[2]
        elif f[0] == "site":
            offsets[f[1]] = int(f[2])
        elif f[0] == "device" and f[2] == site:
            devices.append(f[1])
    mine = set(devices)
    for line in text.splitlines():
        f = line.split()
        if f and f[0] == "event" and f[1] in mine:
            events.append((f[1], f[2], f[3]))
    if VARIANT == "by_device":
        return by_device(offsets[site], events, devices, start, end)
    return hour_profile(offsets[site], events, start, end)


if __name__ == "__main__":
    sys.stdout.write(variant_report(sys.stdin.read(), sys.argv[1] if len(sys.argv) > 1 else SITE))
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
# The other variants' SQL (the full report; columns cut per level by VCOLS, rows without alarms dropped
# where the report lists none). Their databases name tables and columns their own way (LAYOUTS).
SITE_ALARMS = """site AS (SELECT utc_offset_minutes AS off FROM sites WHERE id = @@SITE@@),
ev AS (
  SELECT DISTINCT r.@DEVID@ AS device_id, unixepoch(r.@AT@) AS ts
  FROM @READINGS@ r JOIN @DEV@ d ON d.id = r.@DEVID@
  WHERE d.site_id = @@SITE@@ AND lower(r.@KIND@) = 'alarm'
),
loc AS (SELECT device_id, datetime(ts + (SELECT off FROM site) * 60, 'unixepoch') AS lt FROM ev),
inr AS (SELECT device_id, lt FROM loc WHERE date(lt) BETWEEN '@START@' AND '@END@')
"""
DEVICE_QUERY = "WITH " + SITE_ALARMS + """SELECT d.id, COUNT(inr.lt), COUNT(DISTINCT date(inr.lt)),
       COALESCE(MIN(inr.lt), '-')
FROM @DEV@ d LEFT JOIN inr ON inr.device_id = d.id
WHERE d.site_id = @@SITE@@
GROUP BY d.id ORDER BY COUNT(inr.lt) DESC, d.id;
"""
HOUR_QUERY = "WITH RECURSIVE hrs(h) AS (SELECT 0 UNION ALL SELECT h + 1 FROM hrs WHERE h < 23),\n" + SITE_ALARMS + """,
per AS (SELECT CAST(strftime('%H', lt) AS INTEGER) AS h, COUNT(*) AS n, COUNT(DISTINCT device_id) AS devs
        FROM inr GROUP BY 1),
byday AS (SELECT CAST(strftime('%H', lt) AS INTEGER) AS h, date(lt) AS d, COUNT(*) AS c FROM inr GROUP BY 1, 2),
peak AS (
  SELECT h, d FROM (SELECT h, d, ROW_NUMBER() OVER (PARTITION BY h ORDER BY c DESC, d) AS rn FROM byday)
  WHERE rn = 1
)
SELECT printf('%02d', hrs.h), COALESCE(per.n, 0), COALESCE(per.devs, 0), COALESCE(peak.d, '-')
FROM hrs LEFT JOIN per ON per.h = hrs.h LEFT JOIN peak ON peak.h = hrs.h
ORDER BY hrs.h;
"""
VARIANT_QUERY = {"by_device": DEVICE_QUERY, "hour_profile": HOUR_QUERY}
LAYOUTS = {"by_device": {"DEV": "sensors", "READINGS": "events", "DEVID": "sensor_id", "AT": "occurred_at",
                         "KIND": "event_type"},
           "hour_profile": {"DEV": "units", "READINGS": "telemetry", "DEVID": "unit_id", "AT": "ts", "KIND": "kind"}}
SITES_SCHEMA = ("CREATE TABLE sites (id INTEGER PRIMARY KEY, name TEXT NOT NULL, utc_offset_minutes INTEGER NOT "
                "NULL, code_key TEXT NOT NULL UNIQUE);\n")
MODELS = ["TX-200", "TX-310", "RX-9", "HV-4"]


def layout(variant: str, site_rows: list, devices: list, rows: list) -> tuple[str, dict]:
    """(schema, tables) of the other variants' databases; ``rows``: (id, device, recorded_at, kind, value)."""
    if variant == "by_device":
        schema = SITES_SCHEMA + ("CREATE TABLE sensors (id INTEGER PRIMARY KEY, serial TEXT NOT NULL, site_id INTEGER "
                                 "NOT NULL REFERENCES sites(id), model TEXT NOT NULL);\nCREATE TABLE events (id "
                                 "INTEGER PRIMARY KEY, event_type TEXT NOT NULL, sensor_id INTEGER NOT NULL REFERENCES "
                                 "sensors(id), reading REAL, occurred_at TEXT NOT NULL);\n")
        return schema, {"sites": site_rows,
                        "sensors": [(did, f"S-{did * 7919 % 100000:05d}", sid, MODELS[did % 4])
                                    for did, sid in devices],
                        "events": [(i, kind, did, value, at) for i, did, at, kind, value in rows]}
    schema = SITES_SCHEMA + ("CREATE TABLE units (id INTEGER PRIMARY KEY, site_id INTEGER NOT NULL REFERENCES "
                             "sites(id));\nCREATE TABLE telemetry (ts TEXT NOT NULL, unit_id INTEGER NOT NULL "
                             "REFERENCES units(id), kind TEXT NOT NULL, value REAL, id INTEGER PRIMARY KEY);\n")
    return schema, {"sites": site_rows, "units": [(did, sid) for did, sid in devices],
                    "telemetry": [(at, did, kind, value, i) for i, did, at, kind, value in rows]}
VCOLS = {0: "$1\",\"$2", 1: "$1\",\"$2", 2: "$1\",\"$2\",\"$3", 3: "$1\",\"$2\",\"$3", 4: "$0"}
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
    variants = ("daily", "by_device", "hour_profile")

    def rules(self, lv: int, offset: str, variant: str = "daily", fill_rows: bool = False,
              kind: str = "kind") -> tuple[str, str]:
        """(the counting rules as a bullet list, the output format): both cases state them alike;
        ``offset`` names a site's UTC offset; ``fill_rows``: the other variants list rows without alarms;
        ``kind``: the column that holds a reading's kind."""
        cols = ["the local date (YYYY-MM-DD)", "the number of alarms"]
        if lv >= 2:
            cols.append("the number of distinct devices that raised them")
        if lv >= 4:
            cols.append("the busiest local hour of the day as two digits (`00`-`23`; the hour with the most alarms, "
                        "the earliest on ties; `-` when there were none)")
        rules = [f"Alarms are readings whose `{kind}` is `alarm`" + (" (in any letter case)" if lv >= 2 else "")
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
        if variant != "daily":
            return self.variant_rules(lv, variant, rules, fill_rows)
        if lv >= 3:
            rules.append("List every day of the range, including days without alarms (with zero counts).")
        else:
            rules.append("List only days that had at least one alarm.")
        fmt = f"CSV without a header, one line per local day in date order: {', '.join(cols)}"
        return "\n".join(f"- {r}" for r in rules), fmt

    def variant_rules(self, lv: int, variant: str, rules: list[str], fill_rows: bool) -> tuple[str, str]:
        """The rules and format of by_device and hour_profile (``rules``: those all variants share)."""
        rules.append("Only alarms on the local dates of the range count; readings outside it are ignored.")
        if variant == "by_device":
            cols = ["the device ID", "the number of alarms it raised"]
            if lv >= 2:
                cols.append("the number of distinct local days on which it raised any")
            if lv >= 4:
                cols.append("the local time of its first alarm in the range as `YYYY-MM-DD HH:MM:SS` (`-` when it "
                            "raised none)")
            rules.append("List every device of the site, including devices without alarms (with zero counts)."
                         if fill_rows else "List only devices that raised at least one alarm.")
            fmt = (f"CSV without a header, one line per device of the site: {', '.join(cols)}; sorted by the number "
                   "of alarms (highest first), ties by device ID (numerically)")
        else:
            cols = ["the local hour of the day as two digits (`00`-`23`)",
                    "the number of alarms raised in that hour, over all days of the range"]
            if lv >= 2:
                cols.append("the number of distinct devices that raised them")
            if lv >= 4:
                cols.append("the local date (YYYY-MM-DD) with the most alarms in that hour (the earliest on ties; "
                            "`-` when there were none)")
            rules.append("List all 24 hours, including hours without alarms (with zero counts)."
                         if fill_rows else "List only hours that had at least one alarm.")
            fmt = f"CSV without a header, one line per local hour of the day in hour order: {', '.join(cols)}"
        return "\n".join(f"- {r}" for r in rules), fmt

    def program_case(self, t: TaskBuilder) -> None:
        rng, lv, var = t.rng, t.level, t.variant or self.variants[0]
        site_id = rng.randrange(11, 99)
        if var == "daily":
            src = fill(REFERENCE, LEVEL=lv)
            report = "the daily alarm report"
        else:
            src = fill(CORE + VARIANT_TAIL, LEVEL=lv, VARIANT=var, FILL=lv >= 3)
            report = {"by_device": "the per-device alarm tally",
                      "hour_profile": "the hour-of-day alarm profile"}[var]
        ns = run_python(src)
        run = ns["from_export"] if var == "daily" else ns["variant_report"]
        bullets, fmt = self.rules(lv, "its offset", var, lv >= 3)
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
            cases.append((text, run(text, str(site_id))))
        t.say("Our monitoring system exports readings as lines of whitespace-separated fields: `range START END` "
              "(local dates, inclusive), `site ID UTC_OFFSET_MINUTES`, `device ID SITE_ID`, and "
              "`event DEVICE_ID TIMESTAMP KIND`, TIMESTAMP being ISO-8601 with its UTC offset (`Z`"
              + (" or `+HH:MM`/`-HH:MM`" if lv >= 4 else "") + "; see the examples). I need a tool that turns one "
              f"export on standard input into {report} of one site, whose ID is given below.\n\n"
              + bullets + f"\n\nOutput: {fmt}.")
        v = t.deliver(str(site_id), "the site ID")
        t.expect_program("The site ID is the one given above; hard-code it in the program.", cases,
                         {"Python": src})
        t.solve(f'sed -i "s/@@SITE@@/{v}/" /app/solution.py')

    def output_case(self, t: TaskBuilder) -> None:
        k, rng, lv, var = t.knobs, t.rng, t.level, t.variant or self.variants[0]
        start = datetime(2025, rng.randrange(1, 12), rng.randrange(1, 20))
        end = start + timedelta(days=k.days - 1)
        s_start, s_end = start.strftime("%Y-%m-%d"), end.strftime("%Y-%m-%d")
        site_id = rng.randrange(11, 99)
        ns = run_python(fill(REFERENCE, LEVEL=lv))
        # The other variants list rows without alarms at levels 3 and 4, except under partial credit.
        fill_rows = lv >= 3 and not t.partial_credit
        kind = LAYOUTS[var]["KIND"] if var in LAYOUTS else "kind"
        bullets, fmt = self.rules(lv, "`utc_offset_minutes`", var, fill_rows, kind)
        # Under partial credit no day of the site is without alarms: the zero lines a site that does not
        # exist gets would earn credit.
        for _ in range(20):
            sites, devices, rows = gen(rng, lv, k.sites, k.events, start, k.days, site_id,
                                       quiet_days=not t.partial_credit or var != "daily")
            offset = dict(sites)[site_id]
            site_devs = {did for did, sid in devices if sid == site_id}
            events = [(did, at, kind) for _, did, at, kind, _ in rows if did in site_devs]
            truth = ns["daily"](offset, events, s_start, s_end)
            if var != "daily":
                vns = run_python(fill(CORE + VARIANT_TAIL, LEVEL=lv, VARIANT=var, FILL=fill_rows))
                mine = [did for did, sid in devices if sid == site_id]
                truth = (vns["by_device"](offset, events, mine, s_start, s_end) if var == "by_device" else
                         vns["hour_profile"](offset, events, s_start, s_end))
                break
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
        names = {"DEV": "devices", "READINGS": "readings", "AT": "recorded_at", "KIND": "kind"}
        if var != "daily":
            schema, tables = layout(var, site_rows, devices, rows)
            names = LAYOUTS[var]
        want = {"daily": f"the daily alarm report of one site for the local dates {s_start} to {s_end} inclusive",
                "by_device": f"a tally of one site's alarms per device over the local dates {s_start} to {s_end} "
                             "inclusive",
                "hour_profile": f"the hour-of-day alarm profile of one site over the local dates {s_start} to "
                                f"{s_end} inclusive (which local hours its alarms cluster in)"}[var]
        t.say(f"Our telemetry database is `/app/db/telemetry.db` (SQLite; tables `sites`, `{names['DEV']}`, "
              f"`{names['READINGS']}`). `{names['READINGS']}.{names['AT']}` is an ISO-8601 timestamp with its UTC "
              "offset"
              + (" (`Z` or `+HH:MM`/`-HH:MM`)" if lv >= 4 else " (`Z`: all are UTC)") + ". "
              f"I need {want}. The "
              "site is named by its site code, given below. Site codes are kept nowhere: `sites.code_key` holds "
              "the first 16 hex digits of the SHA-256 of each site's code (what `printf %s CODE | sha256sum` "
              f"prints).\n\n" + bullets + f"\n\nReport format: {fmt}.")
        code = unseen(t, lambda: t.code(2), dbsql.script(schema, tables))
        next(r for r in site_rows if r[0] == site_id)[-1] = key_of(code)
        dbsql.ship(t, dbsql.script(schema, tables), "/app/db/telemetry.db")
        v = t.deliver(code, "the site code")
        out = {"daily": "daily_alarms.csv", "by_device": "device_alarms.csv", "hour_profile": "hourly_alarms.csv"}[var]
        if var == "daily":
            t.add_solution_file("daily.sql", fill(QUERY, START=s_start, END=s_end))
            query, cut = "daily.sql", CUT[lv]
        else:
            query = f"{var}.sql"
            t.add_solution_file(query, fill(VARIANT_QUERY[var], START=s_start, END=s_end, **LAYOUTS[var]))
            cut = ("" if fill_rows else "$2 > 0 ") + "{print " + VCOLS[lv] + "}"
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\n'
                f"site=$(sqlite3 -batch -noheader /app/db/telemetry.db \"SELECT id FROM sites WHERE code_key = "
                f"'{key_cmd(v)}'\")\n"
                'test -n "$site"\n'
                f'sed "s/@@SITE@@/$site/g" /solution/{query} | sqlite3 -batch -noheader -separator , '
                f"/app/db/telemetry.db | awk -F, '{cut}' > /app/out/{out}")
        t.expect_output(f"/app/out/{out}", truth, "the report")
