#!/usr/bin/env bash
# The GPU check (benchmarks/gpu_check.py): trainer MFU in bf16, generation throughput (HF; vLLM when
# its venv exists), weight-sync seconds and the engine/trainer logprob gap with and without the FP32
# head, on a random-weight Qwen3-style model: nothing is downloaded. ~0.6B parameters on a GPU, a tiny
# model on a CPU or with --tiny. Ends within 10 minutes; the report is the last line of stdout (JSON).
# Usage: scripts/gpu_check.sh [--tiny] [--no-vllm] [--out report.json]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
export PYTHONPATH="$root/src${PYTHONPATH:+:$PYTHONPATH}"
exec timeout 600 "${PYTHON:-python3}" "$root/benchmarks/gpu_check.py" "$@"
