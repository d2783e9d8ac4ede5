"""Is the answer independent of the group? Cross-tabulate one survey's responses (one CSV among several,
named by a SHA-256 prefix of the survey's name, the delivered value) into a group x answer
contingency table. Variants: the observed counts (zero cells included), the expected counts under
independence, and Pearson's chi-square statistic. Traps by level: blank answers and group names typed
in any case and padding, then respondents who submitted twice, then partial responses that do not
count, then rare answers that must be pooled into `other` before anything is tallied."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from tmax.families.base import Family, TaskBuilder, register
from tmax.families.data_science._common import keyed_case, on_host
from tmax.families.programs import csv_text, fill, run_python
from tmax.families.unseen import distinct

REFERENCE = r'''
import csv
import sys

GROUP, ANSWER = @GROUP@, @ANSWER@  # the two columns cross-tabulated
POOL = @POOL@  # answers given fewer than POOL times in all are merged into "other" (0: no pooling)
BLANK = ("", "n/a", "na", "-", "none")


def responses(path):
    """(group, answer) of every counted response: complete, answered, a respondent's first submission."""
    seen, out = set(), []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            g, a = r[GROUP].strip().lower(), r[ANSWER].strip().lower()
            if r.get("status", "complete").strip().lower() != "complete" or a in BLANK or r["respondent"] in seen:
                continue
            seen.add(r["respondent"])
            out.append((g, a))
    if POOL:
        total = {}
        for _, a in out:
            total[a] = total.get(a, 0) + 1
        out = [(g, a if total[a] >= POOL else "other") for g, a in out]
    return out


def table(path):
    """groups, answers (sorted), observed counts by (group, answer), and the grand total."""
    data = responses(path)
    groups, answers = sorted({g for g, _ in data}), sorted({a for _, a in data})
    obs = {(g, a): 0 for g in groups for a in answers}
    for cell in data:
        obs[cell] += 1
    return groups, answers, obs, len(data)


def expected(groups, answers, obs, n):
    rows = {g: sum(obs[g, a] for a in answers) for g in groups}
    cols = {a: sum(obs[g, a] for g in groups) for a in answers}
    return {(g, a): rows[g] * cols[a] / n for g in groups for a in answers}


def report(path, variant):
    groups, answers, obs, n = table(path)
    if variant == "counts":
        return "".join(f"{g},{a},{obs[g, a]}\n" for g in groups for a in answers)
    exp = expected(groups, answers, obs, n)
    if variant == "expected":
        return "".join(f"{g},{a},{exp[g, a]:.4f}\n" for g in groups for a in answers)
    return f"{sum((obs[c] - exp[c]) ** 2 / exp[c] for c in obs):.10g}\n"


if __name__ == "__main__":
    sys.stdout.write(report(sys.argv[1], sys.argv[2]))
'''

# (group column, its values, answer column, its values (the last ones rare), what a row is)
SURVEYS = (("region", ("north", "south", "east", "west", "central"), "plan",
            ("basic", "standard", "premium", "family", "student", "legacy"), "a subscriber's plan choice"),
           ("age_band", ("18-24", "25-34", "35-44", "45-54", "55+"), "channel",
            ("email", "phone", "chat", "store", "post", "fax"), "a customer's preferred support channel"),
           ("clinic", ("aldgate", "bow", "camden", "dalston", "ealing"), "reaction",
            ("headache", "mild", "moderate", "rash", "severe", "fainting"), "a patient's reaction to a vaccine dose"),
           ("cohort", ("spring", "summer", "autumn", "winter", "online"), "rating",
            ("poor", "fair", "good", "great", "superb", "mixed"), "a course participant's overall rating"))


@dataclass(frozen=True)
class Knobs:
    rows: int  # responses per survey
    groups: int
    answers: int  # common answers (traps 4 adds two rare ones)
    decoys: int  # other surveys' files
    traps: int  # 1: blanks, group spellings; 2: repeat submissions; 3: partial responses; 4: pool rare answers


@register
class ContingencyChiSquare(Family):
    name = "contingency_chi_square"
    domain = "data_science"
    skill_types = ("Statistical Inference", "Data Quality")
    primitive_skills = ("contingency table", "chi-square goodness of fit", "group-by aggregation",
                        "duplicate record removal", "cohort filtering")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("counts", "expected", "statistic")
    levels = {0: Knobs(rows=14, groups=2, answers=2, decoys=1, traps=0),
              1: Knobs(rows=60, groups=3, answers=3, decoys=2, traps=1),
              2: Knobs(rows=150, groups=3, answers=4, decoys=3, traps=2),
              3: Knobs(rows=260, groups=4, answers=4, decoys=3, traps=3),
              4: Knobs(rows=400, groups=5, answers=4, decoys=3, traps=4)}

    def _survey(self, t, survey):
        """One survey's CSV: answer shares that differ a little by group, and the dirt of the level."""
        k, rng = t.knobs, t.rng
        gcol, gvals, acol, avals, _ = survey
        groups, answers = list(gvals[:k.groups]), list(avals[:k.answers])
        rare = list(avals[len(avals) - 2:]) if k.traps >= 4 else []
        weights = {g: [rng.uniform(0.5, 2.0) for _ in answers] + [0.012] * len(rare) for g in groups}
        header = ["respondent", gcol, acol, *(["status"] if k.traps >= 3 else [])]
        rows = []
        for rid in distinct(lambda: f"r{rng.randrange(100000, 1000000)}", k.rows):
            g = rng.choice(groups)
            a = rng.choices(answers + rare, weights[g])[0]
            shown_g = g
            if k.traps >= 1 and rng.random() < 0.2:
                shown_g = rng.choice([g.upper(), g.title(), f" {g}", f"{g} "])
            row = [rid, shown_g, a]
            if k.traps >= 1 and rng.random() < 0.05:
                row[2] = rng.choice(["", "N/A", "-"])  # skipped the question
            elif k.traps >= 3 and rng.random() < 0.08:
                row.append("partial")  # abandoned the survey: never counted
            elif k.traps >= 2 and rng.random() < 0.05:  # submitted again with another answer: the first counts
                again = [rid, shown_g, rng.choice(answers), *(["complete"] if k.traps >= 3 else [])]
                rows.insert(rng.randrange(len(rows) + 1), again)
                rows.append([*row, *(["complete"] if k.traps >= 3 else [])])
                continue
            if k.traps >= 3 and len(row) < 4:
                row.append("complete")
            rows.append(row)
        return csv_text(header, rows)

    def output_case(self, t: TaskBuilder) -> None:
        k, rng, variant = t.knobs, t.rng, t.variant
        survey = rng.choice(SURVEYS)
        gcol, _, acol, _, what = survey
        pool = 5 if k.traps >= 4 else 0
        src = fill(REFERENCE, GROUP=repr(gcol), ANSWER=repr(acol), POOL=pool)
        ref = run_python(src)
        for _ in range(30):  # redraw a target with an empty group or answer, or an expected count at a rounding tie
            texts = [self._survey(t, survey) for _ in range(1 + k.decoys)]
            (groups, answers, obs, n), truth = on_host({"survey.csv": texts[0]}, lambda p: (ref["table"](p),
                                                                                      ref["report"](p, variant)))
            rows = {g: sum(obs[g, a] for a in answers) for g in groups}
            cols = {a: sum(obs[g, a] for g in groups) for a in answers}
            exact = [Fraction(rows[g] * cols[a] * 10 ** 4, n) for g in groups for a in answers]
            if len(groups) > 1 and len(answers) > 1 and all(e.denominator != 2 for e in exact):
                break
        rules = [f"Each row is one response, {what}: cross-tabulate `{gcol}` (rows of the table) against `{acol}` "
                 "(columns)."]
        rules += [  # one more rule per trap level
            f"Compare `{gcol}` and `{acol}` values trimmed and lower-cased, and report them that way. "
                "A response with a blank answer (empty, `N/A`, `-`) is not counted.",
            "Some respondents submitted twice: only a respondent's first counted row (in file order) "
                "counts.",
            "Only responses whose `status` is `complete` count.",
            f"Answers given fewer than {pool} times in all (over the counted responses) are too rare to "
                "test: pool them into one answer named `other` before building the table.",
        ][:k.traps]
        cells = (f"one CSV line per (`{gcol}`, `{acol}`) pair of the values that occur, zero cells included, sorted "
                 f"by {gcol} then {acol} in byte order, without a header")
        ask = {"counts": f"the observed contingency table as {cells}: `{gcol},{acol},count`",
               "expected": (f"the expected count of every cell if the two were independent (row total * column total "
                            f"/ grand total), as {cells}: `{gcol},{acol},expected` with 4 decimals"),
               "statistic": ("Pearson's chi-square statistic of the table for independence: the sum over every cell "
                             "of (observed - expected)^2 / expected, expected being row total * column total / grand "
                             "total")}[variant]
        out = "/app/out/chi2.txt" if variant == "statistic" else f"/app/out/{variant}.csv"
        keyed_case(t, [{"survey.csv": x} for x in texts], where="surveys", thing="survey", rules=rules, ask=ask,
                   intro="Each survey export is in", src=src, script="crosstab.py", out=out, truth=truth,
                   number="the chi-square statistic" if variant == "statistic" else "")
