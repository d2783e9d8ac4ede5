"""Who a sandboxed process is on the host.

Run as root, tmax maps a sandbox's uids and gids 0..65535 to the host range
``UID_BASE .. UID_BASE + 65535`` (default 1878982656 = 0x6FFF0000, the last 64K block of the range
systemd sets aside for containers; ``TMAX_UID_BASE`` moves it). No host account owns that range
(checked against /etc/passwd, /etc/group, /etc/subuid and /etc/subgid before the first sandbox), so
root inside is nobody outside: no capability over any host resource, no file of the host's that is
not world-readable, and a setuid binary made inside is setuid to an unprivileged uid.

Each sandbox gets a user namespace of its own with that mapping. Images and layers stay stored with
their plain owners (root = 0) and are shown through idmapped mounts, so the same image serves every
sandbox; what a sandbox writes lands owned by the shifted range and is shifted back when exported.

Run as an unprivileged user, the only mapping the kernel allows is the user's own uid: sandboxed
root is that user on the host.
"""

from __future__ import annotations

import functools
import os

from tmax.sandbox import kernel
from tmax.sandbox.base import SandboxError

UID_COUNT = 65536
# Kept inside (in the sandbox's own user namespace only), as a container engine keeps them:
# chown, dac_override, fowner, fsetid, kill, setgid, setuid, setpcap, net_bind_service, net_raw,
# sys_chroot, setfcap. Never sys_admin (no mounts, so no cgroupfs, no unmounting a mask), sys_ptrace
# of others, sys_module, net_admin, mknod.
KEPT_CAPS = {0, 1, 3, 4, 5, 6, 7, 8, 10, 13, 18, 31}
CAP_NET_RAW = 13


def kept_caps(online: bool) -> set[int]:
    """The capabilities a sandbox keeps. Online, CAP_NET_RAW goes: over the network namespace the
    sandbox owns it would set SO_MARK (the egress proxy's pass) and open packet sockets on tap0, which
    the egress rules never see."""
    return KEPT_CAPS - {CAP_NET_RAW} if online else set(KEPT_CAPS)
CAP_NAMES = {0: "CAP_CHOWN", 1: "CAP_DAC_OVERRIDE", 3: "CAP_FOWNER", 4: "CAP_FSETID", 5: "CAP_KILL",
             6: "CAP_SETGID", 7: "CAP_SETUID", 8: "CAP_SETPCAP", 10: "CAP_NET_BIND_SERVICE", 13: "CAP_NET_RAW",
             18: "CAP_SYS_CHROOT", 31: "CAP_SETFCAP"}


def uid_base() -> int:
    return int(os.environ.get("TMAX_UID_BASE") or 0x6FFF0000)


def shifted() -> bool:
    """True when sandboxes run in the shifted range (tmax is root); False: the user's own uid."""
    return os.geteuid() == 0


@functools.lru_cache(maxsize=None)
def check_range(base: int) -> None:
    """Refuse a range that some host account or subordinate range already uses."""
    lo, hi = base, base + UID_COUNT - 1
    if lo <= 65535 or hi >= 0xFFFFFFFF:
        raise SandboxError(f"TMAX_UID_BASE={base}: the range must lie above 65535 and below 2^32-1")
    for path, col_lo, col_n in (("/etc/passwd", 2, None), ("/etc/group", 2, None),
                                ("/etc/subuid", 1, 2), ("/etc/subgid", 1, 2)):
        try:
            lines = open(path).read().splitlines()
        except OSError:
            continue
        for line in lines:
            parts = line.split(":")
            try:
                start = int(parts[col_lo])
                end = start + (int(parts[col_n]) if col_n else 1) - 1
            except (IndexError, ValueError):
                continue
            if start <= hi and end >= lo:
                raise SandboxError(f"{path}: {line!r} overlaps the sandbox uid range {lo}-{hi}; "
                                   "set TMAX_UID_BASE to a free 65536-id range")


def new_userns() -> int:
    """A fresh user namespace mapping 0..65535 to the shifted host range; returns an fd to it.

    A short-lived child creates it and waits while we (host root) write its maps; the namespace
    lives on through the fd after the child exits.
    """
    base = uid_base()
    check_range(base)
    ready_r, ready_w = os.pipe()
    done_r, done_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: only syscalls, then _exit
        code = 1
        try:
            kernel.prctl(kernel.PR_SET_PDEATHSIG, 9)
            os.close(ready_r)
            os.close(done_w)
            kernel.unshare(kernel.CLONE_NEWUSER)
            os.write(ready_w, b"1")
            # An explicit byte, not EOF: a child forked meanwhile by another thread may hold a copy
            # of our write end, and waiting for EOF would then deadlock two starts.
            os.read(done_r, 1)
            code = 0
        finally:
            os._exit(code)
    os.close(ready_w)
    os.close(done_r)
    try:
        if os.read(ready_r, 1) != b"1":
            raise SandboxError("could not create a user namespace (unshare(CLONE_NEWUSER) failed)")
        for name in ("uid_map", "gid_map"):
            with open(f"/proc/{pid}/{name}", "w") as f:
                f.write(f"0 {base} {UID_COUNT}\n")
        return os.open(f"/proc/{pid}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
    except OSError as e:
        raise SandboxError(f"could not map the sandbox user namespace: {e}") from None
    finally:
        os.close(ready_r)
        try:
            os.write(done_w, b"1")
        except OSError:
            pass
        os.close(done_w)
        os.waitpid(pid, 0)


def to_host(uid: int) -> int:
    """Host id of a sandbox id (the shifted range when root)."""
    return uid_base() + uid if shifted() else os.geteuid()


def to_stored(uid: int) -> int:
    """Stored (plain) owner of a file that a sandbox wrote: the shift undone; anything outside the
    range (overlayfs' own whiteouts) is root."""
    base = uid_base()
    return uid - base if base <= uid < base + UID_COUNT else 0
