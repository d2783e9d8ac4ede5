"""Read structured `key=value` (logfmt) application logs. Variants: the requests that failed with a 5xx
status, listed with some of their fields (extraction with unquoting); the errors per service (a filter,
then a group-by); the records that lack a required key (validation, reported by file and line). Traps
by level: quoted values with spaces, keys in any order, then escaped quotes and `key=value` text inside
quoted messages (which defeats a plain grep), rotated files with one of them gzipped and stack-trace
lines that are not records, and finally repeated keys (the last one counts) and bare flag keys."""

from __future__ import annotations

from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.unseen import unseen

REFERENCE = r'''
import gzip
import os
import sys

VARIANT = @VARIANT@
FIELDS = @FIELDS@  # the fields the "failed" variant lists, after the run id
REQUIRED = "req_id"


def parse(line):
    """One logfmt record: key=value pairs split on spaces; a value may be double-quoted with \" and \\
    escapes; a bare key is a flag worth "true"; a repeated key keeps its last value."""
    rec, i, n = {}, 0, len(line)
    while i < n:
        while i < n and line[i] == " ":
            i += 1
        j = i
        while j < n and line[j] not in " =":
            j += 1
        if j == i:
            break
        key, value = line[i:j], "true"
        if j < n and line[j] == "=":
            j += 1
            if j < n and line[j] == '"':
                j += 1
                buf = []
                while j < n and line[j] != '"':
                    if line[j] == "\\" and j + 1 < n:
                        j += 1
                    buf.append(line[j])
                    j += 1
                j += 1
                value = "".join(buf)
            else:
                k = j
                while j < n and line[j] != " ":
                    j += 1
                value = line[k:j]
        rec[key] = value
        i = j
    return rec


def records(named_texts):
    """(file name, line number, record) for every record line (one that starts with ts=)."""
    for name, text in named_texts:
        for no, line in enumerate(text.split("\n"), 1):
            line = line.rstrip("\r")
            if line.startswith("ts="):
                yield name, no, parse(line)


def report(run, named_texts):
    out = []
    if VARIANT == "failed":
        rows = []
        for _, _, r in records(named_texts):
            st = r.get("status", "")
            if st.isdigit() and int(st) >= 500:
                rows.append("\t".join([run] + [r.get(f, "") for f in FIELDS]))
        out = sorted(rows)
    elif VARIANT == "errors":
        counts = {}
        for _, _, r in records(named_texts):
            if r.get("level") == "error":
                svc = r.get("svc") or "-"
                counts[svc] = counts.get(svc, 0) + 1
        out = [f"{run},{s},{c}" for s, c in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
    else:  # missing: no req_id key, or an empty one
        out = [f"{run}:{name}:{no}" for name, no, r in sorted(records(named_texts), key=lambda x: (x[0], x[1]))
               if not r.get(REQUIRED)]
    return "".join(line + "\n" for line in out)


def read(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        return os.path.basename(path), f.read().decode("utf-8")


if __name__ == "__main__":
    sys.stdout.write(report(sys.argv[1], [read(p) for p in sys.argv[2:]]))
'''

SERVICES = ("api", "auth", "billing", "search", "mailer", "ingest", "export", "webhooks")
PATHS = ("/v1/users", "/v1/orders", "/v1/login", "/v2/search", "/v1/invoices", "/health", "/v2/export", "/v1/cart")
WORDS = ("timeout", "refused", "done", "retrying", "upstream", "cache", "miss", "slow", "ok", "denied", "queued")
STATUSES = (200, 200, 200, 201, 204, 301, 400, 401, 404, 429, 500, 502, 503, 504)

def asks(fields: str) -> dict[str, str]:
    """What each variant reports; fields: the listed fields, as the instruction names them."""
    return {
        "failed": "every request that failed on the server side (its `status` is a number of 500 or more), one line "
                  f"each as the run id followed by {fields}, separated by single tab characters, with quoted values "
                  "written unquoted and unescaped (a missing field is empty); lines sorted in byte order",
        "errors": "how many records have `level=error` per service (the `svc` key; a record without one counts "
                  "under `-`), one line per service as `<RUN>,<svc>,<count>`, sorted by count (largest first), "
                  "ties by service name in byte order",
        "missing": "every record that has no `req_id` key, or an empty one (`req_id=` or `req_id=\"\"`), one line "
                   "each as `<RUN>:<file name>:<line number>` (the file's base name as it is on disk, line numbers "
                   "counted from 1 in the uncompressed text), sorted by file name in byte order, then by line number",
    }


@dataclass(frozen=True)
class Knobs:
    records: int  # record lines over all files
    quoting: int  # 0: no quoted values; 1: quoted values with spaces; 2: escapes and key=value inside quotes
    shuffle: bool  # keys after ts in any order
    files: int  # 1: app.log; 3: app.log, app.log.1 and a gzipped app.log.2.gz, plus stack-trace lines
    quirks: bool  # repeated keys (last wins) and bare flag keys


def _quote(v: str) -> str:
    if v and not any(c in v for c in ' "=\\'):
        return v
    return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'


@register
class LogfmtFieldReport(Family):
    name = "logfmt_field_report"
    domain = "data_processing"
    skill_types = ("Text Processing", "Parsing")
    primitive_skills = ("log parsing", "field extraction", "filtering by field", "group-by counting",
                        "record validation", "gzip decompression", "sorting with tie-breaks")
    variants = ("failed", "errors", "missing")
    levels = {0: Knobs(records=12, quoting=0, shuffle=False, files=1, quirks=False),
              1: Knobs(records=60, quoting=1, shuffle=False, files=1, quirks=False),
              2: Knobs(records=200, quoting=2, shuffle=True, files=1, quirks=False),
              3: Knobs(records=400, quoting=2, shuffle=True, files=3, quirks=False),
              4: Knobs(records=800, quoting=2, shuffle=True, files=3, quirks=True)}

    def _record(self, t: TaskBuilder, ts: str) -> str:
        """One rendered record line; the traps a level asks for are planted at random."""
        k, rng = t.knobs, t.rng
        st = rng.choice(STATUSES)
        level = "error" if st >= 500 and rng.random() < 0.8 else rng.choice(["info", "info", "warn", "debug"])
        if k.quoting == 0:
            msg = rng.choice(WORDS)
        else:
            msg = " ".join(rng.choice(WORDS) for _ in range(rng.randrange(2, 5)))
        if k.quoting >= 2 and rng.random() < 0.25:  # text that looks like keys, and an escaped quote
            msg += rng.choice([" level=error", " status=503", " req_id=r-0", ' said "no"', " svc=auth"])
        pairs = [("level", level), ("svc", rng.choice(SERVICES)), ("path", rng.choice(PATHS)),
                 ("status", str(st)), ("dur_ms", str(rng.randrange(1, 3000))), ("msg", msg)]
        if rng.random() < 0.8:
            pairs.append(("req_id", f"r-{rng.randrange(16**6):06x}"))
        elif k.quoting >= 1 and rng.random() < 0.5:
            pairs.append(("req_id", ""))
        if rng.random() < 0.1:
            pairs = [p for p in pairs if p[0] != "svc"]
        if k.shuffle:
            rng.shuffle(pairs)
        text = [f"{key}={_quote(v)}" if v or key != "req_id" or rng.random() < 0.5 else f"{key}="
                for key, v in pairs]
        if k.quirks and rng.random() < 0.15:  # the same key twice: the last one counts
            text.insert(0, f"status={rng.choice([200, 502])}" if rng.random() < 0.5 else "level=info")
        if k.quirks and rng.random() < 0.15:
            text.insert(rng.randrange(len(text) + 1), rng.choice(["sampled", "canary"]))
        return f"ts={ts} " + " ".join(text)

    def _logs(self, t: TaskBuilder) -> list[tuple[str, str]]:
        """(base name, text) per log file, oldest rotation first in time."""
        k, rng = t.knobs, t.rng
        start = 1_780_000_000 + rng.randrange(86_400 * 300)
        stamps = sorted(rng.sample(range(start, start + 86_400 * k.files), k.records))
        names = ["app.log.2.gz", "app.log.1", "app.log"][-k.files:]
        out = []
        per = len(stamps) // k.files
        for i, name in enumerate(names):
            chunk = stamps[i * per:] if i == k.files - 1 else stamps[i * per:(i + 1) * per]
            lines = []
            for s in chunk:
                lines.append(self._record(t, _iso(s)))
                if k.files > 1 and rng.random() < 0.04:  # a stack trace after a record: not records
                    lines += ["Traceback (most recent call last):",
                              f'  File "/srv/app/{rng.choice(SERVICES)}.py", line {rng.randrange(10, 400)}, in handle',
                              "RuntimeError: status=500 level=error req_id="]
            out.append((name, "\n".join(lines) + "\n"))
        return out

    def output_case(self, t: TaskBuilder) -> None:
        k = t.knobs
        fields = ("path",) if t.level == 0 else ("ts", "path", "msg")
        src = fill(REFERENCE, VARIANT=repr(t.variant), FIELDS=fields)
        ref = run_python(src)
        for _ in range(30):  # an answer of fewer than two lines is redrawn
            logs = self._logs(t)
            if ref["report"]("RUN", logs).count("\n") >= 2:
                break
        else:
            raise FamilyError(f"family {self.name}: no log with two {t.variant} lines in 30 draws")
        for name, text in logs:
            t.add_file(f"/app/logs/{name.removesuffix('.gz')}", text)
        if k.files > 1:
            t.add_setup("gzip -n /app/logs/app.log.2")
        run = unseen(t, lambda: t.code(2))
        truth = ref["report"](run, logs)
        where = "`/app/logs/app.log`" if k.files == 1 else \
            ("`/app/logs/` (`app.log`, the rotated `app.log.1` and the older, gzipped `app.log.2.gz`; read them all)")
        t.say(f"Our service writes logfmt records to {where}. A record is one line of space-separated `key=value` "
              "pairs that starts with `ts=`." + (
              " Other lines (stack traces) are not records." if k.files > 1 else ""))
        if k.quoting:
            t.say("A value holding spaces is double-quoted" + (
                  "; inside quotes `\\\"` is a literal quote and `\\\\` a literal backslash, and text such as "
                  "`status=503` inside a quoted message is part of the message, not a key" if k.quoting >= 2 else "")
                  + ". Keys after `ts` may come in any order." * k.shuffle)
        if k.quirks:
            t.say("Some writers repeat a key in one record: the last occurrence counts. A bare word without `=` "
                  "(such as `canary`) is a flag key worth `true`.")
        cols = ", ".join(f"`{f}`" for f in fields)
        t.say(f"Report {asks(cols)[t.variant]}. RUN is the run id given below; the incident tracker "
              "files the report under it.")
        var = t.deliver(run, "the run id")
        t.add_solution_file("logfmt.py", src)
        logs_arg = " ".join(f"/app/logs/{name}" for name, _ in logs)
        t.solve(f'test -n "{var}"\nmkdir -p /app/out\n'
                f'python3 /solution/logfmt.py "{var}" {logs_arg} > /app/out/report.txt')
        t.expect_output("/app/out/report.txt", truth, "the report")


def _iso(s: int) -> str:
    import datetime as dt

    return dt.datetime.fromtimestamp(s, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
