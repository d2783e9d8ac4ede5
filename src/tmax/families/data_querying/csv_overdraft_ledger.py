"""Which accounts of one branch went overdrawn, at which transaction, and how low once the bank's one-off
overdraft fee (handed over through the fixture channel) is charged? Running balances over CSV ledgers
(opening balance plus a running sum in posting order, ties by transaction id), with pending and failed
rows to drop, overdraft limits, quoted amounts with thousands separators, duplicated export rows, and
monthly files whose column order changed at the top level. Variants: the first overdrawing transaction
and the lowest balance per account (overdrafts), the running balance of every transaction from the first
overdraft on (statement), or when each account got back within its limit and its closing balance, ranked
by it (recovery)."""

from __future__ import annotations

from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import C_SPLIT_QUOTED, csv_text, fill, run_python
from tmax.families.unseen import distinct, unseen

# @BRANCH@ is filled on the host; @@FEE@@ (the delivered fee) by the oracle at solve time.
CORE = r'''
import csv
import io
import sys

BRANCH = "@BRANCH@"
FEE = "@@FEE@@"  # the one-off overdraft fee in cents


def cents(text):
    t = text.strip().replace(",", "")
    neg = t.startswith("-")
    t = t.lstrip("+-")
    whole, _, frac = t.partition(".")
    c = int(whole or "0") * 100 + int((frac + "00")[:2])
    return -c if neg else c


def money(c):
    return ("-" if c < 0 else "") + f"{abs(c) // 100}.{abs(c) % 100:02d}"


def overdrafts(accounts, ledgers, branch=BRANCH, fee=None):
    """accounts: CSV text; ledgers: CSV texts (each with its own header)."""
    fee = int(FEE if fee is None else fee)
    acct = {}
    for row in csv.DictReader(io.StringIO(accounts)):
        acct[row["account"]] = (row["branch"], cents(row["opening_balance"]),
                                cents(row.get("overdraft_limit") or "0"))
    seen, per = {}, {}
    for text in ledgers:
        for row in csv.DictReader(io.StringIO(text)):
            if row["txn_id"] in seen:
                continue
            seen[row["txn_id"]] = True
            a = acct.get(row["account"])
            if a is None or a[0] != branch or row["status"].strip().lower() != "posted":
                continue
            per.setdefault(row["account"], []).append((row["posted_at"], int(row["txn_id"]), cents(row["amount"])))
    out = []
    for name in sorted(per):
        _, bal, limit = acct[name]
        first, low = None, None
        for _, tid, c in sorted(per[name]):
            bal += c
            low = bal if low is None else min(low, bal)
            if first is None and bal < -limit:
                first = tid
        if first is not None:
            # The fee is charged right after the first overdrawing transaction, so the lowest balance,
            # reached at or after it, always includes it.
            out.append(f"{name},{first},{money(low - fee)}\n")
    return "".join(out)


def sections(text):
    parts, cur = {}, None
    for line in text.splitlines(keepends=True):
        if line.strip() in ("[accounts]", "[transactions]"):
            cur = line.strip()[1:-1]
            parts[cur] = ""
        elif cur is not None:
            parts[cur] += line
    return parts
'''
MAIN = r'''

if __name__ == "__main__":
    parts = sections(sys.stdin.read())
    sys.stdout.write(overdrafts(parts["accounts"], [parts["transactions"]]))
'''
REFERENCE = CORE + MAIN

# The other variants, appended to CORE: from the first overdraft on, every transaction with the balance
# after it (statement), or when the account came back within its limit and how it closed (recovery).
VARIANT_TAIL = r'''

VARIANT = "@VARIANT@"


def postings(accounts, ledgers, branch):
    """{account: (opening, limit, [(posted_at, txn_id, cents)] in posting order)} of the branch."""
    acct = {}
    for row in csv.DictReader(io.StringIO(accounts)):
        acct[row["account"]] = (row["branch"], cents(row["opening_balance"]),
                                cents(row.get("overdraft_limit") or "0"))
    seen, per = {}, {}
    for text in ledgers:
        for row in csv.DictReader(io.StringIO(text)):
            if row["txn_id"] in seen:
                continue
            seen[row["txn_id"]] = True
            a = acct.get(row["account"])
            if a is None or a[0] != branch or row["status"].strip().lower() != "posted":
                continue
            per.setdefault(row["account"], []).append((row["posted_at"], int(row["txn_id"]), cents(row["amount"])))
    return {name: (acct[name][1], acct[name][2], sorted(per[name])) for name in sorted(per)}


def walk(opening, limit, txns, fee):
    """(txn_id, balance after it with the fee, overdrawn yet) per transaction."""
    bal, charged, out = opening, False, []
    for _, tid, c in txns:
        bal += c
        if not charged and bal < -limit:
            charged = True
            bal -= fee
        out.append((tid, bal, charged))
    return out


def report(accounts, ledgers, branch=BRANCH, fee=None, variant=VARIANT):
    fee = int(FEE if fee is None else fee)
    lines = []
    for name, (opening, limit, txns) in postings(accounts, ledgers, branch).items():
        steps = walk(opening, limit, txns, fee)
        if not any(over for _, _, over in steps):
            continue
        if variant == "statement":
            lines += [(name, f"{name},{tid},{money(bal)}\n") for tid, bal, over in steps if over]
            continue
        first = next(i for i, (_, _, over) in enumerate(steps) if over)
        back = next((str(tid) for tid, bal, _ in steps[first + 1:] if bal >= -limit), "-")
        closing = steps[-1][1]
        lines.append(((closing, name), f"{name},{back},{money(closing)}\n"))
    if variant == "recovery":  # the lowest closing balance first
        lines.sort()
    return "".join(line for _, line in lines)


if __name__ == "__main__":
    parts = sections(sys.stdin.read())
    sys.stdout.write(report(parts["accounts"], [parts["transactions"]]))
'''

# The same program in C, for the program-writing case: the reading part, then the report.
C_HEAD = r'''#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BRANCH "@BRANCH@"
#define FEE @@FEE@@L /* the one-off overdraft fee in cents */
#define MAXF 16

typedef struct { char name[64]; char branch[64]; long open, limit; } Acct;
typedef struct { char posted[64]; long id; long cents; int acct; } Txn;

static Acct accts[4096]; static int nacct;
static Txn txns[200000]; static int ntxn;
static long seen[200000]; static int nseen;

/* Split one CSV line into fields (double quotes, "" escapes); returns the field count. */
@C_SPLIT_QUOTED@

static long cents(const char *s) {
    char buf[128]; int k = 0;
    for (; *s; s++) if (*s != ',' && *s != ' ') buf[k++] = *s;
    buf[k] = 0;
    int neg = buf[0] == '-';
    char *t = buf + (buf[0] == '-' || buf[0] == '+');
    char *dot = strchr(t, '.');
    long whole = atol(t), frac = 0;
    if (dot) { frac = (dot[1] ? dot[1] - '0' : 0) * 10 + (dot[1] && dot[2] ? dot[2] - '0' : 0); }
    long c = whole * 100 + frac;
    return neg ? -c : c;
}

static int col(char h[MAXF][128], int n, const char *name) {
    for (int i = 0; i < n; i++) if (!strcmp(h[i], name)) return i;
    return -1;
}

static int cmp_txn(const void *a, const void *b) {
    const Txn *x = a, *y = b;
    if (x->acct != y->acct) return strcmp(accts[x->acct].name, accts[y->acct].name);
    int c = strcmp(x->posted, y->posted);
    if (c) return c;
    return (x->id > y->id) - (x->id < y->id);
}

static void lower(char *s) { for (; *s; s++) if (*s >= 'A' && *s <= 'Z') *s += 32; }

int main(void) {
    static char line[8192];
    char f[MAXF][128], h[MAXF][128];
    int section = 0, nh = 0, have_header = 0;
    while (fgets(line, sizeof line, stdin)) {
        if (!strncmp(line, "[accounts]", 10)) { section = 1; have_header = 0; continue; }
        if (!strncmp(line, "[transactions]", 14)) { section = 2; have_header = 0; continue; }
        if (!section || line[0] == '\n' || line[0] == '\r' || !line[0]) continue;
        if (!have_header) { nh = split_quoted(line, h); have_header = 1; continue; }
        int n = split_quoted(line, f);
        (void)n;
        if (section == 1) {
            Acct *a = &accts[nacct++];
            snprintf(a->name, sizeof a->name, "%s", f[col(h, nh, "account")]);
            snprintf(a->branch, sizeof a->branch, "%s", f[col(h, nh, "branch")]);
            a->open = cents(f[col(h, nh, "opening_balance")]);
            int li = col(h, nh, "overdraft_limit");
            a->limit = li >= 0 ? cents(f[li]) : 0;
        } else {
            long id = atol(f[col(h, nh, "txn_id")]);
            int dup = 0;
            for (int i = 0; i < nseen; i++) if (seen[i] == id) { dup = 1; break; }
            if (dup) continue;
            seen[nseen++] = id;
            char status[128];
            snprintf(status, sizeof status, "%s", f[col(h, nh, "status")]);
            lower(status);
            if (strcmp(status, "posted")) continue;
            const char *name = f[col(h, nh, "account")];
            int ai = -1;
            for (int i = 0; i < nacct; i++) if (!strcmp(accts[i].name, name)) { ai = i; break; }
            if (ai < 0 || strcmp(accts[ai].branch, BRANCH)) continue;
            Txn *t = &txns[ntxn++];
            snprintf(t->posted, sizeof t->posted, "%s", f[col(h, nh, "posted_at")]);
            t->id = id;
            t->cents = cents(f[col(h, nh, "amount")]);
            t->acct = ai;
        }
    }
    qsort(txns, ntxn, sizeof(Txn), cmp_txn);
'''
C_TAIL = r'''    for (int i = 0; i < ntxn;) {
        int a = txns[i].acct;
        long bal = accts[a].open, low = 0, first = -1;
        int any = 0;
        for (; i < ntxn && txns[i].acct == a; i++) {
            bal += txns[i].cents;
            if (!any || bal < low) low = bal;
            any = 1;
            if (first < 0 && bal < -accts[a].limit) first = txns[i].id;
        }
        if (first >= 0) {
            low -= FEE;
            long m = low < 0 ? -low : low;
            printf("%s,%ld,%s%ld.%02ld\n", accts[a].name, first, low < 0 ? "-" : "", m / 100, m % 100);
        }
    }
    return 0;
}
'''
C_REFERENCE = C_HEAD + C_TAIL
# The other variants' reports, after C_HEAD (recovery keeps its lines in order by insertion).
C_VARIANT_TAIL = {"statement": r'''    for (int i = 0; i < ntxn;) {
        int a = txns[i].acct;
        long bal = accts[a].open;
        int over = 0;
        for (; i < ntxn && txns[i].acct == a; i++) {
            bal += txns[i].cents;
            if (!over && bal < -accts[a].limit) { over = 1; bal -= FEE; }
            if (over) {
                long m = bal < 0 ? -bal : bal;
                printf("%s,%ld,%s%ld.%02ld\n", accts[a].name, txns[i].id, bal < 0 ? "-" : "", m / 100, m % 100);
            }
        }
    }
    return 0;
}
''', "recovery": r'''    static long rc[4096], rb[4096];
    static int ra[4096];
    int nr = 0;
    for (int i = 0; i < ntxn;) {
        int a = txns[i].acct;
        long bal = accts[a].open, back = -1;
        int over = 0;
        for (; i < ntxn && txns[i].acct == a; i++) {
            bal += txns[i].cents;
            if (!over && bal < -accts[a].limit) { over = 1; bal -= FEE; }
            else if (over && back < 0 && bal >= -accts[a].limit) back = txns[i].id;
        }
        if (over) {
            int k = nr++;
            while (k > 0 && (rc[k - 1] > bal
                             || (rc[k - 1] == bal && strcmp(accts[ra[k - 1]].name, accts[a].name) > 0))) {
                rc[k] = rc[k - 1]; rb[k] = rb[k - 1]; ra[k] = ra[k - 1]; k--;
            }
            rc[k] = bal; rb[k] = back; ra[k] = a;
        }
    }
    for (int k = 0; k < nr; k++) {
        long m = rc[k] < 0 ? -rc[k] : rc[k];
        if (rb[k] < 0) printf("%s,-,", accts[ra[k]].name);
        else printf("%s,%ld,", accts[ra[k]].name, rb[k]);
        printf("%s%ld.%02ld\n", rc[k] < 0 ? "-" : "", m / 100, m % 100);
    }
    return 0;
}
'''}

COLS = ["txn_id", "account", "posted_at", "amount", "status"]
# Each variant's exports keep their columns in an order of their own (read by header all the same).
TXN_ORDER = {"overdrafts": COLS, "statement": ["account", "posted_at", "txn_id", "status", "amount"],
             "recovery": ["posted_at", "amount", "status", "account", "txn_id"]}
ACCOUNT_ORDER = {"overdrafts": ["account", "branch", "opening_balance", "overdraft_limit"],
                 "statement": ["branch", "account", "overdraft_limit", "opening_balance"],
                 "recovery": ["opening_balance", "overdraft_limit", "account", "branch"]}
MEMOS = ["card", "transfer", "fee", "salary", "atm", "direct debit"]


def money_text(c: int, fancy: bool, rng) -> str:
    s = ("-" if c < 0 else "") + f"{abs(c) // 100}.{abs(c) % 100:02d}"
    if fancy and abs(c) >= 100000 and rng.random() < 0.7:
        whole = f"{abs(c) // 100:,}"
        s = ("-" if c < 0 else "") + f"{whole}.{abs(c) % 100:02d}"
    return s


def gen(rng, lv: int, n_acct: int, n_txn: int, branches: list[str], month0: int):
    """accounts rows (as dicts) and transaction rows (as dicts), in file order."""
    names = [f"ACC{n}" for n in rng.sample(range(10000, 99999), n_acct)]
    accounts = []
    for i, name in enumerate(names):
        accounts.append({"account": name, "branch": branches[i % len(branches)] if i < len(branches) else
                         rng.choice(branches), "opening_balance": rng.randrange(0, 300000),
                         "overdraft_limit": rng.choice([0, 0, 10000, 25000, 50000]) if lv >= 3 else 0})
    txns = []
    ids = rng.sample(range(100000, 999999), n_txn)
    for i in range(n_txn):
        a = rng.choice(accounts)
        month = month0 + rng.randrange(0, 3 if lv >= 4 else 1)
        posted = f"2025-{month:02d}-{rng.randrange(1, 29):02d} {rng.randrange(24):02d}:{rng.randrange(60):02d}:00"
        if txns and rng.random() < 0.1:  # same account, same instant: the txn_id decides the order
            prev = rng.choice(txns)
            a = next(x for x in accounts if x["account"] == prev["account"])
            posted = prev["posted_at"]
        amount = -rng.randrange(500, 120000) if rng.random() < 0.62 else rng.randrange(1000, 150000)
        status = "posted"
        if lv >= 2 and rng.random() < 0.15:
            status = rng.choice(["pending", "failed"])
        if lv >= 3 and rng.random() < 0.3:
            status = rng.choice([status.upper(), status.title()])
        txns.append({"txn_id": ids[i], "account": a["account"], "posted_at": posted, "amount": amount,
                     "status": status})
    if lv >= 3:
        for tx in rng.sample(txns, len(txns) // 15):
            txns.append(dict(tx))
    rng.shuffle(txns)
    return accounts, txns


def render(rng, lv: int, accounts: list[dict], txns: list[dict], variant: str = "overdrafts") -> tuple[str, list[dict]]:
    acols = ["account", "branch", "opening_balance"] + (["overdraft_limit"] if lv >= 3 else [])
    acols = [c for c in ACCOUNT_ORDER[variant] if c in acols]
    arows = []
    for a in accounts:
        vals = {"account": a["account"], "branch": a["branch"], "opening_balance": money_text(a["opening_balance"],
                False, rng), "overdraft_limit": money_text(a["overdraft_limit"], False, rng)}
        arows.append([vals[c] for c in acols])
    rendered = []
    fancy_of: dict = {}
    for tx in txns:
        # Duplicated rows are exact copies, so their amount text is decided once per transaction.
        if tx["txn_id"] not in fancy_of:
            fancy_of[tx["txn_id"]] = money_text(tx["amount"], lv >= 3, rng)
        rendered.append({**tx, "txn_id": str(tx["txn_id"]), "amount": fancy_of[tx["txn_id"]]})
    return csv_text(acols, arows), rendered


def fee_draw(rng):
    """A fee of 10.00 to 49.99, in cents: clear of the services' ports and of the 4-digit runs the export
    shows."""
    return lambda: str(rng.randrange(1000, 5000))


def ledger_csv(rendered: list[dict], cols: list[str]) -> str:
    return csv_text(cols, [[r[c] for c in cols] for r in rendered])


@dataclass(frozen=True)
class Knobs:
    accounts: int  # accounts in the export (of all branches)
    txns: int  # transactions before duplicated rows


@register
class CsvOverdraftLedger(Family):
    name = "csv_overdraft_ledger"
    domain = "data_querying"
    skill_types = ("Analytical Queries", "Temporal Queries")
    primitive_skills = ("running totals", "window functions", "CSV import into SQLite", "multi-table joins",
                        "deduplication by key", "type coercion of mixed fields", "rounding and formatting numbers",
                        "case-insensitive matching")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol", "fuzz_equivalence")
    programs = {"Python": REFERENCE, "C": C_REFERENCE}
    variants = ("overdrafts", "statement", "recovery")
    levels = {0: Knobs(accounts=6, txns=30), 1: Knobs(accounts=6, txns=80), 2: Knobs(accounts=12, txns=300),
              3: Knobs(accounts=20, txns=700), 4: Knobs(accounts=30, txns=1400)}

    def rules(self, lv: int, program: bool, variant: str = "overdrafts") -> tuple[str, str]:
        """(the ledger rules as a bullet list, the output format); ``program``: the rules for a tool that
        reads one export on stdin rather than for the files in /app/data."""
        rules = ["An account's balance starts at its `opening_balance`" + ("" if program else " (in `accounts.csv`)")
                 + "; apply its transactions in order of `posted_at`, and by `txn_id` (numerically) when several "
                 "share the same `posted_at`. `amount` is signed: negative amounts are debits."]
        if lv >= 2:
            rules.append("Only transactions whose `status` is `posted`"
                         + (" (any letter case)" if lv >= 3 else "") + " count; pending and failed ones are ignored.")
        if lv >= 3:
            rules.append("An account is overdrawn when its balance drops below minus its `overdraft_limit` (a limit "
                         "of 250.00 allows the balance to reach -250.00 but not -250.01).")
            rules.append("The export repeats some rows: a `txn_id` seen before is a duplicate and counts once. "
                         "Large amounts are quoted with thousands separators, e.g. `\"-1,250.00\"`.")
        else:
            rules.append("An account is overdrawn when its balance drops below zero.")
        if variant == "overdrafts":
            rules.append("The first time an account becomes overdrawn, the bank charges it a one-off overdraft fee "
                         "(given below, in cents; it is not in the export). The fee is debited right after the "
                         "transaction that made the account overdrawn, so it counts in every later balance, the "
                         "lowest one included; it is charged only once, and it does not change which transaction "
                         "first made the account overdrawn.")
        else:
            rules.append("The first time an account becomes overdrawn, the bank charges it a one-off overdraft fee "
                         "(given below, in cents; it is not in the export). The fee is debited together with the "
                         "transaction that made the account overdrawn: the balance after that transaction and every "
                         "later balance include it. It is charged only once, even if the account is overdrawn "
                         "again later.")
        if lv >= 4:
            rules.append("The column order of the transactions section varies between exports: read it by its "
                         "header." if program else
                         "The ledger is split into monthly files, and the export tool changed its column order "
                         "between months: read each file by its header. The same transaction can appear in two "
                         "files.")
        fmt = ("CSV without a header, one line per account of the branch that was ever overdrawn: "
               "`account,txn_id,lowest_balance`, where txn_id is the transaction that first made it overdrawn and "
               "lowest_balance is the lowest balance it reached, overdraft fee included, with exactly two decimals "
               "(e.g. `-1250.50`); sorted by account")
        if variant == "statement":
            fmt = ("CSV without a header: for every account of the branch that was ever overdrawn, one line per "
                   "transaction from the one that first made it overdrawn on (that one included): "
                   "`account,txn_id,balance`, balance being the account's balance right after that transaction, "
                   "overdraft fee included, with exactly two decimals (e.g. `-1250.50`); sorted by account, then "
                   "in the order the transactions apply")
        elif variant == "recovery":
            fmt = ("CSV without a header, one line per account of the branch that was ever overdrawn: "
                   "`account,txn_id,closing_balance`, where txn_id is the first transaction after the one that first "
                   "made it overdrawn that left it no longer overdrawn, fee included (`-` if none did), and "
                   "closing_balance is its balance after its last transaction, fee included, with exactly two "
                   "decimals (e.g. `-1250.50`); sorted by closing balance (lowest first), ties by account")
        return "\n".join(f"- {r}" for r in rules), fmt

    def sources(self, variant: str, branch: str) -> tuple[str, str]:
        """The variant's reference programs (Python, C) for ``branch``."""
        if variant == "overdrafts":
            return (fill(REFERENCE, BRANCH=branch),
                    fill(C_REFERENCE, BRANCH=branch, C_SPLIT_QUOTED=C_SPLIT_QUOTED))
        return (fill(CORE + VARIANT_TAIL, BRANCH=branch, VARIANT=variant),
                fill(C_HEAD + C_VARIANT_TAIL[variant], BRANCH=branch, C_SPLIT_QUOTED=C_SPLIT_QUOTED))

    def needs(self, variant: str, branch: str) -> str:
        """What the output case asks for, after "I need"."""
        return {"overdrafts": f"to know which accounts of branch `{branch}` went overdrawn, and how low they went",
                "statement": f"the overdraft statement of branch `{branch}`: every account of it that went "
                             "overdrawn, with its running balance from the moment it went overdrawn",
                "recovery": f"to know, for each account of branch `{branch}` that went overdrawn, whether and when "
                            "it got back within its limit, and how it closed"}[variant]

    def asks(self, variant: str, branch: str) -> str:
        """What the program case's tool does, after "a tool that reads one export and"."""
        return {"overdrafts": f"reports which accounts of branch `{branch}` went overdrawn, and how low they went",
                "statement": f"lists the overdraft statement of branch `{branch}`: every account of it that went "
                             "overdrawn, with its running balance from the moment it went overdrawn",
                "recovery": f"reports, for each account of branch `{branch}` that went overdrawn, whether and when "
                            "it got back within its limit, and how it closed"}[variant]

    def program_case(self, t: TaskBuilder) -> None:
        rng, lv, var = t.rng, t.level, t.variant or self.variants[0]
        branches = distinct(lambda: t.code(1), 3)
        branch = branches[0]
        ns = run_python(fill(REFERENCE, BRANCH=branch))
        py, c = self.sources(var, branch)
        run = ns["overdrafts"] if var == "overdrafts" else run_python(py)["report"]
        bullets, fmt = self.rules(lv, program=True, variant=var)
        exports = []
        for _ in range(200):  # every case has an overdrawn account, so every case shows the fee
            if len(exports) == 12:
                break
            accounts, txns = gen(rng, lv, rng.randrange(3, 9), rng.randrange(8, 60), branches, rng.randrange(1, 10))
            atext, rendered = render(rng, lv, accounts, txns, var)
            cols = list(TXN_ORDER[var])
            if lv >= 4:
                rng.shuffle(cols)
            ttext = ledger_csv(rendered, cols)
            if ns["overdrafts"](atext, [ttext], branch, 0):
                exports.append((atext, ttext))
        if len(exports) < 12:
            raise FamilyError("csv_overdraft_ledger: no 12 exports with an overdrawn account in 200 draws")
        demo = 100 * rng.randrange(10, 50)
        texts = ["[accounts]\n" + a + "[transactions]\n" + tx for a, tx in exports]
        shown = [run(a, [tx], branch, demo) for a, tx in exports[:2]]
        t.say("Our core banking system exports account data as one text file with two CSV sections (each with "
              "a header line): a line `[accounts]` followed by the accounts (`account`, `branch`, "
              "`opening_balance`" + (", `overdraft_limit`" if lv >= 3 else "") + "), then a line "
              "`[transactions]` followed by the transactions (`txn_id`, `account`, `posted_at`, `amount`, "
              f"`status`). We need a tool that reads one such export on standard input and {self.asks(var, branch)}."
              "\n\n" + bullets
              + f"\n\nOutput: {fmt}.\n\nThe worked examples were produced on our test system, which charges a "
              f"fee of {demo} cents; the program must use the production fee given below.")
        fee = unseen(t, fee_draw(rng), *texts[:2], *shown)
        cases = [(texts[0], shown[0]), (texts[1], shown[1])]
        cases += [(x, run(a, [tx], branch, fee)) for x, (a, tx) in zip(texts[2:], exports[2:])]
        v = t.deliver(fee, "the overdraft fee in cents")
        t.expect_program("The overdraft fee is the production one given above; hard-code it in the program.",
                         cases, {"Python": py, "C": c})
        t.solve("for f in /app/solution.py /app/solution.c; do\n"
                f'  if [ -f "$f" ]; then sed -i "s/@@FEE@@/{v}/" "$f"; fi\ndone')

    def output_case(self, t: TaskBuilder) -> None:
        k, rng, lv, var = t.knobs, t.rng, t.level, t.variant or self.variants[0]
        branches = distinct(lambda: t.code(1), 3)
        branch = branches[0]
        if lv == 0 and var == "overdrafts":
            self.closing_case(t, branches, branch)
            return
        ns = run_python(fill(REFERENCE, BRANCH=branch))
        py, _ = self.sources(var, branch)
        run = ns["overdrafts"] if var == "overdrafts" else run_python(py)["report"]
        bullets, fmt = self.rules(lv, program=False, variant=var)
        for _ in range(50):  # some accounts of the branch overdrawn, and some not (else the last draw)
            accounts, txns = gen(rng, lv, k.accounts, k.txns, branches, rng.randrange(1, 10))
            atext, rendered = render(rng, lv, accounts, txns, var)
            n_branch = sum(1 for a in accounts if a["branch"] == branch)
            n_over = len(ns["overdrafts"](atext, [ledger_csv(rendered, COLS)], branch, 0).splitlines())
            if 0 < n_over < n_branch:
                break
        t.add_file("/app/data/accounts.csv", atext)
        if lv >= 4:
            months = sorted({r["posted_at"][:7] for r in rendered})
            ledgers = []
            for m in months:
                rows = [r for r in rendered if r["posted_at"][:7] == m]
                # Month-end overlap: a few rows of the next month repeated at the end of this file.
                nxt = [r for r in rendered if r["posted_at"][:7] > m]
                rows += rng.sample(nxt, min(len(nxt), 4))
                cols = list(TXN_ORDER[var])
                rng.shuffle(cols)
                text = ledger_csv(rows, cols)
                ledgers.append(text)
                t.add_file(f"/app/data/ledger/{m}.csv", text)
            where = "the monthly CSV files in `/app/data/ledger/`"
            files = "/app/data/ledger/*.csv"
        else:
            text = ledger_csv(rendered, TXN_ORDER[var])
            ledgers = [text]
            t.add_file("/app/data/ledger.csv", text)
            where = "`/app/data/ledger.csv`"
            files = "/app/data/ledger.csv"
        t.say("Our core banking export is in `/app/data/`: the accounts in `/app/data/accounts.csv` (`account`, "
              "`branch`, `opening_balance`" + (", `overdraft_limit`" if lv >= 3 else "") + ") and the transactions "
              f"in {where} (`txn_id`, `account`, `posted_at`, `amount`, `status`). I need {self.needs(var, branch)}."
              "\n\n" + bullets
              + f"\n\nReport format: {fmt}.")
        fee = unseen(t, fee_draw(rng))
        truth = run(atext, ledgers, branch, fee)
        v = t.deliver(fee, "the overdraft fee in cents")
        out = f"/app/out/{var}.csv"
        t.add_solution_file(f"{var}.sql", fill(OVERDRAFT_SQL if var == "overdrafts" else VARIANT_SQL[var],
                                               BRANCH=branch))
        t.add_solution_file("reference.py", py)
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\nrm -f /tmp/ledger.db\n'
                "sqlite3 /tmp/ledger.db '.import --csv /app/data/accounts.csv accounts'\n"
                + ("" if lv >= 3 else
                   "sqlite3 /tmp/ledger.db \"ALTER TABLE accounts ADD COLUMN overdraft_limit TEXT DEFAULT '0'\"\n") +
                "sqlite3 /tmp/ledger.db 'CREATE TABLE ledger (txn_id, account, posted_at, amount, status)'\n"
                f"i=0\nfor f in {files}; do\n  i=$((i+1))\n"
                "  sqlite3 /tmp/ledger.db \".import --csv $f part$i\" \"INSERT INTO ledger SELECT txn_id, account, "
                "posted_at, amount, status FROM part$i\"\ndone\n"
                f'sed "s/@@FEE@@/{v}/" /solution/{var}.sql | sqlite3 -batch -noheader -separator , '
                f"/tmp/ledger.db > {out}\n"
                f"python3 - {out} \"{v}\" {files} <<'EOF'\n"
                "import sys\nsys.argv, out = sys.argv[1:], open(sys.argv[1]).read()\n"
                f"sys.path.insert(0, '/solution')\nfrom reference import {run.__name__}\n"
                f"want = {run.__name__}(open('/app/data/accounts.csv').read(), [open(f).read() for f in sys.argv[2:]], "
                "fee=sys.argv[1])\nassert want == out, (want, out)\nEOF")
        t.expect_output(out, truth, "the report")

    def closing_case(self, t: TaskBuilder, branches: list[str], branch: str) -> None:
        """Level 0: closing balances, one sum per account (no posting order), fee on those below zero."""
        k, rng = t.knobs, t.rng
        for _ in range(50):  # some accounts of the branch close below zero, and some not
            accounts, txns = gen(rng, 0, k.accounts, k.txns, branches, rng.randrange(1, 10))
            close = {a["account"]: a["opening_balance"] for a in accounts if a["branch"] == branch}
            for tx in txns:
                if tx["account"] in close:
                    close[tx["account"]] += tx["amount"]
            if 0 < sum(c < 0 for c in close.values()) < len(close):
                break
        else:
            raise FamilyError("csv_overdraft_ledger: no branch with some accounts below zero in 50 draws")
        atext, rendered = render(rng, 0, accounts, txns)
        t.add_file("/app/data/accounts.csv", atext)
        t.add_file("/app/data/ledger.csv", ledger_csv(rendered, COLS))
        t.say("Our core banking export is in `/app/data/`: the accounts in `/app/data/accounts.csv` (`account`, "
              "`branch`, `opening_balance`) and the transactions in `/app/data/ledger.csv` (`txn_id`, `account`, "
              "`posted_at`, `amount`, `status`). An account's closing balance is its `opening_balance` plus the sum "
              "of its transactions' `amount`s (signed: negative amounts are debits). An account that closes below "
              "zero is charged the overdraft fee given below once (in cents; it is not in the export), which "
              f"lowers its closing balance by that much. I need the accounts of branch `{branch}` that close "
              "below zero.\n\nReport format: CSV without a header, `account,closing_balance` per such account, "
              "the balance fee included, with exactly two decimals (e.g. `-1250.50`); sorted by account.")
        fee = unseen(t, fee_draw(rng))
        truth = "".join(f"{a},-{(fee_c := int(fee) - c) // 100}.{fee_c % 100:02d}\n"
                        for a, c in sorted(close.items()) if c < 0)
        v = t.deliver(fee, "the overdraft fee in cents")
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\n'
                f"awk -F, -v fee=\"{v}\" -v br={branch} 'NR == FNR {{ if (FNR > 1 && $2 == br) "
                'bal[$1] = sprintf("%.0f", $3 * 100) + 0; next } '
                'FNR > 1 && ($2 in bal) { bal[$2] += sprintf("%.0f", $4 * 100) } '
                'END { for (a in bal) if (bal[a] < 0) { c = -bal[a] + fee; '
                'printf "%s,-%d.%02d\\n", a, int(c / 100), c % 100 } }\' '
                "/app/data/accounts.csv /app/data/ledger.csv | LC_ALL=C sort > /app/out/overdrafts.csv")
        t.expect_output("/app/out/overdrafts.csv", truth, "the report")


OVERDRAFT_CTE = """WITH t AS (
  SELECT txn_id, account, posted_at, amount, status FROM ledger GROUP BY txn_id
),
a AS (
  SELECT account, branch,
         CAST(ROUND(CAST(replace(opening_balance, ',', '') AS REAL) * 100) AS INTEGER) AS open_c,
         CAST(ROUND(CAST(replace(COALESCE(overdraft_limit, '0'), ',', '') AS REAL) * 100) AS INTEGER) AS lim
  FROM accounts
),
p AS (
  SELECT t.account, CAST(t.txn_id AS INTEGER) AS id, t.posted_at,
         CAST(ROUND(CAST(replace(t.amount, ',', '') AS REAL) * 100) AS INTEGER) AS c
  FROM t JOIN a ON a.account = t.account
  WHERE lower(t.status) = 'posted' AND a.branch = '@BRANCH@'
),
r AS (
  SELECT p.account, p.id, p.posted_at, a.lim,
         a.open_c + SUM(p.c) OVER (PARTITION BY p.account ORDER BY p.posted_at, p.id
                                   ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS bal
  FROM p JOIN a ON a.account = p.account
)
"""
OVERDRAFT_SQL = OVERDRAFT_CTE + """SELECT account,
       (SELECT r2.id FROM r r2 WHERE r2.account = r.account AND r2.bal < -r2.lim
        ORDER BY r2.posted_at, r2.id LIMIT 1),
       printf('%.2f', (MIN(bal) - @@FEE@@) / 100.0)
FROM r GROUP BY account HAVING SUM(bal < -lim) > 0 ORDER BY account;
"""
# The other variants' SQL: f keys each overdrawn account's first overdrawing transaction (posted_at, then
# the zero-padded txn_id), so the fee counts in every balance at or after it.
FIRST_OVER = """,
f AS (SELECT account, MIN(posted_at || printf('%012d', id)) AS k FROM r WHERE bal < -lim GROUP BY account)
"""
VARIANT_SQL = {"statement": OVERDRAFT_CTE + FIRST_OVER + """SELECT r.account, r.id,
       printf('%.2f', (r.bal - @@FEE@@) / 100.0)
FROM r JOIN f ON f.account = r.account
WHERE r.posted_at || printf('%012d', r.id) >= f.k
ORDER BY r.account, r.posted_at, r.id;
""", "recovery": OVERDRAFT_CTE + FIRST_OVER + """,
back AS (
  SELECT r.account, MIN(r.posted_at || printf('%012d', r.id)) AS k
  FROM r JOIN f ON f.account = r.account
  WHERE r.posted_at || printf('%012d', r.id) > f.k AND r.bal - @@FEE@@ >= -r.lim
  GROUP BY r.account
),
last AS (
  SELECT account, bal FROM (
    SELECT account, bal, ROW_NUMBER() OVER (PARTITION BY account ORDER BY posted_at DESC, id DESC) AS rn FROM r
  ) WHERE rn = 1
)
SELECT f.account, COALESCE(CAST(substr(back.k, -12) AS INTEGER), '-'), printf('%.2f', (last.bal - @@FEE@@) / 100.0)
FROM f JOIN last ON last.account = f.account LEFT JOIN back ON back.account = f.account
ORDER BY last.bal, f.account;
"""}
