"""Partial-credit scorer for csv-cleanup-partial.

Writes /logs/verifier/reward.json, e.g.
  {"reward": 0.7, "dedup": 1.0, "name": 1.0, "email": 1.0, "phone": 0.5, "signup_date": 0.0, "country": 0.7}

Weights (sum to 1):
  dedup        0.25  all-or-nothing: the set of ids equals the expected set exactly, each id once
  name         0.15  fraction of expected rows whose name is exactly right
  email        0.15  same for email
  phone        0.15  same for phone
  signup_date  0.15  same for signup_date
  country      0.15  same for country
A row counts for the per-field fractions only if its id is present (first occurrence
wins). A missing/unreadable file or a wrong header scores 0 everywhere.
"""
import csv
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = "/app/data/customers_clean.csv"
HEADER = ["id", "name", "email", "phone", "signup_date", "country"]
WEIGHTS = {"dedup": 0.25, "name": 0.15, "email": 0.15, "phone": 0.15, "signup_date": 0.15, "country": 0.15}


def score():
    parts = {k: 0.0 for k in WEIGHTS}
    with open(os.path.join(HERE, "expected.csv"), newline="") as f:
        expected = {r["id"]: r for r in csv.DictReader(f)}
    try:
        with open(OUT, newline="", encoding="utf-8", errors="replace") as f:
            rows = list(csv.reader(f))
    except OSError as e:
        print("missing output:", e)
        return parts
    if not rows or [c.strip() for c in rows[0]] != HEADER:
        print("bad header:", rows[:1])
        return parts
    got = {}
    ids = []
    for r in rows[1:]:
        if not r or all(not c.strip() for c in r):
            continue
        r = (r + [""] * 6)[:6]
        ids.append(r[0].strip())
        got.setdefault(r[0].strip(), dict(zip(HEADER, r)))
    parts["dedup"] = 1.0 if sorted(ids) == sorted(expected) else 0.0
    print("ids: got %d rows (%d distinct), want %d" % (len(ids), len(set(ids)), len(expected)))
    for field in HEADER[1:]:
        good = sum(1 for i, e in expected.items() if i in got and got[i][field] == e[field])
        parts[field] = good / len(expected)
        bad = [i for i, e in expected.items() if not (i in got and got[i][field] == e[field])]
        if bad:
            i = bad[0]
            print("%s: %d/%d right; e.g. id %s got %r want %r" % (
                field, good, len(expected), i, got.get(i, {}).get(field), expected[i][field]))
    return parts


def main():
    try:
        parts = score()
    except Exception as e:  # never leave without a reward
        print("scorer error:", e)
        parts = {k: 0.0 for k in WEIGHTS}
    reward = round(sum(WEIGHTS[k] * parts[k] for k in WEIGHTS), 4)
    result = {"reward": reward}
    result.update({k: round(v, 4) for k, v in parts.items()})
    os.makedirs("/logs/verifier", exist_ok=True)
    with open("/logs/verifier/reward.json", "w") as f:
        json.dump(result, f)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
