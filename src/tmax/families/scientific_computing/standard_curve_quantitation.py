"""A colorimetric protein assay read on a plate reader: standards made from a stock of known concentration
(delivered) give a linear standard curve fitted by least squares. Variants: `curve` reports the fit (slope,
intercept, R squared), `unknowns` back-calculates the samples' concentrations from their replicate means
and dilution factors, `lod` derives the limits of detection and quantitation from the residual standard
deviation. Higher levels add replicates, blank wells to subtract, dilution factors, wells excluded by the
technician, out-of-range flags and a reference wavelength to subtract."""

from __future__ import annotations

from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.unseen import unseen

REFERENCE = r'''
import math
import os
import sys

FLAGS = @FLAGS@  # unknowns: mark results outside the standards' range


def table(text):
    rows = [line.split(",") for line in text.splitlines() if line.strip()]
    return [dict(zip(rows[0], r)) for r in rows[1:]]


def readings(plate, excluded=""):
    """sample -> absorbances (blank-corrected when the plate has BLANK wells; A562 - A690 when both are read)."""
    skip = set(excluded.split())
    got = {}
    for r in table(plate):
        if r["well"] in skip:
            continue
        a = float(r["a562"]) - (float(r["a690"]) if "a690" in r else 0.0)
        got.setdefault(r["sample"], []).append(a)
    if "BLANK" in got:
        b = sum(got["BLANK"]) / len(got["BLANK"])
        got = {s: [a - b for a in v] for s, v in got.items() if s != "BLANK"}
    return got


def fit(stock, plate, standards, excluded=""):
    """Least squares A = slope * c + intercept over every standard well; also R^2 and s_y/x."""
    got = readings(plate, excluded)
    pts = [(stock * float(r["fraction"]), a) for r in table(standards) for a in got.get(r["sample"], [])]
    n = len(pts)
    mx, my = sum(p[0] for p in pts) / n, sum(p[1] for p in pts) / n
    sxx = sum((x - mx) ** 2 for x, _ in pts)
    sxy = sum((x - mx) * (y - my) for x, y in pts)
    slope = sxy / sxx
    icpt = my - slope * mx
    ssr = sum((y - slope * x - icpt) ** 2 for x, y in pts)
    sst = sum((y - my) ** 2 for _, y in pts)
    conc = [x for x, _ in pts]
    return {"slope": slope, "intercept": icpt, "r2": 1 - ssr / sst, "syx": math.sqrt(ssr / (n - 2)),
            "lo": min(conc), "hi": max(conc), "got": got}


def curve(stock, plate, standards, excluded=""):
    f = fit(stock, plate, standards, excluded)
    return "slope=%.4e\nintercept=%.4f\nr2=%.5f\n" % (f["slope"], f["intercept"], f["r2"])


def unknowns(stock, plate, standards, samples, excluded=""):
    f = fit(stock, plate, standards, excluded)
    out = []
    for r in table(samples):
        a = f["got"][r["sample"]]
        c = (sum(a) / len(a) - f["intercept"]) / f["slope"]
        flag = ",above" if FLAGS and c > f["hi"] else ",below" if FLAGS and c < f["lo"] else ""
        out.append("%s,%.2f%s\n" % (r["sample"], c * float(r["dilution"]), flag))
    return "".join(out)


def lod(stock, plate, standards, excluded=""):
    f = fit(stock, plate, standards, excluded)
    return "lod=%.3f\nloq=%.3f\n" % (3.3 * f["syx"] / f["slope"], 10 * f["syx"] / f["slope"])


def read(name):
    path = "/app/assay/" + name
    return open(path).read() if os.path.exists(path) else ""


if __name__ == "__main__":  # STOCK_NG_PER_ML curve|unknowns|lod|slope (files under /app/assay)
    stock, mode = float(sys.argv[1]) / 1000, sys.argv[2]  # ng/mL -> ug/mL
    args = [stock, read("plate.csv"), read("standards.csv")] + ([read("samples.csv")] if mode == "unknowns" else [])
    if mode == "slope":
        print(repr(fit(*args, read("excluded.txt"))["slope"]))
    else:
        sys.stdout.write({"curve": curve, "unknowns": unknowns, "lod": lod}[mode](*args, read("excluded.txt")))
'''

FRACTIONS = (1.0, 0.75, 0.5, 0.375, 0.25, 0.125, 0.0625, 0.0)


def _safe(text_of, x: float) -> bool:
    """The rounded text does not change when x moves by a part in 10^8 (no float noise can flip it)."""
    return text_of(x * (1 + 1e-8)) == text_of(x * (1 - 1e-8))


@dataclass(frozen=True)
class Knobs:
    standards: int  # standard levels (from the top of FRACTIONS, the zero standard last)
    reps: int  # replicate wells per standard and unknown
    unknowns: int  # unknown samples
    blanks: bool  # BLANK wells to subtract
    dilution: bool  # unknowns diluted before the assay (samples.csv)
    excluded: bool  # wells the technician excluded; out-of-range flags
    a690: bool  # a reference wavelength to subtract


@register
class StandardCurveQuantitation(Family):
    name = "standard_curve_quantitation"
    domain = "scientific_computing"
    skill_types = ("Experimental Data", "Numerical Methods")
    primitive_skills = ("least squares fitting", "calibration curves",
                        "detection limit estimation", "measurement validation", "floating-point rounding control")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("curve", "unknowns", "lod")
    levels = {0: Knobs(standards=5, reps=1, unknowns=1, blanks=False, dilution=False, excluded=False, a690=False),
              1: Knobs(standards=6, reps=2, unknowns=3, blanks=False, dilution=False, excluded=False, a690=False),
              2: Knobs(standards=7, reps=2, unknowns=5, blanks=True, dilution=True, excluded=False, a690=False),
              3: Knobs(standards=8, reps=3, unknowns=6, blanks=True, dilution=True, excluded=True, a690=False),
              4: Knobs(standards=8, reps=3, unknowns=8, blanks=True, dilution=True, excluded=True, a690=True)}

    @staticmethod
    def _plate(t):
        """(plate.csv, standards.csv, samples.csv, excluded.txt) texts, independent of the stock."""
        k, rng = t.knobs, t.rng
        fr = list(FRACTIONS[:k.standards - 1]) + [0.0]
        m, b, noise = rng.uniform(1.2, 2.4), rng.uniform(0.04, 0.12), rng.uniform(0.004, 0.015)
        blank = rng.uniform(0.03, 0.06) if k.blanks else 0.0
        wells = [f"{r}{c}" for r in "ABCDEFGH" for c in range(1, 13)]
        rows, names = [], []
        for i, f in enumerate(fr):
            for _ in range(k.reps):
                rows.append((f"S{i + 1}", blank + b + m * f + rng.gauss(0, noise), False))
        for j in range(k.unknowns):
            name = f"U{j + 1:02d}"
            names.append(name)
            # never near zero: a result there would round alike under a wrong stock
            f = rng.choice([-1, 1, 1, 1]) * rng.uniform(0.03, 0.15) if k.excluded and j < 2 else \
                rng.uniform(0.05, 1.15 if k.excluded else 0.9)
            for _ in range(k.reps):
                rows.append((name, blank + b + m * f + rng.gauss(0, noise), False))
        if k.blanks:
            rows += [("BLANK", blank + rng.gauss(0, noise / 2), False) for _ in range(3)]
        if k.excluded:  # bubbles: wild extra readings the technician marked
            for _ in range(2):
                i = rng.randrange(len(rows))
                rows.insert(i, (rows[i][0], rows[i][1] + rng.uniform(0.3, 0.8), True))
        plate = ["well,sample,a562" + (",a690" if k.a690 else "")]
        ex = []
        for i, (s, a, bad) in enumerate(rows):
            ref = rng.uniform(0.035, 0.06) if k.a690 else 0.0
            plate.append(f"{wells[i]},{s},{a + ref:.4f}" + (f",{ref:.4f}" if k.a690 else ""))
            if bad:
                ex.append(wells[i])
        standards = "sample,fraction\n" + "".join(f"S{i + 1},{f:g}\n" for i, f in enumerate(fr))
        samples = "sample,dilution\n" + "".join(f"{n},{rng.choice([2, 5, 10, 20]) if k.dilution else 1}\n"
                                                for n in names)
        return "\n".join(plate) + "\n", standards, samples, "".join(w + "\n" for w in ex)

    def output_case(self, t: TaskBuilder) -> None:
        k, rng, variant = t.knobs, t.rng, t.variant
        ns = run_python(fill(REFERENCE, FLAGS=k.excluded))
        for _ in range(50):
            plate, standards, samples, excluded = self._plate(t)
            t.add_file("/app/assay/plate.csv", plate)
            t.add_file("/app/assay/standards.csv", standards)
            if variant == "unknowns":
                t.add_file("/app/assay/samples.csv", samples)
            if excluded:
                t.add_file("/app/assay/excluded.txt", excluded)
            # The stock (ng/mL) scales every concentration: no number the agent can read lies within 2% of
            # it, so a guess moves every result by far more than its rounding.
            stock_ng = int(unseen(t, lambda: str(rng.randrange(1_200_000, 2_800_000)), near=60_000))
            stock = stock_ng / 1000
            f = ns["fit"](stock, plate, standards, excluded)
            checks = {"curve": [("%.4e", f["slope"]), ("%.4f", f["intercept"]), ("%.5f", f["r2"])],
                      "lod": [("%.3f", 3.3 * f["syx"] / f["slope"]), ("%.3f", 10 * f["syx"] / f["slope"])]
                      }.get(variant, [])
            edge = False
            for name, dil in (r.split(",") for r in samples.splitlines()[1:]):
                a = f["got"][name]
                c = (sum(a) / len(a) - f["intercept"]) / f["slope"]
                checks.append(("%.2f", c * float(dil)))
                edge = edge or min(abs(c - f["lo"]), abs(c - f["hi"])) < 1e-6 * stock
            if not edge and all(_safe(lambda x, fmt=fmt: fmt % x, x) for fmt, x in checks):
                break
        else:
            raise FamilyError("standard_curve_quantitation: no plate with safely rounded results in 50 draws")
        t.say("`/app/assay/plate.csv` is the plate reader export of this morning's colorimetric protein assay "
              "(columns `well,sample,a562" + (",a690`: absorbance at 562 nm and at the 690 nm reference "
                                               "wavelength" if k.a690 else "`: absorbance at 562 nm") + "). Standards "
              "`S1`, `S2`, ... were made by diluting one stock solution: `/app/assay/standards.csv` gives each "
              "standard's concentration as a fraction of the stock. The stock concentration, in ng/mL, is given below.")
        v = t.deliver(str(stock_ng), "the stock concentration in ng/mL")
        rules = []
        if k.a690:
            rules.append("A well's absorbance is its a562 minus its a690.")
        if k.excluded:
            rules.append("Wells listed in `/app/assay/excluded.txt` had bubbles: ignore them completely.")
        if k.blanks:
            rules.append("Subtract the mean absorbance of the `BLANK` wells from every other well first.")
        rules.append("Fit absorbance = slope * concentration + intercept by ordinary least squares over "
                     + ("every standard well (replicates are separate points), " if k.reps > 1 else "the standards, ")
                     + "with concentrations in ug/mL.")
        t.say(" ".join(rules))
        if variant == "curve" and t.partial_credit:
            t.say("Write only the slope (absorbance per ug/mL), unrounded, as a plain number.")
        elif variant == "curve":
            t.say("Report the fit as three lines `slope=<%.4e>`, `intercept=<%.4f>`, `r2=<%.5f>` (printf formats; "
                  "r2 is the coefficient of determination of that fit).")
        elif variant == "lod":
            t.say("With s the residual standard deviation of the fit, sqrt(sum of squared residuals / (n - 2)) over "
                  "its n points, the limit of detection is 3.3 * s / slope and the limit of quantitation 10 * s / "
                  "slope. Report two lines `lod=<%.3f>` and `loq=<%.3f>` (ug/mL, printf formats).")
        else:
            flag = (" Add `,above` to a line whose undiluted concentration lies above the highest standard's, "
                    "`,below` below the lowest standard's." if k.excluded else "")
            t.say("For each unknown sample listed in `/app/assay/samples.csv` (columns `sample,dilution`), its "
                  "concentration is (mean absorbance of its wells - intercept) / slope times the sample's dilution "
                  f"factor. Write `<sample>,<concentration in ug/mL, %.2f>` lines in the file's order.{flag}")
        t.add_solution_file("assay.py", fill(REFERENCE, FLAGS=k.excluded))
        out = "/app/out/assay.txt"
        if t.partial_credit and variant == "curve":  # one number, graded by its relative error
            t.solve(f'test -n "{v}"\nmkdir -p /app/out\npython3 /solution/assay.py "{v}" slope > {out}')
            t.expect_number(out, f["slope"], 1e-6, "the slope")
            return
        truth = {"curve": lambda: ns["curve"](stock, plate, standards, excluded),
                 "lod": lambda: ns["lod"](stock, plate, standards, excluded),
                 "unknowns": lambda: ns["unknowns"](stock, plate, standards, samples, excluded)}[variant]()
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\npython3 /solution/assay.py "{v}" {variant} > {out}')
        what = {"curve": "the fit", "lod": "the limits", "unknowns": "the concentrations"}[variant]
        t.expect_output(out, truth, what)
