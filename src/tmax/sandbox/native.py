"""Native sandboxes on Linux namespaces: bubblewrap (default) and unshare + pivot_root (no install).

Both share everything but the launcher: a root filesystem composed with overlayfs in a private
mount namespace (``rootfs``), a per-sandbox cgroup for memory and process limits, rlimits for CPU
time, file size and open files, a fresh user, pid, network, IPC and UTS namespace, and the
persistent shell. Closing kills every process (the pid namespace and the cgroup both guarantee it,
daemons included), removes the cgroup and deletes the sandbox's directory.
"""

from __future__ import annotations

import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from tmax.sandbox import cgroups, rootfs
from tmax.sandbox.base import BASE_ENV, ExecResult, SandboxError, SandboxSpec
from tmax.sandbox.shell import ShellSession, outer_loop


# The unshare launcher's last step, run by the host's Python inside the new namespaces: make the
# sandbox root the root (pivot_root), detach the host's tree entirely, then exec the sandbox's shell.
# A plain chroot would leave the host's mounts in the namespace, and root in a user namespace can
# leave a chroot (chroot into a subdirectory, then ``cd ..`` past the old root).
_PIVOT = """
import ctypes, os, socket, sys
root, workdir, hostname, program = sys.argv[1:5]
libc = ctypes.CDLL(None, use_errno=True)
nr = {"x86_64": 155, "aarch64": 41}.get(os.uname().machine)
def check(ret, what):
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, what + ": " + os.strerror(err))
if nr is None:
    raise OSError("pivot_root: unsupported machine " + os.uname().machine)
# Mounts copied from the parent namespace are locked; pivot_root needs a new root of our own.
check(libc.mount(root.encode(), root.encode(), None, 4096 | 16384, None), "bind the root")  # MS_BIND|MS_REC
os.chdir(root)
check(libc.syscall(nr, b".", b"."), "pivot_root")
check(libc.umount2(b".", 2), "detach the host root")
os.chdir("/")
try:
    os.chdir(workdir)
except OSError:
    pass
try:
    socket.sethostname(hostname)
except OSError:
    pass
os.execv("/bin/bash", ["/bin/bash", "-c", program])
"""


def run_dir() -> Path:
    base = Path(os.environ.get("TMAX_RUN_DIR") or (Path(tempfile.gettempdir()) / "tmax-sandboxes"))
    base.mkdir(parents=True, exist_ok=True)
    return base


def _proc_table() -> dict[int, tuple[int, int]]:
    """host pid -> (parent pid, innermost namespace pid)."""
    table: dict[int, tuple[int, int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as f:
                ppid = nspid = 0
                for line in f:
                    if line.startswith("PPid:"):
                        ppid = int(line.split()[1])
                    elif line.startswith("NSpid:"):
                        nspid = int(line.split()[-1])
                        break
            table[int(entry)] = (ppid, nspid)
        except (OSError, ValueError, IndexError):
            continue
    return table


def _descendants(table: dict[int, tuple[int, int]], root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    out, stack = [], [root]
    while stack:
        for c in children.get(stack.pop(), []):
            out.append(c)
            stack.append(c)
    return out


class NativeSandbox:
    def __init__(self, spec: SandboxSpec, launcher: str):
        self.spec = spec
        self.launcher = launcher
        self.id = uuid.uuid4().hex[:12]
        self.dir = run_dir() / self.id
        self.dir.mkdir()
        self.closed = False
        self.cgroup: cgroups.Cgroup | None = None
        self.proc: subprocess.Popen | None = None
        self._spared: set[int] = set()
        try:
            self._start()
        except BaseException:
            self.close()
            self.remove_dir()  # even with keep_changes: a sandbox that never started has no changes
            raise

    # -- launch ---------------------------------------------------------------------------------
    def _start(self) -> None:
        spec, lim = self.spec, self.spec.limits
        plan = rootfs.plan(spec.layers, self.dir, spec.work_areas, spec.binds,
                           dev_mode="none" if self.launcher == "bwrap" else "host-nodes")
        self.cgroup = cgroups.create(f"sb-{self.id}", lim.memory_mb << 20, lim.max_pids)
        if self.cgroup:
            plan.cgroup_procs = self.cgroup.procs_files
        else:  # no cgroups (not root): address-space limit stands in for the memory limit
            plan.rlimits.append((resource.RLIMIT_AS, (lim.memory_mb + 512) << 20))
        plan.rlimits += [(resource.RLIMIT_FSIZE, lim.file_size_mb << 20),
                         (resource.RLIMIT_NOFILE, min(lim.open_files, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))]
        if lim.cpu_seconds:
            plan.rlimits.append((resource.RLIMIT_CPU, lim.cpu_seconds))
        plan.new_net = self.launcher == "unshare" and not spec.network
        self.nonce = ShellSession.new_nonce()
        argv = self._argv(plan.root)
        env = {**BASE_ENV, **spec.env}
        try:
            self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.STDOUT, env=env, preexec_fn=lambda: rootfs.apply(plan),
                                         close_fds=True, bufsize=0)
        except subprocess.SubprocessError:  # rootfs.apply failed in the child; it left the reason
            err = Path(plan.error_file)
            why = err.read_text() if err.exists() else "the child failed before exec"
            raise SandboxError(f"sandbox launch failed: {why}") from None
        self.shell = ShellSession(self.proc.stdin.fileno(), self.proc.stdout.fileno(), self.nonce,
                                  kill_children=self._kill_children, kill_shell=self._kill_shell,
                                  limit=lim.output_bytes, alive=lambda: self.proc.poll() is None)
        try:
            self.shell.start()
        except SandboxError as e:
            err = Path(plan.error_file)
            if err.exists():
                raise SandboxError(f"sandbox launch failed: {err.read_text()}") from None
            raise e

    def _argv(self, root: str) -> list[str]:
        spec = self.spec
        program = ["/bin/bash", "-c", outer_loop(self.nonce)]
        if self.launcher == "bwrap":
            argv = ["bwrap", "--bind", root, "/", "--dev", "/dev", "--proc", "/proc",
                    "--unshare-all", "--unshare-user", "--uid", "0", "--gid", "0",
                    "--hostname", spec.hostname, "--die-with-parent", "--new-session",
                    "--chdir", spec.workdir]
            if spec.network:
                argv.append("--share-net")
            return argv + ["--"] + program
        # unshare: new user (mapped to root), pid, net, ipc, uts and mount namespaces.
        # The network namespace (loopback up) is made in the child before exec: see rootfs.apply.
        argv = ["unshare", "--user", "--map-root-user", "--pid", "--fork", "--kill-child", "--ipc", "--uts",
                "--mount", f"--mount-proc={root}/proc"]
        # pivot_root (not chroot): the host's tree must not stay reachable through a chroot escape.
        return argv + [sys.executable, "-I", "-S", "-c", _PIVOT, root, spec.workdir, spec.hostname,
                       outer_loop(self.nonce)]

    # -- process control ------------------------------------------------------------------------
    def _sandbox_pids(self, table) -> list[int]:
        if self.proc is None:
            return []
        return _descendants(table, self.proc.pid)

    def _find(self, nspid: int) -> tuple[dict, int | None]:
        table = _proc_table()
        for pid in self._sandbox_pids(table):
            if table[pid][1] == nspid:
                return table, pid
        return table, None

    def _kill_children(self, nspid: int) -> None:
        table, shell = self._find(nspid)
        if shell is None:
            return
        for pid in _descendants(table, shell):
            if pid in self._spared:
                continue
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def _kill_shell(self, nspid: int) -> None:
        self._kill_children(nspid)
        _, shell = self._find(nspid)
        if shell is not None:
            try:
                os.kill(shell, signal.SIGKILL)
            except ProcessLookupError:
                pass

    # -- protocol -------------------------------------------------------------------------------
    def exec(self, command: str, timeout: float | None = None, persistent: bool = True) -> ExecResult:
        if self.closed:
            raise SandboxError("sandbox is closed")
        # What already runs (background jobs, services) is not part of this command: a timeout spares it.
        self._spared = self.cgroup.pids() if self.cgroup else set()
        return self.shell.run(command, timeout, persistent)

    def alive_pids(self) -> list[int]:
        """Host pids of every process of this sandbox (for tests and leak checks)."""
        pids = set(self.cgroup.pids()) if self.cgroup else set()
        if self.proc is not None:
            pids.update(self._sandbox_pids(_proc_table()))
            if self.proc.poll() is None:
                pids.add(self.proc.pid)
        return sorted(pids)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self.proc is not None:
            victims = self._sandbox_pids(_proc_table())
            for pid in [self.proc.pid] + victims:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
            for f in (self.proc.stdin, self.proc.stdout):
                try:
                    f.close()
                except OSError:
                    pass
        if self.cgroup is not None:
            self.cgroup.kill_all()
            self.cgroup.remove()
        # Processes may take a moment to release the mount namespace; the upper dir is plain files.
        if not self.spec.keep_changes:
            self.remove_dir()

    def remove_dir(self) -> None:
        for _ in range(50):
            shutil.rmtree(self.dir, ignore_errors=True)
            if not self.dir.exists():
                return
            time.sleep(0.02)

    def export_work_areas(self, dest: Path) -> None:
        """Move the agent's changes under its work areas into ``dest`` (an overlay layer)."""
        if not self.closed:
            raise SandboxError("export_work_areas needs a closed sandbox")
        upper = self.dir / "upper"
        for wa in self.spec.work_areas:
            src = upper / wa.strip("/")
            if os.path.lexists(src):
                target = dest / wa.strip("/")
                target.parent.mkdir(parents=True, exist_ok=True)
                os.rename(src, target)
        self.remove_dir()

    def export_changes(self, dest: Path) -> None:
        """Move every change (the whole upper dir) to ``dest``: a cached environment layer."""
        if not self.closed:
            raise SandboxError("export_changes needs a closed sandbox")
        os.rename(self.dir / "upper", dest)
        self.remove_dir()

    def __enter__(self) -> "NativeSandbox":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class NativeBackend:
    def __init__(self, launcher: str):
        self.name = "bwrap" if launcher == "bwrap" else "unshare"
        self.launcher = launcher

    def available(self) -> tuple[bool, str]:
        tool = "bwrap" if self.launcher == "bwrap" else "unshare"
        if shutil.which(tool) is None:
            return False, f"{tool} not found on PATH" + (" (apt-get install bubblewrap)" if tool == "bwrap" else "")
        return True, ""

    def start(self, spec: SandboxSpec) -> NativeSandbox:
        ok, why = self.available()
        if not ok:
            raise SandboxError(why)
        return NativeSandbox(spec, self.launcher)


