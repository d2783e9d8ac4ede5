"""Internet for sandboxes whose task allows it, without the host's network namespace.

The sandbox always has a network namespace of its own; for an online task ``slirp4netns`` gives it
a user-mode NAT (tap0, 10.0.2.100/24, DNS at 10.0.2.3) from outside, entering through the sandbox's
user namespace, so it holds no privilege over the host. ``--disable-host-loopback`` makes the host's
127.0.0.1 unreachable (10.0.2.2 is refused, and ``egress``'s rules drop every packet to slirp's
aliases before it leaves), and abstract unix sockets are per namespace, so the host's loopback
services stay out of reach even online.
"""

from __future__ import annotations

import os
import select
import shutil
import signal
import subprocess

from tmax.sandbox.base import SandboxError

RESOLV_CONF = "nameserver 10.0.2.3\noptions timeout:2 attempts:2\n"


def available() -> tuple[bool, str]:
    if shutil.which("slirp4netns") is None:
        return False, "online tasks need slirp4netns (bash scripts/setup.sh, or apt-get install slirp4netns)"
    return True, ""


def netns_pid(pids: list[int]) -> int | None:
    """The first of ``pids`` that lives in another network namespace than ours."""
    ours = os.stat("/proc/self/ns/net").st_ino
    for pid in pids:
        try:
            if os.stat(f"/proc/{pid}/ns/net").st_ino != ours:
                return pid
        except OSError:
            continue
    return None


def attach(pid: int, log: str, join_userns: bool = True, timeout: float = 10.0) -> subprocess.Popen:
    """Start slirp4netns for the network namespace of ``pid``; returns once tap0 is configured.
    ``join_userns``: the namespace belongs to the sandbox's user namespace (enter through it)."""
    target = [f"--userns-path=/proc/{pid}/ns/user"] if join_userns else []
    return _start(target + [str(pid)], (), log, timeout)


def attach_fd(netns_fd: int, log: str, timeout: float = 10.0) -> subprocess.Popen:
    """Start slirp4netns for the network namespace ``netns_fd`` refers to (one the host owns, so
    slirp4netns, host root, configures it directly); returns once tap0 is configured."""
    return _start(["--netns-type=path", f"/proc/self/fd/{netns_fd}"], (netns_fd,), log, timeout)


def _start(target: list[str], pass_fds: tuple[int, ...], log: str, timeout: float) -> subprocess.Popen:
    ok, why = available()
    if not ok:
        raise SandboxError(why)
    ready_r, ready_w = os.pipe()
    # slirp4netns exits when this pipe closes: when we close the sandbox, or die without closing.
    exit_r, exit_w = os.pipe()
    argv = ["slirp4netns", "--configure", "--mtu=65520", "--disable-host-loopback", "--enable-sandbox",
            "--enable-seccomp", f"--ready-fd={ready_w}", f"--exit-fd={exit_r}", *target, "tap0"]
    try:
        with open(log, "wb") as err:  # a file, not a pipe: nobody drains it while the sandbox runs
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                                    pass_fds=(ready_w, exit_r, *pass_fds), start_new_session=True)
    finally:
        os.close(ready_w)
        os.close(exit_r)
    proc.exit_w = exit_w  # type: ignore[attr-defined]
    try:
        r, _, _ = select.select([ready_r], [], [], timeout)
        if not r or os.read(ready_r, 1) != b"1":
            stop(proc)  # closes exit_w
            with open(log, "rb") as f:
                err = f.read()[-800:].decode("utf-8", "replace")
            raise SandboxError(f"slirp4netns did not come up: {err.strip() or 'no answer'}")
    finally:
        os.close(ready_r)
    return proc


def stop(proc: subprocess.Popen | None) -> None:
    if proc is None:
        return
    try:
        proc.send_signal(signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()
    os.close(proc.exit_w)
