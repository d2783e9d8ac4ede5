"""Profile a dataset's columns before anyone models on it: a data-quality pass over one CSV among several
in a drop folder, the file named by a SHA-256 prefix of the dataset's name (the delivered value).
Variants: missing values per column (with a list of null spellings), the narrowest type every value of
a column fits, and Tukey-fence outliers per integer column (quartiles by linear interpolation). Traps
by level: more null spellings in any case and padding, stray words in numeric columns and impossible
dates, quoted fields with commas, then a concatenated export that repeats its header mid-file."""

from __future__ import annotations

import csv
import io
import tempfile
from dataclasses import dataclass

from tmax.families.base import Family, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.unseen import distinct, key_cmd, key_of, unseen

REFERENCE = r'''
import csv
import datetime as dt
import re
import sys

NULLS = @NULLS@  # spellings of a missing value (compared trimmed and lower-cased)
CHECK = @CHECK@  # the integer columns the outlier report covers


def records(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    header = rows[0]
    return header, [r for r in rows[1:] if r != header]  # a repeated header is not data


def missing(v):
    return v.strip().lower() in NULLS


def kind(v):
    v = v.strip()
    if re.fullmatch(r"-?[0-9]+", v):
        return 0
    if re.fullmatch(r"-?[0-9]+\.[0-9]+", v):
        return 1
    if re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", v):
        try:
            dt.date(int(v[:4]), int(v[5:7]), int(v[8:]))
            return 2
        except ValueError:
            return 4
    if v.lower() in ("true", "false", "yes", "no"):
        return 3
    return 4


def column_type(values):
    """The narrowest of integer < decimal, or date, or boolean, that every value fits; else text."""
    kinds = {kind(v) for v in values}
    if not kinds:
        return "empty"
    if kinds <= {0}:
        return "integer"
    if kinds <= {0, 1}:
        return "decimal"
    return {frozenset([2]): "date", frozenset([3]): "boolean"}.get(frozenset(kinds), "text")


def quartile(xs, p):
    pos = (len(xs) - 1) * p
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def profile(path, variant):
    header, rows = records(path)
    cols = {h: [r[i] for r in rows if not missing(r[i])] for i, h in enumerate(header)}
    header = [h for h in header if h != "customer_id"]  # the key column is not profiled
    if variant == "missing":
        counts = [(len(rows) - len(cols[h]), h) for h in header]
        return "".join(f"{h},{n}\n" for n, h in sorted(counts, key=lambda c: (-c[0], c[1])))
    if variant == "types":
        return "".join(f"{h},{column_type(cols[h])}\n" for h in header)
    out = []
    for h in sorted(CHECK):
        xs = sorted(int(v) for v in cols[h] if kind(v) == 0)  # a stray word is no measurement
        q1, q3 = quartile(xs, 0.25), quartile(xs, 0.75)
        lo, hi = q1 - 1.5 * (q3 - q1), q3 + 1.5 * (q3 - q1)
        out.append(f"{h},{sum(1 for x in xs if x < lo or x > hi)}\n")
    return "".join(out)


if __name__ == "__main__":
    sys.stdout.write(profile(sys.argv[1], sys.argv[2]))
'''

CITIES = ("Lyon", "Porto", "Leeds", "Graz", "Turku", "Gdansk", "Bilbao", "Aarhus", "Brno", "Ghent")
PLANS = ("free", "basic", "pro", "team, annual", "team, monthly", "enterprise")
NULL_SETS = (("",), ("", "na"), ("", "na", "n/a", "null", "-"))


def _value(rng, col, i):
    """One clean cell of column ``col`` for row ``i``."""
    if col == "customer_id":
        return str(100000 + i * 7 + rng.randrange(7))
    if col in ("age", "sessions", "spend_cents"):
        base = {"age": (38, 11), "sessions": (20, 6), "spend_cents": (4500, 1500)}[col]
        v = max(0, round(rng.gauss(*base)))
        if rng.random() < 0.06:  # a genuinely extreme value
            v = base[0] + rng.randrange(5, 12) * base[1]
        return str(v)
    if col == "score":
        return f"{rng.uniform(0, 1):.3f}"
    if col == "signup":
        return f"2024-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d}"
    if col == "opted_in":
        return rng.choice(["true", "false", "yes", "no"])
    if col == "city":
        return rng.choice(CITIES)
    return rng.choice(PLANS)


COLUMNS = ("customer_id", "age", "sessions", "spend_cents", "score", "signup", "opted_in", "city", "plan")


@dataclass(frozen=True)
class Knobs:
    rows: int
    columns: int  # columns beyond customer_id
    decoys: int  # other datasets in the drop folder
    traps: int  # 1: NA; 2: more null spellings, padding; 3: strays, quoting; 4: repeated header


@register
class CsvColumnProfile(Family):
    name = "csv_column_profile"
    domain = "data_science"
    skill_types = ("Data Quality",)
    primitive_skills = ("descriptive statistics", "outlier handling", "column type inference",
                        "missing value counting", "interquartile range fences")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("missing", "types", "outliers")
    levels = {0: Knobs(rows=12, columns=4, decoys=1, traps=0), 1: Knobs(rows=40, columns=5, decoys=2, traps=1),
              2: Knobs(rows=100, columns=6, decoys=3, traps=2), 3: Knobs(rows=200, columns=7, decoys=3, traps=3),
              4: Knobs(rows=300, columns=8, decoys=3, traps=4)}

    def _dataset(self, t, cols, nulls):
        k, rng = t.knobs, t.rng
        rows = []
        strays = {c: rng.randrange(k.rows) for c in rng.sample(cols[1:], 2)} if k.traps >= 3 else {}
        for i in range(k.rows):
            row = []
            for c in cols:
                v = _value(rng, c, i)
                if c != "customer_id" and rng.random() < 0.1:
                    v = rng.choice(nulls)
                    if k.traps >= 2:
                        v = rng.choice([v, v.upper(), f" {v} "])
                elif strays.get(c) == i:
                    v = {"signup": "2024-02-30", "opted_in": "maybe"}.get(c, "unknown")  # a stray value
                row.append(v)
            rows.append(row)
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(cols)
        for i, r in enumerate(rows):
            if k.traps >= 4 and i == len(rows) // 2:
                w.writerow(cols)  # a second export appended with its header
            w.writerow(r)
        return buf.getvalue()

    def output_case(self, t: TaskBuilder) -> None:
        k, rng, variant = t.knobs, t.rng, t.variant
        ints = ["age", "sessions", "spend_cents"]
        rest = [c for c in COLUMNS[4:] if k.traps >= 3 or c != "plan"]  # plan has commas: quoting from 3 on
        n_int = 3 if k.columns >= 8 else 2
        pick = rng.sample(ints, n_int) + rng.sample(rest, k.columns - n_int)
        cols = ["customer_id", *sorted(pick, key=COLUMNS.index)]
        nulls = NULL_SETS[min(k.traps, 2)]
        check = sorted(c for c in cols if c in ints)
        src = fill(REFERENCE, NULLS=nulls, CHECK=check)
        ref = run_python(src)
        sets = [self._dataset(t, cols, nulls) for _ in range(1 + k.decoys)]
        target = unseen(t, lambda: t.code(2), *sets)
        keys = [key_of(n) for n in [target, *distinct(lambda: t.code(2), k.decoys, [target])]]
        for key, text in zip(keys, sets):
            t.add_file(f"/app/datasets/{key}.csv", text)
        with tempfile.NamedTemporaryFile("w", suffix=".csv") as f:
            f.write(sets[0])
            f.flush()
            truth = ref["profile"](f.name, variant)
        spell = ", ".join(f"`{n}`" if n else "an empty cell" for n in nulls)
        rules = [f"A missing value is {spell}" + (" (in any letter case, with or without surrounding spaces)"
                                                  if k.traps >= 2 else "") + "."]
        if k.traps >= 3:
            rules.append("The file is proper CSV: quoted fields may contain commas.")
        if k.traps >= 4:
            rules.append("The file is two exports concatenated: the header line repeats in the middle and is not "
                         "a data row.")
        ask = {"missing": ("the number of missing values in each column, as CSV lines `column,missing` without a "
                           "header, most missing first, ties by column name (byte order), every profiled column "
                           "listed"),
               "types": ("each column's type, as CSV lines `column,type` without a header in the file's column "
                         "order. Looking only at the values that are not missing, the type is `integer` if every "
                         "value is an optionally negative run of digits, else `decimal` if every value is an integer "
                         "or digits with a decimal point and digits (`-1.25`), else `date` if every value is a real "
                         "calendar date written `YYYY-MM-DD`, else `boolean` if every value is `true`, `false`, "
                         "`yes` or `no` (any case), else `text`; a column with no value at all is `empty`"),
               "outliers": ("the number of outliers in each of the integer columns "
                            f"{', '.join(f'`{c}`' for c in check)} by Tukey's fences, as CSV lines "
                            "`column,outliers` without a header, sorted by column name. Ignore missing values and "
                            "anything else that is not an integer; Q1 and Q3 are the 25th and 75th percentiles by "
                            "linear interpolation between order statistics (position (n-1)p counting from 0, as "
                            "numpy's default), and an outlier lies strictly below Q1 - 1.5 IQR or strictly above "
                            "Q3 + 1.5 IQR")}[variant]
        t.say("New datasets land in `/app/datasets/` as `<KEY>.csv`, where KEY is the first 16 hex digits of the "
              "SHA-256 of the dataset's name (`printf %s <name> | sha256sum | cut -c1-16`). Before anyone models on "
              "the dataset named below I want a data-quality profile of it (the `customer_id` key column is not "
              "profiled). " + " ".join(rules)
              + f"\n\nI need {ask}.")
        v = t.deliver(target, "the dataset's name")
        t.add_solution_file("profile.py", src)
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\nkey={key_cmd(v)}\n'
                f'python3 /solution/profile.py "/app/datasets/$key.csv" {variant} > /app/out/profile.csv')
        t.expect_output("/app/out/profile.csv", truth, "the profile")
