#!/bin/bash
# Nothing to build: the agent writes the service from scratch. Just prepare /app.
set -euo pipefail
mkdir -p /app/data
