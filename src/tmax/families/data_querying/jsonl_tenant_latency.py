"""Query an API gateway's JSON-lines access log for one tenant. The gateway logs a SHA-256 prefix of the
caller's API key, never the key; the delivered value is the key, so it alone picks out the tenant's
requests. Variants: the latency percentile per route (nearest rank), the status-class mix per route
(a pivot), and the slowest requests (top N with a tie-break). Traps by level: query strings on
paths, latencies written as strings, health checks, non-JSON lines and an older format that logs
seconds, then rotated files (one gzipped) and requests logged twice by two log shippers."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass

from tmax.families.base import Family, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.unseen import distinct, key_cmd, key_of, unseen

REFERENCE = r'''
import glob
import gzip
import json
import sys

PCT = @PCT@  # the percentile the "percentile" report asks for
TOP = @TOP@  # requests the "slowest" report lists


def log_lines(folder):
    out = []
    for path in sorted(glob.glob(folder + "/access.log*")):
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rt") as f:
            out += f.read().splitlines()
    return out


def requests(lines, key):
    """request_id -> (route, status, latency in ms) of the tenant's requests."""
    seen = {}
    for line in lines:
        try:
            r = json.loads(line)
        except ValueError:
            continue  # banners, truncated writes
        if not isinstance(r, dict) or r.get("tenant") != key:
            continue
        route = str(r["path"]).split("?", 1)[0]
        if route == "/healthz":
            continue
        ms = round(float(r["duration_s"]) * 1000) if "duration_s" in r else int(float(r["latency_ms"]))
        seen[r["request_id"]] = (route, int(r["status"]), ms)  # a line shipped twice is one request
    return seen


def report(lines, key, variant):
    reqs = requests(lines, key)
    routes = {}
    for rid in sorted(reqs):
        route, status, ms = reqs[rid]
        routes.setdefault(route, []).append((status, ms))
    if variant == "percentile":
        out = []
        for route in sorted(routes):
            ms = sorted(m for _, m in routes[route])
            rank = -(-PCT * len(ms) // 100)  # nearest rank: ceil(PCT/100 * n)
            out.append(f"{route},{ms[rank - 1]}\n")
        return "".join(out)
    if variant == "status_mix":
        out = []
        for route in sorted(routes):
            n = [sum(1 for s, _ in routes[route] if s // 100 == c) for c in (2, 4, 5)]
            out.append(f"{route},{n[0]},{n[1]},{n[2]}\n")
        return "".join(out)
    top = sorted(reqs.items(), key=lambda kv: (-kv[1][2], kv[0]))[:TOP]
    return "".join(f"{rid},{route},{ms}\n" for rid, (route, _, ms) in top)


if __name__ == "__main__":
    sys.stdout.write(report(log_lines(sys.argv[1]), sys.argv[2], sys.argv[3]))
'''

ROUTES = ("/v1/orders", "/v1/items", "/v1/search", "/v1/users/me", "/v1/carts", "/v1/invoices", "/v2/reports",
          "/v1/webhooks", "/v2/exports", "/v1/tokens")
STATUSES = (200, 200, 200, 200, 200, 201, 204, 400, 401, 404, 429, 500, 502, 503)


@dataclass(frozen=True)
class Knobs:
    requests: int  # requests per tenant
    routes: int  # routes each tenant calls
    tenants: int  # tenants in the log, the target included
    traps: int  # 1: query strings, string latencies; 2: health checks, junk, seconds; 3: rotation, doubles


@register
class JsonlTenantLatency(Family):
    name = "jsonl_tenant_latency"
    domain = "data_querying"
    skill_types = ("Semi-structured Queries", "Analytical Queries")
    primitive_skills = ("jq filters", "JSON path queries", "group-by aggregation", "conditional aggregation",
                        "type coercion of mixed fields", "deduplication by key", "ranking with ties",
                        "percentile by nearest rank")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("percentile", "status_mix", "slowest")
    levels = {0: Knobs(requests=12, routes=2, tenants=2, traps=0),
              1: Knobs(requests=60, routes=4, tenants=3, traps=0),
              2: Knobs(requests=150, routes=5, tenants=4, traps=1),
              3: Knobs(requests=300, routes=6, tenants=4, traps=2),
              4: Knobs(requests=500, routes=7, tenants=5, traps=3)}

    def _tenant(self, t, rids):
        """Log records (dicts) of one tenant, its key still a placeholder."""
        k, rng = t.knobs, t.rng
        routes = rng.sample(ROUTES, k.routes)
        slow = {r: rng.choice([20, 40, 80, 150, 300]) for r in routes}
        recs = []
        for _ in range(k.requests):
            route = rng.choice(routes)
            ms = int(rng.expovariate(1 / slow[route])) + rng.randrange(1, 15)
            path = route
            if k.traps >= 1 and rng.random() < 0.3:
                path += rng.choice(["?page=2", "?limit=50&cursor=x9", "?q=lamp", "?expand=items"])
            rec = {"request_id": next(rids), "method": rng.choice(["GET", "GET", "POST", "PUT"]), "path": path,
                   "status": rng.choice(STATUSES)}
            if k.traps >= 2 and rng.random() < 0.25:  # the old logger: seconds, three decimals
                rec["duration_s"] = f"{ms / 1000:.3f}"
            elif k.traps >= 1 and rng.random() < 0.25:
                rec["latency_ms"] = str(ms)
            else:
                rec["latency_ms"] = ms
            recs.append(rec)
        if k.traps >= 2:
            for _ in range(k.requests // 10):  # the load balancer's probes
                recs.append({"request_id": next(rids), "method": "GET", "path": "/healthz", "status": 200,
                             "latency_ms": rng.randrange(1, 3000)})
        return recs

    def output_case(self, t: TaskBuilder) -> None:
        k, rng, variant = t.knobs, t.rng, t.variant
        pct, top = rng.choice([90, 95, 99]), rng.choice([3, 5]) if t.level else 2
        src = fill(REFERENCE, PCT=pct, TOP=top)
        ref = run_python(src)
        ids = iter(distinct(lambda: f"req-{rng.randrange(16 ** 9, 16 ** 10):010x}", 2 * k.tenants * k.requests,
                            tries=8 * k.tenants * k.requests))
        tenants = [self._tenant(t, ids) for _ in range(k.tenants)]
        recs = [(i, r) for i, rs in enumerate(tenants) for r in rs]
        rng.shuffle(recs)
        # The API key is drawn once the log exists, so it shows nowhere in it.
        target = unseen(t, lambda: t.code(2), json.dumps(recs))
        keys = [key_of(n) for n in [target, *distinct(lambda: t.code(2), k.tenants - 1, [target])]]
        lines, sec = [], 1700000000 + rng.randrange(10 ** 7)
        for i, r in recs:
            sec += rng.randrange(0, 4)
            stamp = dt.datetime.fromtimestamp(sec, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S") + \
                f".{rng.randrange(1000):03d}Z"
            rec = {"ts": stamp, "level": "info", "tenant": keys[i], **r}
            lines.append(json.dumps(rec, separators=(",", ":")))
            if k.traps >= 3 and rng.random() < 0.05:
                lines.append(lines[-1])  # shipped twice
        if k.traps >= 2:
            for _ in range(3):
                at = rng.randrange(len(lines))
                lines.insert(at, rng.choice(["gateway starting, build 7f3e", '{"ts":"2026-01-01T00:00:0',
                                             "WARN upstream pool resized"]))
        truth = ref["report"](lines, keys[0], variant)
        if k.traps >= 3:  # rotated: the newest file is access.log, the oldest gzipped
            cut = sorted(rng.sample(range(1, len(lines)), 2))
            parts = [lines[:cut[0]], lines[cut[0]:cut[1]], lines[cut[1]:]]
            for name, part in zip(("access.log.2", "access.log.1", "access.log"), parts):
                t.add_file(f"/app/logs/{name}", "\n".join(part) + "\n")
            t.add_setup("gzip -n /app/logs/access.log.2")
            where = ("The gateway's access log is rotated: `/app/logs/access.log`, `access.log.1` and the gzipped "
                     "`access.log.2.gz` together hold the period.")
        else:
            t.add_file("/app/logs/access.log", "\n".join(lines) + "\n")
            where = "The gateway's access log is `/app/logs/access.log`, one JSON object per line."
        rules = []
        if k.traps >= 1:
            rules.append("A route is the request `path` without its query string. Some latencies are JSON "
                         "strings rather than numbers.")
        if k.traps >= 2:
            rules.append("Leave out the load balancer's `/healthz` probes and any line that is not a JSON object. "
                         "Records from the old logger carry `duration_s` (seconds) instead of `latency_ms`; "
                         "convert to whole milliseconds.")
        if k.traps >= 3:
            rules.append("Two log shippers overlapped for a while: a `request_id` that appears more than once is "
                         "one request.")
        ask = {"percentile": (f"the {pct}th percentile latency of each route by nearest rank (sort the route's "
                              f"latencies ascending and take the value at position ceil({pct}/100 * n), counting "
                              "from 1), as CSV lines `route,latency_ms` without a header, sorted by route"),
               "status_mix": ("how the tenant's requests to each route ended, as CSV lines "
                              "`route,count_2xx,count_4xx,count_5xx` without a header, sorted by route"),
               "slowest": (f"the tenant's {top} slowest requests (highest `latency_ms` first, ties by `request_id`), "
                           "as CSV lines `request_id,route,latency_ms` without a header")}[variant]
        t.say(f"{where} Each record's `tenant` field is the first 16 hex digits of the SHA-256 of the caller's API "
              "key (`printf %s <key> | sha256sum | cut -c1-16`); the key itself is never logged."
              + ("" if not rules else "\n\n" + "\n".join(f"- {r}" for r in rules) + "\n\n")
              + f"{' ' if not rules else ''}For the tenant whose API key is given below I need {ask}.")
        v = t.deliver(target, "the tenant's API key")
        t.add_solution_file("tenant.py", src)
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\nkey={key_cmd(v)}\n'
                f'python3 /solution/tenant.py /app/logs "$key" {variant} > /app/out/tenant.csv')
        t.expect_output("/app/out/tenant.csv", truth, "the report")
