"""Harbor's network allowlist in a real sandbox: allowed names reach their host, every other name,
address and protocol is refused, a forged name in front of another address still reaches only the
allowed host, and nothing is left when the sandbox closes."""

from __future__ import annotations

import os
import subprocess

import pytest

from tmax.sandbox import get_backend, network
from tmax.sandbox.base import SandboxError, SandboxSpec
from tmax.sandbox.egress import Allowlist, requested_name

ALLOWED, OTHER = "deb.debian.org", "security.debian.org"  # both answer plain HTTP from this kind of host


def _host_reaches(url: str) -> bool:
    r = subprocess.run(["curl", "-s", "-m", "10", "-o", "/dev/null", "-w", "%{http_code}", url],
                       capture_output=True, text=True)
    return r.stdout.strip() not in ("", "000")


@pytest.fixture(scope="module")
def online():
    if os.geteuid() != 0 or not network.available()[0]:
        pytest.skip("the allowlist needs root and slirp4netns")
    if not (_host_reaches(f"http://{ALLOWED}/debian/") and _host_reaches(f"http://{OTHER}/")):
        pytest.skip(f"this host reaches neither {ALLOWED} nor {OTHER} over HTTP")


def _codes(sb, *curl_args: str) -> list[str]:
    out = []
    for args in curl_args:
        r = sb.exec(f"curl -s -m 10 -o /dev/null -w '%{{http_code}}' {args}", timeout=30)
        out.append(r.output.strip()[-3:])
    return out


def test_allowlist_by_name(host_env, online):
    spec = host_env.spec(workdir="/app", network=True, allowed_hosts=(ALLOWED,))
    sb = get_backend("bwrap").start(spec)
    try:
        allowed, other, by_address, forged, resolved_elsewhere = _codes(
            sb, f"http://{ALLOWED}/debian/", f"http://{OTHER}/",
            "http://$(getent hosts " + OTHER + " | cut -d' ' -f1)/",
            f"-H 'Host: {ALLOWED}' http://$(getent hosts {OTHER} | cut -d' ' -f1)/debian/",
            f"--resolve {ALLOWED}:80:192.0.2.1 http://{ALLOWED}/debian/")
        assert allowed == "200"
        assert other == "000" and by_address == "000"
        # The proxy connects to the allowed name itself, never to the address the client dialled.
        assert forged == "200" and resolved_elsewhere == "200"
        udp = sb.exec("timeout 3 bash -c 'echo x > /dev/udp/192.0.2.1/9' && echo sent", timeout=10).output
        assert "sent" not in udp
        # The sandbox cannot lift the rules: no CAP_NET_ADMIN in its network namespace.
        assert not sb.exec("ip link set lo down", timeout=10).ok
        proxy = sb.egress
        assert proxy is not None and proxy.poll() is None
    finally:
        sb.close()
    assert proxy.poll() is not None  # the proxy ends with the sandbox


def test_public_reaches_what_the_allowlist_refuses(host_env, online):
    sb = get_backend("bwrap").start(host_env.spec(workdir="/app", network=True))
    try:
        assert _codes(sb, f"http://{OTHER}/") == ["200"]
    finally:
        sb.close()


def test_container_backends_refuse_an_allowlist(host_env):
    spec = SandboxSpec(layers=list(host_env.layers), network=True, allowed_hosts=(ALLOWED,))
    for name in ("podman", "apptainer"):
        with pytest.raises(SandboxError, match="allowlist"):
            get_backend(name).start(spec)


@pytest.mark.parametrize("data, name", [
    (b"GET / HTTP/1.1\r\nHost: Example.org:8080\r\nAccept: */*\r\n\r\n", "Example.org"),
    (b"GET / HTTP/1.1\r\nAccept: */*\r\n\r\n", None),
    (b"\x16\x03\x01\x00\x05garbage", None),
])
def test_requested_name(data, name):
    assert requested_name(data) == name


def test_allowlist_entries():
    a = Allowlist(["deb.debian.org", "*.pythonhosted.org", "192.0.2.0/24", "203.0.113.7"])
    assert a.name("DEB.debian.org.") and a.name("files.pythonhosted.org")
    assert not a.name("pythonhosted.org") and not a.name("evil-deb.debian.org.example")
    assert a.address("192.0.2.55") and a.address("203.0.113.7") and not a.address("203.0.113.8")


def test_policy_changes_while_the_sandbox_runs(host_env, online):
    """Harbor switches a phase's network policy in a running environment: public, none, an allowlist,
    public again, each enforced at once."""
    sb = get_backend("bwrap").start(host_env.spec(workdir="/app", network=True))
    urls = (f"http://{ALLOWED}/debian/", f"http://{OTHER}/")
    try:
        assert _codes(sb, *urls) == ["200", "200"]
        sb.set_egress("no-network")
        assert _codes(sb, *urls) == ["000", "000"]
        assert not sb.exec("getent hosts deb.debian.org", timeout=20).ok  # no DNS either
        sb.set_egress("allowlist", (ALLOWED,))
        assert _codes(sb, *urls) == ["200", "000"]
        sb.set_egress("public")
        assert _codes(sb, *urls) == ["200", "200"] and sb.egress is None
    finally:
        sb.close()


def test_no_forged_mark_and_no_packet_socket_online(host_env, online):
    """The proxy's mark lets its own connections out, and a packet socket on tap0 bypasses every inet
    rule: an online sandbox can make neither (both worked with CAP_NET_RAW kept)."""
    sb = get_backend("bwrap").start(host_env.spec(workdir="/app", network=True, allowed_hosts=(ALLOWED,)))
    try:
        probe = sb.exec("""python3 - <<'PY'
import socket
for what, make in (("mark", lambda: socket.socket().setsockopt(socket.SOL_SOCKET, socket.SO_MARK, 0x746D)),
                   ("packet", lambda: socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0x0300))):
    try:
        make()
        print(what, "allowed")
    except OSError as e:
        print(what, "refused", e.errno)
PY""", timeout=30).output
        assert "mark refused" in probe and "packet refused" in probe, probe
        sb.set_egress("no-network")
        again = sb.exec("python3 -c 'import socket; socket.socket(socket.AF_PACKET, socket.SOCK_RAW)' 2>&1", timeout=30)
        assert not again.ok and "Operation not permitted" in again.output
    finally:
        sb.close()


def test_one_checked_request_per_connection_and_a_bounded_log(host_env, online):
    """A second request on a kept-alive connection, or an absolute-form target, cannot name another
    host behind an allowed one (a shared address or CDN would serve it); refusals cannot fill the disk."""
    sb = get_backend("bwrap").start(host_env.spec(workdir="/app", network=True, allowed_hosts=(ALLOWED,)))
    try:
        out = sb.exec(f"""python3 - <<'PY'
import socket
def ask(payload):
    s = socket.create_connection(("{ALLOWED}", 80), timeout=15)
    s.sendall(payload)
    got = b""
    try:
        while chunk := s.recv(65536):
            got += chunk
    except OSError:
        pass
    return got.count(b"HTTP/1.1 ")
two = (b"GET /debian/ HTTP/1.1\\r\\nHost: {ALLOWED}\\r\\n\\r\\n"
       b"GET / HTTP/1.1\\r\\nHost: {OTHER}\\r\\nConnection: close\\r\\n\\r\\n")
print("pipelined", ask(two))
print("absolute", ask(b"GET http://{OTHER}/ HTTP/1.1\\r\\nHost: {ALLOWED}\\r\\n\\r\\n"))
for _ in range(230):
    try:
        socket.create_connection(("{OTHER}", 80), timeout=5).sendall(b"GET / HTTP/1.1\\r\\nHost: {OTHER}\\r\\n\\r\\n")
    except OSError:
        pass
PY""", timeout=120).output
        assert "pipelined 1" in out and "absolute 0" in out, out
        log = sb.dir / "egress.log"
        assert len(log.read_text().splitlines()) <= 201
    finally:
        sb.close()


def test_online_sandboxes_never_reach_the_hosts_own_addresses(host_env, online):
    """slirp4netns keeps the host's loopback out, but the host's other addresses would carry a
    connection to its services listening on all addresses (it worked before)."""
    import socket
    import threading
    from http.server import BaseHTTPRequestHandler, HTTPServer

    from tmax.sandbox.egress import host_addresses

    addresses = host_addresses()
    if not addresses:
        pytest.skip("this host has no address but loopback")

    class Quiet(BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.end_headers()

        def log_message(self, *a):
            pass

    srv = HTTPServer(("0.0.0.0", 0), Quiet)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    port = srv.server_address[1]
    try:
        assert socket.create_connection((addresses[0], port), timeout=5)  # the host reaches it
        for hosts in ((), (ALLOWED, addresses[0])):
            sb = get_backend("bwrap").start(host_env.spec(workdir="/app", network=True, allowed_hosts=hosts))
            try:
                assert _codes(sb, f"http://{addresses[0]}:{port}/") == ["000"], hosts
                assert _codes(sb, f"http://{ALLOWED}/debian/") == ["200"]
            finally:
                sb.close()
    finally:
        srv.shutdown()
