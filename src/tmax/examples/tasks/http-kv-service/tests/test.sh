#!/bin/bash
# Verifier: starts the agent's service via /app/start.sh and talks to it over loopback.
# All-or-nothing: reward 1 only if every API / persistence / concurrency check passes.
set -u
mkdir -p /logs/verifier
reward=0
if timeout 110 python3 /tests/check.py; then
    reward=1
fi
echo "$reward" > /logs/verifier/reward.txt
