"""What are the node voltages of this resistor network? A SPICE-like netlist (SI prefixes, current
sources and a floating voltage source at higher levels) whose supply voltage is delivered separately,
solved by modified nodal analysis: assemble the conductance matrix, solve the linear system, then
derive a branch current, the dissipated power and the most loaded resistor."""

from __future__ import annotations

import math
from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import fill, run_python

REFERENCE = r'''
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


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["--node"]:
        print(repr(analyse(sys.stdin.read(), float(args[2]))[1][args[1]]))
    else:
        sys.stdout.write(report(sys.stdin.read(), float(args[0]) if args else None))
'''

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


class Setup:
    """One task's draws: the supply (the delivered value, a few volts: too short to protect), the probed
    resistor and the reference filled with them; ``circuit()`` draws a netlist whose rounded answers
    are safe from float noise."""

    def __init__(self, t: TaskBuilder):
        k, rng = t.knobs, t.rng
        self.k, self.rng = k, rng
        self.supply = rng.choice([5, 9, 12, 15, 18, 24, 36, 48])
        self.probe = f"R{rng.randint(1, 3)}"
        self.src = fill(REFERENCE, PROBE=f'"{self.probe}"', FIELDS=k.fields)
        self.ns = run_python(self.src)

    def robust(self, text: str) -> bool:
        nodes, volts, amps, power, top = self.ns["analyse"](text, self.supply)
        vals = [(volts[n], 4) for n in nodes] + [(amps[self.probe] * 1000, 4), (power * 1000, 3)]
        if not all(safe(x, d) and abs(x) > 1e-3 for x, d in vals):
            return False
        mags = sorted((abs(i) for i in amps.values()), reverse=True)
        return mags[0] - mags[1] > 1e-6 and safe(mags[0] * 1000, 4)

    def circuit(self) -> str:
        for _ in range(500):
            text = netlist(self.rng, self.k, self.probe)
            if self.robust(text):
                return text
        raise FamilyError("resistor_network_nodal: no netlist with safely rounded answers in 500 draws")

    def report(self, text: str) -> str:
        return self.ns["report"](text, self.supply)


@register
class ResistorNetworkNodal(Family):
    name = "resistor_network_nodal"
    domain = "scientific_computing"
    skill_types = ("Linear Algebra",)
    primitive_skills = ("matrix assembly", "Gaussian elimination", "modified nodal analysis", "SI prefix parsing",
                        "unit handling", "floating-point rounding control")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol", "fuzz_equivalence")
    programs = {"Python": REFERENCE}
    # Level 0: two nodes and three resistors, a voltage divider at most (one awk line).
    levels = {0: Knobs(nodes=(2, 2), extra=1, isrc=0, prefixes=False, floating=False, comments=False, fields=()),
              1: Knobs(nodes=(3, 4), extra=1, isrc=0, prefixes=False, floating=False, comments=False, fields=()),
              2: Knobs(nodes=(5, 7), extra=3, isrc=0, prefixes=True, floating=False, comments=False,
                       fields=("probe",)),
              3: Knobs(nodes=(7, 9), extra=4, isrc=2, prefixes=True, floating=False, comments=True,
                       fields=("probe", "power")),
              4: Knobs(nodes=(9, 12), extra=6, isrc=2, prefixes=True, floating=True, comments=True,
                       fields=("probe", "power", "top"))}

    def rules(self, k: Knobs, probe: str) -> tuple[str, str]:
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

    def program_case(self, t: TaskBuilder) -> None:
        d = Setup(t)
        rules, fmt = self.rules(t.knobs, d.probe)
        cases = [(text, d.report(text)) for text in (d.circuit() for _ in range(10))]
        t.say("Our test benches are described by small SPICE-like netlists and I want a solver for them: it "
              "reads one netlist on standard input and prints the DC operating point. " + rules)
        v = t.deliver(str(d.supply), VALUE)
        t.say(f"Output: {fmt}")
        t.expect_program("Every bench runs from the same supply, the one given above: hard-code it.", cases,
                         {"Python": d.src})
        t.solve(f'test -n "{v}"\nsed -i "s/@@SUPPLY@@/{v}/" /app/solution.py')

    def output_case(self, t: TaskBuilder) -> None:
        d = Setup(t)
        rules, fmt = self.rules(t.knobs, d.probe)
        text = d.circuit()
        t.add_file("/app/circuit/bench.cir", text)
        t.say("`/app/circuit/bench.cir` is the netlist of a DC test bench, in a small SPICE-like format. I need its "
              "DC operating point (every source is constant). " + rules)
        v = t.deliver(str(d.supply), VALUE)
        t.add_solution_file("mna.py", d.src)
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
