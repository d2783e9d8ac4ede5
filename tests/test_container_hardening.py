"""The container backends' hardening, checked from inside real sandboxes: the identity (podman as root
runs the container in ``identity``'s shifted host range), the capability set, no_new_privs, seccomp,
a read-only /proc/sys, and online sandboxes that cannot reach the host's loopback.

Each test skips with the backend's own reason when its engine cannot run here (as in
test_container_backends.py, whose fixtures these reuse); docker needs a running dockerd. The command
line checks at the end need no engine at all.
"""

from __future__ import annotations

import os
import socket
import stat
import threading
import time
from pathlib import Path

import pytest

from test_container_backends import engine_backend  # noqa: F401  (a fixture: podman and docker)
from tmax.sandbox import Bind, SandboxSpec, get_backend, identity

CAP_SYS_ADMIN = 21
CORE_PATTERN = Path("/proc/sys/kernel/core_pattern")


@pytest.fixture
def podman_backend():
    be = get_backend("podman")
    ok, why = be.available()
    if not ok:
        pytest.skip(why)
    return be


@pytest.fixture
def shifted_podman(podman_backend):
    if not identity.shifted():
        pytest.skip("the shifted uid range needs tmax to run as root (rootless podman maps root to the user)")
    return podman_backend


def _status(sb) -> dict[str, str]:
    r = sb.exec("cat /proc/self/status")
    assert r.ok, r.output
    out = {}
    for line in r.output.splitlines():
        k, _, v = line.partition(":")
        out[k] = v.strip()
    return out


# -- identity ------------------------------------------------------------------------------------

def test_podman_root_is_the_shifted_host_range(shifted_podman, host_env, tmp_path):
    base = identity.uid_base()
    with shifted_podman.start(host_env.spec(keep_changes=True)) as sb:
        r = sb.exec("id -u; cat /proc/self/uid_map /proc/self/gid_map")
        lines = r.output.splitlines()
        assert lines[0] == "0", r.output  # root inside ...
        for line in lines[1:3]:
            assert [int(x) for x in line.split()] == [0, base, identity.UID_COUNT], r.output
        # ... is an unprivileged uid outside: the container's main process, seen from the host
        pid = shifted_podman.engine.run("inspect", "--format", "{{.State.Pid}}", sb.name).stdout.decode().strip()
        uids = next(ln for ln in Path(f"/proc/{pid}/status").read_text().splitlines() if ln.startswith("Uid:"))
        assert {int(x) for x in uids.split()[1:]} == {base}, uids
        # The work area is the container's own (root inside), and lands in the range on the host.
        r = sb.exec("stat -c %u:%g /app && echo data > /app/made && cp /bin/true /app/suid && chmod 4755 /app/suid"
                    " && stat -c %a /app/suid")
        assert r.ok and r.output.split() == ["0:0", "4755"], r.output
        made = sb.work.paths[0] / "made"
        assert (made.stat().st_uid, made.stat().st_gid) == (base, base)
    carry = tmp_path / "carry"
    carry.mkdir()
    sb.export_work_areas(carry)
    st = (carry / "app" / "made").stat()
    assert (st.st_uid, st.st_gid) == (0, 0)  # shifted back to the plain owner
    suid = (carry / "app" / "suid").stat()
    assert suid.st_uid == 0 and not suid.st_mode & 0o6000  # never a setuid-root file on the host


def test_podman_binds_writable_handed_over_and_read_only_idmapped(shifted_podman, host_env, tmp_path):
    base = identity.uid_base()
    logs, data = tmp_path / "logs", tmp_path / "data"
    logs.mkdir()
    data.mkdir(mode=0o700)  # readable by root only, like a verifier's staged tests
    (data / "in.txt").write_text("input\n")
    os.chmod(data / "in.txt", 0o600)
    spec = host_env.spec(binds=[Bind(str(logs), "/logs", readonly=False), Bind(str(data), "/data", readonly=True)])
    with shifted_podman.start(spec) as sb:
        assert logs.stat().st_uid == base  # the writable bind belongs to the sandbox's root ...
        r = sb.exec("echo 1 > /logs/reward.txt && cp /bin/true /logs/x && chmod 6755 /logs/x && mkfifo /logs/p"
                    " && cat /data/in.txt && stat -c %u /logs /data /data/in.txt")
        assert r.ok and r.output.split() == ["input", "0", "0", "0"], r.output  # ... the read-only one is host root's
        r = sb.exec("(echo x > /data/new) 2>/dev/null || echo read-only; chmod 777 /data 2>/dev/null || echo denied")
        assert r.output.split() == ["read-only", "denied"], r.output
        r = sb.exec("awk '$2 == \"/logs\" || $2 == \"/data\" {print $2, $4}' /proc/self/mounts")
        mounts = dict(line.split() for line in r.output.splitlines())
        assert set(mounts) == {"/logs", "/data"}, r.output
        assert all({"nosuid", "nodev"} <= set(o.split(",")) for o in mounts.values()), r.output
        assert "ro" in mounts["/data"].split(",") and "rw" in mounts["/logs"].split(","), r.output
        assert str(sb.dir) in Path("/proc/self/mountinfo").read_text()  # the idmapped view, on the host
    assert str(sb.dir) not in Path("/proc/self/mountinfo").read_text()  # unmounted at close
    assert not sb.dir.exists()
    st = data.stat()  # the read-only bind: untouched
    assert (st.st_uid, stat.S_IMODE(st.st_mode), sorted(os.listdir(data))) == (0, 0o700, ["in.txt"])
    assert (data / "in.txt").stat().st_uid == 0
    assert (logs / "reward.txt").read_text() == "1\n"
    for p in (logs, logs / "reward.txt", logs / "x"):
        st = p.stat()
        assert (st.st_uid, st.st_gid) == (0, 0) and not st.st_mode & 0o6000, p
    assert not os.path.lexists(logs / "p")  # FIFOs, sockets and devices are never handed back


# -- capabilities, no_new_privs, seccomp --------------------------------------------------------

def test_reduced_capabilities_no_new_privs_and_seccomp(engine_backend, host_env):  # noqa: F811
    with engine_backend.start(host_env.spec()) as sb:
        st = _status(sb)
        kept = sum(1 << c for c in identity.KEPT_CAPS)
        for field in ("CapEff", "CapPrm", "CapBnd"):
            caps = int(st[field], 16)
            assert not caps & (1 << CAP_SYS_ADMIN), (field, st[field])
            assert caps == kept, (field, st[field], sorted(identity.CAP_NAMES[c] for c in identity.KEPT_CAPS))
        assert int(st["CapAmb"], 16) == 0 and int(st["CapInh"], 16) == 0
        assert st["NoNewPrivs"] == "1"
        assert st["Seccomp"] == "2"  # a filter: the engine's default profile
        # Without CAP_SYS_ADMIN nothing can be mounted, so no read-only mask can be undone.
        r = sb.exec("mount -t tmpfs none /mnt 2>&1 || echo REFUSED")
        assert r.output.split()[-1] == "REFUSED", r.output


def test_proc_sys_is_read_only(engine_backend, host_env):  # noqa: F811
    before = CORE_PATTERN.read_text()
    try:
        with engine_backend.start(host_env.spec()) as sb:
            # First, without writing: /proc/sys is mounted read-only and the file is not writable.
            r = sb.exec("awk '$5 == \"/proc/sys\" {print $6}' /proc/self/mountinfo; "
                        "test -w /proc/sys/kernel/core_pattern && echo WRITABLE || echo not-writable")
            opts, verdict = r.output.split()
            assert "ro" in opts.split(","), r.output
            assert verdict == "not-writable", r.output
            # Only then try a write, of the value it already has (harmless even if it went through).
            value = before.strip()
            r = sb.exec(f"printf '%s\\n' '{value}' > /proc/sys/kernel/core_pattern && echo WROTE || echo FAILED")
            assert r.output.split()[-1] == "FAILED", r.output
            assert "read-only" in r.output.lower(), r.output
    finally:
        after = CORE_PATTERN.read_text()
        if after != before:  # never leave the host changed, even if the test above is wrong
            CORE_PATTERN.write_text(before)
        assert after == before, f"core_pattern changed from {before!r} to {after!r} (restored)"


# -- network ---------------------------------------------------------------------------------------

class _Server:
    """A TCP server on the host's 127.0.0.1 that counts the connections it accepts."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        self.sock.settimeout(0.1)
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.accepted += 1
            conn.close()

    def close(self):
        self.stop.set()
        self.thread.join(timeout=5)
        self.sock.close()


def test_online_podman_cannot_reach_host_loopback(podman_backend, host_env):
    srv = _Server()
    try:
        with socket.create_connection(("127.0.0.1", srv.port), timeout=5):
            pass  # it answers on the host
        deadline = time.monotonic() + 5
        while srv.accepted < 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert srv.accepted == 1
        with podman_backend.start(host_env.spec(network=True)) as sb:
            r = sb.exec("readlink /proc/self/ns/net; ls /sys/class/net")
            ns, *ifaces = r.output.split()
            assert ns != os.readlink("/proc/self/ns/net"), "the host's network namespace is shared"
            assert "tap0" in ifaces, r.output  # slirp4netns, the user-mode NAT
            for host in ("127.0.0.1", "10.0.2.2"):  # its own loopback; slirp4netns' address for the host's
                r = sb.exec(f"timeout 5 bash -c 'exec 3<>/dev/tcp/{host}/{srv.port}' 2>/dev/null"
                            " && echo CONNECTED || echo FAILED")
                assert r.output.split()[-1] == "FAILED", (host, r.output)
        assert srv.accepted == 1
    finally:
        srv.close()


# -- engine-free: the command line ------------------------------------------------------------------

def _argv(engine: str, tmp_path: Path, **spec_kw) -> list[str]:
    from tmax.sandbox.container import ContainerSandbox, Engine, WorkAreas

    spec = SandboxSpec(layers=[{}], **spec_kw)
    sb = object.__new__(ContainerSandbox)
    sb.spec, sb.engine, sb.nonce, sb.name, sb.ro_views = spec, Engine(engine), "__TMAX_test", "tmax-test", {}
    sb.work = WorkAreas(spec, tmp_path / engine / ("net" if spec.network else "off"))
    return sb._argv("localhost/tmax-env:test")


def _values(argv: list[str], flag: str) -> list[str]:
    return [argv[i + 1] for i, a in enumerate(argv) if a == flag]


@pytest.mark.parametrize("engine", ["podman", "docker"])
def test_command_line_hardening(engine, tmp_path):
    argv = _argv(engine, tmp_path)
    opts = argv[:argv.index("localhost/tmax-env:test")]
    assert _values(opts, "--cap-drop") == ["ALL"]
    assert sorted(_values(opts, "--cap-add")) == sorted(identity.CAP_NAMES[c] for c in identity.KEPT_CAPS)
    assert "CAP_SYS_ADMIN" not in " ".join(opts) and "SYS_ADMIN" not in " ".join(opts)
    assert _values(opts, "--security-opt") == ["no-new-privileges"]  # and no seccomp=unconfined
    assert "--privileged" not in opts and not any(a.startswith("--cap-add=") for a in opts)
    assert _values(opts, "--network") == ["none"]
    vols = _values(opts, "-v")
    assert vols and all(v.split(":")[1] == "/app" for v in vols)
    if engine == "podman":
        assert all({"nosuid", "nodev"} <= set(v.split(":")[2].split(",")) for v in vols), vols
    base = identity.uid_base()
    if engine == "podman" and identity.shifted():
        assert _values(opts, "--uidmap") == [f"0:{base}:{identity.UID_COUNT}"]
        assert _values(opts, "--gidmap") == [f"0:{base}:{identity.UID_COUNT}"]
    else:  # docker: only the daemon's userns-remap (module docstring); rootless podman: the user's uid
        assert "--uidmap" not in opts and "--userns" not in opts


@pytest.mark.parametrize("engine", ["podman", "docker"])
def test_command_line_online_never_shares_the_host_network(engine, tmp_path):
    opts = _argv(engine, tmp_path, network=True)
    nets = _values(opts, "--network") + [a.split("=", 1)[1] for a in opts if a.startswith(("--network=", "--net="))]
    assert "host" not in nets and "--net" not in opts
    if engine == "podman":
        assert nets == ["slirp4netns:allow_host_loopback=false"]
    else:
        assert nets == []  # docker's default bridge


def test_shift_in_and_out_round_trip(tmp_path):
    """The ownership shift itself, without an engine (needs root to chown)."""
    if os.geteuid() != 0:
        pytest.skip("chown into the shifted range needs root")
    from tmax.sandbox.container import shift_in, shift_out

    base = identity.uid_base()
    top = tmp_path / "t"
    (top / "d").mkdir(parents=True)
    (top / "d" / "f").write_text("x")
    os.chown(top / "d" / "f", 1000, 1000)
    os.symlink("/etc/passwd", top / "link")  # a link is never followed
    (tmp_path / "outside").write_text("host")
    os.link(tmp_path / "outside", top / "hard")  # may be a host file: its owner never changes
    shift_in(top)
    assert os.lstat(top / "d" / "f").st_uid == base + 1000 and os.lstat(top / "d").st_uid == base
    assert os.lstat(top / "link").st_uid == base and os.stat("/etc/passwd").st_uid == 0
    assert (tmp_path / "outside").stat().st_uid == 0
    os.chmod(top / "d" / "f", 0o6755)
    os.mkfifo(top / "d" / "fifo")
    os.chown(top / "d" / "fifo", base, base)
    shift_out(top, shifted=True)
    st = os.lstat(top / "d" / "f")
    assert (st.st_uid, st.st_gid) == (1000, 1000) and stat.S_IMODE(st.st_mode) == 0o755
    assert os.lstat(top).st_uid == 0 and os.lstat(top / "link").st_uid == 0
    assert not os.path.lexists(top / "d" / "fifo")
    assert (tmp_path / "outside").read_text() == "host"
