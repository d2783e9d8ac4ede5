#!/bin/bash
# Reference solution: install the fixed tally.c (bounded/dynamic word buffer, correct
# realloc size, int for fgetc, lower-casing, flush of the final word, consistent
# comparator with ascending tie-break, print exactly N) and rebuild.
set -euo pipefail
cp /solution/tally.c /app/tally/tally.c
make -C /app/tally -B >/dev/null
