"""Validate pipe-delimited payment transfer records from a partner feed: field count and literal tag,
Luhn check digits on ids, real calendar dates in a window, accounts of our bank (each carries a tag
derived from the bank's code, the delivered value, and its number), canonical decimal amounts with a
ceiling, a currency allowlist, and memo fields screened for spreadsheet formula injection, control
bytes, markup and stray carriage returns. As a classifier (one record per run), as a batch filter, or
as an audit of a feed file. Variants: validate (is each record valid), reject_reasons (the first rule each
record of our bank breaks, the others being FOREIGN; as a classifier, the quarantine of our broken records)
and currency_totals (the valid amounts summed by currency; as a classifier, hold a feed above a limit).

The bank code never appears in the data: a feed that showed it as an account prefix handed it out
without the channel. Under partial credit the audit lists the valid records, not the invalid ones: with
a wrong code every record fails, and a list of them all would still match most invalid lines."""

from __future__ import annotations

from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.unseen import distinct, key_of, unseen

# Hex digits in an account's bank tag: with 4 (16 bits), a wrong bank code tried on a feed of hundreds of
# records matched one by chance often enough to earn partial credit without the delivered code.
TAG_HEX = 6

REFERENCE = r'''
import datetime
import hashlib
import sys

BANK = b"@@BANK@@"
LEVEL = @LEVEL@
MODE = "@MODE@"
LIST_VALID = @LIST_VALID@
CURRENCIES = (b"EUR", b"USD", b"GBP", b"CHF")
DIGITS = b"0123456789"


def digits(b):
    return len(b) > 0 and all(c in DIGITS for c in b)


def luhn(b):
    total = 0
    for i, c in enumerate(reversed(b)):
        d = c - 48
        if i % 2 == 1:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def valid_date(b):
    if len(b) != 10 or b[4:5] != b"-" or b[7:8] != b"-" or not (digits(b[:4]) and digits(b[5:7]) and digits(b[8:])):
        return False
    y, m, d = int(b[:4]), int(b[5:7]), int(b[8:])
    if LEVEL < 2:
        return 1 <= m <= 12 and 1 <= d <= 31
    try:
        day = datetime.date(y, m, d)
    except ValueError:
        return False
    return LEVEL < 4 or datetime.date(2020, 1, 1) <= day <= datetime.date(2026, 6, 30)


def valid_amount(b):
    whole, dot, frac = b.partition(b".")
    if not dot or not digits(whole) or len(frac) != 2 or not digits(frac):
        return False
    if len(whole) > 1 and whole[:1] == b"0":
        return False
    cents = int(whole) * 100 + int(frac)
    return cents > 0 and (LEVEL < 3 or cents <= 100000000)


def valid_memo(b):
    if len(b) > 40 or any(c < 0x20 or c > 0x7E for c in b):
        return False
    if LEVEL >= 3 and b and (b[:1] in (b"=", b"+", b"-", b"@") or b[:1] == b" " or b[-1:] == b" "):
        return False
    if LEVEL >= 4 and any(c in b'<>"' for c in b):
        return False
    return True


def account_tag(bank, num):
    return hashlib.sha256(bank + b":" + num).hexdigest()[:@TAG_HEX@].encode()


def valid(rec, bank=None):
    """rec: one record as bytes, without its line terminator."""
    bank = bank or BANK
    f = rec.split(b"|")
    if len(f) != 7 or f[0] != b"TXN":
        return False
    tid, date, account, amount, currency, memo = f[1:]
    if len(tid) != 8 or not digits(tid) or (LEVEL >= 2 and not luhn(tid)):
        return False
    if not valid_date(date):
        return False
    num, dash, tag = account.partition(b"-")
    if not dash or len(num) != 6 or not digits(num) or tag != account_tag(bank, num):
        return False
    return valid_amount(amount) and currency in CURRENCIES and valid_memo(memo)


def main():
    data = sys.stdin.buffer.read()
    if MODE == "classify":
        ok = data.endswith(b"\n") and valid(data[:-1])
        sys.exit(0 if ok else 1)
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    if MODE == "batch":
        sys.stdout.write("".join(("OK" if valid(l) else "REJECT") + "\n" for l in lines))
    else:
        bank = sys.argv[1].encode() if len(sys.argv) > 1 else None
        sys.stdout.write("".join(f"{i}\n" for i, l in enumerate(lines, 1) if valid(l, bank) == LIST_VALID))


if __name__ == "__main__":
    main()
'''

# Level 0: one tag per bank (of its code alone), so a single grep tells our bank's records apart.
TAG_OF_ACCOUNT, TAG_OF_BANK = 'hashlib.sha256(bank + b":" + num)', "hashlib.sha256(bank)"
ATOMIC = REFERENCE.replace(TAG_OF_ACCOUNT, TAG_OF_BANK)
# The other variants' programs: CORE (the rules) with their own reports in place of main().
CORE = REFERENCE.partition("\n\ndef main():")[0]
VARIANT_MAIN = r'''
RULES = ("format", "id", "date", "amount", "currency", "memo")  # reject_reasons: in the order they are tried
LIMIT = @LIMIT@  # currency_totals: a feed is held when a currency's valid total is above it (cents)


def ours(rec, bank=None):
    """Is the record's 4th field an account of our bank?"""
    f = rec.split(b"|")
    num, dash, tag = (f[3] if len(f) > 3 else b"").partition(b"-")
    return bool(dash) and len(num) == 6 and digits(num) and tag == account_tag(bank or BANK, num)


def broken(rec):
    """The first rule an account-checked record breaks ("" when it is valid)."""
    f = rec.split(b"|")
    if len(f) != 7 or f[0] != b"TXN":
        return "format"
    tid, date, _, amount, currency, memo = f[1:]
    checks = (len(tid) == 8 and digits(tid) and (LEVEL < 2 or luhn(tid)), valid_date(date), valid_amount(amount),
              currency in CURRENCIES, valid_memo(memo))
    return next((rule for rule, ok in zip(RULES[1:], checks) if not ok), "")


def verdict(rec, bank=None):
    """A batch line: OK, FOREIGN (not our account) or the first rule the record breaks."""
    return "FOREIGN" if not ours(rec, bank) else broken(rec) or "OK"


def totals(lines, bank=None):
    """Cents of the valid records by currency."""
    cents = {}
    for rec in lines:
        if valid(rec, bank):
            f = rec.split(b"|")
            whole, _, frac = f[4].partition(b".")
            cents[f[5].decode()] = cents.get(f[5].decode(), 0) + int(whole) * 100 + int(frac)
    return cents


def report(lines, bank=None):
    if VARIANT == "currency_totals":
        return "".join(f"{c} {n // 100}.{n % 100:02d}\n" for c, n in sorted(totals(lines, bank).items()))
    if MODE == "batch":
        return "".join(verdict(rec, bank) + "\n" for rec in lines)
    return "".join(f"{i} {verdict(rec, bank)}\n" for i, rec in enumerate(lines, 1)
                   if verdict(rec, bank) not in ("OK", "FOREIGN"))


def main():
    data = sys.stdin.buffer.read()
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    if MODE == "classify" and VARIANT == "currency_totals":
        sys.exit(0 if all(n <= LIMIT for n in totals(lines).values()) else 1)
    if MODE == "classify":  # quarantine: our records that break a rule
        sys.exit(1 if len(lines) == 1 and verdict(lines[0]) not in ("OK", "FOREIGN") else 0)
    sys.stdout.write(report(lines, sys.argv[1].encode() if len(sys.argv) > 1 else None))


if __name__ == "__main__":
    main()
'''


def variant_reference(variant: str, atomic: bool, **values) -> str:
    """The reference program of reject_reasons or currency_totals (``atomic``: level 0's tag, of the code alone)."""
    src = CORE + f"\n\nVARIANT = {variant!r}" + VARIANT_MAIN
    return fill(src.replace(TAG_OF_ACCOUNT, TAG_OF_BANK) if atomic else src, **values)


ATOMIC_INTRO = ("A partner bank sends us payment transfers as pipe-delimited records "
                "`TXN|id|date|account|amount|currency|memo`. Every record is well formed; `account` is 6 digits, a "
                f"`-`, then the tag of the account's bank: the first {TAG_HEX} hex digits of the SHA-256 of the "
                f"bank's code (`printf %s <code> | sha256sum | cut -c1-{TAG_HEX}`). A record is valid only if its "
                "account is of our "
                "bank, whose code is given above.")
MEMOS = ["invoice 4471", "rent april", "net 30 + fees", "ref a-b-c", "x=y adjustment", "payroll", "", "refund",
         "q2 bonus", "consulting hours", "deposit @ branch", "see email", "transfer to savings"]
BAD_MEMOS = {1: ["memo\twith tab", "caf\u00e9 order", "x" * 41, "bell\x07ring", "esc\x1b[0m"],
             3: ["=HYPERLINK(\"http://evil.test\")", "+cmd|' /C calc'!A0", "-2+3+cmd", "@SUM(A1:A9)", " padded",
                 "trailing "],
             4: ["<script>alert(1)</script>", "say \"hi\"", "a > b"]}

FOREIGN = ("A record whose `account` (its 4th `|`-separated field) is not an account of our bank, by the account "
           "rule above, goes back to the partner: it is `FOREIGN`, whatever else is wrong with it.")
REASONS = ("Every other invalid record is named by the first rule it breaks, trying them in this order: `format` "
           "(exactly 7 fields, the first the literal `TXN`), `id`, `date`, `amount`, `currency`, `memo` (a "
           "character that no rule allows, such as a carriage return, counts against the field it is in).")
TOTALS = ("one line per currency with at least one valid record, as `<currency> <total>` (for example "
          "`EUR 1234.50`): the sum of that currency's valid amounts, exact, with two decimals, sorted by currency "
          "code.")


def luhn_digit(body: str) -> str:
    total = 0
    for i, ch in enumerate(reversed(body)):
        d = int(ch)
        if i % 2 == 0:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return str((10 - total % 10) % 10)


def account(bank: str, num: str) -> str:
    """An account of ``bank``: its 6-digit number and the tag the bank's code gives it."""
    return f"{num}-{key_of(f'{bank}:{num}', TAG_HEX)}"


class Gen:
    def __init__(self, rng, lv, bank, others):
        self.rng, self.lv, self.bank, self.others = rng, lv, bank, others

    def tid(self) -> str:
        body = f"{self.rng.randrange(10**6, 10**7)}"
        return body + luhn_digit(body)

    def date(self) -> str:
        rng = self.rng
        if self.lv >= 2 and rng.random() < 0.15:
            return rng.choice(["2024-02-29", "2020-01-01", "2026-06-30", "2023-12-31", "2020-02-29"])
        return f"{rng.randrange(2020, 2026)}-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d}"

    def amount(self) -> str:
        rng = self.rng
        c = rng.choice([rng.randrange(1, 100), rng.randrange(100, 10**6), rng.randrange(10**6, 10**8)])
        if self.lv >= 3 and rng.random() < 0.05:
            c = 10**8
        return f"{c // 100}.{c % 100:02d}"

    def fields(self) -> list[str]:
        rng = self.rng
        return ["TXN", self.tid(), self.date(), account(self.bank, f"{rng.randrange(10**6):06d}"), self.amount(),
                rng.choice(["EUR", "USD", "GBP", "CHF"]), rng.choice(MEMOS)]

    def clean(self) -> str:
        return "|".join(self.fields())

    def bad(self) -> str:
        rng, lv = self.rng, self.lv
        f = self.fields()
        muts = [
            lambda: f.append("extra"), lambda: f.pop(), lambda: f.__setitem__(0, rng.choice(["txn", "TXN ", "TX"])),
            lambda: f.__setitem__(1, f[1][:7]), lambda: f.__setitem__(1, f[1] + "0"),
            lambda: f.__setitem__(1, f[1][:3] + "O" + f[1][4:]),
            lambda: f.__setitem__(2, rng.choice(["2025-13-01", "2025-00-10", "2025-4-01", "2025/04/01", "25-04-01",
                                                  "2025-04-32", "2025-04-1 "])),
            lambda: f.__setitem__(3, account(rng.choice(self.others), f[3][:6])),
            lambda: f.__setitem__(3, f[3].upper()),
            lambda: f.__setitem__(3, f[3][:-1]), lambda: f.__setitem__(3, f[3].replace("-", "")),
            lambda: f.__setitem__(4, rng.choice(["0.00", "-5.00", "12.5", "012.50", "1,000.00", "1e3", "7", ".50",
                                                 "10.000", "+3.00", "\uff11.00"])),
            lambda: f.__setitem__(5, rng.choice(["eur", "JPY", "EURO", "US", ""])),
            lambda: f.__setitem__(6, rng.choice(BAD_MEMOS[1])),
            lambda: f.__setitem__(6, f[6] + "|x"),
        ]
        if lv >= 2:
            muts += [lambda: f.__setitem__(1, f[1][:7] + str((int(f[1][7]) + rng.randrange(1, 10)) % 10)),
                     lambda: f.__setitem__(2, rng.choice(["2025-02-29", "2023-02-29", "2025-04-31", "2024-06-31",
                                                          "2100-02-29"])),
                     lambda: f.__setitem__(1, f[1][1:] + f[1][0])]
        if lv >= 3:
            muts += [lambda: f.__setitem__(6, rng.choice(BAD_MEMOS[3])),
                     lambda: f.__setitem__(4, rng.choice(["1000000.01", "2500000.00", "99999999.99"]))]
        if lv >= 4:
            muts += [lambda: f.__setitem__(6, rng.choice(BAD_MEMOS[4])),
                     lambda: f.__setitem__(2, rng.choice(["2019-12-31", "2026-07-01", "2027-01-15", "1999-05-05"])),
                     lambda: f.__setitem__(6, f[6] + "\r")]
        rng.choice(muts)()
        return "|".join(f)


class AtomicGen(Gen):
    """Level 0: every record well formed; only the bank's tag (of its code alone) tells them apart."""

    def fields(self, bank: str = "") -> list[str]:
        f = super().fields()
        f[3] = f"{f[3][:6]}-{key_of(bank or self.bank, TAG_HEX)}"
        return f

    def bad(self) -> str:
        return "|".join(self.fields(self.rng.choice(self.others)))


@dataclass(frozen=True)
class Knobs:
    items: int  # records per corpus (clean and malicious each)
    lines: int  # records in the audited feed


@register
class TransferRecordValidator(Family):
    name = "transfer_record_validator"
    domain = "data_processing"
    skill_types = ("Parsing", "Data Transformation")
    primitive_skills = ("record validation", "check digit validation", "formula injection screening",
                        "field extraction", "date and time normalisation", "regular expressions")
    verifiers = ("adversarial_corpus", "fuzz_equivalence", "exact_text", "metric_threshold")
    programs = {"Python": REFERENCE}
    # validate: is each record valid; reject_reasons: the first rule each of our bank's records breaks (as a
    # classifier: quarantine our broken records, pass the partner's); currency_totals: the valid amounts
    # summed by currency (as a classifier: hold a feed over the limit).
    variants = ("validate", "reject_reasons", "currency_totals")
    levels = {0: Knobs(items=8, lines=12), 1: Knobs(items=24, lines=40), 2: Knobs(items=40, lines=120), 3: Knobs(items=60, lines=250),
              4: Knobs(items=90, lines=500)}

    def setup(self, t: TaskBuilder, mode: str, list_valid: bool = False):
        """(bank code, generator, filled reference, validity check, the rules intro, the reference's namespace):
        what every case shares. The bank code is the delivered value; the other banks' codes only make wrong
        tags."""
        rng, lv = t.rng, t.level
        for _ in range(self.variants.index(t.variant)):  # a seed's records differ between the variants
            rng.random()
        # The batch filter's worked examples would show our bank's one tag: it keeps level 1's rules, and so
        # does reject_reasons (level 0's records break no rule but the account's).
        if lv == 0 and mode != "batch" and t.variant != "reject_reasons":
            return self.atomic_setup(t, mode, list_valid)
        intro = self.intro(lv)
        bank = unseen(t, lambda: t.code(2), intro)
        gen = Gen(rng, lv, bank, distinct(lambda: t.code(2), 3, [bank]))
        src = self.program(t, mode, False, list_valid)
        ns = run_python(src)

        def check(rec: str) -> bool:
            return ns["valid"](rec.encode(), bank.encode())
        return bank, gen, src, check, intro, ns

    @staticmethod
    def program(t: TaskBuilder, mode: str, atomic: bool, list_valid: bool = False, limit: int = 0) -> str:
        """The variant's reference, filled (``limit``: currency_totals' classifier, in cents)."""
        values = {"LEVEL": t.level, "MODE": mode, "TAG_HEX": TAG_HEX}
        if t.variant == "validate":
            return fill(ATOMIC if atomic else REFERENCE, LIST_VALID=list_valid, **values)
        return variant_reference(t.variant, atomic, LIST_VALID=False, LIMIT=limit, **values)

    def atomic_setup(self, t: TaskBuilder, mode: str, list_valid: bool):
        """As :meth:`setup`, for level 0: five other banks, all with different tags."""
        bank = unseen(t, lambda: t.code(2), ATOMIC_INTRO)
        for _ in range(20):
            others = distinct(lambda: t.code(2), 5, [bank])
            if len({key_of(b, TAG_HEX) for b in [bank, *others]}) == 6:
                break
        else:
            raise FamilyError(f"family {self.name}: no six banks with different tags")
        src = self.program(t, mode, True, list_valid)
        ns = run_python(src)

        def check(rec: str) -> bool:
            return ns["valid"](rec.encode(), bank.encode())
        return bank, AtomicGen(t.rng, 0, bank, others), src, check, ATOMIC_INTRO, ns

    def intro(self, lv: int) -> str:
        rules = [
            "A record has exactly 7 fields separated by `|` (no quoting, no escaping): the literal tag `TXN`, "
            "`id`, `date`, `account`, `amount`, `currency`, `memo`.",
            "`id`: exactly 8 ASCII digits" + (", and it passes the Luhn check (the last digit is the check digit: "
                                              "from the rightmost digit, double every second digit, subtract 9 from "
                                              "results above 9; the sum of all digits is a multiple of 10)"
                                              if lv >= 2 else "") + ".",
            ("`date`: `YYYY-MM-DD` with ASCII digits and a real calendar date (leap years count)"
             + (" from 2020-01-01 to 2026-06-30 inclusive" if lv >= 4 else "") + ".") if lv >= 2 else
            "`date`: `YYYY-MM-DD` with ASCII digits, the month 01-12 and the day 01-31 (the calendar is not checked).",
            f"`account`: an account of our bank: exactly 6 ASCII digits, a `-`, then the account's tag, the first "
            f"{TAG_HEX} "
            "hex digits (lowercase) of the SHA-256 of the text `<bank code>:<the 6 digits>` with our bank code "
            "given above (exact letter case). Accounts of other banks carry tags made with their own codes.",
            "`amount`: ASCII digits, a `.`, exactly two digits; no sign, no thousands separators, no leading zero "
            "unless the whole part is just `0`; greater than zero" + (" and at most `1000000.00`" if lv >= 3 else "")
            + ".",
            "`currency`: one of `EUR`, `USD`, `GBP`, `CHF` (upper case).",
            "`memo`: 0 to 40 characters, each printable ASCII (0x20 to 0x7E; no tabs, control or non-ASCII "
            "characters)" + ("; it must not start with `=`, `+`, `-` or `@` (spreadsheet formula injection) and "
                             "must not start or end with a space" if lv >= 3 else "")
            + ("; and it must not contain `<`, `>` or `\"`" if lv >= 4 else "") + ".",
        ]
        if lv >= 4:
            rules.append("Records end with a single LF; a carriage return anywhere makes the record invalid.")
        bullets = "\n".join(f"- {r}" for r in rules)
        return ("A partner bank sends us payment transfers as pipe-delimited records, and bad records have "
                "already broken our ledger import and, once, a spreadsheet someone opened. A record is valid only "
                "if every rule holds:\n\n" + bullets)

    def corpus_case(self, t: TaskBuilder) -> None:
        k, rng = t.knobs, t.rng
        bank, gen, src, check, intro, ns = self.setup(t, "classify")
        v = t.deliver(bank, "the bank code")
        if t.variant == "currency_totals":
            self.held_feeds(t, bank, gen, ns, intro, v)
            return
        if t.variant == "reject_reasons":  # only our own broken records are quarantined
            def check(rec: str) -> bool:
                return ns["verdict"](rec.encode(), bank.encode()) in ("OK", "FOREIGN")
        clean, bad = [], []
        for _ in range(100 * k.items):
            if len(clean) >= k.items and len(bad) >= k.items:
                break
            rec = gen.clean() if rng.random() < 0.4 else gen.bad()
            (clean if check(rec) else bad).append(rec + "\n")
        else:
            raise FamilyError(f"family {self.name}: could not fill the corpora")
        if t.variant == "validate":
            t.say(intro + "\n\nWrite the validator. It receives one record on standard input, followed by a "
                  "single newline that is not part of the record.")
            spec = "Accept (exit 0) valid records and reject (exit 1) invalid ones."
        else:
            t.say(intro + "\n\n" + FOREIGN + " We quarantine only our own broken records. Write the quarantine "
                  "check. It receives one record on standard input, followed by a single newline that is not part "
                  "of the record.")
            spec = ("Reject (exit 1) a record whose account is of our bank but which breaks another rule; accept "
                    "(exit 0) every other record, valid or the partner's.")
        t.expect_classifier(spec + " Hard-code the bank code.", clean[:k.items], bad[:k.items], {"Python": src})
        t.solve(f'sed -i "s/@@BANK@@/{v}/" /app/solution.py')

    def program_case(self, t: TaskBuilder) -> None:
        rng = t.rng
        bank, gen, src, check, intro, ns = self.setup(t, "batch")
        v = t.deliver(bank, "the bank code")
        cases = []
        for _ in range(10):
            recs = [gen.clean() if rng.random() < 0.5 else gen.bad() for _ in range(rng.randrange(5, 30))]
            recs = [r for r in recs if "\n" not in r] + [gen.clean()]  # a valid one: any other code fails it
            rng.shuffle(recs)
            text = "".join(r + "\n" for r in recs)
            if t.variant == "validate":
                cases.append((text, "".join(("OK" if check(r) else "REJECT") + "\n" for r in recs)))
            else:
                cases.append((text, ns["report"]([r.encode() for r in recs], bank.encode())))
        if t.variant == "validate":
            t.say(intro + "\n\nWrite a batch filter: it reads records on standard input, one per line, and prints "
                  "one line per input record: `OK` if it is valid, `REJECT` if not.")
        elif t.variant == "reject_reasons":
            t.say(intro + "\n\n" + FOREIGN + " " + REASONS + "\n\nWrite a batch filter: it reads records on "
                  "standard input, one per line, and prints one line per input record: `OK` if it is valid, "
                  "`FOREIGN` if its account is not of our bank, else the name of the first rule it breaks.")
        else:
            t.say(intro + "\n\nWrite a batch totaller: it reads records on standard input, one per line, and "
                  "prints " + TOTALS)
        t.expect_program("Hard-code the bank code.", cases, {"Python": src})
        t.solve(f'sed -i "s/@@BANK@@/{v}/" /app/solution.py')

    def output_case(self, t: TaskBuilder) -> None:
        k, rng = t.knobs, t.rng
        listed = "valid" if t.partial_credit else "invalid"
        bank, gen, src, check, intro, ns = self.setup(t, "audit", t.partial_credit)
        share = 1 / 6 if t.level == 0 else 0.7  # level 0: our bank's tag must not stand out by frequency
        recs = [gen.clean() if rng.random() < share else gen.bad() for _ in range(k.lines)]
        if all(check(r) for r in recs):
            recs[rng.randrange(len(recs))] = gen.bad()
        if all(check(r) for r in recs):
            recs[0] = "TXN|broken"
        if not any(check(r) for r in recs):
            recs[-1] = gen.clean()
        for _ in range(100 if t.variant == "reject_reasons" else 0):  # at least one of ours broken
            if not all(ns["verdict"](r.encode(), bank.encode()) in ("OK", "FOREIGN") for r in recs):
                break
            recs[rng.randrange(len(recs) - 1)] = gen.bad()  # the last record may be the one valid one
        text = "".join(r + "\n" for r in recs)
        if "\r" in text:
            # task files are text and stay LF-only: carriage returns are put back at build time
            t.add_file("/app/data/transfers.txt", text.replace("\r", "<CR>"))
            t.add_setup("sed -i 's/<CR>/\\r/g' /app/data/transfers.txt")
        else:
            t.add_file("/app/data/transfers.txt", text)
        if bank in text.upper():  # records hold only tags: cannot happen
            raise FamilyError(f"family {self.name}: the bank code occurs in the feed")
        if t.variant == "validate":
            truth = "".join(f"{i}\n" for i, r in enumerate(recs, 1) if check(r) == (listed == "valid"))
        else:
            truth = ns["report"]([r.encode() for r in recs], bank.encode())
        v = t.deliver(bank, "the bank code")
        feed = "\n\nToday's feed is `/app/data/transfers.txt`, one record per line."
        if t.variant == "validate":
            t.say(intro + feed + f" Find the {listed} records.")
            out = f"/app/out/{'accepted' if listed == 'valid' else 'rejected'}.txt"
            what = f"the line numbers (1-based) of the {listed} records, one per line, in increasing order"
        elif t.variant == "reject_reasons":
            t.say(intro + feed + " " + FOREIGN + " " + REASONS)
            out, what = "/app/out/reasons.txt", ("one line per record of our bank that is invalid, as `<line number "
                                                 "(1-based)> <rule>` (for example `17 amount`), in increasing "
                                                 "order of line number")
        else:
            t.say(intro + feed + " I need the day's totals.")
            out, what = "/app/out/totals.txt", TOTALS.rstrip(".")
        t.add_solution_file("validate.py", src)
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\npython3 /solution/validate.py "{v}" < /app/data/transfers.txt '
                f'> {out}')
        t.expect_output(out, truth, what)

    def held_feeds(self, t: TaskBuilder, bank: str, gen: Gen, ns: dict, intro: str, v: str) -> None:
        """currency_totals as a classifier: hold a whole feed whose valid amounts top a limit in some currency.
        The limit is the median peak of the drawn feeds, so both sides fill."""
        rng, n = t.rng, t.knobs.items
        share = 0.5 if t.level == 0 else 0.7
        feeds = [[gen.clean() if rng.random() < share else gen.bad() for _ in range(rng.randint(3, 8))]
                 for _ in range(4 * n)]
        peaks = [max([0, *ns["totals"]([r.encode() for r in f], bank.encode()).values()]) for f in feeds]
        limit = sorted(peaks)[len(peaks) // 2]
        texts = ["".join(r + "\n" for r in f) for f in feeds]
        clean = list(dict.fromkeys(x for x, p in zip(texts, peaks) if p <= limit))[:n]
        bad = list(dict.fromkeys(x for x, p in zip(texts, peaks) if p > limit))[:n]
        if len(clean) < n or len(bad) < n or not limit:
            raise FamilyError(f"family {self.name}: could not fill the corpora")
        t.say(intro + f"\n\nBefore a feed is booked we check our exposure: a feed is held when, in some currency, "
              f"the amounts of its valid records add up to more than {limit // 100}.{limit % 100:02d}. Write the "
              "check. It receives a whole feed on standard input, one record per line, each ended by a newline.")
        t.expect_classifier("Accept (exit 0) a feed to book and reject (exit 1) a feed to hold. Hard-code the bank "
                            "code.", clean, bad, {"Python": self.program(t, "classify", t.level == 0, limit=limit)})
        t.solve(f'sed -i "s/@@BANK@@/{v}/" /app/solution.py')
