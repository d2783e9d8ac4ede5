"""Where and when does one client fail? Parse web access logs (rotated, some gzipped at higher levels)
and pick out one client's requests although client IDs are pseudonymised with tokens that rotate daily.
Variants: the client's failures counted per path with a tie-break (paths), counted per hour of the day
(hourly), or the client's slowest requests by the `rt=` field (slowest)."""

from __future__ import annotations

import datetime
from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.unseen import distinct, key_of, unseen

# The reference, as a program: the oracle runs it on the fixtures, the truth is computed with it on the
# host, and program-writing variants use it as the hidden reference. One source of truth.
REFERENCE = r'''
import hashlib
import re
import sys

CLIENT = "@@CLIENT@@"
MIN_STATUS = @MIN_STATUS@
VARIANT = @VARIANT@
TOP = 5  # requests the slowest report lists
LINE = re.compile(r'^(\S+) \S+ \S+ \[([^\]]+)\] "(\S+) (\S+) [^"]*" (\d{3}) (\d+) "[^"]*" rt=(\S+) client=(\S+)$')
MONTHS = {m: i + 1 for i, m in enumerate("Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split())}


def token(client, stamp):
    """The client's pseudonym on the day of ``stamp`` (dd/Mon/yyyy:hh:mm:ss +0000)."""
    day, mon, year = stamp[:11].split("/")
    date = f"{year}-{MONTHS[mon]:02d}-{day}"
    return hashlib.sha256(f"{client}:{date}".encode()).hexdigest()[:12]


def requests(text, client):
    """The client's parsed requests (regex matches), in log order."""
    tokens = {}
    for line in text.splitlines():
        m = LINE.match(line)
        if not m:
            continue
        day = m.group(2)[:11]
        if day not in tokens:
            tokens[day] = token(client, day)
        if m.group(8) == tokens[day]:
            yield m


def report(text, client=None):
    mine = list(requests(text, client or CLIENT))
    if VARIANT == "slowest":
        rows = sorted(((float(m.group(7)), int(m.group(5)), m.group(3), m.group(4).split("?")[0]) for m in mine),
                      key=lambda r: (-r[0], r[1], r[2], r[3]))
        return "".join(f"{rt:.3f} {st} {me} {p}\n" for rt, st, me, p in rows[:TOP])
    counts = {}
    for m in mine:
        if int(m.group(5)) >= MIN_STATUS:
            key = m.group(2)[12:14] if VARIANT == "hourly" else m.group(4).split("?")[0]
            counts[key] = counts.get(key, 0) + 1
    if VARIANT == "hourly":
        return "".join(f"{h} {n}\n" for h, n in sorted(counts.items()))
    rows = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return "".join(f"{n} {p}\n" for p, n in rows)


if __name__ == "__main__":
    sys.stdout.write(report(sys.stdin.read(), sys.argv[1] if len(sys.argv) > 1 else None))
'''

# Level 0's program: one day's log in; out the client's server-error count (paths), those errors per
# hour (hourly) or the time its slowest request took (slowest).
ATOMIC_REFERENCE = r'''
import hashlib
import re
import sys

CLIENT = "@@CLIENT@@"
VARIANT = @VARIANT@
LINE = re.compile(r'^\S+ \S+ \S+ \[(\d\d)/(\w{3})/(\d{4}):(\d\d)[^\]]*\] "[^"]*" (\d{3}) .* rt=(\S+) client=(\S+)$')
MONTHS = {m: i + 1 for i, m in enumerate("Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split())}


def count(text, client=None):
    client = client or CLIENT
    hours, times = {}, []
    for line in text.splitlines():
        m = LINE.match(line)
        if not m:
            continue
        date = f"{m.group(3)}-{MONTHS[m.group(2)]:02d}-{m.group(1)}"
        if m.group(7) != hashlib.sha256(f"{client}:{date}".encode()).hexdigest()[:12]:
            continue
        times.append(float(m.group(6)))
        if int(m.group(5)) >= 500:
            hours[m.group(4)] = hours.get(m.group(4), 0) + 1
    if VARIANT == "slowest":
        return f"{max(times):.3f}\n" if times else ""
    if VARIANT == "hourly":
        return "".join(f"{h} {n}\n" for h, n in sorted(hours.items()))
    return f"{sum(hours.values())}\n"


if __name__ == "__main__":
    sys.stdout.write(count(sys.stdin.read(), sys.argv[1] if len(sys.argv) > 1 else None))
'''

PATHS = ["/api/v1/orders", "/api/v1/users", "/api/v1/cart", "/login", "/logout", "/search", "/static/app.js",
         "/api/v2/payments", "/api/v2/invoices", "/healthz", "/metrics", "/api/v1/products", "/checkout"]
AGENTS = ["curl/8.4.0", "Mozilla/5.0 (X11; Linux x86_64)", "python-requests/2.31", "Go-http-client/1.1"]
STATUSES = [200, 200, 200, 200, 201, 204, 301, 304, 400, 401, 403, 404, 500, 502, 503, 504]
MONTHS = "Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split()
DAYS = 7  # one log spans a week
FIRST = datetime.date(2026, 3, 12)


def pseudonym(client: str, when: datetime.date) -> str:
    return key_of(f"{client}:{when.isoformat()}", 12)


def log_lines(rng, n, clients, start: datetime.date = FIRST, days: int = DAYS):
    out = []
    for i in range(n):
        ip = f"10.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(1, 255)}"
        day = start + datetime.timedelta(days=i * days // max(n, 1))
        ts = (f"{day.day:02d}/{MONTHS[day.month - 1]}/{day.year}:{rng.randrange(24):02d}:{rng.randrange(60):02d}:"
              f"{rng.randrange(60):02d} +0000")
        path = rng.choice(PATHS) + (f"?page={rng.randrange(9)}" if rng.random() < 0.2 else "")
        method = rng.choice(["GET", "GET", "GET", "POST", "PUT", "DELETE"])
        status = rng.choice(STATUSES)
        out.append(f'{ip} - - [{ts}] "{method} {path} HTTP/1.1" {status} {rng.randrange(100, 90000)} '
                   f'"{rng.choice(AGENTS)}" rt={rng.random() * 2:.3f} client={pseudonym(rng.choice(clients), day)}')
        if rng.random() < 0.02:
            out.append(f"{ip} - - [garbled line {rng.randrange(10**6)}")
    return out


@dataclass(frozen=True)
class Knobs:
    lines: int  # log lines in all
    files: int  # access.log and its rotations
    gzip: bool  # older rotations gzipped
    min_status: int  # lowest status counted as a failure


PSEUDO = ("Client IDs are pseudonymised in the logs: the `client=` field holds the first 12 hex digits "
          "(lowercase) of the SHA-256 of the text `<client ID>:<date>`, where `<date>` is the request's "
          "date as `YYYY-MM-DD` (the timestamps are UTC), so a client's token changes every day.")
FMT = ("one line per path: the count, a space, the path (query strings dropped), sorted by count "
       "(highest first), ties by path in byte order")


# What each variant reports (the paths report's format stays FMT).
FORMATS = {"paths": FMT,
           "hourly": "one line per hour of the day (UTC) in which there was at least one: the hour as two digits, "
                     "a space, the count, in hour order (all days of the logs together)",
           "slowest": "the client's 5 slowest requests of any status by the `rt=` field, slowest first, one per line "
                      "as `rt status method path` (rt as logged, with three decimals; query strings dropped), ties "
                      "by status, then method, then path (byte order); a client with fewer requests lists them all"}
def ask_for(variant: str, failures: str) -> str:
    return {"paths": f"count the {failures} per path across all the logs",
            "hourly": f"count the {failures} per hour of the day across all the logs",
            "slowest": "find the slowest requests across all the logs"}[variant]
OUTS = {"paths": "/app/out/error_paths.txt", "hourly": "/app/out/error_hours.txt", "slowest": "/app/out/slowest.txt"}


def status_words(min_status: int) -> str:
    return ("server errors (status 500 and above)" if min_status == 500 else
            "failed requests (status 400 and above)")


def clients(t: TaskBuilder) -> list[str]:
    """Five client IDs; the first is ours, the delivered value. None ever appears in the logs: they hold
    only its daily pseudonym, so it cannot be guessed from the data, and any other ID matches no line.
    Ours is drawn unseen in the instruction; the logs, made of hex digests, are only searched for it as
    text (unseen's decodings of thousands of digests would take minutes)."""
    ours = unseen(t, lambda: t.code(2), PSEUDO, FMT)
    return [ours, *distinct(lambda: t.code(2), 4, [ours])]


@register
class LogErrorPaths(Family):
    name = "log_error_paths"
    domain = "data_processing"
    skill_types = ("Text Processing", "Aggregation")
    primitive_skills = ("log parsing", "filtering by field", "group-by counting", "sorting with tie-breaks",
                        "regular expressions", "streaming large files")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol", "fuzz_equivalence")
    programs = {"Python": REFERENCE}
    variants = ("paths", "hourly", "slowest")
    levels = {0: Knobs(lines=30, files=1, gzip=False, min_status=500),
              1: Knobs(lines=60, files=1, gzip=False, min_status=500),
              2: Knobs(lines=400, files=2, gzip=False, min_status=500),
              3: Knobs(lines=1500, files=3, gzip=True, min_status=400),
              4: Knobs(lines=5000, files=5, gzip=True, min_status=400)}

    def program_case(self, t: TaskBuilder) -> None:
        k, rng = t.knobs, t.rng
        if t.level == 0:
            return self.atomic_program(t)
        src = fill(REFERENCE, MIN_STATUS=k.min_status, VARIANT=repr(t.variant))
        ns = run_python(src)
        for _ in range(20):
            ids = clients(t)
            cases, seen_days = [], set()
            for _ in range(200):
                if len(cases) == 10:
                    break
                # Every case covers its own week: the tokens shown in the examples are of no use elsewhere.
                start = datetime.date(2025, 1, 1) + datetime.timedelta(days=rng.randrange(700))
                week = [start + datetime.timedelta(days=d) for d in range(DAYS)]
                if any(d in seen_days for d in week):
                    continue
                text = "\n".join(log_lines(rng, rng.randrange(20, 80), ids, start)) + "\n"
                out = ns["report"](text, ids[0])
                if not out:
                    continue
                seen_days.update(week)
                cases.append((text, out))
            if len(cases) == 10 and not any(ids[0] in inp.upper() for inp, _ in cases):
                break
        else:
            raise FamilyError(f"family {self.name}: no ten weekly logs with failures of the client")
        who = t.deliver(ids[0], "the client ID")
        what = {"paths": f"report how often each path produced {status_words(k.min_status)} for the client whose "
                         f"ID is given above, {FMT}",
                "hourly": f"count the {status_words(k.min_status)} of the client whose ID is given above per hour "
                          f"of the day, printing {FORMATS['hourly']}",
                "slowest": f"print, for the client whose ID is given above, {FORMATS['slowest']}"}[t.variant]
        t.say(f"Our gateway writes access logs in the format of the examples (each line ends with "
              f"`rt=<seconds> client=<token>`). {PSEUDO} We need a reusable tool: given one log on standard "
              f"input, {what}. Lines that do not parse are skipped.")
        t.expect_program("Hard-code the client ID given above.", cases, {"Python": src})
        t.solve(f'sed -i "s/@@CLIENT@@/{who}/" /app/solution.py')

    def output_case(self, t: TaskBuilder) -> None:
        k, rng, var = t.knobs, t.rng, t.variant
        src = fill(REFERENCE, MIN_STATUS=k.min_status, VARIANT=repr(var))
        ns = run_python(src)
        if t.level == 0:  # the count of failures, whatever the variant, picks a day with some
            return self.atomic(t, run_python(fill(REFERENCE, MIN_STATUS=k.min_status, VARIANT=repr("paths"))))
        # Fixtures first; the truth is derived from them (a client with no failure at all is redrawn).
        per_file = max(20, k.lines // k.files)
        for _ in range(50):
            ids = clients(t)
            texts = ["\n".join(log_lines(rng, per_file, ids)) + "\n" for _ in range(k.files)]
            truth = ns["report"]("".join(texts), ids[0])
            if truth.count("\n") >= 2 and not any(ids[0] in text.upper() for text in texts):
                break
        else:
            raise FamilyError(f"family {self.name}: no logs with two failing paths of the client")
        # The log's name and folder vary by seed, not only its lines.
        folder = rng.choice(["/app/logs", "/app/gateway/logs", "/app/var/log/gateway"])
        base = rng.choice(["access.log", "gateway-access.log", "edge.log"])
        names = [base] + [f"{base}.{i}" for i in range(1, k.files)]
        for i, (name, text) in enumerate(zip(names, texts)):
            if k.gzip and i >= 2:
                t.add_file(f"{folder}/{name}.src", text)
                t.add_setup(f"gzip -n {folder}/{name}.src && mv {folder}/{name}.src.gz {folder}/{name}.gz")
            else:
                t.add_file(f"{folder}/{name}", text)
        who = t.deliver(ids[0], "the client ID")
        rotated = " Older rotations are gzipped." if k.gzip else ""
        ask = ask_for(var, status_words(k.min_status))
        t.say(rng.choice([f"The gateway's access logs are in `{folder}/` (`{base}` and its rotations).",
                          f"Our gateway logs every request to `{folder}/{base}`, rotated beside it as `{base}.1` "
                          "and so on."]) + f"{rotated} {PSEUDO} For the client whose ID is given above, {ask}. "
              + rng.choice(["Lines that do not parse are noise: skip them.",
                            "Skip any line that does not parse; the gateway sometimes writes garbage."])
              + ("" if var == "paths" else f" Report {FORMATS[var]}."))
        # The oracle uses the delivered value, so the gate also proves the fixture channel works.
        out = OUTS[var]
        t.add_solution_file("report.py", src)
        t.solve(f'test -n "{who}"\nmkdir -p /app/out\n'
                f'for f in {folder}/*; do case $f in *.gz) zcat "$f";; *) cat "$f";; esac; done | '
                f'python3 /solution/report.py "{who}" > {out}')
        t.expect_output(out, truth, f"the report ({FMT})" if var == "paths" else "the report")

    def atomic(self, t: TaskBuilder, ns: dict) -> None:
        """One day's log, so the client has one token: a single count of its server errors (paths), those
        errors per hour (hourly) or the time of its slowest request (slowest)."""
        k, rng = t.knobs, t.rng
        for _ in range(50):
            ids = clients(t)
            text = "\n".join(log_lines(rng, k.lines, ids, days=1)) + "\n"
            n = sum(int(line.split()[0]) for line in ns["report"](text, ids[0]).splitlines())
            if n >= 2 and ids[0] not in text.upper():
                break
        else:
            raise FamilyError(f"family {self.name}: no day with two server errors of the client")
        t.add_file("/app/logs/access.log", text)
        day = FIRST.isoformat()
        who = t.deliver(ids[0], "the client ID")
        errors = "got a server error (status 500 or above: the number right after the quoted request)"
        ask, out, pick = {
            "paths": (f"How many requests of the client whose ID is given above {errors}? Write the count to "
                      "`/app/out/count.txt`.", "/app/out/count.txt", "awk '$9 >= 500' | wc -l"),
            "hourly": (f"Of the requests of the client whose ID is given above that {errors}, how many fell in each "
                       "hour? Write one line per hour with at least one, as the two-digit hour, a space and the "
                       "count, in hour order, to `/app/out/hours.txt`.", "/app/out/hours.txt",
                       "awk '$9 >= 500 {print substr($4, 14, 2)}' | sort | uniq -c | awk '{print $2, $1}'"),
            "slowest": ("How long did the slowest request of the client whose ID is given above take? Write its "
                        "`rt=` value (seconds, as logged) to `/app/out/slowest.txt`.", "/app/out/slowest.txt",
                        "grep -o 'rt=[0-9.]*' | cut -c4- | sort -n | tail -1")}[t.variant]
        t.say(f"`/app/logs/access.log` is our gateway's access log of {day}. Its `client=` field holds the first 12 "
              f"hex digits of the SHA-256 of the text `<client ID>:{day}` (`printf %s <client ID>:{day} | sha256sum "
              f"| cut -c1-12`). {ask}")
        t.solve(f'test -n "{who}"\nmkdir -p /app/out\ntok=$(printf %s "{who}:{day}" | sha256sum | cut -c1-12)\n'
                f'grep "client=$tok$" /app/logs/access.log | {pick} > {out}')
        truth = f"{n}\n" if t.variant == "paths" else \
            run_python(fill(ATOMIC_REFERENCE, VARIANT=repr(t.variant)))["count"](text, ids[0])
        t.expect_output(out, truth, "the count" if t.variant == "paths" else "the answer")

    def atomic_program(self, t: TaskBuilder) -> None:
        """Level 0's program on one day's log (every case another day): the client's server errors counted,
        counted per hour, or its slowest request's time."""
        k, rng = t.knobs, t.rng
        src = fill(ATOMIC_REFERENCE, VARIANT=repr(t.variant))
        small = run_python(src)
        for _ in range(20):
            ids = clients(t)
            cases = []
            for day in rng.sample(range(700), 60):
                if len(cases) == 10:
                    break
                start = datetime.date(2025, 1, 1) + datetime.timedelta(days=day)
                text = "\n".join(log_lines(rng, rng.randrange(20, 40), ids, start, days=1)) + "\n"
                out = small["count"](text, ids[0])
                if out not in ("0\n", ""):  # a count of zero would reward a program that matches nothing
                    cases.append((text, out))
            if len(cases) == 10 and not any(ids[0] in inp.upper() for inp, _ in cases):
                break
        else:
            raise FamilyError(f"family {self.name}: no ten daily logs with server errors of the client")
        who = t.deliver(ids[0], "the client ID")
        errors = "got a server error (status 500 or above: the number right after the quoted request)"
        what = {"paths": f"how many requests of the client whose ID is given above {errors}",
                "hourly": f"for the requests of the client whose ID is given above that {errors}, one line per hour "
                          "with at least one, as the two-digit hour, a space and the count, in hour order",
                "slowest": "the `rt=` value (seconds, as logged) of the slowest request of the client whose ID is "
                           "given above"}[t.variant]
        t.say("Our gateway writes access logs in the format of the examples. The `client=` field holds the first 12 "
              "hex digits of the SHA-256 of the text `<client ID>:<date>`, with the request's date as `YYYY-MM-DD`. "
              f"We need a tool: given one day's log on standard input, print {what}. Lines that do not parse are "
              "skipped.")
        t.expect_program("Hard-code the client ID given above.", cases, {"Python": src})
        t.solve(f'sed -i "s/@@CLIENT@@/{who}/" /app/solution.py')
