#!/usr/bin/env bash
# The benchmarks' own virtual environment, for the reference tools they compare against
# (mini-swe-agent, PyPI `mini-swe-agent`): $TMAX_HOME/venvs/bench (default ~/.cache/tmax/venvs/bench).
# Idempotent; prints the venv's python on success. benchmarks/harness.py runs it on first use.
set -euo pipefail
home="${TMAX_HOME:-$HOME/.cache/tmax}"
venv="$home/venvs/bench"
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c 'import minisweagent' 2>/dev/null; then
  echo "$venv/bin/python"; exit 0
fi
py="${PYTHON:-python3}"
"$py" -c 'import sys; sys.exit(sys.version_info < (3, 10))' \
  || { echo "setup_bench_venv: mini-swe-agent needs Python >= 3.10 ($py is older)" >&2; exit 1; }
mkdir -p "$home/venvs"
"$py" -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check "mini-swe-agent" >&2
echo "$venv/bin/python"
