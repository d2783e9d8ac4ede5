#!/bin/bash
# Verifier: all-or-nothing comparison of the summary JSON with the hidden expected values.
set -u
mkdir -p /logs/verifier
reward=0
if timeout 60 python3 /tests/check.py; then
    reward=1
fi
echo "$reward" > /logs/verifier/reward.txt
