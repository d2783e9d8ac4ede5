"""Referential-integrity audit of a SQLite database whose foreign keys were never enforced: find the rows
whose foreign key points at no parent row. Each tenant's database is named by a SHA-256 prefix of the
tenant's name (the delivered value). Variants: every broken reference row by row, the number of broken
references per declared foreign-key column (zeros included, so the schema must be inspected), and the
distinct parent keys that are missing. Traps by level: NULL references (not broken, though a LEFT JOIN
test for a missing parent counts them), several keys per table, then a self-reference and
text keys that differ only in letter case, soft-deleted parents that count as gone, and a key that
references a UNIQUE e-mail column instead of an id."""

from __future__ import annotations

from dataclasses import dataclass

from tmax.families import sql as dbsql
from tmax.families.base import Family, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.data_querying._keyed import key_how, keyed, pose, rules_at
from tmax.families.unseen import distinct

REFERENCE = r'''
import sqlite3
import sys

SOFT_DELETE = @SOFT_DELETE@  # a parent row whose deleted_at is set counts as gone


def broken(conn):
    """(child table, id, column, value, parent table) of every reference to no live parent, and the
    declared (table, column) foreign keys."""
    tables = [r[0] for r in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")]
    declared, out = [], []
    for table in tables:
        for fk in conn.execute(f'PRAGMA foreign_key_list("{table}")').fetchall():
            parent, col, to = fk[2], fk[3], fk[4]
            declared.append((table, col))
            cols = [r[1] for r in conn.execute(f'PRAGMA table_info("{parent}")')]
            live = ' AND p.deleted_at IS NULL' if SOFT_DELETE and "deleted_at" in cols else ""
            rows = conn.execute(
                f'SELECT c.id, c."{col}" FROM "{table}" c WHERE c."{col}" IS NOT NULL AND NOT EXISTS '
                f'(SELECT 1 FROM "{parent}" p WHERE p."{to}" = c."{col}"{live})').fetchall()
            out += [(table, rid, col, val, parent) for rid, val in rows]
    return sorted(out, key=lambda r: (r[0], r[1], r[2])), sorted(declared)


def report(conn, variant):
    rows, declared = broken(conn)
    if variant == "rows":
        return "".join(f"{t},{i},{c},{v}\n" for t, i, c, v, _ in rows)
    if variant == "counts":
        return "".join(f"{t}.{c},{sum(1 for r in rows if r[0] == t and r[2] == c)}\n" for t, c in declared)
    keys = sorted({(p, v) for _, _, _, v, p in rows}, key=lambda k: (k[0], isinstance(k[1], str), k[1]))
    return "".join(f"{p},{v}\n" for p, v in keys)


if __name__ == "__main__":
    sys.stdout.write(report(sqlite3.connect(sys.argv[1]), sys.argv[2]))
'''

TABLES = {  # name -> (level it appears at, DDL)
    "customers": (0, "CREATE TABLE customers (id INTEGER PRIMARY KEY, email TEXT UNIQUE, name TEXT{soft});"),
    "orders": (0, "CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customers(id), "
                  "placed_at TEXT);"),
    "products": (1, "CREATE TABLE products (sku TEXT PRIMARY KEY, title TEXT{soft});"),
    "order_items": (1, "CREATE TABLE order_items (id INTEGER PRIMARY KEY, order_id INTEGER NOT NULL REFERENCES "
                       "orders(id), sku TEXT REFERENCES products(sku), qty INTEGER);"),
    "employees": (2, "CREATE TABLE employees (id INTEGER PRIMARY KEY, name TEXT, manager_id INTEGER "
                     "REFERENCES employees(id){soft});"),
    "audit_log": (2, "CREATE TABLE audit_log (id INTEGER PRIMARY KEY, actor TEXT, action TEXT);"),
    "invoices": (4, "CREATE TABLE invoices (id INTEGER PRIMARY KEY, billing_email TEXT REFERENCES "
                    "customers(email), amount INTEGER);"),
}
FIRST = ("ada", "bo", "cyd", "dee", "eli", "fay", "gus", "hal", "ivy", "jo", "kai", "lu", "max", "ned", "oz")
LAST = ("stone", "reed", "vance", "moss", "hart", "lane", "frost", "park", "cole", "wade")
TITLES = ("lamp", "desk", "mug", "cable", "chair", "shelf", "poster", "kettle")


@dataclass(frozen=True)
class Knobs:
    rows: int  # rows per main table
    decoys: int  # other tenants' databases
    traps: int  # 1: NULL keys, order items; 2: self-reference, case-different text keys; 3: soft deletes;
    #             4: a key onto a UNIQUE e-mail column


@register
class SqlFkOrphanAudit(Family):
    name = "sql_fk_orphan_audit"
    domain = "data_querying"
    skill_types = ("Relational Queries", "Query Safety")
    primitive_skills = ("anti-joins", "schema inspection", "NULL semantics", "group-by aggregation",
                        "distinct counting")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("rows", "counts", "missing_parents")
    levels = {0: Knobs(rows=8, decoys=1, traps=0), 1: Knobs(rows=16, decoys=2, traps=1),
              2: Knobs(rows=30, decoys=3, traps=2), 3: Knobs(rows=45, decoys=3, traps=3),
              4: Knobs(rows=60, decoys=3, traps=4)}

    def _tenant(self, t):
        """The SQL script of one tenant's database."""
        k, rng = t.knobs, t.rng
        lv, n = k.traps, k.rows

        def soft():  # a deleted_at stamp for some rows once soft deletes exist
            return f"2025-0{rng.randrange(1, 10)}-1{rng.randrange(10)}" if lv >= 3 and rng.random() < 0.15 else None

        def ref(ids, gone, null=0.0, odd=None):
            """A reference: usually a live id, sometimes NULL, sometimes one no parent has."""
            r = rng.random()
            if r < null:
                return None
            if r < null + 0.12:
                return odd() if odd and rng.random() < 0.5 else rng.choice(gone)
            return rng.choice(ids)

        cids = sorted(rng.sample(range(1, 4 * n), n))
        gone_c = distinct(lambda: rng.randrange(1, 5 * n), 4, cids)
        emails = [f"{rng.choice(FIRST)}.{rng.choice(LAST)}{i}@example.com" for i in cids]
        tables = {"customers": [[i, e, e.split("@")[0].replace(".", " ").title()] + ([soft()] if lv >= 3 else [])
                                for i, e in zip(cids, emails)]}
        oids = sorted(rng.sample(range(1000, 1000 + 5 * n), n))
        tables["orders"] = [[o, ref(cids, gone_c, 0.12 if lv >= 1 else 0.0), f"2025-{rng.randrange(1, 13):02d}-"
                             f"{rng.randrange(1, 29):02d}"] for o in oids]
        tables["orders"][0][1] = gone_c[0]  # at least two broken references in every database
        tables["orders"][1][1] = gone_c[1]
        if lv >= 1:
            skus = distinct(lambda: f"SKU-{rng.randrange(100, 1000)}", n)
            gone_s = distinct(lambda: f"SKU-{rng.randrange(100, 1000)}", 3, skus)
            tables["products"] = [[s, rng.choice(TITLES)] + ([soft()] if lv >= 3 else []) for s in skus]
            case = (lambda: rng.choice(skus).lower()) if lv >= 2 else None  # binary keys: sku-101 is not SKU-101
            gone_o = distinct(lambda: rng.randrange(1000, 1000 + 6 * n), 3, oids)
            tables["order_items"] = [[10000 + i, ref(oids, gone_o), ref(skus, gone_s, 0.1, case), rng.randrange(1, 6)]
                                     for i in range(2 * n)]
        if lv >= 2:
            eids = sorted(rng.sample(range(1, 3 * n), n // 2))
            gone_e = distinct(lambda: rng.randrange(1, 4 * n), 2, eids)
            tables["employees"] = [[e, rng.choice(FIRST).title(), None if j == 0 else ref(eids[:j], gone_e)]
                                   + ([soft()] if lv >= 3 else []) for j, e in enumerate(eids)]
            tables["audit_log"] = [[i + 1, rng.choice(FIRST), rng.choice(["login", "export", "delete"])]
                                   for i in range(n // 3)]
        if lv >= 4:
            odd = lambda: rng.choice(emails).upper()  # noqa: E731 - case matters in the key
            tables["invoices"] = [[50000 + i, ref(emails, [f"old{i}@example.com"], 0.1, odd), rng.randrange(10, 900)]
                                  for i in range(n)]
        schema = "".join(ddl.replace("{soft}", ", deleted_at TEXT" if lv >= 3 else "") + "\n"
                         for name, (at, ddl) in TABLES.items() if name in tables)
        for rows in tables.values():
            rng.shuffle(rows)
        return dbsql.script(schema, tables)

    def output_case(self, t: TaskBuilder) -> None:
        k, variant = t.knobs, t.variant
        src = fill(REFERENCE, SOFT_DELETE=k.traps >= 3)
        ref = run_python(src)
        tenants = [self._tenant(t) for _ in range(1 + k.decoys)]
        target, keys = keyed(t, k.decoys, *tenants)
        for key, sql in sorted(zip(keys, tenants)):
            dbsql.ship(t, sql, f"/app/db/{key}.db")
        truth = ref["report"](dbsql.in_memory(tenants[0]), variant)
        rules = rules_at(k.traps, [
            (0, "A reference is broken when its foreign-key column holds a value that no row of the parent table "
                "has in the referenced column."),
            (1, "A NULL reference is not broken (it points nowhere on purpose). Some tables declare several "
                "foreign keys: check each of them."),
            (2, "Keys compare exactly as stored: text keys are case-sensitive. A table may reference itself."),
            (3, "Some tables soft-delete rows: a parent row whose `deleted_at` is set is gone, and a reference to "
                "it is broken."),
            (4, "Not every foreign key references an id: go by what the schema declares.")])
        ask = {"rows": ("every broken reference as CSV lines `table,id,column,value` (the child table, its row's "
                        "`id`, the foreign-key column and the value it holds), sorted by table, then id as a "
                        "number, then column"),
               "counts": ("the number of broken references for every foreign-key column the schema declares, "
                          "zeros included, as CSV lines `table.column,count`, sorted by table, then column"),
               "missing_parents": ("the distinct parent keys that broken references point at, as CSV lines "
                                   "`parent_table,key`, sorted by parent table, then key (integer keys "
                                   "numerically and before text keys, text keys in byte order)")}[variant]
        intro = ("Every tenant has its own SQLite database, `/app/db/<KEY>.db`, where KEY is "
                 + key_how("tenant's name") + ". The application never turned on foreign-key "
                 "enforcement, so references may point at rows that do not exist.")
        out = f"/app/out/{variant}.csv"
        pose(t, intro, rules, f"For the tenant named below I need {ask}, without a header. Do not change the "
             "database.", target, "the tenant's name", "orphans.py", src, f'"/app/db/$key.db" {variant}', out)
        t.expect_output(out, truth, "the audit")
