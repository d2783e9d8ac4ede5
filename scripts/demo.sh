#!/usr/bin/env bash
# Fresh machine -> the main job on the embedded defaults.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec python3 -m tmax demo "$@"
