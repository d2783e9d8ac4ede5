#!/bin/bash
# Generates the experiment event log /app/data/events.csv (seeded, deterministic).
set -euo pipefail
mkdir -p /app/data /app/results
python3 - <<'PY'
import csv, datetime as dt, random

rng = random.Random(8675309)
start = dt.datetime(2024, 5, 6, 0, 0, 0)
rows = []

def ts(minutes):
    return (start + dt.timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%SZ")

for uid in range(1, 4201):
    user = "u%05d" % uid
    variant = "A" if rng.random() < 0.5 else "B"
    t0 = rng.uniform(0, 14 * 24 * 60)
    kind = rng.random()
    if kind < 0.03:
        # assignment bug: user saw both variants
        rows.append((t0, user, variant, "exposure", ""))
        rows.append((t0 + rng.uniform(5, 600), user, "B" if variant == "A" else "A", "exposure", ""))
    elif kind < 0.05:
        # never exposed (organic buyer); not part of the experiment
        if rng.random() < 0.5:
            rows.append((t0, user, "", "purchase", "%.2f" % rng.uniform(5, 80)))
        continue
    else:
        for k in range(rng.choice([1, 1, 1, 2, 3])):  # repeat exposures are normal
            rows.append((t0 + k * rng.uniform(10, 2000), user, variant, "exposure", ""))
    if rng.random() < 0.04:
        # purchase before the first exposure: does not count
        rows.append((t0 - rng.uniform(30, 3000), user, variant, "purchase", "%.2f" % rng.uniform(5, 80)))
    p = 0.105 if variant == "A" else 0.128
    if rng.random() < p:
        for k in range(rng.choice([1, 1, 1, 2])):
            rows.append((t0 + rng.uniform(1, 4000), user, variant, "purchase", "%.2f" % rng.uniform(5, 120)))

rows.sort(key=lambda r: (r[0], r[1]))
with open("/app/data/events.csv", "w", newline="") as f:
    w = csv.writer(f, lineterminator="\n")
    w.writerow(["event_id", "ts", "user_id", "variant", "event", "amount"])
    for i, (t, user, variant, event, amount) in enumerate(rows, 1):
        w.writerow(["e%06d" % i, ts(t), user, variant, event, amount])
PY
