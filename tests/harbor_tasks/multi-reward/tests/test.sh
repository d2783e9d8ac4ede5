#!/bin/bash
# Two named rewards and no "reward" key: whether the file parses, and whether its values are right.
mkdir -p /logs/verifier
python3 - <<'PY'
import json
parsed = correct = 0.0
try:
    d = json.load(open("/app/config.json"))
    parsed = 1.0
    correct = float(d == {"name": "tmax", "version": 3})
except Exception:
    pass
json.dump({"parses": parsed, "correct": correct}, open("/logs/verifier/reward.json", "w"))
PY
