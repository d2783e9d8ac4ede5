"""One private network namespace shared by several sandboxes: a task's main sandbox and its sidecar
services (a database, a web server) reach one another on 127.0.0.1 by service name, and nothing of
the host's network.

The namespace is made by host root, so it belongs to the host's user namespace: root of a member
sandbox (root of its own user namespace only) holds no capability over it and can change none of
its interfaces, addresses, routes or sysctls. Before any member joins, ``lo`` is up, every port is
open to unprivileged binds (a sidecar binds 80 or 5432 without CAP_NET_BIND_SERVICE over this
namespace) and ICMP echo sockets are open to every group (``ping`` health checks). With
``internet=True`` it gets the user-mode NAT an online sandbox gets (``network``), shared by every
member.

Only one fd in this process holds the namespace: no /run/netns entry, no holder process. Once it
is closed (or this process dies) and the last member has exited, the kernel frees it.
"""

from __future__ import annotations

import ipaddress
import os
import re
import threading
import uuid

from tmax.sandbox import kernel, network
from tmax.sandbox.base import SandboxError
from tmax.sandbox.paths import run_dir

SYSCTLS = {"net/ipv4/ip_unprivileged_port_start": "0", "net/ipv4/ping_group_range": "0 2147483647"}
HOST_NAME = re.compile(r"[A-Za-z0-9_]([A-Za-z0-9_.-]*[A-Za-z0-9_])?")


class SharedNetwork:
    """A private network namespace for sandboxes to join (``SandboxSpec.netns``); a context manager.

    ``internet``: members reach the internet through slirp4netns (never the host's loopback)."""

    def __init__(self, internet: bool = False):
        if os.geteuid() != 0:
            raise SandboxError("a shared network namespace needs tmax to run as root: rootless sandboxes each "
                               "map only the user's own uid, so none may join a namespace another one owns")
        self.internet = internet
        self.slirp = None
        self._log = run_dir() / f"net-{uuid.uuid4().hex[:12]}.slirp.log"
        self.fd: int | None = _new_namespace()
        try:
            if internet:
                self.slirp = network.attach_fd(self.fd, str(self._log))
        except BaseException:
            self.close()
            raise

    @property
    def closed(self) -> bool:
        return self.fd is None

    def inode(self) -> tuple[int, int]:
        """(device, inode) of the namespace: what /proc/PID/ns/net of each member points to."""
        st = os.fstat(self._fd())
        return st.st_dev, st.st_ino

    def open(self) -> int:
        """A new fd to the namespace, for one sandbox launch to join (the caller closes it)."""
        return os.dup(self._fd())

    def _fd(self) -> int:
        if self.fd is None:
            raise SandboxError("the shared network is closed")
        return self.fd

    def close(self) -> None:
        network.stop(self.slirp)
        self.slirp = None
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
        self._log.unlink(missing_ok=True)

    def __enter__(self) -> "SharedNetwork":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _new_namespace() -> int:
    """A fresh network namespace, configured; returns an fd to it.

    A short-lived thread makes it: a thread's network namespace is its own (unlike mounts or user
    namespaces, which a multi-threaded process cannot unshare), so nothing forks and this process
    stays where it is."""
    box: dict = {}

    def make() -> None:
        try:
            kernel.unshare(kernel.CLONE_NEWNET)
            fd = os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
            box["fd"] = fd
            kernel.loopback_up()
            for key, value in SYSCTLS.items():  # /proc/sys/net shows the opening thread's namespace
                with open(f"/proc/sys/{key}", "w") as f:
                    f.write(value)
        except Exception as e:  # reported below, in the caller's thread
            box["error"] = e

    t = threading.Thread(target=make, name="tmax-netns")
    t.start()
    t.join()
    if "error" in box:
        if "fd" in box:
            os.close(box["fd"])
        raise SandboxError(f"could not make a shared network namespace: {box['error']}")
    return box["fd"]


def open_for_sandbox(netns: SharedNetwork | str) -> int:
    """An fd to the network namespace ``SandboxSpec.netns`` names (the caller closes it), checked:
    a network namespace, owned by the host (so no member can reconfigure it), and not the host's own."""
    if isinstance(netns, SharedNetwork):
        return netns.open()
    try:
        fd = os.open(netns, os.O_RDONLY | os.O_CLOEXEC)
    except OSError as e:
        raise SandboxError(f"SandboxSpec.netns: {netns}: {e.strerror}; expected a network namespace file "
                           "(/run/netns/NAME or /proc/PID/ns/net)") from None
    try:
        _check_shareable(fd, netns)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _check_shareable(fd: int, path: str) -> None:
    try:
        kind = kernel.namespace_type(fd)
        owner = kernel.namespace_owner(fd)
    except OSError:
        kind, owner = None, None
    if kind != kernel.CLONE_NEWNET:
        raise SandboxError(f"SandboxSpec.netns: {path}: not a network namespace")
    ours = os.stat("/proc/self/ns/user")
    if owner != (ours.st_dev, ours.st_ino):
        raise SandboxError(f"SandboxSpec.netns: {path}: owned by another user namespace; expected one the "
                           "host's root made (its members could reconfigure it otherwise)")
    st, host = os.fstat(fd), os.stat("/proc/self/ns/net")
    if (st.st_dev, st.st_ino) == (host.st_dev, host.st_ino):
        raise SandboxError(f"SandboxSpec.netns: {path}: this is the host's own network namespace")


def hosts_file(hostname: str, hosts: dict[str, str]) -> str:
    """The sandbox's /etc/hosts: loopback, its own hostname, then ``hosts`` (name -> address)."""
    lines = ["127.0.0.1\tlocalhost", "::1\tlocalhost ip6-localhost ip6-loopback", f"127.0.1.1\t{hostname}"]
    for name, address in hosts.items():
        if not HOST_NAME.fullmatch(name):
            raise SandboxError(f"SandboxSpec.hosts: {name!r}: expected a host name (letters, digits, '.', '-', '_')")
        try:
            ipaddress.ip_address(address)
        except ValueError:
            raise SandboxError(f"SandboxSpec.hosts[{name!r}]: {address!r}: expected an IP address") from None
        lines.append(f"{address}\t{name}")
    return "\n".join(lines) + "\n"
