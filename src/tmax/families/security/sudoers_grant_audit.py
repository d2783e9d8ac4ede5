"""What does sudo actually allow on one server? A fleet export holds each host's `sudoers` (and group file,
later `sudoers.d/`) under a folder named by a hash of the host name (delivered). Variants: `nopasswd` lists
every command a user may run as root without a password, `decide` replays the helpdesk's requests through
the rules (the last matching entry wins, so a later `!command` takes a grant back), `runas` lists the
grants to run commands as someone other than root. Higher levels add comments and `Defaults`, `%group`
users, several commands per rule with inherited run-as and tags, aliases, continuation lines, rules for
other hosts, `(ALL:ALL)`, an `#includedir` whose files cron-style names decide, and negated commands."""

from __future__ import annotations

from dataclasses import dataclass

from tmax.families.base import Family, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.security import _fleet as fleet

REFERENCE = r'''
import os
import re
import sys

RULE = re.compile(r"^(\S+)\s+(\S+)\s*=\s*(.*)$")
ALIAS = re.compile(r"^(User|Runas|Host|Cmnd)_Alias\s+([A-Z][A-Z0-9_]*)\s*=\s*(.*)$")
SPEC = re.compile(r"^(?:\(([^)]*)\)\s*)?((?:(?:NOPASSWD|PASSWD):\s*)*)(.*)$")


def logical_lines(text):
    out, cur = [], ""
    for raw in text.splitlines():
        cur += raw
        if cur.endswith("\\"):
            cur = cur[:-1] + " "
            continue
        out.append(cur)
        cur = ""
    return out + ([cur] if cur else [])


def entries(text, included):
    """(kind, fields) of every alias and rule, in file order, an #includedir's files read where it stands."""
    out = []
    for line in logical_lines(text):
        s = line.strip()
        if s.startswith(("#includedir", "@includedir")):
            for n in sorted(included):
                if re.fullmatch(r"[A-Za-z0-9_-]+", n):
                    out += entries(included[n], {})
            continue
        s = s.split("#", 1)[0].strip()
        if not s or s.startswith("Defaults"):
            continue
        m = ALIAS.match(s)
        if m:
            out.append((m.group(1), (m.group(2), [x.strip() for x in m.group(3).split(",")])))
            continue
        m = RULE.match(s)
        if m:
            out.append(("rule", m.groups()))
    return out


def grants(sudoers, group, included):
    """Every (user, runas, nopasswd, negated, command) a rule that applies here grants, in order."""
    members = {}
    for line in group.splitlines():
        f = line.split(":")
        if len(f) >= 4:
            members[f[0]] = [m for m in f[3].split(",") if m]
    aliases = {}
    out = []
    for e, fields in entries(sudoers, included):
        if e != "rule":
            aliases[(e, fields[0])] = fields[1]
            continue
        who, host, specs = fields
        if host != "ALL":
            continue  # no host name or alias in these files designates this server
        users = []
        for u in who.split(","):
            users += [m for x in aliases.get(("User", u), [u]) for m in
                      (members.get(x[1:], []) if x.startswith("%") else [x])]
        runas, nopw = ["root"], False
        for spec in specs.split(","):
            r, tags, cmd = SPEC.match(spec.strip()).groups()
            if r is not None:
                r = r.split(":")[0].strip() or "root"
                runas = aliases.get(("Runas", r), [r])
            if "NOPASSWD:" in tags:
                nopw = True
            if re.search(r"(^|\s)PASSWD:", tags):
                nopw = False
            neg = cmd.startswith("!")
            cmd = cmd.lstrip("!").strip()
            for c in aliases.get(("Cmnd", cmd), [cmd]):
                out += [(u, ra, nopw, neg, c) for u in users for ra in runas]
    return out


def matches(granted, cmd):
    if granted == "ALL":
        return True
    g, c = granted.split(), cmd.split()
    return g[0] == c[0] and (len(g) == 1 or g[1:] == c[1:])


def audit(sudoers, group, included, variant, requests=""):
    gs = grants(sudoers, group, included)
    if variant == "decide":
        out = []
        for n, line in enumerate(requests.splitlines(), 1):
            user, runas, cmd = line.split(None, 2)
            verdict = "deny"
            for u, ra, nopw, neg, c in gs:
                if u == user and ra in (runas, "ALL") and matches(c, cmd):
                    verdict = "deny" if neg else "allow-nopasswd" if nopw else "allow"
            out.append(f"{n} {verdict}")
        return "".join(x + "\n" for x in out)
    rows = set()
    for u, ra, nopw, neg, c in gs:
        if neg:
            continue
        if variant == "nopasswd" and nopw and ra in ("root", "ALL"):
            rows.add(f"{u} {c}")
        elif variant == "runas" and ra != "root":
            rows.add(f"{u} {ra} {c}")
    return "".join(x + "\n" for x in sorted(rows))


if __name__ == "__main__":  # sudo_audit.py HOST_ROOT nopasswd|decide|runas [REQUESTS]
    root = sys.argv[1]
    d = f"{root}/etc/sudoers.d"
    included = {n: open(f"{d}/{n}").read() for n in os.listdir(d)} if os.path.isdir(d) else {}
    req = open(sys.argv[3]).read() if len(sys.argv) > 3 else ""
    sys.stdout.write(audit(open(f"{root}/etc/sudoers").read(), open(f"{root}/etc/group").read(), included,
                           sys.argv[2], req))
'''

USERS = ("alice", "bob", "carol", "dmitri", "erin", "farid", "grace", "hiro")
GROUPS = ("admins", "dbas", "webops")
CMDS = ("/usr/bin/systemctl restart nginx", "/usr/bin/systemctl status", "/usr/bin/journalctl", "/usr/sbin/reboot",
        "/usr/bin/apt-get update", "/usr/bin/tail /var/log/syslog", "/bin/cat", "/usr/bin/psql", "/usr/bin/pg_dump",
        "/usr/bin/vim /etc/hosts", "/usr/bin/docker", "/bin/bash", "/usr/bin/rsync")
RUNAS = ("root", "root", "ALL", "postgres", "www-data")


@dataclass(frozen=True)
class Knobs:
    rules: int  # rules in each sudoers
    specs: int  # most commands in one rule
    traps: int  # 1 comments, %groups, lists; 2 aliases, continuations; 3 other hosts, ALL:ALL; 4 includes, negation
    requests: int  # decide variant: requests to replay
    decoys: int  # other hosts of the export


@register
class SudoersGrantAudit(Family):
    name = "sudoers_grant_audit"
    domain = "security"
    skill_types = ("Access Control",)
    primitive_skills = ("config file parsing", "first-match rule semantics", "allowlist and denylist matching",
                        "permission and setuid auditing", "credential audit reporting")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("nopasswd", "decide", "runas")
    levels = {0: Knobs(rules=5, specs=1, traps=0, requests=4, decoys=2),
              1: Knobs(rules=7, specs=3, traps=1, requests=8, decoys=2),
              2: Knobs(rules=9, specs=3, traps=2, requests=12, decoys=3),
              3: Knobs(rules=11, specs=4, traps=3, requests=16, decoys=3),
              4: Knobs(rules=13, specs=4, traps=4, requests=20, decoys=3)}

    def _rule(self, t, cmd_aliases, runas_aliases):
        """One rule line (who, host, specs) as text."""
        k, rng = t.knobs, t.rng
        who = rng.choice(USERS)
        if k.traps >= 1 and rng.random() < 0.4:
            who = "%" + rng.choice(GROUPS)
        if k.traps >= 2 and rng.random() < 0.3:
            who = rng.choice(["OPS", "DEVS"])
        if k.traps >= 1 and rng.random() < 0.2:
            who += "," + rng.choice(USERS)
        host = "ALL" if k.traps < 3 or rng.random() < 0.7 else rng.choice(["DBSERVERS", "web01", "LEGACY"])
        specs, prev_r, prev_tag = [], None, None
        for i in range(rng.randrange(1, k.specs + 1)):
            r = rng.choice(RUNAS + (("ALL:ALL",) if k.traps >= 3 else ()) + (tuple(runas_aliases) if k.traps >= 2
                                                                              else ()))
            tag = rng.choice(["NOPASSWD:", "", "PASSWD:"][:2 + (k.traps >= 1)])
            cmd = rng.choice(CMDS + ("ALL",) + (tuple(cmd_aliases) if k.traps >= 2 else ()))
            if k.traps >= 4 and i and rng.random() < 0.35:
                cmd = "!" + rng.choice(CMDS[:9])
            part = ""
            if r != prev_r and (k.traps >= 1 or r != "root" or rng.random() < 0.5):
                part += f"({r}) " if i == 0 or k.traps >= 1 else ""
                prev_r = r
            if tag and tag != prev_tag:
                part += tag + " "
                prev_tag = tag
            specs.append(part + cmd)
        return f"{who} {host} = " + ", ".join(specs)

    def _host(self, t):
        """(sudoers, group, sudoers.d files) of one host."""
        k, rng = t.knobs, t.rng
        group = "".join(f"{g}:x:{2000 + i}:{','.join(sorted(rng.sample(USERS, rng.randrange(1, 4))))}\n"
                        for i, g in enumerate(GROUPS))
        head = ["Defaults env_reset", "Defaults secure_path=\"/usr/sbin:/usr/bin:/sbin:/bin\"", "",
                "# User privilege specification"] if k.traps >= 1 else []
        cmd_aliases, runas_aliases = [], []
        if k.traps >= 2:
            head += [f"User_Alias OPS = {','.join(rng.sample(USERS, 2))},%{rng.choice(GROUPS)}",
                     f"User_Alias DEVS = {','.join(rng.sample(USERS, 3))}",
                     f"Cmnd_Alias SERVICES = {', '.join(rng.sample(CMDS[:6], 3))}",
                     "Cmnd_Alias DB = /usr/bin/psql, /usr/bin/pg_dump", "Runas_Alias DBA = postgres, root"]
            cmd_aliases, runas_aliases = ["SERVICES", "DB"], ["DBA"]
        if k.traps >= 3:
            head.append("Host_Alias DBSERVERS = db01, db02")
        lines = head + ["root ALL = (ALL:ALL) ALL" if k.traps >= 3 else "root ALL = (ALL) ALL"]
        for _ in range(k.rules):
            lines.append(self._rule(t, cmd_aliases, runas_aliases))
            if k.traps >= 1 and rng.random() < 0.15:
                lines.append("# " + self._rule(t, cmd_aliases, runas_aliases) + "   (disabled)")
        if k.traps >= 2:  # a long rule wrapped with a backslash
            long = [i for i, x in enumerate(lines) if ", " in x and not x.startswith(("#", "User", "Cmnd"))]
            if long:
                i = rng.choice(long)
                lines[i] = lines[i].replace(", ", ", \\\n    ", 1)
        included = {}
        if k.traps >= 4:
            lines.append("#includedir /etc/sudoers.d")
            for name in rng.sample(["90-cloud-init-users", "ops_extra", "README.bak", "legacy~", "deploy"], 3):
                included[name] = "".join(self._rule(t, cmd_aliases, runas_aliases) + "\n" for _ in range(2))
        return "".join(x + "\n" for x in lines), group, included

    def _requests(self, t, grants):
        """Half of them close to what the target host grants (so verdicts differ), half at random."""
        k, rng = t.knobs, t.rng
        out = []
        for _ in range(k.requests):
            user, runas, cmd = rng.choice(USERS), rng.choice(["root", "root", "postgres", "www-data"]), rng.choice(CMDS)
            if grants and rng.random() < 0.5:
                user, ra, _, _, cmd = rng.choice(grants)
                runas = runas if ra == "ALL" else ra
                cmd = rng.choice(CMDS) if cmd == "ALL" else cmd
            if rng.random() < 0.3:
                cmd += rng.choice([" --now", " /etc/shadow", " -u nginx"])
            out.append(f"{user} {runas} {cmd}")
        return "".join(x + "\n" for x in out)

    def output_case(self, t: TaskBuilder) -> None:
        k, variant = t.knobs, t.variant
        src = fill(REFERENCE)
        ref = run_python(src)
        def draw():
            hosts = [self._host(t) for _ in range(1 + k.decoys)]
            requests = self._requests(t, ref["grants"](*hosts[0])) if variant == "decide" else ""
            return [(h, requests) for h in hosts]

        def answer(m):
            got = ref["audit"](*m[0], variant, m[1])
            # a replay where every verdict is the same says nothing
            return got if variant != "decide" or len({x.split()[1] for x in got.splitlines()}) > 1 else ""

        machines, truth = fleet.pick(t, draw, answer, tries=40)
        requests = machines[0][1]
        target = fleet.ship(t, "/app/hosts", [{"etc/sudoers": s, "etc/group": g,
                                               **{f"etc/sudoers.d/{n}": x for n, x in inc.items()}}
                                              for (s, g, inc), _ in machines], requests)
        who = fleet.intro(t, "/app/hosts", "each of our servers' `etc/sudoers` and `etc/group`"
                          + (" (and `etc/sudoers.d/`)" if k.traps >= 4 else ""), "server", target)
        rules = ["A rule is `<users> <host> = <commands>`; the commands are comma-separated, each optionally "
                 "preceded by a run-as user in parentheses (default root; `ALL` means any user) and a `NOPASSWD:` tag; "
                 "a command with no arguments allows it with any arguments, one with arguments allows exactly those, "
                 "and `ALL` allows everything."]
        if k.traps >= 1:
            rules.append("`#` starts a comment and `Defaults` lines change nothing here. `%name` means the members "
                         "of that group in `etc/group`, and users may be comma-separated. Within one rule the run-as "
                         "user and the `NOPASSWD:`/`PASSWD:` tag carry over to the commands after them until another "
                         "one is given.")
        if k.traps >= 2:
            rules.append("`User_Alias`, `Cmnd_Alias` and `Runas_Alias` lines name lists that rules use in place of "
                         "users, commands and run-as users; a line ending in `\\` continues on the next.")
        if k.traps >= 3:
            rules.append("Only rules whose host is `ALL` apply to this server (no host name or `Host_Alias` in the "
                         "files is it); in `(user:group)` only the user matters.")
        if k.traps >= 4:
            rules.append("`#includedir /etc/sudoers.d` reads that directory's files in name order at that point, "
                         "skipping names that contain anything but letters, digits, `_` and `-`. "
                         + ("An entry `!command` is one that denies." if variant == "decide" else
                            "An entry `!command` grants nothing (and leaves the other entries as they are)."))
        t.say(" ".join(rules))
        out = "/app/out/sudo.txt"
        if variant == "nopasswd":
            t.say("List every command each user may run as root (a run-as user of root or `ALL`) without a password: "
                  "one line `<user> <command>` per user and command as written in the rule (or alias), `ALL` "
                  "included; each line once, sorted in byte order (`LC_ALL=C sort -u`).")
        elif variant == "runas":
            t.say("List every grant to run a command as a user other than root (a run-as user of `ALL` counts too): "
                  "one line `<user> <run-as user> <command>` (`ALL` as written), each line once, sorted in byte order (`LC_ALL=C sort -u`).")
        else:
            t.add_file("/app/requests.txt", requests)
            t.say("`/app/requests.txt` lists what the helpdesk was asked for, one `<user> <run-as user> <command "
                  "line>` per line. Decide each by the rules above: among all rule entries (one command for one user "
                  "and run-as user) that match the request, in file order, the last one decides"
                  + (" (a matching `!command` denies)" if k.traps >= 4 else "") + "; no match denies. Write `<request "
                  "number> <verdict>` per request (1-based, in order), the verdict `allow`, `allow-nopasswd` or "
                  "`deny`.")
        fleet.solve(t, who, "sudo_audit.py", src, "/app/hosts/{KEY}",
                    f"{variant} {'/app/requests.txt' if variant == 'decide' else ''}", out)
        t.expect_output(out, truth, "the sudo audit")
