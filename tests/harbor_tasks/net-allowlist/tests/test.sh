#!/bin/bash
mkdir -p /logs/verifier
c=$(cat /app/codename.txt 2>/dev/null)
[ -n "$c" ] && [ ${#c} -lt 20 ] && [ ! -e /app/off-list.txt ] && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt
