#!/bin/bash
curl -sSf -m 20 http://deb.debian.org/debian/dists/stable/Release | sed -n 's/^Codename: //p' > /app/codename.txt
# Hosts off the allowlist are unreachable: this must fail.
curl -s -m 5 -o /dev/null http://security.debian.org/ && echo reached > /app/off-list.txt
true
