#!/bin/bash
# Starts the token service, then runs what the container was asked to run.
mkdir -p /srv/www
echo "tok-$(echo entrypoint-fixture | sha256sum | cut -c1-12)" > /srv/www/token
cd /srv/www && nohup python3 -m http.server 8080 --bind 127.0.0.1 >/tmp/http.log 2>&1 &
exec "$@"
