"""Reconcile a warehouse ledger with a stock count: two CSV exports keyed by SKU. Variants: the SKUs the
count never saw (an anti-join), the SKUs whose counted quantity differs (a join with a computed delta),
and the units short per location (a join, then a group-by). Traps by level: headers with the columns
in another order, SKUs written with other case and padding, the count split over several files with
repeated SKUs to sum and quoted descriptions holding commas, then a BOM, CRLF and comment lines."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.unseen import unseen

REFERENCE = r'''
import csv
import io
import sys

VARIANT = @VARIANT@
HEADER = @HEADER@
LEDGER_COLS = ("sku", "qty", "location")  # the ledger's column order when it has no header
COUNT_COLS = ("sku", "qty")


def rows(path, cols):
    """Dicts of one export: BOM and CRLF tolerated, blank and '#' lines skipped, SKUs normalised."""
    with open(path, encoding="utf-8-sig", newline="") as f:
        text = f.read()
    lines = [ln for ln in io.StringIO(text, newline=None).read().split("\n")
             if ln.strip() and not ln.lstrip().startswith("#")]
    reader = csv.reader(lines)
    names = [c.strip().lower() for c in next(reader)] if HEADER else list(cols)
    out = []
    for rec in reader:
        r = dict(zip(names, (v.strip() for v in rec)))
        r["sku"] = r["sku"].upper()
        r["qty"] = int(r["qty"])
        out.append(r)
    return out


def report(run, ledger_path, count_paths):
    ledger = {r["sku"]: r for r in rows(ledger_path, LEDGER_COLS)}
    counted = {}
    for p in count_paths:
        for r in rows(p, COUNT_COLS):
            counted[r["sku"]] = counted.get(r["sku"], 0) + r["qty"]
    out = []
    if VARIANT == "missing":
        out = [f"{run},{s}" for s in sorted(ledger) if s not in counted]
    elif VARIANT == "mismatch":
        for s in sorted(ledger):
            if s in counted and counted[s] != ledger[s]["qty"]:
                q, c = ledger[s]["qty"], counted[s]
                out.append(f"{run},{s},{q},{c},{c - q}")
    else:  # shortfall per location: an SKU the count never saw counts as 0 on hand
        short = {}
        for s, r in ledger.items():
            gap = r["qty"] - counted.get(s, 0)
            if gap > 0:
                short[r["location"]] = short.get(r["location"], 0) + gap
        out = [f"{run},{loc},{n}" for loc, n in sorted(short.items(), key=lambda kv: (-kv[1], kv[0]))]
    return "".join(line + "\n" for line in out)


if __name__ == "__main__":
    sys.stdout.write(report(sys.argv[1], sys.argv[2], sys.argv[3:]))
'''

WORDS = ("bolt", "washer", "hinge", "bracket", "cable", "fuse", "relay", "valve", "gasket", "spring", "clamp",
         "sensor", "switch", "filter", "bearing", "nozzle", "pulley", "rivet", "socket", "spacer")
SIZES = ("M4", "M6", "M8", "10mm", "3/8in", "1/2in", "small", "large")
LOCATIONS = ("A-01", "A-02", "B-01", "B-07", "C-03", "C-11", "D-04", "E-09")

FORMATS = {
    "missing": ("the SKUs that are in the ledger but were never counted, one line each as `<RUN>,<SKU>`, sorted by "
                "SKU in byte order"),
    "mismatch": ("the SKUs that are in the ledger and were counted, but whose counted quantity differs from the "
                 "ledger's, one line each as `<RUN>,<SKU>,<ledger qty>,<counted qty>,<counted minus ledger>` (the "
                 "difference as a plain signed integer such as `-3` or `2`), sorted by SKU in byte order"),
    "shortfall": ("the units short per ledger location: for each ledger SKU, the ledger quantity minus the counted "
                  "quantity (an SKU never counted was counted as 0), summed per location over the SKUs where that "
                  "is positive; one line per location with a shortfall, as `<RUN>,<location>,<units>`, sorted by "
                  "units (largest first), ties by location in byte order"),
}


@dataclass(frozen=True)
class Knobs:
    skus: int  # ledger rows
    header: bool  # both exports have a header row (columns named, in another order)
    messy_keys: bool  # SKUs in the count with other case and padding
    split: int  # count files (1: one scan.csv); >1: repeated SKUs across files, quoted descriptions
    dirty: bool  # BOM, CRLF, comment and blank lines


def _csv_field(v: str) -> str:
    return '"' + v.replace('"', '""') + '"' if any(c in v for c in ',"') else v


@register
class StockCountReconcile(Family):
    name = "stock_count_reconcile"
    domain = "data_processing"
    skill_types = ("Data Transformation", "Aggregation")
    primitive_skills = ("joining two sources", "CSV parsing", "CSV quoting and escaping", "group-by counting",
                        "text normalisation", "line ending normalisation", "byte order mark detection",
                        "sorting with tie-breaks")
    variants = ("missing", "mismatch", "shortfall")
    levels = {0: Knobs(skus=8, header=False, messy_keys=False, split=1, dirty=False),
              1: Knobs(skus=40, header=True, messy_keys=False, split=1, dirty=False),
              2: Knobs(skus=120, header=True, messy_keys=True, split=1, dirty=False),
              3: Knobs(skus=300, header=True, messy_keys=True, split=3, dirty=False),
              4: Knobs(skus=700, header=True, messy_keys=True, split=4, dirty=True)}

    def _exports(self, t: TaskBuilder):
        """Ledger rows (sku, description, qty, location) and count rows (sku as written, qty, counter) per file."""
        k, rng = t.knobs, t.rng
        skus = []
        for _ in range(k.skus * 20):
            if len(skus) == k.skus:
                break
            letters = "ABCDEFGHJKLMNPRSTUVWX"  # no Z: ZZ- marks the SKU the ledger does not know
            s = f"{rng.choice(letters)}{rng.choice(letters)}-{rng.randrange(10000, 99999)}"
            if s not in skus:
                skus.append(s)
        ledger = []
        for s in skus:
            desc = f"{rng.choice(WORDS)} {rng.choice(SIZES)}"
            if k.split > 1 and rng.random() < 0.3:
                desc = f"{desc}, pack of {rng.choice([5, 10, 25])}"
            ledger.append((s, desc, rng.randrange(0, 60), rng.choice(LOCATIONS[:3 + k.split])))
        counts = [[] for _ in range(k.split)]
        for s, _, qty, _ in ledger:
            fate = rng.random()
            if fate < 0.15:
                continue  # never counted
            got = qty if fate < 0.7 else max(0, qty + rng.choice([-5, -3, -2, -1, -1, 1, 2, 4]))
            shown = s
            if k.messy_keys and rng.random() < 0.3:
                shown = rng.choice([s.lower(), f" {s}", f"{s} ", s.capitalize()])
            if k.split > 1 and got > 1 and rng.random() < 0.35:  # counted in two passes, in two files
                part = rng.randrange(1, got)
                for i, q in rng.sample([(0, part), (1, got - part)], 2):
                    counts[(i + rng.randrange(k.split)) % k.split].append((shown, q))
            else:
                counts[rng.randrange(k.split)].append((shown, got))
        if k.messy_keys:  # an SKU counted that the ledger does not know: matches nothing
            counts[0].append((f"ZZ-{rng.randrange(10000, 99999)}", rng.randrange(1, 9)))
        for c in counts:
            rng.shuffle(c)
        return ledger, counts

    def _render(self, t: TaskBuilder, ledger, counts):
        k, rng = t.knobs, t.rng
        eol = "\r\n" if k.dirty else "\n"
        people = ("jdoe", "mkim", "aperez", "tnguyen")
        lines = ["location,sku,description,qty"] if k.header else []
        if k.header:
            lines += [f"{loc},{s},{_csv_field(d)},{q}" for s, d, q, loc in ledger]
        else:
            lines += [f"{s},{q},{loc}" for s, d, q, loc in ledger]
        if k.dirty:
            lines.insert(1, f"# exported from the ERP on shift {rng.randrange(1, 4)}")
        files = {"/app/data/ledger.csv": ("\ufeff" if k.dirty else "") + eol.join(lines) + eol}
        for i, c in enumerate(counts):
            rows = [f"{rng.choice(people)},{q},{s}" for s, q in c] if k.header else [f"{s},{q}" for s, q in c]
            if k.header:
                rows.insert(0, "counted_by,qty,sku")
            if k.dirty and rows:
                rows.insert(rng.randrange(1, len(rows) + 1), "")
                rows.insert(1, "# handheld scanner sync")
            name = "/app/data/scan.csv" if k.split == 1 else f"/app/data/counts/scan-{i + 1}.csv"
            files[name] = eol.join(rows) + eol
        return files

    def output_case(self, t: TaskBuilder) -> None:
        k = t.knobs
        src = fill(REFERENCE, VARIANT=repr(t.variant), HEADER=k.header)
        ref = run_python(src)
        for _ in range(30):  # a draw whose answer is empty (nothing short, say) is redrawn
            ledger, counts = self._exports(t)
            files = self._render(t, ledger, counts)
            probe = self._truth(ref, files, "RUN")
            if probe.count("\n") >= 2:
                break
        else:
            raise FamilyError(f"family {self.name}: no stock count with two {t.variant} lines in 30 draws")
        for path, text in files.items():
            t.add_file(path, text)
        run = unseen(t, lambda: t.code(2))
        truth = self._truth(ref, files, run)
        count_where = "`/app/data/scan.csv`" if k.split == 1 else \
            "`/app/data/counts/` (one CSV per scanner; an SKU may be counted in several passes and files: add them up)"
        if k.header:
            layout = ("Both files have a header row naming the columns (the ledger has `location,sku,description,qty`, "
                      "the count `counted_by,qty,sku`); descriptions may be quoted CSV fields that hold commas.")
        else:
            layout = "The ledger's lines are `sku,qty,location` and the count's lines are `sku,qty`, with no header."
        t.say(f"The warehouse ledger is `/app/data/ledger.csv` and last night's stock count is in {count_where}. "
              f"{layout} Reconcile them: report {FORMATS[t.variant]}.")
        if k.messy_keys:
            t.say("Scanned SKUs are not always typed cleanly: compare SKUs with surrounding spaces removed and letters "
                  "upper-cased, and write them that way. A counted SKU the ledger does not know is ignored.")
        if k.dirty:
            t.say("The files come straight off Windows machines: expect a byte order mark, CRLF line endings, blank "
                  "lines and `#` comment lines, none of which are data.")
        t.say("RUN is the reconciliation run id given below; the stock system files the report under it.")
        var = t.deliver(run, "the reconciliation run id")
        t.add_solution_file("reconcile.py", src)
        count_args = "/app/data/scan.csv" if k.split == 1 else "/app/data/counts/*.csv"
        t.solve(f'test -n "{var}"\nmkdir -p /app/out\n'
                f'python3 /solution/reconcile.py "{var}" /app/data/ledger.csv {count_args} > /app/out/reconcile.txt')
        t.expect_output("/app/out/reconcile.txt", truth, "the report")

    @staticmethod
    def _truth(ref, files, run):
        with tempfile.TemporaryDirectory() as d:
            paths = []
            for p, text in sorted(files.items()):
                f = Path(d) / p.rsplit("/", 1)[1]
                f.write_bytes(text.encode())
                paths.append(str(f))
            ledger = [p for p in paths if p.endswith("/ledger.csv")][0]
            return ref["report"](run, ledger, sorted(p for p in paths if p != ledger))
