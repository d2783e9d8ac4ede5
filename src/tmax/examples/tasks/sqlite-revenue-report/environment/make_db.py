"""Deterministic generator for the shop database used by sqlite-revenue-report.

usage: python3 make_db.py OUT.db SEED
"""
import random
import sqlite3
import sys

SCHEMA = """
CREATE TABLE customers (
    id      INTEGER PRIMARY KEY,
    name    TEXT NOT NULL,
    email   TEXT,
    country TEXT            -- ISO 3166 alpha-2, NULL when unknown
);
CREATE TABLE products (
    id       INTEGER PRIMARY KEY,
    name     TEXT NOT NULL,
    category TEXT NOT NULL
);
CREATE TABLE orders (
    id          INTEGER PRIMARY KEY,
    customer_id INTEGER NOT NULL,   -- customers may have been deleted since (GDPR requests)
    created_at  TEXT NOT NULL,      -- UTC, 'YYYY-MM-DD HH:MM:SS'
    status      TEXT NOT NULL       -- completed / refunded / cancelled / pending, case varies by source system
);
CREATE TABLE order_items (
    order_id         INTEGER NOT NULL REFERENCES orders(id),
    product_id       INTEGER NOT NULL REFERENCES products(id),
    quantity         INTEGER NOT NULL,
    unit_price_cents INTEGER NOT NULL
);
"""


def build(path, seed):
    rng = random.Random(seed)
    db = sqlite3.connect(path)
    db.executescript(SCHEMA)
    countries = ["DE", "FR", "US", "GB", "NL", "SE", None]
    first = ["Ana", "Ben", "Chloe", "Dev", "Eva", "Femi", "Gus", "Hana", "Ivo", "Jun", "Kai", "Lea"]
    last = ["Smith", "Muller", "Dubois", "Okafor", "Tanaka", "Rossi", "Novak", "Berg"]
    ncust = 60
    for cid in range(1, ncust + 1):
        name = "%s %s" % (rng.choice(first), rng.choice(last))
        db.execute("INSERT INTO customers VALUES (?,?,?,?)",
                   (cid, name, "%s%d@example.com" % (name.split()[0].lower(), cid),
                    rng.choices(countries, [5, 4, 6, 4, 2, 2, 1])[0]))
    cats = ["books", "garden", "kitchen", "toys"]
    for pid in range(1, 31):
        db.execute("INSERT INTO products VALUES (?,?,?)", (pid, "product-%02d" % pid, rng.choice(cats)))
    statuses = ["completed", "completed", "completed", "Completed", "COMPLETED", "refunded", "cancelled", "pending"]
    oid = 0
    stamps = []
    for _ in range(700):
        y = rng.choice([2022, 2023, 2023, 2023, 2024])
        m = rng.randint(1, 12)
        d = rng.randint(1, 28)
        stamps.append("%04d-%02d-%02d %02d:%02d:%02d" % (y, m, d, rng.randint(0, 23), rng.randint(0, 59), rng.randint(0, 59)))
    # boundary timestamps
    stamps += ["2022-12-31 23:59:59", "2023-01-01 00:00:00", "2023-03-31 23:59:59", "2023-04-01 00:00:00",
               "2023-06-30 12:00:00", "2023-09-30 23:59:59", "2023-10-01 00:00:01", "2023-12-31 23:59:59",
               "2024-01-01 00:00:00"]
    for ts in stamps:
        oid += 1
        # ~4% of orders reference customers that no longer exist
        cust = rng.randint(1, ncust) if rng.random() > 0.04 else rng.randint(ncust + 1, ncust + 20)
        db.execute("INSERT INTO orders VALUES (?,?,?,?)", (oid, cust, ts, rng.choice(statuses)))
        nitems = rng.choices([0, 1, 2, 3, 4], [1, 6, 5, 3, 1])[0]  # some orders have no items at all
        for _ in range(nitems):
            db.execute("INSERT INTO order_items VALUES (?,?,?,?)",
                       (oid, rng.randint(1, 30), rng.randint(1, 5), rng.choice([99, 499, 1250, 1999, 2549, 8999, 15000])))
    db.commit()
    db.close()


if __name__ == "__main__":
    build(sys.argv[1], int(sys.argv[2]))
