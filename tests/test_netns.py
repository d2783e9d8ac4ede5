"""Sandboxes on one shared, private network namespace (a task's main sandbox and its sidecars), on
the native backends and the host image: members reach one another by service name on loopback;
nothing else does, the host included; no member can reconfigure the namespace; closing leaves
nothing behind."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from conftest import identities, require_root, still_alive, wait_until
from tmax.sandbox import SandboxError, get_backend
from tmax.sandbox import network as slirp
from tmax.sandbox.netns import SharedNetwork

SERVE = ("(python3 -m http.server 80 --bind 127.0.0.1 --directory /app >/tmp/http.log 2>&1 &); "
         "for i in $(seq 100); do (echo > /dev/tcp/127.0.0.1/80) 2>/dev/null && exit 0; sleep 0.05; done; "
         "cat /tmp/http.log; exit 1")


def fetch(url: str) -> str:
    """A shell command that prints the body at ``url`` or the error, with the sandbox's python3."""
    return (f"python3 -c \"import urllib.request as u\ntry: print(u.urlopen('{url}', timeout=5).read().decode(), "
            "end='')\nexcept OSError as e: print('FAILED', e)\"")


@pytest.fixture
def net():
    require_root()
    n = SharedNetwork()
    yield n
    n.close()


def namespace_of(pid: int) -> tuple[int, int]:
    st = os.stat(f"/proc/{pid}/ns/net")
    return st.st_dev, st.st_ino


def serve_token(sb) -> str:
    token = uuid.uuid4().hex
    r = sb.exec(f"echo {token} > /app/hello.txt && {SERVE}", timeout=30)
    assert r.exit_code == 0, r.output
    return token


def test_members_reach_each_other_by_service_name_and_nobody_else_does(sandbox_factory, backend, net):
    web = sandbox_factory(backend, netns=net, hostname="web")
    # The second member joins by path, as a process that holds no SharedNetwork object would.
    main = sandbox_factory(backend, netns=f"/proc/{os.getpid()}/fd/{net.fd}", hosts={"web": "127.0.0.1"})
    outsider = sandbox_factory(backend, hosts={"web": "127.0.0.1"})
    token = serve_token(web)  # root of the sidecar binds port 80
    assert namespace_of(web.proc.pid) == namespace_of(main.proc.pid) == net.inode()
    assert namespace_of(outsider.proc.pid) != net.inode()

    assert main.exec(fetch("http://web/hello.txt"), timeout=30).output == token + "\n"
    assert main.exec("getent hosts web").output.split() == ["127.0.0.1", "web"]
    assert "FAILED" in outsider.exec(fetch("http://web/hello.txt"), timeout=30).output
    # Members share the network only: each has its own processes.
    assert main.exec("pgrep -f http.server || echo none").output == "none\n"
    try:
        with socket.create_connection(("127.0.0.1", 80), timeout=2) as c:
            c.sendall(b"GET /hello.txt HTTP/1.0\r\n\r\n")
            c.settimeout(2)
            assert token.encode() not in c.recv(65536)
    except OSError:
        pass  # nothing listens on the host's port 80: the sidecar's server is not there


def test_hosts_entries_are_the_sandbox_own_and_the_image_keeps_its_file(sandbox_factory, backend, net):
    host_hosts = Path("/etc/hosts").read_text()
    plain = sandbox_factory(backend, netns=net)
    assert plain.exec("cat /etc/hosts").output == host_hosts  # no entries: the image's file, as it is
    sb = sandbox_factory(backend, netns=net, hosts={"db": "127.0.0.1", "cache.local": "::1"})
    r = sb.exec("getent hosts db cache.local $(hostname); echo '10.9.9.9 extra' >> /etc/hosts && getent hosts extra")
    assert r.output.split() == ["127.0.0.1", "db", "::1", "cache.local", "127.0.1.1", "sandbox", "10.9.9.9", "extra"]
    assert Path("/etc/hosts").read_text() == host_hosts
    assert plain.exec("getent hosts extra || echo unknown").output == "unknown\n"


def test_members_cannot_reconfigure_the_namespace(sandbox_factory, backend, net):
    sb = sandbox_factory(backend, netns=net)
    attempts = ["ip link set lo down", "ip addr add 10.1.2.3/24 dev lo", "ip link add dummy0 type dummy",
                "ip route add 10.5.0.0/16 dev lo", "echo 1024 > /proc/sys/net/ipv4/ip_unprivileged_port_start",
                "python3 -c 'import socket; socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)'"]
    for cmd in attempts:
        r = sb.exec(cmd)
        assert r.exit_code != 0, (cmd, r.output)
    other = sandbox_factory(backend, netns=net)
    r = other.exec("ip -o addr show | awk '{print $2, $4}'; ip route; "
                   "cat /proc/sys/net/ipv4/ip_unprivileged_port_start")
    assert r.output == "lo 127.0.0.1/8\nlo ::1/128\n0\n"
    assert "<LOOPBACK,UP,LOWER_UP>" in other.exec("ip -o link show lo").output
    # What members may do: open ICMP echo sockets (ping health checks), without raw sockets.
    assert other.exec("python3 -c 'import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM, "
                      "socket.IPPROTO_ICMP)'").ok


def test_closing_leaves_nothing_on_the_host(sandbox_factory, backend, run_dir):
    require_root()
    internet = slirp.available()[0]
    net = SharedNetwork(internet=internet)
    ino = net.inode()
    sb = sandbox_factory(backend, netns=net)
    assert sb.exec("(sleep 1000 &); (python3 -m http.server 8080 >/dev/null 2>&1 &); echo started").ok
    members = identities(sb.alive_pids())
    helpers = identities([net.slirp.pid]) if internet else set()
    assert len(members) >= 3 and (helpers or not internet)
    sb.close()
    net.close()
    net.close()  # twice is fine
    assert wait_until(lambda: not still_alive(members | helpers))
    assert wait_until(lambda: not _holders(ino)), _holders(ino)
    if os.path.isdir("/run/netns"):
        assert not [e for e in os.listdir("/run/netns") if _same(f"/run/netns/{e}", ino)]
    assert not list(run_dir.glob("net-*"))  # the slirp4netns log went too
    with pytest.raises(SandboxError, match="closed"):
        sandbox_factory(backend, netns=net)


def _same(path: str, ino: tuple[int, int]) -> bool:
    try:
        st = os.stat(path)
    except OSError:
        return False
    return (st.st_dev, st.st_ino) == ino


def _holders(ino: tuple[int, int]) -> list[str]:
    """Every process that is in the namespace or holds an fd to it."""
    found = []
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        if _same(f"/proc/{pid}/ns/net", ino):
            found.append(f"{pid} in it")
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        found += [f"{pid} fd {fd}" for fd in fds if _same(f"/proc/{pid}/fd/{fd}", ino)]
    return found


def test_internet_is_the_namespace_and_every_member_shares_it(sandbox_factory, backend):
    require_root()
    ok, why = slirp.available()
    if not ok:
        pytest.skip(why)
    with SharedNetwork(internet=True) as net:
        a = sandbox_factory(backend, netns=net)
        b = sandbox_factory(backend, netns=net)
        for sb in (a, b):
            r = sb.exec("ip -o -4 addr show tap0 | awk '{print $4}'; cat /etc/resolv.conf; ip route show default")
            assert r.output.startswith("10.0.2.100/24\nnameserver 10.0.2.3\n"), r.output
            assert "default via 10.0.2.2 dev tap0" in r.output
        # The host's loopback stays out of reach through the NAT.
        with socket.socket() as srv:
            srv.bind(("127.0.0.1", 0))
            srv.listen(1)
            port = srv.getsockname()[1]
            r = a.exec(f"timeout 5 bash -c 'echo > /dev/tcp/10.0.2.2/{port}' && echo CONNECTED || echo refused")
            assert r.output.strip().endswith("refused")


def test_spec_mistakes_are_refused_with_the_field_named(sandbox_factory, backend, net):
    cases = [({"netns": net, "network": True}, "network=True or allowed_hosts with netns"),
             ({"netns": net, "allowed_hosts": ("example.com",)}, "network=True or allowed_hosts with netns"),
             ({"netns": "/proc/self/ns/net"}, "host's own network namespace"),
             ({"netns": "/proc/self/ns/uts"}, "not a network namespace"),
             ({"netns": "/nonexistent/netns"}, "/nonexistent/netns: No such file"),
             ({"hosts": {"bad name": "127.0.0.1"}}, "SandboxSpec.hosts: 'bad name'"),
             ({"hosts": {"db": "localhost"}}, r"SandboxSpec.hosts\['db'\]: 'localhost': expected an IP address")]
    for spec_kw, message in cases:
        with pytest.raises(SandboxError, match=message):
            sandbox_factory(backend, **spec_kw)
    # A namespace that a sandbox's own user namespace owns: its members' root could reconfigure it.
    lone = sandbox_factory(backend)
    owned = f"/proc/{slirp.netns_pid(lone.alive_pids())}/ns/net"
    if backend == "bwrap":  # (unshare makes its sandboxes' namespaces as host root)
        with pytest.raises(SandboxError, match="owned by another user namespace"):
            sandbox_factory(backend, netns=owned)


def test_container_backends_refuse_a_shared_network(host_env, net):
    for name in ("podman", "apptainer"):
        with pytest.raises(SandboxError, match="need a native backend"):
            get_backend(name).start(host_env.spec(netns=net))
        with pytest.raises(SandboxError, match="need a native backend"):
            get_backend(name).start(host_env.spec(hosts={"db": "127.0.0.1"}))


def test_rootless_refuses_with_the_reason():
    """tmax as an ordinary user (uid 1000 of a user namespace of its own, like any rootless run)."""
    code = ("from tmax.sandbox import SandboxError\nfrom tmax.sandbox.netns import SharedNetwork\n"
            "try:\n    SharedNetwork()\nexcept SandboxError as e:\n    print(e)")
    src = str(Path(__file__).resolve().parent.parent / "src")
    r = subprocess.run(["unshare", "--user", "--map-user=1000", "--map-group=1000", sys.executable, "-c", code],
                       env={**os.environ, "PYTHONPATH": src}, capture_output=True, text=True, timeout=60)
    if r.returncode != 0 and "unshare" in r.stderr:
        pytest.skip(f"no user namespace for the rootless run: {r.stderr.strip()[-200:]}")
    assert "needs tmax to run as root" in r.stdout, r.stdout + r.stderr
