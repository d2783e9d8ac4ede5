"""Which requests in one site's access log were attacks? A log export holds each site's nginx access log
(combined format) under a folder named by a hash of the site name (delivered). A request is an attack
when its request target, percent-decoded and lower-cased, matches a signature of path traversal, SQL
injection, cross-site scripting or (higher up) command injection. Variants: `hits` classifies every
attack request, `attackers` sums them up per client address, `landed` lists the attacks the site
answered with a 2xx status together with the decoded target. Higher levels add the other classes,
percent-encoding (mixed-case escapes, then double encoding), mixed-case keywords and an internal scanner
whose range is allowlisted."""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass

from tmax.families.base import Family, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.security import _fleet as fleet

REFERENCE = r'''
import ipaddress
import re
import sys
from urllib.parse import unquote

CLASSES = @CLASSES@  # the signature classes in force, in priority order
ROUNDS = @ROUNDS@  # percent-decoding rounds (decode until stable, at most this often)
SCANNER = @SCANNER@  # requests from this range are our own scanner ("" for none)
SIGS = {
    "traversal": [r"\.\./", r"\.\.\\"],
    "sqli": [r"union(\s|/\*\*/)+(all(\s|/\*\*/)+)?select", r"'\s*or\s*'?1'?\s*=\s*'?1", r"sleep\([0-9]+\)"],
    "xss": [r"<script", r"onerror\s*=", r"javascript:"],
    "cmdi": [r";\s*(id|uname|cat|wget|curl)\b", r"\$\("],
}
LINE = re.compile(r'^(\S+) \S+ \S+ \[[^]]+\] "\S+ (\S+) [^"]*" ([0-9]{3}) ')


def decode(target):
    for _ in range(ROUNDS):
        nxt = unquote(target)
        if nxt == target:
            break
        target = nxt
    return target


def classify(target):
    low = decode(target).lower()
    for c in CLASSES:
        if any(re.search(p, low) for p in SIGS[c]):
            return c
    return None


def triage(log, variant):
    out, per = [], {}
    net = ipaddress.ip_network(SCANNER) if SCANNER else None
    for n, line in enumerate(log.splitlines(), 1):
        m = LINE.match(line)
        if not m:
            continue
        ip, target, status = m.groups()
        if net and ipaddress.ip_address(ip) in net:
            continue
        c = classify(target)
        if c is None:
            continue
        if variant == "hits":
            out.append(f"{n} {c}")
        elif variant == "landed" and status.startswith("2"):
            out.append(f"{n} {decode(target)}")
        per.setdefault(ip, []).append(c)
    if variant == "attackers":
        out = [f"{ip} {len(cs)} {','.join(c for c in CLASSES if c in cs)}" for ip, cs in per.items()]
        out.sort()
    return "".join(x + "\n" for x in out)


if __name__ == "__main__":  # weblog.py ACCESS_LOG hits|attackers|landed
    sys.stdout.write(triage(open(sys.argv[1], encoding="utf-8", errors="replace").read(), sys.argv[2]))
'''

PAGES = ("/", "/index.php", "/products", "/products/17", "/cart", "/search?q=blue+shoes", "/blog/2026/05/hello",
         "/static/app.js", "/static/site.css", "/login", "/api/v1/items?page=2", "/docs/select-a-plan.html",
         "/files/report..final.pdf", "/api/v1/users/me", "/about?ref=union", "/help/scripting-guide")
ATTACKS = {
    "traversal": ("/download?file=../../../../etc/passwd", "/static/..%2f..%2f..%2fetc/shadow",
                  "/img?p=..\\..\\windows\\win.ini", "/../../../proc/self/environ"),
    "sqli": ("/products?id=1 UNION SELECT username,password FROM users", "/login?user=admin' OR '1'='1",
             "/item?id=5 union/**/all/**/select 1,2,3", "/search?q=x' AND sleep(5)-- "),
    "xss": ("/search?q=<script>alert(1)</script>", "/comment?body=<img src=x onerror=alert(document.cookie)>",
            "/redirect?to=javascript:alert(1)"),
    "cmdi": ("/ping?host=127.0.0.1;id", "/tools/dns?name=example.com;cat /etc/passwd", "/export?f=$(whoami).csv"),
}
AGENTS = ("Mozilla/5.0 (X11; Linux x86_64) Firefox/128.0", "Mozilla/5.0 (Macintosh) Safari/605.1.15",
          "sqlmap/1.8.2#stable (https://sqlmap.org)", "curl/8.5.0", "Nikto/2.5.0", "python-requests/2.32.3")
SAFE = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.~/?=&,")


def _encode(rng, target, encoding):
    """The target as a client sent it: spaces always escaped; more escapes, mixed case and double
    encoding by level."""
    out = []
    for ch in target:
        esc = f"%{ord(ch):02X}"
        if encoding >= 2 and rng.random() < 0.5:
            esc = esc.lower()
        if ch == " " or (ch not in SAFE and encoding >= 1) or (encoding >= 1 and ch in "./" and rng.random() < 0.2):
            if encoding >= 3 and rng.random() < 0.4:
                esc = "%25" + esc[1:]  # double encoded: %252f
            out.append(esc)
        else:
            out.append(ch)
    return "".join(out)


def _mixcase(rng, text):
    return "".join(c.upper() if rng.random() < 0.5 else c.lower() for c in text)


@dataclass(frozen=True)
class Knobs:
    requests: int  # log lines per site
    attacks: int  # attack requests per site
    encoding: int  # 0 raw, 1 escapes, 2 mixed case, 3 double encoding
    classes: tuple[str, ...]  # signature classes in force
    scanner: bool  # an allowlisted internal scanner
    decoys: int  # other sites of the export


@register
class WebAttackLogTriage(Family):
    name = "web_attack_log_triage"
    domain = "security"
    skill_types = ("Web Security", "Forensics")
    primitive_skills = ("percent-decoding", "regular expressions", "CIDR and IP range matching",
                        "false-positive suppression", "input validation")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("hits", "attackers", "landed")
    levels = {0: Knobs(requests=25, attacks=4, encoding=0, classes=("traversal",), scanner=False, decoys=2),
              1: Knobs(requests=60, attacks=8, encoding=1, classes=("traversal", "sqli", "xss"), scanner=False,
                       decoys=2),
              2: Knobs(requests=120, attacks=12, encoding=2, classes=("traversal", "sqli", "xss", "cmdi"), scanner=False,
                       decoys=3),
              3: Knobs(requests=200, attacks=16, encoding=3, classes=("traversal", "sqli", "xss", "cmdi"),
                       scanner=False, decoys=3),
              4: Knobs(requests=300, attacks=22, encoding=3, classes=("traversal", "sqli", "xss", "cmdi"),
                       scanner=True, decoys=3)}

    def _log(self, t, start, scanner):
        k, rng = t.knobs, t.rng
        clients = [f"{rng.randrange(11, 223)}.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(1, 255)}"
                   for _ in range(8)]
        attackers = clients[:3]
        rows = [(rng.choice(clients), rng.choice(PAGES), rng.choice(AGENTS[:2])) for _ in range(k.requests - k.attacks)]
        for _ in range(k.attacks):
            c = rng.choice(k.classes + (("cmdi",) if k.encoding < 2 and rng.random() < 0.2 else ()))
            target = rng.choice(ATTACKS[c])  # a class out of force is noise here, not an attack
            if k.encoding >= 2 and rng.random() < 0.5:
                target = _mixcase(rng, target)
            ip = str(ipaddress.ip_network(scanner).network_address + rng.randrange(1, 255)) \
                if scanner and rng.random() < 0.3 else rng.choice(attackers)
            rows.append((ip, target, rng.choice(AGENTS[2:])))
        rng.shuffle(rows)
        lines, when = [], start
        for ip, target, agent in rows:
            when += dt.timedelta(seconds=rng.randrange(1, 90))
            sent = _encode(rng, target, k.encoding)
            status = rng.choice([200, 200, 200, 404, 403, 500]) if target not in PAGES else rng.choice([200, 200, 304])
            lines.append(f'{ip} - - [{when:%d/%b/%Y:%H:%M:%S} +0000] "GET {sent} HTTP/1.1" {status} '
                         f'{rng.randrange(200, 40000)} "-" "{agent}"')
        return "".join(x + "\n" for x in lines)

    def output_case(self, t: TaskBuilder) -> None:
        k, rng, variant = t.knobs, t.rng, t.variant
        scanner = f"10.{rng.randrange(20, 200)}.0.0/16" if k.scanner else ""
        src = fill(REFERENCE, CLASSES=k.classes, ROUNDS=1 + 2 * (k.encoding >= 3) if k.encoding else 0,
                   SCANNER=repr(scanner))
        ref = run_python(src)
        start = dt.datetime(2026, 3, 1) + dt.timedelta(minutes=rng.randrange(300000))
        logs, truth = fleet.pick(t, lambda: [self._log(t, start, scanner) for _ in range(1 + k.decoys)],
                                 lambda x: ref["triage"](x, variant))
        target = fleet.ship(t, "/app/weblogs", [{"access.log": x} for x in logs])
        who = fleet.intro(t, "/app/weblogs", "yesterday's nginx access logs (combined format) of our sites, each "
                          "site's `access.log`", "site", target)
        names_of = {"traversal": "`traversal`: `../` or `..\\`",
                    "sqli": "`sqli`: `union` then `select` with only whitespace or `/**/` between them (an optional "
                            "`all` in the middle likewise), `'or'1'='1` with optional whitespace and quotes around "
                            "the 1s (`' or 1=1`), or `sleep(<digits>)`",
                    "xss": "`xss`: `<script`, `onerror` followed by optional whitespace and `=`, or `javascript:`",
                    "cmdi": "`cmdi`: `;` then optional whitespace and the word `id`, `uname`, `cat`, `wget` or `curl`, "
                            "or `$(`"}
        how = ("the request target (the second word of the quoted request line)" if k.encoding == 0 else
               "the request target (the second word of the quoted request line), percent-decoded ("
               + ("once" if k.encoding < 3 else "repeatedly until nothing changes, at most 3 rounds: attackers double "
                  "encode") + ") and lower-cased")
        t.say(f"A request is an attack when {how} contains a signature of one of these classes: "
              + "; ".join(names_of[c] for c in k.classes) + ". Nothing else counts."
              + (" When a request matches several classes, it belongs to the first in this list." if
                 len(k.classes) > 1 else "")
              + (f" Requests from {scanner} are our own vulnerability scanner: ignore them." if scanner else ""))
        if variant == "hits":
            t.say("List every attack request as `<line number> <class>` (1-based line numbers), in log order.")
        elif variant == "attackers":
            t.say("Write one line per client address that sent at least one attack: `<address> <number of attack "
                  "requests> <classes>`, the classes it used comma-separated in the order listed above; sort the "
                  "lines in byte order (`LC_ALL=C sort`).")
        else:
            t.say("Which attacks got through? List every attack request the site answered with a 2xx status as "
                  "`<line number> <target>` in log order, with the target "
                  + ("decoded as above (not lower-cased)." if k.encoding else "as logged."))
        fleet.solve(t, who, "weblog.py", src, "/app/weblogs/{KEY}/access.log", variant, "/app/out/attacks.txt")
        t.expect_output("/app/out/attacks.txt", truth, "the triage report")
