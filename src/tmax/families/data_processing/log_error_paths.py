"""Which endpoints fail most for one client? Parse web access logs (rotated, some gzipped at higher
levels), pick out one client's server errors although client IDs are pseudonymised with tokens that
rotate daily, count per path, sort with a tie-break."""

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
LINE = re.compile(r'^(\S+) \S+ \S+ \[([^\]]+)\] "(\S+) (\S+) [^"]*" (\d{3}) (\d+) "[^"]*" rt=(\S+) client=(\S+)$')
MONTHS = {m: i + 1 for i, m in enumerate("Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split())}


def token(client, stamp):
    """The client's pseudonym on the day of ``stamp`` (dd/Mon/yyyy:hh:mm:ss +0000)."""
    day, mon, year = stamp[:11].split("/")
    date = f"{year}-{MONTHS[mon]:02d}-{day}"
    return hashlib.sha256(f"{client}:{date}".encode()).hexdigest()[:12]


def report(text, client=None):
    client = client or CLIENT
    counts, tokens = {}, {}
    for line in text.splitlines():
        m = LINE.match(line)
        if not m or int(m.group(5)) < MIN_STATUS:
            continue
        day = m.group(2)[:11]
        if day not in tokens:
            tokens[day] = token(client, day)
        if m.group(8) != tokens[day]:
            continue
        path = m.group(4).split("?")[0]
        counts[path] = counts.get(path, 0) + 1
    rows = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return "".join(f"{n} {p}\n" for p, n in rows)


if __name__ == "__main__":
    sys.stdout.write(report(sys.stdin.read(), sys.argv[1] if len(sys.argv) > 1 else None))
'''

# Level 0's program: one day's log in, the client's server-error count out.
ATOMIC_REFERENCE = r'''
import hashlib
import re
import sys

CLIENT = "@@CLIENT@@"
LINE = re.compile(r'^\S+ \S+ \S+ \[(\d\d)/(\w{3})/(\d{4}):[^\]]*\] "[^"]*" (\d{3}) .* client=(\S+)$')
MONTHS = {m: i + 1 for i, m in enumerate("Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split())}


def count(text, client=None):
    client = client or CLIENT
    n = 0
    for line in text.splitlines():
        m = LINE.match(line)
        if not m or int(m.group(4)) < 500:
            continue
        date = f"{m.group(3)}-{MONTHS[m.group(2)]:02d}-{m.group(1)}"
        n += m.group(5) == hashlib.sha256(f"{client}:{date}".encode()).hexdigest()[:12]
    return f"{n}\n"


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
    levels = {0: Knobs(lines=30, files=1, gzip=False, min_status=500),
              1: Knobs(lines=60, files=1, gzip=False, min_status=500),
              2: Knobs(lines=400, files=2, gzip=False, min_status=500),
              3: Knobs(lines=1500, files=3, gzip=True, min_status=400),
              4: Knobs(lines=5000, files=5, gzip=True, min_status=400)}

    def program_case(self, t: TaskBuilder) -> None:
        k, rng = t.knobs, t.rng
        if t.level == 0:
            return self.atomic_program(t)
        src = fill(REFERENCE, MIN_STATUS=k.min_status)
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
        t.say(f"Our gateway writes access logs in the format of the examples (each line ends with "
              f"`rt=<seconds> client=<token>`). {PSEUDO} We need a reusable tool: given one log on standard "
              f"input, report how often each path produced {status_words(k.min_status)} for the client whose ID "
              f"is given above, {FMT}. Lines that do not parse are skipped.")
        t.expect_program("Hard-code the client ID given above.", cases, {"Python": src})
        t.solve(f'sed -i "s/@@CLIENT@@/{who}/" /app/solution.py')

    def output_case(self, t: TaskBuilder) -> None:
        k, rng = t.knobs, t.rng
        src = fill(REFERENCE, MIN_STATUS=k.min_status)
        ns = run_python(src)
        if t.level == 0:
            return self.atomic(t, ns)
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
        names = ["access.log"] + [f"access.log.{i}" for i in range(1, k.files)]
        for i, (name, text) in enumerate(zip(names, texts)):
            if k.gzip and i >= 2:
                t.add_file(f"/app/logs/{name}.src", text)
                t.add_setup(f"gzip -n /app/logs/{name}.src && mv /app/logs/{name}.src.gz /app/logs/{name}.gz")
            else:
                t.add_file(f"/app/logs/{name}", text)
        who = t.deliver(ids[0], "the client ID")
        rotated = " Older rotations are gzipped." if k.gzip else ""
        t.say(f"The gateway's access logs are in `/app/logs/` (`access.log` and its rotations).{rotated} {PSEUDO} "
              f"For the client whose ID is given above, count the {status_words(k.min_status)} per path across all "
              "the logs. Lines that do not parse are noise: skip them.")
        # The oracle uses the delivered value, so the gate also proves the fixture channel works.
        t.add_solution_file("report.py", src)
        t.solve(f'test -n "{who}"\nmkdir -p /app/out\n'
                'for f in /app/logs/*; do case $f in *.gz) zcat "$f";; *) cat "$f";; esac; done | '
                f'python3 /solution/report.py "{who}" > /app/out/error_paths.txt')
        t.expect_output("/app/out/error_paths.txt", truth, f"the report ({FMT})")

    def atomic(self, t: TaskBuilder, ns: dict) -> None:
        """One day's log, so the client has one token: a single count of its server errors."""
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
        t.say(f"`/app/logs/access.log` is our gateway's access log of {day}. Its `client=` field holds the first 12 "
              f"hex digits of the SHA-256 of the text `<client ID>:{day}` (`printf %s <client ID>:{day} | sha256sum "
              "| cut -c1-12`). How many requests of the client whose ID is given above got a server error (status "
              "500 or above: the number right after the quoted request)? Write the count to `/app/out/count.txt`.")
        t.solve(f'test -n "{who}"\nmkdir -p /app/out\ntok=$(printf %s "{who}:{day}" | sha256sum | cut -c1-12)\n'
                'grep "client=$tok$" /app/logs/access.log | awk \'$9 >= 500\' | wc -l > /app/out/count.txt')
        t.expect_output("/app/out/count.txt", f"{n}\n", "the count")

    def atomic_program(self, t: TaskBuilder) -> None:
        """Level 0's program: count the client's server errors in one day's log (every case another day)."""
        k, rng = t.knobs, t.rng
        small = run_python(ATOMIC_REFERENCE)
        for _ in range(20):
            ids = clients(t)
            cases = []
            for day in rng.sample(range(700), 60):
                if len(cases) == 10:
                    break
                start = datetime.date(2025, 1, 1) + datetime.timedelta(days=day)
                text = "\n".join(log_lines(rng, rng.randrange(20, 40), ids, start, days=1)) + "\n"
                out = small["count"](text, ids[0])
                if out != "0\n":  # a count of zero would reward a program that matches nothing
                    cases.append((text, out))
            if len(cases) == 10 and not any(ids[0] in inp.upper() for inp, _ in cases):
                break
        else:
            raise FamilyError(f"family {self.name}: no ten daily logs with server errors of the client")
        who = t.deliver(ids[0], "the client ID")
        t.say("Our gateway writes access logs in the format of the examples. The `client=` field holds the first 12 "
              "hex digits of the SHA-256 of the text `<client ID>:<date>`, with the request's date as `YYYY-MM-DD`. "
              "We need a tool: given one day's log on standard input, print how many requests of the client whose "
              "ID is given above got a server error (status 500 or above: the number right after the quoted "
              "request). Lines that do not parse are skipped.")
        t.expect_program("Hard-code the client ID given above.", cases, {"Python": ATOMIC_REFERENCE})
        t.solve(f'sed -i "s/@@CLIENT@@/{who}/" /app/solution.py')
