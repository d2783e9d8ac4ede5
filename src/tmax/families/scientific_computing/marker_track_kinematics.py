"""Velocities and accelerations from a motion-capture marker track by finite differences. The log numbers
its frames but holds no times: the camera's frame period is delivered separately. Variants: `velocity`
differentiates the positions (central differences, one-sided at the ends), `acceleration` takes the
second derivative at interior frames, `peak` reports when the marker was fastest and its mean speed.
Higher levels add a second coordinate, dropped frames (uneven spacing: the non-uniform difference
formulas), occluded (NaN) and repeated rows, and several markers in one log."""

from __future__ import annotations

import math
from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.unseen import unseen

REFERENCE = r'''
import math
import sys

MARKER = @MARKER@  # None: the log has no marker column
AXES = @AXES@  # coordinate columns


def track(text):
    """[(frame, (coords in m))] in frame order: the first row of each frame, NaN rows dropped."""
    lines = [ln.split(",") for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]
    head, seen, out = [h.strip() for h in lines[0]], set(), []
    for r in lines[1:]:
        d = dict(zip(head, (c.strip() for c in r)))
        if MARKER is not None and d["marker"] != MARKER:
            continue
        f = int(d["frame"])
        if f in seen:
            continue
        seen.add(f)
        if all(d[a] != "NaN" for a in AXES):
            out.append((f, tuple(float(d[a]) / 1000 for a in AXES)))
    return sorted(out)


def velocity(text, dt):
    pts = track(text)
    out = []
    for i, (f, x) in enumerate(pts):
        a, b = pts[max(i - 1, 0)], pts[min(i + 1, len(pts) - 1)]
        v = [(q - p) / ((b[0] - a[0]) * dt) for p, q in zip(a[1], b[1])]
        out.append((f, v))
    return out


def acceleration(text, dt):
    pts = track(text)
    out = []
    for (f0, x0), (f1, x1), (f2, x2) in zip(pts, pts[1:], pts[2:]):
        h1, h2 = (f1 - f0) * dt, (f2 - f1) * dt
        out.append((f1, [2 * ((c - b) / h2 - (b - a) / h1) / (h1 + h2) for a, b, c in zip(x0, x1, x2)]))
    return out


def speed(v):
    return math.sqrt(sum(c * c for c in v))


def report(mode, text, dt):
    if mode == "peak":
        vs = velocity(text, dt)
        f, v = max(vs, key=lambda p: (speed(p[1]), -p[0]))
        pts = track(text)
        path = sum(math.dist(a[1], b[1]) for a, b in zip(pts, pts[1:]))
        return "t_s=%.6g\nspeed=%.6g\nmean_speed=%.6g\n" % (f * dt, speed(v), path / ((pts[-1][0] - pts[0][0]) * dt))
    rows = velocity(text, dt) if mode == "velocity" else acceleration(text, dt)
    return "".join("%d,%s\n" % (f, ",".join("%.6g" % c for c in v)) for f, v in rows)


if __name__ == "__main__":  # velocity|acceleration|peak PERIOD_US < track.csv
    sys.stdout.write(report(sys.argv[1], sys.stdin.read(), int(sys.argv[2]) * 1e-6))
'''


@dataclass(frozen=True)
class Knobs:
    frames: int
    axes: tuple[str, ...]  # coordinate columns
    dropped: bool  # frames missing from the log (uneven spacing)
    occluded: bool  # NaN rows, repeated frames, comment lines
    markers: int  # markers in the log (1: no marker column)


def _safe(text: str) -> bool:
    """Every %.6g number survives a relative nudge of 1e-9 (float noise cannot flip a digit)."""
    for tok in text.replace("=", ",").replace("\n", ",").split(","):
        try:
            x = float(tok)
        except ValueError:
            continue
        if "." in tok or "e" in tok:
            if "%.6g" % (x * (1 + 1e-9)) != "%.6g" % (x * (1 - 1e-9)):
                return False
    return True


@register
class MarkerTrackKinematics(Family):
    name = "marker_track_kinematics"
    domain = "scientific_computing"
    skill_types = ("Numerical Methods", "Experimental Data")
    primitive_skills = ("finite difference schemes", "irregular sampling", "unit handling",
                        "duplicate sample removal", "floating-point rounding control")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("velocity", "acceleration", "peak")
    # Level 0: one coordinate, six even frames: one awk program over the log.
    levels = {0: Knobs(frames=6, axes=("x_mm",), dropped=False, occluded=False, markers=1),
              1: Knobs(frames=15, axes=("x_mm", "y_mm"), dropped=False, occluded=False, markers=1),
              2: Knobs(frames=25, axes=("x_mm", "y_mm"), dropped=True, occluded=False, markers=1),
              3: Knobs(frames=35, axes=("x_mm", "y_mm", "z_mm"), dropped=True, occluded=True, markers=1),
              4: Knobs(frames=45, axes=("x_mm", "y_mm", "z_mm"), dropped=True, occluded=True, markers=3)}

    def _log(self, t: TaskBuilder, names: list[str]) -> str:
        k, rng = t.knobs, t.rng
        start = rng.randrange(100, 900)
        rows = []
        for name in names:
            frames = [start + i for i in range(k.frames + (k.frames // 4 if k.dropped else 0))]
            if k.dropped:  # drop a quarter of the frames, never the first or last
                for f in rng.sample(frames[1:-1], k.frames // 4):
                    frames.remove(f)
            motion = [(rng.uniform(-800, 800), rng.uniform(50, 400), rng.uniform(0.05, 0.3), rng.uniform(0, 6.3))
                      for _ in k.axes]
            for f in frames:
                pos = [c + amp * math.sin(w * (f - start) + ph) + rng.uniform(-0.5, 0.5) for c, amp, w, ph in motion]
                rows.append(([name] if k.markers > 1 else []) + [str(f)] + ["%.3f" % p for p in pos])
            if k.occluded:
                for r in rng.sample([r for r in rows if r[-len(k.axes) - 1] not in (str(frames[0]), str(frames[-1]))
                                     and (k.markers == 1 or r[0] == name)], 2):
                    r[-1] = "NaN"
        if k.occluded:  # re-sent rows after the originals (the first row of a frame counts), a comment line
            sound = [r for r in rows if r[-1] != "NaN"]
            rows += [r[:-1] + ["%.3f" % rng.uniform(-900, 900)] for r in rng.sample(sound, 3)]
            rows.insert(rng.randrange(len(rows)), ["# tracker lost sync, resumed"])
        head = (["marker"] if k.markers > 1 else []) + ["frame", *k.axes]
        return ",".join(head) + "\n" + "".join(",".join(r) + "\n" for r in rows)

    def output_case(self, t: TaskBuilder) -> None:
        k, rng, variant = t.knobs, t.rng, t.variant
        names = ["wrist", "elbow", "shoulder", "hip", "knee"][:k.markers] if k.markers > 1 else []
        marker = rng.choice(names) if names else None
        src = fill(REFERENCE, MARKER=repr(marker), AXES=k.axes)  # a quoted literal, or None
        ns = run_python(src)
        for _ in range(40):
            text = self._log(t, names or ["m"])
            t.add_file("/app/mocap/track.csv", text)
            # The log does not depend on the frame period: drawn after it (in microseconds) clear by 60 of every
            # number the agent can read, and a period 60 off must change every line of the answer.
            us = int(unseen(t, lambda: str(rng.randrange(8000, 40000)), near=60))
            truth = ns["report"](variant, text, us * 1e-6)
            lines = truth.splitlines()
            if _safe(truth) and all(not set(ns["report"](variant, text, (us + d) * 1e-6).splitlines()) & set(lines)
                                    for d in (-60, 60)):
                break
        else:
            raise FamilyError("marker_track_kinematics: no track with a safe answer in 40 draws")
        cols = ", ".join(f"`{a}`" for a in k.axes)
        parts = ["`/app/mocap/track.csv` is a motion-capture export: " + ("`marker`, " if names else "")
                 + f"`frame` (the camera's frame number) and the position {cols} in millimetres. Frame n was taken at "
                 "time n * T, T being the camera's frame period given below in microseconds; work in metres and "
                 "seconds."]
        if marker:
            parts.append(f"Use only the rows of marker `{marker}`.")
        if k.dropped:
            parts.append("Some frames were dropped, so consecutive rows may be more than one frame apart: use the "
                         "actual times.")
        if k.occluded:
            parts.append("Lines starting with `#` are comments; a row with a `NaN` coordinate is an occlusion: drop "
                         "the whole row (as if the frame were dropped). Rows are not all in order and some frames were "
                         "sent again later: the first row of a frame counts.")
        t.say(" ".join(parts))
        v = t.deliver(str(us), "the frame period in microseconds")
        first = "the velocity (the first and last frames use the one-sided difference with their only neighbour)"
        central = "v_i = (x_{i+1} - x_{i-1}) / (t_{i+1} - t_{i-1}), " + (
            "neighbours being the neighbouring usable rows" if k.dropped else "between the neighbouring rows")
        fmt = "every number printed as C's `%.6g`"
        if variant == "velocity":
            t.say(f"Differentiate every coordinate: {central}, for {first}. Write one line per usable frame in frame "
                  f"order, `<frame>,` then the velocity components in m/s in the column order, comma-separated, "
                  f"{fmt}.")
        elif variant == "acceleration":
            t.say("Take the second derivative at every interior usable frame (not the first or last), with the "
                  "non-uniform three-point formula a_i = 2 * ((x_{i+1} - x_i) / h2 - (x_i - x_{i-1}) / h1) / (h1 + "
                  "h2), h1 and h2 the time steps before and after. Write one line per such frame in frame order, "
                  f"`<frame>,` then the acceleration components in m/s^2 in the column order, comma-separated, {fmt}.")
        else:
            t.say(f"Compute {first} with {central}, and its magnitude, the speed. Write three lines: `t_s=` the time "
                  "of the fastest frame (the earliest if tied), `speed=` its speed in m/s, and `mean_speed=` the path "
                  "length (the sum of straight segments between consecutive usable rows) divided by the time from "
                  f"the first to the last usable frame, {fmt}.")
        t.add_solution_file("kinematics.py", src)
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\npython3 /solution/kinematics.py {variant} "{v}" '
                f"< /app/mocap/track.csv > /app/out/{variant}.txt")
        t.expect_output(f"/app/out/{variant}.txt", truth, {"velocity": "the velocities", "acceleration":
                                                           "the accelerations", "peak": "the peak report"}[variant])
