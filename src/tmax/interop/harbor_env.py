"""tmax's sandbox as a Harbor environment: Harbor trials without a container engine::

    harbor run -p TASKS -a oracle -e tmax.interop.harbor_env:TmaxEnvironment [--ek backend=unshare]

Each trial runs in a tmax sandbox (bubblewrap; ``--ek backend=unshare`` or ``TMAX_HARBOR_BACKEND``
picks unshare). ``environment/Dockerfile`` becomes a tmax environment: one that tmax rendered
(``tmax export``) restores its image profile and ``setup.sh``; any other is translated onto the
``default`` image by :func:`tmax.interop.dockerfile.translate`, or refused with the reasons. The
setup runs once and is cached as a layer keyed by content (:func:`tmax.images.task_environment`).
Prebuilt images without a Dockerfile and docker-compose environments need a container engine: refused.

Network: ``no-network`` has none, ``public`` gets tmax's user-mode NAT; an allowlist cannot be
enforced, so the capability is not claimed and Harbor refuses it. Memory and storage are hard limits
(the writable layer is memory-backed, so what a trial writes counts against memory too, as in tmax's
own trials); CPUs are not limited.

Nothing of the host is writable from inside, so the storage limit holds and the sandbox never
writes a host file. Uploads are staged by the host in an *inbox* that the sandbox sees read-only,
then copied in place inside. Downloads are packed inside (a copy of the file, or a tar of the
directory, on the sandbox's own storage) and come back base64-encoded in exec output, in chunks; the
host unpacks them below the target through :mod:`tmax.safe_files`, so a link that the sandbox
planted never leads a write out of the target directory. Log directories are downloaded, never
bind-mounted (``mounted`` is not claimed): the trial's directories on the host are the host's alone.

``exec`` interleaves stderr into ``stdout`` (``stderr`` is None) and raises on a timeout, as Harbor's
Docker environment does; output past 1 MiB keeps its first and last halves, and what a command
leaves running writes to that command's output, never a later one's. Commands run one at a time (one
shell per sandbox); a cancelled one is killed within :data:`CANCEL_POLL_SEC`, so the next (the
verifier after an agent timeout) runs at once.

Needs Harbor (PyPI ``harbor``, Python >= 3.12): ``bash scripts/harbor_venv.sh`` makes tmax importable there.
One module (a little over 500 lines) because it is what ``-e`` names: the Dockerfile's environment,
the file transfers and commands, then the environment class that joins them.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import os
import re
import shlex
import shutil
import tarfile
import tempfile
import threading
import uuid
from pathlib import Path, PurePosixPath
from typing import Any

try:
    from harbor.environments.base import BaseEnvironment, ExecResult, SandboxBuildFailedError
    from harbor.environments.capabilities import EnvironmentCapabilities, EnvironmentResourceCapabilities
    from harbor.environments.options import EnvironmentOptions
    from harbor.models.task.config import NetworkMode
    from harbor.models.trial.paths import EnvironmentPaths
    from pydantic import Field
except ImportError as _e:  # the module is Harbor's plug-in: without Harbor there is nothing to plug into
    raise ImportError("tmax.interop.harbor_env needs Harbor (PyPI `harbor`, Python >= 3.12); run "
                      f"`bash scripts/harbor_venv.sh` and use its python: {_e}") from _e

from tmax.images import Environment, ImageError, task_environment
from tmax.interop.dockerfile import Translation, instructions, render, tmax_image_of, translate
from tmax.interop.importer import COMPOSE_FILES, compose_services
from tmax.safe_files import UnsafeFile, check_rel, copy_file, copy_tree, make_dir, make_symlink, write_file
from tmax.sandbox import DEFAULT_BACKEND, Bind, Limits, get_backend
from tmax.sandbox.paths import run_dir
from tmax.task import Resources, Sidecar, Task, TaskError
from tmax.trial import detached, start_sidecars

BACKEND_ENV = "TMAX_HARBOR_BACKEND"
BACKENDS = ("bwrap", "unshare")
INBOX = PurePosixPath("/.tmax-inbox")  # inside the sandbox, read-only: uploads and cancel flags
TRANSLATED_SETUP = "tmax-dockerfile-setup.sh"  # the translated Dockerfile, next to the build context
TRANSFER_TIMEOUT_SEC = 600
CANCEL_POLL_SEC = 0.2
CHUNK_BYTES = 512 << 10  # per exec of a download: its base64 stays well inside the 1 MiB of output kept
CLOSE_WAIT_SEC = 5.0
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_USER = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*(:[A-Za-z0-9_][A-Za-z0-9_.-]*)?")


class TmaxEnvironmentOptions(EnvironmentOptions):
    """``--ek key=value`` options of the tmax environment."""

    backend: str | None = Field(default=None, description=f"Sandbox backend: bwrap (default) or unshare; "
                                                          f"${BACKEND_ENV} sets the default.")


# -- the environment a Dockerfile stands for ---------------------------------------------------

def _read_dockerfile(dockerfile: Path) -> str:
    try:
        return dockerfile.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise SandboxBuildFailedError(f"{dockerfile}: cannot read ({e}); expected a UTF-8 Dockerfile") from None


def setup_plan(environment_dir: Path) -> tuple[str, str | None, Translation | None]:
    """(image profile, setup script name inside environment/, the translation when it must be
    written) for the Dockerfile in ``environment_dir``; one that does not translate is refused. The
    build has the network, as ``docker build`` does."""
    dockerfile = environment_dir / "Dockerfile"
    text = _read_dockerfile(dockerfile)
    profile = tmax_image_of(text)
    if profile is not None and _rendered_by_tmax(profile, text):
        return profile, ("setup.sh" if (environment_dir / "setup.sh").is_file() else None), None
    tr = translate(text, environment_dir, True)
    if not tr.ok:
        raise SandboxBuildFailedError(
            f"{dockerfile}: does not translate to tmax's default image: {'; '.join(tr.reasons)}. Run this task "
            "with a container engine (-e docker or -e podman) or simplify its Dockerfile")
    if os.path.lexists(environment_dir / TRANSLATED_SETUP):
        raise SandboxBuildFailedError(f"{environment_dir / TRANSLATED_SETUP}: exists; expected the name free for "
                                      "the translated Dockerfile")
    return "default", TRANSLATED_SETUP, tr


def dockerfile_workdir(text: str) -> str:
    """Where a container of this Dockerfile starts: its last stage's WORKDIR, else /."""
    workdir = PurePosixPath("/")
    for keyword, args in instructions(text):
        if keyword == "FROM":
            workdir = PurePosixPath("/")
        elif keyword == "WORKDIR" and args.strip("\"'"):
            workdir = workdir / args.strip("\"'")  # an absolute WORKDIR replaces, a relative one goes below
    return os.path.normpath(str(workdir))


def _rendered_by_tmax(profile: str, text: str) -> bool:
    try:
        return render(profile, ".") == text
    except ImageError:  # names a profile this checkout does not have: a foreign Dockerfile
        return False


def build_environment(environment_dir: Path, name: str, resources: Resources,
                      backend: str = DEFAULT_BACKEND) -> tuple[Environment, Translation | None]:
    """The tmax environment of a Harbor ``environment/`` directory (its image plus its setup layer,
    built once in a sandbox and cached by content), and the Dockerfile's translation."""
    profile, setup_name, tr = setup_plan(environment_dir)
    with tempfile.TemporaryDirectory(prefix="harbor-env-", dir=run_dir()) as stage:
        # The build context is anyone's: copied without following links out of it, no special files.
        copy_tree(environment_dir, stage, "environment", skip={"Dockerfile"})
        make_dir(stage, "environment")
        if tr is not None:
            write_file(stage, f"environment/{setup_name}", tr.setup.encode(), 0o755)
        task = Task(path=Path(stage), name=name, instruction="", resources=resources,
                    metadata={"image": profile, "build_network": bool(tr and tr.fetches)},
                    setup_script=f"environment/{setup_name}" if setup_name else None)
        return task_environment(task, backend=backend), tr


def compose_sidecars(environment_dir: Path, stage: Path) -> tuple[tuple[Sidecar, ...], dict[str, str]]:
    """The sidecars of ``environment_dir/docker-compose.yaml`` (their setups written under ``stage``),
    and the main service's environment; what tmax cannot carry is refused, naming it."""
    compose = next((environment_dir / n for n in COMPOSE_FILES if (environment_dir / n).is_file()), None)
    if compose is None:
        return (), {}
    dropped: list[str] = []
    raw, main_env = compose_services(compose, environment_dir, stage, dropped)
    if dropped:
        raise SandboxBuildFailedError(f"{compose}: " + "; ".join(dropped) + ". Run this task with a container "
                                      "engine (-e docker or -e podman)")
    return tuple(Sidecar(name=d["name"], env_dir=d["env_dir"], command=d["command"], env=d["env"],
                         ports=tuple(d["ports"]), healthcheck=d.get("healthcheck"), workdir=d["workdir"])
                 for d in raw), main_env


# -- files between the host and the sandbox ----------------------------------------------------

class Inbox:
    """A host directory private to one environment that its sandbox sees read-only at INBOX: only
    the host writes it (staged uploads, cancel flags)."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="harbor-inbox-", dir=run_dir()))

    def bind(self) -> Bind:
        return Bind(str(self.root), str(INBOX), readonly=True)

    @staticmethod
    def inside(name: str) -> str:
        return str(INBOX / name)

    def stage(self, source: Path) -> str:
        """Copy a host file or directory into the inbox; returns its name there."""
        name = uuid.uuid4().hex
        if source.is_dir():
            shutil.copytree(source, self.root / name, symlinks=True)
        else:
            shutil.copy2(source, self.root / name)
        return name

    def unstage(self, name: str) -> None:
        path = self.root / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def pack_script(source: str, is_dir: bool) -> str:
    """Inside: copy a file (or tar a directory) to a private file on the sandbox's storage, print
    ``SIZE PATH`` and the first chunk in base64; the file goes at once when that was all of it."""
    q = shlex.quote(source)
    pack = f"tar -C {q} -cf \"$f\" ." if is_dir else \
        f"if [ -f {q} ]; then cp -- {q} \"$f\"; else echo {shlex.quote(source + ': not a regular file')} >&2; false; fi"
    return (f"f=$(mktemp /tmp/.tmax-download.XXXXXX) && {{ {pack} || {{ rm -f -- \"$f\"; exit 1; }}; }} && "
            f"n=$(stat -c %s -- \"$f\") && echo \"$n $f\" && {chunk_script('$f', 0)}"
            f"; if [ \"$n\" -le {CHUNK_BYTES} ]; then rm -f -- \"$f\"; fi")


def chunk_script(path: str, index: int, last: bool = False) -> str:
    """Inside: chunk ``index`` of ``path`` (``$f``: the shell variable) in base64, removing the file
    after the last one."""
    quoted = '"$f"' if path == "$f" else shlex.quote(path)
    read = f"dd if={quoted} bs={CHUNK_BYTES} skip={index} count=1 iflag=fullblock status=none | base64 -w0"
    return read + (f"; rm -f -- {quoted}" if last else "")


def decode_chunk(text: str, what: str) -> bytes:
    try:
        return base64.b64decode(text.strip(), validate=True)
    except binascii.Error:
        raise RuntimeError(f"tmax environment: download of {what}: the sandbox sent a corrupted chunk "
                           "(not base64)") from None


def extract_tar(archive: Path, target: Path, max_bytes: int, warn) -> None:
    """Unpack a tar that the sandbox packed into ``target``: directories, regular files (hard links as
    copies) and symlinks that stay inside ``target``; FIFOs, devices and links that leave are
    skipped with a warning. Paths are checked, and every write goes through :mod:`tmax.safe_files`
    (no component of the way is a symlink, an existing file is replaced, never written through)."""
    target.mkdir(parents=True, exist_ok=True)
    with tarfile.open(archive, "r:") as tf, tempfile.TemporaryDirectory(prefix="harbor-member-") as scratch:
        for member in tf:
            rel = member.name.removeprefix("./").rstrip("/")
            if rel in ("", "."):
                continue
            check_rel(rel, f"{archive}: {member.name}")
            if member.isdir():
                make_dir(target, rel)
            elif member.isfile() or member.islnk():
                _extract_file(tf, member, Path(scratch), target, rel, max_bytes)
            elif member.issym():
                try:
                    make_symlink(target, rel, member.linkname)  # only a link that stays inside target
                except UnsafeFile as e:
                    warn(f"skipped symlink {rel}: {e.message}")
            else:
                warn(f"skipped {rel}: not a regular file, directory or symlink")


def _extract_file(tf: tarfile.TarFile, member: tarfile.TarInfo, scratch: Path, target: Path, rel: str,
                  max_bytes: int) -> None:
    src = tf.extractfile(member)
    if src is None:  # a hard link to a member that is not in the archive
        raise UnsafeFile(rel, f"hard link to {member.linkname!r}, which the archive lacks; expected its file")
    tmp = scratch / "member"
    with src, open(tmp, "wb") as out:
        shutil.copyfileobj(src, out)
    os.chmod(tmp, member.mode & 0o777)
    try:
        copy_file(tmp, target, rel, replace=True, max_bytes=max_bytes)
    finally:
        tmp.unlink()


# -- commands --------------------------------------------------------------------------------

def as_user(user: str | int | None) -> list[str]:
    """The argv prefix that runs a command as ``user`` ("name", "name:group", a uid or "uid:gid")."""
    if user is None or str(user) in ("root", "0", "root:root", "0:0"):
        return []
    text = str(user)
    if not _USER.fullmatch(text):
        raise ValueError(f"exec user {user!r}: expected a user name or uid, optionally ':group'")
    name, _, group = text.partition(":")
    if name.isdigit():
        gid = group or name
        if not gid.isdigit():
            raise ValueError(f"exec user {user!r}: a numeric uid needs a numeric gid")
        return ["setpriv", f"--reuid={name}", f"--regid={gid}", "--clear-groups", "--"]
    return ["runuser", "-u", name, *(["-g", group] if group else []), "--"]


def command_script(command: str, cwd: str, env: dict[str, str], user: str | int | None, cancel_flag: str) -> str:
    """The bash program one exec runs: ``command`` under ``bash -c`` in ``cwd`` with ``env``, as
    ``user``, in a process group of its own that a watchdog kills once ``cancel_flag`` exists. Its
    output goes to a file of its own, printed when it ends: what it leaves running writes there, not
    into the shell's pipe, which every later command's output shares."""
    lines = []
    for key, value in env.items():
        if not _ENV_NAME.fullmatch(key):
            raise ValueError(f"exec env: {key!r} is not a variable name; expected [A-Za-z_][A-Za-z0-9_]*")
        lines.append(f"export {key}={shlex.quote(value)}")
    argv = " ".join(shlex.quote(a) for a in [*as_user(user), "bash", "-c", command])
    flag = shlex.quote(cancel_flag)
    lines += [f"cd {shlex.quote(cwd)} || exit 1",
              "__tmax_o=$(mktemp /tmp/.tmax-output.XXXXXX 2>/dev/null) || __tmax_o=/dev/stdout",  # storage full
              f"setsid -w {argv} > \"$__tmax_o\" 2>&1 & __tmax_c=$!",
              f"( exec >/dev/null 2>&1; while sleep {CANCEL_POLL_SEC}; do if [ -e {flag} ]; then "
              "kill -KILL -- -$__tmax_c $__tmax_c; exit; fi; done ) & __tmax_w=$!",
              "wait $__tmax_c; __tmax_rc=$?; kill $__tmax_w 2>/dev/null",
              'if [ "$__tmax_o" != /dev/stdout ]; then cat -- "$__tmax_o"; rm -f -- "$__tmax_o"; fi',
              "exit $__tmax_rc"]
    return "\n".join(lines)


class _Job:
    """One command on its way through the sandbox's shell, cancellable from the event loop."""

    def __init__(self, inbox: Inbox):
        self.name = f".cancel-{uuid.uuid4().hex}"
        self.flag = inbox.root / self.name
        self.cancelled = threading.Event()

    def cancel(self) -> None:
        self.cancelled.set()
        try:
            self.flag.touch()
        except FileNotFoundError:  # the environment stopped: its sandbox is gone with the command
            pass

    def done(self) -> None:
        self.flag.unlink(missing_ok=True)


# -- Harbor's environment --------------------------------------------------------------------

class TmaxEnvironment(BaseEnvironment):
    """A Harbor environment that runs each trial in a tmax sandbox."""

    options_model = TmaxEnvironmentOptions
    options: TmaxEnvironmentOptions

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.backend = self.options.backend or os.environ.get(BACKEND_ENV) or DEFAULT_BACKEND
        if self.backend not in BACKENDS:
            raise ValueError(f"backend {self.backend!r} (--ek backend or ${BACKEND_ENV}): expected one of "
                             f"{', '.join(BACKENDS)}")
        self._sandbox = None
        self._inbox: Inbox | None = None
        self._shell_lock = threading.Lock()  # one command at a time in the sandbox's shell
        self._jobs: set[_Job] = set()
        self._workdir = "/"  # the Dockerfile's WORKDIR (or the task's workdir), set by start
        self._stack = contextlib.ExitStack()  # the compose sidecars and their network

    @staticmethod
    def type() -> str:
        return "tmax"

    @property
    def capabilities(self) -> EnvironmentCapabilities:
        # Policies change while the sandbox runs (Sandbox.set_egress); allowlists are enforced by name.
        return EnvironmentCapabilities(disable_internet=True, dynamic_network_policy=True, network_allowlist=True,
                                       network_allowlist_hostnames=True, network_allowlist_wildcard_hostnames=True,
                                       network_allowlist_ipv4_addresses=True, network_allowlist_ipv4_cidrs=True)

    @classmethod
    def resource_capabilities(cls) -> EnvironmentResourceCapabilities:
        # CPUs are accepted (fractional too) but not limited; memory is a hard limit.
        return EnvironmentResourceCapabilities(memory_limit=True, fractional_cpus=True)

    @classmethod
    def preflight(cls, kwargs: dict[str, Any] | None = None) -> None:
        options = cls.parse_options(kwargs)
        backend = getattr(options, "backend", None) or os.environ.get(BACKEND_ENV) or DEFAULT_BACKEND
        if backend in BACKENDS:
            ok, why = get_backend(backend).available()
            if not ok:
                raise SystemExit(f"tmax environment: the {backend} backend cannot run here: {why}")

    def _validate_definition(self) -> None:
        env_dir = self.environment_dir
        if (env_dir / "Dockerfile").is_file():
            return
        if self.task_env_config.docker_image:
            raise ValueError(f"{env_dir}: prebuilt image {self.task_env_config.docker_image!r} without a Dockerfile: "
                             "tmax builds environments from environment/Dockerfile only; run this task with "
                             "-e docker or -e podman")
        raise FileNotFoundError(f"{env_dir / 'Dockerfile'}: missing; expected the task's environment definition")

    # -- lifecycle ----------------------------------------------------------------------------
    @property
    def _resources(self) -> Resources:
        cfg = self.task_env_config
        return Resources(cpus=float(cfg.cpus or 1), memory_mb=self._effective_memory_mb or Limits.memory_mb,
                         storage_mb=cfg.storage_mb or Limits.storage_mb,
                         allow_internet=self.network_policy.network_mode == NetworkMode.PUBLIC)

    async def start(self, force_build: bool) -> None:
        # force_build has nothing to rebuild: setup layers are keyed by their content.
        res = self._resources
        stage = Path(tempfile.mkdtemp(prefix="harbor-sidecars-", dir=run_dir()))
        self._stack.callback(shutil.rmtree, stage, True)
        try:
            environment, tr = await asyncio.to_thread(build_environment, self.environment_dir,
                                                      self.environment_name, res, self.backend)
            sidecars, main_env = compose_sidecars(self.environment_dir, stage)
            if sidecars and len({(p.network_mode, tuple(p.allowed_hosts)) for p in self._policies()}) > 1:
                raise SandboxBuildFailedError(f"{self.environment_dir}: compose sidecars share one network, and "
                                              "this task asks for different network policies per phase")
            if sidecars and self.network_policy.network_mode == NetworkMode.ALLOWLIST:
                raise SandboxBuildFailedError(f"{self.environment_dir}: an allowlist beside compose sidecars is "
                                              "not supported; run this task with -e docker")
            net = await asyncio.to_thread(start_sidecars, sidecars, stage, Limits(memory_mb=res.memory_mb),
                                          self._online(), self.backend, self._stack)
        except (ImageError, TaskError) as e:  # the task's environment is at fault: retrying cannot help
            self._stack.close()
            raise SandboxBuildFailedError(str(e)) from None
        except BaseException:
            self._stack.close()
            raise
        self._workdir = self.task_env_config.workdir or dockerfile_workdir(
            _read_dockerfile(self.environment_dir / "Dockerfile"))
        user_binds = [self._bind(m) for m in self._host_mounts]
        self._inbox = Inbox()
        spec = environment.spec(workdir="/app", work_areas=("/app",), binds=[self._inbox.bind(), *user_binds],
                                limits=Limits(memory_mb=res.memory_mb, storage_mb=res.storage_mb),
                                env={**(tr.env if tr else {}), **main_env},
                                hostname=re.sub(r"[^A-Za-z0-9-]", "-", self.environment_name)[:63] or "sandbox",
                                **(net or {"network": self._online()}))
        try:
            self._sandbox = await asyncio.to_thread(get_backend(self.backend).start, spec)
        except BaseException:
            self._inbox.close()
            self._inbox = None
            self._stack.close()
            raise
        if not net and self._online():
            await self._apply_network_policy(self.network_policy)
        if tr is not None and tr.service:  # what Harbor's containers run: the ENTRYPOINT, kept alive
            await self._run_root(f"cd {shlex.quote(self._workdir)} 2>/dev/null; {detached(tr.service)}")
        paths = EnvironmentPaths.for_os(self.os)
        dirs = [paths.agent_dir, paths.verifier_dir, paths.artifacts_dir, *self._mount_targets(writable_only=True)]
        await self.ensure_dirs(dirs)
        result = await self._run_root(f"mkdir -p -- {shlex.quote(self._workdir)}")
        self._check(result, f"create the working directory {self._workdir}")

    def _policies(self) -> list:
        return [self.network_policy, *self._phase_network_policies]

    def _online(self) -> bool:
        """Whether any phase reaches the network: then the sandbox starts online and each policy is
        applied by rules in its namespace."""
        return any(p.network_mode != NetworkMode.NO_NETWORK for p in self._policies())

    async def _apply_network_policy(self, network_policy) -> None:
        sandbox = self._sandbox
        if sandbox is None:
            return  # not started: start() applies the policy
        if getattr(sandbox, "net", None) is None:
            if network_policy.network_mode == NetworkMode.NO_NETWORK:
                return
            raise ValueError(f"{self.environment_dir}: this sandbox has no network to open (compose sidecars, or "
                             "every phase asked for none at start)")
        await asyncio.to_thread(sandbox.set_egress, network_policy.network_mode.value,
                                tuple(network_policy.allowed_hosts))

    @staticmethod
    def _bind(mount: dict) -> Bind:
        if mount.get("type") != "bind":
            raise ValueError(f"mount {mount}: type {mount.get('type')!r}; the tmax environment binds host "
                             "directories only (type 'bind')")
        return Bind(str(Path(mount["source"]).resolve()), str(mount["target"]), readonly=bool(mount.get("read_only")))

    async def stop(self, delete: bool) -> None:
        sandbox, self._sandbox = self._sandbox, None
        inbox, self._inbox = self._inbox, None
        for job in list(self._jobs):
            job.cancel()
        if sandbox is not None:
            await asyncio.to_thread(self._close, sandbox)
        if inbox is not None:
            inbox.close()
        await asyncio.to_thread(self._stack.close)

    def _close(self, sandbox) -> None:
        # A cancelled command dies within CANCEL_POLL_SEC; past the wait, close anyway (it kills all).
        got = self._shell_lock.acquire(timeout=CLOSE_WAIT_SEC)
        try:
            sandbox.close()
        finally:
            if got:
                self._shell_lock.release()

    # -- commands -----------------------------------------------------------------------------
    async def exec(self, command: str, cwd: str | None = None, env: dict[str, str] | None = None,
                   timeout_sec: int | None = None, user: str | int | None = None) -> ExecResult:
        return await self._run(command, cwd or self._workdir, self._merge_env(env) or {}, self._resolve_user(user),
                               timeout_sec)

    async def _run_root(self, command: str, timeout_sec: int | None = TRANSFER_TIMEOUT_SEC) -> ExecResult:
        return await self._run(command, "/", {}, "root", timeout_sec)

    async def _run(self, command: str, cwd: str, env: dict[str, str], user: str | int | None,
                   timeout_sec: int | None) -> ExecResult:
        sandbox, inbox = self._sandbox, self._inbox
        if sandbox is None or inbox is None:
            raise RuntimeError(f"tmax environment {self.session_id}: not started (or already stopped)")
        job = _Job(inbox)
        script = command_script(command, cwd, env, user, Inbox.inside(job.name))
        self._jobs.add(job)
        try:
            result = await asyncio.to_thread(self._run_in_shell, sandbox, script, timeout_sec, job)
        except asyncio.CancelledError:
            job.cancel()  # the thread cannot be stopped; the command it waits for can
            raise
        finally:
            self._jobs.discard(job)
        if result.timed_out:
            raise RuntimeError(f"Command timed out after {timeout_sec} seconds")
        return ExecResult(stdout=result.output, stderr=None, return_code=result.exit_code)

    def _run_in_shell(self, sandbox, script: str, timeout_sec: int | None, job: _Job):
        with self._shell_lock:
            try:
                if job.cancelled.is_set():
                    raise RuntimeError("tmax environment: the command was cancelled before it ran")
                return sandbox.exec(script, timeout=timeout_sec, persistent=False)
            finally:
                job.done()

    @staticmethod
    def _check(result: ExecResult, what: str) -> None:
        if result.return_code != 0:
            raise RuntimeError(f"tmax environment: could not {what} (exit {result.return_code}): "
                               f"{(result.stdout or '')[-2000:]}")

    # -- files --------------------------------------------------------------------------------
    def _require_inbox(self) -> Inbox:
        if self._inbox is None:
            raise RuntimeError(f"tmax environment {self.session_id}: not started (or already stopped)")
        return self._inbox

    async def upload_file(self, source_path: Path | str, target_path: str) -> None:
        inbox = self._require_inbox()
        name = await asyncio.to_thread(inbox.stage, Path(source_path))
        staged, target = shlex.quote(Inbox.inside(name)), shlex.quote(target_path)
        parent = shlex.quote(str(PurePosixPath(target_path).parent))
        try:
            # As docker cp: into the target when it is a directory, else to that path.
            result = await self._run_root(f"if [ -d {target} ]; then cp -p -- {staged} {target}/"
                                          f"{shlex.quote(Path(source_path).name)}; "
                                          f"else mkdir -p -- {parent} && cp -p -- {staged} {target}; fi")
        finally:
            inbox.unstage(name)
        self._check(result, f"upload {source_path} to {target_path}")

    async def upload_dir(self, source_dir: Path | str, target_dir: str) -> None:
        inbox = self._require_inbox()
        if not Path(source_dir).is_dir():
            raise FileNotFoundError(f"{source_dir}: not a directory; expected a directory to upload")
        name = await asyncio.to_thread(inbox.stage, Path(source_dir))
        staged, target = shlex.quote(Inbox.inside(name)), shlex.quote(target_dir)
        try:
            result = await self._run_root(f"mkdir -p -- {target} && cp -a -- {staged}/. {target}/")
        finally:
            inbox.unstage(name)
        self._check(result, f"upload {source_dir} to {target_dir}")

    async def _fetch(self, source: str, is_dir: bool, dest: Path) -> None:
        """Bring a file of the sandbox (or a tar of a directory) to ``dest``, a host-private path."""
        first = await self._run_root(pack_script(source, is_dir))
        self._check(first, f"download {source}")
        head, _, data = (first.stdout or "").partition("\n")
        size_text, _, packed = head.partition(" ")
        limit = self._resources.storage_mb << 20  # nothing larger fits in the sandbox anyway
        if not size_text.isdigit() or int(size_text) > limit or not packed.startswith("/tmp/.tmax-download."):
            raise RuntimeError(f"tmax environment: download of {source}: unexpected answer {head[:200]!r}; "
                               f"expected SIZE PATH with SIZE at most {limit}")
        size, chunks = int(size_text), max(1, -(-int(size_text) // CHUNK_BYTES))
        try:
            with open(dest, "wb") as out:
                out.write(decode_chunk(data, source))
                for index in range(1, chunks):
                    result = await self._run_root(chunk_script(packed, index, last=index == chunks - 1))
                    self._check(result, f"download {source} (chunk {index + 1} of {chunks})")
                    out.write(decode_chunk(result.stdout or "", source))
                got = out.tell()
        except BaseException:
            if chunks > 1:  # the packed copy is still on the sandbox's storage: best effort
                with contextlib.suppress(Exception):
                    await self._run_root(f"rm -f -- {shlex.quote(packed)}")
            raise
        if got != size:
            raise RuntimeError(f"tmax environment: download of {source}: got {got} bytes; expected {size}")

    async def download_file(self, source_path: str, target_path: Path | str) -> None:
        target = Path(target_path).absolute()
        with tempfile.TemporaryDirectory(prefix="harbor-download-") as private:
            await self._fetch(source_path, False, Path(private) / "file")
            target.parent.mkdir(parents=True, exist_ok=True)
            copy_file(Path(private) / "file", target.parent, target.name, replace=True,
                      max_bytes=self._resources.storage_mb << 20)

    async def download_dir(self, source_dir: str, target_dir: Path | str) -> None:
        with tempfile.TemporaryDirectory(prefix="harbor-download-") as private:
            archive = Path(private) / "archive.tar"
            await self._fetch(source_dir, True, archive)
            try:
                await asyncio.to_thread(extract_tar, archive, Path(target_dir).absolute(),
                                        self._resources.storage_mb << 20, self.logger.warning)
            except tarfile.TarError as e:
                raise RuntimeError(f"tmax environment: download of {source_dir}: not a valid tar: {e}") from None
