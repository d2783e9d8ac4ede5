"""Where are the equilibria? A file of named polynomials, each with its own interval; for the named one,
offset by a constant level delivered separately (a threshold, or a constant load on the bead), every
real root of the offset polynomial inside the interval (simple roots, some close together at higher
levels), then each root's stability from the sign of the derivative and the work integral between the
outermost equilibria from the exact antiderivative.
Variants: level_roots (those roots, with the bead's stability and work at higher levels), above_level (the
maximal sub-intervals where the polynomial exceeds the level, then their total length and the integral over
them) and critical_points (the local extrema of the lowered polynomial with their kind and value, then its
global extremes over the closed interval and its mean value). In every variant the delivered level moves
every reported number."""

from __future__ import annotations

import math
from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.unseen import distinct, hidden

CORE = r'''
import sys

NAME = "@NAME@"
LEVEL_MICRO = "@@LEVEL@@"  # the constant subtracted from the polynomial, in millionths: the oracle writes it
FIELDS = @FIELDS@


def horner(c, x):
    acc = 0.0
    for k in c:
        acc = acc * x + k
    return acc


def deriv(c):
    n = len(c) - 1
    return [k * (n - i) for i, k in enumerate(c[:-1])]


def bisect(c, lo, hi):
    flo = horner(c, lo)
    for _ in range(300):
        mid = (lo + hi) / 2
        if mid == lo or mid == hi:
            break
        fm = horner(c, mid)
        if fm == 0:
            return mid
        if (fm < 0) == (flo < 0):
            lo, flo = mid, fm
        else:
            hi = mid
    return (lo + hi) / 2


def roots(c, a, b):
    """Real roots of c (highest degree first) in [a, b], ascending; all roots assumed simple."""
    while len(c) > 1 and c[0] == 0:
        c = c[1:]
    if len(c) <= 1:
        return []
    if len(c) == 2:
        r = -c[1] / c[0]
        return [r] if a <= r <= b else []
    pts = [a] + roots(deriv(c), a, b) + [b]
    out = []
    for lo, hi in zip(pts, pts[1:]):
        flo, fhi = horner(c, lo), horner(c, hi)
        if flo == 0 and lo == a:
            out.append(lo)
        if fhi == 0 and hi == b:
            out.append(hi)
        if flo * fhi < 0:
            out.append(bisect(c, lo, hi))
    return out


def table(text):
    polys = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        f = line.split()
        polys[f[0]] = (float(f[1]), float(f[2]), [float(x) for x in f[3:]])
    return polys


def offset(c, level_micro):
    """The coefficients of p(x) - level_micro / 1000000."""
    return c[:-1] + [c[-1] - level_micro / 1000000]


def analyse(text, level_micro=None):
    a, b, c = table(text)[NAME]
    c = offset(c, int(LEVEL_MICRO if level_micro is None else level_micro))
    rs = roots(c, a, b)
    d = deriv(c)
    n = len(c)
    anti = [k / (n - i) for i, k in enumerate(c)] + [0.0]
    work = horner(anti, rs[-1]) - horner(anti, rs[0]) if rs else 0.0
    return [(r, horner(d, r)) for r in rs], work


def num(x):
    s = "%.6f" % x
    return "0.000000" if s == "-0.000000" else s


def report(text, level_micro=None):
    found, work = analyse(text, level_micro)
    out = []
    for r, slope in found:
        if "stability" in FIELDS:
            out.append("%s %s\n" % (num(r), "stable" if slope < 0 else "unstable"))
        else:
            out.append(num(r) + "\n")
    if "work" in FIELDS:
        out.append("work=%s\n" % num(work))
    return "".join(out)
'''

MAIN = r'''

if __name__ == "__main__":
    args = sys.argv[1:]
    if len(args) == 2:
        with open(args[0]) as f:
            sys.stdout.write(@REPORT@(f.read(), int(args[1])))
    else:
        sys.stdout.write(@REPORT@(sys.stdin.read()))
'''

# The other variants' reports, on the same table, offset and root finder (appended to CORE before MAIN).
EXTRA = r'''


def shifted(text, level_micro=None):
    a, b, c = table(text)[NAME]
    return a, b, offset(c, int(LEVEL_MICRO if level_micro is None else level_micro))


def antiderivative(c):
    n = len(c)
    return [k / (n - i) for i, k in enumerate(c)] + [0.0]


def above(text, level_micro=None):
    """The maximal sub-intervals of [a, b] where q = p - level is positive, and the integral of q over them."""
    a, b, c = shifted(text, level_micro)
    pts = [a] + roots(c, a, b) + [b]
    spans = [(lo, hi) for lo, hi in zip(pts, pts[1:]) if horner(c, (lo + hi) / 2) > 0]
    anti = antiderivative(c)
    return spans, sum(horner(anti, hi) - horner(anti, lo) for lo, hi in spans)


def report_above(text, level_micro=None):
    spans, area = above(text, level_micro)
    out = ["%s %s\n" % (num(lo), num(hi)) for lo, hi in spans]
    if "measure" in FIELDS:
        out.append("measure=%s\n" % num(sum(hi - lo for lo, hi in spans)))
    if "area" in FIELDS:
        out.append("area=%s\n" % num(area))
    return "".join(out)


def critical(text, level_micro=None):
    """q = p - level on [a, b]: its critical points as (x, q''(x), q(x)), where it is largest and smallest
    over the closed interval as (x, q(x)), and its mean value there."""
    a, b, c = shifted(text, level_micro)
    d = deriv(c)
    pts = [(x, horner(deriv(d), x), horner(c, x)) for x in roots(d, a, b)]
    cands = [(a, horner(c, a))] + [(x, q) for x, _, q in pts] + [(b, horner(c, b))]
    anti = antiderivative(c)
    mean = (horner(anti, b) - horner(anti, a)) / (b - a)
    return pts, max(cands, key=lambda p: p[1]), min(cands, key=lambda p: p[1]), mean


def report_critical(text, level_micro=None):
    pts, top, bottom, mean = critical(text, level_micro)
    out = ["%s %s %s\n" % (num(x), "max" if curv < 0 else "min", num(q)) for x, curv, q in pts]
    if "global" in FIELDS:
        out.append("global_max=%s %s\n" % (num(top[0]), num(top[1])))
        out.append("global_min=%s %s\n" % (num(bottom[0]), num(bottom[1])))
    if "mean" in FIELDS:
        out.append("mean=%s\n" % num(mean))
    return "".join(out)
'''

REFERENCE = CORE + MAIN
OUTPUT = {"level_roots": "/app/out/roots.txt", "above_level": "/app/out/above.txt",
          "critical_points": "/app/out/critical.txt"}
VARIANT_REPORT = {"level_roots": "report", "above_level": "report_above", "critical_points": "report_critical"}
# What the knobs' report fields (stability, work) become in the other variants: their richer report lines.
VARIANT_FIELDS = {"above_level": {"stability": "measure", "work": "area"},
                  "critical_points": {"stability": "global", "work": "mean"}}


def reference(variant: str) -> str:
    """The reference program template of a variant (level_roots's text is today's, unchanged)."""
    return CORE + ("" if variant == "level_roots" else EXTRA) + MAIN


def safe(x: float) -> bool:
    f = abs(x) * 1e6
    return abs(f - math.floor(f) - 0.5) > 0.01


def mul(p: list[float], q: list[float]) -> list[float]:
    out = [0.0] * (len(p) + len(q) - 1)
    for i, x in enumerate(p):
        for j, y in enumerate(q):
            out[i + j] += x * y
    return out


def make_poly(rng, k: "Knobs") -> tuple[float, float, list[float], int]:
    a = rng.randrange(-30, -5) / 10
    b = rng.randrange(5, 30) / 10
    deg = rng.randint(*k.degree)
    n_roots = rng.randint(*k.roots)
    for _ in range(10000):
        rs = sorted(rng.uniform(a + 0.1, b - 0.1) for _ in range(n_roots))
        gaps = [y - x for x, y in zip(rs, rs[1:])]
        if all(g >= 0.15 for g in gaps) or (k.close and all(g >= 0.03 for g in gaps)
                                            and sum(g < 0.15 for g in gaps) == 1):
            break
    else:
        raise FamilyError(f"polynomial_root_bracketing: no {n_roots} separated roots in 10000 draws")
    c = [rng.choice([-1, 1]) * round(rng.uniform(0.5, 2.5), 2)]
    for r in rs:
        c = mul(c, [1.0, -r])
    left = deg - n_roots
    while left:
        if left >= 2 and rng.random() < 0.7:  # x^2 + p x + q without real roots
            p = rng.uniform(-2, 2)
            c = mul(c, [1.0, p, p * p / 4 + rng.uniform(0.3, 2.0)])
            left -= 2
        else:  # a real root outside the interval
            r = rng.choice([a - rng.uniform(0.5, 2), b + rng.uniform(0.5, 2)])
            c = mul(c, [1.0, -r])
            left -= 1
    return a, b, [float(f"{x:.6f}") for x in c], n_roots


def poly_line(name: str, a: float, b: float, c: list[float]) -> str:
    return f"{name} {a:g} {b:g} " + " ".join(f"{x:.6f}" for x in c) + "\n"


@dataclass(frozen=True)
class Knobs:
    polys: int  # polynomials in a table
    degree: tuple[int, int]  # degree range
    roots: tuple[int, int]  # range of the number of real roots inside the interval
    close: bool  # one pair of roots may lie close together (0.03 .. 0.15 apart)
    fields: tuple[str, ...]  # stability, work: the bead's physics reading


@register
class PolynomialRootBracketing(Family):
    name = "polynomial_root_bracketing"
    domain = "scientific_computing"
    skill_types = ("Numerical Methods",)
    primitive_skills = ("root finding", "bisection", "polynomial evaluation", "derivative-based bracketing",
                        "polynomial integration", "stability classification", "floating-point rounding control")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol", "fuzz_equivalence")
    programs = {"Python": REFERENCE}
    variants = ("level_roots", "above_level", "critical_points")
    levels = {0: Knobs(polys=2, degree=(2, 2), roots=(1, 1), close=False, fields=()),  # a quadratic: one numpy.roots
              1: Knobs(polys=3, degree=(3, 3), roots=(1, 1), close=False, fields=()),
              2: Knobs(polys=4, degree=(4, 5), roots=(2, 3), close=False, fields=()),
              3: Knobs(polys=5, degree=(5, 6), roots=(3, 4), close=False, fields=("stability",)),
              4: Knobs(polys=6, degree=(6, 7), roots=(4, 5), close=True, fields=("stability", "work"))}

    def robust(self, ns: dict, a: float, b: float, c: list[float], n_roots: int) -> bool:
        rs = ns["roots"](c, a, b)
        if len(rs) != n_roots or min(abs(ns["horner"](c, a)), abs(ns["horner"](c, b))) < 1e-3:
            return False
        d = ns["deriv"](c)
        if any(abs(ns["horner"](d, r)) < 0.05 or abs(r) < 1e-4 or not safe(r) for r in rs):
            return False
        for r in rs:  # a Newton step evaluated another way must not move the rounded root
            pr = sum(x * r ** (len(c) - 1 - i) for i, x in enumerate(c))
            if ns["num"](r - pr / ns["horner"](d, r)) != ns["num"](r):
                return False
        n = len(c)
        anti = [x / (n - i) for i, x in enumerate(c)] + [0.0]
        return safe(ns["horner"](anti, rs[-1]) - ns["horner"](anti, rs[0]))

    def fits(self, variant: str, ns: dict, line: str, level_micro: int) -> bool:
        """Are the numbers another variant reports about the target's ``line`` also safe to round?"""
        if variant == "above_level":
            spans, area = ns["above"](line, level_micro)
            return safe(area) and safe(sum(hi - lo for lo, hi in spans))
        if variant == "critical_points":
            a, b, c = ns["shifted"](line, level_micro)
            d = ns["deriv"](c)
            pts, top, bottom, mean = ns["critical"](line, level_micro)
            if not pts or min(abs(ns["horner"](d, a)), abs(ns["horner"](d, b))) < 1e-3 or not safe(mean):
                return False
            if any(abs(curv) < 0.05 or abs(x) < 1e-4 or not (safe(x) and safe(q)) for x, curv, q in pts):
                return False
            for x, curv, _ in pts:  # a Newton step on q' must not move the rounded critical point
                if ns["num"](x - ns["horner"](d, x) / curv) != ns["num"](x):
                    return False
            qs = sorted([ns["horner"](c, a), ns["horner"](c, b)] + [q for _, _, q in pts])
            return safe(qs[0]) and safe(qs[-1]) and qs[1] - qs[0] > 1e-5 and qs[-1] - qs[-2] > 1e-5
        return True

    def table(self, rng, k: Knobs, ns: dict, names: list[str], target: str, level_micro: int,
              variant: str) -> str:
        """The polynomials of ``names``; the target's is written with the level added to its constant term,
        so that its roots are those of the written polynomial minus the level."""
        lines = []
        for name in names:
            for _ in range(2000):
                a, b, c, n_roots = make_poly(rng, k)
                if name == target:
                    c = c[:-1] + [float(f"{c[-1] + level_micro / 1000000:.6f}")]
                    seen = ns["offset"](c, level_micro)  # exactly what the reference will solve
                else:
                    seen = c
                if self.robust(ns, a, b, seen, n_roots) and (
                        name != target or self.fits(variant, ns, poly_line(name, a, b, c), level_micro)):
                    lines.append(poly_line(name, a, b, c))
                    break
            else:
                raise FamilyError("polynomial_root_bracketing: no robust polynomial in 2000 draws")
        return "# name a b coefficients (highest degree first)\n" + "".join(lines)

    def fields(self, t: TaskBuilder) -> tuple[str, ...]:
        """The report lines beyond the main answer that this level adds in this variant."""
        if t.variant == "level_roots":
            return t.knobs.fields
        return tuple(VARIANT_FIELDS[t.variant][f] for f in t.knobs.fields)

    def setup(self, t: TaskBuilder) -> tuple[list[str], str, str, dict]:
        """The polynomial names, the target, the filled reference and its namespace (``report`` bound to
        the variant's report)."""
        for _ in range(self.variants.index(t.variant)):  # a seed's tables differ between the variants
            t.rng.random()
        names = distinct(lambda: t.code(1), t.knobs.polys)
        target = t.rng.choice(names)
        src = fill(reference(t.variant), FIELDS=self.fields(t), NAME=target, REPORT=VARIANT_REPORT[t.variant])
        ns = run_python(src)
        return names, target, src, dict(ns, report=ns[VARIANT_REPORT[t.variant]])

    def level(self, t: TaskBuilder, make, shown_outputs: bool, ns: dict) -> tuple[int, list[str]]:
        """The level in millionths (the delivered value) and the tables ``make(level)`` builds with it. It
        has 7 digits: longer than any digit run of the tables or worked examples, and drawn clear of every
        number in them. Any other level moves every root, so no visible number is a usable guess."""
        for _ in range(50):
            level_micro = t.rng.randrange(1_000_000, 7_000_000)
            seen = make(level_micro)
            outs = [ns["report"](x, level_micro) for x in seen] if shown_outputs else []
            if hidden(t, level_micro, 2000, *seen, *outs):
                return level_micro, seen
        raise FamilyError("polynomial_root_bracketing: every level drawn shows in the task in 50 draws")

    def texts(self, t: TaskBuilder, target: str) -> tuple[str, str, str, str, str]:
        """(the input format, the task, the output format, the rules, what is delivered)."""
        k = t.knobs
        fmt_in = ("one polynomial per line: its name, the interval ends a and b, then its coefficients from the "
                  "highest degree down to the constant term, separated by spaces; a line starting with `#` is a "
                  "comment")
        if t.variant != "level_roots":
            return (fmt_in, *self.variant_texts(t.variant, self.fields(t), target))
        if k.fields:
            task = ("Each polynomial is the force F(x) (newtons) that the springs of a wire exert on a bead sliding "
                    "along it, as a function of its position x (metres), and the interval [a, b] is the part of the "
                    f"wire we care about. Bead `{target}` also carries a constant load L that pulls it towards "
                    "negative x, so the net force on it is F(x) - L; L is given below in micronewtons (one "
                    "million uN make 1 N). I need the equilibria of that bead inside its interval: the real roots "
                    "of F(x) - L in [a, b]. An equilibrium is `stable` if dF/dx < 0 there and `unstable` if dF/dx > 0.")
            fmt = ("one line per equilibrium, in increasing x: the position rounded to 6 decimals, a space, and "
                   "`stable` or `unstable`")
            if "work" in k.fields:
                fmt += ("; then a line `work=<J>`: the work done by the net force F - L as the bead moves from the "
                        "leftmost to the rightmost of those equilibria (the integral of F(x) - L over that span, "
                        "computed exactly from the antiderivative), rounded to 6 decimals")
            what = "the load L in micronewtons"
        else:
            task = (f"For the polynomial named `{target}` I need every x inside its interval [a, b] where it equals a "
                    "threshold level c: the real roots of p(x) - c in [a, b]. The level is given below in "
                    "millionths (an integer N means c = N divided by one million).")
            fmt = "one root per line, in increasing order, rounded to 6 decimals"
            what = "the threshold level in millionths"
        rules = ("All those roots are simple (they may lie close together); none is at an interval end. "
                 "Never write `-0.000000`.")
        return fmt_in, task, fmt, rules, what

    def variant_texts(self, variant: str, fields: tuple[str, ...], target: str) -> tuple[str, str, str, str]:
        """(the task, the output format, the rules, what is delivered) of the other variants."""
        level = ("The level is given below in millionths (an integer N means c = N divided by one million).")
        exact = "computed exactly from the antiderivative"
        if variant == "above_level":
            task = (f"For the polynomial named `{target}` I need the parts of its interval [a, b] where it lies "
                    "strictly above a threshold level c: the maximal sub-intervals of [a, b] on which p(x) > c. "
                    + level)
            fmt = ("one sub-interval per line, from left to right: its two ends rounded to 6 decimals, separated by "
                   "a space (each end is a or b or a root of p(x) - c)")
            if "measure" in fields:
                fmt += "; then a line `measure=<length>`: the total length of those sub-intervals, 6 decimals"
            if "area" in fields:
                fmt += (f"; then a line `area=<value>`: the integral of p(x) - c over those sub-intervals ({exact}), "
                        "6 decimals")
            rules = ("All roots of p(x) - c in [a, b] are simple (they may lie close together); p(x) - c is nonzero "
                     "at a and at b. Never write `-0.000000`.")
        else:
            task = (f"For the polynomial named `{target}`, lowered by a level c (q(x) = p(x) - c), I need its "
                    "critical points inside its interval [a, b]: every x in [a, b] where q'(x) = 0, whether q has a "
                    "local `max` (q''(x) < 0) or `min` (q''(x) > 0) there, and the value q(x). " + level)
            fmt = ("one line per critical point, in increasing x: x rounded to 6 decimals, a space, `max` or `min`, "
                   "a space, and q(x) rounded to 6 decimals")
            if "global" in fields:
                fmt += ("; then a line `global_max=<x> <q(x)>` and a line `global_min=<x> <q(x)>`: where q is largest "
                        "and smallest over the closed interval [a, b] (its ends included), same rounding")
            if "mean" in fields:
                fmt += f"; then a line `mean=<value>`: the mean value of q over [a, b] ({exact}), 6 decimals"
            rules = "q'' is nonzero at every critical point and none is at an interval end. Never write `-0.000000`."
        return task, fmt, rules, "the level c in millionths"

    def program_case(self, t: TaskBuilder) -> None:
        k, rng = t.knobs, t.rng
        names, target, src, ns = self.setup(t)

        def order() -> list[str]:
            others = [n for n in names if n != target]
            rng.shuffle(others)
            out = others[:rng.randint(1, len(others))] + [target]
            rng.shuffle(out)
            return out

        level_micro, seen = self.level(
            t, lambda lv: [self.table(rng, k, ns, order(), target, lv, t.variant) for _ in range(2)], True, ns)
        texts = seen + [self.table(rng, k, ns, order(), target, level_micro, t.variant) for _ in range(8)]
        cases = [(text, ns["report"](text, level_micro)) for text in texts]
        fmt_in, task, fmt, rules, what = self.texts(t, target)
        t.say(f"I keep getting tables of polynomials in this format: {fmt_in}. I want a program that reads one "
              "such table on standard input and does the following. " + task)
        v = t.deliver(str(level_micro), what)
        t.say(f"{rules} Output: {fmt}.")
        t.expect_program("The level is always the one given above: hard-code it.", cases, {"Python": src})
        t.solve(f'test -n "{v}"\nsed -i "s/@@LEVEL@@/{v}/" /app/solution.py')

    def output_case(self, t: TaskBuilder) -> None:
        k, rng = t.knobs, t.rng
        names, target, src, ns = self.setup(t)
        level_micro, (text,) = self.level(
            t, lambda lv: [self.table(rng, k, ns, names, target, lv, t.variant)], False, ns)
        fmt_in, task, fmt, rules, what = self.texts(t, target)
        t.add_file("/app/data/polynomials.txt", text)
        t.say(f"`/app/data/polynomials.txt` lists several polynomials, {fmt_in}. " + task)
        v = t.deliver(str(level_micro), what)
        t.say(f"{rules} Output format: {fmt}.")
        t.add_solution_file("roots.py", src)
        out = OUTPUT[t.variant]
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\npython3 /solution/roots.py /app/data/polynomials.txt "{v}" '
                f'> {out}')
        t.expect_output(out, ns["report"](text, level_micro), "the result (format above)")
