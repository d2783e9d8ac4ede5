"""Monthly sales by region out of an order export, as a legacy BI report had them: a region x month
crosstab with every month of the period filled (zeros too) and totals, the month-over-month change per
region (a lag), or each region's share of the period's sales (ratio to total, rounded half up, ranked).
Each shop's export sits in a folder named by a SHA-256 prefix of the shop's name (the delivered value).
Traps by level: order statuses (only paid orders count) and region names in any case and padding,
then months without sales and orders outside the period, then quoted amounts with thousands separators
and day-first dates, then refunds that net out and orders exported twice."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from tmax.families.base import Family, TaskBuilder, register
from tmax.families.programs import csv_text, fill, host_files, run_python
from tmax.families.data_querying._keyed import key_how, keyed, pose, rules_at
from tmax.families.unseen import distinct

REFERENCE = r'''
import csv
import datetime as dt
import sys
from decimal import Decimal

FIRST = @FIRST@  # the period's first month, (year, month)
MONTHS = @MONTHS@  # months in the period


def month_keys():
    y, m = FIRST
    return [f"{y + (m - 1 + i) // 12}-{(m - 1 + i) % 12 + 1:02d}" for i in range(MONTHS)]


def cents(text):
    """An amount written `1234.5`, `-20` or `1,234.50` as integer cents."""
    return int(Decimal(text.strip().replace(",", "")) * 100)


def month_of(text):
    t = text.strip()
    d = dt.datetime.strptime(t, "%d/%m/%Y") if "/" in t else dt.datetime.strptime(t, "%Y-%m-%d")
    return f"{d.year}-{d.month:02d}"


def money(c):
    return ("-" if c < 0 else "") + f"{abs(c) // 100}.{abs(c) % 100:02d}"


def totals(path):
    """region -> month -> cents of the paid orders (and refunds) in the period; an order id counts once."""
    keys = month_keys()
    out, seen = {}, set()
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if r["status"].strip().lower() not in ("paid", "refund"):
                continue
            if (r["order_id"], r["status"]) in seen:  # the same row exported twice
                continue
            seen.add((r["order_id"], r["status"]))
            month = month_of(r["date"])
            if month not in keys:
                continue
            region = r["region"].strip().upper()
            row = out.setdefault(region, dict.fromkeys(keys, 0))
            row[month] += cents(r["amount"])
    return out


def report(path, variant):
    t = totals(path)
    keys = month_keys()
    lines = []
    if variant == "crosstab":
        for region in sorted(t):
            lines.append(",".join([region, *(money(t[region][k]) for k in keys), money(sum(t[region].values()))]))
        col = [sum(t[r][k] for r in t) for k in keys]
        lines.append(",".join(["TOTAL", *(money(c) for c in col), money(sum(col))]))
    elif variant == "mom_change":
        for region in sorted(t):
            for prev, cur in zip(keys, keys[1:]):
                lines.append(f"{region},{cur},{money(t[region][cur] - t[region][prev])}")
    else:
        whole = sum(sum(row.values()) for row in t.values())
        share = {r: (2000 * sum(row.values()) + whole) // (2 * whole) for r, row in t.items()}  # tenths, half up
        for region in sorted(t, key=lambda r: (-share[r], r)):
            lines.append(f"{region},{money(sum(t[region].values()))},{share[region] // 10}.{share[region] % 10}")
    return "".join(ln + "\n" for ln in lines)


if __name__ == "__main__":
    sys.stdout.write(report(sys.argv[1], sys.argv[2]))
'''

REGIONS = ("NORTH", "SOUTH", "EAST", "WEST", "CENTRAL", "COASTAL", "ALPINE", "METRO")
OTHER = ("pending", "cancelled", "failed")


@dataclass(frozen=True)
class Knobs:
    months: int  # months in the period
    regions: int  # regions per shop
    orders: int  # orders per shop
    decoys: int  # other shops' exports
    traps: int  # 1: statuses, region spelling; 2: empty months, orders outside the period;
    #             3: thousands separators, day-first dates; 4: refunds, orders exported twice


@register
class CsvRegionMonthCrosstab(Family):
    name = "csv_region_month_crosstab"
    domain = "data_querying"
    skill_types = ("Analytical Queries",)
    primitive_skills = ("group-by aggregation", "conditional aggregation", "gap filling", "lag and lead comparisons",
                        "rounding and formatting numbers", "case-insensitive matching", "date range filtering")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("crosstab", "mom_change", "share")
    levels = {0: Knobs(months=3, regions=2, orders=12, decoys=1, traps=0),
              1: Knobs(months=4, regions=3, orders=40, decoys=2, traps=1),
              2: Knobs(months=6, regions=4, orders=80, decoys=3, traps=2),
              3: Knobs(months=9, regions=5, orders=140, decoys=3, traps=3),
              4: Knobs(months=12, regions=6, orders=200, decoys=3, traps=4)}

    def _export(self, t, first, months):
        k, rng = t.knobs, t.rng
        lv = k.traps
        regions = rng.sample(REGIONS, k.regions)
        quiet = {(regions[-1], rng.randrange(1, months))} if lv >= 2 else set()  # a month without sales
        start = dt.date(*first, 1)
        span = (dt.date(first[0] + (first[1] - 1 + months) // 12, (first[1] - 1 + months) % 12 + 1, 1) - start).days
        ids = distinct(lambda: f"SO{rng.randrange(100000, 1000000)}", k.orders + 10)
        rows = []
        for oid in ids:
            day = start + dt.timedelta(days=rng.randrange(span))
            if lv >= 2 and rng.random() < 0.08:  # just outside the period
                day = start - dt.timedelta(days=rng.randrange(1, 20)) if rng.random() < 0.5 else \
                    start + dt.timedelta(days=span + rng.randrange(0, 20))
            region = rng.choice(regions)
            if (region, (day.year - first[0]) * 12 + day.month - first[1]) in quiet:
                continue
            c = rng.randrange(500, 250000)
            status = rng.choice(OTHER) if lv >= 1 and rng.random() < 0.15 else "paid"
            rows.append([oid, day, region, c, status])
            if lv >= 4 and status == "paid" and rng.random() < 0.1:  # money back, later in the period
                back = rng.randrange(100, c + 1)
                rows.append([oid, min(day + dt.timedelta(days=rng.randrange(1, 9)), start + dt.timedelta(span - 1)),
                             region, -back, "refund"])
            if lv >= 4 and rng.random() < 0.06:
                rows.append(list(rows[-1]))
        rng.shuffle(rows)
        out = []
        for oid, day, region, c, status in rows:
            amount = f"{'-' if c < 0 else ''}{abs(c) // 100}.{abs(c) % 100:02d}"
            if lv >= 3 and rng.random() < 0.3:
                amount = f"{'-' if c < 0 else ''}{abs(c) // 100:,}" + (f".{abs(c) % 100:02d}" if abs(c) % 100 else "")
            date = day.strftime("%d/%m/%Y") if lv >= 3 and rng.random() < 0.3 else day.isoformat()
            if lv >= 1 and rng.random() < 0.3:
                region = rng.choice([region.lower(), region.title(), f" {region}", f"{region.title()} "])
            if lv >= 1 and rng.random() < 0.2:
                status = status.upper() if rng.random() < 0.5 else status.title()
            out.append([oid, date, region, amount, status])
        return csv_text(["order_id", "date", "region", "amount", "status"], out)

    def output_case(self, t: TaskBuilder) -> None:
        k, rng, variant = t.knobs, t.rng, t.variant
        first = (rng.choice([2023, 2024, 2025]), rng.randrange(1, 13))
        src = fill(REFERENCE, FIRST=first, MONTHS=k.months)
        ref = run_python(src)
        exports = [self._export(t, first, k.months) for _ in range(1 + k.decoys)]
        target, keys = keyed(t, k.decoys, *exports)
        for key, text in zip(keys, exports):
            t.add_file(f"/app/sales/{key}/orders.csv", text)
        with host_files({"orders.csv": exports[0]}) as (_, paths):
            truth = ref["report"](paths[0], variant)
        months = ref["month_keys"]()
        rules = rules_at(k.traps, [
            (0, f"The period is {months[0]} to {months[-1]} ({k.months} calendar months); a sale counts in the month "
                "of its `date`. Amounts are in currency units."),
            (1, "Only orders with status `paid` (any letter case) are sales. Region names were typed by hand: "
                "compare them ignoring case and surrounding spaces, and report them in upper case."),
            (2, "Orders dated outside the period are left out. A region that sold nothing in a month has 0.00 "
                "there."),
            (3, "Some amounts carry thousands separators (quoted, e.g. `\"1,234.50\"`) and some dates are written "
                "day first (`DD/MM/YYYY`)."),
            (4, "A `refund` row (negative amount) gives money back and counts in its own month. Some rows were "
                "exported twice: an `order_id` with the same status counts once.")])
        ask = {"crosstab": ("a crosstab: one CSV line per region with sales in the period, sorted by region: the region, then its sales in "
                            "each month of the period in order, then its total; then a last line `TOTAL` with the "
                            "same columns summed over the regions. No header. Amounts with two decimals (`1234.50`, "
                            "`0.00`)"),
               "mom_change": ("the month-over-month change of every region's sales: for each region and each month "
                              "of the period but the first, a CSV line `region,YYYY-MM,change` (this month's sales "
                              "minus the previous month's, two decimals, a minus sign when negative), sorted by "
                              "region then month, no header"),
               "share": ("each region's share of the period's sales: CSV lines `region,sales,percent` (sales with "
                         "two decimals, percent of the shop's total with one decimal, rounded half up), sorted by "
                         "percent from high to low, ties by region, no header")}[variant]
        intro = ("Each shop's order export is `/app/sales/<KEY>/orders.csv` (`order_id,date,region,amount,status`), "
                 "where KEY is " + key_how("shop's name") + "; the other folders are other shops.")
        out = f"/app/out/{variant}.csv"
        pose(t, intro, rules, f"For the shop named below I need {ask}.", target, "the shop's name", "crosstab.py",
             src, f'"/app/sales/$key/orders.csv" {variant}', out)
        t.expect_output(out, truth, "the report")
