"""Container sandboxes: podman and docker, driven through their CLIs.

An environment's layers are flattened into one root filesystem (overlayfs in a private mount
namespace, exactly as the native backends compose it, streamed through ``tar``) and imported once as
an image (``podman import`` / ``docker import``), tagged by a key of the environment. A sandbox is one
container whose main process is the persistent shell's outer loop, attached over ``-i`` pipes and
driven by :class:`tmax.sandbox.shell.ShellSession` like the native backends.

Work areas (``/app`` by default) are host directories bind-mounted into the container, filled at start
from the layers (whiteouts and opaque directories honoured). So the agent's work survives the
container, ``export_work_areas`` is a move, and layers that hold nothing but work areas (the agent's
changes, stacked on the environment for the verifier) never force a new image.

Image key: the environment's base hash (``env_hash`` up to the first ``+``, i.e. the image profile or
the host's package state) and the identities of the layers that matter outside the work areas
(a directory's path and mtime, the host layer's mapping). Task setup layers live under content-keyed
paths, so the key changes exactly when the content does.

Podman on this kind of host needs the runc runtime and ulimits within the host's hard limits; the
backend writes its own ``containers.conf`` under ``$TMAX_HOME`` and points ``CONTAINERS_CONF`` at it
for every podman command it runs. Every ``--ulimit`` is passed explicitly: podman replaces all its
default ulimits as soon as one is given, and its built-in defaults exceed this host's hard limits.

Images of the ``host`` environment are keyed by the host's package state, so installing a package on
the host makes a new one; the stale ones (a full copy of /usr each) are removed after each import.

Hardening, as close to the native backends' as each engine's own options allow:

- **Capabilities**: ``--cap-drop ALL`` and ``--cap-add`` for exactly ``identity.KEPT_CAPS`` (never
  CAP_SYS_ADMIN, CAP_SYS_PTRACE, CAP_NET_ADMIN, CAP_MKNOD...), and ``--security-opt no-new-privileges``.
- **Seccomp**: the engine's default profile, always (nothing here turns it off; podman reads only the
  containers.conf tmax writes, which leaves ``seccomp_profile`` at its default).
- **/proc/sys** and the other kernel knobs under /proc stay read-only, as both engines mount them.
- **Identity** (podman as root): ``--uidmap 0:BASE:65536 --gidmap 0:BASE:65536`` with ``identity``'s
  host range (checked free first), so the container's root is an unprivileged host uid, exactly as
  in a native sandbox. No /etc/subuid entry is needed. Podman shows the image through that mapping
  itself. Podman's own idmapped binds (``:idmap``) are left to the runtime, and runc 1.1 silently
  ignores them, so tmax does it. What the sandbox may write is shifted, never idmapped (writes
  through such a mount would land as host root): a work area's tree is moved into the range after
  it is filled and back when it is exported; a writable bind's tree is moved into the range at start
  and back at close. Going back, setuid/setgid bits and file capabilities are cleared and FIFOs, sockets
  and device nodes dropped: the sandbox wrote them. Read-only binds are shown through idmapped
  views that tmax mounts itself (``<sandbox dir>/ro/<n>``, read-only, unmounted at close), so the
  container's root reads them as host root's, as in a native sandbox. Every podman bind is
  ``nosuid,nodev``. Rootless podman already runs the container as the invoking user's own uid and
  needs no shift.
- **Identity** (docker): the docker CLI has no per-container user namespace. The container's root
  is the host's root (with the reduced capabilities and seccomp above) unless dockerd itself runs
  with ``userns-remap`` (``"userns-remap": "default"`` in /etc/docker/daemon.json), which maps every
  container of that daemon into a subordinate range; tmax does not (cannot) set that up. With any
  engine, exported work areas and writable binds (at close) are cleaned as above: no setuid/setgid
  bit, file capability, FIFO, socket or device node the container made survives.
- **Network**: offline sandboxes get ``--network none`` (only ``lo``). Online ones never share the
  host's network namespace: podman uses ``slirp4netns:allow_host_loopback=false`` (user-mode NAT, the
  host's 127.0.0.1 unreachable, as with the native backends); docker uses its default bridge (its own
  network namespace behind NAT). From docker's bridge the host's 127.0.0.1 is not routed in a default
  set-up, but services the host binds on its other addresses, the bridge's gateway included, are
  reachable; a daemon started without a bridge (``--bridge=none``) cannot run online sandboxes.

Closing removes the container forcibly (``rm -f``; retried, as podman 4.3's races its own clean-up
under a user namespace), always. A small guard process per sandbox removes it too if this Python
process dies without closing (its stdin is a pipe we hold; EOF means
we are gone), so containers never leak and never spin on a closed stdin.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import hashlib
import json
import os
import re
import resource
import shlex
import shutil
import stat
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Iterable
from pathlib import Path

from tmax.sandbox import identity, kernel, rootfs
from tmax.sandbox.base import BASE_ENV, ExecResult, SandboxError, SandboxSpec
from tmax.sandbox.paths import named_lock, remove_tree, run_dir, tmax_home
from tmax.sandbox.procs import exit_status
from tmax.sandbox.shell import ShellSession, outer_loop

ENGINES = ("podman", "docker")
IMAGE_REPO = "localhost/tmax-env"
LABEL = "tmax.sandbox=1"
IMPORT_TIMEOUT = 3600.0
CLI_TIMEOUT = 60.0
MNT_DETACH = 2

# Kills every descendant of the in-container pid $1 (and $1 itself when $2 is "shell"). Walks
# /proc/*/stat with builtins only (no ps in minimal images), repeating until nothing is left, so a
# command that forks while being killed is still caught.
KILL_TREE = r"""
root=$1; mode=$2
for round in 1 2 3 4 5 6 7 8; do
  tree=" $root "; victims=""; grew=1
  while [ "$grew" = 1 ]; do
    grew=0
    for st in /proc/[0-9]*/stat; do
      read -r line < "$st" 2>/dev/null || continue
      pid=${line%% *}; rest=${line##*) }; ppid=${rest#* }; ppid=${ppid%% *}
      case "$tree" in *" $ppid "*)
        case "$tree" in *" $pid "*) ;; *) tree="$tree$pid "; victims="$victims $pid"; grew=1 ;; esac ;;
      esac
    done
  done
  [ -z "$victims" ] && break
  kill -9 $victims 2>/dev/null
done
[ "$mode" = shell ] && kill -9 "$root" 2>/dev/null
exit 0
"""


def _hard_limit(res: int, want: int) -> int:
    hard = resource.getrlimit(res)[1]
    return want if hard == resource.RLIM_INFINITY else min(want, hard)


# -- layers: what lies outside the work areas, image keys, flattening ---------------------------

def _parts(path: str) -> tuple[str, ...]:
    return tuple(p for p in path.strip("/").split("/") if p)


def outer_work_areas(work_areas: Iterable[str]) -> list[str]:
    """The work areas that are not inside another one (those are the ones bind-mounted)."""
    was = sorted({"/" + "/".join(_parts(w)) for w in work_areas if _parts(w)}, key=len)
    out: list[str] = []
    for w in was:
        if not any(_parts(w)[:len(_parts(o))] == _parts(o) for o in out):
            out.append(w)
    return out


def _layer_entry(layer, parts: tuple[str, ...]) -> Path | None:
    if isinstance(layer, dict):
        if parts[0] not in layer:
            return None
        return Path(layer[parts[0]]).joinpath(*parts[1:])
    return Path(layer).joinpath(*parts)


def touches_outside(layer, work_areas: Iterable[str], lowers: Iterable = ()) -> bool:
    """Whether ``layer`` changes anything outside the work areas that a sandbox would show.

    Top-level plain files and the names the sandbox mounts itself (``rootfs.SPECIAL``) are not shown,
    as in :func:`rootfs.plan`. A directory holding nothing that matters (such as the empty top-level
    directories a native sandbox's upper dir always has) changes nothing if a lower layer has it too.
    """
    was = [_parts(w) for w in outer_work_areas(work_areas)]
    lowers = list(lowers)

    def covered(parts):
        return any(parts[:len(w)] == w for w in was)

    def ancestor(parts):
        return any(len(w) > len(parts) and w[:len(parts)] == parts for w in was)

    def lower_is_dir(parts) -> bool:
        for low in lowers:
            e = _layer_entry(low, parts)
            if e is not None and os.path.lexists(e):
                return e.is_dir() and not e.is_symlink()
        return False

    def walk(d: Path, rel: tuple[str, ...]) -> bool:
        try:
            names = sorted(os.listdir(d))
        except OSError:
            return False
        for name in names:
            parts = rel + (name,)
            e = d / name
            if covered(parts):
                continue
            if not rel and (name in rootfs.SPECIAL or (e.is_file() and not e.is_symlink())):
                continue
            if e.is_dir() and not e.is_symlink() and not rootfs.is_opaque(e):
                if walk(e, parts):
                    return True
                if ancestor(parts) or lower_is_dir(parts):
                    continue
            return True
        return False

    if isinstance(layer, dict):
        for name, src in layer.items():
            parts = (name,)
            if covered(parts) or name in rootfs.SPECIAL:
                continue
            if os.path.isdir(src) and not os.path.islink(src):
                if walk(Path(src), parts):
                    return True
                if ancestor(parts) or lower_is_dir(parts):
                    continue
            return True
        return False
    return walk(Path(layer), ())


def image_layers(spec: SandboxSpec) -> list:
    """The layers an image must hold: those that change something outside the work areas."""
    layers = list(spec.layers)
    return [layer for i, layer in enumerate(layers) if touches_outside(layer, spec.work_areas, layers[i + 1:])]


def _identity(layer) -> str:
    if isinstance(layer, dict):
        return "host:" + json.dumps(sorted((str(k), str(v)) for k, v in layer.items()))
    p = Path(layer).resolve()
    if p.parent.name == "host-mask":  # content-addressed by its name, wherever TMAX_HOME is
        return f"mask:{p.name}"
    try:
        mtime = p.stat().st_mtime_ns
    except OSError:
        mtime = 0
    return f"dir:{p}:{mtime}"


def image_key(spec: SandboxSpec, layers: list) -> str:
    """A tag-safe key: a readable prefix from the environment hash, then a digest."""
    base = (spec.env_hash or "env").split("+")[0]
    h = hashlib.sha256(base.encode())
    for layer in layers:
        h.update(b"\0" + _identity(layer).encode())
    prefix = re.sub(r"[^a-z0-9_.-]+", "-", base.lower()).strip("-.")[:60] or "env"
    return f"{prefix}-{h.hexdigest()[:16]}"


def flatten_tar(layers: list, work: Path) -> subprocess.Popen:
    """Start ``tar`` writing the merged root filesystem of ``layers`` (top first) to its stdout.

    The merge is the native one: :func:`rootfs.plan` and :func:`rootfs.apply` compose the layers with
    overlayfs in the tar process's own mount namespace, so nothing stays mounted on the host."""
    plan = rootfs.plan(layers, work, (), [], dev_mode="none")
    argv = ["tar", "--numeric-owner", "-C", plan.root, "-cf", "-", "."]
    with open(work / "tar.err", "wb") as err:  # a file, not a pipe: tar may warn a lot
        try:
            tar = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err,
                                   preexec_fn=lambda: rootfs.apply(plan), close_fds=True)
        except subprocess.SubprocessError:
            why = Path(plan.error_file).read_text() if Path(plan.error_file).exists() else "unknown error"
            raise SandboxError(f"composing the layers to flatten them failed: {why}") from None
    tar.err_file = work / "tar.err"  # type: ignore[attr-defined]
    tar.plan = plan  # type: ignore[attr-defined]
    return tar


def finish_tar(tar: subprocess.Popen, what: str) -> None:
    rc = tar.wait()
    if rc not in (0, 1):  # 1: a file changed while being read (a live host directory)
        err = ""
        for f in (Path(tar.plan.error_file), tar.err_file):  # type: ignore[attr-defined]
            with contextlib.suppress(OSError):
                err += f.read_text(errors="replace")
        raise SandboxError(f"{what}: tar exited {rc}: {err[-1500:]}")


# -- work areas: host directories filled from the layers ------------------------------------------

def _copy_meta(src: Path, dst: Path) -> None:
    st = src.lstat()
    with contextlib.suppress(OSError):
        os.lchown(dst, st.st_uid, st.st_gid)
    if not stat.S_ISLNK(st.st_mode):
        with contextlib.suppress(OSError):
            os.chmod(dst, stat.S_IMODE(st.st_mode))
    with contextlib.suppress(OSError, NotImplementedError):
        os.utime(dst, ns=(st.st_atime_ns, st.st_mtime_ns), follow_symlinks=False)


def _remove(p: Path) -> None:
    if p.is_dir() and not p.is_symlink():
        shutil.rmtree(p)
    elif os.path.lexists(p):
        p.unlink()


def _clear(d: Path) -> None:
    for e in list(d.iterdir()):
        _remove(e)


def _merge(src: Path, dst: Path) -> None:
    """Apply overlay layer directory ``src`` on top of the plain directory ``dst``."""
    for e in os.scandir(src):
        s, d = Path(e.path), dst / e.name
        if rootfs.is_whiteout(s):
            if os.path.lexists(d):
                _remove(d)
            continue
        if e.is_dir(follow_symlinks=False):
            if os.path.lexists(d) and (d.is_symlink() or not d.is_dir()):
                _remove(d)
            if not d.exists():
                d.mkdir()
            elif rootfs.is_opaque(s):
                _clear(d)
            _merge(s, d)
            _copy_meta(s, d)
            continue
        if os.path.lexists(d):
            _remove(d)
        st = e.stat(follow_symlinks=False)
        if stat.S_ISLNK(st.st_mode):
            os.symlink(os.readlink(s), d)
        elif stat.S_ISREG(st.st_mode):
            shutil.copyfile(s, d, follow_symlinks=False)
        elif stat.S_ISFIFO(st.st_mode) or stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
            try:
                os.mknod(d, st.st_mode, st.st_rdev)
            except OSError:
                continue
        else:  # sockets and the like are not copied
            continue
        _copy_meta(s, d)


def fill_work_area(layers: list, work_area: str, dst: Path) -> None:
    """Make ``dst`` hold what a sandbox on ``layers`` (top first) shows at ``work_area``."""
    dst.mkdir(parents=True, exist_ok=True)
    parts = _parts(work_area)
    for layer in reversed(layers):  # bottom first
        root = _layer_entry(layer, parts[:1])
        if root is None:
            continue
        node, hidden = root, False
        for i in range(len(parts)):
            if i:
                node = node / parts[i]
            if not os.path.lexists(node) or rootfs.is_whiteout(node) or node.is_symlink() or not node.is_dir():
                # Missing here: lower content survives unless an ancestor was opaque.
                hidden = hidden or os.path.lexists(node)
                node = None
                break
            if rootfs.is_opaque(node):
                hidden = True
        if hidden:
            _clear(dst)
        if node is not None:
            _merge(node, dst)
            _copy_meta(node, dst)


def set_opaque(d: Path) -> None:
    """Mark ``d`` opaque for overlayfs, so that as a layer it hides what lies below it."""
    for attr in ("trusted.overlay.opaque", "user.overlay.opaque"):
        with contextlib.suppress(OSError):
            os.setxattr(d, attr, b"y", follow_symlinks=False)


# -- identity: host trees handed to a sandbox whose ids are shifted ---------------------------------

def _tree(top: Path):
    """``(path, lstat)`` of ``top`` and of everything under it, parents first, never following a link."""
    st = os.lstat(top)
    yield str(top), st
    if not stat.S_ISDIR(st.st_mode):
        return
    stack = [str(top)]
    while stack:
        try:
            it = os.scandir(stack.pop())
        except OSError:
            continue
        with it:
            for e in it:
                try:
                    est = e.stat(follow_symlinks=False)
                except OSError:
                    continue
                yield e.path, est
                if stat.S_ISDIR(est.st_mode):
                    stack.append(e.path)


def _in_range(i: int) -> bool:
    base = identity.uid_base()
    return base <= i < base + identity.UID_COUNT


def shift_in(top: Path) -> None:
    """Give ``top``'s tree to the sandbox's id range: plain owner ``n`` becomes ``BASE + n``, so that the
    container's ``n`` owns it. Ids outside 0..65535 are left (the container sees them as nobody), and
    so are files with more than one link (one may lie outside the tree: a host file's owner never
    changes). chown clears setuid/setgid bits and file capabilities, which is meant."""
    base = identity.uid_base()
    for path, st in _tree(top):
        if not stat.S_ISDIR(st.st_mode) and st.st_nlink > 1:
            continue
        uid = st.st_uid + base if st.st_uid < identity.UID_COUNT else st.st_uid
        gid = st.st_gid + base if st.st_gid < identity.UID_COUNT else st.st_gid
        if (uid, gid) != (st.st_uid, st.st_gid):
            os.lchown(path, uid, gid)


def shift_out(top: Path, shifted: bool) -> None:
    """Take back a tree the sandbox could write, in place. What the sandbox owned (owner or group in its
    range; everything when ``shifted`` is False, its root being a host user then) is hostile: owners go
    back to their plain values, setuid/setgid bits and file capabilities are cleared, and FIFOs,
    sockets and device nodes are removed, as the native backends' export does."""
    base = identity.uid_base()
    for path, st in _tree(top):
        mode = st.st_mode
        if shifted and not (_in_range(st.st_uid) or _in_range(st.st_gid)):
            continue
        if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
            if path != str(top):
                os.unlink(path)
            continue
        if shifted:
            os.lchown(path, st.st_uid - base if _in_range(st.st_uid) else st.st_uid,
                      st.st_gid - base if _in_range(st.st_gid) else st.st_gid)
        if stat.S_ISLNK(mode):
            continue
        if stat.S_ISREG(mode):
            with contextlib.suppress(OSError):
                os.removexattr(path, "security.capability", follow_symlinks=False)
        if mode & 0o6000:  # after chown, which keeps them on directories
            os.chmod(path, stat.S_IMODE(mode) & ~0o6000)


class WorkAreas:
    """The host side of a sandbox's work areas: ``<dir>/wa/<n>`` for each outer work area.

    ``shift``: the sandbox's ids are shifted (podman as root); the areas are handed to its range after
    they are filled, and shifted back when exported."""

    def __init__(self, spec: SandboxSpec, sandbox_dir: Path, shift: bool = False):
        self.dir = sandbox_dir
        self.shift = shift
        self.areas = outer_work_areas(spec.work_areas)
        self.paths = [sandbox_dir / "wa" / str(i) for i in range(len(self.areas))]
        for wa, p in zip(self.areas, self.paths, strict=True):
            fill_work_area(spec.layers, wa, p)
            if shift:
                shift_in(p)

    def binds(self) -> list[tuple[str, str]]:
        return [(str(p), wa) for p, wa in zip(self.paths, self.areas, strict=True)]

    def export(self, dest: Path) -> None:
        """Move the final content of each work area to ``dest`` as an overlay layer: the full
        content, marked opaque, so that stacked on the environment it shows exactly this."""
        for wa, p in zip(self.areas, self.paths, strict=True):
            if not p.is_dir():
                continue
            shift_out(p, self.shift)
            target = dest / wa.strip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            if os.path.lexists(target):
                _remove(target)
            try:
                os.rename(p, target)
            except OSError as e:
                if e.errno != errno.EXDEV:
                    raise
                shutil.copytree(p, target, symlinks=True)
            set_opaque(target)

    def remove(self) -> None:
        remove_tree(self.dir)


def check_bind_path(path: str, forbidden: str = ":") -> None:
    bad = [c for c in forbidden if c in path]
    if bad:
        raise SandboxError(f"bind path {path!r} contains {bad[0]!r}, which the engine's bind syntax cannot express")


# -- the engines --------------------------------------------------------------------------------

_conf_lock = threading.Lock()
_conf_path: Path | None = None
_known_images: dict[str, set[str]] = {}  # engine -> image tags known to exist
_versions: dict[str, str] = {}  # engine -> version, once it answered


def containers_conf() -> Path:
    """Write (once per process, atomically) the containers.conf podman runs with."""
    global _conf_path
    with _conf_lock:
        if _conf_path is not None:
            return _conf_path
        nofile = _hard_limit(resource.RLIMIT_NOFILE, 20000)
        nproc = _hard_limit(resource.RLIMIT_NPROC, 4096)
        engine = []
        if shutil.which("runc"):
            engine.append('runtime = "runc"')  # crun fails on hybrid cgroup hierarchies
        if not os.path.isdir("/run/systemd/system"):
            engine.append('cgroup_manager = "cgroupfs"')
        if not os.path.exists("/run/systemd/journal/socket"):
            engine.append('events_logger = "file"')
        text = ("# Written by tmax (tmax.sandbox.container); regenerated when it differs.\n"
                "[containers]\n"
                f'default_ulimits = ["nofile={nofile}:{nofile}", "nproc={nproc}:{nproc}"]\n\n'
                "[engine]\n" + "".join(line + "\n" for line in engine))
        path = tmax_home() / "containers.conf"
        if not path.exists() or path.read_text() != text:
            tmp = path.with_name(f".containers.conf.{os.getpid()}.{threading.get_ident()}")
            tmp.write_text(text)
            os.replace(tmp, path)
        _conf_path = path
        return path


class Engine:
    """Runs one engine's CLI with the right environment."""

    def __init__(self, name: str):
        if name not in ENGINES:
            raise ValueError(f"unknown container engine {name!r}; expected one of {', '.join(ENGINES)}")
        self.name = name
        # Shared by every Engine of this name in the process (get_backend makes a new one per call).
        self.known_images: set[str] = _known_images.setdefault(name, set())

    @property
    def version(self) -> str:
        return _versions.get(self.name, "")

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        if self.name == "podman":
            env["CONTAINERS_CONF"] = str(containers_conf())
        return env

    def run(self, *args: str, timeout: float = CLI_TIMEOUT, check: bool = True,
            input: bytes | None = None) -> subprocess.CompletedProcess:
        try:
            r = subprocess.run([self.name, *args], input=input, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env=self.env(), timeout=timeout)
        except subprocess.TimeoutExpired:
            raise SandboxError(f"{self.name} {args[0]}: no answer within {timeout:g}s") from None
        except FileNotFoundError:
            raise SandboxError(f"{self.name} not found on PATH") from None
        if check and r.returncode != 0:
            raise SandboxError(f"{self.name} {' '.join(args[:2])} failed (exit {r.returncode}): "
                               f"{r.stderr.decode('utf-8', 'replace').strip()[-1500:]}")
        return r

    def shifts_ids(self) -> bool:
        """Whether this engine's containers run in ``identity``'s shifted host range: podman as root.
        (Rootless podman maps the container's root to the invoking user; docker cannot per container.)"""
        return self.name == "podman" and identity.shifted()

    def log_driver(self) -> str:
        """Podman >= 4 passes the container's stdio straight through (no conmon in the data path);
        otherwise keep no log (the output is read over the attached pipe anyway)."""
        if self.name == "podman" and (self.version.split(".")[0].isdigit() and int(self.version.split(".")[0]) >= 4):
            return "passthrough"
        return "none"

    def image_exists(self, tag: str) -> bool:
        if tag in self.known_images:
            return True
        ok = self.run("image", "inspect", "--format", "{{.Id}}", tag, check=False).returncode == 0
        if ok:
            self.known_images.add(tag)
        return ok

    def ensure_image(self, spec: SandboxSpec) -> str:
        """The image tag for ``spec``'s environment, importing it on first use."""
        layers = image_layers(spec)
        tag = f"{IMAGE_REPO}:{image_key(spec, layers)}"
        if self.image_exists(tag):
            return tag
        with named_lock(f"{self.name}-image-{tag.rsplit(':', 1)[1]}"):
            if self.image_exists(tag):
                return tag
            with tempfile.TemporaryDirectory(prefix="tmax-flatten-", dir=run_dir()) as work:
                tar = flatten_tar(layers, Path(work))
                try:
                    imp = subprocess.run([self.name, "import", "--message", f"tmax environment {spec.env_hash}",
                                          "-", tag], stdin=tar.stdout, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, env=self.env(), timeout=IMPORT_TIMEOUT)
                except BaseException:
                    tar.kill()
                    raise
                finally:
                    tar.stdout.close()
                if imp.returncode != 0:
                    tar.kill()
                    tar.wait()
                    raise SandboxError(f"{self.name} import failed (exit {imp.returncode}): "
                                       f"{imp.stderr.decode('utf-8', 'replace').strip()[-1500:]}")
                finish_tar(tar, f"flattening {spec.env_hash or 'the environment'}")
            self.known_images.add(tag)
            self.prune_stale_host_images(tag)
        return tag

    def prune_stale_host_images(self, tag: str) -> None:
        """Remove images of the host environment from before the host's packages changed: the host's
        hash can never come back, and each image is a full copy of /usr (gigabytes). An image still
        used by a container is kept (no ``-f``)."""
        key = tag.rsplit(":", 1)[1]
        if not key.startswith("host-"):
            return
        prefix = key.rsplit("-", 1)[0]
        try:
            r = self.run("images", "--format", "{{.Repository}}:{{.Tag}}", check=False)
        except SandboxError:
            return
        for line in r.stdout.decode("utf-8", "replace").split():
            repo, _, other = line.rpartition(":")
            if repo == IMAGE_REPO and other.startswith("host-") and other.rsplit("-", 1)[0] != prefix:
                self.known_images.discard(line)
                with contextlib.suppress(SandboxError):  # best effort: never fails a start
                    self.run("rmi", line, check=False, timeout=IMPORT_TIMEOUT)


class ContainerSandbox:
    def __init__(self, spec: SandboxSpec, engine: Engine):
        self.spec = spec
        self.engine = engine
        self.id = uuid.uuid4().hex[:12]
        self.name = f"tmax-{self.id}"
        self.dir = run_dir() / self.id
        self.dir.mkdir(parents=True)
        self.closed = False
        self.proc: subprocess.Popen | None = None
        self.guard: subprocess.Popen | None = None
        self.work: WorkAreas | None = None
        self.writable_binds: list[Path] = []  # handed to the sandbox; given back at close
        self.ro_views: dict[int, str] = {}  # index in spec.binds -> its idmapped view (podman as root)
        self.started = False
        try:
            self._start()
            self.started = True
        except BaseException:
            self.close()
            raise

    # -- launch ---------------------------------------------------------------------------------
    def _start(self) -> None:
        spec = self.spec
        shift = self.engine.shifts_ids()
        if shift:
            identity.check_range(identity.uid_base())
        self.image = image = self.engine.ensure_image(spec)
        self.work = WorkAreas(spec, self.dir, shift=shift)
        for b in spec.binds:
            if not b.readonly:
                self.writable_binds.append(Path(b.source))  # first: close gives it back even half done
                if shift:
                    try:
                        shift_in(Path(b.source))
                    except OSError as e:
                        raise SandboxError(f"handing the writable bind {b.source} to the sandbox: {e}") from None
        if shift and any(b.readonly for b in spec.binds):
            self._make_ro_views()
        self.nonce = ShellSession.new_nonce()
        argv = self._argv(image)
        env = self.engine.env()
        # The guard removes the container and this sandbox's directory if we die without closing
        # (EOF on its stdin); rm is retried, as in _remove_container.
        rm = [self.engine.name, "rm", "-f"] + (["-t", "0"] if self.engine.name == "podman" else []) + [self.name]
        # Read-only views are unmounted before anything is removed.
        self.guard = subprocess.Popen(["sh", "-c", 'd=$1; shift; read _; for i in 1 2 3 4 5; do "$@" >/dev/null 2>&1'
                                       ' && break; sleep 1; done; for m in "$d"/ro/*; do [ -e "$m" ] &&'
                                       ' umount -l -- "$m"; done 2>/dev/null; rm -rf -- "$d"',
                                       "guard", str(self.dir), *rm],
                                      stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                      env=env, start_new_session=True, close_fds=True)
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     env=env, close_fds=True, bufsize=0)
        self.shell = ShellSession(self.proc.stdin.fileno(), self.proc.stdout.fileno(), self.nonce,
                                  kill_children=self._kill_children, kill_shell=self._kill_shell,
                                  limit=spec.limits.output_bytes, alive=lambda: self.proc.poll() is None)
        try:
            self.shell.start(timeout=120.0)
        except SandboxError:
            self.engine.known_images.discard(image)  # re-check next time (removed behind our back?)
            raise

    def _make_ro_views(self) -> None:
        """Idmapped views of the read-only binds (``<dir>/ro/<n>``, in the host's mount namespace), so
        that the sandbox sees their plain owners (host root is its root), as in a native sandbox: a
        read-only bind that only root may read (a verifier's tests) stays readable. Read-only, nosuid
        and nodev; never used for a writable bind (writes through it would land as host root)."""
        userns = identity.new_userns()
        try:
            for i, b in enumerate(self.spec.binds):
                if not b.readonly:
                    continue
                view = self.dir / "ro" / str(i)
                view.parent.mkdir(exist_ok=True)
                if os.path.isdir(b.source):
                    view.mkdir()
                else:
                    view.touch()
                try:
                    tree = kernel.idmapped_tree(b.source, userns, readonly=True)
                    try:
                        kernel.attach(tree, str(view))
                    finally:
                        os.close(tree)
                except OSError as e:
                    raise SandboxError(f"read-only bind {b.source}: no idmapped view: {e}") from None
                self.ro_views[i] = str(view)
        finally:
            os.close(userns)

    def _drop_ro_views(self) -> list[str]:
        """Unmount the read-only views; the errors (the views still mounted stay listed)."""
        errors = []
        for i, view in list(self.ro_views.items()):
            if kernel.libc.umount2(view.encode(), MNT_DETACH) != 0:
                err = ctypes.get_errno()
                if err not in (errno.EINVAL, errno.ENOENT):  # EINVAL: not (or no longer) a mount point
                    errors.append(f"unmounting {view}: {os.strerror(err)}")
                    continue
            del self.ro_views[i]
        return errors

    def _argv(self, image: str) -> list[str]:
        spec, lim = self.spec, self.spec.limits
        eng = self.engine.name
        argv = [eng, "run", "-i", "--name", self.name, "--label", LABEL, "--pull", "never",
                "--hostname", spec.hostname,
                "--memory", f"{lim.memory_mb}m", "--memory-swap", f"{lim.memory_mb}m",
                "--pids-limit", str(lim.max_pids),
                "--tmpfs", "/tmp:rw,exec,nosuid,nodev,mode=1777",
                "--log-driver", self.engine.log_driver()]
        # Hardening (module docstring): reduced capabilities, no_new_privs, the engine's default seccomp.
        argv += ["--cap-drop", "ALL"]
        for cap in sorted(identity.KEPT_CAPS):
            argv += ["--cap-add", identity.CAP_NAMES[cap]]
        argv += ["--security-opt", "no-new-privileges"]
        if self.engine.shifts_ids():
            base = identity.uid_base()
            argv += ["--uidmap", f"0:{base}:{identity.UID_COUNT}", "--gidmap", f"0:{base}:{identity.UID_COUNT}"]
        if not spec.network:
            argv += ["--network", "none"]
        elif eng == "podman":
            argv += ["--network", "slirp4netns:allow_host_loopback=false"]
        # docker online: its default bridge (never --network host).
        # Every ulimit explicitly (see the module docstring), within the host's hard limits.
        nofile = _hard_limit(resource.RLIMIT_NOFILE, lim.open_files)
        # 4096 as in containers.conf: podman lowers its own hard NPROC (to 32768) before runc sets
        # the container's, and root, which sandboxes run as, is exempt from RLIMIT_NPROC anyway.
        nproc = _hard_limit(resource.RLIMIT_NPROC, 4096)
        fsize = _hard_limit(resource.RLIMIT_FSIZE, lim.file_size_mb << 20)
        argv += ["--ulimit", f"nofile={nofile}:{nofile}", "--ulimit", f"nproc={nproc}:{nproc}",
                 "--ulimit", f"fsize={fsize}:{fsize}"]
        if lim.cpu_seconds:
            cpu = _hard_limit(resource.RLIMIT_CPU, lim.cpu_seconds)
            argv += ["--ulimit", f"cpu={cpu}:{cpu}"]
        # podman: binds nosuid and nodev, as the native backends' (docker's -v has no such options;
        # no_new_privs already makes a setuid bit powerless there).
        extra = ["nosuid", "nodev"] if eng == "podman" else []
        for src, dst in self.work.binds():
            check_bind_path(src)
            check_bind_path(dst)
            argv += ["-v", f"{src}:{dst}" + (":" + ",".join(extra) if extra else "")]
        for i, b in enumerate(spec.binds):
            src = self.ro_views.get(i, b.source)
            check_bind_path(src)
            check_bind_path(b.target)
            opts = (["ro"] if b.readonly else []) + extra
            argv += ["-v", f"{src}:{b.target}" + (":" + ",".join(opts) if opts else "")]
        for k, v in {**BASE_ENV, **spec.env}.items():
            argv += ["-e", f"{k}={v}"]
        wd = shlex.quote(spec.workdir)
        boot = f'cd -- {wd} 2>/dev/null || {{ mkdir -p -- {wd} && cd -- {wd}; }} || cd /; exec /bin/bash -c "$0"'
        return argv + [image, "/bin/bash", "-c", boot, outer_loop()]

    # -- process control ------------------------------------------------------------------------
    def _kill_tree(self, nspid: int, mode: str) -> None:
        if nspid <= 0:
            return
        with contextlib.suppress(SandboxError):
            self.engine.run("exec", self.name, "/bin/bash", "-c", KILL_TREE, "kill-tree", str(nspid), mode,
                            timeout=30, check=False)

    def _kill_children(self, nspid: int) -> None:
        self._kill_tree(nspid, "children")

    def _kill_shell(self, nspid: int) -> None:
        self._kill_tree(nspid, "shell")

    # -- protocol -------------------------------------------------------------------------------
    def exec(self, command: str, timeout: float | None = None, persistent: bool = True) -> ExecResult:
        if self.closed:
            raise SandboxError("sandbox is closed")
        return self.shell.run(command, timeout, persistent)

    def run_last(self, command: str, timeout: float | None = None) -> ExecResult:
        if self.closed:
            raise SandboxError("sandbox is closed")
        return self.shell.run_last(command, timeout, lambda wait: exit_status(self.proc, wait))

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        errors = []
        if self.proc is not None:
            err = self._remove_container()
            if err:
                errors.append(err)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            for f in (self.proc.stdin, self.proc.stdout):
                with contextlib.suppress(OSError):
                    f.close()
        # Writable binds go back once the container is gone (nothing writes there any more); if it
        # may still run, they stay with the sandbox's range, which is the safe side.
        for src in self.writable_binds if not errors else ():
            try:
                shift_out(src, self.engine.shifts_ids())
            except OSError as e:
                errors.append(f"giving back the writable bind {src}: {e}")
        self.writable_binds = []
        errors += self._drop_ro_views()  # the container has its own copy while it lives
        if self.guard is not None:
            if errors and not self.spec.keep_changes:  # let the guard try once more, on its own
                with contextlib.suppress(OSError):
                    self.guard.stdin.close()
            else:
                self.guard.kill()
                self.guard.wait()
                with contextlib.suppress(OSError):
                    self.guard.stdin.close()
        if not (self.spec.keep_changes and self.started):
            self.remove_dir()
        if errors:
            raise SandboxError(f"closing {self.engine.name} container {self.name} failed: {errors[0][-500:]}")

    def _remove_container(self) -> str:
        """``rm -f`` the container; the error, or "" once it is gone. Retried: podman 4.3's ``rm``
        races the container's own clean-up (conmon's exit command) and then fails with EBUSY on the
        container's shm or root filesystem, leaving a dead container that a second ``rm`` removes."""
        args = ["rm", "-f"] + (["-t", "0"] if self.engine.name == "podman" else []) + [self.name]
        err = ""
        for attempt in range(6):
            if attempt:
                time.sleep(0.1 * 2 ** attempt)
            try:
                r = self.engine.run(*args, check=False)
            except SandboxError as e:  # no answer in time: not a race, do not wait again
                return str(e)
            out = r.stderr.decode("utf-8", "replace").lower()
            if r.returncode == 0 or "no such container" in out or "no container with" in out:
                return ""
            err = out.strip()
        return err

    def remove_dir(self) -> None:
        if self._drop_ro_views():
            return  # never remove a tree with a view of a host directory still mounted in it
        remove_tree(self.dir)

    def export_work_areas(self, dest: Path) -> None:
        """Move the work areas' final content into ``dest`` (an overlay layer, each area opaque)."""
        if not self.closed:
            raise SandboxError("export_work_areas needs a closed sandbox")
        if self.work is None or not self.dir.exists():
            return  # keep_changes=False: nothing was kept (as with the native backends)
        self.work.export(dest)
        self.remove_dir()

    def export_changes(self, dest: Path) -> None:
        raise NotImplementedError(f"the {self.engine.name} backend cannot export a whole-filesystem change layer; "
                                  "environment setup layers are built with the native backend (bwrap or unshare)")

    def __enter__(self) -> "ContainerSandbox":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


_available: dict[str, tuple[bool, str]] = {}


class ContainerBackend:
    def __init__(self, name: str):
        self.engine = Engine(name)
        self.name = name

    def available(self) -> tuple[bool, str]:
        if self.name in _available and _available[self.name][0]:
            return _available[self.name]
        if shutil.which(self.name) is None:
            hint = " (run scripts/setup-podman.sh)" if self.name == "podman" else " (apt-get install docker.io)"
            return False, f"{self.name} not found on PATH{hint}"
        args = (["info", "--format", "{{.Version.Version}}"] if self.name == "podman"
                else ["version", "--format", "{{.Server.Version}}"])
        try:
            r = self.engine.run(*args, timeout=20, check=False)
        except SandboxError as e:
            return False, str(e)
        if r.returncode != 0:
            why = (r.stderr or r.stdout).decode("utf-8", "replace").strip().splitlines()
            msg = why[-1] if why else f"exit {r.returncode}"
            if self.name == "docker":
                msg += " (dockerd must be running)"
            return False, f"{self.name} engine does not answer: {msg}"
        _versions[self.name] = r.stdout.decode("utf-8", "replace").strip()
        _available[self.name] = (True, "")
        return True, ""

    def start(self, spec: SandboxSpec) -> ContainerSandbox:
        if spec.netns is not None or spec.hosts:
            raise SandboxError(f"{self.name} backend: SandboxSpec.netns and SandboxSpec.hosts (a network shared "
                               "with sidecars) need a native backend (bwrap or unshare)")
        if spec.allowed_hosts:  # never widened to the whole network
            raise SandboxError(f"{self.name} backend: a network allowlist (SandboxSpec.allowed_hosts) needs a native "
                               "backend (bwrap or unshare)")
        ok, why = self.available()
        if not ok:
            raise SandboxError(why)
        return ContainerSandbox(spec, self.engine)


def export_image_rootfs(engine_name: str, dest: Path, *, dockerfile: Path | None = None, context: Path | None = None,
                        image: str | None = None, tag: str = "localhost/tmax-task:latest",
                        timeout: float = IMPORT_TIMEOUT) -> None:
    """Build ``dockerfile`` in ``context`` (or take the prebuilt ``image``, pulled if missing) with the
    engine and unpack the image's filesystem into ``dest``: a root filesystem like any other image."""
    eng = Engine(engine_name)
    if dockerfile is not None:
        r = eng.run("build", "-t", tag, "-f", str(dockerfile), str(context or dockerfile.parent), timeout=timeout,
                    check=False)
        if r.returncode != 0:
            raise SandboxError(f"{dockerfile}: {engine_name} build failed (exit {r.returncode}): "
                               f"{(r.stderr or r.stdout).decode('utf-8', 'replace').strip()[-1500:]}")
        ref = tag
    else:
        ref = image or ""
        if not eng.image_exists(ref):
            eng.run("pull", ref, timeout=timeout)
    cid = eng.run("create", ref, "true").stdout.decode().strip()
    try:
        dest.mkdir(parents=True, exist_ok=True)
        exp = subprocess.Popen([eng.name, "export", cid], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env=eng.env())
        tar = subprocess.run(["tar", "-x", "--numeric-owner", "-C", str(dest)], stdin=exp.stdout,
                             stderr=subprocess.PIPE, timeout=timeout)
        exp.stdout.close()
        if exp.wait(timeout=timeout) != 0 or tar.returncode != 0:
            raise SandboxError(f"{engine_name} export of {ref} failed: "
                               f"{(exp.stderr.read() + tar.stderr).decode('utf-8', 'replace').strip()[-1500:]}")
    finally:
        eng.run("rm", "-f", cid, check=False)
