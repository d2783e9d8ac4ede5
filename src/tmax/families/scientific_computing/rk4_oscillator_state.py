"""Where is the oscillator at time T? A (damped, driven, Duffing) oscillator integrated with a classic
fixed-step RK4 whose step is delivered separately; the answer is the discrete scheme's, not the exact
solution's, so the step matters. Higher levels add the energy, the largest excursion and the first
zero crossing (linearly interpolated between steps)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import fill, run_python

REFERENCE = r'''
import math
import sys

STEP_MS = "@@STEP_MS@@"  # the oracle writes the delivered step here
FIELDS = @FIELDS@  # the report's keys; ("crossing_t",): every zero crossing; ("t", "x", ...): a table
KEYS = ("omega", "zeta", "beta", "force", "drive", "x0", "v0", "T")


def parse(text):
    p = dict.fromkeys(KEYS, 0.0)
    for line in text.splitlines():
        line = line.split("#")[0].strip()
        if "=" in line:
            key, value = line.split("=", 1)
            p[key.strip()] = float(value)
    return p


def simulate(p, step_ms):
    h = step_ms / 1000
    n_steps = round(p["T"] / h)
    w, z, b, f, d = p["omega"], p["zeta"], p["beta"], p["force"], p["drive"]

    def acc(t, x, v):
        return -2 * z * w * v - w * w * x - b * x ** 3 + f * math.cos(d * t)

    x, v = p["x0"], p["v0"]
    xs, vs = [x], [v]
    for n in range(n_steps):
        t = n * h
        k1x, k1v = v, acc(t, x, v)
        k2x, k2v = v + h / 2 * k1v, acc(t + h / 2, x + h / 2 * k1x, v + h / 2 * k1v)
        k3x, k3v = v + h / 2 * k2v, acc(t + h / 2, x + h / 2 * k2x, v + h / 2 * k2v)
        k4x, k4v = v + h * k3v, acc(t + h, x + h * k3x, v + h * k3v)
        x = x + h / 6 * (k1x + 2 * k2x + 2 * k3x + k4x)
        v = v + h / 6 * (k1v + 2 * k2v + 2 * k3v + k4v)
        xs.append(x)
        vs.append(v)
    return h, xs, vs


def energy(p, x, v):
    return 0.5 * v * v + 0.5 * p["omega"] ** 2 * x * x + 0.25 * p["beta"] * x ** 4


def measure(text, step_ms=None):
    p = parse(text)
    h, xs, vs = simulate(p, float(step_ms or STEP_MS))
    x, v = xs[-1], vs[-1]
    crossings = [(n - 1) * h + h * xs[n - 1] / (xs[n - 1] - xs[n])
                 for n in range(1, len(xs)) if xs[n - 1] * xs[n] < 0]
    every = round(1 / h)  # the table has a row at each whole second
    rows = [(n * h, xs[n], vs[n], energy(p, xs[n], vs[n])) for n in range(0, len(xs), every)]
    return {"x_T": x, "v_T": v, "energy_T": energy(p, x, v), "max_abs_x": max(abs(s) for s in xs),
            "first_crossing_t": crossings[0] if crossings else None, "crossings": crossings, "rows": rows}


def number(text, step_ms=None):
    """The one number a partial-credit answer gives: x_T, the mean half period between the first and
    the last zero crossing, or the mean of the table's x column."""
    m = measure(text, step_ms)
    if FIELDS[0] == "crossing_t":
        c = m["crossings"]
        return (c[-1] - c[0]) / (len(c) - 1)
    if FIELDS[0] == "t":
        return sum(r[1] for r in m["rows"]) / len(m["rows"])
    return m["x_T"]


def num(x):
    s = "%.6f" % x
    return "0.000000" if s == "-0.000000" else s


def report(text, step_ms=None):
    m = measure(text, step_ms)
    if FIELDS[0] == "crossing_t":
        return "".join(num(c) + "\n" for c in m["crossings"])
    if FIELDS[0] == "t":
        return ",".join(FIELDS) + "\n" + "".join(",".join(num(c) for c in r[:len(FIELDS)]) + "\n" for r in m["rows"])
    return "".join("%s=%s\n" % (k, num(m[k]) if m[k] is not None else "none") for k in FIELDS)


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["--number"]:
        print(repr(number(sys.stdin.read(), int(args[1]))))
    else:
        sys.stdout.write(report(sys.stdin.read(), int(args[0]) if args else None))
'''

FIELD_TEXT = {"x_T": "`x_T` (the position after the last step)", "v_T": "`v_T` (the velocity after the last step)",
              "energy_T": "`energy_T` (the energy after the last step)",
              "max_abs_x": "`max_abs_x` (the largest |x| over all steps, the initial state included)",
              "first_crossing_t": "`first_crossing_t` (the first zero crossing of x, see above)"}
STEPS_MS = (5, 8, 10, 20, 25, 40, 50, 100, 125)
# metric_threshold grades x_T by relative error: the tolerance sits far above float noise between
# correct RK4 codes (< 1e-11) and the scheme's own error (vs the exact solution) must be at least
# EXACT_GAP tolerances, so a closed-form or high-accuracy answer (partial credit ends at 10x) earns 0.
REL_TOL = 1e-9
EXACT_GAP = 100
FINE = 10  # the exact solution stands in as RK4 at h / FINE (10^4 times more accurate)


def safe(x: float) -> bool:
    f = abs(x) * 1e6
    return abs(f - math.floor(f) - 0.5) > 1e-3


def variant(p: dict, step_ms: int) -> tuple[float, float]:
    """The same scheme written differently (accumulated time, other term order): a float-noise probe."""
    h = step_ms / 1000
    w, z, b, f, d = p["omega"], p["zeta"], p["beta"], p["force"], p["drive"]

    def acc(t, x, v):
        return f * math.cos(d * t) - (w * w) * x - b * (x * x * x) - (2 * z * w) * v

    x, v, t = p["x0"], p["v0"], 0.0
    for _ in range(round(p["T"] / h)):
        k1 = (v, acc(t, x, v))
        k2 = (v + 0.5 * h * k1[1], acc(t + 0.5 * h, x + 0.5 * h * k1[0], v + 0.5 * h * k1[1]))
        k3 = (v + 0.5 * h * k2[1], acc(t + 0.5 * h, x + 0.5 * h * k2[0], v + 0.5 * h * k2[1]))
        k4 = (v + h * k3[1], acc(t + h, x + h * k3[0], v + h * k3[1]))
        x += (k1[0] + 2 * k2[0] + 2 * k3[0] + k4[0]) * h / 6
        v += (k1[1] + 2 * k2[1] + 2 * k3[1] + k4[1]) * h / 6
        t += h
    return x, v


@dataclass(frozen=True)
class Knobs:
    damped: bool  # a damping term 2 * zeta * omega * v
    driven: bool  # a driving force force * cos(drive * t)
    duffing: bool  # a cubic stiffness beta * x^3
    fields: tuple[str, ...]  # the reported quantities, in order


WHAT = "the integration step h in milliseconds"
SYSTEMS = ("oscillator", "spring-mass rig", "MEMS resonator", "seismometer mass", "suspension test rig",
           "tuning-fork model")
# The same scheme, worded three ways (the first is the family's original wording).
SCHEMES = (
    "Integrate it with the classic fourth-order Runge-Kutta method (RK4) on the state (x, v), with a fixed step h "
    "(see below) from t = 0 to t = T: N = T / h steps (an integer), step n going from t_n = n * h to t_(n+1) with "
    "the usual stages k1 = f(t_n, y_n), k2 = f(t_n + h/2, y_n + h/2 * k1), k3 = f(t_n + h/2, y_n + h/2 * k2), "
    "k4 = f(t_n + h, y_n + h * k3), y_(n+1) = y_n + h/6 * (k1 + 2*k2 + 2*k3 + k4). We want the result of this "
    "discrete scheme at this step size, not the exact solution (a higher-accuracy or adaptive solver gives "
    "different numbers).",
    "Advance the state y = (x, v) from t = 0 to t = T in N = T / h equal steps (N is an integer; the fixed step h "
    "is given below) of classic fourth-order Runge-Kutta. Each step from (t_n, y_n) evaluates the slope f four "
    "times, once at the start (k1 = f(t_n, y_n)), twice at the midpoint (k2 = f(t_n + h/2, y_n + (h/2) k1), "
    "k3 = f(t_n + h/2, y_n + (h/2) k2)) and once at the end (k4 = f(t_n + h, y_n + h k3)), and combines them with "
    "weights 1, 2, 2, 1: y_(n+1) = y_n + (h/6)(k1 + 2 k2 + 2 k3 + k4). The numbers we need are this discrete "
    "scheme's at exactly this step; an adaptive or higher-order solver, or the closed form, will not reproduce "
    "them.",
    "Solve the first-order system y' = f(t, y), y = (x, v), f = (v, x''), with the explicit Runge-Kutta method "
    "whose Butcher tableau is c = (0, 1/2, 1/2, 1), a21 = 1/2, a32 = 1/2, a43 = 1 (every other a_ij = 0) and "
    "b = (1/6, 1/3, 1/3, 1/6): stage i is k_i = f(t_n + c_i h, y_n + h * sum_j a_ij k_j), then "
    "y_(n+1) = y_n + h * sum_i b_i k_i. Take N = T / h constant steps (an integer) from t = 0, with the step h "
    "given below. What we grade is this fixed-step scheme's result, which differs from the exact solution and "
    "from whatever an adaptive solver returns.")
NUMBER_ASK = {"final_state": "I need the position x at t = T.",
              "crossings": "I need the mean half period of the run: the time between its first and its last zero "
                           "crossing divided by the number of crossings minus one.",
              "trajectory": "I need the mean position over the run, sampled at every whole second t = 0, 1, ..., T "
                            "(every 1 / h steps, the initial state included)."}
NUMBER_WHAT = {"final_state": "x(T)", "crossings": "the mean half period in seconds",
               "trajectory": "the mean of x over those samples"}


@dataclass(frozen=True)
class Case:
    """One task's draws: the knobs, the variant, the step, what is reported, how it is worded, the reference."""
    k: Knobs
    variant: str
    step_ms: int
    fields: tuple[str, ...]
    order: tuple[int, ...]  # the configuration file's key order (empty: the usual one)
    style: int  # which wording of the scheme (SCHEMES)
    system: str
    src: str
    ns: dict


@register
class Rk4OscillatorState(Family):
    name = "rk4_oscillator_state"
    domain = "scientific_computing"
    skill_types = ("Simulation", "Numerical Methods")
    primitive_skills = ("ODE integration with fixed step", "Runge-Kutta methods", "phase-space bookkeeping",
                        "linear interpolation", "floating-point rounding control")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol", "fuzz_equivalence")
    programs = {"Python": REFERENCE}
    variants = ("final_state", "crossings", "trajectory")
    levels = {0: Knobs(damped=False, driven=False, duffing=False, fields=("x_T",)),
              1: Knobs(damped=False, driven=False, duffing=False, fields=("x_T", "v_T")),
              2: Knobs(damped=True, driven=False, duffing=False, fields=("x_T", "v_T", "energy_T")),
              3: Knobs(damped=True, driven=True, duffing=False, fields=("x_T", "v_T", "energy_T", "max_abs_x")),
              4: Knobs(damped=True, driven=True, duffing=True,
                       fields=("x_T", "v_T", "energy_T", "max_abs_x", "first_crossing_t"))}

    def params(self, rng, k: Knobs, step_ms: int) -> dict:
        h = step_ms / 1000
        lo, hi = max(0.6, 0.04 / h), min(5.0, 0.3 / h)
        p = {"omega": round(rng.uniform(lo, hi), 3), "zeta": 0.0, "beta": 0.0, "force": 0.0, "drive": 0.0,
             "x0": round(rng.uniform(0.4, 2.0), 3), "v0": round(rng.uniform(-1.5, 1.5), 3)}
        if k.damped:
            p["zeta"] = round(rng.uniform(0.02, 0.2), 3)
        if k.driven:
            p["force"] = round(rng.uniform(0.2, 1.5), 3)
            p["drive"] = round(rng.uniform(0.4, 3.0), 3)
        if k.duffing:
            p["beta"] = round(rng.uniform(0.1, 1.0), 3)
        decay = 2.5 / max(p["zeta"] * p["omega"], 1e-9)
        top = int(min(30, decay, 20000 * h))
        p["T"] = float(rng.randrange(4, max(5, top)))
        return p

    def text(self, p: dict, k: Knobs, order: tuple[int, ...] = ()) -> str:
        keys = ["omega"] + (["zeta"] if k.damped else []) + (["beta"] if k.duffing else []) \
            + (["force", "drive"] if k.driven else []) + ["x0", "v0", "T"]
        keys = [keys[i] for i in order if i < len(keys)] if order else keys  # the file's key order is free
        return "".join(f"{key} = {p[key]:g}\n" for key in keys)

    def ok(self, ns: dict, p: dict, c: Case, vs_exact: str | None) -> bool:
        """Is this configuration's answer safe from float noise, and (``vs_exact``: "rounded" for the
        report, "relative" for a number graded by relative error, None for a program) different from
        the exact solution's?"""
        k, step_ms = c.k, c.step_ms
        text = self.text(p, k, c.order)
        m = ns["measure"](text, step_ms)
        if abs(m["x_T"]) < 0.02 or abs(m["v_T"]) < 1e-3 or not all(math.isfinite(m[f]) for f in FIELD_TEXT
                                                                     if m[f] is not None):
            return False
        if "first_crossing_t" in k.fields and m["first_crossing_t"] is None:
            return False
        if c.variant == "crossings":  # no step lands so near x = 0 that float noise adds or drops a crossing
            xs = ns["simulate"](ns["parse"](text), step_ms)[1]
            shown = m["crossings"]
            if not 2 <= len(shown) <= 60 or min(abs(x) for x in xs) < 1e-9:
                return False
        elif c.variant == "trajectory":
            shown = [x for r in m["rows"] for x in r[:len(c.fields)]]
        else:
            shown = [m[f] for f in k.fields]
        if not all(safe(x) for x in shown) or abs(ns["number"](text, step_ms)) < 1e-3:
            return False
        x2, v2 = variant(ns["parse"](text), step_ms)
        if ns["num"](x2) != ns["num"](m["x_T"]) or ns["num"](v2) != ns["num"](m["v_T"]):
            return False
        if vs_exact is None:
            return True
        # The answer must tell the instructed scheme from the exact solution.
        if c.variant != "final_state":
            got, exact = ns["number"](text, step_ms), ns["number"](text, step_ms / FINE)
            if vs_exact == "relative":
                return abs(got - exact) >= EXACT_GAP * REL_TOL * abs(got)
            return ns["report"](text, step_ms) != ns["report"](text, step_ms / FINE)
        exact = ns["simulate"](ns["parse"](text), step_ms / FINE)[1][-1]
        if vs_exact == "relative":
            return abs(m["x_T"] - exact) >= EXACT_GAP * REL_TOL * abs(m["x_T"])
        return ns["num"](exact) != ns["num"](m["x_T"])

    def model(self, c: Case) -> str:
        k = c.k
        terms = (["2 * zeta * omega * v"] if k.damped else []) + ["omega^2 * x"] \
            + (["beta * x^3"] if k.duffing else [])
        eq = "x'' = -" + " - ".join(terms) + (" + force * cos(drive * t)" if k.driven else "")
        energy = "E = v^2 / 2 + omega^2 * x^2 / 2" + (" + beta * x^4 / 4" if k.duffing else "")
        s = f"The model is the unit-mass oscillator `{eq}` with v = x'. " + SCHEMES[c.style]
        if "energy_T" in c.fields or "energy" in c.fields:
            s += f" The energy is `{energy}`."
        if "first_crossing_t" in c.fields:
            s += (" The first zero crossing is found on the discrete trajectory: the first step n >= 1 for which "
                  "x_(n-1) and x_n have strictly opposite signs; its time is the linear interpolation "
                  "t_(n-1) + h * x_(n-1) / (x_(n-1) - x_n).")
        if c.variant == "crossings":
            s += (" A zero crossing is found on the discrete trajectory: a step n >= 1 for which x_(n-1) and x_n "
                  "have strictly opposite signs; its time is the linear interpolation "
                  "t_(n-1) + h * x_(n-1) / (x_(n-1) - x_n).")
        return s

    def setup(self, t: TaskBuilder) -> Case:
        """The step (the delivered value: a few digits, too short to protect), the filled reference and its
        namespace, and how this task words things."""
        k, rng = t.knobs, t.rng
        step_ms = rng.choice(STEPS_MS)
        fields = {"crossings": ("crossing_t",),
                  "trajectory": ("t", "x", "v") + (("energy",) if "energy_T" in k.fields else ())}.get(t.variant,
                                                                                                       k.fields)
        if t.variant == "final_state":
            order, style, system = (), 0, "oscillator"
        else:
            order = tuple(rng.sample(range(8), 8))
            style, system = rng.randrange(len(SCHEMES)), rng.choice(SYSTEMS)
        src = fill(REFERENCE, FIELDS=fields)
        return Case(k, t.variant, step_ms, fields, order, style, system, src, run_python(src))

    def config(self, t: TaskBuilder, c: Case, vs_exact: str | None) -> str:
        for _ in range(1000):
            p = self.params(t.rng, c.k, c.step_ms)
            if self.ok(c.ns, p, c, vs_exact):
                return self.text(p, c.k, c.order)
        raise FamilyError("rk4_oscillator_state: no robust configuration in 1000 draws")

    def fmt(self, c: Case) -> str:
        if c.variant == "crossings":
            return ("one line per zero crossing of x over the run (see above), in time order, the time rounded to 6 "
                    "decimals (`%.6f`).")
        if c.variant == "trajectory":
            return (f"a CSV table with the header `{','.join(c.fields)}` and one row at every whole second "
                    "t = 0, 1, ..., T (that is, every 1 / h steps, the initial state first) holding the time and the "
                    "state then" + (" with its energy" if "energy" in c.fields else "")
                    + "; every value rounded to 6 decimals (`%.6f`, never `-0.000000`).")
        return ("`key=value` lines, in this order: " + ", ".join(FIELD_TEXT[f] for f in c.fields)
                + "; every value rounded to 6 decimals (`%.6f`, never `-0.000000`).")

    def program_case(self, t: TaskBuilder) -> None:
        c = self.setup(t)
        texts = [self.config(t, c, None) for _ in range(10)]
        cases = [(text, c.ns["report"](text, c.step_ms)) for text in texts]
        t.say(f"I want a small simulator for the {c.system} in our lab course. It reads one configuration on "
              "standard input: `key = value` lines (keys " + ", ".join(f"`{x}`" for x in c.ns["KEYS"])
              + "; a key that is absent is 0; `#` starts a comment). " + self.model(c))
        v = t.deliver(str(c.step_ms), WHAT)
        t.say(f"Output: {self.fmt(c)}")
        t.expect_program("The step is always the one given above: hard-code it.", cases, {"Python": c.src})
        t.solve(f'test -n "{v}"\nsed -i "s/@@STEP_MS@@/{v}/" /app/solution.py')

    def output_case(self, t: TaskBuilder) -> None:
        c = self.setup(t)
        text = self.config(t, c, "relative" if t.partial_credit else "rounded")
        t.add_file("/app/sim/oscillator.cfg", text)
        t.say(f"The parameters of our {c.system} are in `/app/sim/oscillator.cfg` (`key = value` lines). "
              + self.model(c))
        v = t.deliver(str(c.step_ms), WHAT)
        t.add_solution_file("rk4.py", c.src)
        out = "/app/out/" + {"crossings": "crossings.txt", "trajectory": "trajectory.csv"}.get(c.variant, "state.txt")
        if t.partial_credit:  # one number graded by its relative error, not report lines
            t.say(NUMBER_ASK[c.variant])
            out = out.rsplit("/", 1)[0] + "/" + {"crossings": "half_period.txt", "trajectory": "mean_x.txt"}.get(
                c.variant, "x_T.txt")
            t.solve(f'test -n "{v}"\nmkdir -p /app/out\npython3 /solution/rk4.py --number "{v}" '
                    f'< /app/sim/oscillator.cfg > {out}')
            t.expect_number(out, c.ns["number"](text, c.step_ms), REL_TOL,
                            f"{NUMBER_WHAT[c.variant]}, unrounded (at least 12 significant digits),")
            return
        t.say(f"Output format: {self.fmt(c)}")
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\npython3 /solution/rk4.py "{v}" < /app/sim/oscillator.cfg '
                f'> {out}')
        t.expect_output(out, c.ns["report"](text, c.step_ms),
                        {"crossings": "the crossing times", "trajectory": "the table"}.get(
                            c.variant, "the final state") + " (format above)")
