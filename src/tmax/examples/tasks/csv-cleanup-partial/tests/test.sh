#!/bin/bash
# Verifier: partial credit, see the weights in check.py. check.py always writes
# /logs/verifier/reward.json; the fallback below covers a crash or timeout of python.
set -u
mkdir -p /logs/verifier
rm -f /logs/verifier/reward.json
timeout 100 python3 /tests/check.py
if [ ! -s /logs/verifier/reward.json ]; then
    echo '{"reward": 0.0}' > /logs/verifier/reward.json
fi
