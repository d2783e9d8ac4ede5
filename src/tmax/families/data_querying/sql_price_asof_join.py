"""Point-in-time (as-of) joins against a price history kept as validity intervals (`valid_from`
inclusive, `valid_to` exclusive, NULL open-ended), as slowly changing dimensions are. A SQLite
database holds the prices and orders of several stores, each stored under a SHA-256 prefix of the
store's name (the delivered value). Variants: every order's total at the prices in effect when it
was placed, the history rows whose intervals overlap (an audit of the history itself), and the order
lines no price covered. Traps by level: orders exactly at an interval's end, open intervals, then
overlapping rows (the latest `valid_from` wins), timestamps written with `T` or as bare dates beside
`YYYY-MM-DD HH:MM:SS` (string comparison lies), then draft prices never published and one SKU on
several lines of an order, then order times with UTC offsets."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from tmax.families import sql as dbsql
from tmax.families.base import Family, TaskBuilder, register
from tmax.families.programs import run_python
from tmax.families.data_querying._keyed import key_how, keyed, pose, rules_at
from tmax.families.unseen import distinct

REFERENCE = r'''
import datetime as dt
import re
import sqlite3
import sys

STAMP = re.compile(r"^(\d{4})-(\d\d)-(\d\d)(?:[ T](\d\d):(\d\d)(?::(\d\d))?)?(Z|[+-]\d\d:\d\d)?$")


def instant(text):
    """Seconds since the epoch of a UTC stamp (a bare date is its midnight; an offset is honoured)."""
    m = STAMP.match(text.strip())
    y, mo, d, h, mi, s = (int(m.group(i) or 0) for i in range(1, 7))
    secs = int(dt.datetime(y, mo, d, h, mi, s, tzinfo=dt.timezone.utc).timestamp())
    off = m.group(7)
    if off and off != "Z":
        secs -= (1 if off[0] == "+" else -1) * (int(off[1:3]) * 3600 + int(off[4:6]) * 60)
    return secs


def history(conn, store):
    """sku -> [(from, to or None, id, cents)] of the published price rows."""
    out = {}
    for rid, sku, cents, a, b, status in conn.execute(
            "SELECT id, sku, price_cents, valid_from, valid_to, status FROM prices WHERE store = ?", (store,)):
        if (status or "published") != "published":
            continue
        out.setdefault(sku, []).append((instant(a), instant(b) if b else None, rid, cents))
    return out


def price_at(rows, when):
    """The row in effect at `when`: from <= when < to; of several, the latest from, then the highest id."""
    live = [r for r in rows if r[0] <= when and (r[1] is None or when < r[1])]
    return max(live, key=lambda r: (r[0], r[2])) if live else None


def report(conn, store, variant):
    prices = history(conn, store)
    lines = []
    if variant == "overlaps":
        for sku in sorted(prices):
            rows = sorted(prices[sku], key=lambda r: r[2])
            for i, a in enumerate(rows):
                for b in rows[i + 1:]:
                    if a[0] < (b[1] if b[1] is not None else float("inf")) and \
                            b[0] < (a[1] if a[1] is not None else float("inf")):
                        lines.append(f"{sku},{a[2]},{b[2]}")
        return "".join(ln + "\n" for ln in lines)
    orders = conn.execute("SELECT id, placed_at FROM orders WHERE store = ? ORDER BY id", (store,)).fetchall()
    for oid, placed in orders:
        when, total, missing = instant(placed), 0, []
        for sku, qty in conn.execute("SELECT sku, qty FROM order_lines WHERE order_id = ? ORDER BY id", (oid,)):
            row = price_at(prices.get(sku, []), when)
            if row is None:
                missing.append(sku)
            else:
                total += qty * row[3]
        if variant == "totals":
            lines.append(f"{oid},{total // 100}.{total % 100:02d}")
        else:
            lines += [f"{oid},{sku}" for sku in sorted(set(missing))]
    return "".join(ln + "\n" for ln in lines)


if __name__ == "__main__":
    sys.stdout.write(report(sqlite3.connect(sys.argv[1]), sys.argv[2], sys.argv[3]))
'''

SCHEMA = ("CREATE TABLE prices (id INTEGER PRIMARY KEY, store TEXT NOT NULL, sku TEXT NOT NULL, price_cents INTEGER "
          "NOT NULL, valid_from TEXT NOT NULL, valid_to TEXT, status TEXT);\n"
          "CREATE TABLE orders (id INTEGER PRIMARY KEY, store TEXT NOT NULL, placed_at TEXT NOT NULL);\n"
          "CREATE TABLE order_lines (id INTEGER PRIMARY KEY, order_id INTEGER NOT NULL, sku TEXT NOT NULL, "
          "qty INTEGER NOT NULL);\n")


@dataclass(frozen=True)
class Knobs:
    skus: int  # SKUs per store
    orders: int  # orders per store
    decoys: int  # other stores in the same tables
    traps: int  # 1: orders at an interval's end, open intervals; 2: overlaps, mixed stamp spellings;
    #             3: drafts, repeated SKUs in an order; 4: order times with UTC offsets


@register
class SqlPriceAsofJoin(Family):
    name = "sql_price_asof_join"
    domain = "data_querying"
    skill_types = ("Temporal Queries", "Relational Queries")
    primitive_skills = ("multi-table joins", "date range filtering", "NULL semantics", "timezone conversion",
                        "group-by aggregation", "as-of joins")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("totals", "overlaps", "unpriced")
    levels = {0: Knobs(skus=2, orders=4, decoys=1, traps=0), 1: Knobs(skus=3, orders=8, decoys=2, traps=1),
              2: Knobs(skus=4, orders=14, decoys=3, traps=2), 3: Knobs(skus=5, orders=20, decoys=3, traps=3),
              4: Knobs(skus=6, orders=28, decoys=3, traps=4)}

    def _store(self, t, start):
        """(price rows, orders) of one store; instants as datetimes, formatted later."""
        k, rng = t.knobs, t.rng
        lv = k.traps
        skus = distinct(lambda: f"SKU-{rng.randrange(100, 1000)}", k.skus)
        prices, bounds = [], []
        for si, sku in enumerate(skus):
            # The first SKU's price starts a day in: an early order of it has no price (unpriced has lines).
            now = start + dt.timedelta(days=1 if si == 0 else 0)
            cents = rng.randrange(199, 9999)
            for j in range(rng.randrange(2, 5)):
                end = now + dt.timedelta(days=rng.randrange(3, 20), hours=rng.choice([0, 0, 9, 13]))
                last = j == 3 or rng.random() < 0.3
                prices.append([sku, cents, now, None if last and lv >= 1 else end, "published"])
                bounds.append(end)
                if lv >= 3 and rng.random() < 0.2:  # planned, never published
                    prices.append([sku, cents * 2, now + dt.timedelta(days=1), end, "draft"])
                if last:
                    break
                cents = max(99, cents + rng.randrange(-cents // 5, cents // 5 + 2))
                now = end
            # Overlapping rows: the first two SKUs always get one, so overlaps has lines at every level.
            if si < 2 or (lv >= 2 and rng.random() < 0.4):
                # It never starts before the SKU's first price, so the first SKU stays unpriced at first.
                base, first = prices[-1][2], next(p[2] for p in prices if p[0] == sku)
                prices.append([sku, cents + rng.randrange(1, 300),
                               max(base - dt.timedelta(days=rng.randrange(1, 3)), first + dt.timedelta(hours=1)),
                               base + dt.timedelta(days=rng.randrange(1, 4)), "published"])
        orders = []
        for oi in range(k.orders):
            when = start + dt.timedelta(minutes=rng.randrange(0, 25 * 24 * 60))
            if oi == 0:
                when = start + dt.timedelta(hours=rng.randrange(1, 20))  # before the first SKU is priced
            elif lv >= 1 and rng.random() < 0.2:
                when = rng.choice(bounds)  # exactly when a price ends: the next one applies
            picks = ([skus[0]] if oi == 0 else []) + rng.sample(skus, rng.randrange(1, min(4, len(skus)) + 1))
            lines = [[s, rng.randrange(1, 6)] for s in picks]
            if lv >= 3 and rng.random() < 0.3:
                lines.append([rng.choice(picks), rng.randrange(1, 4)])  # the same SKU on another line
            orders.append((when, lines))
        return prices, orders

    def _stamp(self, t, when, bare_ok=False):
        k, rng = t.knobs, t.rng
        if when is None:
            return None
        if k.traps >= 4 and not bare_ok and rng.random() < 0.35:
            hours = rng.choice([-5, 2, 9, 5.5])
            local = when + dt.timedelta(hours=hours)
            sign, h, m = "+" if hours >= 0 else "-", int(abs(hours)), int(abs(hours) * 60) % 60
            return local.strftime("%Y-%m-%dT%H:%M:%S") + f"{sign}{h:02d}:{m:02d}"
        r = rng.random()
        if k.traps >= 2 and bare_ok and when.hour == 0 and when.minute == 0 and r < 0.5:
            return when.strftime("%Y-%m-%d")
        if k.traps >= 2 and r < 0.4:
            return when.strftime("%Y-%m-%dT%H:%M:%S")
        return when.strftime("%Y-%m-%d %H:%M:%S")

    def output_case(self, t: TaskBuilder) -> None:
        k, rng, variant = t.knobs, t.rng, t.variant
        ref = run_python(REFERENCE)
        start = dt.datetime(2025, 1, 1) + dt.timedelta(days=rng.randrange(300))
        stores = [self._store(t, start) for _ in range(1 + k.decoys)]
        prices = [(i, p[0], p[1], self._stamp(t, p[2], True), self._stamp(t, p[3], True), p[4])
                  for i, (ps, _) in enumerate(stores) for p in ps]
        orders = [(i, self._stamp(t, w), lines) for i, (_, os_) in enumerate(stores) for w, lines in os_]
        rng.shuffle(prices)
        rng.shuffle(orders)
        shown = "\n".join(repr(x) for x in prices + orders)
        target, keys = keyed(t, k.decoys, shown)
        status = k.traps >= 3
        tables = {"prices": [(n + 1, keys[i], sku, c, a, b, s if status else None)
                             for n, (i, sku, c, a, b, s) in enumerate(prices)],
                  "orders": [(7000 + n, keys[i], w) for n, (i, w, _) in enumerate(orders)],
                  "order_lines": [(n + 1, oid, sku, q) for n, (oid, sku, q) in enumerate(
                      (7000 + j, sku, q) for j, (_, _, lines) in enumerate(orders) for sku, q in lines)]}
        sql = dbsql.script(SCHEMA, tables)
        truth = ref["report"](dbsql.in_memory(sql), keys[0], variant)
        dbsql.ship(t, sql, "/app/db/pricing.db")
        rules = rules_at(k.traps, [
            (0, "A price row is in effect from `valid_from` (inclusive) to `valid_to` (exclusive); a NULL `valid_to` "
                "means it is still in effect. Timestamps are UTC. Where several rows of a SKU are in effect at "
                "once, the one with the latest `valid_from` applies (then the highest `id`)."),
            (1, "An order placed exactly at a row's `valid_to` is already past that row."),
            (2, "Timestamps are written `YYYY-MM-DD HH:MM:SS`, with a `T` instead of the space, or as a bare date "
                "(its midnight): compare them as instants, not as text."),
            (3, "Only rows with `status` `published` are prices; `draft` rows never took effect. An order may list "
                "the same SKU on several lines."),
            (4, "Some order times carry a UTC offset (`2025-03-01T10:00:00+02:00` is 08:00 UTC).")])
        ask = {"totals": ("every order's total at the prices in effect when it was placed (the sum of `qty` times "
                          "the price over its lines; a line with no price in effect adds nothing), as CSV lines "
                          "`order_id,total` in currency units with two decimals, sorted by order id"),
               "overlaps": ("every pair of price rows of the same SKU whose validity intervals overlap (rows that "
                            "merely touch, one ending when the other starts, do not"
                            + ("; drafts are not prices" if k.traps >= 3 else "") + "), as CSV lines "
                            "`sku,first_id,second_id` with first_id < second_id, sorted by sku, then first_id, "
                            "then second_id"),
               "unpriced": ("every order line whose SKU had no price in effect when the order was placed, as CSV "
                            "lines `order_id,sku` (a SKU once per order), sorted by order id, then sku")}[variant]
        intro = ("`/app/db/pricing.db` (SQLite) keeps the price history of all our stores, `prices(id, store, sku, "
                 "price_cents, valid_from, valid_to, status)`, and their orders, `orders(id, store, placed_at)` "
                 "with `order_lines(id, order_id, sku, qty)`. `store` is " + key_how("store's name")
                 + "; other stores' rows must be left out.")
        out = f"/app/out/{variant}.csv"
        pose(t, intro, rules, f"For the store named below I need {ask}. No header.", target, "the store's name",
             "asof.py", REFERENCE, f'/app/db/pricing.db "$key" {variant}', out)
        t.expect_output(out, truth, "the report")
