#!/bin/bash
# Creates the fixture repository /app/repo (fixed content, no network).
set -euo pipefail
mkdir -p /app/repo
python3 /environment/make_repo.py /app/repo
