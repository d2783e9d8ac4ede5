"""Audit a Node service's `package-lock.json` (lockfile v3: a `packages` map keyed by install path,
nested `node_modules` for conflicting versions) against its `package.json`. Each service is stored
under a hash of its name (the delivered value), beside other services. Variants: direct dependencies
whose locked version no longer satisfies the manifest's range (the lock is out of sync), extraneous
lock entries that nothing reachable requires (by Node's resolution walk up the tree), or packages
locked at more than one version. Traps by level: devDependencies and peerDependencies, tilde,
x-ranges and comparators, nested installs that shadow the top-level one, `||` and 0.x carets,
scoped names and numeric version order."""

from __future__ import annotations

import json
from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.unseen import distinct, key_cmd, key_of, unseen

REFERENCE = r'''
import json
import sys

MODE = @MODE@  # "mismatch", "extraneous" or "duplicates"
DEV = @DEV@  # devDependencies are direct dependencies too


def ver(v):
    return tuple(int(x) for x in v.split("."))


def parts(v):
    """A partial version (`1`, `1.2`, `1.x`, `1.2.3`) as its numbers up to the first wildcard."""
    out = []
    for x in v.split("."):
        if x in ("x", "X", "*"):
            break
        out.append(int(x))
    return out


def comparators(tok):
    """One range token as (op, version) pairs that must all hold."""
    for op in (">=", "<=", ">", "<", "="):
        if tok.startswith(op):
            return [(op, ver(tok[len(op):]))]
    if tok in ("*", "x"):
        return []
    if tok[0] in "^~":
        p = parts(tok[1:]) + [0, 0, 0]
        a, b, c = p[:3]
        if tok[0] == "~":
            hi = (a, b + 1, 0)
        else:
            hi = (a + 1, 0, 0) if a else (0, b + 1, 0) if b else (0, 0, c + 1)
        return [(">=", (a, b, c)), ("<", hi)]
    p = parts(tok)
    if len(p) == 3:
        return [("=", tuple(p))]
    lo = tuple(p + [0] * (3 - len(p)))
    hi = (p[0] + 1, 0, 0) if len(p) == 1 else (p[0], p[1] + 1, 0)
    return [(">=", lo), ("<", hi)]


def satisfies(v, rng):
    x = ver(v)
    for alt in rng.split("||"):
        ok = True
        for tok in alt.split():
            for op, y in comparators(tok):
                ok = ok and {">=": x >= y, "<=": x <= y, ">": x > y, "<": x < y, "=": x == y}[op]
        if ok:
            return True
    return False


def resolve(pkgs, frm, name):
    """Node's lookup: frm/node_modules/name, then each enclosing node_modules up to the root."""
    base = frm
    while True:
        cand = (base + "/" if base else "") + "node_modules/" + name
        if cand in pkgs:
            return cand
        if not base:
            return None
        base = base[:base.rfind("node_modules/")].rstrip("/")


def report(manifest, lock):
    pkgs = lock["packages"]
    out = []
    if MODE == "mismatch":
        want = dict(manifest.get("dependencies", {}))
        if DEV:
            want.update(manifest.get("devDependencies", {}))
        for name in sorted(want):
            got = pkgs.get("node_modules/" + name)
            if got is None:
                out.append(f"{name} {want[name]} MISSING")
            elif not satisfies(got["version"], want[name]):
                out.append(f"{name} {want[name]} {got['version']}")
    elif MODE == "extraneous":
        seen, todo = {""}, [""]
        while todo:
            at = todo.pop()
            entry = pkgs[at]
            deps = dict(entry.get("dependencies", {}))
            if at == "":
                deps.update(entry.get("devDependencies", {}))
            for name in sorted(deps):
                hit = resolve(pkgs, at, name)
                if hit is not None and hit not in seen:
                    seen.add(hit)
                    todo.append(hit)
        out = sorted(p for p in pkgs if p not in seen)
    else:
        versions = {}
        for path, entry in pkgs.items():
            if path:
                name = path[path.rfind("node_modules/") + len("node_modules/"):]
                versions.setdefault(name, set()).add(entry["version"])
        out = [f"{n} {' '.join(sorted(vs, key=ver))}" for n, vs in sorted(versions.items()) if len(vs) > 1]
    return "".join(line + "\n" for line in out)


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as f, open(sys.argv[2], encoding="utf-8") as g:
        sys.stdout.write(report(json.load(f), json.load(g)))
'''

NAMES = ("express", "lodash", "debug", "ms", "chalk", "semver", "qs", "yargs", "commander", "uuid", "axios",
         "ws", "glob", "minimatch", "rimraf", "mkdirp", "cookie", "mime", "depd", "statuses", "bytes", "dotenv",
         "kleur", "picomatch", "fastq", "once", "inherits", "mocha", "jest", "eslint", "prettier", "typescript")
SCOPED = ("@acme/logger", "@acme/config", "@types/node", "@babel/core")


@dataclass(frozen=True)
class Knobs:
    direct: int  # direct dependencies
    transitive: int  # packages pulled in by others
    ops: tuple[str, ...]  # range forms in package.json
    dev: bool  # devDependencies (and peerDependencies, which do not count)
    nested: bool  # conflicting versions installed under the dependent's node_modules
    leftovers: int  # lock entries that nothing requires any more
    decoys: int  # other services


def _range(rng, v: tuple, ops, sat: bool, satisfies) -> str:
    """A range of one of ``ops`` that ``v`` satisfies (or, with ``sat`` false, one it misses)."""
    a, b, c = v
    op = rng.choice(ops)
    if not sat:  # the manifest moved on: a newer line than the lock holds
        return {"exact": f"{a}.{b}.{c + 1}", "^": f"^{a + 1}.0.0", "~": f"~{a}.{b + 1}.0", "x": f"{a + 1}.x",
                "cmp": f">={a}.{b + 1}.0", "or": f"^{a + 1}.0.0 || ^{a + 2}.0.0"}[op]
    got = {"exact": f"{a}.{b}.{c}", "^": f"^{a}.{max(0, b - 1)}.0" if a else f"^0.{b}.{max(0, c - 1)}",
           "~": f"~{a}.{b}.{max(0, c - 2)}", "x": f"{a}.x" if rng.random() < 0.5 else f"{a}.{b}.x",
           "cmp": f">={a}.{max(0, b - 2)}.0 <{a + 1}.0.0", "or": f"^{a + 1}.0.0 || ^{a}.{b}.0"}[op]
    return got if satisfies(".".join(map(str, v)), got) else f"{a}.{b}.{c}"  # ^0.0.x locks the patch


@register
class NpmLockfileAudit(Family):
    name = "npm_lockfile_audit"
    domain = "software_engineering"
    skill_types = ("Dependency Management",)
    primitive_skills = ("lockfile analysis", "JSON traversal", "version range matching",
                        "graph traversal and dependency resolution", "semantic version parsing",
                        "sorting with tie-breaks")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("mismatch", "extraneous", "duplicates")
    levels = {0: Knobs(direct=4, transitive=3, ops=("exact", "^"), dev=False, nested=False, leftovers=1, decoys=2),
              1: Knobs(direct=6, transitive=8, ops=("exact", "^", "~"), dev=True, nested=False, leftovers=2,
                       decoys=3),
              2: Knobs(direct=8, transitive=14, ops=("exact", "^", "~", "x", "cmp"), dev=True, nested=True,
                       leftovers=2, decoys=3),
              3: Knobs(direct=9, transitive=16, ops=("exact", "^", "~", "x", "cmp", "or"), dev=True, nested=True,
                       leftovers=3, decoys=3),
              4: Knobs(direct=10, transitive=20, ops=("exact", "^", "~", "x", "cmp", "or"), dev=True, nested=True,
                       leftovers=3, decoys=3)}

    def _service(self, t: TaskBuilder, satisfies) -> tuple[str, str]:
        """One service: (package.json, package-lock.json) texts."""
        k, rng = t.knobs, t.rng
        nest = k.nested or t.variant == "duplicates"  # duplicates exist only as nested installs
        pool = list(NAMES) + (list(SCOPED) if k.nested else [])
        names = rng.sample(pool, k.direct + k.transitive + k.leftovers)
        direct, trans, left = (names[:k.direct], names[k.direct:k.direct + k.transitive],
                               names[k.direct + k.transitive:])

        def draw():  # 0.x releases (caret locks the minor) and 1.9 / 1.10 neighbours
            return (rng.choice([0, 1, 1, 2, 3, 4]), rng.choice([0, 1, 2, 9, 10, 12]), rng.randrange(0, 12))

        pkgs: dict = {}
        edges: dict = {}  # install path -> {name: range}

        def place(parent: str, name: str, v: tuple) -> None:
            top = f"node_modules/{name}"
            if top not in pkgs:
                pkgs[top] = v
            elif pkgs[top] != v:  # a conflict: installed under the dependent, shadowing the top level
                at = (parent + "/" if parent else "") + f"node_modules/{name}"
                pkgs.setdefault(at, v)

        dev = rng.sample(direct, len(direct) // 3) if k.dev else []
        locked = {n: draw() for n in direct}
        for n in direct:
            place("", n, locked[n])
        for n in trans:  # each transitive package is required by one or two already placed packages
            for parent in rng.sample(sorted(p for p in pkgs if p), min(len(pkgs), rng.choice([1, 1, 2]))):
                v = draw() if (nest and rng.random() < 0.3) or f"node_modules/{n}" not in pkgs \
                    else pkgs[f"node_modules/{n}"]
                place(parent, n, v)
                at = next(p for p in (f"{parent}/node_modules/{n}", f"node_modules/{n}") if p in pkgs)
                edges.setdefault(parent, {})[n] = ".".join(map(str, pkgs[at]))
        for n in left:  # removed from the manifest long ago, still in the lock
            pkgs[f"node_modules/{n}"] = draw()
        if nest and trans:  # a nested copy nothing resolves to any more
            host = rng.choice(sorted(p for p in pkgs if p.count("node_modules/") == 1))
            pkgs.setdefault(f"{host}/node_modules/{rng.choice(trans)}", draw())
        root_ranges = {n: _range(rng, locked[n], k.ops, True, satisfies) for n in direct}
        manifest_ranges = dict(root_ranges)
        for n in rng.sample(direct, max(1, k.direct // 4)):  # package.json edited, the lock not refreshed
            manifest_ranges[n] = _range(rng, locked[n], k.ops, False, satisfies)
        if k.dev:  # a dependency added to package.json but never installed
            manifest_ranges[rng.choice([x for x in NAMES if x not in names])] = "^1.0.0"
        deps = {n: manifest_ranges[n] for n in sorted(manifest_ranges) if n not in dev}
        manifest = {"name": "svc", "version": "1.0.0", "dependencies": deps}
        root = {"name": "svc", "version": "1.0.0", "dependencies": {n: root_ranges[n] for n in sorted(direct)
                                                                    if n not in dev}}
        if dev:
            manifest["devDependencies"] = {n: manifest_ranges[n] for n in sorted(dev)}
            root["devDependencies"] = {n: root_ranges[n] for n in sorted(dev)}
        if k.dev:  # peers are the host's business: never direct dependencies here
            peer = rng.choice(left) if left else rng.choice(NAMES)
            manifest["peerDependencies"] = {peer: "^99.0.0"}
        lock = {"name": "svc", "version": "1.0.0", "lockfileVersion": 3, "requires": True, "packages": {"": root}}
        for path in sorted(pkgs):
            entry = {"version": ".".join(map(str, pkgs[path])),
                     "resolved": f"https://registry.npmjs.org/{path.rsplit('node_modules/', 1)[1]}/-/"
                                 f"{path.rsplit('/', 1)[1]}-{'.'.join(map(str, pkgs[path]))}.tgz"}
            if path in edges:
                entry["dependencies"] = dict(sorted(edges[path].items()))
            if path.rsplit("node_modules/", 1)[1] in dev:
                entry["dev"] = True
            lock["packages"][path] = entry
        return json.dumps(manifest, indent=2) + "\n", json.dumps(lock, indent=2) + "\n"

    def output_case(self, t: TaskBuilder) -> None:
        k, v = t.knobs, t.variant
        src = fill(REFERENCE, MODE=repr(v), DEV=k.dev)
        ns = run_python(src)
        report = ns["report"]
        for _ in range(50):  # no duplicate versions (say) in this draw: draw again
            services = [self._service(t, ns["satisfies"])]
            truth = report(*(json.loads(x) for x in services[0]))
            if truth.strip():
                break
        else:
            raise FamilyError("npm_lockfile_audit: 50 draws in a row had an empty answer")
        services += [self._service(t, ns["satisfies"]) for _ in range(k.decoys)]
        name = unseen(t, lambda: t.code(2), *(x for s in services for x in s))
        keys = [key_of(n) for n in [name, *distinct(lambda: t.code(2), k.decoys, [name])]]
        for key, (manifest, lock) in zip(keys, services):
            t.add_file(f"/app/services/{key}/package.json", manifest)
            t.add_file(f"/app/services/{key}/package-lock.json", lock)
        t.say("Each Node service lives in `/app/services/<KEY>/` (`package.json` and `package-lock.json`, lockfile "
              "v3: `packages` maps each install path, `\"\"` being the service itself, to what is installed "
              "there), where KEY is the first 16 hex digits of the SHA-256 of the service's name (`printf %s "
              "<name> | sha256sum`).")
        t.deliver(name, "the service name")
        ranges = ("Ranges are npm's: `1.2.3` is exact, `^1.2.3` means >=1.2.3 <2.0.0" +
                  (" (on 0.x the caret locks the minor: `^0.2.3` is >=0.2.3 <0.3.0)" if "^" in k.ops else "") +
                  ("; `~1.2.3` means >=1.2.3 <1.3.0" if "~" in k.ops else "") +
                  ("; `1.x` and `1.2.x` are wildcards, space-separated comparators (`>=`, `<`) must all hold"
                   if "x" in k.ops else "") + ("; `||` separates alternatives" if "or" in k.ops else "") +
                  ". Versions compare numerically part by part.")
        direct = ("The direct dependencies are `dependencies`" + (" and `devDependencies`" if k.dev else "") +
                  " of package.json" + ("; `peerDependencies` are not installed here." if k.dev else "."))
        ask = {"mismatch": f"{direct} {ranges} The lock is out of sync where a direct dependency's top-level "
                           "install (`node_modules/<name>`) does not satisfy the range package.json asks for now. "
                           "Write one line `<name> <range> <locked version>` for each such dependency, or "
                           "`<name> <range> MISSING` when it is not installed at all, sorted by name in byte order.",
               "extraneous": "Find the extraneous lock entries: start from the service's own entry (`\"\"`, its "
                             "`dependencies` and `devDependencies`) and follow every entry's `dependencies`; a "
                             "dependency `<name>` of the entry at path P resolves like Node does, to the first of "
                             "`P/node_modules/<name>`, then the same under each enclosing `node_modules` folder, up "
                             "to `node_modules/<name>`. List the install paths never reached, one per line, sorted "
                             "in byte order.",
               "duplicates": "Find the packages installed at more than one version anywhere in the lock (a "
                             "package's name is the part of its path after the last `node_modules/`). Write one "
                             "line `<name> <version> <version> ...` per such package, its distinct versions in "
                             "ascending version order (numeric part by part), the lines sorted by name in byte "
                             "order."}[v]
        t.say(ask)
        t.add_solution_file("lock_audit.py", src)
        t.solve(f'mkdir -p /app/out\nkey={key_cmd("$V1")}\nd="/app/services/$key"\ntest -d "$d"\n'
                'python3 /solution/lock_audit.py "$d/package.json" "$d/package-lock.json" > /app/out/lock-audit.txt')
        t.expect_output("/app/out/lock-audit.txt", truth, "the lockfile audit")
