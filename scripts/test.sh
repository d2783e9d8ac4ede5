#!/usr/bin/env bash
# Fresh machine -> the test suite (the tier that CI runs). Extra args go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# The default image is built once (cached by content hash) for the tests that gate on it.
python3 -m tmax image build default
# vLLM's own venv (cached; ~2 min and ~3.5 GB the first time) for the vLLM engine's tests.
bash scripts/vllm_venv.sh >/dev/null || echo "test: the vLLM venv did not build; tests/test_vllm.py will say why it skips" >&2
# Podman (apt, seconds) for the container backends' tests; the docker daemon and apptainer are not set up.
bash scripts/setup-podman.sh >/dev/null || echo "test: podman did not install; its tests will say why they skip" >&2
exec python3 -m pytest -q "$@"
