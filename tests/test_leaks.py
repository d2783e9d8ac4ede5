"""Opening and closing many sandboxes leaves nothing behind: no process, mount, cgroup, directory or
file descriptor."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import pytest

from conftest import ScriptAgent, all_pids, cmdline, descendants_of, identities, still_alive
from tmax.images import Environment
from tmax.sandbox import SandboxError, get_backend
from tmax.sandbox import cgroups
from tmax.errors import InfraError
from tmax.trial import Outcome, run_trial


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _mountinfo_mentions(needles: list[str]) -> list[str]:
    hits = []
    for src in ("/proc/self/mountinfo", "/proc/1/mountinfo"):
        try:
            text = Path(src).read_text()
        except OSError:
            continue
        hits += [f"{src}: {line}" for line in text.splitlines() if any(n in line for n in needles)]
    return hits


def assert_nothing_left(run_dir: Path, ids: set[str], fds_before: int | None = None) -> None:
    me = os.getpid()
    kids = [(p, cmdline(p)) for p in descendants_of(me)]
    assert kids == [], f"processes left under the test process: {kids[:5]}"
    strays = [(p, cmdline(p)) for p in all_pids() if str(run_dir) in cmdline(p)]
    assert strays == [], f"processes that mention the run dir: {strays[:5]}"
    bwraps = [(p, c) for p in all_pids() if "bwrap" in (c := cmdline(p)) and any(i in c for i in ids)]
    assert bwraps == []
    assert _mountinfo_mentions([str(run_dir), "tmax-sandboxes"]) == []
    names = {f"sb-{i}" for i in ids}
    assert [p for p in cgroups.leftovers() if p.name in names] == []
    assert sorted(p.name for p in run_dir.iterdir()) == []
    if fds_before is not None:
        assert _fds() == fds_before, "file descriptors leaked"


def _loop(backend: str, host_env, n: int, run_dir: Path) -> float:
    be = get_backend(backend)
    # warm up (imports, lazily opened files) before counting descriptors
    with be.start(host_env.spec(workdir="/app", work_areas=("/app",))) as sb:
        sb.exec("true")
    fds = _fds()
    ids: set[str] = set()
    t0 = time.monotonic()
    for i in range(n):
        sb = be.start(host_env.spec(workdir="/app", work_areas=("/app",)))
        ids.add(sb.id)
        if i % 50 == 0:  # now and then, make sure it really runs
            assert sb.exec("echo $((6 * 7))").output == "42\n"
        sb.close()
    took = time.monotonic() - t0
    assert len(ids) == n
    assert_nothing_left(run_dir, ids, fds)
    return took


def test_500_bwrap_sandboxes_leave_nothing(bwrap, host_env, run_dir):
    took = _loop(bwrap, host_env, 500, run_dir)
    print(f"500 bwrap sandboxes: {took:.1f}s ({took / 500 * 1000:.0f} ms each)")


def test_50_unshare_sandboxes_leave_nothing(host_env, run_dir):
    ok, why = get_backend("unshare").available()
    if not ok:
        pytest.skip(why)
    took = _loop("unshare", host_env, 50, run_dir)
    print(f"50 unshare sandboxes: {took:.1f}s")


def test_busy_sandboxes_leave_nothing(backend, host_env, run_dir):
    """Sandboxes closed while daemons, pipelines and a running command are alive."""
    be = get_backend(backend)
    ids, idents = set(), set()
    for _ in range(10):
        sb = be.start(host_env.spec(workdir="/app", work_areas=("/app",)))
        ids.add(sb.id)
        sb.exec("setsid nohup sleep 1234 >/dev/null 2>&1 & (yes > /dev/null &) ; sleep 4321 | cat &")
        sb.exec("sleep 100", timeout=0.2)
        time.sleep(0.1)
        idents |= identities(sb.alive_pids())
        sb.close()
    assert len(idents) >= 10 * 7  # launcher, shell(s), and the five processes started above
    assert still_alive(idents) == []
    assert_nothing_left(run_dir, ids)


def test_failed_start_leaves_nothing(backend, run_dir):
    be = get_backend(backend)
    for keep in (False, True):
        env = Environment(name="broken", layers=(Path("/nonexistent/tmax-layer"),), hash="x")
        with pytest.raises(SandboxError, match="sandbox launch failed: .*mount"):
            be.start(env.spec(workdir="/app", work_areas=("/app",), keep_changes=keep))
    assert_nothing_left(run_dir, set())


TAG = f"{os.getpid()}{time.monotonic_ns() % 10**6}"  # unique durations: only this test's sleeps are looked for


class Crashing(ScriptAgent):
    """Leaves a process behind, then fails as the infrastructure does (its model server went away)."""

    def run(self, task, sandbox, timeout):
        sandbox.exec(f"echo work > /app/answer.txt; sleep 300.{TAG} &")
        raise InfraError("agent bug: the model server went away")


class Buggy(ScriptAgent):
    """Leaves a process behind, then hits a bug of its own: run_trial raises it, and still cleans up."""

    def run(self, task, sandbox, timeout):
        sandbox.exec(f"echo work > /app/answer.txt; sleep 300.{TAG} &")
        raise RuntimeError("a bug in the agent")


def test_trials_leave_nothing(task_factory, backend, run_dir, tmp_path, monkeypatch):
    scratch = tmp_path / "scratch"  # where run_trial makes its work dir (tempfile's default dir)
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    task = task_factory()
    for agent in (ScriptAgent(f"echo 42 > /app/answer.txt; sleep 500.{TAG} &"), Crashing()):
        res = run_trial(task, agent, backend=backend)
        assert res.outcome in (Outcome.PASSED, Outcome.INFRA_ERROR)
    assert res.outcome == Outcome.INFRA_ERROR and "agent bug" in res.reason and res.reward is None
    with pytest.raises(RuntimeError, match="a bug in the agent"):
        run_trial(task, Buggy(), backend=backend)
    assert list(scratch.iterdir()) == []
    assert_nothing_left(run_dir, set())
    assert not [p for p in all_pids() if f"sleep 500.{TAG}" in cmdline(p) or f"sleep 300.{TAG}" in cmdline(p)]
