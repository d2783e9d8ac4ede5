"""Did the API gateway let bad tokens through? Validate the HS256 JWTs captured in a gateway log with the
signing secret: structure, algorithm, HMAC signature, expiry, and (higher levels) not-before, issuer,
audience, per-route scopes and clock-skew leeway. Report each allowed request whose token should have
been refused, with the first failing check (under partial credit each line also carries the request's
HMAC audit tag: lines such as `missing` would otherwise score without the secret); other cases: a token
classifier (adversarial corpus) and a reusable auditor program (fuzz equivalence). Variants: the allowed
requests with bad tokens (allowed_bad), the denied requests whose tokens were good (denied_good), or the
rightly allowed tokens re-signed with a new, delivered secret during a key rotation (rotate). Over 500
lines: the three variants share the token forger and the checks, and each has output, program and corpus
cases of its own."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import random
from dataclasses import dataclass
from datetime import datetime, timezone

from tmax.families.base import Family, FamilyError, TaskBuilder, register
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
# The denied_good and rotate variants: REFERENCE's checks, another question at the end.
VARIANT_TAIL = r'''
VARIANT = @VARIANT@
OLD = "@OLD@"  # rotate: the retired secret the log's tokens were signed with
CLASSIFY = @CLASSIFY@


def resign(token, secret):
    head = token.rsplit(".", 1)[0]
    mac = hmac.new(secret.encode(), head.encode(), hashlib.sha256).digest()
    return head + "." + base64.urlsafe_b64encode(mac).decode().rstrip("=")


def audit(text, secret=None):
    """denied_good: the denied requests whose token passes every check; rotate: the allowed requests whose
    token passes every check under the old secret, re-signed with the new one."""
    secret = secret or SECRET
    out = []
    for line in text.splitlines():
        m = LINE.match(line)
        if not m or m.group(5) == "-":
            continue
        rid, route, decision, token = m.group(2), m.group(3), m.group(4), m.group(5)
        now = epoch(m.group(1))
        if VARIANT == "denied_good":
            if decision == "deny" and check(token, now, route, secret) is None:
                sub = obj(token.split(".")[1]).get("sub")
                out.append(f"{rid} {sub} {tag(rid, secret)}" if TAGGED else f"{rid} {sub}")
        elif decision == "allow" and check(token, now, route, OLD) is None:
            out.append(f"{rid} {resign(token, secret)}")
    return "".join(o + "\n" for o in out)


def accept(item, secret=None):
    """The classifier: denied_good takes a log line (wrong decision: non-zero); rotate takes a token."""
    secret = secret or SECRET
    if VARIANT == "denied_good":
        m = LINE.match(item.strip())
        if not m:
            return True
        good = m.group(5) != "-" and check(m.group(5), epoch(m.group(1)), m.group(3), secret) is None
        return not (m.group(4) == "deny" and good)
    return check(item.strip(), NOW, None, secret) is None or check(item.strip(), NOW, None, OLD) is None


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "audit":  # audit SECRET < log
        sys.stdout.write(audit(sys.stdin.read(), sys.argv[2]))
    elif CLASSIFY:
        sys.exit(0 if accept(sys.stdin.read()) else 1)
    else:
        sys.stdout.write(audit(sys.stdin.read()))


if __name__ == "__main__":
    main()
'''

# Level 0 of denied_good and rotate: lines `<id> <token>`; the genuine ones (denied_good), or the ones
# genuine under the old secret re-signed with the new (rotate). The classifier: a line `<allow|deny> <token>`
# whose decision the signature contradicts is rejected (denied_good), a token signed with either secret is
# accepted (rotate).
ATOMIC_VARIANT = r'''
import base64
import hashlib
import hmac
import sys

VARIANT = @VARIANT@
TAGGED = @TAGGED@
OLD = "@OLD@"
SECRET = "@@SECRET@@"  # the delivered secret, put in at solve time


def signature(text, secret):
    mac = hmac.new(secret.encode(), text.encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(mac).decode().rstrip("=")


def genuine(token, secret):
    head, _, sig = token.strip().rpartition(".")
    return head.count(".") == 1 and sig.isascii() and hmac.compare_digest(signature(head, secret), sig)


def tag(rid, secret):
    return hmac.new(secret.encode(), rid.encode(), hashlib.sha256).hexdigest()[:8]


def report(text, secret=None):
    secret = secret or SECRET
    out = []
    for line in text.splitlines():
        if not line.strip():
            continue
        rid, token = line.split()
        if VARIANT == "denied_good" and genuine(token, secret):
            out.append(f"{rid} {tag(rid, secret)}" if TAGGED else rid)
        elif VARIANT == "rotate" and genuine(token, OLD):
            head = token.rsplit(".", 1)[0]
            out.append(f"{rid} {head}.{signature(head, secret)}")
    return "".join(o + "\n" for o in out)


def accept(item, secret=None):
    secret = secret or SECRET
    if VARIANT == "denied_good":
        decision, token = item.split()
        return (decision == "allow") == genuine(token, secret)
    return genuine(item, secret) or genuine(item, OLD)


if __name__ == "__main__":
    if len(sys.argv) > 1:  # SECRET < lines
        sys.stdout.write(report(sys.stdin.read(), sys.argv[1]))
    elif @VERIFY@:
        sys.exit(0 if accept(sys.stdin.read().strip()) else 1)
    else:
        sys.stdout.write(report(sys.stdin.read()))
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
    old: str = ""  # rotate: the retired secret the log's tokens were signed with (shown)


@register
class JwtTokenAudit(Family):
    name = "jwt_token_audit"
    domain = "security"
    skill_types = ("Cryptography", "Access Control", "Web Security")
    primitive_skills = ("JWT decoding and validation", "HMAC signature verification", "base64url decoding",
                        "token expiry and claim checks", "input validation", "allowlist and denylist matching")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol", "fuzz_equivalence", "adversarial_corpus")
    programs = {"Python": REFERENCE}
    variants = ("allowed_bad", "denied_good", "rotate")
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
        checks, check_txt, route_txt = self.check_texts(k, issuer, audience, routes)
        # The signing secret (delivered) is drawn before any token exists; tokens carry only base64 of JSON
        # claims and HMACs, which cannot spell it.
        secret = unseen(t, lambda: t.code(3), check_txt, route_txt, issuer or "", audience or "")
        ref_src = fill(REFERENCE, TAGGED=t.partial_credit, ISSUER=repr(issuer), AUDIENCE=repr(audience), ROUTES=routes,
                       LEEWAY=leeway, NOW=now0, CLASSIFY=classify)
        return _Setup(secret, issuer, audience, routes, now0, _Forge(rng, secret, issuer, audience, leeway, t.level),
                      run_python(ref_src), checks, check_txt, route_txt), ref_src

    def log(self, t: TaskBuilder, s: _Setup, n: int, start: int, allow: float = 0.8) -> str:
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
            decision = "allow" if rng.random() < allow else "deny"
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
        if t.variant != "allowed_bad":
            self.own_stream(t)
            return self.v_corpus(t)
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
        if t.variant != "allowed_bad":
            self.own_stream(t)
            return self.v_program(t)
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
        if t.variant != "allowed_bad":
            self.own_stream(t)
            return self.v_output(t)
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

    # -- the denied_good and rotate variants ---------------------------------------------------------------
    def own_stream(self, t: TaskBuilder) -> None:
        """The new variants draw from a stream of their own (taken from t.rng), so that their logs are not
        allowed_bad's, seed for seed."""
        t.rng = random.Random(f"{t.variant}:{t.rng.getrandbits(64)}")

    def secrets(self, t: TaskBuilder, *shown: str) -> tuple[str, str]:
        """(the delivered secret, rotate's old secret, shown to the agent, or "")."""
        old = t.code(3) if t.variant == "rotate" else ""
        for _ in range(20):
            secret = unseen(t, lambda: t.code(3), *shown, old)
            if secret != old:
                return secret, old
        raise FamilyError("jwt_token_audit: every new secret drawn was the old one")

    def vsetup(self, t: TaskBuilder, classify: bool) -> tuple[_Setup, str]:
        """setup() for the new variants: the old secret (rotate) signs the log's tokens."""
        k, rng = t.knobs, t.rng
        leeway = k.leeway
        issuer = audience = None
        if k.claims:
            issuer = f"https://{rng.choice(['auth', 'login', 'sso', 'id'])}.{rng.choice(['acme', 'globex', 'initech'])}"
            issuer += ".internal"
            audience = rng.choice(["billing-api", "payments-api", "ledger-api"])
        routes = ROUTES if t.level >= 4 else {}
        now0 = 1767225600 + rng.randrange(0, 300) * 86400 + rng.randrange(86400)
        checks, check_txt, route_txt = self.check_texts(k, issuer, audience, routes)
        secret, old = self.secrets(t, check_txt, route_txt, issuer or "", audience or "")
        head = REFERENCE.split("\ndef audit(", 1)[0]
        ref_src = fill(head + VARIANT_TAIL, TAGGED=t.partial_credit, ISSUER=repr(issuer), AUDIENCE=repr(audience),
                       ROUTES=routes, LEEWAY=leeway, NOW=now0, VARIANT=repr(t.variant), OLD=old, CLASSIFY=classify)
        forge = _Forge(rng, old or secret, issuer, audience, leeway, t.level)
        s = _Setup(secret, issuer, audience, routes, now0, forge, run_python(ref_src), checks, check_txt, route_txt)
        s.old = old
        return s, ref_src

    def check_texts(self, k, issuer: str | None, audience: str | None, routes: dict) -> tuple[list, str, str]:
        """(the checks, as one numbered sentence, the scopes per route): how every case states them."""
        leeway = k.leeway
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
        return checks, check_txt, route_txt

    def vfmt(self, t: TaskBuilder) -> str:
        if t.variant == "rotate":
            return ("one line per such request, in log order: the request id, a space, and its token re-signed: the "
                    "header and payload segments exactly as they are, then a dot and the new signature, the HMAC-SHA256 "
                    "of `<header segment>.<payload segment>` keyed with the new secret, as unpadded base64url")
        return ("one line per such request, in log order: the request id, a space, and the `sub` claim of its token"
                + (", a space, and the request's audit tag: the first 8 hex digits (lowercase) of the HMAC-SHA256, "
                   "keyed with the secret, of the request id's ASCII text (e.g. of `r-000123`)"
                   if t.partial_credit else ""))

    def vask(self, t: TaskBuilder, s: _Setup) -> str:
        """What the new variants look for in a log, and which secret the checks use."""
        if t.variant == "rotate":
            return (f"We are rotating the gateway's HS256 signing secret: the old one is `{s.old}`, the new one is "
                    "given above. Sessions the gateway rightly let in are kept: find every request it allowed whose "
                    "token passes every check below with the old secret, judged at that request's own time, and "
                    f"re-sign that token with the new secret. Checks, in this order: {s.check_txt}.{s.route_txt} "
                    "Denied requests are dropped.")
        return ("Users complain that the API gateway turns away good tokens. Find every request it denied although "
                "its token passes every check below (tokens are HS256 JWTs signed with the secret given above), "
                f"judged at that request's own time. Checks, in this order: {s.check_txt}.{s.route_txt} Allowed "
                "requests and requests without a token (`token=-`) are not our concern.")

    def vlog(self, t: TaskBuilder, s: _Setup, n: int, start: int) -> str:
        """A log whose answer is not empty (denied_good denies half the requests)."""
        for _ in range(30):
            text = self.log(t, s, n, start, allow=0.5 if t.variant == "denied_good" else 0.8)
            if s.ns["audit"](text, s.secret):
                return text
        raise FamilyError(f"jwt_token_audit: no log with an answer for {t.variant}")

    def token_lines(self, t: TaskBuilder, forge: _Forge, now: int, n: int) -> str:
        """Lines `<id> <token>`, genuine and forged (at least one of each)."""
        kinds = ["valid", "signature"] + [t.rng.choice(["valid", "signature"]) for _ in range(n - 2)]
        t.rng.shuffle(kinds)
        return "".join(f"t-{i + 1:02d} {forge.token(now + i, None, kind)}\n" for i, kind in enumerate(kinds))

    def vatomic(self, t: TaskBuilder, verify: bool):
        secret, old = self.secrets(t)
        src = fill(ATOMIC_VARIANT, VARIANT=repr(t.variant), TAGGED=t.partial_credit, OLD=old, VERIFY=verify)
        return secret, old, src, run_python(src), _Forge(t.rng, old or secret, None, None, 0, 0)

    def atomic_ask(self, t: TaskBuilder, old: str) -> str:
        if t.variant == "rotate":
            return (f"tokens genuinely signed with the old secret `{old}` (the signature is right), re-signed with the "
                    f"new secret given above: one line `<id> <header>.<payload>.<new signature>` per such token, in "
                    f"input order ({SIGN_TXT.replace('the secret given above', 'the new secret')}); forged tokens "
                    "are left out")
        return (f"the ids of the tokens whose signature is right ({SIGN_TXT}), one per line, in input order"
                + (", each followed by a space and its audit tag: the first 8 hex digits (lowercase) of the "
                   "HMAC-SHA256, keyed with the secret, of the id's ASCII text" if t.partial_credit else ""))

    def v_output(self, t: TaskBuilder) -> None:
        rng, var = t.rng, t.variant
        if t.level == 0:
            secret, old, src, ns, forge = self.vatomic(t, verify=False)
            lines = self.token_lines(t, forge, 1767225600 + rng.randrange(0, 300) * 86400, rng.randint(4, 6))
            t.add_file("/app/tokens/tokens.txt", lines)
            who = t.deliver(secret, "the new signing secret" if old else "the signing secret")
            out = "/app/out/rotated.txt" if old else "/app/out/genuine.txt"
            t.say(f"`/app/tokens/tokens.txt` holds HS256 JWTs, one per line as `<id> <token>`. Write "
                  f"{self.atomic_ask(t, old)} to `{out}`.")
            t.add_solution_file("tokens.py", src)
            t.solve(f'test -n "{who}"\nmkdir -p /app/out\npython3 /solution/tokens.py "{who}" '
                    f'< /app/tokens/tokens.txt > {out}')
            t.expect_output(out, ns["report"](lines, secret), "the tokens")
            return
        s, ref_src = self.vsetup(t, classify=False)
        text = self.vlog(t, s, t.knobs.requests, s.now0)
        t.add_file("/app/logs/gateway.log", text)
        ask = self.vask(t, s)
        if s.routes:
            t.add_file("/app/config/routes.txt", "# route  required-scope\n"
                       + "".join(f"{r} {sc}\n" for r, sc in sorted(s.routes.items())))
            ask = ask.replace(s.route_txt, " The scope each route requires is in `/app/config/routes.txt`.")
        who = t.deliver(s.secret, "the new signing secret" if var == "rotate" else "the signing secret")
        t.say(f"`/app/logs/gateway.log` has one line per request: `<UTC time> req=<id> route=<path> "
              f"decision=allow|deny token=<JWT or ->`. {ask}")
        out = "/app/out/rotated.txt" if var == "rotate" else "/app/out/false_rejections.txt"
        t.add_solution_file("jwt_audit.py", ref_src)
        t.solve(f'test -n "{who}"\nmkdir -p /app/out\n'
                f'python3 /solution/jwt_audit.py audit "{who}" < /app/logs/gateway.log > {out}')
        t.say(f"Report format: {self.vfmt(t)}.")
        t.expect_output(out, s.ns["audit"](text, s.secret), "the report")

    def v_program(self, t: TaskBuilder) -> None:
        rng, var = t.rng, t.variant
        if t.level == 0:
            secret, old, src, ns, forge = self.vatomic(t, verify=False)
            now = 1767225600 + rng.randrange(0, 300) * 86400
            cases = []
            for _ in range(10):
                lines = self.token_lines(t, forge, now + rng.randrange(10 ** 6), rng.randint(2, 6))
                cases.append((lines, ns["report"](lines, secret)))
            who = t.deliver(secret, "the new signing secret" if old else "the signing secret")
            t.say("Write a JWT token tool. It reads HS256 JWTs on standard input, one per line as `<id> <token>`, "
                  f"and prints {self.atomic_ask(t, old)}.")
            t.expect_program("Hard-code the secret.", cases, {"Python": src})
            t.solve(f'sed -i "s/@@SECRET@@/{who}/" /app/solution.py')
            return
        s, ref_src = self.vsetup(t, classify=False)
        cases = []
        for _ in range(10):
            text = self.vlog(t, s, rng.randrange(5, 40), s.now0 + rng.randrange(10 ** 6))
            cases.append((text, s.ns["audit"](text, s.secret)))
        who = t.deliver(s.secret, "the new signing secret" if var == "rotate" else "the signing secret")
        t.say("We need a reusable tool for our API gateway's logs. It reads one log on standard input (lines "
              "`<UTC time> req=<id> route=<path> decision=allow|deny token=<JWT or ->`, as in the examples). "
              f"{self.vask(t, s)} Output {self.vfmt(t)}; nothing else.")
        t.expect_program("Hard-code the secrets and the other constants.", cases, {"Python": ref_src})
        t.solve(f'sed -i "s/@@SECRET@@/{who}/" /app/solution.py')

    def v_corpus(self, t: TaskBuilder) -> None:
        rng, var = t.rng, t.variant
        if t.level == 0:
            secret, old, src, ns, forge = self.vatomic(t, verify=True)
            now = 1767225600 + rng.randrange(0, 300) * 86400
            if var == "rotate":
                fresh = _Forge(rng, secret, None, None, 0, 0)
                clean = [f.token(now, None, "valid") + "\n" for f in (forge, fresh) for _ in range(10)]
                bad = [f.token(now, None, "signature") + "\n" for f in (forge, fresh) for _ in range(10)]
                ask = (f"We are rotating an HS256 signing secret: the old one is `{old}`, the new one is given above. "
                       "Write a JWT signature check for the changeover. It receives one token `<header>.<payload>."
                       "<signature>` on standard input (ignore surrounding whitespace) and accepts it if its signature "
                       "is right under either secret: the signature is the HMAC-SHA256 of the ASCII text "
                       "`<header>.<payload>`, keyed with the secret (its ASCII bytes), as unpadded base64url.")
            else:
                clean = [f"{d} {forge.token(now, None, k)}\n" for d, k in (("allow", "valid"), ("deny", "signature"))
                         for _ in range(10)]
                bad = [f"{d} {forge.token(now, None, k)}\n" for d, k in (("allow", "signature"), ("deny", "valid"))
                       for _ in range(10)]
                ask = ("Write a checker for our gateway's decisions. It receives one line `<allow|deny> <token>` on "
                       "standard input (an HS256 JWT `<header>.<payload>.<signature>`; ignore surrounding whitespace) "
                       "and rejects it when the decision contradicts the signature: `allow` for a token whose "
                       f"signature is wrong, or `deny` for one whose signature is right; {SIGN_TXT}.")
            assert all(ns["accept"](x.strip(), secret) for x in clean)
            assert not any(ns["accept"](x.strip(), secret) for x in bad)
            who = t.deliver(secret, "the new signing secret" if old else "the signing secret")
            t.say(ask)
            t.expect_classifier("Hard-code the secret.", clean, bad, {"Python": src})
            t.solve(f'sed -i "s/@@SECRET@@/{who}/" /app/solution.py')
            return
        k = t.knobs
        s, ref_src = self.vsetup(t, classify=True)
        kinds = [x for x in k.kinds if x not in ("missing", "scope", "leeway_ok")]
        if var == "rotate":
            fresh = _Forge(rng, s.secret, s.issuer, s.audience, k.leeway, t.level)
            clean = [f.token(s.now0, None, "leeway_ok" if k.leeway and i % 5 == 0 else "valid") + "\n"
                     for f in (s.forge, fresh) for i in range(20)]
            bad = [f.token(s.now0, None, kinds[i % len(kinds)]) + "\n" for f in (s.forge, fresh) for i in range(24)]
            cut = [c for c in s.checks if not c.startswith("`scope`")]
            ask = (f"We are rotating our services' HS256 JWT secret: the old one is `{s.old}`, the new one is given "
                   "above. For the changeover we need a strict token validator. It receives one token on standard "
                   "input (ignore surrounding whitespace) and accepts it if it passes every check below with the new "
                   "secret, or every check with the old one, evaluated at the fixed time "
                   f"{s.now0} (seconds since the epoch; use this constant, not the clock); otherwise it rejects it. "
                   "Checks: " + "; ".join(f"({i}) {c}" for i, c in enumerate(cut, 1)).replace("the request time",
                                                                                               "that time") + ".")
        else:
            clean, bad = [], []
            for _ in range(30):
                for line in self.log(t, s, 40, s.now0 + rng.randrange(10 ** 6), allow=0.5).splitlines():
                    (clean if s.ns["accept"](line, s.secret) else bad).append(line + "\n")
                if len(clean) >= 40 and len(bad) >= 24:
                    break
            clean, bad = clean[:40], bad[:24]
            ask = ("We need a checker for our API gateway's decisions. It receives one log line on standard input, "
                   "`<UTC time> req=<id> route=<path> decision=allow|deny token=<JWT or ->`, and rejects it (exits "
                   "non-zero) when the gateway denied a token that passes every check below, judged at that line's "
                   f"own time; every other line is accepted. Tokens are HS256 JWTs signed with the secret given "
                   f"above. Checks: {s.check_txt}.{s.route_txt}")
        for item in clean:
            assert s.ns["accept"](item, s.secret), item
        for item in bad:
            assert not s.ns["accept"](item, s.secret), item
        who = t.deliver(s.secret, "the new signing secret" if var == "rotate" else "the signing secret")
        t.say(ask)
        t.expect_classifier("Hard-code the secrets and the other constants.", clean, bad, {"Python": ref_src})
        t.solve(f'sed -i "s/@@SECRET@@/{who}/" /app/solution.py')
