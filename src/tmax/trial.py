"""One attempt at one task: agent in a fresh sandbox, then verification in another.

Verification never trusts the agent's sandbox. After the agent is stopped (every process killed),
only its work areas (``/app``, ``/root``, ... or the task's ``metadata.work_areas``) are carried
over, as an overlay layer, onto the task's *pristine* environment: a tool the agent replaced or a
PATH it changed is gone. ``tests/`` is bind-mounted read-only at ``/tests`` only now, and
``/logs/verifier`` is a fresh host directory, so a reward planted by the agent cannot count.

The verifier runs with a fresh HOME outside the work areas and neutral Python, git and shell
settings (``VERIFIER_ENV``), and its result is the exit status of its sandbox's last command as the
host sees it (``Sandbox.run_last``), so no line it prints can forge it.

Reward precedence, as Harbor 0.26 reads it: ``reward.json`` when it exists (a flat object of finite
numbers; the scalar is ``metadata.reward_key``, else ``"reward"``, else the mean), else ``reward.txt``. A missing,
unparsable or out-of-range reward is a failure with that reason. Terminal-Bench 1 tasks score by the
exit status of ``run-tests.sh`` alone: they write no reward file, so any there was planted.

Failures stay failures: whatever the agent's work can cause is a failed trial with reward 0 and a
reason (no or bad reward file, a hung verifier, a verifier or agent sandbox whose shell was killed
from inside or that hit its limits). Only the infrastructure (image build, sandbox start, the host,
the model engine: a :class:`tmax.errors.InfraError`) gives ``infra_error`` with reward None, which
pass@k and the trainer leave out. Any other exception is a bug: it propagates with its traceback (the
job runner records such a trial as ``error``; the trainer stops on it).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shlex
import shutil
import stat
import tempfile
import time
from dataclasses import asdict, dataclass, field, replace
from enum import Enum
from pathlib import Path
from typing import Protocol

from tmax.errors import InfraError
from tmax.images import Environment, ImageError, task_environment
from tmax.safe_files import REWARD_MAX_BYTES, UnsafeFile, copy_flat, read_regular, write_file
from tmax.sandbox import DEFAULT_BACKEND, Bind, ExecResult, Limits, Sandbox, SandboxError, SandboxLost, get_backend
from tmax.sandbox.netns import SharedNetwork
from tmax.task import Network, Sidecar, Step, Task

SIDECAR_START_TIMEOUT = 60.0
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
    ERROR = "error"  # a bug (tmax's or the agent's code), with its traceback: not retried, not scored


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

    def __init__(self) -> None:
        self.last: dict = {}

    def run(self, task: Task, sandbox: Sandbox, timeout: float) -> bool:
        r = sandbox.exec(f"bash /solution/{Path(task.solution_script).name}", timeout=timeout)
        self.last = {"solution_exit_code": r.exit_code, "solution_output": r.output[-2000:]}
        return r.timed_out

    def info(self) -> dict:
        """How the reference solution ended (kept in the trial's result: a failing oracle shows why)."""
        return self.last


class NopAgent:
    name = "nop"

    def binds(self, task: Task) -> list[Bind]:
        return []

    def run(self, task: Task, sandbox: Sandbox, timeout: float) -> bool:
        return False


AGENTS = {"oracle": OracleAgent, "nop": NopAgent}


def read_reward(logs: Path, key: str | None = None) -> tuple[float | None, dict[str, float], str]:
    """(scalar reward, named rewards, reason if there is none) from a verifier logs directory, as Harbor
    0.26 reads it: ``reward.json`` (a flat object of finite numbers) when it exists, else ``reward.txt``
    (one float). The scalar that pass@k and RL use is the named reward ``key`` (a task's
    ``metadata.reward_key``), else the ``"reward"`` key, else the mean of all named rewards.

    The sandbox wrote these files: each is read only if it is a regular file of at most 4 KiB with one
    link, never through a symlink and never blocking on a FIFO. Anything else is a failure naming it."""
    try:
        txt = read_regular(logs / "reward.txt", REWARD_MAX_BYTES, single_link=True)
        js = read_regular(logs / "reward.json", REWARD_MAX_BYTES, single_link=True)
    except UnsafeFile as e:  # a planted symlink, FIFO, hard link or oversized file fails the trial
        return None, {}, f"{Path(e.path).name}: {e.message}"
    if js is not None:
        rewards, problem = _reward_json(js)
        if rewards is None:
            return None, {}, problem
        if key is not None:
            if key not in rewards:
                return None, rewards, f"reward.json: no {key!r} key (the task's metadata.reward_key)"
            return _in_range(rewards[key], rewards)
        if "reward" in rewards:
            return _in_range(rewards["reward"], rewards)
        return _in_range(sum(rewards.values()) / len(rewards), rewards)
    if txt is not None:
        try:
            return _in_range(float(txt.decode().strip()), {})
        except ValueError:  # UnicodeDecodeError is one
            return None, {}, f"reward.txt: expected one float, got {txt[:40]!r}"
    return None, {}, "no reward: the verifier wrote neither reward.json nor reward.txt"


def _reward_json(raw: bytes) -> tuple[dict[str, float] | None, str]:
    try:
        data = json.loads(raw.decode())
    except (ValueError, RecursionError) as e:  # RecursionError: '[[[[...' nested past the parser's limit
        return None, f"reward.json: invalid JSON ({e})"
    if not isinstance(data, dict) or not data or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and _finite(v) for v in data.values()):
        return None, "reward.json: expected a flat object of finite numbers"
    return {k: float(v) for k, v in data.items()}, ""


def _finite(v: int | float) -> bool:
    try:
        return math.isfinite(v)
    except OverflowError:  # an int of 400 digits: not a reward
        return False


def _in_range(value: float, rewards: dict[str, float]) -> tuple[float | None, dict[str, float], str]:
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        return None, rewards, f"reward {value} out of range; expected a float in [0, 1]"
    return value, rewards, ""


def limits_for(task: Task) -> Limits:
    return Limits(memory_mb=task.resources.memory_mb, storage_mb=task.resources.storage_mb)


def step_view(task: Task, step: Step | None) -> Task:
    """The task as one step sees it: its prompt, tests, solution and timeouts."""
    if step is None:
        return task
    base = f"steps/{step.name}"
    tests = f"{base}/tests" if (task.path / base / "tests" / task.test_script).is_file() else task.tests_dir
    solution = f"{base}/solution/solve.sh" if (task.path / base / "solution" / "solve.sh").is_file() \
        else task.solution_script
    return replace(task, instruction=step.instruction, tests_dir=tests, solution_script=solution,
                   agent_timeout=step.agent_timeout, verifier_timeout=step.verifier_timeout, steps=())


@dataclass
class _Verdict:
    """One verification: the scalar reward (None: none could be read), the named ones, and why."""

    outcome: Outcome
    reward: float | None
    rewards: dict[str, float]
    reason: str = ""
    output: str = ""


def run_trial(task: Task, agent: Agent, backend: str = DEFAULT_BACKEND, env: Environment | None = None,
              out_dir: Path | None = None) -> TrialResult:
    t0 = time.monotonic()
    res = TrialResult(task=task.name, agent=agent.name, outcome=Outcome.INFRA_ERROR, reward=None)
    work = Path(tempfile.mkdtemp(prefix="tmax-trial-"))
    stack = contextlib.ExitStack()  # the sidecars and their network, closed last
    try:
        env = env or task_environment(task, backend)
        res.env_hash = env.hash
        be = get_backend(backend)
        venv = _verifier_environment(task, env, backend)
        net = start_sidecars(task.sidecars, task.path, limits_for(task), task.agent_network.online, backend, stack)
        carried: list[Path] = []  # the agent's changes, one layer per step, newest first
        verdicts: list[tuple[Step | None, _Verdict]] = []
        agent_timed_out = False
        for i, step in enumerate(task.steps or (None,)):
            view = step_view(task, step)
            ta = time.monotonic()
            carry, timed_out, lost = _agent_phase(view, agent, env, be, carried, work / f"carry{i}", net)
            res.agent_seconds += time.monotonic() - ta
            agent_timed_out |= timed_out
            if lost:
                res.outcome, res.reward, res.reason = Outcome.FAILED, 0.0, f"the agent's sandbox ended: {lost}"
                return res
            carried.insert(0, carry)
            tv = time.monotonic()
            logs_out = out_dir if step is None or out_dir is None else out_dir / "steps" / step.name
            verdict = _verify(view, venv, be, carried, work / f"verify{i}", logs_out, net)
            res.verifier_seconds += time.monotonic() - tv
            verdicts.append((step, verdict))
            if step is not None and not _meets(step, verdict):
                break
        _combine(task, verdicts, res)
        if agent_timed_out:
            res.outcome = Outcome.AGENT_TIMEOUT
            res.reason = res.reason or f"agent exceeded {task.agent_timeout:g}s"
        return res
    except (SandboxError, ImageError, OSError, InfraError) as e:
        res.outcome, res.reward = Outcome.INFRA_ERROR, None
        res.reason = f"{type(e).__name__}: {e}"
        return res
    finally:
        stack.close()
        res.seconds = time.monotonic() - t0
        shutil.rmtree(work, ignore_errors=True)


def _verifier_environment(task: Task, env: Environment, backend: str) -> Environment:
    """Shared mode: the task's pristine environment. Separate: the verifier's own (its setup under
    ``verifier_env_dir``), or a fresh copy of the task's."""
    if task.verifier_mode != "separate" or task.verifier_env_dir is None:
        return env
    own = replace(task, name=f"{task.name}--verifier", env_dir=task.verifier_env_dir,
                  setup_script=f"{task.verifier_env_dir}/setup.sh", metadata={
                      k: v for k, v in task.metadata.items() if k not in ("image", "build_network")}
                  | {"image": task.metadata.get("verifier_image", task.image)})
    return task_environment(own, backend)


def _agent_phase(task: Task, agent: Agent, env: Environment, be, carried: list[Path],
                 carry: Path, net: dict) -> tuple[Path, bool, str]:
    """The agent, in a fresh sandbox over the earlier steps' changes; returns (its changes, timed out,
    why its sandbox ended if its own commands ended it)."""
    areas = (*task.work_areas, *(a for a in task.artifacts if not _under(a, task.work_areas)))
    spec = env.spec(workdir=task.workdir, work_areas=areas, binds=agent.binds(task),
                    limits=limits_for(task), keep_changes=True, env=dict(task.env),
                    **(net or _network(task.agent_network)))
    spec.layers = [*carried, *spec.layers]
    carry.mkdir()
    sb = be.start(spec)
    try:
        _start_service(task, sb, "agent")
        return carry, agent.run(task, sb, task.agent_timeout), ""
    except SandboxLost as e:  # the agent's own commands ended its sandbox: its failure, not ours
        return carry, False, str(e)
    finally:
        sb.close()
        sb.export_work_areas(carry)  # even when the agent raised: its changes go with ``work``


def _network(net: Network) -> dict:
    """A phase's policy as sandbox settings: an allowlist is enforced by name (``sandbox/egress``), and
    an empty one is no network at all."""
    if net.mode == "allowlist":
        return {"network": bool(net.allowed_hosts), "allowed_hosts": net.allowed_hosts}
    return {"network": net.online}


def _under(path: str, dirs: tuple[str, ...]) -> bool:
    return any(path == d or path.startswith(d.rstrip("/") + "/") for d in dirs)


def _verify(task: Task, venv: Environment, be, carried: list[Path], work: Path, out_dir: Path | None,
            net: dict) -> _Verdict:
    """The verifier, on the pristine environment plus the agent's work areas (separate mode: only its
    artifacts). The status comes from the sandbox's process, never from what the tests print."""
    work.mkdir()
    logs, home = work / "logs", work / "home"
    logs.mkdir()
    home.mkdir()
    tests = _stage_tests(task, work)
    vspec = venv.spec(workdir="/tests", work_areas=task.work_areas,
                      binds=[Bind(str(tests), "/tests", readonly=True), Bind(str(logs), "/logs/verifier", False),
                             Bind(str(home), VERIFIER_HOME, False)],
                      limits=limits_for(task), **(net or _network(task.verifier_network)),
                      env={**task.env, **task.verifier_env, **VERIFIER_ENV, "TEST_DIR": "/tests"})
    if task.verifier_mode == "separate":
        carried = [_only(layer, task.artifacts, work / f"artifacts{i}") for i, layer in enumerate(carried)]
    vspec.layers = [*carried, *vspec.layers]
    vsb = be.start(vspec)
    try:
        if not _start_service(task, vsb, "verifier"):
            return _Verdict(Outcome.FAILED, 0.0, {}, "the task's service did not become healthy for the verifier")
        vr: ExecResult = vsb.run_last(f"bash /tests/{task.test_script}", timeout=task.verifier_timeout)
    except SandboxLost as e:  # the verifier's shell was killed from inside: what it ran did that
        return _Verdict(Outcome.FAILED, 0.0, {}, f"the verifier's sandbox ended: {e}")
    finally:
        vsb.close()
    output = vr.output[-4000:]
    if out_dir is not None:
        _save_logs(out_dir, logs, vr)
    if vr.exit_code == 128 + 9 and not vr.timed_out:  # SIGKILL: from inside, or the memory limit
        return _Verdict(Outcome.FAILED, 0.0, {}, "the verifier was killed (SIGKILL)", output)
    if vr.timed_out:  # what it ran hung: a failure, reward 0 (never "no data")
        return _Verdict(Outcome.VERIFIER_TIMEOUT, 0.0, {}, f"verifier exceeded {task.verifier_timeout:g}s", output)
    if task.layout == "tb1":  # TB1 writes no reward file: one there was planted by what the tests ran
        return _Verdict(Outcome.PASSED if vr.exit_code == 0 else Outcome.FAILED, 1.0 if vr.exit_code == 0 else 0.0,
                        {}, "", output)
    reward, rewards, reason = read_reward(logs, task.reward_key)
    if reward is None:
        return _Verdict(Outcome.FAILED, 0.0, rewards, reason, output)
    return _Verdict(Outcome.PASSED if reward >= 1.0 else Outcome.FAILED, reward, rewards, "", output)


SERVICE_LOG = "/tmp/.tmax-service.log"


def detached(command: str) -> str:
    """A shell line that starts ``command`` as a service: its own session, no terminal, output to
    ``SERVICE_LOG``, so the exec that starts it returns at once."""
    return f"setsid -f sh -c {shlex.quote(command)} </dev/null >{SERVICE_LOG} 2>&1"


def start_sidecars(sidecars: tuple[Sidecar, ...], root: Path, limits: Limits, internet: bool, backend: str,
                   stack: contextlib.ExitStack) -> dict:
    """Each compose sidecar (its setup under ``root``) in a sandbox of its own on one private network
    that the agent and the verifier join too; the names resolve to loopback. Returns the spec settings
    for joining it ({} without sidecars). A sidecar that does not come up is the environment's failure
    (infra). ``stack`` closes them, and the network, last."""
    if not sidecars:
        return {}
    net = stack.enter_context(SharedNetwork(internet=internet))
    hosts = {sc.name: "127.0.0.1" for sc in sidecars}
    be = get_backend(backend)
    for sc in sidecars:
        view = Task(path=root, name=f"{root.name}--{sc.name}", instruction="", env_dir=sc.env_dir,
                    setup_script=f"{sc.env_dir}/setup.sh", metadata={"image": "default", "build_network": True})
        env = task_environment(view, backend)
        sb = be.start(env.spec(workdir=sc.workdir, limits=limits, env=dict(sc.env), netns=net, hosts=hosts,
                               hostname=sc.name))
        stack.callback(sb.close)
        sb.exec(detached(sc.command), timeout=30)
        checks = [sc.healthcheck] if sc.healthcheck else [f"bash -c '</dev/tcp/127.0.0.1/{p}'" for p in sc.ports]
        for check in checks:
            deadline = time.monotonic() + SIDECAR_START_TIMEOUT
            while not sb.exec(check, timeout=10, persistent=False).ok:
                if time.monotonic() > deadline:
                    log = sb.exec(f"tail -c 1500 {SERVICE_LOG}", timeout=10).output
                    raise SandboxError(f"sidecar {sc.name!r}: {check!r} still failing after "
                                       f"{SIDECAR_START_TIMEOUT:g}s; its output: {log}")
                time.sleep(0.2)
    return {"netns": net, "hosts": hosts}


def _start_service(task: Task, sb: Sandbox, phase: str) -> bool:
    """Start the image's entrypoint (detached, in the task's workdir, as its container would) and wait
    for its healthcheck.
    Unhealthy before the agent: the environment is broken (infra). Before the verifier: the agent's
    changes broke it (False: a failure)."""
    if task.service:
        sb.exec(f"(cd {shlex.quote(task.workdir)} 2>/dev/null; {detached(task.service)})", timeout=30)
    hc = task.healthcheck
    if hc is None:
        return True
    time.sleep(hc.start_period_sec)
    for attempt in range(hc.retries + 1):
        if sb.exec(hc.command, timeout=hc.timeout_sec, persistent=False).ok:
            return True
        if attempt < hc.retries:
            time.sleep(hc.interval_sec)
    if phase == "agent":
        raise SandboxError(f"{task.path / 'task.toml'}: environment.healthcheck: still failing after "
                           f"{hc.retries + 1} tries before the agent started")
    return False


def _meets(step: Step, v: _Verdict) -> bool:
    """Harbor's min_reward: a float gates the scalar; a table gates each named reward (missing: fails)."""
    if step.min_reward is None:
        return True
    if isinstance(step.min_reward, float):
        return v.reward is not None and v.reward >= step.min_reward
    return all(v.rewards.get(k, -math.inf) >= t for k, t in step.min_reward.items())


def _combine(task: Task, verdicts: list[tuple[Step | None, _Verdict]], res: TrialResult) -> None:
    """One step: its verdict. Several: Harbor's strategy, ``mean`` of each reward over the steps that
    ran (a missing key counts 0) or the ``final`` step's."""
    if len(verdicts) == 1 and verdicts[0][0] is None:
        v = verdicts[0][1]
        res.outcome, res.reward, res.rewards, res.reason, res.verifier_output = \
            v.outcome, v.reward, v.rewards, v.reason, v.output
        return
    ran = [v for _, v in verdicts]
    if task.reward_strategy == "final":
        reward, rewards = ran[-1].reward or 0.0, dict(ran[-1].rewards)
    else:
        keys = sorted({k for v in ran for k in v.rewards})
        rewards = {k: sum(v.rewards.get(k, 0.0) for v in ran) / len(ran) for k in keys}
        reward = sum(v.reward or 0.0 for v in ran) / len(ran)
    res.reward, res.rewards = reward, rewards
    res.outcome = Outcome.PASSED if reward >= 1.0 else Outcome.FAILED
    res.reason = "; ".join(f"step {s.name}: {v.reason}" for s, v in verdicts if v.reason and s is not None)
    if len(verdicts) < len(task.steps):
        res.reason = (res.reason + "; " if res.reason else "") + \
            f"stopped after step {verdicts[-1][0].name}: below its min_reward"
    res.verifier_output = ran[-1].output


def _only(layer: Path, paths: tuple[str, ...], dest: Path) -> Path:
    """A copy of ``layer`` (a layer we exported) holding only ``paths``: what a separate verifier sees."""
    dest.mkdir()
    for p in paths:
        parts = [x for x in p.split("/") if x]
        # The agent wrote this layer: a directory on the way that is a symlink would lead out of it.
        if parts and all(stat.S_ISDIR(_lstat_mode(layer.joinpath(*parts[:i]))) for i in range(1, len(parts))):
            src = layer.joinpath(*parts)
            if os.path.lexists(src):
                _copy_entry(src, dest.joinpath(*parts), "/" + "/".join(parts), "/" + "/".join(parts))
    return dest


def _lstat_mode(path: Path) -> int:
    try:
        return os.lstat(path).st_mode
    except OSError:
        return 0


def _copy_entry(src: Path, dst: Path, inside: str, root: str) -> None:
    """Copy one entry of an agent's layer (``inside``: its path in the sandbox) under ``root``, the
    artifact. Files are hard links (no byte is copied: a sparse 2 GB file stays 8 KB); a symlink is kept
    only if it resolves within the artifact, as Harbor's artifact upload keeps them (one pointing into
    the verifier's own image would hand the agent its answers)."""
    st = os.lstat(src)
    dst.parent.mkdir(parents=True, exist_ok=True)
    if stat.S_ISDIR(st.st_mode):
        dst.mkdir(exist_ok=True)
        for child in os.listdir(src):
            _copy_entry(src / child, dst / child, f"{inside}/{child}", root)
    elif stat.S_ISLNK(st.st_mode):
        target = os.readlink(src)
        resolved = os.path.normpath(os.path.join(os.path.dirname(inside), target))
        if inside == root or not (resolved + "/").startswith(root.rstrip("/") + "/"):
            return
        os.symlink(target, dst)
    elif stat.S_ISREG(st.st_mode):
        os.link(src, dst)  # the layer is ours and read-only from here on: the inode is shared
        return
    elif stat.S_ISCHR(st.st_mode) and st.st_rdev == 0:  # an overlayfs whiteout: the path was deleted
        os.mknod(dst, stat.S_IFCHR | 0o600, 0)
    else:
        return
    os.lchown(dst, st.st_uid, st.st_gid)
    if not stat.S_ISLNK(st.st_mode):
        os.chmod(dst, stat.S_IMODE(st.st_mode))


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
