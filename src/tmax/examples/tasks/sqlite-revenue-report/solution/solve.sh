#!/bin/bash
# Reference solution: save the query and run it against the shop database.
set -euo pipefail
mkdir -p /app/out
cp /solution/revenue.sql /app/out/revenue.sql
sqlite3 -header -csv /app/shop.db < /app/out/revenue.sql | tr -d '\r' > /app/out/revenue_2023.csv
