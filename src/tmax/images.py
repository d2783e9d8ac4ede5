"""Environment images: plain root filesystems that sandboxes run on, content-addressed and cached.

* A *profile* (``profiles/NAME.toml`` or any TOML path) names a Debian suite and packages; ``build``
  runs debootstrap, then pip inside the rootfs. The image lives under
  ``$TMAX_HOME/images/NAME-HASH/rootfs`` where HASH is the profile's content hash.
* ``host`` is a read-only view of the host's system directories: zero setup.
* A task's environment is an image plus the task's own ``environment/setup.sh``, run once in a
  sandbox (no network unless the task allows it) and cached as an overlay layer keyed by the
  image hash and the content of ``environment/``. The environment hash recorded in every result is
  that key. Setup may install packages (apt, pip): see ``_build_support`` for what a setup run gets
  that agents and verifiers never do.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import ssl
import stat
import subprocess
import tempfile
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tmax.sandbox import DEFAULT_BACKEND, Bind, Limits, SandboxError, SandboxSpec, get_backend, identity
from tmax.sandbox.layers import private_dir
from tmax.sandbox.paths import file_lock as _lock
from tmax.sandbox.paths import tmax_home

PROFILES_DIR = Path(__file__).parent / "profiles"
HOST_DIRS = ("usr", "etc", "bin", "sbin", "lib", "lib32", "lib64", "libx32")
SETUP_TIMEOUT = 900.0
# Where a setup run (and no other sandbox) sees tmax's build support, read-only; never in the layer.
BUILD_DIR = "/run/tmax-build"
# What clients read for extra trust anchors: pip, requests, curl, git, Python's and OpenSSL's ssl, node.
CA_VARIABLES = ("PIP_CERT", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO", "SSL_CERT_FILE",
                "NODE_EXTRA_CA_CERTS")


class ImageError(RuntimeError):
    pass


@dataclass(frozen=True)
class Environment:
    """What a sandbox runs on: layers (top first) and a content hash."""

    name: str
    layers: tuple = field(default_factory=tuple)
    hash: str = ""

    def spec(self, **kw) -> SandboxSpec:
        return SandboxSpec(layers=list(self.layers), env_hash=self.hash, **kw)


@dataclass(frozen=True)
class Profile:
    name: str
    suite: str
    variant: str
    apt: tuple[str, ...]
    pip: tuple[str, ...]
    source: Path
    hash: str


def load_profile(name_or_path: str) -> Profile:
    path = Path(name_or_path)
    if not path.suffix:
        path = PROFILES_DIR / f"{name_or_path}.toml"
    if not path.is_file():
        known = ", ".join(["host"] + sorted(p.stem for p in PROFILES_DIR.glob("*.toml")))
        raise ImageError(f"{path}: no such image profile; expected one of: {known}, or a path to a TOML file")
    raw = path.read_bytes()
    try:
        doc = tomllib.loads(raw.decode())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise ImageError(f"{path}: invalid TOML: {e}") from None
    for key, typ in (("suite", str), ("apt", list)):
        if not isinstance(doc.get(key), typ):
            raise ImageError(f"{path}: {key}: expected {typ.__name__}")
    return Profile(name=str(doc.get("name", path.stem)), suite=doc["suite"], variant=doc.get("variant", "minbase"),
                   apt=tuple(doc["apt"]), pip=tuple(doc.get("pip", [])), source=path,
                   hash=hashlib.sha256(raw).hexdigest()[:16])


# What the host image hides: password hashes (shown with every password locked), their backups,
# SSH host private keys, TLS private keys, Kerberos keytabs and old-password stores.
HOST_SANITISED = ("etc/shadow", "etc/gshadow")
HOST_HIDDEN = ("etc/shadow-", "etc/gshadow-", "etc/ssl/private", "etc/krb5.keytab", "etc/security/opasswd",
               "etc/sudoers.d")


def host_environment() -> Environment:
    """The host's system directories (HOST_DIRS), read-through and copy-on-write, under a mask
    layer that hides the host's secrets (HOST_SANITISED, HOST_HIDDEN, /etc/ssh/*_key). /root, /home,
    /var, /srv, /opt and /tmp of the host are never shown."""
    layer = {d: f"/{d}" for d in HOST_DIRS if os.path.lexists(f"/{d}")}
    h = hashlib.sha256(b"host\0")
    for f in ("/etc/os-release", "/var/lib/dpkg/status"):
        with contextlib.suppress(OSError):
            h.update(Path(f).read_bytes())
    mask = _host_mask() if os.geteuid() == 0 else None
    return Environment(name="host", layers=((mask, layer) if mask else (layer,)), hash="host-" + h.hexdigest()[:16])


def _host_mask() -> Path:
    """A small overlay layer over the host's /etc: sanitised password files and whiteouts for the
    rest; content-addressed, so a change on the host makes a new one."""
    files: dict[str, tuple[bytes, os.stat_result]] = {}
    for rel in HOST_SANITISED:
        with contextlib.suppress(OSError):
            st = os.stat(f"/{rel}")
            lines = Path(f"/{rel}").read_text(errors="replace").splitlines()
            text = "".join(":".join([p[0], "*", *p[2:]]) + "\n" for p in (ln.split(":") for ln in lines) if len(p) > 2)
            files[rel] = (text.encode(), st)
    hidden = [rel for rel in HOST_HIDDEN if os.path.lexists(f"/{rel}")]
    with contextlib.suppress(OSError):
        hidden += sorted(f"etc/ssh/{n}" for n in os.listdir("/etc/ssh") if n.endswith("_key"))
    h = hashlib.sha256(repr((sorted((k, v[0]) for k, v in files.items()), hidden)).encode()).hexdigest()[:16]
    final = tmax_home() / "host-mask" / h
    if final.exists():
        return final
    tmp = Path(tempfile.mkdtemp(prefix=".mask-", dir=_mkdir(tmax_home() / "host-mask")))
    for rel, (data, st) in files.items():
        (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp / rel).write_bytes(data)
        os.chown(tmp / rel, st.st_uid, st.st_gid)
        os.chmod(tmp / rel, st.st_mode & 0o777)
    for rel in hidden:
        (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
        os.mknod(tmp / rel, 0o600 | stat.S_IFCHR, 0)  # an overlayfs whiteout
    os.chmod(tmp, 0o755)
    try:
        os.rename(tmp, final)
    except OSError:  # another process made it first
        shutil.rmtree(tmp, ignore_errors=True)
    return final


def images_root() -> Path:
    """Where built images live: $TMAX_IMAGES, else $TMAX_HOME/images (images are big and slow to
    build, so tests point TMAX_IMAGES at the shared cache while keeping their own TMAX_HOME)."""
    return private_dir(Path(os.environ.get("TMAX_IMAGES") or tmax_home() / "images"))  # setuid files inside


def image_dir(profile: Profile) -> Path:
    return images_root() / f"{profile.name}-{profile.hash}"


def _mirror() -> str:
    """The Debian mirror apt is configured with here (debootstrap must use a reachable one)."""
    for src in [Path("/etc/apt/sources.list.d/debian.sources"), Path("/etc/apt/sources.list")]:
        if src.exists():
            for line in src.read_text().splitlines():
                parts = line.split()
                if line.startswith("URIs:") and len(parts) > 1 and "security" not in parts[1]:
                    return parts[1]
                if line.startswith("deb ") and len(parts) > 1 and "security" not in parts[1]:
                    return parts[2] if parts[1].startswith("[") else parts[1]
    return "http://deb.debian.org/debian"


def build_image(profile: Profile, log: Callable[[str], None] = print, force: bool = False) -> Path:
    """Build (or reuse) the rootfs of ``profile``. Needs root and debootstrap."""
    final = image_dir(profile)
    rootfs = final / "rootfs"
    with _lock(images_root() / ".locks" / f"{profile.name}-{profile.hash}"):
        if (final / "done").exists() and not force:
            return rootfs
        if os.geteuid() != 0:
            raise ImageError("building an image needs root (debootstrap); use --image host instead")
        if shutil.which("debootstrap") is None:
            raise ImageError("debootstrap not found; run: apt-get install -y debootstrap")
        tmp = Path(tempfile.mkdtemp(prefix=f".{profile.name}-", dir=final.parent if final.parent.exists()
                                    else _mkdir(final.parent)))
        cache = _mkdir(tmax_home() / "debootstrap-cache")
        try:
            argv = ["debootstrap", f"--variant={profile.variant}", f"--cache-dir={cache}",
                    f"--include={','.join(profile.apt)}", profile.suite, str(tmp / "rootfs"), _mirror()]
            log("$ " + " ".join(argv))
            _run_logged(argv, log)
            if profile.pip:
                _chroot_pip(tmp / "rootfs", profile.pip, log)
            # Trim what sandboxes never need.
            for junk in ("var/cache/apt/archives", "var/lib/apt/lists"):
                shutil.rmtree(tmp / "rootfs" / junk, ignore_errors=True)
            (tmp / "rootfs" / "app").mkdir(exist_ok=True)
            (tmp / "profile.toml").write_bytes(profile.source.read_bytes())
            if final.exists():
                shutil.rmtree(final)
            os.rename(tmp, final)
            (final / "done").write_text(profile.hash + "\n")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return rootfs


def _mkdir(p: Path) -> Path:
    p.mkdir(parents=True, exist_ok=True)
    return p


def _run_logged(argv: list[str], log: Callable[[str], None]) -> None:
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    tail: list[str] = []
    for line in proc.stdout:
        tail = (tail + [line.rstrip()])[-40:]
        if line.startswith(("I: Retrieving", "I: Validating", "I: Extracting", "I: Unpacking", "I: Configuring")):
            continue  # too chatty
        log(line.rstrip())
    if proc.wait() != 0:
        raise ImageError(f"{argv[0]} failed (exit {proc.returncode}):\n" + "\n".join(tail))


def _chroot_pip(rootfs: Path, packages: tuple[str, ...], log: Callable[[str], None]) -> None:
    shutil.copy("/etc/resolv.conf", rootfs / "etc" / "resolv.conf")
    script = (f"mount -t proc proc {rootfs}/proc && mount --rbind /dev {rootfs}/dev && "
              f"chroot {rootfs} python3 -m pip install --break-system-packages --no-cache-dir "
              + " ".join(packages))
    _run_logged(["unshare", "--mount", "--propagation", "private", "sh", "-c", script], log)


def get_environment(name: str, build: bool = True, log: Callable[[str], None] = print) -> Environment:
    """The base environment for an image name: ``host`` or a profile (built on first use)."""
    if name == "host":
        return host_environment()
    profile = load_profile(name)
    d = image_dir(profile)
    if not (d / "done").exists():
        if not build:
            raise ImageError(f"image {profile.name!r} is not built; run: tmax image build {name}")
        build_image(profile, log)
    return Environment(name=profile.name, layers=(d / "rootfs",), hash=f"{profile.name}-{profile.hash}")


def environment_key(task, image: str | None = None) -> str:
    """The environment hash of a task without building it: image hash + setup content hash."""
    if task.metadata.get("environment"):
        return _container_key(task)
    name = image or task.image
    base = host_environment().hash if name == "host" else f"{load_profile(name).name}-{load_profile(name).hash}"
    if task.setup_script is None:
        return base
    return f"{base}+" + hashlib.sha256(f"{base}\0{task.environment_digest()}".encode()).hexdigest()[:20]


def _container_key(task) -> str:
    seed = f"{task.metadata.get('environment')}\0{task.metadata.get('docker_image', '')}\0{task.environment_digest()}"
    return "container-" + hashlib.sha256(seed.encode()).hexdigest()[:20]


def container_environment(task) -> Environment:
    """The environment of a task that keeps its own Dockerfile (``metadata.environment = "dockerfile"``)
    or names a prebuilt image (``"image"``, ``metadata.docker_image``): built once by podman or docker,
    unpacked into a root filesystem and cached like a profile image, so every backend can run it."""
    from tmax.sandbox.container import ContainerBackend, export_image_rootfs

    kind = task.metadata.get("environment")
    dockerfile = task.path / "environment" / "Dockerfile"
    if kind not in ("dockerfile", "image"):
        raise ImageError(f"{task.path / 'task.toml'}: metadata.environment: {kind!r} cannot be built; expected "
                         "'dockerfile' or 'image' (compose environments are not supported)")
    key = _container_key(task)
    final = images_root() / key
    env = Environment(name=f"{key}", layers=(final / "rootfs",), hash=key)
    with _lock(images_root() / ".locks" / key):
        if (final / "done").exists():
            return env
        engines = [e for e in ("podman", "docker") if ContainerBackend(e).available()[0]]
        if not engines:
            raise ImageError(f"{dockerfile if kind == 'dockerfile' else task.path / 'task.toml'}: building this "
                             "environment needs podman or docker, and neither answers here")
        tmp = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=_mkdir(images_root())))
        try:
            export_image_rootfs(engines[0], tmp / "rootfs", dockerfile=dockerfile if kind == "dockerfile" else None,
                                context=dockerfile.parent, image=task.metadata.get("docker_image"),
                                tag=f"localhost/tmax-task:{key}")
            (tmp / "rootfs" / "app").mkdir(exist_ok=True)
            shutil.rmtree(final, ignore_errors=True)
            os.rename(tmp, final)
            (final / "done").write_text(key + "\n")
        except SandboxError as e:
            raise ImageError(str(e)) from None
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return env


def task_environment(task, backend: str = DEFAULT_BACKEND, image: str | None = None,
                     log: Callable[[str], None] = lambda s: None) -> Environment:
    """The environment a task runs on: its image plus its setup layer (built once, cached)."""
    if task.metadata.get("environment"):
        return container_environment(task)
    base = get_environment(image or task.image, log=log)
    if task.setup_script is None:
        return base
    key = hashlib.sha256(f"{base.hash}\0{task.environment_digest()}".encode()).hexdigest()[:20]
    layer = private_dir(tmax_home() / "layers") / key  # layers keep setuid bits: root only
    env = Environment(name=f"{base.name}+{task.name}", layers=(layer, *base.layers), hash=f"{base.hash}+{key}")
    if (layer / ".tmax-done").exists():
        return env
    with _lock(tmax_home() / "locks" / f"layer-{key}"):
        if (layer / ".tmax-done").exists():
            return env
        sb = _run_setup(task, base, backend)
        tmp = layer.with_name(layer.name + f".tmp{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        layer.parent.mkdir(parents=True, exist_ok=True)
        sb.export_changes(tmp)
        with contextlib.suppress(OSError):  # the empty mount point of BUILD_DIR is no part of the task
            (tmp / BUILD_DIR.lstrip("/")).rmdir()
        (tmp / ".tmax-done").write_text(key + "\n")
        shutil.rmtree(layer, ignore_errors=True)
        os.rename(tmp, layer)
    return env


def _run_setup(task, base: Environment, backend: str):
    """Run the task's setup script once in a sandbox that keeps its changes; returns it closed, its
    changes ready to export. A failing script is the task's fault (ImageError)."""
    res = task.resources
    support = Path(tempfile.mkdtemp(prefix="build-", dir=_mkdir(tmax_home() / "build")))
    try:
        build_env = _build_support(support, network=task.build_network)
        # What setup writes lives on the sandbox's tmpfs, i.e. in memory: room for both.
        spec = base.spec(workdir="/app", work_areas=task.work_areas, network=task.build_network,
                         binds=[Bind(str(task.environment_dir.resolve()), "/environment", readonly=True),
                                Bind(str(support), BUILD_DIR, readonly=True)],
                         limits=Limits(memory_mb=res.memory_mb + res.storage_mb, storage_mb=res.storage_mb,
                                       max_pids=2048),
                         env=build_env, keep_changes=True)
        sb = get_backend(backend if backend in ("bwrap", "unshare") else "bwrap").start(spec)
        try:
            r = sb.exec(f"bash /environment/{Path(task.setup_script).name}", timeout=SETUP_TIMEOUT)
        finally:
            sb.close()
    finally:
        shutil.rmtree(support, ignore_errors=True)
    if r.exit_code != 0 or r.timed_out:
        shutil.rmtree(sb.dir, ignore_errors=True)
        why = "timed out" if r.timed_out else f"exit {r.exit_code}"
        raise ImageError(f"{task.path / task.setup_script}: setup failed ({why}): {r.output[-1500:]}")
    return sb


def _build_support(dest: Path, network: bool) -> dict[str, str]:
    """Fill ``dest`` (shown at BUILD_DIR) with what package managers need to install in a setup run,
    and return the run's extra environment. Only the task author's setup gets this; the agent's and
    the verifier's sandboxes stay as they are.

    * apt reads ``apt.conf`` (APT_CONFIG; apt.conf.d is still read): no pty for dpkg's log (the
      unshare backend has no /dev/pts) and, when only one uid is mapped (tmax is not root), no
      switch to the ``_apt`` user, which that namespace cannot do (setgroups is denied there, and
      root inside is the invoking user anyway). As root, apt keeps its own privilege separation.
    * pip installs into the image's Python (PEP 668 guards a system that here is the throwaway
      image) and keeps no cache (it would land in the layer).
    * With network, the host's CA bundle: setup reaches the network the host is on, which may
      inspect TLS with an authority of its own. The image's trust store is not changed.
    """
    apt = ['Dpkg::Use-Pty "false";']
    if not identity.shifted():
        apt.append('APT::Sandbox::User "root";')
    env = {"APT_CONFIG": f"{BUILD_DIR}/apt.conf", "PIP_BREAK_SYSTEM_PACKAGES": "1", "PIP_NO_CACHE_DIR": "1",
           "PIP_ROOT_USER_ACTION": "ignore"}
    cafile = ssl.get_default_verify_paths().cafile if network else None
    if cafile:
        shutil.copyfile(cafile, dest / "ca-certificates.crt")
        ca = f"{BUILD_DIR}/ca-certificates.crt"
        apt.append(f'Acquire::https::CAInfo "{ca}";')
        env.update(dict.fromkeys(CA_VARIABLES, ca))
    (dest / "apt.conf").write_text("\n".join(apt) + "\n")
    for f in dest.iterdir():
        f.chmod(0o644)
    dest.chmod(0o755)  # readable by apt's _apt user too
    return env
