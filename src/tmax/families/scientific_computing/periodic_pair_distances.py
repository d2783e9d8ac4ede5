"""Pair distances in molecular-dynamics snapshots. Several runs sit in one store, each filed under a hash
of its run name (delivered separately); each holds an extended-XYZ trajectory. Variants: `neighbors`
counts every atom's neighbours within a cutoff, `closest` finds each frame's closest pair, `rdf`
histograms the pair distances and normalises them to a radial distribution function. Higher levels
switch on periodic boundaries (minimum image convention), several frames with unwrapped coordinates,
an equilibration period to skip, species-resolved (partial) counts and orthorhombic boxes."""

from __future__ import annotations

from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.unseen import distinct, key_cmd, key_of, unseen

REFERENCE = r'''
import math
import shlex
import sys

PERIODIC = @PERIODIC@
CUTOFF = @CUTOFF@  # angstrom (neighbors)
BIN = @BIN@  # angstrom (rdf)
EQUIL = @EQUIL@  # frames with a step below this are equilibration (all variants skip them)
PAIR = @PAIR@  # None: every atom; else (centre species, neighbour species)


def frames(text):
    """[(step, box lengths, [(species, x, y, z)])] from an extended-XYZ trajectory."""
    lines, out, i = text.splitlines(), [], 0
    while i < len(lines) and lines[i].strip():
        n = int(lines[i])
        info = dict(tok.split("=", 1) for tok in shlex.split(lines[i + 1]) if "=" in tok)
        lat = [float(x) for x in info["Lattice"].split()]
        box = (lat[0], lat[4], lat[8])
        atoms = [(p[0], float(p[1]), float(p[2]), float(p[3])) for p in (ln.split() for ln in lines[i + 2:i + 2 + n])]
        if int(info.get("step", "0")) >= EQUIL:
            out.append((int(info.get("step", "0")), box, atoms))
        i += 2 + n
    return out


def dist(a, b, box):
    s = 0.0
    for k in range(3):
        d = a[k + 1] - b[k + 1]
        if PERIODIC:
            d -= box[k] * round(d / box[k])
        s += d * d
    return math.sqrt(s)


def wanted(sa, sb):
    return PAIR is None or (sa, sb) == PAIR or (sb, sa) == PAIR


def neighbors(text):
    step, box, atoms = frames(text)[-1]
    out = []
    for i, a in enumerate(atoms):
        if PAIR is not None and a[0] != PAIR[0]:
            continue
        c = sum(1 for j, b in enumerate(atoms)
                if j != i and (PAIR is None or b[0] == PAIR[1]) and dist(a, b, box) < CUTOFF)
        out.append("%d %s %d\n" % (i + 1, a[0], c))
    return "".join(out)


def closest(text):
    out = []
    for step, box, atoms in frames(text):
        best = min((dist(a, b, box), i, j) for i, a in enumerate(atoms) for j, b in enumerate(atoms)
                   if i < j and wanted(a[0], b[0]))
        out.append("%d %d %d %.4f\n" % (step, best[1] + 1, best[2] + 1, best[0]))
    return "".join(out)


def rdf(text):
    fr = frames(text)
    step, box, atoms = fr[-1]
    vol = box[0] * box[1] * box[2]
    rmax = min(box) / 2
    nbins = int(rmax / BIN)
    counts = [0] * nbins
    for i, a in enumerate(atoms):
        for j, b in enumerate(atoms):
            if i < j and wanted(a[0], b[0]):
                k = int(dist(a, b, box) / BIN)
                if k < nbins:
                    counts[k] += 1
    if PAIR is None:
        pairs = len(atoms) * (len(atoms) - 1) / 2
    else:
        na = sum(1 for a in atoms if a[0] == PAIR[0])
        nb = sum(1 for a in atoms if a[0] == PAIR[1])
        pairs = na * nb if PAIR[0] != PAIR[1] else na * (na - 1) / 2
    out = []
    for k, c in enumerate(counts):
        if not c:
            continue
        shell = 4 / 3 * math.pi * (((k + 1) * BIN) ** 3 - (k * BIN) ** 3)
        out.append("%.2f %d %.4f\n" % (k * BIN, c, c / (pairs * shell / vol)))
    return "".join(out)


if __name__ == "__main__":  # neighbors|closest|rdf < traj.xyz
    sys.stdout.write({"neighbors": neighbors, "closest": closest, "rdf": rdf}[sys.argv[1]](sys.stdin.read()))
'''


PERIODIC_TEXT = {True: "The box is periodic: every distance is the minimum image one (wrap each component of the "
                       "separation by the box length, d - L * round(d / L)).",
                 False: "The system is in open space (no periodic boundaries): plain Euclidean distances."}
TASKS = {  # filled with this task's values (keyword arguments: frame, kept, cutoff, width, species, kind, ...)
    "neighbors": lambda frame, species, cutoff, **_: (
        f"In {frame}, count for each atom{species} the other atoms closer than {cutoff} angstrom. Write one line per "
        "such atom, `<number> <species> <count>`, in atom order."),
    "closest": lambda kept, kind, **_: (
        f"For each {kept}frame find the closest pair of atoms{kind} and write `<step> <i> <j> <distance>` (atom "
        "numbers with i < j, the distance in angstrom with 4 decimals), one line per frame in file order."),
    "rdf": lambda chosen, frame, width, npairs, **_: (
        f"Histogram the {chosen}pair distances of {frame} in bins of {width} angstrom starting at 0 (bin k holds "
        "k*w <= r < (k+1)*w), for every whole bin below half the shortest box length (distances beyond are not "
        "counted), and normalise each count to the radial distribution function g = count / (P * V_shell / V): P "
        f"is the number of distinct pairs of the kind ({npairs}), V_shell = 4/3 pi (r_hi^3 - r_lo^3) and V the box "
        "volume. Write one line per bin that holds at least one pair, `<r_lo with 2 decimals> <count> <g with 4 "
        "decimals>`, in order of r.")}


@dataclass(frozen=True)
class Knobs:
    atoms: int
    frames: int  # frames written (steps 0, 100, ...)
    periodic: bool  # periodic boundaries: minimum image convention
    unwrapped: bool  # coordinates may lie outside the box
    equil: int  # frames to skip as equilibration (0: none)
    partial: bool  # species-resolved: one (centre, neighbour) pair
    ortho: bool  # orthorhombic box (else cubic)
    decoys: int  # other runs in the store


@register
class PeriodicPairDistances(Family):
    name = "periodic_pair_distances"
    domain = "scientific_computing"
    skill_types = ("Simulation", "Numerical Methods")
    primitive_skills = ("boundary condition handling", "phase-space bookkeeping", "tolerance-based comparison",
                        "floating-point rounding control")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("neighbors", "closest", "rdf")
    # Level 0: one small frame in open space: one awk program with a double loop (after a sha256sum).
    levels = {0: Knobs(atoms=6, frames=1, periodic=False, unwrapped=False, equil=0, partial=False, ortho=False,
                       decoys=2),
              1: Knobs(atoms=12, frames=1, periodic=True, unwrapped=False, equil=0, partial=False, ortho=False,
                       decoys=3),
              2: Knobs(atoms=20, frames=3, periodic=True, unwrapped=True, equil=0, partial=False, ortho=False,
                       decoys=3),
              3: Knobs(atoms=30, frames=5, periodic=True, unwrapped=True, equil=2, partial=True, ortho=False,
                       decoys=3),
              4: Knobs(atoms=40, frames=6, periodic=True, unwrapped=True, equil=2, partial=True, ortho=True,
                       decoys=4)}

    def _traj(self, t: TaskBuilder, box: tuple[float, float, float]) -> str:
        k, rng = t.knobs, t.rng
        species = [rng.choice(("O", "O", "H", "H", "H", "Na")) for _ in range(k.atoms)]
        pos = [[rng.uniform(0, b) for b in box] for _ in range(k.atoms)]
        out = []
        for f in range(k.frames):
            if f:
                pos = [[p[d] + rng.uniform(-0.6, 0.6) for d in range(3)] for p in pos]
            lat = " ".join("%.4f" % x for x in (box[0], 0, 0, 0, box[1], 0, 0, 0, box[2]))
            head = f'Lattice="{lat}" Properties=species:S:1:pos:R:3 step={f * 100}'
            out += [str(k.atoms), head]
            for s, p in zip(species, pos):
                q = [x if k.unwrapped else x % b for x, b in zip(p, box)]
                out.append("%-2s %10.5f %10.5f %10.5f" % (s, *q))
        return "".join(x + "\n" for x in out)

    def _robust(self, ns: dict, text: str, variant: str) -> bool:
        """No distance within 1e-4 of the cutoff or a bin edge, closest pairs unique by a margin, and the
        printed numbers clear of rounding edges."""
        fr = ns["frames"](text)
        cut, width = ns["CUTOFF"], ns["BIN"]
        for step, box, atoms in fr:
            ds = sorted(ns["dist"](a, b, box) for i, a in enumerate(atoms) for j, b in enumerate(atoms)
                        if i < j and ns["wanted"](a[0], b[0]))
            if len(ds) < 2 or ds[1] - ds[0] < 1e-3 or abs(ds[0] * 1e4 % 1 - 0.5) < 1e-3:
                return False
            if any(abs(d - cut) < 1e-4 or abs(d / width - round(d / width)) < 1e-5 for d in ds):
                return False
        if variant == "neighbors":
            return any(line.split()[2] != "0" for line in ns["neighbors"](text).splitlines())
        if variant == "rdf":
            vals = [float(line.split()[2]) * 1e4 for line in ns["rdf"](text).splitlines()]
            return sum(1 for v in vals if v) >= 3 and all(abs(v % 1 - 0.5) > 1e-3 for v in vals)
        return True

    def output_case(self, t: TaskBuilder) -> None:
        k, rng, variant = t.knobs, t.rng, t.variant
        edge = round(rng.uniform(9, 14), 3)
        box = (edge, round(edge * rng.uniform(1.1, 1.4), 3), round(edge * rng.uniform(0.8, 0.95), 3)) if k.ortho \
            else (edge, edge, edge)
        cutoff = round(rng.uniform(2.6, 3.4), 2)
        width = rng.choice((0.25, 0.5))
        pair = rng.choice((("O", "H"), ("Na", "O"), ("O", "O"))) if k.partial else None
        src = fill(REFERENCE, PERIODIC=k.periodic, CUTOFF=cutoff, BIN=width, EQUIL=k.equil * 100, PAIR=pair)
        ns = run_python(src)
        runs = []
        for _ in range(1 + k.decoys):
            for _ in range(100):
                text = self._traj(t, box)
                if self._robust(ns, text, variant):
                    break
            else:
                raise FamilyError("periodic_pair_distances: no trajectory with clear distances in 100 draws")
            runs.append(text)
        # Runs are filed by a hash of their names: the delivered name, drawn clear of every file, selects one,
        # and the other runs (built the same way) are indistinguishable without it.
        target = unseen(t, lambda: t.code(2), *runs)
        names = [target, *distinct(lambda: t.code(2), k.decoys, [target])]
        for name, text in sorted(zip(names, runs), key=lambda p: key_of(p[0])):
            t.add_file(f"/app/md/{key_of(name)}/traj.xyz", text)
        truth = ns[variant](runs[0])
        # One sentence per trap that is on, then the task of the variant (filled with this task's values).
        rules = [PERIODIC_TEXT[k.periodic]]
        if k.unwrapped:
            rules.append("Coordinates are unwrapped and may lie outside the box.")
        if k.equil:
            rules.append(f"Frames with step below {k.equil * 100} are equilibration: ignore them.")
        if pair:
            rules.append(f"Only {pair[0]}-{pair[1]} pairs matter" + (
                f": count around each {pair[0]} atom its {pair[1]} neighbours." if variant == "neighbors" else "."))
        t.say("Our MD runs are stored under `/app/md/<KEY>/`, where KEY is the first 16 hex digits of the SHA-256 of "
              "the run's name (`printf %s <name> | sha256sum`). Each run's `traj.xyz` is an extended-XYZ trajectory: "
              "per frame an atom count line, a comment line of `key=value` fields (`step` the MD step, `Lattice` the "
              "nine box-matrix entries in angstrom: a diagonal box), then one `species x y z` line per atom "
              "(angstrom); atoms are numbered from 1 in file order. " + " ".join(rules))
        who = t.deliver(target, "the run name")
        t.say(TASKS[variant](
            frame="the last frame" + (" kept" if k.equil else ""), kept="kept " if k.equil else "", cutoff=cutoff,
            width=width, species=f" of species {pair[0]}" if pair else "", kind=" of that kind" if pair else "",
            chosen="chosen " if pair else "", npairs="N_a * N_b for two species, N(N-1)/2 for one" if pair
            else "N(N-1)/2"))
        t.add_solution_file("pairs.py", src)
        out = f"/app/out/{variant}.txt"
        t.solve(f'test -n "{who}"\nmkdir -p /app/out\n'
                f'python3 /solution/pairs.py {variant} < "/app/md/{key_cmd(who)}/traj.xyz" > {out}')
        t.expect_output(out, truth, {"neighbors": "the neighbour counts", "closest": "the closest pairs",
                                     "rdf": "the RDF"}[variant])
