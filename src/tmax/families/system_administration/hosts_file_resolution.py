"""Answer name lookups the way the `files` backend of the resolver reads a hosts file: lines are
`<address> <canonical name> [aliases...]`, comments start with `#`, and the first IPv4 line naming a
host wins. Variants: resolve a list of queries, list the names whose later entries are shadowed by an
earlier one with another address, and invert the file into the names each address really answers
for. Traps by level: comments (whole-line and trailing), IPv6 lines, names that are prefixes of other
names, then names declared twice with other case, lines with malformed addresses that the resolver
skips, and queries written with a trailing dot."""

from __future__ import annotations

from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.unseen import unseen

REFERENCE = r'''
import sys

VARIANT = @VARIANT@


def ipv4(addr):
    parts = addr.split(".")
    return len(parts) == 4 and all(p.isdigit() and int(p) <= 255 for p in parts)


def entries(text):
    """(address, names) of every usable IPv4 line, in file order; names lower-cased."""
    out = []
    for raw in text.split("\n"):
        parts = raw.split("#", 1)[0].split()
        if len(parts) >= 2 and ipv4(parts[0]):
            out.append((parts[0], [n.lower() for n in parts[1:]]))
    return out


def first_match(ents):
    """name -> the address of the first line that names it."""
    won = {}
    for addr, names in ents:
        for n in names:
            won.setdefault(n, addr)
    return won


def report(run, hosts_text, queries_text=""):
    ents = entries(hosts_text)
    won = first_match(ents)
    rows = []
    if VARIANT == "resolve":
        for q in queries_text.split("\n"):
            q = q.strip().lower().rstrip(".")
            if q:
                rows.append(f"{run} {q} {won.get(q, '-')}")
    elif VARIANT == "shadowed":
        seen = {}
        for addr, names in ents:
            for n in names:
                if addr not in seen.setdefault(n, []):
                    seen[n].append(addr)
        rows = [f"{run} {n} {a[0]} {','.join(a[1:])}" for n, a in sorted(seen.items()) if len(a) > 1]
    else:  # reverse
        by_addr = {}
        for n, addr in won.items():
            by_addr.setdefault(addr, []).append(n)
        order = sorted(by_addr, key=lambda a: tuple(int(p) for p in a.split(".")))
        rows = [f"{run} {a} {','.join(sorted(by_addr[a]))}" for a in order]
    return "".join(r + "\n" for r in rows)


if __name__ == "__main__":
    hosts = open(sys.argv[2], encoding="utf-8").read()
    queries = open(sys.argv[3], encoding="utf-8").read() if len(sys.argv) > 3 else ""
    sys.stdout.write(report(sys.argv[1], hosts, queries))
'''

ROLES = ("web", "db", "cache", "mq", "api", "auth", "mail", "ldap", "git", "ci", "mon", "log", "backup", "proxy")
DOMAINS = ("corp.example", "lab.example", "prod.example")

ASKS = {
    "resolve": "for each name in `/app/etc/queries.txt`, in the order given, the IPv4 address the hosts file "
               "resolves it to, one line each as `<RUN> <name> <address>`, with `-` as the address when no IPv4 "
               "line names it; write the name in lower case",
    "shadowed": "every name that IPv4 lines give two or more different addresses, one line each as "
                "`<RUN> <name> <winning address> <other addresses>`, the name in lower case, the other addresses "
                "comma-separated in the order they first appear, lines sorted by name in byte order",
    "reverse": "for each IPv4 address that some name resolves to, the names that resolve to it, one line each as "
               "`<RUN> <address> <names>`, the names in lower case, comma-separated and sorted in byte order; "
               "lines sorted by address numerically (octet by octet). A name belongs to the address its first "
               "line gives it, not to a later line that repeats it",
}


@dataclass(frozen=True)
class Knobs:
    hosts: int  # distinct machines in the file
    comments: bool  # comment and blank lines, trailing comments, IPv6 lines
    redeclare: int  # names declared again later (another address), some in other case
    malformed: bool  # lines whose address is not IPv4 (bad octets, missing parts): skipped
    queries: int  # names asked about (resolve)
    dotted: bool  # queries with a trailing dot


@register
class HostsFileResolution(Family):
    name = "hosts_file_resolution"
    domain = "system_administration"
    skill_types = ("Networking", "Configuration")
    primitive_skills = ("first-match configuration semantics", "input validation", "sorting with tie-breaks")
    variants = ("resolve", "shadowed", "reverse")
    levels = {0: Knobs(hosts=6, comments=False, redeclare=2, malformed=False, queries=3, dotted=False),
              1: Knobs(hosts=20, comments=True, redeclare=3, malformed=False, queries=8, dotted=False),
              2: Knobs(hosts=50, comments=True, redeclare=6, malformed=False, queries=15, dotted=False),
              3: Knobs(hosts=120, comments=True, redeclare=12, malformed=True, queries=30, dotted=False),
              4: Knobs(hosts=300, comments=True, redeclare=25, malformed=True, queries=50, dotted=True)}

    def _fixture(self, t: TaskBuilder) -> tuple[str, str]:
        """(hosts text, queries text)."""
        k, rng = t.knobs, t.rng
        names, lines, all_names = [], [], []
        for i in range(k.hosts):  # web1 and web10 both exist at higher levels: a grep -w trap on prefixes
            role = rng.choice(ROLES)
            short = f"{role}{rng.randrange(1, 4 if k.hosts < 10 else 20)}"
            if short in names:
                short = f"{role}{len(names) + 20}"
            names.append(short)
            dom = rng.choice(DOMAINS)
            addr = f"10.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(1, 255)}"
            if i and rng.random() < 0.2:  # several machines on one address (a virtual host)
                addr = lines[rng.randrange(len(lines))][0]
            al = [f"{short}.{dom}", short] + ([f"{role}-{rng.choice(['old', 'vip', 'new'])}{i}"]
                                                 if rng.random() < 0.3 else [])
            all_names += al
            lines.append((addr, al))
        body = ["127.0.0.1\tlocalhost"] + [f"{a}{rng.choice([' ', chr(9), '  '])}{' '.join(n)}" for a, n in lines]
        for _ in range(k.redeclare):  # a later line with another address: shadowed by the first
            n = rng.choice(all_names)
            n = n.upper() if k.redeclare > 3 and rng.random() < 0.4 else n
            body.insert(rng.randrange(len(body) // 2, len(body) + 1),
                        f"192.168.{rng.randrange(256)}.{rng.randrange(1, 255)} {n}")
        ghosts = []
        if k.comments:
            for _ in range(max(2, k.hosts // 8)):
                g = f"{rng.choice(ROLES)}{rng.randrange(40, 90)}"
                ghosts.append(g)
                pos = rng.randrange(len(body) + 1)
                body.insert(pos, rng.choice([f"# 10.9.9.{rng.randrange(1, 255)} {g}", "",
                                             f"fd00::{rng.randrange(1, 999):x} {g} {rng.choice(all_names)}"]))
            for i in rng.sample(range(1, len(body)), min(4, len(body) - 1)):
                if body[i] and not body[i].startswith("#"):
                    body[i] += f"  # {rng.choice(['moved', 'ticket', 'temp'])} {rng.choice(ghosts)}"
            body.insert(0, "# managed by config management; local edits are overwritten")
            body.insert(2, "::1\tlocalhost ip6-localhost ip6-loopback")
        if k.malformed:
            for _ in range(3):
                g = f"{rng.choice(ROLES)}{rng.randrange(90, 99)}"
                ghosts.append(g)
                bad = rng.choice([f"10.{rng.randrange(256)}.{rng.randrange(256, 400)}.7",
                                  f"10.{rng.randrange(256)}.{rng.randrange(256)}", f"10.0.0.{rng.randrange(1, 9)}."])
                body.insert(rng.randrange(1, len(body) + 1), f"{bad} {g} {rng.choice(all_names)}")
        pool = all_names + ghosts + ["localhost"]
        qs = []
        for _ in range(k.queries):
            q = rng.choice(pool)
            if k.redeclare > 3 and rng.random() < 0.3:
                q = q.upper()
            if k.dotted and "." in q and rng.random() < 0.3:
                q += "."
            qs.append(q)
        return "\n".join(body) + "\n", "\n".join(qs) + "\n"

    def output_case(self, t: TaskBuilder) -> None:
        k = t.knobs
        src = fill(REFERENCE, VARIANT=repr(t.variant))
        ref = run_python(src)
        for _ in range(30):  # at least two answer lines
            hosts, queries = self._fixture(t)
            if ref["report"]("RUN", hosts, queries).count("\n") >= 2:
                break
        else:
            raise FamilyError(f"family {self.name}: no hosts file with two {t.variant} lines in 30 draws")
        t.add_file("/app/etc/hosts", hosts)
        if t.variant == "resolve":
            t.add_file("/app/etc/queries.txt", queries)
        run = unseen(t, lambda: t.code(2))
        truth = ref["report"](run, hosts, queries)
        t.say("`/app/etc/hosts` is a copy of a server's hosts file: each line is an address followed by one or more "
              "host names separated by spaces or tabs. Resolve names as the resolver's `files` backend does: only "
              "IPv4 lines count, names match case-insensitively, and when several lines name a host the first one "
              "wins.")
        if k.comments:
            t.say("`#` starts a comment that runs to the end of the line; blank lines and IPv6 lines (an address "
                  "with colons) give no IPv4 answers.")
        if k.malformed:
            t.say("A line whose address is not a valid dotted-quad IPv4 address (four numbers from 0 to 255) is "
                  "ignored entirely.")
        if k.dotted:
            t.say("A query ending in a dot is the same name without it (write it without the dot).")
        t.say(f"Report {ASKS[t.variant]}. RUN is the change ticket given below; the report is filed under it.")
        var = t.deliver(run, "the change ticket")
        t.add_solution_file("hosts.py", src)
        qarg = " /app/etc/queries.txt" if t.variant == "resolve" else ""
        t.solve(f'test -n "{var}"\nmkdir -p /app/out\n'
                f'python3 /solution/hosts.py "{var}" /app/etc/hosts{qarg} > /app/out/hosts.txt')
        t.expect_output("/app/out/hosts.txt", truth, "the report")
