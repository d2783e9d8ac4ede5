"""Jobs: K attempts per task, J at a time, in Harbor's job layout; resumable; pass@k.

Layout::

    <job>/config.json  result.json
    <job>/<task>__<attempt>/config.json  result.json  trial.log  exception.txt?  agent/trajectory.json  verifier/

Every JSON file is the Harbor 0.26 document of its name (``JobConfig``, ``JobResult``, ``TrialConfig``,
``TrialResult``; trajectories are ATIF, see ``tmax.agent.atif``), so ``harbor view`` opens the folder
that holds the job, as it opens Harbor's own ``jobs/``. tmax's own fields sit beside Harbor's at the
top level, where Harbor's models ignore unknown keys:

- job ``config.json``: the ``JobSpec`` (corpus, policy, k, harness, ...);
- job ``result.json``: the summary (n_tasks, n_trials, outcomes, pass@k, mean_reward, tasks, load_errors);
- trial ``config.json``: task_name, attempt, policy, harness, backend;
- trial ``result.json``: the trial's outcome, reward, rewards, reason, seconds, ... (``tmax.trial``),
  attempt, tries, task_path and metadata; the harness' episode summary is Harbor's
  ``agent_result.metadata["tmax"]``, where Harbor's own runs of tmax's agent put it too.

Harbor's ``verifier_result.rewards`` holds tmax's scalar reward as ``"reward"`` (the first key, the one
Harbor's viewer shows) and the verifier's other named rewards; it is absent when there is no reward
(infrastructure errors). ``exception_info`` names why a trial ended early: ``AgentTimeoutError``, a
``VerifierTimeoutError`` whose reward 0 counts (tmax scores a hung verifier as a failure), or the
infrastructure error's own type.

A trial counts once its ``result.json`` exists (written atomically, last). A rerun skips finished
trials and redoes unfinished ones from scratch, so a job killed with -9 and rerun ends with exactly the
trials of an uninterrupted run; the job keeps its id and start time. A job dir of an older tmax (not in
Harbor's layout) is refused rather than mixed. Infrastructure errors are retried with backoff and, if
they persist, recorded as ``infra_error`` and kept out of pass@k.

A trial dir is named after its task, so a task whose name is not one safe path component (``../x``,
``/etc``) is refused as a load error: no trial dir is ever made, or removed, outside the job dir.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import shutil
import threading
import time
import traceback
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import tmax
from tmax.safe_files import check_name
from tmax.sandbox import DEFAULT_BACKEND
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
    tmp.write_text(json.dumps(obj, indent=1, default=str))  # key order kept: Harbor reads the first reward
    os.replace(tmp, path)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


@dataclass
class JobSpec:
    corpus: list[Path]
    policy: str
    k: int = 1
    jobs: int = 2
    backend: str = DEFAULT_BACKEND
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


HARNESSES = ("tmax", "terminus")  # what make_agent dispatches on


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


def agent_name(spec: JobSpec) -> str:
    """The name of the agent make_agent builds (the trial's ``agent`` field)."""
    if spec.policy in AGENTS:
        return AGENTS[spec.policy].name
    if spec.harness == "terminus":
        from tmax.agent.terminus import TerminusAgent

        return TerminusAgent.name
    from tmax.agent import HarnessAgent

    return HarnessAgent.name


# -- Harbor's documents -------------------------------------------------------------------------

def _agent_config(spec: JobSpec) -> dict:
    """Harbor's AgentConfig: the agent, the policy as given, and the harness' settings."""
    if spec.policy in AGENTS:
        return {"name": agent_name(spec)}
    return {"name": agent_name(spec), "model_name": spec.policy, "base_url": spec.base_url,
            "kwargs": {"harness": spec.harness, "max_steps": spec.max_steps,
                       "max_tokens_per_turn": spec.max_tokens_per_turn, "command_timeout": spec.command_timeout,
                       "temperature": spec.temperature}}


def _environment_config(spec: JobSpec) -> dict:
    """Harbor's EnvironmentConfig. tmax's sandboxes are none of Harbor's environment types: the import
    path names where they come from (an omitted one would read as Harbor's default, docker)."""
    return {"import_path": "tmax.sandbox:get_backend", "kwargs": {"name": spec.backend}}


def job_config(spec: JobSpec, job_dir: Path) -> dict:
    """The job's ``config.json``: Harbor's JobConfig and the JobSpec."""
    return {**spec.to_json(),
            "job_name": job_dir.name, "jobs_dir": str(job_dir.resolve().parent), "n_attempts": spec.k,
            "n_concurrent_trials": max(1, spec.jobs), "retry": {"max_retries": INFRA_RETRIES},
            "agents": [_agent_config(spec)], "environment": _environment_config(spec),
            "tasks": [{"path": str(Path(p).resolve())} for p in spec.corpus]}


def trial_config(spec: JobSpec, task: Task, attempt: int, tdir: Path, job_id: str | None) -> dict:
    """A trial's ``config.json``: Harbor's TrialConfig and tmax's names for the trial."""
    return {"task": {"path": str(task.path.resolve())}, "trial_name": tdir.name,
            "trials_dir": str(tdir.resolve().parent), "agent": _agent_config(spec),
            "environment": _environment_config(spec), "job_id": job_id,
            "task_name": task.name, "attempt": attempt, "policy": spec.policy, "harness": spec.harness,
            "backend": spec.backend}


def task_checksum(task_dir: Path) -> str:
    """sha256 over the task's files (relative path and bytes, in path order; links not followed)."""
    h = hashlib.sha256()
    for f in sorted(p for p in task_dir.rglob("*") if p.is_file() and not p.is_symlink()):
        h.update(str(f.relative_to(task_dir)).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def _agent_info(agent) -> dict:
    model = getattr(getattr(agent, "policy", None), "model_name", None)
    return {"name": agent.name, "version": tmax.__version__, "model_info": {"name": model} if model else None}


def _agent_result(episode: dict) -> dict | None:
    """Harbor's AgentContext: token counts, and the episode summary as ``metadata["tmax"]``."""
    if not episode:
        return None
    return {"n_input_tokens": episode.get("prompt_tokens"), "n_output_tokens": episode.get("completion_tokens"),
            "metadata": {"tmax": episode}}


def _verifier_result(res: TrialResult) -> dict | None:
    if res.reward is None:
        return None
    return {"rewards": {"reward": res.reward, **{k: v for k, v in res.rewards.items() if k != "reward"}}}


def _exception_info(res: TrialResult, when: str) -> dict | None:
    if res.outcome == Outcome.AGENT_TIMEOUT:
        kind, override = "AgentTimeoutError", None
    elif res.outcome == Outcome.VERIFIER_TIMEOUT:
        kind, override = "VerifierTimeoutError", {"has_valid_reward": True}  # tmax counts its 0
    elif res.outcome in (Outcome.INFRA_ERROR, Outcome.ERROR):
        named = re.match(r"([A-Za-z_]\w*): ", res.reason)  # the reason starts with the error's type
        kind, override = (named.group(1) if named else "InfraError"), None
    else:
        return None
    info = {"exception_type": kind, "exception_message": res.reason.split("\n", 1)[0],
            "exception_traceback": res.reason, "occurred_at": when}
    if override:
        info["policy_override"] = override
    return info


def trial_document(res: TrialResult, agent, config: dict, task: Task, attempt: int, tdir: Path, tries: int,
                   started_at: str, finished_at: str) -> dict:
    """A trial's ``result.json``: tmax's fields and Harbor's TrialResult."""
    episode = agent.info() if hasattr(agent, "info") else {}
    return {**res.to_json(), "attempt": attempt, "tries": tries, "task_path": str(task.path),
            "metadata": task.metadata,
            "id": str(uuid.uuid4()), "task_name": task.name, "trial_name": tdir.name,
            "trial_uri": tdir.resolve().as_uri(), "task_id": {"path": str(task.path.resolve())},
            "task_checksum": task_checksum(task.path), "config": config, "agent_info": _agent_info(agent),
            "agent_result": _agent_result(episode), "verifier_result": _verifier_result(res),
            "exception_info": _exception_info(res, finished_at), "started_at": started_at,
            "finished_at": finished_at}


def episode_summary(result: dict) -> dict:
    """The harness' episode summary of a trial result (empty for the oracle and nop). Jobs of older tmax
    versions kept it as ``agent_info``."""
    if "trial_name" not in result:
        return result.get("agent_info") or {}
    return ((result.get("agent_result") or {}).get("metadata") or {}).get("tmax") or {}


def _harbor_stats(results: list[dict], n_total: int, k_max: int) -> dict:
    """Harbor's JobStats, one eval per (agent, model) as Harbor keys them (tmax has no datasets: adhoc)."""
    groups: dict[str, list[dict]] = {}
    for r in results:
        info = r["agent_info"]
        model = (info.get("model_info") or {}).get("name")
        groups.setdefault("__".join(x for x in (info["name"], model, "adhoc") if x), []).append(r)
    evals = {key: _eval_stats(rs, k_max) for key, rs in groups.items()}
    errored = [r for r in results if r.get("exception_info")]
    tokens = [r["agent_result"] for r in results if r.get("agent_result")]
    return {"n_completed_trials": len(results), "n_errored_trials": len(errored), "n_running_trials": 0,
            "n_pending_trials": max(0, n_total - len(results)), "n_cancelled_trials": 0,
            "n_retries": sum(r.get("tries", 1) - 1 for r in results), "evals": evals,
            "n_input_tokens": sum(t.get("n_input_tokens") or 0 for t in tokens) if tokens else None,
            "n_output_tokens": sum(t.get("n_output_tokens") or 0 for t in tokens) if tokens else None}


def _eval_stats(results: list[dict], k_max: int) -> dict:
    scored = [r for r in results if r.get("verifier_result")]
    reward_stats: dict[str, dict[str, list[str]]] = {}
    for r in scored:
        for key, value in r["verifier_result"]["rewards"].items():
            reward_stats.setdefault(key, {}).setdefault(str(value), []).append(r["trial_name"])
    exception_stats: dict[str, list[str]] = {}
    for r in results:
        if r.get("exception_info"):
            exception_stats.setdefault(r["exception_info"]["exception_type"], []).append(r["trial_name"])
    summary = summarize(results, k_max)
    return {"n_trials": len(scored), "n_errors": sum(1 for r in results if r.get("exception_info")),
            "metrics": [{"mean": summary["mean_reward"]}] if scored else [],
            "pass_at_k": {k: summary[f"pass@{k}"] for k in range(1, k_max + 1) if f"pass@{k}" in summary},
            "reward_stats": reward_stats, "exception_stats": exception_stats}


def job_document(spec: JobSpec, results: list[dict], n_total: int, job_id: str, started_at: str,
                 finished_at: str | None, load_errors: dict[str, str]) -> dict:
    """The job's ``result.json``: tmax's summary and Harbor's JobResult."""
    return {**summarize(results, spec.k), "load_errors": load_errors,
            "id": job_id, "started_at": started_at, "updated_at": finished_at or _now(), "finished_at": finished_at,
            "n_total_trials": n_total, "stats": _harbor_stats(results, n_total, spec.k)}


# -- running ------------------------------------------------------------------------------------

def trial_dir(job_dir: Path, task: Task, attempt: int) -> Path:
    """``<job>/<task>__<attempt>``. run_one removes what is there, so a task name that is not one safe
    path component (``../x``, ``/etc``) is refused rather than joined."""
    check_name(task.name, task.path, "task.name")
    return job_dir / f"{task.name}__{int(attempt)}"


def run_one(spec: JobSpec, task: Task, attempt: int, job_dir: Path, shared: dict, job_id: str | None = None) -> dict:
    tdir = trial_dir(job_dir, task, attempt)
    if tdir.exists():
        shutil.rmtree(tdir)  # an unfinished trial from a killed run: start it over
    (tdir / "agent").mkdir(parents=True)
    (tdir / "artifacts").mkdir()
    config = trial_config(spec, task, attempt, tdir, job_id)
    _write_json(tdir / "config.json", config)
    started_at = _now()
    log = []
    res: TrialResult | None = None
    agent = None
    for retry in range(INFRA_RETRIES + 1):
        agent = make_agent(spec, tdir, shared)
        try:
            res = run_trial(task, agent, backend=spec.backend, out_dir=tdir)
        except Exception as e:  # a bug: recorded with its traceback, never retried, the job goes on
            res = TrialResult(task=task.name, agent=getattr(agent, "name", "agent"), outcome=Outcome.ERROR,
                              reward=None, reason=f"{type(e).__name__}: {e}\n{traceback.format_exc()}")
        log.append(f"try {retry + 1}: {res.outcome.value} reward={res.reward} {res.reason}")
        if res.outcome != Outcome.INFRA_ERROR or retry == INFRA_RETRIES:  # only the infrastructure heals
            break  # no backoff after the last try: nothing follows it
        time.sleep(min(30.0, 2.0 * 2 ** retry))
    assert res is not None
    (tdir / "trial.log").write_text("\n".join(log) + "\n")
    if res.outcome in (Outcome.INFRA_ERROR, Outcome.ERROR):
        (tdir / "exception.txt").write_text(res.reason + "\n")
    result = trial_document(res, agent, config, task, attempt, tdir, len(log), started_at, _now())
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


def _resumed_identity(job_dir: Path, spec: JobSpec) -> tuple[str, str]:
    """(job id, start time): a job dir already begun keeps its own; another policy or harness, or a job
    dir of an older tmax (not in Harbor's layout), is refused."""
    cfg_path = job_dir / "config.json"
    if not cfg_path.exists():
        return str(uuid.uuid4()), _now()
    old = json.loads(cfg_path.read_text())
    if "agents" not in old:
        raise ValueError(f"{cfg_path}: this job dir was written by an older tmax, not in Harbor's job layout "
                         "(no 'agents'); resuming would mix the two formats. Use another --job directory")
    if old.get("policy") != spec.policy or old.get("harness", "tmax") != spec.harness:
        raise ValueError(f"{cfg_path}: this job ran policy {old.get('policy')!r} with harness "
                         f"{old.get('harness')!r}; use another --job directory")
    try:
        prev = json.loads((job_dir / "result.json").read_text())
        return str(uuid.UUID(prev["id"])), prev["started_at"]
    except (OSError, ValueError, KeyError, TypeError):  # killed before its first result.json: a fresh identity
        return str(uuid.uuid4()), _now()


def solve(spec: JobSpec, job_dir: Path, progress: Callable[[dict, dict], None] | None = None,
          policy=None) -> dict:
    """Run (or resume) a job; returns the job's result (also written to result.json). ``policy``, when
    given, is used instead of building ``spec.policy`` (a scripted policy, an engine the caller holds)."""
    job_dir.mkdir(parents=True, exist_ok=True)
    job_id, started_at = _resumed_identity(job_dir, spec)
    _write_json(job_dir / "config.json", job_config(spec, job_dir))
    tasks: list[Task] = []
    load_errors = {}
    for p in spec.corpus:
        try:
            task = load_task(p)
            check_name(task.name, task.path, "task.name")  # it names the trial dirs
            tasks.append(task)
        except TaskError as e:
            load_errors[str(p)] = str(e)
    n_total = len(tasks) * spec.k
    results = load_results(job_dir)
    _write_json(job_dir / "result.json", job_document(spec, results, n_total, job_id, started_at, None, load_errors))
    done = {(r["task"], r["attempt"]) for r in results}
    todo = [(t, a) for t in tasks for a in range(spec.k) if (t.name, a) not in done]
    shared: dict = {} if policy is None else {"policy": policy}
    with ThreadPoolExecutor(max_workers=max(1, spec.jobs)) as pool:
        futs = [pool.submit(run_one, spec, t, a, job_dir, shared, job_id) for t, a in todo]
        for fut in as_completed(futs):
            results.append(fut.result())
            if progress:
                progress(results[-1], summarize(results, 1))
    doc = job_document(spec, load_results(job_dir), n_total, job_id, started_at, _now(), load_errors)
    _write_json(job_dir / "result.json", doc)
    return doc
