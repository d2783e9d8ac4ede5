"""Triage a worker's crash log: for every job that failed in one scheduler run, name the root
exception and the innermost frame of our own code where it was raised. The log is produced at
environment build time by really running the (shipped) worker package on a replayed job queue, so
every traceback is genuine CPython output. Traps by level: several runs (only one counts), chained
exceptions (`raise ... from`: the root cause is printed first), frames from the standard library and
from a vendored third-party package (not ours), retries (only a job's last attempt counts), and
warnings that carry a traceback for a recovered error (not failures). Variants: failures (the report
above, one line per failed job), hotspots (the failed jobs grouped by the line of our code that raised
their root exception, most first) and by_exception (grouped by root exception type); each level-0
reference stays a one-line shell pipeline (a benchmark replays it as an agent's command)."""

from __future__ import annotations

import json
from dataclasses import dataclass

from tmax.families.base import Family, TaskBuilder, register
from tmax.families.programs import run_python

PKGS = ["billing", "payouts", "settlement", "remit"]

ERRORS = '''"""Exceptions raised by the worker."""


class RecordError(Exception):
    """A job payload could not be turned into a record."""


class AccountError(Exception):
    """The account referenced by a record is not usable."""


class StoreUnavailable(Exception):
    """The storage backend refused a write; the job may be retried."""
'''

PARSE_HEAD = {False: '''"""Turning job payloads into records."""
import json
from decimal import Decimal

from .errors import RecordError''', True: '''"""Turning job payloads into records."""
import json
from decimal import Decimal

from tinyschema import validate

from .errors import RecordError

TAG_SCHEMA = {"type": "list", "items": {"type": "str", "max_len": 12}}'''}

PARSE_FUNCS = {
    "decode_payload": "def decode_payload(payload):\n    return json.loads(payload)",
    "parse_amount": 'def parse_amount(raw):\n    """Amounts travel as strings such as "12.50"."""\n    return Decimal(raw)',
    "load_record": '''def load_record(payload):
    try:
        data = decode_payload(payload)
        amount = parse_amount(data["amount"])
        tags = check_tags(data.get("tags", []))
    except (ValueError, KeyError, ArithmeticError) as exc:
        raise RecordError(f"bad payload: {exc}") from exc
    return {"account": data.get("account", ""), "amount": amount, "currency": data.get("currency", "EUR"),
            "split": data.get("split", 1), "date": data.get("date"), "meta": data.get("meta", {}), "tags": tags}''',
}
CHECK_TAGS = {False: "def check_tags(tags):\n    return [str(tag).lower() for tag in tags]",
              True: "def check_tags(tags):\n    validate(tags, TAG_SCHEMA)\n    return [tag.lower() for tag in tags]"}

RATES_HEAD = '''"""Currency conversion to EUR."""
from decimal import Decimal

RATES = {"EUR": Decimal("1"), "USD": Decimal("0.92"), "GBP": Decimal("1.17"), "CHF": Decimal("1.04")}
_cache = {}'''
RATES_FUNCS = {
    "lookup_rate": "def lookup_rate(currency):\n    return RATES[currency]",
    "convert": '''def convert(amount, currency):
    rate = _cache.get(currency)
    if rate is None:
        rate = _cache[currency] = lookup_rate(currency)
    return (amount * rate).quantize(Decimal("0.01"))''',
}

LEDGER_HEAD = '''"""Turning records into ledger entries."""
import logging
from decimal import Decimal

from .errors import AccountError

log = logging.getLogger(__name__)
ACCOUNT_PREFIXES = ("AC-", "BK-")'''
LEDGER_FUNCS = {
    "check_account": '''def check_account(account):
    if not account.startswith(ACCOUNT_PREFIXES):
        raise AccountError(f"unknown account type: {account!r}")''',
    "split_evenly": '''def split_evenly(amount, parts):
    if parts < 0:
        raise ValueError(f"cannot split into {parts} parts")
    cents = int(amount * 100)
    base = cents // parts
    shares = [base] * parts
    shares[-1] += cents - base * parts
    return [Decimal(c) / 100 for c in shares]''',
    "post": '''def post(account, amount, split):
    check_account(account)
    try:
        shares = split_evenly(amount, split)
    except ZeroDivisionError:
        log.warning("split of 0 for %s, booking a single entry", account, exc_info=True)
        shares = [amount]
    return [(account, share) for share in shares]''',
}

STORE_HEAD = '''"""Persisting ledger entries."""
from datetime import datetime

from .errors import StoreUnavailable


class Backend:
    def __init__(self):
        self.rows = []
        self.locked = False

    def write(self, rows):
        if self.locked:
            raise StoreUnavailable("backend locked by another writer")
        self.rows.extend(rows)


backend = Backend()'''
STORE_FUNCS = {
    "parse_date": 'def parse_date(text):\n    return datetime.strptime(text, "%Y-%m-%d").date()',
    "save": '''def save(job_id, entries, date, meta):
    day = parse_date(date) if date else None
    source = meta.get("source", "api")
    backend.write([(job_id, day, source, account, amount) for account, amount in entries])''',
}

WORKER = '''"""Job entry point used by the scheduler."""
from . import ledger, parse, rates, store


def handle(job):
    record = parse.load_record(job["payload"])
    amount = rates.convert(record["amount"], record["currency"])
    entries = ledger.post(record["account"], amount, record["split"])
    store.save(job["id"], entries, record["date"], record["meta"])
    return len(entries)
'''

EXTRA_HELPERS = [
    'def describe(record):\n    """Human-readable one-liner, for debugging sessions."""\n'
    '    return f"{record.get(\'account\')} {record.get(\'amount\')}"',
    "def _is_blank(text):\n    return text is None or not str(text).strip()",
    'def normalise_currency(code):\n    return (code or "EUR").strip().upper()',
    "def chunked(items, size):\n    for i in range(0, len(items), size):\n        yield items[i:i + size]",
]

TINYSCHEMA_CORE = '''"""tinyschema: minimal structural validation (vendored copy, do not edit)."""


class SchemaError(ValueError):
    pass


def _check(value, schema, path):
    kind = schema["type"]
    if kind == "list":
        if not isinstance(value, list):
            raise SchemaError(f"{path}: expected a list")
        for i, item in enumerate(value):
            _check(item, schema["items"], f"{path}[{i}]")
    elif kind == "str":
        if not isinstance(value, str):
            raise SchemaError(f"{path}: expected a string")
        if len(value) > schema.get("max_len", 1 << 30):
            raise SchemaError(f"{path}: longer than {schema['max_len']}")


def validate(value, schema):
    _check(value, schema, "$")
    return value
'''

REPLAY = r'''import json
import logging
import sys
import traceback

sys.dont_write_bytecode = True
sys.path[:0] = ["/app", "/app/vendor"]
PKG = sys.argv[2]
worker = __import__(PKG + ".worker", fromlist=["handle"])
store = __import__(PKG + ".store", fromlist=["backend"])


class Context(logging.Filter):
    ts = worker_name = run = ""

    def filter(self, record):
        record.ts, record.worker, record.run = Context.ts, Context.worker_name, Context.run
        return True


handler = logging.StreamHandler(sys.stdout)
handler.setFormatter(logging.Formatter("%(ts)s %(levelname)s [%(worker)s] run %(run)s: %(message)s"))
handler.addFilter(Context())
logging.getLogger().addHandler(handler)
logging.getLogger().setLevel(logging.INFO)
log = logging.getLogger(PKG + ".scheduler")
for ev in json.load(open(sys.argv[1])):
    Context.ts, Context.worker_name, Context.run = ev["ts"], ev["worker"], ev["run"]
    if ev["kind"] == "note":
        log.info(ev["text"])
    elif ev["kind"] == "start":
        log.info("job %s attempt %d started", ev["job"], ev["attempt"])
    else:
        store.backend.locked = ev["locked"]
        try:
            n = worker.handle({"id": ev["job"], "payload": ev["payload"]})
        except Exception:
            log.exception("job %s attempt %d failed", ev["job"], ev["attempt"])
        else:
            log.info("job %s attempt %d done, %d entries booked", ev["job"], ev["attempt"], n)
'''

TRIAGE = r'''import re
import sys

log_path, run, pkg = sys.argv[1], sys.argv[2], sys.argv[3]
HEADER = re.compile(r"^\S+ \S+ (INFO|WARNING|ERROR) \[[^\]]+\] run (\d+): (.*)$")
ATTEMPT = re.compile(r"^job (\d+) attempt (\d+) (failed|done)")
FRAME = re.compile(r'^  File "([^"]+)", line (\d+), in (\S+)$')
entries = []  # [run, message, level, extra lines]
for line in open(log_path).read().split("\n"):
    m = HEADER.match(line)
    if m:
        entries.append([m.group(2), m.group(3), m.group(1), []])
    elif entries:
        entries[-1][3].append(line)
last = {}
for r, msg, level, extra in entries:
    m = ATTEMPT.match(msg)
    if r != run or not m:
        continue
    job, attempt, outcome = int(m.group(1)), int(m.group(2)), m.group(3)
    if job not in last or attempt >= last[job][0]:
        last[job] = (attempt, outcome, extra)
for job in sorted(last):
    attempt, outcome, extra = last[job]
    if outcome != "failed":
        continue
    chain, cur = [], None
    for line in extra:
        if line.startswith("Traceback (most recent call last):"):
            cur = []
            chain.append(cur)
        elif cur is not None:
            cur.append(line)
    root = chain[0]
    frames = [FRAME.match(x).groups() for x in root if FRAME.match(x)]
    ours = [f for f in frames if f[0].startswith(f"/app/{pkg}/")]
    exc = next(x for x in root if x and not x.startswith(" "))
    path, lineno, func = ours[-1]
    print(job, exc.split(":")[0], f"{path[len('/app/'):]}:{lineno}", func)
'''

# The other variants group triage.py's report (piped in) by where the root exception was raised or by its type.
GROUP = r'''import sys
from collections import defaultdict


def group(lines, by):
    """lines: `job type location function`, by job id; by: "place" or "type"."""
    groups = defaultdict(list)
    for line in lines:
        job, exc, loc, func = line.split()
        groups[(loc, func) if by == "place" else (exc,)].append(job)

    def order(key):
        if by == "type":
            return key
        path, lineno = key[0].rsplit(":", 1)
        return (-len(groups[key]), path, int(lineno))

    return "".join(" ".join([*key, *groups[key]]) + "\n" for key in sorted(groups, key=order))


if __name__ == "__main__":
    sys.stdout.write(group(sys.stdin.read().splitlines(), sys.argv[1]))
'''

# fault -> (module, marker text on the raising line, function, exception type as printed; a type from our
# errors module is printed with the package in front)
FAULTS = {
    "currency": ("rates.py", "return RATES[currency]", "lookup_rate", "KeyError"),
    "account": ("ledger.py", "raise AccountError(", "check_account", "errors.AccountError"),
    "split_negative": ("ledger.py", "raise ValueError(", "split_evenly", "ValueError"),
    "meta": ("store.py", 'source = meta.get("source", "api")', "save", "AttributeError"),
    "json": ("parse.py", "return json.loads(payload)", "decode_payload", "json.decoder.JSONDecodeError"),
    "missing_amount": ("parse.py", 'amount = parse_amount(data["amount"])', "load_record", "KeyError"),
    "amount": ("parse.py", "return Decimal(raw)", "parse_amount", "decimal.InvalidOperation"),
    "date": ("store.py", "return datetime.strptime(", "parse_date", "ValueError"),
    "tags": ("parse.py", "validate(tags, TAG_SCHEMA)", "check_tags", "tinyschema.core.SchemaError"),
    "locked": ("store.py", "raise StoreUnavailable(", "write", "errors.StoreUnavailable"),
}
# Checked in the order the worker runs into them.
PIPELINE = ["json", "missing_amount", "amount", "tags", "currency", "account", "split_negative", "date", "meta",
            "locked"]
BASIC = ("currency", "account", "split_negative", "meta")
CHAINED = ("json", "missing_amount", "amount", "date")


def payload_for(rng, fault: str | None, warn: bool) -> str:
    data: dict = {"account": f"{rng.choice(['AC', 'BK'])}-{rng.randrange(1000, 9999)}",
                  "amount": f"{rng.randrange(1, 900)}.{rng.randrange(100):02d}",
                  "currency": rng.choice(["EUR", "EUR", "USD", "GBP", "CHF"]),
                  "split": rng.choice([1, 1, 2, 3]), "date": f"2024-0{rng.randint(1, 9)}-{rng.randint(10, 28)}"}
    if rng.random() < 0.4:
        data["tags"] = rng.sample(["refund", "bulk", "vip", "manual", "promo"], rng.randint(1, 2))
    if rng.random() < 0.3:
        data["meta"] = {"source": rng.choice(["api", "batch", "import"])}
    if warn:
        data["split"] = 0
    if fault == "currency":
        data["currency"] = rng.choice(["XAU", "JPY", "eur", "BTC"])
    elif fault == "account":
        data["account"] = rng.choice(["XX-", "ac-", "AC", "CC-"]) + str(rng.randrange(1000, 9999))
    elif fault == "split_negative":
        data["split"] = -rng.randint(1, 3)
    elif fault == "meta":
        data["meta"] = None
    elif fault == "missing_amount":
        del data["amount"]
    elif fault == "amount":
        data["amount"] = rng.choice(["12,50", "", "1.2.3", "EUR 40", "n/a"])
    elif fault == "date":
        data["date"] = rng.choice(["2024-02-30", "2024-13-01", "14/05/2024", "2024-5-1x"])
    elif fault == "tags":
        data["tags"] = rng.choice([["x" * 15], ["ok", 7], ["a-very-long-tag"]])
    text = json.dumps(data, sort_keys=True)
    if fault == "json":
        text = rng.choice([text[:-1], "", text.replace('"', "'"), text + "}"])
    return text


@dataclass(frozen=True)
class Knobs:
    runs: int  # scheduler runs in the log
    jobs: int  # jobs per run
    faults: tuple[str, ...]  # the faults a failing job may hit (keys of FAULTS)
    vendor: bool  # a vendored third-party package with frames of its own
    retries: bool  # jobs attempted more than once
    warnings: bool  # recovered errors logged with a traceback, re-queued ids


@register
class TracebackTriage(Family):
    name = "traceback_triage"
    domain = "debugging"
    skill_types = ("Crash Analysis", "Fault Localization")
    primitive_skills = ("reading a stack trace", "following chained exceptions", "locating the faulty function",
                        "correlating interleaved log lines", "separating application frames from library frames")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("failures", "hotspots", "by_exception")
    # Level 4 (warnings that carry tracebacks, re-queued ids) disagreed with its own oracle on about 3% of
    # seeds in a 1000-task gate; until that is understood the sampler draws levels 0-3 only.
    task_complexities = ("atomic", "short", "moderate", "complex")
    languages = ("Bash", "Python")
    levels = {0: Knobs(runs=3, jobs=4, faults=BASIC, vendor=False, retries=False, warnings=False),
              1: Knobs(runs=2, jobs=6, faults=BASIC, vendor=False, retries=False, warnings=False),
              2: Knobs(runs=3, jobs=12, faults=BASIC + CHAINED, vendor=False, retries=False, warnings=False),
              3: Knobs(runs=4, jobs=18, faults=BASIC + CHAINED + ("tags",), vendor=True, retries=True, warnings=False),
              4: Knobs(runs=5, jobs=28, faults=BASIC + CHAINED + ("tags",), vendor=True, retries=True, warnings=True)}

    def output_case(self, t: TaskBuilder) -> None:
        k, rng = t.knobs, t.rng
        pkg = rng.choice(PKGS)
        vendor = k.vendor

        def module(head: str, funcs: dict[str, str], extra: bool) -> str:
            blocks = list(funcs.values())
            rng.shuffle(blocks)
            if extra and rng.random() < 0.6:
                blocks.insert(rng.randrange(len(blocks) + 1), rng.choice(EXTRA_HELPERS))
            return head + "\n\n\n" + "\n\n\n".join(blocks) + "\n"

        sources = {
            "__init__.py": f'"""{pkg}: the ledger worker."""\n',
            "errors.py": ERRORS,
            "parse.py": module(PARSE_HEAD[vendor], {**PARSE_FUNCS, "check_tags": CHECK_TAGS[vendor]}, True),
            "rates.py": module(RATES_HEAD, RATES_FUNCS, True),
            "ledger.py": module(LEDGER_HEAD, LEDGER_FUNCS, True),
            "store.py": module(STORE_HEAD, STORE_FUNCS, True),
            "worker.py": WORKER,
        }
        for name, src in sources.items():
            t.add_file(f"/app/{pkg}/{name}", src)
        if vendor:
            t.add_file("/app/vendor/tinyschema/__init__.py", "from .core import SchemaError, validate\n")
            t.add_file("/app/vendor/tinyschema/core.py", TINYSCHEMA_CORE)

        def where(fault: str) -> str:
            mod, marker, func, exc = FAULTS[fault]
            lines = sources[mod].split("\n")
            (lineno,) = [i + 1 for i, line in enumerate(lines) if marker in line]
            if exc.startswith("errors."):
                exc = f"{pkg}.{exc}"
            return f"{exc} {pkg}/{mod}:{lineno} {func}"

        # The job queue: runs of jobs, some failing, some retried; events interleaved across workers.
        first_run = rng.randint(100, 900)
        runs = [first_run + i * rng.randint(1, 3) for i in range(k.runs)]
        target = rng.choice(runs[1:] if len(runs) > 1 else runs)
        events: list[dict] = []
        truth_lines: list[tuple[int, str]] = []
        clock = rng.randrange(3600 * 20)
        used_ids: list[int] = []
        failed: set[tuple[int, str]] = set()  # (job id, final fault) over all runs
        for run in runs:
            workers = [f"worker-{i}" for i in range(1, rng.randint(2, 4) + 1)]
            ids = sorted(rng.sample(range(1000, 9999), k.jobs))
            if used_ids and k.warnings:  # re-queued jobs keep their id across runs
                for i in range(min(3, len(ids))):
                    ids[i] = rng.choice(used_ids)
                ids = sorted(set(ids))
            used_ids += ids
            pending: list[list[dict]] = []
            forced = set(rng.sample(ids, 2)) if run == target else set()
            for jid in ids:
                fault = rng.choice(k.faults) if rng.random() < 0.45 or jid in forced else None
                warn = k.warnings and fault not in ("split_negative",) and rng.random() < 0.2
                attempts = 1
                locked: list[bool] = [False]
                if k.retries and rng.random() < 0.35:
                    attempts = rng.randint(2, 3)
                    # transient lock on all attempts but (maybe) the last
                    locked = [True] * (attempts - 1) + [rng.random() < 0.3]
                elif k.retries and fault is None and rng.random() < 0.1:
                    locked = [True]
                if (jid, fault if fault else ("locked" if locked[-1] else None)) in failed:
                    # A re-queued job failing alike in two runs would give another run's report a line of
                    # ours (and partial credit to the wrong run number): it fails differently here.
                    fault = rng.choice([f for f in k.faults if (jid, f) not in failed])
                    locked[-1] = False
                    warn = warn and fault != "split_negative"
                payload = payload_for(rng, fault, warn)
                worker = rng.choice(workers)
                seq = []
                for a in range(attempts):
                    seq.append({"kind": "start", "run": str(run), "worker": worker, "job": jid, "attempt": a + 1})
                    seq.append({"kind": "exec", "run": str(run), "worker": worker, "job": jid, "attempt": a + 1,
                                "payload": payload, "locked": locked[a]})
                pending.append(seq)
                final_fault = fault if fault else ("locked" if locked[-1] else None)
                if final_fault:
                    failed.add((jid, final_fault))
                if run == target and final_fault:
                    truth_lines.append((jid, f"{jid} {where(final_fault)}"))
            events.append({"kind": "note", "run": str(run), "worker": "scheduler",
                           "text": f"=== run {run} started: {len(ids)} jobs queued ==="})
            while pending:  # interleave the workers' streams, each job's events staying in order
                seq = rng.choice(pending)
                events.append(seq.pop(0))
                if not seq:
                    pending.remove(seq)
            events.append({"kind": "note", "run": str(run), "worker": "scheduler",
                           "text": f"=== run {run} finished ==="})
        for ev in events:
            clock += rng.randint(1, 40)
            ms = rng.randrange(1000)
            h, rem = divmod(clock, 3600)
            ev["ts"] = f"2024-06-{11 + h // 24:02d} {h % 24:02d}:{rem // 60:02d}:{rem % 60:02d},{ms:03d}"
        truth = "".join(line + "\n" for _, line in sorted(truth_lines))
        t.add_file("/tmp/tmax-dbg/queue.json", json.dumps(events, sort_keys=True) + "\n")
        t.add_file("/srv/scheduler/dispatch.py", REPLAY)
        # The scheduler and its queue live outside the worker and are gone once the log is written.
        t.add_setup(f"mkdir -p /app/logs && python3 /srv/scheduler/dispatch.py /tmp/tmax-dbg/queue.json {pkg} "
                    f"> /app/logs/worker.log 2>&1 && rm -rf /tmp/tmax-dbg /srv/scheduler")

        if t.variant != "failures":
            return self._grouped(t, pkg, vendor, target, truth_lines)
        if t.level == 0:  # atomic: which jobs failed, no traceback reading
            t.say(f"Our ledger worker (the Python package `/app/{pkg}/`) processes jobs for the scheduler; everything "
                  "it and the scheduler log goes to `/app/logs/worker.log`, which holds several scheduler runs. "
                  "List the ids of the jobs that failed in the run whose number is given below, one per line, "
                  "sorted.")
            var = t.deliver(str(target), "the run number")
            t.solve(f"mkdir -p /app/out\ngrep -E \" run {var}: job [0-9]+ attempt [0-9]+ failed\" "
                    "/app/logs/worker.log | awk '{print $8}' | sort -n > /app/out/failures.txt")
            t.expect_output("/app/out/failures.txt", "".join(f"{jid}\n" for jid, _ in sorted(truth_lines)),
                            "the failed job ids")
            return
        t.say(intro(pkg) + " For the run whose number is given below, I need a failure report: one line for every "
              "job of that run whose last attempt failed.")
        t.say("Each line: the job id, the type of the root exception, the location where it was raised in our "
              "code, and the function there, separated by single spaces, e.g. "
              f"`4711 KeyError {pkg}/example.py:42 some_function`. {ROOT_RULE} {location_rule(pkg, vendor)} "
              "Sort the lines by job id. " + " ".join(run_rules(k)))
        var = t.deliver(str(target), "the run number")
        t.add_solution_file("triage.py", TRIAGE)
        t.solve(f'mkdir -p /app/out\npython3 /solution/triage.py /app/logs/worker.log "{var}" {pkg} > '
                "/app/out/failures.txt")
        t.expect_output("/app/out/failures.txt", truth, "the failure report")

    def _grouped(self, t: TaskBuilder, pkg: str, vendor: bool, target: int, truth_lines: list) -> None:
        """hotspots: the failures grouped by where they were raised; by_exception: grouped by root exception."""
        by = "place" if t.variant == "hotspots" else "type"
        out = f"/app/out/{t.variant}.txt"
        report = [line for _, line in sorted(truth_lines)]
        if t.level == 0:  # atomic: one traceback per failure, its last frame and last line are the answer
            if by == "place":
                ask = ("one line per failed job as `<job id> <path relative to /app>:<line> <function>`, taken from "
                       "the last `File` line of its traceback")
                show = "cur \" \" loc \" \" fn"
                truth = "".join(f"{jid} {loc} {func}\n" for jid, _, loc, func in map(str.split, report))
            else:
                ask = ("one line per failed job as `<job id> <exception type>`, the type as the last line of its "
                       "traceback prints it (up to the first colon)")
                show = "cur \" \" e[1]"
                truth = "".join(f"{jid} {exc}\n" for jid, exc, _, _ in map(str.split, report))
            t.say(intro(pkg) + f" For the run whose number is given below, write {ask}, sorted by job id, to `{out}`.")
            var = t.deliver(str(target), "the run number")
            t.solve(f'mkdir -p /app/out\nawk -v run="{var}" \'/^[0-9][0-9][0-9][0-9]-/ {{cur = ""; fn = ""; '
                    'if ($0 ~ (" run " run ": job [0-9]+ attempt [0-9]+ failed")) cur = $8; next} '
                    'cur != "" && /^  File "/ {split($0, q, "\\""); ln = $4; sub(",", "", ln); '
                    'loc = substr(q[2], 6) ":" ln; fn = $NF; next} '
                    'cur != "" && /^[^ ]/ && !/^Traceback/ {split($0, e, ":"); print ' + show + '; cur = ""}\' '
                    f"/app/logs/worker.log | sort -n > {out}")
            t.expect_output(out, truth, "the failed jobs")
            return
        ns = run_python(GROUP)
        if by == "place":
            ask = ("one line per location in our code where the root exception of a failed job was raised: the "
                   f"location, the function there and the ids of the jobs that failed there (ascending), separated "
                   f"by single spaces, e.g. `{pkg}/example.py:42 some_function 4711 4720`. The location is "
                   f"written as the path relative to `/app` and the line number. Sort the lines by the number of "
                   "jobs, most first, then by path and line number.")
        else:
            ask = ("one line per root exception type: the type and the ids of the jobs whose root exception it was "
                   "(ascending), separated by single spaces, e.g. `KeyError 4711 4720`. Sort the lines by type "
                   "(byte order).")
        t.say(intro(pkg) + " For the run whose number is given below, I need to know which failures belong together "
              "(a failed job is one whose last attempt failed): write " + ask)
        t.say((ROOT_RULE + " " + location_rule(pkg, vendor) if by == "place" else ROOT_RULE) + " "
              + " ".join(run_rules(t.knobs)))
        var = t.deliver(str(target), "the run number")
        t.add_solution_file("triage.py", TRIAGE)
        t.add_solution_file("group.py", GROUP)
        t.solve(f'mkdir -p /app/out\npython3 /solution/triage.py /app/logs/worker.log "{var}" {pkg} '
                f"| python3 /solution/group.py {by} > {out}")
        t.expect_output(out, ns["group"](report, by), "the grouped failures")


def intro(pkg: str) -> str:
    return (f"Our ledger worker (the Python package `/app/{pkg}/`) processes jobs for the scheduler; everything it "
            "and the scheduler log goes to `/app/logs/worker.log`, which holds several scheduler runs.")


ROOT_RULE = ("The root exception is the original one: when one exception was raised from another (`The above "
             "exception was the direct cause...`), it is the first one printed. Its type is written exactly as the "
             "last line of its traceback prints it (up to the first colon).")


def location_rule(pkg: str, vendor: bool) -> str:
    return (f"The location is the innermost frame of that traceback that lies in `/app/{pkg}/` (frames of the "
            f"standard library{' or of vendored packages' if vendor else ''} do not count), written as the path "
            "relative to `/app` and the line number.")


def run_rules(k: Knobs) -> list[str]:
    rules = ["A job can appear in several runs; only that run counts."]
    if k.retries:
        rules.append("Jobs may be attempted more than once; only the last attempt of a job in that run counts.")
    if k.warnings:
        rules.append("Not every traceback in the log belongs to a failure.")
    return rules
