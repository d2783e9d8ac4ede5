#!/bin/bash
# The sidecar keeps what the agent stored: the verifier reads it back from the service.
mkdir -p /logs/verifier
stored=$(python3 -c "import urllib.request as u; print(u.urlopen('http://kv:7000/value', timeout=5).read().decode())")
[ "$stored" = 42 ] && [ "$(cat /app/answer.txt 2>/dev/null)" = 42 ] && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt
