"""Are a model's probabilities calibrated? One model's scored evaluation set among several in a folder,
the file named by a SHA-256 prefix of the model's name (the delivered value). Variants: the
reliability table over equal-width score bins, the expected calibration error (ECE) over those bins,
and the Brier score. Traps by level: rows with a missing score or an unusable label, then ids scored
twice (the last row counts) and scores written as percentages, then labels spelled several ways and
rows of other splits that must be left out."""

from __future__ import annotations

from dataclasses import dataclass

from tmax.families.base import Family, TaskBuilder, register
from tmax.families.data_science._common import keyed_case, on_host
from tmax.families.programs import csv_text, fill, run_python
from tmax.families.unseen import distinct

REFERENCE = r'''
import csv
import sys

BINS = @BINS@  # equal-width bins over [0, 1]; a score of exactly 1 falls in the last one
POSITIVE = ("1", "yes", "true", "positive")
NEGATIVE = ("0", "no", "false", "negative")


def scored(path):
    """(score, label) of every usable evaluation row; an id scored again keeps its last row."""
    last = {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if r.get("split", "test").strip().lower() != "test":
                continue
            s, y = r["score"].strip(), r["label"].strip().lower()
            if not s or y not in POSITIVE + NEGATIVE:
                continue
            p = float(s[:-1]) / 100 if s.endswith("%") else float(s)
            last[r["id"]] = (p, 1 if y in POSITIVE else 0)
    return [last[i] for i in sorted(last)]


def binned(data):
    """bin index -> [(score, label)], only bins that hold a row."""
    bins = {}
    for p, y in data:
        bins.setdefault(min(int(p * BINS), BINS - 1), []).append((p, y))
    return {i: bins[i] for i in sorted(bins)}


def table(data):
    """(bin, rows, mean score, positive rate) per non-empty bin."""
    return [(i, len(b), sum(p for p, _ in b) / len(b), sum(y for _, y in b) / len(b)) for i, b in binned(data).items()]


def report(path, variant):
    data = scored(path)
    if variant == "brier":
        return f"{sum((p - y) ** 2 for p, y in data) / len(data):.10g}\n"
    if variant == "ece":
        return f"{sum(n * abs(m - r) for _, n, m, r in table(data)) / len(data):.10g}\n"
    return "".join(f"{i},{n},{m:.4f},{r:.4f}\n" for i, n, m, r in table(data))


if __name__ == "__main__":
    sys.stdout.write(report(sys.argv[1], sys.argv[2]))
'''


SPELLINGS = (("1", "0"), ("yes", "no"), ("true", "false"), ("Positive", "Negative"), ("TRUE", "FALSE"))


@dataclass(frozen=True)
class Knobs:
    rows: int  # evaluation rows per model
    bins: int
    decoys: int  # other models' files
    traps: int  # 1: missing scores, unusable labels; 2: re-scored ids, percentages; 3: spellings, splits


@register
class ScoreCalibrationBins(Family):
    name = "score_calibration_bins"
    domain = "data_science"
    skill_types = ("Machine Learning", "Data Quality")
    primitive_skills = ("probability calibration binning", "descriptive statistics", "joining predictions to labels",
                        "group-by aggregation", "duplicate record removal")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("table", "ece", "brier")
    levels = {0: Knobs(rows=12, bins=4, decoys=1, traps=0), 1: Knobs(rows=40, bins=5, decoys=2, traps=0),
              2: Knobs(rows=120, bins=10, decoys=3, traps=1), 3: Knobs(rows=250, bins=10, decoys=3, traps=2),
              4: Knobs(rows=400, bins=20, decoys=3, traps=3)}

    def _scores(self, t):
        """One model's evaluation CSV: over-confident scores around a hidden true probability. Scores sit
        off the bin edges, so which bin a score falls in never hangs on floating-point rounding."""
        k, rng = t.knobs, t.rng
        sharp = rng.uniform(1.3, 2.2)
        rows, again = [], []
        for rid in distinct(lambda: f"e{rng.randrange(10000, 100000)}", k.rows):  # drawn in random order
            q = rng.random()
            y = 1 if rng.random() < q else 0
            z = min(0.999, max(0.001, 0.5 + (q - 0.5) * sharp + rng.gauss(0, 0.08)))
            milli = round(z * 1000)
            if milli * k.bins % 1000 == 0:
                milli += 1
            score = f"{milli / 10:.1f}%" if k.traps >= 2 and rng.random() < 0.15 else f"{milli / 1000:.3f}"
            pos, neg = rng.choice(SPELLINGS) if k.traps >= 3 else SPELLINGS[0]
            row = [rid, score, pos if y else neg]
            if k.traps >= 3:
                row.append("test" if rng.random() < 0.8 else rng.choice(["train", "valid"]))
            if k.traps >= 1 and rng.random() < 0.06:
                col = rng.choice([1, 2])
                row[col] = "" if col == 1 else rng.choice(["", "?", "unknown"])
            elif k.traps >= 2 and rng.random() < 0.06:  # re-scored after a patch: the newer score replaces it
                moved = min(999, max(1, milli + rng.choice([-40, -25, 30, 45])))
                moved += moved * k.bins % 1000 == 0
                again.append((len(rows), [rid, f"{moved / 1000:.3f}", *row[2:]]))
            rows.append(row)
        for first, row in reversed(again):  # each re-score lands somewhere after its first row
            rows.insert(rng.randrange(first + 1, len(rows) + 1), row)
        return csv_text(["id", "score", "label", *(["split"] if k.traps >= 3 else [])], rows)

    def output_case(self, t: TaskBuilder) -> None:
        k, variant = t.knobs, t.variant
        src = fill(REFERENCE, BINS=k.bins)
        ref = run_python(src)
        for _ in range(30):  # redraw a target whose table would print a mean exactly halfway between digits
            texts = [self._scores(t) for _ in range(1 + k.decoys)]
            rows, truth = on_host({"scores.csv": texts[0]}, lambda p: (ref["table"](ref["scored"](p)),
                                                                        ref["report"](p, variant)))
            if all(abs((v * 1e4) % 1 - 0.5) > 1e-6 for _, _, m, r in rows for v in (m, r)):
                break
        rules = ["Each row is one evaluation example: `score` is the model's predicted probability of the positive "
                 "class and `label` the truth (`1` positive, `0` negative)."]
        rules += [  # one more rule per trap level
            "Skip rows whose score is empty or whose label is not a recognised value.",
            "Some ids were scored again after a model patch: only the last row of an id (in file "
                "order) counts. Some scores were exported as percentages (`73.5%` is 0.735).",
            "Labels come from several tools: `1`, `yes`, `true` and `positive` mean positive and `0`, "
                "`no`, `false` and `negative` negative, in any letter case. Only rows whose `split` is "
                "`test` are part of the evaluation.",
        ][:k.traps]
        edges = (f"{k.bins} equal-width bins over [0, 1]: bin i (from 0) holds the scores s with i/{k.bins} <= s < "
                 f"(i+1)/{k.bins}, and a score of exactly 1 goes in the last bin")
        ask = {"table": (f"the reliability table over {edges}. One CSV line per bin that holds at least one row, "
                         "`bin,rows,mean_score,positive_rate` (bin index, row count, mean score and fraction of "
                         "positive labels in the bin, both with 4 decimals), without a header, by bin index"),
               "ece": (f"the expected calibration error over {edges}: the sum over non-empty bins of (rows in the "
                       "bin / all rows) * |mean score in the bin - fraction of positives in the bin|"),
               "brier": "the Brier score: the mean over the rows of (score - label)^2, with label 1 or 0"}[variant]
        out = "/app/out/reliability.csv" if variant == "table" else f"/app/out/{variant}.txt"
        keyed_case(t, [{"scores.csv": x} for x in texts], where="calibration", thing="model", rules=rules, ask=ask,
                   intro="Each model's scored evaluation set is in", src=src, script="calibration.py", out=out,
                   truth=truth, number={"table": "", "ece": "the ECE", "brier": "the Brier score"}[variant])
