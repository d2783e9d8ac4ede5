"""What left one warehouse, and what the fulfilment partner bills for it at its per-unit handling rate
(handed over through the fixture channel), out of a nested JSON export (orders -> shipments -> items ->
bundle components). Higher levels add mixed types and letter case, missing arrays, several versions of
one order across paged export files linked by `next` (keep the latest), bundles to flatten, and a
leftover page outside the chain. Variants: units and charge per SKU (by_sku), the ten orders with the
most units from the warehouse (by_order), or each customer tier's top three SKUs (tier_top)."""

from __future__ import annotations

import json
from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.unseen import distinct, unseen

# @WAREHOUSE@ is filled on the host; @@RATE@@ (the delivered rate) by the oracle at solve time.
CORE = r'''
import json
import sys

WAREHOUSE = "@WAREHOUSE@"
RATE = "@@RATE@@"  # the handling rate per unit, in cents


def docs_of(text):
    dec, out = json.JSONDecoder(), []
    i = len(text) - len(text.lstrip())
    while i < len(text):
        doc, i = dec.raw_decode(text, i)
        out.append(doc)
        i = len(text) - len(text[i:].lstrip())
    return out


def code_of(shipment):
    w = shipment.get("warehouse")
    return w.get("code") if isinstance(w, dict) else w


def rollup(docs, warehouse=WAREHOUSE, rate=None):
    rate = int(RATE if rate is None else rate)
    latest = {}
    for doc in docs:
        for o in doc.get("orders") or []:
            cur = latest.get(o["id"])
            if cur is None or o["updated_at"] > cur["updated_at"]:
                latest[o["id"]] = o
    totals = {}

    def add(sku, n):
        sku = sku.upper()
        totals[sku] = totals.get(sku, 0) + n

    for oid in sorted(latest):
        o = latest[oid]
        if str(o.get("status") or "").lower() != "delivered":
            continue
        for s in o.get("shipments") or []:
            if code_of(s) != warehouse:
                continue
            for item in s.get("items") or []:
                if item.get("components"):
                    for c in item["components"]:
                        add(c["sku"], int(item["qty"]) * int(c["qty"]))
                else:
                    add(item["sku"], int(item["qty"]))
    rows = sorted(totals.items(), key=lambda kv: (-kv[1], kv[0]))
    return "".join(f"{sku}\t{n}\t{n * rate // 100}.{n * rate % 100:02d}\n" for sku, n in rows)
'''
MAIN = r'''

if __name__ == "__main__":
    sys.stdout.write(rollup(docs_of(sys.stdin.read()), rate=sys.argv[1] if len(sys.argv) > 1 else None))
'''
REFERENCE = CORE + MAIN

# The other variants, appended to CORE: the orders with the most units from the warehouse (by_order), or
# each customer tier's three SKUs with the most units from it (tier_top).
VARIANT_TAIL = r'''

VARIANT = "@VARIANT@"
TOP_ORDERS, TOP_SKUS = 10, 3


def latest_delivered(docs):
    """The latest version of every order, delivered ones only, by order ID."""
    latest = {}
    for doc in docs:
        for o in doc.get("orders") or []:
            cur = latest.get(o["id"])
            if cur is None or o["updated_at"] > cur["updated_at"]:
                latest[o["id"]] = o
    return [latest[k] for k in sorted(latest) if str(latest[k].get("status") or "").lower() == "delivered"]


def units(item):
    """(SKU, units) of one item: its components' for a bundle."""
    if item.get("components"):
        return [(c["sku"].upper(), int(item["qty"]) * int(c["qty"])) for c in item["components"]]
    return [(item["sku"].upper(), int(item["qty"]))]


def charge(n, rate):
    return f"{n * rate // 100}.{n * rate % 100:02d}"


def by_order(docs, warehouse, rate):
    rows = []
    for o in latest_delivered(docs):
        ships = [s for s in o.get("shipments") or [] if code_of(s) == warehouse]
        if ships:
            n = sum(u for s in ships for item in s.get("items") or [] for _, u in units(item))
            rows.append((-n, o["id"], len(ships)))
    rows.sort()
    return "".join(f"{oid}\t{k}\t{-n}\t{charge(-n, rate)}\n" for n, oid, k in rows[:TOP_ORDERS])


def tier_top(docs, warehouse, rate):
    per = {}
    for o in latest_delivered(docs):
        tier = (o.get("customer") or {}).get("tier") or "none"
        for s in o.get("shipments") or []:
            if code_of(s) != warehouse:
                continue
            for item in s.get("items") or []:
                for sku, n in units(item):
                    totals = per.setdefault(tier, {})
                    totals[sku] = totals.get(sku, 0) + n
    out = []
    for tier in sorted(per):
        for sku, n in sorted(per[tier].items(), key=lambda kv: (-kv[1], kv[0]))[:TOP_SKUS]:
            out.append(f"{tier}\t{sku}\t{n}\t{charge(n, rate)}\n")
    return "".join(out)


def report(docs, warehouse=WAREHOUSE, rate=None, variant=VARIANT):
    rate = int(RATE if rate is None else rate)
    return (by_order if variant == "by_order" else tier_top)(docs, warehouse, rate)


if __name__ == "__main__":
    sys.stdout.write(report(docs_of(sys.stdin.read()), rate=sys.argv[1] if len(sys.argv) > 1 else None))
'''

# The same report with jq: reads one or more export documents on stdin.
BASH_REFERENCE = r'''#!/bin/bash
set -euo pipefail
W="@WAREHOUSE@"
R="${1:-@@RATE@@}"  # the handling rate per unit, in cents
jq -s -r --arg w "$W" '
  [.[] | (.orders // [])[]]
  | group_by(.id) | map(max_by(.updated_at)) | .[]
  | select(((.status // "") | tostring | ascii_downcase) == "delivered")
  | (.shipments // [])[]
  | select((.warehouse | if type == "object" then .code else . end) == $w)
  | (.items // [])[]
  | if ((.components // []) | length) > 0
    then (.qty | tonumber) as $n | .components[] | {sku: (.sku | ascii_upcase), n: ((.qty | tonumber) * $n)}
    else {sku: (.sku | ascii_upcase), n: (.qty | tonumber)} end
' | jq -s -r --argjson r "$R" 'group_by(.sku) | map({sku: .[0].sku, n: (map(.n) | add)}) | sort_by(-.n, .sku)
  | .[] | (.n * $r) as $c | ($c % 100 | tostring) as $f
  | "\(.sku)\t\(.n)\t\(($c - $c % 100) / 100).\(if ($f | length) < 2 then "0" + $f else $f end)"'
'''

# The other variants with jq (the same two stages: the delivered orders' rows, then the report).
BASH_VARIANT = {"by_order": r'''#!/bin/bash
set -euo pipefail
W="@WAREHOUSE@"
R="${1:-@@RATE@@}"  # the handling rate per unit, in cents
jq -s -r --arg w "$W" '
  [.[] | (.orders // [])[]]
  | group_by(.id) | map(max_by(.updated_at)) | .[]
  | select(((.status // "") | tostring | ascii_downcase) == "delivered")
  | {id: .id, s: [(.shipments // [])[] | select((.warehouse | if type == "object" then .code else . end) == $w)]}
  | select((.s | length) > 0)
  | {id: .id, k: (.s | length), n: ([.s[] | (.items // [])[]
      | if ((.components // []) | length) > 0
        then (.qty | tonumber) as $q | .components[] | ((.qty | tonumber) * $q)
        else (.qty | tonumber) end] | add)}
' | jq -s -r --argjson r "$R" 'sort_by(-.n, .id) | .[:10]
  | .[] | (.n * $r) as $c | ($c % 100 | tostring) as $f
  | "\(.id)\t\(.k)\t\(.n)\t\(($c - $c % 100) / 100).\(if ($f | length) < 2 then "0" + $f else $f end)"'
''', "tier_top": r'''#!/bin/bash
set -euo pipefail
W="@WAREHOUSE@"
R="${1:-@@RATE@@}"  # the handling rate per unit, in cents
jq -s -r --arg w "$W" '
  [.[] | (.orders // [])[]]
  | group_by(.id) | map(max_by(.updated_at)) | .[]
  | select(((.status // "") | tostring | ascii_downcase) == "delivered")
  | (.customer.tier // "none") as $t
  | (.shipments // [])[]
  | select((.warehouse | if type == "object" then .code else . end) == $w)
  | (.items // [])[]
  | if ((.components // []) | length) > 0
    then (.qty | tonumber) as $n | .components[] | {t: $t, sku: (.sku | ascii_upcase), n: ((.qty | tonumber) * $n)}
    else {t: $t, sku: (.sku | ascii_upcase), n: (.qty | tonumber)} end
' | jq -s -r --argjson r "$R" 'group_by(.t) | .[]
  | group_by(.sku) | map({t: .[0].t, sku: .[0].sku, n: (map(.n) | add)}) | sort_by(-.n, .sku) | .[:3]
  | .[] | (.n * $r) as $c | ($c % 100 | tostring) as $f
  | "\(.t)\t\(.sku)\t\(.n)\t\(($c - $c % 100) / 100).\(if ($f | length) < 2 then "0" + $f else $f end)"'
'''}

CARRIERS = ["DHL", "UPS", "FedEx", "PostNL", "GLS"]
SKU_STEMS = ["KT", "BX", "LMP", "CBL", "FLT", "TNR", "PAD", "SCR", "VLV", "HNG", "MUG", "BRK"]
STATUSES = ["delivered", "delivered", "delivered", "shipped", "cancelled", "returned"]


def skus_for(rng, n: int) -> list[str]:
    return distinct(lambda: f"{rng.choice(SKU_STEMS)}-{rng.randrange(100, 1000)}", n)


def gen_orders(rng, n: int, warehouses: list[str], skus: list[str], bundles: list[str], lv: int) -> list[dict]:
    """Orders (with several versions of some at lv >= 3), in export order."""
    orders = []
    ids = rng.sample(range(10000, 99999), n)
    for oid in ids:
        day, sec = rng.randrange(1, 28), rng.randrange(86400)
        versions = 2 if lv >= 3 and rng.random() < 0.2 else 1
        for v in range(versions):
            status = rng.choice(STATUSES)
            if lv >= 2 and rng.random() < 0.25:
                status = rng.choice([status.upper(), status.title()])
            upd = f"2025-06-{day + v:02d}T{sec // 3600:02d}:{sec // 60 % 60:02d}:{sec % 60:02d}Z"
            o: dict = {"id": f"SO-{oid}", "updated_at": upd, "status": status,
                       "customer": {"id": rng.randrange(1, 500), "tier": rng.choice(["std", "gold", "pro"])}}
            shipments = []
            for _ in range(rng.choice([1, 1, 1, 2, 2, 3])):
                wh = rng.choice(warehouses)
                wval: object = wh
                if lv >= 4 and rng.random() < 0.3:
                    wval = {"code": wh, "name": wh.title() + " DC"}
                items = []
                for sku in rng.sample(skus, rng.randint(1, 3)):
                    qty: object = rng.randint(1, 6)
                    if lv >= 2 and rng.random() < 0.25:
                        qty = str(qty)
                    if lv >= 2 and rng.random() < 0.2:
                        sku = sku.lower()
                    items.append({"sku": sku, "qty": qty})
                if lv >= 4 and rng.random() < 0.35:
                    comps = [{"sku": s, "qty": rng.randint(1, 3)} for s in rng.sample(skus, rng.randint(2, 3))]
                    items.append({"sku": rng.choice(bundles), "qty": rng.randint(1, 3), "components": comps})
                shipments.append({"warehouse": wval, "carrier": rng.choice(CARRIERS),
                                  "tracking": f"TRK{rng.randrange(10**8, 10**9)}", "items": items})
            if lv >= 2 and rng.random() < 0.12:
                if rng.random() < 0.5:
                    o.pop("customer")
                o["shipments"] = None if rng.random() < 0.5 else []
                if rng.random() < 0.5:
                    del o["shipments"]
            else:
                o["shipments"] = shipments
            orders.append(o)
    rng.shuffle(orders)
    return orders


def reorder(value, flip: bool):
    """``value`` with every object's keys sorted (``flip``: in reverse insertion order instead)."""
    if isinstance(value, dict):
        keys = list(reversed(value)) if flip else sorted(value)
        return {key: reorder(value[key], flip) for key in keys}
    if isinstance(value, list):
        return [reorder(v, flip) for v in value]
    return value


def dump(doc: dict, variant: str) -> str:
    """An export file as the variant's exporter writes it: each keeps object keys in an order of its own."""
    if variant != "by_sku":
        doc = reorder(doc, variant == "tier_top")
    return json.dumps(doc, indent=1) + "\n"


def rate_draw(rng):
    """A handling rate of 10.00 to 49.99 per unit, in cents: clear of the services' ports and of the years
    the export shows."""
    return lambda: str(rng.randrange(1000, 5000))


@dataclass(frozen=True)
class Knobs:
    orders: int  # orders in the export
    pages: int  # export files linked by `next` (1: one plain file)


@register
class JsonShipmentRollup(Family):
    name = "json_shipment_rollup"
    domain = "data_querying"
    skill_types = ("Semi-structured Queries",)
    primitive_skills = ("JSON path queries", "jq filters", "flattening nested arrays", "type coercion of mixed fields",
                        "deduplication by key", "group-by aggregation", "case-insensitive matching")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol", "fuzz_equivalence")
    programs = {"Python": REFERENCE, "Bash": BASH_REFERENCE}
    variants = ("by_sku", "by_order", "tier_top")
    levels = {0: Knobs(orders=12, pages=1), 1: Knobs(orders=40, pages=1), 2: Knobs(orders=120, pages=1),
              3: Knobs(orders=220, pages=3), 4: Knobs(orders=360, pages=4)}

    def world(self, t: TaskBuilder) -> tuple[list[str], list[str], list[str]]:
        """(warehouse codes, the first being the one asked about; SKUs; bundle SKUs)."""
        warehouses = distinct(lambda: t.code(1), 4)
        skus = skus_for(t.rng, 8 + 4 * t.level)
        bundles = [f"BND-{t.rng.randrange(10, 100)}" for _ in range(3)]
        return warehouses, skus, bundles

    def rules(self, lv: int, variant: str = "by_sku") -> tuple[str, str]:
        """(the counting rules as a bullet list, the output format): both cases state them alike."""
        rules = ["Only orders whose `status` is `delivered` count"
                 + (" (in any letter case)" if lv >= 2 else "") + ".",
                 "Count the units (`qty`) of every item of every shipment that left from the warehouse; an order "
                 "can have several shipments from different warehouses."]
        if lv >= 2:
            rules.append("The export is sloppy: `qty` is sometimes a JSON string instead of a number, SKUs come in "
                         "mixed letter case (treat them case-insensitively and report them upper-cased), and some "
                         "orders have no `shipments` at all (missing or null).")
        if lv >= 3:
            rules.append("The same order can appear more than once (the export captures every update); only the "
                         "version with the latest `updated_at` counts.")
        if lv >= 4:
            rules.append("Bundles are items with a `components` array: count their components instead of the bundle "
                         "itself (component `qty` per bundle times the bundle's `qty`). A shipment's `warehouse` is "
                         "either the warehouse code or an object whose `code` field holds it.")
        rules.append("The fulfilment partner bills a handling charge per unit shipped, at its handling rate (given "
                     "below, in cents per unit; it is not in the export): a SKU's charge is its total units times "
                     "the rate.")
        fmt = ("one line per SKU: the SKU, a tab, the total units, a tab, the handling charge in currency units "
               "with exactly two decimals (e.g. `1234.50` for 123450 cents); sorted by total units (highest "
               "first), ties by SKU in byte order; SKUs with no units are not listed")
        if variant == "by_order":
            rules[-1] = ("The fulfilment partner bills a handling charge per unit shipped, at its handling rate (given "
                         "below, in cents per unit; it is not in the export): an order's charge is the units of its "
                         "shipments from the warehouse times the rate.")
            fmt = ("the 10 orders with the most units shipped from the warehouse (all of them if fewer shipped "
                   "anything from it), one line each: the order `id`, a tab, the number of its shipments from the "
                   "warehouse, a tab, those shipments' total units, a tab, the handling charge in currency units with "
                   "exactly two decimals (e.g. `1234.50` for 123450 cents); sorted by units (highest first), ties by "
                   "order `id` in byte order")
        elif variant == "tier_top":
            rules.insert(-1, "Group the units by the ordering customer's `tier` (`customer.tier`)"
                         + ("; orders without a `customer` count under the tier `none`" if lv >= 2 else "") + ".")
            fmt = ("for each customer tier, in byte order of the tier, its 3 SKUs with the most units from the "
                   "warehouse (fewer if it has fewer), highest first, ties by SKU in byte order, one line each: the "
                   "tier, a tab, the SKU, a tab, its units in that tier, a tab, their handling charge in currency "
                   "units with exactly two decimals (e.g. `1234.50` for 123450 cents)")
        return "\n".join(f"- {r}" for r in rules), fmt

    def sources(self, variant: str, wh: str) -> tuple[str, str]:
        """The variant's reference programs (Python, Bash) for warehouse ``wh``."""
        if variant == "by_sku":
            return fill(REFERENCE, WAREHOUSE=wh), fill(BASH_REFERENCE, WAREHOUSE=wh)
        return fill(CORE + VARIANT_TAIL, WAREHOUSE=wh, VARIANT=variant), fill(BASH_VARIANT[variant], WAREHOUSE=wh)

    def asks(self, variant: str, wh: str) -> str:
        """What the task wants to know, after "reports"."""
        return {"by_sku": f"how many units of each SKU were shipped from warehouse `{wh}` and what handling that "
                          "costs us",
                "by_order": f"which orders shipped the most units from warehouse `{wh}` and what their handling "
                            "costs us",
                "tier_top": f"which SKUs each customer tier received most from warehouse `{wh}` and what their "
                            "handling costs us"}[variant]

    def program_case(self, t: TaskBuilder) -> None:
        rng, lv, var = t.rng, t.level, t.variant or self.variants[0]
        warehouses, skus, bundles = self.world(t)
        wh = warehouses[0]
        ns = run_python(fill(REFERENCE, WAREHOUSE=wh))
        py, sh = self.sources(var, wh)
        run = ns["rollup"] if var == "by_sku" else run_python(py)["report"]
        bullets, fmt = self.rules(lv, var)
        docs = []
        for _ in range(200):  # every case ships something from the warehouse, so every case shows the rate
            if len(docs) == 12:
                break
            i = len(docs)
            doc = {"exported_at": f"2025-07-0{1 + i % 9}T00:00:00Z",
                   "orders": gen_orders(rng, rng.randrange(4, 30), warehouses, skus, bundles, lv)}
            if ns["rollup"]([doc], wh, 0):
                docs.append(doc)
        if len(docs) < 12:
            raise FamilyError("json_shipment_rollup: no 12 exports that ship from the warehouse in 200 draws")
        demo = 100 * rng.randrange(1, 10)
        texts = [json.dumps(doc, indent=1 if i % 2 else None) + "\n" for i, doc in enumerate(docs)]
        shown = [run([doc], wh, demo) for doc in docs[:2]]
        t.say("Our warehouse system exports orders as JSON: an object whose `orders` array holds orders, each "
              "with `shipments`, each shipment with a `warehouse` and `items` (see the examples for the shape). "
              f"We need a small tool that, given one such export on standard input, reports {self.asks(var, wh)}."
              "\n\n" + bullets +
              f"\n\nOutput: {fmt}.\n\nThe worked examples were produced with the partner's test rate of "
              f"{demo} cents per unit; the program must use the production rate given below.")
        rate = unseen(t, rate_draw(rng), *texts[:2], *shown)
        cases = [(texts[0], shown[0]), (texts[1], shown[1])]
        cases += [(x, run([doc], wh, rate)) for x, doc in zip(texts[2:], docs[2:])]
        v = t.deliver(rate, "the handling rate in cents per unit")
        t.expect_program("The handling rate is the production one given above; hard-code it in the program.",
                         cases, {"Python": py, "Bash": sh})
        # The oracle's programs carry a placeholder: fill it from the delivered value.
        t.solve("for f in /app/solution.py /app/solution.sh; do\n"
                f'  if [ -f "$f" ]; then sed -i "s/@@RATE@@/{v}/" "$f"; fi\ndone')

    def output_case(self, t: TaskBuilder) -> None:
        k, rng, lv, var = t.knobs, t.rng, t.level, t.variant or self.variants[0]
        warehouses, skus, bundles = self.world(t)
        wh = warehouses[0]
        ns = run_python(fill(REFERENCE, WAREHOUSE=wh))
        py, sh = self.sources(var, wh)
        run = ns["rollup"] if var == "by_sku" else run_python(py)["report"]
        bullets, fmt = self.rules(lv, var)
        orders = gen_orders(rng, k.orders, warehouses, skus, bundles, lv)
        pages = k.pages
        if pages == 1:
            docs = [{"exported_at": "2025-07-01T02:00:00Z", "orders": orders}]
            t.add_file("/app/export/orders.json", dump(docs[0], var))
            where = "The export is `/app/export/orders.json`: an object whose `orders` array holds the orders."
            gather = "cat /app/export/orders.json"
        else:
            cuts = sorted(rng.sample(range(1, len(orders)), pages - 1))
            parts = [orders[a:b] for a, b in zip([0, *cuts], [*cuts, len(orders)])]
            names = ["page-001.json"] + [f"page-{n:03d}.json" for n in rng.sample(range(2, 40), pages - 1)]
            docs = []
            for i, (name, part) in enumerate(zip(names, parts)):
                doc = {"exported_at": "2025-07-01T02:00:00Z", "page": i + 1, "orders": part,
                       "next": names[i + 1] if i + 1 < pages else None}
                docs.append(doc)
                t.add_file(f"/app/export/pages/{name}", dump(doc, var))
            where = ("The export is paged: it starts at `/app/export/pages/page-001.json`, and each page's `next` "
                     "field names the following page in the same folder (null on the last page); each page's "
                     "`orders` array holds orders.")
            gather = ('f=page-001.json\nwhile [ -n "$f" ]; do cat "/app/export/pages/$f"; '
                      'f=$(jq -r \'.next // empty\' "/app/export/pages/$f"); done')
            if lv >= 4:
                stale_name = rng.choice([f"page-{n:03d}.json" for n in range(2, 60) if f"page-{n:03d}.json" not in names])
                stale = {"exported_at": "2025-06-20T02:00:00Z", "page": 2,
                         "orders": gen_orders(rng, 25, warehouses, skus, bundles, lv), "next": None}
                t.add_file(f"/app/export/pages/{stale_name}", dump(stale, var))
                where += (" The folder also holds pages left over from an aborted older export that no `next` link "
                          "reaches: ignore them.")
        t.say("Our warehouse system exports orders as JSON; each order has `shipments`, each shipment a `warehouse` "
              f"and `items`. {where} I need to know {self.asks(var, wh)}.\n\n" + bullets
              + f"\n\nReport format: {fmt}.")
        rate = unseen(t, rate_draw(rng))
        truth = run(docs, wh, rate)
        v = t.deliver(rate, "the handling rate in cents per unit")
        t.add_solution_file("rollup.sh", sh)
        t.add_solution_file("rollup.py", py)
        out = {"by_sku": "/app/out/units_by_sku.tsv", "by_order": "/app/out/top_orders.tsv",
               "tier_top": "/app/out/tier_top_skus.tsv"}[var]
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\n{{\n{gather}\n}} > /tmp/export.json\n'
                f'bash /solution/rollup.sh "{v}" < /tmp/export.json > {out}\n'
                f'python3 /solution/rollup.py "{v}" < /tmp/export.json | cmp - {out}')
        t.expect_output(out, truth, "the report")
