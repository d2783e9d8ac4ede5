"""How much energy did one circuit draw in a time window? A power logger's CSV (several channels,
unsorted rows, irregular sampling, readings in W or kW, duplicated rows and gaps at higher levels),
integrated with the trapezoid rule from a trigger instant (delivered separately, in milliseconds) to a
given end, with linear interpolation at the window edges."""

from __future__ import annotations

import math

from tmax.families.base import Family, TaskBuilder, register
from tmax.families.scientific_computing._unseen import clear_of, visible_numbers

REFERENCE = r'''
import sys

CHANNEL = "__CHANNEL__"
T0_MS = int("__T0_MS__")  # the trigger: the window start, in ms since the start of the recording
T1 = __T1__
FIELDS = __FIELDS__


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
    t0 = (T0_MS if t0_ms is None else t0_ms) / 1000
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


def channel_rows(rng, k: dict, ch: str, span: float) -> list[tuple[str, str, str, str]]:
    base, amp, period = rng.uniform(150, 2500), rng.uniform(20, 400), rng.uniform(30, 200)
    phase, noise = rng.uniform(0, 6.3), rng.uniform(1, 30)
    rows, t = [], 0.0
    while t <= span:
        w = max(5.0, base + amp * math.sin(t / period * 6.283 + phase) + rng.uniform(-noise, noise))
        if rng.random() < 0.01:
            w += rng.uniform(200, 900)  # a load switching on briefly
        value, unit = f"{w:.2f}", "W"
        if k["kw"] and rng.random() < 0.3:
            value, unit = f"{round(w, 2) / 1000:.5f}", "kW"
        rows.append((f"{t:.3f}", ch, value, unit))
        if k["gaps"] and rng.random() < 0.03:
            rows.append((f"{t + 0.001:.3f}", ch, rng.choice(["", "NaN"]), "W"))
        t = round(t + (rng.randrange(200, 1500) / 1000 if k["irregular"] else k["step"]), 3)
    return rows


def make_log(rng, k: dict, channels: list[str], span: float) -> str:
    rows = []
    for ch in channels:
        rows += channel_rows(rng, k, ch, span)
    if k["dupes"]:
        for _ in range(max(2, len(rows) // 50)):
            pos = rng.randrange(len(rows))
            rows.insert(rng.randrange(pos, len(rows) + 1), rows[pos])
    if k["shuffle"]:
        rng.shuffle(rows)
    else:
        rows.sort(key=lambda r: (float(r[0]), r[1]))
    return "t_s,channel,value,unit\n" + "".join(",".join(r) + "\n" for r in rows)


@register
class TrapezoidWindowIntegral(Family):
    name = "trapezoid_window_integral"
    domain = "scientific_computing"
    skill_types = ("Numerical Methods", "Experimental Data")
    primitive_skills = ("numerical integration", "trapezoid rule", "linear interpolation", "irregular sampling",
                        "unit handling", "duplicate sample removal", "floating-point rounding control")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol", "fuzz_equivalence")
    programs = {"Python": REFERENCE}
    levels = {1: {"channels": 2, "span": 300, "step": 1.0, "irregular": False, "shuffle": False, "kw": False,
                  "dupes": False, "gaps": False, "fields": ["energy_kJ"]},
              2: {"channels": 3, "span": 500, "step": 0.5, "irregular": False, "shuffle": True, "kw": False,
                  "dupes": False, "gaps": False, "fields": ["energy_kJ", "mean_W"]},
              3: {"channels": 3, "span": 700, "step": 0, "irregular": True, "shuffle": True, "kw": True,
                  "dupes": False, "gaps": False, "fields": ["energy_kJ", "mean_W", "samples"]},
              4: {"channels": 4, "span": 900, "step": 0, "irregular": True, "shuffle": True, "kw": True,
                  "dupes": True, "gaps": True, "fields": ["energy_kJ", "mean_W", "samples", "peak"]}}

    def rules(self, k: dict) -> str:
        out = ["Take only the rows of that channel."]
        if k["shuffle"]:
            out.append("Rows are not in time order.")
        if k["dupes"]:
            out.append("Some rows were written twice: a timestamp counts once (keep its first row).")
        if k["gaps"]:
            out.append("A row whose value is empty or `NaN` is a dropout: ignore it, and integrate straight across "
                       "from the previous valid sample to the next one.")
        if k["kw"]:
            out.append("The `unit` column says whether `value` is in `W` or `kW` (1 kW = 1000 W).")
        else:
            out.append("All values are in watts (`unit` is always `W`).")
        out.append("Integrate the power over time with the trapezoid rule between consecutive samples (the result "
                   "in joules, 1 kJ = 1000 J).")
        if k["irregular"]:
            out.append("The sampling interval is irregular and the window ends generally fall between two samples: "
                       "the power at a window end is the linear interpolation between the two samples around it; the "
                       "integral then runs from that interpolated point to the first sample inside the window, "
                       "sample to sample, and from the last sample inside to the other end.")
        else:
            out.append("Both window ends coincide with sample times, so integrate sample to sample.")
        return " ".join(out)

    def build(self, t: TaskBuilder) -> None:
        k, rng = t.knobs, t.rng
        channels: list[str] = []
        while len(channels) < k["channels"]:
            c = t.code(1)
            if c not in channels:
                channels.append(c)
        channel = rng.choice(channels)
        fields = k["fields"]
        fuzz = t.axes.verifier == "fuzz_equivalence"
        span = 80 if fuzz else k["span"]
        # The delivered value is the window start (the trigger) in ms. It is drawn clear of every number
        # the agent can read (times, readings, ports): a start even one sample off changes the energy, the
        # mean, the sample count and the peak's offset, so no visible number is a usable guess.
        gap = 600 if fuzz else 2000  # ms; beyond 1.5 s (the widest sampling step) the sample count moves too
        lo_ms, hi_ms = 12000, span * 250  # above every port named in the instruction, within the first quarter
        step_ms = 1 if k["irregular"] else int(k["step"] * 1000)
        t1 = rng.randrange(span // 2, span - (5 if k["irregular"] else 2))
        src = REFERENCE.replace("__T1__", f"{t1}.0").replace("__FIELDS__", repr(fields)).replace(
            "__CHANNEL__", channel)

        def robust(ns: dict, text: str) -> bool:
            m = ns["measure"](text)
            ok = all(safe(m[f], DECIMALS[f]) for f in fields if f in DECIMALS)
            if "peak" in fields:
                t0 = ns["T0_MS"] / 1000
                vals = sorted((v for tt, v in ns["samples"](text, channel) if t0 <= tt <= t1), reverse=True)
                ok = ok and vals[0] - vals[1] > 0.005
            return ok

        def log(ns: dict) -> str:
            while True:
                text = make_log(rng, k, channels, span)
                if robust(ns, text):
                    return text

        while True:
            t0_ms = step_ms * rng.randrange(-(-lo_ms // step_ms), hi_ms // step_ms)
            ns: dict = {}
            exec(src.replace("__T0_MS__", str(t0_ms)), ns)  # noqa: S102 - our own reference program
            # what the agent sees without the channel: the log (or the worked examples) and the window end
            seen = [log(ns) for _ in range(2 if fuzz else 1)]
            outs = [ns["report"](x) for x in seen] if fuzz else []
            if clear_of(t0_ms, visible_numbers(str(t1), *seen, *outs), gap):
                break

        fmt = ("`key=value` lines, in this order: " + ", ".join(FIELD_TEXT[f] for f in fields) + ".")
        header = ("The logger writes a CSV with header `t_s,channel,value,unit`: `t_s` is the time in seconds since "
                  "the start of the recording, `channel` the circuit, `value` the instantaneous power.")
        window = (f"from the moment the test rig's trigger fired until t = {t1} s. The trigger time, in "
                  "milliseconds since the start of the recording, is given below; it is the start of the window.")
        what = "the trigger time in ms"
        if fuzz:
            texts = seen + [log(ns) for _ in range(8)]
            cases = [(text, ns["report"](text)) for text in texts]
            t.say("Our bench power logger records several circuits at once and I want a reusable tool: it reads one "
                  f"log on standard input and reports the energy drawn by channel `{channel}` {window} " + header)
            v = t.deliver(str(t0_ms), what)
            t.say(self.rules(k) + f" The output is {fmt}")
            t.expect_program("The trigger time is always the one given above: hard-code it.", cases,
                             {"Python": src})
            t.solve(f'test -n "{v}"\nsed -i "s/__T0_MS__/{v}/" /app/solution.py')
            return

        text = seen[0]
        t.add_file("/app/data/power_log.csv", text)
        t.say(f"`/app/data/power_log.csv` is a recording from our bench power logger. {header} I need the energy "
              f"drawn by channel `{channel}` {window}")
        v = t.deliver(str(t0_ms), what)
        t.say(self.rules(k))
        t.add_solution_file("integrate.py", src.replace("__T0_MS__", "0"))
        if t.axes.verifier == "metric_threshold":
            t.solve(f'test -n "{v}"\nmkdir -p /app/out\npython3 /solution/integrate.py --energy "{v}" '
                    '< /app/data/power_log.csv > /app/out/energy_kJ.txt')
            t.expect_number("/app/out/energy_kJ.txt", ns["measure"](text)["energy_kJ"], 1e-6,
                            "the energy in kJ (unrounded)")
            return
        t.say(f"Output format: {fmt}")
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\npython3 /solution/integrate.py "{v}" < /app/data/power_log.csv '
                '> /app/out/energy_report.txt')
        t.expect_output("/app/out/energy_report.txt", ns["report"](text), "the report (format above)")
