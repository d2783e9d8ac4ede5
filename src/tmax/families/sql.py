"""SQLite databases in a task: SQL literals and INSERT scripts, the host-side copy the truth is computed
on, and the build step that makes the database the agent queries. No family is registered here."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence


def literal(v: object) -> str:
    """``v`` as an SQL literal: NULL, an integer or float as written, anything else a quoted string."""
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return str(int(v))
    if isinstance(v, (int, float)):
        return repr(v)
    return "'" + str(v).replace("'", "''") + "'"


def inserts(table: str, rows: Sequence[Sequence[object]]) -> str:
    """One INSERT statement a row."""
    return "".join(f"INSERT INTO {table} VALUES ({', '.join(literal(v) for v in r)});\n" for r in rows)


def script(schema: str, tables: dict[str, Sequence[Sequence[object]]]) -> str:
    """The whole database as one script: the schema, then every table's rows in one transaction."""
    return schema + "BEGIN;\n" + "".join(inserts(name, rows) for name, rows in tables.items()) + "COMMIT;\n"


def in_memory(sql: str) -> sqlite3.Connection:
    """The database ``sql`` builds, on the host, for computing the truth."""
    conn = sqlite3.connect(":memory:")
    conn.executescript(sql)
    return conn


def ship(t, sql: str, db: str) -> None:
    """Build ``db`` (an absolute path in the environment) from ``sql`` at image build time; the script
    itself does not stay in the image."""
    src = f"/tmp/tmax-sql/{db.strip('/').replace('/', '_')}.sql"
    t.add_file(src, sql)
    t.add_setup(f"mkdir -p \"$(dirname {db})\" && sqlite3 {db} < {src} && rm -f {src} && "
                "rmdir --ignore-fail-on-non-empty /tmp/tmax-sql")
