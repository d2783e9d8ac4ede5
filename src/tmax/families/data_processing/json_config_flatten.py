"""Flatten a service's nested JSON configuration into one line per leaf. Variants: dotted properties
(`<APP>.<path>=<json>`), an environment file (`<APP>_<PATH>=<raw>`) and a key-by-key diff of two
configurations. Traps by level: false and null leaves (which jq's `paths(scalars)` drops), arrays
whose indices are path components, empty objects and arrays as leaves, dashed keys and escaped
strings, then a layered configuration (defaults deep-merged with site overrides, null deleting)."""

from __future__ import annotations

import json
from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import fill, host_files, run_python
from tmax.families.unseen import unseen

REFERENCE = r'''
import json
import re
import sys

VARIANT = @VARIANT@
LAYERED = @LAYERED@  # the first config is defaults.json merged with site.json


def merge(a, b):
    """``b`` over ``a``: objects merge key by key, a null deletes the key, anything else replaces."""
    if not (isinstance(a, dict) and isinstance(b, dict)):
        return merge({}, b) if isinstance(b, dict) else b
    out = dict(a)
    for k, v in b.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge(out.get(k), v)
    return out


def leaves(v, path, out):
    """Every leaf by its path: scalars (null and false included), and empty objects and arrays."""
    if isinstance(v, dict) and v:
        for k in v:
            leaves(v[k], path + [k], out)
    elif isinstance(v, list) and v:
        for i, x in enumerate(v):
            leaves(x, path + [str(i)], out)
    else:
        out[tuple(path)] = v
    return out


def js(v):
    return json.dumps(v, ensure_ascii=False, separators=(",", ":"))


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def report(app, paths):
    docs = [load(p) for p in paths]
    if LAYERED:
        docs = [merge(docs[0], docs[1]), *docs[2:]]
    first = leaves(docs[0], [], {})
    if VARIANT == "properties":
        lines = [f"{app}.{'.'.join(p)}={js(v)}" for p, v in first.items()]
    elif VARIANT == "env":
        lines = []
        for p, v in first.items():
            name = "_".join([app] + [re.sub(r"[^A-Za-z0-9]", "_", part).upper() for part in p])
            lines.append(f"{name}={v if isinstance(v, str) else js(v)}")
    else:
        second = leaves(docs[1], [], {})
        lines = []
        for p in list(first) + [p for p in second if p not in first]:
            old = js(first[p]) if p in first else "(none)"
            new = js(second[p]) if p in second else "(none)"
            if old != new:
                lines.append(f"{app}.{'.'.join(p)}: {old} -> {new}")
    return "".join(line + "\n" for line in sorted(lines, key=lambda s: s.encode()))


if __name__ == "__main__":
    sys.stdout.write(report(sys.argv[1], sys.argv[2:]))
'''

SECTIONS = ("server", "database", "cache", "logging", "auth", "queue", "metrics", "storage", "mailer", "features")
KEYS = ("host", "port", "timeout", "enabled", "level", "name", "retries", "user", "path", "region", "mode",
        "workers", "ttl", "debug", "endpoint", "format", "limit", "secure", "bucket", "interval")
DASHED = ("max-conns", "read-timeout", "pool-size", "log-file", "tls-verify", "idle-ttl")
WORDS = ("alpha", "primary", "eu-west-1", "/var/lib/app", "json", "info", "warn", "db.internal", "svc", "smtp.local")
TRICKY = ('say "hi"', "café au lait", "back\\slash", "tab\there", "50% off")

FORMATS = {
    "properties": ("one line per leaf as `<APP>.<dotted path>=<value>`, where the path joins the keys (and array "
                   "indices, counted from 0) from the top with dots and the value is the leaf's compact JSON encoding "
                   "(as `jq -c` writes it: strings in double quotes)"),
    "env": ("an environment file, one line per leaf as `<APP>_<PATH>=<value>`, where PATH joins the keys (and array "
            "indices, counted from 0) from the top with underscores, upper-cased, with every character that is not a "
            "letter or digit turned into `_`; a string value is written raw (as `jq -r` prints it), any other value "
            "as its compact JSON encoding"),
    "diff": ("one line per leaf whose value differs between the two, as `<APP>.<dotted path>: <old> -> <new>`, where "
             "the path joins the keys (and array indices, counted from 0) from the top with dots, old and new are "
             "the leaf's compact JSON encoding (as `jq -c` writes it) and a leaf missing on one side is written "
             "`(none)`"),
}


@dataclass(frozen=True)
class Knobs:
    sections: int  # top-level sections
    depth: int  # nesting below a section (1: flat sections)
    falsy: bool  # false and null leaves
    arrays: bool  # arrays of scalars and of objects
    odd: bool  # empty objects/arrays, dashed keys, strings that need escaping, fractions
    layered: bool  # defaults.json + site.json deep-merged


@register
class JsonConfigFlatten(Family):
    name = "json_config_flatten"
    domain = "data_processing"
    skill_types = ("Data Transformation", "Parsing")
    primitive_skills = ("JSON transformation", "schema mapping", "text normalisation", "sorting with tie-breaks",
                        "field extraction")
    variants = ("properties", "env", "diff")
    levels = {0: Knobs(sections=2, depth=1, falsy=False, arrays=False, odd=False, layered=False),
              1: Knobs(sections=4, depth=2, falsy=True, arrays=False, odd=False, layered=False),
              2: Knobs(sections=5, depth=2, falsy=True, arrays=True, odd=False, layered=False),
              3: Knobs(sections=7, depth=3, falsy=True, arrays=True, odd=True, layered=False),
              4: Knobs(sections=9, depth=3, falsy=True, arrays=True, odd=True, layered=True)}

    def _scalar(self, t: TaskBuilder, key: str):
        k, rng = t.knobs, t.rng
        r = rng.random()
        if k.falsy and r < 0.12:
            return rng.choice([False, None])
        if r < 0.3:
            return rng.choice([True, False]) if k.falsy else rng.randrange(1, 9)
        if r < 0.6:
            return rng.randrange(-5, 20000) if k.odd else rng.randrange(1, 9000)
        if k.odd and r < 0.7:
            return rng.choice(TRICKY) if rng.random() < 0.5 else rng.randrange(1, 40) + rng.choice([0.25, 0.5, 0.75])
        return rng.choice(WORDS)

    def _obj(self, t: TaskBuilder, depth: int) -> dict:
        """An object ``depth`` levels deep; arrays of objects only above the bottom (their objects are flat)."""
        k, rng = t.knobs, t.rng
        keys = list(KEYS) + (list(DASHED) if k.odd else [])
        out = {}
        for key in rng.sample(keys, rng.randrange(2, 5)):
            r = rng.random()
            if depth > 1 and r < 0.3:
                out[key] = self._obj(t, depth - 1)
            elif k.arrays and depth > 1 and r < 0.36:
                out[key] = [{x: self._scalar(t, x) for x in rng.sample(KEYS, 2)} for _ in range(rng.randrange(1, 3))]
            elif k.arrays and r < 0.42:
                out[key] = [self._scalar(t, key) for _ in range(rng.randrange(1, 12 if depth > 1 else 4))]
            elif k.odd and r < 0.48:
                out[key] = rng.choice([{}, []])
            else:
                out[key] = self._scalar(t, key)
        return out

    def _config(self, t: TaskBuilder) -> dict:
        return {s: self._obj(t, t.knobs.depth) for s in t.rng.sample(SECTIONS, t.knobs.sections)}

    def _edit(self, t: TaskBuilder, doc: dict, overlay: bool) -> dict:
        """``doc`` with some leaves changed, some keys dropped and some added: as a full copy, or as an
        overlay that holds only the changes (a null deleting a key)."""
        rng = t.rng
        out = {}
        for key, v in doc.items():
            r = rng.random()
            if isinstance(v, dict) and v and r < 0.7:
                sub = self._edit(t, v, overlay)
                if sub or not overlay:
                    out[key] = sub
            elif r < 0.12:
                if overlay:
                    out[key] = None
            elif r < 0.35:
                out[key] = self._scalar(t, key) if not isinstance(v, (dict, list)) else self._obj(t, 1)
            elif not overlay:
                out[key] = v
        if rng.random() < 0.3:
            out[rng.choice(KEYS) + "2"] = self._scalar(t, "x")
        return out

    def _docs(self, t: TaskBuilder, merge) -> dict:
        k = t.knobs
        base = self._config(t)
        if k.layered:
            docs = {"defaults.json": base, "site.json": self._edit(t, base, overlay=True)}
            if t.variant == "diff":
                docs["running.json"] = self._edit(t, merge(base, docs["site.json"]), overlay=False)
            return docs
        if t.variant == "diff":
            return {"old.json": base, "new.json": self._edit(t, base, overlay=False)}
        return {"app.json": base}

    @staticmethod
    def _report(ref, app, texts):
        with host_files(texts) as (_, paths):
            return ref["report"](app, paths)

    def output_case(self, t: TaskBuilder) -> None:
        k, rng = t.knobs, t.rng
        src = fill(REFERENCE, VARIANT=repr(t.variant), LAYERED=k.layered)
        ref = run_python(src)
        for _ in range(30):  # a diff needs at least two differing leaves
            docs = self._docs(t, ref["merge"])
            texts = {name: json.dumps(doc, indent=rng.choice([2, 4]), ensure_ascii=False) + "\n"
                     for name, doc in docs.items()}
            if self._report(ref, "APP", texts).count("\n") >= 2:
                break
        else:
            raise FamilyError(f"family {self.name}: no configuration with two {t.variant} lines in 30 draws")
        for name, text in texts.items():
            t.add_file(f"/app/config/{name}", text)
        app = unseen(t, lambda: t.code(2))
        truth = self._report(ref, app, texts)
        files = [f"/app/config/{name}" for name in texts]
        if t.variant == "diff" and k.layered:
            what = ("the effective configuration (`/app/config/defaults.json` with `/app/config/site.json` laid over "
                    "it, the old side) and what the running service reports, `/app/config/running.json` (the new side)")
        elif t.variant == "diff":
            what = "the old configuration `/app/config/old.json` and the new one `/app/config/new.json`"
        elif k.layered:
            what = ("the effective configuration: `/app/config/defaults.json` with the site overrides "
                    "`/app/config/site.json` laid over it")
        else:
            what = "the service configuration `/app/config/app.json`"
        verb = "Compare" if t.variant == "diff" else "Flatten"
        t.say(f"{verb} {what}. Write {FORMATS[t.variant]}. Sort the lines in byte order (`LC_ALL=C sort`).")
        rules = []
        if k.falsy:
            rules.append("Every leaf counts, including `false`, `null` and `0`.")
        if k.odd:
            rules.append("An empty object or empty array is itself a leaf (`{}` or `[]`).")
        if k.layered:
            rules.append("Laying one file over another: objects are merged key by key (recursively), a `null` in "
                         "the site file deletes that key, and any other value (arrays included) replaces what was "
                         "there.")
        if rules:
            t.say(" ".join(rules))
        t.say("APP is the application's config namespace, given below.")
        var = t.deliver(app, "the config namespace")
        t.add_solution_file("flatten.py", src)
        t.solve(f'test -n "{var}"\nmkdir -p /app/out\n'
                f'python3 /solution/flatten.py "{var}" {" ".join(files)} > /app/out/config.txt')
        t.expect_output("/app/out/config.txt", truth, "the lines")
