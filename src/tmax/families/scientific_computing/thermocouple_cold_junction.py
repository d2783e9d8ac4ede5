"""Thermocouple readings with cold-junction compensation: a logger records the thermocouple voltage, the
sensor's calibration certificate gives a forward polynomial E(T) and an inverse polynomial T(E), and the
reference (cold) junction temperature is delivered separately. Variants: `temperature` converts every
reading to a temperature, `emf` lists the voltages the logger should read at given setpoints, `alarm`
reports the excursions above a limit with their peaks. Higher levels add higher-order polynomials,
comment lines and open-circuit readings, several channels with their own calibrations, and unsorted and
repeated rows."""

from __future__ import annotations

import math
from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import run_python
from tmax.families.unseen import unseen

REFERENCE = r'''
import sys


def calibration(text):
    """channel -> {"forward": [c0, c1, ...], "inverse": [...]}, ascending powers."""
    out, ch = {}, None
    for line in text.splitlines():
        line = line.split("#")[0].strip()
        if line.startswith("["):
            ch = line.strip("[]")
            out[ch] = {}
        elif "=" in line:
            key, value = line.split("=", 1)
            out[ch][key.strip()] = [float(x) for x in value.split()]
    return out


def poly(c, x):
    acc = 0.0
    for k in reversed(c):
        acc = acc * x + k
    return acc


def readings(text):
    """[(t, channel, emf)] in time (then channel) order, first row of each (t, channel), open circuits out."""
    seen, out = set(), []
    for line in text.splitlines():
        parts = [p.strip() for p in line.split("#")[0].split(",")]
        if len(parts) < 2 or parts[0] == "t_s":
            continue
        t, ch, emf = (parts[0], parts[1], parts[2]) if len(parts) == 3 else (parts[0], "CH1", parts[1])
        if (t, ch) in seen:
            continue
        seen.add((t, ch))
        if emf != "OPEN":
            out.append((int(t), ch, float(emf)))
    return sorted(out)


def temps(cal, rows, tcj):
    return [(t, ch, poly(cal[ch]["inverse"], e + poly(cal[ch]["forward"], tcj))) for t, ch, e in rows]


def temperature(cal, text, tcj):
    return "".join("%d,%s,%.2f\n" % r for r in temps(cal, readings(text), tcj))


def emf(cal, text, tcj):
    out = []
    for line in text.splitlines():
        parts = line.split("#")[0].split()
        if parts:
            ch, sp = parts if len(parts) == 2 else ("CH1", parts[0])
            out.append("%s,%s,%.4f\n" % (ch, sp, poly(cal[ch]["forward"], float(sp)) - poly(cal[ch]["forward"], tcj)))
    return "".join(out)


def alarm(cal, text, tcj, limit):
    out = []
    rows = temps(cal, readings(text), tcj)
    for ch in sorted({r[1] for r in rows}):
        run = None
        for t, c, temp in [r for r in rows if r[1] == ch] + [(None, ch, None)]:
            if temp is not None and temp >= limit:
                run = [t, t, temp] if run is None else [run[0], t, max(run[2], temp)]
            elif run is not None:
                out.append("%s,%d,%d,%.2f\n" % (ch, run[0], run[1], run[2]))
                run = None
    return "".join(out)


if __name__ == "__main__":  # temperature|emf|alarm TCJ_MILLIDEG CAL DATA [LIMIT]
    mode, tcj = sys.argv[1], int(sys.argv[2]) / 1000
    cal, text = calibration(open(sys.argv[3]).read()), open(sys.argv[4]).read()
    if mode == "alarm":
        sys.stdout.write(alarm(cal, text, tcj, float(sys.argv[5])))
    else:
        sys.stdout.write((temperature if mode == "temperature" else emf)(cal, text, tcj))
'''


# variant -> (the task, filled with this task's values; what the grader calls the result)
ASKS = {"temperature": (lambda channel, logged, limit: (
            f"Convert every reading: write `<t_s>,<channel>,<temperature degC, 2 decimals>` (the channel {logged}), "
            "in time order, channels in name order within a time."), "the temperatures"),
        "emf": (lambda channel, logged, limit: (
            f"For every setpoint write the voltage the logger should show, `{channel},<setpoint as written>,<mV, 4 "
            "decimals>`, in the file's order."), "the voltages"),
        "alarm": (lambda channel, logged, limit: (
            f"Report every excursion at or above {limit} degC: a run of consecutive readings of one channel (in time "
            f"order, usable readings only) whose temperature is at least the limit. Write `{channel},<first t_s>,<last "
            "t_s>,<peak temperature degC, 2 decimals>` per run, channels in name order, runs in time order."),
            "the excursions")}


@dataclass(frozen=True)
class Knobs:
    rows: int  # readings per channel (setpoints for emf)
    order: int  # polynomial order (1: linear)
    comments: bool  # comment lines, open-circuit readings
    channels: int  # channels, each with its own calibration section
    messy: bool  # rows unsorted, some written twice


def _solve(a: list[list[float]], b: list[float]) -> list[float]:
    """Gaussian elimination with partial pivoting (a small least-squares system)."""
    n = len(b)
    m = [row[:] + [v] for row, v in zip(a, b)]
    for i in range(n):
        p = max(range(i, n), key=lambda r: abs(m[r][i]))
        m[i], m[p] = m[p], m[i]
        for r in range(i + 1, n):
            f = m[r][i] / m[i][i]
            m[r] = [x - f * y for x, y in zip(m[r], m[i])]
    x = [0.0] * n
    for i in reversed(range(n)):
        x[i] = (m[i][n] - sum(m[i][j] * x[j] for j in range(i + 1, n))) / m[i][i]
    return x


def _certificate(rng, order: int) -> tuple[list[float], list[float]]:
    """A forward polynomial near 41 uV/K and the inverse fitted to it by least squares over 0-500 degC."""
    fwd = [0.0, rng.uniform(0.0392, 0.0414)] + [rng.uniform(-1, 1) * 2e-5 / 10 ** (3 * i) for i in range(order - 1)]
    fwd = [float("%.6e" % c) for c in fwd]
    pts = [(sum(c * t ** i for i, c in enumerate(fwd)), t) for t in range(-20, 520, 10)]
    scale = [e for e, _ in pts]
    a = [[sum(e ** (i + j) for e in scale) for j in range(order + 1)] for i in range(order + 1)]
    b = [sum(t * e ** i for e, t in pts) for i in range(order + 1)]
    inv = [float("%.6e" % c) for c in _solve(a, b)]
    return fwd, inv


@register
class ThermocoupleColdJunction(Family):
    name = "thermocouple_cold_junction"
    domain = "scientific_computing"
    skill_types = ("Experimental Data", "Numerical Methods")
    primitive_skills = ("polynomial evaluation", "unit handling", "measurement validation",
                        "duplicate sample removal", "floating-point rounding control")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("temperature", "emf", "alarm")
    # Level 0: linear calibration, one channel, a handful of rows: one awk line.
    levels = {0: Knobs(rows=5, order=1, comments=False, channels=1, messy=False),
              1: Knobs(rows=12, order=2, comments=False, channels=1, messy=False),
              2: Knobs(rows=20, order=3, comments=True, channels=1, messy=False),
              3: Knobs(rows=24, order=3, comments=True, channels=2, messy=False),
              4: Knobs(rows=30, order=4, comments=True, channels=3, messy=True)}

    def _data(self, t: TaskBuilder, chans: list[str], cal_fwd: dict) -> str:
        """The logger CSV (readings) or the setpoint list (emf): a slowly varying process temperature
        around a few hundred degrees, turned into voltages with a nominal 20 degC junction."""
        k, rng, variant = t.knobs, t.rng, t.variant
        multi = k.channels > 1
        if variant == "emf":
            lines = [f"{ch} {sp}" if multi else str(sp) for ch in chans
                     for sp in sorted(rng.sample(range(25, 480, 5), k.rows // 2 + 2))]
            return "".join(x + "\n" for x in lines)
        rows = []
        for ch in chans:
            base, amp, phase = rng.uniform(150, 350), rng.uniform(30, 90), rng.uniform(0, 6.3)
            for i in range(k.rows):
                temp = base + amp * math.sin(i / 2.5 + phase) + rng.uniform(-8, 8)
                e = sum(c * temp ** j for j, c in enumerate(cal_fwd[ch])) - sum(c * 20.0 ** j
                                                                                 for j, c in enumerate(cal_fwd[ch]))
                value = "OPEN" if k.comments and rng.random() < 0.07 else "%.4f" % e
                rows.append([str(i * 10), ch, value] if multi else [str(i * 10), value])
        if k.messy:  # shuffled, then re-reads of a few (time, channel) pairs after them: the first row counts
            rng.shuffle(rows)
            rows += [r[:-1] + ["%.4f" % rng.uniform(3, 15)] for r in rng.sample(rows, 3)]
        body = ["t_s,channel,emf_mV" if multi else "t_s,emf_mV"] + [",".join(r) for r in rows]
        if k.comments:
            body.insert(rng.randrange(1, len(body)), "# logger restarted, readings resume")
        return "".join(x + "\n" for x in body)

    def output_case(self, t: TaskBuilder) -> None:
        k, rng, variant = t.knobs, t.rng, t.variant
        ns = run_python(REFERENCE)
        chans = [f"CH{i + 1}" for i in range(k.channels)]
        certs = {ch: _certificate(rng, k.order) for ch in chans}
        cal_text = "".join(f"[{ch}]\nforward = {' '.join('%.6e' % c for c in f)}\n"
                           f"inverse = {' '.join('%.6e' % c for c in i)}\n" for ch, (f, i) in certs.items())
        if k.comments:
            cal_text = f"# calibration certificate {rng.randrange(1000, 9999)}, ascending powers\n" + cal_text
        cal = ns["calibration"](cal_text)
        data_path = "/app/logger/setpoints.txt" if variant == "emf" else "/app/logger/readings.csv"
        for _ in range(40):
            data = self._data(t, chans, {ch: cal[ch]["forward"] for ch in chans})
            t.add_file("/app/logger/calibration.ini", cal_text)
            t.add_file(data_path, data)
            # The data do not depend on the junction temperature: drawn after them, in millidegrees, clear by
            # 40 of every number the agent can read, and a value 40 off must change every line of the answer.
            tcj = int(unseen(t, lambda: str(rng.randrange(15000, 35000)), near=40))
            temps = sorted(x[2] for x in ns["temps"](cal, ns["readings"](data), tcj / 1000)) if variant != "emf" else []
            limit = round(round(temps[len(temps) * 2 // 3], 1) + 0.05, 2) if temps else 0.0
            answer = {"temperature": lambda v: ns["temperature"](cal, data, v / 1000),
                      "emf": lambda v: ns["emf"](cal, data, v / 1000),
                      "alarm": lambda v: ns["alarm"](cal, data, v / 1000, limit)}[variant]
            truth = answer(tcj)
            nums = [float(line.rsplit(",", 1)[1]) for line in truth.splitlines()]
            places = 4 if variant == "emf" else 2
            ok = bool(nums) and all(abs(abs(x) * 10 ** places % 1 - 0.5) > 1e-3 for x in nums)
            ok = ok and all(abs(x - limit) > 0.02 for x in temps)
            if ok and all(not set(answer(tcj + d).splitlines()) & set(truth.splitlines()) for d in (-40, 40)):
                break
        else:
            raise FamilyError("thermocouple_cold_junction: no data set with a safe answer in 40 draws")
        multi = k.channels > 1
        parts = ["`/app/logger/calibration.ini` is the sensor's calibration certificate: a `[channel]` section per "
                 "channel with `forward` (the coefficients c0 c1 ... of E(T) = sum c_i T^i, E in mV of a junction "
                 "pair at T degC against 0 degC) and `inverse` (T(E) = sum d_i E^i, the same units), ascending powers."]
        if variant == "emf":
            parts.append("`/app/logger/setpoints.txt` lists process temperatures in degC, one per line" +
                         (" as `<channel> <temperature>`." if multi else "."))
        else:
            parts.append("`/app/logger/readings.csv` holds the logger's readings: `t_s` (s), " +
                         ("`channel`, " if multi else "") + "`emf_mV`, the voltage measured against the cold "
                         "junction.")
        if k.comments:
            parts.append("Lines or line ends from `#` on are comments" + (
                "; a reading `OPEN` is an open circuit: skip it." if variant != "emf" else "."))
        if k.messy and variant != "emf":
            parts.append("Rows are not in time order and some were written twice: the first row of each time and "
                         "channel counts.")
        parts.append("The cold junction sits at the reference temperature given below (millidegrees Celsius): a "
                     "measured voltage is E(T_process) - E(T_cj), so the process temperature is T(E_measured + "
                     "E(T_cj)).")
        t.say(" ".join(parts))
        v = t.deliver(str(tcj), "the cold-junction temperature in millidegrees Celsius")
        ask, what = ASKS[variant]
        t.say(ask(limit=f"{limit:g}", channel="<channel>" if multi else "CH1",
                  logged="as logged" if multi else "`CH1` in every row"))
        args = f'"{v}" /app/logger/calibration.ini {data_path}' + (f" {limit:g}" if variant == "alarm" else "")
        out = f"/app/out/{variant}.txt"
        t.add_solution_file("tc.py", REFERENCE)
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\npython3 /solution/tc.py {variant} {args} > {out}')
        t.expect_output(out, truth, what)
