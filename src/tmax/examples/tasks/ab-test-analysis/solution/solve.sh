#!/bin/bash
# Reference solution: aggregate with SQLite (import the CSV into an in-memory db),
# then compute rates and the pooled two-proportion z-test in Python.
set -euo pipefail
mkdir -p /app/results
sqlite3 -csv :memory: <<'SQL' > /tmp/ab_counts.csv
.mode csv
.import /app/data/events.csv events
WITH assign AS (
    SELECT user_id, MIN(variant) AS variant, MIN(ts) AS first_ts
    FROM events WHERE event = 'exposure'
    GROUP BY user_id
    HAVING COUNT(DISTINCT variant) = 1
),
per_user AS (
    SELECT a.user_id, a.variant,
           COUNT(p.event_id) AS n_purchases,
           COALESCE(SUM(CAST(p.amount AS REAL)), 0) AS revenue
    FROM assign a
    LEFT JOIN events p ON p.user_id = a.user_id AND p.event = 'purchase' AND p.ts >= a.first_ts
    GROUP BY a.user_id, a.variant
)
SELECT variant, COUNT(*), SUM(n_purchases > 0), SUM(revenue) FROM per_user GROUP BY variant ORDER BY variant;
SQL
python3 - <<'PY'
import csv, json, math
res = {}
for variant, users, conv, revenue in csv.reader(open("/tmp/ab_counts.csv")):
    users, conv, revenue = int(users), int(conv), float(revenue)
    res[variant] = {"users": users, "converters": conv, "conversion_rate": conv / users,
                    "revenue_per_user": revenue / users}
a, b = res["A"], res["B"]
pool = (a["converters"] + b["converters"]) / (a["users"] + b["users"])
se = math.sqrt(pool * (1 - pool) * (1 / a["users"] + 1 / b["users"]))
z = (b["conversion_rate"] - a["conversion_rate"]) / se
p = math.erfc(abs(z) / math.sqrt(2))
res.update(relative_lift=(b["conversion_rate"] - a["conversion_rate"]) / a["conversion_rate"],
           z_score=z, p_value=p, significant=p < 0.05)
json.dump(res, open("/app/results/ab_summary.json", "w"), indent=2)
PY
