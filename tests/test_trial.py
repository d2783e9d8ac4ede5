"""Trials (agent, then verifier) and the correctness gate, on tiny tasks over the host image."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from conftest import REWARD_IF_ANSWER, ScriptAgent, make_task
from tmax.gate import check_many, check_task
from tmax.images import Environment
from tmax.task import load_task
from tmax.errors import InfraError
from tmax.trial import NopAgent, OracleAgent, Outcome, read_reward, run_trial


# -- reading rewards --------------------------------------------------------------------------------

def _logs(tmp_path: Path, txt: str | None = None, js: str | None = None) -> Path:
    d = tmp_path / "logs"
    d.mkdir()
    if txt is not None:
        (d / "reward.txt").write_text(txt)
    if js is not None:
        (d / "reward.json").write_text(js)
    return d


@pytest.mark.parametrize("txt, js, reward, rewards", [
    ("1", None, 1.0, {}),
    ("0.25\n", None, 0.25, {}),
    (" 0 \n", None, 0.0, {}),
    (None, '{"reward": 0.5, "rows": 1}', 0.5, {"reward": 0.5, "rows": 1.0}),
    (None, '{"accuracy": 0.75}', 0.75, {"accuracy": 0.75}),
    (None, '{"reward": 1}', 1.0, {"reward": 1.0}),
    ("0", '{"reward": 1.0}', 1.0, {"reward": 1.0}),  # a valid reward.json wins (Harbor 0.26)
    ("1", '{"reward": 0.0, "x": 0.5}', 0.0, {"reward": 0.0, "x": 0.5}),
    ("0.25", '{"a": 1.0, "b": 0.0}', 0.5, {"a": 1.0, "b": 0.0}),  # named rewards, no "reward": their mean
    (None, '{"a": 1.0, "b": 0.5, "c": 0.0}', 0.5, {"a": 1.0, "b": 0.5, "c": 0.0}),
])
def test_reward_precedence(tmp_path, txt, js, reward, rewards):
    value, named, reason = read_reward(_logs(tmp_path, txt, js))
    assert (value, named, reason) == (reward, rewards, "")


def test_reward_key_names_the_scalar(tmp_path):
    logs = _logs(tmp_path, "1", '{"reward": 0.0, "quality": 1.0}')
    assert read_reward(logs, "quality") == (1.0, {"reward": 0.0, "quality": 1.0}, "")
    value, _, reason = read_reward(logs, "speed")
    assert value is None and "no 'speed' key" in reason and "metadata.reward_key" in reason


@pytest.mark.parametrize("txt, js, why", [
    (None, None, "no reward: the verifier wrote neither"),
    ("0.5", "{not json", "reward.json: invalid JSON"),  # reward.json exists: Harbor reads it alone
    ("0.5", '{"reward": "high"}', "flat object of finite numbers"),
    ("1.5", None, "out of range"),
    ("-0.1", None, "out of range"),
    (None, '{"reward": 2}', "out of range"),
    ("nan", None, "out of range"),
    ("inf", None, "out of range"),
    (None, '{"reward": NaN}', "flat object of finite numbers"),
    ("yes", None, "reward.txt: expected one float"),
    ("", None, "reward.txt: expected one float"),
    ("1\n0\n", None, "reward.txt: expected one float"),
    (None, "{not json", "reward.json: invalid JSON"),
    (None, '{"reward": true}', "flat object of finite numbers"),
    (None, '{"reward": {"nested": 1}}', "flat object of finite numbers"),
    (None, "[1]", "flat object of finite numbers"),
])
def test_invalid_reward_fails_with_reason(tmp_path, txt, js, why):
    value, _, reason = read_reward(_logs(tmp_path, txt, js))
    assert value is None
    assert why in reason


# -- outcomes ---------------------------------------------------------------------------------------

def test_passed_and_failed(task_factory, backend, tmp_path):
    task = task_factory()
    out = tmp_path / "trial"
    r = run_trial(task, OracleAgent(), backend=backend, out_dir=out)
    assert r.outcome == Outcome.PASSED and r.reward == 1.0 and r.reason == ""
    assert r.agent == "oracle" and r.task == "tiny"
    assert r.env_hash.startswith("host-")
    assert 0 < r.agent_seconds < r.seconds and 0 < r.verifier_seconds < r.seconds
    assert (out / "verifier" / "reward.txt").read_text() == "1\n"
    assert (out / "verifier" / "test-stdout.txt").exists()
    assert json.loads(json.dumps(r.to_json()))["outcome"] == "passed"
    n = run_trial(task, NopAgent(), backend=backend)
    assert n.outcome == Outcome.FAILED and n.reward == 0.0 and n.reason == ""
    assert n.env_hash == r.env_hash


def test_agent_timeout(task_factory, backend):
    task = task_factory(agent_timeout=1)
    r = run_trial(task, ScriptAgent("echo 42 > /app/answer.txt", "sleep 30"), backend=backend)
    assert r.outcome == Outcome.AGENT_TIMEOUT
    assert r.reward == 1.0  # the verifier still scores what was done
    assert r.reason == "agent exceeded 1s"
    assert r.agent_seconds < 8


def test_verifier_timeout(task_factory, backend):
    task = task_factory(test="#!/bin/bash\necho 1 > /logs/verifier/reward.txt\nsleep 30\n", verifier_timeout=1)
    r = run_trial(task, OracleAgent(), backend=backend)
    assert r.outcome == Outcome.VERIFIER_TIMEOUT
    assert r.reward == 0.0  # what it ran hung: a failure (never "no data", nor the 1 it wrote first)
    assert r.reason == "verifier exceeded 1s"
    assert r.verifier_seconds < 8


def test_infra_error_backend_cannot_start(task_factory, backend, tmp_path, monkeypatch):
    task = task_factory()
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))  # bwrap/unshare cannot be found
    r = run_trial(task, OracleAgent(), backend=backend)
    assert r.outcome == Outcome.INFRA_ERROR and r.reward is None
    assert "SandboxError" in r.reason and "not found on PATH" in r.reason


def test_infra_error_broken_environment(task_factory, backend):
    env = Environment(name="broken", layers=(Path("/nonexistent/tmax-layer"),), hash="broken-1")
    r = run_trial(task_factory(), OracleAgent(), backend=backend, env=env)
    assert r.outcome == Outcome.INFRA_ERROR and r.reward is None
    assert "sandbox launch failed" in r.reason
    assert r.env_hash == "broken-1"


def test_infra_error_setup_fails(task_factory, backend):
    task = task_factory(setup="#!/bin/bash\necho preparing; echo 'boom' >&2; exit 3\n")
    r = run_trial(task, OracleAgent(), backend=backend)
    assert r.outcome == Outcome.INFRA_ERROR and r.reward is None
    assert str(task.path / "environment" / "setup.sh") in r.reason
    assert "setup failed (exit 3)" in r.reason and "boom" in r.reason


def test_infra_error_agent_crash(task_factory, backend):
    class Broken(ScriptAgent):
        def run(self, task, sandbox, timeout):
            raise InfraError("model server unreachable")

    r = run_trial(task_factory(), Broken(), backend=backend)
    assert r.outcome == Outcome.INFRA_ERROR and r.reward is None
    assert "model server unreachable" in r.reason


REWARD_JSON_TEST = """#!/bin/bash
# Partial credit: one point per correct file.
score=0
[ "$(cat /app/a.txt 2>/dev/null)" = a ] && score=$((score + 1))
[ "$(cat /app/b.txt 2>/dev/null)" = b ] && score=$((score + 1))
python3 -c "import json; json.dump({'reward': $score / 2, 'files_ok': $score}, open('/logs/verifier/reward.json', 'w'))"
"""


def test_partial_credit(task_factory, backend):
    task = task_factory(test=REWARD_JSON_TEST)
    half = run_trial(task, ScriptAgent("echo a > /app/a.txt"), backend=backend)
    assert half.outcome == Outcome.FAILED and half.reward == 0.5
    assert half.rewards == {"reward": 0.5, "files_ok": 1.0}
    full = run_trial(task, ScriptAgent("echo a > /app/a.txt; echo b > /app/b.txt"), backend=backend)
    assert full.outcome == Outcome.PASSED and full.reward == 1.0 and full.rewards["files_ok"] == 2.0


@pytest.mark.parametrize("test_sh, reward, why", [
    ("echo 1 > /logs/verifier/reward.txt; echo '{\"reward\": 0}' > /logs/verifier/reward.json", 0.0, ""),
    ("echo '{\"a\": 1, \"b\": 0}' > /logs/verifier/reward.json", 0.5, ""),
    ("echo 'all tests passed'", 0.0, "no reward"),
    ("echo 7 > /logs/verifier/reward.txt", 0.0, "out of range"),
    ("echo nan > /logs/verifier/reward.txt", 0.0, "out of range"),
])
def test_reward_rules_in_a_trial(task_factory, bwrap, test_sh, reward, why):
    r = run_trial(task_factory(test="#!/bin/bash\n" + test_sh + "\n"), OracleAgent(), backend=bwrap)
    assert r.outcome == Outcome.FAILED and r.reward == reward, r.reason
    assert why in r.reason if why else r.reason == ""


def test_verifier_environment(tmp_path, bwrap):
    test = """#!/bin/bash
[ "$MODE" = strict ] && [ "$TEST_DIR" = /tests ] && [ "$PYTHONNOUSERSITE" = 1 ] && [ "$(pwd)" = /tests ] \\
  && [ -r /tests/data.txt ] && ! touch /tests/x 2>/dev/null && echo 1 > /logs/verifier/reward.txt
"""
    d = make_task(tmp_path / "t", test=test, files={"tests/data.txt": "x"})
    toml = (d / "task.toml").read_text().replace("[verifier]\n", '[verifier]\nenv = { MODE = "strict" }\n')
    (d / "task.toml").write_text(toml)
    task = load_task(d)
    assert task.verifier_env == {"MODE": "strict"}
    r = run_trial(task, NopAgent(), backend=bwrap)
    assert r.outcome == Outcome.PASSED, r.verifier_output


CARRY_TEST = """#!/bin/bash
# The verifier sees the agent's work areas (with deletions) and nothing else of its sandbox.
ok=1
[ "$(cat /app/answer.txt)" = 42 ] || ok=0
[ "$(cat /root/notes.txt)" = kept ] || ok=0
[ -e /app/input.txt ] && ok=0          # deleted by the agent: a whiteout
[ -e /etc/agent-was-here ] && ok=0     # outside the work areas
[ -e /usr/local/bin/agent-tool ] && ok=0
[ "$(cat /usr/local/share/tmax-stamp)" = "$(cat /app/stamp-seen)" ] || ok=0
echo $ok > /logs/verifier/reward.txt
"""


def test_env_hash_setup_layer_and_carry_over(task_factory, backend):
    setup = ("#!/bin/bash\necho input > /app/input.txt\nmkdir -p /usr/local/share\n"
             "date +%s%N > /usr/local/share/tmax-stamp\n")
    task = task_factory(setup=setup, test=CARRY_TEST, metadata={"image": "default"})  # a writable /usr
    agent_steps = ("cat /app/input.txt && rm /app/input.txt && echo 42 > /app/answer.txt && "
                   "echo kept > /root/notes.txt && touch /etc/agent-was-here /usr/local/bin/agent-tool && "
                   "cp /usr/local/share/tmax-stamp /app/stamp-seen && cat /app/stamp-seen")
    a1, a2 = ScriptAgent(agent_steps), ScriptAgent(agent_steps)
    r1 = run_trial(task, a1, backend=backend)
    r2 = run_trial(task, a2, backend=backend)
    assert r1.outcome == Outcome.PASSED, (r1.reason, r1.verifier_output)
    assert r2.outcome == Outcome.PASSED
    assert a1.results[0].output.startswith("input\n")
    assert a1.results[0].output == a2.results[0].output  # the setup ran once and was cached
    assert r1.env_hash == r2.env_hash and "+" in r1.env_hash and r1.env_hash.startswith("default-")
    other = task_factory(setup=setup.replace("input", "other input"), test=CARRY_TEST, metadata={"image": "default"})
    r3 = run_trial(other, ScriptAgent("true"), backend=backend)
    assert r3.env_hash != r1.env_hash and r3.env_hash.split("+")[0] == r1.env_hash.split("+")[0]


def _tb1_task(d: Path):
    d.mkdir()
    (d / "task.yaml").write_text("instruction: Write done to /app/out.\nmax_agent_timeout_sec: 60\n"
                                 "max_test_timeout_sec: 60\n")
    (d / "solution.sh").write_text("echo done > /app/out\n")
    (d / "run-tests.sh").write_text('#!/bin/bash\nset -e\ntest -f "$TEST_DIR/test_outputs.sh"\n'
                                    'bash "$TEST_DIR/test_outputs.sh"\n')
    (d / "tests").mkdir()
    (d / "tests" / "test_outputs.sh").write_text('[ "$(cat /app/out)" = done ]\n')
    return load_task(d)


def test_tb1_scored_by_exit_status(tmp_path, bwrap, host_env):
    task = _tb1_task(tmp_path / "tb1")
    ok = run_trial(task, OracleAgent(), backend=bwrap, env=host_env)
    assert ok.outcome == Outcome.PASSED and ok.reward == 1.0, ok.verifier_output
    bad = run_trial(task, NopAgent(), backend=bwrap, env=host_env)
    assert bad.outcome == Outcome.FAILED and bad.reward == 0.0


# -- the gate ---------------------------------------------------------------------------------------

def test_gate_passes_a_good_task(tmp_path, backend):
    g = check_task(make_task(tmp_path / "good", name="good"), repeat=2, backend=backend, image="host")
    assert g.ok, g.reason
    assert g.oracle_rewards == [1.0, 1.0] and g.nop_reward == 0.0 and g.reason == ""
    assert g.name == "good" and g.env_hash.startswith("host-") and g.seconds > 0


def test_gate_fails_task_solved_by_doing_nothing(tmp_path, bwrap):
    d = make_task(tmp_path / "free", test="#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n")
    g = check_task(d, repeat=1, backend=bwrap, image="host")
    assert not g.ok
    assert g.oracle_rewards == [1.0] and g.nop_reward == 1.0
    assert g.reason == "nop scored 1.0; expected 0.0 (the task is solved by doing nothing)"


def test_gate_fails_broken_oracle(tmp_path, bwrap):
    d = make_task(tmp_path / "broken", solve="#!/bin/bash\necho 41 > /app/answer.txt\n")
    g = check_task(d, repeat=3, backend=bwrap, image="host")
    assert not g.ok
    assert g.oracle_rewards == [0.0]  # stops at the first failing run
    assert g.nop_reward is None
    assert g.reason.startswith("oracle run 1 scored 0.0 (failed")


def test_gate_reports_setup_failure_never_zero(tmp_path, bwrap):
    d = make_task(tmp_path / "nosetup", setup="#!/bin/bash\nexit 9\n")
    g = check_task(d, repeat=2, backend=bwrap, image="host")
    assert not g.ok
    assert g.oracle_rewards == [] and g.nop_reward is None
    assert "environment/setup.sh" in g.reason and "setup failed (exit 9)" in g.reason


def test_gate_nop_that_cannot_be_scored(tmp_path, bwrap):
    test = REWARD_IF_ANSWER.replace("mkdir -p /logs/verifier\n", "[ -f /app/answer.txt ] || sleep 30\n")
    d = make_task(tmp_path / "hang", test=test, verifier_timeout=1)
    g = check_task(d, repeat=1, backend=bwrap, image="host")
    assert not g.ok and g.oracle_rewards == [1.0] and g.nop_reward == 0.0
    assert "nop run hung the verifier (verifier_timeout" in g.reason


def test_gate_batch(tmp_path, bwrap):
    good = make_task(tmp_path / "good")
    bad = tmp_path / "bad"
    bad.mkdir()  # not a task
    seen = []
    results = list(check_many([good, bad], repeat=1, backend=bwrap, jobs=2, image="host", on_result=seen.append))
    by = {Path(r.task).name: r for r in results}
    assert len(seen) == 2 and by["good"].ok and not by["bad"].ok
    assert "no task.toml" in by["bad"].reason
    assert not math.isnan(by["good"].seconds)


def test_a_reward_too_big_for_a_float_is_a_failure_not_infra(tmp_path):
    value, _, reason = read_reward(_logs(tmp_path, None, '{"reward": 1' + "0" * 400 + "}"))
    assert value is None and "finite numbers" in reason
