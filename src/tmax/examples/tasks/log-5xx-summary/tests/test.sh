#!/bin/bash
# Verifier: exact comparison of the agent's CSV with the hidden expected CSV.
# Reward 1 only if the file matches exactly (modulo a trailing newline / CRLF).
set -u
mkdir -p /logs/verifier
reward=0
out=/app/report/5xx_by_path.csv
if [ -s "$out" ]; then
    if diff <(tr -d '\r' < "$out" | sed -e '$a\') /tests/expected.csv >/tmp/diff.txt 2>&1; then
        reward=1
    else
        echo "mismatch against expected output:"; head -40 /tmp/diff.txt
    fi
else
    echo "missing or empty $out"
fi
echo "$reward" > /logs/verifier/reward.txt
