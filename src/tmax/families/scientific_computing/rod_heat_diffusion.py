"""One-dimensional heat conduction in a rod heated at one end, discretised by finite differences; the heater
temperature is delivered. Variants: `explicit` marches the forward-time centred-space scheme and reports
the final temperature profile, `implicit` does the same with backward Euler (a tridiagonal solve per
step, Thomas algorithm), `probe` finds when a thermocouple node first reaches a threshold, interpolated
between steps. Higher levels add a measured initial profile, an insulated far end (ghost node) and
convective loss to the surroundings."""

from __future__ import annotations

from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.unseen import unseen

REFERENCE = r'''
import sys

N = @N@  # intervals: nodes 0..N
DX = @DX@  # cm
DT = @DT@  # s
ALPHA = @ALPHA@  # cm^2/s
STEPS = @STEPS@
AMBIENT = @AMBIENT@  # K
INSULATED = @INSULATED@  # far end: zero gradient (ghost node T[N+1] = T[N-1]) instead of held at AMBIENT
LOSS = @LOSS@  # 1/s: convective loss rate towards AMBIENT
PROBE, THRESHOLD = @PROBE@, @THRESHOLD@
R = ALPHA * DT / DX ** 2


def start(initial, heater):
    """Nodes at t = 0: the given profile, with the boundary conditions applied."""
    T = list(initial)
    T[0] = heater
    if not INSULATED:
        T[N] = AMBIENT
    return T


def explicit_step(T):
    new = list(T)
    for i in range(1, N + 1 if INSULATED else N):
        right = T[i + 1] if i < N else T[N - 1]
        new[i] = T[i] + R * (T[i - 1] - 2 * T[i] + right) - LOSS * DT * (T[i] - AMBIENT)
    return new


def implicit_step(T):
    """Backward Euler: (1 + 2R + LOSS*DT) T_i - R T_(i-1) - R T_(i+1) = T_i(old) + LOSS*DT*AMBIENT."""
    m = N if INSULATED else N - 1  # unknowns: nodes 1..m
    a, b, c, d = [0.0] * m, [0.0] * m, [0.0] * m, [0.0] * m
    for k in range(m):
        i = k + 1
        a[k], b[k], c[k] = -R, 1 + 2 * R + LOSS * DT, -R
        d[k] = T[i] + LOSS * DT * AMBIENT
        if i == 1:
            d[k] += R * T[0]
            a[k] = 0.0
        if i == N:  # insulated end: the ghost node mirrors node N-1
            a[k], c[k] = -2 * R, 0.0
        elif i == m:
            d[k] += R * T[N]
            c[k] = 0.0
    for k in range(1, m):  # Thomas algorithm: forward sweep, back substitution
        w = a[k] / b[k - 1]
        b[k] -= w * c[k - 1]
        d[k] -= w * d[k - 1]
    x = [0.0] * m
    x[m - 1] = d[m - 1] / b[m - 1]
    for k in range(m - 2, -1, -1):
        x[k] = (d[k] - c[k] * x[k + 1]) / b[k]
    return [T[0]] + x + ([] if INSULATED else [T[N]])


def run(initial, heater, step):
    T = start(initial, heater)
    for _ in range(STEPS):
        T = step(T)
    return T


def crossing(initial, heater):
    """Time the probe node first reaches THRESHOLD (explicit scheme), linear between steps; None if never."""
    T = start(initial, heater)
    for n in range(1, STEPS + 1):
        new = explicit_step(T)
        if new[PROBE] >= THRESHOLD > T[PROBE]:
            return DT * (n - 1 + (THRESHOLD - T[PROBE]) / (new[PROBE] - T[PROBE]))
        T = new
    return None


def profile(T):
    return "".join("%.2f %.4f\n" % (i * DX, v) for i, v in enumerate(T))


def initial_of(text):
    return [float(line.split(",")[1]) for line in text.splitlines()[1:] if line.strip()]


if __name__ == "__main__":  # HEATER_mK explicit|implicit|probe [--raw] < initial.csv
    heater, mode = int(sys.argv[1]) / 1000, sys.argv[2]
    init = initial_of(sys.stdin.read())
    if mode == "probe":
        t = crossing(init, heater)
        print(repr(t) if "--raw" in sys.argv else "t_cross=%.3f" % t)
    else:
        T = run(init, heater, explicit_step if mode == "explicit" else implicit_step)
        sys.stdout.write(repr(T[N // 2]) + "\n" if "--raw" in sys.argv else profile(T))
'''


def _safe(fmt: str, x: float) -> bool:
    """The printed text does not change when x moves by a part in 10^9 (no float noise can flip it)."""
    return fmt % (x * (1 + 1e-9)) == fmt % (x * (1 - 1e-9))


@dataclass(frozen=True)
class Knobs:
    nodes: int  # intervals N (nodes 0..N)
    steps: int  # time steps (explicit, implicit); the probe runs up to 3x as many
    measured: bool  # a measured, non-uniform initial profile
    insulated: bool  # far end insulated
    loss: bool  # convective loss to the surroundings


@register
class RodHeatDiffusion(Family):
    name = "rod_heat_diffusion"
    domain = "scientific_computing"
    skill_types = ("Simulation", "Numerical Methods")
    primitive_skills = ("finite difference schemes", "tridiagonal solves",
                        "boundary condition handling", "linear interpolation", "floating-point rounding control")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("explicit", "implicit", "probe")
    levels = {0: Knobs(nodes=5, steps=3, measured=False, insulated=False, loss=False),
              1: Knobs(nodes=10, steps=40, measured=False, insulated=False, loss=False),
              2: Knobs(nodes=20, steps=150, measured=True, insulated=False, loss=False),
              3: Knobs(nodes=30, steps=300, measured=True, insulated=True, loss=False),
              4: Knobs(nodes=40, steps=500, measured=True, insulated=True, loss=True)}

    def output_case(self, t: TaskBuilder) -> None:
        k, rng, variant = t.knobs, t.rng, t.variant
        for _ in range(40):
            length = rng.choice([10.0, 12.0, 15.0, 20.0, 25.0])
            dx = length / k.nodes
            alpha = rng.choice([0.11, 0.23, 0.45, 0.97, 1.11])  # cm^2/s: steel .. copper
            r = rng.uniform(0.2, 0.45)
            dt = round(r * dx * dx / alpha, 3)
            ambient = round(rng.uniform(288, 298), 2)
            loss = round(rng.uniform(0.001, 0.01), 4) if k.loss else 0.0
            init = [ambient + (round(rng.uniform(-2, 6) * (1 - i / k.nodes), 3) if k.measured else 0.0)
                    for i in range(k.nodes + 1)]
            text = "x_cm,T_K\n" + "".join(f"{i * dx:.2f},{v:.3f}\n" for i, v in enumerate(init))
            init = [float(f"{v:.3f}") for v in init]
            t.add_file("/app/rod/initial.csv", text)
            # The heater temperature in mK moves every node: no number the agent can read lies within 3 K.
            heater_mk = int(unseen(t, lambda: str(rng.randrange(330_000, 420_000)), near=3000))
            heater = heater_mk / 1000
            steps = k.steps * (3 if variant == "probe" else 1)
            probe = max(1, k.nodes // 3)
            values = dict(N=k.nodes, DX=dx, DT=dt, ALPHA=alpha, STEPS=steps, AMBIENT=ambient, INSULATED=k.insulated,
                          LOSS=loss, PROBE=probe, THRESHOLD=0.0)
            base = run_python(fill(REFERENCE, **values))
            T_end = base["run"](init, heater, base["explicit_step"])
            # the threshold: two thirds of the way from the probe's start to where it stands at the end
            threshold = round(init[probe] + (T_end[probe] - init[probe]) * rng.uniform(0.5, 0.8), 2)
            src = fill(REFERENCE, **{**values, "THRESHOLD": threshold})
            ns = run_python(src)
            if variant == "probe":
                x = ns["crossing"](init, heater)
                ok = x is not None and _safe("%.3f", x)
                raw, text_out = x, f"t_cross={x:.3f}\n" if x is not None else ""
            else:
                T = ns["run"](init, heater, ns[f"{variant}_step"])
                ok = all(_safe("%.4f", v) for v in T)
                raw, text_out = T[k.nodes // 2], ns["profile"](T)
            if ok:
                break
        else:
            raise FamilyError("rod_heat_diffusion: no configuration with safely rounded results in 40 draws")
        far = ("the far end (node N) is insulated: zero gradient, handled with a ghost node T[N+1] = T[N-1]"
               if k.insulated else f"the far end (node N) is held at the ambient {ambient} K")
        t.say(f"We model a {length:g} cm rod heated at one end, discretised into N = {k.nodes} equal intervals (nodes "
              f"0..N, dx = {dx:g} cm), thermal diffusivity {alpha} cm^2/s, time step dt = {dt} s. "
              f"`/app/rod/initial.csv` gives the temperature of every node at t = 0 (`x_cm,T_K`). Node 0 is held at "
              f"the heater temperature from t = 0 on, given below in millikelvin; {far}.")
        v = t.deliver(str(heater_mk), "the heater temperature in mK")
        lossy = (f" - {loss} * dt * (T[i] - {ambient})" if k.loss else "")
        scheme = {"explicit": f"Use the explicit scheme T'[i] = T[i] + r * (T[i-1] - 2*T[i] + T[i+1]){lossy}, "
                              "r = diffusivity * dt / dx^2, for every node not held fixed",
                  "probe": f"Use the explicit scheme T'[i] = T[i] + r * (T[i-1] - 2*T[i] + T[i+1]){lossy}, "
                           "r = diffusivity * dt / dx^2, for every node not held fixed",
                  "implicit": "Use backward Euler (fully implicit): solve (1 + 2r" + (f" + {loss} * dt" if k.loss
                                                                                    else "")
                              + ") T'[i] - r T'[i-1] - r T'[i+1] = T[i]" + (f" + {loss} * dt * {ambient}" if k.loss
                                                                            else "")
                              + ", r = diffusivity * dt / dx^2, for the new temperatures T' of every node not held "
                              "fixed at each step (a tridiagonal system)"}[variant]
        t.say(scheme + ("; convective loss to the surroundings is the last term." if k.loss else "."))
        out = "/app/out/rod.txt"
        if variant == "probe":
            t.say(f"A thermocouple sits at node {probe}. Step forward (at most {steps} steps) until its temperature "
                  f"first reaches {threshold} K; the crossing time is interpolated linearly between the step before "
                  "and the step at which it is reached. "
                  + ("Write only that time in seconds, unrounded, as a plain number." if t.partial_credit else
                     "Write one line `t_cross=<seconds, %.3f>`."))
        elif t.partial_credit:
            t.say(f"Advance {steps} steps. Write only the final temperature of node {k.nodes // 2} in K, unrounded, as "
                  "a plain number.")
        else:
            t.say(f"Advance {steps} steps and write the final profile: one line per node, `<x in cm, %.2f> <T in K, "
                  "%.4f>` (printf formats), node 0 first.")
        t.add_solution_file("rod.py", src)
        raw_flag = " --raw" if t.partial_credit else ""
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\npython3 /solution/rod.py "{v}" {variant}{raw_flag} '
                f"< /app/rod/initial.csv > {out}")
        if t.partial_credit:
            t.expect_number(out, raw, 1e-9, "the time" if variant == "probe" else "the temperature")
        else:
            t.expect_output(out, text_out, "the crossing time" if variant == "probe" else "the final profile")
