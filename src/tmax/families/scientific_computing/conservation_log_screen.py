"""Which simulation runs broke the physics? Logs of a 2-D system of colliding particles must conserve total
momentum and kinetic energy within a tolerance (delivered separately, in ppb); corrupted runs drift, kick a
particle, skip or repeat time stamps, contain NaN/inf, declare a non-positive mass or lose rows. As a
screening program it must reject every corrupted log and keep every sound one. Some runs sit just inside
and just outside the tolerance, and a margin report gives each sound run's share of it, so only the exact
tolerance gives the right answer. Variants: screen (momentum and energy drift from step 0), step_jumps (the
largest change between consecutive steps: a glitch screen that lets slow drift pass) and com_drift (momentum
checked from the positions: the centre of mass must move uniformly)."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.unseen import hidden

REFERENCE = r'''
import math
import sys

TOL_PPB = "@@TOL_PPB@@"  # the oracle writes the delivered tolerance here
RULES = @RULES@
DRIFTS = [r for r in RULES if r in ("momentum", "energy")]


def parse(text):
    masses, dt, rows = None, None, []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("#"):
            key, _, value = line[1:].partition(":")
            if key.strip() == "masses":
                masses = [float(v) for v in value.split()]
            elif key.strip() == "dt":
                dt = float(value)
        elif line and not line.startswith("step"):
            f = line.split(",")
            rows.append((int(f[0]), float(f[1]), int(f[2]), [float(v) for v in f[3:7]]))
    return masses, dt, rows


def check(text, tol_ppb=None):
    """(first failing rule or None, momentum drift, energy drift) -- drifts relative, None if not reached."""
    tol = int(TOL_PPB if tol_ppb is None else tol_ppb) * 1e-9
    masses, dt, rows = parse(text)
    n = len(masses)
    steps = {}
    for s, t, i, vals in rows:
        steps.setdefault(s, []).append((i, t, vals))
    if "rows" in RULES:
        if sorted(steps) != list(range(len(steps))):
            return "rows", None, None
        for s in steps:
            if sorted(i for i, _, _ in steps[s]) != list(range(n)):
                return "rows", None, None
    if "time" in RULES:
        for s in steps:
            if any(abs(t - s * dt) > 1e-6 for _, t, _ in steps[s]):
                return "time", None, None
    if "nonfinite" in RULES:
        if any(not math.isfinite(v) for _, _, _, vals in rows for v in vals):
            return "nonfinite", None, None
    if "mass" in RULES:
        if any(m <= 0 for m in masses):
            return "mass", None, None
    series = []
    for s in sorted(steps):
        by_id = {i: vals for i, _, vals in steps[s]}
        px = sum(masses[i] * by_id[i][2] for i in range(n))
        py = sum(masses[i] * by_id[i][3] for i in range(n))
        e = sum(0.5 * masses[i] * (by_id[i][2] ** 2 + by_id[i][3] ** 2) for i in range(n))
        scale = sum(masses[i] * math.hypot(by_id[i][2], by_id[i][3]) for i in range(n))
        series.append((px, py, e, scale))
    px0, py0, e0, s0 = series[0]
    mom = max(math.hypot(px - px0, py - py0) for px, py, _, _ in series) / s0
    en = max(abs(e - e0) for _, _, e, _ in series) / e0
    if "momentum" in RULES and mom > tol:
        return "momentum", mom, en
    if "energy" in RULES and en > tol:
        return "energy", mom, en
    return None, mom, en


def verdict(text, tol_ppb=None):
    return check(text, tol_ppb)[0]


def usage(text, tol_ppb=None):
    """The largest checked drift of a sound run as a share of the tolerance."""
    _, mom, en = check(text, tol_ppb)
    drift = max({"momentum": mom, "energy": en}[r] for r in DRIFTS)
    return drift / (int(TOL_PPB if tol_ppb is None else tol_ppb) * 1e-9)


def report(named, tol_ppb=None, mode="reasons"):
    """One line per run, sorted by name: a sound run with its share of the tolerance; a rejected one with
    its reason (mode "reasons") or as `rejected` (mode "names"); mode "margins" lists the sound runs only."""
    out = []
    for name in sorted(named):
        why = verdict(named[name], tol_ppb)
        if not why:
            share = "%.4f" % usage(named[name], tol_ppb)
            out.append("%s %s\n" % (name, share) if mode == "margins" else "%s ok %s\n" % (name, share))
        elif mode != "margins":
            out.append("%s %s\n" % (name, why if mode == "reasons" else "rejected"))
    return "".join(out)


if __name__ == "__main__":
    args = sys.argv[1:]
    if args and args[0] == "--dir":
        import os
        files = {f: open(os.path.join(args[1], f)).read() for f in os.listdir(args[1]) if f.endswith(".csv")}
        sys.stdout.write(report(files, int(args[2]), args[3]))
    else:
        sys.exit(1 if verdict(sys.stdin.read()) else 0)
'''

C_REFERENCE = r'''
/* Screen one particle-run log (stdin): exit 0 if sound, 1 if it fails a check (see the task statement). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOL_PPB @@TOL_PPB@@
#define R_ROWS @R_ROWS@
#define R_TIME @R_TIME@
#define R_NONFINITE @R_NONFINITE@
#define R_MASS @R_MASS@
#define R_MOMENTUM @R_MOMENTUM@
#define R_ENERGY @R_ENERGY@

typedef struct { long step; double t; long id; double v[4]; } Row;

int main(void) {
    double tol = TOL_PPB * 1e-9, dt = 0, masses[64];
    int n = 0;
    size_t cap = 256, nrows = 0, lcap = 0;
    Row *rows = malloc(cap * sizeof(Row));
    char *line = NULL;
    while (getline(&line, &lcap, stdin) != -1) {
        char *p = line;
        while (*p == ' ' || *p == '\t') p++;
        if (*p == '#') {
            p++;
            while (*p == ' ') p++;
            if (strncmp(p, "masses", 6) == 0 && strchr(p, ':')) {
                char *q = strchr(p, ':') + 1, *end;
                for (;;) {
                    double m = strtod(q, &end);
                    if (end == q || n >= 64) break;
                    masses[n++] = m;
                    q = end;
                }
            } else if (strncmp(p, "dt", 2) == 0 && strchr(p, ':')) {
                dt = strtod(strchr(p, ':') + 1, NULL);
            }
            continue;
        }
        if (*p == 0 || *p == '\n' || *p == '\r' || strncmp(p, "step", 4) == 0) continue;
        Row r;
        char *f = p, *end;
        r.step = strtol(f, &end, 10); f = end + 1;
        r.t = strtod(f, &end); f = end + 1;
        r.id = strtol(f, &end, 10); f = end + 1;
        for (int k = 0; k < 4; k++) { r.v[k] = strtod(f, &end); f = end + 1; }
        if (nrows == cap) rows = realloc(rows, (cap *= 2) * sizeof(Row));
        rows[nrows++] = r;
    }
    long maxs = -1;
    for (size_t i = 0; i < nrows; i++) if (rows[i].step > maxs) maxs = rows[i].step;
    long nsteps = maxs + 1;
    /* by_step[s * n + id]: the last row of (step, id), as the checks read them; count of rows per (step, id) */
    Row **by = calloc((size_t)(nsteps > 0 ? nsteps : 1) * (n > 0 ? n : 1), sizeof(Row *));
    int *cnt = calloc((size_t)(nsteps > 0 ? nsteps : 1) * (n > 0 ? n : 1), sizeof(int));
    int *seen = calloc((size_t)(nsteps > 0 ? nsteps : 1), sizeof(int));
    int rows_bad = 0;
    for (size_t i = 0; i < nrows; i++) {
        Row *r = &rows[i];
        if (r->step < 0 || r->id < 0 || r->id >= n) { rows_bad = 1; continue; }
        seen[r->step] = 1;
        cnt[r->step * n + r->id]++;
        by[r->step * n + r->id] = r;
    }
    for (long s = 0; s < nsteps; s++) {
        if (!seen[s]) rows_bad = 1;
        else for (int i = 0; i < n; i++) if (cnt[s * n + i] != 1) rows_bad = 1;
    }
    if (R_ROWS && rows_bad) return 1;
    if (R_TIME)
        for (size_t i = 0; i < nrows; i++) if (fabs(rows[i].t - rows[i].step * dt) > 1e-6) return 1;
    if (R_NONFINITE)
        for (size_t i = 0; i < nrows; i++) for (int k = 0; k < 4; k++) if (!isfinite(rows[i].v[k])) return 1;
    if (R_MASS)
        for (int i = 0; i < n; i++) if (masses[i] <= 0) return 1;
    double px0 = 0, py0 = 0, e0 = 0, s0 = 0, mom = 0, en = 0;
    for (long s = 0; s < nsteps; s++) {
        if (!seen[s]) continue;
        double px = 0, py = 0, e = 0, sc = 0;
        for (int i = 0; i < n; i++) {
            Row *r = by[s * n + i];
            if (!r) return 1;
            px += masses[i] * r->v[2];
            py += masses[i] * r->v[3];
            e += 0.5 * masses[i] * (r->v[2] * r->v[2] + r->v[3] * r->v[3]);
            sc += masses[i] * hypot(r->v[2], r->v[3]);
        }
        if (s == 0) { px0 = px; py0 = py; e0 = e; s0 = sc; }
        double dm = hypot(px - px0, py - py0), de = fabs(e - e0);
        if (dm > mom) mom = dm;
        if (de > en) en = de;
    }
    if (R_MOMENTUM && mom / s0 > tol) return 1;
    if (R_ENERGY && en / e0 > tol) return 1;
    return 0;
}
'''

RULE_TEXT = {
    "rows": "`rows`: the steps present must be exactly 0, 1, ..., S with no gap, and every step must have exactly one "
            "row for each particle id 0 .. P-1 (P = the number of masses); otherwise the run is broken",
    "time": "`time`: every row's `t` must equal step * dt within 1e-6",
    "nonfinite": "`nonfinite`: every x, y, vx, vy must be a finite number (`nan`, `inf`, `-inf` are not)",
    "mass": "`mass`: every mass must be strictly positive",
    "momentum": "`momentum`: with P_s = sum m_i * (vx_i, vy_i) the total momentum at step s, the largest "
                "|P_s - P_0| (Euclidean norm) over all steps, divided by sum m_i * |v_i| at step 0, must not exceed "
                "the tolerance",
    "energy": "`energy`: with E_s = sum m_i * (vx_i^2 + vy_i^2) / 2 the kinetic energy at step s, the largest "
              "|E_s - E_0| over all steps, divided by E_0, must not exceed the tolerance",
}
ORDER = ("rows", "time", "nonfinite", "mass", "momentum", "energy")

# The other variants measure the drifts differently; their programs are screen's with the drift block swapped.
# step_jumps: the largest change between consecutive steps (a glitch), not the drift from step 0.
JUMPS_PY = (("    mom = max(math.hypot(px - px0, py - py0) for px, py, _, _ in series) / s0\n"
             "    en = max(abs(e - e0) for _, _, e, _ in series) / e0\n",
             "    pairs = list(zip(series, series[1:]))  # consecutive steps\n"
             "    mom = max(math.hypot(b[0] - a[0], b[1] - a[1]) for a, b in pairs) / s0\n"
             "    en = max(abs(b[2] - a[2]) for a, b in pairs) / e0\n"),)
JUMPS_C = (("double px0 = 0, py0 = 0, e0 = 0, s0 = 0, mom = 0, en = 0;",
            "double px0 = 0, py0 = 0, e0 = 0, s0 = 0, mom = 0, en = 0, pxp = 0, pyp = 0, ep = 0;"),
           ("double dm = hypot(px - px0, py - py0), de = fabs(e - e0);",
            "double dm = s ? hypot(px - pxp, py - pyp) : 0, de = s ? fabs(e - ep) : 0;\n"
            "        pxp = px; pyp = py; ep = e;"))
# com_drift: momentum from the positions: the centre of mass must move uniformly.
COM_PY = (("        series.append((px, py, e, scale))\n",
           "        cx = sum(masses[i] * by_id[i][0] for i in range(n)) / sum(masses)\n"
           "        cy = sum(masses[i] * by_id[i][1] for i in range(n)) / sum(masses)\n"
           "        series.append((px, py, e, scale, cx, cy))\n"),
          ("    px0, py0, e0, s0 = series[0]\n"
           "    mom = max(math.hypot(px - px0, py - py0) for px, py, _, _ in series) / s0\n"
           "    en = max(abs(e - e0) for _, _, e, _ in series) / e0\n",
           "    px0, py0, e0, s0, x0, y0 = series[0]\n"
           "    x1, y1 = series[1][4:]\n"
           "    mom = max(math.hypot(r[4] - x0 - s * (x1 - x0), r[5] - y0 - s * (y1 - y0)) / (s * dt * s0 / sum(masses))\n"
           "              for s, r in enumerate(series) if s)\n"
           "    en = max(abs(r[2] - e0) for r in series) / e0\n"))
COM_C = (("double px0 = 0, py0 = 0, e0 = 0, s0 = 0, mom = 0, en = 0;",
          "double px0 = 0, py0 = 0, e0 = 0, s0 = 0, mom = 0, en = 0, x0 = 0, y0 = 0, x1 = 0, y1 = 0;"),
         ("double px = 0, py = 0, e = 0, sc = 0;", "double px = 0, py = 0, e = 0, sc = 0, cx = 0, cy = 0, mt = 0;"),
         ("            sc += masses[i] * hypot(r->v[2], r->v[3]);\n",
          "            sc += masses[i] * hypot(r->v[2], r->v[3]);\n"
          "            cx += masses[i] * r->v[0];\n"
          "            cy += masses[i] * r->v[1];\n"
          "            mt += masses[i];\n"),
         ("double dm = hypot(px - px0, py - py0), de = fabs(e - e0);",
          "cx /= mt;\n"
          "        cy /= mt;\n"
          "        if (s == 0) { x0 = cx; y0 = cy; }\n"
          "        if (s == 1) { x1 = cx; y1 = cy; }\n"
          "        double dm = s ? hypot(cx - x0 - s * (x1 - x0), cy - y0 - s * (y1 - y0)) / (s * dt * s0 / mt) : 0,\n"
          "               de = fabs(e - e0);"),
         ("if (R_MOMENTUM && mom / s0 > tol)", "if (R_MOMENTUM && mom > tol)"))
SWAPS = {"screen": ((), ()), "step_jumps": (JUMPS_PY, JUMPS_C), "com_drift": (COM_PY, COM_C)}


def reference(variant: str) -> tuple[str, str]:
    """The (Python, C) reference templates of a variant (screen's are the texts above, unchanged)."""
    out = []
    for src, swaps in zip((REFERENCE, C_REFERENCE), SWAPS[variant]):
        for old, new in swaps:
            if src.count(old) != 1:
                raise FamilyError(f"conservation_log_screen: {variant}'s swap {old[:40]!r} does not fit")
            src = src.replace(old, new)
        out.append(src)
    return out[0], out[1]


# The variants' own wording of the drift checks (screen's is RULE_TEXT's).
VARIANT_RULES = {
    "step_jumps": {
        "momentum": "`momentum`: with P_s = sum m_i * (vx_i, vy_i) the total momentum at step s, the largest jump "
                    "|P_s - P_(s-1)| (Euclidean norm) between consecutive steps, divided by sum m_i * |v_i| at step 0, "
                    "must not exceed the tolerance",
        "energy": "`energy`: with E_s = sum m_i * (vx_i^2 + vy_i^2) / 2 the kinetic energy at step s, the largest jump "
                  "|E_s - E_(s-1)| between consecutive steps, divided by E_0, must not exceed the tolerance (a slow "
                  "drift over many steps is fine; a jump at one step is not)"},
    "com_drift": {
        "momentum": "`momentum`: momentum is checked from the positions: the centre of mass must move uniformly. With "
                    "R_s = sum m_i * (x_i, y_i) / M the centre of mass at step s (M = sum m_i) and S_0 = sum m_i * "
                    "|v_i| at step 0, the largest |R_s - R_0 - s * (R_1 - R_0)| / (s * dt * S_0 / M) (Euclidean "
                    "norm) over the steps s >= 1 must not exceed the tolerance"},
}
# Level 0's definition of a run's drift, by variant.
ATOMIC_DRIFT = {
    "screen": "With E_s = sum of m_id * (vx^2 + vy^2) / 2 over the rows of step s, a run's drift is the largest "
              "|E_s - E_0| / E_0",
    "step_jumps": "With E_s = sum of m_id * (vx^2 + vy^2) / 2 over the rows of step s, a run's drift is the largest "
                  "jump between consecutive steps, |E_s - E_(s-1)| / E_0",
    "com_drift": "With R_s = sum of m_id * (x, y) / M over the rows of step s (the centre of mass; M the total mass) "
                 "and S_0 = sum of m_id * sqrt(vx^2 + vy^2) over the rows of step 0, a run's drift is the largest "
                 "|R_s - R_0 - s * (R_1 - R_0)| / (s * dt * S_0 / M) over the steps s >= 1 (Euclidean norm)",
}
# Drifts (in tolerances) of the runs planted next to the tolerance: a tolerance more than 0.15% off moves one
# of them across it. Still far above any floating-point disagreement between correct programs.
NEAR_OK, NEAR_BAD = (0.9985, 0.9994), (1.0006, 1.0015)
# The faults of the planted runs, by variant (com_drift's just-sound one is a kick its check barely lets pass).
NEAR_OK_FAULT = {"screen": None, "step_jumps": None, "com_drift": "momentum"}
NEAR_BAD_FAULT = {"screen": "energy", "step_jumps": "energy", "com_drift": "momentum"}


def fmt_row(s: int, dt: float, i: int, p: list[float], v: list[float]) -> list:
    return [s, f"{s * dt:.4f}", i, f"{p[0]:.6f}", f"{p[1]:.6f}", f"{v[0]:.6f}", f"{v[1]:.6f}"]


def simulate(rng, tol: float, fault: str | None, small: bool, amp: float | None = None) -> str:
    """A 2-D run with elastic collisions (momentum and energy conserved), a little energy noise below the
    tolerance, and at most one planted fault. ``amp`` (in tolerances) sets the noise of a sound run or the
    kick of a momentum or energy fault instead of a random size; the random draws stay the same, so a
    run can be tuned to a given drift by varying it alone."""
    n = rng.randint(2, 3 if small else 4)
    masses = [round(rng.uniform(0.5, 3.0), 3) for _ in range(n)]
    dt = rng.choice([0.005, 0.01, 0.02, 0.025])
    steps = rng.randint(8, 14) if small else rng.randint(15, 30)
    pos = [[rng.uniform(-5, 5), rng.uniform(-5, 5)] for _ in range(n)]
    vel = [[rng.uniform(-2, 2), rng.uniform(-2, 2)] for _ in range(n)]
    fault_step = rng.randint(2, steps)
    noise = rng.uniform(0.6, 1.5) * tol  # scale of the energy wobble of a sound run (relative)
    if amp is not None and fault is None:
        noise = amp * tol
    rows = []
    for s in range(steps + 1):
        if s:
            for i in range(n):
                pos[i][0] += vel[i][0] * dt
                pos[i][1] += vel[i][1] * dt
            if rng.random() < 0.35:  # an elastic collision along a random normal
                a, b = rng.sample(range(n), 2)
                ang = rng.uniform(0, 2 * math.pi)
                nx, ny = math.cos(ang), math.sin(ang)
                rel = (vel[a][0] - vel[b][0]) * nx + (vel[a][1] - vel[b][1]) * ny
                ma, mb = masses[a], masses[b]
                for c, (w, sign) in enumerate(((2 * mb / (ma + mb), -1), (2 * ma / (ma + mb), 1))):
                    k = (a, b)[c]
                    vel[k][0] += sign * w * rel * nx
                    vel[k][1] += sign * w * rel * ny
            if rng.random() < 0.3:  # integration noise: rescale about the centre of mass (momentum kept)
                _scale_internal(vel, masses, 1 + rng.uniform(-0.5, 0.5) * noise / 4)
            if fault == "energy" and s == fault_step:
                sign, size = rng.choice([-1, 1]), rng.uniform(1.5, 10)
                _scale_internal(vel, masses, 1 + sign * (size if amp is None else amp) * tol)
            if fault == "momentum" and s == fault_step:
                i = rng.randrange(n)
                s0 = sum(m * math.hypot(*v) for m, v in zip(masses, vel))
                size = rng.uniform(2, 12)
                want = (size if amp is None else amp) * tol * s0 / (masses[i] * math.hypot(*vel[i]))
                th = 2 * math.asin(min(1.0, want / 2)) * rng.choice([-1, 1])
                c, sn = math.cos(th), math.sin(th)
                vel[i] = [vel[i][0] * c - vel[i][1] * sn, vel[i][0] * sn + vel[i][1] * c]
        for i in range(n):
            rows.append(fmt_row(s, dt, i, pos[i], vel[i]))
    if fault == "time":
        bad = [r for r in rows if r[0] == fault_step]
        new_t = rng.choice([f"{(fault_step - 1) * dt:.4f}", f"{(fault_step + 0.5) * dt:.4f}",
                            f"{(fault_step - 2) * dt:.4f}"])
        for r in bad:
            r[1] = new_t
    if fault == "nonfinite":
        r = rng.choice(rows[n:])
        r[rng.randrange(3, 7)] = rng.choice(["nan", "inf", "-inf", "NaN"])
    if fault == "mass":
        masses[rng.randrange(n)] = rng.choice([0.0, -round(rng.uniform(0.5, 3.0), 3)])
    if fault == "rows":
        j = rng.randrange(n, len(rows))
        if rng.random() < 0.5:
            del rows[j]
        else:
            rows.insert(j, list(rows[j]))
    head = f"# masses: {' '.join(f'{m:.3f}' for m in masses)}\n# dt: {dt:g}\nstep,t,id,x,y,vx,vy\n"
    return head + "".join(",".join(str(x) for x in r) + "\n" for r in rows)


def _scale_internal(vel: list[list[float]], masses: list[float], f: float) -> None:
    mt = sum(masses)
    cx = sum(m * v[0] for m, v in zip(masses, vel)) / mt
    cy = sum(m * v[1] for m, v in zip(masses, vel)) / mt
    for v in vel:
        v[0] = cx + f * (v[0] - cx)
        v[1] = cy + f * (v[1] - cy)


def share_ok(x: float) -> bool:
    """A margin that rounds the same in any correct program."""
    f = x * 10000
    return abs(f - math.floor(f) - 0.5) > 1e-3


@dataclass(frozen=True)
class Knobs:
    rules: tuple[str, ...]  # the checks applied (taken in ORDER)
    runs: int  # run logs to screen (output cases)
    reasons: bool  # a rejected run's line names its first failed check


WHAT = "the tolerance in ppb"


class Runs:
    """The run logs of one task for a tolerance (in ppb): sound runs kept well inside it, broken ones well
    outside, a few planted just inside and just outside. ``small``: the short logs of a corpus."""

    def __init__(self, t: TaskBuilder, ns: dict, tol_ppb: int, small: bool):
        self.rng, self.ns, self.small = t.rng, ns, small
        self.kicked = t.variant == "com_drift"  # its sound runs' centre of mass wobbles a little, as in practice
        self.tol_ppb, self.tol = tol_ppb, tol_ppb * 1e-9

    def check(self, text: str) -> tuple:
        return self.ns["check"](text, self.tol_ppb)

    def run(self, fault: str | None) -> str:
        tol = self.tol
        for _ in range(2000):
            if fault is None and self.kicked:
                text = simulate(self.rng, tol, "momentum", self.small, self.rng.uniform(0.3, 0.9))
            else:
                text = simulate(self.rng, tol, fault, self.small)
            why, mom, en = self.check(text)
            if why != fault:
                continue
            # keep sound quantities well inside the tolerance and broken ones well outside it
            if (mom is not None and (0.5 * tol < mom < 1.5 * tol)) or \
                    (en is not None and (0.5 * tol < en < 1.5 * tol)):
                continue
            # a sound run's margin is large enough that a tolerance 0.1% off moves its 4th decimal
            if fault is None:
                share = self.ns["usage"](text, self.tol_ppb)
                if not (share >= 0.2 and share_ok(share)):
                    continue
            return text
        raise FamilyError(f"conservation_log_screen: no clear-cut run with fault {fault} in 2000 draws")

    def tuned(self, fault: str | None, lo: float, hi: float, passes: bool = False) -> str:
        """A run whose drift (the energy's for a sound run, the fault's own otherwise) is lo..hi
        tolerances: the noise or kick size is bisected over the same random run. ``passes``: a fault kept
        just inside the tolerance, so the run is sound."""
        tol = self.tol
        for _ in range(200):
            seed = self.rng.getrandbits(64)

            def drift(amp: float) -> tuple[str, str | None, float, float]:
                text = simulate(random.Random(seed), tol, fault, self.small, amp)
                why, mom, en = self.check(text)
                if mom is None:
                    return text, why, 0.0, 0.0
                return text, why, (mom if fault == "momentum" else en) / tol, en / tol

            target, a, b = (lo + hi) / 2, 0.0, 1.0
            while b < 1e4 and drift(b)[2] <= target:
                a, b = b, 2 * b
            if b >= 1e4:
                continue
            for _ in range(80):
                m = (a + b) / 2
                text, why, d, en = drift(m)
                if lo <= d <= hi:
                    if why == (None if passes else fault) and share_ok(d) and (fault != "momentum" or en < 0.5):
                        return text
                    break
                a, b = (m, b) if d < target else (a, m)
        raise FamilyError(f"conservation_log_screen: no run with fault {fault} tuned to {lo}..{hi} tolerances")


@register
class ConservationLogScreen(Family):
    name = "conservation_log_screen"
    domain = "scientific_computing"
    skill_types = ("Experimental Data", "Simulation")
    primitive_skills = ("energy conservation checks", "momentum conservation checks", "tolerance-based comparison",
                        "measurement validation", "floating-point rounding control")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol", "adversarial_corpus")
    levels = {0: Knobs(rules=("energy",), runs=4, reasons=False),
              1: Knobs(rules=("energy",), runs=8, reasons=False),
              2: Knobs(rules=("momentum", "energy"), runs=12, reasons=True),
              3: Knobs(rules=("time", "nonfinite", "momentum", "energy"), runs=16, reasons=True),
              4: Knobs(rules=ORDER, runs=20, reasons=True)}
    programs = {"Python": REFERENCE, "C": C_REFERENCE}
    variants = ("screen", "step_jumps", "com_drift")

    def draw(self, t: TaskBuilder, make) -> tuple[int, object]:
        """The delivered tolerance and what ``make(tol_ppb)`` builds with it. The tolerance is a 7-digit
        count of ppb drawn clear of every number in what the agent sees (the logs have no run of more than
        6 digits). Runs planted just inside and just outside it, and the margin report, make any other
        candidate give a different answer."""
        for _ in range(20):
            tol_ppb = t.rng.randrange(1_100_000, 9_900_000)
            built, seen = make(tol_ppb)
            if hidden(t, tol_ppb, 0.05 * tol_ppb, *seen):
                return tol_ppb, built
        raise FamilyError("conservation_log_screen: every tolerance drawn shows in the task in 20 draws")

    def setup(self, t: TaskBuilder) -> tuple[list[str], str, dict]:
        """The checks in order, the filled reference and its namespace."""
        rules = [r for r in ORDER if r in t.knobs.rules]
        if t.variant == "com_drift" and "momentum" not in rules:  # its own check is the centre of mass's
            rules = ["momentum" if r == "energy" else r for r in rules]
        src = fill(reference(t.variant)[0], RULES=rules)
        return rules, src, run_python(src)

    def texts(self, rules: list[str], variant: str) -> tuple[str, str]:
        """(the log format, the checks) as the instruction states them."""
        desc = ("Each run log starts with two header lines, `# masses: m_0 m_1 ...` (one mass per particle) and "
                "`# dt: <seconds>`, then a CSV with header `step,t,id,x,y,vx,vy`: one row per particle per time step. "
                "The particles only interact through elastic collisions, so a sound run conserves total momentum and "
                "total kinetic energy up to small numerical noise. The tolerance is given below in parts per billion "
                "(ppb: the relative tolerance is that number divided by one billion).")
        checks = ("A run is rejected when it fails one of these checks" + (", taken in this order (the first one "
                  "it fails is its reason)" if len(rules) > 1 else "") + ": " + "; ".join({**RULE_TEXT, **VARIANT_RULES.get(variant, {})}[r] for r in rules)
                  + ".")
        return desc, checks

    def corpus_case(self, t: TaskBuilder) -> None:
        rules, src, ns = self.setup(t)

        def make(tol_ppb: int) -> tuple[dict, list[str]]:
            r = Runs(t, ns, tol_ppb, small=True)
            clean = [r.run(None) for _ in range(22)] + [r.tuned(NEAR_OK_FAULT[t.variant], *NEAR_OK, passes=True) for _ in range(2)]
            near = [f for f in ("energy", "momentum") if f in rules]
            malicious = [r.run(rules[i % len(rules)]) for i in range(24 - len(near))] + \
                [r.tuned(f, *NEAR_BAD) for f in near]
            samples = {}
            for i, fault in enumerate([None, None] + rules[:2], 1):
                verdict = "accepted" if fault is None else "rejected"
                samples[f"run{i}_{verdict}.csv"] = r.run(fault)
            return {"clean": clean, "malicious": malicious, "samples": samples}, list(samples.values())

        tol_ppb, built = self.draw(t, make)
        desc, checks = self.texts(rules, t.variant)
        for name, text in built["samples"].items():
            t.add_file(f"/app/samples/{name}", text)
        t.say("Our particle simulation code has been producing the odd corrupted run and we want a gate in the "
              "pipeline that refuses them before analysis. " + desc)
        v = t.deliver(str(tol_ppb), WHAT)
        t.say(checks + " A few past runs with their verdicts are in `/app/samples/`.")
        c_src = fill(reference(t.variant)[1], **{f"R_{r.upper()}": "1" if r in rules else "0" for r in ORDER})
        t.expect_classifier("Write that gate as a program (hard-code the tolerance): one run log arrives on "
                            "standard input.", built["clean"], built["malicious"], {"Python": src, "C": c_src})
        t.solve(f'test -n "{v}"\nfor f in /app/solution.*; do sed -i "s/@@TOL_PPB@@/{v}/" "$f"; done')

    def output_case(self, t: TaskBuilder) -> None:
        k = t.knobs
        rules, src, ns = self.setup(t)
        n_bad = max(2, k.runs // 3)
        kinds = [None] * (k.runs - n_bad) + [rules[i % len(rules)] for i in range(n_bad)]
        t.rng.shuffle(kinds)
        near_ok = t.rng.choice([i for i, f in enumerate(kinds) if f is None])
        near_bad = t.rng.choice([i for i, f in enumerate(kinds) if f == NEAR_BAD_FAULT[t.variant]])

        def make(tol_ppb: int) -> tuple[dict, list[str]]:
            r = Runs(t, ns, tol_ppb, small=t.level == 0)
            named = {}
            for i, fault in enumerate(kinds):
                name = f"run_{i + 1:02d}.csv"
                if i == near_ok:
                    named[name] = r.tuned(NEAR_OK_FAULT[t.variant], *NEAR_OK, passes=True)
                elif i == near_bad:
                    named[name] = r.tuned(NEAR_BAD_FAULT[t.variant], *NEAR_BAD)
                else:
                    named[name] = r.run(fault)
            return named, list(named.values())

        tol_ppb, named = self.draw(t, make)
        desc, checks = self.texts(rules, t.variant)
        for name, text in named.items():
            t.add_file(f"/app/runs/{name}", text)
        if t.level == 0:
            self.atomic(t, src, ns, tol_ppb, named)
            return
        t.say(f"The last batch of our particle simulation wrote {k.runs} run logs to `/app/runs/`. " + desc)
        v = t.deliver(str(tol_ppb), WHAT)
        t.say(checks)
        drifts = [r for r in rules if r in ("momentum", "energy")]
        # Every sound run is reported with its share of the tolerance, so the answer needs the exact
        # tolerance, not just a value somewhere between the drifts of the sound and the broken runs.
        share = ("the share of the tolerance it used: the larger of its momentum and energy drifts (the quantities "
                 "compared with the tolerance above)" if len(drifts) > 1 else "the share of the tolerance it used: "
                 f"its {drifts[0]} drift (the quantity compared with the tolerance above)") + \
            " divided by the tolerance, rounded to 4 decimals"
        if t.partial_credit:  # rejected runs' lines would not depend on the tolerance
            mode, out = "margins", "/app/out/margins.txt"
            fmt = ("one line per run that passes every check, sorted by file name: the file name (e.g. "
                   f"`run_07.csv`), a space, and {share}. Rejected runs are not listed.")
            what_out = "the margin report of the sound runs (format above)"
        else:
            mode, out = ("reasons" if k.reasons else "names"), "/app/out/screen.txt"
            reject = ("the reason (the name of the first check it fails, e.g. `" + rules[-1] + "`)" if k.reasons
                      else "the word `rejected`")
            fmt = ("one line per run, sorted by file name: the file name (e.g. `run_07.csv`), a space, then for a "
                   f"sound run `ok`, a space and {share}; for a rejected run {reject}.")
            what_out = "the screening report (format above)"
        t.say(f"Output format: {fmt}")
        t.add_solution_file("screen.py", src)
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\npython3 /solution/screen.py --dir /app/runs "{v}" {mode} > {out}')
        t.expect_output(out, ns["report"](named, tol_ppb, mode), what_out)

    def atomic(self, t: TaskBuilder, src: str, ns: dict, tol_ppb: int, named: dict) -> None:
        """Level 0: the energy drift of each log (one awk pass per log); the runs planted just inside and just
        outside the tolerance still need the exact tolerance."""
        t.say(f"Our particle simulation wrote {len(named)} run logs to `/app/runs/`. Each starts with "
              "`# masses: m_0 m_1 ...` (one mass per particle id) and `# dt: ...`, then CSV rows "
              f"`step,t,id,x,y,vx,vy`. {ATOMIC_DRIFT[t.variant]}; it is rejected when that exceeds the tolerance, "
              "given in ppb (divide by one billion).")
        v = t.deliver(str(tol_ppb), WHAT)
        if t.partial_credit:  # a list of rejected names would score partly without the tolerance
            mode, out = "margins", "/app/out/margins.txt"
            t.say("For each run that is not rejected, sorted by file name, write a line to `/app/out/margins.txt`: the "
                  "file name (e.g. `run_03.csv`), a space, and its drift divided by the tolerance, rounded to 4 "
                  "decimals.")
            truth, pick = ns["report"](named, tol_ppb, mode), ""
        else:
            mode, out = "names", "/app/out/rejected.txt"
            t.say(f"Write the file names of the rejected runs (e.g. `run_03.csv`), one per line, sorted, to `{out}`.")
            truth = "".join(f"{name}\n" for name in sorted(named) if ns["verdict"](named[name], tol_ppb))
            pick = ' | awk \'$2 == "rejected" {print $1}\''
        t.add_solution_file("screen.py", src)
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\npython3 /solution/screen.py --dir /app/runs "{v}" {mode}{pick} '
                f'> {out}')
        t.expect_output(out, truth, "the rejected runs" if mode == "names" else "the margin report")
