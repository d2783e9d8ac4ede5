"""Which accounts on one server break the password policy? A fleet export holds each host's `/etc/passwd`
and `/etc/shadow` under a folder named by a hash of the host name (delivered). Variants: `aging` works
out from the shadow date fields (days since 1970) which accounts have an expired password, must change
it, went inactive or expired outright, and since when; `hashes` names the accounts that can still log in
with a weak or missing password hash (DES, md5crypt, empty, too few rounds); `reuse` groups the accounts
that share one password hash, salt and all (a provisioning script copied it). Higher levels add the rarer
shadow states, locked hashes (`!`, `*`) that still reveal a copied hash, non-login shells and system
accounts."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from tmax.families.base import Family, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.security import _fleet as fleet

REFERENCE = r'''
import datetime as dt
import re
import sys

TODAY = @TODAY@  # the audit day, in days since 1970-01-01
RULES = @RULES@  # how many of the level's rules apply (0: the first only)
MIN_ROUNDS = @MIN_ROUNDS@  # sha-crypt hashes with fewer explicit rounds are weak
NOLOGIN = ("/usr/sbin/nologin", "/sbin/nologin", "/bin/false", "/usr/bin/false")


def rows(text):
    return [line.split(":") for line in text.splitlines() if line.strip() and not line.startswith("#")]


def day(n):
    return (dt.date(1970, 1, 1) + dt.timedelta(days=n)).isoformat()


def num(s):
    return int(s) if s.strip() else None


def aging(sh):
    name, pw, last, _, mx, _, inact, exp = sh[:8]
    last, mx, inact, exp = num(last), num(mx), num(inact), num(exp)
    if RULES >= 3 and exp is not None and TODAY >= exp:
        return f"{name} account-expired {day(exp)}"
    if RULES >= 2 and last == 0:
        return f"{name} must-change"
    if last is None or mx is None or mx >= 99999:
        return None
    if RULES >= 3 and inact is not None and TODAY >= last + mx + inact:
        return f"{name} inactive {day(last + mx + inact)}"
    if TODAY >= last + mx:
        return name if RULES == 0 else f"{name} password-expired {day(last + mx)}"
    return None


def scheme(pw):
    if pw.startswith(("!", "*")):
        return None  # locked: no password login at all
    if pw == "":
        return "empty" if RULES >= 2 else None
    if pw.startswith("$1$"):
        return "md5crypt"
    if RULES >= 1 and re.fullmatch(r"[./0-9A-Za-z]{13}", pw):
        return "des"
    m = re.match(r"\$[56]\$rounds=([0-9]+)\$", pw)
    if RULES >= 4 and m and int(m.group(1)) < MIN_ROUNDS:
        return "low-rounds"
    return None


def audit(passwd, shadow, variant):
    users = {p[0]: p for p in rows(passwd)}
    out = []
    if variant == "aging":
        for sh in rows(shadow):
            if RULES >= 4 and sh[0] in users and int(users[sh[0]][2]) < 1000:
                continue  # system accounts are out of scope
            line = aging(sh)
            if line:
                out.append(line)
    elif variant == "hashes":
        for sh in rows(shadow):
            shell = users[sh[0]][6] if sh[0] in users else ""
            if RULES >= 3 and shell in NOLOGIN:
                continue
            s = scheme(sh[1])
            if s:
                out.append(f"{sh[0]} {s}")
    else:
        same = {}
        for sh in rows(shadow):
            pw = sh[1][1:] if RULES >= 1 and sh[1].startswith("!") else sh[1]
            if RULES >= 3 and (users[sh[0]][6] if sh[0] in users else "") in NOLOGIN:
                continue
            if pw.startswith("$") or len(pw) == 13:  # a crypt hash, not a lock marker
                same.setdefault(pw, []).append(sh[0])
        out = [" ".join(sorted(names)) for names in same.values() if len(names) > 1]
    return "".join(x + "\n" for x in sorted(out))


if __name__ == "__main__":  # accounts.py HOST_ROOT aging|hashes|reuse
    r = sys.argv[1]
    files = [open(f"{r}/etc/{n}").read() for n in ("passwd", "shadow")]
    sys.stdout.write(audit(*files, sys.argv[2]))
'''

SYSTEM = (("daemon", 1, "/usr/sbin/nologin"), ("bin", 2, "/usr/sbin/nologin"), ("www-data", 33, "/usr/sbin/nologin"),
          ("backup", 34, "/usr/sbin/nologin"), ("sshd", 110, "/usr/sbin/nologin"), ("postgres", 114, "/bin/bash"))
HUMANS = ("alice", "bob", "carol", "dmitri", "erin", "farid", "grace", "hiro", "ines", "jon", "kemal", "lena",
          "mario", "nadia", "oscar", "priya")
B64 = "./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def _hash(rng, kind):
    r = lambda n: "".join(rng.choice(B64) for _ in range(n))  # noqa: E731
    return {"sha512": lambda: f"$6${r(16)}${r(86)}", "yescrypt": lambda: f"$y$j9T${r(22)}${r(43)}",
            "md5": lambda: f"$1${r(8)}${r(22)}", "des": lambda: r(13), "empty": lambda: "",
            "rounds": lambda: f"$6$rounds={rng.choice([1000, 2000, 4000, 20000, 656000])}${r(16)}${r(86)}",
            "locked": lambda: "!" + rng.choice([f"$1${r(8)}${r(22)}", f"$6${r(16)}${r(86)}", ""]),
            "star": lambda: "*"}[kind]()


@dataclass(frozen=True)
class Knobs:
    humans: int  # login accounts per host
    traps: int  # the RULES of the reference: 0 atomic ... 4 every rule
    decoys: int  # other hosts of the fleet


@register
class ShadowAccountAudit(Family):
    name = "shadow_account_audit"
    domain = "security"
    skill_types = ("Access Control", "Forensics")
    primitive_skills = ("config file parsing", "credential audit reporting", "salted password hashing",
                        "token expiry and claim checks")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("aging", "hashes", "reuse")
    levels = {0: Knobs(humans=5, traps=0, decoys=2),
              1: Knobs(humans=8, traps=1, decoys=2),
              2: Knobs(humans=10, traps=2, decoys=3),
              3: Knobs(humans=13, traps=3, decoys=3),
              4: Knobs(humans=16, traps=4, decoys=3)}

    def _host(self, t, today):
        """(passwd, shadow) texts of one host."""
        k, rng = t.knobs, t.rng
        kinds = ["sha512", "sha512", "yescrypt", "md5"] + (["des"] if k.traps >= 1 else []) + \
            (["empty", "locked", "star"] if k.traps >= 2 else []) + (["rounds"] * 2 if k.traps >= 4 else [])
        accts = [("root", 0, 0, "/bin/bash")] + [(n, u, u, s) for n, u, s in SYSTEM[:2 + k.traps]]
        uid = 1000 + rng.randrange(50)
        for name in rng.sample(HUMANS, k.humans):
            uid += rng.randrange(1, 4)
            shell = rng.choice(["/usr/sbin/nologin", "/bin/false"]) if k.traps >= 3 and rng.random() < 0.2 else \
                rng.choice(["/bin/bash", "/bin/zsh"])
            accts.append((name, uid, uid, shell))
        passwd, shadow, hashes = [], [], []
        for name, u, gid, shell in accts:
            home = "/root" if name == "root" else f"/home/{name}" if u >= 1000 or u == 0 else f"/var/lib/{name}"
            passwd.append(f"{name}:x:{u}:{gid}:{name.title()}:{home}:{shell}")
            pw = _hash(rng, rng.choice(kinds) if u >= 1000 or name == "root" else rng.choice(["star", "locked"]))
            if hashes and u >= 1000 and rng.random() < 0.2:  # a copied hash, locked now and then from level 1
                pw = ("!" if k.traps >= 1 and rng.random() < 0.3 else "") + rng.choice(hashes).lstrip("!")
            hashes += [pw] if len(pw) > 2 else []
            last = today - rng.randrange(0, 400) if k.traps < 2 or rng.random() > 0.1 else 0
            mx = rng.choice(["", "90", "180", "99999", "365"])
            inact = rng.choice(["", "", "14", "30"]) if k.traps >= 3 else ""
            exp = str(today + rng.randrange(-60, 200)) if k.traps >= 3 and rng.random() < 0.25 else ""
            shadow.append(f"{name}:{pw}:{last}:0:{mx}:7:{inact}:{exp}:")
        return ["".join(x + "\n" for x in f) for f in (passwd, shadow)]

    def output_case(self, t: TaskBuilder) -> None:
        k, rng, variant = t.knobs, t.rng, t.variant
        today = 20400 + rng.randrange(900)
        src = fill(REFERENCE, TODAY=today, RULES=k.traps, MIN_ROUNDS=5000)
        ref = run_python(src)
        hosts, truth = fleet.pick(t, lambda: [self._host(t, today) for _ in range(1 + k.decoys)],
                                  lambda h: ref["audit"](*h, variant))
        target = fleet.ship(t, "/app/hosts", [{"etc/passwd": pw, "etc/shadow": sh} for pw, sh in hosts])
        who = fleet.intro(t, "/app/hosts", "copies of `/etc/passwd` and `/etc/shadow` from each of our servers, at "
                          "`etc/`", "server", target)
        date = (dt.date(1970, 1, 1) + dt.timedelta(days=today)).isoformat()
        if variant == "aging":
            rules = [f"Shadow dates count days since 1970-01-01; the audit day is {date} (day {today}). A password "
                     "expires on its last-change day plus the maximum age (field 5; empty or 99999: never) and is "
                     "expired from that day on."]
            if k.traps >= 2:
                rules.append("A last-change day of 0 means the user must change the password at the next login "
                             "(`must-change`, no date), whatever its age fields (4 to 7) say.")
            if k.traps >= 3:
                rules.append("Stronger states win, one line per account: an account-expiry day (field 8) that has "
                             "been reached gives `account-expired <that day>`, before anything else; otherwise, a password still expired "
                             "once the inactive period (field 7) has passed after its expiry gives `inactive <expiry "
                             "plus inactive days>`.")
            if k.traps >= 4:
                rules.append("System accounts (UID below 1000 in passwd, root included) are out of scope.")
            t.say(" ".join(rules))
            t.say("List the account names with an expired password, one per line." if k.traps == 0 else
                  "Write one line per affected account: `<account> <state> <date as YYYY-MM-DD>` with the state "
                  "`password-expired` and the day it expired" + (", or the states above." if k.traps >= 2 else "."))
        elif variant == "hashes":
            weak = ["md5crypt (`$1$`)"] + (["traditional DES (13 characters of `[./0-9A-Za-z]`)"] if k.traps else [])
            if k.traps >= 4:
                weak.append("SHA-crypt (`$5$`, `$6$`) with an explicit `rounds=N` below 5000 (`low-rounds`)")
            rules = [f"Weak password hashes are {'; '.join(weak)}."]
            if k.traps >= 2:
                rules.append("An empty hash field lets anyone in (`empty`). A hash starting with `!` or `*` is locked "
                             "and never matters.")
            if k.traps >= 3:
                rules.append("Accounts whose login shell (passwd) is `/usr/sbin/nologin`, `/sbin/nologin`, "
                             "`/bin/false` or `/usr/bin/false` cannot log in: leave them out.")
            t.say(" ".join(rules))
            t.say("Write one line `<account> <kind>` per account with a weak or missing hash, kind one of `md5crypt`"
                  + (", `des`" if k.traps >= 1 else "") + (", `empty`" if k.traps >= 2 else "")
                  + (", `low-rounds`" if k.traps >= 4 else "") + ".")
        else:
            rules = ["Some accounts share one password hash field (the same salt and hash: a script copied it, so they "
                     "share the password)."]
            if k.traps >= 1:
                rules.append("A leading `!` only locks the account: the hash after it still counts.")
            if k.traps >= 2:
                rules.append("Fields that are no hash (`*`, a lone `!`, empty) never match anything.")
            if k.traps >= 3:
                rules.append("Accounts whose login shell (passwd) is `/usr/sbin/nologin`, `/sbin/nologin`, "
                             "`/bin/false` or `/usr/bin/false` are out of scope.")
            t.say(" ".join(rules) + " Write one line per shared hash: the account names that share it, sorted in "
                  "byte order and separated by single spaces.")
        t.say("Sort the lines in byte order (`LC_ALL=C sort`).")
        fleet.solve(t, who, "accounts.py", src, "/app/hosts/{KEY}", variant, "/app/out/accounts.txt")
        t.expect_output("/app/out/accounts.txt", truth, "the account audit")
