#!/bin/bash
# Verifier: all-or-nothing over permissions, archive contents/modes and manifest (see check.py).
set -u
mkdir -p /logs/verifier
reward=0
if timeout 100 python3 /tests/check.py; then
    reward=1
fi
echo "$reward" > /logs/verifier/reward.txt
