#!/bin/bash
# Creates /app/shop.db (seeded, deterministic) and an empty output directory.
set -euo pipefail
python3 /environment/make_db.py /app/shop.db 2023
mkdir -p /app/out
