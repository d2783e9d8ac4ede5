"""Build leakage-safe time features for a demand model: one chain's daily unit sales per store (one CSV among
several, named by a SHA-256 prefix of the chain's name, the delivered value). Variants: the value a
fixed number of calendar days earlier (a lag, by date, not by row), the trailing mean of the previous
days' values (the current day excluded), and the days inside each store's history with no value filled
by linear interpolation in time. Traps by level: unsorted rows and store names typed in any case, then
blank values, then corrections that replace an earlier row of the same day, then dates written
day-first beside ISO dates."""

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

LAG = @LAG@  # calendar days back for the lag
WINDOW = @WINDOW@  # calendar days before the current one that the trailing mean looks at


def day(text):
    s = text.strip()
    if "/" in s:  # DD/MM/YYYY
        d, m, y = s.split("/")
        return dt.date(int(y), int(m), int(d))
    return dt.date.fromisoformat(s)


def series(path):
    """store -> {date: units or None}; a later row of the same store and day replaces an earlier one."""
    last = {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            v = r["units"].strip()
            last[r["store"].strip().lower(), day(r["date"])] = None if v.lower() in ("", "na", "null") else int(v)
    out = {}
    for (store, d), v in sorted(last.items()):
        out.setdefault(store, {})[d] = v
    return out


def report(path, variant):
    lines = []
    for store, days in series(path).items():
        have = sorted(d for d, v in days.items() if v is not None)
        for d in have:
            v = days[d]
            if variant == "lag" and days.get(d - dt.timedelta(days=LAG)) is not None:
                lines.append(f"{store},{d},{v},{days[d - dt.timedelta(days=LAG)]}\n")
            if variant == "trailing_mean":
                prev = [days.get(d - dt.timedelta(days=i)) for i in range(1, WINDOW + 1)]
                prev = [p for p in prev if p is not None]
                if prev:
                    lines.append(f"{store},{d},{sum(prev) / len(prev):.4f}\n")
        if variant == "interpolate":
            for a, b in zip(have, have[1:]):
                span = (b - a).days
                for i in range(1, span):
                    x = days[a] + (days[b] - days[a]) * i / span
                    lines.append(f"{store},{a + dt.timedelta(days=i)},{x:.4f}\n")
    return "".join(lines)


if __name__ == "__main__":
    sys.stdout.write(report(sys.argv[1], sys.argv[2]))
'''

STORES = ("dock", "mall", "parkside", "uptown", "airport", "campus")


@dataclass(frozen=True)
class Knobs:
    stores: int
    days: int  # calendar days of history
    lag: int
    window: int
    decoys: int  # other chains' files
    traps: int  # 1: unsorted, store spellings; 2: blanks; 3: corrections; 4: day-first dates


@register
class StoreLagFeatures(Family):
    name = "store_lag_features"
    domain = "data_science"
    skill_types = ("Time Series", "Feature Engineering")
    primitive_skills = ("rolling mean and standard deviation", "gap filling by interpolation", "group-by aggregation",
                        "duplicate record removal")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("lag", "trailing_mean", "interpolate")
    levels = {0: Knobs(stores=1, days=10, lag=1, window=3, decoys=1, traps=0),
              1: Knobs(stores=2, days=20, lag=1, window=3, decoys=2, traps=1),
              2: Knobs(stores=3, days=30, lag=7, window=7, decoys=3, traps=2),
              3: Knobs(stores=3, days=45, lag=7, window=7, decoys=3, traps=3),
              4: Knobs(stores=4, days=60, lag=7, window=14, decoys=3, traps=4)}

    def _chain(self, t, start):
        """One chain's CSV: a weekly rhythm per store, closed days without a row, the dirt of the level."""
        k, rng = t.knobs, t.rng
        rows, fixes = [], []
        for store in STORES[:k.stores]:
            base, week = rng.randrange(40, 200), [rng.uniform(0.7, 1.4) for _ in range(7)]
            closed = {rng.randrange(1, k.days - 1) for _ in range(max(1, k.days // 8))}  # never the first or last day
            for i in range(k.days):
                if i in closed:
                    continue
                d = start + dt.timedelta(days=i)
                value = max(0, round(base * week[d.weekday()] + rng.gauss(0, base / 10)))
                blank = k.traps >= 2 and 0 < i < k.days - 1 and rng.random() < 0.06
                shown = d.isoformat() if k.traps < 4 or rng.random() < 0.7 else d.strftime("%d/%m/%Y")
                name = store if k.traps < 1 or rng.random() > 0.2 else rng.choice([store.upper(), store.title(),
                                                                                     f" {store}"])
                rows.append([shown, name, rng.choice(["", "NA", "null"]) if blank else str(value)])
                if k.traps >= 3 and not blank and rng.random() < 0.05:  # a correction of that day's count
                    fixes.append(len(rows))
                    rows.append([d.isoformat(), store, str(value + rng.choice([-9, -4, 5, 12]))])
        if k.traps >= 1:  # shuffled, but a correction stays after the row it corrects
            pos = list(range(len(rows)))
            rng.shuffle(pos)
            for i in fixes:
                if pos[i] < pos[i - 1]:
                    pos[i], pos[i - 1] = pos[i - 1], pos[i]
            rows = [rows[i] for i in sorted(range(len(rows)), key=lambda i: pos[i])]
        return csv_text(["date", "store", "units"], rows)

    def output_case(self, t: TaskBuilder) -> None:
        k, rng, variant = t.knobs, t.rng, t.variant
        start = dt.date(2025, 1, 1) + dt.timedelta(days=rng.randrange(500))
        src = fill(REFERENCE, LAG=k.lag, WINDOW=k.window)
        ref = run_python(src)
        texts = [self._chain(t, start) for _ in range(1 + k.decoys)]
        truth = on_host({"sales.csv": texts[0]}, lambda p: ref["report"](p, variant))
        rules = ["Each row is one store's units sold on one day. Days are calendar days: a day without a row has "
                 "no value (the store was closed), so neighbouring rows are not always neighbouring days."]
        rules += [  # one more rule per trap level
            "The rows are not sorted, and store names were typed by hand: compare and report them trimmed and "
                "lower-cased.",
            "A row whose `units` is empty, `NA` or `null` gives that day no value.",
            "A later row for the same store and day (in file order) is a correction: it replaces the earlier one.",
            "Some dates are written day-first as `DD/MM/YYYY`; report every date as `YYYY-MM-DD`.",
        ][:k.traps]
        ask = {"lag": (f"the lag-{k.lag} feature: for every store and day with a value whose day {k.lag} calendar "
                       f"day{'s' if k.lag > 1 else ''} earlier also has one, a CSV line `store,date,units,lag_units` "
                       "(both as integers)"),
               "trailing_mean": (f"the trailing mean: for every store and day with a value, the mean of the values "
                                 f"on the {k.window} calendar days before it (the day itself excluded; days without "
                                 "a value are skipped, and a day with none of them has no line), as CSV lines "
                                 "`store,date,mean` with 4 decimals"),
               "interpolate": ("every day without a value that lies between two days with values of the same store, "
                               "filled by linear interpolation in time between the nearest such days before and "
                               "after, as CSV lines `store,date,units` with 4 decimals")}[variant]
        keyed_case(t, [{"sales.csv": x} for x in texts], where="sales", thing="chain", rules=rules,
                   ask=ask + ", sorted by store, then date, without a header", intro="Each chain's daily sales are in",
                   src=src, script="lags.py", out=f"/app/out/{variant}.csv", truth=truth)
