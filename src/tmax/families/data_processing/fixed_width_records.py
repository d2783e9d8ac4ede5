"""Mainframe account extracts to CSV. Fixed-width records described by a layout file (field order and
widths drawn per task), implied decimals, YYMMDD dates with a century window, trailing-sign amounts,
header and trailer records, files whose trailer count does not match (rejected whole), adjustment
records applied to balances, and records packed with no line separators at the top level. The CSV
leaves the bank, so account numbers are replaced by salted pseudonyms (the salt reaches the agent
through the fixture channel). Variants: one branch's accounts as CSV (accounts) or as typed JSON Lines
(jsonl), or a lookup index of every branch's accounts sorted by pseudonym (ref_index)."""

from __future__ import annotations

import json
from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.unseen import distinct, unseen

REFERENCE = r'''
import glob
import hashlib
import json
import sys

LAYOUT = @LAYOUT@
BRANCH = "@BRANCH@"
SALT = "@@SALT@@"
HEADER = @HEADER@
SIGNED = @SIGNED@
PACKED = @PACKED@
CHECK_TRAILER = @CHECK_TRAILER@
VARIANT = @VARIANT@
RECLEN = sum(w for _, _, w, _ in LAYOUT)


def records(text):
    if PACKED:
        data = text.replace("\n", "")
        return [data[i:i + RECLEN] for i in range(0, len(data), RECLEN)]
    return [line for line in text.split("\n") if line]


def field(rec, name):
    for n, start, width, typ in LAYOUT:
        if n == name:
            return rec[start - 1:start - 1 + width], typ
    raise KeyError(name)


def cents(raw, typ):
    if typ.startswith("S"):
        sign, digits = raw[-1], raw[:-1]
        value = int(digits)
        return -value if sign == "-" else value
    return int(raw)


def date(raw):
    if raw == "000000":
        return ""
    yy, mm, dd = int(raw[:2]), raw[2:4], raw[4:6]
    return f"{2000 + yy if yy <= 49 else 1900 + yy}-{mm}-{dd}"


def parse(text):
    """(details, adjustments) of one file; both empty when its trailer count is wrong."""
    details, adjust, count = [], [], None
    for rec in records(text):
        kind = rec[0]
        if kind == "T":
            count = int(rec[1:8])
        elif kind in "DA":
            acct = int(field(rec, "account")[0])
            amount = cents(*field(rec, "balance"))
            if kind == "A":
                adjust.append((acct, amount))
            else:
                details.append({"account": acct, "branch": field(rec, "branch")[0].strip(),
                                "name": field(rec, "name")[0].strip(), "opened": date(field(rec, "opened")[0]),
                                "balance": amount, "currency": field(rec, "currency")[0].strip()})
    if CHECK_TRAILER and count != len(details) + len(adjust):
        return [], []
    return details, adjust


def money(c):
    return ("-" if c < 0 else "") + f"{abs(c) // 100}.{abs(c) % 100:02d}"


def quote(s):
    return '"' + s.replace('"', '""') + '"' if ("," in s or '"' in s) else s


def pseudonym(acct, salt):
    return hashlib.sha256(f"{salt}:{acct}".encode()).hexdigest()[:12]


def convert(texts, salt=None, branch=None):
    salt, branch = salt or SALT, branch or BRANCH
    rows, adjust = {}, []
    for text in texts:
        d, a = parse(text)
        for r in d:
            rows[r["account"]] = r
        adjust += a
    for acct, amount in adjust:
        if acct in rows:
            rows[acct]["balance"] += amount
    if VARIANT == "ref_index":  # every branch, by pseudonym
        refs = sorted((pseudonym(a, salt), r) for a, r in rows.items())
        out = ["account_ref,branch,balance"] if HEADER else []
        return "".join(line + "\n" for line in out + [f"{p},{r['branch']},{money(r['balance'])}" for p, r in refs])
    if VARIANT == "jsonl":
        return "".join(json.dumps({"account_ref": pseudonym(a, salt), "name": rows[a]["name"],
                                   "opened": rows[a]["opened"] or None, "balance_cents": rows[a]["balance"],
                                   "currency": rows[a]["currency"]}) + "\n"
                       for a in sorted(rows) if rows[a]["branch"] == branch)
    out = ["account_ref,name,opened,balance,currency"] if HEADER else []
    for acct in sorted(rows):
        r = rows[acct]
        if r["branch"] == branch:
            out.append(f"{pseudonym(acct, salt)},{quote(r['name'])},{r['opened']},{money(r['balance'])},"
                       f"{r['currency']}")
    return "".join(line + "\n" for line in out)


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "dir":
        texts = []
        for path in sorted(glob.glob(sys.argv[2] + "/*.dat")):
            with open(path) as f:
                texts.append(f.read())
        sys.stdout.write(convert(texts, sys.argv[3] if len(sys.argv) > 3 else None))
    else:
        sys.stdout.write(convert([sys.stdin.read()]))
'''

SURNAMES = ["SMITH", "OKAFOR", "NAKAMURA", "GARCIA", "MUELLER", "ROSSI", "KOWALSKI", "DUBOIS", "HANSEN",
            "PETROV", "SILVA", "OBRIEN", "LINDQVIST", "MORENO", "CHEN", "PATEL", "NOVAK", "FISCHER"]
CURRENCIES = ["USD", "EUR", "GBP", "CHF"]


def make_layout(rng, signed: bool) -> tuple[tuple[str, int, int, str], ...]:
    fields = [("branch", 8, "X"), ("account", 10, "9"), ("name", 22, "X"), ("opened", 6, "D"),
              ("balance", 12 if signed else 11, "S9V99" if signed else "9V99"), ("currency", 3, "X"),
              ("filler", rng.randrange(2, 9), "X")]
    rng.shuffle(fields)
    out, pos = [("rec_type", 1, 1, "X")], 2
    for name, width, typ in fields:
        out.append((name, pos, width, typ))
        pos += width
    return tuple(out)


def render(layout, values: dict[str, str]) -> str:
    return "".join(values.get(name, "").ljust(width)[:width] if typ == "X" else values[name]
                   for name, _, width, typ in layout)


def num(n: int, width: int) -> str:
    return str(n).zfill(width)


class Gen:
    def __init__(self, rng, layout, lv, branches):
        self.rng, self.layout, self.lv, self.branches = rng, layout, lv, branches
        self.reclen = sum(w for _, _, w, _ in layout)
        self.width = {n: w for n, _, w, _ in layout}
        self.signed = lv >= 3

    def amount(self, c: int) -> str:
        w = self.width["balance"]
        if self.signed:
            return num(abs(c), w - 1) + ("-" if c < 0 else "+")
        return num(abs(c), w)

    def name(self) -> str:
        rng = self.rng
        s = rng.choice(SURNAMES)
        if self.lv >= 3 and rng.random() < 0.3:
            return f"{s}, {rng.choice('ABCDEFGHJKLMNPRST')}"
        return f"{s} {rng.choice('ABCDEFGHJKLMNPRST')}"

    def detail(self, acct: int, branch: str) -> str:
        rng = self.rng
        yy = rng.choice([rng.randrange(0, 26), rng.randrange(70, 100)]) if self.lv >= 2 else rng.randrange(10, 26)
        opened = f"{yy:02d}{rng.randrange(1, 13):02d}{rng.randrange(1, 29):02d}"
        if self.lv >= 2 and rng.random() < 0.08:
            opened = "000000"
        c = rng.randrange(0, 5000000)
        if self.signed and rng.random() < 0.3:
            c = -rng.randrange(1, 300000)
        return render(self.layout, {"rec_type": "D", "branch": branch, "account": num(acct, 10), "name": self.name(),
                                    "opened": opened, "balance": self.amount(c),
                                    "currency": self.rng.choice(CURRENCIES)})

    def adjustment(self, acct: int) -> str:
        c = self.rng.randrange(1, 200000) * (1 if self.rng.random() < 0.5 else -1)
        return render(self.layout, {"rec_type": "A", "account": num(acct, 10), "opened": "000000",
                                    "balance": self.amount(c)})

    def file(self, accts: list[int], adjust_pool: list[int], corrupt: bool = False) -> str:
        rng, lv = self.rng, self.lv
        recs = [self.detail(a, self.branches[0] if rng.random() < 0.45 else rng.choice(self.branches))
                for a in accts]
        if lv >= 4 and adjust_pool:
            for _ in range(max(1, len(accts) // 4)):
                recs.insert(rng.randrange(len(recs) + 1), self.adjustment(rng.choice(adjust_pool)))
        if lv >= 2:
            n = len(recs) + (rng.choice([-1, 1, 2]) if corrupt else 0)
            recs.insert(0, ("H" + f"EXTRACT{rng.randrange(10**6):06d}").ljust(self.reclen))
            recs.append(("T" + num(n, 7)).ljust(self.reclen))
        if lv >= 4:
            return "".join(recs)
        return "\n".join(recs) + "\n"


def want(variant: str, branch: str) -> str:
    return {"accounts": f"the accounts of branch `{branch}` as CSV",
            "jsonl": f"the accounts of branch `{branch}` as JSON Lines",
            "ref_index": "a lookup index of the accounts of every branch by their pseudonym"}[variant]


@dataclass(frozen=True)
class Knobs:
    files: int  # extract files
    records: int  # account records in all


@register
class FixedWidthRecords(Family):
    name = "fixed_width_records"
    domain = "data_processing"
    skill_types = ("Parsing", "Data Transformation")
    primitive_skills = ("fixed-width parsing", "field extraction", "schema mapping", "filtering by field",
                        "date and time normalisation", "implied decimals and trailing signs",
                        "CSV quoting and escaping")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol", "fuzz_equivalence")
    programs = {"Python": REFERENCE}
    variants = ("accounts", "jsonl", "ref_index")
    levels = {0: Knobs(files=1, records=8), 1: Knobs(files=1, records=25), 2: Knobs(files=1, records=80), 3: Knobs(files=2, records=200),
              4: Knobs(files=4, records=400)}

    def setup(self, t: TaskBuilder):
        """(branch, salt, generator, filled reference, rules bullets, output format): the parts both cases
        share. Adds the layout doc file."""
        rng, lv = t.rng, t.level
        branches = distinct(lambda: t.code(1), 4)
        branch = branches[0]
        # The delivered value is the pseudonymisation salt: it occurs nowhere in the data, and every line of
        # the CSV carries a pseudonym made with it, so any other salt gets every line wrong. It is drawn
        # unseen in the instruction; the extracts are only searched for it as text (their many digit columns
        # make unseen's decodings slow).
        salt = unseen(t, lambda: t.code(2), *branches)
        # Under partial credit a constant header line would match whatever the salt; leave it out there.
        var = t.variant
        header = var != "jsonl" and not t.partial_credit
        layout = make_layout(rng, lv >= 3)
        gen = Gen(rng, layout, lv, branches)
        src = fill(REFERENCE, LAYOUT=layout, SIGNED=lv >= 3, PACKED=lv >= 4, CHECK_TRAILER=lv >= 4, BRANCH=branch,
                   HEADER=header, VARIANT=repr(var))
        doc = ["# Record layout of the account extract (positions are 1-based, widths in characters)",
               "# field        start  width  type"]
        doc += [f"{n:<14} {s:>5}  {w:>5}  {typ}" for n, s, w, typ in layout]
        doc_text = "\n".join(doc) + "\n"
        t.add_file("/app/docs/layout.txt", doc_text)
        rules = [
            "Every record is exactly " + str(gen.reclen) + " characters long and its first character is its "
            "record type; the fields are laid out as in `/app/docs/layout.txt`. Type `X` is text (trim the "
            "padding spaces), type `9` an unsigned integer with leading zeros (print it without them), "
            "type `D` a date `YYMMDD` (years 00-49 are 20YY, 50-99 are 19YY; `000000` means no date, printed as "
            "an empty field), printed as `YYYY-MM-DD`.",
        ]
        if lv >= 3:
            rules.append("Type `S9V99` is a signed amount in cents: digits with two implied decimals followed by a "
                         "sign character `+` or `-` in the last position (e.g. `00000012345-` is -123.45).")
        else:
            rules.append("Type `9V99` is an amount with two implied decimals (e.g. `00000012345` is 123.45).")
        if lv >= 2:
            rules.append("Record type `D` is an account; `H` (header) and `T` (trailer) records carry no account. "
                         "The trailer holds the number of records between header and trailer in columns 2-8.")
        else:
            rules.append("Every record is of type `D` (an account).")
        if lv >= 4:
            rules.append("Records are packed one after another with no line separators at all.")
            rules.append("Record type `A` is a balance adjustment: only its `account` and `balance` fields are "
                         "filled, and its signed amount is added to that account's balance (adjustments can refer "
                         "to an account in another file; one that refers to no known account is ignored). A file "
                         "whose trailer count differs from its number of `D` and `A` records is corrupt: ignore "
                         "that file entirely, adjustments included.")
        rules.append("The output goes to an outside firm, so it must not show account numbers: each account is "
                     "identified by its `account_ref`, the first 12 hex digits (lowercase) of the SHA-256 of the "
                     "text `<salt>:<account>`, with the pseudonymisation salt given above and the account number "
                     "without leading zeros (account `0000000042` gives `<salt>:42`).")
        cols = "account_ref,branch,balance" if var == "ref_index" else "account_ref,name,opened,balance,currency"
        head = f"the header line `{cols}` and " if header else f"no header line: the columns are `{cols}`, with "
        money = "balance in units with exactly two decimals and a leading `-` when negative (e.g. `-123.45`, `0.07`)"
        fmt = {"accounts": f"CSV with {head}one line per account of branch `{branch}`, sorted by account number "
                           f"(numerically, although the number itself is not printed); {money}; a name that "
                           "contains a comma is enclosed in double quotes",
               "jsonl": f"JSON Lines, one object per account of branch `{branch}`, sorted by account number "
                        "(numerically, although the number itself is not printed), with the keys in this order as "
                        "Python's `json.dumps` writes them: `{\"account_ref\": \"3f9a0c1d2e4b\", \"name\": "
                        "\"SMITH A\", \"opened\": \"2019-03-04\", \"balance_cents\": -12345, \"currency\": "
                        "\"EUR\"}` (`opened` is `null` when there is no date; `balance_cents` is the balance as an "
                        "integer number of cents)",
               "ref_index": f"CSV with {head}one line per account of every branch, sorted by `account_ref` (byte "
                            f"order): its account_ref, its branch code, its {money}"}[var]
        return branch, salt, gen, src, "\n".join(f"- {r}" for r in rules), fmt

    def program_case(self, t: TaskBuilder) -> None:
        rng, lv = t.rng, t.level
        branch, salt, gen, src, bullets, fmt = self.setup(t)
        ns = run_python(src)
        cases = []
        for _ in range(200):
            if len(cases) == 10:
                break
            n = rng.randrange(3, 20)
            accts = rng.sample(range(1, 10**9), n)
            corrupt = lv >= 4 and rng.random() < 0.25
            text = gen.file(accts, accts + [rng.randrange(1, 10**9)], corrupt=corrupt)
            out = ns["convert"]([text], salt)
            if not corrupt and out.count("\n") < 2:  # no account of the branch: it would test nothing
                continue
            cases.append((text, out))
        else:
            raise FamilyError(f"family {self.name}: no ten extracts with accounts of the branch")
        if any(salt in c.upper() for case in cases for c in case):  # codes of two words: cannot happen
            raise FamilyError(f"family {self.name}: the salt occurs in a generated extract")
        v = t.deliver(salt, "the pseudonymisation salt")
        t.say(f"Our mainframe exports account extracts as fixed-width files. We need a converter: it reads one "
              f"extract on standard input and prints {want(t.variant, branch)}.\n\n"
              + bullets + f"\n\nOutput: {fmt}.")
        t.expect_program("Hard-code the salt given above, the branch code and the layout.", cases, {"Python": src})
        t.solve(f'sed -i "s/@@SALT@@/{v}/" /app/solution.py')

    def output_case(self, t: TaskBuilder) -> None:
        k, rng, lv = t.knobs, t.rng, t.level
        branch, salt, gen, src, bullets, fmt = self.setup(t)
        ns = run_python(src)
        total, nfiles = k.records, k.files
        accts = rng.sample(range(1, 10**9), total)
        per = total // nfiles
        texts = []
        corrupt_at = rng.randrange(1, nfiles) if lv >= 4 else -1
        for i in range(nfiles):
            chunk = accts[i * per:(i + 1) * per]
            texts.append(gen.file(chunk, accts[:(i + 1) * per] + accts[-3:], corrupt=i == corrupt_at))
        for i, text in enumerate(texts):
            t.add_file(f"/app/data/extract_{i + 1:02d}.dat", text)
        if lv == 0:
            return self.atomic(t, salt, texts[0], ns)
        truth = ns["convert"](texts, salt)
        if truth.count("\n") < 3:  # cannot happen with 45% weight and >= 25 records
            raise FamilyError(f"family {self.name}: too few accounts for the branch")
        if any(salt in text.upper() for text in texts):  # codes of two words: cannot happen
            raise FamilyError(f"family {self.name}: the salt occurs in a generated extract")
        v = t.deliver(salt, "the pseudonymisation salt")
        where = ("`/app/data/extract_01.dat`" if nfiles == 1 else
                 "the files `/app/data/extract_*.dat` (process them all together)")
        t.say(f"Our mainframe exports account extracts as fixed-width files: {where}. I need "
              f"{want(t.variant, branch)}.\n\n" + bullets)
        out = {"accounts": "/app/out/accounts.csv", "jsonl": "/app/out/accounts.jsonl",
               "ref_index": "/app/out/ref_index.csv"}[t.variant]
        t.add_solution_file("convert.py", src)
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\npython3 /solution/convert.py dir /app/data "{v}" > {out}')
        t.say(f"Format: {fmt}.")
        t.expect_output(out, truth, {"accounts": "the CSV", "jsonl": "the JSON Lines",
                                     "ref_index": "the index"}[t.variant])

    def atomic(self, t: TaskBuilder, salt: str, text: str, ns: dict) -> None:
        """One account looked up by its holder's name (unique in the file) and its pseudonym computed."""
        if salt in text.upper():  # codes of two words: cannot happen
            raise FamilyError(f"family {self.name}: the salt occurs in a generated extract")
        recs = ns["parse"](text)[0]
        names = [r["name"] for r in recs]
        pick = t.rng.choice([r for r in recs if names.count(r["name"]) == 1])
        start, width = next((s, w) for n, s, w, _ in ns["LAYOUT"] if n == "account")
        ref = ns["pseudonym"](pick["account"], salt)
        v = t.deliver(salt, "the pseudonymisation salt")
        hashing = ("the first 12 hex digits (lowercase) of the SHA-256 of the text `<salt>:<account>`, with the salt "
                   "given above and the account number without leading zeros (`0000000042` gives `<salt>:42`)")
        intro = ("`/app/data/extract_01.dat` holds fixed-width account records, one per line, laid out as in "
                 "`/app/docs/layout.txt` (positions are 1-based).")
        acct = f'cut -c{start}-{start + width - 1}'
        if t.variant == "ref_index":  # the other way round: which holder has this pseudonym?
            nstart, nwidth = next((s, w) for n, s, w, _ in ns["LAYOUT"] if n == "name")
            t.say(f"{intro} An account's `account_ref` is {hashing}. Which holder's account has the account_ref "
                  f"`{ref}`? Write the holder's name (the `name` field, padding trimmed) to `/app/out/holder.txt`.")
            t.solve(f'test -n "{v}"\nmkdir -p /app/out\n'
                    f'while IFS= read -r rec; do a=$(printf %s "$rec" | {acct}); '
                    f'if [ "$(printf "%s:%d" "{v}" "$((10#$a))" | sha256sum | cut -c1-12)" = {ref} ]; then '
                    f'printf "%s\\n" "$rec" | cut -c{nstart}-{nstart + nwidth - 1} | sed "s/ *$//"; fi; '
                    'done < /app/data/extract_01.dat > /app/out/holder.txt')
            return t.expect_output("/app/out/holder.txt", pick["name"] + "\n", "the holder's name")
        lookup = (f'acct=$(grep -F "{pick["name"]} " /app/data/extract_01.dat | {acct})\n'
                  f'ref=$(printf "%s:%d" "{v}" "$((10#$acct))" | sha256sum | cut -c1-12)\n')
        if t.variant == "jsonl":
            t.say(f"{intro} Find the account of `{pick['name']}` and write one compact JSON object (no spaces), "
                  '`{"account_ref":"<ref>","name":"<name>"}`, to `/app/out/ref.json`, where the account_ref is '
                  f"{hashing}.")
            t.solve(f'test -n "{v}"\nmkdir -p /app/out\n{lookup}'
                    f'printf \'{{"account_ref":"%s","name":"%s"}}\\n\' "$ref" "{pick["name"]}" > /app/out/ref.json')
            return t.expect_output("/app/out/ref.json", json.dumps({"account_ref": ref, "name": pick["name"]},
                                                                   separators=(",", ":")) + "\n", "the JSON object")
        t.say(f"{intro} Find the account of `{pick['name']}` and write its `account_ref` to `/app/out/ref.txt`: "
              f"{hashing}.")
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\n'
                f'acct=$(grep -F "{pick["name"]} " /app/data/extract_01.dat | {acct})\n'
                f'printf "%s:%d" "{v}" "$((10#$acct))" | sha256sum | cut -c1-12 > /app/out/ref.txt')
        t.expect_output("/app/out/ref.txt", ref + "\n", "the account_ref")
