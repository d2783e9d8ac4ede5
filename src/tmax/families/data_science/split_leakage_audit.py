"""Does the test set leak into training? One dataset's train / test split (one folder among several, named
by a SHA-256 prefix of the dataset's name, the delivered value) audited for leakage. Variants: the
users present on both sides, the test rows whose feature vector duplicates a training row, and the
share of test rows that leak either way. Traps by level: user ids typed in any case and padding, then
numbers written differently (`3.10` and `3.1` are one value), then anonymous users and rows with a
missing feature that match nothing, then a test file whose columns come in another order."""

from __future__ import annotations

from dataclasses import dataclass

from tmax.families.base import Family, TaskBuilder, register
from tmax.families.data_science._common import keyed_case, on_host
from tmax.families.programs import csv_text, run_python
from tmax.families.unseen import distinct

REFERENCE = r'''
import csv
import sys

NOBODY = ("", "anonymous", "unknown")  # user ids that name no one
BLANK = ("", "na", "null")


def load(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def user(r):
    u = r["user_id"].strip().lower()
    return None if u in NOBODY else u


def features(r, names):
    """The feature vector as numbers (by column name), or None when a feature is missing."""
    cells = [r[c].strip() for c in names]
    return None if any(c.lower() in BLANK for c in cells) else tuple(float(c) for c in cells)


def audit(folder):
    train, test = load(folder + "/train.csv"), load(folder + "/test.csv")
    names = sorted(c for c in train[0] if c not in ("row_id", "user_id", "label"))
    users = {user(r) for r in train} - {None}
    first = {}  # feature vector -> the smallest training row id that has it
    for r in train:
        x = features(r, names)
        if x is not None and (x not in first or r["row_id"] < first[x]):
            first[x] = r["row_id"]
    rows = sorted((r["row_id"], user(r), features(r, names)) for r in test)
    return users, first, rows


def report(folder, variant):
    users, first, rows = audit(folder)
    if variant == "shared_users":
        return "".join(u + "\n" for u in sorted(users & {u for _, u, _ in rows}))
    if variant == "duplicate_rows":
        return "".join(f"{rid},{first[x]}\n" for rid, _, x in rows if x is not None and x in first)
    leaks = sum(1 for _, u, x in rows if u in users or (x is not None and x in first))
    return f"{leaks / len(rows):.10g}\n"


if __name__ == "__main__":
    sys.stdout.write(report(sys.argv[1], sys.argv[2]))
'''

FEATURES = ("age", "tenure", "spend", "visits", "basket", "returns", "rating")


@dataclass(frozen=True)
class Knobs:
    train: int  # training rows
    test: int  # test rows
    features: int
    decoys: int  # other datasets' folders
    traps: int  # 1: id spellings; 2: number formats; 3: anonymous users, missing features; 4: column order


@register
class SplitLeakageAudit(Family):
    name = "split_leakage_audit"
    domain = "data_science"
    skill_types = ("Data Quality", "Machine Learning")
    primitive_skills = ("train-test leakage detection", "duplicate record removal", "joining predictions to labels",
                        "cohort filtering", "missing value counting")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("shared_users", "duplicate_rows", "leak_rate")
    levels = {0: Knobs(train=8, test=5, features=2, decoys=1, traps=0),
              1: Knobs(train=40, test=15, features=3, decoys=2, traps=1),
              2: Knobs(train=100, test=35, features=4, decoys=3, traps=2),
              3: Knobs(train=180, test=60, features=5, decoys=3, traps=3),
              4: Knobs(train=300, test=90, features=6, decoys=3, traps=4)}

    def _split(self, t, feats):
        """(train.csv, test.csv) of one dataset: some test users also in training, some test rows copied from
        training rows (with another user), and near-copies that differ in one feature."""
        k, rng = t.knobs, t.rng
        pool = distinct(lambda: f"u{rng.randrange(1000, 10000)}", k.train // 2 + k.test)
        train_users, fresh = pool[:k.train // 2], pool[k.train // 2:]
        ids = distinct(lambda: rng.randrange(10000, 100000), k.train + k.test)

        def vector():
            return [rng.randrange(0, 5000) for _ in feats]  # hundredths

        def cell(v):
            text = f"{v / 100:.2f}"
            if k.traps >= 2 and rng.random() < 0.3:  # another export tool: fewer trailing zeros
                text = text.rstrip("0").rstrip(".") if "." in text else text
            return text

        def shown(u):
            if k.traps >= 3 and rng.random() < 0.06:
                return rng.choice(["", "anonymous", "UNKNOWN"])
            if k.traps >= 1 and rng.random() < 0.2:
                return rng.choice([u.upper(), f" {u}", f"{u} "])
            return u

        def row(rid, u, x):
            cells = [cell(v) for v in x]
            if k.traps >= 3 and rng.random() < 0.05:
                cells[rng.randrange(len(cells))] = rng.choice(["", "NA"])
            return {"row_id": rid, "user_id": shown(u), **dict(zip(feats, cells)), "label": str(rng.randrange(2))}

        train = [(f"tr{ids[i]}", rng.choice(train_users), vector()) for i in range(k.train)]
        test = []
        for i in range(k.test):
            rid, r = f"te{ids[k.train + i]}", rng.random()
            if r < 0.15:  # the same user on both sides
                test.append((rid, rng.choice(train_users), vector()))
            elif r < 0.3:  # a training row copied into test under another user
                test.append((rid, rng.choice(fresh), list(rng.choice(train)[2])))
            elif r < 0.4:  # a near-copy: one feature differs
                x = list(rng.choice(train)[2])
                j = rng.randrange(len(x))
                x[j] = (x[j] + rng.randrange(1, 50)) % 5000
                test.append((rid, rng.choice(fresh), x))
            else:
                test.append((rid, rng.choice(fresh), vector()))
        train_rows, test_rows = [row(*r) for r in train], [row(*r) for r in test]
        head = ["row_id", "user_id", *feats, "label"]
        test_head = head if k.traps < 4 else ["label", *rng.sample(feats, len(feats)), "user_id", "row_id"]
        rng.shuffle(train_rows)
        rng.shuffle(test_rows)
        return (csv_text(head, [[r[c] for c in head] for r in train_rows]),
                csv_text(test_head, [[r[c] for c in test_head] for r in test_rows]))

    def output_case(self, t: TaskBuilder) -> None:
        k, rng, variant = t.knobs, t.rng, t.variant
        feats = rng.sample(FEATURES, k.features)
        ref = run_python(REFERENCE)
        for _ in range(30):  # redraw a target split with nothing to find: an empty answer must not pass
            splits = [self._split(t, feats) for _ in range(1 + k.decoys)]
            truth = on_host(dict(zip(("train.csv", "test.csv"), splits[0])), lambda d: ref["report"](d, variant))
            if truth.strip("0.\n"):
                break
        rules = [f"Both files have `row_id`, `user_id`, the features ({', '.join(f'`{f}`' for f in feats)}) and "
                 "`label`. A test row's feature vector duplicates a training row's when every feature is equal "
                 "(`label` and the ids do not count)."]
        rules += [  # one more rule per trap level
            "User ids were typed by hand: compare and report them trimmed and lower-cased.",
            "The exports wrote numbers differently: compare features as numbers (`3.10`, `3.1` and "
                "`3.100` are equal).",
            "An empty, `anonymous` or `unknown` user id names nobody and matches no one. A row with a "
                "missing feature (empty or `NA`) duplicates nothing and is duplicated by nothing.",
            "`test.csv` was written by another tool: its columns come in another order.",
        ][:k.traps]
        ask = {"shared_users": "every user id that occurs in both files, one per line, sorted in byte order",
               "duplicate_rows": ("every test row whose feature vector duplicates a training row's, as CSV lines "
                                  "`test_row_id,train_row_id` (the smallest such training row id in byte order), "
                                  "sorted by test row id, without a header"),
               "leak_rate": ("the leak rate: the fraction of all test rows that leak, a test row leaking when its "
                             "user also occurs in training or its feature vector duplicates a training row's")}[variant]
        out = {"shared_users": "/app/out/shared_users.txt", "duplicate_rows": "/app/out/duplicates.csv",
               "leak_rate": "/app/out/leak_rate.txt"}[variant]
        keyed_case(t, [dict(zip(("train.csv", "test.csv"), s)) for s in splits], where="splits", thing="dataset",
                   intro="Each dataset's split (`train.csv` and `test.csv`) is in", rules=rules, ask=ask,
                   src=REFERENCE, script="leakage.py", out=out, truth=truth,
                   number="the leak rate" if variant == "leak_rate" else "")
