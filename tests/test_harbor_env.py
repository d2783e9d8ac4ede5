"""tmax's sandbox as a Harbor environment (tmax.interop.harbor_env:TmaxEnvironment), driven by Harbor
itself in its own venv (Python >= 3.12, scripts/harbor_venv.sh): `harbor run` scores exported tmax
tasks and Harbor-format tasks with translated Dockerfiles (the verifier in the agent's environment or
in one of its own) 1 with the oracle and 0 with nop, and
Harbor's BaseEnvironment interface (exec, transfers, cancellation, stop, refusals) works on a real
sandbox, including against links that the sandbox plants in what the host downloads."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "tasks"
IMPORT_PATH = "tmax.interop.harbor_env:TmaxEnvironment"
EXPORTED = ("fix-word-tally", "log-5xx-summary")
NATIVE = "dockerfile-notes"  # the verifier shares the agent's environment
SEPARATE = "dockerfile-notes-separate"  # the verifier gets its own, from tests/Dockerfile

TASK_TOML = """schema_version = "1.1"

[task]
name = "test/dockerfile-notes"

[agent]
timeout_sec = 60.0
user = "agent"

[verifier]
timeout_sec = 60.0

[environment]
network_mode = "no-network"
memory_mb = 1024
storage_mb = 2048

[environment.env]
GREETING = "hello from the task"
"""
# Translatable onto tmax's default image: a Debian-family base, a package the image has, COPY,
# WORKDIR and a RUN that makes the user the task's agent runs as.
DOCKERFILE = """FROM python:3.11-slim
RUN apt-get update && apt-get install -y --no-install-recommends jq && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY notes.json /app/notes.json
RUN useradd -m agent && chown agent /app && echo seeded > /app/seed.txt
"""
SOLVE = """#!/bin/bash
jq '.notes | length' notes.json > count.txt
whoami > who.txt
echo "$GREETING" > greeting.txt
"""
TEST_SH = """#!/bin/bash
# Reward 1 only if the count is right, the solution ran as the task's user in the Dockerfile's
# WORKDIR with the task's environment, the Dockerfile's RUN took effect, and the sandbox had no
# network device but loopback.
ok=1
[ "$(cat /app/count.txt 2>/dev/null)" = "3" ] || ok=0
[ "$(cat /app/who.txt 2>/dev/null)" = "agent" ] || ok=0
[ "$(cat /app/greeting.txt 2>/dev/null)" = "hello from the task" ] || ok=0
[ "$(cat /app/seed.txt 2>/dev/null)" = "seeded" ] || ok=0
[ "$(awk -F: 'NR > 2 {gsub(/ /, "", $1); print $1}' /proc/net/dev)" = "lo" ] || ok=0
echo $ok > /logs/verifier/reward.txt
"""


# Harbor's separate verifier: an environment of its own built from this Dockerfile (the tests are in
# it), with the agent's /app brought over as an artifact.
SEPARATE_TOML = TASK_TOML.replace('name = "test/dockerfile-notes"', 'name = "test/dockerfile-notes-separate"').replace(
    '[verifier]\n', '[verifier]\nenvironment_mode = "separate"\n').replace('schema_version = "1.1"\n',
                                                                       'schema_version = "1.4"\nartifacts = ["/app"]\n')
VERIFIER_DOCKERFILE = "FROM debian:bookworm-slim\nCOPY test.sh /tests/test.sh\n"


def write_native_task(dest: Path, separate: bool = False) -> Path:
    files = {"task.toml": SEPARATE_TOML if separate else TASK_TOML,
             "instruction.md": "Write the number of notes in /app/notes.json to /app/count.txt.\n",
             "environment/Dockerfile": DOCKERFILE, "environment/notes.json": '{"notes": ["a", "b", "c"]}\n',
             "solution/solve.sh": SOLVE, "tests/test.sh": TEST_SH}
    if separate:
        files["tests/Dockerfile"] = VERIFIER_DOCKERFILE
    for rel, text in files.items():
        path = dest / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        if rel.endswith(".sh"):
            path.chmod(0o755)
    return dest


@pytest.fixture(scope="module")
def harbor_py() -> Path:
    env = {k: v for k, v in os.environ.items() if k != "TMAX_HOME"}  # the venv lives in the real cache
    r = subprocess.run(["bash", str(ROOT / "scripts" / "harbor_venv.sh")], capture_output=True, text=True,
                       timeout=600, env=env)
    if r.returncode != 0 or not r.stdout.strip():
        pytest.skip(f"Harbor's venv is not available (scripts/harbor_venv.sh): {r.stderr.strip()[-300:]}")
    return Path(r.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def tasks(tmp_path_factory, default_image) -> Path:
    out = tmp_path_factory.mktemp("harbor-tasks")
    subprocess.run([sys.executable, "-m", "tmax", "export", "harbor", *(str(EXAMPLES / n) for n in EXPORTED), str(out)],
                   check=True, capture_output=True, timeout=120)
    write_native_task(out / NATIVE)
    write_native_task(out / SEPARATE, separate=True)
    return out


def harbor_env() -> dict[str, str]:
    # No telemetry or model-price fetch (no network here); tmax from this checkout.
    return {**os.environ, "PYTHONPATH": str(ROOT / "src"), "HARBOR_TELEMETRY": "0",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True"}


def harbor_run(harbor_py: Path, tasks: Path, agent: str, jobs: Path) -> dict:
    """`harbor run` through TmaxEnvironment; returns Harbor's job result.json."""
    harbor = harbor_py.parent / "harbor"
    r = subprocess.run([str(harbor), "run", "-p", str(tasks), "-a", agent, "-e", IMPORT_PATH, "-o", str(jobs),
                        "--job-name", agent, "-n", "4", "-y", "-q"], capture_output=True, text=True, timeout=400,
                       env=harbor_env())
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    return json.loads((jobs / agent / "result.json").read_text())


def rewards(result: dict) -> dict[str, float]:
    """Task directory name -> reward, from the job's reward statistics."""
    (stats,) = result["stats"]["evals"].values()
    return {trial.split("__")[0]: float(reward) for reward, trials in stats["reward_stats"]["reward"].items()
            for trial in trials}


def trial_errors(jobs: Path, agent: str) -> list[str]:
    out = []
    for path in sorted((jobs / agent).glob("*/result.json")):
        info = json.loads(path.read_text()).get("exception_info")
        if info:
            out.append(f"{path.parent.name}: {info.get('exception_type')}: {info.get('exception_message', '')[:500]}")
    return out


def test_harbor_run_oracle_scores_one_on_exported_and_dockerfile_tasks(harbor_py, tasks, bwrap, tmp_path):
    result = harbor_run(harbor_py, tasks, "oracle", tmp_path)
    assert not trial_errors(tmp_path, "oracle")
    assert result["stats"]["n_errored_trials"] == 0 and result["n_total_trials"] == 4
    assert rewards(result) == {**{name: 1.0 for name in EXPORTED}, NATIVE: 1.0, SEPARATE: 1.0}
    # The logs came back to where Harbor reads them: the oracle's output and the verifier's.
    trial = next((tmp_path / "oracle").glob(f"{NATIVE}__*"))
    assert (trial / "verifier" / "reward.txt").read_text().strip() == "1"
    assert (trial / "agent" / "oracle.txt").is_file()


def test_harbor_run_nop_scores_zero(harbor_py, tasks, bwrap, tmp_path):
    result = harbor_run(harbor_py, tasks, "nop", tmp_path)
    assert not trial_errors(tmp_path, "nop")
    assert rewards(result) == {**{name: 0.0 for name in EXPORTED}, NATIVE: 0.0, SEPARATE: 0.0}


FIXTURES = ROOT / "tests" / "harbor_tasks"  # one Harbor-format task per feature, written from Harbor's format
NEEDS_NETWORK = {"net-verifier-online", "net-allowlist"}


def _deb_reachable() -> bool:
    r = subprocess.run(["curl", "-s", "-m", "10", "-o", "/dev/null", "-w", "%{http_code}",
                        "http://deb.debian.org/debian/"], capture_output=True, text=True)
    return r.stdout.strip() not in ("", "000")


def test_harbor_run_on_every_fixture_task(harbor_py, bwrap, tmp_path):
    """Harbor's own trial loop on each feature: steps, named rewards, an entrypoint service, a compose
    sidecar, a separate verifier, network policies switched per phase and an allowlist."""
    names = sorted(p.name for p in FIXTURES.iterdir() if (p / "task.toml").is_file())
    if not _deb_reachable():
        names = [n for n in names if n not in NEEDS_NETWORK]
    picked = tmp_path / "tasks"
    for n in names:
        shutil.copytree(FIXTURES / n, picked / n)
    for agent, want in (("oracle", 1.0), ("nop", 0.0)):
        harbor_run(harbor_py, picked, agent, tmp_path)
        assert not trial_errors(tmp_path, agent)
        got = {}
        for path in (tmp_path / agent).glob("*/result.json"):
            rewards_ = json.loads(path.read_text())["verifier_result"]["rewards"]
            scalar = rewards_.get("reward", sum(rewards_.values()) / len(rewards_))
            got[path.parent.name.split("__")[0]] = scalar
        assert got == {n: want for n in names}, (agent, got)


# Runs in Harbor's venv: argv = the native task's dir, a scratch dir. Prints one JSON object.
DRIVER = r'''
import asyncio, hashlib, json, os, sys, time
from pathlib import Path
from harbor.environments.base import SandboxBuildFailedError
from harbor.environments.factory import EnvironmentFactory
from harbor.models.task.config import EnvironmentConfig, NetworkMode, NetworkPolicy
from harbor.models.trial.paths import TrialPaths

task, scratch = Path(sys.argv[1]), Path(sys.argv[2])
IMPORT = "tmax.interop.harbor_env:TmaxEnvironment"
out = {}


def proc_stat(pid):
    """The fields of /proc/PID/stat after the command name (state first), [] if it is gone."""
    try:
        data = open(f"/proc/{pid}/stat", "rb").read()
    except OSError:
        return []
    return data[data.rindex(b")") + 2:].split()


def still_running(pid, started):  # the same process (not a reused pid), not a zombie
    fields = proc_stat(pid)
    return bool(fields) and fields[19] == started and fields[0] not in (b"Z", b"X")


def cmdline(pid):
    try:
        return open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def make(env_dir, mode=NetworkMode.NO_NETWORK, config=None, **kw):
    trial = scratch / f"trial-{len(list(scratch.glob('trial-*')))}"
    trial.mkdir()
    config = config or EnvironmentConfig(env={"GREETING": "hi there"}, memory_mb=1024, storage_mb=2048)
    return EnvironmentFactory.create_environment_from_import_path(
        IMPORT, environment_dir=env_dir, environment_name="notes", session_id="notes__t__env",
        trial_paths=TrialPaths(trial), task_env_config=config, network_policy=NetworkPolicy(network_mode=mode), **kw)


def refusal(fn):
    try:
        result = fn()
        if asyncio.iscoroutine(result):
            asyncio.run(result)
    except Exception as e:
        return f"{type(e).__name__}: {e}"
    return None


async def main():
    env = make(task / "environment")
    await env.start(force_build=False)
    try:
        r = await env.exec("pwd; echo $GREETING; echo to-stderr >&2; exit 3")
        out["basic"] = [r.stdout, r.stderr, r.return_code]
        r = await env.exec('pwd; echo "$A"; whoami', cwd="/tmp", env={"A": "x y"}, user="agent")
        out["cwd_env_user"] = r.stdout
        t0 = time.monotonic()
        try:
            await env.exec("sleep 20", timeout_sec=1)
            out["timeout"] = None
        except RuntimeError as e:
            out["timeout"] = [str(e), time.monotonic() - t0]
        t0 = time.monotonic()
        try:
            await asyncio.wait_for(env.exec("sleep 30; echo finished > /tmp/late"), 0.5)
        except asyncio.TimeoutError:
            pass
        r = await env.exec("echo next; pgrep -f 'sleep [3]0' || echo none")
        out["after_cancel"] = [r.stdout, time.monotonic() - t0]

        # Round trip: a host directory up and back, and one file.
        src = scratch / "up"
        (src / "sub").mkdir(parents=True)
        (src / "sub" / "data.txt").write_text("payload\n")
        (src / "run.sh").write_text("#!/bin/sh\necho run\n")
        (src / "run.sh").chmod(0o755)
        await env.upload_dir(src, "/srv/up")
        await env.upload_file(src / "sub" / "data.txt", "/srv/one/copy.txt")
        r = await env.exec("/srv/up/run.sh; cat /srv/one/copy.txt; stat -c %U /srv/up/sub/data.txt")
        out["uploaded"] = r.stdout
        back = scratch / "back"
        await env.download_dir("/srv/up", back)
        await env.download_file("/srv/one/copy.txt", scratch / "one" / "copy.txt")
        out["downloaded"] = {p.relative_to(back).as_posix(): [p.read_text(), os.access(p, os.X_OK)]
                             for p in sorted(back.rglob("*")) if p.is_file()}
        out["downloaded_file"] = (scratch / "one" / "copy.txt").read_text()

        # What the sandbox plants: links out of the directory, a FIFO, a link to a directory inside.
        await env.exec("cd /logs/agent && mkdir real && echo inner > real/f && ln -s real inside "
                       "&& ln -s /etc/passwd leak && ln -s / root && ln -s ../../.. up && mkfifo pipe")
        target = scratch / "agent-logs"
        await env.download_dir("/logs/agent", target)
        kinds = lambda p: "link" if p.is_symlink() else "dir" if p.is_dir() else "file"
        out["planted"] = sorted(f"{p.relative_to(target).as_posix()}:{kinds(p)}" for p in target.rglob("*"))
        await env.download_file("/logs/agent/leak", scratch / "leak")  # the link resolves inside the sandbox
        out["leak_is_sandbox_passwd"] = "agent:x:" in (scratch / "leak").read_text()
        out["is_dir"] = [await env.is_dir("/srv/up"), await env.is_file("/srv/up/run.sh"), await env.is_dir("/nope")]

        # A download larger than one chunk, while something the agent left running keeps printing:
        # its noise stays in the output of the command that started it, never in a later one.
        await env.exec("(while :; do echo noise; sleep 0.05; done) & head -c 1300000 /dev/urandom > /srv/big.bin")
        await asyncio.sleep(0.3)
        r = await env.exec("sha256sum /srv/big.bin")
        out["big_sum_inside"] = r.stdout.split()[0] if r.stdout else r.stdout
        await env.download_file("/srv/big.bin", scratch / "big.bin")
        out["big_sum_host"] = hashlib.sha256((scratch / "big.bin").read_bytes()).hexdigest()
        out["noise_later"] = "noise" in (await env.exec("sleep 0.3; echo quiet")).stdout
        out["inbox_write"] = (await env.exec("touch /.tmax-inbox/x")).stdout  # nothing of the host is writable

        pids = [(pid, fields[19]) for pid in env._sandbox.alive_pids() if (fields := proc_stat(pid))]
        inbox = env._inbox.root
        out["pids_before_stop"] = len(pids)
    finally:
        await env.stop(delete=True)
    out["alive_after_stop"] = [(pid, cmdline(pid)) for pid, started in pids if still_running(pid, started)]
    out["inbox_left"] = inbox.exists()

    public = make(task / "environment", mode=NetworkMode.PUBLIC)
    await public.start(force_build=False)
    try:
        out["public_devices"] = (await public.exec("awk -F: 'NR > 2 {print $1}' /proc/net/dev")).stdout.split()
    finally:
        await public.stop(delete=True)
    unshare = make(task / "environment", backend="unshare")
    await unshare.start(force_build=False)
    try:
        out["unshare"] = [unshare.backend, (await unshare.exec("echo ok")).stdout]
    finally:
        await unshare.stop(delete=True)

asyncio.run(main())

bad = scratch / "bad"
(bad / "multi").mkdir(parents=True)
(bad / "multi" / "Dockerfile").write_text("FROM debian:bookworm AS build\nRUN true\nFROM debian:bookworm\n")
(bad / "compose").mkdir()
(bad / "compose" / "docker-compose.yaml").write_text("services: {}\n")
(bad / "image").mkdir()
out["refusals"] = {
    "multi_stage": refusal(lambda: make(bad / "multi").start(force_build=False)),
    "compose": refusal(lambda: make(bad / "compose")),
    "image": refusal(lambda: make(bad / "image", config=EnvironmentConfig(docker_image="ubuntu:24.04"))),
    "allowlist": refusal(lambda: EnvironmentFactory.create_environment_from_import_path(
        IMPORT, environment_dir=task / "environment", environment_name="notes", session_id="s",
        trial_paths=TrialPaths(scratch / "trial-allow"), task_env_config=EnvironmentConfig(),
        network_policy=NetworkPolicy(network_mode=NetworkMode.ALLOWLIST, allowed_hosts=["pypi.org"]))),
    "backend": refusal(lambda: make(task / "environment", backend="podman")),
}
print(json.dumps(out))
'''


def test_environment_interface_on_a_real_sandbox(harbor_py, tasks, bwrap, tmp_path):
    r = subprocess.run([str(harbor_py), "-c", DRIVER, str(tasks / NATIVE), str(tmp_path)], capture_output=True,
                       text=True, timeout=300, env=harbor_env())
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    # exec: the Dockerfile's WORKDIR, the task's environment, output interleaved as Docker's, the status
    stdout, stderr, code = out["basic"]
    assert stdout.split() == ["/app", "hi", "there", "to-stderr"] and stderr is None and code == 3
    assert out["cwd_env_user"].split() == ["/tmp", "x", "y", "agent"]
    message, took = out["timeout"]
    assert "timed out after 1 seconds" in message and took < 5
    # A cancelled command is killed: the next one runs at once and no sleep is left
    next_out, took = out["after_cancel"]
    assert next_out.split() == ["next", "none"] and took < 5
    # transfers both ways keep content and the executable bit; uploads are root's
    assert out["uploaded"].split() == ["run", "payload", "root"]
    assert out["downloaded"] == {"run.sh": ["#!/bin/sh\necho run\n", True], "sub/data.txt": ["payload\n", False]}
    assert out["downloaded_file"] == "payload\n"
    # planted links that leave the directory, and the FIFO, are not brought to the host
    assert set(out["planted"]) == {"inside:link", "real:dir", "real/f:file"}
    assert out["leak_is_sandbox_passwd"] is True
    assert out["is_dir"] == [True, True, False]
    assert out["big_sum_host"] == out["big_sum_inside"] and out["noise_later"] is False
    assert "Read-only file system" in out["inbox_write"]
    # stop: every process of the sandbox is gone, and the transfer directories with it
    assert out["pids_before_stop"] > 0 and out["alive_after_stop"] == [] and out["inbox_left"] is False
    assert "lo" in out["public_devices"] and len(out["public_devices"]) > 1
    assert out["unshare"] == ["unshare", "ok\n"]
    ref = out["refusals"]
    assert ref["multi_stage"].startswith("SandboxBuildFailedError") and "multi-stage" in ref["multi_stage"]
    assert "/multi/Dockerfile" in ref["multi_stage"]
    assert "Dockerfile: missing" in ref["compose"]  # the main service is built from environment/Dockerfile
    assert "prebuilt image 'ubuntu:24.04'" in ref["image"]
    assert ref["allowlist"] is None  # allowlists are enforced (by name, sandbox/egress.py)
    assert "backend 'podman'" in ref["backend"] and "bwrap, unshare" in ref["backend"]
