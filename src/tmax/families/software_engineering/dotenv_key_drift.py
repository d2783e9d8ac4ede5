"""Has a service's deployed environment drifted from its `.env.example`? Each service keeps the
example (the keys it declares) and the dotenv files it loads in a folder named by a hash of the service
name (the delivered value), beside other services. Variants: the declared keys no loaded file sets,
the effective value of every declared key, or the assignments a later one overrides (dead lines).
Traps by level: comments and commented-out assignments, `export`, spaces around `=`, quotes and inline
comments, then layered `.env.production` overrides, optional keys and `${VAR}` references, and finally
a `.local` layer, another environment's file that is never loaded and literal single-quoted values."""

from __future__ import annotations

from dataclasses import dataclass

from tmax.families.base import Family, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.software_engineering._common import finish_keyed, report_on_tree, ship_keyed

REFERENCE = r'''
import os
import re
import sys

MODE = @MODE@  # "missing", "effective" or "shadowed"
LAYERS = @LAYERS@  # the dotenv files the service loads, in order: a later assignment wins
REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
OPTIONAL = re.compile(r"^#\s*([A-Z][A-Z0-9_]*\s*=.*)$")


def parse(s):
    """One assignment's text (no comment mark) -> (key, value, expands) or None."""
    s = s.strip()
    if s.startswith("export "):
        s = s[7:].lstrip()
    key, sep, val = s.partition("=")
    if not sep or not key.strip():
        return None
    val = val.strip()
    if val[:1] in ("'", '"') and val.find(val[0], 1) > 0:
        return key.strip(), val[1:val.find(val[0], 1)], val[0] == '"'  # single quotes: literal
    return key.strip(), re.split(r"\s#", val, maxsplit=1)[0].rstrip(), True


def assignments(text):
    """(line number, key, value, expands) of every assignment line."""
    out = []
    for no, line in enumerate(text.splitlines(), 1):
        if line.strip() and not line.strip().startswith("#"):
            got = parse(line)
            if got:
                out.append((no, *got))
    return out


def declared(text):
    """The example's keys: key -> (value, expands, required); `# KEY=value` declares an optional key."""
    out = {}
    for line in text.splitlines():
        m = OPTIONAL.match(line.strip())
        got = parse(m.group(1)) if m else (parse(line) if not line.strip().startswith("#") else None)
        if got:
            out[got[0]] = (got[1], got[2], m is None)
    return out


def report(root):
    def read(name):
        with open(os.path.join(root, name), encoding="utf-8") as f:
            return f.read()

    decl = declared(read(".env.example"))
    layers = [(name, assignments(read(name))) for name in LAYERS if os.path.exists(os.path.join(root, name))]
    value = {k: (v, e) for k, (v, e, req) in decl.items() if req}
    last = {}
    for li, (name, items) in enumerate(layers):
        for no, key, v, e in items:
            value[key] = (v, e)
            last[key] = (li, no)
    memo = {}

    def expand(key):
        if key not in memo:
            memo[key] = ""  # references never form cycles; this only guards against one
            v, e = value.get(key, ("", False))
            memo[key] = REF.sub(lambda m: expand(m.group(1)), v) if e else v
        return memo[key]

    if MODE == "missing":
        lines = sorted(k for k, (_, _, req) in decl.items() if req and k not in last)
    elif MODE == "effective":
        lines = [f"{k} {expand(k)}" for k in sorted(decl) if k in value]
    else:
        lines = [f"{name}:{no} {key}" for li, (name, items) in enumerate(layers)
                 for no, key, _, _ in items if last[key] != (li, no)]
    return "".join(line + "\n" for line in lines)


if __name__ == "__main__":
    sys.stdout.write(report(sys.argv[1]))
'''

KEYS = ("DB_HOST", "DB_PORT", "DB_NAME", "DB_USER", "DB_PASSWORD", "REDIS_HOST", "REDIS_PORT", "LOG_LEVEL",
        "LOG_FORMAT", "SENTRY_DSN", "API_BASE_URL", "API_TIMEOUT_MS", "HTTP_PORT", "WORKERS", "QUEUE_NAME",
        "SMTP_HOST", "SMTP_PORT", "MAIL_FROM", "S3_BUCKET", "S3_REGION", "CACHE_TTL", "FEATURE_SEARCH",
        "FEATURE_BILLING", "JWT_ISSUER", "JWT_TTL", "RATE_LIMIT", "CORS_ORIGINS", "TRACE_SAMPLE_RATE",
        "OTEL_ENDPOINT", "PAYMENT_URL", "LOCALE", "MAX_UPLOAD_MB", "SESSION_SECRET", "ADMIN_EMAIL")
SPECIAL = {"LOG_FORMAT": ("${level} ${msg} #", "'"), "DB_PASSWORD": ("pa#ss=w", '"')}  # values, quote
WORDS = ("orders", "billing", "search", "eu-west-1", "us-east-2", "main", "internal", "blue", "green", "edge")


def _value(rng, key):
    if key == "DATABASE_URL":  # built from other keys (declared from level 3 on)
        return "postgres://${DB_HOST}:${DB_PORT}/" + rng.choice(WORDS)
    if key.endswith("_PORT"):
        return str(rng.choice([5432, 6379, 8080, 8443, 25, 587, 9000]) + rng.randrange(0, 3))
    if key.endswith("_HOST"):
        return f"{rng.choice(WORDS)}-{rng.randrange(1, 9)}.svc.local"
    if key.endswith(("_URL", "_DSN", "_ENDPOINT")):
        return f"https://{rng.choice(WORDS)}.example.test/{rng.randrange(1, 99)}"
    if key.endswith(("_EMAIL", "_ISSUER")):
        return f"{rng.choice(WORDS)}@corp.test"
    if key.endswith(("_RATE", "_SECRET", "_PASSWORD")):
        return f"0.{rng.randrange(1, 99)}" if key.endswith("_RATE") else f"{rng.getrandbits(48):012x}"
    if key.startswith("FEATURE_"):
        return rng.choice(["true", "false"])
    if key.startswith("LOG_"):
        return rng.choice(["debug", "info", "warn", "json", "text"])
    if key.endswith(("_MS", "_TTL", "WORKERS", "_LIMIT", "_MB")):
        return str(rng.randrange(2, 900))
    return f"{rng.choice(WORDS)}-{rng.randrange(10, 99)}"


def _render(rng, key, val, traps, note=False, quote=""):
    """An assignment line as people write them: the rules in the instruction say how each one reads."""
    pre = "export " if traps >= 2 and rng.random() < 0.2 else ""
    eq = rng.choice([" = ", "= ", " ="]) if traps >= 2 and rng.random() < 0.2 else "="
    if quote:
        val = quote + val + quote
    elif " " in val or "#" in val or (traps >= 2 and rng.random() < 0.25 and "'" not in val):
        q = '"' if "${" in val or "'" in val or rng.random() < 0.6 else "'"
        val = q + val + q
    tail = f"  # {rng.choice(['ops', 'temp', 'see runbook', 'ticket 4411'])}" if note else ""
    return f"{pre}{key}{eq}{val}{tail}"


@dataclass(frozen=True)
class Knobs:
    keys: int  # keys the example declares
    layers: int  # dotenv files loaded: .env, .env.production, .env.production.local
    traps: int  # 1: comments; 2: export, spacing, quotes, inline comments; 3: optional, ${}; 4: staging, literals
    decoys: int  # other services


@register
class DotenvKeyDrift(Family):
    name = "dotenv_key_drift"
    domain = "software_engineering"
    skill_types = ("Configuration Management",)
    primitive_skills = ("baseline comparison", "regular expressions", "sorting with tie-breaks",
                        "text report formatting")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("missing", "effective", "shadowed")
    levels = {0: Knobs(keys=6, layers=1, traps=0, decoys=2),
              1: Knobs(keys=10, layers=1, traps=1, decoys=3),
              2: Knobs(keys=14, layers=1, traps=2, decoys=3),
              3: Knobs(keys=18, layers=2, traps=3, decoys=3),
              4: Knobs(keys=24, layers=3, traps=4, decoys=3)}

    def _service(self, t: TaskBuilder) -> dict[str, str]:
        """One service's folder: file name -> text."""
        k, rng = t.knobs, t.rng
        forced = ["DB_HOST", "DB_PORT"] if k.traps >= 3 else []  # the hosts and ports references point at
        forced += list(SPECIAL) if k.traps >= 4 else []
        keys = forced + [x for x in rng.sample(KEYS, k.keys) if x not in forced][:k.keys - len(forced)]
        optional = set(rng.sample(keys[len(forced):], max(1, k.keys // 6))) if k.traps >= 3 else set()
        unset = rng.sample([x for x in keys[len(forced):] if x not in optional], max(1, k.keys // 5))
        vals = {x: _value(rng, x) for x in keys}
        if k.traps >= 3:
            keys.append("DATABASE_URL")
            vals["DATABASE_URL"] = _value(rng, "DATABASE_URL")
        if "MAIL_FROM" in keys and k.traps >= 2:
            vals["MAIL_FROM"] = f"Ops Team <ops@{rng.choice(WORDS)}.test>"
        ex = ["# Copy to .env and fill in"] if k.traps >= 1 else []
        for x in keys:
            line = _render(rng, x, vals[x], min(k.traps, 1))
            ex.append(f"# {line}" if x in optional else line)
        files = {".env.example": "\n".join(ex) + "\n"}
        names = [".env", ".env.production", ".env.production.local"][:k.layers]
        extra = [x for x in KEYS if x not in keys]
        for li, name in enumerate(names):
            out = ["# deployed by ansible"] if k.traps >= 1 else []
            pool = [x for x in keys if x not in unset and (li == 0 or rng.random() < 0.3)]
            pool += rng.sample(extra, min(len(extra), 1 + (li == 0)))  # keys the example does not declare
            rng.shuffle(pool)
            for x in pool:
                v = (vals.get(x) if li == 0 and rng.random() < 0.5 else None) or _value(rng, x)
                quote = ""
                if k.traps >= 4 and li == 0 and x in SPECIAL:  # quoted: '#', '=' and '${' are data
                    v, quote = SPECIAL[x][0] + str(rng.randrange(10, 99)), SPECIAL[x][1]
                out.append(_render(rng, x, v, k.traps, k.traps >= 2 and rng.random() < 0.15, quote))
            dupes = rng.sample(pool, min(len(pool), 1 + (li == 0)))  # reassigned further down: the first is dead
            for x in dupes:
                out.insert(rng.randrange(len(out) + 1), _render(rng, x, _value(rng, x), k.traps))
            if k.traps >= 1:
                out.insert(rng.randrange(len(out) + 1), f"# {unset[0]}={_value(rng, unset[0])}")
                out.insert(rng.randrange(len(out) + 1), "")
            files[name] = "\n".join(out) + "\n"
        if k.traps >= 4:  # another environment's file: never loaded here
            files[".env.staging"] = "\n".join(_render(rng, x, _value(rng, x), k.traps) for x in unset) + "\n"
        return files

    def output_case(self, t: TaskBuilder) -> None:
        k, v = t.knobs, t.variant
        layers = (".env", ".env.production", ".env.production.local")[:k.layers]
        src = fill(REFERENCE, MODE=repr(v), LAYERS=layers)
        report = run_python(src)["report"]
        services = [self._service(t) for _ in range(1 + k.decoys)]
        name = ship_keyed(t, "services", services)
        truth = report_on_tree(report, services[0])
        t.say("Every service's configuration is kept under `/app/services/<KEY>/`, where KEY is the first 16 hex "
              "digits of the SHA-256 of the service name (`printf %s <name> | sha256sum`): `.env.example` lists "
              "the keys the service declares (with example values), the other `.env*` files are what is "
              "deployed.")
        t.deliver(name, "the service name")
        order = " then ".join(f"`{x}`" for x in layers)
        rules = [f"The service loads {order}" + (" (other `.env*` files belong to other environments and are "
                                                  "never loaded)" if k.traps >= 4 else "")
                 + "; a later assignment of a key, in the same file or a later one, wins. A line is `KEY=value`"
                 + (". Blank lines and lines starting with `#` are comments: a commented-out assignment sets "
                    "nothing." if k.traps >= 1 else ".")]
        if k.traps >= 2:
            rules.append("A line may start with `export `, and spaces around `=` do not count. A value in double "
                         "or single quotes is what lies between them (`#` and `=` included); otherwise it ends at a "
                         "` #` comment and surrounding spaces are dropped.")
        if k.traps >= 3:
            rules.append("In `.env.example`, a commented-out `# KEY=value` declares an optional key (not required, "
                         "and without a default). `${NAME}` in an unquoted or double-quoted value is replaced by "
                         "NAME's effective value (empty if it has none)"
                         + ("; single-quoted values are taken literally." if k.traps >= 4 else "."))
        ask = {"missing": "List the keys `.env.example` declares as required (an uncommented line) that no loaded "
                          "file sets, one per line, sorted in byte order.",
               "effective": "For every key `.env.example` declares, the effective value: the winning loaded "
                            "assignment, else the example's value for a required key"
                            + (" (an optional key nobody sets has none: leave it out)" if k.traps >= 3 else "")
                            + ". One line per key: `<KEY> <value>` (a single space), sorted by key in byte order.",
               "shadowed": "List the dead assignments, those a later assignment of the same key overrides, as "
                           "`<file>:<line> <KEY>` (file name as in the folder, the first line is 1), in load "
                           "order: by file in the order loaded, then by line."}[v]
        t.say(" ".join(rules + [ask]))
        finish_keyed(t, "services", "envdrift.py", src, "/app/out/env_report.txt", truth, "the report")
