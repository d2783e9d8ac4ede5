"""Harbor's ``network_mode = "allowlist"``: an online sandbox that reaches only the hosts it names.

Addresses say little (here every name resolves to one gateway; elsewhere a CDN serves thousands of
names from one address), so the filter works on names. In the sandbox's network namespace, nftables
(set from outside, as host root: the sandbox holds no CAP_NET_ADMIN) lets through loopback and DNS to
slirp4netns's resolver and sends every other TCP connection to this proxy, which listens on loopback
in that namespace. The proxy reads the name the client asks for (TLS SNI or the HTTP Host header),
and for an allowed name connects to that name itself, never to the address the client dialled, so
a forged SNI in front of another address reaches only the allowed host. An IP or CIDR entry allows
connections to those addresses whatever the name. UDP other than DNS, ICMP and IPv6 are dropped.
Names are still resolved for the sandbox (a DNS query can carry data out; the proxy's own lookups
happen outside the sandbox).

The proxy is a process of its own, as host root, in the host's network namespace: it resolves names
as the host does (a resolver the sandbox runs on its own loopback is never asked), and only its
sockets (the listener, and each upstream connection) are made in the sandbox's namespace.
"""

from __future__ import annotations

import ctypes
import ipaddress
import json
import os
import socket
import struct
import subprocess
import sys
import threading

MARK = 0x746D  # the proxy's own connections carry this mark: the rules let them out
SO_ORIGINAL_DST = 80
DNS = "10.0.2.3"
PEEK_BYTES = 8192
MAX_CONNECTIONS = 64
PORT = 15001
TABLE = "tmax_egress"


def host_addresses() -> list[str]:
    """The host's own IPv4 addresses but loopback: slirp4netns would carry a connection to one of them
    to the host's services that listen on all addresses, which no online sandbox may reach."""
    r = subprocess.run(["ip", "-j", "-4", "addr"], capture_output=True, text=True, timeout=10)
    try:
        found = [a["local"] for i in json.loads(r.stdout or "[]") for a in i.get("addr_info", [])]
    except (ValueError, KeyError, TypeError):
        found = []
    return sorted({a for a in found if not a.startswith("127.")})


def _no_host(hosts: list[str]) -> str:
    return f"ip daddr {{ {', '.join(hosts)} }} drop" if hosts else ""


# slirp4netns treats every address of its network but the resolver as an alias of the host's
# loopback (10.0.2.2 is the usual one). --disable-host-loopback refuses them, but how it refuses
# depends on libslirp's errno handling, and one CI run saw a handshake complete; these rules keep
# every packet to them from leaving the namespace at all.
SLIRP_NET = "10.0.2.0/24"
NO_SLIRP_ALIASES = f"ip daddr {SLIRP_NET} reject"  # refused at once, not left to time out


def public(hosts: list[str]) -> str:
    return f"""table inet {TABLE} {{
  chain filter_out {{
    type filter hook output priority 0; policy accept;
    oifname "lo" accept
    ip daddr {DNS} meta l4proto {{ tcp, udp }} th dport 53 accept
    {NO_SLIRP_ALIASES}
    {_no_host(hosts)}
  }}
}}
"""


def ruleset(port: int, hosts: list[str] = ()) -> str:
    """nftables rules for the sandbox's namespace: DNS and loopback out, TCP to the proxy, rest dropped."""
    return f"""table inet {TABLE} {{
  chain nat_out {{
    type nat hook output priority -100; policy accept;
    meta mark {MARK} accept
    oifname "lo" accept
    ip daddr {DNS} meta l4proto {{ tcp, udp }} th dport 53 accept
    meta nfproto ipv4 meta l4proto tcp redirect to :{port}
  }}
  chain filter_out {{
    type filter hook output priority 0; policy drop;
    oifname "lo" accept
    ip daddr {DNS} meta l4proto {{ tcp, udp }} th dport 53 accept
    {NO_SLIRP_ALIASES}
    {_no_host(list(hosts))}
    meta mark {MARK} accept
    ip daddr 127.0.0.1 tcp dport {port} accept
  }}
}}
"""


def deny_all() -> str:
    return f"""table inet {TABLE} {{
  chain filter_out {{
    type filter hook output priority 0; policy drop;
    oifname "lo" accept
  }}
}}
"""


def set_rules(netns_pid: int, mode: str, port: int = PORT) -> None:
    """The rules of one policy in the network namespace of ``netns_pid``: ``public`` (none),
    ``no-network`` (loopback only) or ``allowlist`` (TCP through the proxy on ``port``)."""
    hosts = host_addresses()
    rules = {"public": public(hosts), "no-network": deny_all(), "allowlist": ruleset(port, hosts)}[mode]
    # Replacing is one transaction: the old table goes in the same batch the new one comes in.
    batch = f"table inet {TABLE}\ndelete table inet {TABLE}\n{rules}"
    r = subprocess.run(["nsenter", f"--net=/proc/{netns_pid}/ns/net", "nft", "-f", "-"], input=batch, text=True,
                       capture_output=True, timeout=30)
    if r.returncode != 0:
        raise OSError(f"nft failed: {r.stderr.strip()[-300:]}")


def start(netns_pid: int, hosts: tuple[str, ...], log: str, port: int = PORT) -> subprocess.Popen:
    """Start the proxy for the network namespace of ``netns_pid`` (``set_rules(..., "allowlist")``
    sends its TCP there)."""
    ns = f"/proc/{netns_pid}/ns/net"
    src = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ready_r, ready_w = os.pipe()
    # The proxy exits when this pipe closes: when the sandbox closes, or when we die without closing.
    exit_r, exit_w = os.pipe()
    with open(log, "ab") as fh:
        proc = subprocess.Popen([sys.executable, "-I", "-c",
                                 f"import sys; sys.path.insert(0, {src!r}); from tmax.sandbox import egress; "
                                 f"egress.serve({port}, {ns!r}, sys.argv[1:], {ready_w}, {exit_r})", *hosts],
                                stdin=subprocess.DEVNULL, stdout=fh, stderr=fh, pass_fds=(ready_w, exit_r),
                                start_new_session=True)
    os.close(ready_w)
    os.close(exit_r)
    proc.exit_pipe = exit_w  # closed by stop()
    try:
        with os.fdopen(ready_r, "rb") as ready:
            if ready.read(1) != b"1":
                raise OSError(f"network allowlist: the proxy did not start (see {log})")
    except BaseException:
        stop(proc)
        raise
    return proc


# -- the proxy (runs inside the sandbox's network namespace, as host root) -----------------------

class Allowlist:
    def __init__(self, entries: list[str]):
        self.names, self.suffixes, self.nets = set(), [], []
        for e in entries:
            e = e.strip().lower().rstrip(".")
            try:
                self.nets.append(ipaddress.ip_network(e, strict=False))
            except ValueError:
                if e.startswith("*."):
                    self.suffixes.append(e[1:])  # ".example.com"
                else:
                    self.names.add(e)

    def name(self, host: str) -> bool:
        host = host.lower().rstrip(".")
        return host in self.names or any(host.endswith(s) for s in self.suffixes)

    def address(self, ip: str) -> bool:
        addr = ipaddress.ip_address(ip)
        return any(addr in n for n in self.nets)


def requested_name(data: bytes) -> str | None:
    """The host a client asks for: TLS ClientHello SNI, else the HTTP Host header."""
    if data[:1] == b"\x16":
        return _sni(data)
    head = data.split(b"\r\n\r\n", 1)[0].decode("latin-1", "replace")
    for line in head.split("\r\n")[1:]:
        key, _, value = line.partition(":")
        if key.strip().lower() == "host":
            value = value.strip()
            return value.rsplit(":", 1)[0] if value.count(":") == 1 else value.strip("[]")
    return None


def _sni(data: bytes) -> str | None:
    try:
        pos = 5 + 4 + 2 + 32  # record header, handshake header, version, random
        pos += 1 + data[pos]  # session id
        pos += 2 + struct.unpack(">H", data[pos:pos + 2])[0]  # cipher suites
        pos += 1 + data[pos]  # compression methods
        end = pos + 2 + struct.unpack(">H", data[pos:pos + 2])[0]
        pos += 2
        while pos + 4 <= end:
            kind, size = struct.unpack(">HH", data[pos:pos + 4])
            pos += 4
            if kind == 0:  # server_name: list length, type, name length, name
                name_len = struct.unpack(">H", data[pos + 3:pos + 5])[0]
                return data[pos + 5:pos + 5 + name_len].decode("ascii")
            pos += size
    except (IndexError, struct.error, UnicodeDecodeError):
        return None
    return None


def _original_dst(conn: socket.socket) -> tuple[str, int]:
    raw = conn.getsockopt(socket.SOL_IP, SO_ORIGINAL_DST, 16)
    port, = struct.unpack(">H", raw[2:4])
    return socket.inet_ntoa(raw[4:8]), port


def _peek(conn: socket.socket) -> bytes:
    conn.settimeout(10)
    data = b""
    while len(data) < PEEK_BYTES:
        chunk = conn.recv(PEEK_BYTES - len(data))
        if not chunk:
            break
        data += chunk
        if data[:1] == b"\x16" and len(data) >= 5 and len(data) >= 5 + struct.unpack(">H", data[3:5])[0]:
            break  # the whole ClientHello record
        if data[:1] != b"\x16" and b"\r\n\r\n" in data:
            break
    return data


def _pipe(src: socket.socket, dst: socket.socket) -> None:
    try:
        while chunk := src.recv(65536):
            dst.sendall(chunk)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


_libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWNET = 0x40000000


def _setns(fd: int) -> None:
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        raise OSError(ctypes.get_errno(), "setns")


def _socket_in(netns: int, home: int) -> socket.socket:
    """A TCP socket of the sandbox's namespace; the calling thread stays in the host's."""
    _setns(netns)
    try:
        return socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    finally:
        _setns(home)


_logged = [0]
MAX_LOG_LINES = 200  # the sandbox decides what is logged: the host's disk must not be its to fill


def _log(line: str) -> None:
    _logged[0] += 1
    if _logged[0] <= MAX_LOG_LINES:
        print(ascii(line)[:300], flush=True)
    elif _logged[0] == MAX_LOG_LINES + 1:
        print("(further lines not logged)", flush=True)


class Refused(Exception):
    pass


def _one_request(data: bytes, conn: socket.socket, allow: Allowlist) -> bytes:
    """Plain HTTP: exactly one request goes up, with ``Connection: close``, so every request on a
    kept-alive connection comes back here to be checked; an absolute-form target must be allowed too."""
    head, sep, rest = data.partition(b"\r\n\r\n")
    if not sep:
        raise Refused("no complete request head")
    lines = head.decode("latin-1").split("\r\n")
    target = lines[0].split(" ")[1] if lines[0].count(" ") >= 2 else ""
    if "://" in target:
        host = target.split("://", 1)[1].split("/", 1)[0].rsplit("@", 1)[-1]
        host = host.rsplit(":", 1)[0] if host.count(":") == 1 else host.strip("[]")
        if not allow.name(host):
            raise Refused(f"request target {target[:80]!r}")
    kept, length = [lines[0]], 0
    for line in lines[1:]:
        key = line.split(":", 1)[0].strip().lower()
        if key == "transfer-encoding":
            raise Refused("a chunked request body")
        if key == "content-length":
            length = int(line.split(":", 1)[1].strip() or 0)
        if key not in ("connection", "proxy-connection", "keep-alive"):
            kept.append(line)
    kept.append("Connection: close")
    body = rest[:length]
    while len(body) < length:
        chunk = conn.recv(min(65536, length - len(body)))
        if not chunk:
            break
        body += chunk
    return ("\r\n".join(kept) + "\r\n\r\n").encode("latin-1") + body


def _handle(conn: socket.socket, allow: Allowlist, netns: int, home: int) -> None:
    try:
        ip, port = _original_dst(conn)
        data = _peek(conn)
        name = requested_name(data)
        tls = data[:1] == b"\x16"
        if allow.address(ip):
            address = ip
        elif name and allow.name(name):
            address = socket.gethostbyname(name)  # resolved here: never the address the client dialled
            if not tls:
                data = _one_request(data, conn, allow)
        else:
            _log(f"refused {ip}:{port} (asked for {name!r})")
            return
        up = _socket_in(netns, home)
        up.setsockopt(socket.SOL_SOCKET, socket.SO_MARK, MARK)
        up.settimeout(20)
        up.connect((address, port))
        up.settimeout(None)
        conn.settimeout(None)
        _log(f"allowed {ip}:{port} as {name!r} -> {address}")
        up.sendall(data)
        if tls or allow.address(ip):
            threading.Thread(target=_pipe, args=(up, conn), daemon=True).start()
            _pipe(conn, up)
        else:  # the answer comes back; whatever else the client sends goes nowhere
            threading.Thread(target=_drain, args=(conn,), daemon=True).start()
            _pipe(up, conn)
    except Refused as e:
        _log(f"refused: {e}")
    except (OSError, ValueError, IndexError) as e:
        _log(f"error: {e}")
    finally:
        conn.close()


def _drain(conn: socket.socket) -> None:
    try:
        while conn.recv(65536):
            pass
    except OSError:
        pass


def stop(proc: subprocess.Popen | None) -> None:
    if proc is None:
        return
    try:
        os.close(proc.exit_pipe)
    except OSError:
        pass
    proc.kill()
    proc.wait()


def serve(port: int, netns_path: str, entries: list[str], ready_fd: int, exit_fd: int) -> None:
    threading.Thread(target=lambda: (os.read(exit_fd, 1), os._exit(0)), daemon=True).start()
    allow = Allowlist(entries)
    netns, home = os.open(netns_path, os.O_RDONLY), os.open("/proc/self/ns/net", os.O_RDONLY)
    srv = _socket_in(netns, home)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", port))
    srv.listen(128)
    os.write(ready_fd, b"1")
    os.close(ready_fd)
    slots = threading.BoundedSemaphore(MAX_CONNECTIONS)  # a flood of connections costs the sandbox, not us

    def run(conn: socket.socket) -> None:
        try:
            _handle(conn, allow, netns, home)
        finally:
            slots.release()

    while True:
        conn, _ = srv.accept()
        if not slots.acquire(blocking=False):
            conn.close()
            continue
        threading.Thread(target=run, args=(conn,), daemon=True).start()
