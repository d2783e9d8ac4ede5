"""A small HTTP report service will not start, or starts and answers wrongly, because of its
configuration. The code is fine; the INI file carries one to seven faults, each with a unique fix
documented in the service's README: an out-of-range port, a misspelt host, a data path typo, the
wrong CSV delimiter, a comma decimal, a misspelt boolean or enum, a key in the wrong section, a log
directory that does not exist; at higher levels also silent ones (a lower-case currency code, an
unpadded date compared as text) that make the service answer with an empty report. The agent must
get it running and fetch one account's report (the account code is delivered separately; the data
export only holds pseudonyms of account codes, which the service computes).
Variants: repair_report (repair the configuration, fetch the account's report from the running service),
counted_rows (the account's transactions the repaired service counts, one per line: the intended
configuration's filters, applied by hand or through the service's own code) and currency_totals (the
account's total in every currency the repaired service would report with `currency` set to each code
in turn: a sweep over one setting)."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import run_python
from tmax.families.unseen import distinct, unseen

SERVICE = r'''#!/usr/bin/env python3
"""reportd: serves per-account transaction reports over HTTP.

Usage: python3 reportd.py [CONFIG]   (default: /app/svc/reportd.ini)
Endpoints: GET /health, GET /report?account=<ACCOUNT>
"""
import configparser
import csv
import hashlib
import sys
from datetime import date
from decimal import Decimal, InvalidOperation
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse


class ConfigError(Exception):
    pass


class DataError(Exception):
    pass


def load_config(path):
    parser = configparser.ConfigParser(interpolation=None)
    if not parser.read(path):
        raise ConfigError(f"cannot read config file {path}")

    def get(section, key):
        if not parser.has_option(section, key):
            raise ConfigError(f"[{section}] {key}: missing")
        return parser.get(section, key).strip()

    cfg = {"host": get("server", "host")}
    port = get("server", "port")
    if not port.isdigit() or not 1 <= int(port) <= 65535:
        raise ConfigError(f"[server] port: {port!r} is not a TCP port (1-65535)")
    cfg["port"] = int(port)
    cfg["log_file"] = get("server", "log_file")
    cfg["data_path"] = get("data", "path")
    cfg["delimiter"] = get("data", "delimiter")
    if len(cfg["delimiter"]) != 1:
        raise ConfigError("[data] delimiter: must be a single character")
    cfg["currency"] = get("report", "currency")
    raw = get("report", "min_amount")
    try:
        cfg["min_amount"] = Decimal(raw)
    except InvalidOperation:
        raise ConfigError(f"[report] min_amount: {raw!r} is not a decimal number") from None
    cfg["since"] = get("report", "since")
    flag = get("report", "include_refunds").lower()
    if flag not in ("true", "false"):
        raise ConfigError(f"[report] include_refunds: expected true or false, got {flag!r}")
    cfg["include_refunds"] = flag == "true"
    cfg["group_by"] = get("report", "group_by")
    if cfg["group_by"] not in ("day", "week"):
        raise ConfigError(f"[report] group_by: expected day or week, got {cfg['group_by']!r}")
    return cfg


def load_rows(path, delimiter):
    rows = []
    with open(path, newline="") as f:
        for n, rec in enumerate(csv.reader(f, delimiter=delimiter), 1):
            if n == 1:
                continue
            if len(rec) != 5:
                raise DataError(f"{path}:{n}: expected 5 fields, got {len(rec)}")
            day, account, currency, amount, kind = rec
            rows.append((day, account, currency, Decimal(amount), kind))
    return rows


def pseudonym(account):
    """The account column of the export: accounts are pseudonymised (see README.md)."""
    return "acct-" + hashlib.sha256(account.encode()).hexdigest()[:12]


def week_of(day):
    year, month, dom = (int(x) for x in day.split("-"))
    iso = date(year, month, dom).isocalendar()
    return f"{iso[0]}-W{iso[1]:02d}"


def build_report(rows, account, cfg):
    groups = {}
    count, total = 0, Decimal("0")
    for day, acct, currency, amount, kind in rows:
        if acct != account or currency != cfg["currency"] or day < cfg["since"]:
            continue
        if kind == "refund" and not cfg["include_refunds"]:
            continue
        if abs(amount) < cfg["min_amount"]:
            continue
        key = day if cfg["group_by"] == "day" else week_of(day)
        n, s = groups.get(key, (0, Decimal("0")))
        groups[key] = (n + 1, s + amount)
        count += 1
        total += amount
    lines = [f"{key} {n} {s:.2f}" for key, (n, s) in sorted(groups.items())]
    lines.append(f"total {count} {total:.2f}")
    return "\n".join(lines) + "\n"


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "/app/svc/reportd.ini"
    try:
        cfg = load_config(path)
        log = open(cfg["log_file"], "a", buffering=1)
        rows = load_rows(cfg["data_path"], cfg["delimiter"])
    except (ConfigError, DataError) as exc:
        print(f"reportd: {exc}", file=sys.stderr)
        sys.exit(1)
    accounts = {row[1] for row in rows}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            url = urlparse(self.path)
            if url.path == "/health":
                return self.reply(200, "ok\n")
            if url.path != "/report":
                return self.reply(404, "not found\n")
            account = parse_qs(url.query).get("account", [""])[0]
            if pseudonym(account) not in accounts:
                return self.reply(404, f"no such account: {account}\n")
            return self.reply(200, build_report(rows, pseudonym(account), cfg))

        def reply(self, status, body):
            data = body.encode()
            self.send_response(status)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, fmt, *args):
            log.write("%s %s\n" % (self.address_string(), fmt % args))

    server = ThreadingHTTPServer((cfg["host"], cfg["port"]), Handler)
    print(f"reportd: serving on {cfg['host']}:{cfg['port']}", file=sys.stderr)
    log.write(f"started on {cfg['host']}:{cfg['port']}\n")
    server.serve_forever()


if __name__ == "__main__":
    main()
'''

README = """# reportd

Serves per-account transaction reports over HTTP. The code is shared by several teams and must not be
changed here; each deployment only differs by its configuration file.

Start: `python3 /app/svc/reportd.py /app/svc/reportd.ini` (runs in the foreground; errors go to stderr).

Endpoints: `GET /health` answers `ok`; `GET /report?account=<ACCOUNT>` answers the report as plain text:
one line `<group> <count> <sum>` per day (`YYYY-MM-DD`) or ISO week (`YYYY-Www`), then `total <count> <sum>`.

The transactions export is pseudonymised: its `account` column holds `acct-` followed by the first 12
hex digits of the SHA-256 of the account code. Ask for the account code itself; the service maps it.

## Configuration (INI)

Section `[server]`:
- `host`: the address to listen on, an IPv4 address such as `127.0.0.1`.
- `port`: TCP port, 1-65535.
- `log_file`: request log; its directory must exist.

Section `[data]`:
- `path`: the transactions CSV file (header line, then `day,account,currency,amount,kind` records).
- `delimiter`: the single character that separates fields in that file.

Section `[report]`:
- `currency`: ISO 4217 code in upper case, e.g. `EUR`; only transactions in that currency are reported.
- `min_amount`: decimal number with a dot as decimal separator, e.g. `12.50`; transactions whose
  absolute amount is smaller are left out.
- `since`: the first day reported, written `YYYY-MM-DD` (zero-padded: days are compared as text).
- `include_refunds`: `true` or `false`.
- `group_by`: `day` or `week`.
"""

BROKEN = ("`reportd` (in `/app/svc/`, see its `README.md`) serves per-account transaction reports over HTTP. After "
          "a configuration change it no longer works on this machine. Its code is shared with other teams and is "
          "fine: do not change `reportd.py` or the data; repair `/app/svc/reportd.ini` so that the service starts "
          "and reports correctly, with the configuration that was clearly intended.")
TYPOS_BOOL = {"true": ["ture", "treu", "yes"], "false": ["flase", "fasle", "no"]}
TYPOS_GROUP = {"day": ["days", "daily", "dya"], "week": ["weeks", "weekly", "wek"]}
STARTUP = ["port", "host", "path", "delimiter", "min_amount", "include_refunds", "section", "group_by", "log_file"]
SILENT = ["currency", "since"]

# The other variants' oracle: the service's own code as a library, with the intended configuration.
QUERY = r'''import sys

sys.path.insert(0, "/app/svc")
import reportd  # noqa: E402

what, account = sys.argv[1], sys.argv[2]
cfg = reportd.load_config("/solution/reportd.ini")
rows = reportd.load_rows(cfg["data_path"], cfg["delimiter"])
acct = reportd.pseudonym(account)
if what == "rows":  # a row counts iff the report of that row alone counts it
    for row in rows:
        if reportd.build_report([row], acct, cfg).splitlines()[-1].startswith("total 1 "):
            print(row[0], f"{row[3]:.2f}", row[4])
else:
    for currency in sorted({row[2] for row in rows}):
        total = reportd.build_report(rows, acct, dict(cfg, currency=currency)).splitlines()[-1].split()
        if total[1] != "0":
            print(currency, total[1], total[2])
'''

ORACLE = r'''#!/bin/bash
# usage: fetch.sh ACCOUNT PORT OUTFILE
set -euo pipefail
cp /solution/reportd.ini /app/svc/reportd.ini
mkdir -p /app/svc/logs
setsid nohup python3 /app/svc/reportd.py /app/svc/reportd.ini >/tmp/reportd.out 2>&1 &
pid=$!
for i in $(seq 1 100); do
  curl -sf "http://127.0.0.1:$2/health" >/dev/null 2>&1 && break
  sleep 0.1
done
curl -sf "http://127.0.0.1:$2/report?account=$1" > "$3"
kill "$pid" 2>/dev/null || true
'''


def ini(v: dict, since_in_server: bool = False) -> str:
    server = [f"host = {v['host']}", f"port = {v['port']}", f"log_file = {v['log_file']}"]
    report = [f"currency = {v['currency']}", f"min_amount = {v['min_amount']}", f"since = {v['since']}",
              f"include_refunds = {v['include_refunds']}", f"group_by = {v['group_by']}"]
    if since_in_server:
        server.append(report.pop(2))
    return ("# reportd configuration (see README.md)\n\n[server]\n" + "\n".join(server)
            + f"\n\n[data]\npath = {v['path']}\ndelimiter = {v['delimiter']}\n\n[report]\n" + "\n".join(report) + "\n")


@dataclass(frozen=True)
class Knobs:
    startup: int  # faults that stop the service from starting
    silent: int  # faults that make it answer an empty report
    accounts: int  # accounts in the export
    rows: int  # transactions in the export


@register
class ServiceConfigRepair(Family):
    name = "service_config_repair"
    domain = "debugging"
    skill_types = ("Configuration Debugging", "Crash Analysis")
    primitive_skills = ("interpreting service error logs", "config file validation", "checking a service endpoint",
                        "type and unit mismatches in config", "reading a stack trace")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    languages = ("Bash", "Python")
    variants = ("repair_report", "counted_rows", "currency_totals")
    levels = {0: Knobs(startup=0, silent=0, accounts=3, rows=30),
              1: Knobs(startup=1, silent=0, accounts=4, rows=60), 2: Knobs(startup=2, silent=0, accounts=6, rows=150),
              3: Knobs(startup=3, silent=1, accounts=8, rows=300), 4: Knobs(startup=5, silent=2, accounts=10, rows=600)}

    def output_case(self, t: TaskBuilder) -> None:
        k, rng = t.knobs, t.rng
        for _ in range(self.variants.index(t.variant)):  # a seed's export differs between the variants
            rng.random()
        ns = run_python(SERVICE)
        pseudonym = ns["pseudonym"]
        # The account code must not be readable off anything but its channel: the export only holds
        # pseudonyms, and no code may occur (or be one easy decoding away) in the static texts.
        static = [SERVICE, README, ini({"host": "", "port": "", "log_file": "", "path": "", "delimiter": "",
                                        "currency": "", "min_amount": "", "since": "", "include_refunds": "",
                                        "group_by": ""})]
        accounts = distinct(lambda: unseen(t, t.code, *static), k.accounts)
        month0 = rng.randint(1, 6)
        good = {"host": "127.0.0.1", "port": rng.randint(5200, 5999), "log_file": "/app/svc/logs/reportd.log",
                "path": "/app/svc/data/transactions.csv", "delimiter": rng.choice([";", "|"]),
                "currency": rng.choice(["EUR", "USD", "GBP"]),
                "min_amount": f"{rng.choice([1, 5, 10, 20, 25])}.{rng.choice(['00', '50'])}",
                "since": f"2024-{month0 + 1:02d}-{rng.randint(1, 9):02d}",
                "include_refunds": rng.choice(["true", "false"]), "group_by": rng.choice(["day", "week"])}

        # Fixtures: the transactions, every account about equally active (the most active account is no
        # hint), accounts pseudonymised as the service's export does.
        rows = []
        for _ in range(k.rows):
            acct = pseudonym(rng.choice(accounts))
            day = f"2024-{rng.randint(month0, month0 + 3):02d}-{rng.randint(1, 28):02d}"
            cur = good["currency"] if rng.random() < 0.7 else rng.choice(["EUR", "USD", "GBP", "CHF"])
            kind = "refund" if rng.random() < 0.15 else "sale"
            amount = Decimal(rng.randrange(50, 40000)) / 100
            rows.append((day, acct, cur, -amount if kind == "refund" else amount, kind))
        rows.sort()
        header = good["delimiter"].join(["day", "account", "currency", "amount", "kind"])
        csv_text = header + "\n" + "".join(good["delimiter"].join([d, a, c, f"{m:.2f}", kd]) + "\n"
                                           for d, a, c, m, kd in rows)
        t.add_file("/app/svc/data/transactions.csv", csv_text)
        t.add_file("/app/svc/reportd.py", SERVICE)
        t.add_file("/app/svc/README.md", README)

        # The truth: the service's own report function with the intended configuration.
        cfg = {"currency": good["currency"], "since": good["since"],
               "include_refunds": good["include_refunds"] == "true", "min_amount": Decimal(good["min_amount"]),
               "group_by": good["group_by"]}
        reports = {a: ns["build_report"](rows, pseudonym(a), cfg) for a in accounts}
        counts = {a: sum(1 for r in rows if r[1] == pseudonym(a)) for a in accounts}
        top = max(counts.values())
        fit = [a for a in accounts if not reports[a].startswith("total 0 ") and counts[a] < top]
        if not fit:
            raise FamilyError("service_config_repair: no account has reportable transactions")
        target = rng.choice(fit)
        truth = reports[target]

        # The broken configuration.
        faults = sorted(rng.sample(STARTUP, k.startup)) + sorted(rng.sample(SILENT, k.silent))
        bad = dict(good)
        for f in faults:
            if f == "port":
                bad["port"] = good["port"] * 100 + rng.randint(0, 99)
            elif f == "host":
                bad["host"] = rng.choice(["127.0.0.l", "localhost:5000", "127.0.0.1.1", "127.0.0,1"])
            elif f == "path":
                bad["path"] = rng.choice(["/app/svc/data/transaction.csv", "/app/svc/dat/transactions.csv",
                                          "/app/svc/data/transactions.cvs"])
            elif f == "delimiter":
                bad["delimiter"] = ","
            elif f == "min_amount":
                bad["min_amount"] = good["min_amount"].replace(".", ",")
            elif f == "include_refunds":
                bad["include_refunds"] = rng.choice(TYPOS_BOOL[good["include_refunds"]][:2])
            elif f == "group_by":
                bad["group_by"] = rng.choice(TYPOS_GROUP[good["group_by"]])
            elif f == "log_file":
                bad["log_file"] = rng.choice(["/var/log/reportd/reportd.log", "/app/svc/log/reportd.log"])
            elif f == "currency":
                bad["currency"] = good["currency"].lower()
            elif f == "since":
                y, m, d = good["since"].split("-")
                bad["since"] = f"{y}-{int(m)}-{int(d)}"
        t.add_file("/app/svc/reportd.ini", ini(bad, since_in_server="section" in faults))
        t.add_file("/app/svc/logs/.keep", "")
        if t.variant == "repair_report":
            self._ask_report(t)
        var = t.deliver(target, "the account code")
        if t.variant != "repair_report":
            return self._variant(t, var, rows, pseudonym(target), cfg, good, ns["build_report"])
        t.add_solution_file("reportd.ini", ini(good))
        t.add_solution_file("fetch.sh", ORACLE)
        t.solve(f'mkdir -p /app/out\nbash /solution/fetch.sh "{var}" {good["port"]} /app/out/report.txt')
        t.expect_output("/app/out/report.txt", truth, "the report body")

    @staticmethod
    def _ask_report(t: TaskBuilder) -> None:
        """repair_report's request: the report as the (repaired) running service serves it."""
        if t.level == 0:  # a sound configuration: start the service and ask it once
            t.say("`reportd` (in `/app/svc/`, see its `README.md`) serves per-account transaction reports over "
                  "HTTP; its configuration `/app/svc/reportd.ini` is correct. Start it, then get the report for the "
                  "account given below (`GET /report?account=...`) and keep its body exactly as served.")
        else:
            t.say(BROKEN)
            extra = (" Finance confirms that the account had reportable activity, so a report of zero transactions "
                     "is wrong." if t.knobs.silent else "")
            t.say("Then get the report for the account given below from the running service "
                  f"(`GET /report?account=...`) and keep its body exactly as served.{extra}")

    def _variant(self, t: TaskBuilder, var: str, rows: list, acct: str, cfg: dict, good: dict, report) -> None:
        """counted_rows: the account's transactions the report counts; currency_totals: its total per currency
        with `currency` swept over the export's codes. Level 0: the same over the raw export (sound config)."""
        k, export = t.knobs, "/app/svc/data/transactions.csv"
        mine = [r for r in rows if r[1] == acct]
        if t.variant == "counted_rows":
            counted = [r for r in mine if report([r], acct, cfg).splitlines()[-1].startswith("total 1 ")] \
                if t.level else mine
            truth = "".join(f"{d} {m:.2f} {kd}\n" for d, a, c, m, kd in counted)
            out, what = "/app/out/counted.txt", "the transaction list"
            line = "`<day> <amount> <kind>` (for example `2024-03-05 -12.50 refund`)"
        else:
            if t.level:
                totals = [(c, report(rows, acct, dict(cfg, currency=c)).splitlines()[-1].split()[1:])
                          for c in sorted({r[2] for r in rows})]
            else:
                totals = [(c, [str(sum(1 for r in mine if r[2] == c))]) for c in sorted({r[2] for r in mine})]
            truth = "".join(f"{c} {' '.join(v)}\n" for c, v in totals if v[0] != "0")
            out, what = "/app/out/currency_totals.txt", "the currency totals"
        if t.level == 0:  # one lookup: the account's pseudonym, then its records in the export
            intro = (f"`{export}` is a transactions export of `reportd` (in `/app/svc/`); its `account` column holds "
                     "pseudonyms, as `/app/svc/README.md` explains.")
            if t.variant == "counted_rows":
                t.say(f"{intro} List the export's records of the account given above, one per line as {line}, in "
                      "file order.")
                awk = "'$2 == p {print $1, $4, $5}' " + export
            else:
                t.say(f"{intro} How many records of the account given above does it hold in each currency? One "
                      "line per currency the account has records in, `<code> <count>` (for example `EUR 7`), codes "
                      "in alphabetical order.")
                awk = f"'$2 == p {{n[$3]++}} END {{for (c in n) print c, n[c]}}' {export} | sort"
            t.solve(f'export LC_ALL=C\nmkdir -p /app/out\np="acct-$(printf %s "{var}" | sha256sum | cut -c1-12)"\n'
                    f'awk -F\'{good["delimiter"]}\' -v p="$p" {awk} > {out}')
            return t.expect_output(out, truth, what)
        t.say(BROKEN)
        extra = " Finance confirms that the account had reportable activity, so finding nothing is wrong." \
            if k.silent else ""
        if t.variant == "counted_rows":
            t.say("Then list the transactions of the account given above that the repaired service counts in its "
                  f"report (`GET /report?account=...`): one line per transaction, {line} as the export writes "
                  f"them, in the export's order.{extra}")
        else:
            t.say("Finance also wants the totals of the account given above in every currency: for each currency "
                  "code that occurs in the export, the `total <count> <sum>` line that the repaired service would "
                  "report for the account if `currency` were set to that code (everything else as intended). One "
                  "line per currency, `<code> <count> <sum>` (for example `EUR 7 412.50`), codes in alphabetical "
                  f"order, leaving out codes with a count of 0.{extra}")
        t.add_solution_file("reportd.ini", ini(good))
        t.add_solution_file("query.py", QUERY)
        mode = "rows" if t.variant == "counted_rows" else "totals"
        t.solve(f'mkdir -p /app/out\npython3 /solution/query.py {mode} "{var}" > {out}\ntest -s {out}')
        t.expect_output(out, truth, what)
