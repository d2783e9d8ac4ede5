"""Thin wrappers over the Linux system calls the native sandboxes need and Python does not offer:
namespaces, the new mount API (detached tmpfs, idmapped trees), keyrings, prctl, seccomp.

Each wrapper raises OSError naming the call; constants are the kernel's (x86_64 and aarch64 share
the numbers of the newer calls).
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import struct

libc = ctypes.CDLL(None, use_errno=True)

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 1, 2, 4, 32, 4096, 16384, 1 << 18
MOUNT_ATTR_RDONLY, MOUNT_ATTR_NOSUID, MOUNT_ATTR_NODEV, MOUNT_ATTR_IDMAP = 0x1, 0x2, 0x4, 0x00100000
PR_SET_DUMPABLE = 4
PR_SET_PDEATHSIG, PR_SET_SECCOMP, PR_SET_NO_NEW_PRIVS = 1, 22, 38
SECCOMP_MODE_FILTER = 2
KEYCTL_JOIN_SESSION_KEYRING = 1
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
NS_GET_USERNS, NS_GET_NSTYPE = 0xB701, 0xB703  # ioctls on a namespace fd (linux/nsfs.h)

_NR = {"x86_64": {"keyctl": 250}, "aarch64": {"keyctl": 219}}.get(os.uname().machine, {})
NR_OPEN_TREE, NR_MOVE_MOUNT, NR_FSOPEN, NR_FSCONFIG, NR_FSMOUNT, NR_MOUNT_SETATTR = 428, 429, 430, 431, 432, 442
OPEN_TREE_CLONE, AT_EMPTY_PATH, AT_FDCWD, MOVE_MOUNT_F_EMPTY_PATH = 1, 0x1000, -100, 0x4
FSCONFIG_SET_STRING, FSCONFIG_CMD_CREATE = 1, 6
O_CLOEXEC = os.O_CLOEXEC


libc.syscall.restype = ctypes.c_long


def _check(ret: int, what: str) -> int:
    if ret < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")
    return ret


def _syscall(nr: int, *args) -> int:
    return libc.syscall(ctypes.c_long(nr), *args)


def unshare(flags: int) -> None:
    _check(libc.unshare(flags), "unshare")


def setns(fd: int, nstype: int) -> None:
    _check(libc.setns(fd, nstype), "setns")


def namespace_type(fd: int) -> int:
    """The CLONE_NEW* flag of the namespace ``fd`` refers to."""
    return fcntl.ioctl(fd, NS_GET_NSTYPE)


def namespace_owner(fd: int) -> tuple[int, int]:
    """(device, inode) of the user namespace that owns the namespace ``fd`` refers to."""
    owner = fcntl.ioctl(fd, NS_GET_USERNS)
    try:
        st = os.fstat(owner)
        return st.st_dev, st.st_ino
    finally:
        os.close(owner)


def mount(src: str, target: str, fstype: str | None, flags: int, data: str | None) -> None:
    _check(libc.mount(src.encode(), target.encode(), fstype.encode() if fstype else None, flags,
                      data.encode() if data else None), f"mount {src} on {target}")


def prctl(option: int, arg: int = 0) -> None:
    _check(libc.prctl(option, ctypes.c_ulong(arg), 0, 0, 0), f"prctl({option})")


def join_new_session_keyring() -> None:
    """A fresh anonymous session keyring: nothing of the operator's keys is reachable."""
    if "keyctl" in _NR:
        _check(_syscall(_NR["keyctl"], KEYCTL_JOIN_SESSION_KEYRING, None), "keyctl(JOIN_SESSION_KEYRING)")


def tmpfs(size_bytes: int, inodes: int, mode: str = "0755") -> int:
    """A detached tmpfs (not attached anywhere yet): an fd that keeps it alive; nosuid, nodev."""
    fs = _check(_syscall(NR_FSOPEN, b"tmpfs", 1), "fsopen(tmpfs)")
    try:
        for key, value in (("size", str(size_bytes)), ("nr_inodes", str(inodes)), ("mode", mode)):
            _check(_syscall(NR_FSCONFIG, fs, FSCONFIG_SET_STRING, key.encode(), value.encode(), 0),
                   f"fsconfig(tmpfs, {key}={value})")
        _check(_syscall(NR_FSCONFIG, fs, FSCONFIG_CMD_CREATE, None, None, 0), "fsconfig(tmpfs, create)")
        return _check(_syscall(NR_FSMOUNT, fs, 1, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV), "fsmount(tmpfs)")
    finally:
        os.close(fs)


def idmapped_tree(path: str, userns_fd: int, readonly: bool = True) -> int:
    """A detached copy of the mount at ``path`` whose owners are shown through ``userns_fd``'s
    mapping (host uid 0 appears as the namespace's root); nosuid, nodev."""
    tree = _check(_syscall(NR_OPEN_TREE, AT_FDCWD, path.encode(), OPEN_TREE_CLONE | O_CLOEXEC), f"idmapped mount of {path} (open_tree)")
    flags = MOUNT_ATTR_IDMAP | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | (MOUNT_ATTR_RDONLY if readonly else 0)
    attr = ctypes.create_string_buffer(struct.pack("QQQQ", flags, 0, 0, userns_fd), 32)
    try:
        _check(_syscall(NR_MOUNT_SETATTR, tree, b"", AT_EMPTY_PATH, attr, 32), f"idmapped mount of {path} (mount_setattr)")
    except BaseException:
        os.close(tree)
        raise
    return tree


def attach(tree_fd: int, target: str) -> None:
    """Attach a detached mount (from :func:`tmpfs` or :func:`idmapped_tree`) at ``target``."""
    _check(_syscall(NR_MOVE_MOUNT, tree_fd, b"", AT_FDCWD, target.encode(), MOVE_MOUNT_F_EMPTY_PATH),
           f"move_mount onto {target}")


def install_seccomp(program: bytes) -> None:
    """Load a classic BPF seccomp filter (after no_new_privs) for this thread and its children."""
    buf = ctypes.create_string_buffer(program, len(program))
    fprog = struct.pack("HxxxxxxQ", len(program) // 8, ctypes.addressof(buf))
    prctl(PR_SET_NO_NEW_PRIVS, 1)
    fbuf = ctypes.create_string_buffer(fprog, len(fprog))
    _check(libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, fbuf, 0, 0), "prctl(PR_SET_SECCOMP)")


def loopback_up() -> None:
    import fcntl
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        req = struct.pack("16sH14x", b"lo", 0)
        flags = struct.unpack("16sH14x", fcntl.ioctl(sock.fileno(), SIOCGIFFLAGS, req))[1]
        fcntl.ioctl(sock.fileno(), SIOCSIFFLAGS, struct.pack("16sH14x", b"lo", flags | IFF_UP))
