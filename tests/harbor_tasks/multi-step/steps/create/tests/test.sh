#!/bin/bash
mkdir -p /logs/verifier
[ "$(cat /app/notes.txt 2>/dev/null)" = "first" ] && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt
