"""Did the API gateway let bad tokens through? Validate the HS256 JWTs captured in a gateway log with the
signing secret: structure, algorithm, HMAC signature, expiry, and (higher levels) not-before, issuer,
audience, per-route scopes and clock-skew leeway. Report each allowed request whose token should have
been refused, with the first failing check (under partial credit each line also carries the request's
HMAC audit tag: lines such as `missing` would otherwise score without the secret). Variants: a token
classifier (adversarial corpus) and a reusable auditor program (fuzz equivalence)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from dataclasses import dataclass
from datetime import datetime, timezone

from tmax.families.base import Family, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.unseen import unseen

REFERENCE = r'''
import base64
import hashlib
import hmac
import json
import re
import sys
from datetime import datetime, timezone

SECRET = "@@SECRET@@"  # the delivered secret, put in at solve time
TAGGED = @TAGGED@  # each report line ends with the request's audit tag
ISSUER = @ISSUER@
AUDIENCE = @AUDIENCE@
ROUTES = @ROUTES@
LEEWAY = @LEEWAY@
NOW = @NOW@
SEG = re.compile(r"^[A-Za-z0-9_-]*$")
LINE = re.compile(r"^(\S+) req=(\S+) route=(\S+) decision=(allow|deny) token=(\S+)$")


def b64(seg):
    if not SEG.match(seg) or len(seg) % 4 == 1:
        return None
    return base64.urlsafe_b64decode(seg + "=" * (-len(seg) % 4))


def obj(seg):
    raw = b64(seg)
    if raw is None:
        return None
    try:
        value = json.loads(raw.decode("utf-8"))
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def check(token, now, route=None, secret=None):
    """The first failing check's name, or None when the token is valid."""
    secret = secret or SECRET
    parts = token.split(".")
    if len(parts) != 3:
        return "malformed"
    header, payload, sig = obj(parts[0]), obj(parts[1]), b64(parts[2])
    if header is None or payload is None or sig is None:
        return "malformed"
    if header.get("alg") != "HS256":
        return "alg"
    mac = hmac.new(secret.encode(), (parts[0] + "." + parts[1]).encode(), hashlib.sha256).digest()
    if not hmac.compare_digest(mac, sig):
        return "signature"
    exp = payload.get("exp")
    if not is_int(exp) or now >= exp + LEEWAY:
        return "expired"
    if ISSUER is None:
        return None
    nbf = payload.get("nbf")
    if nbf is not None and (not is_int(nbf) or now < nbf - LEEWAY):
        return "not_yet_valid"
    if payload.get("iss") != ISSUER:
        return "issuer"
    aud = payload.get("aud")
    auds = aud if isinstance(aud, list) else [aud]
    if AUDIENCE not in auds:
        return "audience"
    if ROUTES and route is not None:
        need = ROUTES.get(route)
        scope = payload.get("scope")
        have = scope.split(" ") if isinstance(scope, str) else []
        if need is not None and need not in have:
            return "scope"
    return None


def epoch(stamp):
    return int(datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc).timestamp())


def tag(rid, secret):
    return hmac.new(secret.encode(), rid.encode(), hashlib.sha256).hexdigest()[:8]


def audit(text, secret=None):
    secret = secret or SECRET
    out = []
    for line in text.splitlines():
        m = LINE.match(line)
        if not m or m.group(4) != "allow":
            continue
        rid = m.group(2)
        why = "missing" if m.group(5) == "-" else check(m.group(5), epoch(m.group(1)), m.group(3), secret)
        if why:
            out.append(f"{rid} {why} {tag(rid, secret)}" if TAGGED else f"{rid} {why}")
    return "".join(o + "\n" for o in out)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "audit":  # audit SECRET < log
        sys.stdout.write(audit(sys.stdin.read(), sys.argv[2]))
    elif @CLASSIFY@:
        sys.exit(0 if check(sys.stdin.read().strip(), NOW) is None else 1)
    else:
        sys.stdout.write(audit(sys.stdin.read()))


if __name__ == "__main__":
    main()
'''

# Level 0's program: sign `<header>.<payload>` lines, or accept only a correctly signed token.
ATOMIC = r'''
import base64
import hashlib
import hmac
import sys

SECRET = "@@SECRET@@"  # the delivered secret, put in at solve time


def signature(text, secret=None):
    mac = hmac.new((secret or SECRET).encode(), text.encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(mac).decode().rstrip("=")


def sign(text, secret=None):
    return "".join(f"{line}.{signature(line, secret)}\n" for line in text.split())


def genuine(token, secret=None):
    head, _, sig = token.strip().rpartition(".")
    return head.count(".") == 1 and sig.isascii() and hmac.compare_digest(signature(head, secret), sig)


if __name__ == "__main__":
    if @VERIFY@:
        sys.exit(0 if genuine(sys.stdin.read()) else 1)
    sys.stdout.write(sign(sys.stdin.read()))
'''
SIGN_TXT = ("the signature is the HMAC-SHA256 of the ASCII text `<header>.<payload>`, keyed with the secret given "
            "above (its ASCII bytes), as unpadded base64url")

ROUTES = {"/v1/invoices": "invoices:read", "/v1/invoices/pay": "invoices:write", "/v1/customers": "customers:read",
          "/v1/refunds": "refunds:write", "/v1/reports": "reports:read"}
SCOPES = sorted(set(ROUTES.values())) + ["profile", "openid"]


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _js(obj, spaced=False) -> str:
    return json.dumps(obj, separators=(", ", ": ") if spaced else (",", ":"))


def _stamp(ts: int) -> str:
    return datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class _Forge:
    """Makes tokens that are valid, or invalid in one chosen way, relative to a request time."""

    def __init__(self, rng, secret, issuer, audience, leeway, level):
        self.rng, self.secret, self.issuer, self.audience, self.leeway, self.level = \
            rng, secret, issuer, audience, leeway, level

    def sign(self, h, p, secret=None):
        mac = hmac.new((secret or self.secret).encode(), (h + "." + p).encode(), hashlib.sha256).digest()
        return f"{h}.{p}.{_b64(mac)}"

    def claims(self, now, route):
        rng = self.rng
        c = {"sub": f"user-{rng.randrange(1000, 9999)}", "iat": now - rng.randrange(60, 3000),
             "exp": now + rng.randrange(self.leeway + 1, 7200)}
        if self.issuer:
            c["iss"] = self.issuer
            c["aud"] = self.audience if rng.random() < 0.5 else sorted({self.audience, rng.choice(["web", "mobile"])})
            if rng.random() < 0.4:
                c["nbf"] = now - rng.randrange(self.leeway, 600)
        if self.level >= 4:
            need = ROUTES.get(route)
            extra = rng.sample(SCOPES, rng.randrange(0, 3))
            c["scope"] = " ".join(sorted(set(extra + ([need] if need else []))))
        keys = list(c)
        rng.shuffle(keys)
        return {key: c[key] for key in keys}

    def token(self, now, route, kind):
        rng = self.rng
        header = {"alg": "HS256", "typ": "JWT"} if rng.random() < 0.7 else {"typ": "JWT", "alg": "HS256"}
        spaced = self.level >= 3 and rng.random() < 0.2
        c = self.claims(now, route)
        if kind == "alg":
            header["alg"] = rng.choice(["none", "HS512", "RS256", "hs256", "None"])
            h, p = _b64(_js(header, spaced).encode()), _b64(_js(c, spaced).encode())
            if header["alg"].lower() == "none":
                return f"{h}.{p}." if rng.random() < 0.6 else self.sign(h, p)
            return self.sign(h, p)
        if kind == "expired":
            c["exp"] = now - rng.choice([0, 1, rng.randrange(2, 5000)]) - self.leeway
            if self.level >= 2 and rng.random() < 0.2:
                c.pop("exp")
        elif kind == "leeway_ok":  # inside the skew allowance: valid
            c["exp"] = now - rng.randrange(0, self.leeway)
        elif kind == "not_yet_valid":
            c["nbf"] = now + self.leeway + rng.choice([1, rng.randrange(2, 900)])
        elif kind == "issuer":
            c["iss"] = rng.choice([self.issuer.replace("https://", "http://"), self.issuer + "/",
                                   "https://login.evil.example", self.issuer.upper()])
        elif kind == "audience":
            c["aud"] = rng.choice([["web", "mobile"], "web", self.audience + "-admin", self.audience.upper()])
        elif kind == "scope":
            need = ROUTES[route]
            c["scope"] = " ".join(s for s in c["scope"].split(" ") if s != need) or "profile"
            if rng.random() < 0.3:
                c["scope"] = c["scope"] + " " + need.split(":")[0]
        h, p = _b64(_js(header, spaced).encode()), _b64(_js(c, spaced).encode())
        if kind == "signature":
            how = rng.randrange(3)
            if how == 0:  # signed with an old key
                return self.sign(h, p, self.secret.lower())
            if how == 1:  # payload tampered after signing
                good = self.sign(h, p)
                c2 = dict(c, sub="admin")
                return _b64(_js(header, spaced).encode()) + "." + _b64(_js(c2, spaced).encode()) + "." + \
                    good.rsplit(".", 1)[1]
            return f"{h}.{p}.{_b64(bytes(rng.randrange(256) for _ in range(32)))}"
        if kind == "malformed":
            how = rng.randrange(4)
            good = self.sign(h, p)
            if how == 0:
                return good.rsplit(".", 1)[0]
            if how == 1:
                return good + "=" if rng.random() < 0.5 else h + "." + p + "==." + good.rsplit(".", 1)[1]
            if how == 2:
                return self.sign(_b64(b"not-json"), p)
            return self.sign(h, _b64(b'["sub","admin"]'))
        return self.sign(h, p)


@dataclass(frozen=True)
class Knobs:
    requests: int  # requests in the gateway log
    kinds: tuple[str, ...]  # the ways a token can be bad (and leeway_ok: valid only thanks to the leeway)
    claims: bool  # not-before, issuer and audience checks
    leeway: int  # clock-skew allowance in seconds


@dataclass
class _Setup:
    """What every case of one task shares: the constants, the forger, the checks as the instruction states them."""
    secret: str
    issuer: str | None
    audience: str | None
    routes: dict
    now0: int
    forge: _Forge
    ns: dict
    checks: list
    check_txt: str
    route_txt: str


@register
class JwtTokenAudit(Family):
    name = "jwt_token_audit"
    domain = "security"
    skill_types = ("Cryptography", "Access Control", "Web Security")
    primitive_skills = ("JWT decoding and validation", "HMAC signature verification", "base64url decoding",
                        "token expiry and claim checks", "input validation", "allowlist and denylist matching")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol", "fuzz_equivalence", "adversarial_corpus")
    programs = {"Python": REFERENCE}
    levels = {0: Knobs(requests=4, kinds=("signature",), claims=False, leeway=0),
              1: Knobs(requests=25, kinds=("alg", "signature", "expired"), claims=False, leeway=0),
              2: Knobs(requests=60, kinds=("alg", "signature", "expired", "malformed", "missing"), claims=False,
                       leeway=0),
              3: Knobs(requests=120, kinds=("alg", "signature", "expired", "malformed", "missing", "not_yet_valid",
                                            "issuer", "audience"), claims=True, leeway=0),
              4: Knobs(requests=200, kinds=("alg", "signature", "expired", "malformed", "missing", "not_yet_valid",
                                            "issuer", "audience", "scope", "leeway_ok"), claims=True, leeway=30)}

    def setup(self, t: TaskBuilder, classify: bool) -> tuple[_Setup, str]:
        """The shared constants, the forger and the reference (its secret left for the oracle to put in)."""
        k, rng = t.knobs, t.rng
        leeway = k.leeway
        issuer = audience = None
        if k.claims:
            issuer = f"https://{rng.choice(['auth', 'login', 'sso', 'id'])}.{rng.choice(['acme', 'globex', 'initech'])}"
            issuer += ".internal"
            audience = rng.choice(["billing-api", "payments-api", "ledger-api"])
        routes = ROUTES if t.level >= 4 else {}
        now0 = 1767225600 + rng.randrange(0, 300) * 86400 + rng.randrange(86400)
        checks = ["`malformed`: the token is not three dot-separated segments, or the header or payload segment "
                  "is not unpadded base64url (alphabet `A-Za-z0-9-_` only, no `=`) of a UTF-8 JSON object, or the "
                  "signature segment is not unpadded base64url",
                  "`alg`: the header's `alg` is not exactly `HS256`",
                  "`signature`: the signature does not decode to HMAC-SHA256, keyed with the secret (its ASCII "
                  "bytes), of the ASCII text `<header segment>.<payload segment>`",
                  "`expired`: the payload has no integer `exp`, or the request time (in seconds since the epoch) "
                  + (f"is at or after `exp` + {leeway}" if leeway else "is at or after `exp`")]
        if k.claims:
            checks += ["`not_yet_valid`: the payload has an `nbf` and the request time is "
                       + (f"before `nbf` - {leeway}" if leeway else "before `nbf`"),
                       f"`issuer`: `iss` is not exactly `{issuer}`",
                       f"`audience`: `aud` (a string, or a list of strings) does not contain exactly `{audience}`"]
        if routes:
            checks.append("`scope`: the route requires a scope that is not one of the space-separated "
                          "words of the payload's `scope` string")
        check_txt = "; ".join(f"({i}) {c}" for i, c in enumerate(checks, 1))
        route_txt = (" Scopes required per route: " + ", ".join(f"`{r}` needs `{s}`" for r, s in sorted(routes.items()))
                     + "." if routes else "")
        # The signing secret (delivered) is drawn before any token exists; tokens carry only base64 of JSON
        # claims and HMACs, which cannot spell it.
        secret = unseen(t, lambda: t.code(3), check_txt, route_txt, issuer or "", audience or "")
        ref_src = fill(REFERENCE, TAGGED=t.partial_credit, ISSUER=repr(issuer), AUDIENCE=repr(audience), ROUTES=routes,
                       LEEWAY=leeway, NOW=now0, CLASSIFY=classify)
        return _Setup(secret, issuer, audience, routes, now0, _Forge(rng, secret, issuer, audience, leeway, t.level),
                      run_python(ref_src), checks, check_txt, route_txt), ref_src

    def log(self, t: TaskBuilder, s: _Setup, n: int, start: int) -> str:
        """A gateway log of ``n`` requests from ``start`` on; about half the tokens are bad in one way."""
        rng, k = t.rng, t.knobs
        kinds = [x for x in k.kinds if x != "missing"]
        pool = kinds + (["missing"] if "missing" in k.kinds else [])
        lines, now = [], start
        for i in range(n):
            now += rng.randrange(1, 40)
            route = rng.choice(sorted(ROUTES))
            kind = "valid" if rng.random() < 0.45 else rng.choice(pool)
            tok = "-" if kind == "missing" else s.forge.token(now, route, kind)
            decision = "allow" if rng.random() < 0.8 else "deny"
            lines.append(f"{_stamp(now)} req=r-{start % 100000 + i:06d} route={route} decision={decision} "
                         f"token={tok}")
        return "\n".join(lines) + "\n"

    def fmt(self, t: TaskBuilder) -> str:
        return ("one line per such request, in log order: the request id, a space, the reason (the name of the first "
                "check it fails, or `missing` when the request carried no token at all, `token=-`)"
                + (", a space, and the request's audit tag: the first 8 hex digits (lowercase) of the HMAC-SHA256, "
                   "keyed with the secret, of the request id's ASCII text (e.g. of `r-000123`)"
                   if t.partial_credit else ""))

    def _atomic(self, t: TaskBuilder, verify: bool) -> tuple[str, str, dict, _Forge]:
        """Level 0's secret, reference program, its namespace and a forger of plain HS256 tokens."""
        # Drawn before any token: tokens carry only base64 of JSON claims and HMACs.
        secret = unseen(t, lambda: t.code(3))
        src = fill(ATOMIC, VERIFY=verify)
        return secret, src, run_python(src), _Forge(t.rng, secret, None, None, 0, 0)

    def _unsigned(self, t: TaskBuilder, forge: _Forge, now: int) -> str:
        return forge.token(now, None, "valid").rsplit(".", 1)[0]

    def corpus_case(self, t: TaskBuilder) -> None:
        if t.level == 0:  # only the signature is judged
            secret, src, ns, forge = self._atomic(t, verify=True)
            now = 1767225600 + t.rng.randrange(0, 300) * 86400
            clean = [forge.token(now, None, "valid") + "\n" for _ in range(20)]
            bad = [forge.token(now, None, "signature") + "\n" for _ in range(20)]
            assert all(ns["genuine"](x, secret) for x in clean) and not any(ns["genuine"](x, secret) for x in bad)
            who = t.deliver(secret, "the signing secret")
            t.say(f"Write a JWT signature check. It receives one HS256 token `<header>.<payload>.<signature>` on "
                  f"standard input (ignore surrounding whitespace) and accepts it only if the signature is right: "
                  f"{SIGN_TXT}. No other claim is checked.")
            t.expect_classifier("Hard-code the secret.", clean, bad, {"Python": src})
            t.solve(f'sed -i "s/@@SECRET@@/{who}/" /app/solution.py')
            return
        k = t.knobs
        s, ref_src = self.setup(t, classify=True)
        kinds = [x for x in k.kinds if x != "missing"]
        clean, bad = [], []
        for i in range(40):
            clean.append(s.forge.token(s.now0, None, "leeway_ok" if k.leeway and i % 5 == 0 else "valid") + "\n")
        bad_kinds = [x for x in kinds if x not in ("scope", "leeway_ok")]
        for i in range(48):
            bad.append(s.forge.token(s.now0, None, bad_kinds[i % len(bad_kinds)]) + "\n")
        for item in clean:
            assert s.ns["check"](item.strip(), s.now0, None, s.secret) is None, item
        for item in bad:
            assert s.ns["check"](item.strip(), s.now0, None, s.secret) is not None, item
        samples = "".join(s.forge.token(s.now0, None, "valid") + "\n" for _ in range(2))
        t.add_file("/app/samples/good_tokens.txt", samples)
        cut = [c for c in s.checks if not c.startswith("`scope`")]
        who = t.deliver(s.secret, "the signing secret")
        t.say(f"Our services share an HS256 JWT secret (given above). We need a strict token validator to put "
              f"in front of a legacy service. It receives one token on standard input (ignore surrounding "
              f"whitespace) and must reject it if any of the following failure conditions holds, evaluated at the "
              f"fixed time {s.now0} (seconds since the epoch; use this constant, not the clock), and accept it "
              f"otherwise: "
              + "; ".join(f"({i}) {c}" for i, c in enumerate(cut, 1)).replace("the request time", "that time")
              + ". Two tokens known to be good are in `/app/samples/good_tokens.txt`.")
        t.expect_classifier("Hard-code the secret and the other constants.", clean, bad, {"Python": ref_src})
        t.solve(f'sed -i "s/@@SECRET@@/{who}/" /app/solution.py')

    def program_case(self, t: TaskBuilder) -> None:
        rng = t.rng
        if t.level == 0:  # a signer: one HMAC per line
            secret, src, ns, forge = self._atomic(t, verify=False)
            now = 1767225600 + rng.randrange(0, 300) * 86400
            cases = []
            for _ in range(10):
                text = "".join(self._unsigned(t, forge, now + rng.randrange(10 ** 6)) + "\n"
                               for _ in range(rng.randrange(1, t.knobs.requests + 1)))
                cases.append((text, ns["sign"](text, secret)))
            who = t.deliver(secret, "the signing secret")
            t.say(f"Write a JWT signer. It reads lines `<header>.<payload>` (the first two segments of an HS256 "
                  f"token) on standard input and prints, for each line in order, the complete token "
                  f"`<header>.<payload>.<signature>` on a line of its own; {SIGN_TXT}.")
            t.expect_program("Hard-code the secret.", cases, {"Python": src})
            t.solve(f'sed -i "s/@@SECRET@@/{who}/" /app/solution.py')
            return
        s, ref_src = self.setup(t, classify=False)
        cases = []
        for _ in range(10):
            text = self.log(t, s, rng.randrange(5, 40), s.now0 + rng.randrange(10 ** 6))
            cases.append((text, s.ns["audit"](text, s.secret)))
        who = t.deliver(s.secret, "the signing secret")
        t.say(f"We need a reusable auditor for our API gateway's logs. It reads one log on standard input (lines "
              f"`<UTC time> req=<id> route=<path> decision=allow|deny token=<JWT or ->`, as in the examples) and "
              f"reports the requests the gateway allowed although their token should have been refused. Tokens "
              f"are HS256 JWTs signed with the secret given above. Checks, in this order: {s.check_txt}.{s.route_txt} "
              f"Denied requests are ignored. Output {self.fmt(t)}; nothing else.")
        t.expect_program("Hard-code the secret and the other constants.", cases, {"Python": ref_src})
        t.solve(f'sed -i "s/@@SECRET@@/{who}/" /app/solution.py')

    def output_case(self, t: TaskBuilder) -> None:
        if t.level == 0:  # sign one token: one HMAC, one base64url
            secret, src, ns, forge = self._atomic(t, verify=False)
            unsigned = self._unsigned(t, forge, 1767225600 + t.rng.randrange(0, 300) * 86400)
            t.add_file("/app/tokens/unsigned.txt", unsigned + "\n")
            who = t.deliver(secret, "the signing secret")
            t.say(f"`/app/tokens/unsigned.txt` holds the first two segments of an HS256 JWT, `<header>.<payload>`. "
                  f"Sign it: {SIGN_TXT}. The answer is the complete token `<header>.<payload>.<signature>` on one "
                  f"line.")
            t.solve(f'test -n "{who}"\nmkdir -p /app/out\nu=$(cat /app/tokens/unsigned.txt)\n'
                    "python3 -c 'import base64, hashlib, hmac, sys; k, u = sys.argv[1:]; print(u + \".\" + "
                    "base64.urlsafe_b64encode(hmac.new(k.encode(), u.encode(), hashlib.sha256).digest())"
                    f'.decode().rstrip("="))\' "{who}" "$u" > /app/out/token.txt')
            t.expect_output("/app/out/token.txt", ns["sign"](unsigned, secret), "the signed token")
            return
        k = t.knobs
        s, ref_src = self.setup(t, classify=False)
        text = self.log(t, s, k.requests, s.now0)
        t.add_file("/app/logs/gateway.log", text)
        route_txt = s.route_txt
        if s.routes:
            t.add_file("/app/config/routes.txt", "# route  required-scope\n"
                       + "".join(f"{r} {sc}\n" for r, sc in sorted(s.routes.items())))
            route_txt = " The scope each route requires is in `/app/config/routes.txt`."
        truth = s.ns["audit"](text, s.secret)
        who = t.deliver(s.secret, "the signing secret")
        t.say(f"After a pentest finding we suspect our API gateway's JWT validation is broken. `/app/logs/gateway.log` "
              f"has one line per request: `<UTC time> req=<id> route=<path> decision=allow|deny token=<JWT or ->`. "
              f"Tokens should be HS256 JWTs signed with the secret given above. Find every request the gateway "
              f"allowed although its token should have been refused, judged at that request's own time. Checks, in "
              f"this order: {s.check_txt}.{route_txt} Denied requests are not our concern.")
        t.add_solution_file("jwt_audit.py", ref_src)
        t.solve(f'test -n "{who}"\nmkdir -p /app/out\n'
                f'python3 /solution/jwt_audit.py audit "{who}" < /app/logs/gateway.log > /app/out/bad_tokens.txt')
        t.say(f"Report format: {self.fmt(t)}.")
        t.expect_output("/app/out/bad_tokens.txt", truth, "the report")
