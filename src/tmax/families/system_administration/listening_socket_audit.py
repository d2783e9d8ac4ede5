"""Audit what a host listens on from a saved `ss -tulpn` snapshot. Variants: the ports reachable from
outside (bound beyond loopback), the listening ports a port allowlist does not permit, and the ports
each process holds. Traps by level: UDP (UNCONN is its listening state) and IPv6, sockets shared by
several processes and the dual-stack `*` address, interface-scoped addresses (`%lo` is loopback),
sockets with no process column and connected sockets from `-a`, then IPv4-mapped IPv6 loopback."""

from __future__ import annotations

from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import fill, host_files, run_python
from tmax.families.unseen import unseen

REFERENCE = r'''
import re
import sys

VARIANT = @VARIANT@
LISTENING = {"tcp": "LISTEN", "udp": "UNCONN"}


def loopback(addr):
    if "%" in addr:
        addr, scope = addr.rsplit("%", 1)
        if scope == "lo":
            return True
    addr = addr.strip("[]")
    if addr.startswith("::ffff:"):
        addr = addr[7:]
    return addr == "::1" or addr.startswith("127.")


def sockets(path):
    """(proto, port, loopback?, process names) of every listening socket in an ss snapshot."""
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            parts = line.split()
            if len(parts) < 6 or parts[0] not in LISTENING or parts[1] != LISTENING[parts[0]]:
                continue
            addr, port = parts[4].rsplit(":", 1)
            names = sorted(set(re.findall(r'\("([^"]+)",pid=', " ".join(parts[6:]))))
            out.append((parts[0], int(port), loopback(addr), names or ["-"]))
    return out


def allowed(path):
    with open(path, encoding="utf-8") as f:
        return {ln.split("#")[0].strip() for ln in f if ln.split("#")[0].strip()}


def report(host, snapshot, policy=None):
    socks = sockets(snapshot)
    groups = {}
    if VARIANT == "exposed":
        for proto, port, lo, names in socks:
            if not lo:
                groups.setdefault((proto, port), set()).update(names)
        rows = [f"{host} {p} {n} {','.join(sorted(v))}" for (p, n), v in sorted(groups.items())]
    elif VARIANT == "unexpected":
        ok = allowed(policy)
        for proto, port, lo, names in socks:
            if f"{proto}/{port}" not in ok:
                groups.setdefault((proto, port), set()).update(names)
        rows = [f"{host} {p}/{n} {','.join(sorted(v))}" for (p, n), v in sorted(groups.items())]
    else:
        for proto, port, lo, names in socks:
            for name in names:
                groups.setdefault(name, set()).add((proto, port))
        rows = [f"{host} {name} {','.join(f'{p}/{n}' for p, n in sorted(v))}" for name, v in sorted(groups.items())]
    return "".join(r + "\n" for r in rows)


if __name__ == "__main__":
    sys.stdout.write(report(*sys.argv[1:]))
'''

# (process, proto, port, usual bind) of the services a host may run; bind "lo" is loopback only.
SERVICES = [("sshd", "tcp", 22, "any"), ("nginx", "tcp", 80, "any"), ("nginx", "tcp", 443, "any"),
            ("postgres", "tcp", 5432, "lo"), ("mysqld", "tcp", 3306, "any"), ("redis-server", "tcp", 6379, "lo"),
            ("node", "tcp", 3000, "any"), ("java", "tcp", 8080, "any"), ("java", "tcp", 8443, "any"),
            ("memcached", "tcp", 11211, "lo"), ("master", "tcp", 25, "any"), ("dockerd", "tcp", 2375, "any"),
            ("prometheus", "tcp", 9090, "any"), ("node_exporter", "tcp", 9100, "any"), ("cupsd", "tcp", 631, "lo"),
            ("chronyd", "udp", 323, "lo"), ("chronyd", "udp", 123, "any"), ("avahi-daemon", "udp", 5353, "any"),
            ("dhclient", "udp", 68, "any"), ("rpcbind", "udp", 111, "any"), ("rpcbind", "tcp", 111, "any"),
            ("named", "udp", 53, "any"), ("named", "tcp", 53, "any"), ("snmpd", "udp", 161, "any"),
            ("systemd-resolve", "udp", 53, "resolver"), ("systemd-resolve", "tcp", 53, "resolver"),
            ("grafana", "tcp", 3001, "any"), ("etcd", "tcp", 2379, "lo"), ("vsftpd", "tcp", 21, "any")]
PUBLIC = ("10.0.3.15", "192.168.40.12", "172.31.9.200")

ASKS = {
    "exposed": ("which ports are reachable from outside the host: every listening socket bound to an address that is "
                "not loopback (loopback is 127.0.0.0/8 and ::1). One line per protocol and port, as `<HOST> <proto> "
                "<port> <process>[,<process>...]`, naming each process that holds such a socket on that port once "
                "(names in byte order), the lines sorted by protocol, then port numerically"),
    "unexpected": ("which listening ports the policy in `/app/policy/allowed-ports` does not permit (it lists "
                   "`<proto>/<port>` entries, one per line, `#` starting a comment); loopback sockets count too. One "
                   "line per protocol and port, as `<HOST> <proto>/<port> <process>[,<process>...]`, naming each "
                   "process that holds a socket on it once (names in byte order), the lines sorted by protocol, then "
                   "port numerically"),
    "by_process": ("which listening ports each process holds: one line per process name, as `<HOST> <process> "
                   "<proto>/<port>[,<proto>/<port>...]`, each port once, the ports sorted by protocol then "
                   "numerically, the lines sorted by process name in byte order"),
}


@dataclass(frozen=True)
class Knobs:
    services: int  # services drawn
    udp6: bool  # UDP sockets and IPv6 listeners
    shared: bool  # sockets held by several processes; the dual-stack `*` address
    scoped: bool  # interface-scoped addresses, sockets without process info, connected sockets (-a)
    mapped: bool  # IPv4-mapped IPv6 loopback; more connected sockets


@register
class ListeningSocketAudit(Family):
    name = "listening_socket_audit"
    domain = "system_administration"
    skill_types = ("Networking", "Service Management")
    primitive_skills = ("ss output parsing", "loopback address recognition", "security baseline auditing",
                        "sorting with tie-breaks", "input validation")
    variants = ("exposed", "unexpected", "by_process")
    levels = {0: Knobs(services=6, udp6=False, shared=False, scoped=False, mapped=False),
              1: Knobs(services=10, udp6=True, shared=False, scoped=False, mapped=False),
              2: Knobs(services=14, udp6=True, shared=True, scoped=False, mapped=False),
              3: Knobs(services=18, udp6=True, shared=True, scoped=True, mapped=False),
              4: Knobs(services=24, udp6=True, shared=True, scoped=True, mapped=True)}

    def _sockets(self, t: TaskBuilder):
        """(proto, state, local, peer, process column) rows of the snapshot, in ss's order."""
        k, rng = t.knobs, t.rng
        pool = [s for s in SERVICES if k.udp6 or (s[1] == "tcp" and s[3] != "resolver")]
        rows = []
        pid = rng.randrange(300, 900)
        for name, proto, port, bind in rng.sample(pool, min(k.services, len(pool))):
            pid += rng.randrange(3, 400)
            holders = [(name, pid)]
            if k.shared and name in ("nginx", "master", "named", "java") and rng.random() < 0.7:
                holders += [(name, pid + i) for i in range(1, rng.randrange(2, 4))]  # workers share the socket
            if k.shared and name == "master" and rng.random() < 0.6:
                holders.append(("smtpd", pid + 9))
            if bind == "resolver":
                addrs = ["127.0.0.53%lo" if k.scoped else "127.0.0.53", "127.0.0.54"]
            elif bind == "lo" or rng.random() < 0.15:
                addrs = ["127.0.0.1"] + (["[::1]"] if k.udp6 and rng.random() < 0.5 else [])
                if k.mapped and rng.random() < 0.5:
                    addrs = ["[::ffff:127.0.0.1]"]
            else:
                r = rng.random()
                if k.shared and r < 0.25:
                    addrs = ["*"]
                elif r < 0.45:
                    addrs = [rng.choice(PUBLIC)]
                else:
                    addrs = ["0.0.0.0"] + (["[::]"] if k.udp6 and rng.random() < 0.6 else [])
                if k.scoped and proto == "udp" and rng.random() < 0.4:
                    addrs = [f"0.0.0.0%{rng.choice(['eth0', 'ens3'])}"]
            users = "users:(" + ",".join(f'("{n}",pid={p},fd={rng.randrange(3, 30)})' for n, p in holders) + ")"
            if k.scoped and rng.random() < 0.12:
                users = ""  # owned by another user: ss run without root shows no process
            state = "LISTEN" if proto == "tcp" else "UNCONN"
            for a in addrs:
                peer = "[::]:*" if a.startswith("[") else ("*:*" if a == "*" else "0.0.0.0:*")
                rows.append((proto, state, f"{a}:{port}", peer, users))
        if k.scoped:  # `ss -tulapn`: connected sockets are in the snapshot too, and are not listeners
            for _ in range(rng.randrange(3, 8) + (8 if k.mapped else 0)):
                name, proto, port, _ = rng.choice([s for s in pool if s[3] == "any"])
                state = rng.choice(["ESTAB", "ESTAB", "TIME-WAIT"]) if proto == "tcp" else "ESTAB"
                peer = f"203.0.113.{rng.randrange(1, 250)}:{rng.randrange(30000, 65000)}"
                users = f'users:(("{name}",pid={rng.randrange(900, 9000)},fd=5))'
                rows.append((proto, state, f"{rng.choice(PUBLIC)}:{port}", peer, users))
        rng.shuffle(rows)
        rows.sort(key=lambda r: r[0] != "udp")  # ss prints the UDP table, then the TCP one
        return rows

    @staticmethod
    def _render(rows) -> str:
        out = [f"{'Netid':<6}{'State':<10}{'Recv-Q':<7}{'Send-Q':<7}{'Local Address:Port':>28} "
               f"{'Peer Address:Port':<28}Process"]
        for proto, state, local, peer, users in rows:
            send = "128" if state == "LISTEN" else "0"
            out.append(f"{proto:<6}{state:<10}{'0':<7}{send:<7}{local:>28} {peer:<28}{users}")
        return "\n".join(line.rstrip() for line in out) + "\n"

    def _policy(self, t: TaskBuilder, rows) -> str:
        """An allowlist that permits most of what listens, and some ports nothing uses."""
        rng = t.rng
        seen = sorted({(r[0], int(r[2].rsplit(":", 1)[1])) for r in rows if r[1] in ("LISTEN", "UNCONN")})
        keep = [s for s in seen if rng.random() < 0.65]
        extra = [(s[1], s[2]) for s in rng.sample(SERVICES, 4)]
        lines = ["# ports this host class may listen on"]
        for proto, port in sorted(set(keep) | set(extra)):
            note = f"  # {rng.choice(['ticket', 'CAB', 'legacy'])}" if rng.random() < 0.2 else ""
            lines.append(f"{proto}/{port}{note}")
        return "\n".join(lines) + "\n"

    def output_case(self, t: TaskBuilder) -> None:
        k = t.knobs
        src = fill(REFERENCE, VARIANT=repr(t.variant))
        ref = run_python(src)
        for _ in range(30):
            rows = self._sockets(t)
            files = {"/app/snapshots/ss-tulpn.txt": self._render(rows)}
            if t.variant == "unexpected":
                files["/app/policy/allowed-ports"] = self._policy(t, rows)
            if self._report(ref, "HOST", files).count("\n") >= 2:
                break
        else:
            raise FamilyError(f"family {self.name}: no snapshot with two {t.variant} lines in 30 draws")
        for path, text in files.items():
            t.add_file(path, text)
        host = unseen(t, lambda: t.code(2))
        truth = self._report(ref, host, files)
        cmd = "ss -tulapn" if k.scoped else "ss -tulpn"
        t.say(f"`/app/snapshots/ss-tulpn.txt` is what `{cmd}` printed on one of our hosts. Work out {ASKS[t.variant]}.")
        rules = ["A TCP socket listens in state LISTEN" + (", a UDP socket in state UNCONN" if k.udp6 else "") + "."]
        if k.shared:
            rules.append("A socket may be held by several processes (all named in its process column); `*` as the "
                         "address means every address, IPv4 and IPv6.")
        if k.scoped:
            rules.append("An address with `%lo` is scoped to the loopback interface and so is loopback; other `%<if>` "
                         "scopes are not. Connected sockets (ESTAB, TIME-WAIT) are not listening. A socket with no "
                         "process column belongs to another user: name its process `-`.")
        if k.mapped:
            rules.append("IPv4-mapped IPv6 addresses (`[::ffff:a.b.c.d]`) are the IPv4 address they map.")
        t.say(" ".join(rules))
        t.say("HOST is the host's inventory name, given below; every line is filed under it.")
        var = t.deliver(host, "the inventory name of the host")
        policy = " /app/policy/allowed-ports" if t.variant == "unexpected" else ""
        t.add_solution_file("sockets.py", src)
        t.solve(f'test -n "{var}"\nmkdir -p /app/out\n'
                f'python3 /solution/sockets.py "{var}" /app/snapshots/ss-tulpn.txt{policy} > /app/out/sockets.txt')
        t.expect_output("/app/out/sockets.txt", truth, "the report")

    @staticmethod
    def _report(ref, host, files):
        with host_files(files) as (_, paths):
            return ref["report"](host, *paths)
