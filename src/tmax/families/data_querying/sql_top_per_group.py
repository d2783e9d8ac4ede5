"""Best sellers per category for one month: a SQLite shop database, revenue per product from paid
orders (refunds netted out at the top level), ranked within each category with ties kept (RANK, not
ROW_NUMBER), NULL categories grouped, mixed-case statuses and regions at higher levels."""

from __future__ import annotations

from dataclasses import dataclass

from tmax.families import sql as dbsql
from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import fill, run_python

# The truth, computed in plain Python from the database rows (the oracle uses SQL instead, so the gate
# cross-checks two independent implementations).
REFERENCE = r'''
import sqlite3
import sys


def cents_text(c):
    return f"{c // 100}.{c % 100:02d}"


def top_products(conn, month, top_n, region=None):
    cats = dict(conn.execute("SELECT id, name FROM categories"))
    prods = {pid: (sku, cid) for pid, sku, cid in conn.execute("SELECT id, sku, category_id FROM products")}
    stores = dict(conn.execute("SELECT id, region FROM stores"))
    paid = {}
    for oid, sid, at, status in conn.execute("SELECT id, store_id, ordered_at, status FROM orders"):
        if (status or "").lower() != "paid" or at[:4] + at[5:7] != month:
            continue
        if region is not None and (stores.get(sid) or "").lower() != region.lower():
            continue
        paid[oid] = True
    price = {}
    net = {}
    for oid, pid, qty, cents in conn.execute("SELECT order_id, product_id, qty, unit_price_cents FROM order_items"):
        price[(oid, pid)] = cents
        if oid in paid:
            net[pid] = net.get(pid, 0) + qty * cents
    has_refunds = conn.execute("SELECT count(*) FROM sqlite_master WHERE name = 'refunds'").fetchone()[0]
    if has_refunds:
        for oid, pid, qty in conn.execute("SELECT order_id, product_id, qty FROM refunds"):
            if oid in paid:
                net[pid] = net.get(pid, 0) - qty * price[(oid, pid)]
    groups = {}
    for pid in sorted(net):
        if net[pid] <= 0:
            continue
        sku, cid = prods[pid]
        cat = cats.get(cid) if cid is not None else None
        groups.setdefault(cat if cat is not None else "Uncategorized", []).append((net[pid], sku))
    out = []
    for cat in sorted(groups):
        rows = sorted(groups[cat], key=lambda r: (-r[0], r[1]))
        for i, (cents, sku) in enumerate(rows):
            rank = 1 + sum(1 for c, _ in rows if c > cents)
            if rank <= top_n:
                out.append(f"{cat},{rank},{sku},{cents_text(cents)}\n")
    return "".join(out)


if __name__ == "__main__":
    db, month, top_n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    region = sys.argv[4] if len(sys.argv) > 4 else None
    sys.stdout.write(top_products(sqlite3.connect(db), month, top_n, region))
'''

# The oracle's query; @@MONTH@@ is replaced by the delivered month at solve time.
QUERY = """WITH paid AS (
  SELECT o.id FROM orders o @STORE_JOIN@
  WHERE lower(o.status) = 'paid' AND strftime('%Y%m', o.ordered_at) = '@@MONTH@@'
),
sold AS (
  SELECT i.product_id, SUM(i.qty * i.unit_price_cents) AS cents
  FROM order_items i JOIN paid p ON p.id = i.order_id GROUP BY i.product_id
),
refunded AS (
  @REFUNDED@
),
net AS (
  SELECT s.product_id, s.cents - COALESCE(f.cents, 0) AS cents FROM sold s LEFT JOIN refunded f USING (product_id)
),
ranked AS (
  SELECT COALESCE(c.name, 'Uncategorized') AS category, p.sku, n.cents,
         RANK() OVER (PARTITION BY COALESCE(c.name, 'Uncategorized') ORDER BY n.cents DESC) AS rnk
  FROM net n JOIN products p ON p.id = n.product_id LEFT JOIN categories c ON c.id = p.category_id
  WHERE n.cents > 0
)
SELECT category, rnk, sku, printf('%d.%02d', cents / 100, cents % 100) FROM ranked
WHERE rnk <= @TOP_N@ ORDER BY category, rnk, sku;
"""
REFUNDED_SQL = ("SELECT r.product_id, SUM(r.qty * i.unit_price_cents) AS cents FROM refunds r\n"
                "  JOIN order_items i ON i.order_id = r.order_id AND i.product_id = r.product_id\n"
                "  JOIN paid p ON p.id = r.order_id GROUP BY r.product_id")
NO_REFUNDS_SQL = "SELECT NULL AS product_id, 0 AS cents WHERE 0"

CATEGORIES = ["Audio", "Books", "Cameras", "Garden", "Kitchen", "Lighting", "Office", "Outdoor", "Storage", "Toys"]
REGIONS = ["North", "South", "East", "West"]
MONTH_DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]


@dataclass(frozen=True)
class Knobs:
    categories: int  # categories that have products
    products: int  # products in the catalogue
    orders: int  # orders over three months around the reporting month
    top: int  # products listed per category (rank cut-off)
    traps: int  # 0-3: which traps the data has (mixed case, NULL categories, refunds, regions)


@register
class SqlTopPerGroup(Family):
    name = "sql_top_per_group"
    domain = "data_querying"
    skill_types = ("Analytical Queries", "Relational Queries")
    primitive_skills = ("window functions", "top-N per group", "ranking with ties", "multi-table joins",
                        "group-by aggregation", "NULL semantics", "case-insensitive matching", "date range filtering")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    levels = {0: Knobs(categories=3, products=9, orders=25, top=1, traps=0),
              1: Knobs(categories=4, products=16, orders=60, top=1, traps=0),
              2: Knobs(categories=5, products=28, orders=180, top=3, traps=1),
              3: Knobs(categories=6, products=40, orders=350, top=3, traps=2),
              4: Knobs(categories=7, products=55, orders=600, top=3, traps=3)}

    def output_case(self, t: TaskBuilder) -> None:
        k, rng = t.knobs, t.rng
        traps = k.traps
        month_no = rng.randrange(2, 12)
        month = f"2025{month_no:02d}"
        region = rng.choice(REGIONS) if traps >= 3 else None
        cats = sorted(rng.sample(CATEGORIES, k.categories))
        cat_rows = [(i + 1, c) for i, c in enumerate(cats)]
        if traps >= 2:  # a category with no products at all, and ids not in name order
            extra = next(c for c in CATEGORIES if c not in cats)
            cat_rows.append((len(cat_rows) + 1, extra))
        rng.shuffle(cat_rows)
        cat_rows = [(i + 1, name) for i, (_, name) in enumerate(cat_rows)]
        cat_id = {name: i for i, name in cat_rows}
        products, skus = [], set()
        for pid in range(1, k.products + 1):
            uncategorised = traps >= 2 and rng.random() < 0.12
            cname = None if uncategorised else cats[(pid - 1) % len(cats)] if pid <= len(cats) else rng.choice(cats)
            prefix = "MSC" if cname is None else cname[:3].upper()
            for _ in range(1000):
                sku = f"{prefix}-{rng.randrange(1000, 10000)}"
                if sku not in skus:
                    skus.add(sku)
                    break
            else:
                raise FamilyError("sql_top_per_group: no new SKU in 1000 draws")
            products.append((pid, sku, f"{prefix.title()} item {pid}", None if cname is None else cat_id[cname]))
        base_price = {p[0]: rng.choice([499, 999, 1250, 1999, 2450, 3999, 4999, 7900, 12900]) for p in products}
        stores = [(i + 1, f"Store {i + 1}", REGIONS[i % 4]) for i in range(8)]
        if traps >= 3:
            stores = [(sid, name, rng.choice([r, r.lower(), r.upper()])) for sid, name, r in stores]
        statuses = ["paid"] * 6 + ["cancelled"] + (["refunded"] if traps >= 1 else [])

        def stamp(m: int) -> str:
            if rng.random() < 0.15 and traps >= 2:  # boundary instants
                day, hh, mm, ss = rng.choice([(1, 0, 0, 0), (MONTH_DAYS[m - 1], 23, 59, 59)])
            else:
                day, hh, mm, ss = rng.randrange(1, MONTH_DAYS[m - 1] + 1), rng.randrange(24), rng.randrange(60), \
                    rng.randrange(60)
            if traps >= 3 and rng.random() < 0.3:
                return f"2025-{m:02d}-{day:02d}T{hh:02d}:{mm:02d}:{ss:02d}Z"
            return f"2025-{m:02d}-{day:02d} {hh:02d}:{mm:02d}:{ss:02d}"

        orders, items, refunds = [], [], []
        for oid in range(1, k.orders + 1):
            m = rng.choice([month_no - 1, month_no, month_no, month_no, month_no + 1])
            status = rng.choice(statuses)
            if traps >= 2:
                status = rng.choice([status, status, status.title(), status.upper()])
            orders.append((oid, rng.choice(stores)[0], stamp(m), status))
            for p in rng.sample(products, rng.randint(1, 3)):
                qty = rng.choice([1, 1, 1, 2, 2, 3, 5])
                items.append((oid, p[0], qty, base_price[p[0]]))
                if traps >= 3 and status.lower() == "paid" and rng.random() < 0.12:
                    back = rng.randint(1, qty)
                    if back >= 2 and rng.random() < 0.5:
                        refunds.append((oid, p[0], 1))
                        back -= 1
                    refunds.append((oid, p[0], back))
        ref_ns = run_python(REFERENCE)
        schema = ("CREATE TABLE categories (id INTEGER PRIMARY KEY, name TEXT NOT NULL);\n"
                  "CREATE TABLE products (id INTEGER PRIMARY KEY, sku TEXT NOT NULL UNIQUE, name TEXT NOT NULL, "
                  "category_id INTEGER REFERENCES categories(id));\n"
                  "CREATE TABLE stores (id INTEGER PRIMARY KEY, name TEXT NOT NULL, region TEXT NOT NULL);\n"
                  "CREATE TABLE orders (id INTEGER PRIMARY KEY, store_id INTEGER NOT NULL REFERENCES stores(id), "
                  "ordered_at TEXT NOT NULL, status TEXT NOT NULL);\n"
                  "CREATE TABLE order_items (order_id INTEGER NOT NULL REFERENCES orders(id), product_id INTEGER "
                  "NOT NULL REFERENCES products(id), qty INTEGER NOT NULL, unit_price_cents INTEGER NOT NULL, "
                  "PRIMARY KEY (order_id, product_id));\n")
        if traps >= 3:
            schema += ("CREATE TABLE refunds (id INTEGER PRIMARY KEY, order_id INTEGER NOT NULL, product_id INTEGER "
                       "NOT NULL, qty INTEGER NOT NULL);\n")

        def database() -> str:
            tables = {"categories": cat_rows, "products": products, "stores": stores, "orders": orders,
                      "order_items": items}
            if traps >= 3:
                tables["refunds"] = [(i + 1, *r) for i, r in enumerate(refunds)]
            return dbsql.script(schema, tables)

        # Plant ties: in a few categories, top the runner-up up to the leader's exact revenue.
        for _ in range(1 + (traps >= 2)):
            conn = dbsql.in_memory(database())
            report = ref_ns["top_products"](conn, month, 99, region)
            by_cat: dict = {}
            for line in report.splitlines():
                c, rank, sku, amount = line.split(",")
                by_cat.setdefault(c, []).append((int(rank), sku, int(amount.replace(".", ""))))
            cands = [c for c in sorted(by_cat) if len(by_cat[c]) >= 2 and by_cat[c][0][2] > by_cat[c][1][2]]
            if not cands:
                break
            c = rng.choice(cands)
            (_, _, lead), (_, sku2, second) = by_cat[c][0], by_cat[c][1]
            pid2 = next(p[0] for p in products if p[1] == sku2)
            oid = len(orders) + 1
            sid = next(s[0] for s in stores if region is None or s[2].lower() == region.lower())
            orders.append((oid, sid, f"{month[:4]}-{month[4:]}-{rng.randrange(2, 28):02d} 12:{rng.randrange(60):02d}:00",
                           "paid"))
            items.append((oid, pid2, 1, lead - second))
        rng.shuffle(items)
        sql = database()
        truth = ref_ns["top_products"](dbsql.in_memory(sql), month, k.top, region)
        dbsql.ship(t, sql, "/app/db/shop.db")
        if t.level == 0:
            self.category_case(t, month, ref_ns["top_products"](dbsql.in_memory(sql), month, 10**6))
            return

        top = k.top
        which = "best-selling product" if top == 1 else f"top {top} products"
        rules = ["Revenue of a product is the sum of `qty * unit_price_cents` over its order lines, counting only "
                 "orders whose status is `paid`"
                 + (" (statuses were typed by hand: match them case-insensitively)" if traps >= 2 else "")
                 + " and that were placed in the reporting month (`orders.ordered_at`)."]
        if traps >= 3:
            rules.append("Partial refunds are recorded in `refunds` (several rows may refer to the same order line); "
                         "subtract each refunded quantity at that line's unit price, whenever the refund happened.")
            rules.append(f"Only orders from stores in the {region} region count (`stores.region`; the case of the "
                         "region names is inconsistent).")
        rules.append("Products with no revenue left are not listed." if traps >= 3 else
                     "Products without revenue in the month are not listed.")
        if traps >= 2:
            rules.append("Products without a category are reported under the category name `Uncategorized`.")
        rules.append("Rank products within each category by revenue, highest first. Ties share a rank and the "
                     "next rank is skipped (1, 1, 3, ...); "
                     + ("list every product ranked 1, so a tie can make a category list several products."
                        if top == 1 else f"list every product whose rank is {top} or better, so a tie can make a "
                        "category list more products."))
        t.say(f"Our shop's SQLite database is `/app/db/shop.db` (tables `categories`, `products`, `stores`, "
              f"`orders`, `order_items`{', `refunds`' if traps >= 3 else ''}). I need the {which} per category "
              "for one reporting month, by revenue. The month is given below as YYYYMM (202401 would be "
              "January 2024).\n\n" + "\n".join(f"- {r}" for r in rules) + "\n\n"
              "Report format: CSV without a header, one line per listed product as `category,rank,sku,revenue`, "
              "the revenue in currency units with exactly two decimals (e.g. `1234.50`), sorted by category name "
              "(byte order), then rank, then sku.")
        v = t.deliver(month, "the reporting month")
        fmt = "the report"
        query = fill(QUERY,
                     STORE_JOIN=(f"JOIN stores s ON s.id = o.store_id AND lower(s.region) = lower('{region}')"
                                 if region else ""),
                     REFUNDED=REFUNDED_SQL if traps >= 3 else NO_REFUNDS_SQL, TOP_N=top)
        t.add_solution_file("top.sql", query)
        t.add_solution_file("reference.py", REFERENCE)
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\n'
                f'sed "s/@@MONTH@@/{v}/" /solution/top.sql | sqlite3 -batch -noheader -separator , /app/db/shop.db '
                "> /app/out/top_products.csv\n"
                f'python3 /solution/reference.py /app/db/shop.db "{v}" {top}{" " + region if region else ""} | '
                "cmp - /app/out/top_products.csv")
        t.expect_output("/app/out/top_products.csv", truth, fmt)

    def category_case(self, t: TaskBuilder, month: str, every: str) -> None:
        """Level 0: revenue per category (one joined GROUP BY, no ranking); ``every`` lists each product's."""
        per: dict = {}
        for line in every.splitlines():
            cat, _, _, amount = line.split(",")
            per[cat] = per.get(cat, 0) + int(amount.replace(".", ""))
        truth = "".join(f"{c},{per[c] // 100}.{per[c] % 100:02d}\n" for c in sorted(per))
        t.say("Our shop's SQLite database is `/app/db/shop.db` (tables `categories`, `products`, `stores`, "
              "`orders`, `order_items`). I need the revenue of each category for one month, given below as YYYYMM "
              "(202401 would be January 2024): the sum of `qty * unit_price_cents` over the order lines of its "
              "products, counting only orders whose status is `paid` and that were placed in that month "
              "(`orders.ordered_at`).\n\n"
              "Report format: CSV without a header, one line per category with revenue as `category,revenue`, the "
              "revenue in currency units with exactly two decimals (e.g. `1234.50`), sorted by category name.")
        v = t.deliver(month, "the reporting month")
        t.add_solution_file("categories.sql", CATEGORY_QUERY)
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\n'
                f'sed "s/@@MONTH@@/{v}/" /solution/categories.sql | sqlite3 -batch -noheader -separator , '
                "/app/db/shop.db > /app/out/category_revenue.csv")
        t.expect_output("/app/out/category_revenue.csv", truth, "the report")


CATEGORY_QUERY = """SELECT c.name, printf('%d.%02d', SUM(i.qty * i.unit_price_cents) / 100,
                       SUM(i.qty * i.unit_price_cents) % 100)
FROM orders o JOIN order_items i ON i.order_id = o.id JOIN products p ON p.id = i.product_id
JOIN categories c ON c.id = p.category_id
WHERE lower(o.status) = 'paid' AND strftime('%Y%m', o.ordered_at) = '@@MONTH@@'
GROUP BY c.name ORDER BY c.name;
"""
