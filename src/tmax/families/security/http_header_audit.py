"""Do one site's HTTP responses carry the security headers they should? A scan export holds each site's
captured response headers (`curl -sI`-style blocks, one per probed URL) under a folder named by a hash of
the site name (delivered). Variants: `headers` reports missing or weak protections (HSTS, CSP,
nosniff, framing), `cookies` reports each cookie set without the flags it needs, `cors` reports
responses that hand the probe's foreign Origin (or everyone, or `null`) access. Higher levels add more
checks, header names and attributes in any case, quoted HSTS values, redirect chains (the final response
decides the headers, but every hop sets cookies), plain-http URLs where HSTS means nothing and `__Host-`
cookie prefixes."""

from __future__ import annotations

from dataclasses import dataclass

from tmax.families.base import Family, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.security import _fleet as fleet

REFERENCE = r'''
import re
import sys

RULES = @RULES@  # 0 the first check only ... 4 every check
ORIGIN = @ORIGIN@  # the Origin every probe sent
MIN_AGE = 15552000  # HSTS max-age of at least 180 days


def blocks(text):
    """(url, [response headers as (lower-cased name, value) lists]) per probed URL."""
    out = []
    for line in text.splitlines():
        if line.startswith("== "):
            out.append((line[3:].strip(), []))
        elif line.startswith("HTTP/"):
            out[-1][1].append([])
        elif ":" in line and out and out[-1][1]:
            name, value = line.split(":", 1)
            out[-1][1][-1].append((name.strip().lower(), value.strip()))
    return out


def get(resp, name):
    vals = [v for n, v in resp if n == name]
    return vals[-1] if vals else None


def headers(url, resp):
    found = []
    hsts = get(resp, "strict-transport-security")
    if not (RULES >= 4 and url.startswith("http://")):
        if hsts is None:
            found.append("missing-hsts")
        elif RULES >= 2:
            m = re.search(r'max-age\s*=\s*"?([0-9]+)"?', hsts, re.I)
            if not m or int(m.group(1)) < MIN_AGE:
                found.append("weak-hsts")
    if RULES >= 1:
        csp = get(resp, "content-security-policy")
        if csp is None:
            found.append("missing-csp")
        if (get(resp, "x-content-type-options") or "").lower() != "nosniff":
            found.append("missing-nosniff")
        if RULES >= 3 and (get(resp, "x-frame-options") or "").upper() not in ("DENY", "SAMEORIGIN") \
                and "frame-ancestors" not in (csp or "").lower():
            found.append("missing-xfo")
    return found


def cookies(resp):
    found = []
    for n, v in resp:
        if n != "set-cookie":
            continue
        name, _, rest = v.partition("=")
        attrs = {}
        for a in rest.split(";")[1:]:
            k, _, val = a.strip().partition("=")
            attrs[k.lower()] = val
        miss = []
        if RULES >= 1 and "secure" not in attrs:
            miss.append("secure")
        if "httponly" not in attrs:
            miss.append("httponly")
        if RULES >= 2 and "samesite" not in attrs:
            miss.append("samesite")
        if RULES >= 4 and name.strip().startswith("__Host-") and (
                "secure" not in attrs or attrs.get("path") != "/" or "domain" in attrs):
            miss.append("host-prefix")
        if miss:
            found.append(f"{name.strip()} {','.join(miss)}")
    return found


def cors(resp):
    acao = get(resp, "access-control-allow-origin")
    cred = (get(resp, "access-control-allow-credentials") or "").lower() == "true"
    if acao == ORIGIN:
        return ["reflected-credentials" if RULES >= 2 and cred else "reflected-origin"]
    if RULES >= 1 and acao == "*" and cred:
        return ["wildcard-credentials"]
    if RULES >= 2 and acao == "null":
        return ["null-origin"]
    return []


def audit(text, variant):
    out = []
    for url, chain in blocks(text):
        if not chain:
            continue
        final = chain[-1] if RULES >= 3 else chain[0]
        if variant == "cookies":  # every hop of a redirect chain sets its cookies
            found = [f for r in (chain if RULES >= 3 else [final]) for f in cookies(r)]
        else:
            found = headers(url, final) if variant == "headers" else cors(final)
        out += [f"{url} {f}" for f in found]
    return "".join(x + "\n" for x in sorted(out))


if __name__ == "__main__":  # headers.py RESPONSES headers|cookies|cors
    sys.stdout.write(audit(open(sys.argv[1]).read(), sys.argv[2]))
'''

PATHS = ("/", "/login", "/account", "/api/v1/me", "/checkout", "/static/app.js", "/admin", "/search", "/api/v1/cart",
         "/logout", "/help", "/reset-password")
COOKIES = ("sid", "session", "csrftoken", "prefs", "__Host-auth", "_ga", "cart_id", "remember_me")


def _case(rng, name, mixed):
    """A header name as a server writes it: lower (HTTP/2), Title-Case, or (mixed) anything."""
    if mixed and rng.random() < 0.3:
        return "".join(c.upper() if rng.random() < 0.5 else c for c in name)
    return rng.choice([name, "-".join(w.title() for w in name.split("-"))]) if mixed else name


@dataclass(frozen=True)
class Knobs:
    urls: int  # probed URLs per site
    traps: int  # the RULES of the reference
    decoys: int  # other sites of the export


@register
class HttpHeaderAudit(Family):
    name = "http_header_audit"
    domain = "security"
    skill_types = ("Web Security",)
    primitive_skills = ("config file parsing", "input validation", "allowlist and denylist matching",
                        "URL parsing and normalisation", "regular expressions")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("headers", "cookies", "cors")
    levels = {0: Knobs(urls=5, traps=0, decoys=2),
              1: Knobs(urls=7, traps=1, decoys=2),
              2: Knobs(urls=9, traps=2, decoys=3),
              3: Knobs(urls=11, traps=3, decoys=3),
              4: Knobs(urls=12, traps=4, decoys=3)}

    def _response(self, t, status, origin):
        k, rng = t.knobs, t.rng
        mixed = k.traps >= 1
        h = [("date", "Tue, 01 Dec 2026 10:00:00 GMT"), ("content-type", "text/html; charset=utf-8")]
        if rng.random() < 0.6:
            age = rng.choice([31536000, 63072000, 86400, 300, 15552000])
            val = f"max-age={age}" if k.traps < 2 or rng.random() < 0.7 else f'max-age="{age}"'
            h.append(("strict-transport-security", val + rng.choice(["", "; includeSubDomains"])))
        if rng.random() < 0.6:
            h.append(("content-security-policy", rng.choice(["default-src 'self'", "default-src 'self'; "
                                                             "frame-ancestors 'none'", "script-src 'self' cdn.test"])))
        if rng.random() < 0.6:
            h.append(("x-content-type-options", rng.choice(["nosniff", "nosniff", "NoSniff" if mixed else "nosniff"])))
        if rng.random() < 0.5:
            h.append(("x-frame-options", rng.choice(["DENY", "SAMEORIGIN", "sameorigin", "ALLOW-FROM https://a.test"])))
        for _ in range(rng.choice([0, 1, 1, 2])):
            name = rng.choice(COOKIES)
            attrs = [a for a in ("Path=/", "Secure", "HttpOnly", "SameSite=" + rng.choice(["Lax", "Strict", "None"]),
                                 "Domain=.example.test") if rng.random() < 0.6]
            if k.traps >= 2:
                attrs = [a.lower() if rng.random() < 0.3 else a for a in attrs]
            h.append(("set-cookie", "; ".join([f"{name}={rng.randbytes(6).hex()}", *attrs])))
        r = rng.random()
        if r < 0.25:
            h.append(("access-control-allow-origin", origin))
        elif r < 0.4:
            h.append(("access-control-allow-origin", "*"))
        elif r < 0.5:
            h.append(("access-control-allow-origin", "null"))
        elif r < 0.6:
            h.append(("access-control-allow-origin", "https://app.example.test"))
        if r < 0.6 and rng.random() < 0.5:
            h.append(("access-control-allow-credentials", "true"))
        rng.shuffle(h)
        lines = [f"HTTP/{rng.choice(['1.1', '2'])} {status}"] + [f"{_case(rng, n, mixed)}: {v}" for n, v in h]
        return lines

    def _site(self, t, origin):
        k, rng = t.knobs, t.rng
        host = f"{rng.choice(['shop', 'portal', 'api', 'www', 'id'])}.example.test"
        out = []
        for path in rng.sample(PATHS, k.urls):
            scheme = "http" if k.traps >= 4 and rng.random() < 0.25 else "https"
            out.append(f"== {scheme}://{host}{path}")
            if k.traps >= 3 and rng.random() < 0.35:  # a redirect hop first (curl -L shows every response)
                out += self._response(t, rng.choice([301, 302]), origin) + [f"location: https://{host}{path}/", ""]
            out += self._response(t, 200, origin) + [""]
        return "".join(x + "\n" for x in out)

    def output_case(self, t: TaskBuilder) -> None:
        k, rng, variant = t.knobs, t.rng, t.variant
        origin = f"https://probe-{rng.randrange(100, 999)}.scanner.test"
        src = fill(REFERENCE, RULES=k.traps, ORIGIN=repr(origin))
        ref = run_python(src)
        sites, truth = fleet.pick(t, lambda: [self._site(t, origin) for _ in range(1 + k.decoys)],
                                  lambda x: ref["audit"](x, variant))
        target = fleet.ship(t, "/app/scans", [{"responses.txt": x} for x in sites])
        who = fleet.intro(t, "/app/scans", "last night's header scan of our sites, each site's `responses.txt`",
                          "site", target)
        t.say("In a scan, `== <url>` starts the capture of one probed URL, followed by the response's status line and "
              "headers" + (" (a redirect shows every response of the chain in order)" if k.traps >= 3 else "")
              + f". Every probe sent `Origin: {origin}`.")
        rules = []
        if k.traps >= 1:
            rules.append("Header names are case-insensitive; if a header repeats, its last value counts.")
        if k.traps >= 3:
            rules.append("Only the final response of a URL's chain counts for its headers" +
                         (", but the cookies of every response in it count." if variant == "cookies" else "."))
        if variant == "headers":
            checks = ["`missing-hsts`: no `Strict-Transport-Security`"]
            if k.traps >= 2:
                checks.append("`weak-hsts`: one whose `max-age` (the number may be quoted) is missing or below "
                              "15552000")
            if k.traps >= 1:
                checks += ["`missing-csp`: no `Content-Security-Policy`",
                           "`missing-nosniff`: `X-Content-Type-Options` is not `nosniff` (any case)"]
            if k.traps >= 3:
                checks.append("`missing-xfo`: neither `X-Frame-Options` `DENY` or `SAMEORIGIN` (any case) nor a CSP "
                              "containing `frame-ancestors`")
            rules.append("The findings: " + "; ".join(checks) + "."
                         + (" HSTS means nothing over plain `http://`: no HSTS findings for those URLs." if
                            k.traps >= 4 else ""))
            what = "`<url> <finding>` per URL and finding"
        elif variant == "cookies":
            flags = (["`secure`"] if k.traps >= 1 else []) + ["`httponly`"] + (["`samesite`"] if k.traps >= 2 else [])
            rules.append(f"Each `Set-Cookie` must carry the attributes {', '.join(flags)} (attribute names in any "
                         "case, with or without a value)" + ("; a cookie whose name starts with `__Host-` must also "
                                                            "have `Secure`, `Path=/` and no `Domain`, else "
                                                            "`host-prefix`" if k.traps >= 4 else "") + ".")
            what = ("`<url> <cookie name> <missing>` per cookie set without them, `<missing>` the missing names "
                    f"comma-separated in the order {', '.join(flags)}" + (", `host-prefix`" if k.traps >= 4 else ""))
        else:
            kinds = ["`reflected-origin`: `Access-Control-Allow-Origin` is exactly the probe's Origin"]
            if k.traps >= 2:
                kinds[0] += " (`reflected-credentials` instead when `Access-Control-Allow-Credentials` is `true`)"
            if k.traps >= 1:
                kinds.append("`wildcard-credentials`: it is `*` and credentials are allowed (`true`, any case)")
            if k.traps >= 2:
                kinds.append("`null-origin`: it is `null`")
            rules.append("The findings: " + "; ".join(kinds) + ".")
            what = "`<url> <finding>` per URL with a finding"
        t.say(" ".join(rules) + f" Write {what}, the lines sorted in byte order (`LC_ALL=C sort`).")
        fleet.solve(t, who, "headers.py", src, "/app/scans/{KEY}/responses.txt", variant, "/app/out/findings.txt")
        t.expect_output("/app/out/findings.txt", truth, "the findings")
