"""Would these packets get through? Evaluate an iptables-save style INPUT ruleset (first match wins,
user chains with jumps and RETURN, default policies, non-terminating LOG, negation, port ranges,
multiport, conntrack state, interface wildcards) against one scan run's probes. Variants: each probe's
verdict (and, higher up, the rule that decided it) (verdicts); the packet counter every rule would show
after the run, counting non-terminating and jump matches too (counters); or which probes would change
verdict if one named rule were deleted (what_if). Over 500 lines: each variant has its own reference
program tail and level-0 question, kept beside the shared rule generator."""

from __future__ import annotations

import hashlib
import ipaddress
import random
from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.unseen import distinct, unseen, visible_numbers

REFERENCE = r'''
import hashlib
import ipaddress
import shlex
import sys

SHOW_RULE = @SHOW_RULE@
JOB = "@@JOB@@"  # the delivered scan job number, put in at solve time


def ports(spec):
    out = []
    for part in spec.split(","):
        lo, _, hi = part.partition(":")
        out.append((int(lo), int(hi or lo)))
    return out


def parse(text):
    policy, chains = {}, {}
    for line in text.splitlines():
        line = line.strip()
        if line.startswith(":"):
            name, pol = line[1:].split()[:2]
            chains.setdefault(name, [])
            if pol != "-":
                policy[name] = pol
        elif line.startswith("-A "):
            tok = shlex.split(line)
            rule, neg, i = {"conds": [], "target": None}, False, 0
            while i < len(tok):
                t = tok[i]
                if t == "!":
                    neg = True
                    i += 1
                    continue
                arg = tok[i + 1] if i + 1 < len(tok) else ""
                if t == "-A":
                    chain = arg
                elif t in ("-s", "--source"):
                    rule["conds"].append(("src", neg, ipaddress.ip_network(arg, strict=False)))
                elif t in ("-i", "--in-interface"):
                    rule["conds"].append(("iface", neg, arg))
                elif t in ("-p", "--protocol"):
                    rule["conds"].append(("proto", neg, arg))
                elif t in ("--dport", "--destination-port", "--dports", "--destination-ports"):
                    rule["conds"].append(("dport", neg, ports(arg)))
                elif t in ("--ctstate", "--state"):
                    rule["conds"].append(("state", neg, arg.split(",")))
                elif t in ("-j", "--jump"):
                    rule["target"] = arg
                elif t not in ("-m", "--match", "--log-prefix", "--log-level", "--reject-with"):
                    raise ValueError("unknown option " + t)
                neg = False
                i += 2
            chains.setdefault(chain, []).append(rule)
    return policy, chains


def matches(cond, probe):
    kind, neg, value = cond
    if kind == "src":
        ok = probe["src"] in value
    elif kind == "iface":
        ok = probe["iface"].startswith(value[:-1]) if value.endswith("+") else probe["iface"] == value
    elif kind == "proto":
        ok = probe["proto"] == value
    elif kind == "dport":
        ok = probe["dport"] is not None and any(lo <= probe["dport"] <= hi for lo, hi in value)
    else:
        ok = probe["state"] in value
    return ok != neg


def run_chain(chains, name, probe):
    """(verdict, 'CHAIN:n') or (None, None) when the chain falls off its end or RETURNs."""
    for n, rule in enumerate(chains.get(name, []), 1):
        if not all(matches(c, probe) for c in rule["conds"]):
            continue
        target = rule["target"]
        if target in ("ACCEPT", "DROP", "REJECT"):
            return target, f"{name}:{n}"
        if target == "RETURN":
            return None, None
        if target == "LOG" or target is None:
            continue
        verdict, where = run_chain(chains, target, probe)
        if verdict:
            return verdict, where
    return None, None


def run_tag(salt, job):
    return hashlib.sha256(f"{salt}:{job}".encode()).hexdigest()[:12]


def evaluate(rules_text, probes_text, job=None):
    policy, chains = parse(rules_text)
    out, tag = [], None
    for line in probes_text.splitlines():
        f = line.strip().split(",")
        if line.startswith("# salt "):
            tag = run_tag(line.split()[2], job)
            continue
        if not line.strip() or line.startswith("#") or f[0] == "run":
            continue
        if job is not None:
            if f[0] != tag:
                continue
            f = f[1:]
        pid, iface, proto, src, dport, state = f
        probe = {"iface": iface, "proto": proto, "src": ipaddress.ip_address(src),
                 "dport": None if dport == "-" else int(dport), "state": state}
        verdict, where = run_chain(chains, "INPUT", probe)
        if verdict is None:
            verdict, where = policy.get("INPUT", "ACCEPT"), "INPUT:policy"
        out.append(f"{pid} {verdict} {where}" if SHOW_RULE else f"{pid} {verdict}")
    return "".join(o + "\n" for o in out)


if __name__ == "__main__":
    if len(sys.argv) == 4:  # RULES PROBES JOB
        with open(sys.argv[1]) as a, open(sys.argv[2]) as b:
            sys.stdout.write(evaluate(a.read(), b.read(), sys.argv[3]))
    else:
        rules, _, probes = sys.stdin.read().partition("\n---\n")
        sys.stdout.write(evaluate(rules, probes, JOB))
'''

# Level 0 asks only which probes are the job's: one hash, one grep.
SELECT = r'''
import hashlib
import sys

TAG_LEN = @TAG_LEN@
JOB = "@@JOB@@"  # the delivered scan job number, put in at solve time


def select(probes_text, job):
    salt, out = None, []
    for line in probes_text.splitlines():
        if line.startswith("# salt "):
            salt = line.split()[2]
            continue
        parts = line.split(",")
        if salt and len(parts) > 1 and parts[0] == hashlib.sha256(f"{salt}:{job}".encode()).hexdigest()[:TAG_LEN]:
            out.append(parts[1])
    return "".join(i + "\n" for i in out)


if __name__ == "__main__":
    if len(sys.argv) == 3:  # PROBES JOB
        with open(sys.argv[1]) as f:
            sys.stdout.write(select(f.read(), sys.argv[2]))
    else:
        sys.stdout.write(select(sys.stdin.read(), JOB))
'''

# The counters and what_if variants: REFERENCE's parsing and matching, another question at the end.
VARIANT_TAIL = r'''
import copy

VARIANT = @VARIANT@
TERMINAL = ("ACCEPT", "DROP", "REJECT")


def job_probes(probes_text, job):
    """(the `# delete <chain>:<n>` rule or None, [(id, probe)] of the job's probes in file order)."""
    out, tag, delete = [], None, None
    for line in probes_text.splitlines():
        f = line.strip().split(",")
        if line.startswith("# salt "):
            tag = run_tag(line.split()[2], job)
            continue
        if line.startswith("# delete "):
            delete = line.split()[2]
            continue
        if not line.strip() or line.startswith("#") or f[0] != tag:
            continue
        pid, iface, proto, src, dport, state = f[1:]
        out.append((pid, {"iface": iface, "proto": proto, "src": ipaddress.ip_address(src),
                          "dport": None if dport == "-" else int(dport), "state": state}))
    return delete, out


def trace(chains, name, probe, hits):
    """Like run_chain, counting every rule that matches the probe where evaluation reaches it."""
    for n, rule in enumerate(chains.get(name, []), 1):
        if not all(matches(c, probe) for c in rule["conds"]):
            continue
        where = f"{name}:{n}"
        hits[where] = hits.get(where, 0) + 1
        target = rule["target"]
        if target in TERMINAL:
            return target
        if target == "RETURN":
            return None
        if target == "LOG" or target is None:
            continue
        verdict = trace(chains, target, probe, hits)
        if verdict:
            return verdict
    return None


def counters(rules_text, probes_text, job):
    policy, chains = parse(rules_text)
    hits, fell = {}, 0
    for _, probe in job_probes(probes_text, job)[1]:
        if trace(chains, "INPUT", probe, hits) is None:
            fell += 1
    rows = [f"{name}:{n} {hits[f'{name}:{n}']}" for name in chains for n in range(1, len(chains[name]) + 1)
            if f"{name}:{n}" in hits]
    if fell:
        rows.append(f"INPUT:policy {fell}")
    return "".join(r + "\n" for r in rows)


def verdict(policy, chains, probe):
    return run_chain(chains, "INPUT", probe)[0] or policy.get("INPUT", "ACCEPT")


def what_if(rules_text, probes_text, job):
    policy, chains = parse(rules_text)
    delete, probes = job_probes(probes_text, job)
    name, _, n = delete.partition(":")
    after = copy.deepcopy(chains)
    del after[name][int(n) - 1]
    out = []
    for pid, probe in probes:
        a, b = verdict(policy, chains, probe), verdict(policy, after, probe)
        if a != b:
            out.append(f"{pid} {a} {b}")
    return "".join(o + "\n" for o in out)


def report(rules_text, probes_text, job):
    return {"counters": counters, "what_if": what_if}[VARIANT](rules_text, probes_text, job)


if __name__ == "__main__":
    if len(sys.argv) >= 4:  # RULES PROBES JOB [CHAIN:N]
        with open(sys.argv[1]) as a, open(sys.argv[2]) as b:
            probes = b.read()
            if len(sys.argv) > 4:
                probes = f"# delete {sys.argv[4]}\n" + probes
            sys.stdout.write(report(a.read(), probes, sys.argv[3]))
    else:
        rules, _, probes = sys.stdin.read().partition("\n---\n")
        sys.stdout.write(report(rules, probes, JOB))
'''

# Level 0 of counters and what_if: the job's probes per protocol, or the job's distinct source addresses.
ATOMIC_VARIANT = r'''
import hashlib
import ipaddress
import sys

VARIANT = @VARIANT@
JOB = "@@JOB@@"  # the delivered scan job number, put in at solve time


def rows(probes_text, job):
    salt, out = None, []
    for line in probes_text.splitlines():
        if line.startswith("# salt "):
            salt = line.split()[2]
            continue
        parts = line.strip().split(",")
        if salt and len(parts) > 6 and parts[0] == hashlib.sha256(f"{salt}:{job}".encode()).hexdigest()[:12]:
            out.append(parts[1:])
    return out


def select(probes_text, job):
    found = rows(probes_text, job)
    if VARIANT == "counters":
        counts = {}
        for r in found:
            counts[r[2]] = counts.get(r[2], 0) + 1
        return "".join(f"{proto} {n}\n" for proto, n in sorted(counts.items()))
    return "".join(a + "\n" for a in sorted({r[3] for r in found}, key=ipaddress.ip_address))


if __name__ == "__main__":
    if len(sys.argv) == 3:  # PROBES JOB
        with open(sys.argv[1]) as f:
            sys.stdout.write(select(f.read(), sys.argv[2]))
    else:
        sys.stdout.write(select(sys.stdin.read(), JOB))
'''


def variant_source(variant: str) -> str:
    """The counters / what_if program: REFERENCE up to its evaluate(), then VARIANT_TAIL."""
    head = REFERENCE.split("\ndef evaluate(", 1)[0]
    return fill(head + VARIANT_TAIL, SHOW_RULE=False, VARIANT=repr(variant))


def atomic_source(variant: str) -> str:
    """Level 0's program for ``variant``."""
    return fill(SELECT, TAG_LEN=12) if variant == "verdicts" else fill(ATOMIC_VARIANT, VARIANT=repr(variant))


IFACES = ["eth0", "eth1", "lo", "wg0"]
SERVICE_PORTS = [22, 25, 53, 80, 110, 123, 143, 443, 993, 3306, 5432, 6379, 8080, 8443, 9090, 9100]


def _net(rng, prefix=None):
    prefix = prefix or rng.choice([8, 16, 24, 24, 28, 32])
    first = rng.choice([10, 172, 192, 198, 203, 45, 185])
    addr = ipaddress.ip_address(f"{first}.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(256)}")
    net = ipaddress.ip_network(f"{addr}/{prefix}", strict=False)
    return str(net) if prefix != 32 else str(net.network_address)


class _Rules:
    def __init__(self, rng, level):
        self.rng, self.level = rng, level
        self.nets: list[str] = []
        self.ports: list[int] = []

    def cidr(self, prefix=None):
        n = _net(self.rng, prefix)
        self.nets.append(n)
        return n

    def port(self):
        p = self.rng.choice(SERVICE_PORTS)
        self.ports.append(p)
        return p

    def prange(self):
        lo = self.rng.randrange(1000, 60000)
        hi = lo + self.rng.randrange(1, 200)
        self.ports += [lo, hi]
        return f"{lo}:{hi}"

    def plain(self, targets):
        rng, lv = self.rng, self.level
        opts = [lambda: f"-s {self.cidr()} -j {rng.choice(['DROP', 'REJECT'])}",
                lambda: f"-p tcp --dport {self.port()} -j {rng.choice(targets)}",
                lambda: f"-s {self.cidr()} -p tcp --dport {self.port()} -j {rng.choice(targets)}",
                lambda: f"-s {self.cidr(rng.choice([8, 16, 24]))} -p udp --dport {self.port()} -j ACCEPT",
                lambda: f"-p icmp -j {rng.choice(['ACCEPT', 'DROP'])}",
                lambda: f"-p tcp --dport {self.prange()} -j {rng.choice(targets)}"]
        if lv >= 2:
            opts += [lambda: f"-p tcp -m multiport --dports {self.port()},{self.port()},{self.prange()} "
                             f"-j {rng.choice(targets)}",
                     lambda: f"-i {rng.choice(['eth1', 'wg0'])} -j {rng.choice(targets)}",
                     lambda: '-j LOG --log-prefix "fw probe: " --log-level 4']
        if lv >= 3:
            opts += [lambda: f"! -s {self.cidr(rng.choice([16, 24]))} -p tcp --dport {self.port()} -j REJECT "
                             "--reject-with tcp-reset",
                     lambda: f"-p udp ! --dport {self.port()} -j DROP"]
        if lv >= 4:
            opts += [lambda: f"-i eth+ -p tcp --dport {self.prange()} -j {rng.choice(targets)}",
                     lambda: "! -i lo -s 127.0.0.0/8 -j DROP"]
        return rng.choice(opts)()


def _ruleset(rng, k, level):
    r = _Rules(rng, level)
    chains = [c for c in ["SSH", "WEB", "MGMT", "SCANNERS"][:k.chains]]
    lines = ["# Generated by iptables-save v1.8.9 on a production edge host", "*filter",
             f":INPUT {rng.choice(['DROP', 'DROP', 'ACCEPT'])} [0:0]", ":FORWARD DROP [0:0]", ":OUTPUT ACCEPT [0:0]"]
    lines += [f":{c} - [0:0]" for c in chains]
    body = []
    if level >= 4:
        body.append("-A INPUT -m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT")
    body.append("-A INPUT -i lo -j ACCEPT")
    jumps = list(chains)
    for _ in range(k.rules):
        if jumps and rng.random() < 0.35:
            c = jumps.pop(0)
            body.append(f"-A INPUT -p tcp -m multiport --dports {r.port()},{r.port()} -j {c}" if rng.random() < 0.5
                        else f"-A INPUT -s {r.cidr(rng.choice([8, 16]))} -j {c}")
        else:
            body.append("-A INPUT " + r.plain(["ACCEPT", "DROP", "REJECT"]))
    for c in jumps:
        body.append(f"-A INPUT -p tcp --dport {r.port()} -j {c}")
    for i, c in enumerate(chains):
        for _ in range(rng.randrange(2, 5)):
            body.append(f"-A {c} " + r.plain(["ACCEPT", "DROP", "REJECT", "RETURN"]))
        if level >= 4 and i + 1 < len(chains) and rng.random() < 0.7:
            body.append(f"-A {c} -s {r.cidr(24)} -j {chains[i + 1]}")
        if rng.random() < 0.5:
            body.append(f"-A {c} -j RETURN")
    lines += body + ["COMMIT", "# Completed"]
    return "\n".join(lines) + "\n", r


def _probes(rng, r, n, level):
    out = []
    for i in range(n):
        proto = rng.choice(["tcp", "tcp", "tcp", "udp", "icmp"])
        if r.nets and rng.random() < 0.6:
            net = ipaddress.ip_network(rng.choice(r.nets), strict=False)
            src = str(net.network_address + rng.randrange(net.num_addresses))
            if rng.random() < 0.2:  # just outside the range
                src = str(ipaddress.ip_address((int(net.broadcast_address) + 1) % (1 << 32)))
        else:
            src = _net(rng, 32)
        if proto == "icmp":
            dport = "-"
        elif r.ports and rng.random() < 0.75:
            dport = str(max(1, min(65535, rng.choice(r.ports) + rng.choice([0, 0, 0, -1, 1]))))
        else:
            dport = str(rng.choice(SERVICE_PORTS))
        iface = rng.choice(IFACES + ["eth0"] * 3) if level >= 2 else rng.choice(["eth0", "eth0", "eth1"])
        if iface == "lo" and rng.random() < 0.5:
            src = f"127.0.0.{rng.randrange(1, 255)}"
        state = "ESTABLISHED" if level >= 4 and rng.random() < 0.15 else "NEW"
        out.append(f"p{i + 1:03d},{iface},{proto},{src},{dport},{state}")
    return out


@dataclass(frozen=True)
class Knobs:
    rules: int  # rules in INPUT (jumps to user chains among them)
    chains: int  # user chains
    probes: int  # probes per scanner run (about)
    runs: int  # scanner runs in the probe file


# Level 0's question, by variant (verdicts asks for the job's probe ids).
ATOMIC_ASK = {"counters": "how many probes of the scan job given above there are per protocol: one line `<proto> "
                          "<probes>` per protocol that has any, sorted by protocol name",
              "what_if": "the distinct source addresses of the scan job given above's probes, one per line, in "
                         "numeric (address) order"}


def job_number(rng) -> str:
    return str(rng.randrange(10 ** 7, 10 ** 8))


def tag(salt: str, job: str) -> str:
    return hashlib.sha256(f"{salt}:{job}".encode()).hexdigest()[:12]


def bare(probes: list[str]) -> list[str]:
    """The rows without their per-run ids: ids are numbered across the whole file."""
    return [p.split(",", 1)[1] for p in probes]


@register
class FirewallRuleEval(Family):
    name = "firewall_rule_eval"
    domain = "security"
    skill_types = ("Network Security", "Access Control")
    primitive_skills = ("firewall rule evaluation", "first-match rule semantics", "port range matching",
                        "chain jumps and default policies", "CIDR and IP range matching")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol", "fuzz_equivalence")
    programs = {"Python": REFERENCE}
    variants = ("verdicts", "counters", "what_if")
    levels = {0: Knobs(rules=3, chains=0, probes=6, runs=4),
              1: Knobs(rules=6, chains=0, probes=12, runs=4), 2: Knobs(rules=9, chains=1, probes=25, runs=5),
              3: Knobs(rules=12, chains=2, probes=40, runs=6), 4: Knobs(rules=16, chains=3, probes=60, runs=6)}

    def texts(self, t: TaskBuilder) -> tuple[str, str, str]:
        """(the output format, the iptables semantics, how run tags are made): both cases state them alike."""
        show_rule = t.level >= 3
        fmt = ("one line per probe of that scan job, in the order given: the probe id, a space, the verdict (`ACCEPT`, "
               "`DROP` or `REJECT`)" + (", a space, and what decided it: `<chain>:<n>` for the n-th rule (1-based, "
                                        "counting only that chain's `-A` lines in file order) whose target gave the "
                                        "verdict, or `INPUT:policy` when INPUT's default policy did" if show_rule else ""))
        if t.variant == "counters":
            fmt = ("the packet counter every rule would show after that scan job's probes: one line `<chain>:<n> "
                   "<packets>` per rule (the n-th rule of the chain, 1-based, counting only that chain's `-A` lines in "
                   "file order) that at least one of them matched where evaluation reached it (a matching `LOG` rule, "
                   "jump or `RETURN` counts too; a rule evaluation never reaches counts nothing), chains in the order "
                   "the dump declares them (its `:` lines), rules in file order, rules without packets left out; then, "
                   "if any probe fell through to INPUT's default policy, a last line `INPUT:policy <probes>`")
        elif t.variant == "what_if":
            fmt = ("one line per probe of that scan job whose verdict the deletion would change, in the order given: "
                   "the probe id, its verdict with the ruleset as it is, and its verdict with that rule deleted "
                   "(`ACCEPT`, `DROP` or `REJECT`), separated by spaces; probes whose verdict stays are left out")
        sem = ("Only the INPUT path matters (these are incoming packets). Semantics are iptables': rules of a chain "
               "are tried in order and the first matching rule with target ACCEPT, DROP or REJECT decides; `LOG` "
               "matches but does not stop evaluation; `-j <CHAIN>` evaluates that user chain and, if it falls off its "
               "end or hits `RETURN`, evaluation continues with the rule after the jump; reaching the end of INPUT (or "
               "RETURN in INPUT) applies INPUT's default policy. `!` negates the match that follows it; `--dport a:b` "
               "and `--dports` lists are inclusive; a port match never matches a packet without a port (ICMP, shown "
               "as `-`); `-i eth+` matches every interface whose name starts with `eth`; `--ctstate` lists the "
               "connection states that match; options such as `--log-prefix` and `--reject-with` only tune the "
               "action.")
        # The scanner labels each run with a salted hash of its job number, never the number itself: the job
        # number (delivered) is the only way to tell which run is ours.
        tags = ("The scanner never writes job numbers: a probe's run tag is the first 12 hex digits of the SHA-256 of "
                "`<salt>:<job number>` (the job number in decimal, the salt from the `# salt <salt>` line that "
                "precedes the probes)")
        return fmt, sem, tags

    def program_case(self, t: TaskBuilder) -> None:
        k, rng, var = t.knobs, t.rng, t.variant
        if var != "verdicts":  # a stream of the variant's own, drawn from t.rng: its fixtures are not verdicts'
            rng = random.Random(f"{var}:{t.rng.getrandbits(64)}")
        fmt, sem, tags = self.texts(t)
        if t.level == 0:
            ref_src = atomic_source(var)
        else:
            ref_src = fill(REFERENCE, SHOW_RULE=t.level >= 3) if var == "verdicts" else variant_source(var)
        ns = run_python(ref_src)
        # Everything but the job first: the job number is then drawn so that no number of the worked
        # examples spells it (the run tags are hex hashes: checked too).
        raw = []  # (ruleset, salt, rows, owner per row: 0 is our job, 1 and 2 other jobs)
        for _ in range(10):
            text, r = _ruleset(rng, k, t.level)
            salt = "%016x" % rng.getrandbits(64)
            rows = bare(_probes(rng, r, rng.randrange(5, k.probes + 5), t.level))
            owners = [0] + [rng.choice([0, 0, 1, 2]) for _ in rows[1:]]
            rng.shuffle(owners)
            raw.append((text, salt, rows, owners))
        shown = ["".join(text + "\n".join(rows) for text, _, rows, _ in raw[:2]), fmt, sem, tags]
        for _ in range(20):
            job = unseen(t, lambda: job_number(rng), *shown)
            cases = []
            for text, salt, rows, owners in raw:
                jobs = [job, *distinct(lambda: job_number(rng), 2, [job])]
                probes = [f"# salt {salt}"] + [f"{tag(salt, jobs[o])},p{i + 1:03d},{row}"
                                              for i, (o, row) in enumerate(zip(owners, rows))]
                probes_text = "".join(p + "\n" for p in probes)
                if t.level == 0:
                    want = ns["select"](probes_text, job)
                elif var == "verdicts":
                    want = ns["evaluate"](text, probes_text, job)
                else:
                    if var == "what_if":
                        probes_text = f"# delete {self.pick_rule(rng, ns, text, probes_text, job)[0]}\n" + probes_text
                    want = ns["report"](text, probes_text, job)
                cases.append((text + "---\n" + probes_text, want))
            if int(job) not in visible_numbers(*(x for c in cases[:2] for x in c)):
                break
        else:
            raise FamilyError("firewall_rule_eval: every job number drawn showed in the worked examples")
        who = t.deliver(job, "the scan job number")
        if t.level == 0 and var != "verdicts":
            t.say("Input on standard input: an `iptables-save` dump, then a line `---`, then a line `# salt <salt>`, "
                  "then one test packet per line as `<run tag>,<id>,<in-interface>,<proto>,<source address>,"
                  f"<destination port or ->,<conntrack state>`. {tags}. Output {ATOMIC_ASK[var]}.")
        elif t.level == 0:
            t.say("Input on standard input: an `iptables-save` dump, then a line `---`, then a line `# salt <salt>`, "
                  "then one test packet per line as `<run tag>,<id>,...`. "
                  f"{tags}. Output the ids of the packets of the scan job given above, one per line, in input order.")
        elif var == "counters":
            t.say("We want to predict the rule counters (`iptables -L -v`) a scan will leave behind. Input on standard "
                  "input: an `iptables-save` dump of the filter table, then a line `---`, then a line `# salt <salt>`, "
                  "then one test packet per line as `<run tag>,<id>,<in-interface>,<proto>,<source address>,"
                  f"<destination port or ->,<conntrack state>`. {tags}. Only the packets of the scan job given above "
                  f"pass through the firewall; skip the others. {sem} Output {fmt}.")
        elif var == "what_if":
            t.say("Before anyone deletes a firewall rule we want to see whose traffic it changes. Input on standard "
                  "input: an `iptables-save` dump of the filter table, then a line `---`, then a line `# delete "
                  "<chain>:<n>` naming the rule to delete (the n-th `-A` line of that chain, 1-based), then a line "
                  "`# salt <salt>`, then one test packet per line as `<run tag>,<id>,<in-interface>,<proto>,<source "
                  f"address>,<destination port or ->,<conntrack state>`. {tags}. Only the packets of the scan job "
                  f"given above matter; skip the others. {sem} Output {fmt}.")
        else:
            t.say("We are replacing our firewall review spreadsheet with a tool. Input on standard input: an "
                  "`iptables-save` dump of the filter table, then a line `---`, then a line `# salt <salt>`, then "
                  "one test packet per line as `<run tag>,<id>,<in-interface>,<proto>,<source address>,<destination "
                  f"port or ->,<conntrack state>`. {tags}. Only the packets of the scan job given above are to be "
                  f"evaluated; skip the others. {sem} Output {fmt}.")
        t.expect_program("Hard-code the scan job number. The destination address is always this host.", cases,
                         {"Python": ref_src})
        # The oracle's program gets the delivered job number, not a copy with it baked in.
        t.solve(f'test -n "{who}"\nsed -i "s/@@JOB@@/{who}/" /app/solution.py')

    def output_case(self, t: TaskBuilder) -> None:
        k, rng, var = t.knobs, t.rng, t.variant
        if var != "verdicts":  # a stream of the variant's own, drawn from t.rng: its fixtures are not verdicts'
            rng = random.Random(f"{var}:{t.rng.getrandbits(64)}")
        fmt, sem, tags = self.texts(t)
        # what_if redraws the whole scene until deleting some rule changes a verdict of our job (an empty
        # answer is no task); the other variants draw it once.
        ns_w = run_python(variant_source("what_if")) if var == "what_if" and t.level > 0 else None
        for _ in range(30):
            text, r = _ruleset(rng, k, t.level)
            n_runs = k.runs
            # Runs of different sizes, ours never the largest: the busiest run is no hint.
            sizes = sorted(rng.randrange(k.probes * 7 // 10, k.probes * 13 // 10 + 1) for _ in range(n_runs))
            if sizes[-1] == sizes[-2]:
                sizes[-1] += 1
            ours = rng.randrange(n_runs - 1)
            runs = [bare(_probes(rng, r, n, t.level)) for n in sizes]
            salt = "%016x" % rng.getrandbits(64)
            blocks = list(range(n_runs))  # file order of the runs: unrelated to their sizes
            rng.shuffle(blocks)
            owner = [i for i in blocks for _ in range(sizes[i])]
            rows = [row for i in blocks for row in runs[i]]
            if t.level >= 2:  # interleave the runs by time, as the scanner wrote them
                order = list(range(len(rows)))
                rng.shuffle(order)
                owner, rows = [owner[i] for i in order], [rows[i] for i in order]
            if t.level > 0:  # level 0 never looks at the rules
                t.add_file("/app/firewall/rules.v4", text)
            # Our job number is drawn so that no visible number spells it (the run tags are hex hashes: checked
            # too); the other runs' numbers show nowhere.
            for _ in range(20):
                chosen = unseen(t, lambda: job_number(rng), "\n".join(rows), fmt, sem, tags)
                jobs = distinct(lambda: job_number(rng), n_runs - 1, [chosen])
                jobs.insert(ours, chosen)
                body = [f"{tag(salt, jobs[o])},p{i + 1:04d},{row}" for i, (o, row) in enumerate(zip(owner, rows))]
                probes_text = "\n".join([f"# salt {salt}", "run,id,iface,proto,src,dport,state", *body]) + "\n"
                if int(chosen) not in visible_numbers(probes_text):
                    break
            else:
                raise FamilyError("firewall_rule_eval: every job number drawn showed in the probe file")
            if ns_w is None or self.impact(ns_w, text, probes_text, chosen):
                break
        else:
            raise FamilyError("firewall_rule_eval: no rule deletion changed a verdict of the scan job")
        t.add_file("/app/firewall/probes.csv", probes_text)
        if t.level == 0:
            self._select_case(t, probes_text, chosen, tags)
            return
        if var != "verdicts":
            return self.other_case(t, rng, text, probes_text, chosen, fmt, sem, tags)
        ref_src = fill(REFERENCE, SHOW_RULE=t.level >= 3)
        ns = run_python(ref_src)
        truth = ns["evaluate"](text, probes_text, chosen)
        who = t.deliver(chosen, "the scan job number")
        t.say("Before we push this ruleset to the edge hosts I want to know what it really lets in. "
              "`/app/firewall/rules.v4` is the `iptables-save` dump of the filter table and "
              "`/app/firewall/probes.csv` lists test packets from several scanner runs (`run,id,iface,proto,src,"
              "dport,state`; `run` is the run tag, `iface` the incoming interface, `dport` is `-` for ICMP). "
              f"{tags}. Evaluate the probes of the scan job given above, and only those. {sem}")
        t.add_solution_file("fwsim.py", ref_src)
        t.solve(f'test -n "{who}"\nmkdir -p /app/out\n'
                f'python3 /solution/fwsim.py /app/firewall/rules.v4 /app/firewall/probes.csv "{who}" '
                '> /app/out/verdicts.txt')
        t.say(f"Report format: {fmt}.")
        t.expect_output("/app/out/verdicts.txt", truth, "the verdict report")

    def impact(self, ns: dict, text: str, probes_text: str, job: str) -> list[tuple[str, str]]:
        """(`<chain>:<n>`, its `-A` line) of every rule whose deletion changes a verdict of a probe of ``job``."""
        rules = []
        for line in text.splitlines():
            if line.startswith("-A "):
                chain = line.split()[1]
                rules.append((f"{chain}:{sum(1 for c, _ in rules if c.split(':')[0] == chain) + 1}", line))
        return [(spec, line) for spec, line in rules if ns["what_if"](text, f"# delete {spec}\n" + probes_text, job)]

    def pick_rule(self, rng, ns: dict, text: str, probes_text: str, job: str) -> tuple[str, str]:
        """A rule whose deletion changes a verdict of ``job`` (any rule when none does: a hidden case may be
        empty)."""
        found = self.impact(ns, text, probes_text, job)
        if found:
            return rng.choice(found)
        return "INPUT:1", next(x for x in text.splitlines() if x.startswith("-A INPUT "))

    def other_case(self, t: TaskBuilder, rng, text: str, probes_text: str, chosen: str, fmt: str, sem: str,
                   tags: str) -> None:
        """counters and what_if above level 0."""
        var = t.variant
        ns = run_python(variant_source(var))
        spec = line = ""
        if var == "what_if":
            spec, line = self.pick_rule(rng, ns, text, probes_text, chosen)
            truth = ns["what_if"](text, f"# delete {spec}\n" + probes_text, chosen)
        else:
            truth = ns["counters"](text, probes_text, chosen)
        who = t.deliver(chosen, "the scan job number")
        files = ("`/app/firewall/rules.v4` is the `iptables-save` dump of the filter table and "
                 "`/app/firewall/probes.csv` lists test packets from several scanner runs (`run,id,iface,proto,src,"
                 "dport,state`; `run` is the run tag, `iface` the incoming interface, `dport` is `-` for ICMP)")
        if var == "counters":
            t.say("The edge hosts' rule counters were reset before a scan, and I want to know what `iptables -L -v` "
                  f"should show once the scan job given above has run, and nothing else. {files}. {tags}. Only that "
                  f"job's probes reach the firewall. {sem}")
        else:
            t.say(f"Someone wants to delete rule `{spec}` of our edge ruleset (the n-th `-A` line of that chain, "
                  f"1-based), that is `{line}`. Before we agree I want to know whose traffic that changes. {files}. "
                  f"{tags}. Only the probes of the scan job given above matter. {sem}")
        out = f"/app/out/{var}.txt"
        t.add_solution_file("fwsim.py", variant_source(var))
        t.solve(f'test -n "{who}"\nmkdir -p /app/out\n'
                f'python3 /solution/fwsim.py /app/firewall/rules.v4 /app/firewall/probes.csv "{who}" {spec} > {out}')
        t.say(f"Report format: {fmt}.")
        t.expect_output(out, truth, "the counters" if var == "counters" else "the changed verdicts")

    def _select_case(self, t: TaskBuilder, probes_text: str, chosen: str, tags: str) -> None:
        if t.variant != "verdicts":
            src = atomic_source(t.variant)
            truth = run_python(src)["select"](probes_text, chosen)
            who = t.deliver(chosen, "the scan job number")
            out = {"counters": "/app/out/per_protocol.txt", "what_if": "/app/out/sources.txt"}[t.variant]
            t.say("`/app/firewall/probes.csv` lists test packets from several scanner runs (`run,id,iface,proto,src,"
                  f"dport,state`; `run` is the run tag). {tags}. Write {ATOMIC_ASK[t.variant]} to `{out}`.")
            t.add_solution_file("select.py", src)
            t.solve(f'test -n "{who}"\nmkdir -p /app/out\n'
                    f'python3 /solution/select.py /app/firewall/probes.csv "{who}" > {out}')
            t.expect_output(out, truth, "the summary")
            return
        src = fill(SELECT, TAG_LEN=12)
        truth = run_python(src)["select"](probes_text, chosen)
        who = t.deliver(chosen, "the scan job number")
        t.say("`/app/firewall/probes.csv` lists test packets from several scanner runs (`run,id,iface,proto,src,"
              f"dport,state`; `run` is the run tag). {tags}. List the ids of the probes of the scan job given "
              "above, one per line, in file order.")
        t.add_solution_file("select.py", src)
        t.solve(f'test -n "{who}"\nmkdir -p /app/out\n'
                f'python3 /solution/select.py /app/firewall/probes.csv "{who}" > /app/out/probes.txt')
        t.expect_output("/app/out/probes.txt", truth, "the probe ids")
