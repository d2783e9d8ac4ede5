"""What are the node voltages of this resistor network? A SPICE-like netlist (SI prefixes, current
sources and a floating voltage source at higher levels) whose supply voltage is delivered separately,
solved by modified nodal analysis: assemble the conductance matrix, solve the linear system, then
derive a branch current, the dissipated power and the most loaded resistor.
Variants: operating_point (the node voltages, then a probed current, the power and the most loaded
resistor at higher levels), thevenin (the Thevenin/Norton equivalent seen from one node against ground:
a second solve with every source zeroed and a test current injected) and branch_currents (every
resistor's current with its real direction, ranked, then each one's power and the total). Every line the
other variants report under partial credit moves with the supply, so none scores without it."""

from __future__ import annotations

import math
from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import fill, run_python

CORE = r'''
import sys

SUPPLY = "@@SUPPLY@@"  # the oracle writes the delivered supply voltage here
PROBE = @PROBE@
FIELDS = @FIELDS@
SCALE = {"k": 1e3, "M": 1e6, "m": 1e-3, "u": 1e-6}


def value(tok):
    if tok[-1] in SCALE:
        return float(tok[:-1]) * SCALE[tok[-1]]
    return float(tok)


def parse(text, supply):
    elems = []
    for line in text.splitlines():
        line = line.split(";")[0].strip()
        if not line or line.startswith("*"):
            continue
        name, a, b, val = line.split()
        elems.append((name, a, b, float(supply) if val == "?" else value(val)))
    return elems


def solve(a, z):
    n = len(z)
    m = [row[:] + [z[i]] for i, row in enumerate(a)]
    for col in range(n):
        piv = max(range(col, n), key=lambda r: abs(m[r][col]))
        m[col], m[piv] = m[piv], m[col]
        for r in range(col + 1, n):
            f = m[r][col] / m[col][col]
            if f:
                for c in range(col, n + 1):
                    m[r][c] -= f * m[col][c]
    x = [0.0] * n
    for r in range(n - 1, -1, -1):
        x[r] = (m[r][n] - sum(m[r][c] * x[c] for c in range(r + 1, n))) / m[r][r]
    return x


def analyse(text, supply=None):
    elems = parse(text, SUPPLY if supply is None else supply)
    nodes = sorted({n for e in elems for n in e[1:3] if n != "0"}, key=lambda s: int(s[1:]))
    idx = {n: i for i, n in enumerate(nodes)}
    vsrc = [e for e in elems if e[0][0] == "V"]
    size = len(nodes) + len(vsrc)
    a = [[0.0] * size for _ in range(size)]
    z = [0.0] * size
    for name, p, q, val in elems:
        if name[0] == "R":
            g = 1 / val
            for u, w in ((p, q), (q, p)):
                if u != "0":
                    a[idx[u]][idx[u]] += g
                    if w != "0":
                        a[idx[u]][idx[w]] -= g
        elif name[0] == "I":
            if p != "0":
                z[idx[p]] -= val
            if q != "0":
                z[idx[q]] += val
    for j, (name, p, q, val) in enumerate(vsrc):
        r = len(nodes) + j
        for u, s in ((p, 1.0), (q, -1.0)):
            if u != "0":
                a[idx[u]][r] += s
                a[r][idx[u]] += s
        z[r] = val
    x = solve(a, z)
    volts = {n: x[idx[n]] for n in nodes}
    volts["0"] = 0.0
    amps = {name: (volts[p] - volts[q]) / val for name, p, q, val in elems if name[0] == "R"}
    ohms = {name: val for name, p, q, val in elems if name[0] == "R"}
    power = sum(i * i * ohms[name] for name, i in amps.items())
    top = min(amps, key=lambda n: (-abs(amps[n]), int(n[1:])))
    return nodes, volts, amps, power, top


def num(x, d):
    s = "%.*f" % (d, x)
    return s[1:] if s.startswith("-") and float(s) == 0 else s


def report(text, supply=None):
    nodes, volts, amps, power, top = analyse(text, supply)
    out = ["V(%s)=%s\n" % (n, num(volts[n], 4)) for n in nodes]
    if "probe" in FIELDS:
        out.append("I(%s)=%s\n" % (PROBE, num(amps[PROBE] * 1000, 4)))
    if "power" in FIELDS:
        out.append("P_resistors=%s\n" % num(power * 1000, 3))
    if "top" in FIELDS:
        out.append("max_current=%s %s\n" % (top, num(abs(amps[top]) * 1000, 4)))
    return "".join(out)
'''

MAIN = r'''

if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["--node"]:
        print(repr(analyse(sys.stdin.read(), float(args[2]))[1][args[1]]))
    else:
        sys.stdout.write(@REPORT@(sys.stdin.read(), float(args[0]) if args else None))
'''

# The other variants' reports, built on parse() and analyse() (appended to CORE before MAIN).
EXTRA = r'''

PORT = "@PORT@"


def netlist(elems):
    """Element tuples back as netlist text (values in plain ohms, amperes and volts)."""
    return "".join("%s %s %s %r\n" % e for e in elems)


def thevenin(text, supply=None):
    """(V_th, R_th) of PORT against ground: its open-circuit voltage, and the voltage a 1 A test current
    raises there once every source is set to zero (voltage sources shorted, current sources opened)."""
    elems = parse(text, SUPPLY if supply is None else supply)
    v_th = analyse(text, supply)[1][PORT]
    dead = [(n, p, q, val if n[0] == "R" else 0.0) for n, p, q, val in elems] + [("Itest", "0", PORT, 1.0)]
    return v_th, analyse(netlist(dead), 0)[1][PORT]


def report_thevenin(text, supply=None):
    v_th, r_th = thevenin(text, supply)
    out = ["V_th=%s\n" % num(v_th, 4)]
    if "rth" in FIELDS:
        out.append("R_th=%s\n" % num(r_th, 3))
    out.append("I_N=%s\n" % num(v_th / r_th * 1000, 4))
    if "pmax" in FIELDS:
        out.append("P_max=%s\n" % num(v_th * v_th / (4 * r_th) * 1000, 3))
    return "".join(out)


def flows(text, supply=None):
    """Every resistor as (name, from, to, amperes, watts), its nodes in the direction its current really
    flows, largest printed current first (ties, such as resistors in series, by resistor number)."""
    elems = parse(text, SUPPLY if supply is None else supply)
    amps = analyse(text, supply)[2]
    out = []
    for name, p, q, ohms in elems:
        if name[0] == "R":
            i = amps[name]
            out.append((name, p, q, i, i * i * ohms) if i >= 0 else (name, q, p, -i, i * i * ohms))
    return sorted(out, key=lambda f: (-float(num(f[3] * 1000, 4)), int(f[0][1:])))


def report_flows(text, supply=None):
    out, found = [], flows(text, supply)
    for name, p, q, amps, watts in found:
        power = " %s" % num(watts * 1000, 3) if "power" in FIELDS else ""
        out.append("%s %s %s %s%s\n" % (name, p, q, num(amps * 1000, 4), power))
    if "total" in FIELDS:
        out.append("P_resistors=%s\n" % num(sum(f[4] for f in found) * 1000, 3))
    return "".join(out)
'''

REFERENCE = CORE + MAIN
VARIANTS = ("operating_point", "thevenin", "branch_currents")
VARIANT_REPORT = {"operating_point": "report", "thevenin": "report_thevenin", "branch_currents": "report_flows"}
# What the knobs' report fields (probe, power, top) become in the other variants (None: no extra line).
VARIANT_FIELDS = {"thevenin": {"probe": "pmax", "power": None, "top": None},
                  "branch_currents": {"probe": "power", "power": "total", "top": None}}
OUTPUT = {"thevenin": "/app/out/thevenin.txt", "branch_currents": "/app/out/branch_currents.txt"}

E12 = (1.0, 1.2, 1.5, 1.8, 2.2, 2.7, 3.3, 3.9, 4.7, 5.6, 6.8, 8.2)


def safe(x: float, d: int) -> bool:
    f = abs(x) * 10 ** d
    return abs(f - math.floor(f) - 0.5) > 1e-3


def ohms_text(rng, prefixes: bool) -> str:
    if not prefixes:
        return str(int(round(rng.choice(E12) * rng.choice([100, 1000]))))
    mant, dec = rng.choice(E12), rng.choice([10, 100, 1000, 10000, 100000])
    r = mant * dec
    if r >= 1e6:
        return f"{r / 1e6:g}M"
    if r >= 1e3:
        return f"{r / 1e3:g}k"
    return f"{r:g}"


def netlist(rng, k: "Knobs", probe: str) -> str:
    n = rng.randint(*k.nodes)
    nodes = ["0"] + [f"N{i}" for i in range(1, n + 1)]
    edges = []
    for i in range(1, len(nodes)):  # a random spanning tree over ground and the nodes
        edges.append((nodes[rng.randrange(i)], nodes[i]))
    while len(edges) < n + k.extra:
        p, q = rng.sample(nodes, 2)
        edges.append((p, q))
    rng.shuffle(edges)
    lines = []
    for i, (p, q) in enumerate(edges, 1):
        if rng.random() < 0.5:
            p, q = q, p
        lines.append(f"R{i} {p} {q} {ohms_text(rng, k.prefixes)}")
    for i in range(1, k.isrc + 1):
        p, q = rng.sample(nodes, 2)
        amps = rng.choice([f"{rng.randint(1, 20)}m", f"{rng.randrange(100, 990, 10)}u", f"{rng.randint(1, 9) / 2:g}m"])
        lines.append(f"I{i} {p} {q} {amps}")
    lines.append("V1 N1 0 ?")
    if k.floating:
        p, q = rng.sample(nodes[2:], 2)
        lines.append(f"V2 {p} {q} {rng.randint(1, 9)}")
    rng.shuffle(lines)
    if k.comments:
        lines.insert(rng.randrange(len(lines)), "* probe points were moved in rev B")
        for _ in range(2):
            j = rng.randrange(len(lines))
            if not lines[j].startswith("*"):
                lines[j] += rng.choice(["  ; hand-soldered", " ; replaced", "   ; check tolerance"])
    return f"* bench circuit {rng.randint(10, 99)}\n" + "\n".join(lines) + "\n"


@dataclass(frozen=True)
class Knobs:
    nodes: tuple[int, int]  # range of the number of non-ground nodes
    extra: int  # resistors beyond a spanning tree (loops)
    isrc: int  # independent current sources
    prefixes: bool  # values with SI suffixes (k, M, m, u)
    floating: bool  # a second voltage source between two non-ground nodes
    comments: bool  # `*` comment lines and `;` trailing comments
    fields: tuple[str, ...]  # report lines after the node voltages: probe, power, top


VALUE = "the supply voltage"


def fields(t: TaskBuilder) -> tuple[str, ...]:
    """The report lines beyond the main answer that this level (and grading) asks for in this variant."""
    if t.variant == "operating_point":
        return t.knobs.fields
    more = tuple(f for f in (VARIANT_FIELDS[t.variant][x] for x in t.knobs.fields) if f)
    # R_th does not depend on the supply: under partial credit it would score without the delivered value.
    return more if t.variant != "thevenin" or t.partial_credit else ("rth", *more)


class Setup:
    """One task's draws: the supply (the delivered value, a few volts: too short to protect), the probed
    resistor (and the port, in other variants) and the reference filled with them; ``circuit()`` draws a
    netlist whose rounded answers are safe from float noise."""

    def __init__(self, t: TaskBuilder):
        k, rng = t.knobs, t.rng
        self.k, self.rng, self.variant = k, rng, t.variant
        for _ in range(VARIANTS.index(t.variant)):  # a seed's circuits differ between the variants
            rng.random()
        self.supply = rng.choice([5, 9, 12, 15, 18, 24, 36, 48])
        self.probe = f"R{rng.randint(1, 3)}"
        if t.variant == "operating_point":
            self.src = fill(REFERENCE, PROBE=f'"{self.probe}"', FIELDS=k.fields, REPORT="report")
        else:
            self.port = f"N{rng.randint(2, k.nodes[0])}"  # a node every drawn circuit has, never the supply's
            self.src = fill(CORE + EXTRA + MAIN, PROBE=f'"{self.probe}"', FIELDS=fields(t), PORT=self.port,
                            REPORT=VARIANT_REPORT[t.variant])
        self.ns = run_python(self.src)

    def robust(self, text: str) -> bool:
        nodes, volts, amps, power, top = self.ns["analyse"](text, self.supply)
        vals = [(volts[n], 4) for n in nodes] + [(amps[self.probe] * 1000, 4), (power * 1000, 3)]
        if not all(safe(x, d) and abs(x) > 1e-3 for x, d in vals):
            return False
        mags = sorted((abs(i) for i in amps.values()), reverse=True)
        return mags[0] - mags[1] > 1e-6 and safe(mags[0] * 1000, 4) and self.fits(text)

    def fits(self, text: str) -> bool:
        """Are the other variants' numbers safe to round too, and does each line they report under partial
        credit move with the supply (so that none scores without the delivered value)?"""
        if self.variant == "operating_point":
            return True
        if self.variant == "thevenin":
            v_th, r_th = self.ns["thevenin"](text, self.supply)
            vals = [(v_th, 4), (r_th, 3), (v_th / r_th * 1000, 4)]
            powers = [v_th * v_th / (4 * r_th) * 1000]
        else:
            now = self.ns["flows"](text, self.supply)
            vals = [(f[3] * 1000, 4) for f in now]
            powers = [f[4] * 1000 for f in now] + [sum(f[4] for f in now) * 1000]
        if not all(safe(x, d) and abs(x) > 1e-3 for x, d in vals) or not all(safe(x, 3) for x in powers):
            return False
        # Each line is monotonic in the supply on either side of it: a volt off either way must show.
        lines = {s: set(self.report(text, s).splitlines()) - {""} for s in (self.supply - 1, self.supply,
                                                                            self.supply + 1)}
        mine = {x for x in lines[self.supply] if not x.startswith("R_th=")}
        return not mine & (lines[self.supply - 1] | lines[self.supply + 1])

    def circuit(self) -> str:
        for _ in range(500):
            text = netlist(self.rng, self.k, self.probe)
            if self.robust(text):
                return text
        raise FamilyError("resistor_network_nodal: no netlist with safely rounded answers in 500 draws")

    def report(self, text: str, supply: float | None = None) -> str:
        return self.ns[VARIANT_REPORT[self.variant]](text, self.supply if supply is None else supply)


@register
class ResistorNetworkNodal(Family):
    name = "resistor_network_nodal"
    domain = "scientific_computing"
    skill_types = ("Linear Algebra",)
    primitive_skills = ("matrix assembly", "Gaussian elimination", "modified nodal analysis", "SI prefix parsing",
                        "unit handling", "floating-point rounding control")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol", "fuzz_equivalence")
    programs = {"Python": REFERENCE}
    variants = VARIANTS
    # Level 0: two nodes and three resistors, a voltage divider at most (one awk line).
    levels = {0: Knobs(nodes=(2, 2), extra=1, isrc=0, prefixes=False, floating=False, comments=False, fields=()),
              1: Knobs(nodes=(3, 4), extra=1, isrc=0, prefixes=False, floating=False, comments=False, fields=()),
              2: Knobs(nodes=(5, 7), extra=3, isrc=0, prefixes=True, floating=False, comments=False,
                       fields=("probe",)),
              3: Knobs(nodes=(7, 9), extra=4, isrc=2, prefixes=True, floating=False, comments=True,
                       fields=("probe", "power")),
              4: Knobs(nodes=(9, 12), extra=6, isrc=2, prefixes=True, floating=True, comments=True,
                       fields=("probe", "power", "top"))}

    def rules(self, t: TaskBuilder, d: Setup) -> tuple[str, str]:
        """(the netlist's rules, the output format)."""
        k, probe = t.knobs, d.probe
        s = ["Each element line is `<name> <node> <node> <value>`; node `0` is ground (0 V). Resistor names start "
             "with `R` (value in ohms), independent voltage sources with `V`: `V<x> a b value` holds "
             "V(a) - V(b) = value volts."]
        if k.isrc:
            s.append("Independent current sources start with `I`: `I<x> a b value` drives value amperes from node a "
                     "through the source to node b (it draws that current out of a and pushes it into b).")
        if k.prefixes:
            s.append("Values may carry an SI suffix: `k` = 1e3, `M` = 1e6, `m` = 1e-3, `u` = 1e-6 (case matters).")
        if k.comments:
            s.append("Lines starting with `*` are comments, and `;` starts a comment that runs to the end of the "
                     "line.")
        else:
            s.append("The first line, starting with `*`, is a title.")
        s.append("The value of the supply `V1` is written as `?` in the netlist: it is given below, in volts.")
        if t.variant != "operating_point":
            return " ".join(s), self.variant_format(t.variant, fields(t), d)
        fmt = ["one line `V(<node>)=<volts>` per node other than ground, in increasing node number (N1, N2, ..., "
               "N10, ...), volts rounded to 4 decimals"]
        if "probe" in k.fields:
            fmt.append(f"then `I({probe})=<mA>`: the current through {probe} flowing from its first listed node to "
                       "its second, in milliamperes, 4 decimals (negative if it flows the other way)")
        if "power" in k.fields:
            fmt.append("then `P_resistors=<mW>`: the total power dissipated in all resistors, in milliwatts, "
                       "3 decimals")
        if "top" in k.fields:
            fmt.append("then `max_current=<name> <mA>`: the resistor carrying the largest current magnitude and that "
                       "magnitude in milliamperes, 4 decimals")
        return " ".join(s), "; ".join(fmt) + ". Never write a negative zero."

    def variant_format(self, variant: str, fields: tuple[str, ...], d: Setup) -> str:
        """What the other variants ask for, and their output format."""
        if variant == "thevenin":
            port = d.port
            fmt = [f"`V_th=<volts>`: the open-circuit voltage of {port}, 4 decimals"]
            if "rth" in fields:
                fmt.append("then `R_th=<ohms>`: the resistance seen into the port with every independent source set "
                           "to zero (voltage sources shorted, current sources opened), 3 decimals")
            fmt.append(f"then `I_N=<mA>`: the Norton current, the current that a short circuit from {port} to ground "
                       "would carry from the node into ground, in milliamperes, 4 decimals")
            if "pmax" in fields:
                fmt.append(f"then `P_max=<mW>`: the largest power that a resistive load between {port} and ground "
                           "could draw, in milliwatts, 3 decimals")
            ask = (f"I need its Thevenin equivalent as seen from node {port} against ground (the port open, every "
                   "source as in the netlist). Output, one line each: ")
        else:
            line = "`<name> <from> <to> <mA> <mW>`" if "power" in fields else "`<name> <from> <to> <mA>`"
            fmt = [f"one line {line} per resistor: its two nodes in the direction its current really flows (from "
                   "the higher potential to the lower) and that current in milliamperes, 4 decimals"
                   + (", then the power it dissipates in milliwatts, 3 decimals" if "power" in fields else "")
                   + "; the largest current first, equal currents (as printed) by resistor number (R2 before R10)"]
            if "total" in fields:
                fmt.append("then `P_resistors=<mW>`: the total power dissipated in all resistors, in milliwatts, "
                           "3 decimals")
            ask = "I need the current through every resistor at its DC operating point. Output: "
        return ask + "; ".join(fmt) + ". Never write a negative zero."

    def program_case(self, t: TaskBuilder) -> None:
        d = Setup(t)
        rules, fmt = self.rules(t, d)
        cases = [(text, d.report(text)) for text in (d.circuit() for _ in range(10))]
        prints = "the DC operating point" if t.variant == "operating_point" else "what I describe below"
        t.say("Our test benches are described by small SPICE-like netlists and I want a solver for them: it "
              f"reads one netlist on standard input and prints {prints}. " + rules)
        v = t.deliver(str(d.supply), VALUE)
        t.say(fmt if t.variant != "operating_point" else f"Output: {fmt}")
        t.expect_program("Every bench runs from the same supply, the one given above: hard-code it.", cases,
                         {"Python": d.src})
        t.solve(f'test -n "{v}"\nsed -i "s/@@SUPPLY@@/{v}/" /app/solution.py')

    def output_case(self, t: TaskBuilder) -> None:
        d = Setup(t)
        rules, fmt = self.rules(t, d)
        text = d.circuit()
        t.add_file("/app/circuit/bench.cir", text)
        need = "I need its DC operating point" if t.variant == "operating_point" else "It is solved at DC"
        t.say("`/app/circuit/bench.cir` is the netlist of a DC test bench, in a small SPICE-like format. "
              f"{need} (every source is constant). " + rules)
        v = t.deliver(str(d.supply), VALUE)
        t.add_solution_file("mna.py", d.src)
        if t.variant != "operating_point":  # every line moves with the supply: graded as lines, even partially
            out = OUTPUT[t.variant]
            t.say(fmt)
            t.solve(f'test -n "{v}"\nmkdir -p /app/out\npython3 /solution/mna.py "{v}" < /app/circuit/bench.cir '
                    f'> {out}')
            t.expect_output(out, d.report(text), "the result (format above)")
            return
        if t.partial_credit:  # one number graded by its relative error, not report lines
            nodes, volts = d.ns["analyse"](text, d.supply)[:2]
            node = nodes[-1]
            t.say(f"I only need the voltage of node {node} with respect to ground, in volts.")
            t.solve(f'test -n "{v}"\nmkdir -p /app/out\npython3 /solution/mna.py --node {node} "{v}" '
                    f'< /app/circuit/bench.cir > /app/out/v_{node}.txt')
            t.expect_number(f"/app/out/v_{node}.txt", volts[node], 1e-6, f"V({node}) in volts (unrounded)")
            return
        t.say(f"Output format: {fmt}")
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\npython3 /solution/mna.py "{v}" < /app/circuit/bench.cir '
                '> /app/out/operating_point.txt')
        t.expect_output("/app/out/operating_point.txt", d.report(text), "the operating point (format above)")
