#!/bin/bash
# Verifier: all-or-nothing over clean/parallel/incremental build behaviour (see check.py).
set -u
mkdir -p /logs/verifier
reward=0
if timeout 110 python3 /tests/check.py; then
    reward=1
fi
echo "$reward" > /logs/verifier/reward.txt
