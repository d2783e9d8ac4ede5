"""Who can actually get onto one fleet host over SSH, and how? Two stages on the host's dump: from its
account database (`passwd`, `group`, `shells`, later `shadow`) find the interactive accounts, their
effective groups (primary plus supplementary) and whether each has a usable password; then evaluate
`sshd_config` for each of them: the DenyUsers / AllowUsers / DenyGroups / AllowGroups gates, then the
effective PasswordAuthentication and PermitRootLogin with Match User / Match Group blocks. Variants: a
per-account report of the login method, the password-capable members of every group, and the
AllowUsers line that keeps exactly today's logins. Traps by level: locked and empty passwords, shells
missing from `shells` and the empty shell field, primary groups that no member list names, Allow and
Deny lists that both apply, wildcard patterns, expired accounts, negated Match patterns, repeated
AllowUsers lines and NIS compat lines.

The delivered value is the host's name; each dump sits under the first 16 hex digits of its SHA-256, so
the neighbour hosts' dumps are decoys without it."""

from __future__ import annotations

from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.system_administration.passwd_account_audit import PEOPLE, SHELLS, SYS_GROUPS, SYSTEM, TEAMS
from tmax.families.unseen import distinct, key_cmd, key_of, unseen

REFERENCE = r'''
import fnmatch
import os
import re
import sys

STAGES = @STAGES@  # 1: the account database only; 2: and sshd_config
VARIANT = "@VARIANT@"
TODAY = @TODAY@  # days since 1970-01-01; an account whose expiry day is on or before it is gone (None: unchecked)
SPLIT = re.compile(r"^\s*([A-Za-z0-9]+)(?:\s*=\s*|\s+)(.*?)\s*$")
DEFAULTS = {"passwordauthentication": "yes", "permitrootlogin": "prohibit-password"}
GATES = ("denyusers", "allowusers", "denygroups", "allowgroups")


def table(path, fields):
    """Records of a colon file; NIS compat (+/-), comment and blank lines are not records."""
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [(ln.split(":") + [""] * fields)[:fields] for ln in f.read().split("\n")
                if ln.strip() and ln[0] not in "+-#"]


def accounts(etc):
    """Stage 1: (uid, name, usable password, effective groups) of every interactive account."""
    with open(os.path.join(etc, "shells")) as f:
        shells = [s.strip() for s in f.read().split("\n") if s.strip() and not s.startswith("#")]
    groups = table(os.path.join(etc, "group"), 4)
    shadow = {r[0]: r for r in table(os.path.join(etc, "shadow"), 9)}
    out = []
    for name, _, uid, gid, _, _, shell in table(os.path.join(etc, "passwd"), 7):
        sh = shadow.get(name, [name, ""] + [""] * 7)
        if (shell or "/bin/sh") not in shells or (TODAY is not None and sh[7] and int(sh[7]) <= TODAY):
            continue
        mine = sorted({g[0] for g in groups if g[2] == gid or name in g[3].split(",")})
        out.append((int(uid), name, sh[1].startswith("$"), mine))
    return sorted(out)


def listed(patterns, values):
    """sshd's pattern lists: a value matching a `!` pattern rules the list out, else any match counts."""
    hit = False
    for p in patterns.split(","):
        neg, p = p.startswith("!"), p.lstrip("!")
        if any(fnmatch.fnmatchcase(v, p) for v in values):
            if neg:
                return False
            hit = True
    return hit


def login(text, uid, name, has_pw, groups):
    """Stage 2: "password", "publickey", or None when sshd refuses the account."""
    gates, glob, match, active = {g: [] for g in GATES}, {}, {}, None
    for line in text.splitlines():
        m = SPLIT.match(line)
        if not m or line.strip().startswith("#"):
            continue
        key, val = m.group(1).lower(), m.group(2)
        if key == "match":
            crit = val.split()
            active = all(listed(crit[i + 1], [name] if crit[i].lower() == "user" else groups)
                         for i in range(0, len(crit) - 1, 2))
        elif active is None and key in gates:
            gates[key] += val.split()  # these lines add up
        elif active is None:
            glob.setdefault(key, val)
        elif active:
            match.setdefault(key, val)
    if (any(listed(p, [name]) for p in gates["denyusers"])
            or gates["allowusers"] and not any(listed(p, [name]) for p in gates["allowusers"])
            or any(listed(p, groups) for p in gates["denygroups"])
            or gates["allowgroups"] and not any(listed(p, groups) for p in gates["allowgroups"])):
        return None
    pa, root = (match.get(k, glob.get(k, DEFAULTS[k])) for k in ("passwordauthentication", "permitrootlogin"))
    if uid == 0 and root == "no":
        return None
    return "password" if has_pw and pa == "yes" and (uid != 0 or root == "yes") else "publickey"


def audit(host):
    rows = accounts(os.path.join(host, "etc"))
    if STAGES == 1:
        got = [(uid, name, "", groups) for uid, name, _, groups in rows]
    else:
        with open(os.path.join(host, "etc", "ssh", "sshd_config")) as f:
            text = f.read()
        got = [(uid, name, how, groups) for uid, name, pw, groups in rows
               if (how := login(text, uid, name, pw, groups))]
    if VARIANT == "report":
        return "".join(f"{name} {uid}" + (f" {how}" if how else "") + "\n" for uid, name, how, _ in got)
    if VARIANT == "allowusers":
        return "AllowUsers " + " ".join(name for _, name, _, _ in got) + "\n" if got else ""
    members = {}
    for _, name, how, groups in got:
        if how in ("", "password"):
            for g in groups:
                members.setdefault(g, []).append(name)
    return "".join(f"{g} {','.join(sorted(members[g]))}\n" for g in sorted(members))


if __name__ == "__main__":
    sys.stdout.write(audit(sys.argv[1]))
'''

OUTPUTS = {"report": "/app/out/ssh_logins.txt", "groups": "/app/out/password_groups.txt",
           "allowusers": "/app/out/allow_users.conf"}
ODD = ["/usr/bin/fish", "/bin/rbash", "/usr/sbin/nologin", "/bin/false"]


@dataclass(frozen=True)
class Knobs:
    stages: int  # 1: the account database only; 2: and sshd_config
    people: int  # human accounts (UID 1000 up)
    gates: int  # sshd gates: 1 AllowUsers/DenyUsers; 2 and the group gates, Match User; 3 wildcards, Match Group
    expiry: bool  # shadow expiry dates and the empty shell field
    compat: bool  # NIS compat lines, negated Match patterns, AllowUsers over several lines
    decoys: int  # neighbour hosts built the same way


@register
class SshLoginAccessAudit(Family):
    name = "ssh_login_access_audit"
    domain = "system_administration"
    skill_types = ("Configuration",)
    primitive_skills = ("passwd and group file parsing", "account lockout semantics", "sshd_config parsing",
                        "Match block scoping", "first-match configuration semantics", "default value reasoning",
                        "security baseline auditing")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("report", "groups", "allowusers")
    stages = ("passwd_account_audit", "sshd_config_policy")
    levels = {0: Knobs(stages=1, people=5, gates=0, expiry=False, compat=False, decoys=2),
              1: Knobs(stages=2, people=8, gates=1, expiry=False, compat=False, decoys=2),
              2: Knobs(stages=2, people=12, gates=2, expiry=False, compat=False, decoys=3),
              3: Knobs(stages=2, people=16, gates=3, expiry=True, compat=False, decoys=3),
              4: Knobs(stages=2, people=22, gates=3, expiry=True, compat=True, decoys=3)}

    def _etc(self, t, today):
        """passwd, group, shells and shadow texts, and the people and teams they hold."""
        k, rng = t.knobs, t.rng
        users = [u for u in SYSTEM if k.stages > 1 or u[0] in ("root", "daemon", "www-data", "nobody", "postgres")]
        groups = [[g, gid, []] for g, gid in SYS_GROUPS]
        people = rng.sample(PEOPLE, k.people)
        for p, uid in zip(people, sorted(rng.sample(range(1000, 1000 + 3 * k.people), k.people))):
            shell = rng.choice(ODD[:2 + k.gates] + ([""] if k.expiry else [])) if rng.random() < 0.3 \
                else rng.choice(SHELLS[:3])
            gid = uid if rng.random() < 0.75 else 100  # a private group, or the shared `users`
            users.append((p, uid, gid, f"/home/{p}", shell))
            if gid == uid:
                groups.append([p, uid, []])
        teams = [[g, 2000 + i, rng.sample(people, rng.randrange(1, 5))] for i, g in enumerate(rng.sample(TEAMS, 3))]
        groups += teams + [["users", 100, []]]
        for g in groups:
            if g[0] in ("sudo", "adm"):
                g[2] = rng.sample(people, rng.randrange(1, 3))
        shells = ["# /etc/shells: valid login shells", *rng.sample(SHELLS, 4 if k.stages > 1 else 5)]
        if "/bin/sh" not in shells and k.expiry:
            shells.append("/bin/sh")
        shadow = []
        for u in users:
            pw = "$6$" + "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789./") for _ in range(24))
            if rng.random() < 0.25:
                pw = rng.choice(["!", "*", "!" + pw, ""])  # locked, disabled or empty: no password login
            expire = str(today + rng.choice([-400, -1, 0, 1, 90])) if k.expiry and rng.random() < 0.2 else ""
            shadow.append(f"{u[0]}:{pw}:{today - rng.randrange(10, 900)}:0:99999:7::{expire}:")
        passwd = [f"{u[0]}:x:{u[1]}:{u[2]}:{u[0]}:{u[3]}:{u[4]}" for u in users]
        if k.compat:
            passwd += ["+@netadmins::::::", "-mallory"]
        group = [f"{g[0]}:x:{g[1]}:{','.join(g[2])}" for g in groups]
        files = {"etc/passwd": passwd, "etc/group": group, "etc/shells": shells}
        if k.stages > 1:
            files["etc/shadow"] = shadow
        return {p: "\n".join(lines) + "\n" for p, lines in files.items()}, people, [g[0] for g in teams]

    def _sshd(self, t, people, teams):
        k, rng = t.knobs, t.rng

        def kv(key, val):
            key = rng.choice([key, key.lower()]) if k.gates >= 2 and rng.random() < 0.3 else key
            return f"{key}={val}" if k.gates >= 2 and rng.random() < 0.25 else f"{key} {val}"

        def pats(n):
            names = rng.sample(people, n)
            if k.gates >= 3:  # a wildcard that stands for one of them
                names[0] = names[0][:2] + "*"
            return names

        lines = ["# sshd_config", kv("Port", "22"), kv("PasswordAuthentication", rng.choice(["yes", "no"])),
                 kv("PermitRootLogin", rng.choice(["yes", "no", "prohibit-password"]))]
        if rng.random() < 0.7:
            allow = pats(2 * len(people) // 3) + ["root"]
            if k.compat:
                half = len(allow) // 2
                lines += [kv("AllowUsers", " ".join(allow[:half])), kv("AllowUsers", " ".join(allow[half:]))]
            else:
                lines.append(kv("AllowUsers", " ".join(allow)))
        lines.append(kv("DenyUsers", " ".join(pats(2))))
        if k.gates >= 2:
            lines.append(kv(rng.choice(["AllowGroups", "DenyGroups"]), " ".join(rng.sample(teams, 2) + ["sudo"])))
        lines += [kv("X11Forwarding", "no"), "Subsystem sftp /usr/lib/openssh/sftp-server", ""]
        if k.gates >= 2:
            for _ in range(k.gates):
                if k.gates >= 3 and rng.random() < 0.5:
                    crit = f"Group {rng.choice(teams + ['users', 'sudo'])}"
                else:
                    crit = "User " + ",".join(rng.sample(people, 3))
                if k.compat and rng.random() < 0.5:
                    crit = f"User *,!{rng.choice(people)}"
                lines.append(("match " if rng.random() < 0.3 else "Match ") + crit)
                lines.append("    " + kv("PasswordAuthentication", rng.choice(["yes", "no"])))
        return "\n".join(lines) + "\n"

    def _host(self, t, today):
        files, people, teams = self._etc(t, today)
        if t.knobs.stages > 1:
            files["etc/ssh/sshd_config"] = self._sshd(t, people, teams)
        return files

    def output_case(self, t: TaskBuilder) -> None:
        k, rng, v = t.knobs, t.rng, t.variant
        today = 20000 + rng.randrange(800)
        src = fill(REFERENCE, STAGES=k.stages, VARIANT=v, TODAY=today if k.expiry else None)
        probe = fill(REFERENCE, STAGES=k.stages, VARIANT="report", TODAY=today if k.expiry else None)
        # The target host is redrawn until its logins mix both methods (or, for one stage, exist).
        for _ in range(40):
            target = self._host(t, today)
            rows = self._truth(probe, target).splitlines()
            if len(rows) >= min(3, k.stages + k.gates) and (
                    k.stages == 1 or {r.split()[-1] for r in rows} == {"password", "publickey"}):
                break
        else:
            raise FamilyError(f"{self.name}: no host with both kinds of login in 40 draws")
        hosts = [target] + [self._host(t, today) for _ in range(k.decoys)]
        name = unseen(t, lambda: t.code(2), *(x for files in hosts for x in files.values()))
        keys = [key_of(n) for n in [name, *distinct(lambda: t.code(2), k.decoys, [name])]]
        for i in sorted(range(len(keys)), key=lambda i: keys[i]):  # on disk in key order: the target hides
            for path, text in hosts[i].items():
                t.add_file(f"/app/hosts/{keys[i]}/{path}", text)
        truth = self._truth(src, target)
        t.say("Our fleet collector copied each host's configuration into `/app/hosts/<KEY>/`, where KEY is the "
              "first 16 hex digits of the SHA-256 of the host's name (`printf %s <name> | sha256sum`). The host I "
              "mean is named below.")
        who = t.deliver(name, "the host's name")
        out = OUTPUTS[v]
        t.say(self._text(k, v, today, out))
        t.add_solution_file("ssh_access.py", src)
        t.solve(f'test -n "{who}"\nmkdir -p /app/out\npython3 /solution/ssh_access.py "/app/hosts/{key_cmd(who)}" '
                f"> {out}")
        t.expect_output(out, truth, "the result")

    @staticmethod
    def _truth(src, files):
        """The reference run on the host's files, written out as the oracle will see them."""
        import tempfile
        from pathlib import Path

        with tempfile.TemporaryDirectory(prefix="tmax-ref-") as d:
            for path, text in files.items():
                (Path(d) / path).parent.mkdir(parents=True, exist_ok=True)
                (Path(d) / path).write_text(text)
            return run_python(src)["audit"](d)

    @staticmethod
    def _text(k, v, today, out):
        shell = ("An account is interactive when its shell (the last field of `etc/passwd`; empty means `/bin/sh`) "
                 "is listed in `etc/shells`" + (f" and it has not expired (the 8th field of `etc/shadow`, in days "
                                                f"since 1970-01-01, is empty or after today, day {today})"
                                                if k.expiry else "") + ".")
        groups = ("An account's groups are its primary group (the group whose GID is the 4th field of `etc/passwd`) "
                  "plus every group whose member list (the 4th field of `etc/group`) names it.")
        if k.stages == 1:
            ask = {"report": "one line per interactive account, `<user> <uid>`",
                   "groups": "one line per group that has interactive members, `<group> <members>`, members "
                             "comma-separated in byte order",
                   "allowusers": "the single line `AllowUsers <user> <user> ...` naming every interactive account"}[v]
            return (f"`etc/` there holds its account files. {shell}"
                    + (f" {groups}" if v == "groups" else "") + f" Write {ask} to `{out}`"
                    + (", sorted by group name." if v == "groups" else ", accounts in UID order."))
        parts = [f"`etc/` there holds its account files and `etc/ssh/sshd_config` its SSH daemon's configuration. "
                 f"First, work out the interactive accounts from the account files. {shell}"
                 + (" Lines starting with `+` or `-` are NIS compat entries, not accounts." if k.compat else "")
                 + f" {groups} An account has a usable password only when its `etc/shadow` password field is a hash "
                 "(it starts with `$`); `!`, `*`, a `!`-prefixed hash or an empty field means no password login.",
                 "Then decide, for each interactive account, what sshd makes of it. Keywords are case-insensitive "
                 "and take `Key value` or `Key=value`; for other keywords the first value wins, but `AllowUsers`, "
                 "`DenyUsers`, `AllowGroups` and `DenyGroups` lines add up. sshd refuses an account named by a "
                 "DenyUsers pattern, one not named by any AllowUsers pattern when there are some, one with a group "
                 "named by a DenyGroups pattern, and one with no group named by an AllowGroups pattern when there "
                 "are some (patterns may use `*` and `?`). A `Match` line (criteria `User <patterns>` and `Group "
                 "<patterns>`, comma-separated patterns, a matching `!` pattern rules it out, all criteria must hold) "
                 "starts a block that runs to the next Match; for `PasswordAuthentication` and `PermitRootLogin` the "
                 "first value in a block that applies wins over the global one, and the defaults are `yes` and "
                 "`prohibit-password`. Root (UID 0) is refused when PermitRootLogin is `no`, and can use a password "
                 "only when it is `yes`. An account that is not refused logs in with `password` when it has a usable "
                 "password and PasswordAuthentication is `yes` (and, for root, the rule above allows it), otherwise "
                 "with `publickey`."]
        parts.append(f"Write `{out}`: " + {
            "report": "one line per account sshd does not refuse, `<user> <uid> <password|publickey>`, in UID order.",
            "groups": "one line per group that has members (accounts whose groups, as above, include it) that can log "
                      "in with a password, `<group> <members>`, those members comma-separated in byte order, lines "
                      "sorted by group name.",
            "allowusers": "the single line `AllowUsers <user> <user> ...` that names exactly the accounts sshd does "
                          "not refuse today, in UID order."}[v])
        return "\n\n".join(parts)
