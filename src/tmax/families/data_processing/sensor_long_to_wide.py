"""Weather-station readings in long format (one reading per row, local timestamps with UTC offsets,
mixed units) for one site: convert to UTC and to common units, then pivot to a wide hourly table
keeping the highest reading per metric and hour (wide), summarise per UTC day and metric as long rows
of count, minimum and maximum (daily), or report each metric's latest reading (latest). The shared
feed carries several stations' rows, each tagged with a per-row token derived from its station's
code, so one site's rows can be picked out only with that site's code. Epoch timestamps and unknown
metrics at the higher levels."""

from __future__ import annotations

import datetime
from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.unseen import distinct, key_cmd, key_of, unseen

REFERENCE = r'''
import csv
import datetime
import hashlib
import io
import sys
from fractions import Fraction

SITE = "@@SITE@@"
HEADER = @HEADER@
VARIANT = @VARIANT@
METRICS = [("temp", "temp_c"), ("pressure", "pressure_hpa"), ("humidity", "humidity_pct")]


def utc(ts):
    ts = ts.strip()
    if ts.isdigit():
        return datetime.datetime.fromtimestamp(int(ts), datetime.timezone.utc)
    if ts.endswith("Z"):
        ts = ts[:-1] + "+00:00"
    return datetime.datetime.fromisoformat(ts).astimezone(datetime.timezone.utc)


def convert(metric, value, unit):
    v = Fraction(value)
    if metric == "temp":
        return (v - 32) * Fraction(5, 9) if unit == "F" else v
    if metric == "pressure":
        return v * 10 if unit == "kPa" else v
    return v * 100 if unit == "fraction" else v


def tenths(v):
    q = abs(v) * 10
    n = int(q + Fraction(1, 2))
    n = -n if v < 0 else n
    return ("-" if n < 0 else "") + f"{abs(n) // 10}.{abs(n) % 10}"


def token(site, stamp):
    return hashlib.sha256(f"{site}|{stamp}".encode()).hexdigest()[:10]


def readings(text, site):
    """The site's readings of the known metrics as (UTC instant, metric, converted value)."""
    names = [m for m, _ in METRICS]
    for row in csv.DictReader(io.StringIO(text)):
        if row["metric"] in names and row["tag"] == token(site, row["timestamp"]):
            yield utc(row["timestamp"]), row["metric"], convert(row["metric"], row["value"], row["unit"])


def daily(text, site):
    days = {}
    for when, metric, v in readings(text, site):
        days.setdefault((when.strftime("%Y-%m-%d"), metric), []).append(v)
    out = ["day_utc,metric,readings,min,max"] if HEADER else []
    for day in sorted({d for d, _ in days}):
        out += [f"{day},{col},{len(vs)},{tenths(min(vs))},{tenths(max(vs))}"
                for m, col in METRICS for vs in [days.get((day, m))] if vs]
    return "".join(line + "\n" for line in out)


def latest(text, site):
    last = {}
    for when, metric, v in readings(text, site):
        if metric not in last or (when, v) > last[metric]:  # same instant: the higher reading
            last[metric] = (when, v)
    out = ["metric,time_utc,value"] if HEADER else []
    out += [f"{col},{last[m][0].strftime('%Y-%m-%dT%H:%M:%SZ')},{tenths(last[m][1])}" for m, col in METRICS
            if m in last]
    return "".join(line + "\n" for line in out)


def pivot(text, site=None):
    site = site or SITE
    if VARIANT != "wide":
        return {"daily": daily, "latest": latest}[VARIANT](text, site)
    best = {}
    for when, metric, v in readings(text, site):
        key = (when.strftime("%Y-%m-%dT%H:00Z"), metric)
        if key not in best or v > best[key]:
            best[key] = v
    hours = sorted({h for h, _ in best})
    out = ["hour_utc," + ",".join(c for _, c in METRICS)] if HEADER else []
    for h in hours:
        out.append(h + "," + ",".join(tenths(best[(h, m)]) if (h, m) in best else "" for m, _ in METRICS))
    return "".join(line + "\n" for line in out)


if __name__ == "__main__":
    sys.stdout.write(pivot(sys.stdin.read(), sys.argv[1] if len(sys.argv) > 1 else None))
'''

OFFSETS = {0: ["+00:00"], 1: ["+00:00"], 2: ["+00:00", "+01:00", "+02:00", "-05:00"],
           3: ["+00:00", "+01:00", "+02:00", "-05:00", "+05:30", "-03:30", "+09:00"],
           4: ["+00:00", "+01:00", "+02:00", "-05:00", "+05:30", "-03:30", "+09:00", "+05:45", "-09:30"]}
EPOCH0 = datetime.datetime(2026, 3, 14, tzinfo=datetime.timezone.utc)


class Gen:
    def __init__(self, rng, lv, sites):
        self.rng, self.lv, self.sites = rng, lv, sites

    def stamp(self, when: datetime.datetime) -> str:
        rng, lv = self.rng, self.lv
        if lv >= 4 and rng.random() < 0.15:
            return str(int(when.timestamp()))
        off = rng.choice(OFFSETS[lv])
        if off == "+00:00":
            return when.strftime("%Y-%m-%dT%H:%M:%S") + ("Z" if lv == 1 or rng.random() < 0.5 else "+00:00")
        sign = 1 if off[0] == "+" else -1
        delta = datetime.timedelta(hours=int(off[1:3]), minutes=int(off[4:6])) * sign
        return (when + delta).strftime("%Y-%m-%dT%H:%M:%S") + off

    def reading(self) -> tuple[str, str, str]:
        rng, lv = self.rng, self.lv
        metric = rng.choice(["temp", "temp", "pressure", "humidity"])
        if lv >= 4 and rng.random() < 0.07:
            return rng.choice(["wind", "rain"]), str(rng.randrange(0, 300) / 10), rng.choice(["m/s", "mm"])
        if metric == "temp":
            c = rng.randrange(-150, 350)
            if lv >= 3 and rng.random() < 0.4:
                return metric, f"{(c * 9 / 5 + 320) / 10:.1f}", "F"
            return metric, f"{c / 10:.1f}", "C"
        if metric == "pressure":
            p = rng.randrange(9700, 10400)
            if lv >= 3 and rng.random() < 0.4:
                return metric, f"{p / 100:.2f}", "kPa"
            return metric, f"{p / 10:.1f}", "hPa"
        h = rng.randrange(150, 1000)
        if lv >= 3 and rng.random() < 0.4:
            return metric, f"{h / 1000:.3f}", "fraction"
        return metric, f"{h / 10:.1f}", "%"

    def rows(self, n: int, hours: int) -> list[list[str]]:
        rng = self.rng
        out = []
        for _ in range(n):
            when = EPOCH0 + datetime.timedelta(seconds=rng.randrange(hours * 3600))
            site = rng.choice(self.sites)
            metric, value, unit = self.reading()
            stamp = self.stamp(when)
            out.append([stamp, key_of(f"{site}|{stamp}", 10), metric, value, unit])
        return out


def csv_text(rows: list[list[str]], rng, lv: int) -> str:
    cols = ["timestamp", "tag", "metric", "value", "unit"]
    order = list(range(5))
    if lv >= 4:
        rng.shuffle(order)
    lines = [",".join(cols[i] for i in order)]
    lines += [",".join(r[i] for i in order) for r in rows]
    return "\n".join(lines) + "\n"


WANT = {"wide": "the hourly wide table", "daily": "the daily summary per metric",
        "latest": "the latest reading of each metric"}


@dataclass(frozen=True)
class Knobs:
    rows: int  # readings in the feed
    hours: int  # hours the feed spans


def sites(t: TaskBuilder) -> list[str]:
    """Four station codes; the first is the site's, the delivered value. None appears in the feed: rows
    carry only a per-row token derived from it, so the site's rows cannot be told apart (nor guessed by
    frequency) without the code, and any other code selects no row at all. Ours is drawn unseen in the
    instruction; the feeds, whose tokens are hex digests, are only searched for it as text (unseen's
    decodings of every digest would take minutes)."""
    ours = unseen(t, lambda: t.code(2))
    return [ours, *distinct(lambda: t.code(2), 3, [ours])]


@register
class SensorLongToWide(Family):
    name = "sensor_long_to_wide"
    domain = "data_processing"
    skill_types = ("Data Transformation", "Aggregation")
    primitive_skills = ("pivoting tables", "time zone offsets", "unit conversion", "date and time normalisation",
                        "CSV parsing", "filtering by field")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol", "fuzz_equivalence")
    programs = {"Python": REFERENCE}
    variants = ("wide", "daily", "latest")
    levels = {0: Knobs(rows=16, hours=3), 1: Knobs(rows=40, hours=6), 2: Knobs(rows=150, hours=18), 3: Knobs(rows=400, hours=36),
              4: Knobs(rows=900, hours=60)}

    def rules(self, t: TaskBuilder) -> tuple[str, str, str]:
        """(the filled reference, the rules as a bullet list, the output format): both cases share them.
        Under partial credit a constant header line would match whatever the site; it is left out there."""
        lv, var = t.level, t.variant
        header = not t.partial_credit
        rules = ["Columns: `timestamp`, `tag`, `metric`, `value`, `unit`" + (" (the column order varies: read the "
                                                                            "header)" if lv >= 4 else "") + ".",
                 "The feed is shared by several stations and names none of them: `tag` is the first 10 hex digits "
                 "(lowercase) of the SHA-256 of the text `<site code>|<timestamp>`, with the code of the station that "
                 "sent the row and the row's `timestamp` field exactly as written. The rows of the site are those "
                 "whose tag matches the site code given above.",
                 "Timestamps are ISO 8601 local times with their UTC offset (e.g. `2026-03-14T09:15:00+02:00`, or "
                 "`Z` for UTC)" + ("; some are Unix epoch seconds instead" if lv >= 4 else "")
                 + ". Convert every reading to UTC and assign it to its UTC hour.",
                 "Metrics: `temp`, `pressure`, `humidity`. Convert to degrees Celsius, hectopascals and percent. "
                 + ("Units seen: `C` or `F` (C = (F - 32) * 5 / 9) for temp, `hPa` or `kPa` (1 kPa = 10 hPa) for "
                    "pressure, `%` or `fraction` (0.453 = 45.3 %) for humidity." if lv >= 3 else
                    "Units are `C`, `hPa` and `%` throughout.")
                 + (" Rows of any other metric are ignored." if lv >= 4 else ""),
                 {"wide": "For each UTC hour and metric keep the highest converted reading of the site whose code "
                          "is given above.",
                  "daily": "For each UTC day and metric, count the readings of the site whose code is given above "
                           "and take their lowest and highest converted values.",
                  "latest": "For each metric, find the latest reading (by UTC instant) of the site whose code is "
                            "given above; of two readings at the same instant the higher converted value counts."
                  }[var]]
        cols = {"wide": "hour_utc,temp_c,pressure_hpa,humidity_pct", "daily": "day_utc,metric,readings,min,max",
                "latest": "metric,time_utc,value"}[var]
        head = (f"the header line `{cols}`, then " if header else f"no header line: the columns are `{cols}`, with ")
        rounding = "rounded to one decimal (halves away from zero; e.g. `-3.5`, `1013.0`)"
        fmt = {"wide": f"CSV with {head}one line per UTC hour that has at least one reading of the site, sorted by "
                       f"time; `hour_utc` as `YYYY-MM-DDTHH:00Z`; each value {rounding}, an empty field when the "
                       "site has no reading of that metric in that hour",
               "daily": f"CSV with {head}one line per UTC day and metric that has at least one reading of the site, "
                        "sorted by day and, within a day, in the order temp, pressure, humidity; `day_utc` as "
                        "`YYYY-MM-DD`, `metric` as the converted column name (`temp_c`, `pressure_hpa` or "
                        f"`humidity_pct`), `readings` the count, `min` and `max` {rounding}",
               "latest": f"CSV with {head}one line per metric that has a reading of the site, in the order temp, "
                         "pressure, humidity; `metric` as the converted column name (`temp_c`, `pressure_hpa` or "
                         f"`humidity_pct`), `time_utc` as `YYYY-MM-DDTHH:MM:SSZ`, `value` {rounding}"}[var]
        src = fill(REFERENCE, HEADER=header, VARIANT=repr(var))
        return src, "\n".join(f"- {r}" for r in rules), fmt

    def program_case(self, t: TaskBuilder) -> None:
        rng, lv = t.rng, t.level
        src, bullets, fmt = self.rules(t)
        ns = run_python(src)
        for _ in range(20):
            codes = sites(t)
            gen = Gen(rng, lv, codes)
            cases = []
            for _ in range(200):
                if len(cases) == 10:
                    break
                text = csv_text(gen.rows(rng.randrange(12, 40), rng.randrange(2, 12)), rng, lv)
                out = ns["pivot"](text, codes[0])
                if out.count("\n") >= 2:  # a case without the site's rows would not tell programs apart
                    cases.append((text, out))
            if len(cases) == 10 and not any(codes[0] in c.upper() for case in cases for c in case):
                break
        else:
            raise FamilyError(f"family {self.name}: no ten feeds with readings of the site")
        v = t.deliver(codes[0], "the site code")
        t.say("Our weather stations report readings in long format, one reading per CSV row. We need a tool that "
              f"reads one such CSV on standard input and prints {WANT[t.variant]} of the site whose code is "
              "given above.\n\n" + bullets + f"\n\nOutput: {fmt}.")
        t.expect_program("Hard-code the site code given above.", cases, {"Python": src})
        t.solve(f'sed -i "s/@@SITE@@/{v}/" /app/solution.py')

    def output_case(self, t: TaskBuilder) -> None:
        k, rng, lv = t.knobs, t.rng, t.level
        if lv == 0:
            return self.atomic(t)
        src, bullets, fmt = self.rules(t)
        ns = run_python(src)
        for _ in range(50):
            codes = sites(t)
            text = csv_text(Gen(rng, lv, codes).rows(k.rows, k.hours), rng, lv)
            truth = ns["pivot"](text, codes[0])
            if truth.count("\n") >= 2 and codes[0] not in text.upper():
                break
        else:
            raise FamilyError(f"family {self.name}: no feed with two hours of the site")
        # The feed's name varies by seed, not only its rows.
        path = f"/app/{rng.choice(['data', 'feeds', 'weather'])}/{rng.choice(['readings', 'observations', 'feed'])}.csv"
        out = {"wide": "/app/out/hourly.csv", "daily": "/app/out/daily.csv", "latest": "/app/out/latest.csv"}[t.variant]
        t.add_file(path, text)
        v = t.deliver(codes[0], "the site code")
        t.say(rng.choice([f"Our weather stations report readings in long format, one reading per row, in `{path}`.",
                          f"`{path}` is the shared feed of our weather stations: long format, one reading per "
                          "row."])
              + f" I need {WANT[t.variant]} of the site whose code is given above.\n\n" + bullets)
        t.add_solution_file("pivot.py", src)
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\npython3 /solution/pivot.py "{v}" < {path} > {out}')
        t.say(f"Format: {fmt}.")
        t.expect_output(out, truth, "the table")

    def atomic(self, t: TaskBuilder) -> None:
        """One grep on a constant hash of the station code (all readings in Celsius, hPa and %, all times in
        UTC), then: the site's highest temperature (wide), its readings counted per metric (daily), or its
        latest reading (latest)."""
        k, rng, var = t.knobs, t.rng, t.variant
        for _ in range(50):
            codes = sites(t)
            gen = Gen(rng, 0, codes)
            rows = []
            for _ in range(k.rows):
                when = EPOCH0 + datetime.timedelta(seconds=rng.randrange(k.hours * 3600))
                rows.append([when.strftime("%Y-%m-%dT%H:%M:%SZ"), key_of(rng.choice(codes)), *gen.reading()])
            mine = [r for r in rows if r[1] == key_of(codes[0])]
            # Ignoring the station must never give the answer: the site's result is not the feed's.
            if var == "daily":
                def counts(rs):
                    return "".join(f"{m},{sum(r[2] == m for r in rs)}\n" for m in sorted({r[2] for r in rs}))
                truth = counts(mine)
                if truth.count("\n") >= 2 and truth != counts(rows):
                    break
            elif var == "latest":
                stamps = sorted(r[0] for r in mine)
                truth = ",".join(max(mine)[2:]) + "\n" if mine else ""
                if len(mine) >= 2 and stamps[-1] != stamps[-2] and max(mine) != max(rows):
                    break
            else:
                temps = [(float(r[3]), r[3]) for r in rows if r[2] == "temp"]
                ours = [(float(r[3]), r[3]) for r in mine if r[2] == "temp"]
                truth = max(ours)[1] + "\n" if ours else ""
                if len(ours) >= 2 and max(ours) < max(temps):
                    break
        else:
            raise FamilyError(f"family {self.name}: no feed with enough readings of the site")
        text = "timestamp,station,metric,value,unit\n" + "".join(",".join(r) + "\n" for r in rows)
        t.add_file("/app/data/readings.csv", text)
        t.say("`/app/data/readings.csv` holds weather readings, one per row (`timestamp,station,metric,value,unit`, "
              "temperatures in Celsius). `station` is the first 16 hex digits of the SHA-256 of the station's code "
              "(`printf %s <code> | sha256sum | cut -c1-16`).")
        v = t.deliver(codes[0], "the site code")
        grep = f'grep ",{key_cmd(v)}," /app/data/readings.csv'
        if var == "daily":
            out, what = "/app/out/metric_counts.csv", "the counts"
            t.say(f"How many readings of each metric did that site send? Write one line `metric,count` per metric it "
                  f"reported, sorted by metric name, to `{out}`.")
            cmd = f"{grep} | cut -d, -f3 | sort | uniq -c | awk '{{print $2 \",\" $1}}'"
        elif var == "latest":
            out, what = "/app/out/latest.csv", "the latest reading"
            t.say("The timestamps are all UTC in one format. Write the latest reading of that site as "
                  f"`metric,value,unit`, exactly as written in the file, to `{out}`.")
            cmd = f"{grep} | sort | tail -n1 | cut -d, -f3-"
        else:
            out, what = "/app/out/max_temp.txt", "the highest temperature"
            t.say(f"Write the highest `temp` reading of that site, exactly as written in the file, to `{out}`.")
            cmd = f'grep ",{key_cmd(v)},temp," /app/data/readings.csv | cut -d, -f4 | sort -g | tail -n1'
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\n{cmd} > {out}')
        t.expect_output(out, truth, what)
