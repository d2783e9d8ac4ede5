"""A query firewall for a shared analytics database: accept a submitted SQL text only if it is exactly one
read-only SELECT that compiles against the schema and reads only the tables granted to one role (the
grants live in the database). The role is the one whose API key the fixture channel hands over: the
database keeps only the keys' SHA-256 digests, so the key names the role without being in the data.
Either as a classifier program tested on hidden benign and malicious corpora, or as an audit of a query
log. The traps: keywords inside string literals and comments,
quoted and mixed-case identifiers, stacked statements, CTE-wrapped writes, UNION-based reads of
restricted tables, SQLite's internal tables, column names that contain keywords.
Variants: firewall (the read-only policy above), dml_grants (a maintenance role that may also insert, update
and delete rows, but only of granted tables) and deny_reasons (why each query is refused, by the first rule
it breaks; as a classifier, the refusals that are about grants alone)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from tmax.families import sql as dbsql
from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.unseen import distinct, visible

CORE = r'''
import hashlib
import json
import sqlite3
import sys

KEY = "@@KEY@@"  # the submitter's API key (put in at solve time): it names the role through api_keys
DB = "/app/db/analytics.db"
ALLOW = (sqlite3.SQLITE_SELECT, sqlite3.SQLITE_FUNCTION, sqlite3.SQLITE_RECURSIVE)


def sandbox(db_path=DB):
    """An empty in-memory copy of the schema, the grants by role (lower-cased table names), and the roles
    by key digest."""
    src = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    return sandbox_from(src)


def sandbox_from(src):
    conn = sqlite3.connect(":memory:")
    for (ddl,) in src.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND sql IS NOT NULL"):
        conn.execute(ddl)
    grants = {}
    for role, table in src.execute("SELECT role, table_name FROM access_grants"):
        grants.setdefault(role, {})[table.lower()] = True
    owners = {digest: owner for owner, digest in src.execute("SELECT owner, key_hash FROM api_keys")}
    return conn, grants, owners


def role_of(owners, key):
    """The role holding ``key`` (None for a key no role holds)."""
    return owners.get(hashlib.sha256(key.strip().encode()).hexdigest())


def verdict(conn, sql, allowed):
    """True iff sql is one read-only statement that compiles and reads only tables in allowed."""
    def auth(action, arg1, arg2, dbname, source):
        if action in ALLOW:
            return sqlite3.SQLITE_OK
        if action == sqlite3.SQLITE_READ and (arg1 or "").lower() in allowed:
            return sqlite3.SQLITE_OK
        return sqlite3.SQLITE_DENY

    conn.set_authorizer(auth)
    try:
        cur = conn.execute(sql)
        cur.fetchall()
        return cur.description is not None
    except Exception:
        return False
    finally:
        conn.set_authorizer(None)


def audit(conn, grants, lines, role):
    bad = []
    for line in lines:
        if not line.strip():
            continue
        entry = json.loads(line)
        if entry["role"] == role and not verdict(conn, entry["sql"], grants.get(role, {})):
            bad.append(entry["id"])
    return "".join(f"{i}\n" for i in sorted(bad))
'''

FIREWALL_MAIN = r'''

if __name__ == "__main__":
    conn, grants, owners = sandbox()
    if len(sys.argv) > 1 and sys.argv[1] == "--audit":
        with open(sys.argv[2]) as f:
            sys.stdout.write(audit(conn, grants, f.read().splitlines(), role_of(owners, sys.argv[3])))
        sys.exit(0)
    sys.exit(0 if verdict(conn, sys.stdin.read(), grants.get(role_of(owners, KEY), {})) else 1)
'''
REFERENCE = CORE + FIREWALL_MAIN  # the firewall variant's program, today's text

# The other variants' judges and reports (appended to CORE): another policy, and the reason for a refusal.
EXTRA = r'''

ROWS = (sqlite3.SQLITE_READ, sqlite3.SQLITE_INSERT, sqlite3.SQLITE_UPDATE, sqlite3.SQLITE_DELETE)


def prepare(conn, sql, auth=None):
    """Compile sql under auth without running it (EXPLAIN): (the error or "", its opcode names)."""
    conn.set_authorizer(auth)
    try:
        return "", {row[1] for row in conn.execute("EXPLAIN " + sql)}
    except Exception as e:
        return str(e) or type(e).__name__, set()
    finally:
        conn.set_authorizer(None)


def dml_verdict(conn, sql, allowed):
    """True iff sql is one statement that compiles and only reads or changes rows, of tables in allowed only."""
    def auth(action, arg1, arg2, dbname, source):
        if action in ALLOW or (action in ROWS and (arg1 or "").lower() in allowed):
            return sqlite3.SQLITE_OK
        return sqlite3.SQLITE_DENY

    err, ops = prepare(conn, sql, auth)
    return not err and "Vacuum" not in ops  # VACUUM asks the authorizer nothing


def reason(conn, sql, allowed):
    """Why verdict() refuses sql: the first rule it breaks, in policy order ("" when it is acceptable)."""
    err, ops = prepare(conn, sql)
    if err:
        return "statements" if "one statement" in err else "compile"
    reads, other = set(), []

    def auth(action, arg1, arg2, dbname, source):
        if action == sqlite3.SQLITE_READ:
            reads.add((arg1 or "").lower())
        # SQLite updates its schema table itself the first time a connection uses a pragma_ function
        elif action not in ALLOW and not (action == sqlite3.SQLITE_UPDATE and arg1 == "sqlite_master"):
            other.append(action)
        return sqlite3.SQLITE_OK

    prepare(conn, sql, auth)
    if other or "Vacuum" in ops:
        return "write"
    return "grant" if any(r not in allowed for r in reads) else ""


def not_grant_refusal(conn, sql, allowed):
    return reason(conn, sql, allowed) != "grant"


def entries(lines, role):
    return [e for e in (json.loads(line) for line in lines if line.strip()) if e["role"] == role]


def dml_audit(conn, grants, lines, role):
    bad = [e["id"] for e in entries(lines, role) if not dml_verdict(conn, e["sql"], grants.get(role, {}))]
    return "".join(f"{i}\n" for i in sorted(bad))


def reasons(conn, grants, lines, role):
    why = sorted((e["id"], reason(conn, e["sql"], grants.get(role, {}))) for e in entries(lines, role))
    return "".join(f"{i} {r}\n" for i, r in why if r)
'''

VARIANT_MAIN = r'''

if __name__ == "__main__":
    conn, grants, owners = sandbox()
    if len(sys.argv) > 1 and sys.argv[1] == "--audit":
        with open(sys.argv[2]) as f:
            sys.stdout.write(@REPORT@(conn, grants, f.read().splitlines(), role_of(owners, sys.argv[3])))
        sys.exit(0)
    sys.exit(0 if @JUDGE@(conn, sys.stdin.read(), grants.get(role_of(owners, KEY), {})) else 1)
'''
# Each variant's classifier judge and audit report, by name in its program.
JUDGE = {"dml_grants": "dml_verdict", "deny_reasons": "not_grant_refusal"}
REPORT = {"dml_grants": "dml_audit", "deny_reasons": "reasons"}


def reference(variant: str) -> str:
    """The program of a variant (firewall's is today's REFERENCE, unchanged)."""
    if variant == "firewall":
        return REFERENCE
    return fill(CORE + EXTRA + VARIANT_MAIN, JUDGE=JUDGE[variant], REPORT=REPORT[variant])

TABLES = {
    "customers": [("name", "TEXT"), ("email", "TEXT"), ("country", "TEXT"), ("created_at", "TEXT")],
    "orders": [("customer_id", "INTEGER"), ("placed_at", "TEXT"), ("status", "TEXT"), ("total_cents", "INTEGER")],
    "order_items": [("order_id", "INTEGER"), ("product_id", "INTEGER"), ("qty", "INTEGER"),
                    ("unit_price_cents", "INTEGER")],
    "products": [("sku", "TEXT"), ("name", "TEXT"), ("category", "TEXT"), ("price_cents", "INTEGER")],
    "employees": [("name", "TEXT"), ("department", "TEXT"), ("manager_id", "INTEGER"), ("hired_on", "TEXT")],
    "salaries": [("employee_id", "INTEGER"), ("amount_cents", "INTEGER"), ("effective_from", "TEXT")],
    "api_keys": [("owner", "TEXT"), ("key_hash", "TEXT"), ("created_at", "TEXT")],
    "audit_log": [("actor", "TEXT"), ("action", "TEXT"), ("happened_at", "TEXT")],
    "invoices": [("customer_id", "INTEGER"), ("issued_on", "TEXT"), ("amount_cents", "INTEGER"),
                 ("paid", "INTEGER")],
    "shipments": [("order_id", "INTEGER"), ("carrier", "TEXT"), ("shipped_at", "TEXT"), ("drop_reason", "TEXT")],
}
FKS = [("orders", "customer_id", "customers"), ("order_items", "order_id", "orders"),
       ("order_items", "product_id", "products"), ("salaries", "employee_id", "employees"),
       ("invoices", "customer_id", "customers"), ("shipments", "order_id", "orders"),
       ("employees", "manager_id", "employees")]
WORDS = ["NL", "DE", "shipped", "pending", "Widgets", "Sales", "ops", "login", "DHL", "Gadgets", "refund", "FR"]
# String literals that look like attacks, given a table name.
TRAP_STRINGS = [lambda t: f"Robert''); DROP TABLE {t};--", lambda t: f"x; DELETE FROM {t}",
                lambda t: f"UPDATE {t} SET", lambda t: "1 OR 1=1 --", lambda t: "/* not a comment */", lambda t: "-- still a string",
                lambda t: f"a'';INSERT INTO {t} VALUES(1);--"]


class Gen:
    """Benign and malicious SQL for one role's grants, with traps by level."""

    def __init__(self, rng, lv: int, granted: list[str], restricted: list[str]):
        self.rng, self.lv, self.granted, self.restricted = rng, lv, granted, restricted

    def kw(self, word: str) -> str:
        if self.lv >= 3 and self.rng.random() < 0.3:
            return self.rng.choice([word.lower(), word.title()])
        return word

    def ident(self, table: str) -> str:
        if self.lv >= 3 and self.rng.random() < 0.3:
            return self.rng.choice([f'"{table}"', f"[{table}]", f"`{table}`", table.upper(), table.title()])
        return table

    def lit(self, typ: str, trap: bool = False) -> str:
        if typ == "INTEGER":
            return str(self.rng.randrange(1, 500))
        if trap:
            return "'" + self.rng.choice(TRAP_STRINGS)(self.rng.choice(self.granted + self.restricted)) + "'"
        return "'" + self.rng.choice(WORDS) + "'"

    def col(self, table: str) -> tuple[str, str]:
        return self.rng.choice([("id", "INTEGER"), *TABLES[table]])

    def where(self, table: str, alias: str = "") -> str:
        c, typ = self.col(table)
        op = "=" if typ == "TEXT" else self.rng.choice(["=", ">", "<", ">="])
        trap = self.lv >= 3 and typ == "TEXT" and self.rng.random() < 0.4
        return f"{alias}{c} {op} {self.lit(typ, trap)}"

    def simple(self, table: str) -> str:
        r, K = self.rng, self.kw
        cols = ", ".join(sorted({self.col(table)[0] for _ in range(r.randint(1, 3))}))
        sql = f"{K('SELECT')} {cols} {K('FROM')} {self.ident(table)} {K('WHERE')} {self.where(table)}"
        if r.random() < 0.4:
            sql += f" {K('ORDER BY')} {self.col(table)[0]} {K('LIMIT')} {r.randrange(1, 100)}"
        return sql

    def aggregate(self, table: str) -> str:
        K = self.kw
        c = self.col(table)[0]
        return (f"{K('SELECT')} {c}, {K('COUNT')}(*) {K('AS')} n {K('FROM')} {self.ident(table)} {K('GROUP BY')} {c} "
                f"{K('HAVING')} {K('COUNT')}(*) > {self.rng.randrange(1, 5)}")

    def join(self, pair: tuple[str, str, str]) -> str:
        child, fk, parent = pair
        K = self.kw
        a, b = self.col(child)[0], self.col(parent)[0]
        return (f"{K('SELECT')} c.{a}, p.{b} {K('FROM')} {self.ident(child)} c {K('JOIN')} {self.ident(parent)} p "
                f"{K('ON')} p.id = c.{fk} {K('WHERE')} {self.where(parent, 'p.')}")

    def subquery(self, pair: tuple[str, str, str]) -> str:
        child, fk, parent = pair
        K = self.kw
        return (f"{K('SELECT')} * {K('FROM')} {self.ident(child)} {K('WHERE')} {fk} {K('IN')} ({K('SELECT')} id "
                f"{K('FROM')} {self.ident(parent)} {K('WHERE')} {self.where(parent)})")

    def cte(self, table: str) -> str:
        K = self.kw
        c = self.col(table)[0]
        return (f"{K('WITH')} picked {K('AS')} ({K('SELECT')} id, {c} {K('FROM')} {self.ident(table)} {K('WHERE')} "
                f"{self.where(table)}) {K('SELECT')} {c}, {K('COUNT')}(*) {K('FROM')} picked {K('GROUP BY')} {c}")

    def window(self, table: str) -> str:
        K = self.kw
        c = self.col(table)[0]
        return (f"{K('SELECT')} id, {c}, {K('ROW_NUMBER')}() {K('OVER')} ({K('ORDER BY')} {c} {K('DESC')}) {K('AS')} rn "
                f"{K('FROM')} {self.ident(table)}")

    def union(self, t1: str, t2: str) -> str:
        K = self.kw
        return (f"{K('SELECT')} id {K('FROM')} {self.ident(t1)} {K('WHERE')} {self.where(t1)} {K('UNION')} "
                f"{K('SELECT')} id {K('FROM')} {self.ident(t2)}")

    def pairs(self, allowed: list[str]) -> list[tuple[str, str, str]]:
        return [p for p in FKS if p[0] in allowed and p[2] in allowed]

    def read_of(self, tables: list[str], other: list[str]) -> str:
        """A SELECT whose tables are drawn from tables (and other, for two-table shapes)."""
        r = self.rng
        t = r.choice(tables)
        shapes = ["simple", "aggregate"] + (["join", "subquery", "cte", "window", "union"] if self.lv >= 2 else [])
        shape = r.choice(shapes)
        if shape == "simple":
            return self.simple(t)
        if shape == "aggregate":
            return self.aggregate(t)
        if shape == "cte":
            return self.cte(t)
        if shape == "window":
            return self.window(t)
        if shape == "union":
            return self.union(*r.sample([t, r.choice(other)], 2))
        pairs = [p for p in FKS if (p[0] in tables or p[2] in tables) and p[0] in tables + other
                 and p[2] in tables + other]
        if not pairs:
            return self.simple(t)
        p = r.choice(pairs)
        return self.join(p) if shape == "join" else self.subquery(p)

    def decorate(self, sql: str) -> str:
        """Harmless wrapping: whitespace, comments, a trailing semicolon."""
        r = self.rng
        if self.lv >= 2 and r.random() < 0.3:
            sql = r.choice(["-- weekly report\n", "/* ad hoc */ ", "\n  "]) + sql
        if r.random() < 0.4:
            sql += ";"
        if self.lv >= 2 and r.random() < 0.25:
            sql += r.choice([" -- DROP TABLE later", "\n/* DELETE nothing */", "  \n"])
        return sql

    def benign(self) -> str:
        return self.decorate(self.read_of(self.granted, self.granted))

    def malicious(self) -> str:
        r, K, lv = self.rng, self.kw, self.lv
        kinds = ["write", "restricted"] + (["stacked", "write2"] if lv >= 2 else []) + \
            (["internal", "union_leak", "cte_write"] if lv >= 3 else []) + (["invalid", "admin"] if lv >= 4 else [])
        kind = r.choice(kinds)
        t = r.choice(self.granted)
        if kind == "write":
            c, typ = r.choice(TABLES[t])
            return r.choice([f"{K('DELETE FROM')} {self.ident(t)} {K('WHERE')} {self.where(t)}",
                             f"{K('UPDATE')} {self.ident(t)} {K('SET')} {c} = {self.lit(typ)} {K('WHERE')} id = "
                             f"{r.randrange(1, 99)}",
                             f"{K('DROP TABLE')} {self.ident(t)}"])
        if kind == "write2":
            cols = [c for c, _ in TABLES[t]]
            vals = ", ".join(self.lit(typ) for _, typ in TABLES[t])
            return r.choice([f"{K('INSERT INTO')} {self.ident(t)} ({', '.join(cols)}) {K('VALUES')} ({vals})",
                             f"{K('REPLACE INTO')} {self.ident(t)} ({', '.join(cols)}) {K('VALUES')} ({vals})",
                             f"{K('ALTER TABLE')} {self.ident(t)} {K('ADD COLUMN')} note TEXT",
                             f"{K('CREATE TABLE')} copy_{t} {K('AS')} {self.simple(t)}",
                             f"{K('CREATE INDEX')} ix_{t} {K('ON')} {t}(id)"])
        if kind == "restricted":
            return self.decorate(self.read_of(self.restricted, self.granted))
        if kind == "stacked":
            tail = r.choice([f"{K('DROP TABLE')} {self.ident(t)}", f"{K('DELETE FROM')} {self.ident(t)}",
                             self.simple(r.choice(self.granted))])
            return self.read_of(self.granted, self.granted) + r.choice(["; ", ";\n", "; /* x */ "]) + tail
        if kind == "internal":
            return r.choice([f"{K('SELECT')} name, sql {K('FROM')} sqlite_master",
                             f"{K('SELECT')} * {K('FROM')} sqlite_schema {K('WHERE')} type = 'table'",
                             f"{K('SELECT')} role, table_name {K('FROM')} access_grants"])
        if kind == "union_leak":
            s = r.choice(self.restricted)
            c = r.choice(TABLES[s])[0]
            return (f"{K('SELECT')} id, {r.choice(TABLES[t])[0]} {K('FROM')} {self.ident(t)} {K('WHERE')} id = "
                    f"{r.randrange(1, 99)} {K('UNION')} {K('SELECT')} id, {c} {K('FROM')} {self.ident(s)}")
        if kind == "cte_write":
            return (f"{K('WITH')} doomed {K('AS')} ({K('SELECT')} id {K('FROM')} {self.ident(t)} {K('WHERE')} "
                    f"{self.where(t)}) {K('DELETE FROM')} {self.ident(t)} {K('WHERE')} id {K('IN')} "
                    f"({K('SELECT')} id {K('FROM')} doomed)")
        if kind == "invalid":
            c = r.choice(TABLES[t])[0]
            return r.choice([f"{K('SELECT')} {c}_total {K('FROM')} {self.ident(t)}",
                             f"{K('SELECT')} * {K('FROM')} {t}_archive",
                             f"{K('SELECT')} {c} {K('FROM')} {self.ident(t)} {K('WHERE')} ({c} = 1",
                             f"SELEC {c} {K('FROM')} {self.ident(t)}"])
        return r.choice(["ATTACH DATABASE '/tmp/exfil.db' AS exfil", "PRAGMA writable_schema = 1",
                         "VACUUM INTO '/tmp/copy.db'", "BEGIN IMMEDIATE", "DETACH DATABASE main",
                         f"{K('SELECT')} * {K('FROM')} pragma_table_info('{r.choice(self.restricted)}')"])


def schema_sql() -> str:
    out = []
    for t, cols in TABLES.items():
        out.append(f"CREATE TABLE {t} (id INTEGER PRIMARY KEY, " + ", ".join(f"{c} {typ}" for c, typ in cols) + ");")
    out.append("CREATE TABLE access_grants (role TEXT NOT NULL, table_name TEXT NOT NULL, PRIMARY KEY (role, "
               "table_name));")
    return "\n".join(out) + "\n"


SERVICE_OWNERS = ["etl", "dashboards", "backup", "monitoring", "exporter", "scheduler", "notebook", "replica"]


def data_rows(rng, digests: list[tuple[str, str]]) -> dict[str, list[tuple]]:
    """Filler rows by table, except in api_keys: one key digest per role (``digests``), then service keys."""
    tables: dict[str, list[tuple]] = {}
    for t, cols in TABLES.items():
        if t == "api_keys":
            rows = list(digests)
            for owner in rng.sample(SERVICE_OWNERS, max(0, 12 - len(rows))):
                rows.append((owner, f"{rng.getrandbits(256):064x}"))
            rng.shuffle(rows)
            tables[t] = [(i, owner, digest, f"2024-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d}")
                         for i, (owner, digest) in enumerate(rows, 1)]
            continue
        tables[t] = [(i, *(rng.randrange(1, 13) if typ == "INTEGER" else rng.choice(WORDS) for _, typ in cols))
                     for i in range(1, 13)]
    return tables


INTRO = ("Our analysts share the SQLite database `/app/db/analytics.db`. Who may read what is in its "
         "`access_grants` table (`role`, `table_name`). Submitters authenticate with an API key, and a "
         "key names its role: the `api_keys` table holds one row per key, with the role (or service) "
         "that holds it in `owner` and the SHA-256 digest of the key (of its digits as text, in "
         "lower-case hex) in `key_hash`; the keys themselves are kept nowhere. ")
POLICY = ("A submitted query is acceptable only if all of these hold:\n"
          "- it is exactly one SQL statement (surrounding whitespace, comments and one trailing `;` are "
          "fine);\n"
          "- that statement is a read-only `SELECT` query (a `WITH ... SELECT`, joins, subqueries, `UNION` "
          "and window functions are all fine); anything that writes, changes the schema, attaches "
          "databases, runs a PRAGMA or controls transactions is not;\n"
          "- it would compile against the database's schema as it is (no unknown tables or columns, no "
          "syntax errors);\n"
          "- every table it reads, wherever it appears (FROM, JOIN, subqueries, CTEs, UNION arms), is granted "
          "to the role in the `access_grants` table (table names are case-insensitive, however they are "
          "quoted); SQLite's own tables (`sqlite_master`, `sqlite_schema`, ...) and table-valued PRAGMA "
          "functions are never granted.\n"
          "Keywords that only appear inside string literals or comments do not make a query unacceptable.")

DML_POLICY = ("A submitted statement is acceptable only if all of these hold:\n"
              "- it is exactly one SQL statement (surrounding whitespace, comments and one trailing `;` are "
              "fine);\n"
              "- it only reads or changes rows: a `SELECT`, `INSERT`, `REPLACE`, `UPDATE` or `DELETE` (with or "
              "without a `WITH` clause); anything that changes the schema (`CREATE`, `DROP`, `ALTER`), attaches "
              "databases, runs a PRAGMA, vacuums or controls transactions is not;\n"
              "- it would compile against the database's schema as it is (no unknown tables or columns, no "
              "syntax errors);\n"
              "- every table it reads or writes, wherever it appears (the table an `INSERT`, `UPDATE` or "
              "`DELETE` changes, FROM, JOIN, subqueries, CTEs, UNION arms), is granted to the role in the "
              "`access_grants` table (table names are case-insensitive, however they are quoted); SQLite's own "
              "tables (`sqlite_master`, `sqlite_schema`, ...) and table-valued PRAGMA functions are never "
              "granted.\n"
              "Keywords that only appear inside string literals or comments do not make a statement "
              "unacceptable.")
DML_ROLE = ("This submitter's role maintains the tables granted to it: besides reading them, it may insert, "
            "update and delete their rows. ")
REASONS = ("An unacceptable query gets the first of these reasons that applies, in this order:\n"
           "- `statements`: it is not exactly one SQL statement;\n"
           "- `compile`: it does not compile against the schema as it is (syntax errors, unknown tables or "
           "columns);\n"
           "- `write`: it is not a read-only query (it writes, changes the schema, attaches or detaches "
           "databases, runs a PRAGMA statement, vacuums or controls transactions);\n"
           "- `grant`: it reads a table not granted to the role (SQLite's own tables and table-valued "
           "`pragma_...` functions are never granted).")

@dataclass
class Shop:
    """One task's database and roles: ``role`` (the first of ``roles``) is the one whose key is delivered."""

    roles: list[str]
    grants: dict[str, list[str]]
    keys: dict[str, str]
    ns: dict  # the reference's namespace
    conn: object  # the reference's sandbox: the schema, empty

    @property
    def role(self) -> str:
        return self.roles[0]


def make_shop(t: TaskBuilder) -> Shop:
    """Roles with distinct grants, their API keys, and the database (shipped to /app/db/analytics.db)."""
    k, rng, lv = t.knobs, t.rng, t.level
    roles = distinct(lambda: t.code(1), k.roles)
    names = list(TABLES)
    grants: dict[str, list[str]] = {}
    for rl in roles:
        for _ in range(200):  # no two roles with the same grants: the wrong role must judge some query otherwise
            pair = rng.choice(FKS[:6])
            extra = [n for n in names if n not in pair]
            chosen = sorted({pair[0], pair[2], *rng.sample(extra, rng.randint(2, 4))})
            if chosen not in grants.values():
                break
        else:
            raise FamilyError("sql_query_firewall: no new set of grants in 200 draws")
        grants[rl] = chosen
    # API keys: 14 digits, too many to try against the digests; only the role's own is ever delivered.
    keys = {rl: str(rng.randrange(10 ** 13, 10 ** 14)) for rl in roles}
    digests = [(rl, hashlib.sha256(keys[rl].encode()).hexdigest()) for rl in roles]
    grant_rows = []
    for rl in roles:
        for tb in grants[rl]:
            stored = tb.title() if lv >= 4 and rng.random() < 0.3 else tb
            grant_rows.append((rl, stored))
    rng.shuffle(grant_rows)
    sql = dbsql.script(schema_sql(), {**data_rows(rng, digests), "access_grants": grant_rows})
    dbsql.ship(t, sql, "/app/db/analytics.db")
    ns = run_python(REFERENCE)
    conn, _, owners = ns["sandbox_from"](dbsql.in_memory(sql))
    if ns["role_of"](owners, keys[roles[0]]) != roles[0]:
        raise FamilyError("sql_query_firewall: the reference does not find the role by its key")
    return Shop(roles, grants, keys, ns, conn)


def corpus(t: TaskBuilder, shop: Shop, rl: str, n: int, judge=None) -> tuple[list[str], list[str]]:
    """``n`` different benign and ``n`` malicious queries for role ``rl``, checked by the reference; for the
    delivered role, also one that a guessed role would judge otherwise. ``judge``: a variant's verdict, which
    sorts whatever the generators give (writes on restricted tables too); None: the firewall's, each
    generator's output landing on its own side."""
    rng = t.rng
    verdict = judge or shop.ns["verdict"]
    allowed = {x: True for x in shop.grants[rl]}
    restricted = [x for x in TABLES if x not in shop.grants[rl]]
    g = Gen(rng, t.level, shop.grants[rl], restricted)
    sources = [(True, g.benign), (False, g.malicious)] if judge is None else \
        [(None, g.benign), (None, g.malicious), (None, Gen(rng, t.level, restricted, shop.grants[rl]).malicious)]
    clean: list[str] = []
    bad: list[str] = []
    for _ in range(100 * n):
        if len(clean) >= n and len(bad) >= n:
            break
        for side, draw in sources:
            if side is not None and len(clean if side else bad) >= n:
                continue
            item = draw()
            if side is not None and item in (clean if side else bad):
                continue
            ok = verdict(shop.conn, item, allowed)
            if side is not None and ok != side:
                raise FamilyError(f"sql_query_firewall: benign item rejected by the reference: {item!r}" if side
                                  else f"sql_query_firewall: malicious item accepted by the reference: {item!r}")
            into = clean if ok else bad
            if item not in into and len(into) < n:
                into.append(item)
    if len(clean) < n or len(bad) < n:
        raise FamilyError(f"sql_query_firewall: fewer than {n} different queries of each kind")
    if rl == shop.role:  # a guessed role judges at least one item otherwise
        for other in shop.roles[1:]:
            theirs = {x: True for x in shop.grants[other]}
            if all(verdict(shop.conn, i, theirs) for i in clean) and \
                    not any(verdict(shop.conn, i, theirs) for i in bad):
                mine = [x for x in shop.grants[rl] if x not in theirs]
                if mine:
                    clean.append(g.simple(rng.choice(mine)))
                else:
                    bad.append(g.simple(rng.choice([x for x in shop.grants[other] if x not in allowed])))
    return clean, bad


def deliver_key(t: TaskBuilder, shop: Shop) -> str:
    """Deliver the role's key, once everything else the agent sees is in place: only its digest may show."""
    if visible(t, shop.keys[shop.role]):
        raise FamilyError("sql_query_firewall: the API key shows in the task")
    return t.deliver(shop.keys[shop.role], "the API key")


@dataclass(frozen=True)
class Knobs:
    items: int  # queries of the delivered role (each kind, for the corpus; in all, for the log)
    roles: int  # roles with grants; the key names one of them


@register
class SqlQueryFirewall(Family):
    name = "sql_query_firewall"
    domain = "data_querying"
    skill_types = ("Query Safety",)
    primitive_skills = ("SQL statement classification", "SQL injection detection", "access-control policy checks",
                        "schema inspection", "query log auditing", "case-insensitive matching")
    verifiers = ("adversarial_corpus", "exact_text", "metric_threshold", "multi_protocol")
    programs = {"Python": REFERENCE}
    # firewall: the read-only policy; dml_grants: writes of rows allowed, within the grants; deny_reasons: why
    # the firewall refuses each query (as a classifier: the refusals that are about grants alone).
    variants = ("firewall", "dml_grants", "deny_reasons")
    # Many roles: the key names one of them, and a guess among the roles should rarely pay.
    levels = {0: Knobs(items=8, roles=6), 1: Knobs(items=14, roles=6), 2: Knobs(items=24, roles=7),
              3: Knobs(items=36, roles=8), 4: Knobs(items=50, roles=10)}

    def shop(self, t: TaskBuilder) -> tuple[Shop, dict]:
        """The task's database and the namespace of its variant's program."""
        for _ in range(self.variants.index(t.variant)):  # a seed's database differs between the variants
            t.rng.random()
        shop = make_shop(t)
        return shop, shop.ns if t.variant == "firewall" else run_python(reference(t.variant))

    def corpus_case(self, t: TaskBuilder) -> None:
        shop, ns = self.shop(t)
        judge = None if t.variant == "firewall" else ns[JUDGE[t.variant]]
        clean, bad = corpus(t, shop, shop.role, t.knobs.items, judge)
        if t.variant == "deny_reasons":
            self.refusal_corpus(t, shop, clean, bad)
            return
        # Level 0 only ever sees plain reads and plain writes: the short policy covers them.
        if t.variant == "firewall":
            policy = POLICY if t.level else ("A submitted query is acceptable only if it is one read-only `SELECT` "
                                             "and every table it reads is granted to the role in `access_grants`.")
        else:
            policy = DML_POLICY if t.level else ("A submitted statement is acceptable only if it is one `SELECT`, "
                                                 "`INSERT`, `REPLACE`, `UPDATE` or `DELETE` statement and every "
                                                 "table it reads or writes is granted to the role in "
                                                 "`access_grants`.")
        t.say(INTRO + "We are putting a firewall in front of it for one submitter, whose API key is given "
              "below: every SQL text it submits must be checked, against the grants of the role its key "
              "names, before it reaches the database.\n\n" + ("" if t.variant == "firewall" else DML_ROLE)
              + policy)
        v = deliver_key(t, shop)
        t.expect_classifier("The firewall program judges one submitted SQL text, read whole from standard "
                            "input, for the submitter whose API key is given above (hard-code the key or its "
                            "role; the program may read `/app/db/analytics.db`, but must never change it).",
                            clean, bad, {"Python": reference(t.variant)})
        t.solve(f'sed -i "s/@@KEY@@/{v}/" /app/solution.py')

    def refusal_corpus(self, t: TaskBuilder, shop: Shop, clean: list[str], bad: list[str]) -> None:
        """deny_reasons as a classifier: flag the queries refused for their grants alone."""
        t.say(INTRO + "Our firewall refuses the queries that break the policy below; the refusals that are about "
              "grants alone go to the security team. I need the program that picks those out for one "
              "submitter, whose API key is given below, against the grants of the role its key names.\n\n"
              + (POLICY + "\n\n" if t.level else "")
              + "A query is a grant refusal if it is exactly one statement, compiles against the schema, is a "
              "read-only `SELECT`, and yet reads at least one table not granted to the role (SQLite's own tables "
              "and table-valued `pragma_...` functions are never granted). Any other query, acceptable or "
              "refused for another reason, is not.")
        v = deliver_key(t, shop)
        t.expect_classifier("The program judges one submitted SQL text, read whole from standard input, for the "
                            "submitter whose API key is given above: it exits non-zero if the text is a grant "
                            "refusal, 0 otherwise (hard-code the key or its role; the program may read "
                            "`/app/db/analytics.db`, but must never change it).",
                            clean, bad, {"Python": reference(t.variant)})
        t.solve(f'sed -i "s/@@KEY@@/{v}/" /app/solution.py')

    def output_case(self, t: TaskBuilder) -> None:
        k, rng = t.knobs, t.rng
        shop, ns = self.shop(t)
        if t.level == 0:
            {"firewall": self.grants_case, "dml_grants": self.off_limits_case,
             "deny_reasons": self.shared_grants_case}[t.variant](t, shop)
            return
        judge = ns[JUDGE[t.variant]] if t.variant == "dml_grants" else None
        entries = []
        for rl in shop.roles:
            n = k.items // 2 if rl == shop.role else max(3, k.items // 6)
            clean, bad = corpus(t, shop, rl, n, judge)
            for s in clean + bad:
                entries.append({"role": rl, "sql": s})
        rng.shuffle(entries)
        ids = rng.sample(range(1000, 9999), len(entries))
        day = rng.randrange(1, 28)
        log = []
        for i, (e, qid) in enumerate(zip(entries, sorted(ids))):
            sec = 8 * 3600 + i * 97
            log.append(json.dumps({"id": qid, "submitted_at": f"2025-05-{day:02d}T{sec // 3600:02d}:"
                                   f"{sec // 60 % 60:02d}:{sec % 60:02d}Z", "role": e["role"], "sql": e["sql"]}))
        text = "\n".join(log) + "\n"
        grants_of = {rl: {x: True for x in shop.grants[rl]} for rl in shop.roles}
        report = ns["audit"] if t.variant == "firewall" else ns[REPORT[t.variant]]
        truth = report(shop.conn, grants_of, text.splitlines(), shop.role)
        t.add_file("/app/logs/query_log.jsonl", text)
        log_of = ("`/app/logs/query_log.jsonl` (one JSON object per line: `id`, `submitted_at`, `role`, `sql`), "
                  "for one role: the one named by the API key given below.")
        if t.variant == "firewall":
            t.say(INTRO + "Before we put a firewall in front of it, I need an audit of yesterday's query log, "
                  + log_of + " Which of the queries that role submitted break the policy?\n\n" + POLICY
                  + "\n\nOutput: the `id`s of that role's unacceptable queries, one per line, in ascending numeric "
                  "order (nothing else; queries of other roles are not part of this audit).")
            out = "/app/out/violations.txt"
        elif t.variant == "dml_grants":
            t.say(INTRO + "I need an audit of yesterday's statement log, " + log_of + " " + DML_ROLE
                  + "Which of the statements that role submitted break its policy?\n\n" + DML_POLICY
                  + "\n\nOutput: the `id`s of that role's unacceptable statements, one per line, in ascending "
                  "numeric order (nothing else; statements of other roles are not part of this audit).")
            out = "/app/out/violations.txt"
        else:
            t.say(INTRO + "I need to know which queries our firewall would have refused, and why, in yesterday's "
                  "query log, " + log_of + "\n\n" + POLICY + "\n\n" + REASONS
                  + "\n\nOutput: one line per unacceptable query of that role, as `id reason` (for example "
                  "`4711 write`), in ascending numeric order of `id` (nothing else; acceptable queries and "
                  "queries of other roles are not listed).")
            out = "/app/out/refusals.txt"
        v = deliver_key(t, shop)
        t.add_solution_file("firewall.py", reference(t.variant))
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\n'
                f'python3 /solution/firewall.py --audit /app/logs/query_log.jsonl "{v}" > {out}')
        t.expect_output(out, truth, "the list of ids" if t.variant != "deny_reasons" else "the refusals")

    def grants_case(self, t: TaskBuilder, shop: Shop) -> None:
        """Level 0: only the lookup behind the audit, the tables the key's role may read."""
        truth = "".join(f"{x}\n" for x in sorted(shop.grants[shop.role]))
        t.say(INTRO + "I need to know which tables the role named by the API key given below may read.\n\n"
              "Output: the role's granted table names, one per line, sorted (byte order), nothing else.")
        self.lookup(t, shop, "SELECT g.table_name FROM access_grants g JOIN api_keys k ON k.owner = g.role WHERE "
                    "k.key_hash = '$h' ORDER BY g.table_name", "/app/out/tables.txt", truth, "the list of tables")

    def off_limits_case(self, t: TaskBuilder, shop: Shop) -> None:
        """Level 0 of dml_grants: the tables the key's role must neither read nor write."""
        tables = sorted([*TABLES, "access_grants"])
        truth = "".join(f"{x}\n" for x in tables if x not in shop.grants[shop.role])
        t.say(INTRO + "The role named by the API key given below may read and change rows only in the tables "
              "granted to it. Which tables of the database (its own `access_grants` and `api_keys` included) "
              "are off limits to it?\n\nOutput: those table names, one per line, sorted (byte order), nothing "
              "else.")
        self.lookup(t, shop, "SELECT name FROM sqlite_master WHERE type = 'table' AND lower(name) NOT IN (SELECT "
                    "lower(g.table_name) FROM access_grants g JOIN api_keys k ON k.owner = g.role WHERE "
                    "k.key_hash = '$h') ORDER BY name", "/app/out/off_limits.txt", truth, "the list of tables")

    def shared_grants_case(self, t: TaskBuilder, shop: Shop) -> None:
        """Level 0 of deny_reasons: for each table of the key's role, how many roles may read it."""
        mine = sorted(shop.grants[shop.role])
        truth = "".join(f"{x} {sum(x in g for g in shop.grants.values())}\n" for x in mine)
        t.say(INTRO + "For each table granted to the role named by the API key given below, how many roles "
              "(that one included) are granted it in `access_grants`?\n\nOutput: one line per table of that "
              "role, as `table count` (for example `orders 3`), sorted by table name (byte order), nothing "
              "else.")
        self.lookup(t, shop, "SELECT g.table_name, (SELECT COUNT(*) FROM access_grants a WHERE a.table_name = "
                    "g.table_name) FROM access_grants g JOIN api_keys k ON k.owner = g.role WHERE k.key_hash = "
                    "'$h' ORDER BY g.table_name", "/app/out/shared.txt", truth, "the table counts")

    @staticmethod
    def lookup(t: TaskBuilder, shop: Shop, query: str, out: str, truth: str, what: str) -> None:
        """Deliver the key; the oracle digests it and runs one sqlite3 query on the database."""
        v = deliver_key(t, shop)
        sep = " -separator ' '" if "COUNT" in query else ""
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\n'
                f'h=$(printf %s "{v}" | sha256sum | cut -d" " -f1)\n'
                f"sqlite3 -batch -noheader{sep} /app/db/analytics.db \"{query}\" > {out}")
        t.expect_output(out, truth, what)
