"""Convert foreign-currency invoices to euros with a daily reference-rate table: each invoice uses the
latest rate published on or before its date (an as-of join, since no rates come out on weekends and
holidays), rounded to the cent with halves away from zero. Variants: every invoice converted, the euro
total per customer, and the euro total and count per month. Traps by level: days without rates, several
currencies, then dates written three ways and amounts with thousands separators in quoted fields, and
finally credit notes in parentheses, currency codes in other case with padding, euro invoices (no rate
needed) and rate lines corrected later in the file (the later line counts)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import csv_text, fill, host_files, run_python
from tmax.families.unseen import unseen

REFERENCE = r'''
import bisect
import csv
import datetime as dt
import sys
from decimal import ROUND_HALF_UP, Decimal

VARIANT = @VARIANT@
CENT = Decimal("0.01")


def day(text):
    """ISO (2026-03-04), European (04/03/2026, day first) or compact (20260304) dates."""
    text = text.strip()
    if "/" in text:
        d, m, y = text.split("/")
        return dt.date(int(y), int(m), int(d))
    if "-" in text:
        return dt.date.fromisoformat(text)
    return dt.date(int(text[:4]), int(text[4:6]), int(text[6:]))


def money(text):
    text = text.strip().replace(",", "")
    if text.startswith("(") and text.endswith(")"):
        return -Decimal(text[1:-1])
    return Decimal(text)


def rate_table(path):
    """currency -> (sorted dates, rates): units of the currency per euro; a later line for a date wins."""
    by = {}
    with open(path, encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f):
            by.setdefault(row["currency"].strip().upper(), {})[day(row["date"])] = Decimal(row["rate"].strip())
    return {c: (sorted(v), [v[d] for d in sorted(v)]) for c, v in by.items()}


def converted(rates, inv_path):
    """(invoice id, customer, date, euro amount) per invoice that has a rate on or before its date."""
    out = []
    with open(inv_path, encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f):
            cur, when, amount = row["currency"].strip().upper(), day(row["date"]), money(row["amount"])
            if cur == "EUR":
                eur = amount
            else:
                dates, vals = rates.get(cur, ([], []))
                i = bisect.bisect_right(dates, when) - 1
                if i < 0:
                    continue
                eur = amount / vals[i]
            out.append((row["invoice"].strip(), row["customer"].strip(), when, eur.quantize(CENT, ROUND_HALF_UP)))
    return out


def report(run, rates_path, inv_path):
    rows = converted(rate_table(rates_path), inv_path)
    if VARIANT == "invoices":
        lines = [f"{run},{i},{e}" for i, _, _, e in rows]
    elif VARIANT == "customers":
        tot = {}
        for _, c, _, e in rows:
            tot[c] = tot.get(c, Decimal("0.00")) + e
        lines = [f"{run},{c},{v}" for c, v in sorted(tot.items(), key=lambda kv: (-kv[1], kv[0]))]
    else:  # months
        tot = {}
        for _, _, d, e in rows:
            t, n = tot.get(f"{d:%Y-%m}", (Decimal("0.00"), 0))
            tot[f"{d:%Y-%m}"] = (t + e, n + 1)
        lines = [f"{run},{m},{t},{n}" for m, (t, n) in sorted(tot.items())]
    return "".join(line + "\n" for line in lines)


if __name__ == "__main__":
    sys.stdout.write(report(*sys.argv[1:4]))
'''

CURRENCIES = {"USD": 1.08, "GBP": 0.85, "CHF": 0.95, "SEK": 11.4, "JPY": 162.0, "PLN": 4.3, "NOK": 11.6}
CUSTOMERS = ("Acme GmbH", "Borealis AB", "Cobalt Ltd", "Dune SA", "Ember Oy", "Fjord AS", "Granite Inc",
             "Harbor BV", "Ivory SpA", "Juniper KK")

ASKS = {
    "invoices": "every invoice converted, one line each in the invoice file's order as `<RUN>,<invoice>,<euros>`",
    "customers": "the euro total per customer (the sum of the rounded invoice amounts), one line per customer as "
                 "`<RUN>,<customer>,<euros>`, sorted by total (largest first), ties by customer name in byte order",
    "months": "the euro total (the sum of the rounded invoice amounts) and the number of invoices per calendar "
              "month of the invoice date, one line per month as `<RUN>,<YYYY-MM>,<euros>,<count>`, oldest first",
}


@dataclass(frozen=True)
class Knobs:
    invoices: int
    currencies: int
    gaps: bool  # no rates on weekends and some holidays: the as-of rule matters
    formats: bool  # dates three ways, thousands separators in quoted amounts
    quirks: bool  # credit notes in parentheses, codes in other case, EUR invoices, corrected rate lines


@register
class InvoiceFxConversion(Family):
    name = "invoice_fx_conversion"
    domain = "data_processing"
    skill_types = ("Data Transformation", "Aggregation")
    primitive_skills = ("unit conversion", "joining two sources", "date and time normalisation", "CSV parsing",
                        "aggregation", "sorting with tie-breaks")
    variants = ("invoices", "customers", "months")
    levels = {0: Knobs(invoices=6, currencies=1, gaps=False, formats=False, quirks=False),
              1: Knobs(invoices=30, currencies=2, gaps=True, formats=False, quirks=False),
              2: Knobs(invoices=80, currencies=4, gaps=True, formats=False, quirks=False),
              3: Knobs(invoices=200, currencies=5, gaps=True, formats=True, quirks=False),
              4: Knobs(invoices=400, currencies=7, gaps=True, formats=True, quirks=True)}

    def _fixture(self, t: TaskBuilder) -> tuple[str, str]:
        k, rng = t.knobs, t.rng
        start = dt.date(2025, 1, 6) + dt.timedelta(days=rng.randrange(500))
        span = 20 if k.invoices < 10 else 95
        curs = rng.sample(sorted(CURRENCIES), k.currencies)
        rates = []
        for c in curs:
            r = CURRENCIES[c]
            for i in range(-5, span):
                d = start + dt.timedelta(days=i)
                r *= 1 + rng.uniform(-0.006, 0.006)
                if k.gaps and (d.weekday() >= 5 or rng.random() < 0.04):
                    continue
                rates.append([d.isoformat(), c, f"{r:.4f}" if r < 50 else f"{r:.2f}"])
        if k.quirks:  # a published rate corrected by a later line
            for row in rng.sample(rates, 3):
                rates.append([row[0], row[1], f"{float(row[2]) * 1.01:.4f}"])
        rng.shuffle(rates) if k.formats else rates.sort()
        inv = []
        for n in range(k.invoices):
            d = start + dt.timedelta(days=rng.randrange(span))
            c = rng.choice(curs + (["EUR"] if k.quirks else []))
            amount = rng.randrange(500, 2_000_000 if c != "JPY" else 90_000_000) / 100
            text = f"{amount:.2f}"
            if k.formats and amount >= 1000 and rng.random() < 0.5:
                text = f"{amount:,.2f}"
            if k.quirks and rng.random() < 0.1:
                text = f"({text})"
            shown = d.isoformat()
            if k.formats:
                shown = rng.choice([shown, f"{d:%d/%m/%Y}", f"{d:%Y%m%d}"])
            code = f" {c.lower()}" if k.quirks and rng.random() < 0.2 else c
            inv.append([f"INV-{rng.randrange(10**5, 10**6)}-{n}", rng.choice(CUSTOMERS[:3 + k.currencies]),
                        shown, code, text])
        return (csv_text(["date", "currency", "rate"], rates),
                csv_text(["invoice", "customer", "date", "currency", "amount"], inv))

    def output_case(self, t: TaskBuilder) -> None:
        k = t.knobs
        src = fill(REFERENCE, VARIANT=repr(t.variant))
        ref = run_python(src)
        for _ in range(30):  # at least two answer lines (two months, two customers)
            rates, inv = self._fixture(t)
            if self._truth(ref, rates, inv, "RUN").count("\n") >= 2:
                break
        else:
            raise FamilyError(f"family {self.name}: no {t.variant} report of two lines in 30 draws")
        t.add_file("/app/data/rates.csv", rates)
        t.add_file("/app/data/invoices.csv", inv)
        run = unseen(t, lambda: t.code(2))
        truth = self._truth(ref, rates, inv, run)
        t.say("`/app/data/invoices.csv` lists invoices (`invoice,customer,date,currency,amount`) and "
              "`/app/data/rates.csv` the reference exchange rates (`date,currency,rate`, the rate being units of "
              "the currency per euro). Convert each invoice to euros: divide its amount by the rate of its "
              "currency dated on or before the invoice date, the latest such rate, and round to the cent, halves "
              "away from zero "
              "(two decimals, as `1234.50`; no thousands separators in the output)."
              + (" There are no rates for weekends and some holidays." if k.gaps else ""))
        if k.formats:
            t.say("The invoice export is inconsistent: dates come as `2026-03-04`, `04/03/2026` (day first) or "
                  "`20260304`, and amounts may carry thousands separators (`1,234.50`, quoted in the CSV).")
        if k.quirks:
            t.say("Credit notes have their amount in parentheses (`(120.00)` is -120.00). Currency codes may be "
                  "lower-case or padded with spaces. Invoices in EUR need no rate. When rates.csv has two lines for "
                  "the same date and currency, the later line is a correction and counts.")
        t.say(f"Report {ASKS[t.variant]}. Negative amounts are written with a leading minus sign. RUN is the "
              "batch id given below; the ledger import files the report under it.")
        var = t.deliver(run, "the batch id")
        t.add_solution_file("fx.py", src)
        t.solve(f'test -n "{var}"\nmkdir -p /app/out\n'
                f'python3 /solution/fx.py "{var}" /app/data/rates.csv /app/data/invoices.csv > /app/out/fx.txt')
        t.expect_output("/app/out/fx.txt", truth, "the report")

    @staticmethod
    def _truth(ref, rates: str, inv: str, run: str) -> str:
        with host_files({"rates.csv": rates, "invoices.csv": inv}) as (_, paths):
            return ref["report"](run, *paths)
