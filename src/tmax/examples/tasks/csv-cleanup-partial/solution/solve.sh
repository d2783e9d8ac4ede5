#!/bin/bash
# Reference solution: normalise every field with the Python csv module, dedupe on email.
set -euo pipefail
python3 - <<'PY'
import csv, datetime as dt, re

COUNTRY = {}
for code, names in {"US": ["us", "usa", "u.s.", "united states"], "GB": ["gb", "uk", "united kingdom", "great britain"],
                    "DE": ["de", "germany", "deutschland"], "CA": ["ca", "canada"]}.items():
    for n in names:
        COUNTRY[n] = code

def date(s):
    s = s.strip()
    for fmt in ("%Y-%m-%d", "%m/%d/%Y", "%d.%m.%Y", "%d %b %Y"):
        try:
            return dt.datetime.strptime(s, fmt).date().isoformat()
        except ValueError:
            pass
    raise ValueError("unparsed date %r" % s)

def phone(s):
    d = re.sub(r"\D", "", s)
    if not d:
        return ""
    if len(d) == 11 and d[0] == "1":
        d = d[1:]
    assert len(d) == 10, s
    return "+1" + d

with open("/app/data/customers_raw.csv", newline="") as f:
    rows = list(csv.DictReader(f))
out = {}
for r in sorted(rows, key=lambda r: int(r["id"])):
    email = r["email"].strip().lower()
    if email in out:
        continue
    out[email] = [r["id"].strip(), " ".join(w[:1].upper() + w[1:].lower() for w in r["name"].split()), email,
                  phone(r["phone"]), date(r["signup_date"]), COUNTRY[r["country"].strip().lower()]]
with open("/app/data/customers_clean.csv", "w", newline="") as f:
    w = csv.writer(f, lineterminator="\n")
    w.writerow(["id", "name", "email", "phone", "signup_date", "country"])
    w.writerows(sorted(out.values(), key=lambda r: int(r[0])))
PY
