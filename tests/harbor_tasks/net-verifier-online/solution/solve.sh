#!/bin/bash
# The agent has no network: a fetch here fails, and the answer does not need one.
curl -s -m 5 -o /dev/null http://deb.debian.org/debian/ && echo online > /app/leak.txt
echo ready > /app/status.txt
