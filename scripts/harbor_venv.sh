#!/usr/bin/env bash
# Harbor (PyPI `harbor`) needs Python >= 3.12 and its own dependencies, so it lives in its own
# virtual environment: $TMAX_HOME/venvs/harbor (default ~/.cache/tmax/venvs/harbor).
# Prints the venv's python on success. Used by the interop tests and scripts.
set -euo pipefail
home="${TMAX_HOME:-$HOME/.cache/tmax}"
venv="$home/venvs/harbor"
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c 'import harbor' 2>/dev/null; then
  echo "$venv/bin/python"; exit 0
fi
py=""
for cand in python3.13 python3.12 /root/.pyenv/versions/3.13*/bin/python3 /root/.pyenv/versions/3.12*/bin/python3; do
  if command -v "$cand" >/dev/null 2>&1 && "$cand" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then
    py="$cand"; break
  fi
done
[ -n "$py" ] || { echo "harbor_venv: no Python >= 3.12 found (harbor needs it)" >&2; exit 1; }
mkdir -p "$home/venvs"
"$py" -m venv "$venv"
"$venv/bin/pip" install -q "harbor>=0.25" >&2
echo "$venv/bin/python"
