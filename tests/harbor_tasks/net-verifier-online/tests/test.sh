#!/bin/bash
# Fetches what it checks with, as Harbor's standard test.sh installs its runner.
mkdir -p /logs/verifier
curl -sSf -m 20 -o /tmp/Release http://deb.debian.org/debian/dists/bookworm/Release || { echo 0 > /logs/verifier/reward.txt; exit 0; }
grep -q "^Codename: bookworm" /tmp/Release && [ -x /usr/games/cowsay ] && [ "$(cat /app/status.txt 2>/dev/null)" = ready ] && [ ! -e /app/leak.txt ] \
  && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt
