#!/bin/bash
# Verifier: all-or-nothing; both the CSV and the re-run of the saved query must match.
set -u
mkdir -p /logs/verifier
reward=0
if timeout 100 python3 /tests/check.py; then
    reward=1
fi
echo "$reward" > /logs/verifier/reward.txt
