"""Attacks by an agent on the real sandbox and trial loop; every one must fail.

Each test drives ``run_trial`` with a scripted agent whose commands are the attack, on the host
image, on both native backends. Where the attack targets the host, the test plants the bait on the
host (a secret file, a file to overwrite, a TCP server) and checks it afterwards.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import threading
import time
import uuid
from pathlib import Path

import pytest

from conftest import (REWARD_IF_ANSWER, ScriptAgent, all_pids, cmdline, identities, make_task, require_root,
                      still_alive)
from tmax.sandbox import cgroups
from tmax.task import TaskError, load_task
from tmax.trial import Outcome, run_trial

# Leave a chroot: chroot into a subdirectory, climb past the old root, chroot there.
CHROOT_ESCAPE = """python3 - <<'EOF'
import os
os.makedirs('/tmp/.esc', exist_ok=True)
try:
    os.chroot('/tmp/.esc')
    for _ in range(64):
        os.chdir('..')
    os.chroot('.')
    print('ESCAPED-TO', sorted(os.listdir('/'))[:40])
    {action}
except OSError as e:
    print('escape failed:', e)
EOF"""


def trial(task, backend, *steps):
    agent = ScriptAgent(*steps)
    res = run_trial(task, agent, backend=backend)
    return res, agent


def assert_scored_zero(res):
    assert res.outcome != Outcome.INFRA_ERROR, res.reason
    assert res.reward == 0.0, (res.outcome, res.reward, res.reason, res.verifier_output)


def root_device() -> tuple[int, int] | None:
    """major:minor of the filesystem that holds the host's /."""
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        parts = line.split()
        if parts[4] == "/":
            major, minor = parts[2].split(":")
            return int(major), int(minor)
    return None


# -- reading -------------------------------------------------------------------------------------

def test_cannot_read_host_secrets(task_factory, backend, tmp_path, monkeypatch, run_dir):
    token = "TMAXSECRET" + uuid.uuid4().hex
    secret = tmp_path / "secret.txt"
    secret.write_text(token + "\n")
    home_secret = Path.home() / f".tmax-secret-{uuid.uuid4().hex[:8]}"  # a /root/.bash_history-style file
    home_secret.write_text(token + "\n")
    tmp_secret = Path("/tmp") / f"tmax-secret-{uuid.uuid4().hex[:8]}"
    tmp_secret.write_text(token + "\n")
    monkeypatch.setenv("TMAX_TEST_SECRET", token)  # our own environment must not leak in either
    dev = root_device()
    mknod = (f"mknod /tmp/disk b {dev[0]} {dev[1]} && mkdir -p /tmp/mnt && mount -o ro /tmp/disk /tmp/mnt && "
             f"cat /tmp/mnt{secret} /tmp/mnt{home_secret}") if dev else "true"
    try:
        task = task_factory()
        res, agent = trial(
            task, backend,
            f"cat {secret}", f"cat {home_secret}", f"cat {tmp_secret}", "cat /root/.bash_history",
            f"cat /proc/1/root{secret} /proc/1/cwd{secret}",
            f"for p in /proc/[0-9]*; do cat $p/root{secret} $p/root{home_secret} 2>/dev/null; done",
            f"ls {run_dir} {tmp_path}",
            "env; cat /proc/1/environ /proc/self/environ | tr '\\0' '\\n'",
            f"find / -name '{home_secret.name}' -not -path '/proc/*' 2>/dev/null; "
            f"find / -name '{tmp_secret.name}' -not -path '/proc/*' 2>/dev/null",
            # the upper dir's host path is visible in mountinfo: try to reach the host through it
            "up=$(grep -o 'upperdir=[^,]*' /proc/self/mountinfo | head -1 | cut -d= -f2); echo $up; ls $up/../..",
            mknod,
            "mkdir -p /tmp/root && mount --bind / /tmp/root && ls /tmp/root",
            CHROOT_ESCAPE.format(action=f"print(open('{secret}').read()); print(open('{home_secret}').read())"),
        )
    finally:
        home_secret.unlink(missing_ok=True)
        tmp_secret.unlink(missing_ok=True)
    out = agent.output()
    assert len(agent.results) == 13
    assert token not in out
    assert "No such file or directory" in agent.results[0].output
    assert agent.results[1].exit_code != 0 and agent.results[2].exit_code != 0
    assert agent.results[8].output == ""  # find saw nothing
    assert_scored_zero(res)


# -- writing -------------------------------------------------------------------------------------

def test_cannot_write_outside(task_factory, backend, tmp_path, run_dir):
    bait = tmp_path / "bait"
    bait.mkdir()
    target = bait / "target.txt"
    target.write_text("original\n")
    # a host file the host image shows read-through (needs root to plant; else a file in tmp_path)
    share = Path("/usr/local/share")
    probe = (share if os.access(share, os.W_OK) else bait) / f"tmax-probe-{uuid.uuid4().hex[:8]}"
    probe.write_text("original\n")
    before = sorted(p.name for p in bait.iterdir())
    dev = root_device()
    try:
        task = task_factory()
        res, agent = trial(
            task, backend,
            f"echo pwned > {target}; echo pwned > {probe}; rm -f {probe}; echo pwned > /usr/bin/tmax-pwned",
            f"mkdir -p {bait} && echo pwned > {target} && echo pwned > {bait}/planted.txt && cat {target}",
            f"echo pwned > /proc/1/root{target}; echo pwned > /proc/1/cwd/../../{target}",
            (f"mknod /tmp/disk b {dev[0]} {dev[1]} && mkdir -p /tmp/mnt && mount /tmp/disk /tmp/mnt && "
             f"echo pwned > /tmp/mnt{target}") if dev else "true",
            CHROOT_ESCAPE.format(action=f"open('{target}', 'w').write('pwned')"),
            f"echo pwned > {run_dir}/planted.txt",
            "echo done > /app/answer.txt",  # ordinary work inside the work area still works
        )
        assert target.read_text() == "original\n"
        assert sorted(p.name for p in bait.iterdir()) == before
        assert probe.read_text() == "original\n"
        assert not Path("/usr/bin/tmax-pwned").exists()
        assert not (run_dir / "planted.txt").exists()
        assert agent.results[1].output == "pwned\n"  # it wrote to its own private /tmp
        assert agent.results[-1].exit_code == 0
        assert_scored_zero(res)  # "done" is not the answer
    finally:
        probe.unlink(missing_ok=True)


# -- network -------------------------------------------------------------------------------------

class Server:
    """A TCP server on every host address that counts connections, plus an abstract unix socket."""

    def __init__(self):
        self.tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.tcp.bind(("0.0.0.0", 0))
        self.tcp.listen(16)
        self.port = self.tcp.getsockname()[1]
        self.unix_name = "tmax-test-" + uuid.uuid4().hex[:8]
        self.unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.unix.bind("\0" + self.unix_name)
        self.unix.listen(16)
        self.accepted = 0
        self.stop = False
        self.threads = [threading.Thread(target=self._serve, args=(s,), daemon=True) for s in (self.tcp, self.unix)]
        for t in self.threads:
            t.start()

    def _serve(self, s):
        s.settimeout(0.2)
        while not self.stop:
            try:
                c, _ = s.accept()
            except (TimeoutError, OSError):
                continue
            self.accepted += 1
            c.close()

    def close(self):
        self.stop = True
        for t in self.threads:
            t.join()
        self.tcp.close()
        self.unix.close()


def host_addresses() -> list[str]:
    addrs = {"127.0.0.1"}
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("10.255.255.255", 1))  # no packet is sent; picks the outgoing address
            addrs.add(s.getsockname()[0])
    except OSError:
        pass
    try:
        addrs.update(socket.gethostbyname_ex(socket.gethostname())[2])
    except OSError:
        pass
    return sorted(addrs)


def test_cannot_reach_host_network(task_factory, backend):
    server = Server()
    try:
        # the server works from the host
        with socket.create_connection(("127.0.0.1", server.port), timeout=5):
            pass
        assert wait_for(lambda: server.accepted == 1)
        addrs = host_addresses()
        steps = ["python3 -c 'import socket; print(sorted(n for _, n in socket.if_nameindex()))'"]
        for a in addrs:
            steps.append(f"timeout 5 bash -c 'echo hi > /dev/tcp/{a}/{server.port}' && echo CONNECTED")
            steps.append("timeout 5 python3 -c \"import socket; socket.create_connection"
                         f"(('{a}', {server.port}), timeout=3); print('CONNECTED')\"")
        steps.append("python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); "
                     f"s.connect('\\0{server.unix_name}'); print('CONNECTED')\"")
        steps.append("timeout 5 getent hosts example.com || echo no-dns")
        res, agent = trial(task_factory(), backend, *steps)
        time.sleep(0.3)
        assert server.accepted == 1, "a sandboxed process reached the host's server"
        assert "CONNECTED" not in agent.output()
        assert agent.results[0].output == "['lo']\n"
        assert all(r.exit_code != 0 for r in agent.results[1:-1])
        assert agent.results[-1].output.endswith("no-dns\n")
        assert_scored_zero(res)
    finally:
        server.close()


def wait_for(pred, timeout=5.0):
    end = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > end:
            return False
        time.sleep(0.05)
    return True


# -- resources -------------------------------------------------------------------------------------

def _sample_pids(sb, box: dict, stop: threading.Event):
    """The kernel's own count of the sandbox's tasks (pids.current), sampled while the bomb runs."""
    current = next(d / "pids.current" for d in sb.cgroup.dirs if (d / "pids.current").exists())
    while not stop.is_set():
        try:
            box["max"] = max(box.get("max", 0), int(current.read_text()))
        except (OSError, ValueError):
            pass
        time.sleep(0.01)


def test_fork_bomb_is_contained(task_factory, backend):
    require_root()
    if cgroups.MODE is None:
        pytest.skip("no writable cgroup hierarchy: a fork bomb would not be bounded")
    seen: dict = {}

    def bomb(sb):
        stop = threading.Event()
        box: dict = {}
        t = threading.Thread(target=_sample_pids, args=(sb, box, stop), daemon=True)
        t.start()
        r = sb.exec(":(){ :|:& };:", timeout=5)
        time.sleep(3)  # let it hit the limit
        r2 = sb.exec("echo still-here", timeout=5)  # a builtin needs no new process
        stop.set()
        t.join()
        seen.update(max_pids=box.get("max", 0), ident=identities(sb.alive_pids()), id=sb.id,
                    first=r, second=r2, limit=sb.spec.limits.max_pids)

    task = task_factory(agent_timeout=60)
    t0 = time.monotonic()
    res, agent = trial(task, backend, bomb)
    took = time.monotonic() - t0
    assert seen["max_pids"] > 50, "the bomb did not run"
    assert seen["max_pids"] <= seen["limit"], seen["max_pids"]
    assert len(seen["ident"]) > 50
    assert still_alive(seen["ident"]) == []
    assert not [p for p in cgroups.leftovers() if p.name == f"sb-{seen['id']}"]
    assert took < 60
    assert subprocess.run(["true"]).returncode == 0  # the host can still fork
    assert_scored_zero(res)


def test_memory_limit(task_factory, backend):
    require_root()
    if cgroups.MODE is None:
        pytest.skip("no writable cgroup hierarchy")
    from tmax.task import Resources

    seen = {}
    grow = ("python3 -c \"\nchunks = []\nfor i in range(256):\n    chunks.append(b'x' * (16 << 20))\n"
            "    print((i + 1) * 16, flush=True)\n\"")
    task = task_factory(resources=Resources(memory_mb=256))
    res, agent = trial(
        task, backend,
        "python3 -c \"x = b'a' * (4 << 30); print('ALLOCATED', len(x))\"",
        grow,
        lambda sb: seen.update(failcnt=sb.cgroup.memory_failcnt()),
        "echo 42 > /app/answer.txt",  # the sandbox still works afterwards
    )
    big, steps, *_ = agent.results
    assert not re.search(r"^ALLOCATED \d", big.output, re.M) and big.exit_code != 0, big.output
    assert steps.exit_code != 0
    reached = [int(x) for x in re.findall(r"^(\d+)$", steps.output, re.M)]
    assert reached and max(reached) < 256 + 32, max(reached or [0])
    assert seen["failcnt"] > 0
    assert res.outcome == Outcome.PASSED and res.reward == 1.0  # the verifier ran normally afterwards


@pytest.mark.parametrize("forever", ["sleep 100000", "while :; do :; done", "python3 -c 'while True: pass'"])
def test_run_forever_is_stopped(task_factory, backend, forever):
    task = task_factory(agent_timeout=1.5)
    t0 = time.monotonic()
    res, agent = trial(task, backend, "echo 42 > /app/answer.txt", forever, "echo never > /app/answer.txt")
    took = time.monotonic() - t0
    assert res.outcome == Outcome.AGENT_TIMEOUT
    assert agent.results[-1].timed_out and len(agent.results) == 2
    assert took < 15
    assert res.reward == 1.0  # the work done before the timeout still counts
    assert "agent exceeded 1.5s" in res.reason


def test_daemons_do_not_survive(task_factory, backend):
    tag = str(7000 + int(uuid.uuid4().hex[:6], 16) % 1000)
    seen = {}

    def capture(sb):
        time.sleep(0.5)
        pids = sb.alive_pids()
        seen["ident"] = identities(pids)
        seen["cmds"] = [cmdline(p) for p in pids]

    res, agent = trial(
        task_factory(), backend,
        f"setsid nohup sleep {tag}.1 >/dev/null 2>&1 &",
        f"( ( sleep {tag}.2 & ) & )",
        f"nohup bash -c 'trap \"\" TERM HUP INT; exec sleep {tag}.3' >/dev/null 2>&1 & disown",
        "python3 -c \"\nimport os, time\nif os.fork(): os._exit(0)\nos.setsid()\nif os.fork(): os._exit(0)\n"
        f"os.execvp('sleep', ['sleep', '{tag}.4'])\"",
        # keeps re-planting a reward for the verifier, if it could survive
        "nohup bash -c 'while :; do mkdir -p /logs/verifier; echo 1 > /logs/verifier/reward.txt; sleep 0.05; "
        "done' >/dev/null 2>&1 &",
        capture,
    )
    for i in range(1, 5):
        assert any(f"sleep {tag}.{i}" in c for c in seen["cmds"]), (i, seen["cmds"])
    assert still_alive(seen["ident"]) == []
    assert not [p for p in all_pids() if f"sleep {tag}." in cmdline(p)]
    assert_scored_zero(res)


# -- the verifier ----------------------------------------------------------------------------------

REWARD_ONLY_IF_ANSWER = """#!/bin/bash
# Writes a reward only when the work was done (a planted reward.txt would otherwise be read as is).
if [ "$(cat /app/answer.txt 2>/dev/null)" = "42" ]; then echo 1 > /logs/verifier/reward.txt; fi
"""

PLANT = ("mkdir -p /logs/verifier && echo 1 > /logs/verifier/reward.txt && "
         "echo '{\"reward\": 1.0}' > /logs/verifier/reward.json && "
         "mkdir -p /app/logs/verifier /root/logs/verifier && "
         "echo 1 | tee /app/logs/verifier/reward.txt /root/logs/verifier/reward.txt")


@pytest.mark.parametrize("test_sh", [REWARD_IF_ANSWER, REWARD_ONLY_IF_ANSWER], ids=["writes-0", "writes-nothing"])
@pytest.mark.parametrize("work_areas", [None, ["/app", "/root", "/logs"]], ids=["default-areas", "logs-area"])
def test_planted_reward_does_not_count(task_factory, backend, test_sh, work_areas):
    meta = {"work_areas": work_areas} if work_areas else {}
    res, agent = trial(task_factory(test=test_sh, metadata=meta), backend, PLANT, "cat /logs/verifier/reward.txt")
    assert agent.results[0].exit_code == 0 and agent.results[1].output == "1\n"  # planting itself worked
    assert_scored_zero(res)
    if test_sh is REWARD_ONLY_IF_ANSWER:
        assert res.outcome == Outcome.FAILED and "no reward" in res.reason


@pytest.mark.parametrize("work_areas", [None, ["/app", "/tests"]], ids=["default-areas", "tests-area"])
def test_tests_are_hidden_and_tamper_proof(task_factory, backend, work_areas):
    marker = "hidden-marker-" + uuid.uuid4().hex[:8]
    meta = {"work_areas": work_areas} if work_areas else {}
    task = task_factory(files={f"tests/{marker}.txt": "x\n"}, metadata=meta)
    res, agent = trial(
        task, backend,
        "test -e /tests && echo TESTS-VISIBLE; ls /tests 2>&1",
        f"find / -name '{marker}*' -not -path '/proc/*' 2>/dev/null",
        "ls /solution 2>&1 || true",
        "mkdir -p /tests && printf '#!/bin/bash\\necho 1 > /logs/verifier/reward.txt\\n' > /tests/test.sh && "
        "cp /tests/test.sh /tests/run.sh && echo WROTE",
    )
    if work_areas is None:
        assert "TESTS-VISIBLE" not in agent.results[0].output
    else:  # a declared work area exists, empty
        assert agent.results[0].output == "TESTS-VISIBLE\n"
    assert agent.results[1].output == ""
    assert "No such file" in agent.results[2].output
    assert "WROTE" in agent.results[3].output  # it could write its own /tests...
    assert_scored_zero(res)  # ...but the verifier ran the real tests


CHECK_PY = """import os, sys
ok = os.path.exists('/app/answer.txt') and open('/app/answer.txt').read().strip() == '42'
open('/logs/verifier/reward.txt', 'w').write('1' if ok else '0')
"""
REAL_PYTHON_TEST = """#!/bin/bash
# Reward from the environment's own python3; any failure to run it scores 0.
mkdir -p /logs/verifier
echo 0 > /logs/verifier/reward.txt
python3 /tests/check.py || echo 0 > /logs/verifier/reward.txt
"""
FAKE_PY = "#!/bin/sh\\necho 1 > /logs/verifier/reward.txt\\nexit 0\\n"
FAKE_MODULE = 'import os\\nopen("/logs/verifier/reward.txt", "w").write("1")\\nos._exit(0)\\n'


def test_replaced_tools_are_not_used_by_the_verifier(task_factory, backend):
    # The default image: the host image's system directories are not writable at all.
    task = task_factory(test=REAL_PYTHON_TEST, files={"tests/check.py": CHECK_PY}, metadata={"image": "default"})
    site = "/root/.local/lib/python3.11/site-packages"
    res, agent = trial(
        task, backend,
        f"mkdir -p /logs/verifier && printf '{FAKE_PY}' > /usr/local/bin/python3 && "
        "chmod +x /usr/local/bin/python3",
        f"mkdir -p /app/bin && printf '{FAKE_PY}' > /app/bin/python3 && chmod +x /app/bin/python3 && "
        "cp /app/bin/python3 /root/python3",
        "echo 'export PATH=/app/bin:/root:$PATH' | tee -a /root/.bashrc /root/.profile /root/.bash_profile "
        "/etc/profile /etc/bash.bashrc >/dev/null && echo 'PATH=/app/bin:/root:/usr/bin' >> /etc/environment",
        "echo 'export BASH_ENV=/root/.bashrc PYTHONPATH=/app' >> /etc/profile",
        f"printf '{FAKE_MODULE}' > /app/pytest.py && cp /app/pytest.py /app/os.py && cp /app/pytest.py /app/json.py",
        f"mkdir -p {site} && printf '{FAKE_MODULE}' > {site}/sitecustomize.py && "
        f"cp {site}/sitecustomize.py {site}/usercustomize.py && echo 'import sitecustomize' > {site}/evil.pth",
        f"printf '{FAKE_MODULE}' > /usr/lib/python3/dist-packages/sitecustomize.py 2>/dev/null; true",
        "bash -lc 'command -v python3' && python3 -c 'print(1)'",  # the fakes work in the agent's own shell
        "cat /logs/verifier/reward.txt",
    )
    assert all(r.exit_code == 0 for r in agent.results), [r.output for r in agent.results]
    assert agent.results[-2].output.startswith("/app/bin/python3")  # a login shell picks up the fake
    assert agent.results[-1].output == "1\n"  # and the fake python3 "ran"
    assert_scored_zero(res)
    assert res.outcome == Outcome.FAILED and res.reason == ""  # the real check ran and said 0


def test_symlink_out_of_task_is_refused(tmp_path):
    d = make_task(tmp_path / "t")
    (d / "tests" / "shadow").symlink_to("/etc/shadow")
    with pytest.raises(TaskError, match="symlink points outside the task"):
        load_task(d)
    (d / "tests" / "shadow").unlink()
    (d / "environment").mkdir()
    (d / "environment" / "host-root").symlink_to("/")
    with pytest.raises(TaskError, match="environment/host-root"):
        load_task(d)
