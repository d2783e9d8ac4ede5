"""The demo is a library module: its example tasks ship inside the package (a wheel carries them,
modes and all), its training config is valid, and `tmax demo` refuses what it cannot run."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import tmax
from tmax.demo import EXAMPLES, TRAIN_FAMILIES, TRAIN_SEEDS, WARM_SEEDS, DemoConfig
from tmax.discover import expand_task_dirs
from tmax.task import load_task

ROOT = Path(__file__).resolve().parents[1]


def test_the_example_tasks_live_in_the_package_and_the_checkout_points_at_them():
    assert EXAMPLES.is_relative_to(Path(tmax.__file__).parent)
    names = sorted(load_task(d).name for d in expand_task_dirs([EXAMPLES]))
    assert len(names) >= 10
    assert (ROOT / "examples" / "tasks").resolve() == EXAMPLES.resolve()


def test_a_wheel_carries_every_example_file_with_its_mode(tmp_path):
    src = tmp_path / "src"
    shutil.copytree(ROOT / "src", src, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for f in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / f, tmp_path / f)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                    str(tmp_path / "dist"), str(tmp_path)], check=True, capture_output=True, timeout=300)
    wheel = zipfile.ZipFile(next((tmp_path / "dist").glob("tmax-*.whl")))
    shipped = {i.filename: i.external_attr >> 16 for i in wheel.infolist() if i.filename.startswith("tmax/examples/")}
    on_disk = {f"tmax/examples/tasks/{f.relative_to(EXAMPLES).as_posix()}": f.stat().st_mode
               for f in EXAMPLES.rglob("*") if f.is_file()}
    assert shipped.keys() == on_disk.keys()
    assert all(shipped[n] & 0o111 == on_disk[n] & 0o111 for n in on_disk)  # solve.sh and test.sh stay executable


def test_the_demo_warm_starts_on_replayed_references_of_level_0_tasks(tmp_path, default_image, bwrap):
    """The demo's training data is real: its families' level-0 references replay through the harness
    as one command and score 1.0, and the warm start reads them back as conversations."""
    pytest.importorskip("torch")
    from tmax.demo import train_config
    from tmax.generate import build_family_tasks
    from tmax.rl.sft import reference_command, replay_references, successful_conversations

    assert set(WARM_SEEDS).isdisjoint(TRAIN_SEEDS)
    warm = build_family_tasks(tmp_path / "warm", TRAIN_FAMILIES, range(2))
    job = replay_references(warm, tmp_path / "warm-job")
    conversations = successful_conversations([job])
    assert len(conversations) == len(warm) == 2 * len(TRAIN_FAMILIES)
    commands = {reference_command(d) for d in warm}
    for messages in conversations:
        replies = [m["content"] for m in messages if m["role"] == "assistant"]
        assert len(replies) == 2 and any(c in replies[0] for c in commands) and "echo COMPLETE" in replies[1]
    cfg = train_config(DemoConfig(out=tmp_path, train_steps=3, backend="unshare"), tmp_path / "train-tasks", job)
    assert cfg.warm_start_jobs == [str(job)] and cfg.steps == cfg.checkpoint_every == 3 and cfg.backend == "unshare"
    assert Path(cfg.out) == tmp_path / "train"


def test_a_reference_that_needs_solution_files_is_refused_by_name(tmp_path):
    from tmax.rl.sft import reference_command

    (tmp_path / "solution").mkdir()
    (tmp_path / "solution" / "solve.sh").write_text("#!/bin/bash\nset -e\npython3 /solution/helper.py\n")
    with pytest.raises(ValueError, match="solve.sh: uses helper files under /solution"):
        reference_command(tmp_path)
    (tmp_path / "solution" / "solve.sh").write_text("#!/bin/bash\n# why\nset -euo pipefail\ncd /app\nwc -l x > y\n")
    assert reference_command(tmp_path) == "cd /app\nwc -l x > y"


def test_demo_refuses_an_unknown_backend_naming_the_option(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "tmax", "demo", "--backend", "nosuch", "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "--backend" in proc.stderr and "bwrap" in proc.stderr
    assert not any(tmp_path.iterdir())  # refused before any step ran
