#!/bin/bash
# Verifier: recompile the agent's tally.c and compare against a reference on hidden inputs.
# All-or-nothing: reward 1 only if every hidden case matches byte for byte.
set -u
mkdir -p /logs/verifier
reward=0
if timeout 100 python3 /tests/check.py; then
    reward=1
fi
echo "$reward" > /logs/verifier/reward.txt
