"""Best sellers per category for one month: a SQLite shop database, revenue per product from paid
orders (refunds netted out at the top level), NULL categories grouped, mixed-case statuses and regions
at higher levels. Variants: the top products per category ranked with ties kept (RANK, not
ROW_NUMBER); each category's revenue against the month before (a pivot over two months, signed
change); and each category's core products, the fewest best sellers whose running total reaches half
of the category's revenue (a running SUM window)."""

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

N = @NAMES@  # this shop's table, column and status names


def cents_text(c):
    return f"{c // 100}.{c % 100:02d}"


def net_revenue(conn, month, region=None):
    """product id -> revenue from its paid order lines of the month, refunds netted out."""
    stores = dict(conn.execute(f"SELECT id, region FROM {N['stores']}"))
    paid = {}
    for oid, sid, at, status in conn.execute(f"SELECT id, store_id, {N['ordered_at']}, status FROM {N['orders']}"):
        if (status or "").lower() != N["status_paid"] or at[:4] + at[5:7] != month:
            continue
        if region is not None and (stores.get(sid) or "").lower() != region.lower():
            continue
        paid[oid] = True
    price = {}
    net = {}
    for oid, pid, qty, cents in conn.execute(f"SELECT order_id, product_id, {N['qty']}, {N['unit_price_cents']} "
                                             f"FROM {N['order_items']}"):
        price[(oid, pid)] = cents
        if oid in paid:
            net[pid] = net.get(pid, 0) + qty * cents
    has_refunds = conn.execute("SELECT count(*) FROM sqlite_master WHERE name = ?", (N["refunds"],)).fetchone()[0]
    if has_refunds:
        for oid, pid, qty in conn.execute(f"SELECT order_id, product_id, {N['qty']} FROM {N['refunds']}"):
            if oid in paid:
                net[pid] = net.get(pid, 0) - qty * price[(oid, pid)]
    return net


def by_category(conn, net):
    """category name -> [(revenue, sku)] of the products with revenue left, best first, ties by sku."""
    cats = dict(conn.execute(f"SELECT id, name FROM {N['categories']}"))
    prods = {pid: (sku, cid) for pid, sku, cid in conn.execute(f"SELECT id, sku, category_id FROM {N['products']}")}
    groups = {}
    for pid in sorted(net):
        if net[pid] <= 0:
            continue
        sku, cid = prods[pid]
        cat = cats.get(cid) if cid is not None else None
        groups.setdefault(cat if cat is not None else "Uncategorized", []).append((net[pid], sku))
    return {cat: sorted(rows, key=lambda r: (-r[0], r[1])) for cat, rows in sorted(groups.items())}


def top_products(conn, month, top_n, region=None):
    out = []
    for cat, rows in by_category(conn, net_revenue(conn, month, region)).items():
        for cents, sku in rows:
            rank = 1 + sum(1 for c, _ in rows if c > cents)
            if rank <= top_n:
                out.append(f"{cat},{rank},{sku},{cents_text(cents)}\n")
    return "".join(out)


def signed(c):
    return ("-" if c < 0 else "") + cents_text(abs(c))


def previous_month(month):
    y, m = int(month[:4]), int(month[4:])
    return f"{y - (m == 1)}{12 if m == 1 else m - 1:02d}"


def month_change(conn, month, top_n, region=None):
    """Each category's revenue in the month before and in the month, and the change; biggest rise first."""
    totals = [{cat: sum(c for c, _ in rows) for cat, rows in by_category(conn, net_revenue(conn, m, region)).items()}
              for m in (previous_month(month), month)]
    cats = sorted(set(totals[0]) | set(totals[1]))
    rows = [(totals[1].get(c, 0) - totals[0].get(c, 0), c) for c in cats]
    return "".join(f"{c},{cents_text(totals[0].get(c, 0))},{cents_text(totals[1].get(c, 0))},{signed(d)}\n"
                   for d, c in sorted(rows, key=lambda r: (-r[0], r[1])))


def core_products(conn, month, top_n, region=None):
    """Per category, best sellers first until their running total reaches half the category's revenue."""
    out = []
    for cat, rows in by_category(conn, net_revenue(conn, month, region)).items():
        total, run = sum(c for c, _ in rows), 0
        for cents, sku in rows:
            if 2 * run >= total:
                break
            run += cents
            out.append(f"{cat},{sku},{cents_text(run)}\n")
    return "".join(out)


REPORTS = {"top_products": top_products, "month_change": month_change, "core_products": core_products}

if __name__ == "__main__":
    report, db, month, top_n = REPORTS[sys.argv[1]], sys.argv[2], sys.argv[3], int(sys.argv[4])
    region = sys.argv[5] if len(sys.argv) > 5 else None
    sys.stdout.write(report(sqlite3.connect(db), month, top_n, region))
'''

# The oracle's queries; @@MONTH@@ is replaced by the delivered month at solve time. @MONTHS@ picks the
# reporting month's orders (or also the month before's, tagged by month in `ym`).
QUERY = """WITH paid AS (
  SELECT o.id, strftime('%Y%m', o.@ORDERED_AT@) AS ym FROM @ORDERS@ o @STORE_JOIN@
  WHERE lower(o.status) = '@STATUS_PAID@' AND strftime('%Y%m', o.@ORDERED_AT@) @MONTHS@
),
sold AS (
  SELECT p.ym, i.product_id, SUM(i.@QTY@ * i.@UNIT_PRICE_CENTS@) AS cents
  FROM @ORDER_ITEMS@ i JOIN paid p ON p.id = i.order_id GROUP BY p.ym, i.product_id
),
refunded AS (
  @REFUNDED@
),
net AS (
  SELECT s.ym, COALESCE(c.name, 'Uncategorized') AS category, p.sku, s.cents - COALESCE(f.cents, 0) AS cents
  FROM sold s LEFT JOIN refunded f USING (ym, product_id)
  JOIN @PRODUCTS@ p ON p.id = s.product_id LEFT JOIN @CATEGORIES@ c ON c.id = p.category_id
  WHERE s.cents - COALESCE(f.cents, 0) > 0
),
@TAIL@"""
TAILS = {"top_products": """ranked AS (
  SELECT category, sku, cents, RANK() OVER (PARTITION BY category ORDER BY cents DESC) AS rnk FROM net
)
SELECT category, rnk, sku, printf('%d.%02d', cents / 100, cents % 100) FROM ranked
WHERE rnk <= @TOP_N@ ORDER BY category, rnk, sku;
""",
         "month_change": """pivot AS (
  SELECT category, SUM(CASE WHEN ym = '@@MONTH@@' THEN 0 ELSE cents END) AS prev,
         SUM(CASE WHEN ym = '@@MONTH@@' THEN cents ELSE 0 END) AS cur
  FROM net GROUP BY category
)
SELECT category, printf('%d.%02d', prev / 100, prev % 100), printf('%d.%02d', cur / 100, cur % 100),
       printf('%s%d.%02d', CASE WHEN cur < prev THEN '-' ELSE '' END, abs(cur - prev) / 100, abs(cur - prev) % 100)
FROM pivot ORDER BY cur - prev DESC, category;
""",
         "core_products": """running AS (
  SELECT category, sku, cents,
         SUM(cents) OVER (PARTITION BY category ORDER BY cents DESC, sku ROWS UNBOUNDED PRECEDING) AS run,
         SUM(cents) OVER (PARTITION BY category) AS total
  FROM net
)
SELECT category, sku, printf('%d.%02d', run / 100, run % 100) FROM running
WHERE 2 * (run - cents) < total ORDER BY category, run;
"""}
ONE_MONTH = "= '@@MONTH@@'"
TWO_MONTHS = ("IN ('@@MONTH@@', strftime('%Y%m', substr('@@MONTH@@', 1, 4) || '-' || substr('@@MONTH@@', 5, 2) "
              "|| '-01', '-1 month'))")
REFUNDED_SQL = ("SELECT p.ym, r.product_id, SUM(r.@QTY@ * i.@UNIT_PRICE_CENTS@) AS cents FROM @REFUNDS@ r\n"
                "  JOIN @ORDER_ITEMS@ i ON i.order_id = r.order_id AND i.product_id = r.product_id\n"
                "  JOIN paid p ON p.id = r.order_id GROUP BY p.ym, r.product_id")
NO_REFUNDS_SQL = "SELECT NULL AS ym, NULL AS product_id, 0 AS cents WHERE 0"

# Each shop names its tables, columns and order statuses its own way (one choice per entry).
SCHEMA_NAMES = {"categories": ("categories", "departments", "product_groups"),
                "products": ("products", "articles", "catalog_items"), "stores": ("stores", "shops", "outlets"),
                "orders": ("orders", "sales", "purchases"),
                "order_items": ("order_items", "order_lines", "sale_lines"),
                "refunds": ("refunds", "returns", "refund_lines"),
                "ordered_at": ("ordered_at", "placed_at", "created_at"), "qty": ("qty", "quantity", "units"),
                "unit_price_cents": ("unit_price_cents", "price_cents", "unit_cents"),
                "status_paid": ("paid", "settled", "captured"),
                "status_cancelled": ("cancelled", "voided", "abandoned"),
                "status_refunded": ("refunded", "returned", "disputed")}
CATEGORIES = {"Audio": ("headphones", "speaker", "soundbar", "earbuds", "turntable", "amplifier"),
              "Books": ("atlas", "cookbook", "novel", "journal", "almanac", "anthology"),
              "Cameras": ("lens", "tripod", "camcorder", "flash", "gimbal", "viewfinder"),
              "Garden": ("trowel", "planter", "hose", "rake", "shears", "seed tray"),
              "Kitchen": ("skillet", "kettle", "blender", "whisk", "colander", "grater"),
              "Lighting": ("lamp", "pendant", "lantern", "bulb", "sconce", "strip light"),
              "Office": ("stapler", "binder", "desk mat", "monitor arm", "ledger", "shredder"),
              "Outdoor": ("tent", "hammock", "cooler", "camp stove", "daypack", "canopy"),
              "Storage": ("crate", "bin", "shelf unit", "drawer set", "locker", "tote"),
              "Toys": ("puzzle", "kite", "robot kit", "yo-yo", "marble run", "plush bear")}
MAKES = ("Compact", "Deluxe", "Classic", "Nordic", "Urban", "Studio", "Travel", "Mini", "Heritage", "Eco",
         "Folding", "Smart", "Vintage", "Rugged", "Alpine", "Coastal")
TOWNS = ("Leeds", "Porto", "Graz", "Turku", "Gdansk", "Bilbao", "Aarhus", "Brno", "Ghent", "Lyon", "Cork", "Split")
SITES = ("Central", "Mall", "Outlet", "Market", "Station", "Harbour", "Old Town", "Airport")
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
    variants = ("top_products", "month_change", "core_products")
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
        names = {key: rng.choice(options) for key, options in SCHEMA_NAMES.items()}
        cats = sorted(rng.sample(sorted(CATEGORIES), k.categories))
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
            kind = rng.choice(CATEGORIES[cname] if cname else ("gift card", "sample pack", "bundle"))
            products.append((pid, sku, f"{rng.choice(MAKES)} {kind}", None if cname is None else cat_id[cname]))
        base_price = {p[0]: rng.choice([499, 999, 1250, 1999, 2450, 3999, 4999, 7900, 12900]) for p in products}
        stores = [(i + 1, f"{rng.choice(TOWNS)} {rng.choice(SITES)}", REGIONS[i % 4]) for i in range(8)]
        if traps >= 3:
            stores = [(sid, name, rng.choice([r, r.lower(), r.upper()])) for sid, name, r in stores]
        statuses = [names["status_paid"]] * 6 + [names["status_cancelled"]] \
            + ([names["status_refunded"]] if traps >= 1 else [])

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
                if traps >= 3 and status.lower() == names["status_paid"] and rng.random() < 0.12:
                    back = rng.randint(1, qty)
                    if back >= 2 and rng.random() < 0.5:
                        refunds.append((oid, p[0], 1))
                        back -= 1
                    refunds.append((oid, p[0], back))
        reference = fill(REFERENCE, NAMES=names)
        ref_ns = run_python(reference)
        schema = named(SCHEMA + (REFUNDS_SCHEMA if traps >= 3 else ""), names)

        def database() -> str:
            tables = {names["categories"]: cat_rows, names["products"]: products, names["stores"]: stores,
                      names["orders"]: orders, names["order_items"]: items}
            if traps >= 3:
                tables[names["refunds"]] = [(i + 1, *r) for i, r in enumerate(refunds)]
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
                           names["status_paid"]))
            items.append((oid, pid2, 1, lead - second))
        rng.shuffle(items)
        sql = database()
        variant = t.variant
        db = dbsql.in_memory(sql)
        truth = ref_ns[variant](db, month, k.top, region)
        dbsql.ship(t, sql, "/app/db/shop.db")
        if t.level == 0:
            self.level0_case(t, month, ref_ns, db, names)
            return

        top = k.top
        months = "the reporting month" if variant != "month_change" else "the reporting month and the month before it"
        rules = [f"Revenue of a product is the sum of `{names['qty']} * {names['unit_price_cents']}` over its order "
                 f"lines (`{names['order_items']}`), counting only orders whose status is `{names['status_paid']}`"
                 + (" (statuses were typed by hand: match them case-insensitively)" if traps >= 2 else "")
                 + f" and that were placed in {months} (`{names['orders']}.{names['ordered_at']}`)."]
        if traps >= 3:
            rules.append(f"Partial refunds are recorded in `{names['refunds']}` (several rows may refer to the same "
                         "order line); "
                         "subtract each refunded quantity at that line's unit price, whenever the refund happened.")
            rules.append(f"Only orders from stores in the {region} region count (`{names['stores']}.region`; the "
                         "case of the "
                         "region names is inconsistent).")
        rules.append("Products with no revenue left are not listed." if traps >= 3 else
                     "Products without revenue in the month are not listed.")
        if traps >= 2:
            rules.append("Products without a category are reported under the category name `Uncategorized`.")
        money = "in currency units with exactly two decimals (e.g. `1234.50`)"
        if variant == "top_products":
            which = "best-selling product" if top == 1 else f"top {top} products"
            ask = f"the {which} per category for one reporting month, by revenue"
            rules.append("Rank products within each category by revenue, highest first. Ties share a rank and the "
                         "next rank is skipped (1, 1, 3, ...); "
                         + ("list every product ranked 1, so a tie can make a category list several products."
                            if top == 1 else f"list every product whose rank is {top} or better, so a tie can make a "
                            "category list more products."))
            fmt = ("one line per listed product as `category,rank,sku,revenue`, the revenue " + money
                   + ", sorted by category name (byte order), then rank, then sku")
        elif variant == "month_change":
            ask = "how each category's revenue moved from the month before to the reporting month"
            rules.append("A category's revenue in a month is the sum of its products' revenue in that month; list "
                         "every category with revenue in either month (0.00 for the other).")
            fmt = ("one line per category as `category,previous,current,change`, the month before's revenue, the "
                   "reporting month's and current minus previous, each " + money + " (a fall is negative: "
                   "`-12.50`), the biggest change first (a rise beats a fall), ties by category name (byte order)")
        else:
            ask = "the core products of each category for one reporting month, by revenue"
            rules.append("Order each category's products by revenue, highest first, ties by sku (byte order), and "
                         "keep a running total: a category's core products are the first ones in that order up to "
                         "and including the one whose running total first reaches at least half of the category's "
                         "revenue (the sum over its products).")
            fmt = ("one line per core product as `category,sku,running_total`, the running total after that "
                   "product " + money + ", sorted by category name (byte order), then in the order above")
        t.say(f"Our shop's SQLite database is `/app/db/shop.db` ({tables_text(names, traps >= 3)}). I need {ask}. "
              "The month is given "
              "below as YYYYMM (202401 would be January 2024).\n\n" + "\n".join(f"- {r}" for r in rules)
              + f"\n\nReport format: CSV without a header, {fmt}.")
        v = t.deliver(month, "the reporting month")
        query = named(QUERY, names,
                      STORE_JOIN=(f"JOIN {names['stores']} s ON s.id = o.store_id AND lower(s.region) = "
                                  f"lower('{region}')" if region else ""),
                      MONTHS=TWO_MONTHS if variant == "month_change" else ONE_MONTH,
                      REFUNDED=named(REFUNDED_SQL, names) if traps >= 3 else NO_REFUNDS_SQL,
                     TAIL=fill(TAILS[variant], **({"TOP_N": top} if variant == "top_products" else {})))
        out = f"/app/out/{variant}.csv"
        t.add_solution_file("report.sql", query)
        t.add_solution_file("reference.py", reference)
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\n'
                f'sed "s/@@MONTH@@/{v}/g" /solution/report.sql | sqlite3 -batch -noheader -separator , '
                f"/app/db/shop.db > {out}\n"
                f'python3 /solution/reference.py {variant} /app/db/shop.db "{v}" {top}'
                f'{" " + region if region else ""} | cmp - {out}')
        t.expect_output(out, truth, "the report")

    def level0_case(self, t: TaskBuilder, month: str, ref: dict, db, names: dict) -> None:
        """Level 0: one joined GROUP BY, no ranking or window (no trap is planted at this level)."""
        cents = "with exactly two decimals (e.g. `1234.50`)"
        line = f"`{names['qty']} * {names['unit_price_cents']}` over"
        net, before = ref["net_revenue"](db, month), ref["net_revenue"](db, ref["previous_month"](month))
        if t.variant == "top_products":  # revenue per category
            rows = [(c, sum(r[0] for r in rs)) for c, rs in ref["by_category"](db, net).items()]
            ask = (f"the revenue of each category for one month: the sum of {line} the order "
                   "lines of its products")
            fmt = "one line per category with revenue as `category,revenue`, the revenue in currency units " + cents \
                + ", sorted by category name"
            query, out = CATEGORY_QUERY, "/app/out/category_revenue.csv"
        elif t.variant == "month_change":  # the shop's total in the month and the month before
            rows = [(m, sum(n.values())) for m, n in ((ref["previous_month"](month), before), (month, net))
                    if sum(n.values()) > 0]
            ask = (f"the shop's revenue in one month and in the month before it: the sum of {line} "
                   "all order lines")
            fmt = ("one line per month with revenue as `YYYYMM,revenue`, the earlier month first, the revenue in "
                   "currency units " + cents)
            query, out = MONTHS_QUERY, "/app/out/monthly_revenue.csv"
        else:  # revenue per product
            skus = dict(db.execute(f"SELECT id, sku FROM {names['products']}"))
            rows = sorted(((skus[p], c) for p, c in net.items() if c > 0), key=lambda r: (-r[1], r[0]))
            ask = (f"the revenue of each product for one month: the sum of {line} its order "
                   "lines")
            fmt = ("one line per product with revenue as `sku,revenue`, the revenue in currency units " + cents
                   + ", highest revenue first, ties by sku")
            query, out = PRODUCT_QUERY, "/app/out/product_revenue.csv"
        truth = "".join(f"{name},{c // 100}.{c % 100:02d}\n" for name, c in rows)
        t.say(f"Our shop's SQLite database is `/app/db/shop.db` ({tables_text(names, False)}). I need {ask}, counting "
              f"only orders whose status is `{names['status_paid']}`, each in the month it was placed "
              f"(`{names['orders']}.{names['ordered_at']}`). The month is given below as YYYYMM (202401 would be "
              f"January 2024).\n\nReport format: CSV without a header, {fmt}.")
        v = t.deliver(month, "the reporting month")
        t.add_solution_file("revenue.sql", named(query, names))
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\n'
                f'sed "s/@@MONTH@@/{v}/g" /solution/revenue.sql | sqlite3 -batch -noheader -separator , '
                f"/app/db/shop.db > {out}")
        t.expect_output(out, truth, "the report")


def named(template: str, names: dict, **values: object) -> str:
    """``template`` filled with the shop's names it uses (``@ORDERS@``: names["orders"]) and ``values``."""
    used = {key.upper(): v for key, v in names.items() if f"@{key.upper()}@" in template}
    return fill(template, **used, **values)


def tables_text(names: dict, refunds: bool) -> str:
    keys = ["categories", "products", "stores", "orders", "order_items"] + (["refunds"] if refunds else [])
    return "tables " + ", ".join(f"`{names[key]}`" for key in keys)


SCHEMA = ("CREATE TABLE @CATEGORIES@ (id INTEGER PRIMARY KEY, name TEXT NOT NULL);\n"
          "CREATE TABLE @PRODUCTS@ (id INTEGER PRIMARY KEY, sku TEXT NOT NULL UNIQUE, name TEXT NOT NULL, "
          "category_id INTEGER REFERENCES @CATEGORIES@(id));\n"
          "CREATE TABLE @STORES@ (id INTEGER PRIMARY KEY, name TEXT NOT NULL, region TEXT NOT NULL);\n"
          "CREATE TABLE @ORDERS@ (id INTEGER PRIMARY KEY, store_id INTEGER NOT NULL REFERENCES @STORES@(id), "
          "@ORDERED_AT@ TEXT NOT NULL, status TEXT NOT NULL);\n"
          "CREATE TABLE @ORDER_ITEMS@ (order_id INTEGER NOT NULL REFERENCES @ORDERS@(id), product_id INTEGER "
          "NOT NULL REFERENCES @PRODUCTS@(id), @QTY@ INTEGER NOT NULL, @UNIT_PRICE_CENTS@ INTEGER NOT NULL, "
          "PRIMARY KEY (order_id, product_id));\n")
REFUNDS_SCHEMA = ("CREATE TABLE @REFUNDS@ (id INTEGER PRIMARY KEY, order_id INTEGER NOT NULL, product_id INTEGER "
                  "NOT NULL, @QTY@ INTEGER NOT NULL);\n")
# Level 0's queries: one joined GROUP BY each.
MONEY = "printf('%d.%02d', SUM(i.@QTY@ * i.@UNIT_PRICE_CENTS@) / 100, SUM(i.@QTY@ * i.@UNIT_PRICE_CENTS@) % 100)"
PAID_LINES = ("FROM @ORDERS@ o JOIN @ORDER_ITEMS@ i ON i.order_id = o.id JOIN @PRODUCTS@ p ON p.id = i.product_id\n"
              "JOIN @CATEGORIES@ c ON c.id = p.category_id\nWHERE lower(o.status) = '@STATUS_PAID@' AND ")
CATEGORY_QUERY = (f"SELECT c.name, {MONEY}\n{PAID_LINES}strftime('%Y%m', o.@ORDERED_AT@) = '@@MONTH@@'\n"
                  "GROUP BY c.name ORDER BY c.name;\n")
PRODUCT_QUERY = (f"SELECT p.sku, {MONEY}\n{PAID_LINES}strftime('%Y%m', o.@ORDERED_AT@) = '@@MONTH@@'\n"
                 "GROUP BY p.sku ORDER BY SUM(i.@QTY@ * i.@UNIT_PRICE_CENTS@) DESC, p.sku;\n")
MONTHS_QUERY = (f"SELECT strftime('%Y%m', o.@ORDERED_AT@), {MONEY}\n{PAID_LINES}strftime('%Y%m', o.@ORDERED_AT@) "
                + TWO_MONTHS + "\nGROUP BY 1 ORDER BY 1;\n")
