"""Turn a raw table into a model's design matrix, by a stated preprocessing recipe: one table among several
(named by a SHA-256 prefix of the dataset's name, the delivered value). Column types are inferred (a
column is numeric when every present value is a number), categoricals are one-hot encoded and, at
higher levels, numerics standardised. Variants: the design matrix's column names, the encoded matrix
itself, and the fitted scaler (mean and standard deviation per numeric column). Traps by level:
standardising and levels typed in any case, then missing values (mean imputation, a `__missing__`
level), then drop-first encoding and a code column that only looks numeric, then rare levels pooled
into `__other__` and a constant column that is dropped."""

from __future__ import annotations

from dataclasses import dataclass

from tmax.families.base import Family, TaskBuilder, register
from tmax.families.data_science._common import keyed_case, on_host
from tmax.families.programs import csv_text, fill, run_python
from tmax.families.unseen import distinct

REFERENCE = r'''
import csv
import math
import sys

STANDARDISE = @STANDARDISE@  # numeric columns become (x - mean) / population std
DROP_FIRST = @DROP_FIRST@  # each categorical loses its first level (byte order), the reference level
RARE = @RARE@  # levels with fewer rows are pooled into "__other__" (0: no pooling)
MISSING = ("", "na", "null", "nan")


def is_number(v):
    try:
        float(v)
        return True
    except ValueError:
        return False


def level(v):
    v = v.strip().lower()
    return "__missing__" if v in MISSING else v


def fit(rows):
    """The recipe fitted on the rows: (column, "num", mean, std) or (column, "cat", pooling, kept levels)."""
    plan = []
    for c in (c for c in rows[0] if c != "id"):
        present = [r[c].strip() for r in rows if r[c].strip().lower() not in MISSING]
        if all(is_number(v) for v in present):
            if len({float(v) for v in present}) < 2:
                continue  # a constant column carries no information
            xs = [float(v) for v in present]
            mean = sum(xs) / len(xs)
            plan.append((c, "num", mean, math.sqrt(sum((x - mean) ** 2 for x in xs) / len(xs))))
            continue
        counts = {}
        for r in rows:
            counts[level(r[c])] = counts.get(level(r[c]), 0) + 1
        pool = {lv: lv if not RARE or n >= RARE else "__other__" for lv, n in counts.items()}
        kept = sorted(set(pool.values()))
        plan.append((c, "cat", pool, kept[1:] if DROP_FIRST else kept))
    return plan


def names(plan):
    out = []
    for c, kind, _, kept in plan:
        out += [c] if kind == "num" else [f"{c}={lv}" for lv in kept]
    return out


def load(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def encode(plan, r):
    out = []
    for c, kind, a, b in plan:
        if kind == "cat":
            out += ["1" if a[level(r[c])] == lv else "0" for lv in b]
            continue
        v = r[c].strip()
        x = a if v.lower() in MISSING else float(v)  # a missing number is imputed with the mean
        if STANDARDISE:
            x = (x - a) / b
        out.append(f"{round(x, 4) + 0.0:.4f}")  # + 0.0: never "-0.0000"
    return out


def report(path, variant):
    rows = load(path)
    plan = fit(rows)
    if variant == "columns":
        return "".join(n + "\n" for n in names(plan))
    if variant == "scaler":
        return "".join(f"{c},{a:.4f},{b:.4f}\n" for c, kind, a, b in plan if kind == "num")
    return ",".join(["id", *names(plan)]) + "\n" + "".join(",".join([r["id"], *encode(plan, r)]) + "\n" for r in rows)


if __name__ == "__main__":
    sys.stdout.write(report(sys.argv[1], sys.argv[2]))
'''

NUMERIC = (("age", 18, 80), ("income_k", 15, 140), ("tenure_m", 1, 90), ("visits", 0, 40), ("score", 300, 850))
CATEGORICAL = (("plan", ("basic", "plus", "pro", "team", "trial")), ("region", ("north", "south", "east", "west")),
               ("device", ("android", "ios", "web", "desktop", "tv")), ("channel", ("ads", "organic", "referral")))


@dataclass(frozen=True)
class Knobs:
    rows: int
    numeric: int
    categorical: int
    decoys: int  # other datasets' files
    traps: int  # 1: standardise, spellings; 2: missing; 3: drop-first, code column; 4: rare pooling, constant


@register
class OneHotDesignMatrix(Family):
    name = "one_hot_design_matrix"
    domain = "data_science"
    skill_types = ("Feature Engineering", "Machine Learning")
    primitive_skills = ("one-hot encoding", "feature standardisation", "column type inference",
                        "missing value imputation", "descriptive statistics")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("columns", "matrix", "scaler")
    levels = {0: Knobs(rows=6, numeric=1, categorical=1, decoys=1, traps=0),
              1: Knobs(rows=20, numeric=2, categorical=1, decoys=2, traps=1),
              2: Knobs(rows=40, numeric=2, categorical=2, decoys=3, traps=2),
              3: Knobs(rows=70, numeric=3, categorical=2, decoys=3, traps=3),
              4: Knobs(rows=120, numeric=3, categorical=3, decoys=3, traps=4)}

    def _dataset(self, t, nums, cats, order):
        """One raw table with the columns in ``order``; skewed level frequencies so some levels are rare."""
        k, rng = t.knobs, t.rng
        cells = {}
        for name, lo, hi in nums:
            cells[name] = [f"{rng.uniform(lo, hi):.1f}" for _ in range(k.rows)]
        for name, levels in cats:
            weights = [1 / (i + 1) ** 1.5 for i in range(len(levels))]
            cells[name] = []
            for _ in range(k.rows):
                lv = rng.choices(levels, weights)[0]
                if k.traps >= 1 and rng.random() < 0.2:
                    lv = rng.choice([lv.upper(), lv.title(), f" {lv}", f"{lv} "])
                cells[name].append(lv)
        if k.traps >= 3:  # store codes: mostly digits, but codes, so categorical
            cells["store_code"] = [rng.choice(["117", "204", "117", "339", "A12"]) for _ in range(k.rows)]
            cells["store_code"][rng.randrange(k.rows)] = "A12"
        if k.traps >= 4:
            cells["schema_version"] = ["2"] * k.rows
        if k.traps >= 2:
            for name in cells:
                for i in range(k.rows):
                    if rng.random() < 0.05:
                        cells[name][i] = rng.choice(["", "NA", "null"])
        ids = distinct(lambda: f"c{rng.randrange(1000, 10000)}", k.rows)
        return csv_text(["id", *order], [[ids[i], *(cells[c][i] for c in order)] for i in range(k.rows)])

    def output_case(self, t: TaskBuilder) -> None:
        k, rng, variant = t.knobs, t.rng, t.variant
        nums, cats = rng.sample(NUMERIC, k.numeric), rng.sample(CATEGORICAL, k.categorical)
        order = [c[0] for c in nums + cats] + (["store_code"] if k.traps >= 3 else []) \
            + (["schema_version"] if k.traps >= 4 else [])
        rng.shuffle(order)
        rare = 5 if k.traps >= 4 else 0
        src = fill(REFERENCE, STANDARDISE=k.traps >= 1, DROP_FIRST=k.traps >= 3, RARE=rare)
        ref = run_python(src)
        for _ in range(30):  # redraw a target whose fitted mean would fall exactly on a rounding tie
            texts = [self._dataset(t, nums, cats, order) for _ in range(1 + k.decoys)]
            plan, truth = on_host({"data.csv": texts[0]}, lambda p: (ref["fit"](ref["load"](p)),
                                                                      ref["report"](p, variant)))
            if all(abs((a * 1e4) % 1 - 0.5) > 1e-6 for _, kind, a, _ in plan if kind == "num"):
                break
        rules = ["Every column but `id` is a feature. A column is numeric when every present value in it is a number, "
                 "otherwise categorical. A categorical becomes one 0/1 column per level, named `<column>=<level>`, "
                 "its levels in byte order; design columns follow the order of the table's columns. Numeric values "
                 "are written with 4 decimals."]
        rules += [  # one more rule per trap level
            "Levels were typed by hand: compare them trimmed and lower-cased. Standardise every numeric column as "
                "(x - mean) / std, with the mean and the population standard deviation (divide by n) of its present "
                "values.",
            "A missing value is empty, `NA` or `null`. A missing number is imputed with its column's mean (so it "
                "standardises to 0); a missing categorical value is the level `__missing__`.",
            "Drop the first level of every categorical (byte order) as the reference level: it gets no column.",
            f"Levels with fewer than {rare} rows (missing included) are pooled into one level `__other__` before "
                "encoding. A numeric column with a single distinct value is left out of the design matrix.",
        ][:k.traps]
        ask = {"columns": "the design matrix's column names, one per line, in order (not `id`)",
               "matrix": ("the design matrix as CSV: a header `id,<design columns>`, then one line per row of the "
                          "table in its order, the id first (0/1 cells as `0` and `1`)"),
               "scaler": ("the fitted scaler: one CSV line per numeric column of the design matrix, `column,mean,std` "
                          "(present values only, population std, 4 decimals), in design-matrix order, without a "
                          "header")}[variant]
        keyed_case(t, [{"data.csv": x} for x in texts], where="datasets", thing="dataset", rules=rules, ask=ask,
                   intro="Each raw dataset is in", src=src, script="design.py",
                   out="/app/out/columns.txt" if variant == "columns" else f"/app/out/{variant}.csv",
                   truth=truth)
