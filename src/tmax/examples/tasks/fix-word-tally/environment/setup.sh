#!/bin/bash
# Installs the buggy tally program and a sample input into /app/tally.
set -euo pipefail
mkdir -p /app/tally
cp /environment/tally.c /environment/Makefile /app/tally/
printf 'The cat and THE dog. the Cat sat; a dog ran, and ran and ran\nZebra zebra zEbRa' > /app/tally/sample.txt
cd /app/tally && make >/dev/null
