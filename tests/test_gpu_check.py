"""scripts/gpu_check.sh --tiny runs on a CPU (so the GPU check cannot rot) and reports every figure it
promises: trainer MFU, generation throughput, weight-sync seconds and the logprob gaps."""

from __future__ import annotations

import json
import math
import os
import subprocess
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="needs torch (scripts/setup.sh installs it)")
pytest.importorskip("transformers", reason="needs transformers (scripts/setup.sh installs it)")

ROOT = Path(__file__).resolve().parents[1]


def _run(tmp_path: Path, *flags: str, timeout: int) -> dict:
    out = tmp_path / "report.json"
    env = {**os.environ, "OMP_NUM_THREADS": "2"}
    proc = subprocess.run(["bash", str(ROOT / "scripts" / "gpu_check.sh"), "--tiny", "--out", str(out), *flags],
                          env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    report = json.loads(out.read_text())
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == report  # the last line of stdout is the report
    return report


def _positive(x) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x) and x > 0


def _check_common(report: dict) -> None:
    assert report["size"] == "tiny" and report["device"] in ("cpu", "cuda")
    assert report["model"]["params"] > 10_000 and report["model"]["layers"] == 2
    tr = report["trainer"]
    assert _positive(tr["tokens_per_s"]) and _positive(tr["step_s"]) and _positive(tr["peak_tflops"])
    assert 0 < tr["mfu"] <= 1, tr
    assert tr["tokens_per_s"] == pytest.approx(tr["tokens_per_step"] / tr["step_s"])
    assert report["trainer"]["peak_source"].startswith(("measured", "datasheet"))
    hf = report["generation"]["hf"]
    assert _positive(hf["tokens_per_s"]) and hf["new_tokens"] == hf["prompts"] * 16  # no stop token: all sampled
    assert report["weight_sync_s"]["hf"] >= 0
    gap = report["logprob_gap"]
    assert gap["tokens"] > 0
    # a random model's engine (bf16) and trainer agree to a few hundredths of a nat, with either head
    for key in ("fp32_head_max", "bf16_head_max"):
        assert 0 <= gap[key] < 0.5 and math.isfinite(gap[key]), gap


def test_the_gpu_check_runs_tiny_on_a_cpu_and_reports_every_figure(tmp_path):
    report = _run(tmp_path, "--no-vllm", timeout=170)
    _check_common(report)
    assert report["generation"]["vllm"] == {"skipped": "--no-vllm"} and "vllm" not in report["weight_sync_s"]
    assert report["logprob_gap"]["engine"] == "hf-bf16"


@pytest.mark.slow  # vLLM's start on a CPU takes a minute or more
def test_the_gpu_check_measures_vllm_where_its_venv_exists(tmp_path):
    from tmax.agent.vllm_engine import vllm_python

    if vllm_python() is None:
        pytest.skip("no vLLM venv (scripts/vllm_venv.sh)")
    report = _run(tmp_path, timeout=590)
    _check_common(report)
    vllm = report["generation"]["vllm"]
    assert "error" not in vllm, vllm
    assert _positive(vllm["tokens_per_s"]) and report["weight_sync_s"]["vllm"] > 0
    assert report["logprob_gap"]["engine"] == "vllm-bf16"
