"""Which addresses brute-forced our SSH server? Parse sshd lines out of rotated syslog auth logs (some
gzipped), count failed logins per source, find the densest burst inside a sliding window, drop trusted
ranges, and (higher levels) flag sources that later logged in successfully. Traps: pam and "Invalid
user" lines that must not be double counted, "message repeated N times" lines, slow attackers whose
total is high but never dense enough, bursts exactly one window long, usernames that contain text
looking like a second source address, IPv6 sources, and a year rollover in year-less timestamps.
Variants: the per-source report; fail2ban-style ban lines at the attempt where each source first
reaches the threshold inside a window; or each flagged source's attack sessions (split at quiet gaps
of a window or more). A file answer prints clock-corrected times in every variant, so the delivered
offset decides it; a program (fuzz_equivalence) hard-codes the delivered window instead."""

from __future__ import annotations

import dataclasses
import ipaddress
from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.unseen import unseen, visible, visible_numbers

REFERENCE = r'''
import datetime
import gzip
import ipaddress
import re
import sys

THRESHOLD = @THRESHOLD@
WINDOW = @WINDOW@  # @@WINDOW@@ where the oracle puts in the delivered one
TRUSTED = @TRUSTED@
START_YEAR = @YEAR@
SHOW_LOGIN = @SHOW_LOGIN@
SKEW = @SKEW@  # seconds the host clock ran fast; None: no first-seen column, logged times
VARIANT = @VARIANT@  # report, bans or sessions
MONTHS = {m: i for i, m in enumerate("Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split(), 1)}
HEAD = re.compile(r"^([A-Z][a-z][a-z]) +(\d{1,2}) (\d\d):(\d\d):(\d\d) \S+ sshd\[\d+\]: (.*)$")
FAIL = re.compile(r"^Failed (?:password|publickey) for (.*) from (\S+) port \d+ ssh2$")
REPEAT = re.compile(r"^message repeated (\d+) times: \[ (.*)\]$")
OK = re.compile(r"^Accepted (?:password|publickey) for (.*) from (\S+) port \d+ ssh2(?:: .*)?$")
DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]


def epoch(year, month, day, hh, mm, ss):
    days = sum(366 if (y % 4 == 0 and y % 100 != 0) or y % 400 == 0 else 365 for y in range(1970, year))
    leap = (year % 4 == 0 and year % 100 != 0) or year % 400 == 0
    days += sum(DAYS[:month - 1]) + (1 if leap and month > 2 else 0) + day - 1
    return ((days * 24 + hh) * 60 + mm) * 60 + ss


def addr(text):
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def utc(ts):
    return datetime.datetime.fromtimestamp(ts, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def analyse(text, window=None, skew=None):
    window = window or WINDOW
    skew = SKEW if skew is None else skew
    trusted = [ipaddress.ip_network(n) for n in TRUSTED]
    fails, logins = {}, {}
    year, prev = START_YEAR, None
    for line in text.splitlines():
        m = HEAD.match(line)
        if not m or m.group(1) not in MONTHS:
            continue
        month = MONTHS[m.group(1)]
        if prev is not None and month < prev:
            year += 1
        prev = month
        ts = epoch(year, month, int(m.group(2)), int(m.group(3)), int(m.group(4)), int(m.group(5)))
        msg, times = m.group(6), 1
        r = REPEAT.match(msg)
        if r:
            times, msg = int(r.group(1)), r.group(2)
        f = FAIL.match(msg)
        if f and addr(f.group(2)) is not None:
            fails.setdefault(addr(f.group(2)), []).extend([ts] * times)
            continue
        o = OK.match(msg)
        if o and addr(o.group(2)) is not None:
            logins.setdefault(addr(o.group(2)), []).append(ts)
    rows = []
    shift = skew or 0
    for ip, stamps in fails.items():
        if any(ip.version == n.version and ip in n for n in trusted):
            continue
        stamps.sort()
        best, lo, fired = 0, 0, None
        for hi in range(len(stamps)):
            while stamps[hi] - stamps[lo] >= window:
                lo += 1
            best = max(best, hi - lo + 1)
            if fired is None and best >= THRESHOLD:
                fired = stamps[hi]  # where a ban would have fired
        if best < THRESHOLD:
            continue
        order = (ip.version, int(ip))
        if VARIANT == "bans":
            rows.append(((fired, *order), f"{utc(fired - shift)} Ban {ip}"))
            continue
        if VARIANT == "sessions":  # a quiet gap of a window or more ends a session
            cuts = [0] + [i for i in range(1, len(stamps)) if stamps[i] - stamps[i - 1] >= window] + [len(stamps)]
            for a, b in zip(cuts, cuts[1:]):
                rows.append(((stamps[a], *order), f"{ip} {utc(stamps[a] - shift)} {utc(stamps[b - 1] - shift)} {b - a}"))
            continue
        row = f"{ip} {best} {len(stamps)}"
        if skew is not None:
            row += " " + utc(stamps[0] - skew)
        if SHOW_LOGIN:
            row += " yes" if any(t >= stamps[0] for t in logins.get(ip, [])) else " no"
        rows.append(((-best, -len(stamps), *order), row))
    rows.sort()
    return "".join(row + "\n" for _, row in rows)


def read(path):
    if path.endswith(".gz"):
        with gzip.open(path, "rt", encoding="utf-8", errors="replace") as f:
            return f.read()
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


if __name__ == "__main__":
    if len(sys.argv) > 2:  # SKEW FILE... (oldest first)
        sys.stdout.write(analyse("".join(read(p) for p in sys.argv[2:]), skew=int(sys.argv[1])))
    else:
        sys.stdout.write(analyse(sys.stdin.read()))
'''

# Level 0's program: every failed attempt's source and its clock-corrected time (report), each source's
# fifth one (bans), or each source's first and last one (sessions).
ATOMIC = r'''
import datetime
import re
import sys

YEAR = @YEAR@
SKEW = @SKEW@  # @@SKEW@@ where the oracle puts in the delivered one
VARIANT = @VARIANT@
NTH = 5  # a ban fires at a source's fifth failed attempt
MONTHS = {m: i for i, m in enumerate("Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split(), 1)}
FAIL = re.compile(r"^([A-Z][a-z][a-z]) +(\d{1,2}) (\d\d):(\d\d):(\d\d) \S+ sshd\[\d+\]: "
                  r"Failed (?:password|publickey) for .* from (\S+) port \d+ ssh2$")


def fails(text, skew=None):
    skew = SKEW if skew is None else skew
    out, seen = [], {}  # seen: source -> its corrected times, in log order (sources by first appearance)
    for line in text.splitlines():
        m = FAIL.match(line)
        if m and m.group(1) in MONTHS:
            at = datetime.datetime(YEAR, MONTHS[m.group(1)], *(int(m.group(i)) for i in range(2, 6)))
            at = f"{at - datetime.timedelta(seconds=skew):%Y-%m-%dT%H:%M:%SZ}"
            out.append(f"{m.group(6)} {at}\n")
            seen.setdefault(m.group(6), []).append(at)
    if VARIANT == "bans":
        return "".join(f"{ip} {ts[NTH - 1]}\n" for ip, ts in seen.items() if len(ts) >= NTH)
    if VARIANT == "sessions":
        return "".join(f"{ip} {ts[0]} {ts[-1]}\n" for ip, ts in seen.items())
    return "".join(out)


if __name__ == "__main__":
    sys.stdout.write(fails(sys.stdin.read()))
'''

USERS = ["root", "admin", "ubuntu", "test", "oracle", "postgres", "git", "pi", "user", "ftp", "guest", "support",
         "deploy", "jenkins", "ansible", "www-data", "mysql", "hadoop", "backup", "minecraft"]
STAFF = ["alice", "bob", "carol", "deploy", "svc-backup", "dave", "erin"]
MONTH_NAMES = "Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split()
DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]


def _ipv4(rng, public=True):
    if public:
        first = rng.choice([23, 45, 61, 77, 89, 103, 118, 141, 159, 176, 185, 193, 203, 212, 222])
        return f"{first}.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(1, 255)}"
    return f"10.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(1, 255)}"


def _ipv6(rng):
    groups = [0x2001, 0xdb8, rng.randrange(1 << 16), rng.randrange(1 << 16), 0, 0, 0, rng.randrange(1, 1 << 16)]
    return str(ipaddress.ip_address(":".join(f"{g:x}" for g in groups)))


def _stamp(year, month, day, secs):
    """(month, day) plus seconds into that day, rolled over month/year ends."""
    day_extra, secs = divmod(secs, 86400)
    day += day_extra
    while day > DAYS[month - 1]:
        day -= DAYS[month - 1]
        month += 1
        if month > 12:
            month, year = 1, year + 1
    hh, rest = divmod(secs, 3600)
    mm, ss = divmod(rest, 60)
    return f"{MONTH_NAMES[month - 1]} {day:>2} {hh:02d}:{mm:02d}:{ss:02d}"


@dataclass(frozen=True)
class Knobs:
    attackers: int  # attacking sources (dense, slow, edge and trusted ones)
    noise: int  # background sshd and cron lines
    files: int  # rotated log files
    gzip: bool  # the older rotated files gzipped
    trusted: bool  # trusted ranges that are never flagged
    repeat: bool  # rsyslog "message repeated N times" lines
    ipv6: bool  # IPv6 sources
    login: bool  # the did-it-later-log-in column
    rollover: bool  # the logs run across New Year (year-less timestamps)
    inject: bool  # usernames that contain a fake "from <address>"


@register
class SshBruteforceSources(Family):
    name = "ssh_bruteforce_sources"
    domain = "security"
    skill_types = ("Forensics", "Network Security")
    primitive_skills = ("auth log analysis", "brute-force detection", "sliding time windows",
                        "CIDR and IP range matching", "syslog timestamp parsing", "regular expressions",
                        "timeline reconstruction")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol", "fuzz_equivalence")
    programs = {"Python": REFERENCE}
    variants = ("report", "bans", "sessions")
    levels = {0: Knobs(attackers=1, noise=15, files=1, gzip=False, trusted=False, repeat=False, ipv6=False,
                       login=False, rollover=False, inject=False),
              1: Knobs(attackers=3, noise=120, files=1, gzip=False, trusted=False, repeat=False, ipv6=False,
                       login=False, rollover=False, inject=False),
              2: Knobs(attackers=5, noise=400, files=2, gzip=False, trusted=True, repeat=False, ipv6=False,
                       login=False, rollover=False, inject=False),
              3: Knobs(attackers=7, noise=900, files=3, gzip=True, trusted=True, repeat=True, ipv6=True,
                       login=True, rollover=False, inject=False),
              4: Knobs(attackers=9, noise=1600, files=4, gzip=True, trusted=True, repeat=True, ipv6=True,
                       login=True, rollover=True, inject=True)}

    def _events(self, rng, k, threshold, window, span, trusted_nets, edges=True):
        """(seconds since start, sshd message) events; attackers are built around the threshold."""
        n_att = k.attackers
        ev = []
        internal = [f"10.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(1, 255)}" for _ in range(4)]

        def fail(t, ip, user=None):
            user = user or rng.choice(USERS)
            inv = "invalid user " if user not in ("root", "deploy") and rng.random() < 0.7 else ""
            port = rng.randrange(1024, 65535)
            if inv and rng.random() < 0.5:
                ev.append((t, f"Invalid user {user} from {ip} port {port}"))
            ev.append((t, f"Failed password for {inv}{user} from {ip} port {port} ssh2"))
            if rng.random() < 0.3:
                ev.append((t, f"pam_unix(sshd:auth): authentication failure; logname= uid=0 euid=0 tty=ssh "
                              f"ruser= rhost={ip}  user={user}"))

        def burst(ip, n, gap_lo, gap_hi, start=None):
            t = start if start is not None else rng.randrange(0, max(1, span - n * gap_hi))
            out = []
            for _ in range(n):
                out.append(t)
                t += rng.randint(gap_lo, gap_hi)
            return out

        used = set()
        kinds = ["dense", "dense", "slow", "edge", "dense", "slow", "trusted", "dense", "edge"][:n_att]
        if not edges:  # worked examples: an attacker exactly one window long would pin the window down
            kinds = ["dense" if kd == "edge" else kd for kd in kinds]
        for i, kind in enumerate(kinds):
            ip = _ipv6(rng) if k.ipv6 and i % 3 == 2 else _ipv4(rng)
            if kind == "trusted" and trusted_nets:
                net = rng.choice(trusted_nets)
                ip = str(ipaddress.ip_network(net)[rng.randrange(1, 200)])
            for _ in range(100):
                if ip not in used:
                    break
                ip = _ipv4(rng)
            else:
                raise FamilyError("ssh_bruteforce_sources: no unused attacker address in 100 draws")
            used.add(ip)
            if kind in ("dense", "trusted"):
                times = burst(ip, threshold + rng.randrange(0, 12), 1, max(2, window // (threshold * 2)))
                if rng.random() < 0.5:
                    times += burst(ip, rng.randrange(1, threshold), window, window * 2)
            elif kind == "slow":  # many failures, never threshold of them inside one window
                gap = window // (threshold - 1) + rng.randrange(1, 30)
                times = burst(ip, threshold + rng.randrange(3, 10), gap, gap + 20)
            else:  # edge: exactly threshold failures spanning the window (+0 or -1 seconds)
                start = rng.randrange(0, max(1, span - window - 10))
                last = start + window - rng.choice([0, 1])
                mids = sorted(rng.randrange(start + 1, last) for _ in range(threshold - 2))
                times = [start, *mids, last]
            if k.rollover and i == 0:  # straddle the new year
                times = [span // 2 - 30 * len(times) // 2 + 30 * j for j in range(len(times))]
            times.sort()
            j = 0
            while j < len(times):
                if k.repeat and j + 2 < len(times) and rng.random() < 0.25:
                    n = rng.randrange(2, min(5, len(times) - j) + 1)
                    user = rng.choice(USERS[:3])
                    port = rng.randrange(1024, 65535)
                    ev.append((times[j], f"message repeated {n} times: [ Failed password for {user} from {ip} "
                                         f"port {port} ssh2]"))
                    j += n
                    continue
                user = None
                if k.inject and rng.random() < 0.15:
                    fake = _ipv4(rng)
                    user = f"admin from {fake} port 22 ssh2 user"
                    ev.append((times[j], f"Failed password for invalid user {user} from {ip} port "
                                         f"{rng.randrange(1024, 65535)} ssh2"))
                else:
                    fail(times[j], ip, user)
                j += 1
            if k.login and kind != "trusted" and rng.random() < 0.6:
                before = rng.random() < 0.35
                t = times[0] - rng.randrange(60, 3000) if before else times[-1] + rng.randrange(1, 600)
                ev.append((max(0, t), f"Accepted password for {rng.choice(USERS[:4])} from {ip} port "
                                      f"{rng.randrange(1024, 65535)} ssh2"))
        # staff logins and the odd typo, background chatter
        for _ in range(k.noise):
            t = rng.randrange(span)
            r = rng.random()
            ip = rng.choice(internal)
            if r < 0.35:
                ev.append((t, f"Accepted publickey for {rng.choice(STAFF)} from {ip} port "
                              f"{rng.randrange(1024, 65535)} ssh2: ED25519 SHA256:"
                              + "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghij0123456789") for _ in range(20))))
            elif r < 0.5:
                ev.append((t, f"pam_unix(sshd:session): session opened for user {rng.choice(STAFF)}(uid=1000) by (uid=0)"))
            elif r < 0.6:
                ev.append((t, f"Failed password for {rng.choice(STAFF)} from {ip} port {rng.randrange(1024, 65535)} ssh2"))
            elif r < 0.75:
                ext = _ipv4(rng)
                ev.append((t, f"Connection closed by {ext} port {rng.randrange(1024, 65535)} [preauth]"))
            elif r < 0.85:
                ev.append((t, f"Received disconnect from {ip} port {rng.randrange(1024, 65535)}:11: disconnected by user"))
            elif r < 0.92:
                ext = _ipv4(rng)
                ev.append((t, f"Failed password for invalid user {rng.choice(USERS)} from {ext} port "
                              f"{rng.randrange(1024, 65535)} ssh2"))
            else:
                ev.append((t, "CRON"))
        return ev

    def setup(self, t: TaskBuilder, program: bool) -> dict:
        """What both cases share: threshold, window, trusted ranges, the calendar, the log renderer and the
        rules and output format as the instruction states them."""
        k, rng = t.knobs, t.rng
        threshold = rng.randrange(5, 11)
        window = rng.randrange(4, 16) * 60
        trusted = []
        if k.trusted:
            trusted = ["10.0.0.0/8", f"192.168.{rng.randrange(256)}.0/24",
                       f"{rng.choice([45, 77, 185])}.{rng.randrange(256)}.{rng.randrange(0, 256, 16)}.0/20"]
            if k.ipv6:
                trusted.append(f"2001:db8:{rng.randrange(1 << 16):x}::/48")
            trusted = [str(ipaddress.ip_network(n, strict=False)) for n in trusted]
        if k.rollover:
            year, month, day = 2025, 12, rng.randrange(29, 31)
        else:
            year, month, day = 2026, rng.randrange(1, 13), rng.randrange(1, 20)
        span = 2 * 86400 if k.rollover else rng.randrange(1, 3) * 86400
        if k.rollover:  # the log starts so that midnight on New Year's Eve lies mid-span
            start_secs = 86400 * (31 - day + 1) - span // 2
        else:
            start_secs = rng.randrange(0, 6 * 3600)
        host = rng.choice(["bastion", "gw-01", "edge-ssh", "jump1", "vpn-gw"])

        def render(events):
            lines = []
            for secs, msg in sorted(events, key=lambda e: e[0]):
                stamp = _stamp(year, month, day, start_secs + secs)
                if msg == "CRON":
                    lines.append(f"{stamp} {host} CRON[{rng.randrange(1000, 99999)}]: pam_unix(cron:session): "
                                 "session opened for user root(uid=0) by (uid=0)")
                else:
                    lines.append(f"{stamp} {host} sshd[{rng.randrange(1000, 99999)}]: {msg}")
            return lines

        when = ("as logged, written `YYYY-MM-DDTHH:MM:SSZ`" if program else "corrected for the clock error (the "
                "logged time minus the offset given above, in seconds), as UTC `YYYY-MM-DDTHH:MM:SSZ`")
        by_addr = "the address (IPv4 before IPv6, each in numeric order, not text order)"
        if t.variant == "bans":
            fmt_rows = ("one fail2ban-style line per flagged source, for the moment a ban would have fired: the time "
                        f"of the failed attempt at which {threshold} of its failed attempts first lie inside one "
                        f"window, {when}, a space, `Ban`, a space and the address. Sort by that time, then by "
                        + by_addr)
        elif t.variant == "sessions":
            fmt_rows = ("one line per attack session of each flagged source; a source's failed attempts split into "
                        "sessions wherever two consecutive ones are at least one window length apart. Each line: the "
                        f"address, a space, the time of the session's first failed attempt, a space, the time of its "
                        f"last one (both {when}), a space, its number of failed attempts. Sort by the first time, "
                        "then by " + by_addr)
        else:
            fmt_rows = ("one line per flagged source: the address, a space, the largest number of failed attempts "
                        f"from it inside one window, a space, its total number of failed attempts"
                        + ("" if program else f", a space, the time of its first failed attempt {when}")
                        + (", a space, then `yes` if the logs show a successful login (`Accepted ...`) from that "
                           "address at or after its first failed attempt, otherwise `no`" if k.login else "")
                        + ". Sort by the window count (highest first), then the total (highest first), then "
                        + by_addr)
        rules = ("A failed attempt is a `Failed password ...` or `Failed publickey ...` line from sshd; "
                 "`Invalid user ...`, `pam_unix(sshd:auth): authentication failure ...` and `Connection closed "
                 "...` lines describe the same attempts or none at all and must not be counted. The source is the "
                 "address after the final `from` in the line (just before `port <n> ssh2`)."
                 + (" Attacker-chosen usernames can contain spaces and text that looks like an address; only the "
                    "final `from <address> port <n> ssh2` counts." if k.inject else "")
                 + (" rsyslog compresses duplicates as `message repeated N times: [ <message>]`: that stands for N "
                    "identical messages at that timestamp." if k.repeat else "")
                 + f" A source is flagged when at least {threshold} of its failed attempts fall inside one window, "
                 "i.e. the last of them less than the window length ("
                 + ("given above, in seconds" if program else f"{window} seconds") + ") after the first "
                 "(timestamps have one-second resolution).")
        return dict(threshold=threshold, window=window, trusted=trusted, year=year, span=span, render=render,
                    fmt_rows=fmt_rows, rules=rules)

    def reference(self, t: TaskBuilder, c: dict, window: int | str, skew: int | None) -> str:
        return fill(REFERENCE, THRESHOLD=c["threshold"], WINDOW=window, TRUSTED=c["trusted"], YEAR=c["year"],
                    SHOW_LOGIN=t.knobs.login and t.variant == "report", SKEW=skew, VARIANT=repr(t.variant))

    def _atomic_log(self, t: TaskBuilder, year: int, month: int, day: int) -> str:
        """Level 0: one dense attacker and a little chatter in one log of a few hours."""
        rng = t.rng
        ev = self._events(rng, t.knobs, 5, 600, 4 * 3600, [])
        host, start = rng.choice(["bastion", "gw-01", "jump1"]), rng.randrange(0, 6 * 3600)
        lines = []
        for secs, msg in sorted(ev, key=lambda e: e[0]):
            proc, body = ("CRON", "pam_unix(cron:session): session opened for user root(uid=0) by (uid=0)") \
                if msg == "CRON" else ("sshd", msg)
            pid = rng.randrange(1000, 99999)
            lines.append(f"{_stamp(year, month, day, start + secs)} {host} {proc}[{pid}]: {body}")
        return "\n".join(lines) + "\n"

    def _atomic_program(self, t: TaskBuilder) -> None:
        rng = t.rng
        year, month = 2026, rng.randrange(1, 13)
        texts = [self._atomic_log(t, year, month, rng.randrange(1, 20)) for _ in range(10)]
        for _ in range(60):  # the delivered offset: nothing the agent sees (the examples included) spells it
            skew = rng.randrange(10000, 86400)
            ns = run_python(fill(ATOMIC, YEAR=year, SKEW=skew, VARIANT=repr(t.variant)))
            cases = [(x, ns["fails"](x)) for x in texts]
            if not visible(t, str(skew), *(x for case in cases[:2] for x in case)):
                break
        else:
            raise FamilyError("ssh_bruteforce_sources: every offset drawn was visible; draw another task")
        who = t.deliver(str(skew), "the clock offset in seconds")
        prints = {"report": "for each such line in order, the source address, a space, and its corrected time",
                  "bans": ("for each source with at least five such lines, in the order the sources first appear, "
                           "the address, a space, and the corrected time of its fifth such line (where a ban fires)"),
                  "sessions": ("for each source, in the order the sources first appear, the address, a space, the "
                               "corrected time of its first such line, a space, and that of its last one")}
        t.say(f"Our SSH bastion's clock runs ahead of UTC by the offset given above (in seconds). Write a filter "
              f"for its auth logs: it reads one syslog-format log on standard input (all lines from {year}) and "
              f"looks at the sshd `Failed password ...` and `Failed publickey ...` lines, whose source is the address "
              f"after the final `from` and whose corrected time is the logged time minus the offset, as UTC "
              f"`YYYY-MM-DDTHH:MM:SSZ`. It prints, {prints[t.variant]}; nothing else.")
        t.expect_program("Hard-code the offset.", cases,
                         {"Python": fill(ATOMIC, YEAR=year, SKEW="@@SKEW@@", VARIANT=repr(t.variant))})
        t.solve(f'test -n "{who}"\nsed -i "s/@@SKEW@@/{who}/" /app/solution.py')

    def _atomic_output(self, t: TaskBuilder) -> None:
        rng = t.rng
        year, month, day = 2026, rng.randrange(1, 13), rng.randrange(1, 20)
        text = self._atomic_log(t, year, month, day)
        t.add_file("/app/logs/auth.log", text)
        rows = [r.split() for r in run_python(fill(ATOMIC, YEAR=year, SKEW=0, VARIANT=repr("report")))["fails"](text)
                .splitlines()]
        tally = sorted((-sum(r[0] == ip for r in rows), ip) for ip in sorted({r[0] for r in rows}))
        if len(tally) > 1 and tally[0][0] == tally[1][0]:
            raise FamilyError("ssh_bruteforce_sources: no single busiest source")
        ip = tally[0][1]
        skew = int(unseen(t, lambda: str(rng.randrange(10000, 86400))))  # no visible number may spell it
        ns = run_python(fill(ATOMIC, YEAR=year, SKEW=skew, VARIANT=repr(t.variant)))
        answer = next(r for r in ns["fails"](text).splitlines() if r.split()[0] == ip).split(" ", 1)[1]
        who = t.deliver(str(skew), "the clock offset in seconds")
        ask, pick = {"report": (f"When did the brute force from `{ip}` begin? Give the time of its first `Failed password` "
                                "line", "sed -n 1p"),
                     "bans": (f"A ban fires at a source's fifth failed attempt. When would `{ip}` have been banned? Give "
                              "the time of its fifth `Failed password` line", "sed -n 5p"),
                     "sessions": (f"How long did the brute force from `{ip}` run? Give the time of its first `Failed "
                                  "password` line, a space and the time of its last one (each", "sed -n '1p;$p'")
                     }[t.variant]
        t.say(f"`/app/logs/auth.log` is our SSH bastion's auth log; all its timestamps are from {year}. The "
              f"bastion's clock runs ahead of UTC by the offset given above (in seconds). {ask} minus the "
              f"offset, as UTC `YYYY-MM-DDTHH:MM:SSZ`{')' if t.variant == 'sessions' else ''}, on one line.")
        t.solve(f'test -n "{who}"\nmkdir -p /app/out\n'
                f'grep -E "sshd\\[[0-9]+\\]: Failed password .* from {ip} port" /app/logs/auth.log | {pick} '
                f'| cut -c1-15 | while read -r ts; do\n'
                f'  date -u -d "@$(( $(date -u -d "$ts {year}" +%s) - {who} ))" +%Y-%m-%dT%H:%M:%SZ\n'
                f'done | paste -sd" " > /app/out/bruteforce.txt')
        t.expect_output("/app/out/bruteforce.txt", answer + "\n", "the time" + "s" * (t.variant == "sessions"))

    def program_case(self, t: TaskBuilder) -> None:
        if t.level == 0:
            return self._atomic_program(t)
        k, rng = t.knobs, t.rng
        c = self.setup(t, program=True)
        threshold, trusted, year, render = c["threshold"], c["trusted"], c["year"], c["render"]
        kk = dataclasses.replace(k, rollover=False)
        trust_txt = (" Sources inside these trusted ranges are never flagged: " + ", ".join(f"`{n}`" for n in trusted)
                     + "." if trusted else "")
        shown = [c["rules"], c["fmt_rows"], trust_txt, str(year)]
        fallback = None
        for _ in range(60):
            # The delivered window: any length, drawn until nothing the agent sees (the worked examples
            # included) spells it and the hidden cases tell it from its neighbours.
            window = rng.randrange(1000, 3000)
            ref_src = self.reference(t, c, window, None)
            ns = run_python(ref_src)
            cases = []
            for i in range(10):
                ev = self._events(rng, kk, threshold, window, 86400 // 2, trusted, edges=i >= 2)
                text = "\n".join(render(ev)) + "\n"
                cases.append((text, ns["analyse"](text)))
            examples = [x for case in cases[:2] for x in case]
            if window in visible_numbers(*examples, *shown):  # the quick look first, then every decoding
                continue
            told = all(any(ns["analyse"](inp, w) != out for inp, out in cases[2:]) for w in (window - 1, window + 1))
            if (told or fallback is None) and not visible(t, str(window), *examples, *shown):
                fallback = fallback or (window, ref_src, cases)
                if told:
                    break
        else:  # no draw told its neighbours apart: keep the first one that nothing visible spells
            if fallback is None:
                raise FamilyError("ssh_bruteforce_sources: every window drawn was visible; draw another task")
            window, ref_src, cases = fallback
        who = t.deliver(str(window), "the window length in seconds")
        t.say(f"We want a reusable brute-force detector for sshd logs. Given one syslog-format auth log on "
              f"standard input (the examples show the format; all lines are from {year}), report the SSH "
              f"brute-force sources. {c['rules']}{trust_txt} "
              f"Output {c['fmt_rows']}. Output nothing else (no output at all when nothing is flagged).")
        # The oracle's program gets the delivered window, not a copy with it baked in.
        t.expect_program("Hard-code the threshold, window and trusted ranges.", cases,
                         {"Python": self.reference(t, c, "@@WINDOW@@", None)})
        t.solve(f'test -n "{who}"\nsed -i "s/@@WINDOW@@/{who}/" /app/solution.py')

    def output_case(self, t: TaskBuilder) -> None:
        if t.level == 0:
            return self._atomic_output(t)
        k, rng = t.knobs, t.rng
        c = self.setup(t, program=False)
        threshold, window, trusted, year = c["threshold"], c["window"], c["trusted"], c["year"]
        ev = self._events(rng, k, threshold, window, c["span"], trusted)
        lines = c["render"](ev)
        # rotate: oldest chunk is auth.log.<files-1>, newest is auth.log
        n = k.files
        cuts = [0] + sorted(rng.sample(range(len(lines) // 4, len(lines) - 1), n - 1)) + [len(lines)] if n > 1 \
            else [0, len(lines)]
        chunks = [lines[cuts[i]:cuts[i + 1]] for i in range(n)]
        order = []
        for i, chunk in enumerate(chunks):
            idx = n - 1 - i
            name = "auth.log" if idx == 0 else f"auth.log.{idx}"
            text = "\n".join(chunk) + "\n"
            if k.gzip and idx >= 2:
                t.add_file(f"/app/logs/{name}.src", text)
                t.add_setup(f"gzip -n /app/logs/{name}.src && mv /app/logs/{name}.src.gz /app/logs/{name}.gz")
                order.append(f"/app/logs/{name}.gz")
            else:
                t.add_file(f"/app/logs/{name}", text)
                order.append(f"/app/logs/{name}")
        if trusted:
            t.add_file("/app/config/trusted_ranges.txt",
                       "# ranges owned by us or our scanners; never block these\n" + "\n".join(trusted) + "\n")
        rotated = (" The logs are rotated: `auth.log` is the newest, then `auth.log.1`, `auth.log.2`, ... going back "
                   "in time" + (" (the older ones gzipped)" if k.gzip else "") + "." if n > 1 else "")
        yr = (f" The logs begin in December {year} and run into January {year + 1}; syslog timestamps carry no year."
              if k.rollover else f" All timestamps are from {year}.")
        trust_txt = (" Addresses inside any range listed in `/app/config/trusted_ranges.txt` (CIDR, one per line, "
                     "`#` comments) belong to us and must never be flagged." if trusted else "")
        # The delivered clock offset shifts every reported time; no visible number may spell it (5 digits:
        # above the services' ports, below a day).
        skew = int(unseen(t, lambda: str(rng.randrange(10000, 86400)), rotated, yr, trust_txt, c["rules"],
                          c["fmt_rows"]))
        ns = run_python(self.reference(t, c, window, skew))
        truth = ns["analyse"]("".join("\n".join(ch) + "\n" for ch in chunks))
        who = t.deliver(str(skew), "the clock offset in seconds")
        t.say(f"Our SSH bastion's auth logs are in `/app/logs/`.{rotated}{yr} The bastion's clock was wrong: every logged time "
              f"is ahead of UTC by the offset given above (in seconds). Find the sources that brute-forced "
              f"the SSH daemon. {c['rules']}{trust_txt}")
        t.add_solution_file("bruteforce.py", self.reference(t, c, window, 0))
        t.solve(f'test -n "{who}"\nmkdir -p /app/out\n'
                f'python3 /solution/bruteforce.py "{who}" {" ".join(order)} > /app/out/bruteforce.txt')
        t.say(f"Report format: {c['fmt_rows']}.")
        t.expect_output("/app/out/bruteforce.txt", truth, "the report")
