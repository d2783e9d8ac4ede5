"""Hidden checks for sqlite-revenue-report.

1. /app/out/revenue_2023.csv must equal the expected report for the task database
   (regenerated here from the same seed, so edits to /app/shop.db do not matter).
2. /app/out/revenue.sql is re-run with the sqlite3 CLI against a *different* database
   (another seed, not present in the sandbox) and its output must equal the expected
   report for that database. This catches hard-coded answers.
Expected reports are computed in plain Python, independently of SQL.
Exit code 0 only if both checks pass.
"""
import collections
import csv
import io
import os
import sqlite3
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_db  # noqa: E402

HEADER = ["country", "quarter", "orders", "revenue"]


def expected(path):
    db = sqlite3.connect(path)
    country = dict(db.execute("SELECT id, country FROM customers"))
    items = collections.defaultdict(int)
    for oid, q, p in db.execute("SELECT order_id, quantity, unit_price_cents FROM order_items"):
        items[oid] += q * p
    groups = collections.defaultdict(lambda: [0, 0])
    for oid, cid, ts, status in db.execute("SELECT id, customer_id, created_at, status FROM orders"):
        if status.lower() != "completed" or not ts.startswith("2023-"):
            continue
        key = (country.get(cid) or "UNKNOWN", "Q%d" % ((int(ts[5:7]) + 2) // 3))
        groups[key][0] += 1
        groups[key][1] += items.get(oid, 0)
    return [[c, q, str(n), "%d.%02d" % divmod(cents, 100)] for (c, q), (n, cents) in sorted(groups.items())]


def parse(text):
    rows = list(csv.reader(io.StringIO(text.replace("\r", ""))))
    return [r for r in rows if r]


def compare(label, got, want):
    if not got or got[0] != HEADER:
        print("FAIL %s: header is %r, want %r" % (label, got[0] if got else None, HEADER))
        return False
    if got[1:] != want:
        print("FAIL %s: %d data rows, want %d" % (label, len(got) - 1, len(want)))
        for a, b in zip(got[1:], want):
            if a != b:
                print("  first difference: got %r want %r" % (a, b))
                break
        return False
    print("ok   %s (%d rows)" % (label, len(want)))
    return True


SUSPECT = "65532"  # the agent's code runs as this uid: no /tests, no /logs/verifier, killed before we return
AS_SUSPECT = ["setpriv", f"--reuid={SUSPECT}", f"--regid={SUSPECT}", "--clear-groups", "--inh-caps=-all",
              "env", "HOME=/tmp"]


def kill_suspects():
    for _ in range(3):
        subprocess.run(["pkill", "-9", "-U", SUSPECT], check=False)


def main():
    try:
        return check()
    finally:
        kill_suspects()


def check():
    tmp = tempfile.mkdtemp()
    visible, hidden = os.path.join(tmp, "visible.db"), os.path.join(tmp, "hidden.db")
    make_db.build(visible, 2023)
    make_db.build(hidden, 9001)
    ok = True

    out_csv = "/app/out/revenue_2023.csv"
    if os.path.isfile(out_csv):
        with open(out_csv, encoding="utf-8", errors="replace") as f:
            ok &= compare("revenue_2023.csv", parse(f.read()), expected(visible))
    else:
        print("FAIL missing", out_csv)
        ok = False

    sql = "/app/out/revenue.sql"
    if os.path.isfile(sql):
        with open(sql, "rb") as f:
            # The agent's SQL runs in sqlite's safe mode (no .system, .shell, ATTACH or extensions), as
            # the suspect, on a copy of the hidden database: its only input.
            os.chown(tmp, int(SUSPECT), int(SUSPECT))
            os.chown(hidden, int(SUSPECT), int(SUSPECT))
            run = subprocess.run(AS_SUSPECT + ["sqlite3", "-safe", "-header", "-csv", hidden], stdin=f,
                                 capture_output=True, timeout=30, cwd=tmp)
        if run.returncode != 0:
            print("FAIL revenue.sql errored:", run.stderr.decode(errors="replace")[-500:])
            ok = False
        else:
            ok &= compare("revenue.sql on another database", parse(run.stdout.decode(errors="replace")),
                          expected(hidden))
    else:
        print("FAIL missing", sql)
        ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
