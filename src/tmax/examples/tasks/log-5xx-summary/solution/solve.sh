#!/bin/bash
# Reference solution: stream all three logs, filter the window and 5xx, group by path.
set -euo pipefail
mkdir -p /app/report
{ zcat /app/logs/access.log.2.gz; cat /app/logs/access.log.1 /app/logs/access.log; } |
python3 -c '
import re, sys, collections
pat = re.compile(r"^\S+ \S+ \S+ \[14/Mar/2024:(\d\d:\d\d:\d\d) \+0000\] \"([A-Z]+) (\S+) HTTP/[0-9.]+\" (\d{3}) ")
counts = collections.Counter()
for ln in sys.stdin:
    m = pat.match(ln)
    if not m:
        continue
    hms, _method, target, status = m.groups()
    if "02:00:00" <= hms < "03:00:00" and 500 <= int(status) <= 599:
        counts[target.split("?", 1)[0]] += 1
print("path,count")
for path, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
    print("%s,%d" % (path, n))
' > /app/report/5xx_by_path.csv
