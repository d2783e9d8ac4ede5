"""Look values up in engineering property tables by interpolation, at a site whose barometric pressure is
delivered separately (gauges read relative to it). Variants: `slice` interpolates a gas density table
(temperature rows, absolute pressure columns) along pressure at the site pressure for every tabulated
temperature, `bilinear` interpolates it in both directions for gauge readings of tanks, `saturation`
inverts a water saturation-pressure table to the boiling temperature of each vessel. Higher levels add
comment lines, points outside the table (reported, not extrapolated), gauges in mixed units, unsorted
table rows and missing cells."""

from __future__ import annotations

import math
from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import csv_text, run_python
from tmax.families.unseen import unseen

REFERENCE = r'''
import sys

TO_KPA = {"kPa": 1.0, "bar": 100.0, "psi": 6.894757}


def rows(text):
    return [[c.strip() for c in ln.split(",")] for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]


def grid(text):
    """(pressures, [(T, [rho or None])]) sorted by T; `-` cells are missing."""
    r = rows(text)
    ps = [float(x) for x in r[0][1:]]
    body = sorted((float(x[0]), [None if c == "-" else float(c) for c in x[1:]]) for x in r[1:])
    return ps, body


def bracket(xs, x):
    """The index i with xs[i] <= x <= xs[i + 1], or None outside."""
    for i in range(len(xs) - 1):
        if xs[i] <= x <= xs[i + 1]:
            return i
    return None


def lerp(x0, x1, y0, y1, x):
    return y0 + (y1 - y0) * (x - x0) / (x1 - x0)


def along(ps, vals, p):
    """Interpolated along pressure between the nearest columns on either side that have data."""
    lo = [i for i, v in enumerate(vals) if v is not None and ps[i] <= p]
    hi = [i for i, v in enumerate(vals) if v is not None and ps[i] >= p]
    if not lo or not hi:
        return "out_of_range"
    i, j = lo[-1], hi[0]
    return vals[i] if i == j else lerp(ps[i], ps[j], vals[i], vals[j], p)


def show(v, places):
    return v if isinstance(v, str) else "%.*f" % (places, v)


def slice_(text, patm):
    ps, body = grid(text)
    return "".join("%g,%s\n" % (t, show(along(ps, vals, patm), 4)) for t, vals in body)


def gauge(row, patm):
    return float(row["gauge"]) * TO_KPA[row.get("unit", "kPa")] + patm


def queries(text):
    r = rows(text)
    return [dict(zip(r[0], x)) for x in r[1:]]


def bilinear(text, qtext, patm):
    ps, body = grid(text)
    ts = [t for t, _ in body]
    out = []
    for q in queries(qtext):
        t, p = float(q["T_C"]), gauge(q, patm)
        i = bracket(ts, t)
        if i is None:
            v = "out_of_range"
        else:
            lo, hi = along(ps, body[i][1], p), along(ps, body[i + 1][1], p)
            v = lo if isinstance(lo, str) else hi if isinstance(hi, str) else lerp(ts[i], ts[i + 1], lo, hi, t)
        out.append("%s,%.3f,%s\n" % (q["tank"], p, show(v, 4)))
    return "".join(out)


def saturation(text, qtext, patm):
    r = rows(text)
    table = sorted((float(x[1]), float(x[0])) for x in r[1:])  # (p_sat kPa, T degC), p rises with T
    out = []
    for q in queries(qtext):
        p = gauge(q, patm)
        i = bracket([x[0] for x in table], p)
        v = "out_of_range" if i is None else lerp(table[i][0], table[i + 1][0], table[i][1], table[i + 1][1], p)
        out.append("%s,%.3f,%s\n" % (q["tank"], p, show(v, 3)))
    return "".join(out)


if __name__ == "__main__":  # slice|bilinear|saturation PATM_PA TABLE [QUERIES]
    mode, patm = sys.argv[1], int(sys.argv[2]) / 1000
    args = [open(p).read() for p in sys.argv[3:]]
    sys.stdout.write(slice_(args[0], patm) if mode == "slice" else
                     (bilinear if mode == "bilinear" else saturation)(args[0], args[1], patm))
'''


DENSITY = ("`/app/tables/density.csv` tabulates our process gas's density in kg/m^3: the header row gives the "
           "absolute pressures in kPa of the columns, each further row starts with a temperature in degC.")
TABLES = {"slice": DENSITY,
          "bilinear": DENSITY + " `/app/tables/tanks.csv` lists our tanks, each with its temperature `T_C` and the "
                                "`gauge` pressure it reads.",
          "saturation": "`/app/tables/saturation.csv` tabulates water's saturation pressure: `T_C` (degC) and "
                        "`p_sat_kPa`. `/app/tables/tanks.csv` lists our boilers with the `gauge` pressure each one reads."}
GAUGES = {False: "Gauges read relative to the site's barometric pressure, given below in pascals: absolute pressure = "
                 "gauge + barometric; gauges read in kPa.",
          True: "Gauges read relative to the site's barometric pressure, given below in pascals: absolute pressure = "
                "gauge + barometric; the `unit` column gives each gauge's unit (`kPa`, `bar` = 100 kPa, `psi` = "
                "6.894757 kPa)."}
RULES = (("comments", "Lines starting with `#` are comments."),
         ("messy", "The table rows are not in order, and a cell `-` has no data: interpolate along pressure between "
                   "the nearest columns on either side that have data."))
# variant -> (the task, what the grader calls the result)
ASKS = {"slice": ("Give the density at the site's barometric pressure for every tabulated temperature: one line `<T as "
                  "a plain number>,<density, 4 decimals>` per table row, in increasing temperature.",
                  "the density slice"),
        "bilinear": ("Give each tank's gas density by bilinear interpolation: first along pressure within the two "
                     "table rows around its temperature, then between them along temperature. One line `<tank>,"
                     "<absolute pressure kPa, 3 decimals>,<density kg/m^3, 4 decimals>` per tank, in file order.",
                     "the densities"),
        "saturation": ("Give each boiler's boiling temperature: the temperature whose saturation pressure equals its "
                       "absolute pressure, interpolating linearly in the table. One line `<tank>,<absolute pressure "
                       "kPa, 3 decimals>,<T degC, 3 decimals>` per boiler, in file order.", "the boiling temperatures")}


@dataclass(frozen=True)
class Knobs:
    temps: int  # table rows
    pressures: int  # density table pressure columns
    queries: int  # tanks (bilinear / saturation)
    comments: bool  # comment lines
    outside: bool  # points outside the table
    units: bool  # gauge unit column (kPa, bar, psi)
    messy: bool  # table rows unsorted, missing cells


def _density(t_c: float, p_kpa: float) -> float:
    """A real-gas-like density (kg/m^3): ideal gas with a small pressure and temperature correction."""
    t = t_c + 273.15
    return p_kpa * 1000 / (287.05 * t) * (1 + 0.00004 * p_kpa * (300 / t) ** 2)


def _psat(t_c: float) -> float:
    """Antoine-type saturation pressure of water, kPa."""
    return math.exp(16.3872 - 3885.70 / (t_c + 230.17))


@register
class PropertyTableInterpolation(Family):
    name = "property_table_interpolation"
    domain = "scientific_computing"
    skill_types = ("Numerical Methods", "Experimental Data")
    primitive_skills = ("linear interpolation", "unit handling", "boundary condition handling",
                        "floating-point rounding control", "measurement validation")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("slice", "bilinear", "saturation")
    # Level 0: a table of two pressures (or a few rows) and one or two tanks: one awk program.
    levels = {0: Knobs(temps=3, pressures=2, queries=2, comments=False, outside=False, units=False, messy=False),
              1: Knobs(temps=6, pressures=4, queries=5, comments=True, outside=False, units=False, messy=False),
              2: Knobs(temps=9, pressures=6, queries=8, comments=True, outside=True, units=False, messy=False),
              3: Knobs(temps=12, pressures=7, queries=10, comments=True, outside=True, units=True, messy=False),
              4: Knobs(temps=15, pressures=8, queries=14, comments=True, outside=True, units=True, messy=True)}

    def _files(self, t: TaskBuilder) -> tuple[str, str]:
        """(table, queries) for the variant; the site pressure lies between 85 and 105 kPa."""
        k, rng, variant = t.knobs, t.rng, t.variant
        rng_t = sorted(rng.sample(range(-20, 80, 5), k.temps)) if variant != "saturation" else \
            sorted(rng.sample(range(80, 200, 4), k.temps))
        if variant == "saturation":
            head, body = ["T_C", "p_sat_kPa"], [[str(x), "%.3f" % _psat(x)] for x in rng_t]
        else:
            ps = [80 + 30 * i for i in range(k.pressures)] if variant == "slice" else [80, 200] if k.pressures <= 2 \
                else [80, 110] + sorted(rng.sample(range(150, 800, 10), k.pressures - 2))
            head = ["T_C\\P_kPa"] + [str(p) for p in ps]
            body = [[str(x)] + ["%.4f" % _density(x, p) for p in ps] for x in rng_t]
            if k.messy:
                for row in rng.sample(body, 2):  # never the two lowest columns, around the site pressure
                    row[rng.randrange(3, len(row))] = "-"
        if k.messy:
            rng.shuffle(body)
        table = csv_text(head, body)
        if k.comments:
            table = f"# property table rev {rng.randrange(2, 9)}, generated from the reference EOS\n" + table
        if variant == "slice":
            return table, ""
        qs = []
        for i in range(k.queries):
            if variant == "saturation":
                tq, gauge_kpa = None, _psat(rng.uniform(rng_t[0] + 1, rng_t[-1] - 1)) - rng.uniform(85, 105)
                if k.outside and i % 4 == 3:
                    gauge_kpa = _psat(rng_t[-1] + rng.uniform(5, 12)) - 95
            else:
                tq = round(rng.uniform(rng_t[0], rng_t[-1]), 1)
                tq += 0.1 if tq % 5 == 0 else 0  # never on a table row
                gauge_kpa = rng.uniform(0, max(20.0, float(head[-1].split(",")[-1]) - 110))
                if k.outside and i % 4 == 3:
                    tq = rng_t[-1] + rng.randrange(2, 9)
            unit = rng.choice(("kPa", "bar", "psi")) if k.units else "kPa"
            g = gauge_kpa / {"kPa": 1.0, "bar": 100.0, "psi": 6.894757}[unit]
            row = [f"T{i + 1:02d}"] + ([] if tq is None else ["%g" % tq]) + ["%.3f" % g] + ([unit] if k.units else [])
            qs.append(row)
        qhead = ["tank"] + ([] if variant == "saturation" else ["T_C"]) + ["gauge"] + (["unit"] if k.units else [])
        return table, csv_text(qhead, qs)

    def output_case(self, t: TaskBuilder) -> None:
        k, rng, variant = t.knobs, t.rng, t.variant
        ns = run_python(REFERENCE)
        table_path = "/app/tables/saturation.csv" if variant == "saturation" else "/app/tables/density.csv"
        places, gap = (3, 300) if variant == "saturation" else (4, 80)
        for _ in range(40):
            table, qtext = self._files(t)
            t.add_file(table_path, table)
            if qtext:
                t.add_file("/app/tables/tanks.csv", qtext)
            # The files do not depend on the site pressure: drawn after them (in Pa) clear by `gap` of every
            # number the agent can read, and a pressure `gap` off must change every line that has a value.
            patm = int(unseen(t, lambda: str(rng.randrange(85000, 105000)), near=gap))
            answer = {"slice": lambda p: ns["slice_"](table, p / 1000),
                      "bilinear": lambda p: ns["bilinear"](table, qtext, p / 1000),
                      "saturation": lambda p: ns["saturation"](table, qtext, p / 1000)}[variant]
            truth = answer(patm)
            lines = truth.splitlines()
            vals = [x.split(",")[-1] for x in lines]
            nums = [(float(x), places) for x in vals if x[-1].isdigit()]
            nums += [(float(x.split(",")[1]), 3) for x in lines if variant != "slice"]
            ok = sum(x[-1].isdigit() for x in vals) >= max(2, len(vals) * 2 // 3)
            ok = ok and all(abs(abs(x) * 10 ** p % 1 - 0.5) > 1e-3 for x, p in nums)
            if ok and all(not set(answer(patm + d).splitlines()) & set(lines) for d in (-gap, gap)):
                break
        else:
            raise FamilyError("property_table_interpolation: no table with a safe answer in 40 draws")
        t.say(" ".join([TABLES[variant]]
                       + ([GAUGES[k.units]] if variant != "slice" else [])
                       + [text for knob, text in RULES if getattr(k, knob)]
                       + ["Interpolate linearly between the neighbouring tabulated points (never extrapolate)."]))
        v = t.deliver(str(patm), "the site's barometric pressure in Pa")
        ask, what = ASKS[variant]
        t.say(ask + (" Instead of a value write `out_of_range` when the point lies outside the table." if k.outside
                     else ""))
        files = table_path + ("" if variant == "slice" else " /app/tables/tanks.csv")
        out = f"/app/out/{variant}.txt"
        t.add_solution_file("lookup.py", REFERENCE)
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\npython3 /solution/lookup.py {variant} "{v}" {files} > {out}')
        t.expect_output(out, truth, what)
