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
FIELDS = @FIELDS@
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
    xs = [x]
    for n in range(n_steps):
        t = n * h
        k1x, k1v = v, acc(t, x, v)
        k2x, k2v = v + h / 2 * k1v, acc(t + h / 2, x + h / 2 * k1x, v + h / 2 * k1v)
        k3x, k3v = v + h / 2 * k2v, acc(t + h / 2, x + h / 2 * k2x, v + h / 2 * k2v)
        k4x, k4v = v + h * k3v, acc(t + h, x + h * k3x, v + h * k3v)
        x = x + h / 6 * (k1x + 2 * k2x + 2 * k3x + k4x)
        v = v + h / 6 * (k1v + 2 * k2v + 2 * k3v + k4v)
        xs.append(x)
    return h, xs, v


def measure(text, step_ms=None):
    p = parse(text)
    h, xs, v = simulate(p, float(step_ms or STEP_MS))
    x = xs[-1]
    out = {"x_T": x, "v_T": v,
           "energy_T": 0.5 * v * v + 0.5 * p["omega"] ** 2 * x * x + 0.25 * p["beta"] * x ** 4,
           "max_abs_x": max(abs(s) for s in xs), "first_crossing_t": None}
    for n in range(1, len(xs)):
        if xs[n - 1] * xs[n] < 0:
            out["first_crossing_t"] = (n - 1) * h + h * xs[n - 1] / (xs[n - 1] - xs[n])
            break
    return out


def num(x):
    s = "%.6f" % x
    return "0.000000" if s == "-0.000000" else s


def report(text, step_ms=None):
    m = measure(text, step_ms)
    return "".join("%s=%s\n" % (k, num(m[k]) if m[k] is not None else "none") for k in FIELDS)


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["--x"]:
        print(repr(measure(sys.stdin.read(), int(args[1]))["x_T"]))
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


@register
class Rk4OscillatorState(Family):
    name = "rk4_oscillator_state"
    domain = "scientific_computing"
    skill_types = ("Simulation", "Numerical Methods")
    primitive_skills = ("ODE integration with fixed step", "Runge-Kutta methods", "phase-space bookkeeping",
                        "linear interpolation", "floating-point rounding control")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol", "fuzz_equivalence")
    programs = {"Python": REFERENCE}
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

    def text(self, p: dict, k: Knobs) -> str:
        keys = ["omega"] + (["zeta"] if k.damped else []) + (["beta"] if k.duffing else []) \
            + (["force", "drive"] if k.driven else []) + ["x0", "v0", "T"]
        return "".join(f"{key} = {p[key]:g}\n" for key in keys)

    def ok(self, ns: dict, p: dict, k: Knobs, step_ms: int, vs_exact: str | None) -> bool:
        """Is this configuration's answer safe from float noise, and (``vs_exact``: "rounded" for the
        report, "relative" for a number graded by relative error, None for a program) different from
        the exact solution's?"""
        text = self.text(p, k)
        m = ns["measure"](text, step_ms)
        if abs(m["x_T"]) < 0.02 or abs(m["v_T"]) < 1e-3 or not all(math.isfinite(m[f]) for f in m if m[f] is not None):
            return False
        if "first_crossing_t" in k.fields and m["first_crossing_t"] is None:
            return False
        if not all(safe(m[f]) for f in k.fields):
            return False
        x2, v2 = variant(ns["parse"](text), step_ms)
        if ns["num"](x2) != ns["num"](m["x_T"]) or ns["num"](v2) != ns["num"](m["v_T"]):
            return False
        if vs_exact is None:
            return True
        # The answer must tell the instructed scheme from the exact solution.
        exact = ns["simulate"](ns["parse"](text), step_ms / FINE)[1][-1]
        if vs_exact == "relative":
            return abs(m["x_T"] - exact) >= EXACT_GAP * REL_TOL * abs(m["x_T"])
        return ns["num"](exact) != ns["num"](m["x_T"])

    def model(self, k: Knobs) -> str:
        terms = (["2 * zeta * omega * v"] if k.damped else []) + ["omega^2 * x"] \
            + (["beta * x^3"] if k.duffing else [])
        eq = "x'' = -" + " - ".join(terms) + (" + force * cos(drive * t)" if k.driven else "")
        energy = "E = v^2 / 2 + omega^2 * x^2 / 2" + (" + beta * x^4 / 4" if k.duffing else "")
        s = (f"The model is the unit-mass oscillator `{eq}` with v = x'. Integrate it with the classic fourth-order "
             "Runge-Kutta method (RK4) on the state (x, v), with a fixed step h (see below) from t = 0 to t = T: "
             "N = T / h steps (an integer), step n going from t_n = n * h to t_(n+1) with the usual stages "
             "k1 = f(t_n, y_n), k2 = f(t_n + h/2, y_n + h/2 * k1), k3 = f(t_n + h/2, y_n + h/2 * k2), "
             "k4 = f(t_n + h, y_n + h * k3), y_(n+1) = y_n + h/6 * (k1 + 2*k2 + 2*k3 + k4). We want the result of "
             "this discrete scheme at this step size, not the exact solution (a higher-accuracy or adaptive "
             "solver gives different numbers).")
        if "energy_T" in k.fields:
            s += f" The energy is `{energy}`."
        if "first_crossing_t" in k.fields:
            s += (" The first zero crossing is found on the discrete trajectory: the first step n >= 1 for which "
                  "x_(n-1) and x_n have strictly opposite signs; its time is the linear interpolation "
                  "t_(n-1) + h * x_(n-1) / (x_(n-1) - x_n).")
        return s

    def setup(self, t: TaskBuilder) -> tuple[int, str, dict]:
        """The step (the delivered value: a few digits, too short to protect), the filled reference and its
        namespace."""
        step_ms = t.rng.choice(STEPS_MS)
        src = fill(REFERENCE, FIELDS=t.knobs.fields)
        return step_ms, src, run_python(src)

    def config(self, t: TaskBuilder, ns: dict, step_ms: int, vs_exact: str | None) -> str:
        for _ in range(1000):
            p = self.params(t.rng, t.knobs, step_ms)
            if self.ok(ns, p, t.knobs, step_ms, vs_exact):
                return self.text(p, t.knobs)
        raise FamilyError("rk4_oscillator_state: no robust configuration in 1000 draws")

    def fmt(self, k: Knobs) -> str:
        return ("`key=value` lines, in this order: " + ", ".join(FIELD_TEXT[f] for f in k.fields)
                + "; every value rounded to 6 decimals (`%.6f`, never `-0.000000`).")

    def program_case(self, t: TaskBuilder) -> None:
        k = t.knobs
        step_ms, src, ns = self.setup(t)
        texts = [self.config(t, ns, step_ms, None) for _ in range(10)]
        cases = [(text, ns["report"](text, step_ms)) for text in texts]
        t.say("I want a small simulator for the oscillators in our lab course. It reads one configuration on "
              "standard input: `key = value` lines (keys " + ", ".join(f"`{x}`" for x in ns["KEYS"])
              + "; a key that is absent is 0; `#` starts a comment). " + self.model(k))
        v = t.deliver(str(step_ms), WHAT)
        t.say(f"Output: {self.fmt(k)}")
        t.expect_program("The step is always the one given above: hard-code it.", cases, {"Python": src})
        t.solve(f'test -n "{v}"\nsed -i "s/@@STEP_MS@@/{v}/" /app/solution.py')

    def output_case(self, t: TaskBuilder) -> None:
        k = t.knobs
        step_ms, src, ns = self.setup(t)
        text = self.config(t, ns, step_ms, "relative" if t.partial_credit else "rounded")
        t.add_file("/app/sim/oscillator.cfg", text)
        t.say("The parameters of our oscillator are in `/app/sim/oscillator.cfg` (`key = value` lines). "
              + self.model(k))
        v = t.deliver(str(step_ms), WHAT)
        t.add_solution_file("rk4.py", src)
        if t.partial_credit:  # one number graded by its relative error, not report lines
            t.say("I need the position x at t = T.")
            t.solve(f'test -n "{v}"\nmkdir -p /app/out\npython3 /solution/rk4.py --x "{v}" < /app/sim/oscillator.cfg '
                    '> /app/out/x_T.txt')
            t.expect_number("/app/out/x_T.txt", ns["measure"](text, step_ms)["x_T"], REL_TOL,
                            "x(T), unrounded (at least 12 significant digits),")
            return
        t.say(f"Output format: {self.fmt(k)}")
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\npython3 /solution/rk4.py "{v}" < /app/sim/oscillator.cfg '
                '> /app/out/state.txt')
        t.expect_output("/app/out/state.txt", ns["report"](text, step_ms), "the final state (format above)")
