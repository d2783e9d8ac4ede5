"""FIFO inventory costing over a warehouse's stock movements in SQLite: receipts add cost layers, shipments
consume the oldest layers first. The movements of several warehouses share one table, each stored under
a SHA-256 prefix of the warehouse's name (the delivered value). Variants: the cost of goods shipped per
SKU, the value of the stock left on hand per SKU, and the shipments that stock could not cover. Traps by
level: several receipts at different costs (no average cost), movements whose ids are not in time order
and movements at the same instant (ties by id), then more shipments beyond the stock on hand, voided
movements, and stock-count adjustments that add or remove units without being sales."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from tmax.families import sql as dbsql
from tmax.families.base import Family, TaskBuilder, register
from tmax.families.programs import run_python
from tmax.families.data_querying._keyed import key_how, keyed, pose, rules_at
from tmax.families.unseen import distinct

REFERENCE = r'''
import sqlite3
import sys


def money(cents):
    return f"{cents // 100}.{cents % 100:02d}"


def replay(conn, wh):
    """Per SKU: units shipped, their FIFO cost (cents), the layers left [(units, unit cost)], and the
    shortfalls [(movement id, units not covered)]."""
    state = {}
    rows = conn.execute(
        "SELECT id, sku, kind, qty, unit_cost_cents FROM movements WHERE warehouse = ? "
        "AND COALESCE(status, 'ok') <> 'void' ORDER BY ts, id", (wh,)).fetchall()
    for mid, sku, kind, qty, cost in rows:
        s = state.setdefault(sku, {"shipped": 0, "cogs": 0, "layers": [], "short": []})
        if kind == "receipt" or (kind == "adjust" and qty > 0):
            s["layers"].append([qty, cost])
            continue
        need = qty if kind == "shipment" else -qty  # a negative adjustment removes units like a shipment
        took = taken = 0
        while need and s["layers"]:
            layer = s["layers"][0]
            n = min(need, layer[0])
            took += n
            taken += n * layer[1]
            layer[0] -= n
            need -= n
            if not layer[0]:
                s["layers"].pop(0)
        if kind == "shipment":  # only sales are cost of goods sold
            s["shipped"] += took
            s["cogs"] += taken
            if need:
                s["short"].append((mid, need))
    return state


def report(conn, wh, variant):
    state = replay(conn, wh)
    out = []
    for sku in sorted(state):
        s = state[sku]
        if variant == "cogs" and s["shipped"]:
            out.append(f"{sku},{s['shipped']},{money(s['cogs'])}")
        elif variant == "on_hand":
            units = sum(n for n, _ in s["layers"])
            if units:
                out.append(f"{sku},{units},{money(sum(n * c for n, c in s['layers']))}")
        elif variant == "shortfalls":
            out += [f"{mid},{sku},{n}" for mid, n in s["short"]]
    if variant == "shortfalls":
        out.sort(key=lambda ln: int(ln.split(",")[0]))
    return "".join(ln + "\n" for ln in out)


if __name__ == "__main__":
    sys.stdout.write(report(sqlite3.connect(sys.argv[1]), sys.argv[2], sys.argv[3]))
'''

SCHEMA = ("CREATE TABLE movements (id INTEGER PRIMARY KEY, warehouse TEXT NOT NULL, sku TEXT NOT NULL, "
          "ts TEXT NOT NULL, kind TEXT NOT NULL, qty INTEGER NOT NULL, unit_cost_cents INTEGER, status TEXT);\n")


@dataclass(frozen=True)
class Knobs:
    skus: int  # SKUs per warehouse
    moves: int  # movements per SKU, about
    decoys: int  # other warehouses in the same table
    traps: int  # 1: cost layers; 2: ids out of time order, same-instant ties; 3: more shortfalls, voids;
    #             4: adjustments


@register
class SqlFifoStockValuation(Family):
    name = "sql_fifo_stock_valuation"
    domain = "data_querying"
    skill_types = ("Analytical Queries", "Temporal Queries")
    primitive_skills = ("running totals", "window functions", "group-by aggregation",
                        "rounding and formatting numbers", "conditional aggregation", "FIFO cost layering")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("cogs", "on_hand", "shortfalls")
    levels = {0: Knobs(skus=2, moves=4, decoys=1, traps=0), 1: Knobs(skus=3, moves=8, decoys=2, traps=1),
              2: Knobs(skus=4, moves=12, decoys=3, traps=2), 3: Knobs(skus=5, moves=16, decoys=3, traps=3),
              4: Knobs(skus=6, moves=20, decoys=3, traps=4)}

    def _warehouse(self, t, start):
        """(sku, instant, kind, qty, unit cost, status) movements of one warehouse."""
        k, rng = t.knobs, t.rng
        lv = k.traps
        moves = []
        for si, sku in enumerate(distinct(lambda: f"SKU-{rng.randrange(1000, 10000)}", k.skus)):
            now, stock, base = start, 0, rng.randrange(200, 5000)
            for mi in range(k.moves):
                now += dt.timedelta(hours=rng.randrange(1, 72)) if not (lv >= 2 and rng.random() < 0.12) else \
                    dt.timedelta(0)  # the same instant as the movement before: ties go by id
                # Receipts first and whenever stock runs out; the first SKU's last shipment outruns the stock
                # and the last SKU ends on a receipt, so shortfalls and on_hand have lines at every level.
                short = si == 0 and mi == k.moves - 1
                if not short and (mi == 0 or stock == 0 or (si == k.skus - 1 and mi == k.moves - 1) or (stock < 5 and rng.random() < 0.8) or rng.random() < 0.3):
                    qty = rng.randrange(5, 40)
                    cost = base if lv == 0 else base + rng.randrange(-base // 4, base // 4)
                    moves.append([sku, now, "receipt", qty, cost, None])
                    stock += qty
                elif not short and lv >= 4 and rng.random() < 0.12:
                    qty = rng.choice([-1, -2, -3, 1, 2])  # a stock count found more or fewer units
                    moves.append([sku, now, "adjust", qty, base if qty > 0 else None, None])
                    stock = max(0, stock + qty)
                else:
                    qty = rng.randrange(1, stock + 1) if stock else 1
                    if short or (lv >= 3 and rng.random() < 0.1):
                        qty = stock + rng.randrange(1, 6)
                    moves.append([sku, now, "shipment", qty, None, None])
                    stock = max(0, stock - qty)
                if lv >= 3 and rng.random() < 0.08:  # keyed in by mistake, then voided
                    moves.append([sku, now, rng.choice(["receipt", "shipment"]), rng.randrange(50, 90),
                                  base * 3, "void"])
        return moves

    def output_case(self, t: TaskBuilder) -> None:
        k, rng, variant = t.knobs, t.rng, t.variant
        ref = run_python(REFERENCE)
        start = dt.datetime(2025, 1, 1) + dt.timedelta(days=rng.randrange(300))
        houses = [self._warehouse(t, start) for _ in range(1 + k.decoys)]
        flat = sorted(((i, m) for i, moves in enumerate(houses) for m in moves), key=lambda x: x[1][1])
        if k.traps >= 2:  # from level 2 the ids follow data entry, not time
            flat = self._jumble(t, flat)
        fmt = "%Y-%m-%dT%H:%M:%S" if k.traps >= 2 else "%Y-%m-%d %H:%M:%S"
        stamped = [(i, m[0], m[1].strftime(fmt), *m[2:]) for i, m in flat]
        target, keys = keyed(t, k.decoys, "\n".join(repr(r) for r in stamped))
        rows = [(n + 1, keys[i], *rest) for n, (i, *rest) in enumerate(stamped)]
        sql = dbsql.script(SCHEMA, {"movements": rows})
        truth = ref["report"](dbsql.in_memory(sql), keys[0], variant)
        dbsql.ship(t, sql, "/app/db/inventory.db")
        rules = rules_at(k.traps, [
            (0, "Stock is costed first in, first out: every `receipt` adds a layer of `qty` units at its "
                "`unit_cost_cents`, and every `shipment` takes its `qty` units from the oldest layers first. A "
                "shipment larger than the stock on hand takes what there is; the units it could not get are short "
                "and cost nothing."),
            (1, "Receipts of one SKU come in at different costs: cost each unit by the layer it came from, never by "
                "an average. SKUs are costed separately."),
            (2, "Replay the movements in time order (`ts`); movement ids follow data entry, not time. Movements at "
                "the same instant are applied in id order."),
            (3, "Movements with `status` `void` never happened."),
            (4, "`adjust` movements are stock-count corrections, not sales: a positive `qty` adds a layer at its "
                "`unit_cost_cents`, a negative one removes units from the oldest layers like a shipment, but they "
                "are never cost of goods sold.")])
        ask = {"cogs": ("the cost of goods sold per SKU: for every SKU with shipped units, a CSV line "
                        "`sku,units_shipped,cost` (the cost of the units the shipments took, in currency units "
                        "with two decimals, e.g. `1234.05`)"),
               "on_hand": ("the stock left on hand at the end, valued at FIFO cost: for every SKU with units "
                           "left, a CSV line `sku,units,value` (value in currency units with two decimals)"),
               "shortfalls": ("every shipment the stock could not fully cover, as CSV lines `id,sku,short_units` "
                              "(the movement id, its SKU and the units it could not get), sorted by id")}[variant]
        intro = ("`/app/db/inventory.db` (SQLite) has the stock movements of all our warehouses in one table, "
                 "`movements(id, warehouse, sku, ts, kind, qty, unit_cost_cents, status)`. `warehouse` is "
                 + key_how("warehouse's name") + "; other warehouses' rows must be left out.")
        out = f"/app/out/{variant}.csv"
        pose(t, intro, rules, f"For the warehouse named below I need {ask}. No header"
             + ("." if variant == "shortfalls" else "; lines sorted by SKU."), target, "the warehouse's name",
             "fifo.py", REFERENCE, f'/app/db/inventory.db "$key" {variant}', out)
        t.expect_output(out, truth, "the stock report")

    @staticmethod
    def _jumble(t, flat):
        """Entry order: mostly chronological, with some movements keyed in late. Only movements alone at
        their instant move, so same-instant movements keep the id order they were made in."""
        out = list(flat)
        count: dict = {}
        for _, m in out:
            count[m[1]] = count.get(m[1], 0) + 1
        for _ in range(len(out) // 6):
            i, j = t.rng.randrange(len(out)), t.rng.randrange(len(out))
            if count[out[i][1][1]] == 1 and count[out[j][1][1]] == 1:
                out[i], out[j] = out[j], out[i]
        return out
