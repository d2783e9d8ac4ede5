"""Compose a sandbox's root filesystem from image layers with overlayfs, inside a private mount
namespace, in the child between fork and exec.

Every top-level directory of the layers becomes one overlay (its layers as lowers, the sandbox's own
upper dir on top), so the same code serves a debootstrap rootfs and the ``host`` image (a read-only
view of the host's system directories, which are separate mounts on many hosts). Work areas with no
lower are plain binds of the upper dir. Because the mounts live only in the child's mount namespace,
they vanish with the sandbox's last process: nothing is ever left mounted on the host.

All paths and flags are computed in the parent (:func:`plan`); the child only issues syscalls
(:func:`apply`), which keeps the fork-to-exec window short and free of Python-level locks.
"""

from __future__ import annotations

import ctypes
import os
import resource
import stat
from dataclasses import dataclass, field
from pathlib import Path

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
PR_SET_PDEATHSIG = 1
MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18

# Top-level names never taken from layers: the sandbox mounts its own.
SPECIAL = {"proc", "dev", "sys", "tmp", "run", "lost+found", "boot", "mnt", "media"}
DEV_NODES = ("null", "zero", "full", "random", "urandom", "tty")

_libc = ctypes.CDLL(None, use_errno=True)


@dataclass
class Bind:
    source: str
    target: str  # absolute path inside the sandbox
    readonly: bool = True


@dataclass
class Plan:
    root: str
    ops: list[tuple] = field(default_factory=list)
    cgroup_procs: list[str] = field(default_factory=list)
    rlimits: list[tuple[int, int]] = field(default_factory=list)
    error_file: str = ""
    # Not root: enter a user namespace first (mapping us to root) so that overlayfs can be mounted.
    userns: bool = field(default_factory=lambda: os.geteuid() != 0)
    uid: int = field(default_factory=os.geteuid)
    gid: int = field(default_factory=os.getegid)
    # A private network namespace with loopback up (for launchers that do not make one themselves).
    new_net: bool = False


def is_whiteout(p: Path) -> bool:
    try:
        st = p.lstat()
    except OSError:
        return False
    return stat.S_ISCHR(st.st_mode) and st.st_rdev == 0


def is_opaque(p: Path) -> bool:
    for attr in ("trusted.overlay.opaque", "user.overlay.opaque"):
        try:
            if os.getxattr(p, attr, follow_symlinks=False) == b"y":
                return True
        except OSError:
            pass
    return False


Layer = Path | dict  # a directory, or {top-level name: host path} (the host image)


def _names(layer: Layer) -> list[str]:
    return sorted(layer) if isinstance(layer, dict) else sorted(os.listdir(layer))


def _entry(layer: Layer, name: str) -> Path:
    return Path(layer[name]) if isinstance(layer, dict) else layer / name


def plan(layers: list[Layer], sandbox_dir: Path, work_areas: tuple[str, ...], binds: list[Bind],
         dev_mode: str) -> Plan:
    """Layers are top first. ``dev_mode`` is "host-nodes" (bind a few /dev nodes; for chroot) or
    "none" (the launcher mounts its own /dev, as bubblewrap does)."""
    root = sandbox_dir / "root"
    upper = sandbox_dir / "upper"
    work = sandbox_dir / "work"
    for d in (root, upper, work):
        d.mkdir(parents=True, exist_ok=True)
    p = Plan(root=str(root), error_file=str(sandbox_dir / "launch.err"))
    ops = p.ops
    if layers and all(isinstance(layer, Path) for layer in layers):
        # Plain directory layers (a built image and its setup layers): one overlay for the whole root.
        lowers = []
        for layer in layers:
            lowers.append(str(layer))
            if is_opaque(layer):
                break
        ops.append(("mount", "overlay", str(root), "overlay", 0,
                    f"lowerdir={':'.join(lowers)},upperdir={upper},workdir={work}"))
    else:
        _per_directory(ops, layers, root, upper, work, work_areas)
    _special_mounts(ops, root, work_areas, binds, dev_mode)
    return p


def _per_directory(ops: list, layers: list[Layer], root: Path, upper: Path, work: Path,
                   work_areas: tuple[str, ...]) -> None:
    """One overlay per top-level directory: needed when a layer is a view of host directories."""
    ops.append(("mount", "tmpfs", str(root), "tmpfs", MS_NOSUID, "mode=0755,size=16m"))
    names: list[str] = []
    for layer in layers:
        for entry in _names(layer):
            if entry not in names and entry not in SPECIAL:
                names.append(entry)
    for wa in work_areas:
        top = wa.strip("/").split("/")[0]
        if top and top not in names and top not in SPECIAL:
            names.append(top)
    for name in names:
        lowers: list[str] = []
        link: str | None = None
        for layer in layers:
            if isinstance(layer, dict) and name not in layer:
                continue
            e = _entry(layer, name)
            if not os.path.lexists(e):
                continue
            if is_whiteout(e):
                break
            if e.is_symlink() or not e.is_dir():
                if not lowers:
                    link = os.readlink(e) if e.is_symlink() else ""  # "" = a plain file: not shown
                break
            lowers.append(str(e))
            if is_opaque(e):
                break
        target = str(root / name)
        if link is not None:
            if link:
                ops.append(("symlink", link, target))
            continue
        up, wk = upper / name, work / name
        # A previous sandbox may have left this name in the upper dir as something else.
        if os.path.lexists(up) and not up.is_dir():
            continue
        up.mkdir(exist_ok=True)
        wk.mkdir(exist_ok=True)
        ops.append(("mkdir", target))
        if lowers:
            data = f"lowerdir={':'.join(lowers)},upperdir={up},workdir={wk}"
            ops.append(("mount", "overlay", target, "overlay", 0, data))
        else:
            ops.append(("mount", str(up), target, None, MS_BIND, None))


def _special_mounts(ops: list, root: Path, work_areas: tuple[str, ...], binds: list[Bind], dev_mode: str) -> None:
    for wa in work_areas:
        ops.append(("mkdir", str(root) + wa))
    for d in ("proc", "dev", "tmp", "run", "sys"):
        ops.append(("mkdir", str(root / d)))
    ops.append(("mount", "tmpfs", str(root / "tmp"), "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777"))
    if dev_mode == "host-nodes":
        ops.append(("mount", "tmpfs", str(root / "dev"), "tmpfs", MS_NOSUID, "mode=0755,size=1m"))
        for node in DEV_NODES:
            ops.append(("touch", str(root / "dev" / node)))
            ops.append(("mount", f"/dev/{node}", str(root / "dev" / node), None, MS_BIND, None))
        ops.append(("mkdir", str(root / "dev" / "shm")))
        ops.append(("mount", "tmpfs", str(root / "dev" / "shm"), "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777"))
        for name, tgt in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"),
                          ("stderr", "/proc/self/fd/2")):
            ops.append(("symlink", tgt, str(root / "dev" / name)))
    for b in binds:
        tgt = str(root) + b.target
        ops.append(("mkdir", tgt) if os.path.isdir(b.source) else ("touch", tgt))
        ops.append(("mount", b.source, tgt, None, MS_BIND | MS_REC, None))
        if b.readonly:
            ops.append(("mount", "none", tgt, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID, None))


def _check(ret: int, what: str) -> None:
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _loopback_up() -> None:
    import fcntl
    import socket
    import struct

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        req = struct.pack("16sH14x", b"lo", 0)
        flags = struct.unpack("16sH14x", fcntl.ioctl(sock.fileno(), SIOCGIFFLAGS, req))[1]
        fcntl.ioctl(sock.fileno(), SIOCSIFFLAGS, struct.pack("16sH14x", b"lo", flags | IFF_UP))


def apply(p: Plan) -> None:
    """Runs in the child after fork: private mount namespace, mounts, cgroup, rlimits."""
    try:
        # If the tmax process dies without closing, the launcher dies too (and with it the sandbox's
        # pid namespace); bwrap adds --die-with-parent for its own child.
        _check(_libc.prctl(PR_SET_PDEATHSIG, 9, 0, 0, 0), "prctl(PR_SET_PDEATHSIG)")
        for procs in p.cgroup_procs:
            with open(procs, "w") as f:
                f.write(str(os.getpid()))
        if p.userns:
            _check(_libc.unshare(CLONE_NEWUSER | CLONE_NEWNS), "unshare(CLONE_NEWUSER|CLONE_NEWNS)")
            for name, text in (("setgroups", "deny"), ("uid_map", f"0 {p.uid} 1"), ("gid_map", f"0 {p.gid} 1")):
                with open(f"/proc/self/{name}", "w") as f:
                    f.write(text)
        else:
            _check(_libc.unshare(CLONE_NEWNS), "unshare(CLONE_NEWNS)")
        _check(_libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "make / private")
        for op in p.ops:
            kind = op[0]
            if kind == "mkdir":
                os.makedirs(op[1], exist_ok=True)
            elif kind == "touch":
                os.makedirs(os.path.dirname(op[1]), exist_ok=True)
                open(op[1], "a").close()
            elif kind == "symlink":
                os.symlink(op[1], op[2])
            else:
                _, src, tgt, fstype, flags, data = op
                _check(_libc.mount(src.encode(), tgt.encode(), fstype.encode() if fstype else None, flags,
                                   data.encode() if data else None), f"mount {src} on {tgt}")
        if p.new_net:
            _check(_libc.unshare(CLONE_NEWNET), "unshare(CLONE_NEWNET)")
            _loopback_up()
        for res, value in p.rlimits:
            resource.setrlimit(res, (value, value))
    except BaseException as e:
        try:
            with open(p.error_file, "w") as f:
                f.write(f"{type(e).__name__}: {e}")
        finally:
            raise
