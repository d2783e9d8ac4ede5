#!/bin/bash
# The service must be up for the verifier too: the token is read from it, not from a file.
mkdir -p /logs/verifier
want=$(python3 -c "import urllib.request as u; print(u.urlopen('http://127.0.0.1:8080/token', timeout=5).read().decode().strip())")
[ -n "$want" ] && [ "$want" = "$(cat /app/token.txt 2>/dev/null)" ] && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt
