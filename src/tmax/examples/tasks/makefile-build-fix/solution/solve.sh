#!/bin/bash
# Reference solution: replace the Makefile (tabs, all sources, -lm, build/ dir as an
# order-only prerequisite, compiler-generated header dependencies, real clean target).
set -euo pipefail
cp /solution/Makefile /app/calc/Makefile
make -C /app/calc clean >/dev/null
make -C /app/calc -j4 >/dev/null
