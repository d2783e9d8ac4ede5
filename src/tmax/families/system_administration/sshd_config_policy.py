"""Does each host's sshd_config meet the hardening baseline? Keywords are case-insensitive, `Key=value`
and `Key value` both parse, the first value of a keyword wins (but `Port` accumulates: sshd listens on
every one), defaults apply when a keyword is absent, and at higher levels `Match` blocks that re-enable
forbidden settings also violate. Either audit a fleet of configs or write the gate program itself.

The delivered value is what the agent cannot see elsewhere: for the gate program the approved port (the
corpora are hidden); for a fleet audit, where compliant configs show the port, the first free number in
the ticket tracker, from which every report line is numbered."""

from __future__ import annotations

from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.unseen import unseen

REFERENCE = r'''
import os
import re
import sys

PORT = "@@VALUE@@"
APPROVED_PORT = "@APPROVED@"
MAX_TRIES = @MAX_TRIES@
CHECKS = @CHECKS@
DEFAULTS = {"permitrootlogin": "prohibit-password", "passwordauthentication": "yes", "permitemptypasswords": "no",
            "x11forwarding": "no", "maxauthtries": "6"}
ROOT_OK = ("no", "prohibit-password", "without-password", "forced-commands-only")
NAMES = {"port": "Port", "permitrootlogin": "PermitRootLogin", "passwordauthentication": "PasswordAuthentication",
         "permitemptypasswords": "PermitEmptyPasswords", "x11forwarding": "X11Forwarding",
         "maxauthtries": "MaxAuthTries"}
SPLIT = re.compile(r"^\s*([A-Za-z0-9]+)(?:\s*=\s*|\s+)(.*?)\s*$")


def bad_value(key, val):
    val = val.lower()
    if key == "permitrootlogin":
        return val not in ROOT_OK
    if key == "maxauthtries":
        return not val.isdigit() or int(val) > MAX_TRIES
    return val != "no"


def violations(text, port=None):
    port = port or APPROVED_PORT or PORT
    first, ports, in_match, matched_bad = {}, [], False, []
    for line in text.splitlines():
        if not line.strip() or line.strip().startswith("#"):
            continue
        m = SPLIT.match(line)
        if not m:
            continue
        key, val = m.group(1).lower(), m.group(2)
        if key == "match":
            in_match = True
            continue
        if in_match:
            if key in CHECKS and key != "port" and bad_value(key, val) and key not in matched_bad:
                matched_bad.append(key)
            continue
        if key == "port":
            ports.append(val)
        elif key not in first:
            first[key] = val
    out = []
    for key in CHECKS:
        if key == "port":
            wrong = sorted(set(ports or ["22"])) != [port]
        else:
            wrong = bad_value(key, first.get(key, DEFAULTS[key])) or key in matched_bad
        if wrong:
            out.append(NAMES[key])
    return out


if __name__ == "__main__":
    if len(sys.argv) > 2:  # FIRST_TICKET DIR: audit every *.conf in DIR, one numbered ticket per bad host
        ticket, root = int(sys.argv[1]), sys.argv[2]
        for name in sorted(os.listdir(root)):
            if name.endswith(".conf"):
                with open(os.path.join(root, name)) as f:
                    bad = violations(f.read())
                if bad:
                    print(f"{ticket} {name[:-5]} {','.join(bad)}")
                    ticket += 1
    else:
        sys.exit(1 if violations(sys.stdin.read()) else 0)
'''

FILLER = ["AcceptEnv LANG LC_*", "Subsystem sftp /usr/lib/openssh/sftp-server", "UsePAM yes", "PrintMotd no",
          "ChallengeResponseAuthentication no", "KbdInteractiveAuthentication no", "ClientAliveInterval 300",
          "LoginGraceTime 30", "AllowAgentForwarding no", "LogLevel VERBOSE", "HostKey /etc/ssh/ssh_host_ed25519_key",
          "PubkeyAuthentication yes", "AuthorizedKeysFile .ssh/authorized_keys", "Banner /etc/issue.net"]
MATCHES = ["Match User backup", "Match Group sftponly", "Match Address 10.0.0.0/8", "Match User deploy,ci"]


class _Gen:
    """Random sshd_config text, safe or with planted violations, using the level's syntax traps."""

    def __init__(self, rng, level, port, max_tries, checks):
        self.rng, self.level, self.port, self.max_tries, self.checks = rng, level, port, max_tries, checks

    def kw(self, name):
        rng = self.rng
        if self.level >= 2 and rng.random() < 0.3:
            name = rng.choice([name.lower(), name.upper()])
        return name

    def line(self, name, val):
        rng = self.rng
        sep = " "
        if self.level >= 2:
            sep = rng.choice([" ", " ", "\t", "=", " = ", "="])
        if self.level >= 3 and rng.random() < 0.15:
            val = rng.choice([val.upper(), val.title()])
        return f"{rng.choice(['', '', '  '])}{self.kw(name)}{sep}{val}"

    def good(self, key):
        rng = self.rng
        return {"Port": str(self.port),
                "PermitRootLogin": rng.choice(["no", "prohibit-password", "without-password", "forced-commands-only"]),
                "PasswordAuthentication": "no", "PermitEmptyPasswords": "no", "X11Forwarding": "no",
                "MaxAuthTries": str(rng.randint(2, self.max_tries))}[key]

    def bad(self, key):
        rng = self.rng
        return {"Port": str(rng.choice([22, 2200, 8022, self.port + 1, self.port - 1])),
                "PermitRootLogin": "yes", "PasswordAuthentication": "yes", "PermitEmptyPasswords": "yes",
                "X11Forwarding": "yes", "MaxAuthTries": str(rng.randint(self.max_tries + 1, 10))}[key]

    def config(self, want_bad):
        rng, level = self.rng, self.level
        keys = [k for k in ("Port", "PermitRootLogin", "PasswordAuthentication", "PermitEmptyPasswords",
                            "X11Forwarding", "MaxAuthTries") if k.lower() in self.checks]
        spoil = []
        if want_bad:
            spoil = rng.sample(keys, rng.choice([1, 1, 1, 2]))
        body = [f"# sshd_config managed by {rng.choice(['ansible', 'puppet', 'hand', 'salt'])}"]
        for f in rng.sample(FILLER, rng.randint(3, 6)):
            body.append(f)
        entries = []
        match_bad = None
        for key in keys:
            optional_default_ok = key in ("PermitRootLogin", "PermitEmptyPasswords", "X11Forwarding")
            if key in spoil:
                trick = rng.random()
                if level >= 3 and key != "Port" and trick < 0.3:
                    entries.append(self.line(key, self.good(key)))
                    match_bad = key  # forbidden value inside a Match block
                elif level >= 2 and trick < 0.55 and key != "Port":
                    # a bad first value with a good one later: first wins
                    entries.append("\n".join([self.line(key, self.bad(key)),
                                               "#" + self.line(key, self.good(key)).strip(),
                                               self.line(key, self.good(key))]))
                elif key == "Port" and level >= 3 and trick < 0.5:
                    entries.append(self.line(key, str(self.port)))
                    entries.append(self.line(key, self.bad(key)))  # listens on a second port too
                elif key in ("PasswordAuthentication", "MaxAuthTries") and level >= 2 and trick < 0.8:
                    entries.append(f"#{key} {self.good(key)}")  # commented out: the unsafe default applies
                elif key == "Port" and trick < 0.8:
                    entries.append(f"#Port {self.port}")
                else:
                    entries.append(self.line(key, self.bad(key)))
            else:
                trick = rng.random()
                if optional_default_ok and trick < 0.3:
                    if rng.random() < 0.5:
                        entries.append(f"#{key} yes")
                    continue  # absent: the safe default applies
                if level >= 2 and trick < 0.5:
                    entries.append(self.line(key, self.good(key)) + "\n"
                                   + (self.line(key, self.bad(key)) if key != "Port" else self.line(key, str(self.port))))
                elif level >= 2 and key == "Port" and trick < 0.6:
                    entries.append(self.line(key, str(self.port)))
                    entries.append(self.line(key, str(self.port)))
                else:
                    entries.append(self.line(key, self.good(key)))
        rng.shuffle(entries)
        body += entries
        if level >= 3:
            for _ in range(rng.randint(0, 2)):
                body.append(rng.choice(MATCHES))
                body.append("    " + self.line("AllowTcpForwarding", "no").strip())
                if rng.random() < 0.5:  # a Match block may tighten things; that is fine
                    key = rng.choice([k for k in keys if k != "Port"])
                    body.append("    " + self.line(key, self.good(key)).strip())
            if match_bad:
                body.append(rng.choice(MATCHES))
                body.append("    " + self.line(match_bad, self.bad(match_bad)).strip())
        return "\n".join(body) + "\n"


ALL_CHECKS = ("port", "permitrootlogin", "passwordauthentication", "permitemptypasswords", "x11forwarding",
              "maxauthtries")


@dataclass(frozen=True)
class Knobs:
    hosts: int  # configs in the fleet audit
    items: int  # configs per corpus (clean and malicious each)
    checks: int  # baseline keywords checked (a prefix of ALL_CHECKS)


@register
class SshdConfigPolicy(Family):
    name = "sshd_config_policy"
    domain = "system_administration"
    skill_types = ("Configuration",)
    primitive_skills = ("sshd_config parsing", "first-match configuration semantics", "security baseline auditing",
                        "default value reasoning", "Match block scoping", "input validation")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol", "adversarial_corpus")
    programs = {"Python": REFERENCE}
    levels = {0: Knobs(hosts=5, items=16, checks=3), 1: Knobs(hosts=6, items=20, checks=3), 2: Knobs(hosts=10, items=30, checks=4),
              3: Knobs(hosts=14, items=40, checks=6), 4: Knobs(hosts=20, items=60, checks=6)}

    def baseline(self, level: int, checks: int, max_tries: int, port: str) -> tuple[str, str]:
        """(the syntax paragraph, the baseline as a bullet list); ``port`` is the port as the rules state it."""
        rules = [f"`Port`: sshd must listen on the approved port ({port}) and on no other port. `Port` may "
                 "appear several times and sshd listens on every one of them; with no `Port` line it listens on 22.",
                 "`PermitRootLogin`: must be `no`, `prohibit-password`, `without-password` or "
                 "`forced-commands-only`; the default when absent is `prohibit-password`.",
                 "`PasswordAuthentication`: must be `no`; the default when absent is `yes`."]
        if checks >= 4:
            rules.append("`PermitEmptyPasswords`: must be `no`; the default when absent is `no`.")
        if checks >= 6:
            rules.append("`X11Forwarding`: must be `no`; the default when absent is `no`.")
            rules.append(f"`MaxAuthTries`: must be a number no greater than {max_tries}; the default when absent "
                         "is 6.")
        syntax = ("sshd_config syntax: one `Keyword value` per line; lines starting with `#` (after optional "
                  "blanks) are comments. Keywords are case-insensitive"
                  + (" and so are the yes/no style values; the keyword may be separated from its value by blanks "
                     "or by `=` (with optional blanks around it)" if level >= 2 else "")
                  + ". Apart from `Port`, the FIRST occurrence of a keyword is the one sshd uses; later ones are "
                  "ignored.")
        if level >= 3:
            syntax += (" A `Match` line starts a block that lasts until the next `Match` line or the end of the file. "
                       "Settings inside Match blocks do not change the global values, but a Match block that sets any "
                       "checked keyword (other than `Port`) to a value the baseline forbids is itself a violation of "
                       "that keyword.")
        return syntax, "\n".join(f"- {r}" for r in rules)

    def corpus_case(self, t: TaskBuilder) -> None:
        k, rng, level = t.knobs, t.rng, t.level
        max_tries = rng.randint(3, 4)
        checks = ALL_CHECKS[:k.checks]
        syntax, rules_txt = self.baseline(level, k.checks, max_tries, "given above")
        # The gate hard-codes the delivered port (five digits: shorter numbers turn up by chance in the
        # decodings of a binary channel); the corpora are hidden.
        port = int(unseen(t, lambda: str(rng.randrange(10000, 60000)), syntax, rules_txt))
        src = fill(REFERENCE, APPROVED="", MAX_TRIES=max_tries, CHECKS=checks)
        ns = run_python(src)
        gen = _Gen(rng, level, port, max_tries, checks)
        t.deliver(str(port), "the approved SSH port")
        clean, bad = [], []
        for _ in range(100 * k.items):
            if len(clean) >= k.items and len(bad) >= k.items:
                break
            text = gen.config(rng.random() < 0.5)
            (bad if ns["violations"](text, str(port)) else clean).append(text)
        else:
            raise FamilyError(f"family {self.name}: could not fill the corpora")
        clean, bad = clean[:k.items], bad[:k.items]
        t.say("We are adding a pre-merge gate for sshd configuration changes. The gate receives one complete "
              f"`sshd_config` file on standard input and decides whether it meets our baseline.\n\n{syntax}\n\n"
              f"The baseline:\n{rules_txt}")
        t.expect_classifier("Accept (exit 0) a compliant config and reject (exit 1) any config that violates "
                            "the baseline. Hard-code the approved port and the limits.", clean, bad, {"Python": src})
        t.solve('sed -i "s/@@VALUE@@/$V1/" /app/solution.py')

    def output_case(self, t: TaskBuilder) -> None:
        k, rng, level = t.knobs, t.rng, t.level
        max_tries = rng.randint(3, 4)
        checks = ALL_CHECKS[:k.checks]
        # The audit is told the port; the delivered value is the first free ticket number.
        port = rng.randrange(10000, 60000)
        syntax, rules_txt = self.baseline(level, k.checks, max_tries, str(port))
        src = fill(REFERENCE, APPROVED=str(port), MAX_TRIES=max_tries, CHECKS=checks)
        ns = run_python(src)
        gen = _Gen(rng, level, port, max_tries, checks)
        hosts = sorted(rng.sample([f"{p}-{i:02d}" for p in ("web", "db", "cache", "batch", "edge") for i in
                                   range(1, 13)], k.hosts))
        if level == 0:
            return self._atomic(t, gen, hosts)
        lines = []
        for i, h in enumerate(hosts):
            text = gen.config(i == 0 or rng.random() < 0.55)
            t.add_file(f"/app/fleet/{h}.conf", text)
            bad = ns["violations"](text)
            if bad:
                lines.append(f"{h} {','.join(bad)}")
        names = [ns["NAMES"][c] for c in checks]
        fmt = ("Report format: one line per non-compliant host, sorted by host name (byte order), as `ticket host "
               "Keyword,Keyword` listing the violated keywords without spaces in this order: "
               + ", ".join(names) + " (for example `40117 web-01 Port,PasswordAuthentication`). Compliant hosts "
               "are not listed.")
        # No ticket of the report lies near a number the task shows (a neighbour guessed would score).
        first = int(unseen(t, lambda: str(rng.randrange(10000, 99000)), syntax, rules_txt, fmt,
                           near=len(lines) + 5))
        truth = "".join(f"{first + i} {x}\n" for i, x in enumerate(lines))
        v = t.deliver(str(first), "the first free ticket number")
        t.say("Each of our hosts' `sshd_config` has been collected as `/app/fleet/<host>.conf`. Audit them against "
              f"the hardening baseline below.\n\n{syntax}\n\nThe baseline:\n{rules_txt}\n\n"
              "Each non-compliant host gets a ticket in our tracker: the first one takes the first free ticket "
              "number (given above), the next one the number after it, and so on, in report order.\n\n" + fmt)
        t.add_solution_file("sshd_audit.py", src)
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\n'
                f'python3 /solution/sshd_audit.py "{v}" /app/fleet > /app/out/sshd_audit.txt')
        t.expect_output("/app/out/sshd_audit.txt", truth, "the report")

    def _atomic(self, t: TaskBuilder, gen: _Gen, hosts: list[str]) -> None:
        """One grep and a numbering: the hosts that turn password logins on, each with its ticket."""
        rng = t.rng
        texts = [gen.config(i == 0 or rng.random() < 0.55) for i in range(len(hosts))]

        def flagged(text):
            return any(ln.split() == ["PasswordAuthentication", "yes"] for ln in text.splitlines())
        if not any(flagged(x) for x in texts):  # never an empty answer
            texts[0] = "PasswordAuthentication yes\n" + texts[0]
        bad = [h for h, x in zip(hosts, texts) if flagged(x)]
        for h, x in zip(hosts, texts):
            t.add_file(f"/app/fleet/{h}.conf", x)
        fmt = "one line per such host, sorted by host name, as `<ticket> <host>` (for example `40117 web-01`)"
        first = int(unseen(t, lambda: str(rng.randrange(10000, 99000)), fmt, near=len(bad) + 5))
        v = t.deliver(str(first), "the first free ticket number")
        t.say("Each host's `sshd_config` is `/app/fleet/<host>.conf`. Every host whose config has the line "
              "`PasswordAuthentication yes` gets a ticket: the first such host (by name) takes the ticket number "
              f"given above, the next one the number after it, and so on. Write {fmt}.")
        t.solve(f'mkdir -p /app/out\ncd /app/fleet && grep -lE "^\\s*PasswordAuthentication yes\\s*$" *.conf '
                f'| sort | sed "s/\\.conf$//" | awk -v n="{v}" \'{{print n++, $0}}\' > /app/out/tickets.txt')
        t.expect_output("/app/out/tickets.txt", "".join(f"{first + i} {h}\n" for i, h in enumerate(bad)),
                        "the ticket list")
