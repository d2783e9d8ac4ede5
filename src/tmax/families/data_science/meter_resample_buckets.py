"""Put an irregular meter feed on a regular clock: one meter's readings (one CSV among several, named by a
SHA-256 prefix of the meter's name, the delivered value) resampled to fixed-width UTC buckets over a
stated window. Variants: the total per bucket with empty buckets as zero, the last known value at each
bucket's end (carried forward, also from before the window), and the runs of buckets with no reading
(outages). Traps by level: unsorted rows and readings outside the window, then timestamps with UTC
offsets, then rows exported twice and blank values, then epoch-second timestamps and readings logged in
Wh beside kWh."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from tmax.families.base import Family, TaskBuilder, register
from tmax.families.data_science._common import keyed_case, on_host
from tmax.families.programs import csv_text, fill, run_python

REFERENCE = r'''
import csv
import datetime as dt
import sys

START, END, WIDTH = @START@, @END@, @WIDTH@  # the window [START, END) and the bucket width, in epoch seconds


def when(text):
    s = text.strip()
    if s.isdigit():
        return int(s)
    return int(dt.datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp())


def stamp(t):
    return dt.datetime.fromtimestamp(t, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def readings(path):
    """(epoch seconds, kWh) of every reading, in time order; a row exported twice is one reading."""
    seen, out = set(), []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            row = (r["ts"], r["value"], r.get("unit", ""))
            if row in seen:
                continue
            seen.add(row)
            v = r["value"].strip()
            if v.lower() in ("", "nan", "null"):
                continue
            scale = 1000 if r.get("unit", "kWh").strip() == "Wh" else 1
            out.append((when(r["ts"]), float(v) / scale))
    return sorted(out)


def report(path, variant):
    data = readings(path)
    starts = list(range(START, END, WIDTH))
    if variant == "sum":
        total = {s: 0.0 for s in starts}
        for t, v in data:
            if START <= t < END:
                total[START + (t - START) // WIDTH * WIDTH] += v
        return "".join(f"{stamp(s)},{total[s]:.2f}\n" for s in starts)
    if variant == "last":
        out, i, last = [], 0, None
        for s in starts:
            while i < len(data) and data[i][0] < s + WIDTH:  # a reading at the bucket's end is the next one's
                last = data[i][1]
                i += 1
            if last is not None:
                out.append(f"{stamp(s)},{last:.2f}\n")
        return "".join(out)
    filled = {START + (t - START) // WIDTH * WIDTH for t, _ in data if START <= t < END}
    runs = []
    for s in starts:
        if s in filled:
            continue
        if runs and runs[-1][1] == s:
            runs[-1][1], runs[-1][2] = s + WIDTH, runs[-1][2] + 1
        else:
            runs.append([s, s + WIDTH, 1])
    return "".join(f"{stamp(a)},{stamp(b)},{n}\n" for a, b, n in runs)


if __name__ == "__main__":
    sys.stdout.write(report(sys.argv[1], sys.argv[2]))
'''


@dataclass(frozen=True)
class Knobs:
    buckets: int  # buckets in the window
    width: int  # bucket width in minutes
    decoys: int  # other meters' files
    traps: int  # 1: unsorted, outside the window; 2: UTC offsets; 3: duplicates, blanks; 4: epoch stamps, Wh


@register
class MeterResampleBuckets(Family):
    name = "meter_resample_buckets"
    domain = "data_science"
    skill_types = ("Time Series", "Data Quality")
    primitive_skills = ("time bucket resampling", "group-by aggregation", "missing value imputation",
                        "duplicate record removal", "missing value counting")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("sum", "last", "gaps")
    levels = {0: Knobs(buckets=6, width=60, decoys=1, traps=0), 1: Knobs(buckets=12, width=60, decoys=2, traps=1),
              2: Knobs(buckets=24, width=30, decoys=3, traps=2), 3: Knobs(buckets=48, width=15, decoys=3, traps=3),
              4: Knobs(buckets=96, width=15, decoys=3, traps=4)}

    def _meter(self, t, start):
        """One meter's CSV: 0-3 readings per bucket, outages of whole buckets, the dirt of the level."""
        k, rng = t.knobs, t.rng
        width = k.width * 60
        instants = []
        outage = rng.randrange(1, k.buckets - 1)  # at least one empty bucket, never the first one
        for b in range(k.buckets):
            if b == outage or (b > 0 and rng.random() < 0.12):
                continue
            n = rng.choice([1, 1, 2, 3])
            instants += [start + b * width + off for off in rng.sample(range(5, width, 5), n)]
        if k.traps >= 1:  # readings before and after the window
            instants += [start - rng.randrange(60, 4 * width, 5) for _ in range(2)]
            instants += [start + k.buckets * width + rng.randrange(0, 2 * width, 5) for _ in range(2)]
        rows = []
        for ts in sorted(set(instants)):
            kwh = rng.randrange(5, 400)  # hundredths of a kWh, so sums are exact at 2 decimals
            value, unit = f"{kwh / 100:.2f}", "kWh"
            if k.traps >= 4 and rng.random() < 0.25:
                value, unit = str(kwh * 10), "Wh"
            shown = dt.datetime.fromtimestamp(ts, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
            if k.traps >= 2 and rng.random() < 0.3:
                off = rng.choice([-300, -240, 60, 120, 330])
                local = dt.datetime.fromtimestamp(ts, dt.timezone(dt.timedelta(minutes=off)))
                shown = local.isoformat()
            if k.traps >= 4 and rng.random() < 0.2:
                shown = str(ts)
            row = [shown, value, *([unit] if k.traps >= 4 else [])]
            if k.traps >= 3 and rng.random() < 0.05:
                row[1] = rng.choice(["", "NaN", "null"])
            rows.append(row)
            if k.traps >= 3 and rng.random() < 0.06:
                rows.append(list(row))  # the collector resent the row
        if k.traps >= 1:
            rng.shuffle(rows)
        return csv_text(["ts", "value", *(["unit"] if k.traps >= 4 else [])], rows)

    def output_case(self, t: TaskBuilder) -> None:
        k, rng, variant = t.knobs, t.rng, t.variant
        day = dt.datetime(2025, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(days=rng.randrange(600),
                                                                            hours=rng.randrange(0, 12))
        start = int(day.timestamp())
        end = start + k.buckets * k.width * 60
        src = fill(REFERENCE, START=start, END=end, WIDTH=k.width * 60)
        ref = run_python(src)
        texts = [self._meter(t, start) for _ in range(1 + k.decoys)]
        truth = on_host({"feed.csv": texts[0]}, lambda p: ref["report"](p, variant))
        stamp = ref["stamp"]
        rules = [f"Buckets are {k.width} minutes wide, in UTC, from {stamp(start)} (inclusive) to {stamp(end)} "
                 "(exclusive): a bucket holds the readings at or after its start and before its end, and is named "
                 "by its start as `YYYY-MM-DDTHH:MM:SSZ`."]
        rules += [  # one more rule per trap level
            "The rows are not in time order, and the feed also has readings outside the window.",
            "Timestamps are ISO 8601; some carry a UTC offset (`+02:00`) instead of `Z`: convert them "
                "to UTC.",
            "The collector sometimes resent a row (an identical line): it is one reading. A row with "
                "an empty, `NaN` or `null` value is not a reading.",
            "Some timestamps are plain Unix epoch seconds, and the `unit` column says whether a value "
                "is in `kWh` or `Wh` (1000 Wh = 1 kWh); report kWh.",
        ][:k.traps]
        ask = {"sum": ("the energy per bucket: one CSV line `bucket,kwh` for every bucket of the window, empty ones "
                       "as 0.00, with 2 decimals, in time order, without a header"),
               "last": ("the meter's last known value at the end of each bucket: the value of the latest reading "
                        "before the bucket's end, wherever it lies (before the window too), as CSV lines "
                        "`bucket,kwh` with 2 decimals, in time order, without a header; leave out buckets that end "
                        "before the first reading"),
               "gaps": ("the outages: every run of consecutive buckets of the window with no reading, as CSV lines "
                        "`first_bucket_start,last_bucket_end,buckets` (the end of the run's last bucket, then how "
                        "many buckets the run has), in time order, without a header")}[variant]
        keyed_case(t, [{"feed.csv": x} for x in texts], where="meters", thing="meter", rules=rules, ask=ask,
                   intro="Each meter's feed (`ts,value`, in kWh) is in", src=src, script="resample.py",
                   out=f"/app/out/{variant}.csv", truth=truth)
