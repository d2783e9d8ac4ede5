"""The container backends (podman, docker) and apptainer: each test skips with the backend's own
reason when it cannot run here (no CLI, no engine answering; docker needs a running dockerd).

The first podman test on a machine imports the host environment as an image (minutes, once; the
image is kept in podman's store and reused by every later run)."""

from __future__ import annotations

import os
import socket
import stat
import threading
import time

import pytest

from tmax.sandbox import Bind, SandboxSpec, get_backend

ENGINES = ("podman", "docker")


@pytest.fixture(params=ENGINES)
def engine_backend(request):
    be = get_backend(request.param)
    ok, why = be.available()
    if not ok:
        pytest.skip(why)
    return be


@pytest.fixture
def sandbox(engine_backend, host_env):
    sb = engine_backend.start(host_env.spec())
    yield sb
    sb.close()


def _ps_names(be, name: str) -> list[str]:
    r = be.engine.run("ps", "-a", "--filter", f"name={name}", "--format", "{{.Names}}")
    return [line for line in r.stdout.decode().split() if line == name]


def test_persistent_shell_keeps_cwd_and_env(sandbox):
    r = sandbox.exec("pwd; hostname; id -u")
    assert r.ok and r.output.split() == ["/app", "sandbox", "0"], r.output
    assert sandbox.exec("cd /tmp && export TMAX_T=42").ok
    r = sandbox.exec("pwd; echo $TMAX_T")
    assert r.output.split() == ["/tmp", "42"]
    r = sandbox.exec("echo oops >&2; exit 7")
    assert r.exit_code == 7 and "oops" in r.output
    r = sandbox.exec("echo $LANG; ulimit -n")
    assert r.output.split() == ["C.UTF-8", str(sandbox.spec.limits.open_files)]


def test_timeout_kills_command_and_next_exec_works(sandbox):
    sandbox.exec("cd /usr; export MARK=kept")
    t0 = time.monotonic()
    r = sandbox.exec("echo before; sleep 60", timeout=1)
    assert r.timed_out and r.exit_code == 124 and r.output.startswith("before\n")
    assert time.monotonic() - t0 < 10
    r = sandbox.exec("pwd; echo $MARK; pgrep -x sleep || echo no-sleep")
    assert r.ok and r.output.split() == ["/usr", "kept", "no-sleep"], r.output


def test_timeout_on_busy_builtin_loop_restarts_shell(sandbox):
    t0 = time.monotonic()
    r = sandbox.exec("while :; do :; done", timeout=1)
    assert r.timed_out and r.exit_code == 124
    assert time.monotonic() - t0 < 15  # 1 s, a grace period, then the inner shell is killed
    r = sandbox.exec("echo recovered")
    assert r.output == "recovered\n" and not r.timed_out


def test_no_network(sandbox):
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    port = srv.getsockname()[1]
    accepted = []
    stop = threading.Event()

    def serve():
        srv.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            accepted.append(conn)
            conn.close()

    th = threading.Thread(target=serve, daemon=True)
    th.start()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass  # the server answers from the host
        deadline = time.monotonic() + 5
        while not accepted and time.monotonic() < deadline:
            time.sleep(0.01)
        n_host = len(accepted)
        assert n_host == 1
        r = sandbox.exec(f"timeout 5 bash -c 'exec 3<>/dev/tcp/127.0.0.1/{port}' && echo CONNECTED || echo FAILED")
        assert r.output.split()[-1] == "FAILED", r.output
        assert len(accepted) == n_host
        r = sandbox.exec("ls /sys/class/net")
        assert r.output.split() == ["lo"], r.output
    finally:
        stop.set()
        th.join(timeout=5)
        srv.close()


def test_container_gone_after_close(engine_backend, host_env):
    sb = engine_backend.start(host_env.spec())
    assert sb.exec("sleep 300 >/dev/null 2>&1 & echo started").output.strip() == "started"
    assert _ps_names(engine_backend, sb.name) == [sb.name]
    sb.close()
    assert _ps_names(engine_backend, sb.name) == []
    assert sb.proc.poll() is not None and sb.guard.poll() is not None
    assert not sb.dir.exists()
    sb.close()  # idempotent


def test_work_areas_export_and_readonly_binds(engine_backend, host_env, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "in.txt").write_text("input\n")
    sb = engine_backend.start(host_env.spec(keep_changes=True, binds=[Bind(str(data), "/data", readonly=True)]))
    try:
        r = sb.exec("cat /data/in.txt; (echo x > /data/new) 2>/dev/null || echo read-only")
        assert r.output.split() == ["input", "read-only"]
        assert sb.exec("mkdir -p /app/sub && echo result > /app/sub/out.txt").ok
    finally:
        sb.close()
    carry = tmp_path / "carry"
    carry.mkdir()
    sb.export_work_areas(carry)
    assert (carry / "app" / "sub" / "out.txt").read_text() == "result\n"
    with pytest.raises(NotImplementedError, match="native backend"):
        sb.export_changes(tmp_path / "changes")
    # The verifier's view: the carried work areas stacked on the environment (same image, no import).
    vspec = host_env.spec(workdir="/tests")
    vspec.layers = [carry, *vspec.layers]
    with engine_backend.start(vspec) as v:
        r = v.exec("pwd; cat /app/sub/out.txt")
        assert r.output.split() == ["/tests", "result"]


def test_apptainer_skips_with_reason(host_env):
    be = get_backend("apptainer")
    ok, why = be.available()
    if not ok:
        assert why
        pytest.skip(why)
    with be.start(host_env.spec()) as sb:
        r = sb.exec("cd /tmp; export A=1")
        assert r.ok
        assert sb.exec("pwd; echo $A").output.split() == ["/tmp", "1"]


def test_apptainer_command_line(tmp_path):
    """Without apptainer installed, at least the command line follows the documented flags."""
    from tmax.sandbox.apptainer import ApptainerSandbox
    from tmax.sandbox.container import WorkAreas

    spec = SandboxSpec(layers=[{}], binds=[Bind(str(tmp_path), "/data", readonly=True)], env={"K": "v"})
    sb = object.__new__(ApptainerSandbox)
    sb.spec, sb.nonce = spec, "__TMAX_test"
    sb.work = WorkAreas(spec, tmp_path / "sb")
    argv = sb._argv(tmp_path / "rootfs")
    assert argv[:2] == ["apptainer", "exec"]
    for flag in ("--containall", "--no-home", "--writable-tmpfs", "--net"):
        assert flag in argv
    assert argv[argv.index("--network") + 1] == "none"
    assert argv[argv.index("--hostname") + 1] == "sandbox"
    assert f"{tmp_path}:/data:ro" in argv
    assert f"{tmp_path / 'sb' / 'wa' / '0'}:/app:rw" in argv
    assert "K=v" in argv and "TERM=dumb" in argv
    assert argv[-5:-3] == [str(tmp_path / "rootfs"), "/bin/bash"]
    spec.network = True
    assert "--net" not in sb._argv(tmp_path / "rootfs")


# -- engine-free: how layers become images and work areas ------------------------------------------

def _whiteout(p):
    try:
        os.mknod(p, 0o600 | stat.S_IFCHR, os.makedev(0, 0))
    except PermissionError:
        pytest.skip("creating overlay whiteouts (mknod) needs root")


def test_work_area_filled_from_layers_with_whiteouts_and_opaque_dirs(tmp_path):
    from tmax.sandbox.container import fill_work_area, set_opaque, touches_outside

    base, mid, top = (tmp_path / n for n in ("base", "mid", "top"))
    for f, text in {"app/keep": "k", "app/gone": "g", "app/sub/old": "o", "etc/conf": "c"}.items():
        (base / f).parent.mkdir(parents=True, exist_ok=True)
        (base / f).write_text(text)
    (mid / "app" / "sub").mkdir(parents=True)
    (mid / "app" / "sub" / "new").write_text("n")
    set_opaque(mid / "app" / "sub")  # hides base's app/sub/old
    _whiteout(mid / "app" / "gone")
    (mid / "etc").mkdir()  # empty, and the base has etc: changes nothing outside the work areas
    (top / "app").mkdir(parents=True)
    (top / "app" / "keep").write_text("k2")
    (top / ".tmax-done").write_text("x")
    layers = [top, mid, base]
    dst = tmp_path / "wa"
    fill_work_area(layers, "/app", dst)
    got = sorted(str(p.relative_to(dst)) for p in dst.rglob("*"))
    assert got == ["keep", "sub", "sub/new"]
    assert (dst / "keep").read_text() == "k2"
    assert not touches_outside(top, ["/app"], [mid, base])
    assert not touches_outside(mid, ["/app"], [base])
    assert touches_outside(mid, ["/app"], [])  # without a lower etc/, the empty etc/ adds a directory
    assert touches_outside(base, ["/app"], [])
    assert not touches_outside(base, ["/app", "/etc"], [])
