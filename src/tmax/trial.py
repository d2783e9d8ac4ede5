"""One attempt at one task: agent in a fresh sandbox, then verification in another.

Verification never trusts the agent's sandbox. After the agent is stopped (every process killed),
only its work areas (``/app``, ``/root``, ... or the task's ``metadata.work_areas``) are carried
over, as an overlay layer, onto the task's *pristine* environment: a tool the agent replaced or a
PATH it changed is gone. ``tests/`` is bind-mounted read-only at ``/tests`` only now, and
``/logs/verifier`` is a fresh host directory, so a reward planted by the agent cannot count.

The verifier runs with a fresh HOME outside the work areas and neutral Python, git and shell
settings (``VERIFIER_ENV``), and its result is the exit status of its sandbox's last command as the
host sees it (``Sandbox.run_last``), so no line it prints can forge it.

Reward precedence, as Harbor 0.26 reads it: a valid ``reward.json`` (a flat object of finite
numbers: its ``"reward"`` key, or its only key) wins; otherwise ``reward.txt`` (one float). A missing,
unparsable or out-of-range reward is a failure with that reason. Terminal-Bench 1 tasks score by the
exit status of ``run-tests.sh`` alone: they write no reward file, so any there was planted.

Failures stay failures: whatever the agent's work can cause is a failed trial with reward 0 and a
reason (no or bad reward file, a hung verifier, a verifier or agent sandbox whose shell was killed
from inside or that hit its limits). Only the infrastructure (image build, sandbox start, the host,
the model engine) gives ``infra_error`` with reward None, which pass@k and the trainer leave out.
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
from tmax.safe_files import REWARD_MAX_BYTES, UnsafeFile, copy_flat, read_regular, write_file
from tmax.sandbox import Bind, ExecResult, Limits, Sandbox, SandboxError, SandboxLost, get_backend
from tmax.task import Task

VERIFIER_HOME = "/run/tmax-verifier-home"  # a fresh, empty HOME: never a work area the agent filled
# What the verifier's tools read from the agent's work areas is neutralised: no user site or cwd on
# Python's path (``/app`` modules cannot shadow real ones), no user or system git config, no hooks,
# no fsmonitor, no pager or editor, no startup files for non-interactive shells.
_GIT_OVERRIDES = {"core.hooksPath": "/dev/null", "core.fsmonitor": "false", "core.pager": "cat",
                  "core.editor": "true", "core.sshCommand": "false", "core.askPass": "false",
                  "credential.helper": "", "protocol.ext.allow": "never", "safe.directory": "*"}
VERIFIER_ENV = {
    "HOME": VERIFIER_HOME, "PYTHONNOUSERSITE": "1", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONSAFEPATH": "1",
    "BASH_ENV": "", "ENV": "", "PAGER": "cat", "GIT_PAGER": "cat", "GIT_EDITOR": "true",
    "GIT_TERMINAL_PROMPT": "0", "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_CONFIG_COUNT": str(len(_GIT_OVERRIDES)),
    **{f"GIT_CONFIG_KEY_{i}": k for i, k in enumerate(_GIT_OVERRIDES)},
    **{f"GIT_CONFIG_VALUE_{i}": v for i, v in enumerate(_GIT_OVERRIDES.values())},
}


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
    """(reward, named rewards, reason if there is none) from a verifier logs directory, as Harbor 0.26
    reads it: a valid ``reward.json`` (a flat object of finite numbers) wins, else ``reward.txt``.

    The sandbox wrote these files: each is read only if it is a regular file of at most 4 KiB with one
    link, never through a symlink and never blocking on a FIFO. Anything else is a failure naming it."""
    try:
        txt = read_regular(logs / "reward.txt", REWARD_MAX_BYTES, single_link=True)
        js = read_regular(logs / "reward.json", REWARD_MAX_BYTES, single_link=True)
    except UnsafeFile as e:  # a planted symlink, FIFO, hard link or oversized file fails the trial
        return None, {}, f"{Path(e.path).name}: {e.message}"
    json_problem = ""
    if js is not None:
        rewards, json_problem = _reward_json(js)
        if rewards is not None:
            if "reward" in rewards:
                return _in_range(rewards["reward"], rewards)
            if len(rewards) == 1:
                return _in_range(next(iter(rewards.values())), rewards)
            json_problem = "reward.json: several keys and no 'reward' key"
    if txt is not None:
        try:
            return _in_range(float(txt.decode().strip()), {})
        except ValueError:  # UnicodeDecodeError is one
            return None, {}, f"reward.txt: expected one float, got {txt[:40]!r}"
    return None, {}, json_problem or "no reward: the verifier wrote neither reward.json nor reward.txt"


def _reward_json(raw: bytes) -> tuple[dict[str, float] | None, str]:
    try:
        data = json.loads(raw.decode())
    except (ValueError, RecursionError) as e:  # RecursionError: '[[[[...' nested past the parser's limit
        return None, f"reward.json: invalid JSON ({e})"
    if not isinstance(data, dict) or not data or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in data.values()):
        return None, "reward.json: expected a flat object of finite numbers"
    return {k: float(v) for k, v in data.items()}, ""


def _in_range(value: float, rewards: dict[str, float]) -> tuple[float | None, dict[str, float], str]:
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
        lost = ""
        try:
            agent_timed_out = agent.run(task, sb, task.agent_timeout)
        except SandboxLost as e:  # the agent's own commands ended its sandbox: its failure, not ours
            agent_timed_out, lost = False, str(e)
        finally:
            sb.close()
            sb.export_work_areas(carry)  # even when the agent raised: its changes go with ``work``
        res.agent_seconds = time.monotonic() - ta
        if lost:
            res.outcome, res.reward, res.reason = Outcome.FAILED, 0.0, f"the agent's sandbox ended: {lost}"
            return res
        # 2. The verifier, on the pristine environment plus the agent's work areas.
        logs = work / "logs"
        logs.mkdir()
        home = work / "home"
        home.mkdir()
        tests = _stage_tests(task, work)
        vspec = env.spec(workdir="/tests", work_areas=task.work_areas,
                         binds=[Bind(str(tests), "/tests", readonly=True), Bind(str(logs), "/logs/verifier", False),
                                Bind(str(home), VERIFIER_HOME, False)],
                         limits=limits_for(task), env={**task.verifier_env, **VERIFIER_ENV, "TEST_DIR": "/tests"})
        vspec.layers = [carry, *vspec.layers]
        tv = time.monotonic()
        vsb = be.start(vspec)
        try:
            # The status comes from the sandbox's process, never from what the tests print.
            vr: ExecResult | None = vsb.run_last(f"bash /tests/{task.test_script}", timeout=task.verifier_timeout)
        except SandboxLost as e:  # the verifier's shell was killed from inside: what it ran did that
            vr, lost = None, str(e)
        finally:
            vsb.close()
        res.verifier_seconds = time.monotonic() - tv
        if vr is None:
            res.outcome, res.reward, res.reason = Outcome.FAILED, 0.0, f"the verifier's sandbox ended: {lost}"
            return res
        res.verifier_output = vr.output[-4000:]
        if out_dir is not None:
            _save_logs(out_dir, logs, vr)
        if vr.exit_code == 128 + 9 and not vr.timed_out:  # SIGKILL: from inside, or the memory limit
            res.outcome, res.reward, res.reason = Outcome.FAILED, 0.0, "the verifier was killed (SIGKILL)"
            return res
        if vr.timed_out:  # what it ran hung: a failure, reward 0 (never "no data")
            res.outcome, res.reward = Outcome.VERIFIER_TIMEOUT, 0.0
            res.reason = f"verifier exceeded {task.verifier_timeout:g}s"
            return res
        if task.layout == "tb1":  # TB1 writes no reward file: one there was planted by what the tests ran
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
    out_dir.mkdir(parents=True, exist_ok=True)  # the trial dir is ours; what goes below it is checked
    notes = copy_flat(logs, out_dir, "verifier")
    write_file(out_dir, "verifier/test-stdout.txt", vr.output.encode(errors="replace"), replace=True)
    if notes:
        write_file(out_dir, "verifier/copy-notes.txt", ("\n".join(notes) + "\n").encode(errors="replace"),
                   replace=True)
