"""How much energy did one circuit draw in a time window? A power logger's CSV (several channels,
unsorted rows, irregular sampling, readings in W or kW, duplicated rows and gaps at higher levels),
integrated with the trapezoid rule from a trigger instant (delivered separately, in milliseconds) to a
given end, with linear interpolation at the window edges."""

from __future__ import annotations

import math
from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.unseen import distinct, hidden

REFERENCE = r'''
import sys

CHANNEL = "@CHANNEL@"
T0_MS = "@@T0_MS@@"  # the trigger (the window start, in ms since the start of the recording): the oracle writes it
T1 = @T1@
FIELDS = @FIELDS@


def samples(text, channel):
    """(t, watts) of one channel, first row of each timestamp, gaps dropped, in time order."""
    seen = set()
    pts = []
    for line in text.splitlines()[1:]:
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != 4 or parts[1] != channel:
            continue
        t = float(parts[0])
        if t in seen:
            continue
        seen.add(t)
        if parts[2] in ("", "NaN"):
            continue
        pts.append((t, float(parts[2]) * (1000.0 if parts[3] == "kW" else 1.0)))
    pts.sort()
    return pts


def at(pts, t):
    for (ta, va), (tb, vb) in zip(pts, pts[1:]):
        if ta <= t <= tb:
            return va + (vb - va) * (t - ta) / (tb - ta)
    raise ValueError("window outside the data")


def measure(text, t0_ms=None):
    t0 = int(T0_MS if t0_ms is None else t0_ms) / 1000
    pts = samples(text, CHANNEL)
    path = [(t0, at(pts, t0))] + [(t, v) for t, v in pts if t0 < t < T1] + [(T1, at(pts, T1))]
    joules = sum((tb - ta) * (va + vb) / 2 for (ta, va), (tb, vb) in zip(path, path[1:]))
    inside = [(t, v) for t, v in pts if t0 <= t <= T1]
    peak_t, peak = min(inside, key=lambda p: (-p[1], p[0]))
    return {"energy_kJ": joules / 1000, "mean_W": joules / (T1 - t0), "samples": len(inside),
            "peak": "%.2f@%.3f" % (peak, peak_t - t0)}


def report(text, t0_ms=None):
    m = measure(text, t0_ms)
    fmt = {"energy_kJ": "%.3f", "mean_W": "%.2f", "samples": "%d", "peak": "%s"}
    return "".join("%s=%s\n" % (k, fmt[k] % m[k]) for k in FIELDS)


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["--energy"]:
        print(repr(measure(sys.stdin.read(), int(args[1]))["energy_kJ"]))
    else:
        sys.stdout.write(report(sys.stdin.read(), int(args[0]) if args else None))
'''

DECIMALS = {"energy_kJ": 3, "mean_W": 2}
FIELD_TEXT = {"energy_kJ": "`energy_kJ` (the integral, in kJ, 3 decimals)",
              "mean_W": "`mean_W` (the energy divided by the window length, in W, 2 decimals)",
              "samples": "`samples` (how many valid samples of the channel lie inside the window, ends included)",
              "peak": "`peak` (the largest valid sample inside the window, ends included, in W with 2 decimals, then "
                      "`@`, then how long after the window start it was taken, in s with 3 decimals)"}


def safe(x: float, d: int) -> bool:
    """False when x sits so close to a rounding boundary at d decimals that float noise could flip it."""
    f = abs(x) * 10 ** d
    return abs(f - math.floor(f) - 0.5) > 1e-3


def channel_rows(rng, k: "Knobs", ch: str, span: float) -> list[tuple[str, str, str, str]]:
    base, amp, period = rng.uniform(150, 2500), rng.uniform(20, 400), rng.uniform(30, 200)
    phase, noise = rng.uniform(0, 6.3), rng.uniform(1, 30)
    rows, t = [], 0.0
    while t <= span:
        w = max(5.0, base + amp * math.sin(t / period * 6.283 + phase) + rng.uniform(-noise, noise))
        if rng.random() < 0.01:
            w += rng.uniform(200, 900)  # a load switching on briefly
        value, unit = f"{w:.2f}", "W"
        if k.kw and rng.random() < 0.3:
            value, unit = f"{round(w, 2) / 1000:.5f}", "kW"
        rows.append((f"{t:.3f}", ch, value, unit))
        if k.gaps and rng.random() < 0.03:
            rows.append((f"{t + 0.001:.3f}", ch, rng.choice(["", "NaN"]), "W"))
        t = round(t + (rng.randrange(200, 1500) / 1000 if k.irregular else k.step), 3)
    return rows


def make_log(rng, k: "Knobs", channels: list[str], span: float) -> str:
    rows = []
    for ch in channels:
        rows += channel_rows(rng, k, ch, span)
    if k.dupes:
        for _ in range(max(2, len(rows) // 50)):
            pos = rng.randrange(len(rows))
            rows.insert(rng.randrange(pos, len(rows) + 1), rows[pos])
    if k.shuffle:
        rng.shuffle(rows)
    else:
        rows.sort(key=lambda r: (float(r[0]), r[1]))
    return "t_s,channel,value,unit\n" + "".join(",".join(r) + "\n" for r in rows)


@dataclass(frozen=True)
class Knobs:
    channels: int  # channels in the log
    span: int  # recording length in s (output cases; worked examples are shorter)
    step: float  # sampling interval in s when regular (0: irregular)
    irregular: bool  # irregular sampling, window ends between samples
    shuffle: bool  # rows not in time order
    kw: bool  # some readings in kW
    dupes: bool  # rows written twice
    gaps: bool  # dropout rows (empty or NaN)
    fields: tuple[str, ...]  # the reported keys, in order


WHAT = "the trigger time in ms"


class Setup:
    """One task's draws: the channels, the window end and the reference filled with them; ``draw()``
    then draws the trigger (the delivered value) together with the logs made for it."""

    def __init__(self, t: TaskBuilder, fuzz: bool):
        k, rng = t.knobs, t.rng
        self.t, self.k, self.rng, self.fuzz = t, k, rng, fuzz
        self.channels = distinct(lambda: t.code(1), k.channels)
        self.channel = rng.choice(self.channels)
        self.span = 80 if fuzz else k.span
        self.t1 = rng.randrange(self.span // 2, self.span - (5 if k.irregular else 2))
        self.src = fill(REFERENCE, T1=float(self.t1), FIELDS=k.fields, CHANNEL=self.channel)
        self.ns = run_python(self.src)

    def robust(self, text: str, t0_ms: int) -> bool:
        fields = self.k.fields
        m = self.ns["measure"](text, t0_ms)
        ok = all(safe(m[f], DECIMALS[f]) for f in fields if f in DECIMALS)
        if "peak" in fields:
            t0 = t0_ms / 1000
            vals = sorted((v for tt, v in self.ns["samples"](text, self.channel) if t0 <= tt <= self.t1),
                          reverse=True)
            ok = ok and vals[0] - vals[1] > 0.005
        return ok

    def log(self, t0_ms: int) -> str:
        for _ in range(200):
            text = make_log(self.rng, self.k, self.channels, self.span)
            if self.robust(text, t0_ms):
                return text
        raise FamilyError("trapezoid_window_integral: no log with safely rounded results in 200 draws")

    def draw(self, shown_logs: int) -> tuple[int, list[str]]:
        """The trigger in ms and ``shown_logs`` logs made for it (with the worked examples' results, all
        the agent sees of them): the trigger is drawn clear of every number the agent can read (times,
        readings, ports), since a start even one sample off changes the energy, the mean, the sample
        count and the peak's offset, so no visible number is a usable guess."""
        k, rng = self.k, self.rng
        gap = 600 if self.fuzz else 2000  # ms; beyond 1.5 s (the widest sampling step) the sample count moves too
        lo_ms, hi_ms = 12000, self.span * 250  # above every port named in the instruction, within the first quarter
        step_ms = 1 if k.irregular else int(k.step * 1000)
        for _ in range(50):
            t0_ms = step_ms * rng.randrange(-(-lo_ms // step_ms), hi_ms // step_ms)
            logs = [self.log(t0_ms) for _ in range(shown_logs)]
            outs = [self.ns["report"](x, t0_ms) for x in logs] if self.fuzz else []
            if hidden(self.t, t0_ms, gap, str(self.t1), *logs, *outs):
                return t0_ms, logs
        raise FamilyError("trapezoid_window_integral: every trigger drawn shows in the task in 50 draws")


@register
class TrapezoidWindowIntegral(Family):
    name = "trapezoid_window_integral"
    domain = "scientific_computing"
    skill_types = ("Numerical Methods", "Experimental Data")
    primitive_skills = ("numerical integration", "trapezoid rule", "linear interpolation", "irregular sampling",
                        "unit handling", "duplicate sample removal", "floating-point rounding control")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol", "fuzz_equivalence")
    programs = {"Python": REFERENCE}
    # Level 0: one channel sampled every second, window ends on samples: one awk trapezoid sum.
    levels = {0: Knobs(channels=1, span=120, step=1.0, irregular=False, shuffle=False, kw=False, dupes=False,
                       gaps=False, fields=("energy_kJ",)),
              1: Knobs(channels=2, span=300, step=1.0, irregular=False, shuffle=False, kw=False, dupes=False,
                       gaps=False, fields=("energy_kJ",)),
              2: Knobs(channels=3, span=500, step=0.5, irregular=False, shuffle=True, kw=False, dupes=False,
                       gaps=False, fields=("energy_kJ", "mean_W")),
              3: Knobs(channels=3, span=700, step=0, irregular=True, shuffle=True, kw=True, dupes=False,
                       gaps=False, fields=("energy_kJ", "mean_W", "samples")),
              4: Knobs(channels=4, span=900, step=0, irregular=True, shuffle=True, kw=True, dupes=True,
                       gaps=True, fields=("energy_kJ", "mean_W", "samples", "peak"))}

    def rules(self, k: Knobs) -> str:
        out = ["Take only the rows of that channel."]
        if k.shuffle:
            out.append("Rows are not in time order.")
        if k.dupes:
            out.append("Some rows were written twice: a timestamp counts once (keep its first row).")
        if k.gaps:
            out.append("A row whose value is empty or `NaN` is a dropout: ignore it, and integrate straight across "
                       "from the previous valid sample to the next one.")
        if k.kw:
            out.append("The `unit` column says whether `value` is in `W` or `kW` (1 kW = 1000 W).")
        else:
            out.append("All values are in watts (`unit` is always `W`).")
        out.append("Integrate the power over time with the trapezoid rule between consecutive samples (the result "
                   "in joules, 1 kJ = 1000 J).")
        if k.irregular:
            out.append("The sampling interval is irregular and the window ends generally fall between two samples: "
                       "the power at a window end is the linear interpolation between the two samples around it; the "
                       "integral then runs from that interpolated point to the first sample inside the window, "
                       "sample to sample, and from the last sample inside to the other end.")
        else:
            out.append("Both window ends coincide with sample times, so integrate sample to sample.")
        return " ".join(out)

    def texts(self, d: Setup) -> tuple[str, str, str]:
        """(the log header, the window, the output format) as the instruction states them."""
        fmt = "`key=value` lines, in this order: " + ", ".join(FIELD_TEXT[f] for f in d.k.fields) + "."
        header = ("The logger writes a CSV with header `t_s,channel,value,unit`: `t_s` is the time in seconds since "
                  "the start of the recording, `channel` the circuit, `value` the instantaneous power.")
        window = (f"from the moment the test rig's trigger fired until t = {d.t1} s. The trigger time, in "
                  "milliseconds since the start of the recording, is given below; it is the start of the window.")
        return header, window, fmt

    def program_case(self, t: TaskBuilder) -> None:
        d = Setup(t, fuzz=True)
        header, window, fmt = self.texts(d)
        t0_ms, shown_logs = d.draw(2)
        texts = shown_logs + [d.log(t0_ms) for _ in range(8)]
        cases = [(text, d.ns["report"](text, t0_ms)) for text in texts]
        t.say("Our bench power logger records several circuits at once and I want a reusable tool: it reads one "
              f"log on standard input and reports the energy drawn by channel `{d.channel}` {window} " + header)
        v = t.deliver(str(t0_ms), WHAT)
        t.say(self.rules(t.knobs) + f" The output is {fmt}")
        t.expect_program("The trigger time is always the one given above: hard-code it.", cases, {"Python": d.src})
        t.solve(f'test -n "{v}"\nsed -i "s/@@T0_MS@@/{v}/" /app/solution.py')

    def output_case(self, t: TaskBuilder) -> None:
        d = Setup(t, fuzz=False)
        header, window, fmt = self.texts(d)
        t0_ms, (text,) = d.draw(1)
        t.add_file("/app/data/power_log.csv", text)
        t.say(f"`/app/data/power_log.csv` is a recording from our bench power logger. {header} I need the energy "
              f"drawn by channel `{d.channel}` {window}")
        v = t.deliver(str(t0_ms), WHAT)
        t.say(self.rules(t.knobs))
        t.add_solution_file("integrate.py", d.src)
        if t.partial_credit:  # one number graded by its relative error, not report lines
            t.solve(f'test -n "{v}"\nmkdir -p /app/out\npython3 /solution/integrate.py --energy "{v}" '
                    '< /app/data/power_log.csv > /app/out/energy_kJ.txt')
            t.expect_number("/app/out/energy_kJ.txt", d.ns["measure"](text, t0_ms)["energy_kJ"], 1e-6,
                            "the energy in kJ (unrounded)")
            return
        t.say(f"Output format: {fmt}")
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\npython3 /solution/integrate.py "{v}" < /app/data/power_log.csv '
                '> /app/out/energy_report.txt')
        t.expect_output("/app/out/energy_report.txt", d.ns["report"](text, t0_ms), "the report (format above)")
