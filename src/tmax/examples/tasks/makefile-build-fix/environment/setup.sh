#!/bin/bash
# Installs the calc project (C sources + a broken Makefile) into /app/calc.
set -euo pipefail
cp -r /environment/calc /app/calc
chmod -R u+rwX,go+rX /app/calc
