"""Open redirect prevention for a login flow: decide whether a `next=` redirect target is safe for one
tenant (relative path or https URL to one of the tenant's hosts) after one round of percent-decoding.
Variants: `guard` judges raw `next` values (a guard program, a line filter, a log audit of unsafe
redirects); `canonical` computes the Location a fixed service sends (canonical target or `/`: a strict
guard, a rewriting filter, the log's rewritten redirects); `request_guard` judges whole request targets
(path and query: which endpoint redirects, which parameter counts), and tallies the log's unsafe
redirects per client IP. Traps: protocol-
relative `//`, backslashes, userinfo `@`, lookalike and other tenants' hosts, ports, encoded slashes,
control characters, malformed escapes and double encoding."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from urllib.parse import quote, unquote

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.security._open_redirect_guard_refs import C_EXTRA, C_SWAPS, EXTRA, PY_SWAPS, REQUESTS
from tmax.families.unseen import distinct, unseen, visible_numbers

REFERENCE = r'''
import re
import sys

HOSTS = @HOSTS@
HEXDIGITS = b"0123456789abcdefABCDEF"
ABS = re.compile(r"^[hH][tT][tT][pP][sS]://([^/?#]*)(.*)$", re.S)
REQ = re.compile(r'^([^\s:]+):\d+ \S+ - - \[[^\]]*\] "GET (/[^ ?]*)\?(\S*) HTTP/1\.[01]" (\d{3}) \d+$')
REDIRECTORS = @REDIRECTORS@


def decode(raw):
    data, out, i = raw.encode("utf-8"), bytearray(), 0
    while i < len(data):
        if data[i] == 0x25:
            pair = data[i + 1:i + 3]
            if len(pair) < 2 or any(c not in HEXDIGITS for c in pair):
                return None
            out.append(int(pair, 16))
            i += 3
        else:
            out.append(data[i])
            i += 1
    return bytes(out)


def safe(raw, hosts=None):
    hosts = HOSTS if hosts is None else hosts
    value = decode(raw)
    if not value or any(c < 0x21 or c > 0x7E for c in value) or b"\\" in value:
        return False
    text = value.decode("ascii")
    if text.startswith("/"):
        return len(text) == 1 or text[1] != "/"
    m = ABS.match(text)
    if not m or "@" in m.group(1):
        return False
    host, sep, port = m.group(1).partition(":")
    if sep and port != "443":
        return False
    return host.lower() in hosts


def audit(text, hosts=None):
    hosts = HOSTS if hosts is None else hosts
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        m = REQ.match(line)
        if not m or m.group(1).lower() not in hosts or m.group(2) not in REDIRECTORS:
            continue
        for param in m.group(3).split("&"):
            if param.startswith("next="):
                if not safe(param[5:], hosts):
                    out.append(f"{n} {param[5:]}")
                break
    return "".join(o + "\n" for o in out)


def hosts_from_ini(path, key):
    """The host list of the tenant whose key hashes to its tenant_key_sha256."""
    import hashlib

    want = hashlib.sha256(key.encode()).hexdigest()
    sections, section = {}, None
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("[") and line.endswith("]"):
                section = sections.setdefault(line[1:-1], {})
            elif section is not None and "=" in line:
                name, _, value = line.partition("=")
                section[name.strip()] = value.strip()
    for entry in sections.values():
        if entry.get("tenant_key_sha256") == want:
            return [h.strip().lower() for h in entry.get("hosts", "").split(",") if h.strip()]
    raise SystemExit("no tenant has this key")


def main():
    if len(sys.argv) > 3 and sys.argv[1] == "audit":  # audit INI KEY < log
        sys.stdout.write(audit(sys.stdin.read(), hosts_from_ini(sys.argv[2], sys.argv[3])))
    elif @CLASSIFY@:
        data = sys.stdin.read()
        if data.endswith("\n"):
            data = data[:-1]
        sys.exit(0 if safe(data) else 1)
    else:
        sys.stdout.write("".join(("ALLOW" if safe(l) else "DENY") + "\n" for l in sys.stdin.read().split("\n")[:-1]))


if __name__ == "__main__":
    main()
'''


def _swap(src: str, before: str, extra: str, swaps) -> str:
    """``src`` with ``extra`` put before ``before`` and each (old, new) of ``swaps`` (found once) replaced."""
    assert src.count(before) == 1, before
    src = src.replace(before, extra + before)
    for old, new in swaps:
        assert src.count(old) == 1, old
        src = src.replace(old, new)
    return src


def reference(variant: str) -> str:
    """The Python reference template of a variant (guard's is today's, unchanged)."""
    return REFERENCE if variant == "guard" else _swap(REFERENCE, "def main():", REQUESTS + EXTRA[variant], PY_SWAPS)


C_REFERENCE = r"""
/* Open redirect guard (reference). MODE 1: classify one value; MODE 0: ALLOW/DENY per line. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MODE @MODE@
static const char *HOSTS[] = {@HOSTS@ NULL};

static int hexval(int c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

static int safe(const char *raw, size_t n) {
  unsigned char *v = malloc(n + 1);
  size_t m = 0, i = 0;
  int ok = 0;
  while (i < n) {
    if (raw[i] == '%') {
      if (i + 2 >= n) { free(v); return 0; }
      int hi = hexval((unsigned char)raw[i + 1]), lo = hexval((unsigned char)raw[i + 2]);
      if (hi < 0 || lo < 0) { free(v); return 0; }
      v[m++] = (unsigned char)(hi * 16 + lo);
      i += 3;
    } else {
      v[m++] = (unsigned char)raw[i++];
    }
  }
  if (m == 0) goto done;
  for (size_t j = 0; j < m; j++)
    if (v[j] < 0x21 || v[j] > 0x7e || v[j] == '\\') goto done;
  if (v[0] == '/') { ok = (m == 1 || v[1] != '/'); goto done; }
  const char *scheme = "https://";
  if (m < 8) goto done;
  for (int j = 0; j < 8; j++) {
    unsigned char c = v[j];
    if (c >= 'A' && c <= 'Z') c = c - 'A' + 'a';
    if (c != (unsigned char)scheme[j]) goto done;
  }
  size_t a = 8, e = 8;
  while (e < m && v[e] != '/' && v[e] != '?' && v[e] != '#') e++;
  for (size_t j = a; j < e; j++) if (v[j] == '@') goto done;
  size_t colon = a;
  while (colon < e && v[colon] != ':') colon++;
  if (colon < e) {
    if (e - colon - 1 != 3 || memcmp(v + colon + 1, "443", 3) != 0) goto done;
  }
  for (size_t j = a; j < colon; j++) if (v[j] >= 'A' && v[j] <= 'Z') v[j] = v[j] - 'A' + 'a';
  for (int h = 0; HOSTS[h]; h++) {
    size_t len = strlen(HOSTS[h]);
    if (len == colon - a && memcmp(v + a, HOSTS[h], len) == 0) { ok = 1; break; }
  }
done:
  free(v);
  return ok;
}

int main(void) {
  size_t cap = 1 << 16, n = 0, r;
  char *buf = malloc(cap);
  while ((r = fread(buf + n, 1, cap - n, stdin)) > 0) {
    n += r;
    if (n == cap) buf = realloc(buf, cap *= 2);
  }
  if (MODE == 1) {
    if (n > 0 && buf[n - 1] == '\n') n--;
    return safe(buf, n) ? 0 : 1;
  }
  size_t start = 0;
  for (size_t i = 0; i < n; i++) {
    if (buf[i] == '\n') {
      puts(safe(buf + start, i - start) ? "ALLOW" : "DENY");
      start = i + 1;
    }
  }
  return 0;
}
"""


def _c_program(hosts: str, classify: bool, variant: str = "guard") -> str:
    """The C reference; ``hosts`` is C source (`"a", "b",`) or ``@@HOSTS@@`` for the oracle to put in."""
    src = C_REFERENCE if variant == "guard" else _swap(C_REFERENCE, "int main(void) {", C_EXTRA[variant], C_SWAPS)
    return fill(src, MODE="1" if classify else "0", HOSTS=hosts)


def _c_hosts(hosts: list[str]) -> str:
    return " ".join(f'"{h}",' for h in hosts)


# The oracle's programs are templates with @@HOSTS@@ left in: this puts in the host list of the tenant whose
# key the oracle got through the channel.
RENDER = r'''
"""render_guard.py INI KEY TEMPLATE OUT: the guard for the tenant whose key is KEY."""
import hashlib
import sys

ini, key, template, out = sys.argv[1:5]
want = hashlib.sha256(key.encode()).hexdigest()
sections, section = [], None
for line in open(ini):
    line = line.strip()
    if line.startswith("[") and line.endswith("]"):
        section = {}
        sections.append(section)
    elif section is not None and "=" in line:
        name, _, value = line.partition("=")
        section[name.strip()] = value.strip()
match = [s for s in sections if s.get("tenant_key_sha256") == want]
if not match:
    sys.exit("no tenant has this key")
hosts = [h.strip().lower() for h in match[0]["hosts"].split(",") if h.strip()]
src = open(template).read()
if out.endswith(".py"):
    src = src.replace("@@HOSTS@@", repr(hosts))
else:
    src = src.replace("@@HOSTS@@", " ".join('"%s",' % h for h in hosts))
with open(out, "w") as f:
    f.write(src)
'''


PATHS = ["/", "/dashboard", "/account/settings", "/orders/2931", "/billing/invoices", "/docs/getting-started",
         "/team/members", "/reports/q3", "/search", "/settings/security", "/a//b", "/profile/~me", "/help/faq"]
EVIL = ["evil.example", "phish.example.net", "login-update.example.org", "attacker.test", "203.0.113.7"]
SUFFIXES = [".com", ".io", ".app", "-cloud.net"]


def _enc(s: str) -> str:
    """Percent-encode what a query parameter value must not carry literally."""
    return quote(s, safe="/:?=@~!$'()*+,;-._")


class _Targets:
    def __init__(self, rng, hosts, foreign, level):
        self.rng, self.hosts, self.foreign, self.level = rng, hosts, foreign, level

    def clean(self):
        rng, host = self.rng, self.rng.choice(self.hosts)
        opts = [lambda: _enc(rng.choice(PATHS)),
                lambda: _enc(rng.choice(PATHS) + f"?tab={rng.randrange(9)}"),
                lambda: _enc(f"https://{host}{rng.choice(PATHS)}"),
                lambda: _enc(f"https://{host}")]
        if self.level >= 2:
            opts += [lambda: _enc(f"https://{host}:443{rng.choice(PATHS)}"),
                     lambda: _enc(f"https://{host.upper()}/x"),
                     lambda: _enc(f"/search?q={rng.choice(['a/b', 'x:y', 'c@d'])}")]
        if self.level >= 3:
            opts += [lambda: _enc(rng.choice(PATHS) + "#section-" + str(rng.randrange(9))),
                     lambda: "/promo?code=50%25off",
                     lambda: f"HTTPS://{host}/%7Euser"]
        if self.level >= 4:
            opts += [lambda: quote(f"https://{host}/next", safe=""),
                     lambda: f"%2Fdocs%2F{rng.randrange(99)}",
                     lambda: f"hTtPs://{host}?ref=%2F%2Fx"]
        return rng.choice(opts)()

    def bad(self):
        rng, host, evil = self.rng, self.rng.choice(self.hosts), self.rng.choice(EVIL)
        opts = [lambda: f"//{evil}", lambda: _enc(f"https://{evil}/"), lambda: _enc(f"http://{host}/"),
                lambda: "javascript:alert(document.cookie)", lambda: _enc(f"https://{rng.choice(self.foreign)}/"),
                lambda: _enc(f"{host}/dashboard")]
        if self.level >= 2:
            opts += [lambda: _enc(f"https://{host}@{evil}/"), lambda: _enc(f"https://{evil}@{host}/"),
                     lambda: _enc(f"https://{host}:8443/"), lambda: _enc(f"https://{host}.{evil}/"),
                     lambda: _enc(f"https://{host}./"), lambda: _enc(f"https:{host}/"),
                     lambda: _enc(f"https:/{host}/"), lambda: _enc(f"https://www2.{host}/"),
                     lambda: _enc(f"https://{host}:/x")]
        if self.level >= 3:
            opts += [lambda: f"/%2F{evil}", lambda: f"%2F%2F{evil}", lambda: f"/%5C{evil}",
                     lambda: f"%5C%5C{evil}", lambda: "/account%0D%0ASet-Cookie:%20sid=1",
                     lambda: f"https://{host}%40{evil}/", lambda: f"%09/{rng.choice(PATHS)[1:]}",
                     lambda: f"JavaScript://{host}/%0Aalert(1)", lambda: "data:text/html;base64,PHNjcmlwdD4="]
        if self.level >= 4:
            opts += [lambda: f"%252F%252F{evil}", lambda: "/caf%C3%A9", lambda: f"/%zz{evil}", lambda: "/docs%2",
                     lambda: f"https://{host}:0443/", lambda: f"ftp://{host}/", lambda: f"https:///{host}",
                     lambda: f"/%2F%2F{evil}"]
        return rng.choice(opts)()


@dataclass(frozen=True)
class Knobs:
    items: int  # benign and malicious items each (the classifier)
    lines: int  # access log lines (the audit)


@dataclass
class _Tenants:
    """The tenants of one task, ours among them, and the reference judging for ours."""
    names: list[str]
    ours: int
    host_sets: dict[str, list[str]]
    gens: dict[str, _Targets]
    ns: dict
    variant: str

    @property
    def tenant(self) -> str:
        return self.names[self.ours]

    @property
    def hosts(self) -> list[str]:
        return self.host_sets[self.tenant]

    @property
    def foreign(self) -> list[str]:
        return [h for n in self.names if n != self.tenant for h in self.host_sets[n]]


RULES = ("A target is judged after exactly one round of percent-decoding (every `%` must start a valid "
         "`%XX` hex escape, otherwise the target is unsafe; `+` stays `+`). The decoded target is safe if and "
         "only if: it is non-empty, every byte is printable ASCII (0x21-0x7E: no spaces, control characters "
         "or non-ASCII) and there is no backslash; and either (a) it starts with `/` and is just `/` or its "
         "second character is not `/` (a local path), or (b) it is `https://` (scheme in any letter case) "
         "followed by an authority that runs up to the first `/`, `?`, `#` or the end, where the authority "
         "contains no `@`, its port, if a `:` is present, is exactly `443`, and its host, compared "
         "case-insensitively, is exactly one of the tenant's hosts listed in `/app/config/redirect_hosts.ini`"
         " (nothing else: no subdomains, no other tenant's hosts, no trailing dot). Everything else is "
         "unsafe.")
WHICH = ("The tenant is the one whose key is given above: the login service knows tenants only by their "
         "keys, and each section of `/app/config/redirect_hosts.ini` records its tenant's key as "
         "`tenant_key_sha256`, the SHA-256 (lowercase hex) of the key's ASCII text.")
REDIRECTORS = ["/login/callback", "/logout"]
# Level 0's targets carry no escapes, ports, userinfo or odd case (its generator draws none), so the full rules
# reduce to this.
ATOMIC_RULES = ("A target is safe if and only if it is a local path (it starts with `/` and its second character, "
                "if any, is not `/`) or it is `https://` followed by exactly one of the tenant's hosts listed in "
                "`/app/config/redirect_hosts.ini`, then either nothing or `/` and a path. Everything else is unsafe.")
CANON = ("The fixed service redirects to a safe target in its canonical form: the target after its one round of "
         "percent-decoding and, for an absolute target, with the scheme written `https`, the host in lowercase and "
         "a `:port` removed (path, query and fragment kept as decoded); it redirects to `/` instead of an unsafe "
         "target.")
REQUEST = ("Each item is a request target as it appears in a request line: a path, then `?` and a query string "
           "of `&`-separated `name=value` parameters. Only the paths `/login/callback` and `/logout` (compared "
           "exactly) redirect, to the value of their first parameter named `next` (taken raw, as the rules "
           "below judge it); without one they redirect home, which is safe, and a `next` parameter on any other "
           "path is not a redirect (e.g. a pagination cursor). A request target is unsafe if and only if it "
           "redirects to an unsafe target.")
# Per variant: the classifier's and the filter's tasks, the audit's question, report format and file.
ASK = {
    "guard": ("Accept (exit 0) safe targets and reject (exit 1) unsafe ones.",
              "Output: one line per input line, `ALLOW` if the target is safe and `DENY` otherwise.",
              "Find every request that would have redirected to an unsafe target.",
              "one line per such request, in log order: its line number in the log (1-based), a space, the raw "
              "`next` value exactly as it appears in the log", "/app/out/unsafe_redirects.txt"),
    "canonical": ("The guard is strict: accept (exit 0) only a safe target that is already canonical (its "
                  "canonical form is exactly the raw value) and reject (exit 1) every other one.",
                  "Output: one line per input line, where the fixed service redirects: the canonical form of the "
                  "target if it is safe, `/` otherwise.",
                  "Find every redirect (a request to one of those endpoints with a `next` parameter, its first "
                  "one counting) whose target the fixed service changes: its redirect differs from the raw "
                  "`next` value.",
                  "one line per such request, in log order: its line number in the log (1-based), a space, where "
                  "the fixed service redirects (the canonical target, or `/`)", "/app/out/rewritten_redirects.txt"),
    "request_guard": ("Accept (exit 0) safe request targets and reject (exit 1) unsafe ones.",
                      "Output: one line per input line, `ALLOW` if the request target is safe and `DENY` otherwise.",
                      "Find the client IPs (each line's second field) whose requests to our tenant would have "
                      "redirected to an unsafe target (the first `next` parameter of those endpoints counts).",
                      "one line per such client IP: the IP, a space, and how many such requests it made; sorted by "
                      "that count, highest first, then by the IP compared as text", "/app/out/unsafe_clients.txt"),
}


@register
class OpenRedirectGuard(Family):
    name = "open_redirect_guard"
    domain = "security"
    skill_types = ("Web Security", "Access Control")
    primitive_skills = ("URL parsing and normalisation", "percent-decoding", "open redirect prevention",
                        "allowlist and denylist matching", "input validation", "regular expressions")
    verifiers = ("adversarial_corpus", "fuzz_equivalence", "exact_text", "metric_threshold")
    variants = ("guard", "canonical", "request_guard")
    programs = {"Python": REFERENCE, "C": C_REFERENCE}
    levels = {0: Knobs(items=10, lines=0), 1: Knobs(items=24, lines=40), 2: Knobs(items=40, lines=100),
              3: Knobs(items=60, lines=200), 4: Knobs(items=90, lines=320)}

    def tenants(self, t: TaskBuilder) -> _Tenants:
        rng = t.rng
        for _ in range(self.variants.index(t.variant)):  # a seed's tenants differ between the variants
            rng.random()
        names = distinct(lambda: t.code(1), 4)
        host_sets = {}
        for name in names:
            base = name.lower()
            hosts = [f"{base}{rng.choice(SUFFIXES)}", f"www.{base}.com", f"app.{base}.io",
                     f"pay.{base}-billing.example"][:rng.randrange(2, 5)]
            host_sets[name] = sorted(set(hosts))
        ours = rng.randrange(len(names))
        gens = {n: _Targets(rng, host_sets[n], [h for m in names if m != n for h in host_sets[m]], t.level)
                for n in names}
        ns = run_python(fill(reference(t.variant), HOSTS=host_sets[names[ours]], CLASSIFY=False,
                             REDIRECTORS=REDIRECTORS))
        return _Tenants(names, ours, host_sets, gens, ns, t.variant)

    @staticmethod
    def item(t: TaskBuilder, raw: str, redirects: bool = False) -> str:
        """What the guard judges: the raw `next` value, or (request_guard) a request target carrying it (one
        that redirects to it if ``redirects``)."""
        if t.variant != "request_guard":
            return raw
        rng = t.rng
        state = f"state={''.join(rng.choice('abcdef0123456789') for _ in range(12))}"
        shapes = [("/login/callback", [state, f"next={raw}"]), ("/logout", [f"next={raw}"]),
                  ("/api/items", [f"limit={rng.randrange(10, 100)}", f"next={raw}"]), ("/login/callback", [state])]
        path, params = rng.choice(shapes[:2] if redirects else shapes)
        if redirects:
            return f"{path}?{'&'.join(params)}"
        if t.level >= 3 and rng.random() < 0.3:  # a second next that does not count
            params.append(f"next={rng.choice(['/', raw, '//' + rng.choice(EVIL)])}")
        if t.level >= 2:
            rng.shuffle(params)
        return f"{path}?{'&'.join(params)}"

    @staticmethod
    def judges(ten: _Tenants):
        """The variant's classifier and filter line, as the reference computes them."""
        if ten.variant == "guard":
            return ten.ns["safe"], lambda r: "ALLOW" if ten.ns["safe"](r) else "DENY"
        return ten.ns["v_classify"], ten.ns["v_line"]

    def tenant_key(self, t: TaskBuilder, ten: _Tenants, *shown: str) -> str:
        """Draw the tenants' keys, ours (delivered) so that no visible number spells it (the ini's hashes are
        hex: checked too), and write the ini; returns our key."""
        rng = t.rng

        def draw():
            return str(rng.randrange(10 ** 9, 10 ** 10))

        for _ in range(20):
            key = unseen(t, draw, *shown)
            keys = distinct(draw, len(ten.names) - 1, [key])
            keys.insert(ten.ours, key)
            ini = ["# allowed absolute redirect hosts per tenant"]
            for name, k in zip(ten.names, keys):
                ini += [f"[{name}]", "hosts = " + ", ".join(ten.host_sets[name]), f"owner = {name.lower()}-platform-team",
                        f"tenant_key_sha256 = {hashlib.sha256(k.encode()).hexdigest()}", ""]
            text = "\n".join(ini)
            if int(key) not in visible_numbers(text):
                t.add_file("/app/config/redirect_hosts.ini", text)
                return key
        raise FamilyError("open_redirect_guard: every tenant key drawn showed in the host list file")

    def oracle_programs(self, t: TaskBuilder, classify: bool, who: str) -> None:
        """The oracle's programs get the tenant's hosts from the delivered key, not copies with them baked in."""
        t.add_solution_file("render_guard.py", RENDER)
        t.add_solution_file("tpl_solution.py", fill(reference(t.variant), HOSTS="@@HOSTS@@", CLASSIFY=classify,
                                                    REDIRECTORS=REDIRECTORS))
        t.add_solution_file("tpl_solution.c", _c_program("@@HOSTS@@", classify, t.variant))
        for name in sorted(t.solution_files):
            if name.startswith("prog_"):
                out = name[len("prog_"):]
                t.solve(f'rm -f /app/{out}\npython3 /solution/render_guard.py /app/config/redirect_hosts.ini '
                        f'"{who}" /solution/tpl_{out} /app/{out}')

    @staticmethod
    def rules(t: TaskBuilder) -> str:
        rules = ATOMIC_RULES if t.level == 0 else RULES
        return {"guard": rules, "canonical": f"{rules} {CANON}", "request_guard": f"{REQUEST} {rules}"}[t.variant]

    def programs_for(self, ten: _Tenants, classify: bool) -> dict[str, str]:
        return {"Python": fill(reference(ten.variant), HOSTS=ten.hosts, CLASSIFY=classify, REDIRECTORS=REDIRECTORS),
                "C": _c_program(_c_hosts(ten.hosts), classify, ten.variant)}

    def corpus_case(self, t: TaskBuilder) -> None:
        k, rng = t.knobs, t.rng
        ten = self.tenants(t)
        gen, accept = ten.gens[ten.tenant], self.judges(ten)[0]
        clean, bad = [], []
        for _ in range(100 * k.items):
            if len(clean) >= k.items and len(bad) >= k.items:
                break
            raw = self.item(t, gen.clean() if rng.random() < 0.5 else gen.bad())
            (clean if accept(raw) else bad).append(raw + "\n")
        else:
            raise FamilyError("open_redirect_guard: too few safe or unsafe targets drawn")
        clean, bad = clean[:k.items], bad[:k.items]
        # Another tenant's host must be rejected: a guard built for the wrong tenant fails here.
        bad[:2] = [self.item(t, _enc(f"https://{h}/"), redirects=True) + "\n" for h in rng.sample(ten.foreign, 2)]
        if t.variant == "canonical":  # safe, but the strict guard rejects what the fix would rewrite
            host = rng.choice(ten.hosts)
            bad[2:5] = [f"https://{host.upper()}/\n", f"https://{host}:443/\n", "%2Fdashboard\n"]
        rules = self.rules(t)
        who = t.deliver(self.tenant_key(t, ten, rules, WHICH), "the tenant key")
        given = ("a request target (format below)" if t.variant == "request_guard" else
                 "the raw `next` value (as it appears in the query string)")
        t.say(("Write our tenant's open-redirect guard for the login flow's `next` parameter. " if t.level == 0 else
               "Our login flow redirects users to the `next` query parameter after sign-in, and a bug bounty "
               "report showed it can be abused as an open redirect. Write the guard for our tenant. ") + f"{WHICH} "
              f"It receives {given} on standard input, followed "
              f"by a single newline that is not part of the value. {rules}")
        t.expect_classifier(f"{ASK[t.variant][0]} Hard-code the tenant's host list.", clean, bad,
                            self.programs_for(ten, True))
        self.oracle_programs(t, True, who)

    def program_case(self, t: TaskBuilder) -> None:
        rng = t.rng
        ten = self.tenants(t)
        gen, line = ten.gens[ten.tenant], self.judges(ten)[1]
        names = [n.lower() for n in ten.names]

        def neutral(raw):  # worked examples must not show which tenant's hosts are allowed
            text = (unquote(unquote(raw)) + raw).lower()
            return not any(n in text for n in names)

        cases = []
        for i in range(10):
            raws, n_raws = [], rng.randrange(4, 30)
            for _ in range(100 * n_raws):
                if len(raws) >= n_raws:
                    break
                raw = gen.clean() if rng.random() < 0.5 else gen.bad()
                if i >= 2 or neutral(raw):
                    raws.append(self.item(t, raw))
            else:
                raise FamilyError("open_redirect_guard: too few neutral targets for a worked example")
            if i == 2:  # a hidden case with every tenant's hosts: only the right host list passes it
                raws += [self.item(t, _enc(f"https://{h}/"), redirects=True)
                         for n in ten.names for h in ten.host_sets[n]]
            text = "".join(r + "\n" for r in raws)
            cases.append((text, "".join(line(r) + "\n" for r in raws)))
        rules = self.rules(t)
        who = t.deliver(self.tenant_key(t, ten, rules, WHICH, *(x for c in cases[:2] for x in c)), "the tenant key")
        t.say(("We need a filter that checks our tenant's login redirect targets. " if t.level == 0 else
               "Our login flow redirects users to the `next` query parameter after sign-in; we need a filter "
               "for our tenant to check a batch of targets. ") + f"{WHICH} Input: "
              + ("one request target per line (format below). " if t.variant == "request_guard" else
                 "one raw `next` value per line (as it appears in the query string). ")
              + f"{ASK[t.variant][1]} {rules}")
        t.expect_program("Hard-code the tenant's host list.", cases, self.programs_for(ten, False))
        self.oracle_programs(t, False, who)

    def output_case(self, t: TaskBuilder) -> None:
        k, rng = t.knobs, t.rng
        ten = self.tenants(t)
        if t.level == 0:
            return self.atomic_output(t, ten)
        tenants, ours, tenant = ten.names, ten.ours, ten.tenant
        # One log for all tenants; the virtual host (first field) says whose request it was. Our tenant is never
        # the busiest, so traffic volume does not point to it.
        weights = sorted(rng.uniform(1.0, 3.0) for _ in tenants)
        busiest = rng.choice([i for i in range(len(tenants)) if i != ours])
        rest = [i for i in range(len(tenants)) if i != busiest]
        rng.shuffle(rest)
        share = [0.0] * len(tenants)
        share[busiest] = weights[-1] * 1.25
        for i, w in zip(rest, weights):
            share[i] = w
        clients = 13 if t.variant == "request_guard" else 255  # its tally needs clients seen more than once
        for _ in range(50):
            lines, counts = [], dict.fromkeys(tenants, 0)
            stamp_day = rng.randrange(1, 28)
            for i in range(k.lines):
                owner = rng.choices(tenants, share)[0]
                counts[owner] += 1
                vhost = rng.choice(ten.host_sets[owner])
                ip = f"198.51.100.{rng.randrange(1, clients)}"
                sec_of_day = i * 86399 // k.lines
                ts = (f"{stamp_day:02d}/Sep/2026:{sec_of_day // 3600:02d}:{sec_of_day % 3600 // 60:02d}:"
                      f"{rng.randrange(60):02d} +0000")
                r = rng.random()
                g = ten.gens[owner]
                raw = g.clean() if rng.random() < 0.55 else g.bad()
                state = f"state={''.join(rng.choice('abcdef0123456789') for _ in range(12))}"
                if r < 0.55:
                    path, params, status = "/login/callback", [state, f"next={raw}"], 302
                elif r < 0.7:
                    path, params, status = "/logout", [f"next={raw}"], 302
                elif r < 0.8 and t.level >= 3:
                    path, params, status = "/api/items", [f"limit={rng.randrange(10, 100)}", f"next={raw}"], 200
                elif r < 0.9:
                    path, params, status = "/login/callback", [state], 302
                else:
                    path, params, status = "/search", [f"q={rng.choice(['shoes', 'report', 'invoice'])}"], 200
                if t.level >= 2:
                    rng.shuffle(params)
                lines.append(f'{vhost}:443 {ip} - - [{ts}] "GET {path}?{"&".join(params)} HTTP/1.1" {status} 0')
            text = "\n".join(lines) + "\n"
            audit = ten.ns["audit" if t.variant == "guard" else "v_audit"]
            truth = audit(text, ten.hosts)
            # An empty report would equal what any wrong key gives.
            if truth and counts[tenant] < max(counts.values()) and \
                    all(audit(text, ten.host_sets[n]) != truth for n in tenants if n != tenant):
                break
        else:
            raise FamilyError("open_redirect_guard: no log with unsafe redirects of a tenant that is not the busiest")
        t.add_file("/app/logs/access.log", text)
        who = t.deliver(self.tenant_key(t, ten, RULES, WHICH), "the tenant key")
        t.say(f"Our login flow redirects users to the `next` query parameter after sign-in, and a bug bounty report "
              f"showed it was an open redirect. `/app/logs/access.log` is the shared access log of all tenants "
              f"(Apache `vhost_combined`: each line starts with `<virtual host>:<port>`); a request belongs to a "
              f"tenant when its virtual host, compared case-insensitively, is one of that tenant's hosts. Audit "
              f"our tenant's requests only. {WHICH} "
              f"Only `/login/callback` and `/logout` redirect to `next`; a `next` parameter on any other endpoint is "
              f"something else (e.g. a pagination cursor) and is not a redirect. {ASK[t.variant][2]} "
              f"{self.rules(t) if t.variant == 'canonical' else RULES}")
        t.add_solution_file("redirects.py", fill(reference(t.variant), HOSTS=[], CLASSIFY=False,
                                                 REDIRECTORS=REDIRECTORS))
        fmt, out = ASK[t.variant][3:]
        t.solve(f'test -n "{who}"\nmkdir -p /app/out\n'
                f'python3 /solution/redirects.py audit /app/config/redirect_hosts.ini "{who}" < /app/logs/access.log '
                f'> {out}')
        t.say(f"Report format: {fmt}.")
        t.expect_output(out, truth, "the report")

    def atomic_output(self, t: TaskBuilder, ten: _Tenants) -> None:
        """Level 0: the first step alone, our tenant's entry in the host list file (hosts, origins or name)."""
        who = t.deliver(self.tenant_key(t, ten, WHICH), "the tenant key")
        ask, out, want, pipe = {
            "guard": ("List our tenant's hosts, one per line, in the order the file gives them.", "hosts.txt",
                      ten.hosts, '-B2 "^tenant_key_sha256 = $h$" /app/config/redirect_hosts.ini | sed -n '
                      '"s/^hosts = //p" | tr -d " " | tr "," "\\n"'),
            "canonical": ("List the origins our tenant may redirect to, `https://<host>` for each of its hosts, one "
                          "per line, sorted by byte value.", "origins.txt", sorted(f"https://{h}" for h in ten.hosts),
                          '-B2 "^tenant_key_sha256 = $h$" /app/config/redirect_hosts.ini | sed -n "s/^hosts = //p" '
                          '| tr -d " " | tr "," "\\n" | sed "s#^#https://#" | LC_ALL=C sort'),
            "request_guard": ("Write our tenant's name (its section name in that file, without the brackets) on one "
                              "line.", "tenant.txt", [ten.tenant], '-B3 "^tenant_key_sha256 = $h$" '
                              '/app/config/redirect_hosts.ini | sed -n "s/^\\[\\(.*\\)\\]$/\\1/p"'),
        }[t.variant]
        t.say(f"`/app/config/redirect_hosts.ini` lists, per tenant, the hosts our login flow may redirect to. "
              f"{WHICH} {ask}")
        t.solve(f'test -n "{who}"\nmkdir -p /app/out\nh=$(printf %s "{who}" | sha256sum | cut -d" " -f1)\n'
                f'grep {pipe} > /app/out/{out}')
        t.expect_output(f"/app/out/{out}", "".join(h + "\n" for h in want),
                        "the host list" if t.variant == "guard" else "the answer")
