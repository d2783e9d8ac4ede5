"""Which SSH brute-forcers can still get at one fleet host, and what would they find there? Three stages
on the host's dump: find the brute-force sources in its rotated auth logs (failed attempts per source,
the densest burst in a sliding window higher up), evaluate the host's iptables INPUT chain for a new
connection from each of them to port 22 (first match, LOG, multiport, ranges, a user chain), then work
out the effective sshd settings for each source still let in (first value wins, Match Address blocks
with CIDRs, wildcards and negation). Variants: an exposure report, an sshd DenyUsers drop-in, and an
iptables patch whose DROP rules go right before the rule that lets each attacker in.

The delivered value is the host's name; the dumps sit under the first 16 hex digits of its SHA-256, so
the neighbour hosts' dumps are decoys without it."""

from __future__ import annotations

from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import fill, host_files, run_python
from tmax.families.security.ssh_bruteforce_sources import STAFF, USERS, _ipv4, _stamp
from tmax.families.unseen import distinct, key_cmd, key_of, unseen

REFERENCE = r'''
import datetime
import fnmatch
import gzip
import ipaddress
import os
import re
import shlex
import sys

THRESHOLD = @THRESHOLD@
WINDOW = @WINDOW@  # seconds; 0: every failed attempt counts, however spread out
STAGES = @STAGES@  # 1: sources; 2: and the firewall; 3: and sshd
VARIANT = "@VARIANT@"
MONTHS = {m: i for i, m in enumerate("Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split(), 1)}
HEAD = re.compile(r"^([A-Z][a-z][a-z]) +(\d{1,2}) (\d\d):(\d\d):(\d\d) \S+ sshd\[\d+\]: (.*)$")
FAIL = re.compile(r"^Failed (?:password|publickey) for (.*) from (\S+) port \d+ ssh2$")
REPEAT = re.compile(r"^message repeated (\d+) times: \[ (.*)\]$")
SPLIT = re.compile(r"^\s*([A-Za-z0-9]+)(?:\s*=\s*|\s+)(.*?)\s*$")
DEFAULTS = {"passwordauthentication": "yes", "permitrootlogin": "prohibit-password"}


def attempts(text):
    """Stage 1: source -> timestamps of its failed attempts (a repeated message stands for N)."""
    out = {}
    for line in text.splitlines():
        m = HEAD.match(line)
        if not m or m.group(1) not in MONTHS:
            continue
        when = datetime.datetime(2026, MONTHS[m.group(1)], *(int(m.group(i)) for i in range(2, 6)),
                                 tzinfo=datetime.timezone.utc)
        msg, times = m.group(6), 1
        r = REPEAT.match(msg)
        if r:
            times, msg = int(r.group(1)), r.group(2)
        f = FAIL.match(msg)  # the greedy user part leaves the final "from <addr>"
        if f:
            out.setdefault(f.group(2), []).extend([int(when.timestamp())] * times)
    return out


def score(stamps):
    stamps = sorted(stamps)
    if not WINDOW:
        return len(stamps)
    best, lo = 0, 0
    for hi in range(len(stamps)):
        while stamps[hi] - stamps[lo] >= WINDOW:
            lo += 1
        best = max(best, hi - lo + 1)
    return best


def ruleset(text):
    """Stage 2's input: chain -> policy and chain -> rules (token lists), iptables-save format."""
    policy, chains = {}, {}
    for line in text.splitlines():
        line = line.strip()
        if line.startswith(":"):
            name, pol = line[1:].split()[:2]
            policy[name] = pol
        elif line.startswith("-A "):
            tok = shlex.split(line)
            chains.setdefault(tok[1], []).append(tok[2:])
    return policy, chains


def matches(tok, ip):
    """Does a rule match a new TCP connection from ip to port 22 arriving on eth0?"""
    i, neg = 0, False
    while i < len(tok):
        t = tok[i]
        if t == "!":
            neg, i = True, i + 1
            continue
        arg = tok[i + 1] if i + 1 < len(tok) else ""
        ok = True
        if t in ("-s", "--source"):
            ok = ipaddress.ip_address(ip) in ipaddress.ip_network(arg, strict=False)
        elif t in ("-p", "--protocol"):
            ok = arg == "tcp"
        elif t in ("-i", "--in-interface"):
            ok = "eth0".startswith(arg[:-1]) if arg.endswith("+") else arg == "eth0"
        elif t in ("--dport", "--dports"):
            ok = any(int(lo) <= 22 <= int(hi or lo) for lo, _, hi in (p.partition(":") for p in arg.split(",")))
        elif t in ("--ctstate", "--state"):
            ok = "NEW" in arg.split(",")
        if ok == neg:
            return False
        neg, i = False, i + 2
    return True


def walk(policy, chains, ip, chain="INPUT"):
    """(target, chain, rule number) of the rule that decides; None when the chain falls through."""
    for n, tok in enumerate(chains.get(chain, []), 1):
        if not matches(tok, ip):
            continue
        target = tok[tok.index("-j") + 1]
        if target == "LOG":
            continue
        if target == "RETURN":
            return None
        if target in ("ACCEPT", "DROP", "REJECT"):
            return target, chain, n
        got = walk(policy, chains, ip, target)
        if got:
            return got
    return None if chain != "INPUT" else (policy["INPUT"], "INPUT", None)


def address_match(patterns, ip):
    hit = False
    for p in patterns.split(","):
        neg, p = p.startswith("!"), p.lstrip("!")
        ok = ipaddress.ip_address(ip) in ipaddress.ip_network(p, strict=False) if "/" in p \
            else fnmatch.fnmatchcase(ip, p)
        if ok and neg:
            return False
        hit = hit or ok
    return hit


def effective(text, ip):
    """Stage 3: the first value in a matching Match block, else the first global one, else the default."""
    glob, match, active = {}, {}, None
    for line in text.splitlines():
        m = SPLIT.match(line)
        if not m or line.strip().startswith("#"):
            continue
        key, val = m.group(1).lower(), m.group(2)
        if key == "match":
            crit = val.split()
            active = len(crit) == 2 and crit[0].lower() == "address" and address_match(crit[1], ip)
        elif active is None:
            glob.setdefault(key, val)
        elif active:
            match.setdefault(key, val)
    return [match.get(k, glob.get(k, DEFAULTS[k])) for k in ("passwordauthentication", "permitrootlogin")]


def read(path):
    with (gzip.open if path.endswith(".gz") else open)(path, "rt") as f:
        return f.read()


def audit(host):
    logs = sorted(n for n in os.listdir(host) if n.startswith("auth.log"))
    found = attempts("".join(read(os.path.join(host, n)) for n in logs))
    rows = sorted(((ip, score(s)) for ip, s in found.items()), key=lambda r: (-r[1], ipaddress.ip_address(r[0])))
    out = []
    for ip, n in (r for r in rows if r[1] >= THRESHOLD):
        how = ("ACCEPT", "INPUT", None)
        if STAGES >= 2:
            how = walk(*ruleset(read(os.path.join(host, "iptables.rules"))), ip)
            if how[0] != "ACCEPT":
                continue
        pa, root = effective(read(os.path.join(host, "sshd_config")), ip) if STAGES >= 3 else ("yes", "")
        if VARIANT == "exposure":
            out.append((0, f"{ip} {n}" + (f" {pa} {root}" if STAGES >= 3 else "")))
        elif pa == "yes" and VARIANT == "denylist":
            out.append((ipaddress.ip_address(ip), f"DenyUsers *@{ip}"))
        elif pa == "yes":
            rule = f"-s {ip}/32 -p tcp --dport 22 -j DROP"
            if how[2] is None:  # let in by the policy (or stage 2 not done): append
                out.append(((1, "", 0, ipaddress.ip_address(ip)), f"-A INPUT {rule}"))
            else:  # inserted highest position first, so the numbers stay those of the file
                out.append(((0, how[1], -how[2], ipaddress.ip_address(ip)), f"-I {how[1]} {how[2]} {rule}"))
    if VARIANT != "exposure":
        out.sort(key=lambda r: r[0])
    return "".join(line + "\n" for _, line in out)


if __name__ == "__main__":
    sys.stdout.write(audit(sys.argv[1]))
'''

OUTPUTS = {"exposure": "/app/out/exposure.txt", "denylist": "/app/out/deny_attackers.conf",
           "firewall": "/app/out/ssh_block.rules"}


@dataclass(frozen=True)
class Knobs:
    stages: int  # 1: the auth logs only; 2: and the firewall; 3: and sshd_config
    attackers: int  # attacking sources per host (dense, near-threshold and, with a window, slow ones)
    noise: int  # background lines per host
    files: int  # rotated auth logs
    gzip: bool  # auth.log.2 and older gzipped
    window: bool  # the densest burst in a sliding window counts, not the total
    repeat: bool  # rsyslog "message repeated N times" lines
    inject: bool  # usernames that contain a fake "from <address>"
    fw: int  # firewall traps: 2 LOG, multiport, udp, rules after the accept; 3 port ranges, eth+; 4 a user chain
    sshd: int  # sshd_config traps: 2 case, `=`, repeated keywords, Match on CIDRs; 3 wildcards, negation
    decoys: int  # neighbour hosts built the same way


@register
class SshAttackerExposureAudit(Family):
    name = "ssh_attacker_exposure_audit"
    domain = "system_administration"
    skill_types = ("Networking", "Configuration")
    primitive_skills = ("auth log analysis", "iptables first-match evaluation", "sshd_config parsing",
                        "first-match configuration semantics", "Match block scoping", "default value reasoning",
                        "CIDR arithmetic", "sorting with tie-breaks")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("exposure", "denylist", "firewall")
    stages = ("ssh_bruteforce_sources", "firewall_rule_eval", "sshd_config_policy")
    levels = {0: Knobs(1, 3, 12, 1, False, False, False, False, 0, 0, 2),
              1: Knobs(2, 6, 60, 1, False, False, False, False, 1, 0, 2),
              2: Knobs(3, 8, 150, 2, False, False, False, False, 2, 2, 3),
              3: Knobs(3, 10, 400, 3, True, True, True, False, 3, 3, 3),
              4: Knobs(3, 12, 700, 4, True, True, True, True, 4, 3, 3)}

    def _log(self, t, threshold, window):
        """The host's auth log lines, oldest first, and its attackers' addresses."""
        k, rng = t.knobs, t.rng
        month, day, start = rng.randrange(1, 12), rng.randrange(1, 20), rng.randrange(0, 6 * 3600)
        span = 86400 if k.window else 4 * 3600 * (1 + k.stages)
        host = rng.choice(["bastion", "gw-01", "edge-ssh", "jump1", "vpn-gw"])
        internal = [f"10.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(1, 255)}" for _ in range(3)]
        ev, addrs, typos = [], [], {ip: 0 for ip in internal}
        kinds = ["dense", "near"] + [rng.choice(["dense", "dense", "near", "slow"]) for _ in range(k.attackers - 2)]
        for kind in kinds:
            ip = _ipv4(rng)
            if ip in addrs:
                continue
            addrs.append(ip)
            if kind == "dense" or (kind == "slow" and not k.window):
                n, gap = threshold + rng.randrange(0, 8), max(2, window // (2 * threshold) if k.window else 200)
            elif kind == "near":  # one short of the threshold, even in total
                n, gap = threshold - 1 - rng.randrange(0, 2), 300
            else:  # many attempts, never threshold of them inside one window
                n, gap = threshold + rng.randrange(3, 8), window // (threshold - 1) + rng.randrange(1, 30)
            at = rng.randrange(0, max(1, span - n * (gap + 10)))
            j = 0
            while j < n:
                user, port = rng.choice(USERS), rng.randrange(1024, 65535)
                if k.repeat and j + 2 < n and rng.random() < 0.25:
                    times = rng.randrange(2, min(5, n - j) + 1)
                    ev.append((at, f"message repeated {times} times: [ Failed password for {user} from {ip} "
                                   f"port {port} ssh2]"))
                    j, at = j + times, at + rng.randint(1, gap)
                    continue
                inv = "invalid user " if user not in ("root", "deploy") and rng.random() < 0.7 else ""
                if k.inject and rng.random() < 0.15:
                    user, inv = f"admin from {_ipv4(rng)} port 22 ssh2 user", "invalid user "
                if inv and k.stages >= 2 and rng.random() < 0.5:  # the same attempt, logged twice: not counted
                    ev.append((at, f"Invalid user {user.split()[0]} from {ip} port {port}"))
                how = rng.choice(["password"] * 4 + ["publickey"]) if k.stages >= 2 else "password"
                ev.append((at, f"Failed {how} for {inv}{user} from {ip} port {port} ssh2"))
                if k.stages >= 2 and rng.random() < 0.3:
                    ev.append((at, f"pam_unix(sshd:auth): authentication failure; logname= uid=0 euid=0 tty=ssh "
                                   f"ruser= rhost={ip}  user={user.split()[0]}"))
                j, at = j + 1, at + rng.randint(1, gap)
        for _ in range(k.noise):
            at, r, ip = rng.randrange(span), rng.random(), rng.choice(internal)
            port = rng.randrange(1024, 65535)
            if r < 0.35:
                ev.append((at, f"Accepted publickey for {rng.choice(STAFF)} from {ip} port {port} ssh2"))
            elif r < 0.5 and typos[ip] < threshold - 2:  # staff typos: never enough to look like an attack
                typos[ip] += 1
                ev.append((at, f"Failed password for {rng.choice(STAFF)} from {ip} port {port} ssh2"))
            elif r < 0.7:
                ev.append((at, f"Connection closed by {_ipv4(rng)} port {port} [preauth]"))
            elif r < 0.85:
                ev.append((at, f"Failed password for invalid user {rng.choice(USERS)} from {_ipv4(rng)} port {port} "
                               "ssh2"))
            else:
                ev.append((at, "CRON"))
        cron = "pam_unix(cron:session): session opened for user root(uid=0) by (uid=0)"
        lines = [f"{_stamp(2026, month, day, start + at)} {host} " + ("CRON" if msg == "CRON" else "sshd")
                 + f"[{rng.randrange(1000, 99999)}]: " + (cron if msg == "CRON" else msg)
                 for at, msg in sorted(ev, key=lambda e: e[0])]
        return lines, addrs + internal

    def _firewall(self, t, addrs):
        """An iptables-save ruleset that blocks some attackers, lets others through, and sets traps."""
        k, rng = t.knobs, t.rng
        att = addrs[:]
        rng.shuffle(att)
        pre, post, guard = ["-A INPUT -i lo -j ACCEPT",
                            "-A INPUT -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT"], [], []

        def net(ip, bits):
            return f"{'.'.join(ip.split('.')[:bits // 8])}{'.0' * (4 - bits // 8)}/{bits}"

        cut = rng.randint(1, len(att) // 3 + 1)
        for ip in att[:cut]:  # blocked for real
            rule = "-A INPUT " + rng.choice([f"-s {ip}/32 -p tcp -m tcp --dport 22 -j DROP",
                                             f"-s {net(ip, 16)} -j DROP",
                                             f"-s {ip}/32 -p tcp -m tcp --dport 22 -j REJECT --reject-with tcp-reset"])
            (guard if k.fw >= 4 and rng.random() < 0.6 else pre).append(rule)
        decoy = att[cut:]
        if decoy:  # rules that name an attacker and still let it in
            pre += [f"-A INPUT -s {decoy[0]}/32 -p tcp -m tcp --dport 443 -j DROP",
                    f"-A INPUT -s {decoy[-1]}/32 -i eth1 -j DROP"]
        if k.fw >= 2 and len(decoy) > 2:
            pre.insert(2, '-A INPUT -p tcp -m tcp --dport 22 -m conntrack --ctstate NEW -j LOG --log-prefix "ssh: "')
            pre += [f"-A INPUT -s {decoy[1]}/32 -p udp -m udp --dport 22 -j DROP",
                    f"-A INPUT -s {net(decoy[2], 24)} -p tcp -m multiport --dports 80,443,8080 -j DROP"]
            post.append(f"-A INPUT -s {decoy[1]}/32 -p tcp -m tcp --dport 22 -j DROP")  # after the accept: dead
            if cut:
                pre.append(f"-A INPUT -s {net(att[0], 24)} -p tcp -m multiport --dports 80,22,443 -j DROP")
        if k.fw >= 3 and len(decoy) > 3:
            pre += [f"-A INPUT -s {decoy[3]}/32 -p tcp -m tcp --dport 23:1024 -j DROP",
                    f"-A INPUT -s {decoy[2]}/32 -p tcp -m tcp ! --dport 22 -j REJECT"]
            if cut > 1:
                pre.append(f"-A INPUT -s {att[1]}/32 -i eth+ -p tcp -m tcp --dport 10:100 -j DROP")
        accept = "-A INPUT -p tcp -m tcp --dport 22 -j ACCEPT"
        policy = "ACCEPT" if rng.random() < 0.3 else "DROP"
        if k.fw >= 4:
            guard += [f"-A SSH_GUARD -s {net(decoy[0], 8)} -j RETURN"] if decoy else []
            guard.append(f"-A SSH_GUARD -s {net(rng.choice(att), 8)} -p tcp -m tcp --dport 22 -j ACCEPT")
            guard = [g.replace("-A INPUT", "-A SSH_GUARD") for g in guard]
            rng.shuffle(guard)
            pre.append("-A INPUT -p tcp -m tcp --dport 22 -j SSH_GUARD")
        body = pre + ([] if policy == "ACCEPT" and rng.random() < 0.5 else [accept]) + post
        head = ["*filter", f":INPUT {policy} [0:0]", ":FORWARD DROP [0:0]", ":OUTPUT ACCEPT [0:0]"]
        head += [":SSH_GUARD - [0:0]"] if k.fw >= 4 else []
        return "\n".join(["# Generated by iptables-save", *head, *body, *guard, "COMMIT"]) + "\n"

    def _sshd(self, t, addrs):
        """An sshd_config whose Match blocks single out some of the attackers."""
        k, rng = t.knobs, t.rng

        def kv(key, val):
            if k.sshd >= 2 and rng.random() < 0.4:
                key = rng.choice([key.lower(), key.upper()])
            return f"{key}={val}" if k.sshd >= 2 and rng.random() < 0.3 else f"{key} {val}"

        lines = ["# sshd_config, managed by hand", kv("Port", "22"), kv("UsePAM", "yes")]
        for key, vals in (("PasswordAuthentication", ["yes", "no"]),
                          ("PermitRootLogin", ["yes", "no", "prohibit-password"])):
            if rng.random() < 0.8:
                lines.append(kv(key, rng.choice(vals)))
                if k.sshd >= 2 and rng.random() < 0.5:
                    lines.append(kv(key, rng.choice(vals)))  # a later repeat never wins
        lines += [kv("X11Forwarding", "no"), "Subsystem sftp /usr/lib/openssh/sftp-server", ""]
        blocks = [("10.0.0.0/8,192.168.0.0/16", [("PasswordAuthentication", "yes")])]
        for ip in rng.sample(addrs, min(len(addrs), 2 + k.sshd)):
            o = ip.split(".")
            pats = [f"{'.'.join(o[:3])}.0/24", f"{o[0]}.{o[1]}.0.0/16"]
            if k.sshd >= 3:
                pats += [f"{o[0]}.{o[1]}.*", f"{o[0]}.{o[1]}.{o[2]}.?*", f"{o[0]}.{o[1]}.0.0/16,!{ip}"]
            keys = rng.sample(["PasswordAuthentication", "PermitRootLogin"], rng.randint(1, 2))
            blocks.append((rng.choice(pats), [(key, rng.choice(["yes", "no"])) for key in keys]))
        rng.shuffle(blocks)
        for pats, sets in blocks:
            lines.append(f"{'match' if k.sshd >= 2 and rng.random() < 0.3 else 'Match'} Address {pats}")
            lines += [f"    {kv(key, val)}" for key, val in sets]
        return "\n".join(lines) + "\n"

    def _host(self, t, folder, threshold, window):
        """One host's dump: files (relative path -> text) and the gzip commands for the oldest logs."""
        k, rng = t.knobs, t.rng
        lines, addrs = self._log(t, threshold, window)
        files, setup = {}, []
        cuts = sorted(rng.sample(range(len(lines) // 4, len(lines) - 1), k.files - 1)) if k.files > 1 else []
        chunks = [lines[a:b] for a, b in zip([0, *cuts], [*cuts, len(lines)])]
        for i, chunk in enumerate(reversed(chunks)):
            name = "auth.log" if i == 0 else f"auth.log.{i}"
            if k.gzip and i >= 2:
                setup.append(f"gzip -n {folder}/{name}")
            files[name] = "\n".join(chunk) + "\n"
        files.update({"iptables.rules": self._firewall(t, addrs[:-3])} if k.stages >= 2 else {})
        files.update({"sshd_config": self._sshd(t, addrs[:-3])} if k.stages >= 3 else {})
        return files, setup

    def output_case(self, t: TaskBuilder) -> None:
        k, rng, v = t.knobs, t.rng, t.variant
        threshold = rng.randrange(5, 10) if k.stages > 1 else rng.randrange(4, 7)
        window = rng.randrange(4, 16) * 60 if k.window else 0
        src = fill(REFERENCE, THRESHOLD=threshold, WINDOW=window, STAGES=k.stages, VARIANT=v)
        audit = run_python(src)["audit"]
        # The target host is redrawn until every stage leaves more than one attacker over (one at level 0).
        for _ in range(30):
            target, setup = self._host(t, "@DIR@", threshold, window)
            with host_files(target) as (d, _):
                truth = audit(d)
            if len(truth.splitlines()) >= min(2, k.stages):
                break
        else:
            raise FamilyError(f"{self.name}: no host with enough attackers left over in 30 draws")
        hosts = [(target, setup)] + [self._host(t, "@DIR@", threshold, window) for _ in range(k.decoys)]
        name = unseen(t, lambda: t.code(2), *(x for files, _ in hosts for x in files.values()))
        keys = [key_of(n) for n in [name, *distinct(lambda: t.code(2), k.decoys, [name])]]
        for i in sorted(range(len(keys)), key=lambda i: keys[i]):  # on disk in key order: the target hides
            files, setup = hosts[i]
            for fname, text in files.items():
                t.add_file(f"/app/fleet/{keys[i]}/{fname}", text)
            for cmd in setup:
                t.add_setup(cmd.replace("@DIR@", f"/app/fleet/{keys[i]}"))
        t.say("The fleet collector dumped each host into `/app/fleet/<KEY>/`, where KEY is the first 16 hex digits "
              "of the SHA-256 of the host's name (`printf %s <name> | sha256sum`). The host I mean is named below.")
        who = t.deliver(name, "the host's name")
        out = OUTPUTS[v]
        t.say(self._stage_text(k, threshold, window))
        t.say(self._output_text(k, v, out))
        t.add_solution_file("exposure.py", src)
        t.solve(f'test -n "{who}"\nmkdir -p /app/out\npython3 /solution/exposure.py "/app/fleet/{key_cmd(who)}" '
                f"> {out}")
        t.expect_output(out, truth, "the result")

    @staticmethod
    def _stage_text(k, threshold, window):
        if k.stages == 1:
            return (f"Its SSH auth log is `auth.log` there. Find the addresses with at least {threshold} "
                    "`Failed password` lines (the source is the address after `from`).")
        logs = ("Its SSH auth logs are `auth.log`, `auth.log.1`, ... there (older ones gzipped); all timestamps are "
                "from 2026." if k.gzip else "Its SSH auth logs are `auth.log` (and `auth.log.1`, ...) there.")
        rule = (f"at least {threshold} of its failed attempts fall inside one window of {window} seconds (the last "
                "of them less than that after the first)" if window else
                f"it made at least {threshold} failed attempts in total")
        parts = [f"{logs} First, find the sources that brute-forced sshd: a failed attempt is an sshd `Failed "
                 "password ...` or `Failed publickey ...` line (`Invalid user ...` and `pam_unix(...)` lines describe "
                 "the same attempts and do not count), its source is the address after the final `from` (just "
                 f"before `port <n> ssh2`), and a source is an attacker when {rule}."
                 + (" `message repeated N times: [ <message>]` stands for N identical messages." if k.repeat else "")
                 + (" Usernames are attacker-chosen and can contain text that looks like an address." if k.inject
                    else ""),
                 "Second, find which attackers the host's firewall still lets through: evaluate the INPUT chain of "
                 "`iptables.rules` (iptables-save format) for a new TCP connection from the attacker to port 22 "
                 "arriving on `eth0`. Rules are tried in order and the first one that matches decides; every "
                 "condition of a rule must hold (`!` negates the condition after it, `--dport` and `--dports` take "
                 "ports and `lo:hi` ranges, `-i eth+` matches any `eth` interface, `--ctstate` must list NEW); "
                 "`LOG` never decides, and when no rule decides the chain's policy does."
                 + (" A jump to a user chain tries that chain's rules; `RETURN` or its end goes back to the rule "
                    "after the jump." if k.fw >= 4 else "")]
        if k.stages >= 3:
            parts.append("Third, for every attacker still let in, work out the effective `PasswordAuthentication` and "
                         "`PermitRootLogin` that `sshd_config` gives a connection from its address. Keywords are "
                         "case-insensitive and take `Key value` or `Key=value`; for each keyword the first value "
                         "wins. A `Match Address <patterns>` block runs to the next `Match` and applies when the "
                         "address matches its comma-separated patterns (CIDR blocks, or `*` / `?` wildcards; a "
                         "pattern starting with `!` that matches rules the block out). A value in an applying Match "
                         "block (the first one, in file order) overrides the global one; with neither, the defaults "
                         "are `PasswordAuthentication yes` and `PermitRootLogin prohibit-password`.")
        return "\n\n".join(parts)

    @staticmethod
    def _output_text(k, v, out):
        who = "every attacker" + (" the firewall lets through" if k.stages >= 2 else "")
        pa = " whose effective `PasswordAuthentication` is `yes`" if k.stages >= 3 else ""
        if v == "exposure":
            cols = "<address> <count>" + (" <PasswordAuthentication> <PermitRootLogin>" if k.stages >= 3 else "")
            cnt = "its largest count in one window" if k.window else "the number of failed attempts"
            return (f"Write `{out}`: one line per {who.replace('every ', '')}, `{cols}` where count is {cnt}"
                    + (" and the two settings are the effective values as written in the config or the default"
                       if k.stages >= 3 else "")
                    + "; sorted by count (highest first), then by address in numeric order.")
        if v == "denylist":
            return (f"Write the sshd drop-in `{out}`: one line `DenyUsers *@<address>` for {who}{pa}, sorted by "
                    "address in numeric order (not text order).")
        if k.stages == 1:
            return (f"Write `{out}`, rules for `iptables-restore --noflush`: one line `-A INPUT -s <address>/32 -p tcp "
                    "--dport 22 -j DROP` per attacker, sorted by address in numeric order (not text order).")
        return (f"Write `{out}`, rules for `iptables-restore --noflush` that block {who}{pa}: for an attacker let in "
                "by an ACCEPT rule, `-I <chain> <n> -s <address>/32 -p tcp --dport 22 -j DROP` where n is that "
                "rule's number in its chain as the file stands (counting from 1) and chain is its chain; for one "
                "let in by the policy, `-A INPUT -s <address>/32 -p tcp --dport 22 -j DROP`. Put the `-I` lines "
                "first, sorted by chain name, then n (highest first, so the numbers stay right as they are "
                "applied), then address in numeric order; then the `-A` lines by address in numeric order.")
