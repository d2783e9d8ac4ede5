#!/bin/bash
# Builds deterministic nginx access logs in /app/logs (seeded generator, no network).
set -euo pipefail
mkdir -p /app/logs
python3 - <<'PY'
import datetime as dt, gzip, random

rng = random.Random(20240314)
paths = ["/", "/login", "/api/orders", "/api/cart", "/api/search", "/api/items/503",
         "/static/app.js", "/healthz", "/api/payments", "/api/users/me"]
weights = [8, 5, 12, 6, 10, 2, 9, 6, 4, 5]
methods = {"/login": ["GET", "POST"], "/api/orders": ["GET", "POST"], "/api/cart": ["GET", "POST", "DELETE"],
           "/api/payments": ["POST"]}
agents = ["Mozilla/5.0 (X11; Linux x86_64)", "curl/8.4.0", "python-requests/2.31.0",
          "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_2)", "kube-probe/1.28"]
ips = ["10.0.%d.%d" % (rng.randint(0, 3), rng.randint(2, 250)) for _ in range(25)]

def status_for(path, t):
    # the incident: payments and orders fall over between 02:10 and 02:50
    incident = dt.time(2, 10) <= t.time() < dt.time(2, 50)
    r = rng.random()
    if incident and path in ("/api/payments", "/api/orders"):
        return rng.choice([500, 502, 503, 504]) if r < 0.6 else 200
    if incident and path == "/api/search":
        return 504 if r < 0.25 else 200
    if r < 0.03:
        return rng.choice([500, 502])
    if r < 0.10:
        return rng.choice([301, 304, 400, 401, 404, 429])
    return 200

def line(t, path=None, status=None, method=None, query=True, size=None, ref="-"):
    if path is None:
        path = rng.choices(paths, weights)[0]
    if method is None:
        method = rng.choice(methods.get(path, ["GET"]))
    if status is None:
        status = status_for(path, t)
    target = path
    if query and path == "/api/search":
        target += "?q=" + rng.choice(["shoes", "red+shirt", "500", "error%20503"])
    elif query and path == "/api/orders" and rng.random() < 0.4:
        target += "?page=%d" % rng.randint(1, 9)
    if size is None:
        size = rng.choice([0, 500, 503, 1024, 2048, rng.randint(100, 9000)])
    return '%s - - [%s] "%s %s HTTP/1.1" %d %d "%s" "%s"' % (
        rng.choice(ips), t.strftime("%d/%b/%Y:%H:%M:%S +0000"), method, target, status,
        size, ref, rng.choice(agents))

start = dt.datetime(2024, 3, 14, 1, 20, 0)
end = dt.datetime(2024, 3, 14, 3, 30, 0)
lines = []
t = start
while t < end:
    lines.append((t, line(t)))
    t += dt.timedelta(seconds=rng.randint(1, 9))

# edge cases around the window boundaries and some malformed entries
specials = [
    (dt.datetime(2024, 3, 14, 1, 59, 59), line(dt.datetime(2024, 3, 14, 1, 59, 59), "/api/payments", 502, "POST")),
    (dt.datetime(2024, 3, 14, 2, 0, 0), line(dt.datetime(2024, 3, 14, 2, 0, 0), "/api/cart", 500, "POST", False)),
    (dt.datetime(2024, 3, 14, 2, 59, 59), line(dt.datetime(2024, 3, 14, 2, 59, 59), "/login", 503, "POST")),
    (dt.datetime(2024, 3, 14, 3, 0, 0), line(dt.datetime(2024, 3, 14, 3, 0, 0), "/api/payments", 500, "POST")),
    (dt.datetime(2024, 3, 14, 2, 20, 0), line(dt.datetime(2024, 3, 14, 2, 20, 0), "/static/app.js", 200, "GET", False, 500,
                                              "https://example.com/status 500 502")),
    (dt.datetime(2024, 3, 14, 2, 21, 0), '10.0.9.9 - - [14/Mar/2024:02:21:00 +0000] "\\x16\\x03\\x01\\x00\\xa5" 500 0 "-" "-"'),
    (dt.datetime(2024, 3, 14, 2, 22, 0), '10.0.9.9 - - [14/Mar/2024:02:22:00 +0000] "-" 502 0 "-" "-"'),
    (dt.datetime(2024, 3, 14, 2, 23, 0), line(dt.datetime(2024, 3, 14, 2, 23, 0), "/api/users/me", 599, "GET")),
    (dt.datetime(2024, 3, 14, 2, 24, 0), line(dt.datetime(2024, 3, 14, 2, 24, 0), "/api/users/me", 200, "GET", False, 599)),
]
lines.extend(specials)
lines.sort(key=lambda x: x[0])

def chunk(a, b):
    return [l for t, l in lines if a <= t < b]

cut1 = dt.datetime(2024, 3, 14, 2, 15, 0)
cut2 = dt.datetime(2024, 3, 14, 2, 45, 0)
with gzip.GzipFile("/app/logs/access.log.2.gz", "wb", mtime=0) as f:
    f.write(("\n".join(chunk(start, cut1)) + "\n").encode())
with open("/app/logs/access.log.1", "w") as f:
    f.write("\n".join(chunk(cut1, cut2)) + "\n")
with open("/app/logs/access.log", "w") as f:
    f.write("\n".join(chunk(cut2, end + dt.timedelta(hours=1))) + "\n")
PY
