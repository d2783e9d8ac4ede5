"""Encode a categorical feature for a model: one encoder's training table and the rows to encode (one folder
among several, named by a SHA-256 prefix of the encoder's name, the delivered value). Variants: the
frequency table of the categories, the smoothed target (mean) encoding of every category, and the
encoding applied to new rows (categories never seen in training get the prior). Traps by level:
categories typed in any case and padding, then empty categories (a category of their own) and rows
without a target, then ids exported twice, then rare categories pooled into one before encoding."""

from __future__ import annotations

from dataclasses import dataclass

from tmax.families.base import Family, TaskBuilder, register
from tmax.families.data_science._common import keyed_case, on_host
from tmax.families.programs import csv_text, fill, run_python
from tmax.families.unseen import distinct

REFERENCE = r'''
import csv
import sys

COLUMN = @COLUMN@  # the categorical feature
SMOOTH = @SMOOTH@  # m: a category's mean is shrunk towards the prior as if it had m more rows at the prior
RARE = @RARE@  # categories with fewer training rows are pooled into "__rare__" (0: no pooling)


def category(value):
    return value.strip().lower() or "__missing__"


def training(path):
    """(category, target) of every training row with a target; an id exported twice counts once."""
    seen, rows = set(), []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if r["id"] in seen or not r["target"].strip():
                continue
            seen.add(r["id"])
            rows.append((category(r[COLUMN]), int(r["target"])))
    return rows


def fit(rows):
    """The pooling of each raw category, the prior, and (rows, positives, encoding) per pooled category."""
    raw = {}
    for c, _ in rows:
        raw[c] = raw.get(c, 0) + 1
    pooled = {c: c if not RARE or n >= RARE else "__rare__" for c, n in raw.items()}
    prior = sum(y for _, y in rows) / len(rows)
    stats = {}
    for c, y in rows:
        s = stats.setdefault(pooled[c], [0, 0])
        s[0] += 1
        s[1] += y
    enc = {c: (n, p, (p + SMOOTH * prior) / (n + SMOOTH)) for c, (n, p) in sorted(stats.items())}
    return pooled, prior, enc


def report(folder, variant):
    pooled, prior, enc = fit(training(folder + "/train.csv"))
    if variant == "frequency":
        order = sorted(enc.items(), key=lambda kv: (-kv[1][0], kv[0]))
        return "".join(f"{c},{n}\n" for c, (n, _, _) in order)
    if variant == "target_mean":
        return "".join(f"{c},{e:.4f}\n" for c, (_, _, e) in enc.items())
    with open(folder + "/apply.csv", newline="") as f:
        new = [(r["id"], category(r[COLUMN])) for r in csv.DictReader(f)]
    return "".join(f"{i},{enc[pooled[c]][2] if c in pooled else prior:.4f}\n" for i, c in new)


if __name__ == "__main__":
    sys.stdout.write(report(sys.argv[1], sys.argv[2]))
'''

# (column, categories by falling frequency, what the target means)
FEATURES = (("merchant_category", ("grocery", "fuel", "dining", "travel", "electronics", "pharmacy", "gaming",
                                   "parking", "florist", "jewelry", "pawnshop", "casino", "tolls", "laundry"),
             "1 when the card payment was charged back"),
            ("browser", ("chrome", "safari", "edge", "firefox", "samsung", "opera", "brave", "vivaldi", "yandex",
                         "ucbrowser", "lynx", "netsurf", "falkon", "midori"), "1 when the session converted"),
            ("city", ("leeds", "york", "hull", "bath", "derby", "wells", "ely", "ripon", "truro", "bangor", "lisburn",
                      "newry", "oban", "armagh"), "1 when the customer churned"))


@dataclass(frozen=True)
class Knobs:
    rows: int  # training rows per encoder
    categories: int
    new: int  # rows to encode
    smooth: int  # m of the smoothed mean (0: the plain mean)
    decoys: int  # other encoders' folders
    traps: int  # 1: spellings; 2: empty categories, missing targets; 3: repeated ids; 4: rare pooling


@register
class CategoryTargetEncoding(Family):
    name = "category_target_encoding"
    domain = "data_science"
    skill_types = ("Feature Engineering", "Machine Learning")
    primitive_skills = ("target encoding", "descriptive statistics", "group-by aggregation", "missing value imputation",
                        "duplicate record removal")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("frequency", "target_mean", "apply")
    levels = {0: Knobs(rows=12, categories=3, new=3, smooth=0, decoys=1, traps=0),
              1: Knobs(rows=50, categories=5, new=8, smooth=5, decoys=2, traps=1),
              2: Knobs(rows=120, categories=7, new=12, smooth=10, decoys=3, traps=2),
              3: Knobs(rows=220, categories=9, new=16, smooth=10, decoys=3, traps=3),
              4: Knobs(rows=360, categories=12, new=20, smooth=20, decoys=3, traps=4)}

    def _encoder(self, t, feature):
        """(train.csv, apply.csv) of one encoder: skewed category frequencies, a rate per category."""
        k, rng = t.knobs, t.rng
        col, every, _ = feature
        cats, unseen_cats = list(every[:k.categories]), list(every[k.categories:])
        weights = [1 / (i + 1) ** (1.4 if k.traps >= 4 else 0.6) for i in range(len(cats))]
        rate = {c: rng.uniform(0.05, 0.7) for c in cats}

        def shown(c):
            if k.traps >= 2 and rng.random() < 0.05:
                return rng.choice(["", " "])
            if k.traps >= 1 and rng.random() < 0.2:
                return rng.choice([c.upper(), c.title(), f" {c}", f"{c} "])
            return c

        rows = []
        for rid in distinct(lambda: f"u{rng.randrange(10000, 100000)}", k.rows):
            c = rng.choices(cats, weights)[0]
            row = [rid, shown(c), str(int(rng.random() < rate[c]))]
            if k.traps >= 2 and rng.random() < 0.04:
                row[2] = ""  # the outcome is not known yet: not a training row
            elif k.traps >= 3 and rng.random() < 0.05:  # exported twice, the second copy relabelled: the first counts
                rows.insert(rng.randrange(len(rows) + 1), list(row))
                row = [rid, row[1], str(1 - int(row[2]))]
            rows.append(row)
        new = [[f"n{i:03d}", shown(rng.choice(cats if t.level == 0 or rng.random() < 0.85 else unseen_cats))]
               for i in rng.sample(range(1000), k.new)]
        return csv_text(["id", col, "target"], rows), csv_text(["id", col], new)

    def output_case(self, t: TaskBuilder) -> None:
        k, rng, variant = t.knobs, t.rng, t.variant
        feature = rng.choice(FEATURES)
        col, _, meaning = feature
        rare = 8 if k.traps >= 4 else 0
        src = fill(REFERENCE, COLUMN=repr(col), SMOOTH=k.smooth, RARE=rare)
        ref = run_python(src)
        for _ in range(30):  # redraw a target whose 4-decimal encodings would fall exactly on a rounding tie
            encs = [self._encoder(t, feature) for _ in range(1 + k.decoys)]
            (_, prior, enc), truth = on_host(dict(zip(("train.csv", "apply.csv"), encs[0])), lambda d: (
                ref["fit"](ref["training"](d + "/train.csv")), ref["report"](d, variant)))
            if all(abs((v * 1e4) % 1 - 0.5) > 1e-6 for v in [prior, *(e for _, _, e in enc.values())]):
                break
        rules = [f"`train.csv` has one row per training example: its category in `{col}` and its `target` ({meaning})."]
        rules += [  # one more rule per trap level
            "Categories were typed by hand: compare and report them trimmed and lower-cased.",
            "An empty category is a category of its own, named `__missing__`. Training rows with an "
                "empty `target` are not training rows.",
            "Some ids were exported twice: only the first row of an id (in file order) counts.",
            f"Categories with fewer than {rare} training rows are pooled into one category named "
                "`__rare__` before anything is counted or encoded.",
        ][:k.traps]
        mean = "the mean target of the category's training rows"
        if k.smooth:
            mean = (f"the smoothed mean (positives + {k.smooth} * prior) / (rows + {k.smooth}), where the prior is "
                    "the mean target over all training rows")
        ask = {"frequency": ("the frequency table of the categories: CSV lines `category,rows` (training rows per "
                             "category), most frequent first, ties by category in byte order, without a header"),
               "target_mean": (f"the target encoding of every category: {mean}, as CSV lines `category,encoding` "
                               "with 4 decimals, sorted by category in byte order, without a header"),
               "apply": (f"every row of `apply.csv` encoded: a category's encoding is {mean}; a category that never "
                         "occurs in training gets the mean target over all training rows. Write CSV lines "
                         "`id,encoding` (4 decimals) in the order of `apply.csv`, without a header")}[variant]
        keyed_case(t, [dict(zip(("train.csv", "apply.csv"), e)) for e in encs], where="encoders", thing="encoder",
                   intro="Each encoder's data (`train.csv`, and `apply.csv` with the rows to encode) is in",
                   rules=rules, ask=ask, src=src, script="encode.py", out=f"/app/out/{variant}.csv", truth=truth)
