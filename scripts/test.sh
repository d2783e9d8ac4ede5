#!/usr/bin/env bash
# Fresh machine -> the test suite (the tier that CI runs). Extra args go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# The default image is built once (cached by content hash) for the tests that gate on it.
python3 -m tmax image build default
exec python3 -m pytest -q "$@"
