"""Fill the gaps in a table before modelling, and say exactly what was filled: one table among several (named
by a SHA-256 prefix of the table's name, the delivered value), its missing numeric cells imputed.
Variants: the column median, the mean of the row's group (a group with nothing observed falls back to
the column mean), and the last observation carried forward within each store by date (leading gaps
take the next observation). Traps by level: several spellings of missing and padding, then store names
typed in any case and unsorted rows, then a -999 sentinel that means missing, then rows exported twice
and a store with nothing observed in a column."""

from __future__ import annotations

from dataclasses import dataclass

from tmax.families.base import Family, TaskBuilder, register
from tmax.families.data_science._common import keyed_case, on_host
from tmax.families.programs import csv_text, fill, run_python
from tmax.families.unseen import distinct

REFERENCE = r'''
import csv
import sys

COLUMNS = @COLUMNS@  # the numeric columns to impute
MISSING = ("", "na", "n/a", "null", "nan", "-999")


def load(path):
    """Rows as (row_id, store, date, {column: value or None}); a row_id exported twice counts once."""
    seen, rows = set(), []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if r["row_id"] in seen:
                continue
            seen.add(r["row_id"])
            cells = {c: None if r[c].strip().lower() in MISSING else float(r[c]) for c in COLUMNS}
            rows.append((r["row_id"], r["store"].strip().lower(), r["date"].strip(), cells))
    return rows


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def fills(path, variant):
    """(row_id, column) -> the imputed value of every missing cell."""
    rows = load(path)
    out = {}
    for c in COLUMNS:
        seen = [x[c] for _, _, _, x in rows if x[c] is not None]
        if variant == "median":
            out.update({(rid, c): median(seen) for rid, _, _, x in rows if x[c] is None})
        elif variant == "group_mean":
            by = {}
            for _, g, _, x in rows:
                if x[c] is not None:
                    by.setdefault(g, []).append(x[c])
            mean = sum(seen) / len(seen)
            out.update({(rid, c): sum(by[g]) / len(by[g]) if g in by else mean
                        for rid, g, _, x in rows if x[c] is None})
        else:
            for g in sorted({g for _, g, _, _ in rows}):
                series = sorted((d, rid, x[c]) for rid, gg, d, x in rows if gg == g)
                known = [v for _, _, v in series if v is not None]
                last = known[0] if known else median(seen)  # a leading gap takes the next observation
                for _, rid, v in series:
                    if v is None:
                        out[rid, c] = last
                    else:
                        last = v
    return out


def report(path, variant):
    return "".join(f"{rid},{c},{v:.4f}\n" for (rid, c), v in sorted(fills(path, variant).items()))


if __name__ == "__main__":
    sys.stdout.write(report(sys.argv[1], sys.argv[2]))
'''

MEASURES = ("footfall", "sales_k", "temp_c", "basket_avg", "returns", "staff_hours")
STORES = ("harbour", "market", "station", "castle", "airport", "mill")


@dataclass(frozen=True)
class Knobs:
    days: int  # dates per store
    stores: int
    columns: int  # numeric columns
    gaps: float  # share of missing cells
    decoys: int  # other tables
    traps: int  # 1: missing spellings; 2: store spellings, unsorted; 3: -999 sentinel; 4: duplicates, empty store


@register
class MissingValueFillReport(Family):
    name = "missing_value_fill_report"
    domain = "data_science"
    skill_types = ("Data Quality", "Feature Engineering")
    primitive_skills = ("missing value imputation", "missing value counting", "group-by aggregation",
                        "descriptive statistics", "duplicate record removal")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("median", "group_mean", "carry_forward")
    levels = {0: Knobs(days=4, stores=2, columns=1, gaps=0.25, decoys=1, traps=0),
              1: Knobs(days=8, stores=3, columns=2, gaps=0.15, decoys=2, traps=1),
              2: Knobs(days=12, stores=3, columns=3, gaps=0.12, decoys=3, traps=2),
              3: Knobs(days=16, stores=4, columns=3, gaps=0.12, decoys=3, traps=3),
              4: Knobs(days=20, stores=5, columns=4, gaps=0.1, decoys=3, traps=4)}

    def _table(self, t, cols):
        """One table: a daily row per store, store-level means, gaps spelt the level's ways."""
        k, rng = t.knobs, t.rng
        stores = STORES[:k.stores]
        level = {(s, c): rng.uniform(20, 80) for s in stores for c in cols}
        ids = distinct(lambda: f"r{rng.randrange(1000, 10000)}", k.days * k.stores)
        empty = (stores[-1], cols[0]) if k.traps >= 4 else None  # this store never reported this column
        spellings = [""] + (["NA", "null", " n/a"] if k.traps >= 1 else []) + (["-999"] if k.traps >= 3 else [])
        rows = []
        for i, (s, d) in enumerate((s, d) for d in range(k.days) for s in stores):
            cells = []
            for c in cols:
                if (s, c) == empty or rng.random() < k.gaps or (i == 0 and c == cols[0]):
                    cells.append(rng.choice(spellings))
                else:
                    cells.append(f"{level[s, c] + rng.gauss(0, 6):.1f}")
            shown = s if k.traps < 2 or rng.random() > 0.2 else rng.choice([s.upper(), s.title(), f" {s}"])
            rows.append([ids[i], shown, f"2025-03-{d + 1:02d}", *cells])
            if k.traps >= 4 and rng.random() < 0.05:
                rows.append(list(rows[-1]))  # exported twice
        if k.traps >= 2:
            rng.shuffle(rows)
        return csv_text(["row_id", "store", "date", *cols], rows)

    def output_case(self, t: TaskBuilder) -> None:
        k, rng, variant = t.knobs, t.rng, t.variant
        cols = rng.sample(MEASURES, k.columns)
        src = fill(REFERENCE, COLUMNS=tuple(cols))
        ref = run_python(src)
        for _ in range(30):  # redraw a target whose filled value would fall exactly on a rounding tie
            texts = [self._table(t, cols) for _ in range(1 + k.decoys)]
            filled, truth = on_host({"table.csv": texts[0]}, lambda p: (ref["fills"](p, variant),
                                                                         ref["report"](p, variant)))
            if all(abs((v * 1e4) % 1 - 0.5) > 1e-6 for v in filled.values()):
                break
        rules = [f"Each row is one store's day: `row_id`, `store`, `date` and the numeric columns "
                 f"{', '.join(f'`{c}`' for c in cols)}, which have gaps (an empty cell is missing)."]
        rules += [  # one more rule per trap level
            "Missing is also spelt `NA`, `null` or `n/a`, in any case and with padding.",
            "Store names were typed by hand: compare them trimmed and lower-cased. The rows are not sorted.",
            "A value of `-999` is the logger's code for missing.",
            "Some rows were exported twice (same `row_id`): keep the first. A store may have no observed value "
                "at all in a column.",
        ][:k.traps]
        how = {"median": "the median of the column's observed values (over all stores; the mean of the two middle "
                         "values when their count is even)",
               "group_mean": ("the mean of the column's observed values in the same store; when that store has none, "
                              "the mean of the column's observed values over all stores"),
               "carry_forward": ("the store's last observed value of that column before that date (dates sort as "
                                 "text); a gap before the store's first observation takes that first observation, "
                                 "and a store with no observation at all takes the column's median over all stores "
                                 "(the mean of the two middle values when their count is even)")}[variant]
        ask = (f"every missing cell of the numeric columns filled with {how}, as CSV lines `row_id,column,value` "
               "(value with 4 decimals), sorted by row_id, then column name, in byte order, without a header")
        keyed_case(t, [{"table.csv": x} for x in texts], where="tables", thing="table", rules=rules, ask=ask,
                   intro="Each table export is in", src=src, script="impute.py", out=f"/app/out/{variant}.csv",
                   truth=truth)
