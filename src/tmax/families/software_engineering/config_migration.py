"""Migrate a legacy INI service config to the v2 schema described in a migration guide: renamed keys,
unit changes, boolean spellings, deprecated keys, defaults, `${...}` interpolation and (at the top
level) an `extends` chain of files. Program variants: the migrator itself (fuzzed), or a v2 config
linter that must reject every invalid config and keep every valid one (adversarial corpus). The tenant ID
is the delivered value; under partial credit every line of the v2 config is prefixed with it. Level 0 asks only
for the three lines the `[server]` section and the tenant give (or a linter for the tenant line). Variants: the
migration (migrate), the migration run backwards from an exported v2 config to a canonical v1 INI (rollback; its
gate keeps v2 configs that roll back losslessly), or an audit of where every v1 setting goes and which defaults
fill in (audit; its gate keeps v1 configs stamped for our tenant without deprecated keys)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.unseen import distinct, unseen

REFERENCE = r'''
import os
import re
import sys

TENANT = "@TENANT@"
MAP = {  # v1 key -> (v2 key, conversion)
    "server.host": ("http.bind_address", "str"), "server.port": ("http.port", "int"),
    "server.timeout": ("http.timeout_ms", "s_ms"), "server.ssl": ("http.tls", "bool"),
    "db.url": ("database.url", "str"), "db.user": ("database.username", "str"),
    "db.pool": ("database.pool_size", "int"), "db.timeout": ("database.timeout_ms", "s_ms"),
    "cache.enabled": ("cache.enabled", "bool"), "cache.size_mb": ("cache.max_bytes", "mb_bytes"),
    "cache.ttl_min": ("cache.ttl_s", "min_s"), "log.level": ("logging.level", "level"),
    "log.json": ("logging.format", "format"), "jobs.every_min": ("jobs.interval_s", "min_s"),
    "jobs.peers": ("jobs.peers", "list"),
}
DEFAULTS = {"http.timeout_ms": "30000", "http.tls": "false", "database.pool_size": "10", "cache.enabled": "false",
            "logging.level": "info", "logging.format": "text"}
TRUE, FALSE = ("yes", "on", "true", "1"), ("no", "off", "false", "0")


def parse(text, into=None):
    d = {} if into is None else into
    section = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in ";#":
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1].strip().lower()
            continue
        key, _, value = line.partition("=")
        d[section + "." + key.strip().lower()] = value.strip()
    return d


def boolean(v):
    v = v.lower()
    if v in TRUE:
        return True
    if v in FALSE:
        return False
    raise ValueError(v)


def convert(kind, v):
    if kind == "str":
        return v
    if kind == "int":
        return str(int(v))
    if kind == "s_ms":
        return str(int(v) * 1000)
    if kind == "min_s":
        return str(int(v) * 60)
    if kind == "mb_bytes":
        return str(int(v) * 1048576)
    if kind == "bool":
        return "true" if boolean(v) else "false"
    if kind == "format":
        return "json" if boolean(v) else "text"
    if kind == "level":
        v = v.lower()
        return "warn" if v == "warning" else v
    if kind == "list":
        return ",".join(p.strip() for p in v.split(",") if p.strip())
    raise ValueError(kind)


def migrate(v1):
    ref = re.compile(r"\$\{([a-z_]+\.[a-z_]+)\}")
    v1 = {k: ref.sub(lambda m: v1[m.group(1)], v) for k, v in v1.items()}
    out = dict(DEFAULTS)
    for k, v in v1.items():
        if k in MAP:
            name, kind = MAP[k]
            out[name] = convert(kind, v)
    out["deployment.tenant"] = TENANT
    return "".join(f"{k}={out[k]}\n" for k in sorted(out))


def load_chain(path):
    """A file and the files it extends ([meta] extends = <file>, relative to it), base first."""
    texts = []
    while path:
        text = open(path).read()
        texts.insert(0, text)
        ext = parse(text).get("meta.extends")
        path = os.path.join(os.path.dirname(path), ext) if ext else None
    d = {}
    for text in texts:
        parse(text, d)
    d.pop("meta.extends", None)
    return d


if __name__ == "__main__":
    if len(sys.argv) > 2:
        TENANT = sys.argv[1]
        sys.stdout.write(migrate(load_chain(sys.argv[2])))
    else:
        d = parse(sys.stdin.read())
        d.pop("meta.extends", None)
        sys.stdout.write(migrate(d))
'''

# The rollback and audit variants' program: the migrator's parsing and tables, then their own report and gate.
VARIANT_EXTRA = r'''

VARIANT = "@VARIANT@"  # rollback: v2 -> canonical v1 INI; audit: where every v1 setting goes
MODE = "@MODE@"  # report, or guard: exit 0 for a config the variant's gate keeps
SECTIONS = ("server", "db", "cache", "log", "jobs")
DIVISOR = {"s_ms": 1000, "min_s": 60, "mb_bytes": 1048576}


def parse_v2(text):
    d = {}
    for line in text.split("\n"):
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            d[key] = value
    return d


def unconvert(kind, v):
    if kind in DIVISOR:
        return str(int(v) // DIVISOR[kind])
    if kind == "format":
        return "true" if v == "json" else "false"
    if kind == "level":
        return "warning" if v == "warn" else v
    return v


def rollback(text, tenant=None):
    """The v1 INI a v2 config came from: table order, values equal to a v2 default left out."""
    d = parse_v2(text)
    out = [f"; tenant: {tenant or TENANT}"]
    for sec in SECTIONS:
        lines = [f"{k1.split('.', 1)[1]} = {unconvert(kind, d[k2])}" for k1, (k2, kind) in MAP.items()
                 if k1.startswith(sec + ".") and k2 in d and d[k2] != DEFAULTS.get(k2)]
        if lines:
            out += ["", f"[{sec}]"] + lines
    return "\n".join(out) + "\n"


def audit(v1, tenant=None):
    """Where every v1 setting goes, then the v2 defaults nothing sets."""
    out = [f"tenant {tenant or TENANT}"]
    out += [f"{k} -> {MAP[k][0]}" if k in MAP else f"{k} dropped" for k in sorted(v1)]
    got = [MAP[k][0] for k in v1 if k in MAP]
    out += [f"{k} default" for k in sorted(DEFAULTS) if k not in got]
    return "\n".join(out) + "\n"


def keep(text):
    if VARIANT == "rollback":  # our tenant, known keys only, every unit value converts back exactly
        d = parse_v2(text)
        if d.get("deployment.tenant") != TENANT:
            return False
        back = {k2: kind for k2, kind in MAP.values()}
        for key, v in d.items():
            if key != "deployment.tenant" and key not in back:
                return False
            if back.get(key) in DIVISOR and (not v.isdigit() or int(v) % DIVISOR[back[key]]):
                return False
        return True
    # audit: stamped for our tenant on the first line, no deprecated key, the required v1 keys set
    if text.split("\n")[0] != f"; tenant: {TENANT}":
        return False
    d = parse(text)
    return all(k in MAP for k in d) and all(k in d for k in ("server.host", "server.port", "db.url"))


if __name__ == "__main__":
    if MODE == "guard":
        sys.exit(0 if keep(sys.stdin.read()) else 1)
    if len(sys.argv) > 2:
        TENANT = sys.argv[1]
        if VARIANT == "rollback":
            sys.stdout.write(rollback(open(sys.argv[2]).read()))
        else:
            sys.stdout.write(audit(load_chain(sys.argv[2])))
    elif VARIANT == "rollback":
        sys.stdout.write(rollback(sys.stdin.read()))
    else:
        d = parse(sys.stdin.read())
        d.pop("meta.extends", None)
        sys.stdout.write(audit(d))
'''
MAIN = '\nif __name__ == "__main__":'


def variant_program(tenant: str, variant: str, mode: str = "report") -> str:
    """The migrator without its main block, then the variant's functions and main."""
    return fill(REFERENCE.split(MAIN)[0] + VARIANT_EXTRA, TENANT=tenant, VARIANT=variant, MODE=mode)


LINTER = r'''
import re
import sys

TENANT = "@TENANT@"
INT = {"http.port": (1, 65535), "http.timeout_ms": (0, None), "database.pool_size": (1, 512),
       "database.timeout_ms": (0, None), "cache.max_bytes": (0, None), "cache.ttl_s": (0, None),
       "jobs.interval_s": (1, None)}
ENUM = {"http.tls": ("true", "false"), "cache.enabled": ("true", "false"),
        "logging.level": ("debug", "info", "warn", "error"), "logging.format": ("text", "json")}
STR = ("http.bind_address", "database.url", "database.username")
REQUIRED = ("http.bind_address", "http.port", "database.url", "deployment.tenant")


def valid(text):
    seen = {}
    for line in text.split("\n"):
        if line == "" or line.startswith("#"):
            continue
        m = re.fullmatch(r"([a-z_]+\.[a-z_]+)=(.*)", line)
        if not m or m.group(1) in seen:
            return False
        seen[m.group(1)] = m.group(2)
    for key, v in seen.items():
        if key in INT:
            lo, hi = INT[key]
            if not re.fullmatch(r"0|[1-9][0-9]*", v) or int(v) < lo or (hi is not None and int(v) > hi):
                return False
        elif key in ENUM:
            if v not in ENUM[key]:
                return False
        elif key in STR:
            if v == "" or v != v.strip():
                return False
        elif key == "jobs.peers":
            if not re.fullmatch(r"[a-z0-9-]+(,[a-z0-9-]+)*", v):
                return False
        elif key == "deployment.tenant":
            if v != TENANT:
                return False
        else:
            return False
    return all(k in seen for k in REQUIRED)


if __name__ == "__main__":
    sys.exit(0 if valid(sys.stdin.read()) else 1)
'''

ATOMIC = r'''
import sys

TENANT = "@TENANT@"


def migrate(text):
    """The [server] section of a v1 config as its v2 lines, with our tenant."""
    d, section = {}, ""
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("["):
            section = line.strip("[]")
        elif "=" in line and section == "server":
            key, _, value = line.partition("=")
            d[key.strip()] = value.strip()
    return f"deployment.tenant={TENANT}\nhttp.bind_address={d['host']}\nhttp.port={d['port']}\n"


if __name__ == "__main__":
    sys.stdout.write(migrate(sys.stdin.read()))
'''

ATOMIC_LINTER = r'''
import sys

TENANT = "@TENANT@"

if __name__ == "__main__":
    sys.exit(0 if f"deployment.tenant={TENANT}" in sys.stdin.read().split("\n") else 1)
'''

GUIDE = """# Migrating service configs from v1 (INI) to v2

v1 configs are INI files: `[section]` headers, `key = value` lines (spaces around `=` and around the value
are not significant), comment lines start with `;` or `#`. Section and key names are case-insensitive in
v1. If a key appears twice in a section, the later line wins.@EXTRA@

v2 configs are flat text: one `key=value` line per key (no spaces around `=`), keys sorted in byte order.

## Key mapping (v1 `section.key` -> v2 key)

| v1 | v2 | conversion |
|----|----|------------|
| server.host | http.bind_address | unchanged |
| server.port | http.port | integer |
| server.timeout | http.timeout_ms | seconds -> milliseconds |
| server.ssl | http.tls | boolean |
| db.url | database.url | unchanged |
| db.user | database.username | unchanged |
| db.pool | database.pool_size | integer |
| db.timeout | database.timeout_ms | seconds -> milliseconds |
| cache.enabled | cache.enabled | boolean |
| cache.size_mb | cache.max_bytes | MiB -> bytes (x 1048576) |
| cache.ttl_min | cache.ttl_s | minutes -> seconds |
| log.level | logging.level | lower-cased; `warning` becomes `warn` |
| log.json | logging.format | boolean: true -> `json`, false -> `text` |
| jobs.every_min | jobs.interval_s | minutes -> seconds |
| jobs.peers | jobs.peers | comma-separated list: items trimmed, empty items dropped, order kept, joined with `,` |

v1 booleans may be spelled `yes`/`no`, `on`/`off`, `true`/`false` or `1`/`0` (any case); v2 booleans are
`true`/`false`. Integers are written in plain decimal. Any v1 key not in the table is deprecated and dropped.

## New in v2

* `deployment.tenant` (required): the tenant ID of the deployment. It did not exist in v1.
* Defaults: when the v1 config does not set them, v2 gets `http.timeout_ms=30000`, `http.tls=false`,
  `database.pool_size=10`, `cache.enabled=false`, `logging.level=info`, `logging.format=text`.

## v2 schema (what the deploy tool accepts)

* Every line is `key=value` (no spaces around `=`, key is `section.name` in lower case letters and `_`),
  or a comment line starting with `#`, or empty. A key may not appear twice.
* Required keys: `http.bind_address`, `http.port`, `database.url`, `deployment.tenant`. No other keys than
  those in the mapping table's v2 column plus `deployment.tenant`.
* Integers: plain decimal without sign or leading zeros. `http.port` 1-65535, `database.pool_size` 1-512,
  `jobs.interval_s` at least 1, every other integer at least 0.
* Booleans (`http.tls`, `cache.enabled`): `true` or `false`. `logging.level`: `debug`, `info`, `warn` or
  `error`; `logging.format`: `text` or `json`.
* Strings (`http.bind_address`, `database.url`, `database.username`): non-empty, no leading or trailing spaces.
* `jobs.peers`: one or more names of lower-case letters, digits and `-`, separated by single commas.
* `deployment.tenant`: exactly our tenant ID.
"""

HOSTS = ["0.0.0.0", "127.0.0.1", "10.0.4.17", "api.internal", "::"]
PEERS = ["node-a", "node-b", "worker1", "worker2", "edge-eu", "edge-us", "batch", "replica-3"]
DEPRECATED = ["server.workers", "db.driver", "log.color", "cache.backend", "jobs.legacy_mode"]


def spell_bool(rng, b: bool, fancy: bool) -> str:
    if not fancy:
        return "true" if b else "false"
    return rng.choice(["yes", "on", "true", "1", "Yes", "TRUE", "On"] if b else
                      ["no", "off", "false", "0", "No", "FALSE", "Off"])


def v1_values(rng, k) -> dict[str, str]:
    """A legacy config as (section.key -> raw value), with a random subset of the optional keys."""
    fancy = k.fancy
    d = {"server.host": rng.choice(HOSTS), "server.port": str(rng.choice([80, 8080, 8443, 9000, 3000, 5000])
                                                              + rng.randrange(0, 20)),
         "db.url": f"postgres://db{rng.randrange(1, 9)}.internal:5432/app{rng.randrange(1, 99)}"}
    opt = {"server.timeout": str(rng.randint(1, 120)), "server.ssl": spell_bool(rng, rng.random() < 0.5, fancy),
           "db.user": rng.choice(["app", "svc_reader", "billing", "etl"]), "db.pool": str(rng.randint(2, 200)),
           "db.timeout": str(rng.randint(1, 30)), "cache.enabled": spell_bool(rng, rng.random() < 0.5, fancy),
           "cache.size_mb": str(rng.choice([16, 64, 128, 256, 512, 1024])), "cache.ttl_min": str(rng.randint(1, 90)),
           "log.level": rng.choice(["debug", "info", "warning", "error"] + (["WARNING", "Info"] if fancy else [])),
           "log.json": spell_bool(rng, rng.random() < 0.5, fancy), "jobs.every_min": str(rng.randint(1, 240)),
           "jobs.peers": (" , " if fancy else ",").join(rng.sample(PEERS, rng.randint(1, 4)))
           + ("," if fancy and rng.random() < 0.4 else "")}
    for key in sorted(rng.sample(sorted(opt), rng.randint(k.opt // 2, k.opt))):
        d[key] = opt[key]
    if k.deprecated:
        for key in rng.sample(DEPRECATED, 2):
            d[key] = rng.choice(["4", "pg", "true", "redis", "legacy"])
    return d


def ini_text(rng, d: dict[str, str], k, alt: dict[str, str]) -> str:
    """Render (section.key -> value) as INI, with comments, case noise, duplicates and interpolation."""
    sections: dict[str, list[str]] = {}
    keys = sorted(d)
    rng.shuffle(keys)
    for key in keys:
        sec, name = key.split(".", 1)
        value = d[key]
        lines = sections.setdefault(sec, [])
        if k.dupes and rng.random() < 0.15:  # an earlier, overridden line
            lines.append(f"{name} = {alt.get(key, '1')}")
        if k.fancy and rng.random() < 0.2:
            name = name.upper()
        lines.append(f"{name}{rng.choice([' = ', '=', '  =  '])}{value}")
        if k.fancy and rng.random() < 0.2:
            lines.append(rng.choice(["; TODO remove after migration", "# owner: platform team"]))
    out = []
    for sec in sorted(sections, key=lambda s: rng.random()):
        out.append(f"[{sec.upper() if k.fancy and rng.random() < 0.2 else sec}]")
        out.extend(sections[sec])
        out.append("")
    return "\n".join(out)


def interpolate(rng, target: dict[str, str], merged: dict[str, str]) -> None:
    """Turn a value or two of ``target`` into `${section.key}` references to plain keys of ``merged``."""
    if "server.timeout" in merged and rng.random() < 0.7:
        target["db.timeout"] = "${server.timeout}"
    if "server.host" in merged and rng.random() < 0.5:
        target["db.url"] = f"postgres://${{server.host}}:5432/app{rng.randrange(1, 99)}"
    if "jobs.every_min" in merged and rng.random() < 0.5:
        target["cache.ttl_min"] = "${jobs.every_min}"


def random_ini(rng, k) -> str:
    d = v1_values(rng, k)
    alt = v1_values(rng, replace(k, opt=12, deprecated=True))
    if k.interp:
        interpolate(rng, d, dict(d))
    return ini_text(rng, d, k, alt)


def v2_valid(rng, tenant: str) -> list[str]:
    """Lines of a valid v2 config (random optional keys, boundary values)."""
    lines = [f"http.bind_address={rng.choice(HOSTS)}", f"http.port={rng.choice([1, 80, 8080, 65535, 443, 9000])}",
             f"database.url=postgres://db{rng.randrange(9)}.internal/app", f"deployment.tenant={tenant}"]
    opt = [f"http.timeout_ms={rng.choice([0, 1000, 30000])}", f"http.tls={rng.choice(['true', 'false'])}",
           f"database.username={rng.choice(['app', 'etl_2'])}", f"database.pool_size={rng.choice([1, 10, 512])}",
           f"database.timeout_ms={rng.choice([0, 5000])}", f"cache.enabled={rng.choice(['true', 'false'])}",
           f"cache.max_bytes={rng.choice([0, 1048576, 268435456])}", f"cache.ttl_s={rng.choice([0, 60, 3600])}",
           f"logging.level={rng.choice(['debug', 'info', 'warn', 'error'])}",
           f"logging.format={rng.choice(['text', 'json'])}", f"jobs.interval_s={rng.choice([1, 60, 86400])}",
           f"jobs.peers={','.join(rng.sample(PEERS, rng.randint(1, 3)))}"]
    lines += rng.sample(opt, rng.randint(0, len(opt)))
    lines.sort()
    if rng.random() < 0.3:
        lines.insert(rng.randrange(len(lines) + 1), "# generated by migrate-config")
    if rng.random() < 0.2:
        lines.insert(rng.randrange(1, len(lines) + 1), "")
    return lines


def atomic_ini(rng) -> str:
    """A small, clean v1 config: the [server] section and one database URL."""
    server = [f"host = {rng.choice(HOSTS)}", f"port = {rng.choice([80, 8080, 8443, 9000]) + rng.randrange(20)}"]
    rng.shuffle(server)
    return "\n".join(["[server]", *server, "", "[db]",
                      f"url = postgres://db{rng.randrange(1, 9)}.internal:5432/app{rng.randrange(1, 99)}", ""])


def v2_broken(rng, tenant: str, other_tenant: str) -> str:
    lines = [x for x in v2_valid(rng, tenant) if x and not x.startswith("#")]
    keys = [x.split("=", 1)[0] for x in lines]
    kind = rng.choice(["port", "int", "bool", "enum", "unknown", "dupe", "missing", "tenant", "spaces", "peers",
                       "v1key", "empty"])
    def setv(key, value):
        if key in keys:
            lines[keys.index(key)] = f"{key}={value}"
        else:
            lines.append(f"{key}={value}")
    if kind == "port":
        setv("http.port", rng.choice(["0", "65536", "080", "+80", "80a", "-1", "8080.0", ""]))
    elif kind == "int":
        key, bad = rng.choice([("database.pool_size", "0"), ("database.pool_size", "513"),
                               ("jobs.interval_s", "0"), ("cache.ttl_s", "-5"), ("http.timeout_ms", "30s"),
                               ("cache.max_bytes", "1e6"), ("database.timeout_ms", "007")])
        setv(key, bad)
    elif kind == "bool":
        setv(rng.choice(["http.tls", "cache.enabled"]), rng.choice(["yes", "True", "1", "off", "TRUE"]))
    elif kind == "enum":
        setv(rng.choice(["logging.level", "logging.format"]), rng.choice(["warning", "INFO", "trace", "JSON",
                                                                          "yaml"]))
    elif kind == "unknown":
        lines.append(rng.choice(["http.bindaddress=0.0.0.0", "cache.size_mb=64", "logging.colour=true",
                                 "database.driver=pg", "http.workers=4"]))
    elif kind == "dupe":
        i = rng.randrange(len(lines))
        lines.insert(i, lines[i])
    elif kind == "missing":
        req = rng.choice(["http.bind_address", "http.port", "database.url", "deployment.tenant"])
        lines = [x for x in lines if not x.startswith(req + "=")]
    elif kind == "tenant":
        setv("deployment.tenant", rng.choice([other_tenant, tenant.lower(), tenant + " ", tenant[:-1]]))
    elif kind == "spaces":
        i = rng.randrange(len(lines))
        key, _, v = lines[i].partition("=")
        lines[i] = rng.choice([f"{key} = {v}", f"{key} ={v}", f" {key}={v}"])
    elif kind == "peers":
        setv("jobs.peers", rng.choice(["node-a,,node-b", "node-a, node-b", "node-a,", "Node-A", ",batch"]))
    elif kind == "v1key":
        lines.append(rng.choice(["server.port=8080", "db.pool=5", "log.level=info"]))
    else:
        setv(rng.choice(["http.bind_address", "database.url", "database.username"]), rng.choice(["", " x"]))
    return "\n".join(sorted(lines) if rng.random() < 0.8 else lines) + "\n"


# The rollback and audit variants' sections of the migration guide.
ROLLBACK_GUIDE = """
## Rolling back to v1

A v2 config rolls back to the one canonical v1 INI file that migrates to it again:

* The first line is `; tenant: <tenant ID>`, the tenant the rolled-back file is for (not necessarily the one
  in the v2 config's `deployment.tenant`).
* Then the sections `[server]`, `[db]`, `[cache]`, `[log]` and `[jobs]`, in that order, each only if it has a
  key and each preceded by one empty line; in a section, one `key = value` line per key, in the mapping
  table's order.
* A v2 key goes back to its v1 key with the conversion undone: milliseconds -> seconds, bytes -> MiB,
  seconds -> minutes, `logging.format` `json`/`text` -> `log.json` `true`/`false`, `logging.level` `warn` ->
  `warning`; booleans stay `true`/`false`, every other value is copied.
* A v2 key whose value equals its v2 default is left out (migrating gives it back as the default), and so
  are `deployment.tenant` and keys the table does not have. Comment and empty lines are ignored.
"""
AUDIT_GUIDE = """
## Migration audit

Before a config is migrated we file its audit: first a line `tenant <tenant ID>`; then one line per v1
setting (its `section.key` in lower case, after inheritance where a file extends another; `meta.extends` is
not a setting), sorted in byte order: `<section.key> -> <v2 key>` for a key of the mapping table and
`<section.key> dropped` for any other key; then, sorted in byte order, one line `<v2 key> default` per
default of "New in v2" that no v1 setting maps to.
"""
STORE_LINES = ("Our config store keeps each tenant's files under the tenant ID: leave out the empty lines and "
               "prefix every other line with `<tenant ID>/`.")

# Level 0 of the rollback and audit variants: the [server] and [db] lines back to v1, or the dropped settings.
ATOMIC_VARIANT = r'''
import sys

TENANT = "@TENANT@"
VARIANT = "@VARIANT@"
MODE = "@MODE@"  # report, or guard: exit 0 for a config the variant's gate keeps
KEPT = ("server.host", "server.port", "db.url")


def settings(text):
    d, section = {}, ""
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("["):
            section = line.strip("[]")
        elif "=" in line and not line.startswith((";", "#")):
            key, _, value = line.partition("=")
            d[section + "." + key.strip()] = value.strip()
    return d


def report(text, tenant=None):
    tenant = tenant or TENANT
    if VARIANT == "rollback":
        d = dict(line.split("=", 1) for line in text.split("\n") if "=" in line)
        return (f"; tenant: {tenant}\n\n[server]\nhost = {d['http.bind_address']}\nport = {d['http.port']}\n\n"
                f"[db]\nurl = {d['database.url']}\n")
    return f"tenant {tenant}\n" + "".join(k + "\n" for k in sorted(settings(text)) if k not in KEPT)


def keep(text):
    lines = text.split("\n")
    if VARIANT == "rollback":  # our tenant, and a timeout in whole seconds
        d = dict(line.split("=", 1) for line in lines if "=" in line)
        ms = d.get("http.timeout_ms", "0")
        return d.get("deployment.tenant") == TENANT and ms.isdigit() and int(ms) % 1000 == 0
    return lines[0] == f"; tenant: {TENANT}"


if __name__ == "__main__":
    if MODE == "guard":
        sys.exit(0 if keep(sys.stdin.read()) else 1)
    sys.stdout.write(report(sys.stdin.read(), sys.argv[1] if len(sys.argv) > 1 else None))
'''


def exported_v2(rng, k, tenant: str) -> str:
    """A v2 config exported from a deployment of ``tenant``: migrated from a random v1 config, with comment
    and empty lines where the level has noise."""
    lines = run_python(fill(REFERENCE, TENANT=tenant))["migrate"](v1_values(rng, replace(k, deprecated=False)))
    lines = lines.splitlines()
    if k.fancy:
        lines.insert(0, f"# exported by config-store at {rng.randrange(1, 28):02d}.{rng.randrange(1, 13):02d}")
        lines.insert(rng.randrange(1, len(lines) + 1), rng.choice(["", "# checked by ops"]))
    return "\n".join(lines) + "\n"


def atomic_extra(rng) -> str:
    """Level 0's v1 config for the audit: the [server] and [db] basics plus one to three settings to drop."""
    text = atomic_ini(rng).rstrip("\n").split("\n")
    for key in rng.sample(DEPRECATED + ["db.pool_max", "server.threads"], rng.randint(1, 3)):
        sec, name = key.split(".")
        line = f"{name} = {rng.choice(['4', 'pg', 'true', 'redis'])}"
        if f"[{sec}]" in text:
            text.insert(text.index(f"[{sec}]") + 1, line)
        else:
            text += ["", f"[{sec}]", line]
    return "\n".join(text) + "\n"


@dataclass(frozen=True)
class Knobs:
    opt: int  # optional v1 keys set (at most; at least half of it)
    fancy: bool  # boolean spellings, key and section case noise, comments
    deprecated: bool  # deprecated keys to drop
    dupes: bool  # keys set twice in a section (the later wins)
    interp: bool  # ${section.key} references
    chain: int  # files the service config extends (0: none)
    corpus: int  # items per corpus (clean and malicious) for the linter


STORE = ("Our config store keeps each tenant's settings under the tenant ID: write every line of the v2 config "
         "prefixed with `<tenant ID>/` (for example `<tenant ID>/http.port=8080`).")


@register
class ConfigMigration(Family):
    name = "config_migration"
    domain = "software_engineering"
    skill_types = ("Configuration Management",)
    primitive_skills = ("INI parsing", "config schema migration", "unit conversion of settings", "schema validation",
                        "input validation", "regular expressions")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol", "fuzz_equivalence", "adversarial_corpus")
    programs = {"Python": REFERENCE}
    variants = ("migrate", "rollback", "audit")
    levels = {0: Knobs(opt=0, fancy=False, deprecated=False, dupes=False, interp=False, chain=0, corpus=12),
              1: Knobs(opt=5, fancy=False, deprecated=False, dupes=False, interp=False, chain=0, corpus=20),
              2: Knobs(opt=8, fancy=True, deprecated=True, dupes=False, interp=False, chain=0, corpus=30),
              3: Knobs(opt=10, fancy=True, deprecated=True, dupes=True, interp=True, chain=1, corpus=40),
              4: Knobs(opt=12, fancy=True, deprecated=True, dupes=True, interp=True, chain=2, corpus=60)}

    def guide(self, t: TaskBuilder) -> None:
        """The migration guide every case works from (inheritance and interpolation as the level has them)."""
        extra = ""
        if t.knobs.chain:
            extra += (" A file may start with `[meta]` / `extends = <file>` (a path relative to that file): it "
                      "then inherits every key of that file (which may itself extend another), and its own keys "
                      "override the inherited ones; `meta.extends` itself is not a setting.")
        if t.knobs.interp:
            extra += (" A value may reference another key as `${section.key}` (lower case); references are "
                      "replaced by that key's raw v1 value, after inheritance and before any conversion.")
        guide = fill(GUIDE, EXTRA=extra)
        if t.variant != "migrate":  # the v2 schema is the migrate variant's linter's business only
            guide = guide.split("## v2 schema")[0] + (ROLLBACK_GUIDE if t.variant == "rollback" else AUDIT_GUIDE)
        t.add_file("/app/docs/MIGRATION.md", guide)

    def tenant(self, t: TaskBuilder, *extra: str) -> str:
        """Our tenant ID: the delivered value, a code that nothing the agent sees spells."""
        return unseen(t, lambda: t.code(2), *extra)

    def corpus_case(self, t: TaskBuilder) -> None:
        self.part(t)
        if t.level == 0:
            return self.atomic_corpus(t)
        if t.variant != "migrate":
            return self.variant_corpus(t)
        k, rng = t.knobs, t.rng
        self.guide(t)
        tenant = self.tenant(t)
        other = distinct(lambda: t.code(2), 1, taken=[tenant])[0]
        var = t.deliver(tenant, "the tenant ID")
        valid = run_python(fill(LINTER, TENANT=tenant))["valid"]
        clean = ["\n".join(v2_valid(rng, tenant)) + "\n" for _ in range(k.corpus)]
        if not all(valid(c) for c in clean):
            raise FamilyError("config_migration: a valid v2 config was rejected by the linter")
        malicious: list[str] = []
        for _ in range(k.corpus * 50):
            if len(malicious) == k.corpus:
                break
            item = v2_broken(rng, tenant, other)
            if not valid(item) and item not in malicious:
                malicious.append(item)
        else:
            raise FamilyError(f"config_migration: fewer than {k.corpus} distinct broken configs")
        t.say("Deploys keep failing late because people hand-edit v2 service configs. Write a pre-deploy "
              "linter that checks one v2 config against the schema in `/app/docs/MIGRATION.md` (section "
              "\"v2 schema\"), with our tenant ID given here.")
        t.expect_classifier("The config arrives on standard input. Hard-code the tenant ID.", clean, malicious,
                            {"Python": fill(LINTER, TENANT="@@TENANT@@")})
        t.solve(f'sed -i "s/@@TENANT@@/{var}/" /app/solution.py')

    def program_case(self, t: TaskBuilder) -> None:
        self.part(t)
        if t.level == 0:
            return self.atomic_program(t)
        if t.variant != "migrate":
            return self.variant_program(t)
        k, rng = t.knobs, t.rng
        self.guide(t)
        texts = [random_ini(rng, replace(k, chain=0)) for _ in range(10)]
        # The worked examples are migrated for a demo tenant named in the instruction: they would show ours.
        demo = unseen(t, lambda: t.code(2), *texts)
        tenant = self.tenant(t, *texts, demo)
        var = t.deliver(tenant, "the tenant ID")
        ns = {who: run_python(fill(REFERENCE, TENANT=who)) for who in (demo, tenant)}
        cases = [(text, ns[demo if i < 2 else tenant]["migrate"](ns[tenant]["parse"](text)))
                 for i, text in enumerate(texts)]
        t.say("We have dozens of legacy v1 service configs to convert. Write the migration tool: it reads "
              "one v1 INI config and prints the v2 config, following `/app/docs/MIGRATION.md` exactly "
              f"(the tenant ID is given here). Inputs never use `extends`. The worked examples were migrated for "
              f"the demo tenant `{demo}`; your tool must write ours.")
        t.expect_program("Hard-code the tenant ID.", cases, {"Python": fill(REFERENCE, TENANT="@@TENANT@@")})
        t.solve(f'sed -i "s/@@TENANT@@/{var}/" /app/solution.py')

    def v1_files(self, t: TaskBuilder) -> tuple[list[str], list[str], str]:
        """The service's v1 config and the shared files it extends, written to /app/conf: (the shared
        files' names, every file's text with the service's last, the service)."""
        k, rng = t.knobs, t.rng
        # Files: the service config, possibly extending shared bases.
        names = ["common.ini", "base.ini"][-k.chain:] if k.chain else []
        full = v1_values(rng, k)
        alt = v1_values(rng, replace(k, opt=12, deprecated=True))  # older values, overridden by later layers
        layers: list[dict[str, str]] = [{} for _ in range(len(names) + 1)]
        for key in sorted(full):  # each key lives in one or more layers; the leaf wins
            homes = sorted(rng.sample(range(len(layers)), rng.randint(1, min(2, len(layers)))))
            for h in homes[:-1]:
                layers[h][key] = alt.get(key, "1")
            layers[homes[-1]][key] = full[key]
        if k.interp:
            # references are resolved after inheritance: the leaf may point at a key set in a base
            merged0: dict[str, str] = {}
            for layer in layers:
                merged0.update(layer)
            interpolate(rng, layers[-1], merged0)
        texts = []
        for i, layer in enumerate(layers):
            body = ini_text(rng, layer, k, alt)
            if i > 0:
                body = f"[meta]\nextends = {names[i - 1]}\n\n" + body
            texts.append(body)
        svc = rng.choice(["orders", "billing", "search", "gateway"])
        for name, text in zip(names + [f"{svc}.ini"], texts):
            t.add_file(f"/app/conf/{name}", text)
        return names, texts, svc

    def output_case(self, t: TaskBuilder) -> None:
        self.part(t)
        if t.level == 0:
            return self.atomic_output(t)
        if t.variant != "migrate":
            return self.variant_output(t)
        k, rng = t.knobs, t.rng
        self.guide(t)
        names, texts, svc = self.v1_files(t)
        tenant = self.tenant(t, STORE)
        ns = run_python(fill(REFERENCE, TENANT=tenant))
        merged: dict[str, str] = {}
        for text in texts:
            ns["parse"](text, merged)
        merged.pop("meta.extends", None)
        truth = ns["migrate"](merged)
        var = t.deliver(tenant, "the tenant ID")
        chain = " (it extends shared files in the same folder)" if k.chain else ""
        t.say(f"The `{svc}` service still runs on its v1 config, `/app/conf/{svc}.ini`{chain}. Migrate it to v2 "
              "following `/app/docs/MIGRATION.md` to the letter, for the tenant given here.")
        prefix = ""
        if t.partial_credit:  # every line then depends on the tenant, not just deployment.tenant
            t.say(STORE)
            truth = "".join(f"{tenant}/{line}\n" for line in truth.splitlines())
            prefix = f' | sed "s|^|{var}/|"'
        t.add_solution_file("migrate.py", fill(REFERENCE, TENANT=""))
        t.solve(f'mkdir -p /app/out\npython3 /solution/migrate.py "{var}" /app/conf/{svc}.ini{prefix} '
                f'> /app/out/{svc}.v2')
        t.expect_output(f"/app/out/{svc}.v2", truth, "the v2 config (flat `key=value` lines, sorted by key)")

    # Level 0: only the [server] section and the tenant, the three lines every v2 config needs.
    ATOMIC_ASK = ("`deployment.tenant=<tenant ID>`, `http.bind_address=<host>` and `http.port=<port>`, in that "
                  "order, where host and port are the values of `host` and `port` in the v1 `[server]` section")

    def atomic_output(self, t: TaskBuilder) -> None:
        if t.variant != "migrate":
            return self.variant_atomic_output(t)
        rng = t.rng
        svc = rng.choice(["orders", "billing", "search", "gateway"])
        text = atomic_ini(rng)
        t.add_file(f"/app/conf/{svc}.ini", text)
        tenant = self.tenant(t, STORE)
        truth = run_python(fill(ATOMIC, TENANT=tenant))["migrate"](text)
        t.say(f"Start the v2 config of the `{svc}` service from its v1 INI config `/app/conf/{svc}.ini`: write "
              f"`/app/out/{svc}.v2` with exactly three lines, {self.ATOMIC_ASK}.")
        var = t.deliver(tenant, "the tenant ID")
        prefix = ""
        if t.partial_credit:  # every line then depends on the tenant
            t.say(STORE)
            truth = "".join(f"{tenant}/{line}\n" for line in truth.splitlines())
            prefix = f' | sed "s|^|{var}/|"'
        t.solve(f'mkdir -p /app/out\n{{ echo "deployment.tenant={var}"; '
                f"sed -n 's/^host *= */http.bind_address=/p; s/^port *= */http.port=/p' /app/conf/{svc}.ini "
                f"| sort; }}{prefix} > /app/out/{svc}.v2")
        t.expect_output(f"/app/out/{svc}.v2", truth, "the v2 lines")

    def atomic_program(self, t: TaskBuilder) -> None:
        if t.variant != "migrate":
            return self.variant_atomic_program(t)
        rng = t.rng
        texts = [atomic_ini(rng) for _ in range(6)]
        demo = unseen(t, lambda: t.code(2), *texts)
        tenant = self.tenant(t, *texts, demo)
        var = t.deliver(tenant, "the tenant ID")
        ns = {who: run_python(fill(ATOMIC, TENANT=who)) for who in (demo, tenant)}
        cases = [(text, ns[demo if i < 2 else tenant]["migrate"](text)) for i, text in enumerate(texts)]
        t.say(f"Write a tool that reads a v1 INI service config and prints {self.ATOMIC_ASK}. The worked "
              f"examples were made for the demo tenant `{demo}`; your tool must print ours.")
        t.expect_program("Hard-code the tenant ID.", cases, {"Python": fill(ATOMIC, TENANT="@@TENANT@@")})
        t.solve(f'sed -i "s/@@TENANT@@/{var}/" /app/solution.py')

    def atomic_corpus(self, t: TaskBuilder) -> None:
        if t.variant != "migrate":
            return self.variant_atomic_corpus(t)
        k, rng = t.knobs, t.rng
        tenant = self.tenant(t)
        other = distinct(lambda: t.code(2), 1, taken=[tenant])[0]
        var = t.deliver(tenant, "the tenant ID")
        clean = ["\n".join(v2_valid(rng, tenant)) + "\n" for _ in range(k.corpus)]
        malicious = []
        for i in range(k.corpus):
            lines = [x for x in v2_valid(rng, tenant) if not x.startswith("deployment.tenant=")]
            wrong = [other, tenant.lower(), tenant + " ", tenant[:-1], None][i % 5]
            if wrong is not None:
                lines = sorted([*lines, f"deployment.tenant={wrong}"])
            malicious.append("\n".join(lines) + "\n")
        t.say("v2 service configs are `key=value` text files. Write a check that accepts a config only if it has "
              "a line that is exactly `deployment.tenant=<tenant ID>` for our tenant ID, given here.")
        t.expect_classifier("The config arrives on standard input. Hard-code the tenant ID.", clean, malicious,
                            {"Python": fill(ATOMIC_LINTER, TENANT="@@TENANT@@")})
        t.solve(f'sed -i "s/@@TENANT@@/{var}/" /app/solution.py')

    def part(self, t: TaskBuilder) -> None:
        """Every case method starts here: the later variants reseed the task's stream from itself and the variant,
        so their configs share nothing with the first variant's for the same seed. The first variant draws
        as it always has."""
        if t.variant != self.variants[0]:
            t.rng.seed(f"{t.variant}:{t.rng.getrandbits(64)}")

    # The rollback and audit variants (the migrate variant is the methods above).
    def store(self, t: TaskBuilder, truth: str, tenant: str, var: str) -> tuple[str, str]:
        """Under partial credit every line depends on the tenant: (the truth, the oracle's filter)."""
        if not t.partial_credit:
            return truth, ""
        t.say(STORE_LINES)
        return "".join(f"{tenant}/{line}\n" for line in truth.splitlines() if line), \
            f' | sed -e "/^\\$/d" -e "s|^|{var}/|"'

    def variant_output(self, t: TaskBuilder) -> None:
        k, rng = t.knobs, t.rng
        self.guide(t)
        if t.variant == "rollback":
            svc = rng.choice(["orders", "billing", "search", "gateway", "ledger"])
            staging = t.code(2)
            text = exported_v2(rng, k, staging)
            src = f"/app/conf/{svc}.v2"
            t.add_file(src, text)
            tenant = self.tenant(t, STORE_LINES, text)
            truth = run_python(variant_program(tenant, "rollback"))["rollback"](text)
            out = f"/app/out/{svc}.ini"
            ask = (f"The `{svc}` service must go back to v1 for a while. `{src}` is its v2 config as exported from "
                   "staging. Roll it back to the canonical v1 INI described in `/app/docs/MIGRATION.md` (section "
                   "\"Rolling back to v1\") for our tenant, given here.")
        else:
            names, texts, svc = self.v1_files(t)
            tenant = self.tenant(t, STORE_LINES)
            ns = run_python(variant_program(tenant, "audit"))
            merged: dict[str, str] = {}
            for text in texts:
                ns["parse"](text, merged)
            merged.pop("meta.extends", None)
            truth = ns["audit"](merged)
            src, out = f"/app/conf/{svc}.ini", f"/app/out/{svc}.audit"
            chain = " (it extends shared files in the same folder)" if k.chain else ""
            ask = (f"Before the `{svc}` service moves to v2 I need the migration audit of its v1 config, `{src}`"
                   f"{chain}, as `/app/docs/MIGRATION.md` describes it (section \"Migration audit\"), for the "
                   "tenant given here.")
        var = t.deliver(tenant, "the tenant ID")
        t.say(ask + f" Write it to `{out}`.")
        truth, tag = self.store(t, truth, tenant, var)
        t.add_solution_file(f"{t.variant}.py", variant_program("", t.variant))
        t.solve(f'mkdir -p /app/out\npython3 /solution/{t.variant}.py "{var}" {src}{tag} > {out}')
        t.expect_output(out, truth, "the v1 config" if t.variant == "rollback" else "the audit")

    def variant_program(self, t: TaskBuilder) -> None:
        k, rng = t.knobs, t.rng
        self.guide(t)
        if t.variant == "rollback":
            texts = [exported_v2(rng, k, t.code(2)) for _ in range(10)]
        else:
            texts = [random_ini(rng, replace(k, chain=0)) for _ in range(10)]
        demo = unseen(t, lambda: t.code(2), *texts)
        tenant = self.tenant(t, *texts, demo)
        var = t.deliver(tenant, "the tenant ID")
        ns = run_python(variant_program(tenant, t.variant))
        if t.variant == "rollback":
            cases = [(text, ns["rollback"](text, demo if i < 2 else tenant)) for i, text in enumerate(texts)]
            t.say("Some services have to go back to v1 after a failed migration. Write the rollback tool: it reads "
                  "one v2 config and prints the canonical v1 INI of `/app/docs/MIGRATION.md` (section \"Rolling "
                  "back to v1\") for our tenant, given here. The worked examples were rolled back for the demo "
                  f"tenant `{demo}`; your tool must write ours.")
        else:
            cases = [(text, ns["audit"](ns["parse"](text), demo if i < 2 else tenant)) for i, text in enumerate(texts)]
            t.say("Every migration files an audit first. Write the audit tool: it reads one v1 INI config and prints "
                  "its migration audit as `/app/docs/MIGRATION.md` describes it (section \"Migration audit\") for our "
                  "tenant, given here. Inputs never use `extends`. The worked examples were made for the demo "
                  f"tenant `{demo}`; your tool must write ours.")
        t.expect_program("Hard-code the tenant ID.", cases, {"Python": variant_program("@@TENANT@@", t.variant)})
        t.solve(f'sed -i "s/@@TENANT@@/{var}/" /app/solution.py')

    def variant_corpus(self, t: TaskBuilder) -> None:
        k, rng = t.knobs, t.rng
        self.guide(t)
        tenant = self.tenant(t)
        other = distinct(lambda: t.code(2), 1, taken=[tenant])[0]
        var = t.deliver(tenant, "the tenant ID")
        keep = run_python(variant_program(tenant, t.variant, "guard"))["keep"]
        clean: list[str] = []
        malicious: list[str] = []
        for _ in range(k.corpus * 60):
            if len(clean) == k.corpus and len(malicious) == k.corpus:
                break
            item = self.rollback_item(rng, k, tenant, other) if t.variant == "rollback" else \
                self.audit_item(rng, k, tenant, other)
            bucket = clean if keep(item) else malicious
            if len(bucket) < k.corpus and item not in bucket:
                bucket.append(item)
        else:
            raise FamilyError(f"config_migration: fewer than {k.corpus} distinct configs of each kind")
        if t.variant == "rollback":
            t.say("Before a v2 config is rolled back to v1 (section \"Rolling back to v1\" of "
                  "`/app/docs/MIGRATION.md`) I want a check that it rolls back losslessly for our tenant, given here. "
                  "Keep a v2 config (exit 0) exactly when its `deployment.tenant` is our tenant ID, every other key "
                  "it sets is in the mapping table's v2 column, and every value of a key whose conversion changes "
                  "units (`http.timeout_ms`, `database.timeout_ms`, `cache.max_bytes`, `cache.ttl_s`, "
                  "`jobs.interval_s`) is decimal digits only and divides exactly by its factor (1000, 1000, 1048576, "
                  "60, 60); reject it (exit 1) otherwise. Lines are `key=value` (a key set twice keeps its last "
                  "value); comment lines (`#`) and empty lines are ignored.")
        else:
            t.say("Configs queued for migration are stamped: their first line is exactly `; tenant: <tenant ID>`. "
                  "Write a pre-migration check of one v1 INI config (rules in `/app/docs/MIGRATION.md`) that keeps it "
                  "(exit 0) exactly when its first line is that stamp for our tenant, given here, every setting it "
                  "has is in the mapping table (no deprecated or unknown key), and it sets `server.host`, "
                  "`server.port` and `db.url`; anything else is rejected (exit 1). Inputs never use `extends`.")
        t.expect_classifier("The config arrives on standard input. Hard-code the tenant ID.", clean, malicious,
                            {"Python": variant_program("@@TENANT@@", t.variant, "guard")})
        t.solve(f'sed -i "s/@@TENANT@@/{var}/" /app/solution.py')

    def rollback_item(self, rng, k, tenant: str, other: str) -> str:
        """An exported v2 config: about half as exported for our tenant, the others with one fault."""
        lines = exported_v2(rng, k, tenant).split("\n")
        if rng.random() < 0.45:
            return "\n".join(lines)
        keys = [x.split("=", 1)[0] for x in lines]
        kind = rng.choice(["tenant", "unit", "unit", "key"])
        if kind == "tenant":
            i = keys.index("deployment.tenant")
            lines[i] = rng.choice([f"deployment.tenant={other}", f"deployment.tenant={tenant.lower()}", "",
                                   f"deployment.tenant={tenant} "])
        elif kind == "unit":
            key, value = rng.choice([("http.timeout_ms", f"{rng.randint(1, 90)}{rng.randrange(1, 1000):03d}"),
                                     ("database.timeout_ms", f"{rng.randrange(1, 30) * 1000 + rng.choice([1, 500])}"),
                                     ("cache.max_bytes", str(rng.choice([16, 64, 256]) * 1000000)),
                                     ("cache.ttl_s", str(rng.randint(1, 90) * 60 + rng.randrange(1, 60))),
                                     ("jobs.interval_s", rng.choice(["90", "60s", "-60", "1e3"]))])
            if key in keys:
                lines[keys.index(key)] = f"{key}={value}"
            else:
                lines.insert(len(lines) - 1, f"{key}={value}")
        else:
            lines.insert(len(lines) - 1, rng.choice(["cache.size_mb=64", "server.port=8080", "http.workers=4",
                                                     "logging.colour=true"]))
        return "\n".join(lines)

    def audit_item(self, rng, k, tenant: str, other: str) -> str:
        """A stamped v1 config: about half as queued for our tenant, the others with one fault."""
        kk = replace(k, chain=0, deprecated=False)
        kind = rng.choice(["ok", "ok", "stamp", "deprecated", "missing"])
        d = v1_values(rng, replace(kk, deprecated=kind == "deprecated"))
        if kind == "missing":
            del d[rng.choice(["server.host", "server.port", "db.url"])]
        if k.interp:
            interpolate(rng, d, dict(d))
        body = ini_text(rng, d, kk, v1_values(rng, replace(kk, opt=12)))
        stamp = f"; tenant: {tenant}"
        if kind == "stamp":
            stamp = rng.choice([f"; tenant: {other}", f"; tenant: {tenant.lower()}", f"# tenant: {tenant}",
                                f";tenant: {tenant}", f"; tenant {tenant}", f"\n; tenant: {tenant}"])
        return f"{stamp}\n{body}"

    # Level 0 of the rollback and audit variants.
    def atomic_text(self, t: TaskBuilder) -> str:
        if t.variant == "rollback":
            return "\n".join([f"deployment.tenant={t.code(2)}"] + sorted([
                f"http.bind_address={t.rng.choice(HOSTS)}", f"http.port={t.rng.choice([80, 8080, 9000]) + t.rng.randrange(20)}",
                f"database.url=postgres://db{t.rng.randrange(1, 9)}.internal:5432/app{t.rng.randrange(1, 99)}"])) + "\n"
        return atomic_extra(t.rng)

    ATOMIC_VARIANT_ASK = {
        "rollback": "a v1 INI with exactly these lines: `; tenant: <tenant ID>`, an empty line, `[server]`, "
                    "`host = <http.bind_address>`, `port = <http.port>`, an empty line, `[db]`, "
                    "`url = <database.url>` (the values of those v2 keys)",
        "audit": "the settings the migration drops: a line `tenant <tenant ID>`, then every `section.key` the "
                 "v1 INI sets except `server.host`, `server.port` and `db.url`, one per line, sorted in byte order"}

    def variant_atomic_output(self, t: TaskBuilder) -> None:
        rng = t.rng
        svc = rng.choice(["orders", "billing", "search", "gateway", "ledger"])
        text = self.atomic_text(t)
        src = f"/app/conf/{svc}.v2" if t.variant == "rollback" else f"/app/conf/{svc}.ini"
        out = f"/app/out/{svc}.ini" if t.variant == "rollback" else f"/app/out/{svc}.dropped"
        t.add_file(src, text)
        tenant = self.tenant(t, STORE_LINES, self.ATOMIC_VARIANT_ASK[t.variant])
        truth = run_python(fill(ATOMIC_VARIANT, TENANT=tenant, VARIANT=t.variant, MODE="report"))["report"](text)
        what = "v2 config (`key=value` lines)" if t.variant == "rollback" else "v1 INI config"
        t.say(f"`{src}` is the {what} of the `{svc}` service. Write `{out}` with "
              f"{self.ATOMIC_VARIANT_ASK[t.variant]}, for our tenant, given here.")
        var = t.deliver(tenant, "the tenant ID")
        truth, tag = self.store(t, truth, tenant, var)
        if t.variant == "rollback":
            t.solve(f'mkdir -p /app/out\ng() {{ sed -n "s/^$1=//p" {src}; }}\n'
                    f"printf '; tenant: %s\\n\\n[server]\\nhost = %s\\nport = %s\\n\\n[db]\\nurl = %s\\n' \"{var}\" "
                    f'"$(g http.bind_address)" "$(g http.port)" "$(g database.url)"{tag} > {out}')
        else:
            t.solve(f'mkdir -p /app/out\n{{ echo "tenant {var}"; awk -F " *= *" \'/^\\[/ {{ s = substr($0, 2, '
                    f'length($0) - 2); next }} NF > 1 {{ print s "." $1 }}\' {src} | '
                    f"grep -vxE 'server[.](host|port)|db[.]url' | LC_ALL=C sort; }}{tag} > {out}")
        t.expect_output(out, truth, "the v1 lines" if t.variant == "rollback" else "the dropped settings")

    def variant_atomic_program(self, t: TaskBuilder) -> None:
        texts = [self.atomic_text(t) for _ in range(6)]
        demo = unseen(t, lambda: t.code(2), *texts)
        tenant = self.tenant(t, *texts, demo)
        var = t.deliver(tenant, "the tenant ID")
        report = run_python(fill(ATOMIC_VARIANT, TENANT=tenant, VARIANT=t.variant, MODE="report"))["report"]
        cases = [(text, report(text, demo if i < 2 else tenant)) for i, text in enumerate(texts)]
        what = "v2 config (`key=value` lines)" if t.variant == "rollback" else "v1 INI service config"
        t.say(f"Write a tool that reads a {what} and prints {self.ATOMIC_VARIANT_ASK[t.variant]}. The worked "
              f"examples were made for the demo tenant `{demo}`; your tool must print ours.")
        t.expect_program("Hard-code the tenant ID.", cases,
                         {"Python": fill(ATOMIC_VARIANT, TENANT="@@TENANT@@", VARIANT=t.variant, MODE="report")})
        t.solve(f'sed -i "s/@@TENANT@@/{var}/" /app/solution.py')

    def variant_atomic_corpus(self, t: TaskBuilder) -> None:
        k, rng = t.knobs, t.rng
        tenant = self.tenant(t)
        other = distinct(lambda: t.code(2), 1, taken=[tenant])[0]
        var = t.deliver(tenant, "the tenant ID")
        keep = run_python(fill(ATOMIC_VARIANT, TENANT=tenant, VARIANT=t.variant, MODE="guard"))["keep"]
        clean: list[str] = []
        malicious: list[str] = []
        for i in range(k.corpus * 40):
            if len(clean) == k.corpus and len(malicious) == k.corpus:
                break
            if t.variant == "rollback":
                lines = [x for x in v2_valid(rng, tenant) if not x.startswith("http.timeout_ms=")]
                lines.append(f"http.timeout_ms={rng.randint(0, 60) * 1000 + rng.choice([0, 0, 0, 1, 250, 999])}")
                if rng.random() < 0.25:
                    lines = [x.replace(f"deployment.tenant={tenant}", f"deployment.tenant={rng.choice([other, tenant.lower()])}")
                             for x in lines]
                item = "\n".join(sorted(lines)) + "\n"
            else:
                stamp = rng.choice([f"; tenant: {tenant}"] * 4 + [f"; tenant: {other}", f"; tenant: {tenant.lower()}",
                                                                  f"# tenant: {tenant}", f"; tenant {tenant}"])
                item = f"{stamp}\n{atomic_ini(rng)}"
            bucket = clean if keep(item) else malicious
            if len(bucket) < k.corpus and item not in bucket:
                bucket.append(item)
        else:
            raise FamilyError(f"config_migration: fewer than {k.corpus} distinct configs of each kind")
        if t.variant == "rollback":
            t.say("v2 service configs are `key=value` text files. Write a check that keeps a config (exit 0) only if "
                  "it has the line `deployment.tenant=<tenant ID>` for our tenant ID, given here, and its "
                  "`http.timeout_ms` (when set) is a whole number of seconds: decimal digits that divide by 1000.")
        else:
            t.say("v1 configs queued for migration are stamped on their first line. Write a check that keeps a v1 "
                  "INI config (exit 0) only if its first line is exactly `; tenant: <tenant ID>` for our tenant ID, "
                  "given here.")
        t.expect_classifier("The config arrives on standard input. Hard-code the tenant ID.", clean, malicious,
                            {"Python": fill(ATOMIC_VARIANT, TENANT="@@TENANT@@", VARIANT=t.variant, MODE="guard")})
        t.solve(f'sed -i "s/@@TENANT@@/{var}/" /app/solution.py')
