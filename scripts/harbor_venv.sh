#!/usr/bin/env bash
# Harbor (PyPI `harbor`) needs Python >= 3.12 and its own dependencies, so it lives in its own
# virtual environment: $TMAX_HOME/venvs/harbor (default ~/.cache/tmax/venvs/harbor).
# tmax is importable there (a .pth file naming this checkout's src/; what Harbor loads of tmax is
# stdlib-only), so `harbor run -e tmax.interop.harbor_env:TmaxEnvironment` and
# `--agent-import-path tmax.interop.harbor_agent:TmaxAgent` work as they are.
# Prints the venv's python on success. Used by the interop tests and scripts. Quick when done.
set -euo pipefail
home="${TMAX_HOME:-$HOME/.cache/tmax}"
venv="$home/venvs/harbor"
src="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/src"

# Point the venv at this checkout's tmax (rewritten only when it names another one).
link_tmax() {
  local site pth
  site="$1"
  pth="$site/tmax.pth"
  if [ "$(cat "$pth" 2>/dev/null)" != "$src" ]; then
    printf '%s\n' "$src" > "$pth.tmp.$$" && mv -f "$pth.tmp.$$" "$pth"
  fi
}

if [ -x "$venv/bin/python" ] && site="$("$venv/bin/python" -c 'import harbor, sysconfig; print(sysconfig.get_paths()["purelib"])' 2>/dev/null)"; then
  link_tmax "$site"
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
link_tmax "$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
echo "$venv/bin/python"
