"""Apptainer sandboxes, for clusters where neither docker nor user namespaces for bwrap are allowed.

An environment is flattened once into an Apptainer *sandbox directory* (a plain root filesystem,
``$TMAX_HOME/apptainer/KEY/rootfs``; same flattening and key as the container backends). A sandbox
is one ``apptainer exec`` of the persistent shell's outer loop, attached over pipes and driven by
:class:`ShellSession`, with the documented isolation flags:

* ``--containall`` (contain file systems, PID, IPC and environment; implies ``--cleanenv``) and
  ``--no-home``; the environment comes only from ``--env``.
* ``--writable-tmpfs``: the root filesystem is writable, changes vanish with the sandbox.
* ``--net --network none`` unless the spec allows network: a network namespace with loopback only.
* ``--uts --hostname``; ``--bind src:dst[:ro]`` for the spec's binds and for the work areas, which
  are host directories (as in the container backends) so that the agent's work survives for
  ``export_work_areas``.
* ``--memory`` / ``--pids-limit`` (cgroups) where apptainer can apply them: as root, or on a pure
  cgroup v2 host; otherwise an address-space rlimit stands in for memory, as in the native backends.
  File-size, open-file and CPU rlimits are set by ``ulimit`` in the container before the shell starts.
* ``--fakeroot`` when not root, so the agent is root in its sandbox as with every other backend.

The processes stay descendants of the ``apptainer`` process on the host, so killing a command (by
its in-container pid, which the shell reports) and closing use the host's process table like the
native backends.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shlex
import shutil
import signal
import subprocess
import tempfile
import uuid
from pathlib import Path

from tmax.sandbox.base import BASE_ENV, ExecResult, SandboxError, SandboxSpec
from tmax.sandbox.container import (WorkAreas, check_bind_path, finish_tar,
                                    flatten_tar, image_key, image_layers)
from tmax.sandbox.paths import named_lock, remove_tree, run_dir, tmax_home
from tmax.sandbox.procs import exit_status
from tmax.sandbox.procs import descendants as _descendants
from tmax.sandbox.procs import proc_table as _proc_table
from tmax.sandbox.shell import ShellSession, outer_loop

PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def sandbox_image(spec: SandboxSpec) -> Path:
    """The flattened sandbox directory for ``spec``'s environment, built on first use."""
    layers = image_layers(spec)
    key = image_key(spec, layers)
    final = tmax_home() / "apptainer" / key
    rootfs = final / "rootfs"
    if (final / "done").exists():
        return rootfs
    with named_lock(f"apptainer-image-{key}"):
        if (final / "done").exists():
            return rootfs
        final.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=final.parent))
        try:
            (tmp / "rootfs").mkdir()
            with tempfile.TemporaryDirectory(prefix="tmax-flatten-", dir=run_dir()) as work:
                tar = flatten_tar(layers, Path(work))
                try:
                    x = subprocess.run(["tar", "--numeric-owner", "-C", str(tmp / "rootfs"), "-xf", "-"],
                                       stdin=tar.stdout, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                finally:
                    tar.stdout.close()
                if x.returncode != 0:
                    tar.kill()
                    tar.wait()
                    why = x.stderr.decode(errors="replace")[-1500:]
                    raise SandboxError(f"extracting the environment failed: {why}")
                finish_tar(tar, f"flattening {spec.env_hash or 'the environment'}")
            for d in ("proc", "dev", "sys", "tmp", "run", "root"):
                (tmp / "rootfs" / d).mkdir(exist_ok=True)
            if final.exists():
                shutil.rmtree(final)
            os.rename(tmp, final)
            (final / "done").write_text(key + "\n")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return rootfs


def _cgroups_usable() -> bool:
    return os.geteuid() == 0 or os.path.exists("/sys/fs/cgroup/cgroup.controllers")


class ApptainerSandbox:
    def __init__(self, spec: SandboxSpec):
        self.spec = spec
        self.id = uuid.uuid4().hex[:12]
        self.dir = run_dir() / self.id
        self.dir.mkdir(parents=True)
        self.closed = False
        self.proc: subprocess.Popen | None = None
        self.work: WorkAreas | None = None
        self.started = False
        try:
            self._start()
            self.started = True
        except BaseException:
            self.close()
            raise

    def _start(self) -> None:
        spec = self.spec
        image = sandbox_image(spec)
        self.work = WorkAreas(spec, self.dir)
        self.nonce = ShellSession.new_nonce()
        self.proc = subprocess.Popen(self._argv(image), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, close_fds=True, bufsize=0,
                                     preexec_fn=_die_with_parent)
        self.shell = ShellSession(self.proc.stdin.fileno(), self.proc.stdout.fileno(), self.nonce,
                                  kill_children=self._kill_children, kill_shell=self._kill_shell,
                                  limit=spec.limits.output_bytes, alive=lambda: self.proc.poll() is None)
        self.shell.start(timeout=120.0)

    def _argv(self, image: Path) -> list[str]:
        spec, lim = self.spec, self.spec.limits
        argv = ["apptainer", "exec", "--containall", "--no-home", "--writable-tmpfs",
                "--uts", "--hostname", spec.hostname]
        if not spec.network:
            argv += ["--net", "--network", "none"]
        if os.geteuid() != 0:
            argv.append("--fakeroot")
        ulimits = [f"ulimit -f {lim.file_size_mb * 1024}", f"ulimit -n {lim.open_files}"]
        if lim.cpu_seconds:
            ulimits.append(f"ulimit -t {lim.cpu_seconds}")
        if _cgroups_usable():
            argv += ["--memory", str(lim.memory_mb << 20), "--pids-limit", str(lim.max_pids)]
        else:
            ulimits.append(f"ulimit -v {(lim.memory_mb + 512) * 1024}")
        for src, dst in self.work.binds():
            for p in (src, dst):
                check_bind_path(p, ":,")
            argv += ["--bind", f"{src}:{dst}:rw"]
        for b in spec.binds:
            for p in (b.source, b.target):
                check_bind_path(p, ":,")
            argv += ["--bind", f"{b.source}:{b.target}:{'ro' if b.readonly else 'rw'}"]
        for k, v in {**BASE_ENV, **spec.env}.items():
            argv += ["--env", f"{k}={v}"]
        wd = shlex.quote(spec.workdir)
        boot = (" 2>/dev/null; ".join(ulimits) + " 2>/dev/null; "
                f'cd -- {wd} 2>/dev/null || {{ mkdir -p -- {wd} && cd -- {wd}; }} || cd /; exec /bin/bash -c "$0"')
        return argv + [str(image), "/bin/bash", "-c", boot, outer_loop()]

    # -- process control (host side, as in the native backends) ---------------------------------
    def _pids(self, table) -> list[int]:
        return _descendants(table, self.proc.pid) if self.proc is not None else []

    def _find(self, nspid: int) -> tuple[dict, int | None]:
        table = _proc_table()
        for pid in self._pids(table):
            if table[pid][1] == nspid:
                return table, pid
        return table, None

    def _kill_children(self, nspid: int) -> None:
        table, shell = self._find(nspid)
        if shell is None:
            return
        for pid in _descendants(table, shell):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    def _kill_shell(self, nspid: int) -> None:
        self._kill_children(nspid)
        _, shell = self._find(nspid)
        if shell is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(shell, signal.SIGKILL)

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
        if self.proc is not None:
            for pid in [self.proc.pid] + self._pids(_proc_table()):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
            for f in (self.proc.stdin, self.proc.stdout):
                with contextlib.suppress(OSError):
                    f.close()
        if not (self.spec.keep_changes and self.started):
            self.remove_dir()

    def remove_dir(self) -> None:
        remove_tree(self.dir)

    def export_work_areas(self, dest: Path) -> None:
        if not self.closed:
            raise SandboxError("export_work_areas needs a closed sandbox")
        if self.work is None or not self.dir.exists():
            return  # keep_changes=False: nothing was kept (as with the native backends)
        self.work.export(dest)
        self.remove_dir()

    def export_changes(self, dest: Path) -> None:
        raise NotImplementedError("the apptainer backend cannot export a whole-filesystem change layer; "
                                  "environment setup layers are built with the native backend (bwrap or unshare)")

    def __enter__(self) -> "ApptainerSandbox":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class ApptainerBackend:
    name = "apptainer"

    def available(self) -> tuple[bool, str]:
        if shutil.which("apptainer") is None:
            return False, "apptainer not found on PATH"
        try:
            r = subprocess.run(["apptainer", "--version"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               timeout=20)
        except (OSError, subprocess.TimeoutExpired) as e:
            return False, f"apptainer does not answer: {e}"
        if r.returncode != 0:
            return False, f"apptainer --version failed: {r.stdout.decode(errors='replace').strip()[-300:]}"
        return True, ""

    def start(self, spec: SandboxSpec) -> ApptainerSandbox:
        if spec.netns is not None or spec.hosts:
            raise SandboxError("apptainer backend: SandboxSpec.netns and SandboxSpec.hosts (a network shared "
                               "with sidecars) need a native backend (bwrap or unshare)")
        if spec.allowed_hosts:  # never widened to the whole network
            raise SandboxError("apptainer backend: a network allowlist (SandboxSpec.allowed_hosts) needs a native "
                               "backend (bwrap or unshare)")
        ok, why = self.available()
        if not ok:
            raise SandboxError(why)
        return ApptainerSandbox(spec)
