"""The sandbox protocol on the native backends (bwrap, unshare), on the host image."""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

import pytest

from tmax.sandbox import Limits, SandboxError, get_backend


# -- exec basics ----------------------------------------------------------------------------------

def test_exit_codes(sandbox):
    assert sandbox.exec("true").exit_code == 0
    assert sandbox.exec("false").exit_code == 1
    assert sandbox.exec("(exit 7)").exit_code == 7
    r = sandbox.exec("no-such-command-xyz")
    assert r.exit_code == 127 and "not found" in r.output
    r = sandbox.exec("echo out; echo err >&2; exit 0")
    assert r.ok and r.output == "out\nerr\n" and not r.timed_out and not r.truncated


def test_identity_and_layout(sandbox):
    r = sandbox.exec("id -u; hostname; pwd; echo $HOME; test -d /tests || echo no-tests")
    assert r.output.split() == ["0", "sandbox", "/app", "/root", "no-tests"]


def test_persistent_cwd_and_env(sandbox):
    sandbox.exec("mkdir -p /app/sub && cd /app/sub && export FOO=bar && myvar=1 && f() { echo fn; }")
    r = sandbox.exec('pwd; echo "$FOO $myvar"; f')
    assert r.output == "/app/sub\nbar 1\nfn\n"


def test_non_persistent_forgets(sandbox):
    sandbox.exec("cd /tmp; export KEEP=1")
    r = sandbox.exec("cd /usr; export GONE=1; pwd; echo $KEEP", persistent=False)
    assert r.output == "/usr\n1\n"  # sees the persistent state...
    r = sandbox.exec('pwd; echo "${GONE:-unset}"')
    assert r.output == "/tmp\nunset\n"  # ...but changes nothing in it
    assert sandbox.exec("exit 4", persistent=False).exit_code == 4
    assert sandbox.exec("pwd").output == "/tmp\n"  # exit in a subshell leaves the shell alone


def test_binary_and_nul_output(sandbox):
    r = sandbox.exec(r"printf 'a\0b\xff\xfec\n'")
    assert r.output_bytes == 7
    assert r.output == "a\x00b\ufffd\ufffdc\n"
    r = sandbox.exec("head -c 100000 /dev/urandom")
    assert r.output_bytes == 100000 and not r.truncated


def test_unicode_and_quotes_in_commands(sandbox):
    r = sandbox.exec("echo \"it's ünïcødé ✓\" 'dq\"' $'tab\\there'")
    assert r.output == "it's ünïcødé ✓ dq\" tab\there\n"
    r = sandbox.exec("cat <<'EOF'\nline $1\n  indented\nEOF")
    assert r.output == "line $1\n  indented\n"
    r = sandbox.exec("for i in 1 2 3\ndo\n  echo $i\ndone")
    assert r.output == "1\n2\n3\n"


def test_output_without_trailing_newline(sandbox):
    assert sandbox.exec("printf abc").output == "abc"
    assert sandbox.exec("printf 'abc\\n\\n'").output == "abc\n\n"
    assert sandbox.exec("true").output == ""


@pytest.mark.parametrize("cmd", ['echo "unterminated', "echo 'single", "echo $(", "if true; then echo x",
                                 "cat <<EOF\nno end", "}", "((", "echo `"])
def test_unbalanced_syntax_then_shell_still_works(sandbox, cmd):
    r = sandbox.exec(cmd, timeout=10)
    assert not r.timed_out
    assert r.exit_code != 0 or cmd.startswith("cat")
    r = sandbox.exec("echo ok", timeout=10)
    assert r.output == "ok\n" and r.exit_code == 0


def test_exit_restarts_shell_and_keeps_services(sandbox):
    sandbox.exec("cd /tmp; sleep 300 & echo $! > /tmp/bg.pid")
    r = sandbox.exec("exit 3", timeout=10)
    assert r.exit_code == 3 and not r.timed_out
    r = sandbox.exec("echo alive; kill -0 $(cat /tmp/bg.pid) && echo bg-running", timeout=10)
    assert r.output == "alive\nbg-running\n"
    assert sandbox.exec("exit", timeout=10).exit_code == 0
    assert sandbox.exec("echo again", timeout=10).output == "again\n"


def test_return_and_exec_do_not_hang(sandbox):
    t0 = time.monotonic()
    r = sandbox.exec("return 5", timeout=10)
    assert not r.timed_out and r.exit_code != 0
    r = sandbox.exec("f() { return 6; }; f", timeout=10)
    assert r.exit_code == 6 and not r.timed_out
    r = sandbox.exec("exec bash", timeout=10)  # a replaced shell reads EOF and exits; it is restarted
    assert not r.timed_out
    assert sandbox.exec("echo fine", timeout=10).output == "fine\n"
    r = sandbox.exec("set -e; false; echo not-reached", timeout=10)
    assert r.exit_code == 1 and "not-reached" not in r.output
    assert sandbox.exec("echo after-set-e", timeout=10).output == "after-set-e\n"
    assert time.monotonic() - t0 < 5


def test_stdin_is_not_the_protocol(sandbox):
    r = sandbox.exec("cat; read x; echo read=$?; bash -c 'echo nested'", timeout=10)
    assert not r.timed_out and r.output == "read=1\nnested\n"
    assert sandbox.exec("echo next", timeout=10).output == "next\n"


def test_background_job_does_not_block(sandbox):
    t0 = time.monotonic()
    r = sandbox.exec("sleep 100 & echo started", timeout=20)
    assert r.output == "started\n" and not r.timed_out
    r = sandbox.exec("nohup sleep 100 >/dev/null 2>&1 & disown; echo again", timeout=20)
    assert r.output == "again\n"
    assert time.monotonic() - t0 < 3
    r = sandbox.exec("for i in $(seq 50); do [ $(pgrep -c -x sleep) = 2 ] && break; sleep 0.1; done; "
                     "pgrep -c -x sleep")
    assert r.output == "2\n"  # both jobs are still running


# -- timeouts -------------------------------------------------------------------------------------

def test_timeout_kills_and_shell_survives(sandbox):
    sandbox.exec("cd /usr; export MARK=kept")
    t0 = time.monotonic()
    r = sandbox.exec("echo before; sleep 100; echo after", timeout=1)
    took = time.monotonic() - t0
    assert r.timed_out and r.exit_code == 124 and not r.ok
    assert 0.9 < took < 5
    assert r.output.startswith("before\n")
    r = sandbox.exec("pwd; echo $MARK; pgrep -x sleep || echo no-sleep", timeout=10)
    assert r.output == "/usr\nkept\nno-sleep\n"  # the shell's state survived; the command is gone


def test_timeout_on_busy_builtin_loop(sandbox):
    t0 = time.monotonic()
    r = sandbox.exec("while :; do :; done", timeout=1)
    took = time.monotonic() - t0
    assert r.timed_out and r.exit_code == 124
    assert took < 10  # 1 s + a grace period, then the shell itself is killed and restarted
    r = sandbox.exec("echo recovered", timeout=10)
    assert r.output == "recovered\n" and not r.timed_out


def test_timeout_of_pipeline_and_subshells(sandbox):
    r = sandbox.exec("(sleep 100 | cat) & wait; yes > /dev/null", timeout=1)
    assert r.timed_out
    r = sandbox.exec("ps -eo stat=,comm= | awk '$1 !~ /^Z/ && $2 ~ /^(sleep|yes|cat)$/' | wc -l; "
                     "ps -eo pid,ppid,stat,args >&2", timeout=10)
    assert r.output.startswith("0\n"), r.output  # nothing left running, no notice from the killed shell


def test_timeout_spares_earlier_background_jobs(sandbox):
    from tmax.sandbox import cgroups

    if cgroups.MODE is None or os.geteuid() != 0:
        pytest.skip("without a cgroup the backend cannot tell earlier jobs from the command's own")
    sandbox.exec("sleep 300 & echo $! > /tmp/bg.pid; cd /usr")
    r = sandbox.exec("sleep 200 & sleep 100", timeout=0.5)
    assert r.timed_out
    r = sandbox.exec("kill -0 $(cat /tmp/bg.pid) && echo service-alive; pgrep -f 'sleep 200' || echo cmd-gone")
    assert r.output == "service-alive\ncmd-gone\n"  # the command's own background job went with it
    r = sandbox.exec("while :; do :; done", timeout=0.5)  # the shell itself is killed and restarted
    assert r.timed_out
    r = sandbox.exec("kill -0 $(cat /tmp/bg.pid) && echo service-alive; pwd")
    assert r.output == "service-alive\n/app\n"  # a restarted shell starts over in the workdir


# -- bounded output ---------------------------------------------------------------------------------

def _peak_rss_reset() -> int:
    """Reset VmHWM (peak RSS) where the kernel allows it; return the current RSS in bytes."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass
    return _status_kb("VmRSS") * 1024


def _status_kb(key: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise KeyError(key)


@pytest.mark.parametrize("launcher, producer", [("bwrap", "head -c 1G /dev/zero | tr '\\0' x"),
                                                ("unshare", "yes | head -c 1G")])
def test_one_gigabyte_of_output_is_bounded(sandbox_factory, launcher, producer):
    from conftest import backend_skip_reason

    if why := backend_skip_reason(launcher):
        pytest.skip(why)
    sandbox = sandbox_factory(launcher)
    limit = sandbox.spec.limits.output_bytes
    rss0 = _peak_rss_reset()
    r = sandbox.exec(producer, timeout=120)
    peak = _status_kb("VmHWM") * 1024
    assert not r.timed_out and r.exit_code == 0
    assert r.truncated
    assert 1 << 30 <= r.output_bytes < (1 << 30) + 200  # yes may add "Broken pipe"
    assert len(r.output.encode()) <= limit + 100
    assert "bytes elided" in r.output
    assert r.output.startswith("xxxx" if "tr" in producer else "y\ny\n")
    assert peak - rss0 < 200 << 20, f"reading 1 GB of output raised our peak RSS by {(peak - rss0) >> 20} MB"
    assert sandbox.exec("echo small").output == "small\n"


@pytest.mark.parametrize("n", [0, 1, 499, 500, 501, 999, 1000, 1001, 1500, 70000, 300000])
def test_head_and_tail_are_exact(sandbox_factory, bwrap, n):
    sb = sandbox_factory(bwrap, limits=Limits(output_bytes=1000))
    # a deterministic, position-revealing stream of n bytes
    r = sb.exec(f"python3 -c \"import sys; sys.stdout.write(''.join(chr(97 + i % 26) for i in range({n})))\"")
    full = "".join(chr(97 + i % 26) for i in range(n))
    assert r.output_bytes == n
    if n <= 1000:
        assert r.output == full and not r.truncated
    else:
        assert r.truncated
        assert r.output == full[:500] + f"\n[... {n - 1000} bytes elided ...]\n" + full[-500:]


def test_truncation_keeps_last_lines(sandbox_factory, backend):
    sb = sandbox_factory(backend, limits=Limits(output_bytes=2000))
    r = sb.exec("seq 1 100000")
    assert r.output.startswith("1\n2\n3\n")
    assert r.output.endswith("99999\n100000\n")
    assert r.output_bytes == len("".join(f"{i}\n" for i in range(1, 100001)))
    assert sb.exec("echo next").output == "next\n"


# -- copy-on-write ----------------------------------------------------------------------------------

@pytest.fixture
def host_probe():
    """A file of ours under the host's /usr, which the host image shows read-through."""
    d = Path("/usr/local/share")
    if not os.access(d, os.W_OK):
        pytest.skip("cannot write under /usr/local/share")
    p = d / f"tmax-cow-{uuid.uuid4().hex[:8]}"
    p.write_text("original\n")
    yield p
    p.unlink(missing_ok=True)


def test_host_view_is_read_only(sandbox_factory, backend, host_probe):
    """The host image shows the host's files with their host owners: readable where any user may
    read them, never writable by the sandbox (which is nobody on the host)."""
    name = f"tmax-new-{uuid.uuid4().hex[:8]}"
    a = sandbox_factory(backend)
    assert a.exec(f"cat {host_probe}").output == "original\n"  # the host's file is visible...
    r = a.exec(f"echo changed > {host_probe}; echo x > /usr/bin/{name}; rm -f {host_probe}; "
               f"cat {host_probe}; ls /usr/bin/{name} 2>/dev/null | wc -l")
    assert r.output.endswith("original\n0\n"), r.output  # ...but it cannot be changed or removed
    assert r.output.count("Permission denied") == 3, r.output
    assert host_probe.read_text() == "original\n" and not Path(f"/usr/bin/{name}").exists()


def test_copy_on_write(sandbox_factory, backend):
    from tmax.images import ImageError, get_environment

    try:
        image = get_environment("default", build=False)
    except ImageError as e:
        pytest.skip(str(e))
    name = f"tmax-new-{uuid.uuid4().hex[:8]}"
    started = []

    def start():
        started.append(get_backend(backend).start(image.spec(workdir="/app", work_areas=("/app",))))
        return started[-1]

    a = start()
    r = a.exec(f"echo changed >> /etc/hostname && echo x > /usr/bin/{name} && chmod +x /usr/bin/{name} && "
               f"rm /etc/issue && tail -1 /etc/hostname && cat /usr/bin/{name}")
    assert r.output == "changed\nx\n", r.output
    rootfs = image.layers[0]
    assert "changed" not in (rootfs / "etc/hostname").read_text() and (rootfs / "etc/issue").exists()
    assert not (rootfs / "usr/bin" / name).exists()  # the image is untouched...
    b = start()
    r = b.exec(f"grep -c changed /etc/hostname; test -e /usr/bin/{name} && echo leaked || echo absent; "
               "test -e /etc/issue && echo kept")
    assert r.output == "0\nabsent\nkept\n"  # ...and a second sandbox does not see the first one's changes
    a.close()
    c = start()
    assert c.exec(f"ls /usr/bin/{name} 2>/dev/null | wc -l").output == "0\n"
    for sb in started:
        sb.close()


def test_work_area_is_private_and_writable(sandbox_factory, backend):
    a = sandbox_factory(backend)
    b = sandbox_factory(backend)
    a.exec("echo mine > /app/f && echo hist > /root/.bash_history")
    assert b.exec("ls -A /app /root").output == "/app:\n\n/root:\n"


# -- lifecycle --------------------------------------------------------------------------------------

def test_env_and_close(sandbox_factory, backend, run_dir):
    sb = sandbox_factory(backend, env={"GREETING": "hi there"})
    assert sb.exec("echo $GREETING; echo $PATH").output.split("\n")[0] == "hi there"
    assert sb.dir.parent == run_dir and sb.dir.exists()
    sb.close()
    assert not sb.dir.exists()
    with pytest.raises(SandboxError):
        sb.exec("true")
    sb.close()  # idempotent


def test_context_manager(host_env, backend):
    from tmax.sandbox import get_backend

    with get_backend(backend).start(host_env.spec(workdir="/app", work_areas=("/app",))) as sb:
        assert sb.exec("echo in").output == "in\n"
        d = sb.dir
    assert sb.closed and not d.exists()
