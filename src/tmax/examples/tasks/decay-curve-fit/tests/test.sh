#!/bin/bash
# Verifier: all three fitted parameters must be within tolerance (see check.py).
set -u
mkdir -p /logs/verifier
reward=0
if timeout 60 python3 /tests/check.py; then
    reward=1
fi
echo "$reward" > /logs/verifier/reward.txt
