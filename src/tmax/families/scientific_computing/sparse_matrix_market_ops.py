"""Sparse matrices in Matrix Market coordinate files, several in one store, each filed under a hash of its
name (the name is delivered separately). Variants: `spmv` multiplies the named matrix by its vector,
`csr` converts it to compressed sparse row arrays, `dominance` lists the rows that are not strictly
diagonally dominant. Higher levels add comment and blank lines, unsorted entries, duplicate entries
that add up (and may cancel), empty rows, scientific notation and symmetric storage (only the lower
triangle written, mirrored on reading)."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from tmax.families.base import Family, TaskBuilder, register
from tmax.families.programs import run_python
from tmax.families.unseen import distinct, key_cmd, key_of, unseen

# Decimal arithmetic: entries have 3 decimals and vector components 3, so every sum is exact.
REFERENCE = r'''
import sys
from decimal import Decimal


def read_mtx(text):
    """(rows, cols, {(i, j): value}) with 1-based indices; duplicates add up, zero totals dropped."""
    lines = text.splitlines()
    symmetric = "symmetric" in lines[0].lower().split()
    body = [ln.split() for ln in lines[1:] if ln.strip() and not ln.lstrip().startswith("%")]
    rows, cols, _ = (int(x) for x in body[0])
    acc = {}
    for i, j, v in ((int(a), int(b), Decimal(c)) for a, b, c in body[1:]):
        acc[(i, j)] = acc.get((i, j), Decimal(0)) + v
        if symmetric and i != j:
            acc[(j, i)] = acc.get((j, i), Decimal(0)) + v
    return rows, cols, {k: v for k, v in acc.items() if v != 0}


def fmt(v, places):
    return "%s" % v.quantize(Decimal(1).scaleb(-places))


def spmv(text, xtext):
    rows, _, a = read_mtx(text)
    x = [Decimal(s) for s in xtext.split()]
    y = [Decimal(0)] * rows
    for (i, j), v in a.items():
        y[i - 1] += v * x[j - 1]
    return "".join("%d %s\n" % (i + 1, fmt(v, 6)) for i, v in enumerate(y))


def csr(text):
    rows, _, a = read_mtx(text)
    keys = sorted(a)
    ptr = [0] * (rows + 1)
    for i, _ in keys:
        ptr[i] += 1
    for i in range(rows):
        ptr[i + 1] += ptr[i]
    return ("row_ptr: %s\ncol_idx: %s\nvalues: %s\n"
            % (" ".join(map(str, ptr)), " ".join(str(j - 1) for _, j in keys), " ".join(fmt(a[k], 3) for k in keys)))


def dominance(text):
    rows, _, a = read_mtx(text)
    diag, off = [Decimal(0)] * rows, [Decimal(0)] * rows
    for (i, j), v in a.items():
        if i == j:
            diag[i - 1] = abs(v)
        else:
            off[i - 1] += abs(v)
    return "".join("%d %s %s\n" % (i + 1, fmt(diag[i], 3), fmt(off[i], 3))
                   for i in range(rows) if diag[i] <= off[i])


if __name__ == "__main__":  # spmv|csr|dominance DIR (holding A.mtx and x.txt)
    mode, d = sys.argv[1], sys.argv[2]
    text = open(d + "/A.mtx").read()
    if mode == "spmv":
        sys.stdout.write(spmv(text, open(d + "/x.txt").read()))
    else:
        sys.stdout.write(csr(text) if mode == "csr" else dominance(text))
'''


# The format's traps, each said when its knob is on.
RULES = (("comments", "Lines starting with `%` are comments and blank lines carry nothing."),
         ("shuffle", "Entries are in no particular order."),
         ("dupes", "The same (i, j) may appear several times: the values add up, and a position whose total is "
                   "exactly zero holds no entry."),
         ("symmetric", "A header saying `symmetric` means only the lower triangle is written: each off-diagonal "
                       "entry (i, j) also stands at (j, i). Values may be written in scientific notation."),
         ("empty_rows", "Some rows have no entries at all."))

# variant -> (what to compute and write, what the grader calls it)
ASKS = {"spmv": ("Multiply the named matrix by the vector in `x.txt` beside it (one component per line, in order): "
                 "write `y = A x` as one line per row, `<row> <y_row>` with the 1-based row number and the value to "
                 "exactly 6 decimals (no rounding is needed: every product is exact at 6 decimals), rows 1 to n in "
                 "order, every row included.", "the product vector"),
        "csr": ("Convert the named matrix to compressed sparse row form with 0-based indices, columns in ascending "
                "order within each row. Write exactly three lines: `row_ptr: ` then the n+1 row pointers, `col_idx: ` "
                "then the column index of each stored entry, `values: ` then each entry's value with 3 decimals, all "
                "separated by single spaces.", "the CSR arrays"),
        "dominance": ("List the rows of the named matrix that are not strictly diagonally dominant, that is where "
                      "|a_ii| <= sum over j != i of |a_ij| (a missing diagonal counts as 0): one line per such row, "
                      "`<row> <|a_ii|> <off-diagonal sum>`, 1-based row numbers in ascending order, both values with 3 "
                      "decimals.", "the non-dominant rows")}


@dataclass(frozen=True)
class Knobs:
    n: int  # square matrix order
    density: float  # share of off-diagonal entries present
    comments: bool  # % comment lines and blank lines
    shuffle: bool  # entries not in row order
    dupes: bool  # repeated (i, j) entries that add up, some cancelling to zero
    empty_rows: bool  # rows without any entry
    symmetric: bool  # symmetric storage (lower triangle only), scientific notation
    decoys: int  # other matrices in the store


def _dec(rng, lo: int, hi: int) -> int:
    """A nonzero value in thousandths."""
    v = 0
    while v == 0:
        v = rng.randrange(lo, hi)
    return v


def _num(milli: int, sci: bool) -> str:
    """An entry as the file writes it: fixed 3 decimals, or (sci) the same value in scientific notation."""
    value = Decimal(milli).scaleb(-3)
    return format(value.normalize(), "e") if sci else "%s" % value


@register
class SparseMatrixMarketOps(Family):
    name = "sparse_matrix_market_ops"
    domain = "scientific_computing"
    skill_types = ("Linear Algebra", "Numerical Methods")
    primitive_skills = ("matrix assembly", "floating-point rounding control", "stability classification")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("spmv", "csr", "dominance")
    # Level 0: a tiny general matrix in row order: one awk program over the file (after a sha256sum).
    levels = {0: Knobs(n=5, density=0.3, comments=False, shuffle=False, dupes=False, empty_rows=False,
                       symmetric=False, decoys=2),
              1: Knobs(n=8, density=0.3, comments=True, shuffle=True, dupes=False, empty_rows=False,
                       symmetric=False, decoys=3),
              2: Knobs(n=12, density=0.25, comments=True, shuffle=True, dupes=True, empty_rows=False,
                       symmetric=False, decoys=3),
              3: Knobs(n=16, density=0.2, comments=True, shuffle=True, dupes=True, empty_rows=True,
                       symmetric=False, decoys=3),
              4: Knobs(n=24, density=0.15, comments=True, shuffle=True, dupes=True, empty_rows=True,
                       symmetric=True, decoys=4)}

    def _matrix(self, t: TaskBuilder) -> tuple[str, str]:
        """One matrix's A.mtx and x.txt. Diagonals are drawn so that some rows are dominant and some not."""
        k, rng = t.knobs, t.rng
        n = k.n
        empty = set(rng.sample(range(1, n + 1), 2)) if k.empty_rows else set()
        a: dict[tuple[int, int], int] = {}
        for i in range(1, n + 1):
            if i in empty:
                continue
            for j in range(1, (i + 1 if k.symmetric else n + 1)):
                if j != i and j not in empty and rng.random() < k.density:
                    a[(i, j)] = _dec(rng, -4000, 4000)
        for i in range(1, n + 1):
            if i not in empty:
                a[(i, i)] = _dec(rng, -3000, 3000) if rng.random() < 0.4 else _dec(rng, 6000, 20000)
        entries = [[i, j, v] for (i, j), v in sorted(a.items())]
        if k.dupes:  # split some entries in two parts, and add pairs that cancel
            for e in rng.sample(entries, max(2, len(entries) // 6)):
                part = _dec(rng, -2000, 2000)
                if part != e[2]:
                    e[2] -= part
                    entries.append([e[0], e[1], part])
            free = [(i, j) for i in range(1, n + 1) for j in range(1, (i if k.symmetric else n + 1))
                    if (i, j) not in a and i != j and i not in empty and j not in empty]
            for i, j in rng.sample(free, min(2, len(free))):
                v = _dec(rng, 1, 3000)
                entries += [[i, j, v], [i, j, -v]]
        if k.shuffle:
            rng.shuffle(entries)
        else:
            entries.sort(key=lambda e: (e[0], e[1]))
        body = [f"{i} {j} {_num(v, k.symmetric and rng.random() < 0.3)}" for i, j, v in entries]
        if k.comments:
            for c in ("% exported by the assembly code", "% units: kN/mm", ""):
                body.insert(rng.randrange(len(body) + 1), c)
        head = f"%%MatrixMarket matrix coordinate real {'symmetric' if k.symmetric else 'general'}\n"
        if k.comments:
            head += f"% stiffness block {rng.randrange(1, 99)}\n"
        mtx = head + f"{n} {n} {len(entries)}\n" + "".join(b + "\n" for b in body)
        x = "".join("%.3f\n" % (_dec(rng, -5000, 5000) / 1000) for _ in range(n))
        return mtx, x

    def output_case(self, t: TaskBuilder) -> None:
        k, variant = t.knobs, t.variant
        ns = run_python(REFERENCE)
        run = {"spmv": lambda m, x: ns["spmv"](m, x), "csr": lambda m, x: ns["csr"](m),
               "dominance": lambda m, x: ns["dominance"](m)}[variant]
        mats = []
        for _ in range(1 + k.decoys):
            for _ in range(50):  # a dominance report must list some rows, not all
                m, x = self._matrix(t)
                lines = ns["dominance"](m).count("\n")
                if 0 < lines < k.n:
                    break
            mats.append((m, x))
        # The matrices are filed by a hash of their names: the delivered name, drawn clear of every file,
        # selects one, and the decoys (built the same way) are indistinguishable without it.
        target = unseen(t, lambda: t.code(2), *(m + x for m, x in mats))
        names = [target, *distinct(lambda: t.code(2), k.decoys, [target])]
        for name, (m, x) in sorted(zip(names, mats), key=lambda p: key_of(p[0])):
            d = f"/app/matrices/{key_of(name)}"
            t.add_file(f"{d}/A.mtx", m)
            if variant == "spmv":
                t.add_file(f"{d}/x.txt", x)
        truth = run(*mats[0])
        rules = [text for knob, text in RULES if getattr(k, knob)]
        t.say("Our solver dumps the sparse matrices it assembles under `/app/matrices/<KEY>/A.mtx`, where KEY is "
              "the first 16 hex digits of the SHA-256 of the matrix's name (`printf %s <name> | sha256sum`). Each "
              "`A.mtx` is a Matrix Market coordinate file: a `%%MatrixMarket` header line, then the size line `rows "
              "cols entries`, then one `i j value` line per entry with 1-based indices. " + " ".join(rules))
        who = t.deliver(target, "the matrix name")
        ask, what = ASKS[variant]
        t.say(ask)
        t.add_solution_file("mtx.py", REFERENCE)
        dest = f"/app/out/{variant}.txt"
        cmd = f'python3 /solution/mtx.py {variant} "/app/matrices/{key_cmd(who)}" > {dest}'
        t.solve(f'test -n "{who}"\nmkdir -p /app/out\n{cmd}')
        t.expect_output(dest, truth, what)
