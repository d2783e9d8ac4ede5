"""Checkpoints survive a kill at every point of a save: the run resumes from a complete checkpoint
(the old one or the new one), and the next save succeeds and cleans up what the killed one left."""

from __future__ import annotations

import json
from pathlib import Path

from tmax.rl import checkpoint


def _write(tag: str):
    def write(folder: Path) -> None:
        (folder / "model.pt").write_text(tag)
        (folder / "optim.pt").write_text(tag)
    return write


def test_a_kill_at_every_point_of_a_save_leaves_a_complete_checkpoint(tmp_path):
    ops = list(checkpoint.save_steps(tmp_path / "probe", 1, _write("a"), {"version": 1}))
    n_ops = len(list(checkpoint.save_steps(tmp_path / "probe", 2, _write("b"), {"version": 2})))
    assert n_ops >= len(ops) + 1  # the second save also removes the first checkpoint
    for k in range(n_ops + 1):
        out = tmp_path / f"run{k}"
        checkpoint.save(out, 1, _write("step1"), {"version": 1})
        steps = checkpoint.save_steps(out, 2, _write("step2"), {"version": 2})
        done = [next(steps) for _ in range(k)]  # then the process dies
        ck = checkpoint.latest(out)
        assert ck is not None, done
        state = checkpoint.read_state(ck)
        switched = "switched" in done
        assert state == {"step": 2 if switched else 1, "version": 2 if switched else 1}, done
        assert (ck / "model.pt").read_text() == f"step{state['step']}" == (ck / "optim.pt").read_text()
        checkpoint.save(out, 3, _write("step3"), {"version": 3})  # the next save works and cleans up
        assert checkpoint.read_state(checkpoint.latest(out))["step"] == 3
        assert sorted(p.name.split("-")[1] for p in out.iterdir() if p.name != "checkpoint") == ["000003"], done


def test_a_run_with_a_plain_checkpoint_folder_is_adopted(tmp_path):
    old = tmp_path / "checkpoint"
    old.mkdir()
    (old / "state.json").write_text(json.dumps({"step": 4, "version": 4}))
    (old / "model.pt").write_text("x")
    ck = checkpoint.latest(tmp_path)
    assert checkpoint.read_state(ck)["step"] == 4 and (tmp_path / "checkpoint").is_symlink()
    checkpoint.save(tmp_path, 5, _write("y"), {"version": 5})
    assert checkpoint.read_state(checkpoint.latest(tmp_path))["step"] == 5
    assert len([p for p in tmp_path.iterdir() if p.name.startswith("checkpoint-")]) == 1


def test_a_run_without_a_checkpoint_has_none(tmp_path):
    assert checkpoint.latest(tmp_path) is None
    (tmp_path / ".checkpoint-000001-deadbeef.partial").mkdir()  # a first save killed while writing
    assert checkpoint.latest(tmp_path) is None


def test_a_learners_files_come_back_by_name_and_a_kill_keeps_the_old_ones(tmp_path):
    """save_tensors writes NAME.pt per entry through the same crash-safe save; load_tensors reads them back."""
    import pytest

    torch = pytest.importorskip("torch", reason="needs torch (scripts/setup.sh installs it)")
    first = {"model": {"w": torch.arange(4.0)}, "optim.fsdp": {"state": {"w": {"step": torch.tensor(1.0)}}}}
    checkpoint.save_tensors(tmp_path, 1, first, {"version": 1})
    ck = checkpoint.latest(tmp_path)
    assert sorted(p.name for p in ck.iterdir()) == ["model.pt", "optim.fsdp.pt", "state.json"]
    back = checkpoint.load_tensors(ck)
    assert sorted(back) == ["model", "optim.fsdp"] and torch.equal(back["model"]["w"], torch.arange(4.0))
    assert back["optim.fsdp"]["state"]["w"]["step"].item() == 1.0
    # a second save killed after writing its files: the first checkpoint is still the one named
    steps = checkpoint.save_steps(tmp_path, 2, lambda folder: torch.save({"w": torch.zeros(4)}, folder / "model.pt"),
                                  {"version": 2})
    assert next(steps) == "written"
    assert torch.equal(checkpoint.load_tensors(checkpoint.latest(tmp_path))["model"]["w"], torch.arange(4.0))
