"""The learning benchmark's statistics: the paired gain over the warm start is read from the job
directories the evaluations wrote, task by task, and reaches the RESULT line."""

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _learning():
    spec = importlib.util.spec_from_file_location("learning_bench", ROOT / "benchmarks" / "learning.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _job(dest: Path, outcomes: dict[str, list[float | None]]) -> None:
    for task, rewards in outcomes.items():
        for i, r in enumerate(rewards):
            trial = dest / f"{task}__{i}"
            trial.mkdir(parents=True)
            (trial / "result.json").write_text(json.dumps({"task": task, "reward": r}))


def test_paired_gain_pairs_tasks_and_ignores_unfinished_attempts(tmp_path):
    L = _learning()
    for t in ("a-1000", "b-1000", "c-1000", "d-1000"):
        (tmp_path / "tasks-heldout-seeds" / t).mkdir(parents=True)
    # the warm start solves a and b half the time; after RL a and b always, c once, d never
    _job(tmp_path / "eval-warm", {"a-1000": [1.0, 0.0], "b-1000": [0.0, 1.0], "c-1000": [0.0, 0.0],
                                  "d-1000": [0.0, 0.0], "other-0": [1.0, 1.0]})
    _job(tmp_path / "eval-dppo_tv", {"a-1000": [1.0, 1.0], "b-1000": [1.0, None, 1.0], "c-1000": [1.0, 0.0],
                                     "d-1000": [0.0, 0.5]})
    g = L.paired_gain(tmp_path, "dppo_tv", "heldout_seeds", seed=0)
    assert g["tasks"] == 4  # "other-0" is not in the split
    assert abs(g["gain"] - (0.5 + 0.5 + 0.5 + 0.0) / 4) < 1e-9  # a reward of 0.5 is not a pass; None is skipped
    lo, hi = g["ci95"]
    assert 0.0 <= lo <= g["gain"] <= hi <= 0.5

    results = {"k": 2, "warm_start": {s: {"pass@1": 0.25, "ci95": [0.0, 0.5], "tasks": 4} for s in L.SPLITS},
               "dppo_tv": {**{s: {"pass@1": 0.6, "ci95": [0.3, 0.9], "tasks": 4} for s in L.SPLITS},
                           "steps": 4, "train_minutes": 12.0,
                           "gain_over_warm_start": {"heldout_seeds": g}}}
    line = L.result_line(results, ["dppo_tv"])
    assert line.startswith("RESULT held-out pass@1 (k=2)")
    assert f"RL gain over the warm start (paired): dppo_tv {g['gain']:+.3f}" in line
    assert line.count("paired") == 1  # no gain recorded for heldout_families: none printed
