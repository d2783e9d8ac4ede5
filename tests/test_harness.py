"""The one harness, driven by a scripted policy through the real sandbox."""

from __future__ import annotations

import json

import pytest

from tmax.agent import HarnessAgent, HarnessConfig, Reply, ToolCall, run_episode
from tmax.agent.harness import SUBMIT, parse_command, truncate
from tmax.agent.policies import ScriptedPolicy
from tmax.sandbox import get_backend
from tmax.trial import Outcome, run_trial

SUBMIT_CMD = f"echo {SUBMIT}"


@pytest.fixture
def sandbox(host_env, bwrap):  # one backend is enough here: the harness only uses exec
    sb = get_backend(bwrap).start(host_env.spec(work_areas=("/app",)))
    yield sb
    sb.close()


def observations(ep):
    return [m["content"] for m in ep.messages if m["role"] in ("tool", "user")][1:]


def test_submit_ends_the_episode_and_the_shell_persists(sandbox, tmp_path):
    policy = ScriptedPolicy(["cd /tmp && export X=42", "pwd; echo $X", SUBMIT_CMD, "echo never"])
    traj = tmp_path / "trajectory.json"
    ep = run_episode("do it", sandbox, policy, trajectory_path=traj)
    assert ep.submitted and ep.stop_reason == "submitted" and ep.steps == 3
    assert "/tmp\n42" in observations(ep)[1]
    doc = json.loads(traj.read_text())
    assert doc["schema_version"].startswith("ATIF") and doc["agent"]["model_name"] == "scripted"
    agent_steps = [s for s in doc["steps"] if s["source"] == "agent"]
    assert len(agent_steps) == 3
    assert agent_steps[0]["tool_calls"][0]["arguments"] == {"command": "cd /tmp && export X=42"}
    metrics = doc["final_metrics"]  # ATIF's totals, tmax's episode summary in its extra
    assert metrics["extra"]["submitted"] is True and metrics["total_steps"] == len(doc["steps"])


def test_format_errors_are_corrected_then_capped(sandbox):
    bad = [Reply(content="I think I will list files."),  # no tool call
           Reply(tool_calls=[ToolCall("a", "bash", "{not json")]),
           Reply(tool_calls=[ToolCall("b", "python", json.dumps({"command": "ls"}))])]
    ep = run_episode("x", sandbox, ScriptedPolicy(bad + ["echo ok"]), HarnessConfig(max_format_errors=3))
    assert ep.stop_reason == "format_errors" and ep.format_errors == 3 and not ep.commands
    obs = observations(ep)
    assert "no tool call" in obs[0] and "not valid JSON" in obs[1] and "unknown tool" in obs[2]
    # one error, then a valid turn: the counter resets and the episode goes on
    ep = run_episode("x", sandbox, ScriptedPolicy([bad[0], "echo fine", SUBMIT_CMD]), HarnessConfig(max_format_errors=1))
    assert ep.stop_reason == "format_errors"
    ep = run_episode("x", sandbox, ScriptedPolicy([bad[0], "echo fine", bad[0], SUBMIT_CMD]),
                     HarnessConfig(max_format_errors=2))
    assert ep.submitted and ep.format_errors == 2


def test_two_tool_calls_in_one_turn_are_refused(sandbox):
    two = Reply(tool_calls=[ToolCall("a", "bash", '{"command": "ls"}'), ToolCall("b", "bash", '{"command": "pwd"}')])
    ep = run_episode("x", sandbox, ScriptedPolicy([two, SUBMIT_CMD]))
    assert ep.submitted and ep.format_errors == 1 and "2 tool calls" in observations(ep)[0]
    # every call got an answer, so the chat stays valid for strict servers
    assert [m["tool_call_id"] for m in ep.messages if m["role"] == "tool"][:2] == ["a", "b"]


def test_long_output_is_truncated_with_a_hint(sandbox):
    ep = run_episode("x", sandbox, ScriptedPolicy(["python3 -c \"print('A'*6000 + 'B'*20000 + 'C'*6000)\"", SUBMIT_CMD]))
    obs = observations(ep)[0]
    assert "characters elided" in obs and "head, tail, grep" in obs
    assert "A" * 5000 in obs and "C" * 4999 in obs and "B" * 100 not in obs
    assert truncate("x" * 10) == "x" * 10


def test_command_timeout_is_reported_and_the_shell_survives(sandbox):
    cfg = HarnessConfig(command_timeout=1.0)
    ep = run_episode("x", sandbox, ScriptedPolicy(["sleep 30", "echo alive", SUBMIT_CMD]), cfg)
    obs = observations(ep)
    assert "timed out after 1 seconds" in obs[0]
    assert "alive" in obs[1] and ep.submitted


def test_step_limit(sandbox):
    ep = run_episode("x", sandbox, ScriptedPolicy(["true"] * 10), HarnessConfig(max_steps=3))
    assert ep.stop_reason == "step_limit" and ep.steps == 3 and not ep.submitted


def test_text_mode_and_empty_output(sandbox):
    policy = ScriptedPolicy(["true", SUBMIT_CMD], tool_calling=False)
    ep = run_episode("x", sandbox, policy)
    assert ep.submitted and "(no output)" in observations(ep)[0]
    assert all(m["role"] != "tool" for m in ep.messages)
    cmd, why = parse_command(Reply(content="```bash\nls\n```\n```bash\npwd\n```"), tool_mode=False)
    assert cmd is None and "2 ```bash blocks" in why


def test_submit_needs_exit_code_zero_and_the_marker_first(sandbox):
    ep = run_episode("x", sandbox, ScriptedPolicy([f"echo {SUBMIT}; false", f"echo hi; echo {SUBMIT}", SUBMIT_CMD]))
    assert ep.submitted and ep.steps == 3


def test_harness_agent_in_a_real_trial(task_factory):
    task = task_factory()
    good = HarnessAgent(ScriptedPolicy(["echo 42 > /app/answer.txt", SUBMIT_CMD]))
    res = run_trial(task, good)
    assert res.reward == 1.0 and good.info()["submitted"]
    lazy = HarnessAgent(ScriptedPolicy([SUBMIT_CMD]))
    assert run_trial(task, lazy).reward == 0.0


def test_an_agent_that_kills_its_own_sandbox_scores_0(task_factory):
    """Crashing the sandbox must not erase a bad episode: it is the agent's failure, reward 0."""
    task = task_factory()
    res = run_trial(task, HarnessAgent(ScriptedPolicy(["kill -9 -1; sleep 5", SUBMIT_CMD])))
    assert res.outcome == Outcome.FAILED and res.reward == 0.0, res.reason


def test_a_sandbox_killed_from_outside_is_an_infrastructure_error(task_factory):
    """The host killing the sandbox (the launcher outside its pid namespace, which nothing inside can
    signal) is not the agent's doing: no reward, so RL masks the trajectory instead of scoring 0."""
    import os
    import signal
    import threading
    import time

    from tmax.sandbox.procs import proc_table

    me = os.getpid()
    killed: list[int] = []

    def kill_the_launcher():
        for _ in range(300):
            for pid, (ppid, _) in proc_table().items():
                try:
                    comm = open(f"/proc/{pid}/comm").read().strip()
                except OSError:
                    continue
                if ppid == me and comm == "bwrap":
                    time.sleep(1.0)  # the agent's `sleep` is running
                    os.kill(pid, signal.SIGKILL)
                    killed.append(pid)
                    return
            time.sleep(0.05)

    task = task_factory()
    killer = threading.Thread(target=kill_the_launcher)
    killer.start()
    res = run_trial(task, HarnessAgent(ScriptedPolicy(["sleep 20", SUBMIT_CMD])), backend="bwrap")
    killer.join()
    assert killed
    assert res.outcome == Outcome.INFRA_ERROR and res.reward is None, res.reason
    assert "killed from outside" in res.reason


def test_terminus_harness_drives_tmux(task_factory):
    from tmax.agent.terminus import TerminusAgent, parse_reply

    task = task_factory()
    turn = json.dumps({"analysis": "empty", "plan": "write the answer",
                       "commands": [{"keystrokes": "echo 42 > /app/answer.txt\n", "duration": 0.3}],
                       "task_complete": False})
    done = json.dumps({"analysis": "done", "plan": "", "commands": [], "task_complete": True})
    agent = TerminusAgent(ScriptedPolicy([Reply(content="not json"), Reply(content=turn), Reply(content=done)]))
    res = run_trial(task, agent)
    assert res.reward == 1.0 and agent.episode.submitted and agent.episode.format_errors == 1
    assert parse_reply('{"commands": "ls"}')[0] is None


def test_trajectory_writes_are_throttled_during_the_episode_and_final_at_the_end(tmp_path):
    from tmax.agent.atif import Trajectory

    path = tmp_path / "t" / "trajectory.json"
    traj = Trajectory(agent_name="a", model_name="m")
    traj.add_message("user", "one")
    traj.save(path, min_interval=60.0)  # the first write always happens
    traj.add_message("user", "two")
    traj.save(path, min_interval=60.0)  # too soon: skipped
    assert [s["message"] for s in json.loads(path.read_text())["steps"]] == ["one"]
    traj.save(path)  # the final write is unconditional
    assert [s["message"] for s in json.loads(path.read_text())["steps"]] == ["one", "two"]
