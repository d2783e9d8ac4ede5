#!/bin/bash
# Runs on the verifier's own image: the agent's report arrives as an artifact, nothing else does
# (not the agent's scratch file, not the task's numbers.txt).
mkdir -p /logs/verifier
ok=1
cmp -s /app/report.txt /opt/checker/expected.txt || ok=0
[ -e /app/scratch.txt ] && ok=0
[ -e /app/numbers.txt ] && ok=0
echo $ok > /logs/verifier/reward.txt
