"""Score an interlaboratory proficiency-testing round. Several rounds sit in one store, each filed under a
hash of its round number (delivered separately). Variants: `zscore` rates every lab by z = (x - X) /
sigma_pt, `en` by the En number against the reference value's expanded uncertainty, `weighted` combines
the labs into an inverse-variance weighted mean with its uncertainty and Birge ratio. Higher levels add
comment lines, unsorted rows, withdrawn labs, resubmissions (the latest counts), results below the
limit of detection, mixed units, uncertainties stated with different coverage factors and lab codes
written inconsistently."""

from __future__ import annotations

import math
from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import csv_text, run_python
from tmax.families.unseen import distinct, key_cmd, key_of, unseen

REFERENCE = r'''
import math
import sys

SCALE = {"mg/kg": 1.0, "ug/kg": 1e-3, "g/kg": 1e3}  # to the round's unit, mg/kg


def ini(text):
    out = {}
    for line in text.splitlines():
        line = line.split("#")[0].strip()
        if "=" in line:
            key, value = line.split("=", 1)
            out[key.strip()] = value.strip()
    return out


def results(text):
    """lab -> (value in mg/kg, standard uncertainty in mg/kg or None): the latest submission of each lab,
    withdrawn labs and results below the limit of detection left out."""
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    head = [h.strip() for h in lines[0].split(",")]
    latest = {}
    for ln in lines[1:]:
        d = dict(zip(head, (c.strip() for c in ln.split(","))))
        lab = d["lab"].upper()
        when = int(d.get("submitted", "0"))
        if lab not in latest or when > latest[lab][0]:
            latest[lab] = (when, d)
    out = {}
    for lab, (_, d) in latest.items():
        if d.get("status", "ok") != "ok" or d["value"].startswith("<"):
            continue
        scale = SCALE[d.get("unit", "mg/kg")]
        u = float(d["U"]) / float(d.get("k", "2")) * scale if "U" in d else None
        out[lab] = (float(d["value"]) * scale, u)
    return dict(sorted(out.items()))


def zscore(res, meta):
    x, s = float(meta["assigned"]), float(meta["sigma_pt"])
    out = []
    for lab, (v, _) in res.items():
        z = (v - x) / s
        out.append("%s %.2f %s\n" % (lab, z, "S" if abs(z) <= 2 else "Q" if abs(z) < 3 else "U"))
    return "".join(out)


def en(res, meta):
    x, uref = float(meta["assigned"]), float(meta["U_ref"])
    out = []
    for lab, (v, u) in res.items():
        e = (v - x) / math.sqrt((2 * u) ** 2 + uref ** 2)
        out.append("%s %.2f %s\n" % (lab, e, "ok" if abs(e) <= 1 else "fail"))
    return "".join(out)


def weighted(res, meta):
    w = {lab: 1 / u ** 2 for lab, (_, u) in res.items()}
    total = sum(w.values())
    mean = sum(w[lab] * v for lab, (v, _) in res.items()) / total
    chi2 = sum(w[lab] * (v - mean) ** 2 for lab, (v, _) in res.items())
    return "mean=%.4f\nu=%.4f\nbirge=%.3f\nlabs=%d\n" % (mean, 1 / math.sqrt(total),
                                                       math.sqrt(chi2 / (len(res) - 1)), len(res))


if __name__ == "__main__":  # zscore|en|weighted ROUND_DIR
    mode, d = sys.argv[1], sys.argv[2]
    res, meta = results(open(d + "/results.csv").read()), ini(open(d + "/round.ini").read())
    sys.stdout.write({"zscore": zscore, "en": en, "weighted": weighted}[mode](res, meta))
'''


# Each level's traps, said when its knob is on.
TRAPS = (("comments", "Lines starting with `#` are comments in both files; rows are in no particular order."),
         ("withdrawn", "A lab may have resubmitted: only its latest submission counts, and a lab whose latest "
                       "submission has a status other than `ok` is out of the round."),
         ("lod", "A value written `<...` is below the limit of detection: that lab is not scored."),
         ("messy_codes", "Lab codes are not written consistently: trim spaces and upper-case them."))

SCORING = {
    "zscore": "Score every lab of the round by z = (value - X) / sigma_pt and rate it `S` if |z| <= 2, `Q` if 2 < |z| "
              "< 3 and `U` if |z| >= 3. Write one line per lab, `<lab> <z with 2 decimals> <rating>`, labs in "
              "ascending order of their codes.",
    "en": "Score every lab by its En number, En = (value - X) / sqrt(U_lab^2 + U_ref^2), with U_lab the lab's expanded "
          "uncertainty at coverage factor 2 (twice its standard uncertainty), and rate it `ok` if |En| <= 1, else "
          "`fail`. Write one line per lab, `<lab> <En with 2 decimals> <rating>`, labs in ascending order of their "
          "codes.",
    "weighted": "Combine the scored labs' results into the inverse-variance weighted mean (weights 1 / u^2, u each "
                "lab's standard uncertainty). Write four lines: `mean=` (4 decimals), `u=` its standard uncertainty 1 "
                "/ sqrt(sum of weights) (4 decimals), `birge=` the Birge ratio sqrt(sum of w (value - mean)^2 / (n - "
                "1)) (3 decimals) and `labs=` n, the number of labs combined."}


@dataclass(frozen=True)
class Knobs:
    labs: int  # participating labs
    comments: bool  # comment lines in both files, rows not in lab order
    withdrawn: bool  # status column, resubmissions with a submission time
    lod: bool  # results reported as below the limit of detection
    units: bool  # unit column (ug/kg, mg/kg, g/kg) and a coverage factor column
    messy_codes: bool  # lab codes with stray spaces and lower case
    decoys: int  # other rounds in the store


def _clear(x: float, places: int, edges: tuple[float, ...] = ()) -> bool:
    """x prints the same under float noise at `places` decimals, and |x| is not at a rating edge."""
    f = abs(x) * 10 ** places
    return abs(f - math.floor(f) - 0.5) > 1e-3 and all(abs(abs(x) - e) > 0.01 for e in edges)


@register
class ProficiencyTestScoring(Family):
    name = "proficiency_test_scoring"
    domain = "scientific_computing"
    skill_types = ("Experimental Data", "Stochastic Methods")
    primitive_skills = ("standard error estimation", "measurement validation", "unit handling",
                        "duplicate sample removal", "tolerance-based comparison", "floating-point rounding control")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("zscore", "en", "weighted")
    # Level 0: five labs, one plain CSV and the round's parameters: one awk program (after a sha256sum).
    levels = {0: Knobs(labs=5, comments=False, withdrawn=False, lod=False, units=False, messy_codes=False, decoys=2),
              1: Knobs(labs=9, comments=True, withdrawn=False, lod=False, units=False, messy_codes=False, decoys=3),
              2: Knobs(labs=12, comments=True, withdrawn=True, lod=False, units=False, messy_codes=False, decoys=3),
              3: Knobs(labs=16, comments=True, withdrawn=True, lod=True, units=True, messy_codes=False, decoys=3),
              4: Knobs(labs=22, comments=True, withdrawn=True, lod=True, units=True, messy_codes=True, decoys=4)}

    def _round(self, t: TaskBuilder, ns: dict) -> tuple[str, str]:
        """(results.csv, round.ini) of one round whose answer prints safely."""
        k, rng, variant = t.knobs, t.rng, t.variant
        for _ in range(100):
            assigned = round(rng.uniform(2, 80), 3)
            sigma = round(assigned * rng.uniform(0.04, 0.12), 3)
            uref = round(sigma * rng.uniform(0.2, 0.6), 3)
            meta = ("# PT round parameters\n" if k.comments else "") + \
                f"unit = mg/kg\nassigned = {assigned}\nsigma_pt = {sigma}\nU_ref = {uref}\n"
            head = ["lab", "value", "U"] + (["k", "unit"] if k.units else []) + \
                (["status", "submitted"] if k.withdrawn else [])
            rows = []
            for i in rng.sample(range(1, 90), k.labs):
                lab = f"LAB{i:02d}"
                for sub in range(rng.choice((1, 1, 1, 2)) if k.withdrawn else 1):
                    v = assigned + sigma * rng.gauss(0, 1.6)
                    u = sigma * rng.uniform(0.3, 1.2)
                    cov, unit = (rng.choice(("2", "2", "1", "1.96")), rng.choice(("mg/kg", "mg/kg", "ug/kg", "g/kg"))) \
                        if k.units else ("2", "mg/kg")
                    scale = {"mg/kg": 1.0, "ug/kg": 1e3, "g/kg": 1e-3}[unit]
                    value = "%.6g" % (round(v, 3) * scale)
                    if k.lod and rng.random() < 0.08:
                        value = "<%.3g" % (assigned * 0.1 * scale)
                    code = lab
                    if k.messy_codes and rng.random() < 0.4:
                        code = rng.choice((f" {lab}", lab.lower(), f"{lab} "))
                    row = [code, value, "%.4g" % (u * float(cov) * scale)] + ([cov, unit] if k.units else [])
                    if k.withdrawn:
                        row += ["withdrawn" if rng.random() < 0.1 else "ok", str(1_700_000_000 + rng.randrange(10**6))]
                    rows.append(row)
            if not k.comments:
                rows.sort(key=lambda r: r[0])
            else:
                rng.shuffle(rows)
            text = csv_text(head, rows)
            if k.comments:
                lines = text.splitlines(keepends=True)
                lines.insert(rng.randrange(1, len(lines)), "# late corrections follow\n")
                text = "".join(lines)
            res = ns["results"](text)
            m = ns["ini"](meta)
            if len(res) < 3 or k.withdrawn and len({r[-1] for r in rows}) != len(rows):
                continue  # too few labs scored, or two submissions at one time
            x = float(m["assigned"])
            if variant == "zscore":
                ok = all(_clear((v - x) / float(m["sigma_pt"]), 2, (2, 3)) for v, _ in res.values())
            elif variant == "en":
                ok = all(_clear((v - x) / math.sqrt((2 * u) ** 2 + float(m["U_ref"]) ** 2), 2, (1,))
                         for v, u in res.values())
            else:
                nums = [float(s.split("=")[1]) for s in ns["weighted"](res, m).splitlines()[:3]]
                ok = all(_clear(n, p) for n, p in zip(nums, (4, 4, 3)))
            if ok:
                return text, meta
        raise FamilyError("proficiency_test_scoring: no round with safely printed scores in 100 draws")

    def output_case(self, t: TaskBuilder) -> None:
        k, rng, variant = t.knobs, t.rng, t.variant
        ns = run_python(REFERENCE)
        rounds = [self._round(t, ns) for _ in range(1 + k.decoys)]
        # Rounds are filed by a hash of their number: the delivered number, drawn clear of every file, selects
        # one, and the other rounds (built the same way) are indistinguishable without it.
        draw = lambda: str(rng.randrange(100_000, 1_000_000))  # noqa: E731
        target = unseen(t, draw, *(a + b for a, b in rounds))
        names = [target, *distinct(draw, k.decoys, [target])]
        for name, (text, meta) in sorted(zip(names, rounds), key=lambda p: key_of(p[0])):
            t.add_file(f"/app/pt/{key_of(name)}/results.csv", text)
            t.add_file(f"/app/pt/{key_of(name)}/round.ini", meta)
        res, meta = ns["results"](rounds[0][0]), ns["ini"](rounds[0][1])
        truth = ns[variant](res, meta)
        cols = "`lab`, `value` (mg/kg), `U` (the lab's expanded uncertainty, coverage factor 2, mg/kg)"
        if k.units:
            cols = ("`lab`, `value`, `U` (the lab's expanded uncertainty), `k` (its coverage factor: the standard "
                    "uncertainty is U / k) and `unit` (`ug/kg`, `mg/kg` or `g/kg`; convert to mg/kg)")
        traps = " ".join(text for knob, text in TRAPS if getattr(k, knob))
        cols += ", `status` and `submitted` (Unix time)" if k.withdrawn else ""
        t.say("Proficiency-testing rounds are filed under `/app/pt/<KEY>/`, where KEY is the first 16 hex digits of "
              "the SHA-256 of the round number (`printf %s <number> | sha256sum`); `round.ini` gives the round's "
              "`assigned` value X, the standard deviation for proficiency assessment `sigma_pt` and the reference "
              "value's expanded uncertainty `U_ref` (coverage factor 2), all in mg/kg. Each round's `results.csv` has "
              f"the columns {cols}. {traps}")
        who = t.deliver(target, "the round number")
        t.say(SCORING[variant])
        # The oracle and the grader share one output path; the round folder is named by the delivered number.
        out = {"zscore": "/app/out/zscore.txt", "en": "/app/out/en.txt", "weighted": "/app/out/weighted.txt"}[variant]
        t.add_solution_file("pt.py", REFERENCE)
        t.solve("\n".join([f'test -n "{who}"', "mkdir -p /app/out",
                           f'python3 /solution/pt.py {variant} "/app/pt/{key_cmd(who)}" > {out}']))
        t.expect_output(out, truth, f"the {variant} report")  # after the oracle's commands: serving follows them
