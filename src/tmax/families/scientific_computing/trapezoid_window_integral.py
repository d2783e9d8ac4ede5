"""How much energy did one circuit draw in a time window? A power logger's CSV (several channels,
unsorted rows, irregular sampling, readings in W or kW, duplicated rows and gaps at higher levels),
integrated with the trapezoid rule from a trigger instant (delivered separately, in milliseconds) to a
given end, with linear interpolation at the window edges. Variants: that channel's energy report; the
energy of every channel in the window, most first; or the instant by which the channel had drawn a given
share of its window energy (the root of the quadratic running energy inside one trapezoid)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.unseen import distinct, hidden

REFERENCE = r'''
import math
import sys

VARIANT = "@VARIANT@"
CHANNEL = "@CHANNEL@"
T0_MS = "@@T0_MS@@"  # the trigger (the window start, in ms since the start of the recording): the oracle writes it
T1 = @T1@
FIELDS = @FIELDS@
SHARE = @SHARE@  # energy_share: the percentage of the window's energy


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


def channels(text):
    """Every channel the log names, in byte order."""
    return sorted({line.split(",")[1].strip() for line in text.splitlines()[1:] if line.count(",") == 3})


def at(pts, t):
    for (ta, va), (tb, vb) in zip(pts, pts[1:]):
        if ta <= t <= tb:
            return va + (vb - va) * (t - ta) / (tb - ta)
    raise ValueError("window outside the data")


def path(pts, t0):
    """The integration path: the interpolated start, the samples strictly inside, the interpolated end."""
    return [(t0, at(pts, t0))] + [(t, v) for t, v in pts if t0 < t < T1] + [(T1, at(pts, T1))]


def joules(pts, t0):
    p = path(pts, t0)
    return sum((tb - ta) * (va + vb) / 2 for (ta, va), (tb, vb) in zip(p, p[1:]))


def share_time(pts, t0):
    """When the energy since t0 reaches SHARE percent of the window's: inside the trapezoid where it
    does, the power is linear, so the energy is quadratic in time; its stable root."""
    p = path(pts, t0)
    left = joules(pts, t0) * SHARE / 100
    for (ta, va), (tb, vb) in zip(p, p[1:]):
        seg = (tb - ta) * (va + vb) / 2
        if seg >= left:
            slope = (vb - va) / (tb - ta)
            return ta + 2 * left / (va + math.sqrt(va * va + 2 * slope * left))
        left -= seg
    return T1


def measure(text, t0_ms=None):
    t0 = int(T0_MS if t0_ms is None else t0_ms) / 1000
    pts = samples(text, CHANNEL)
    j = joules(pts, t0)
    inside = [(t, v) for t, v in pts if t0 <= t <= T1]
    peak_t, peak = min(inside, key=lambda p: (-p[1], p[0]))
    return {"energy_kJ": j / 1000, "mean_W": j / (T1 - t0), "samples": len(inside),
            "peak": "%.2f@%.3f" % (peak, peak_t - t0), "share_t": share_time(pts, t0),
            "by_channel": {ch: joules(samples(text, ch), t0) / 1000 for ch in channels(text)}}


def number(text, t0_ms=None):
    """The one number a partial-credit answer gives."""
    return measure(text, t0_ms)["share_t" if VARIANT == "energy_share" else "energy_kJ"]


def report(text, t0_ms=None):
    m = measure(text, t0_ms)
    if VARIANT == "per_channel":  # most energy first
        return "".join("%s,%.3f\n" % (ch, e) for ch, e in sorted(m["by_channel"].items(), key=lambda c: (-c[1], c[0])))
    if VARIANT == "energy_share":
        return "%.3f\n" % m["share_t"]
    fmt = {"energy_kJ": "%.3f", "mean_W": "%.2f", "samples": "%d", "peak": "%s"}
    return "".join("%s=%s\n" % (k, fmt[k] % m[k]) for k in FIELDS)


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["--number"]:
        print(repr(number(sys.stdin.read(), int(args[1]))))
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


def make_log(rng, k: "Knobs", channels: list[str], span: float, cols: tuple[str, ...]) -> str:
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
    return ",".join(cols) + "\n" + "".join(",".join(r) + "\n" for r in rows)


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
COLUMN_NAMES = (("t_s", "time_s", "elapsed_s"), ("channel", "circuit", "feed"), ("value", "power", "reading"),
                ("unit", "units"))
LOG_NAMES = ("power_log.csv", "bench_power.csv", "logger_export.csv", "rig_power.csv", "power_trace.csv")


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
        self.variant = t.variant
        # the logger's column names (time, channel, value, unit) vary between rigs
        self.cols = tuple(rng.choice(names) for names in COLUMN_NAMES)
        self.share = rng.randrange(20, 81, 5) if t.variant == "energy_share" else 0
        self.src = fill(REFERENCE, T1=float(self.t1), FIELDS=k.fields, CHANNEL=self.channel,
                        VARIANT=t.variant, SHARE=self.share)
        self.ns = run_python(self.src)

    def robust(self, text: str, t0_ms: int) -> bool:
        fields = self.k.fields
        m = self.ns["measure"](text, t0_ms)
        if self.variant == "per_channel":  # every line rounds safely and the order is clear
            es = sorted(m["by_channel"].values())
            return all(safe(e, 3) for e in es) and all(b - a > 0.002 for a, b in zip(es, es[1:]))
        if self.variant == "energy_share":
            return safe(m["share_t"], 3) and t0_ms / 1000 < m["share_t"] < self.t1
        ok = all(safe(m[f], DECIMALS[f]) for f in fields if f in DECIMALS)
        if "peak" in fields:
            t0 = t0_ms / 1000
            vals = sorted((v for tt, v in self.ns["samples"](text, self.channel) if t0 <= tt <= self.t1),
                          reverse=True)
            ok = ok and vals[0] - vals[1] > 0.005
        return ok

    def log(self, t0_ms: int) -> str:
        for _ in range(200):
            text = make_log(self.rng, self.k, self.channels, self.span, self.cols)
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
    variants = ("window_energy", "per_channel", "energy_share")
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

    def rules(self, d: Setup) -> str:
        k, variant, (_, _, value, unit) = d.k, d.variant, d.cols
        out = ["Integrate each channel over its own rows." if variant == "per_channel"
               else "Take only the rows of that channel."]
        if k.shuffle:
            out.append("Rows are not in time order.")
        if k.dupes:
            out.append("Some rows were written twice: a timestamp counts once (keep its first row).")
        if k.gaps:
            out.append("A row whose value is empty or `NaN` is a dropout: ignore it, and integrate straight across "
                       "from the previous valid sample to the next one.")
        if k.kw:
            out.append(f"The `{unit}` column says whether `{value}` is in `W` or `kW` (1 kW = 1000 W).")
        else:
            out.append(f"All values are in watts (`{unit}` is always `W`).")
        out.append("Integrate the power over time with the trapezoid rule between consecutive samples (the result "
                   "in joules, 1 kJ = 1000 J).")
        if k.irregular:
            out.append("The sampling interval is irregular and the window ends generally fall between two samples: "
                       "the power at a window end is the linear interpolation between the two samples around it; the "
                       "integral then runs from that interpolated point to the first sample inside the window, "
                       "sample to sample, and from the last sample inside to the other end.")
        else:
            out.append("Both window ends coincide with sample times, so integrate sample to sample.")
        if variant == "energy_share":
            out.append("The running energy is that integral from the window start up to a moment. In the trapezoid "
                       "where it reaches the share, the power is linear in time, so the running energy is quadratic "
                       "there: the instant is the exact root of that quadratic inside the trapezoid, not the nearest "
                       "sample.")
        return " ".join(out)

    def texts(self, d: Setup) -> tuple[str, str, str]:
        """(the log header, what is asked over the window, the output format) as the instruction states them."""
        tcol, chan, value, _ = d.cols
        header = (f"The logger writes a CSV with header `{','.join(d.cols)}`: `{tcol}` is the time in seconds since "
                  f"the start of the recording, `{chan}` names the circuit, `{value}` is the instantaneous power.")
        window = (f"from the moment the test rig's trigger fired until t = {d.t1} s. The trigger time, in "
                  "milliseconds since the start of the recording, is given below; it is the start of the window.")
        if d.variant == "per_channel":
            ask = f"the energy drawn by each channel of the log {window}"
            fmt = (f"CSV lines `{chan},energy_kJ` without a header, one for every channel that appears in the log, "
                   "the energy in kJ with 3 decimals, most energy first.")
        elif d.variant == "energy_share":
            ask = (f"the instant by which channel `{d.channel}` had drawn {d.share}% of the energy it draws over the "
                   f"window, which runs {window}")
            fmt = "a single line: that instant, in seconds since the start of the recording, with 3 decimals."
        else:
            ask = f"the energy drawn by channel `{d.channel}` {window}"
            fmt = "`key=value` lines, in this order: " + ", ".join(FIELD_TEXT[f] for f in d.k.fields) + "."
        return header, ask, fmt

    def program_case(self, t: TaskBuilder) -> None:
        d = Setup(t, fuzz=True)
        header, ask, fmt = self.texts(d)
        t0_ms, shown_logs = d.draw(2)
        texts = shown_logs + [d.log(t0_ms) for _ in range(8)]
        cases = [(text, d.ns["report"](text, t0_ms)) for text in texts]
        t.say("Our bench power logger records several circuits at once and I want a reusable tool: it reads one "
              f"log on standard input and reports {ask} " + header)
        v = t.deliver(str(t0_ms), WHAT)
        t.say(self.rules(d) + f" The output is {fmt}")
        t.expect_program("The trigger time is always the one given above: hard-code it.", cases, {"Python": d.src})
        t.solve(f'test -n "{v}"\nsed -i "s/@@T0_MS@@/{v}/" /app/solution.py')

    def output_case(self, t: TaskBuilder) -> None:
        d = Setup(t, fuzz=False)
        header, ask, fmt = self.texts(d)
        t0_ms, (text,) = d.draw(1)
        log = f"/app/data/{t.rng.choice(LOG_NAMES)}"
        t.add_file(log, text)
        t.say(f"`{log}` is a recording from our bench power logger. {header} I need {ask}")
        v = t.deliver(str(t0_ms), WHAT)
        t.say(self.rules(d))
        t.add_solution_file("integrate.py", d.src)
        out = "/app/out/" + {"per_channel": "channel_energy.csv", "energy_share": "share_time.txt"}.get(
            d.variant, "energy_report.txt")
        if t.partial_credit and d.variant != "per_channel":  # one number graded by its relative error
            t.solve(f'test -n "{v}"\nmkdir -p /app/out\npython3 /solution/integrate.py --number "{v}" '
                    f'< {log} > {out}')
            t.expect_number(out, d.ns["number"](text, t0_ms), 1e-6,
                            "the instant in s since the start of the recording (unrounded)"
                            if d.variant == "energy_share" else "the energy in kJ (unrounded)")
            return
        t.say(f"Output format: {fmt}")
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\npython3 /solution/integrate.py "{v}" < {log} > {out}')
        t.expect_output(out, d.ns["report"](text, t0_ms),
                        "the per-channel energies (format above)" if d.variant == "per_channel"
                        else "the report (format above)")
