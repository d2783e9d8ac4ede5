"""Reconcile a merchant's shop orders against the payment processor's settlement export: two CSV files
joined on the order reference. The exports of several merchants sit side by side, each folder named
by a SHA-256 prefix of the merchant's account name (the delivered value). Variants: the orders with no
successful settlement (a left anti-join), the orders settled for the wrong amount (a join and a
compare), and the number of settlement transactions that match no order (a right anti-join). Traps by
level: failed settlements, sloppy references and amount spellings, split settlements, refunds and
re-sent rows, then quoted fields with commas, thousands separators and reordered columns."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass

from tmax.families.base import Family, TaskBuilder, register
from tmax.families.programs import csv_text, run_python
from tmax.families.unseen import distinct, key_cmd, key_of, unseen

REFERENCE = r'''
import csv
import sys


def cents(text):
    """'1,234.5' -> 123450: amounts are spelled loosely but always in currency units."""
    text = text.strip().replace(",", "")
    neg = text.startswith("-")
    whole, _, frac = text.lstrip("-").partition(".")
    c = int(whole or "0") * 100 + int((frac + "00")[:2])
    return -c if neg else c


def money(c):
    return ("-" if c < 0 else "") + f"{abs(c) // 100}.{abs(c) % 100:02d}"


def ref(text):
    return text.strip().upper()


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def reconcile(folder, variant):
    orders = {}
    for r in rows(folder + "/orders.csv"):
        orders[ref(r["order_id"])] = cents(r["amount"])
    seen, settled, paid, orphans = set(), {}, set(), set()
    for r in rows(folder + "/settlements.csv"):
        txn = r["txn_id"].strip()
        if txn in seen:  # the processor re-sends rows: one transaction counts once
            continue
        seen.add(txn)
        oid, status = ref(r["order_ref"]), r["status"].strip().lower()
        if oid not in orders:
            orphans.add(txn)
            continue
        if status == "settled":
            paid.add(oid)
            settled[oid] = settled.get(oid, 0) + cents(r["amount"])
        elif status == "refund":
            settled[oid] = settled.get(oid, 0) - abs(cents(r["amount"]))
    if variant == "unsettled":
        return "".join(f"{o},{money(orders[o])}\n" for o in sorted(orders) if o not in paid)
    if variant == "mismatched":
        return "".join(f"{o},{money(orders[o])},{money(settled[o])},{money(orders[o] - settled[o])}\n"
                       for o in sorted(paid) if settled[o] != orders[o])
    return f"{len(orphans)}\n"


if __name__ == "__main__":
    sys.stdout.write(reconcile(sys.argv[1], sys.argv[2]))
'''

ITEMS = ("Desk lamp", "USB-C cable", "Notebook, A5", "Coffee beans", "Standing desk", "Monitor arm",
         "Headphones", "Gift card", "Backpack, 30l", "Keyboard")


def _money(rng, c, loose, grouped):
    """An amount in currency units, spelled the way sloppy exports spell it."""
    text = f"{c // 100}.{c % 100:02d}"
    if loose and rng.random() < 0.3:
        text = text.rstrip("0").rstrip(".") if c % 100 else str(c // 100)
    if grouped and c >= 100000 and rng.random() < 0.7:
        whole, _, frac = text.partition(".")
        text = f"{int(whole):,}" + ("." + frac if frac else "")
    return text


@dataclass(frozen=True)
class Knobs:
    orders: int  # orders per merchant
    decoys: int  # other merchants' folders
    traps: int  # 1: failed rows; 2: sloppy refs and amounts; 3: splits, refunds, re-sent rows; 4: quoting


@register
class CsvSettlementReconcile(Family):
    name = "csv_settlement_reconcile"
    domain = "data_querying"
    skill_types = ("Relational Queries",)
    primitive_skills = ("anti-joins", "multi-table joins", "deduplication by key", "case-insensitive matching",
                        "type coercion of mixed fields", "group-by aggregation", "CSV import into SQLite")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("unsettled", "mismatched", "orphans")
    levels = {0: Knobs(orders=8, decoys=1, traps=0), 1: Knobs(orders=25, decoys=2, traps=1),
              2: Knobs(orders=60, decoys=3, traps=2), 3: Knobs(orders=120, decoys=3, traps=3),
              4: Knobs(orders=200, decoys=3, traps=4)}

    def _merchant(self, t):
        """(orders.csv, settlements.csv) texts for one merchant."""
        k, rng = t.knobs, t.rng
        lv = k.traps
        ids = distinct(lambda: f"ORD-{rng.randrange(10000, 100000)}", k.orders)
        txns = iter(distinct(lambda: f"tx_{rng.randrange(16 ** 7, 16 ** 8):08x}", 4 * k.orders + 20,
                             tries=20 * k.orders))
        orders, sett = [], []

        def settle(oid, c, status="settled"):
            r = oid
            if lv >= 2 and rng.random() < 0.3:
                r = rng.choice([oid.lower(), f" {oid}", f"{oid} ", oid.title()])
            sett.append([next(txns), r, _money(rng, c, lv >= 2, lv >= 4), status])
            if lv >= 3 and rng.random() < 0.06:
                sett.append(list(sett[-1]))  # re-sent row, same transaction id

        for i, oid in enumerate(ids):
            c = rng.choice([rng.randrange(300, 9000), rng.randrange(9000, 60000), rng.randrange(60000, 250000)])
            day = f"2025-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d}"
            orders.append([oid, day, rng.choice(ITEMS), _money(rng, c, lv >= 2, lv >= 4)])
            fate = rng.random() if i > 2 else (0.05, 0.2, 0.9)[i]  # one of each fate up front
            if fate < 0.15:  # never settled
                if lv >= 1 and rng.random() < 0.6:
                    settle(oid, c, rng.choice(["failed", "declined"]))
            elif fate < 0.3:  # settled for a different amount
                delta = rng.choice([1, 10, 100, 500, c // 10])
                settle(oid, c + delta if rng.random() < 0.4 else c - delta)
            elif lv >= 3 and fate < 0.45:  # split in two captures, maybe with a refund
                part = rng.randrange(1, c)
                settle(oid, part)
                settle(oid, c - part)
                if rng.random() < 0.5:
                    back = rng.randrange(1, part + 1)
                    settle(oid, back, "refund")
                    if rng.random() < 0.5:
                        settle(oid, back)  # charged again: the net is right
            else:
                if lv >= 1 and rng.random() < 0.15:
                    settle(oid, c, "failed")  # a failed try before the good one
                settle(oid, c)
        strays = distinct(lambda: f"ORD-{rng.randrange(10000, 100000)}", rng.randrange(1, 3 + k.orders // 10), ids)
        for oid in strays:  # payments for orders the shop does not know
            settle(oid, rng.randrange(300, 90000),
                   rng.choice(["settled", "settled", "failed"]) if lv >= 1 else "settled")
        rng.shuffle(orders)
        rng.shuffle(sett)
        if lv >= 3:
            sett = [[s[0], s[1], s[2] if s[3] != "refund" else "-" + s[2], s[3]] for s in sett]
        if lv >= 4:  # the processor's column order is its own; the shop adds a quoted description
            otext = csv_text(["order_id", "placed_at", "description", "amount"], orders)
            stext = csv_text(["status", "amount", "txn_id", "order_ref"], [[s[3], s[2], s[0], s[1]] for s in sett])
        else:
            otext = csv_text(["order_id", "placed_at", "amount"], [[o[0], o[1], o[3]] for o in orders])
            stext = csv_text(["txn_id", "order_ref", "amount", "status"], sett)
        return otext, stext

    def output_case(self, t: TaskBuilder) -> None:
        k, variant = t.knobs, t.variant
        ref = run_python(REFERENCE)
        merchants = [self._merchant(t) for _ in range(1 + k.decoys)]
        target = unseen(t, lambda: t.code(2), *(x for m in merchants for x in m))
        keys = [key_of(n) for n in [target, *distinct(lambda: t.code(2), k.decoys, [target])]]
        for key, (otext, stext) in zip(keys, merchants):
            t.add_file(f"/app/exports/{key}/orders.csv", otext)
            t.add_file(f"/app/exports/{key}/settlements.csv", stext)
        # The truth is the reference run on the very files shipped.
        with tempfile.TemporaryDirectory() as tmp:
            for name, text in zip(("orders.csv", "settlements.csv"), merchants[0]):
                with open(f"{tmp}/{name}", "w") as f:
                    f.write(text)
            truth = ref["reconcile"](tmp, variant)
        lv = k.traps
        rules = ["A settlement row belongs to the order whose `order_id` equals its `order_ref`."]
        if lv >= 1:
            rules.append("Only rows with status `settled` are money received; `failed` and `declined` attempts "
                         "are not.")
        if lv >= 2:
            rules.append("References were typed by hand: compare them ignoring surrounding spaces and letter case "
                         "(report order ids as the shop writes them, upper case). Amounts are in currency units "
                         "but not always written with two decimals (`12.5`, `40`).")
        if lv >= 3:
            rules.append("An order can be settled in several captures: what it received is the sum of its "
                         "`settled` amounts minus its `refund` amounts (refunds are written negative). The "
                         "processor re-sends rows: a `txn_id` counts once.")
        if lv >= 4:
            rules.append("Both files are real CSV (quoted fields may hold commas, amounts may carry thousands "
                         "separators) and the two systems order their columns differently: go by the header.")
        ask = {"unsettled": ("the orders that received no successful settlement at all, as CSV lines "
                             "`order_id,amount` (no header, the order amount with two decimals), sorted by "
                             "`order_id`"),
               "mismatched": ("the orders that were settled but for a total that differs from the order amount, "
                              "as CSV lines `order_id,ordered,settled,difference` (no header, amounts with two "
                              "decimals, difference = ordered - settled, e.g. `-3.50`), sorted by `order_id`"),
               "orphans": ("the number of settlement transactions, whatever their status, whose reference matches "
                           "none of the merchant's orders")}[variant]
        intro = ("Month-end reconciliation. Each merchant's exports are in `/app/exports/<KEY>/`: the shop's "
                 "`orders.csv` and the payment processor's `settlements.csv`. KEY is the first 16 hex digits of the "
                 "SHA-256 of the merchant's account name (`printf %s <name> | sha256sum | cut -c1-16`); the other "
                 "folders belong to other merchants.")
        if t.level == 0:
            t.say(f"{intro} {rules[0]} For the merchant named below I need {ask}.")
        else:
            t.say(intro + "\n\n" + "\n".join(f"- {r}" for r in rules)
                  + f"\n\nFor the merchant named below I need {ask}.")
        v = t.deliver(target, "the merchant's account name")
        t.add_solution_file("reconcile.py", REFERENCE)
        out = "/app/out/orphans.txt" if variant == "orphans" else "/app/out/reconcile.csv"
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\nkey={key_cmd(v)}\n'
                f'python3 /solution/reconcile.py "/app/exports/$key" {variant} > {out}')
        if variant == "orphans":
            t.expect_number(out, float(truth), what="the number of unmatched settlement transactions")
        else:
            t.expect_output(out, truth, "the reconciliation")
