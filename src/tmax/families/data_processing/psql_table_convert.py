"""Turn the aligned table that `psql` prints back into data. Variants: the rows as typed JSON Lines, a
column summed per group, and the NULL count of every column. Traps by level: right-aligned numbers
and centred headers, NULL printed as an empty cell, then a session log of several queries (echoed with
`psql -e`) of which one is wanted and another reads a similarly named table, `(1 row)` footers, and
finally multi-line values, which psql prints with a `+` where the cell continues on the next line."""

from __future__ import annotations

from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.unseen import unseen

REFERENCE = r'''
import json
import re
import sys

VARIANT = @VARIANT@
TABLE = @TABLE@  # the wanted result is the one echoed after a query reading FROM this table
GROUP, SUM = "city", "qty"
RULE = re.compile(r"^-+(\+-+)*$")


def tables(text):
    """(query text or "", header, rows) per result in a psql aligned-format log; a cell is None if empty."""
    lines = text.split("\n")
    out, query = [], ""
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.upper().startswith("SELECT"):
            query = line
        if i + 1 < len(lines) and RULE.match(lines[i + 1]):
            rule = lines[i + 1]
            spans, start = [], 0
            for m in re.finditer(r"\+", rule):
                spans.append((start, m.start()))
                start = m.start() + 1
            spans.append((start, len(rule)))
            header = [line[a:b].strip() for a, b in spans]
            rows, cont = [], []
            i += 2
            while i < len(lines) and not re.match(r"^\(\d+ rows?\)$", lines[i]):
                segs = [lines[i].ljust(len(rule))[a:b] for a, b in spans]
                cells = [s[1:-1].strip() for s in segs]
                if cont:  # the previous line ended some cells with "+": this line carries on with them
                    for c in cont:
                        rows[-1][c] += "\n" + cells[c]
                else:
                    rows.append(cells)
                cont = [c for c, s in enumerate(segs) if s.endswith("+")]
                i += 1
            out.append((query, header, [[v if v != "" else None for v in r] for r in rows]))
            query = ""
        i += 1
    return out


def pick(text):
    found = [t for t in tables(text) if not TABLE or re.search(r"\bFROM " + TABLE + r"\b", t[0])]
    return found[0][1], found[0][2]


def is_int(v):
    return re.fullmatch(r"-?[0-9]+", v) is not None


def report(run, text):
    header, rows = pick(text)
    out = []
    if VARIANT == "jsonl":
        ints = [all(r[c] is None or is_int(r[c]) for r in rows) for c in range(len(header))]
        for r in rows:
            obj = {"batch": run}
            for c, name in enumerate(header):
                v = r[c]
                obj[name] = None if v is None else int(v) if ints[c] else v
            out.append(json.dumps(obj, separators=(",", ":")))
    elif VARIANT == "totals":
        g, s = header.index(GROUP), header.index(SUM)
        sums = {}
        for r in rows:
            key = r[g] if r[g] is not None else "(null)"
            sums[key] = sums.get(key, 0) + (int(r[s]) if r[s] is not None else 0)
        out = [f"{run},{k},{v}" for k, v in sorted(sums.items(), key=lambda kv: (-kv[1], kv[0]))]
    else:  # nulls per column, in column order
        out = [f"{run},{name},{sum(1 for r in rows if r[c] is None)}" for c, name in enumerate(header)]
    return "".join(line + "\n" for line in out)


if __name__ == "__main__":
    sys.stdout.write(report(sys.argv[1], open(sys.argv[2], encoding="utf-8").read()))
'''

FIRST = ("Ana", "Ben", "Chloe", "Dev", "Eve", "Farid", "Gita", "Hugo", "Ines", "Jon", "Kai", "Lena", "Mo", "Nia")
LAST = ("Ortiz", "Park", "Quinn", "Rossi", "Singh", "Tanaka", "Udeh", "Vogel", "Weber", "Xu", "Young", "Zeller")
CITIES = ("Berlin", "Lisbon", "Oslo", "Porto", "Riga", "Turin", "Ghent", "Lyon", "Cork", "Bergen")
NOTES = ("gift wrap", "call first", "leave at door", "fragile", "second attempt", "customer said \"urgent\"")

ASKS = {
    "jsonl": "the rows as JSON Lines: one compact JSON object per row (no spaces, as `jq -c` prints), in the "
             "table's row order, whose first key is `batch` with RUN as its value, followed by one key per column "
             "in column order. A column whose every non-NULL value is an integer gives JSON numbers; every other "
             "value is a JSON string; NULL is `null`",
    "totals": "the total `qty` per `city` (a NULL qty adds 0; rows whose city is NULL are totalled under "
              "`(null)`), one line per city as `<RUN>,<city>,<total>`, sorted by total (largest first), ties by "
              "city in byte order",
    "nulls": "how many NULL cells each column has, one line per column in the table's column order as "
             "`<RUN>,<column>,<count>` (a column without NULLs has count 0)",
}


@dataclass(frozen=True)
class Knobs:
    rows: int  # rows of the wanted result
    columns: tuple[str, ...]  # its columns
    nulls: float  # share of empty (NULL) cells in nullable columns
    session: bool  # a log of several echoed queries, one of them wanted, one reading a similar table
    multiline: bool  # note values with newlines


def render(header: list[str], rows: list[list[str | None]], numeric: list[bool]) -> str:
    """psql's aligned format: centred headers, numbers right-aligned, `+` where a cell continues."""
    cells = [[(v or "").split("\n") for v in r] for r in rows]
    widths = [max([len(h)] + [len(p) for r in cells for p in r[c]]) for c, h in enumerate(header)]
    out = ["|".join(" " + h.center(w)[:w].ljust(w) + " " for h, w in zip(header, widths)).rstrip(),
           "+".join("-" * (w + 2) for w in widths)]
    for r in cells:
        for k in range(max(len(p) for p in r)):
            segs = []
            for c, parts in enumerate(r):
                text = parts[k] if k < len(parts) else ""
                text = text.rjust(widths[c]) if numeric[c] else text.ljust(widths[c])
                segs.append(" " + text + ("+" if k < len(parts) - 1 else " "))
            out.append("|".join(segs).rstrip())
    out.append(f"({len(rows)} row{'s' if len(rows) != 1 else ''})")
    return "\n".join(out) + "\n"


@register
class PsqlTableConvert(Family):
    name = "psql_table_convert"
    domain = "data_processing"
    skill_types = ("Parsing", "Data Transformation")
    primitive_skills = ("fixed-width parsing", "JSON transformation", "aggregation", "field extraction",
                        "sorting with tie-breaks")
    variants = ("jsonl", "totals", "nulls")
    levels = {0: Knobs(rows=6, columns=("order_id", "city", "qty"), nulls=0.15, session=False, multiline=False),
              1: Knobs(rows=25, columns=("order_id", "customer", "city", "qty", "amount"), nulls=0.15,
                       session=False, multiline=False),
              2: Knobs(rows=80, columns=("order_id", "customer", "city", "qty", "amount"), nulls=0.2,
                       session=True, multiline=False),
              3: Knobs(rows=200, columns=("order_id", "customer", "city", "qty", "amount", "note"), nulls=0.25,
                       session=True, multiline=False),
              4: Knobs(rows=400, columns=("order_id", "customer", "city", "qty", "amount", "note"), nulls=0.25,
                       session=True, multiline=True)}

    def _rows(self, t: TaskBuilder, n: int) -> list[list[str | None]]:
        k, rng = t.knobs, t.rng
        base = rng.randrange(1000, 90000)
        rows = []
        for _ in range(n):
            base += rng.randrange(1, 4)  # ids ascending, with gaps, as ORDER BY order_id prints them
            nul = lambda: rng.random() < k.nulls  # noqa: E731 - one draw per nullable cell
            note = None if rng.random() < 0.5 else rng.choice(NOTES)
            if note and k.multiline and rng.random() < 0.4:
                note += "\n" + rng.choice(NOTES)
            val = {"order_id": str(base),
                   "customer": None if nul() else f"{rng.choice(FIRST)} {rng.choice(LAST)}",
                   "city": None if nul() else rng.choice(CITIES[:4 + n // 20]),
                   "qty": None if nul() else str(rng.choice([-1, 1, 2, 3, 5, 8, 12, 20, 40])),
                   "amount": None if nul() else f"{rng.randrange(100, 99999) / 100:.2f}", "note": note}
            rows.append([val[c] for c in k.columns])
        return rows

    def _log(self, t: TaskBuilder) -> str:
        k, rng = t.knobs, t.rng
        cols = list(k.columns)
        numeric = [c in ("order_id", "qty", "amount") for c in cols]
        wanted = render(cols, self._rows(t, k.rows), numeric)
        if not k.session:
            return wanted
        sel = ", ".join(cols)
        parts = [("SELECT count(*) FROM customers;", render(["count"], [[str(rng.randrange(50, 900))]], [True])),
                 (f"SELECT {sel} FROM orders_archive WHERE created < '2024-01-01';",
                  render(cols, self._rows(t, rng.randrange(3, 12)), numeric)),
                 (f"SELECT {sel} FROM orders WHERE shipped IS NOT TRUE ORDER BY order_id;", wanted),
                 ("SELECT city, count(*) FROM depots GROUP BY city;",
                  render(["city", "count"], [[c, str(rng.randrange(1, 9))] for c in rng.sample(CITIES, 3)],
                         [False, True]))]
        rng.shuffle(parts)
        return "".join(f"{q}\n{r}\n" for q, r in parts)

    def output_case(self, t: TaskBuilder) -> None:
        k = t.knobs
        src = fill(REFERENCE, VARIANT=repr(t.variant), TABLE=repr("orders" if k.session else ""))
        ref = run_python(src)
        for _ in range(30):  # at least two answer lines, and a NULL to count
            log = self._log(t)
            probe = ref["report"]("RUN", log)
            if probe.count("\n") >= 2 and (t.variant != "nulls" or
                                           any(not ln.endswith(",0") for ln in probe.splitlines())):
                break
        else:
            raise FamilyError(f"family {self.name}: no table with two {t.variant} lines in 30 draws")
        where = "/app/export/session.log" if k.session else "/app/export/orders.txt"
        t.add_file(where, log)
        run = unseen(t, lambda: t.code(2))
        truth = ref["report"](run, log)
        if k.session:
            t.say(f"`{where}` is the output of a `psql -e` session: each query is echoed, followed by its result in "
                  "psql's aligned table format. We need the result of the query that reads `FROM orders` (not any "
                  "other table, however similar its name).")
        else:
            t.say(f"`{where}` is a result of our orders query as `psql` printed it (aligned table format: a header, "
                  "a rule line of dashes, the rows, and a row-count footer).")
        t.say("Cells are padded with spaces that are not part of the values, and an empty cell is NULL." + (
              " A cell whose value holds a line break ends with `+` and continues in the same column on the next "
              "printed line; join the parts with a newline character." if k.multiline else ""))
        t.say(f"Write {ASKS[t.variant]}. RUN is the batch id given below; the loader files the output under it.")
        var = t.deliver(run, "the batch id")
        t.add_solution_file("psql_table.py", src)
        t.solve(f'test -n "{var}"\nmkdir -p /app/out\npython3 /solution/psql_table.py "{var}" {where} '
                "> /app/out/result.txt")
        t.expect_output("/app/out/result.txt", truth, "the output")
