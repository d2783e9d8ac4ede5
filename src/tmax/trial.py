"""One attempt at one task: agent in a fresh sandbox, then verification in another.

Verification never trusts the agent's sandbox. After the agent is stopped (every process killed),
only its work areas (``/app``, ``/root``, ... or the task's ``metadata.work_areas``) are carried
over, as an overlay layer, onto the task's *pristine* environment: a tool the agent replaced or a
PATH it changed is gone. ``tests/`` is bind-mounted read-only at ``/tests`` only now, and
``/logs/verifier`` is a fresh host directory, so a reward planted by the agent cannot count.

Reward precedence: ``reward.txt`` (one float) wins; otherwise ``reward.json``'s ``"reward"`` key;
otherwise a ``reward.json`` with exactly one key. A missing, unparsable or out-of-range reward is a
failure with that reason. Terminal-Bench 1 tasks, which write no reward file, score by the exit status
of ``run-tests.sh``.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
import time
import traceback
from dataclasses import asdict, dataclass, field
from enum import Enum
from pathlib import Path
from typing import Protocol

from tmax.images import Environment, ImageError, task_environment
from tmax.sandbox import Bind, ExecResult, Limits, Sandbox, SandboxError, get_backend
from tmax.task import Task

VERIFIER_ENV = {"PYTHONNOUSERSITE": "1", "PYTHONDONTWRITEBYTECODE": "1"}


class Outcome(str, Enum):
    PASSED = "passed"
    FAILED = "failed"
    AGENT_TIMEOUT = "agent_timeout"
    VERIFIER_TIMEOUT = "verifier_timeout"
    INFRA_ERROR = "infra_error"


@dataclass
class TrialResult:
    task: str
    agent: str
    outcome: Outcome
    reward: float | None  # None for infra errors and verifier timeouts: never a silent 0
    rewards: dict[str, float] = field(default_factory=dict)
    reason: str = ""
    env_hash: str = ""
    agent_seconds: float = 0.0
    verifier_seconds: float = 0.0
    seconds: float = 0.0
    verifier_output: str = ""

    def to_json(self) -> dict:
        d = asdict(self)
        d["outcome"] = self.outcome.value
        return d


class Agent(Protocol):
    name: str

    def binds(self, task: Task) -> list[Bind]:
        """Extra mounts for the agent's sandbox (the oracle sees its solution)."""
        ...

    def run(self, task: Task, sandbox: Sandbox, timeout: float) -> bool:
        """Work on the task; return True if it ran out of time."""
        ...


class OracleAgent:
    name = "oracle"

    def binds(self, task: Task) -> list[Bind]:
        sol = task.path / task.solution_script
        return [Bind(str(sol.parent.resolve()), "/solution", readonly=True)]

    def run(self, task: Task, sandbox: Sandbox, timeout: float) -> bool:
        r = sandbox.exec(f"bash /solution/{Path(task.solution_script).name}", timeout=timeout)
        self.last = r
        return r.timed_out


class NopAgent:
    name = "nop"

    def binds(self, task: Task) -> list[Bind]:
        return []

    def run(self, task: Task, sandbox: Sandbox, timeout: float) -> bool:
        return False


AGENTS = {"oracle": OracleAgent, "nop": NopAgent}


def read_reward(logs: Path) -> tuple[float | None, dict[str, float], str]:
    """(reward, named rewards, reason if invalid) from a verifier logs directory.

    The sandbox wrote these files: each is read only if it is a regular file of at most 4 KiB with one
    link, never through a symlink and never blocking on a FIFO. Anything else is a failure naming it."""
    # Imported here so that this fix stays inside this function while run_trial is rewritten; fine to hoist.
    from tmax.safe_files import REWARD_MAX_BYTES, UnsafeFile, read_regular

    try:
        txt = read_regular(logs / "reward.txt", REWARD_MAX_BYTES, single_link=True)
        js = read_regular(logs / "reward.json", REWARD_MAX_BYTES, single_link=True)
    except UnsafeFile as e:  # a planted symlink, FIFO, hard link or oversized file fails the trial
        return None, {}, f"{Path(e.path).name}: {e.message}"
    rewards: dict[str, float] = {}
    if js is not None:
        try:
            data = json.loads(js.decode())
            if not isinstance(data, dict) or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                                     for v in data.values()):
                if txt is None:  # reward.txt wins, so a malformed reward.json does not matter then
                    return None, {}, "reward.json: expected a flat object of numbers"
            else:
                rewards = {k: float(v) for k, v in data.items()}
        except (ValueError, RecursionError) as e:  # RecursionError: '[[[[...' nested past the parser's limit
            if txt is None:
                return None, {}, f"reward.json: invalid JSON ({e})"
    if txt is not None:
        try:
            value = float(txt.decode().strip())
        except ValueError:  # UnicodeDecodeError is one
            return None, rewards, f"reward.txt: expected one float, got {txt[:40]!r}"
    elif "reward" in rewards:
        value = rewards["reward"]
    elif len(rewards) == 1:
        value = next(iter(rewards.values()))
    elif rewards:
        return None, rewards, "reward.json: several keys and no 'reward' key"
    else:
        return None, {}, "no reward: the verifier wrote neither reward.txt nor reward.json"
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        return None, rewards, f"reward {value} out of range; expected a float in [0, 1]"
    return value, rewards, ""


def limits_for(task: Task) -> Limits:
    return Limits(memory_mb=task.resources.memory_mb, storage_mb=task.resources.storage_mb)


def run_trial(task: Task, agent: Agent, backend: str = "bwrap", env: Environment | None = None,
              out_dir: Path | None = None) -> TrialResult:
    t0 = time.monotonic()
    res = TrialResult(task=task.name, agent=agent.name, outcome=Outcome.INFRA_ERROR, reward=None)
    work = Path(tempfile.mkdtemp(prefix="tmax-trial-"))
    try:
        env = env or task_environment(task, backend)
        res.env_hash = env.hash
        be = get_backend(backend)
        # 1. The agent, in a fresh sandbox; its changes are kept for the verifier.
        spec = env.spec(workdir="/app", work_areas=task.work_areas, binds=agent.binds(task),
                        network=task.resources.allow_internet, limits=limits_for(task), keep_changes=True)
        ta = time.monotonic()
        carry = work / "carry"
        carry.mkdir()
        sb = be.start(spec)
        try:
            agent_timed_out = agent.run(task, sb, task.agent_timeout)
        finally:
            sb.close()
            sb.export_work_areas(carry)  # even when the agent raised: its changes go with ``work``
        res.agent_seconds = time.monotonic() - ta
        # 2. The verifier, on the pristine environment plus the agent's work areas.
        logs = work / "logs"
        logs.mkdir()
        tests = _stage_tests(task, work)
        vspec = env.spec(workdir="/tests", work_areas=task.work_areas,
                         binds=[Bind(str(tests), "/tests", readonly=True), Bind(str(logs), "/logs/verifier", False)],
                         limits=limits_for(task), env={**task.verifier_env, **VERIFIER_ENV,
                                                       "TEST_DIR": "/tests"})
        vspec.layers = [carry, *vspec.layers]
        tv = time.monotonic()
        with be.start(vspec) as vsb:
            vr: ExecResult = vsb.exec(f"bash /tests/{task.test_script}", timeout=task.verifier_timeout,
                                      persistent=False)
        res.verifier_seconds = time.monotonic() - tv
        res.verifier_output = vr.output[-4000:]
        if out_dir is not None:
            _save_logs(out_dir, logs, vr)
        if vr.timed_out:
            res.outcome, res.reason = Outcome.VERIFIER_TIMEOUT, f"verifier exceeded {task.verifier_timeout:g}s"
            return res
        if task.layout == "tb1" and not (logs / "reward.txt").exists() and not (logs / "reward.json").exists():
            reward, rewards, reason = (1.0 if vr.exit_code == 0 else 0.0), {}, ""
        else:
            reward, rewards, reason = read_reward(logs)
        res.rewards = rewards
        if reward is None:
            res.outcome, res.reward, res.reason = Outcome.FAILED, 0.0, reason
        else:
            res.reward = reward
            res.outcome = Outcome.PASSED if reward >= 1.0 else Outcome.FAILED
        if agent_timed_out:
            res.outcome = Outcome.AGENT_TIMEOUT
            res.reason = res.reason or f"agent exceeded {task.agent_timeout:g}s"
        return res
    except (SandboxError, ImageError, OSError) as e:
        res.outcome, res.reward = Outcome.INFRA_ERROR, None
        res.reason = f"{type(e).__name__}: {e}"
        return res
    except Exception as e:  # a bug must not take a whole batch down; report it as infra
        res.outcome, res.reward = Outcome.INFRA_ERROR, None
        res.reason = f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=3)}"
        return res
    finally:
        res.seconds = time.monotonic() - t0
        shutil.rmtree(work, ignore_errors=True)


def _stage_tests(task: Task, work: Path) -> Path:
    """A private copy of the tests (TB1: with run-tests.sh beside them)."""
    dest = work / "tests"
    src = task.path / task.tests_dir
    if src.is_dir():
        shutil.copytree(src, dest, symlinks=True)
    else:
        dest.mkdir()
    if task.layout == "tb1":
        shutil.copy(task.path / "run-tests.sh", dest / "run-tests.sh")
    os.chmod(dest, 0o700)  # root of the verifier only: the agent's programs it runs cannot read it
    return dest


def _save_logs(out_dir: Path, logs: Path, vr: ExecResult) -> None:
    """Copy the verifier's logs into ``out_dir/verifier``. The sandbox wrote them: only regular files at
    the top level are copied (never through a symlink, never blocking on a FIFO), at most 64 of them,
    each cut after 1 MiB; ``copy-notes.txt`` lists what was left out or cut, and why."""
    from tmax.safe_files import copy_flat, write_file  # here, not at the top: see read_reward

    out_dir.mkdir(parents=True, exist_ok=True)  # the trial dir is ours; what goes below it is checked
    notes = copy_flat(logs, out_dir, "verifier")
    write_file(out_dir, "verifier/test-stdout.txt", vr.output.encode(errors="replace"), replace=True)
    if notes:
        write_file(out_dir, "verifier/copy-notes.txt", ("\n".join(notes) + "\n").encode(errors="replace"),
                   replace=True)
