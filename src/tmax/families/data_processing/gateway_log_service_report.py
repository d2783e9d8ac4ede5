"""One client's gateway traffic, from raw access logs to a per-team report. Three stages, each feeding
the next: extract the client's requests from rotated (partly gzipped) access logs, where the client
shows only as a daily-rotating pseudonym of its ID (the delivered value); load them into SQLite beside
the service catalogue and aggregate them per service (longest-prefix routing, retired routes at the
top level); turn the aggregate into a CSV report. Variants differ in the aggregate and the report: a
bandwidth chargeback per team, an availability check against each service's target, or each team's
busiest paths with their mean response time."""

from __future__ import annotations

import datetime
from dataclasses import dataclass

from tmax.families import sql as dbsql
from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.data_processing.log_error_paths import MONTHS, pseudonym
from tmax.families.programs import fill, run_python
from tmax.families.unseen import distinct, unseen

REFERENCE = r'''
import gzip
import hashlib
import os
import re
import sqlite3
import sys

CLIENT = "@@CLIENT@@"
VARIANT = "@VARIANT@"
STAGES = @STAGES@  # 1: extract only; 2: and aggregate per service; 3: and the team report
SKIP_OPTIONS = @SKIP_OPTIONS@
HEADER = @HEADER@
LINE = re.compile(r'^\S+ \S+ \S+ \[(\d\d)/(\w{3})/(\d{4}):[^\]]*\] "(\S+) (\S+) [^"]*" (\d{3}) (\d+) "[^"]*" '
                  r'rt=(\d+)\.(\d{3}) client=(\S+)$')
MONTHS = {m: i + 1 for i, m in enumerate("Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split())}
# Stage 2: each request's service is its longest route prefix still in force on the request's date.
ROUTED = """CREATE TEMP VIEW routed AS
SELECT q.*, s.name AS service, s.cents_per_mb, s.slo_bp, t.name AS team FROM (
  SELECT q.*, (SELECT r.service_id FROM routes r
               WHERE substr(q.path, 1, length(r.prefix)) = r.prefix AND (r.retired_on IS NULL OR q.day < r.retired_on)
               ORDER BY length(r.prefix) DESC LIMIT 1) AS sid
  FROM req q) q
JOIN services s ON s.id = q.sid JOIN teams t ON t.id = s.team_id"""
AGGREGATE = {
    "chargeback": "SELECT service, team, COUNT(*), SUM(bytes), SUM(bytes) * cents_per_mb FROM routed GROUP BY service",
    "availability": "SELECT service, team, COUNT(*), SUM(status >= 500), slo_bp FROM routed GROUP BY service",
    "top_paths": "SELECT service, team, path, COUNT(*), SUM(ms) FROM routed GROUP BY service, path",
}


def extract(texts, client):
    """Stage 1: the client's requests as (date, method, path, status, bytes, ms)."""
    out, tokens = [], {}
    for text in texts:
        for line in text.splitlines():
            m = LINE.match(line)
            if not m or m.group(2) not in MONTHS:
                continue
            day = f"{m.group(3)}-{MONTHS[m.group(2)]:02d}-{m.group(1)}"
            if day not in tokens:
                tokens[day] = hashlib.sha256(f"{client}:{day}".encode()).hexdigest()[:12]
            if m.group(10) != tokens[day] or (SKIP_OPTIONS and m.group(4) == "OPTIONS"):
                continue
            out.append((day, m.group(4), m.group(5).split("?")[0], int(m.group(6)), int(m.group(7)),
                        int(m.group(8)) * 1000 + int(m.group(9))))
    return out


def quote(s):
    return '"' + s.replace('"', '""') + '"' if ("," in s or '"' in s) else s


def half_up(num, den):
    return (2 * num + den) // (2 * den)


def report(rows, conn):
    """Stage 3 (or stage 2's aggregate where the job stops there)."""
    if STAGES == 1:
        if VARIANT == "chargeback":
            return f"{sum(r[4] for r in rows)}\n"
        if VARIANT == "availability":
            return f"{sum(r[3] >= 500 for r in rows)}\n"
        return "".join(p + "\n" for p in sorted({r[2] for r in rows}))
    conn.execute("CREATE TEMP TABLE req (day TEXT, method TEXT, path TEXT, status INTEGER, bytes INTEGER, ms INTEGER)")
    conn.executemany("INSERT INTO req VALUES (?, ?, ?, ?, ?, ?)", rows)
    conn.execute(ROUTED)
    agg = sorted(conn.execute(AGGREGATE[VARIANT]).fetchall())
    out = []
    if STAGES == 2:
        for a in agg:
            out.append(f"{a[0]},{a[2]},{a[3]}")  # service, then requests and bytes/errors, or path and requests
        return "".join(line + "\n" for line in out)
    if VARIANT == "chargeback":
        teams = {}
        for service, team, n, nbytes, cost in agg:
            got = teams.setdefault(team, [0, 0, 0])
            got[0] += n
            got[1] += nbytes
            got[2] += cost
        if HEADER:
            out.append("team,requests,bytes,cost")
        for team, (n, nbytes, cost) in sorted(teams.items(), key=lambda kv: (-half_up(kv[1][2], 10 ** 6), kv[0])):
            cents = half_up(cost, 10 ** 6)
            out.append(f"{quote(team)},{n},{nbytes},{cents // 100}.{cents % 100:02d}")
    elif VARIANT == "availability":
        if HEADER:
            out.append("service,team,requests,errors,availability,status")
        for service, team, n, errors, slo in agg:
            bp = half_up(10000 * (n - errors), n)
            status = "BREACH" if (n - errors) * 10000 < slo * n else "OK"
            out.append(f"{service},{quote(team)},{n},{errors},{bp // 100}.{bp % 100:02d},{status}")
    else:
        teams = {}
        for service, team, path, n, ms in agg:
            teams.setdefault(team, []).append((-n, path, service, ms))
        if HEADER:
            out.append("team,rank,path,service,requests,avg_ms")
        for team in sorted(teams):
            for rank, (n, path, service, ms) in enumerate(sorted(teams[team])[:2], 1):
                out.append(f"{quote(team)},{rank},{path},{service},{-n},{half_up(ms, -n)}")
    return "".join(line + "\n" for line in out)


def pipeline(texts, client, conn):
    return report(extract(texts, client), conn)


if __name__ == "__main__":
    client, logs, db = sys.argv[1], sys.argv[2], sys.argv[3]
    texts = []
    for name in sorted(os.listdir(logs)):
        opener = gzip.open if name.endswith(".gz") else open
        with opener(os.path.join(logs, name), "rt") as f:
            texts.append(f.read())
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True) if STAGES > 1 else None  # no catalogue at stage 1
    sys.stdout.write(pipeline(texts, client, conn))
'''

# (concrete path, the first trap level it appears at). Query strings are added at random from traps 1.
PATHS = [("/api/v1/orders", 0), ("/api/v1/orders/recent", 0), ("/api/v1/users", 0), ("/api/v1/users/me", 0),
         ("/api/v1/cart", 0), ("/checkout", 0), ("/search", 0), ("/api/v2/payments", 0),
         ("/api/v2/payments/refund", 0), ("/api/v2/invoices", 0), ("/api/v2/invoices/pdf", 0),
         ("/api/v1/products", 0), ("/api/v1/products/featured", 0), ("/login", 0), ("/logout", 0),
         ("/static/app.js", 0), ("/healthz", 1), ("/metrics", 1), ("/api/v1/orders/export", 2),
         ("/api/v1/reviews", 2)]
# (prefix, service, first trap level): longer prefixes and a catch-all from traps 2.
ROUTES = [("/api/v1/orders", "orders", 0), ("/api/v1/users", "users", 0), ("/api/v1/cart", "cart", 0),
          ("/checkout", "cart", 0), ("/search", "search", 0), ("/api/v2/payments", "payments", 0),
          ("/api/v2/invoices", "invoices", 0), ("/api/v1/products", "catalog", 0), ("/login", "auth", 0),
          ("/logout", "auth", 0), ("/static/", "static", 0), ("/api/v1/orders/export", "reports", 2),
          ("/api/v1/users/me", "auth", 2), ("/api", "edge", 2), ("/api/v2", "payments", 3)]
TEAMS = ["Checkout", "Identity", "Discovery", "Platform", "Growth", "Storefront"]
COMMA_TEAMS = ["Payments, Billing & Tax", "Data, Search & Ranking"]
AGENTS = ["curl/8.4.0", "Mozilla/5.0 (X11; Linux x86_64)", "python-requests/2.31", "Go-http-client/1.1"]
METHODS = ["GET", "GET", "GET", "GET", "POST", "PUT", "DELETE"]
SCHEMA = ("CREATE TABLE teams (id INTEGER PRIMARY KEY, name TEXT NOT NULL);\n"
          "CREATE TABLE services (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, team_id INTEGER NOT NULL "
          "REFERENCES teams(id), cents_per_mb INTEGER NOT NULL, slo_bp INTEGER NOT NULL);\n"
          "CREATE TABLE routes (prefix TEXT NOT NULL, service_id INTEGER NOT NULL REFERENCES services(id), "
          "retired_on TEXT);\n")
PSEUDO = ("The client appears in the logs only as a pseudonym: the `client=` field holds the first 12 hex digits "
          "(lowercase) of the SHA-256 of the text `<client ID>:<date>`, with the request's date as `YYYY-MM-DD` "
          "(timestamps are UTC), so the token changes every day.")
QUOTE = ("a team name containing a comma is enclosed in double quotes (CSV style)")
STEP2 = {"chargeback": "the number of requests and the sum of the response bytes",
         "availability": "the number of requests and the number of server errors (status 500 and above)",
         "top_paths": "per path: the number of requests and the total response time in milliseconds"}
STEP2_OUT = {"chargeback": "`service,requests,bytes`", "availability": "`service,requests,errors`",
             "top_paths": "`service,path,requests` (one line per service and path)"}
STEP3 = {
    "chargeback": ("Charge each team for its services' traffic: a service's traffic costs its `cents_per_mb` cents "
                   "per megabyte (1 MB = 1000000 bytes, so bytes x cents_per_mb / 1000000 cents, not rounded per "
                   "service); a team's cost is the sum over its services, rounded to whole cents (halves up) only "
                   "at the end. One line per team with traffic: `team,requests,bytes,cost`, the cost in currency "
                   "units with exactly two decimals (e.g. `12.05`), sorted by cost (highest first), ties by team "
                   "name in byte order"),
    "availability": ("Check each service against its availability target `slo_bp` (basis points: 9950 means "
                     "99.50%); availability is the share of its requests that were not server errors. One line per "
                     "service with traffic: `service,team,requests,errors,availability,status`, the availability as "
                     "a percentage with exactly two decimals, rounded half up (e.g. `99.47`), and the status "
                     "`BREACH` when the exact availability is below the target, else `OK`; sorted by service name"),
    "top_paths": ("Rank the paths of each team's services (one entry per service and path) by request count, highest "
                  "first, ties by path and then service in byte order, and keep each team's top two. One line per "
                  "kept entry: `team,rank,path,service,requests,avg_ms`, rank 1 or 2, avg_ms the mean response time "
                  "in whole milliseconds rounded half up; sorted by team name, then rank"),
}
HEADS = {"chargeback": "team,requests,bytes,cost", "availability": "service,team,requests,errors,availability,status",
         "top_paths": "team,rank,path,service,requests,avg_ms"}
ATOMIC = {"chargeback": ("the total number of response bytes (the number right after the status) over all of its "
                         "requests (one number)"),
          "availability": ("how many of its requests got a server error (status 500 or above: the number right "
                           "after the quoted request; one number)"),
          "top_paths": "the distinct paths it requested, one per line, sorted in byte order"}


@dataclass(frozen=True)
class Knobs:
    lines: int  # log lines in all
    days: int  # days the logs span
    files: int  # access.log and its rotations (from the third on gzipped)
    teams: int  # teams owning the services
    traps: int  # 1: noise lines, query strings, unrouted paths, commas in team names; 2: overlapping
    #             prefixes, a catch-all route, OPTIONS preflights, gzip; 3: a retired route


@register
class GatewayLogServiceReport(Family):
    name = "gateway_log_service_report"
    domain = "data_processing"
    skill_types = ("Text Processing", "Aggregation")
    primitive_skills = ("log parsing", "filtering by field", "joining two sources", "group-by counting",
                        "aggregation", "gzip decompression", "CSV quoting and escaping", "sorting with tie-breaks",
                        "longest-prefix matching", "loading records into SQLite")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("chargeback", "availability", "top_paths")
    stages = ("log_error_paths", "sql_top_per_group", "stock_count_reconcile")
    levels = {0: Knobs(lines=30, days=1, files=1, teams=3, traps=0),
              1: Knobs(lines=80, days=3, files=1, teams=3, traps=0),
              2: Knobs(lines=400, days=5, files=2, teams=4, traps=1),
              3: Knobs(lines=1500, days=7, files=3, teams=5, traps=2),
              4: Knobs(lines=3500, days=10, files=5, teams=6, traps=3)}

    def catalogue(self, t: TaskBuilder, start: datetime.date) -> str:
        """The catalogue database as an SQL script: teams own services, routes map prefixes to services."""
        k, rng = t.knobs, t.rng
        routes = [r for r in ROUTES if r[2] <= k.traps]
        services = sorted({s for _, s, _ in routes})
        names = rng.sample(TEAMS, k.teams - (1 if k.traps else 0)) + ([rng.choice(COMMA_TEAMS)] if k.traps else [])
        team_ids = rng.sample(range(1, 40), len(names))
        owner = [team_ids[i % len(names)] for i in range(len(services))]
        rng.shuffle(owner)
        sids = rng.sample(range(100, 999), len(services))
        sid = dict(zip(services, sids))
        svc_rows = [(sid[s], s, owner[i], rng.choice([15, 25, 40, 60, 90, 120]), rng.choice([9000, 9500, 9800, 9900]))
                    for i, s in enumerate(services)]
        retire = (start + datetime.timedelta(days=rng.randrange(2, k.days - 1))).isoformat() if k.traps >= 3 else None
        route_rows = [(p, sid[s], retire if p == "/api/v2/invoices" else None) for p, s, _ in routes]
        rng.shuffle(route_rows)
        return dbsql.script(SCHEMA, {"teams": sorted(zip(team_ids, names)), "services": sorted(svc_rows),
                                     "routes": route_rows})

    def logs(self, t: TaskBuilder, ids: list[str], start: datetime.date) -> list[str]:
        """The access log texts, oldest first (the client's share of the traffic is large)."""
        k, rng = t.knobs, t.rng
        paths = [p for p, lv in PATHS if lv <= k.traps]
        fail = {p: rng.choice([0.0, 0.0, 0.02, 0.06, 0.15, 0.3]) for p in paths}
        lines = []
        for i in range(k.lines):
            day = start + datetime.timedelta(days=i * k.days // k.lines)
            path = rng.choice(paths)
            status = rng.choice([500, 502, 503]) if rng.random() < fail[path] else rng.choice([200, 200, 201, 304, 404])
            method = "OPTIONS" if k.traps >= 2 and rng.random() < 0.08 else rng.choice(METHODS)
            query = f"?page={rng.randrange(1, 9)}" if k.traps and rng.random() < 0.2 else ""
            client = ids[0] if rng.random() < 0.4 else rng.choice(ids[1:])
            ip = f"10.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(1, 255)}"
            ts = (f"{day.day:02d}/{MONTHS[day.month - 1]}/{day.year}:{rng.randrange(24):02d}:{rng.randrange(60):02d}:"
                  f"{rng.randrange(60):02d} +0000")
            ms = rng.randrange(3, 2500)
            lines.append(f'{ip} - - [{ts}] "{method} {path}{query} HTTP/1.1" {status} {rng.randrange(200, 90000)} '
                         f'"{rng.choice(AGENTS)}" rt={ms // 1000}.{ms % 1000:03d} client={pseudonym(client, day)}')
            if k.traps and rng.random() < 0.02:
                lines.append(rng.choice([f"{ip} - - [garbled request {rng.randrange(10 ** 6)}",
                                         "upstream timed out (110: Connection timed out) while reading response"]))
        per = -(-len(lines) // k.files)
        return ["\n".join(lines[i * per:(i + 1) * per]) + "\n" for i in range(k.files)]

    def output_case(self, t: TaskBuilder) -> None:
        k, rng, lv, variant = t.knobs, t.rng, t.level, t.variant
        stages = min(lv + 1, 3)
        src = fill(REFERENCE, VARIANT=variant, STAGES=stages, SKIP_OPTIONS=k.traps >= 2,
                   HEADER=stages == 3 and not t.partial_credit)  # a constant header would earn partial credit
        ns = run_python(src)
        for _ in range(50):
            # The client ID is the delivered value: the logs hold only its daily pseudonyms, so any other ID
            # matches no line and the whole chain comes out empty. Drawn unseen in the instruction's text;
            # the logs (hex tokens) and the catalogue are only searched for it as text.
            ours = unseen(t, lambda: t.code(2), PSEUDO, *STEP3.values())
            ids = [ours, *distinct(lambda: t.code(2), 4, [ours])]
            start = datetime.date(2025, 1, 1) + datetime.timedelta(days=rng.randrange(600))
            catalogue = self.catalogue(t, start)
            texts = self.logs(t, ids, start)
            truth = ns["pipeline"](texts, ours, dbsql.in_memory(catalogue) if stages > 1 else None)
            enough = truth.count("\n") >= (1 if stages == 1 and variant != "top_paths" else 3)
            if enough and truth != "0\n" and not any(ours in x.upper() for x in [catalogue, *texts]):
                break
        else:
            raise FamilyError(f"family {self.name}: no logs with enough traffic of the client")
        names = ["access.log"] + [f"access.log.{i}" for i in range(1, k.files)]
        for i, (name, text) in enumerate(zip(names, reversed(texts))):  # access.log is the newest
            if i >= 2:
                t.add_file(f"/app/logs/{name}.src", text)
                t.add_setup(f"gzip -n /app/logs/{name}.src && mv /app/logs/{name}.src.gz /app/logs/{name}.gz")
            else:
                t.add_file(f"/app/logs/{name}", text)
        out = "/app/out/answer.txt" if stages == 1 else "/app/out/report.csv"
        if stages == 1:
            day = start.isoformat()
            t.say(f"`/app/logs/access.log` is our API gateway's access log of {day}. Its `client=` field holds the "
                  f"first 12 hex digits of the SHA-256 of the text `<client ID>:{day}` (`printf %s '<client "
                  f"ID>:{day}' | sha256sum | cut -c1-12`).")
            who = t.deliver(ours, "the client ID")
            t.say(f"For that client, write {ATOMIC[variant]} to `{out}`.")
        else:
            dbsql.ship(t, catalogue, "/app/db/catalog.sqlite")
            rotated = " (the older rotations are gzipped)" if k.files > 2 else ""
            t.say(f"Our API gateway's access logs are in `/app/logs/`: `access.log` and its rotations{rotated}. "
                  f"{PSEUDO}")
            who = t.deliver(ours, "the client ID")
            step1 = ("1. Extract every request of that client from all the logs: its date, method, path (without "
                     "any query string), status, response bytes (the number after the status) and response time "
                     "(`rt=`, seconds with three decimals; count it in whole milliseconds).")
            if k.traps:
                step1 += " Lines that do not parse are noise."
            if k.traps >= 2:
                step1 += " CORS preflights (method `OPTIONS`) are not traffic: drop them."
            step2 = ("2. Load them into SQLite next to the service catalogue `/app/db/catalog.sqlite` (tables "
                     "`teams`, `services`, `routes`) and route each request: it belongs to the service of the "
                     "route whose `prefix` is the longest one that its path starts with (a plain string prefix)")
            if k.traps >= 3:
                step2 += (", counting only routes in force on the request's date (a route whose `retired_on` is set "
                          "applies only to requests dated before that day)")
            step2 += f"; a request that no route matches is left out. Aggregate per service: {STEP2[variant]}."
            steps = [step1, step2]
            if stages == 2:
                fmt = (f"The result is the aggregate: {STEP2_OUT[variant]} with no header line, one line per "
                       "service with traffic, sorted by service name" + (" and then path" if variant == "top_paths"
                                                                         else "") + " in byte order.")
            else:
                steps.append(f"3. Turn the aggregate into the report, with each service's team from the catalogue. "
                             f"{STEP3[variant]}; {QUOTE}.")
                head = f"the header line `{HEADS[variant]}` first" if not t.partial_credit else \
                    f"no header line (the columns are `{HEADS[variant]}`)"
                fmt = f"The report is CSV with {head}."
            t.say("The job has " + ("two" if stages == 2 else "three") + " steps, each feeding the next:\n\n"
                  + "\n".join(steps) + "\n\n" + fmt)
        t.add_solution_file("pipeline.py", src)
        t.solve(f'test -n "{who}"\nmkdir -p /app/out\n'
                f'python3 /solution/pipeline.py "{who}" /app/logs /app/db/catalog.sqlite > {out}')
        t.expect_output(out, truth, "the answer" if stages == 1 else "the report")
