"""Screen a feature table by Pearson correlation before modelling: one CSV among several in a feature
store folder, named by a SHA-256 prefix of the feature set's name (the delivered value). Variants:
the features ranked by absolute correlation with the target, the redundant feature pairs above a
threshold, and the greedy correlation filter (keep features in order of target correlation, drop any
too correlated with one already kept). Traps by level: rows with missing values (listwise deletion),
a constant feature whose correlation is undefined, duplicated ids, and held-out rows that must not
leak into the statistics."""

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
import math
import sys

THRESHOLD = @THRESHOLD@  # |r| at or above which two features are redundant
MISSING = ("", "na", "nan", "null")


def load(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    cols = [c for c in rows[0] if c not in ("id", "target", "split")]
    data, ids = {c: [] for c in ["target", *cols]}, set()
    for r in rows:
        if r["id"] in ids or r.get("split", "train").strip().lower() != "train":
            continue  # a repeated id is one sample; held-out rows stay held out
        if any(r[c].strip().lower() in MISSING for c in data):
            continue  # listwise deletion
        ids.add(r["id"])
        for c in data:
            data[c].append(float(r[c]))
    return cols, data


def pearson(x, y):
    mx, my = sum(x) / len(x), sum(y) / len(y)
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y))
    sxx = sum((a - mx) ** 2 for a in x)
    syy = sum((b - my) ** 2 for b in y)
    return None if sxx == 0 or syy == 0 else sxy / math.sqrt(sxx * syy)


def screen(path, variant):
    cols, data = load(path)
    r_t = {c: pearson(data[c], data["target"]) for c in cols}
    feats = [c for c in cols if r_t[c] is not None]  # a constant feature has no correlation
    order = sorted(feats, key=lambda c: (-abs(r_t[c]), c))
    if variant == "target_rank":
        return "".join(f"{c},{r_t[c]:.4f}\n" for c in order)
    if variant == "redundant_pairs":
        out = []
        for a in sorted(feats):
            for b in sorted(feats):
                if a < b and abs(pearson(data[a], data[b])) >= THRESHOLD:
                    out.append(f"{a},{b},{pearson(data[a], data[b]):.4f}\n")
        return "".join(out)
    keep = []
    for c in order:
        if all(abs(pearson(data[c], data[k])) < THRESHOLD for k in keep):
            keep.append(c)
    return "".join(f"{i + 1},{c},{r_t[c]:.4f}\n" for i, c in enumerate(keep))


if __name__ == "__main__":
    sys.stdout.write(screen(sys.argv[1], sys.argv[2]))
'''

NAMES = ("price_index", "promo_days", "footfall", "temp_c", "rain_mm", "ad_spend", "stock_level", "web_visits",
         "competitor_price", "staff_hours", "returns", "loyalty_signups")


@dataclass(frozen=True)
class Knobs:
    rows: int
    features: int
    decoys: int  # other feature sets in the store
    traps: int  # 1: missing values; 2: a constant feature, duplicate ids; 3: held-out rows


@register
class FeatureCorrelationScreen(Family):
    name = "feature_correlation_screen"
    domain = "data_science"
    skill_types = ("Feature Engineering", "Statistical Inference")
    primitive_skills = ("descriptive statistics", "duplicate record removal", "cohort filtering",
                        "pearson correlation", "correlation-based feature selection")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("target_rank", "redundant_pairs", "greedy_filter")
    levels = {0: Knobs(rows=12, features=3, decoys=1, traps=0), 1: Knobs(rows=40, features=4, decoys=2, traps=0),
              2: Knobs(rows=80, features=5, decoys=3, traps=1), 3: Knobs(rows=150, features=6, decoys=3, traps=2),
              4: Knobs(rows=250, features=8, decoys=3, traps=3)}

    def _table(self, t, feats):
        """One feature set's CSV: the first two features are near-copies (a redundant pair), the rest mix
        signal and noise."""
        k, rng = t.knobs, t.rng
        weights = {f: rng.choice([-1.5, -0.8, -0.3, 0.0, 0.4, 0.9, 1.6]) for f in feats}
        const = feats[-1] if k.traps >= 2 else None
        rows = []
        ids = distinct(lambda: f"w{rng.randrange(1000, 10000)}", k.rows)
        for rid in ids:
            y = rng.gauss(0, 1)
            x = {}
            for i, f in enumerate(feats):
                if i == 1:
                    x[f] = x[feats[0]] + rng.gauss(0, 0.25)
                else:
                    x[f] = weights[f] * y + rng.gauss(0, 1)
            cells = [f"{100 + 15 * y:.2f}"] + [f"{10 * x[f] + 50:.2f}" if f != const else "1.00" for f in feats]
            if k.traps >= 1 and rng.random() < 0.08:
                cells[rng.randrange(len(cells))] = rng.choice(["", "NA", "nan"])
            row = [rid, *cells]
            if k.traps >= 3:
                row.append("train" if rng.random() < 0.75 else rng.choice(["test", "holdout"]))
            rows.append(row)
            if k.traps >= 2 and rng.random() < 0.04:
                rows.append(list(row))  # the same week exported twice
        rng.shuffle(rows)
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(["id", "target", *feats, *(["split"] if k.traps >= 3 else [])])
        w.writerows(rows)
        return buf.getvalue()

    def output_case(self, t: TaskBuilder) -> None:
        k, rng, variant = t.knobs, t.rng, t.variant
        threshold = rng.choice([0.7, 0.75, 0.8])
        feats = rng.sample(NAMES, k.features)
        src = fill(REFERENCE, THRESHOLD=threshold)
        ref = run_python(src)
        tables = [self._table(t, feats) for _ in range(1 + k.decoys)]
        target = unseen(t, lambda: t.code(2), *tables)
        keys = [key_of(n) for n in [target, *distinct(lambda: t.code(2), k.decoys, [target])]]
        for key, text in zip(keys, tables):
            t.add_file(f"/app/features/{key}.csv", text)
        with tempfile.NamedTemporaryFile("w", suffix=".csv") as f:
            f.write(tables[0])
            f.flush()
            truth = ref["screen"](f.name, variant)
        rules = ["Use Pearson's correlation coefficient r over the rows kept."]
        if k.traps >= 1:
            rules.append("Rows with a missing cell (empty, `NA`, `nan`) in the target or any feature are dropped "
                         "entirely before anything is computed.")
        if k.traps >= 2:
            rules.append("A week exported twice has the same `id`: keep one row. A feature that never varies has no "
                         "correlation: leave it out of every result.")
        if k.traps >= 3:
            rules.append("Only rows whose `split` is `train` may be used; the other rows are held out.")
        pair = f"|r| >= {threshold}"
        ask = {"target_rank": ("every feature ranked by the absolute value of its correlation with `target`, as CSV "
                               "lines `feature,r` (r with its sign, 4 decimals) without a header, strongest first, "
                               "ties by feature name"),
               "redundant_pairs": (f"every redundant pair of features ({pair} between them), as CSV lines "
                                   "`feature_a,feature_b,r` without a header (feature_a < feature_b in byte order, r "
                                   "with its sign and 4 decimals), sorted by feature_a, then feature_b"),
               "greedy_filter": ("the result of our correlation filter: go through the features by absolute "
                                 "correlation with `target`, strongest first (ties by name), and keep a feature "
                                 f"unless it has {pair} with a feature already kept. List the kept features as CSV "
                                 "lines `position,feature,r` (position from 1 in keeping order, r its correlation "
                                 "with `target`, signed, 4 decimals) without a header")}[variant]
        t.say("Our feature store drops one CSV per feature set into `/app/features/` as `<KEY>.csv`, where KEY is the "
              "first 16 hex digits of the SHA-256 of the feature set's name (`printf %s <name> | sha256sum | cut "
              "-c1-16`). Each row is one week; `target` is what we forecast and the other numeric columns are "
              "candidate features (`id` is not one).\n\n" + "\n".join(f"- {r}" for r in rules)
              + f"\n\nFor the feature set named below I need {ask}.")
        v = t.deliver(target, "the feature set's name")
        t.add_solution_file("screen.py", src)
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\nkey={key_cmd(v)}\n'
                f'python3 /solution/screen.py "/app/features/$key.csv" {variant} > /app/out/screen.csv')
        t.expect_output("/app/out/screen.csv", truth, "the screen")
