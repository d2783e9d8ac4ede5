"""Compose a sandbox's root filesystem from image layers with overlayfs, inside a private mount
namespace, in the child between fork and exec.

Every top-level directory of the layers becomes one overlay (its layers as lowers, the sandbox's own
upper dir on top) when a layer is a view of host directories (the ``host`` image, whose system
directories are separate mounts on many hosts); plain directory layers make one overlay for the
whole root. Work areas with no lower are plain binds of the upper dir. Because the mounts live only
in the child's mount namespace, they vanish with the sandbox's last process: nothing is ever left
mounted on the host.

An *isolated* plan (every sandbox) adds the containment: the writable layer is a size- and
inode-limited tmpfs (``Storage``) that exists only in the child's namespace and in one fd the parent
holds; when tmax is root, every host path (layers and binds) enters through an idmapped mount shown
through the sandbox's own user namespace, and the child joins that namespace as its last step, so
the launcher starts as root inside and nobody outside. A plain plan (flattening layers for an image
import) keeps the upper dir on disk and stays host root.

All paths and flags are computed in the parent (:func:`plan`); the child only issues syscalls
(:func:`apply`), which keeps the fork-to-exec window short and free of Python-level locks.
"""

from __future__ import annotations

import os
import resource
import socket
import stat
from dataclasses import dataclass, field
from pathlib import Path

from tmax.sandbox import identity, kernel
from tmax.sandbox.base import Bind

# Top-level names never taken from layers: the sandbox mounts its own.
SPECIAL = {"proc", "dev", "sys", "tmp", "run", "lost+found", "boot", "mnt", "media"}
DEV_NODES = ("null", "zero", "full", "random", "urandom", "tty")
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = (
    kernel.MS_RDONLY, kernel.MS_NOSUID, kernel.MS_NODEV, kernel.MS_REMOUNT, kernel.MS_BIND, kernel.MS_REC,
    kernel.MS_PRIVATE)


@dataclass
class Storage:
    """The writable layer: a tmpfs of ``size`` bytes and ``inodes`` inodes, attached at ``dir`` in
    the child only; the child sends its fd back over ``channel`` so the parent can export it."""

    size: int
    inodes: int
    dir: str
    channel: int = -1


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
    # Or a network namespace several sandboxes share: joined as host root, before the user namespace.
    netns_fd: int | None = None
    storage: Storage | None = None
    # Root: the sandbox's own user namespace; the child joins it after the last mount.
    userns_fd: int | None = None
    join_userns: bool = True  # False: the launcher joins it itself (after making its namespaces)
    seccomp: bytes = b""  # installed just before exec, for launchers that cannot install it themselves
    shm_dir: str = ""  # the writable layer's /dev/shm (bwrap binds it over its own /dev)


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


def bridge_dir() -> Path:
    """Where a shifted sandbox's launch paths live in its child's private mount namespace (a fresh
    tmpfs there; on the host an empty, root-owned mountpoint): the launcher runs as the sandbox's
    unprivileged uid, which must be able to traverse every path it is given, wherever
    TMAX_RUN_DIR is."""
    d = Path(os.environ.get("TMAX_BRIDGE_DIR") or ("/run/tmax-bridge" if os.path.isdir("/run") else "/.tmax-bridge"))
    try:
        st = os.lstat(d)
    except FileNotFoundError:
        os.makedirs(d, mode=0o755, exist_ok=True)
        st = os.lstat(d)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != 0:
        raise OSError(f"{d}: expected a directory owned by root (the sandboxes' mountpoint)")
    return d


class _Builder:
    """Accumulates the child's ops for one plan."""

    def __init__(self, p: Plan, base: Path, isolated: bool, in_child: bool):
        self.p, self.ops = p, p.ops
        self.isolated = isolated
        self.idmap = isolated and p.userns_fd is not None
        self.staged = 0
        self.base = base
        self.in_child = in_child  # launch paths exist only in the child (the bridge tmpfs)
        self.flags = MS_NOSUID | MS_NODEV if isolated else 0

    def launch_dir(self, path: Path) -> Path:
        if self.in_child:
            self.ops.append(("mkdir", str(path), 0o755, -1, -1))
        else:
            path.mkdir(parents=True, exist_ok=True)
        return path

    def lower(self, path: str, host_view: bool = False) -> str:
        """The path overlayfs reads a lower layer from: idmapped when the sandbox is shifted, so the
        layer's root is the sandbox's root. A view of the host's own directories (``host_view``) is
        never idmapped: its files keep host owners that mean nothing inside, so the sandbox sees
        exactly what any unprivileged host user may see, and cannot write there."""
        if not self.idmap or host_view:
            return path
        staging = self.launch_dir(self.base / "l" / str(self.staged))
        self.staged += 1
        self.ops.append(("idmap", path, str(staging), True))
        return str(staging)

    def owned_dir(self, path: Path, like: str | None = None, mode: int = 0o755, host_view: bool = False) -> None:
        """A directory of the writable layer, with the owner and mode of ``like`` (a lower's
        directory) as the sandbox sees it (``host_view``: the host's owner, unshifted)."""
        uid = gid = 0
        try:
            st = os.stat(like) if like is not None else None
        except OSError:  # a missing layer: the mount of it fails in the child, with its name
            st = None
        if st is not None:
            uid, gid, mode = st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)
        if self.isolated and identity.shifted():
            if not host_view:
                uid, gid = identity.to_host(uid), identity.to_host(gid)
            self.ops.append(("mkdir", str(path), mode, uid, gid))
        else:
            self.ops.append(("mkdir", str(path), mode, -1, -1))


def plan(layers: list[Layer], sandbox_dir: Path, work_areas: tuple[str, ...], binds: list[Bind],
         dev_mode: str, storage: tuple[int, int] | None = None, userns_fd: int | None = None,
         files: dict[str, str] | None = None) -> Plan:
    """Layers are top first. ``dev_mode`` is "host-nodes" (bind a few /dev nodes; for chroot) or
    "none" (the launcher mounts its own /dev, as bubblewrap does). ``storage`` (bytes, inodes) makes
    the plan isolated: the writable layer on a limited tmpfs, host paths idmapped into
    ``userns_fd`` when given. ``files`` (target -> text; isolated plans only) are made for this
    sandbox alone, such as its /etc/hosts: written on the writable layer beside the root (so
    storage_mb bounds them, the image is untouched and exported changes never hold them), bound at
    their targets, writable by the sandbox's root."""
    p = Plan(root="", error_file=str(sandbox_dir / "launch.err"), userns_fd=userns_fd)
    base = sandbox_dir
    if userns_fd is not None:
        base = bridge_dir()
        p.ops.append(("mount", "tmpfs", str(base), "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m"))
    b = _Builder(p, base, isolated=storage is not None, in_child=userns_fd is not None)
    root = b.launch_dir(base / "root")
    p.root = str(root)
    if storage is not None:
        rw = b.launch_dir(base / "rw")
        p.storage = Storage(size=storage[0], inodes=storage[1], dir=str(rw))
        p.ops.append(("storage",))
        upper, work = rw / "upper", rw / "work"
        p.ops.append(("mkdir", str(work), 0o700, -1, -1))
    else:
        upper, work = sandbox_dir / "upper", sandbox_dir / "work"
        for d in (upper, work):
            d.mkdir(parents=True, exist_ok=True)
    if layers and all(isinstance(layer, Path) for layer in layers):
        # Plain directory layers (a built image and its setup layers): one overlay for the whole root.
        lowers = []
        for layer in layers:
            lowers.append(b.lower(str(layer)))
            if is_opaque(layer):
                break
        if storage is not None:
            b.owned_dir(upper, like=str(layers[-1]))
        p.ops.append(("mount", "overlay", str(root), "overlay", b.flags,
                      f"lowerdir={':'.join(lowers)},upperdir={upper},workdir={work}"))
    else:
        if storage is not None:
            b.owned_dir(upper)
        _per_directory(b, layers, root, upper, work, work_areas)
    _special_mounts(b, root, work_areas, binds, dev_mode)
    _own_files(b, root, files or {})
    return p


def _per_directory(b: _Builder, layers: list[Layer], root: Path, upper: Path, work: Path,
                   work_areas: tuple[str, ...]) -> None:
    """One overlay per top-level directory: needed when a layer is a view of host directories."""
    ops = b.ops
    if b.p.storage is not None:  # the skeleton of mountpoints is on the writable layer too
        skel = Path(b.p.storage.dir) / "skel"
        b.owned_dir(skel)
        ops.append(("mount", str(skel), str(root), None, MS_BIND, None))
    else:
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
        host_view: set[str] = set()  # lowers that are the host's own directories
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
            if isinstance(layer, dict):
                host_view.add(str(e))
            if is_opaque(e):
                break
        target = str(root / name)
        if link is not None:
            if link:
                ops.append(("symlink", link, target))
            continue
        up, wk = upper / name, work / name
        if b.isolated:  # a fresh tmpfs: made in the child
            b.owned_dir(up, like=lowers[-1] if lowers else None, mode=0o700 if name == "root" else 0o755,
                        host_view=bool(lowers) and lowers[-1] in host_view)
            ops.append(("mkdir", str(wk), 0o700, -1, -1))
        else:
            # A previous sandbox may have left this name in the upper dir as something else.
            if os.path.lexists(up) and not up.is_dir():
                continue
            up.mkdir(exist_ok=True)
            wk.mkdir(exist_ok=True)
        ops.append(("mkdir", target, 0o755, -1, -1))
        if lowers:
            data = f"lowerdir={':'.join(b.lower(x, x in host_view) for x in lowers)},upperdir={up},workdir={wk}"
            ops.append(("mount", "overlay", target, "overlay", b.flags, data))
        else:
            ops.append(("mount", str(up), target, None, MS_BIND, None))


def _special_mounts(b: _Builder, root: Path, work_areas: tuple[str, ...], binds: list[Bind], dev_mode: str) -> None:
    ops = b.ops
    for wa in work_areas:
        ops.append(("mkdir", str(root) + wa, 0o755, -1, -1))
    for d in ("proc", "dev", "tmp", "run", "sys"):
        ops.append(("mkdir", str(root / d), 0o755, -1, -1))
    if b.p.storage is not None:
        # /tmp and /dev/shm live on the writable layer, so storage_mb bounds them too.
        rw = Path(b.p.storage.dir)
        for name in ("tmp", "shm"):
            b.owned_dir(rw / name, mode=0o1777)
        ops.append(("mount", str(rw / "tmp"), str(root / "tmp"), None, MS_BIND, None))
        b.p.shm_dir = str(rw / "shm")
    else:
        ops.append(("mount", "tmpfs", str(root / "tmp"), "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777"))
    if dev_mode == "host-nodes":
        ops.append(("mount", "tmpfs", str(root / "dev"), "tmpfs", MS_NOSUID, "mode=0755,size=1m"))
        for node in DEV_NODES:
            ops.append(("touch", str(root / "dev" / node)))
            ops.append(("mount", f"/dev/{node}", str(root / "dev" / node), None, MS_BIND, None))
        ops.append(("mkdir", str(root / "dev" / "shm"), 0o1777, -1, -1))
        if b.p.shm_dir:
            ops.append(("mount", b.p.shm_dir, str(root / "dev" / "shm"), None, MS_BIND, None))
        else:
            ops.append(("mount", "tmpfs", str(root / "dev" / "shm"), "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777"))
        for name, tgt in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"),
                          ("stderr", "/proc/self/fd/2")):
            ops.append(("symlink", tgt, str(root / "dev" / name)))
    for bind in binds:
        tgt = str(root) + bind.target
        ops.append(("mkdir", tgt, 0o755, -1, -1) if os.path.isdir(bind.source) else ("touch", tgt))
        if b.idmap and bind.readonly:
            ops.append(("idmap", bind.source, tgt, True))
            continue
        if b.idmap:  # writable: never idmapped (writes would land as host root); owned by sandbox root
            ops.append(("chown", bind.source, identity.to_host(0), identity.to_host(0)))
        ops.append(("mount", bind.source, tgt, None, MS_BIND | MS_REC, None))
        if bind.readonly:
            ops.append(("mount", "none", tgt, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID, None))
        elif b.isolated:
            ops.append(("mount", "none", tgt, None, MS_BIND | MS_REMOUNT | MS_NOSUID | MS_NODEV, None))


def _own_files(b: _Builder, root: Path, files: dict[str, str]) -> None:
    if not files:
        return
    if b.p.storage is None:
        raise ValueError("files for the sandbox need an isolated plan (a writable layer to hold them)")
    home = Path(b.p.storage.dir) / "files"
    b.owned_dir(home)
    owner = identity.to_host(0) if identity.shifted() else -1
    for i, (target, text) in enumerate(sorted(files.items())):
        src, tgt = str(home / str(i)), str(root) + target
        b.ops.append(("write", src, text.encode(), 0o644, owner))
        b.ops.append(("bind_target", tgt))
        b.ops.append(("mount", src, tgt, None, MS_BIND, None))


def _bind_target(path: str) -> None:
    """A file to bind over: the image's own, left as it is (no copy-up), else a new empty one."""
    if os.path.islink(path):
        raise OSError(f"{path}: a symlink in the image; expected a file to place the sandbox's own over")
    if not os.path.exists(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644))


def _write(path: str, data: bytes, mode: int, owner: int) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        if owner >= 0:
            os.fchown(fd, owner, owner)
        os.fchmod(fd, mode)  # past the umask
    finally:
        os.close(fd)


def _storage(p: Plan) -> None:
    """Make the writable tmpfs, hand its fd to the parent, attach it."""
    s = p.storage
    fd = kernel.tmpfs(s.size, s.inodes, mode="0711")
    try:
        with socket.socket(fileno=os.dup(s.channel)) as chan:
            socket.send_fds(chan, [b"s"], [fd])
        kernel.attach(fd, s.dir)
    finally:
        os.close(fd)


def apply(p: Plan) -> None:
    """Runs in the child after fork: private mount namespace, mounts, cgroup, rlimits, identity."""
    try:
        # If the tmax process dies without closing, the launcher dies too (and with it the sandbox's
        # pid namespace); bwrap adds --die-with-parent for its own child.
        kernel.prctl(kernel.PR_SET_PDEATHSIG, 9)
        for procs in p.cgroup_procs:
            with open(procs, "w") as f:
                f.write(str(os.getpid()))
        if p.storage is not None:
            kernel.join_new_session_keyring()
        if p.userns:
            kernel.unshare(kernel.CLONE_NEWUSER | kernel.CLONE_NEWNS)
            for name, text in (("setgroups", "deny"), ("uid_map", f"0 {p.uid} 1"), ("gid_map", f"0 {p.gid} 1")):
                with open(f"/proc/self/{name}", "w") as f:
                    f.write(text)
        else:
            kernel.unshare(kernel.CLONE_NEWNS)
        kernel.mount("none", "/", None, MS_REC | MS_PRIVATE, None)
        for op in p.ops:
            _op(p, op)
        for res, value in p.rlimits:
            resource.setrlimit(res, (value, value))
        if p.netns_fd is not None:
            # As host root (the sandbox's root could not): the shared namespace is the host's.
            kernel.setns(p.netns_fd, kernel.CLONE_NEWNET)
        if p.userns_fd is not None and p.join_userns:
            # Last: become root of the sandbox's own namespace (nobody on the host). The mounts above
            # belong to a namespace of the host's, so inside they are locked together.
            kernel.setns(p.userns_fd, kernel.CLONE_NEWUSER)
            os.setgroups([])
            os.setresgid(0, 0, 0)
            os.setresuid(0, 0, 0)
            kernel.prctl(kernel.PR_SET_DUMPABLE, 1)  # the uid change cleared it; bwrap reads /proc/self/fd
            kernel.prctl(kernel.PR_SET_PDEATHSIG, 9)  # and this too
        if p.new_net:
            kernel.unshare(kernel.CLONE_NEWNET)
            kernel.loopback_up()
        if p.storage is not None:
            kernel.prctl(kernel.PR_SET_NO_NEW_PRIVS, 1)
        if p.seccomp:
            kernel.install_seccomp(p.seccomp)
    except BaseException as e:
        try:
            with open(p.error_file, "w") as f:
                f.write(f"{type(e).__name__}: {e}")
        finally:
            raise


def _op(p: Plan, op: tuple) -> None:
    kind = op[0]
    if kind == "storage":
        _storage(p)
    elif kind == "mkdir":
        _, path, mode, uid, gid = op
        os.makedirs(path, exist_ok=True)
        if uid >= 0:
            os.chown(path, uid, gid)
        if mode != 0o755 or uid >= 0:
            os.chmod(path, mode)
    elif kind == "write":
        _write(*op[1:])
    elif kind == "bind_target":
        _bind_target(op[1])
    elif kind == "chown":
        os.chown(op[1], op[2], op[3])
    elif kind == "touch":
        os.makedirs(os.path.dirname(op[1]), exist_ok=True)
        open(op[1], "a").close()
    elif kind == "symlink":
        os.symlink(op[1], op[2])
    elif kind == "idmap":
        _, src, tgt, readonly = op
        tree = kernel.idmapped_tree(src, p.userns_fd, readonly=readonly)
        try:
            kernel.attach(tree, tgt)
        finally:
            os.close(tree)
    else:
        _, src, tgt, fstype, flags, data = op
        kernel.mount(src, tgt, fstype, flags, data)
