"""Who got the campaign mailing but never ordered afterwards, and how many days has it been since, as of
the report date (handed over through the fixture channel)? An anti-join over a CRM database with the
classic traps: guest orders with NULL customer ids (NOT IN returns nothing), cancelled orders, deleted
accounts, repeated sends, duplicate accounts that differ only in e-mail case, and timestamps with
UTC offsets that must be compared as instants."""

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


def lapsed(conn, code, day):
    """day: the report date as YYYYMMDD; each lapsed person with the whole days from their first send
    to 00:00 UTC that day."""
    asof = datetime.strptime(day, "%Y%m%d").replace(tzinfo=timezone.utc).timestamp()
    person = {}
    for cid, email, deleted in conn.execute("SELECT id, email, deleted_at FROM customers"):
        if deleted is None:
            person[cid] = email.strip(" ").lower()
    first = {}
    for ccode, cid, sent in conn.execute("SELECT campaign_code, customer_id, sent_at FROM campaign_sends"):
        if ccode.upper() != code or cid not in person:
            continue
        p, ts = person[cid], instant(sent)
        if p not in first or ts < first[p]:
            first[p] = ts
    ordered = {}
    for cid, placed, status in conn.execute("SELECT customer_id, placed_at, status FROM orders"):
        if cid is None or cid not in person or status.lower() == "cancelled":
            continue
        p = person[cid]
        if p in first and instant(placed) >= first[p]:
            ordered[p] = True
    return "".join(f"{p},{int((asof - first[p]) // 86400)}\n" for p in sorted(first) if p not in ordered)


if __name__ == "__main__":
    sys.stdout.write(lapsed(sqlite3.connect(sys.argv[1]), sys.argv[2], sys.argv[3]))
'''

QUERY = """WITH acct AS (
  SELECT id, lower(trim(email)) AS person FROM customers WHERE deleted_at IS NULL
),
first_send AS (
  SELECT a.person, MIN(unixepoch(s.sent_at)) AS t
  FROM campaign_sends s JOIN acct a ON a.id = s.customer_id
  WHERE upper(s.campaign_code) = '@CODE@'
  GROUP BY a.person
)
SELECT f.person || ',' || ((unixepoch(substr('@@DAY@@', 1, 4) || '-' || substr('@@DAY@@', 5, 2) || '-' ||
                               substr('@@DAY@@', 7, 2)) - f.t) / 86400)
FROM first_send f
WHERE NOT EXISTS (
  SELECT 1 FROM orders o JOIN acct a ON a.id = o.customer_id
  WHERE a.person = f.person AND lower(o.status) <> 'cancelled' AND unixepoch(o.placed_at) >= f.t
)
ORDER BY f.person;
"""

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
    levels = {0: Knobs(customers=15, traps=0), 1: Knobs(customers=40, traps=0), 2: Knobs(customers=90, traps=1),
              3: Knobs(customers=160, traps=2), 4: Knobs(customers=260, traps=3)}

    def output_case(self, t: TaskBuilder) -> None:
        k, rng = t.knobs, t.rng
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

        rules = ["A recipient is a customer with a row for the campaign in `campaign_sends`."
                 + (" Some customers were mailed more than once; their first send is the one that counts."
                    if traps >= 1 else "")
                 + (" Campaign codes in `campaign_sends` were keyed in by hand, in any letter case." if traps >= 3
                    else ""),
                 "A recipient has converted if they placed an order at or after the moment the mailing was sent "
                 "to them (an order at exactly the same second counts)."
                 + (" Cancelled orders do not count" + (" (the status column's letter case is inconsistent)"
                                                         if traps >= 2 else "") + "." if traps >= 1 else "")]
        if traps >= 1:
            rules.append("Deleted customers (`deleted_at` set) are ignored entirely, as are guest orders "
                         "(orders without a customer).")
        if traps >= 2:
            rules.append("Some people have several customer accounts; accounts whose e-mail addresses are equal "
                         "once trimmed of spaces and lower-cased are one person. A person is a recipient if any "
                         "of their accounts is, their first send is the earliest over those accounts, and they have "
                         "converted if any of their accounts ordered at or after it.")
        if traps >= 3:
            rules.append("Timestamps are not all in UTC: `sent_at` is UTC, `placed_at` is either UTC (no suffix) or "
                         "local time with an explicit UTC offset such as `+05:30`. Compare instants, not strings.")
        else:
            rules.append("All timestamps are UTC.")
        rules.append("The list is for the win-back team, who want to know how long each person has been "
                     "waiting: the number of whole days (rounded down) from their first send to 00:00 UTC on the "
                     "report date (given below, as YYYYMMDD; it is later than everything in the database).")
        t.say("Our CRM lives in the SQLite database `/app/db/crm.db` (tables `customers`, `campaigns`, "
              f"`campaign_sends`, `orders`). For the campaign `{code}`, I need everyone who received the mailing "
              "but has not ordered since.\n\n" + "\n".join(f"- {r}" for r in rules) + "\n\n"
              "Output: one line per recipient who did not convert, `email,days`: the e-mail address "
              + ("(trimmed and lower-cased) " if traps >= 2 else "")
              + "and the days since their first send; each address once, sorted by address in byte order, "
              "nothing else.")

        def report_day() -> str:
            # after every timestamp in the data: sends and orders end about 60 days after the epoch
            return (epoch + timedelta(days=rng.randrange(70, 400))).strftime("%Y%m%d")

        day = unseen(t, report_day)
        conn = dbsql.in_memory(sql)
        truth = run_python(REFERENCE)["lapsed"](conn, code, day)
        conn.close()
        v = t.deliver(day, "the report date as YYYYMMDD")
        t.add_solution_file("lapsed.sql", fill(QUERY, CODE=code))
        t.add_solution_file("reference.py", REFERENCE)
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\n'
                f'sed "s/@@DAY@@/{v}/g" /solution/lapsed.sql | sqlite3 -batch -noheader /app/db/crm.db '
                "> /app/out/lapsed.txt\n"
                f'python3 /solution/reference.py /app/db/crm.db "{code}" "{v}" | cmp - /app/out/lapsed.txt')
        t.expect_output("/app/out/lapsed.txt", truth, "the list")
