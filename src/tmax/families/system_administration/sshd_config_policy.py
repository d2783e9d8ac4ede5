"""Does each host's sshd_config meet the hardening baseline? Keywords are case-insensitive, `Key=value`
and `Key value` both parse, the first value of a keyword wins (but `Port` accumulates: sshd listens on
every one), defaults apply when a keyword is absent, and at higher levels `Match` blocks that re-enable
forbidden settings also violate. Either audit a fleet of configs or write the gate program itself. Variants:
the violations per host and a gate rejecting any violation (audit), the hosts per violated keyword and a
gate rejecting two or more violations (by_keyword), or every host's effective global settings and a gate
that also rejects a checked keyword left to its default (effective).

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

# The by_keyword and effective variants: the same parser, another report and another gate.
VARIANT_REFERENCE = REFERENCE[:REFERENCE.index('if __name__ == "__main__":')] + r'''VARIANT = "@VARIANT@"


def global_settings(text):
    """The global (outside Match blocks) first values, lower-cased keywords, and the Port lines' values."""
    first, ports = {}, []
    for line in text.splitlines():
        if not line.strip() or line.strip().startswith("#"):
            continue
        m = SPLIT.match(line)
        if not m:
            continue
        key, val = m.group(1).lower(), m.group(2)
        if key == "match":
            break
        if key == "port":
            ports.append(val)
        elif key not in first:
            first[key] = val
    return first, ports


def effective(text):
    first, ports = global_settings(text)
    out = []
    for key in CHECKS:
        if key == "port":
            val = ",".join(sorted(set(ports or ["22"]), key=int))
        else:
            val = first.get(key, DEFAULTS[key]).lower()
        out.append(f"{NAMES[key]}={val}")
    return out


def gate(text):
    """by_keyword: reject a config with two or more violations; effective: reject a violation or a checked
    keyword left to its default."""
    if VARIANT == "by_keyword":
        return len(violations(text)) >= 2
    first, _ = global_settings(text)
    return bool(violations(text)) or any(k not in first for k in CHECKS if k != "port")


if __name__ == "__main__":
    if len(sys.argv) > 2:  # FIRST_TICKET DIR
        ticket, root = int(sys.argv[1]), sys.argv[2]
        found = []
        for name in sorted(os.listdir(root)):
            if name.endswith(".conf"):
                with open(os.path.join(root, name)) as f:
                    found.append((name[:-5], f.read()))
        if VARIANT == "by_keyword":  # one ticket per violated keyword, listing its hosts
            bad = [(host, violations(text)) for host, text in found]
            for key in CHECKS:
                hosts = [host for host, v in bad if NAMES[key] in v]
                if hosts:
                    print(f"{ticket} {NAMES[key]} {','.join(hosts)}")
                    ticket += 1
        else:  # one ticket per host, with its effective settings
            for host, text in found:
                print(f"{ticket} {host} {' '.join(effective(text))}")
                ticket += 1
    else:
        sys.exit(1 if gate(sys.stdin.read()) else 0)
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
    variants = ("audit", "by_keyword", "effective")
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
        if t.variant == "audit":
            src = fill(REFERENCE, APPROVED="", MAX_TRIES=max_tries, CHECKS=checks)
        else:
            src = fill(VARIANT_REFERENCE, APPROVED="", MAX_TRIES=max_tries, CHECKS=checks, VARIANT=t.variant)
        ns = run_python(src)
        gen = _Gen(rng, level, port, max_tries, checks)
        t.deliver(str(port), "the approved SSH port")
        clean, bad = [], []

        def rejected(text):
            if t.variant == "by_keyword":
                return len(ns["violations"](text, str(port))) >= 2
            if t.variant == "effective":
                first, _ = ns["global_settings"](text)
                return bool(ns["violations"](text, str(port))) or any(c not in first for c in checks if c != "port")
            return bool(ns["violations"](text, str(port)))
        for _ in range(100 * k.items):
            if len(clean) >= k.items and len(bad) >= k.items:
                break
            text = gen.config(rng.random() < 0.5)
            (bad if rejected(text) else clean).append(text)
        else:
            raise FamilyError(f"family {self.name}: could not fill the corpora")
        clean, bad = clean[:k.items], bad[:k.items]
        if t.variant == "audit":
            t.say("We are adding a pre-merge gate for sshd configuration changes. The gate receives one complete "
                  f"`sshd_config` file on standard input and decides whether it meets our baseline.\n\n{syntax}\n\n"
                  f"The baseline:\n{rules_txt}")
            spec = ("Accept (exit 0) a compliant config and reject (exit 1) any config that violates the baseline. "
                    "Hard-code the approved port and the limits.")
        elif t.variant == "by_keyword":
            t.say("Our sshd change review is noisy: a config that breaks a single baseline rule only earns a "
                  "warning, but one that breaks two or more rules must be blocked before merge. Write the blocking "
                  "step: it reads one whole `sshd_config` on standard input.\n\n"
                  f"{syntax}\n\nThe rules (each keyword is one rule):\n{rules_txt}")
            spec = ("Exit 1 when the config violates at least two different keywords of the baseline, exit 0 "
                    "otherwise (no violation or only one). Hard-code the approved port and the limits.")
        else:
            t.say("Our policy for sshd configs is explicit and compliant: nothing may rest on sshd's built-in "
                  "defaults. Write a strict checker that reads one `sshd_config` on standard input.\n\n"
                  f"{syntax}\n\nThe baseline:\n{rules_txt}\n\nOn top of the baseline, every checked keyword "
                  "other than `Port` must be set explicitly by an uncommented line outside any Match block; one left "
                  "to its default fails the check even when that default is compliant.")
            spec = ("Exit 0 for a config that is compliant and sets every checked keyword explicitly, exit 1 "
                    "otherwise. Hard-code the approved port and the limits.")
        t.expect_classifier(spec, clean, bad, {"Python": src})
        t.solve('sed -i "s/@@VALUE@@/$V1/" /app/solution.py')

    def output_case(self, t: TaskBuilder) -> None:
        k, rng, level = t.knobs, t.rng, t.level
        max_tries = rng.randint(3, 4)
        checks = ALL_CHECKS[:k.checks]
        # The audit is told the port; the delivered value is the first free ticket number.
        port = rng.randrange(10000, 60000)
        syntax, rules_txt = self.baseline(level, k.checks, max_tries, str(port))
        if t.variant == "audit":
            src = fill(REFERENCE, APPROVED=str(port), MAX_TRIES=max_tries, CHECKS=checks)
        else:
            src = fill(VARIANT_REFERENCE, APPROVED=str(port), MAX_TRIES=max_tries, CHECKS=checks, VARIANT=t.variant)
        ns = run_python(src)
        gen = _Gen(rng, level, port, max_tries, checks)
        hosts = sorted(rng.sample([f"{p}-{i:02d}" for p in ("web", "db", "cache", "batch", "edge") for i in
                                   range(1, 13)], k.hosts))
        for _ in range(self.variants.index(t.variant)):  # each variant's fleet from its own point of the stream
            rng.random()
        if level == 0:
            return self._atomic(t, gen, hosts)
        if t.variant != "audit":
            return self._variant_report(t, ns, src, gen, hosts, syntax, rules_txt)
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

    def _variant_report(self, t: TaskBuilder, ns: dict, src: str, gen: _Gen, hosts: list[str], syntax: str,
                        rules_txt: str) -> None:
        """by_keyword: a ticket per violated keyword listing its hosts; effective: a ticket per host with
        its effective global settings."""
        rng = t.rng
        texts = [gen.config(i == 0 or rng.random() < 0.55) for i in range(len(hosts))]
        checks = ns["CHECKS"]
        names = [ns["NAMES"][c] for c in checks]
        if t.variant == "by_keyword":
            where = "/app/sshd_configs"
            for h, x in zip(hosts, texts):
                t.add_file(f"{where}/{h}.conf", x)
            lines = []
            for key in checks:
                bad = [h for h, x in zip(hosts, texts) if ns["NAMES"][key] in ns["violations"](x)]
                if bad:
                    lines.append(f"{ns['NAMES'][key]} {','.join(bad)}")
            fmt = ("Report format: one line per baseline keyword that at least one host violates, in this order: "
                   + ", ".join(names) + "; each line is `ticket Keyword host,host,...` with the violating hosts "
                   "sorted by name (byte order) and separated by commas without spaces (for example `40117 "
                   "PasswordAuthentication db-03,web-01`). Keywords no host violates are not listed.")
            intro = (f"The security team wants one ticket per broken rule, not per host. The `sshd_config` of every "
                     f"host is in `{where}/<host>.conf`; audit them against the hardening baseline below.")
            ticket_text = "each listed keyword gets a ticket"
        else:
            where = "/app/inventory/sshd"
            for h, x in zip(hosts, texts):
                t.add_file(f"{where}/{h}.conf", x)
            lines = [f"{h} {' '.join(ns['effective'](x))}" for h, x in zip(hosts, texts)]
            fmt = ("Report format: one line per host, sorted by host name (byte order), as `ticket host "
                   "Keyword=value ...` with the keywords in this order: " + ", ".join(names) + ". `Port` lists "
                   "every port sshd listens on, ascending and without repeats, separated by commas; the other values "
                   "are written in lower case (for example `40117 web-01 Port=22,2200 PermitRootLogin=no "
                   "PasswordAuthentication=yes`).")
            intro = (f"For our configuration inventory we record the settings sshd actually runs with. The "
                     f"`sshd_config` of every host is in `{where}/<host>.conf`. For each host give the effective "
                     "global value of each keyword below: the value sshd uses outside any Match block (Match blocks "
                     "do not change it), or the default when the keyword is absent. The baseline is listed for its "
                     "defaults; a violation does not change what you report.")
            ticket_text = "every host gets a ticket"
        first = int(unseen(t, lambda: str(rng.randrange(10000, 99000)), syntax, rules_txt, fmt,
                           near=len(lines) + 5))
        truth = "".join(f"{first + i} {x}\n" for i, x in enumerate(lines))
        v = t.deliver(str(first), "the first free ticket number")
        t.say(f"{intro}\n\n{syntax}\n\nThe baseline:\n{rules_txt}\n\n"
              f"In our tracker {ticket_text}: the first line takes the first free ticket number (given above), the "
              "next line the number after it, and so on, in report order.\n\n" + fmt)
        t.add_solution_file("sshd_audit.py", src)
        out = {"by_keyword": "/app/out/keyword_tickets.txt", "effective": "/app/out/effective.txt"}[t.variant]
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\n'
                f'python3 /solution/sshd_audit.py "{v}" {where} > {out}')
        t.expect_output(out, truth, "the report")

    def _atomic(self, t: TaskBuilder, gen: _Gen, hosts: list[str]) -> None:
        """One grep and a numbering: the hosts that turn password logins on, each with its ticket."""
        rng = t.rng
        texts = [gen.config(i == 0 or rng.random() < 0.55) for i in range(len(hosts))]
        if t.variant == "by_keyword":
            return self._atomic_by_keyword(t, hosts, texts)
        if t.variant == "effective":
            return self._atomic_ports(t, hosts, texts)

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

    def _atomic_by_keyword(self, t: TaskBuilder, hosts: list[str], texts: list[str]) -> None:
        """Two greps: for each of two forbidden lines, one ticket listing the hosts that have it."""
        rng = t.rng
        keys = ("PermitRootLogin", "PasswordAuthentication")

        def has(text, key):
            return any(ln.split() == [key, "yes"] for ln in text.splitlines())
        if not any(has(x, keys[0]) for x in texts):  # never an empty answer
            texts[-1] = "PermitRootLogin yes\n" + texts[-1]
        where = "/app/sshd_configs"
        for h, x in zip(hosts, texts):
            t.add_file(f"{where}/{h}.conf", x)
        lines = []
        for key in keys:
            found = [h for h, x in zip(hosts, texts) if has(x, key)]
            if found:
                lines.append(f"{key} {','.join(found)}")
        fmt = ("one line per keyword that at least one host has, `PermitRootLogin` first, as `<ticket> <keyword> "
               "<host>,<host>,...` with the hosts sorted by name and no spaces after the commas (for example "
               "`40117 PermitRootLogin db-02,web-01`)")
        first = int(unseen(t, lambda: str(rng.randrange(10000, 99000)), fmt, near=len(lines) + 5))
        v = t.deliver(str(first), "the first free ticket number")
        t.say(f"Each host's `sshd_config` is `{where}/<host>.conf`. We open one ticket per dangerous line, not per "
              "host: one for the line `PermitRootLogin yes` and one for the line `PasswordAuthentication yes`, each "
              "listing the hosts whose config has that line (a keyword no host has gets no ticket). The first ticket "
              f"takes the number given above, the second the number after it. Write {fmt}.")
        t.solve(f'mkdir -p /app/out\ncd {where} && n="{v}"\nfor k in PermitRootLogin PasswordAuthentication; do\n'
                '  h=$( (grep -lE "^\\s*$k yes\\s*$" *.conf || true) | LC_ALL=C sort | sed "s/\\.conf$//" '
                '| paste -sd, -)\n'
                '  if [ -n "$h" ]; then echo "$n $k $h"; n=$((n + 1)); fi\n'
                'done > /app/out/keyword_tickets.txt')
        t.expect_output("/app/out/keyword_tickets.txt", "".join(f"{first + i} {x}\n" for i, x in enumerate(lines)),
                        "the ticket list")

    def _atomic_ports(self, t: TaskBuilder, hosts: list[str], texts: list[str]) -> None:
        """One awk per host: the port each host listens on, each host with its inventory number."""
        rng = t.rng
        where = "/app/inventory/sshd"
        lines = []
        for h, x in zip(hosts, texts):
            t.add_file(f"{where}/{h}.conf", x)
            ports = [ln.split()[1] for ln in x.splitlines() if ln.split()[:1] == ["Port"]]
            lines.append(f"{h} {ports[0] if ports else '22'}")
        fmt = "one line per host, sorted by host name, as `<number> <host> <port>` (for example `40117 web-01 2222`)"
        first = int(unseen(t, lambda: str(rng.randrange(10000, 99000)), fmt, near=len(lines) + 5))
        v = t.deliver(str(first), "the first free inventory number")
        t.say(f"Each host's `sshd_config` is `{where}/<host>.conf`. For our inventory, record the port each host's "
              "sshd listens on: the value of its (uncommented) `Port` line, or 22 when it has none. Every host gets "
              "an inventory number: the first host (by name) the number given above, the next one the number after "
              f"it, and so on. Write {fmt}.")
        t.solve(f'mkdir -p /app/out\ncd {where} && n="{v}"\nfor f in $(ls *.conf | LC_ALL=C sort); do\n'
                '  p=$(awk \'$1 == "Port" {print $2; exit}\' "$f")\n'
                '  echo "$n ${f%.conf} ${p:-22}"; n=$((n + 1))\n'
                'done > /app/out/ports.txt')
        t.expect_output("/app/out/ports.txt", "".join(f"{first + i} {x}\n" for i, x in enumerate(lines)),
                        "the port list")
