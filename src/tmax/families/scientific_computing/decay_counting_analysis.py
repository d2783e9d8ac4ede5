"""Radiation counting logs from a lab scaler. Variants: `halflife` subtracts a background rate (delivered)
and fits the log of the net count rate against time by least squares, `deadtime` corrects measured rates
for a non-paralysable dead time (delivered), `activity` turns sample counts into activities decay-corrected
back to the end of irradiation (delivered, a Unix time). Higher levels add live time apart from real time,
aborted intervals, duplicated and unsorted rows, a cumulative scaler and per-detector efficiencies."""

from __future__ import annotations

import math
from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.unseen import hidden, unseen

REFERENCE = r'''
import math
import sys

CUMULATIVE = @CUMULATIVE@  # the counts column is the scaler's running total
HALF_LIFE = @HALF_LIFE@  # s (activity)
EFFICIENCY = @EFFICIENCY@  # detector -> counts per decay (activity)
BACKGROUND = @BACKGROUND@  # cps (activity)


def rows(text):
    """Intervals in time order, first row of each start time; aborted intervals dropped (after the
    running total is differenced, since the scaler keeps counting through them)."""
    lines = [line.split(",") for line in text.splitlines() if line.strip()]
    head, seen, out = lines[0], set(), []
    for r in lines[1:]:
        d = dict(zip(head, r))
        if d["start"] in seen:
            continue
        seen.add(d["start"])
        out.append(d)
    out.sort(key=lambda d: float(d["start"]))
    total = 0.0
    for d in out:
        c = float(d["counts"])
        d["n"], total = (c - total, c) if CUMULATIVE else (c, total)
        d["live"] = float(d.get("live", d.get("real")))
        d["real"] = float(d.get("real", d["live"]))
    return [d for d in out if d.get("status", "ok") == "ok"]


def halflife(text, bkg):
    pts = []
    for d in rows(text):
        net = d["n"] / d["live"] - bkg
        if net > 0:
            pts.append((float(d["start"]) + d["real"] / 2, math.log(net)))
    n = len(pts)
    mx, my = sum(p[0] for p in pts) / n, sum(p[1] for p in pts) / n
    slope = sum((x - mx) * (y - my) for x, y in pts) / sum((x - mx) ** 2 for x, _ in pts)
    return -math.log(2) / slope


def deadtime(text, tau):
    out = []
    for d in rows(text):
        m = d["n"] / d["live"]
        out.append("%s,%.2f\n" % (d["start"], m / (1 - m * tau)))
    return "".join(out)


def activity(text, eoi):
    lam = math.log(2) / HALF_LIFE
    out = []
    for d in rows(text):
        net = d["n"] / d["live"] - BACKGROUND
        mid = float(d["start"]) + d["real"] / 2
        out.append("%s,%.2f\n" % (d["sample"], net / EFFICIENCY[d.get("detector", "D1")]
                                  * math.exp(lam * (mid - eoi))))
    return "".join(out)


if __name__ == "__main__":  # halflife BKG_MILLI_CPS | deadtime TAU_NS | activity EOI_UNIX  < log.csv [--raw]
    mode, value, text = sys.argv[1], int(sys.argv[2]), sys.stdin.read()
    if mode == "halflife":
        h = halflife(text, value / 1000)
        print(repr(h) if "--raw" in sys.argv else "half_life_s=%.1f" % h)
    else:
        sys.stdout.write(deadtime(text, value * 1e-9) if mode == "deadtime" else activity(text, value))
'''


def _safe(fmt: str, x: float) -> bool:
    """The printed text does not change when x moves by a part in 10^9 (float noise cannot flip it)."""
    return fmt % (x * (1 + 1e-9)) == fmt % (x * (1 - 1e-9))


def _poisson_like(rng, mean: float) -> int:
    return max(0, round(mean + math.sqrt(mean) * rng.gauss(0, 1)))


@dataclass(frozen=True)
class Knobs:
    rows: int  # intervals (samples for activity)
    real: bool  # live time apart from real time
    status: bool  # aborted intervals to drop
    messy: bool  # duplicated rows, not in time order
    cumulative: bool  # halflife/deadtime: a running-total scaler; activity: several detectors


@register
class DecayCountingAnalysis(Family):
    name = "decay_counting_analysis"
    domain = "scientific_computing"
    skill_types = ("Experimental Data", "Numerical Methods")
    primitive_skills = ("least squares fitting", "dead time correction", "decay correction", "unit handling",
                        "duplicate sample removal", "floating-point rounding control")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("halflife", "deadtime", "activity")
    levels = {0: Knobs(rows=5, real=False, status=False, messy=False, cumulative=False),
              1: Knobs(rows=12, real=False, status=False, messy=False, cumulative=False),
              2: Knobs(rows=20, real=True, status=True, messy=False, cumulative=False),
              3: Knobs(rows=30, real=True, status=True, messy=True, cumulative=False),
              4: Knobs(rows=40, real=True, status=True, messy=True, cumulative=True)}

    def _log(self, t, rate_of, start0, names=None):
        """The scaler's CSV: one interval per row, counts drawn around rate_of(mid) * live."""
        k, rng, variant = t.knobs, t.rng, t.variant
        multi = k.cumulative and variant == "activity"
        head = ((["sample"] if names else []) + ["start"] + (["real", "live"] if k.real else ["live"]) + ["counts"]
                + (["status"] if k.status else []) + (["detector"] if multi else []))
        out, now, total = [], start0, 0
        for i in range(k.rows):
            real = rng.choice([60, 120, 180, 300])
            live = round(real * rng.uniform(0.9, 0.99), 2) if k.real else real
            n = _poisson_like(rng, rate_of(now + real / 2, i) * live)
            total += n
            status = "ok" if not k.status or i < 2 or rng.random() > 0.15 else rng.choice(["abort", "overflow"])
            row = ([names[i]] if names else []) + [str(now)] + ([str(real), f"{live:g}"] if k.real else [str(live)]) \
                + [str(total if k.cumulative and not multi else n)] + ([status] if k.status else []) \
                + ([f"D{1 + i % 2}"] if multi else [])
            out.append(",".join(row))
            now += real + rng.randrange(2, 40 if names else 6)
        if k.messy:
            for _ in range(2):
                out.insert(rng.randrange(len(out) + 1), out[rng.randrange(len(out))])
            rng.shuffle(out)  # the copies are identical, so which one comes first does not matter
        return ",".join(head) + "\n" + "".join(r + "\n" for r in out)

    def output_case(self, t: TaskBuilder) -> None:
        k, rng, variant = t.knobs, t.rng, t.variant
        start0 = 1_760_000_000 + rng.randrange(20_000_000)
        half = rng.choice([1830.0, 3600.0, 6586.2, 9000.0, 12708.0])  # s (activity)
        eff = {"D1": round(rng.uniform(0.02, 0.3), 4), "D2": round(rng.uniform(0.02, 0.3), 4)}
        bkg = round(rng.uniform(0.5, 3), 2)
        src = fill(REFERENCE, CUMULATIVE=k.cumulative and variant != "activity", HALF_LIFE=half, EFFICIENCY=eff,
                   BACKGROUND=bkg)
        ns = run_python(src)
        out = "/app/out/counting.txt"
        for _ in range(40):
            if variant == "activity":
                names = [f"S{i + 1:02d}" for i in range(k.rows)]
                acts = [rng.uniform(50, 5000) for _ in names]
                eoi = start0 - rng.randrange(1800, 2 * 3600)
                lam = math.log(2) / half
                text = self._log(t, lambda mid, i: acts[i] * eff[f"D{1 + i % 2}" if k.cumulative else "D1"]
                                 * math.exp(-lam * (mid - eoi)) + bkg, start0, names)
                t.add_file("/app/counter/samples.csv", text)
                # The data do not depend on the reference instant: drawn after them, no time the agent can
                # read within 10 minutes of it (a decay factor off by several per cent on every line).
                value = int(unseen(t, lambda: str(start0 - rng.randrange(1800, 2 * 3600)), near=600))
                truth = ns["activity"](text, value)
                ok = all(_safe("%.2f", float(x.split(",")[1])) for x in truth.splitlines())
            else:
                # The data are made with the delivered value (a background rate or a dead time), so it is
                # drawn first and kept only when no number the agent can read lies within `gap` of it and a
                # value `gap` off on either side changes every line of the answer.
                span = k.rows * 170
                if variant == "halflife":  # about three half-lives, background a few per cent of the end rate
                    value, gap, fit_half = rng.randrange(2000, 30000), 200, span / 3 * rng.uniform(0.8, 1.2)
                    r0 = rng.uniform(800, 3000)
                    rate = lambda mid, i: r0 * 0.5 ** ((mid - start0) / fit_half) + value / 1000
                else:  # slow decay, so every interval counts fast enough for the dead time to matter
                    value, gap, fit_half = rng.randrange(1500, 9000), 400, span * rng.uniform(1, 2)
                    n0 = rng.uniform(40000, 90000)
                    rate = lambda mid, i: (lambda n: n / (1 + n * value * 1e-9))(
                        n0 * 0.5 ** ((mid - start0) / fit_half))
                text = self._log(t, rate, start0)
                t.add_file("/app/counter/run.csv", text)
                if variant == "halflife":
                    raw = ns["halflife"](text, value / 1000)
                    answer = lambda x: f"half_life_s={ns['halflife'](text, x / 1000):.1f}\n"
                    ok = raw > 0 and _safe("%.1f", raw)
                else:
                    answer = lambda x: ns["deadtime"](text, x * 1e-9)
                    ok = all(_safe("%.2f", float(x.split(",")[1])) for x in answer(value).splitlines())
                truth = answer(value)
                ok = ok and all(not set(answer(value + d).splitlines()) & set(truth.splitlines())
                                for d in (-gap, gap)) and hidden(t, value, gap)
            if ok:
                break
        else:
            raise FamilyError("decay_counting_analysis: no log with safely rounded results in 40 draws")
        cols = ("`start` (Unix time the interval began), " + ("`real` and `live` (real and live time, s), " if k.real
                                                              else "`live` (counting time, s), ")
                + ("`counts` (the scaler's running total since the first interval: an interval's own counts are the "
                   "difference from the previous interval in time order)" if k.cumulative and variant != "activity"
                   else "`counts`")
                + (", `status` (only `ok` intervals are used)" if k.status else ""))
        rules = " A count rate is counts / live time" + (
            f", and an interval's instant is its start plus half its {'real' if k.real else 'counting'} time."
            if variant != "deadtime" else ".")
        if k.messy:
            rules += " Rows are not in time order, and the DAQ sometimes wrote a row twice: keep the first row of " \
                     "each start time."
        if variant == "activity":
            det = (" Each row also names its `detector`; efficiencies (counts per decay): "
                   + ", ".join(f"{d} {e}" for d, e in eff.items()) + "." if k.cumulative
                   else f" The detector efficiency is {eff['D1']} counts per decay.")
            t.say(f"`/app/counter/samples.csv` logs the counting of irradiated foils, one sample per row: `sample`, "
                  f"{cols}.{det} The background rate is {bkg} cps and the isotope's half-life {half} s.{rules}")
            v = t.deliver(str(value), "the end of irradiation as a Unix time")
            t.say("Each sample's activity at the end of irradiation is (count rate - background) / efficiency * "
                  "exp(ln 2 / half-life * (instant - end of irradiation)). Write `<sample>,<activity in Bq, %.2f>` "
                  "for every usable row, in time order.")
            cmd = f'python3 /solution/counting.py activity "{v}" < /app/counter/samples.csv > {out}'
        else:
            t.say(f"`/app/counter/run.csv` is the scaler log of one source counted in consecutive intervals: {cols}."
                  f"{rules}")
            if variant == "halflife":
                v = t.deliver(str(value), "the background rate in milli-counts per second")
                t.say("Subtract the background rate from each interval's count rate, then fit ln(net rate) = a + b * "
                      "instant by ordinary least squares over the intervals with a positive net rate; the half-life "
                      "is -ln 2 / b. " + ("Write only the half-life in seconds, unrounded, as a plain number."
                                          if t.partial_credit else "Write one line `half_life_s=<%.1f>`."))
                cmd = (f'python3 /solution/counting.py halflife "{v}"{" --raw" if t.partial_credit else ""} '
                       f"< /app/counter/run.csv > {out}")
            else:
                v = t.deliver(str(value), "the dead time in nanoseconds")
                t.say("The counter is non-paralysable with the dead time given: an interval's true rate is m / (1 - m "
                      "* tau), m its measured count rate and tau the dead time in seconds. Write `<start>,<true rate "
                      "in cps, %.2f>` for every usable interval, in time order.")
                cmd = f'python3 /solution/counting.py deadtime "{v}" < /app/counter/run.csv > {out}'
        t.add_solution_file("counting.py", src)
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\n{cmd}')
        if variant == "halflife" and t.partial_credit:
            t.expect_number(out, raw, 1e-6, "the half-life in s")
        else:
            t.expect_output(out, truth, {"halflife": "the half-life", "deadtime": "the corrected rates",
                                         "activity": "the activities"}[variant])
