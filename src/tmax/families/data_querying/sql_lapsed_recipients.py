"""Who got the campaign mailing but never ordered afterwards, and how many days has it been since, as of
the report date (handed over through the fixture channel)? An anti-join over a CRM database with the
classic traps: guest orders with NULL customer ids (NOT IN returns nothing), cancelled orders, deleted
accounts, repeated sends, duplicate accounts that differ only in e-mail case, and timestamps with
UTC offsets that must be compared as instants. Variants: the lapsed recipients with their days waiting
(NOT EXISTS); the converted ones as of the report date with the hours from send to first order (a
correlated MIN); and every campaign's recipients and conversions as of that date (a GROUP BY over
campaigns with a counted EXISTS)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from tmax.families import sql as dbsql
from tmax.families.base import Family, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.unseen import distinct, unseen

REFERENCE = r'''
import sqlite3
import sys
from datetime import datetime, timezone


def instant(text):
    d = datetime.fromisoformat(text)
    if d.tzinfo is None:
        d = d.replace(tzinfo=timezone.utc)
    return d.timestamp()


def midnight(day):
    """00:00 UTC on day (YYYYMMDD) as a timestamp."""
    return datetime.strptime(day, "%Y%m%d").replace(tzinfo=timezone.utc).timestamp()


def people(conn):
    """customer id -> person (trimmed, lower-cased e-mail) of every account not deleted."""
    person = {}
    for cid, email, deleted in conn.execute("SELECT id, email, deleted_at FROM customers"):
        if deleted is None:
            person[cid] = email.strip(" ").lower()
    return person


def first_sends(conn, person, code, before=float("inf")):
    """person -> the instant of their first send of campaign code (among those before ``before``)."""
    first = {}
    for ccode, cid, sent in conn.execute("SELECT campaign_code, customer_id, sent_at FROM campaign_sends"):
        if ccode.upper() != code or cid not in person or instant(sent) >= before:
            continue
        p, ts = person[cid], instant(sent)
        if p not in first or ts < first[p]:
            first[p] = ts
    return first


def first_orders(conn, person, first, before=float("inf")):
    """person -> their first counting order at or after their first send (and before ``before``)."""
    out = {}
    for cid, placed, status in conn.execute("SELECT customer_id, placed_at, status FROM orders"):
        if cid is None or cid not in person or status.lower() == "cancelled":
            continue
        p, ts = person[cid], instant(placed)
        if p in first and first[p] <= ts < before and (p not in out or ts < out[p]):
            out[p] = ts
    return out


def lapsed(conn, code, day):
    """day: the report date as YYYYMMDD; each lapsed person with the whole days from their first send
    to 00:00 UTC that day."""
    asof, person = midnight(day), people(conn)
    first = first_sends(conn, person, code)
    ordered = first_orders(conn, person, first)
    return "".join(f"{p},{int((asof - first[p]) // 86400)}\n" for p in sorted(first) if p not in ordered)


def converted(conn, code, day):
    """Each person converted before 00:00 UTC on day, with the whole hours from first send to first order."""
    person = people(conn)
    first = first_sends(conn, person, code)
    ordered = first_orders(conn, person, first, midnight(day))
    return "".join(f"{p},{int((ordered[p] - first[p]) // 3600)}\n" for p in sorted(ordered))


def by_campaign(conn, code, day):
    """Every campaign (code is not used): its recipients and those converted, both before 00:00 UTC on day."""
    person, asof, out = people(conn), midnight(day), []
    for (c,) in conn.execute("SELECT code FROM campaigns ORDER BY code"):
        first = first_sends(conn, person, c.upper(), asof)
        if first:
            out.append(f"{c.upper()},{len(first)},{len(first_orders(conn, person, first, asof))}\n")
    return "".join(sorted(out))


if __name__ == "__main__":
    report = {"lapsed": lapsed, "converted": converted, "by_campaign": by_campaign}[sys.argv[1]]
    sys.stdout.write(report(sqlite3.connect(sys.argv[2]), sys.argv[3], sys.argv[4]))
'''

# The oracle's queries; @@DAY@@ is replaced by the delivered report date at solve time.
DAY = "unixepoch(substr('@@DAY@@', 1, 4) || '-' || substr('@@DAY@@', 5, 2) || '-' || substr('@@DAY@@', 7, 2))"
ACCOUNTS = """WITH acct AS (
  SELECT id, lower(trim(email)) AS person FROM customers WHERE deleted_at IS NULL
),
first_send AS (
  SELECT upper(s.campaign_code) AS code, a.person, MIN(unixepoch(s.sent_at)) AS t
  FROM campaign_sends s JOIN acct a ON a.id = s.customer_id
  @WHERE@
  GROUP BY 1, 2
)
"""
# An order that converts the person of first send f (before @BEFORE@).
CONVERTS = ("o JOIN acct a ON a.id = o.customer_id\n  WHERE a.person = f.person AND lower(o.status) <> 'cancelled' "
            "AND unixepoch(o.placed_at) >= f.t@BEFORE@")
QUERIES = {"lapsed": f"""SELECT f.person || ',' || (({DAY} - f.t) / 86400)
FROM first_send f
WHERE NOT EXISTS (
  SELECT 1 FROM orders {CONVERTS}
)
ORDER BY f.person;
""", "converted": f"""SELECT f.person || ',' || ((MIN(unixepoch(o.placed_at)) - f.t) / 3600)
FROM first_send f JOIN orders {CONVERTS}
GROUP BY f.person ORDER BY f.person;
""", "by_campaign": f"""SELECT f.code || ',' || COUNT(*) || ',' || SUM(EXISTS (
  SELECT 1 FROM orders {CONVERTS}
))
FROM first_send f GROUP BY f.code ORDER BY f.code;
"""}

FIRST = ["ada", "ben", "cara", "dev", "eli", "fay", "gus", "hana", "ivan", "jo", "kai", "lena", "milo", "nia",
         "omar", "pia", "quinn", "rosa", "sami", "tara", "umar", "vera", "wes", "xena", "yuri", "zoe"]
LAST = ["adams", "brook", "chen", "diaz", "evans", "fox", "garcia", "hill", "ito", "jones", "khan", "lopez",
        "moore", "ng", "ortiz", "patel", "reyes", "silva", "tanaka", "usman", "vogel", "wong", "young", "zhou"]
DOMAINS = ["example.com", "mail.test", "inbox.test", "post.example"]
OFFSETS = ["+02:00", "-05:00", "+05:30", "-08:00", "+09:00", "+00:00"]


def utc(d: datetime) -> str:
    return d.strftime("%Y-%m-%d %H:%M:%S")


@dataclass(frozen=True)
class Knobs:
    customers: int  # distinct people in the CRM
    traps: int  # 0-3: which traps the data has (deletions and guests, duplicate accounts, UTC offsets)


@register
class SqlLapsedRecipients(Family):
    name = "sql_lapsed_recipients"
    domain = "data_querying"
    skill_types = ("Relational Queries", "Temporal Queries")
    primitive_skills = ("anti-joins", "NULL semantics", "deduplication by key", "case-insensitive matching",
                        "multi-table joins", "timezone conversion", "date range filtering")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("lapsed", "converted", "by_campaign")
    levels = {0: Knobs(customers=15, traps=0), 1: Knobs(customers=40, traps=0), 2: Knobs(customers=90, traps=1),
              3: Knobs(customers=160, traps=2), 4: Knobs(customers=260, traps=3)}

    def output_case(self, t: TaskBuilder) -> None:
        k, rng, variant = t.knobs, t.rng, t.variant
        traps = k.traps
        codes = distinct(t.code, 4)
        code = codes[0]
        epoch = datetime(2025, 1, 1, tzinfo=timezone.utc) + timedelta(days=rng.randrange(300))
        customers, emails = [], set()
        cid = 0
        for _ in range(k.customers):
            email = distinct(lambda: f"{rng.choice(FIRST)}.{rng.choice(LAST)}{rng.randrange(10, 100)}@"
                             f"{rng.choice(DOMAINS)}", 1, emails)[0]
            emails.add(email)
            copies = 2 if traps >= 2 and rng.random() < 0.12 else 1
            for n in range(copies):
                cid += 1
                stored = email
                if traps >= 2 and (n > 0 or rng.random() < 0.2):
                    local, dom = email.split("@")
                    stored = rng.choice([local.title(), local.upper(), local]) + "@" + rng.choice([dom, dom.upper()])
                    if rng.random() < 0.4:
                        stored = " " + stored if rng.random() < 0.5 else stored + " "
                first, last = email.split("@")[0].rstrip("0123456789").split(".")
                signed = epoch - timedelta(days=rng.randrange(30, 700), seconds=rng.randrange(86400))
                deleted = None
                if traps >= 1 and rng.random() < 0.08:
                    deleted = utc(epoch - timedelta(days=rng.randrange(-20, 25), seconds=rng.randrange(86400)))
                customers.append((cid, stored, f"{first.title()} {last.title()}", utc(signed), deleted))
        campaigns = [(c, f"{rng.choice(['Spring', 'Summer', 'Autumn', 'Winter', 'Flash'])} mailing {i + 1}",
                      (epoch + timedelta(days=rng.randrange(-60, 60) if i else 0)).strftime("%Y-%m-%d"))
                     for i, c in enumerate(codes)]
        sends = []
        sent_at: dict = {}
        for cust in customers:
            for i, c in enumerate(codes):
                if rng.random() < (0.6 if i == 0 else 0.3):
                    base = epoch + timedelta(days=rng.randrange(2) if i == 0 else rng.randrange(-60, 60),
                                             seconds=rng.randrange(86400))
                    sends.append([c, cust[0], base])
                    if i == 0:
                        sent_at.setdefault(cust[0], base)
                    if traps >= 1 and i == 0 and rng.random() < 0.1:  # a resend a few days later
                        sends.append([c, cust[0], base + timedelta(days=rng.randrange(1, 6))])
        if traps >= 3:
            for s in sends:
                s[0] = rng.choice([s[0], s[0], s[0].lower(), s[0].title()])
        orders = []

        def stamp(d: datetime) -> str:
            if traps >= 3 and rng.random() < 0.6:
                off = rng.choice(OFFSETS)
                sign = 1 if off[0] == "+" else -1
                delta = timedelta(hours=int(off[1:3]), minutes=int(off[4:6])) * sign
                return (d + delta).strftime("%Y-%m-%dT%H:%M:%S") + off
            return utc(d)

        statuses = ["completed", "shipped", "completed"] + (["cancelled"] if traps >= 1 else [])
        for cust in customers:
            cid = cust[0]
            for _ in range(rng.choice([0, 0, 1, 1, 2, 3])):
                when = epoch + timedelta(days=rng.randrange(-40, 40), seconds=rng.randrange(86400))
                orders.append([cid, when, rng.choice(statuses)])
            if cid in sent_at and rng.random() < 0.25:  # orders close to the send: boundaries matter
                gap = rng.choice([0, 0, -1, 1, -3600 * 3, 3600 * 4, -60, 7200])
                orders.append([cid, sent_at[cid] + timedelta(seconds=gap), rng.choice(statuses)])
        if traps >= 1:
            for _ in range(max(3, len(orders) // 12)):
                orders.append([None, epoch + timedelta(days=rng.randrange(-40, 40), seconds=rng.randrange(86400)),
                               "completed"])
        rng.shuffle(orders)
        order_rows = []
        for i, (ocid, when, status) in enumerate(orders):
            if traps >= 2:
                status = rng.choice([status, status, status.upper(), status.title()])
            order_rows.append((i + 1, ocid, stamp(when), status, rng.randrange(500, 40000)))
        rng.shuffle(sends)
        send_rows = [(i + 1, c, cust, utc(when)) for i, (c, cust, when) in enumerate(sends)]
        schema = ("CREATE TABLE customers (id INTEGER PRIMARY KEY, email TEXT NOT NULL, full_name TEXT NOT NULL, "
                  "signed_up_at TEXT NOT NULL, deleted_at TEXT);\n"
                  "CREATE TABLE campaigns (code TEXT PRIMARY KEY, name TEXT NOT NULL, launched_on TEXT NOT NULL);\n"
                  "CREATE TABLE campaign_sends (id INTEGER PRIMARY KEY, campaign_code TEXT NOT NULL, "
                  "customer_id INTEGER NOT NULL REFERENCES customers(id), sent_at TEXT NOT NULL);\n"
                  "CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER REFERENCES customers(id), "
                  "placed_at TEXT NOT NULL, status TEXT NOT NULL, total_cents INTEGER NOT NULL);\n")
        sql = dbsql.script(schema, {"customers": customers, "campaigns": campaigns, "campaign_sends": send_rows,
                                    "orders": order_rows})
        dbsql.ship(t, sql, "/app/db/crm.db")

        one = variant != "by_campaign"
        rules = [f"A recipient of {'the' if one else 'a'} campaign is a customer with a row for it in "
                 "`campaign_sends`" + ("." if one else " sent before 00:00 UTC on the report date (given below, as "
                                       "YYYYMMDD); a campaign nobody was mailed by then is left out.")
                 + (" Some customers were mailed more than once; their first send is the one that counts."
                    if traps >= 1 else "")
                 + (" Campaign codes in `campaign_sends` were keyed in by hand, in any letter case." if traps >= 3
                    else ""),
                 "A recipient has converted if they placed an order at or after the moment the mailing was sent "
                 "to them (an order at exactly the same second counts)"
                 + ("." if variant == "lapsed" else ", and before 00:00 UTC on the report date"
                    + (" (given below, as YYYYMMDD)" if one else "") + ": the figures are as of that moment.")
                 + (" Cancelled orders do not count" + (" (the status column's letter case is inconsistent)"
                                                         if traps >= 2 else "") + "." if traps >= 1 else "")]
        if traps >= 1:
            rules.append("Deleted customers (`deleted_at` set) are ignored entirely, as are guest orders "
                         "(orders without a customer).")
        if traps >= 2:
            rules.append("Some people have several customer accounts; accounts whose e-mail addresses are equal "
                         "once trimmed of spaces and lower-cased are one person. A person is a recipient if any "
                         "of their accounts is, their first send is the earliest over those accounts, and they have "
                         "converted if any of their accounts ordered at or after it."
                         + ("" if one else " Each campaign counts a person once."))
        if traps >= 3:
            rules.append("Timestamps are not all in UTC: `sent_at` is UTC, `placed_at` is either UTC (no suffix) or "
                         "local time with an explicit UTC offset such as `+05:30`. Compare instants, not strings.")
        else:
            rules.append("All timestamps are UTC.")
        address = "the e-mail address " + ("(trimmed and lower-cased) " if traps >= 2 else "")
        if variant == "lapsed":
            rules.append("The list is for the win-back team, who want to know how long each person has been "
                         "waiting: the number of whole days (rounded down) from their first send to 00:00 UTC on "
                         "the report date (given below, as YYYYMMDD; it is later than everything in the database).")
            ask = f"For the campaign `{code}`, I need everyone who received the mailing but has not ordered since."
            fmt = ("one line per recipient who did not convert, `email,days`: " + address
                   + "and the days since their first send; each address once, sorted by address in byte order")
        elif variant == "converted":
            ask = f"For the campaign `{code}`, I need everyone the mailing converted, and how quickly."
            fmt = ("one line per recipient who converted, `email,hours`: " + address + "and the whole hours "
                   "(rounded down) from their first send to their first order that converts them; each address "
                   "once, sorted by address in byte order")
        else:
            ask = "I need every campaign's reach and conversions, for the campaign scoreboard."
            fmt = ("one line per campaign with recipients, `CODE,recipients,converted`: the campaign code in capitals, "
                   "the number of recipients (people, not sends) and how many of them converted; sorted by code "
                   "in byte order")
        t.say("Our CRM lives in the SQLite database `/app/db/crm.db` (tables `customers`, `campaigns`, "
              f"`campaign_sends`, `orders`). {ask}\n\n" + "\n".join(f"- {r}" for r in rules) + "\n\n"
              f"Output: {fmt}, nothing else.")

        def report_day() -> str:
            if variant != "lapsed":  # inside the orders' span (the epoch +- 40 days), so the date matters
                return (epoch + timedelta(days=rng.randrange(4, 38))).strftime("%Y%m%d")
            # after every timestamp in the data: sends and orders end about 60 days after the epoch
            return (epoch + timedelta(days=rng.randrange(70, 400))).strftime("%Y%m%d")

        conn, report = dbsql.in_memory(sql), run_python(REFERENCE)[variant]
        for _ in range(50):  # an early report date can leave a small CRM without a conversion yet
            day = unseen(t, report_day)
            truth = report(conn, code, day)
            if truth:
                break
        conn.close()
        v = t.deliver(day, "the report date as YYYYMMDD")
        query = fill(ACCOUNTS + QUERIES[variant],
                     WHERE=f"WHERE upper(s.campaign_code) = '{code}'" if one else f"WHERE unixepoch(s.sent_at) < {DAY}",
                     BEFORE="" if variant == "lapsed" else f" AND unixepoch(o.placed_at) < {DAY}")
        t.add_solution_file(f"{variant}.sql", query)
        t.add_solution_file("reference.py", REFERENCE)
        out = f"/app/out/{variant}.txt"
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\n'
                f'sed "s/@@DAY@@/{v}/g" /solution/{variant}.sql | sqlite3 -batch -noheader /app/db/crm.db > {out}\n'
                f'python3 /solution/reference.py {variant} /app/db/crm.db "{code}" "{v}" | cmp - {out}')
        t.expect_output(out, truth, "the list")
