"""tmax's job directories are Harbor 0.26 jobs: Harbor's own models, in Harbor's venv, validate every
config, result and ATIF trajectory of real ``tmax solve`` jobs, and ``harbor view`` serves them.

The jobs: the oracle (passes, an agent timeout, a verifier timeout, an infrastructure error) and nop
through the CLI, and scripted policies through the one harness in tool and text mode."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from conftest import backend_skip_reason, make_task

from tmax.agent.harness import Reply, ToolCall
from tmax.agent.policies import ScriptedPolicy
from tmax.jobs import JobSpec, episode_summary, load_results, solve

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "tasks" / "fix-word-tally"
ORACLE_TASKS = ("fix-word-tally", "tiny", "slow-agent", "slow-verifier", "broken")

# Harbor's models over a folder of jobs: one line of JSON with what they read, and every failure
# named by its file (a failure is a finding, not a crash, so all of them are reported at once).
VALIDATE = r"""
import json, sys
from pathlib import Path
from harbor.models.job.config import JobConfig
from harbor.models.job.result import JobResult
from harbor.models.trajectories import Trajectory
from harbor.models.trial.config import TrialConfig
from harbor.models.trial.result import TrialResult

errors, jobs = [], {}

def load(model, path):
    try:
        return model.model_validate(json.loads(path.read_text()))
    except Exception as e:
        errors.append(f"{path}: {model.__name__}: {e}")

for job in sorted(p for p in Path(sys.argv[1]).iterdir() if p.is_dir()):
    load(JobConfig, job / "config.json")
    result = load(JobResult, job / "result.json")
    trials = {}
    for t in sorted(p for p in job.iterdir() if p.is_dir()):
        load(TrialConfig, t / "config.json")
        tr = load(TrialResult, t / "result.json")
        traj_path = t / "agent" / "trajectory.json"
        traj = load(Trajectory, traj_path) if traj_path.exists() else None
        if tr is None:
            continue
        exc = tr.exception_info
        trials[t.name] = {
            "trial_name": tr.trial_name, "task_name": tr.task_name, "agent": tr.agent_info.name,
            "model": tr.agent_info.model_info.name if tr.agent_info.model_info else None,
            "reward_valid": tr.reward_valid,
            "rewards": tr.verifier_result.rewards if tr.verifier_result else None,
            "exception": exc.exception_type if exc else None, "job_id": str(tr.config.job_id),
            "timed": tr.started_at is not None and tr.finished_at is not None and tr.started_at <= tr.finished_at,
            "trajectory": None if traj is None else {
                "schema": traj.schema_version, "steps": len(traj.steps),
                "total_steps": traj.final_metrics.total_steps if traj.final_metrics else None}}
    jobs[job.name] = None if result is None else {
        "id": str(result.id), "finished": result.finished_at is not None, "n_total": result.n_total_trials,
        "completed": result.stats.n_completed_trials, "errored": result.stats.n_errored_trials,
        "pass_at_k": {key: {str(k): v for k, v in e.pass_at_k.items()} for key, e in result.stats.evals.items()},
        "trials": trials}
print(json.dumps({"errors": errors, "jobs": jobs}))
"""


@pytest.fixture(scope="module")
def harbor_python() -> str:
    """scripts/harbor_venv.sh under the user's own cache (the tests' private TMAX_HOME would make a new
    venv, downloading Harbor again)."""
    env = {k: v for k, v in os.environ.items() if k != "TMAX_HOME"}
    r = subprocess.run(["bash", str(ROOT / "scripts" / "harbor_venv.sh")], capture_output=True, text=True,
                       timeout=600, env=env)
    if r.returncode != 0:
        pytest.skip(f"no Harbor venv (scripts/harbor_venv.sh: {r.stderr.strip()[-300:]})")
    return r.stdout.strip().splitlines()[-1]


def harbor_env() -> dict[str, str]:
    # Harbor's imports reach for the network (a model price list, telemetry) unless told not to.
    return {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "HARBOR_TELEMETRY": "0"}


def tmax_solve(corpus: list[Path], policy: str, k: int, job: Path) -> None:
    cmd = [sys.executable, "-m", "tmax", "solve", *map(str, corpus), "--policy", policy, "-k", str(k), "-j", "2",
           "--job", str(job)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]


TOOL_SCRIPT = [
    Reply(content="Let me look first.", reasoning="The task names /app.", prompt_tokens=30, completion_tokens=7,
          tool_calls=[ToolCall("c1", "bash", json.dumps({"command": "ls /app"}))], logprobs=[-0.5] * 7),
    Reply(content="A reply without a command."),
    Reply(tool_calls=[ToolCall("c3", "bash", "{not json")]),
    "echo 42 > /app/answer.txt",
]  # then the scripted policy submits


@pytest.fixture(scope="module")
def jobs(tmp_path_factory) -> Path:
    """A folder of four finished jobs, as Harbor keeps them under ``jobs/``."""
    why = backend_skip_reason("bwrap")
    if why:
        pytest.skip(why)
    root = tmp_path_factory.mktemp("harbor-jobs")
    tasks, jobs = root / "tasks", root / "jobs"
    tiny = make_task(tasks / "tiny", name="tiny", metadata={"family": "tiny", "level": 1})
    corpus = [EXAMPLE, tiny,
              make_task(tasks / "slow-agent", name="slow-agent", solve="#!/bin/bash\nsleep 30\n", agent_timeout=1),
              make_task(tasks / "slow-verifier", name="slow-verifier", test="#!/bin/bash\nsleep 30\n",
                        verifier_timeout=1),
              make_task(tasks / "broken", name="broken", setup="#!/bin/bash\nexit 3\n")]
    tmax_solve(corpus, "oracle", 2, jobs / "oracle")
    tmax_solve([EXAMPLE, tiny], "nop", 1, jobs / "nop")
    solve(JobSpec(corpus=[tiny], policy="scripted", k=1, jobs=1), jobs / "scripted",
          policy=ScriptedPolicy(list(TOOL_SCRIPT)))
    solve(JobSpec(corpus=[tiny], policy="scripted", k=1, jobs=1), jobs / "text",
          policy=ScriptedPolicy(["echo 42 > /app/answer.txt"], tool_calling=False))
    return jobs


@pytest.fixture(scope="module")
def harbor_read(harbor_python, jobs) -> dict:
    r = subprocess.run([harbor_python, "-c", VALIDATE, str(jobs)], capture_output=True, text=True, timeout=300,
                       env=harbor_env())
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def results_by_trial(job: Path) -> dict[str, dict]:
    return {r["trial_name"]: r for r in load_results(job)}


def test_harbor_validates_every_config_result_and_trajectory(harbor_read, jobs):
    assert harbor_read["errors"] == []
    read = harbor_read["jobs"]
    assert sorted(read) == ["nop", "oracle", "scripted", "text"]
    oracle = read["oracle"]
    assert sorted(oracle["trials"]) == sorted(f"{t}__{a}" for t in ORACLE_TASKS for a in range(2))
    assert (oracle["n_total"], oracle["completed"], oracle["errored"], oracle["finished"]) == (10, 10, 6, True)
    trajectories = [t["trajectory"] for j in read.values() for t in j["trials"].values() if t["trajectory"]]
    assert len(trajectories) == 2  # the oracle and nop write none; each harness trial one
    assert all(t["schema"] == "ATIF-v1.8" and t["steps"] == t["total_steps"] for t in trajectories)
    for name, job in read.items():
        assert job["finished"]
        for trial, seen in job["trials"].items():
            assert seen["trial_name"] == trial and seen["timed"] and seen["job_id"] == job["id"]


def test_harbor_reads_the_rewards_and_failures_tmax_recorded(harbor_read, jobs):
    for name, job in harbor_read["jobs"].items():
        ours = results_by_trial(jobs / name)
        for trial, seen in job["trials"].items():
            r = ours[trial]
            assert seen["task_name"] == r["task"] and seen["agent"] == r["agent"]
            scored = r["outcome"] != "infra_error"
            assert seen["reward_valid"] == scored
            assert seen["rewards"] == ({"reward": r["reward"]} if scored else None)
    oracle = harbor_read["jobs"]["oracle"]["trials"]
    expected = {"fix-word-tally": None, "tiny": None, "slow-agent": "AgentTimeoutError",
                "slow-verifier": "VerifierTimeoutError", "broken": "ImageError"}
    assert {t: oracle[f"{t}__0"]["exception"] for t in ORACLE_TASKS} == expected
    # tmax scores a hung verifier 0 and counts it; Harbor is told so, and keeps the reward
    assert oracle["slow-verifier__1"]["rewards"] == {"reward": 0.0} and oracle["slow-verifier__1"]["reward_valid"]
    scripted = harbor_read["jobs"]["scripted"]["trials"]["tiny__0"]
    assert (scripted["agent"], scripted["model"]) == ("tmax-harness", "scripted")
    ours = json.loads((jobs / "oracle" / "result.json").read_text())
    assert harbor_read["jobs"]["oracle"]["pass_at_k"]["oracle__adhoc"] == {"1": ours["pass@1"], "2": ours["pass@2"]}


def test_trajectories_keep_what_the_policy_said_in_atif_fields(jobs):
    doc = json.loads((jobs / "scripted" / "tiny__0" / "agent" / "trajectory.json").read_text())
    agent = [s for s in doc["steps"] if s["source"] == "agent"]
    first, no_call, bad_args = agent[0], agent[1], agent[2]
    assert first["reasoning_content"] == "The task names /app." and first["metrics"]["logprobs"] == [-0.5] * 7
    assert first["observation"]["results"][0]["source_call_id"] == "c1"
    assert "tool_calls" not in no_call and "source_call_id" not in no_call["observation"]["results"][0]
    assert bad_args["tool_calls"][0]["arguments"] == {}
    assert bad_args["tool_calls"][0]["extra"] == {"raw_arguments": "{not json"}
    metrics = doc["final_metrics"]
    assert metrics["extra"]["submitted"] is True and metrics["extra"]["format_errors"] == 2
    assert metrics["total_prompt_tokens"] == 30 and metrics["total_completion_tokens"] == 7
    text = json.loads((jobs / "text" / "tiny__0" / "agent" / "trajectory.json").read_text())
    call = [s for s in text["steps"] if s["source"] == "agent"][0]["tool_calls"][0]
    assert call["tool_call_id"].startswith("text-") and call["arguments"] == {"command": "echo 42 > /app/answer.txt"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url: str):
    with urllib.request.urlopen(url, timeout=30) as r:
        return json.loads(r.read())


@pytest.fixture(scope="module")
def viewer(harbor_python, jobs):
    """``harbor view`` on the folder of jobs, on a free local port, for this module only."""
    port = free_port()
    harbor = Path(harbor_python).parent / "harbor"
    log = jobs.parent / "viewer.log"
    with log.open("w") as out:
        proc = subprocess.Popen([str(harbor), "view", str(jobs), "--port", str(port), "--host", "127.0.0.1",
                                 "--no-build"], stdout=out, stderr=subprocess.STDOUT, env=harbor_env(),
                                start_new_session=True)
    base = f"http://127.0.0.1:{port}/api"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                get(f"{base}/health")
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
                time.sleep(0.3)
        yield base, log
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)


def test_harbor_view_opens_the_jobs(viewer, jobs):
    base, log = viewer
    listed = {j["name"]: j for j in get(f"{base}/jobs")["items"]}
    assert sorted(listed) == ["nop", "oracle", "scripted", "text"]
    for name, job in listed.items():
        ours = json.loads((jobs / name / "result.json").read_text())
        assert job["id"] == ours["id"] and job["n_completed_trials"] == ours["n_trials"]  # its result.json read
        config = json.loads((jobs / name / "config.json").read_text())
        assert job["agents"] == [config["agents"][0]["name"]]  # its config.json read
    trials = {t["name"]: t for t in get(f"{base}/jobs/oracle/trials")["items"]}
    ours = results_by_trial(jobs / "oracle")
    assert len(trials) == 10
    assert {n: t["reward"] for n, t in trials.items()} == {
        n: (r["reward"] if r["outcome"] != "infra_error" else None) for n, r in ours.items()}
    assert trials["broken__0"]["error_type"] == "ImageError"
    assert get(f"{base}/jobs/oracle/config")["n_attempts"] == 2
    assert get(f"{base}/jobs/oracle/trials/tiny__1")["trial_name"] == "tiny__1"
    assert {t["task_name"] for t in get(f"{base}/jobs/oracle/tasks")["items"]} == set(ORACLE_TASKS)
    traj = get(f"{base}/jobs/scripted/trials/tiny__0/trajectory")
    assert traj["schema_version"] == "ATIF-v1.8" and traj["final_metrics"]["extra"]["submitted"]
    assert "Failed to parse" not in log.read_text()  # the viewer falls back silently on a bad file


def test_tmax_readers_read_the_harbor_layout(jobs):
    from tmax.analysis.stats import job_stats
    from tmax.calibrate import measure
    from tmax.rl.sft import successful_conversations

    stats = job_stats(jobs / "scripted", {})
    assert stats["turns"] == [5] and stats["submitted_fraction"] == 1.0 and stats["command_mix"] == {"ls": 1, "echo": 2}
    assert episode_summary(results_by_trial(jobs / "scripted")["tiny__0"])["commands"][0] == "ls /app"
    assert measure([jobs / "oracle"])["tiny"]["1"] == {"passed": 2, "trials": 2, "estimate": 0.75}
    convs = successful_conversations([jobs / "scripted", jobs / "text"])
    assert len(convs) == 2 and all(m[0]["role"] == "system" for m in convs)
    old = {"task": "t", "outcome": "passed", "reward": 1.0, "agent_info": {"steps": 3}}  # an older tmax's trial
    assert episode_summary(old) == {"steps": 3}


def test_a_resumed_job_keeps_its_identity_and_trials(jobs):
    before = json.loads((jobs / "oracle" / "result.json").read_text())
    trial_ids = {n: r["id"] for n, r in results_by_trial(jobs / "oracle").items()}
    corpus = [Path(p) for p in json.loads((jobs / "oracle" / "config.json").read_text())["corpus"]]
    tmax_solve(corpus, "oracle", 2, jobs / "oracle")
    after = json.loads((jobs / "oracle" / "result.json").read_text())
    assert (after["id"], after["started_at"]) == (before["id"], before["started_at"])
    assert after["finished_at"] >= before["finished_at"] and after["n_trials"] == 10
    assert {n: r["id"] for n, r in results_by_trial(jobs / "oracle").items()} == trial_ids  # none rerun


def test_a_job_dir_of_an_older_tmax_is_refused(tmp_path):
    job = tmp_path / "old"
    (job / "t__0").mkdir(parents=True)
    (job / "config.json").write_text(json.dumps({"policy": "oracle", "harness": "tmax", "k": 1}))
    (job / "t__0" / "result.json").write_text(json.dumps({"task": "t", "attempt": 0, "outcome": "passed",
                                                          "reward": 1.0, "agent_info": {}}))
    with pytest.raises(ValueError, match=r"config.json: this job dir was written by an older tmax"):
        solve(JobSpec(corpus=[EXAMPLE], policy="oracle"), job)
    assert sorted(p.name for p in job.iterdir()) == ["config.json", "t__0"]  # nothing written over it
