"""Native sandboxes on Linux namespaces: bubblewrap (default) and unshare + pivot_root (no install).

Both share everything but the launcher: a root filesystem composed with overlayfs in a private
mount namespace over a size- and inode-limited tmpfs (``rootfs``); a user namespace of its own whose
root is an unprivileged host uid (``identity``); a per-sandbox cgroup for memory and process limits
that nothing inside can reach; rlimits for CPU time, file size and open files; fresh pid, network,
IPC, UTS and cgroup namespaces (the network one shared with a task's sidecars when the spec names
one: ``netns``); a new session with no controlling terminal and a fresh keyring;
no_new_privs, a reduced capability set and a seccomp filter (``seccomp``); user-mode NAT for online
tasks (``network``); and the persistent shell. Closing kills every process (the pid namespace and
the cgroup both guarantee it, daemons included), removes the cgroup and deletes the sandbox's
directory; the writable layer lives until it is exported (``layers``) or the sandbox is closed.
"""

from __future__ import annotations

import contextlib
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import uuid
from pathlib import Path

from tmax.sandbox import cgroups, egress, identity, layers, netns, network, rootfs, seccomp
from tmax.sandbox.paths import remove_tree, run_dir
from tmax.sandbox.procs import exit_status
from tmax.sandbox.procs import descendants as _descendants
from tmax.sandbox.procs import proc_table as _proc_table
from tmax.sandbox.base import BASE_ENV, ExecResult, SandboxError, SandboxLost, SandboxSpec
from tmax.sandbox.shell import ShellSession, outer_loop


# The unshare launcher's last step, run by the host's Python inside the new namespaces: make the
# sandbox root the root (pivot_root), detach the host's tree entirely, then exec the sandbox's shell.
# A plain chroot would leave the host's mounts in the namespace, and root in a user namespace can
# leave a chroot (chroot into a subdirectory, then ``cd ..`` past the old root).
_PIVOT = """
import ctypes, os, socket, sys
root, workdir, hostname, keep, userns, program = sys.argv[1:7]
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
for p in (b"/proc/sys", b"/proc/sysrq-trigger"):  # read-only, as bubblewrap leaves them
    if libc.mount(p, p, None, 4096 | 16384, None) == 0:
        check(libc.mount(p, p, None, 4096 | 32 | 1 | 2 | 4 | 8, None), "read-only " + p.decode())
try:
    os.chdir(workdir)
except OSError:
    pass
try:
    socket.sethostname(hostname)
except OSError:
    pass
last_cap = int(open("/proc/sys/kernel/cap_last_cap").read())
if userns:  # become root of the sandbox's own user namespace: nobody on the host
    check(libc.setns(int(userns), 0x10000000), "join the sandbox's user namespace")
    os.close(int(userns))
    os.setgroups([])
    os.setresgid(0, 0, 0)
    os.setresuid(0, 0, 0)
    check(libc.prctl(1, 9, 0, 0, 0), "parent-death signal")  # the uid change cleared unshare's --kill-child
kept = {int(c) for c in keep.split(",") if c}
for cap in range(last_cap + 1):
    if cap not in kept:
        check(libc.prctl(24, cap, 0, 0, 0), "drop capability %d" % cap)  # PR_CAPBSET_DROP
os.execv("/bin/bash", ["/bin/bash", "-c", program])
"""


class NativeSandbox:
    def __init__(self, spec: SandboxSpec, launcher: str):
        self.spec = spec
        self.launcher = launcher
        self.id = uuid.uuid4().hex[:12]
        self.dir = run_dir() / self.id
        self.dir.mkdir(mode=0o700)
        self.closed = False
        self.cgroup: cgroups.Cgroup | None = None
        self.proc: subprocess.Popen | None = None
        self.storage_fd: int | None = None  # the writable layer (a tmpfs only we can reach)
        self.net: subprocess.Popen | None = None
        self.egress: subprocess.Popen | None = None  # the allowlist's proxy
        self._netns_pid: int | None = None  # a process in the sandbox's network namespace, when online
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
        binds = list(spec.binds)
        if spec.netns is not None and (spec.network or spec.allowed_hosts):
            raise SandboxError("SandboxSpec: network=True or allowed_hosts with netns set; the shared network "
                               "decides internet access (SharedNetwork(internet=True))")
        if spec.network or (isinstance(spec.netns, netns.SharedNetwork) and spec.netns.internet):
            ok, why = network.available()
            if not ok:
                raise SandboxError(why)
            resolv = self.dir / "resolv.conf"
            resolv.write_text(network.RESOLV_CONF)
            os.chmod(resolv, 0o644)
            binds.append(rootfs.Bind(str(resolv), "/etc/resolv.conf"))
        files = {"/etc/hosts": netns.hosts_file(spec.hostname, spec.hosts)} if spec.hosts else {}
        if spec.netns is not None and not identity.shifted():
            raise SandboxError("SandboxSpec.netns: sharing a network namespace needs tmax to run as root")
        userns = identity.new_userns() if identity.shifted() else None
        parent_chan, child_chan = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        seccomp_r = net_fd = None
        try:
            if spec.netns is not None:
                net_fd = netns.open_for_sandbox(spec.netns)
            try:
                plan = rootfs.plan(spec.layers, self.dir, spec.work_areas, binds,
                                   dev_mode="none" if self.launcher == "bwrap" else "host-nodes",
                                   storage=(lim.storage_mb << 20, lim.inodes), userns_fd=userns, files=files)
            except OSError as e:
                raise SandboxError(f"sandbox launch failed: {e}") from None
            plan.storage.channel = child_chan.fileno()
            plan.netns_fd = net_fd
            self.cgroup = cgroups.create(f"sb-{self.id}", lim.memory_mb << 20, lim.max_pids)
            if self.cgroup:
                plan.cgroup_procs = self.cgroup.procs_files
            else:  # no cgroups (not root): address-space limit stands in for the memory limit
                plan.rlimits.append((resource.RLIMIT_AS, (lim.memory_mb + 512) << 20))
            plan.rlimits += [(resource.RLIMIT_FSIZE, lim.file_size_mb << 20),
                             (resource.RLIMIT_NOFILE, min(lim.open_files, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))]
            if lim.cpu_seconds:
                plan.rlimits.append((resource.RLIMIT_CPU, lim.cpu_seconds))
            pass_fds: tuple[int, ...] = ()
            if self.launcher == "bwrap":
                seccomp_r, w = os.pipe()
                os.write(w, seccomp.program())  # a few hundred bytes: fits the pipe
                os.close(w)
                pass_fds = (seccomp_r,)
            else:  # unshare(1) cannot: the filter is set in the child, the network namespace made there;
                # the namespaces are made as host root and _PIVOT joins the user namespace last.
                plan.seccomp = seccomp.program()
                plan.new_net = net_fd is None
                plan.join_userns = False
                if userns is not None:
                    pass_fds = (userns,)
            self.nonce = ShellSession.new_nonce()
            argv = self._argv(plan, seccomp_r)
            env = {**BASE_ENV, **spec.env}
            try:
                self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                             stderr=subprocess.STDOUT, env=env, preexec_fn=lambda: rootfs.apply(plan),
                                             close_fds=True, pass_fds=pass_fds, start_new_session=True, bufsize=0)
            except subprocess.SubprocessError:  # rootfs.apply failed in the child; it left the reason
                err = Path(plan.error_file)
                why = err.read_text() if err.exists() else "the child failed before exec"
                raise SandboxError(f"sandbox launch failed: {why}") from None
            parent_chan.settimeout(10)
            try:
                _, fds, _, _ = socket.recv_fds(parent_chan, 16, 1)
            except (OSError, socket.timeout) as e:
                raise SandboxError(f"sandbox launch failed: no writable layer from the child ({e})") from None
            if not fds:
                raise SandboxError("sandbox launch failed: no writable layer from the child")
            self.storage_fd = fds[0]
        finally:
            parent_chan.close()
            child_chan.close()
            for fd in (userns, seccomp_r, net_fd):
                if fd is not None:
                    os.close(fd)
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
        if spec.network:
            pid = network.netns_pid([self.proc.pid] + self._sandbox_pids(_proc_table()))
            if pid is None:
                raise SandboxError("sandbox launch failed: no process in the sandbox's network namespace")
            self.net = network.attach(pid, str(self.dir / "slirp4netns.log"), join_userns=self.launcher == "bwrap")
            self._netns_pid = pid
            self.set_egress("allowlist" if spec.allowed_hosts else "public", tuple(spec.allowed_hosts))

    def set_egress(self, mode: str, hosts: tuple[str, ...] = ()) -> None:
        """Change what an online sandbox reaches while it runs: ``public``, ``no-network`` (loopback
        only) or ``allowlist`` (``hosts`` by name, see ``egress``)."""
        if self.net is None:
            raise SandboxError("set_egress needs a sandbox started with network=True")
        egress.stop(self.egress)
        self.egress = None
        try:
            egress.set_rules(self._netns_pid, mode)
            if mode == "allowlist":
                self.egress = egress.start(self._netns_pid, hosts, str(self.dir / "egress.log"))
        except OSError as e:
            raise SandboxError(f"sandbox network policy {mode!r}: {e}") from None

    def _argv(self, plan: rootfs.Plan, seccomp_fd: int | None) -> list[str]:
        spec, root = self.spec, plan.root
        program = ["/bin/bash", "-c", outer_loop()]
        if self.launcher == "bwrap":
            # bwrap's /dev is a tmpfs of its own: read-only, so writes go to the limited layer only.
            # Shared network: rootfs.apply has joined it already, so bwrap makes none of its own.
            net = ["--unshare-net"] if plan.netns_fd is None else []
            argv = ["bwrap", "--bind", root, "/", "--dev", "/dev", "--bind", plan.shm_dir, "/dev/shm",
                    "--remount-ro", "/dev", "--proc", "/proc", "--unshare-pid", *net, "--unshare-ipc",
                    "--unshare-uts", "--unshare-cgroup-try", "--hostname", spec.hostname, "--die-with-parent", "--new-session",
                    "--chdir", spec.workdir, "--cap-drop", "ALL"]
            for cap in sorted(identity.kept_caps(spec.network)):
                argv += ["--cap-add", identity.CAP_NAMES[cap]]
            return argv + ["--seccomp", str(seccomp_fd), "--"] + program
        # unshare: new pid, ipc, uts and mount namespaces in the sandbox's user namespace (joined in
        # rootfs.apply, where the network namespace, loopback up, is made or the shared one joined).
        argv = ["unshare", "--pid", "--fork", "--kill-child", "--ipc", "--uts", "--mount", f"--mount-proc={root}/proc"]
        keep = ",".join(str(c) for c in sorted(identity.kept_caps(spec.network)))
        # pivot_root (not chroot): the host's tree must not stay reachable through a chroot escape.
        userns = str(plan.userns_fd) if plan.userns_fd is not None else ""
        return argv + [sys.executable, "-I", "-S", "-c", _PIVOT, root, spec.workdir, spec.hostname, keep, userns,
                       outer_loop()]

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
        with self._blame():
            return self.shell.run(command, timeout, persistent)

    def run_last(self, command: str, timeout: float | None = None) -> ExecResult:
        if self.closed:
            raise SandboxError("sandbox is closed")
        with self._blame():
            return self.shell.run_last(command, timeout, lambda wait: exit_status(self.proc, wait))

    @contextlib.contextmanager
    def _blame(self):
        """A lost shell is the fault of what ran inside (SandboxLost) unless the sandbox was killed from
        outside: the launcher runs outside the sandbox's pid namespace, so nothing inside can signal
        it; when it died of a signal and the memory limit never OOM-killed, the host did it, and the
        failure is the infrastructure's (SandboxError), masked rather than scored."""
        try:
            yield
        except SandboxLost as e:
            code = self.proc.poll() if self.proc is not None else None
            if code is None:
                try:
                    code = self.proc.wait(timeout=1)
                except subprocess.TimeoutExpired:
                    raise e from None
            oom = self.cgroup.memory_failcnt() if self.cgroup else 0
            if code < 0 and not oom:
                raise SandboxError(f"the sandbox was killed from outside (signal {-code}): {e}") from e
            raise

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
            # Every process of the sandbox, the launcher included, is in its cgroup (joined before
            # exec): killing the cgroup is enough. Without one, walk the host's process table.
            if self.cgroup is not None:
                self.cgroup.kill_all()
                victims = []
            else:
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
        network.stop(self.net)
        egress.stop(self.egress)
        self.egress = None
        if self.cgroup is not None:
            self.cgroup.kill_all()
            self.cgroup.remove()
        if not self.spec.keep_changes:
            self._drop_storage()
            self.remove_dir()

    def _drop_storage(self) -> None:
        if self.storage_fd is not None:
            os.close(self.storage_fd)
            self.storage_fd = None

    def remove_dir(self) -> None:
        remove_tree(self.dir)

    def _upper(self) -> str:
        if not self.closed:
            raise SandboxError("exporting changes needs a closed sandbox")
        if self.storage_fd is None:
            raise SandboxError("this sandbox kept no changes (keep_changes=False)")
        return f"/proc/self/fd/{self.storage_fd}/upper"

    def export_work_areas(self, dest: Path) -> None:
        """Copy the agent's changes under its work areas into ``dest`` (an overlay layer)."""
        try:
            upper = self._upper()
            for wa in self.spec.work_areas:
                src = os.path.join(upper, wa.strip("/"))
                if os.path.lexists(src):
                    target = dest / wa.strip("/")
                    target.parent.mkdir(parents=True, exist_ok=True)
                    layers.export(src, target)
        finally:
            self._drop_storage()
            self.remove_dir()

    def export_changes(self, dest: Path) -> None:
        """Copy every change (the whole upper dir) to ``dest``: a cached environment layer."""
        try:
            layers.export(self._upper(), dest)
        finally:
            self._drop_storage()
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


