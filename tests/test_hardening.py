"""Containment when tmax runs as root: one test per attack class of the threat model (README).

Each test is the attack, run from inside a real sandbox on both native backends, and checked from
the host. On a sandbox whose root is host root (tmax before the user namespace was shifted) every one
of them succeeds.
"""

from __future__ import annotations

import os
import pty
import socket
import stat
import subprocess
import sys
import textwrap
import threading
import uuid
from pathlib import Path

import pytest

from conftest import require_root
from tmax.sandbox import Bind, Limits, get_backend

pytestmark = pytest.mark.usefixtures("root_only")


@pytest.fixture
def root_only():
    require_root()


def py(code: str) -> str:
    """A shell command running ``code`` with the sandbox's python3 (the host image's)."""
    return "python3 - <<'EOF'\n" + textwrap.dedent(code) + "\nEOF"


def host_status(pid: int) -> dict[str, str]:
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        k, _, v = line.partition(":")
        out[k] = v.strip()
    return out


# -- identity ------------------------------------------------------------------------------------

def test_root_inside_is_an_unprivileged_uid_outside(sandbox):
    from tmax.sandbox import identity

    r = sandbox.exec("id -u; cat /proc/self/uid_map; sleep 30 & echo $!")
    lines = r.output.split("\n")
    assert lines[0] == "0"  # root inside ...
    inside, outside, count = (int(x) for x in lines[1].split())
    assert (inside, outside, count) == (0, identity.uid_base(), identity.UID_COUNT)
    for pid in sandbox.alive_pids():
        try:
            st = host_status(pid)
        except FileNotFoundError:
            continue
        uids = [int(x) for x in st["Uid"].split()]
        if st["Name"] in ("bash", "sleep"):  # ... and nobody on the host, with no capability there
            assert all(u >= identity.uid_base() for u in uids), (st["Name"], uids)
            assert st["NoNewPrivs"] == "1" and st["Seccomp"] == "2"
            assert int(st["CapEff"], 16) & (1 << 21) == 0  # never CAP_SYS_ADMIN, even in its own namespace


def test_proc_sys_and_sys_cannot_be_written(sandbox):
    before = Path("/proc/sys/kernel/core_pattern").read_text()
    r = sandbox.exec("for f in kernel/core_pattern kernel/hostname vm/drop_caches net/ipv4/ip_forward "
                     "kernel/modprobe; do echo '|/app/x' > /proc/sys/$f 2>/dev/null && echo WROTE $f; done; "
                     "echo 1 > /proc/sysrq-trigger 2>/dev/null && echo WROTE sysrq; "
                     "mount -t sysfs sysfs /sys 2>/dev/null && echo MOUNTED sys; "
                     "mount -t proc proc /mnt 2>/dev/null && echo MOUNTED proc; "
                     "ls /sys | head -3; true")
    after = Path("/proc/sys/kernel/core_pattern").read_text()
    if after != before:  # the attack worked: undo it on the host before failing
        Path("/proc/sys/kernel/core_pattern").write_text(before)
    assert "WROTE" not in r.output and "MOUNTED" not in r.output, r.output
    assert after == before


# -- limits --------------------------------------------------------------------------------------

def test_cgroup_limits_cannot_be_lifted(sandbox_factory, backend):
    sb = sandbox_factory(backend, limits=Limits(memory_mb=256, max_pids=64))
    r = sb.exec("mkdir -p /tmp/cg && for c in pids memory; do mount -t cgroup -o $c none /tmp/cg 2>/dev/null "
                "&& echo MOUNTED $c; done; mount -t cgroup2 none /tmp/cg 2>/dev/null && echo MOUNTED v2; "
                "cat /proc/self/cgroup | head -3")
    assert "MOUNTED" not in r.output, r.output
    # Past memory_mb: the allocation is killed, whatever was tried above.
    r = sb.exec(py("b = bytearray(400 << 20)\nfor i in range(0, len(b), 4096): b[i] = 1\nprint('ALLOC' + 'ATED')"),
                timeout=60)
    assert "ALLOCATED" not in r.output
    for d in sb.cgroup.dirs:
        if (d / "pids.max").exists():
            assert (d / "pids.max").read_text().strip() == "64"
        if (d / "memory.limit_in_bytes").exists():
            assert int((d / "memory.limit_in_bytes").read_text()) == 256 << 20


def test_storage_and_inodes_are_capped(sandbox_factory, backend, run_dir):
    sb = sandbox_factory(backend, limits=Limits(memory_mb=1024, storage_mb=64, inodes=3000))
    r = sb.exec("for d in /app /tmp /dev/shm /root /; do dd if=/dev/zero of=$d/fill bs=1M count=100 2>/dev/null; "
                "done; du -cm /app/fill /tmp/fill /dev/shm/fill /root/fill /fill 2>/dev/null | tail -1", timeout=60)
    assert int(r.output.split()[0]) <= 66, r.output  # 64 MB in all, wherever it is written
    r = sb.exec("rm -f /app/fill /tmp/fill /dev/shm/fill /root/fill /fill; mkdir -p /app/many; " + py("""
        n = 0
        try:
            for n in range(5000):
                open(f"/app/many/{n}", "w").close()
        except OSError:
            pass
        """) + "\nls /app/many | wc -l", timeout=120)
    assert int(r.output.split()[-1]) < 3000, r.output
    # None of it is on the host's disk.
    used = sum(f.stat().st_size for f in Path(sb.dir).rglob("*") if f.is_file())
    assert used < 1 << 20


# -- files left behind ---------------------------------------------------------------------------

def test_setuid_binary_made_inside_gains_nothing_outside(host_env, backend, tmp_path):
    """Inside, no_new_privs makes setuid inert; outside, the file exists only on the sandbox's tmpfs
    while it runs, and once exported it lies under directories no host user can enter."""
    spec = host_env.spec(workdir="/app", work_areas=("/app",), keep_changes=True)
    sb = get_backend(backend).start(spec)
    r = sb.exec("cp /bin/bash /app/rootsh && chmod 6755 /app/rootsh && mkfifo /app/fifo && "
                "ln -s /etc/shadow /app/link && setpriv --reuid=1000 /app/rootsh -p -c 'id -u'")
    assert r.output.strip().splitlines()[-1] == "1000", r.output  # no gain, even inside
    assert not any(os.path.exists(Path(sb.dir) / d / "app" / "rootsh") for d in ("", "rw", "upper"))
    assert oct(os.stat(run_dir_of(sb)).st_mode & 0o777) == "0o700"  # no host user can even look in
    sb.close()
    dest = tmp_path / "carry"
    sb.export_work_areas(dest)
    sh = dest / "app" / "rootsh"
    assert sh.stat().st_mode & 0o6000 == 0o6000  # kept as the agent left it (a task may grade it) ...
    assert not (dest / "app" / "fifo").exists()  # FIFOs are never exported
    assert (dest / "app" / "link").is_symlink()  # links stay links (never followed)
    os.chmod(tmp_path, 0o700)  # ... where layers live: private to root, as mkdtemp and private_dir make them
    run = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/bin/sh", "-c",
                          f"{sh} -p -c 'id -u'"], capture_output=True, text=True)
    assert run.returncode != 0 and "Permission denied" in run.stderr, run  # an unprivileged user cannot reach it


def run_dir_of(sb) -> Path:
    return Path(sb.dir).parent


# -- kernel surface ------------------------------------------------------------------------------

SYSCALLS = {"add_key": 248, "keyctl": 250, "request_key": 249, "bpf": 321, "perf_event_open": 298,
            "userfaultfd": 323, "io_uring_setup": 425, "init_module": 175, "kexec_load": 246,
            "open_by_handle_at": 304, "fsopen": 430, "pidfd_getfd": 438}


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="syscall numbers of x86_64")
def test_kernel_surface_is_denied(sandbox):
    r = sandbox.exec(py(f"""
        import ctypes, os
        libc = ctypes.CDLL(None, use_errno=True)
        for name, nr in {SYSCALLS!r}.items():
            ret = libc.syscall(nr, 0, 0, 0, 0, 0)
            print(name, ret, ctypes.get_errno())
        """) + "\nunshare -U true 2>/dev/null && echo NESTED-USERNS; true")
    assert "NESTED-USERNS" not in r.output
    for line in r.output.strip().splitlines():
        name, ret, err = line.split()
        assert (ret, err) == ("-1", "1"), line  # EPERM from the filter, before the kernel looks


def test_trials_share_no_keyring(sandbox_factory, backend):
    add = py("""
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        ret = libc.syscall(248, b"user", b"tmax-stash", b"secret", 6, -3)  # add_key(..., KEY_SPEC_SESSION_KEYRING)
        print("add", ret, ctypes.get_errno())
        ret = libc.syscall(249, b"user", b"tmax-stash", None, 0)  # request_key
        print("find", ret, ctypes.get_errno())
        """)
    a = sandbox_factory(backend).exec(add)
    b = sandbox_factory(backend).exec(add)
    assert a.output.split() == ["add", "-1", "1", "find", "-1", "1"], a.output
    assert b.output == a.output


# -- the operator's terminal ---------------------------------------------------------------------

TIOCSTI_OPERATOR = r'''
import os, sys, fcntl, termios
sys.path[:0] = sys.argv[2:]
from tmax.images import host_environment
from tmax.sandbox import get_backend
sb = get_backend(sys.argv[1]).start(host_environment().spec(workdir="/app", work_areas=("/app",)))
r = sb.exec("""python3 - <<'EOF'
import os, fcntl, termios
hits = []
fds = []
try:
    fds.append(os.open("/dev/tty", os.O_RDWR))
except OSError as e:
    print("no /dev/tty:", e.errno)
fds += list(range(0, 10))
for fd in fds:
    for ch in b"INJECTED\\n":
        try:
            fcntl.ioctl(fd, termios.TIOCSTI, bytes([ch]))
            hits.append(fd)
        except OSError:
            pass
print("HITS", sorted(set(hits)))
EOF""")
sb.close()
print(r.output, flush=True)
'''


def test_tiocsti_cannot_reach_the_operators_terminal(backend, tmp_path):
    script = tmp_path / "operator.py"
    script.write_text(TIOCSTI_OPERATOR)
    master, slave = pty.openpty()

    def as_terminal_session():  # tmax run from an interactive shell: the pty is its terminal
        os.setsid()
        import fcntl
        import termios
        fcntl.ioctl(slave, termios.TIOCSCTTY, 0)

    paths = [p for p in sys.path if p]
    proc = subprocess.Popen([sys.executable, str(script), backend, *paths], stdin=slave, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, preexec_fn=as_terminal_session, text=True)
    out, _ = proc.communicate(timeout=120)
    os.close(slave)
    os.set_blocking(master, False)
    try:
        typed = os.read(master, 4096)
    except OSError:
        typed = b""
    os.close(master)
    assert "HITS []" in out, out
    assert b"INJECTED" not in typed


# -- network -------------------------------------------------------------------------------------

def _serve_tcp() -> tuple[socket.socket, int]:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    srv.settimeout(0.2)
    return srv, srv.getsockname()[1]


@pytest.mark.parametrize("online", [False, True], ids=["offline", "online"])
def test_host_loopback_and_abstract_sockets_are_unreachable(sandbox_factory, backend, online):
    tcp, port = _serve_tcp()
    abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    name = f"tmax-bait-{uuid.uuid4().hex[:8]}"
    abstract.bind("\0" + name)
    abstract.listen(8)
    hits: list[str] = []
    stop = threading.Event()

    def accept():
        while not stop.is_set():
            try:
                c, _ = tcp.accept()
                hits.append("tcp")
                c.close()
            except OSError:
                pass

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    try:
        sb = sandbox_factory(backend, network=online)
        r = sb.exec(py(f"""
            import socket
            for host in ("127.0.0.1", "10.0.2.2", "10.0.2.3", "10.0.2.7"):  # 10.0.2.x: slirp's host aliases
                s = socket.socket(); s.settimeout(2)
                try:
                    s.connect((host, {port})); print("CONNECTED", host)
                except OSError as e:
                    print("refused", host, e)
            u = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                u.connect("\\0{name}"); print("CONNECTED abstract")
            except OSError as e:
                print("refused abstract", e)
            """) + "\ncat /proc/net/dev | awk -F: 'NR>2 {print $1}' | tr -d ' '", timeout=60)
        assert hits == []
        assert "CONNECTED" not in r.output, r.output
        ifaces = r.output.split()
        assert ("tap0" in ifaces) == online  # online tasks do get a network, just not the host's
    finally:
        stop.set()
        t.join(2)
        tcp.close()
        abstract.close()


# -- the host image ------------------------------------------------------------------------------

def test_host_image_shows_no_secrets(sandbox):
    bait = Path("/root") / f".tmax-bait-{uuid.uuid4().hex[:8]}"
    bait.write_text("operator secret\n")
    try:
        r = sandbox.exec("cut -d: -f2 /etc/shadow /etc/gshadow | sort -u")
        assert r.output in ("*\n", ""), r.output  # every password locked: no hash of the host's
        r = sandbox.exec(f"ls -d /etc/shadow- /etc/gshadow- /etc/ssl/private {bait} /etc/ssh/*_key 2>/dev/null; "
                         "ls -A /root")
        assert r.output == "", r.output  # hidden; and /root is the sandbox's own, empty
    finally:
        bait.unlink()


def test_sandbox_directories_are_private(sandbox):
    assert stat.S_IMODE(os.stat(sandbox.dir).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(Path(sandbox.dir).parent).st_mode) == 0o700


def test_concurrent_starts_from_many_threads(host_env, backend):
    """Rollout workers start sandboxes from threads: each start forks a user-namespace holder, and two
    forks racing must never hold each other's pipes open forever."""
    from concurrent.futures import ThreadPoolExecutor

    be = get_backend(backend)

    def one(i: int) -> str:
        with be.start(host_env.spec(workdir="/app", work_areas=("/app",))) as sb:
            return sb.exec(f"echo {i}").output

    with ThreadPoolExecutor(8) as pool:
        outs = list(pool.map(one, range(40), timeout=120))
    assert outs == [f"{i}\n" for i in range(40)]


def test_root_only_host_files_stay_unreadable(sandbox_factory, backend):
    """The host image shows host files with host owners: a file only host root may read stays so."""
    d = Path("/usr/local") / f"tmax-bait-{uuid.uuid4().hex[:8]}"
    d.mkdir(mode=0o700)
    (d / "secret").write_text("root only\n")
    os.chmod(d / "secret", 0o600)
    open_file = Path("/usr/local") / f"tmax-bait-{uuid.uuid4().hex[:8]}.conf"
    open_file.write_text("root only too\n")
    os.chmod(open_file, 0o600)
    try:
        r = sandbox_factory(backend).exec(f"cat {d}/secret {open_file}; ls {d}")
        assert "root only" not in r.output and r.output.count("Permission denied") == 3, r.output
    finally:
        open_file.unlink()
        (d / "secret").unlink()
        d.rmdir()


def test_writable_bind_writes_as_nobody(sandbox_factory, backend, tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(tmp_path, 0o755)
    sb = sandbox_factory(backend, binds=[Bind(str(shared), "/shared", readonly=False)])
    r = sb.exec("cp /bin/sh /shared/sh && chown 0:0 /shared/sh; chmod 4755 /shared/sh; echo hi > /shared/note; "
                "mknod /shared/disk b 8 0 2>/dev/null && echo MKNOD; ls -ln /shared")
    assert "MKNOD" not in r.output
    for f in shared.iterdir():
        st = f.lstat()
        assert st.st_uid >= identity_base() and st.st_gid >= identity_base(), (f, st.st_uid)  # never host root
    run = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", str(shared / "sh"), "-p",
                          "-c", "id -u"], capture_output=True, text=True)
    assert run.stdout.strip() != "0", run


def identity_base() -> int:
    from tmax.sandbox import identity

    return identity.uid_base()


def test_export_keeps_holes_and_survives_deep_trees(host_env, backend, tmp_path):
    spec = host_env.spec(workdir="/app", work_areas=("/app",), keep_changes=True,
                         limits=Limits(storage_mb=64))
    sb = get_backend(backend).start(spec)
    r = sb.exec("truncate -s 1G /app/sparse1 /app/sparse2 && echo data >> /app/sparse1 && "
                "python3 -c \"import os\nos.chdir('/app')\nfor i in range(1500): os.mkdir('d'); os.chdir('d')\n\"",
                timeout=60)
    assert r.exit_code == 0, r.output
    sb.close()
    dest = tmp_path / "carry"
    sb.export_work_areas(dest)  # no RecursionError
    on_disk = sum(f.lstat().st_blocks * 512 for f in dest.rglob("sparse*"))
    assert on_disk < 1 << 20  # 2 GB apparent, a few KB on the disk
    assert (dest / "app" / "sparse1").stat().st_size == (1 << 30) + 5
    depth = 0
    p = dest / "app"
    while (p / "d").is_dir():
        p, depth = p / "d", depth + 1
    assert depth <= 201
    import shutil
    shutil.rmtree(dest)


def test_dev_is_not_a_way_around_storage(sandbox):
    r = sandbox.exec("echo x > /dev/fill 2>/dev/null && echo WROTE; mkdir /dev/d 2>/dev/null && echo MKDIR; "
                     "echo ok > /dev/null && echo null-ok; echo s > /dev/shm/s && echo shm-ok")
    assert "WROTE" not in r.output and "MKDIR" not in r.output, r.output
    assert "null-ok\nshm-ok\n" in r.output


DRIVER = r"""
import sys, time
sys.path[:0] = sys.argv[2:]
from tmax.images import host_environment
from tmax.sandbox import get_backend
sb = get_backend(sys.argv[1]).start(host_environment().spec(workdir="/app", work_areas=("/app",), network=True))
sb.exec("sleep 600 &")
print(sb.net.pid, *sb.alive_pids(), flush=True)
time.sleep(600)
"""


def _gone(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_a_killed_driver_leaves_nothing_running(backend, tmp_path):
    """tmax killed with -9 while an online sandbox runs a daemon: the sandbox and slirp4netns go too
    (the uid change inside clears parent-death signals, so they must be set again after it)."""
    import time

    script = tmp_path / "driver.py"
    script.write_text(DRIVER)
    env = {**os.environ, "TMAX_RUN_DIR": str(tmp_path / "run")}  # a killed driver cannot remove its dirs
    proc = subprocess.Popen([sys.executable, str(script), backend, *[p for p in sys.path if p]],
                            stdout=subprocess.PIPE, text=True, env=env)
    pids = [int(x) for x in proc.stdout.readline().split()]
    assert len(pids) >= 3  # slirp4netns, the launcher, the shells, the daemon
    proc.kill()
    proc.wait()
    for _ in range(200):
        if all(_gone(p) for p in pids):
            break
        time.sleep(0.05)
    left = [p for p in pids if not _gone(p)]
    for p in left:
        os.kill(p, 9)
    assert left == [], f"still running after the driver was killed: {left}"
