"""Jobs: K attempts per task, J at a time, in Harbor's job layout; resumable; pass@k.

Layout::

    <job>/config.json  result.json
    <job>/<task>__<attempt>/config.json  result.json  trial.log  exception.txt?  agent/trajectory.json  verifier/

A trial counts once its ``result.json`` exists (written atomically, last). A rerun skips finished
trials and redoes unfinished ones from scratch, so a job killed with -9 and rerun ends with exactly the
trials of an uninterrupted run. Infrastructure errors are retried with backoff and, if they persist,
recorded as ``infra_error`` and kept out of pass@k.

A trial dir is named after its task, so a task whose name is not one safe path component (``../x``,
``/etc``) is refused as a load error: no trial dir is ever made, or removed, outside the job dir.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

from tmax.safe_files import check_name
from tmax.task import Task, TaskError, load_task
from tmax.trial import AGENTS, Outcome, TrialResult, run_trial

INFRA_RETRIES = 2
_POLICY_LOCK = threading.Lock()


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k = 1 - C(n-c, k) / C(n, k)."""
    if n < k:
        raise ValueError(f"pass@{k} needs at least {k} attempts, got {n}")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def _write_json(path: Path, obj) -> None:
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(obj, indent=1, sort_keys=True, default=str))
    os.replace(tmp, path)


@dataclass
class JobSpec:
    corpus: list[Path]
    policy: str
    k: int = 1
    jobs: int = 2
    backend: str = "bwrap"
    base_url: str | None = None
    harness: str = "tmax"  # or "terminus"
    max_steps: int = 64
    max_tokens_per_turn: int = 16384
    command_timeout: float = 120.0
    temperature: float = 1.0

    def to_json(self) -> dict:
        d = dict(self.__dict__)
        d["corpus"] = [str(p) for p in self.corpus]
        return d


def make_agent(spec: JobSpec, trial_dir: Path, shared: dict):
    if spec.policy in AGENTS:
        return AGENTS[spec.policy]()
    from tmax.agent import HarnessAgent, HarnessConfig, make_policy

    with _POLICY_LOCK:  # one engine for the whole job (models are big); threads must not load it twice
        if "policy" not in shared:
            shared["policy"] = make_policy(spec.policy, base_url=spec.base_url, temperature=spec.temperature)
    cfg = HarnessConfig(max_steps=spec.max_steps, max_tokens_per_turn=spec.max_tokens_per_turn,
                        command_timeout=spec.command_timeout)
    if spec.harness == "terminus":
        from tmax.agent.terminus import TerminusAgent

        return TerminusAgent(shared["policy"], cfg, trial_dir / "agent" / "trajectory.json")
    return HarnessAgent(shared["policy"], cfg, trial_dir / "agent" / "trajectory.json")


def trial_dir(job_dir: Path, task: Task, attempt: int) -> Path:
    """``<job>/<task>__<attempt>``. run_one removes what is there, so a task name that is not one safe
    path component (``../x``, ``/etc``) is refused rather than joined."""
    check_name(task.name, task.path, "task.name")
    return job_dir / f"{task.name}__{int(attempt)}"


def run_one(spec: JobSpec, task: Task, attempt: int, job_dir: Path, shared: dict) -> dict:
    tdir = trial_dir(job_dir, task, attempt)
    if tdir.exists():
        shutil.rmtree(tdir)  # an unfinished trial from a killed run: start it over
    (tdir / "agent").mkdir(parents=True)
    (tdir / "artifacts").mkdir()
    _write_json(tdir / "config.json", {"task": str(task.path), "task_name": task.name, "attempt": attempt,
                                       "policy": spec.policy, "harness": spec.harness, "backend": spec.backend})
    log = []
    res: TrialResult | None = None
    agent = None
    for retry in range(INFRA_RETRIES + 1):
        agent = make_agent(spec, tdir, shared)
        res = run_trial(task, agent, backend=spec.backend, out_dir=tdir)
        log.append(f"try {retry + 1}: {res.outcome.value} reward={res.reward} {res.reason}")
        if res.outcome != Outcome.INFRA_ERROR:
            break
        time.sleep(min(30.0, 2.0 * 2 ** retry))
    assert res is not None
    (tdir / "trial.log").write_text("\n".join(log) + "\n")
    if res.outcome == Outcome.INFRA_ERROR:
        (tdir / "exception.txt").write_text(res.reason + "\n")
    result = {**res.to_json(), "attempt": attempt, "task_path": str(task.path),
              "agent_info": agent.info() if hasattr(agent, "info") else {}, "metadata": task.metadata}
    _write_json(tdir / "result.json", result)  # last: its presence marks the trial done
    return result


def load_results(job_dir: Path) -> list[dict]:
    out = []
    for d in sorted(job_dir.iterdir()) if job_dir.exists() else []:
        f = d / "result.json"
        if d.is_dir() and "__" in d.name and f.exists():
            try:
                out.append(json.loads(f.read_text()))
            except json.JSONDecodeError:
                continue
    return out


def summarize(results: list[dict], k_max: int) -> dict:
    by_task: dict[str, list[dict]] = {}
    for r in results:
        by_task.setdefault(r["task"], []).append(r)
    outcomes: dict[str, int] = {}
    for r in results:
        outcomes[r["outcome"]] = outcomes.get(r["outcome"], 0) + 1
    per_task = {}
    for name, rs in sorted(by_task.items()):
        scored = [r for r in rs if r["outcome"] != "infra_error" and r["reward"] is not None]
        n, c = len(scored), sum(1 for r in scored if r["reward"] >= 1.0)
        per_task[name] = {"n": n, "passed": c, "infra_errors": len(rs) - n,
                          "mean_reward": (sum(r["reward"] for r in scored) / n) if n else None,
                          **{f"pass@{k}": pass_at_k(n, c, k) for k in range(1, k_max + 1) if n >= k}}
    overall = {}
    for k in range(1, k_max + 1):
        vals = [t[f"pass@{k}"] for t in per_task.values() if f"pass@{k}" in t]
        if vals:
            overall[f"pass@{k}"] = sum(vals) / len(vals)
    rewards = [t["mean_reward"] for t in per_task.values() if t["mean_reward"] is not None]
    return {"n_tasks": len(per_task), "n_trials": len(results), "outcomes": outcomes, **overall,
            "mean_reward": sum(rewards) / len(rewards) if rewards else None, "tasks": per_task}


def solve(spec: JobSpec, job_dir: Path, progress: Callable[[dict, dict], None] | None = None) -> dict:
    """Run (or resume) a job; returns the job summary (also written to result.json)."""
    job_dir.mkdir(parents=True, exist_ok=True)
    cfg_path = job_dir / "config.json"
    if cfg_path.exists():
        old = json.loads(cfg_path.read_text())
        if old.get("policy") != spec.policy or old.get("harness", "tmax") != spec.harness:
            raise ValueError(f"{cfg_path}: this job ran policy {old.get('policy')!r} with harness "
                             f"{old.get('harness')!r}; use another --job directory")
    _write_json(cfg_path, spec.to_json())
    tasks: list[Task] = []
    load_errors = {}
    for p in spec.corpus:
        try:
            task = load_task(p)
            check_name(task.name, task.path, "task.name")  # it names the trial dirs
            tasks.append(task)
        except TaskError as e:
            load_errors[str(p)] = str(e)
    done = {(r["task"], r["attempt"]) for r in load_results(job_dir)}
    todo = [(t, a) for t in tasks for a in range(spec.k) if (t.name, a) not in done]
    shared: dict = {}
    results = load_results(job_dir)
    with ThreadPoolExecutor(max_workers=max(1, spec.jobs)) as pool:
        futs = [pool.submit(run_one, spec, t, a, job_dir, shared) for t, a in todo]
        for fut in as_completed(futs):
            results.append(fut.result())
            if progress:
                progress(results[-1], summarize(results, 1))
    summary = summarize(load_results(job_dir), spec.k)
    summary["load_errors"] = load_errors
    _write_json(job_dir / "result.json", summary)
    return summary
