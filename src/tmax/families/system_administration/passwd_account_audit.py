"""Audit a host's account database (`passwd`, `group`, later `shells` and `shadow`) as collected into a
fleet report. Variants: the accounts that can log in interactively, the effective members of every
group (supplementary lists plus primary groups), and the identity conflicts (shared UIDs, then shared
GIDs and primary groups that do not exist). Traps by level: shells missing from /etc/shells and the
empty shell field (which means /bin/sh), stale and repeated member names, locked passwords in shadow,
then expired accounts and NIS compat lines that are not accounts."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import fill, host_files, run_python
from tmax.families.unseen import unseen

REFERENCE = r'''
import os
import sys

VARIANT = @VARIANT@
USE_SHELLS = @USE_SHELLS@  # login shells are those listed in shells (else: any but nologin and false)
TODAY = @TODAY@  # days since 1970-01-01 for shadow expiry, or None
CHECKS = @CHECKS@  # the conflict kinds reported, in this order
PRIMARY = @PRIMARY@  # a group's members include the users whose primary group it is


def table(path, fields):
    """Records of a colon file; NIS compat (+/-), comment and blank lines are not records."""
    if not os.path.exists(path):
        return []
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f.read().split("\n"):
            if not line.strip() or line[0] in "+-#":
                continue
            out.append((line.split(":") + [""] * fields)[:fields])
    return out


def report(host, etc):
    users = table(f"{etc}/passwd", 7)
    groups = table(f"{etc}/group", 4)
    shadow = {r[0]: r for r in table(f"{etc}/shadow", 9)}
    shells = [s.strip() for s in open(f"{etc}/shells").read().split("\n")] if USE_SHELLS else []
    shells = [s for s in shells if s and not s.startswith("#")]
    lines = []
    if VARIANT == "logins":
        rows = []
        for name, _, uid, _, _, _, shell in users:
            shell = shell or "/bin/sh"  # an empty shell field means /bin/sh
            if USE_SHELLS and shell not in shells:
                continue
            if not USE_SHELLS and (shell.endswith("/nologin") or shell == "/bin/false"):
                continue
            sh = shadow.get(name)
            if sh and sh[1][:1] in ("!", "*"):
                continue
            if sh and TODAY is not None and sh[7] and int(sh[7]) <= TODAY:
                continue
            rows.append((int(uid), name))
        lines = [f"{host}:{name}:{uid}" for uid, name in sorted(rows)]
    elif VARIANT == "members":
        known = {u[0] for u in users}
        for gname, _, gid, members in sorted(groups, key=lambda g: g[0]):
            listed = [m for m in members.split(",") if m in known]
            if PRIMARY:
                names = sorted(set(listed) | {u[0] for u in users if u[3] == gid})
            else:  # as listed, in the list's order
                names = [m for i, m in enumerate(listed) if m not in listed[:i]]
            if names:
                lines.append(f"{host}:{gname}:{','.join(names)}")
    else:
        by = {"uid": {}, "gid": {}}
        for u in users:
            by["uid"].setdefault(int(u[2]), []).append(u[0])
        for g in groups:
            by["gid"].setdefault(int(g[2]), []).append(g[0])
        gids = {g[2] for g in groups}
        for kind in CHECKS:
            if kind == "nogroup":
                for u in sorted(users, key=lambda u: (int(u[3]), u[0])):
                    if u[3] not in gids:
                        lines.append(f"{host}:nogroup {u[3]}:{u[0]}")
                continue
            for n, names in sorted(by[kind].items()):
                if len(names) > 1:
                    lines.append(f"{host}:{kind} {n}:{','.join(sorted(names))}")
    return "".join(line + "\n" for line in lines)


if __name__ == "__main__":
    sys.stdout.write(report(sys.argv[1], sys.argv[2]))
'''

SYSTEM = [("root", 0, 0, "/root", "/bin/bash"), ("daemon", 1, 1, "/usr/sbin", "/usr/sbin/nologin"),
          ("bin", 2, 2, "/bin", "/usr/sbin/nologin"), ("sys", 3, 3, "/dev", "/usr/sbin/nologin"),
          ("sync", 4, 65534, "/bin", "/bin/sync"), ("www-data", 33, 33, "/var/www", "/usr/sbin/nologin"),
          ("backup", 34, 34, "/var/backups", "/usr/sbin/nologin"),
          ("sshd", 105, 65534, "/run/sshd", "/usr/sbin/nologin"),
          ("postgres", 112, 118, "/var/lib/postgresql", "/bin/bash"),
          ("git", 113, 119, "/home/git", "/usr/bin/git-shell"),
          ("nobody", 65534, 65534, "/nonexistent", "/usr/sbin/nologin")]
SYS_GROUPS = [("root", 0), ("daemon", 1), ("bin", 2), ("sys", 3), ("adm", 4), ("sudo", 27), ("www-data", 33),
              ("backup", 34), ("postgres", 118), ("git", 119), ("docker", 998), ("nogroup", 65534)]
PEOPLE = ("alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi", "ivan", "judy", "mallory", "niaj",
          "olivia", "peggy", "rupert", "sybil", "trent", "victor", "walter", "yuki", "zoe", "amir", "bea", "chen",
          "kim", "lena", "omar", "priya", "quinn", "raj", "sven", "tess")
SHELLS = ["/bin/sh", "/bin/bash", "/usr/bin/bash", "/bin/zsh", "/usr/bin/zsh", "/bin/dash"]
TEAMS = ("developers", "ops", "dba", "analysts", "oncall")

ASKS = {
    "logins": ("list the accounts that can log in interactively, one line each as `<HOST>:<user>:<uid>`, sorted by UID "
               "(numerically), ties by user name in byte order"),
    "members": ("list every group's effective members: the users named in the group's member list plus every user "
                "whose primary group (the GID field of passwd) it is. One line per group that has any, as "
                "`<HOST>:<group>:<member>,<member>,...` with the members sorted in byte order and each listed once, "
                "the lines sorted by group name in byte order"),
    "conflicts": "report the identity conflicts, one line each",
}


@dataclass(frozen=True)
class Knobs:
    people: int  # human accounts (UID 1000 up)
    shells_file: bool  # /etc/shells decides what a login shell is; odd shells and empty shell fields
    stale: bool  # member lists name accounts that no longer exist, some twice
    shadow: bool  # shadow with locked passwords (and, with expiry, expired accounts)
    expiry: bool  # shadow expiry dates; NIS compat lines
    checks: tuple[str, ...]  # conflict kinds: uid, gid, nogroup
    primary: bool  # members include those whose primary group it is


@register
class PasswdAccountAudit(Family):
    name = "passwd_account_audit"
    domain = "system_administration"
    skill_types = ("Configuration", "Service Management")
    primitive_skills = ("passwd and group file parsing", "account lockout semantics", "default value reasoning",
                        "security baseline auditing", "sorting with tie-breaks", "calendar arithmetic")
    variants = ("logins", "members", "conflicts")
    levels = {0: Knobs(people=5, shells_file=False, stale=False, shadow=False, expiry=False, checks=("uid",),
                       primary=False),
              1: Knobs(people=10, shells_file=True, stale=False, shadow=False, expiry=False, checks=("uid",),
                       primary=True),
              2: Knobs(people=14, shells_file=True, stale=True, shadow=False, expiry=False, checks=("uid", "gid"),
                       primary=True),
              3: Knobs(people=18, shells_file=True, stale=True, shadow=True, expiry=False,
                       checks=("uid", "gid", "nogroup"), primary=True),
              4: Knobs(people=24, shells_file=True, stale=True, shadow=True, expiry=True,
                       checks=("uid", "gid", "nogroup"), primary=True)}

    def _db(self, t: TaskBuilder, today: int):
        """passwd rows (name, uid, gid, home, shell), group rows (name, gid, members) and shadow rows."""
        k, rng = t.knobs, t.rng
        users = [u for u in SYSTEM if k.people > 5 or u[0] in ("root", "daemon", "www-data", "nobody", "postgres")]
        groups = [[g, gid, []] for g, gid in SYS_GROUPS]
        people = rng.sample(PEOPLE, k.people)
        odd = ["/usr/bin/fish", "/bin/rbash", ""] if k.shells_file else ["/bin/false", "/usr/sbin/nologin"]
        uids = sorted(rng.sample(range(1000, 1000 + 3 * k.people), k.people))
        for p, uid in zip(people, uids):
            shell = rng.choice(odd) if rng.random() < 0.3 else rng.choice(SHELLS[:3])
            gid = uid if rng.random() < 0.8 else rng.choice([100, 100, 100, 101])  # user private group, or a shared one
            users.append((p, uid, gid, f"/home/{p}", shell))
            if gid == uid:
                groups.append([p, uid, []])
        teams = [[g, 2000 + i, []] for i, g in enumerate(rng.sample(TEAMS, 3))]
        groups += teams
        for g in groups:
            if g[0] in ("sudo", "adm", "docker") or g in teams:
                g[2] = rng.sample(people, rng.randrange(1, 4))
                if k.stale and rng.random() < 0.5:
                    g[2].append(rng.choice([x for x in PEOPLE if x not in people]))  # an account since removed
                if k.stale and rng.random() < 0.3:
                    g[2].append(g[2][0])
        # Conflicts: a second UID 0 and a re-used UID; with gid checks, two groups on one GID.
        victim = rng.choice(users[len(users) - k.people:])
        users.append(("toor", 0, 0, "/root", "/bin/bash"))
        users.append((f"{victim[0]}2", victim[1], victim[2], f"/home/{victim[0]}2", "/bin/bash"))
        if "gid" in k.checks:
            groups.append([rng.choice(["staff", "users2", "wheel"]), rng.choice(teams)[1], []])
        if "nogroup" in k.checks:
            lost = max(uids) + rng.randrange(5, 40)
            users.append(("contractor", lost, lost, "/home/contractor", "/bin/bash"))
        if not any(g[1] == 100 for g in groups):
            groups.append(["users", 100, []])
        shadow = []
        for u in users:
            pw = "$6$" + "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789./") for _ in range(20))
            if u[4].endswith("nologin") or rng.random() < 0.2:
                pw = rng.choice(["!", "*", "!" + pw, "!!"])
            expire = ""
            if k.expiry and rng.random() < 0.25:
                expire = str(today + rng.choice([-400, -30, -1, 0, 1, 45]))
            shadow.append((u[0], pw, str(today - rng.randrange(10, 900)), "0", "99999", "7", "", expire, ""))
        rng.shuffle(groups)
        return users, groups, shadow

    def _files(self, t: TaskBuilder, users, groups, shadow) -> dict[str, str]:
        k, rng = t.knobs, t.rng
        system = [u[0] for u in SYSTEM]
        tail = [u for u in users if u[0] not in system]
        rng.shuffle(tail)  # humans and the conflicting accounts in no particular order
        order = [u for u in users if u[0] in system] + tail
        pw = [f"{n}:x:{uid}:{gid}:{n.capitalize()},,,:{home}:{shell}" for n, uid, gid, home, shell in order]
        if k.expiry:
            pw.insert(rng.randrange(len(pw)), "+@netadmins::::::")
            pw.append("+::::::")
        files = {"passwd": "\n".join(pw) + "\n",
                 "group": "".join(f"{g}:x:{gid}:{','.join(m)}\n" for g, gid, m in groups)}
        if k.shells_file:
            files["shells"] = "# /etc/shells: valid login shells\n" + "".join(s + "\n" for s in SHELLS)
        if k.shadow:
            files["shadow"] = "".join(":".join(r) + "\n" for r in shadow)
        return files

    def output_case(self, t: TaskBuilder) -> None:
        k, rng = t.knobs, t.rng
        today_date = dt.date(2025, 1, 1) + dt.timedelta(days=rng.randrange(600))
        today = (today_date - dt.date(1970, 1, 1)).days
        src = fill(REFERENCE, VARIANT=repr(t.variant), USE_SHELLS=k.shells_file, TODAY=today if k.expiry else None,
                   CHECKS=k.checks, PRIMARY=k.primary)
        ref = run_python(src)
        for _ in range(30):
            files = self._files(t, *self._db(t, today))
            if self._report(ref, "HOST", files).count("\n") >= 2:
                break
        else:
            raise FamilyError(f"family {self.name}: no account database with two {t.variant} lines in 30 draws")
        for name, text in files.items():
            t.add_file(f"/app/etc/{name}", text)
        host = unseen(t, lambda: t.code(2))
        truth = self._report(ref, host, files)
        have = ", ".join(f"`{n}`" for n in files)
        ask = ASKS[t.variant] if k.primary or t.variant != "members" else (
            "list every group's members as its member list names them: one line per group with a non-empty list, as "
            "`<HOST>:<group>:<member>,<member>,...` with the members in the order the list gives them, the lines "
            "sorted by group name in byte order")
        t.say(f"The account database of one of our hosts was collected into `/app/etc/` ({have}, in the usual "
              f"formats of those files). For the fleet report, {ask}.")
        rules = []
        if t.variant == "logins":
            rules.append("An account can log in interactively when its login shell is listed in `/app/etc/shells`; "
                         "an empty shell field means `/bin/sh`." if k.shells_file else
                         "An account can log in interactively unless its shell is `/bin/false` or ends in `/nologin`.")
            if k.shadow:
                rules.append("An account whose password field in shadow starts with `!` or `*` is locked and cannot.")
            if k.expiry:
                rules.append(f"Nor can an account whose shadow expiry date (days since 1970-01-01) is on or before "
                             f"today, {today_date:%Y-%m-%d}.")
        elif t.variant == "members":
            if k.stale:
                rules.append("Member lists may still name accounts that no longer exist in passwd: leave them out.")
        else:
            kinds = {"uid": "`<HOST>:uid <n>:<user>,<user>,...` for every UID held by more than one account",
                     "gid": "`<HOST>:gid <n>:<group>,<group>,...` for every GID held by more than one group",
                     "nogroup": "`<HOST>:nogroup <gid>:<user>` for every account whose primary GID no group has"}
            rules.append("The lines are: " + "; then ".join(kinds[c] for c in k.checks) + ". Names within a line "
                         "are sorted in byte order; lines of one kind are sorted by number (for nogroup lines, ties by "
                         "user name).")
        if k.expiry:
            rules.append("Lines starting with `+` or `-` are NIS compat entries, not accounts.")
        if rules:
            t.say(" ".join(rules))
        t.say("HOST is the host's inventory name, given below; the report files every line under it.")
        var = t.deliver(host, "the inventory name of the host")
        t.add_solution_file("accounts.py", src)
        t.solve(f'test -n "{var}"\nmkdir -p /app/out\n'
                f'python3 /solution/accounts.py "{var}" /app/etc > /app/out/accounts.txt')
        t.expect_output("/app/out/accounts.txt", truth, "the report")

    @staticmethod
    def _report(ref, host, files):
        with host_files(files) as (d, _):
            return ref["report"](host, d)
