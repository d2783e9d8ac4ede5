#!/bin/bash
mkdir -p /logs/verifier
[ "$(printf 'first\nsecond')" = "$(cat /app/notes.txt 2>/dev/null)" ] && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt
