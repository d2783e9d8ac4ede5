"""How sure are we of each arm's mean? One trial's measurements (one CSV among several, named by a SHA-256
prefix of the trial's name, the delivered value) summarised per arm. Variants: count, mean and sample
standard deviation per arm, a normal-approximation confidence interval of each arm's mean (mean +- z *
standard error), and the Welch z statistic of the difference between two named arms. Traps by level:
missing values, then technical replicates of one sample that must be averaged first, then failed
quality checks and arm names typed in any case, then values recorded in grams beside kilograms."""

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

Z = @Z@  # the normal quantile of the interval
FIRST, SECOND = @FIRST@, @SECOND@  # the arms compared: FIRST minus SECOND
BLANK = ("", "na", "nan", "null")


def samples(path):
    """arm -> one value per sample (replicates of a sample averaged), in kg."""
    reps = {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            v = r["value"].strip()
            if v.lower() in BLANK or r.get("qc", "pass").strip().lower() != "pass":
                continue
            kg = float(v) / (1000 if r.get("unit", "kg").strip() == "g" else 1)
            reps.setdefault((r["arm"].strip().lower(), r["sample_id"].strip()), []).append(kg)
    arms = {}
    for (arm, _), vs in sorted(reps.items()):
        arms.setdefault(arm, []).append(sum(vs) / len(vs))
    return arms


def stats(path):
    """arm -> (n, mean, sample standard deviation), by arm name."""
    out = {}
    for arm, xs in sorted(samples(path).items()):
        m = sum(xs) / len(xs)
        out[arm] = (len(xs), m, math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1)))
    return out


def report(path, variant):
    s = stats(path)
    if variant == "summary":
        return "".join(f"{a},{n},{m:.4f},{sd:.4f}\n" for a, (n, m, sd) in s.items())
    if variant == "interval":
        return "".join(f"{a},{m - Z * sd / math.sqrt(n):.4f},{m + Z * sd / math.sqrt(n):.4f}\n"
                       for a, (n, m, sd) in s.items())
    (n1, m1, s1), (n2, m2, s2) = s[FIRST], s[SECOND]
    return f"{(m1 - m2) / math.sqrt(s1 ** 2 / n1 + s2 ** 2 / n2):.10g}\n"


if __name__ == "__main__":
    sys.stdout.write(report(sys.argv[1], sys.argv[2]))
'''

# (what is measured, its arms, typical kg and spread)
TRIALS = (("an animal's body weight at day 28", ("control", "low_dose", "mid_dose", "high_dose"), 0.32, 0.04),
          ("a plant's fruit yield", ("untreated", "compost", "nitrogen", "biochar"), 2.4, 0.5),
          ("a calf's birth weight", ("herd_a", "herd_b", "herd_c", "herd_d"), 38.0, 4.0))
LEVELS = ((1.96, "95%"), (1.645, "90%"), (2.576, "99%"))


@dataclass(frozen=True)
class Knobs:
    arms: int
    samples: int  # samples per arm
    decoys: int  # other trials' files
    traps: int  # 1: missing values; 2: replicates; 3: failed QC, arm spellings; 4: grams beside kilograms


@register
class GroupMeanIntervals(Family):
    name = "group_mean_intervals"
    domain = "data_science"
    skill_types = ("Statistical Inference", "Experimentation")
    primitive_skills = ("standard error of the mean", "descriptive statistics", "group-by aggregation",
                        "missing value counting", "cohort filtering")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("summary", "interval", "difference")
    levels = {0: Knobs(arms=2, samples=5, decoys=1, traps=0), 1: Knobs(arms=2, samples=15, decoys=2, traps=1),
              2: Knobs(arms=3, samples=25, decoys=3, traps=2), 3: Knobs(arms=4, samples=35, decoys=3, traps=3),
              4: Knobs(arms=4, samples=50, decoys=3, traps=4)}

    def _trial(self, t, trial):
        """One trial's CSV: arms with shifted means, and the dirt of the level."""
        k, rng = t.knobs, t.rng
        _, arms, centre, spread = trial
        shift = {a: rng.uniform(-1.5, 1.5) * spread for a in arms[:k.arms]}
        dec = 2 if centre > 1 else 3
        rows = []
        ids = distinct(lambda: f"s{rng.randrange(1000, 10000)}", k.arms * k.samples)
        for i, sid in enumerate(ids):
            arm = arms[i % k.arms]
            true = centre + shift[arm] + rng.gauss(0, spread)
            for _ in range(rng.choice([1, 1, 2, 3]) if k.traps >= 2 else 1):  # technical replicates
                kg = true + rng.gauss(0, spread / 10)
                value, unit = f"{kg:.{dec}f}", "kg"
                if k.traps >= 4 and rng.random() < 0.2:
                    value, unit = f"{kg * 1000:.0f}", "g"
                shown = arm if k.traps < 3 or rng.random() > 0.2 else rng.choice([arm.upper(), f" {arm}", f"{arm} "])
                row = [sid, shown, value]
                if k.traps >= 1 and rng.random() < 0.05:
                    row[2] = rng.choice(["", "NA", "nan"])
                if k.traps >= 3:
                    row.append("pass" if rng.random() < 0.92 else "fail")
                if k.traps >= 4:
                    row.append(unit)
                rows.append(row)
        rng.shuffle(rows)
        head = ["sample_id", "arm", "value", *(["qc"] if k.traps >= 3 else []), *(["unit"] if k.traps >= 4 else [])]
        return csv_text(head, rows)

    def output_case(self, t: TaskBuilder) -> None:
        k, rng, variant = t.knobs, t.rng, t.variant
        trial = rng.choice(TRIALS)
        what, arms, _, _ = trial
        z, conf = LEVELS[0] if k.traps < 3 else rng.choice(LEVELS)
        first, second = rng.sample(arms[:k.arms], 2)
        src = fill(REFERENCE, Z=z, FIRST=repr(first), SECOND=repr(second))
        ref = run_python(src)
        for _ in range(30):  # redraw a target with an arm too small or a mean exactly on a rounding tie
            texts = [self._trial(t, trial) for _ in range(1 + k.decoys)]
            stats, truth = on_host({"trial.csv": texts[0]}, lambda p: (ref["stats"](p), ref["report"](p, variant)))
            if len(stats) == k.arms and all(n > 2 and abs((m * 1e4) % 1 - 0.5) > 1e-6 for n, m, _ in stats.values()):
                break
        rules = [f"Each row is one measurement, in kilograms, of {what}: the sample `sample_id` in the arm `arm`. "
                 "The standard deviation is the sample one (divide by n - 1) and the standard error of a mean is "
                 "sd / sqrt(n)."]
        rules += [  # one more rule per trap level
            "Skip rows whose value is empty, `NA` or `nan`.",
            "A sample measured several times has technical replicates: average a sample's usable "
                "values into one value first; n counts samples, not rows.",
            "Rows whose `qc` is not `pass` are not usable. Arm names were typed by hand: compare and "
                "report them trimmed and lower-cased.",
            "The `unit` column says whether a value is in `kg` or `g` (1000 g = 1 kg); work in kg.",
        ][:k.traps]
        ask = {"summary": ("per arm, CSV lines `arm,n,mean,sd` (mean and standard deviation with 4 decimals), sorted "
                           "by arm in byte order, without a header"),
               "interval": (f"the {conf} confidence interval of every arm's mean by the normal approximation, mean - "
                            f"{z} * standard error to mean + {z} * standard error, as CSV lines `arm,lower,upper` "
                            "(4 decimals), sorted by arm in byte order, without a header"),
               "difference": (f"the Welch z statistic of the difference of the means of `{first}` and `{second}`: "
                              f"(mean of {first} - mean of {second}) / sqrt(sd_1^2 / n_1 + sd_2^2 / n_2)")}[variant]
        out = "/app/out/z.txt" if variant == "difference" else f"/app/out/{variant}.csv"
        keyed_case(t, [{"trial.csv": x} for x in texts], where="trials", thing="trial", rules=rules, ask=ask,
                   intro="Each trial's measurements are in", src=src, script="arms.py", out=out, truth=truth,
                   number="the z statistic" if variant == "difference" else "")
