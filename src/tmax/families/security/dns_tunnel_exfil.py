"""Is someone tunnelling data out through DNS? A log export holds each site resolver's dnsmasq log under a
folder named by a hash of the site name (delivered). A query is suspicious when its first label is a long
run of base32 characters; a base domain that receives enough of them is a tunnel, and its first labels,
ordered by the sequence label after them, base32-decode to the stolen data. Variants: `domains` reports
each tunnel with its query and client counts, `decode` reassembles and decodes each tunnel's payload,
`clients` lists which internal hosts used which tunnel and when they started. Higher levels add reply and
cache lines that are no queries, several query types, retransmitted and out-of-order chunks, long hex
labels of CDNs, DNS 0x20 mixed case, the resolver's own queries and two-label public suffixes."""

from __future__ import annotations

import base64
import datetime as dt
from dataclasses import dataclass

from tmax.families.base import Family, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.security import _fleet as fleet

REFERENCE = r'''
import base64
import re
import sys

MIN_LABEL = @MIN_LABEL@  # a suspicious first label has at least this many base32 characters
MIN_QUERIES = @MIN_QUERIES@  # a base domain with at least this many suspicious queries is a tunnel
SUFFIXES = @SUFFIXES@  # public suffixes of two labels: the base domain then has three
SKIP_LOCAL = @SKIP_LOCAL@  # queries from 127.0.0.1 are the resolver's own
QUERY = re.compile(r"^(\w{3} [ 0-9]\d (\d\d:\d\d:\d\d)) dnsmasq\[\d+\]: query\[[A-Z]+\] (\S+) from (\S+)$")
B32 = re.compile(r"[a-z2-7]+")


def base(name):
    labels = name.split(".")
    n = 3 if ".".join(labels[-2:]) in SUFFIXES else 2
    return ".".join(labels[-n:])


def tunnels(log):
    """base domain -> list of (time, client, seq, chunk) of its suspicious queries, in log order."""
    hits = {}
    for line in log.splitlines():
        m = QUERY.match(line)
        if not m:
            continue
        _, when, name, client = m.groups()
        if SKIP_LOCAL and client == "127.0.0.1":
            continue
        labels = name.lower().rstrip(".").split(".")
        if len(labels) < 4 or len(labels[0]) < MIN_LABEL or not B32.fullmatch(labels[0]) or not labels[1].isdigit():
            continue
        hits.setdefault(base(".".join(labels)), []).append((when, client, int(labels[1]), labels[0]))
    return {d: q for d, q in hits.items() if len(q) >= MIN_QUERIES}


def decode(queries):
    chunks = {}
    for _, _, seq, chunk in queries:
        chunks.setdefault(seq, chunk)  # a retransmitted chunk is the same chunk
    data = "".join(chunks[s] for s in sorted(chunks)).upper()
    return base64.b32decode(data + "=" * (-len(data) % 8)).decode()


def report(log, variant):
    out = []
    for d, qs in sorted(tunnels(log).items()):
        if variant == "domains":
            out.append(f"{d} {len(qs)} {len({c for _, c, _, _ in qs})}")
        elif variant == "decode":
            out.append(f"{d} {decode(qs)}")
        else:
            first = {}
            for when, client, _, _ in qs:
                first.setdefault(client, when)
            out += [f"{c} {d} {first[c]}" for c in first]
    return "".join(x + "\n" for x in sorted(out))


if __name__ == "__main__":  # dnstunnel.py LOG domains|decode|clients
    sys.stdout.write(report(open(sys.argv[1]).read(), sys.argv[2]))
'''

BENIGN = ("www.google.com", "api.github.com", "outlook.office365.com", "time.cloudflare.com", "pypi.org",
          "registry.npmjs.org", "login.microsoftonline.com", "s3.eu-west-1.amazonaws.com", "slack.com",
          "updates.signal.org", "ocsp.digicert.com", "fonts.gstatic.com", "www.bbc.co.uk", "intranet.corp.lan")
TUNNEL_BASES = ("cdn-sync", "telemetry-hub", "updatecheck", "static-img", "metrics-edge", "cloudfeeds")
TLDS = ("net", "com", "io", "top", "xyz")
SECRETS = ("user=svc_backup;pass=Winter2026!;host=db01", "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCY",
           "customers.csv rows=18211 sha1=3f1a0c9e", "vpn.ovpn auth-user-pass alice:Sp1ngTime#4",
           "ssh-ed25519 key of deploy@ci, passphrase none", "payroll_2026_Q3.xlsx 48211 bytes")


@dataclass(frozen=True)
class Knobs:
    noise: int  # benign queries per resolver log
    tunnels: int  # tunnel domains per log
    chunk: int  # payload bytes per chunk (8n+... so labels run long)
    traps: int  # 1: reply lines, query types; 2: retransmits, disorder; 3: hex labels, 0x20; 4: local, co.uk
    decoys: int  # other sites of the export


@register
class DnsTunnelExfil(Family):
    name = "dns_tunnel_exfil"
    domain = "security"
    skill_types = ("Network Security", "Forensics")
    primitive_skills = ("base32 decoding", "regular expressions", "syslog timestamp parsing",
                        "false-positive suppression", "timeline reconstruction")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("domains", "decode", "clients")
    levels = {0: Knobs(noise=20, tunnels=1, chunk=15, traps=0, decoys=2),
              1: Knobs(noise=50, tunnels=1, chunk=15, traps=1, decoys=2),
              2: Knobs(noise=90, tunnels=2, chunk=20, traps=2, decoys=3),
              3: Knobs(noise=140, tunnels=2, chunk=20, traps=3, decoys=3),
              4: Knobs(noise=200, tunnels=3, chunk=25, traps=4, decoys=3)}

    def _log(self, t, start):
        k, rng = t.knobs, t.rng
        clients = [f"10.{rng.randrange(1, 40)}.{rng.randrange(256)}.{rng.randrange(2, 250)}" for _ in range(6)]
        events = [(rng.random(), rng.choice(clients), rng.choice(BENIGN)) for _ in range(k.noise)]
        if k.traps >= 3:  # CDN object names: long, but hex (0, 1, 8, 9 are no base32)
            events += [(rng.random(), rng.choice(clients), f"{rng.randbytes(16).hex()}.{rng.randrange(10)}.edge.fastly-cdn.net")
                       for _ in range(k.noise // 10)]
        if k.traps >= 4:  # the resolver's own lookups of a tunnel-shaped name
            events += [(rng.random(), "127.0.0.1", f"{'a' * 30}.{i}.dnssec-probe.net") for i in range(4)]
        for _ in range(k.tunnels):
            suffix = rng.choice(TLDS) if k.traps < 4 or rng.random() < 0.5 else "co.uk"
            dom = f"{rng.choice(TUNNEL_BASES)}{rng.randrange(10, 99)}.{suffix}"
            data = rng.choice(SECRETS).encode()
            # pieces of k.chunk bytes (a multiple of 5, so their base32 joins up); a short tail joins the piece
            # before it, so that every label stays long enough to be suspicious
            cuts = list(range(0, len(data), k.chunk))
            if len(data) - cuts[-1] < 10 and len(cuts) > 1:
                cuts.pop()
            chunks = [base64.b32encode(data[a:b]).decode().rstrip("=").lower()
                      for a, b in zip(cuts, cuts[1:] + [len(data)])]
            sends = list(enumerate(chunks))
            if k.traps >= 2:  # retransmits and a reordered pair
                sends += [sends[rng.randrange(len(sends))] for _ in range(2)]
                rng.shuffle(sends)
            users = rng.sample(clients, 1 + (k.traps >= 2))
            # a tunnel sends in order: sorted random places among the noise keep it
            places = sorted(rng.random() for _ in sends)
            events += [(at, rng.choice(users), f"{c}.{seq}.{rng.choice(['s', 'x', 'q'])}.{dom}")
                       for at, (seq, c) in zip(places, sends)]
        lines, when = [], start
        for _, client, name in sorted(events):
            when += dt.timedelta(seconds=rng.randrange(1, 40))
            if k.traps >= 3 and rng.random() < 0.3:
                name = "".join(ch.upper() if rng.random() < 0.5 else ch for ch in name)
            qtype = rng.choice(["A", "AAAA", "TXT", "MX"]) if k.traps >= 1 else "A"
            stamp = f"{when:%b} {when.day:2d} {when:%H:%M:%S}"
            lines.append(f"{stamp} dnsmasq[{812}]: query[{qtype}] {name} from {client}")
            if k.traps >= 1 and rng.random() < 0.5:
                lines.append(f"{stamp} dnsmasq[{812}]: " + rng.choice([f"forwarded {name} to 1.1.1.1",
                                                                         f"reply {name} is NXDOMAIN",
                                                                         f"cached {name} is <CNAME>"]))
        return "".join(x + "\n" for x in lines)

    def output_case(self, t: TaskBuilder) -> None:
        k, rng, variant = t.knobs, t.rng, t.variant
        min_label = 16
        src = fill(REFERENCE, MIN_LABEL=min_label, MIN_QUERIES=3, SUFFIXES=("co.uk",) if k.traps >= 4 else (),
                   SKIP_LOCAL=k.traps >= 4)
        ref = run_python(src)
        start = dt.datetime(2026, 1, 1) + dt.timedelta(minutes=rng.randrange(400000))
        logs, truth = fleet.pick(t, lambda: [self._log(t, start) for _ in range(1 + k.decoys)],
                                 lambda x: ref["report"](x, variant))
        target = fleet.ship(t, "/app/resolvers", [{"dnsmasq.log": x} for x in logs])
        who = fleet.intro(t, "/app/resolvers", "yesterday's logs of our site resolvers, each resolver's "
                          "`dnsmasq.log`", "site", target)
        rules = ["Only `query[...]` lines are queries" + (" (of any type; `forwarded`, `reply` and `cached` lines are "
                                                          "not)" if k.traps >= 1 else "") + ".",
                 f"A query name is suspicious when it has at least four labels, its first label is at least "
                 f"{min_label} characters of the base32 alphabet (`a-z`, `2-7`) and its second label is a decimal "
                 "sequence number.",
                 "Its base domain is its last two labels" + (" (three when the last two are `co.uk`)" if k.traps >= 4
                                                              else "") + "; a base domain with at least 3 suspicious "
                 "queries is a tunnel."]
        if k.traps >= 3:
            rules.append("DNS names are case-insensitive: compare them lower-cased (and report them so).")
        if k.traps >= 4:
            rules.append("Queries from 127.0.0.1 are the resolver's own: ignore them.")
        t.say(" ".join(rules))
        if variant == "domains":
            t.say("Write one line per tunnel: `<base domain> <number of suspicious queries> <number of distinct "
                  "clients that sent them>`.")
        elif variant == "decode":
            t.say("Each tunnel carries one payload: its suspicious queries' first labels, ordered by their sequence "
                  "numbers" + (" (a retransmitted sequence number repeats the same chunk: use it once)" if k.traps >= 2
                               else "") + " and joined, are the unpadded base32 of the payload (decode them "
                  "upper-cased, with `=` padding added). Write one line per tunnel: `<base domain> <payload as "
                  "text>`.")
        else:
            t.say("Write one line per client and tunnel it sent suspicious queries to: `<client address> <base "
                  "domain> <HH:MM:SS of the client's first such query>`.")
        t.say("Sort the lines in byte order (`LC_ALL=C sort`).")
        fleet.solve(t, who, "dnstunnel.py", src, "/app/resolvers/{KEY}/dnsmasq.log", variant, "/app/out/tunnels.txt")
        t.expect_output("/app/out/tunnels.txt", truth, "the tunnel report")
