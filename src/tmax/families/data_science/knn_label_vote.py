"""Classify with k nearest neighbours, reproducibly: a labelled training CSV and a CSV of new points per
experiment, each experiment's folder named by a SHA-256 prefix of its run name (the delivered value).
Variants: the predicted label of every new point (majority vote with a stated tie-break), the k
nearest training ids of every new point, and the leave-one-out accuracy on the training set. Traps by
level: features on very different scales (standardise with the training mean and population standard
deviation), training rows with missing values, duplicated rows and label spellings that differ in
case and spacing."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass

from tmax.families.base import Family, TaskBuilder, register
from tmax.families.programs import csv_text, fill, run_python
from tmax.families.unseen import distinct, key_cmd, key_of, unseen

REFERENCE = r'''
import csv
import math
import sys

K = @K@  # neighbours that vote
STANDARDISE = @STANDARDISE@  # z-score every feature with the training mean and population std
MISSING = ("", "na", "n/a", "null", "nan")


def table(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def load(folder):
    train, ids = [], set()
    rows = table(folder + "/train.csv")
    feats = [c for c in rows[0] if c not in ("id", "label")]
    for r in rows:
        if r["id"] in ids or any(r[c].strip().lower() in MISSING for c in feats):
            continue  # a repeated id is the same sample; a row with a gap cannot be placed
        ids.add(r["id"])
        train.append((r["id"], [float(r[c]) for c in feats], r["label"].strip().lower()))
    queries = [(r["id"], [float(r[c]) for c in feats]) for r in table(folder + "/query.csv")]
    if STANDARDISE:
        n = len(train)
        mean = [sum(x[j] for _, x, _ in train) / n for j in range(len(feats))]
        std = [math.sqrt(sum((x[j] - mean[j]) ** 2 for _, x, _ in train) / n) for j in range(len(feats))]
        z = lambda x: [(v - m) / s for v, m, s in zip(x, mean, std)]
        train = [(i, z(x), y) for i, x, y in train]
        queries = [(i, z(x)) for i, x in queries]
    return train, queries


def nearest(train, x, skip=None):
    d = sorted((sum((a - b) ** 2 for a, b in zip(x, tx)), tid, y) for tid, tx, y in train if tid != skip)
    return d[:K]  # ties in distance go to the smaller training id


def vote(near):
    counts = {}
    for _, _, y in near:
        counts[y] = counts.get(y, 0) + 1
    best = max(counts.values())
    return next(y for _, _, y in near if counts[y] == best)  # a tied vote goes to the nearest


def report(folder, variant):
    train, queries = load(folder)
    if variant == "predict":
        return "".join(f"{q},{vote(nearest(train, x))}\n" for q, x in sorted(queries))
    if variant == "neighbours":
        return "".join(f"{q}," + ";".join(tid for _, tid, _ in nearest(train, x)) + "\n" for q, x in sorted(queries))
    hits = sum(vote(nearest(train, x, skip=tid)) == y for tid, x, y in train)
    return f"{hits / len(train):.10g}\n"


if __name__ == "__main__":
    sys.stdout.write(report(sys.argv[1], sys.argv[2]))
'''

LABELS = (("churn", "stay"), ("fraud", "legit"), ("spam", "ham", "promo"), ("bronze", "silver", "gold"))
FEATURES = ("tenure_days", "monthly_spend", "logins", "tickets", "discount_pct", "devices")
SCALES = (400.0, 80.0, 30.0, 4.0, 20.0, 3.0)


@dataclass(frozen=True)
class Knobs:
    features: int
    train: int  # training rows per experiment
    queries: int  # new points per experiment
    k: int
    decoys: int  # other experiments' folders
    traps: int  # 1: scales differ (standardise); 2: missing values; 3: duplicates, label spellings


@register
class KnnLabelVote(Family):
    name = "knn_label_vote"
    domain = "data_science"
    skill_types = ("Machine Learning", "Feature Engineering")
    primitive_skills = ("euclidean distance", "feature standardisation", "descriptive statistics",
                        "duplicate record removal", "k-nearest-neighbour voting", "leave-one-out validation")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("predict", "neighbours", "loo_accuracy")
    levels = {0: Knobs(features=2, train=10, queries=3, k=1, decoys=1, traps=0),
              1: Knobs(features=2, train=30, queries=6, k=3, decoys=2, traps=0),
              2: Knobs(features=3, train=60, queries=10, k=5, decoys=3, traps=1),
              3: Knobs(features=4, train=90, queries=14, k=5, decoys=3, traps=2),
              4: Knobs(features=5, train=140, queries=20, k=7, decoys=3, traps=3)}

    def _experiment(self, t, labels, feats):
        """(train.csv, query.csv) texts for one experiment."""
        k, rng = t.knobs, t.rng
        scales = [SCALES[FEATURES.index(f)] if k.traps >= 1 else 10.0 for f in feats]
        centres = {y: [rng.uniform(0, 3) * s for s in scales] for y in labels}
        dec = 0 if t.level == 0 else 2

        def point(y):
            return [round(max(0.0, rng.gauss(c, 0.9 * s)), dec) for c, s in zip(centres[y], scales)]

        ids = distinct(lambda: f"t{rng.randrange(1000, 10000)}", k.train)
        rows = []
        for tid in ids:
            y = rng.choice(labels)
            x = point(y)
            shown = y
            if k.traps >= 3 and rng.random() < 0.25:
                shown = rng.choice([y.title(), y.upper(), f" {y}", f"{y} "])
            cells = [f"{v:.{dec}f}" for v in x]
            if k.traps >= 2 and rng.random() < 0.07:
                cells[rng.randrange(len(cells))] = rng.choice(["", "NA", "null"])
            rows.append([tid, *cells, shown])
            if k.traps >= 3 and rng.random() < 0.05:
                rows.append(list(rows[-1]))  # exported twice
        rng.shuffle(rows)
        qids = distinct(lambda: f"q{rng.randrange(100, 1000)}", k.queries)
        queries = [[q, *(f"{v:.{dec}f}" for v in point(rng.choice(labels)))] for q in qids]
        return csv_text(["id", *feats, "label"], rows), csv_text(["id", *feats], queries)

    def output_case(self, t: TaskBuilder) -> None:
        k, rng, variant = t.knobs, t.rng, t.variant
        labels = rng.choice(LABELS)
        feats = rng.sample(FEATURES, k.features)
        src = fill(REFERENCE, K=k.k, STANDARDISE=k.traps >= 1)
        ref = run_python(src)
        exps = [self._experiment(t, labels, feats) for _ in range(1 + k.decoys)]
        target = unseen(t, lambda: t.code(2), *(x for e in exps for x in e))
        keys = [key_of(n) for n in [target, *distinct(lambda: t.code(2), k.decoys, [target])]]
        for key, (train, query) in zip(keys, exps):
            t.add_file(f"/app/experiments/{key}/train.csv", train)
            t.add_file(f"/app/experiments/{key}/query.csv", query)
        with tempfile.TemporaryDirectory() as tmp:  # the truth: the reference on the files shipped
            for name, text in zip(("train.csv", "query.csv"), exps[0]):
                with open(f"{tmp}/{name}", "w") as f:
                    f.write(text)
            truth = ref["report"](tmp, variant)
        rules = [f"Distance is Euclidean over the feature columns ({', '.join(f'`{f}`' for f in feats)})."]
        if k.traps >= 1:
            rules.append("The features are on very different scales: first standardise each one with the mean and "
                         "the population standard deviation (divide by n) of the training rows you keep, and apply "
                         "the same transform to the new points.")
        if k.traps >= 2:
            rules.append("Drop training rows with a missing feature (empty, `NA`, `null`) before anything else.")
        if k.traps >= 3:
            rules.append("Some training rows were exported twice (same `id`): keep one. Labels were typed by hand: "
                         "compare and report them trimmed and lower-cased.")
        rules.append(f"k = {k.k}" + ("" if k.k == 1 else
                     ": the k nearest training rows vote; a tied vote goes to the tied label whose member is "
                     "nearest") + ". Equal distances are ordered by training `id` (byte order).")
        ask = {"predict": "the predicted label of every new point, as CSV lines `id,label` without a header, sorted "
                          "by id",
               "neighbours": ("the k nearest training ids of every new point, nearest first, as CSV lines "
                              "`id,t1;t2;...` (the training ids joined by `;`) without a header, sorted by id"),
               "loo_accuracy": ("the leave-one-out accuracy on the training set: the fraction of kept training "
                                "rows whose label is predicted correctly from all the other kept training rows "
                                "(new points are not used)")}[variant]
        t.say("Each experiment's data is in `/app/experiments/<KEY>/`: `train.csv` (labelled rows) and `query.csv` "
              "(new points). KEY is the first 16 hex digits of the SHA-256 of the experiment's run name "
              "(`printf %s <name> | sha256sum | cut -c1-16`); the other folders are other experiments.\n\n"
              + "\n".join(f"- {r}" for r in rules) + f"\n\nFor the run named below, with k-nearest-neighbours, "
              f"I need {ask}.")
        v = t.deliver(target, "the experiment's run name")
        t.add_solution_file("knn.py", src)
        out = "/app/out/accuracy.txt" if variant == "loo_accuracy" else "/app/out/knn.csv"
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\nkey={key_cmd(v)}\n'
                f'python3 /solution/knn.py "/app/experiments/$key" {variant} > {out}')
        if variant == "loo_accuracy":
            t.expect_number(out, float(truth), rel_tol=1e-6, what="the accuracy")
        else:
            t.expect_output(out, truth, "the result")
