"""Which endpoints fail most for one client? Parse web access logs (rotated, some gzipped at higher
levels), keep one client's server errors, count per path, sort with a tie-break."""

from __future__ import annotations

from tmax.families.base import Family, TaskBuilder, register

# The reference, as a program: the oracle runs it on the fixtures, the truth is computed with it on the
# host, and program-writing variants use it as the hidden reference. One source of truth.
REFERENCE = r'''
import re
import sys

CLIENT = "{client}"
MIN_STATUS = {min_status}
LINE = re.compile(r'^(\S+) \S+ \S+ \[([^\]]+)\] "(\S+) (\S+) [^"]*" (\d{{3}}) (\d+) "[^"]*" rt=(\S+) client=(\S+)$')


def report(text, client=None):
    client = client or CLIENT
    counts = {{}}
    for line in text.splitlines():
        m = LINE.match(line)
        if not m or m.group(8) != client or int(m.group(5)) < MIN_STATUS:
            continue
        path = m.group(4).split("?")[0]
        counts[path] = counts.get(path, 0) + 1
    rows = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return "".join(f"{{n}} {{p}}\n" for p, n in rows)


if __name__ == "__main__":
    sys.stdout.write(report(sys.stdin.read(), sys.argv[1] if len(sys.argv) > 1 else None))
'''

PATHS = ["/api/v1/orders", "/api/v1/users", "/api/v1/cart", "/login", "/logout", "/search", "/static/app.js",
         "/api/v2/payments", "/api/v2/invoices", "/healthz", "/metrics", "/api/v1/products", "/checkout"]
AGENTS = ["curl/8.4.0", "Mozilla/5.0 (X11; Linux x86_64)", "python-requests/2.31", "Go-http-client/1.1"]
STATUSES = [200, 200, 200, 200, 201, 204, 301, 304, 400, 401, 403, 404, 500, 502, 503, 504]


def log_lines(rng, n, clients):
    out = []
    for i in range(n):
        ip = f"10.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(1, 255)}"
        ts = f"{12 + i * 7 // max(n, 1):02d}/Mar/2026:{rng.randrange(24):02d}:{rng.randrange(60):02d}:{rng.randrange(60):02d} +0000"
        path = rng.choice(PATHS) + (f"?page={rng.randrange(9)}" if rng.random() < 0.2 else "")
        method = rng.choice(["GET", "GET", "GET", "POST", "PUT", "DELETE"])
        status = rng.choice(STATUSES)
        out.append(f'{ip} - - [{ts}] "{method} {path} HTTP/1.1" {status} {rng.randrange(100, 90000)} '
                   f'"{rng.choice(AGENTS)}" rt={rng.random() * 2:.3f} client={rng.choice(clients)}')
        if rng.random() < 0.02:
            out.append(f"{ip} - - [garbled line {rng.randrange(10**6)}")
    return out


@register
class LogErrorPaths(Family):
    name = "log_error_paths"
    domain = "data_processing"
    skill_types = ("Text Processing", "Aggregation")
    primitive_skills = ("log parsing", "filtering by field", "group-by counting", "sorting with tie-breaks",
                        "regular expressions", "streaming large files")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol", "fuzz_equivalence")
    programs = {"Python": REFERENCE}
    levels = {1: {"lines": 60, "files": 1, "gzip": False, "min_status": 500},
              2: {"lines": 400, "files": 2, "gzip": False, "min_status": 500},
              3: {"lines": 1500, "files": 3, "gzip": True, "min_status": 400},
              4: {"lines": 5000, "files": 5, "gzip": True, "min_status": 400}}

    def build(self, t: TaskBuilder) -> None:
        k, rng = t.knobs, t.rng
        client = t.code()
        clients = [client] + [c for c in (t.code() for _ in range(4)) if c != client]
        ref_src = REFERENCE.format(client=client, min_status=k["min_status"])
        ns: dict = {}
        exec(ref_src, ns)  # noqa: S102 - our own reference program
        status_words = "server errors (status 500 and above)" if k["min_status"] == 500 else \
            "failed requests (status 400 and above)"
        fmt = ("one line per path: the count, a space, the path (query strings dropped), sorted by count "
               "(highest first), ties by path in byte order")
        if t.axes.verifier == "fuzz_equivalence":
            who = t.deliver(client, "the client ID")
            cases = []
            for _ in range(10):
                text = "\n".join(log_lines(rng, rng.randrange(5, 80), clients)) + "\n"
                cases.append((text, ns["report"](text)))
            t.say(f"Our gateway writes access logs in the format of the examples (each line ends with "
                  f"`rt=<seconds> client=<id>`). We need a reusable tool: given one log on standard input, report "
                  f"how often each path produced {status_words} for one client, {fmt}. Lines that do not "
                  "parse are skipped.")
            t.expect_program("The client is the one named above; hard-code it.", cases,
                             {"Python": ref_src})
            return
        # Fixtures first; the truth is derived from them.
        per_file = max(20, k["lines"] // k["files"])
        texts = ["\n".join(log_lines(rng, per_file, clients)) + "\n" for _ in range(k["files"])]
        names = ["access.log"] + [f"access.log.{i}" for i in range(1, k["files"])]
        for i, (name, text) in enumerate(zip(names, texts)):
            if k["gzip"] and i >= 2:
                t.add_file(f"/app/logs/{name}.src", text)
                t.add_setup(f"gzip -n /app/logs/{name}.src && mv /app/logs/{name}.src.gz /app/logs/{name}.gz")
            else:
                t.add_file(f"/app/logs/{name}", text)
        truth = ns["report"]("".join(texts))
        who = t.deliver(client, "the client ID")
        rotated = " Older rotations are gzipped." if k["gzip"] else ""
        t.say(f"The gateway's access logs are in `/app/logs/` (`access.log` and its rotations).{rotated} "
              f"For the client named in this request, count the {status_words} per path across all the logs. "
              "Lines that do not parse are noise: skip them.")
        # The oracle uses the delivered value, so the gate also proves the fixture channel works.
        t.add_solution_file("report.py", REFERENCE.format(client="", min_status=k["min_status"]))
        t.solve(f'test -n "{who}"\nmkdir -p /app/out\n'
                'for f in /app/logs/*; do case $f in *.gz) zcat "$f";; *) cat "$f";; esac; done | '
                f'python3 /solution/report.py "{who}" > /app/out/error_paths.txt')
        t.expect_output("/app/out/error_paths.txt", truth, f"the report ({fmt})")
