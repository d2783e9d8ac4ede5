"""Is the next API version backwards compatible? Two versions of an in-house API description (JSON:
endpoints with their owner team under a salted team ID, parameters, response fields; enums and nested
objects at higher levels); report the breaking changes in one team's endpoints and (level 3+) the
semver bump that team's part of the API needs. Program variants: the diff tool (fuzzed) or a CI
gate that must fail exactly the pull requests that break the team's endpoints (adversarial corpus). Level 0
asks which endpoints the team owns (or gates on one of them being removed). Variants: the breaking changes
(breaking), the compatible additions instead (additive: a gate on pull requests that extend the team's API;
level 0 the team's published version, or a gate on a new endpoint of ours), or one verdict per endpoint of the
team (verdicts: removed, breaking, compatible, unchanged or added; a gate on any change to our endpoints; level 0
the team's endpoints counted per method, or a gate on endpoints handed to another team)."""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, replace
from functools import cache

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.unseen import distinct, unseen

REFERENCE = r'''
import hashlib
import json
import sys

OWNER = "@OWNER@"
WITH_VERSION = @WITH_VERSION@
MODE = "@MODE@"  # report: the breaking changes; gate: exit 1 if the change breaks us


def team_id(desc, code):
    """A team's pseudonymous ID in one description: its owner fields hold these, never team codes."""
    return hashlib.sha256((desc["team_salt"] + ":" + code).encode()).hexdigest()[:12]


def is_enum(ty):
    return isinstance(ty, dict) and "enum" in ty


def kind_of(ty):
    if is_enum(ty):
        return "enum"
    return "object" if isinstance(ty, dict) else ty


def flat(fields, prefix=""):
    out = {}
    for name, ty in fields.items():
        out[prefix + name] = ty
        if kind_of(ty) == "object":
            out.update(flat(ty, prefix + name + "."))
    return out


def changes(old, new):
    """(endpoint, kind, name, breaking) for every difference; additive ones have breaking=False."""
    out = []
    oe, ne = old["endpoints"], new["endpoints"]
    for ep in oe:
        if ep not in ne:
            out.append((ep, "removed-endpoint", "", True))
            continue
        o, n = oe[ep], ne[ep]
        for p, od in o.get("params", {}).items():
            nd = n.get("params", {}).get(p)
            if nd is None:
                out.append((ep, "removed-param", p, True))
            else:
                retyped = od["type"] != nd["type"] or ("enum" in od) != ("enum" in nd)
                if retyped:
                    out.append((ep, "param-type-changed", p, True))
                if nd["required"] and not od["required"]:
                    out.append((ep, "param-now-required", p, True))
                if od["required"] and not nd["required"]:
                    out.append((ep, "param-now-optional", p, False))
                if "enum" in od and not retyped:
                    if any(v not in nd["enum"] for v in od["enum"]):
                        out.append((ep, "param-enum-value-removed", p, True))
                    if any(v not in od["enum"] for v in nd["enum"]):
                        out.append((ep, "param-enum-value-added", p, False))
        for p, nd in n.get("params", {}).items():
            if p not in o.get("params", {}):
                out.append((ep, "new-required-param", p, True) if nd["required"] else (ep, "new-optional-param", p, False))
        fo, fn = flat(o.get("response", {})), flat(n.get("response", {}))
        gone = []
        for f, ty in fo.items():
            if any(f.startswith(g + ".") for g in gone):
                continue
            if f not in fn:
                out.append((ep, "removed-response-field", f, True))
                gone.append(f)
            elif kind_of(ty) != kind_of(fn[f]):
                out.append((ep, "response-type-changed", f, True))
                gone.append(f)
            elif is_enum(ty):
                if any(v not in ty["enum"] for v in fn[f]["enum"]):
                    out.append((ep, "response-enum-value-added", f, True))
        for f in fn:
            if f not in fo and not any(f.startswith(g + ".") for g in gone):
                out.append((ep, "new-response-field", f, False))
    for ep in ne:
        if ep not in oe:
            out.append((ep, "new-endpoint", "", False))
    return out


def owned(doc, owner):
    """Does an endpoint belong to the team? Owner in the old description, or in the new one if it is new."""
    old, new = doc["old"], doc["new"]
    mine_old, mine_new = team_id(old, owner), team_id(new, owner)

    def test(ep):
        if ep in old["endpoints"]:
            return old["endpoints"][ep]["owner"] == mine_old
        return new["endpoints"][ep]["owner"] == mine_new
    return test


def report(doc, owner=None):
    owner = owner or OWNER
    old, new = doc["old"], doc["new"]
    ours = owned(doc, owner)
    ch = [c for c in changes(old, new) if ours(c[0])]
    lines = sorted(f"{ep} {kind} {name}".rstrip() for ep, kind, name, br in ch if br)
    if WITH_VERSION:
        mine = team_id(old, owner)
        if mine not in old["versions"]:
            raise SystemExit(f"team {owner} has no version in the old description")
        a, b, c = (int(x) for x in old["versions"][mine].split("."))
        if any(br for *_, br in ch):
            a, b, c = a + 1, 0, 0
        elif ch:
            b, c = b + 1, 0
        else:
            c += 1
        lines.append(f"next-version {a}.{b}.{c}")
    return "".join(x + "\n" for x in lines)


def gate(doc, owner=None):
    """0 if the change is safe for the owner's clients, 1 if it breaks one of its endpoints."""
    ours = owned(doc, owner or OWNER)
    return 1 if any(br and ours(ep) for ep, _, _, br in changes(doc["old"], doc["new"])) else 0


if __name__ == "__main__":
    if len(sys.argv) > 3:
        doc = {"old": json.load(open(sys.argv[2])), "new": json.load(open(sys.argv[3]))}
        sys.stdout.write(report(doc, sys.argv[1]))
    else:
        doc = json.loads(sys.stdin.read())
        if MODE == "gate":
            sys.exit(gate(doc))
        sys.stdout.write(report(doc))
'''

# The additive and verdicts variants' program: the same diff, its report and gate redefined before the main block.
VARIANT_EXTRA = r'''

VARIANT = "@VARIANT@"  # additive: the compatible changes; verdicts: one verdict per endpoint


def next_version(doc, owner, ch):
    mine = team_id(doc["old"], owner)
    if mine not in doc["old"]["versions"]:
        raise SystemExit(f"team {owner} has no version in the old description")
    a, b, c = (int(x) for x in doc["old"]["versions"][mine].split("."))
    if any(br for *_, br in ch):
        a, b, c = a + 1, 0, 0
    elif ch:
        b, c = b + 1, 0
    else:
        c += 1
    return f"next-version {a}.{b}.{c}"


def verdict(kinds):
    if "removed-endpoint" in kinds:
        return "removed"
    if "new-endpoint" in kinds:
        return "added"
    if any(br for _, br in kinds.items()):
        return "breaking"
    return "compatible" if kinds else "unchanged"


def report(doc, owner=None):  # noqa: F811 - the variant's report
    owner = owner or OWNER
    old, new = doc["old"], doc["new"]
    ours = owned(doc, owner)
    ch = [c for c in changes(old, new) if ours(c[0])]
    if VARIANT == "additive":
        lines = sorted(f"{ep} {kind} {name}".rstrip() for ep, kind, name, br in ch if not br)
    else:
        eps = [ep for ep in old["endpoints"] if ours(ep)]
        eps += [ep for ep in new["endpoints"] if ep not in old["endpoints"] and ours(ep)]
        lines = sorted(f"{ep} {verdict({k: br for e, k, _, br in ch if e == ep})}" for ep in eps)
    if WITH_VERSION:
        lines.append(next_version(doc, owner, ch))
    return "".join(x + "\n" for x in lines)


def gate(doc, owner=None):  # noqa: F811 - the variant's gate
    # additive: 1 if the change extends one of our endpoints compatibly; verdicts: 1 if it changes one at all
    ours = owned(doc, owner or OWNER)
    return 1 if any(ours(ep) and (VARIANT == "verdicts" or not br)
                    for ep, _, _, br in changes(doc["old"], doc["new"])) else 0


'''

# Level 0 of the additive and verdicts variants: one lookup in a description (or a pair of them).
ATOMIC_VARIANT = r'''
import hashlib
import json
import sys

OWNER = "@OWNER@"
VARIANT = "@VARIANT@"  # additive: our version; verdicts: our endpoints per method
MODE = "@MODE@"  # gate: exit 1 on a new endpoint of ours (additive) or one of ours handed to another team


def mine(desc, owner=None):
    return hashlib.sha256((desc["team_salt"] + ":" + (owner or OWNER)).encode()).hexdigest()[:12]


def lookup(desc, owner=None):
    if VARIANT == "additive":
        return desc["versions"][mine(desc, owner)] + "\n"
    count = {}
    for ep, e in desc["endpoints"].items():
        if e["owner"] == mine(desc, owner):
            count[ep.split()[0]] = count.get(ep.split()[0], 0) + 1
    return "".join(f"{m} {n}\n" for m, n in sorted(count.items()))


def gate(doc):
    old, new = doc["old"], doc["new"]
    if VARIANT == "additive":
        return 1 if any(ep not in old["endpoints"] and e["owner"] == mine(new)
                        for ep, e in new["endpoints"].items()) else 0
    return 1 if any(e["owner"] == mine(old) and ep in new["endpoints"] and new["endpoints"][ep]["owner"] != mine(new)
                    for ep, e in old["endpoints"].items()) else 0


if __name__ == "__main__":
    doc = json.loads(sys.stdin.read())
    if MODE == "gate":
        sys.exit(gate(doc))
    sys.stdout.write(lookup(doc))
'''

ATOMIC = r'''
import hashlib
import json
import sys

OWNER = "@OWNER@"
MODE = "@MODE@"  # owned: our endpoints; gate: exit 1 if the new description drops one of them


def owned(desc, owner=None):
    mine = hashlib.sha256((desc["team_salt"] + ":" + (owner or OWNER)).encode()).hexdigest()[:12]
    return sorted(ep for ep, e in desc["endpoints"].items() if e["owner"] == mine)


def gate(doc):
    return 1 if any(ep not in doc["new"]["endpoints"] for ep in owned(doc["old"])) else 0


if __name__ == "__main__":
    doc = json.loads(sys.stdin.read())
    if MODE == "gate":
        sys.exit(gate(doc))
    sys.stdout.write("".join(ep + "\n" for ep in owned(doc)))
'''

ATOMIC_RULES = ("An API description is JSON: `endpoints` maps `\"<METHOD> <path>\"` to an object whose `owner` is the "
                "owning team's ID, the first 12 hex digits of the SHA-256 of `<team_salt>:<team code>` with the "
                "description's top-level `team_salt`.")

RESOURCES = {"users": ["id", "email", "name", "created_at", "plan"], "orders": ["id", "total", "currency", "status"],
             "invoices": ["id", "amount", "due_date", "paid"], "products": ["id", "sku", "price", "title", "stock"],
             "carts": ["id", "items", "updated_at"], "payments": ["id", "method", "amount", "state"],
             "shipments": ["id", "carrier", "eta", "tracking"], "reviews": ["id", "rating", "body", "author"]}
TYPES = ["string", "integer", "boolean", "number"]
QUERY = {"limit": "integer", "offset": "integer", "q": "string", "expand": "boolean", "since": "string",
         "page_size": "integer", "include_deleted": "boolean"}
ENUMS = {"sort": ["asc", "desc"], "status": ["open", "closed", "pending"], "format": ["json", "csv"],
         "region": ["eu", "us", "apac"]}
RESP_ENUMS = {"kind": ["standard", "premium"], "visibility": ["public", "private"], "tier": ["free", "pro", "team"]}
NESTED = {"address": {"city": "string", "zip": "string", "country": "string"},
          "links": {"self": "string", "next": "string"}, "meta": {"etag": "string", "revision": "integer"}}
BASIC = ("remove_endpoint", "add_endpoint", "add_required_param", "add_optional_param", "remove_response_field",
         "add_response_field")
MORE = ("make_required", "make_optional", "remove_param", "param_type", "response_type")
ENUM_KINDS = ("param_enum_remove", "param_enum_add", "resp_enum_add", "resp_enum_remove")
NESTED_KINDS = ("nested_remove", "nested_add", "nested_type")


def make_spec(rng, k, owners):
    eps = {}
    for res in sorted(rng.sample(sorted(RESOURCES), k.resources)):
        fields = RESOURCES[res]
        for method, path in rng.sample([("GET", f"/{res}"), ("GET", f"/{res}/{{id}}"), ("POST", f"/{res}"),
                                        ("PUT", f"/{res}/{{id}}"), ("DELETE", f"/{res}/{{id}}")], rng.randint(2, 4)):
            params = {}
            if "{id}" in path:
                params["id"] = {"in": "path", "type": "string", "required": True}
            if method == "GET":
                for q in rng.sample(sorted(QUERY), rng.randint(1, 3)):
                    params[q] = {"in": "query", "type": QUERY[q], "required": False}
            if method in ("POST", "PUT"):
                for f in rng.sample(fields[1:], rng.randint(1, len(fields) - 1)):
                    params[f] = {"in": "body", "type": rng.choice(TYPES[:2]), "required": rng.random() < 0.5}
            if k.enums and rng.random() < 0.5:
                e = rng.choice(sorted(ENUMS))
                params[e] = {"in": "query", "type": "string", "enum": list(ENUMS[e]), "required": False}
            resp = {f: rng.choice(TYPES) if f != "id" else "string" for f in fields}
            if method == "DELETE":
                resp = {"deleted": "boolean"}
            if k.enums and rng.random() < 0.5 and method != "DELETE":
                e = rng.choice(sorted(RESP_ENUMS))
                resp[e] = {"enum": list(RESP_ENUMS[e])}
            if k.nested and rng.random() < 0.6 and method != "DELETE":
                nname = rng.choice(sorted(NESTED))
                resp[nname] = copy.deepcopy(NESTED[nname])
            eps[f"{method} {path}"] = {"owner": rng.choice(owners), "summary": f"{method.lower()} {res}",
                                       "params": params, "response": resp}
    # Distinct majors: no two teams can end up with the same next version.
    majors = rng.sample(range(1, 10), len(owners))
    versions = {o: f"{m}.{rng.randint(0, 14)}.{rng.randint(0, 9)}" for o, m in zip(owners, majors)}
    return {"versions": versions, "endpoints": eps}


def mutate(rng, spec, kind, only=None):
    """Apply one change of ``kind`` (to an endpoint of owner ``only`` when given); False if not applicable."""
    eps = spec["endpoints"]
    names = sorted(e for e in eps if only is None or eps[e]["owner"] == only)
    if not names:
        return False
    ep = rng.choice(names)
    e = eps[ep]
    params, resp = e["params"], e["response"]
    nonpath = sorted(p for p in params if params[p]["in"] != "path")
    if kind == "remove_endpoint":
        del eps[ep]
    elif kind == "add_endpoint":
        res = ep.split()[1].split("/")[1]
        new = rng.choice([f"GET /{res}/{{id}}/history", f"POST /{res}/search", f"GET /{res}/export",
                          f"PATCH /{res}/{{id}}"])
        if new in eps:
            return False
        eps[new] = {"owner": e["owner"], "summary": "new", "params": {}, "response": {"id": "string"}}
    elif kind in ("add_required_param", "add_optional_param"):
        p = rng.choice(["dry_run", "idempotency_key", "locale", "trace", "version_tag"])
        if p in params:
            return False
        params[p] = {"in": "query" if ep.startswith("GET") else "body", "type": rng.choice(TYPES[:3]),
                     "required": kind == "add_required_param"}
    elif kind == "make_required":
        c = [p for p in nonpath if not params[p]["required"]]
        if not c:
            return False
        params[rng.choice(c)]["required"] = True
    elif kind == "make_optional":
        c = [p for p in nonpath if params[p]["required"]]
        if not c:
            return False
        params[rng.choice(c)]["required"] = False
    elif kind == "remove_param":
        if not nonpath:
            return False
        del params[rng.choice(nonpath)]
    elif kind == "param_type":
        c = [p for p in nonpath if "enum" not in params[p]]
        if not c:
            return False
        p = rng.choice(c)
        params[p]["type"] = rng.choice([x for x in TYPES if x != params[p]["type"]])
    elif kind in ("remove_response_field", "response_type", "add_response_field"):
        plain = sorted(f for f in resp if isinstance(resp[f], str) and f != "id")
        if kind == "add_response_field":
            f = rng.choice(["etag", "owner_id", "region", "updated_by", "flags"])
            if f in resp:
                return False
            resp[f] = rng.choice(TYPES)
        elif not plain:
            return False
        elif kind == "remove_response_field":
            del resp[rng.choice(plain)]
        else:
            f = rng.choice(plain)
            resp[f] = rng.choice([x for x in TYPES if x != resp[f]])
    elif kind in ("param_enum_remove", "param_enum_add"):
        c = [p for p in params if "enum" in params[p]]
        if not c:
            return False
        vals = params[rng.choice(c)]["enum"]
        if kind == "param_enum_add":
            vals.append(rng.choice(["other", "all", "legacy"]))
        elif len(vals) > 1:
            vals.pop(rng.randrange(len(vals)))
        else:
            return False
    elif kind in ("resp_enum_add", "resp_enum_remove"):
        c = [f for f in resp if isinstance(resp[f], dict) and "enum" in resp[f]]
        if not c:
            return False
        vals = resp[rng.choice(c)]["enum"]
        if kind == "resp_enum_add":
            vals.append(rng.choice(["enterprise", "internal", "archived"]))
        elif len(vals) > 1:
            vals.pop(rng.randrange(len(vals)))
        else:
            return False
    elif kind in NESTED_KINDS:
        c = [f for f in resp if isinstance(resp[f], dict) and "enum" not in resp[f]]
        if not c:
            return False
        obj = resp[rng.choice(c)]
        sub = sorted(obj)
        if kind == "nested_add":
            obj[rng.choice(["region", "label", "hash"])] = "string"
        elif kind == "nested_remove":
            del obj[rng.choice(sub)]
        else:
            s = rng.choice(sub)
            obj[s] = rng.choice([x for x in TYPES if x != obj[s]])
    else:
        raise AssertionError(kind)
    return True


def evolve(rng, spec, k, n, only=None, kinds=None):
    new = copy.deepcopy(spec)
    kinds = kinds or kind_pool(k)
    done = 0
    for _ in range(n * 6):
        if done >= n:
            break
        if mutate(rng, new, rng.choice(kinds), only):
            done += 1
    for e in sorted(new["endpoints"]):  # cosmetic noise that is not a change
        if rng.random() < 0.2:
            new["endpoints"][e]["summary"] += " (see docs)"
    new["versions"] = {o: "next" for o in new["versions"]}
    return new


def kind_pool(k):
    return BASIC + (MORE if k.more else ()) + (ENUM_KINDS if k.enums else ()) + \
        (NESTED_KINDS if k.nested else ())


BREAKING = ("remove_endpoint", "add_required_param", "remove_response_field", "make_required", "remove_param",
            "param_type", "response_type", "param_enum_remove", "resp_enum_add", "nested_remove", "nested_type")


MAIN = '\nif __name__ == "__main__":'


def reference(owner: str, with_version: bool, mode: str = "report", variant: str = "breaking") -> str:
    if variant == "breaking":
        return fill(REFERENCE, OWNER=owner, WITH_VERSION=with_version, MODE=mode)
    return fill(REFERENCE.replace(MAIN, VARIANT_EXTRA + MAIN, 1), OWNER=owner, WITH_VERSION=with_version, MODE=mode,
                VARIANT=variant)


def atomic(owner: str, mode: str, variant: str) -> str:
    """Level 0's program: the owned endpoints (breaking) or the variant's lookup."""
    if variant == "breaking":
        return fill(ATOMIC, OWNER=owner, MODE=mode)
    return fill(ATOMIC_VARIANT, OWNER=owner, MODE=mode, VARIANT=variant)


@cache
def team_id():
    """The reference's own team_id (salted team IDs), so descriptions and the oracle agree."""
    return run_python(reference("", False))["team_id"]


def publish(rng, spec) -> dict:
    """The description as published: a fresh team salt, team codes replaced by their IDs under it."""
    salt = "%016x" % rng.getrandbits(64)
    doc = {"team_salt": salt}
    out = copy.deepcopy(spec)
    for e in out["endpoints"].values():
        e["owner"] = team_id()(doc, e["owner"])
    doc["versions"] = dict(sorted((team_id()(doc, o), v) for o, v in out["versions"].items()))
    doc["endpoints"] = out["endpoints"]
    return doc


def pair(rng, old, new) -> dict:
    return {"old": publish(rng, old), "new": publish(rng, new)}


def dump(spec) -> str:
    return json.dumps(spec, indent=2) + "\n"


@dataclass(frozen=True)
class Knobs:
    resources: int  # API resources (each with 2-4 endpoints)
    changes: int  # changes between the two descriptions
    more: bool  # requiredness, removed and retyped parameters, retyped response fields
    enums: bool  # enumerated parameters and response fields
    nested: bool  # nested response objects
    version: bool  # report the next semver of our team's part too
    corpus: int  # pull requests per corpus (clean and malicious) for the CI gate


@register
class ApiBreakingChanges(Family):
    name = "api_breaking_changes"
    domain = "software_engineering"
    skill_types = ("API Design", "Release Engineering")
    primitive_skills = ("API compatibility analysis", "breaking change classification", "JSON traversal",
                        "set difference of interfaces", "semantic version parsing", "sorting with tie-breaks")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol", "fuzz_equivalence", "adversarial_corpus")
    programs = {"Python": REFERENCE}
    variants = ("breaking", "additive", "verdicts")
    levels = {0: Knobs(resources=2, changes=0, more=False, enums=False, nested=False, version=False, corpus=12),
              1: Knobs(resources=3, changes=4, more=False, enums=False, nested=False, version=False, corpus=16),
              2: Knobs(resources=4, changes=7, more=True, enums=False, nested=False, version=False, corpus=24),
              3: Knobs(resources=5, changes=10, more=True, enums=True, nested=False, version=True, corpus=26),
              4: Knobs(resources=7, changes=14, more=True, enums=True, nested=True, version=True, corpus=30)}

    def part(self, t: TaskBuilder) -> None:
        """Every case method starts here: the later variants reseed the task's stream from itself and the variant,
        so their descriptions share nothing with the first variant's for the same seed (a shifted stream
        would replay most of its draws). The first variant draws as it always has."""
        if t.variant != self.variants[0]:
            t.rng.seed(f"{t.variant}:{t.rng.getrandbits(64)}")

    def rules(self, k) -> str:
        r = ("Our API descriptions are JSON. Teams appear in them only under pseudonymous IDs: a team's ID in a "
             "description is the first 12 hex digits of the SHA-256 of `<team_salt>:<team code>`, with that "
             "description's own `team_salt`. `versions` maps team IDs to the version of each team's part of the "
             "API; `endpoints` maps `\"<METHOD> <path>\"` to an object with `owner` (the owning team's ID), "
             "`summary`, `params` (name -> `in`, `type`, `required`"
             + (", and for enumerations `enum`, the allowed values" if k.enums else "") + ") and `response` "
             "(field name -> type" + (", or `{\"enum\": [...]}` for an enumeration" if k.enums else "")
             + (", or an object of nested fields" if k.nested else "") + "). A change breaks clients when, "
             "comparing the new description with the old one: an endpoint is removed (`removed-endpoint`); a "
             "parameter is removed (`removed-param`), changes type (`param-type-changed`), turns from optional to "
             "required (`param-now-required`), or is added as required (`new-required-param`); a response field "
             "is removed (`removed-response-field`) or changes type (`response-type-changed`)")
        if k.enums:
            r += ("; an enumerated parameter loses an allowed value (`param-enum-value-removed`); an enumerated "
                  "response field gains a value (`response-enum-value-added`). Turning a plain type into an "
                  "enumeration or back counts as a type change")
        if k.nested:
            r += (". Nested response fields are named with dots (`address.zip`); when a field is removed or "
                  "changes type, its own nested fields are not reported separately")
        r += (". Every kind that applies is reported (a parameter can be both retyped and made required). "
              "Everything else (new endpoints, new optional parameters, new response fields, relaxed "
              "requirements, added request enum values, removed response enum values, summaries) is compatible.")
        return r

    def compatible(self, k) -> str:
        """The compatible changes the additive variant reports and the verdicts variant counts, by kind."""
        return ("the compatible changes are a new endpoint (`new-endpoint`, reported once, without its parameters "
                "or fields), a new optional parameter (`new-optional-param`), a required parameter made optional "
                "(`param-now-optional`), a new response field (`new-response-field`)"
                + (", and a value added to an enumerated parameter (`param-enum-value-added`); a value removed "
                   "from an enumerated response field is compatible too but is not a change to report" if k.enums
                   else "")
                + ("; a field added inside a nested field that was itself removed or retyped is not reported"
                   if k.nested else ""))

    def report_format(self, k, variant: str = "breaking") -> tuple[str, str]:
        """(the report's format, the sentence on where the old versions come from): both report cases."""
        fmt = {"breaking": "one line per breaking change in an endpoint that our team owns according to the old "
                           "description: `<METHOD> <path> <kind>` followed by a space and the parameter or field "
                           "name where there is one, lines sorted in byte order",
               "additive": "one line per compatible change in an endpoint that our team owns (according to the "
                           "old description, or, for a new endpoint, the new one): `<METHOD> <path> <kind>` "
                           "followed by a space and the parameter or field name where there is one, lines sorted "
                           "in byte order, where " + self.compatible(k),
               "verdicts": "one line per endpoint that our team owns according to the old description and per "
                           "new endpoint that it owns according to the new one: `<METHOD> <path> <verdict>`, "
                           "lines sorted in byte order, where the verdict is `removed` (the endpoint is gone), "
                           "`added` (it is new), `breaking` (it has at least one breaking change), `compatible` "
                           "(it has changes, all compatible) or `unchanged` (no change at all); "
                           + self.compatible(k) + ", and summaries never count"}[variant]
        vtxt = ""
        if k.version:
            fmt += ("; then one last line `next-version X.Y.Z`: the version our team's part of the API must carry "
                    "next, bumping our team's entry in the old `versions` by semver over the changes to our team's "
                    "endpoints (owned by our team in the old description, or, for a new endpoint, in the new one): "
                    "major if any of them breaks, else minor if any of them changed, else patch")
            vtxt = " The old description's `versions` are the currently published versions."
        return fmt, vtxt

    def teams(self, t: TaskBuilder) -> list[str]:
        """Four team codes. Codes never appear in the descriptions (owners are salted IDs), so our team is
        known only from the delivered code; none may be readable off the instruction's fixed texts either."""
        return distinct(lambda: unseen(t, lambda: t.code(2), self.rules(t.knobs),
                                       *self.report_format(t.knobs, t.variant)), 4)

    def corpus_case(self, t: TaskBuilder) -> None:
        self.part(t)
        if t.level == 0:
            return self.atomic_corpus(t)
        k, rng = t.knobs, t.rng
        owners = self.teams(t)
        ours = owners[0]
        gate = run_python(reference(ours, False, "gate", t.variant))["gate"]
        var = t.deliver(ours, "our team code")
        clean: list[str] = []
        malicious: list[str] = []
        pool = kind_pool(k)
        safe, breaking = [x for x in pool if x not in BREAKING], [x for x in pool if x in BREAKING]
        # What the variant's gate looks for in our endpoints, and what it must let through there.
        hit, miss = {"breaking": (breaking, safe), "additive": ([x for x in safe if x != "resp_enum_remove"], breaking),
                     "verdicts": ([x for x in pool if x != "resp_enum_remove"], [])}[t.variant]
        for _ in range(4000):
            if len(clean) >= k.corpus and len(malicious) >= k.corpus:
                break
            spec = make_spec(rng, replace(k, resources=rng.randint(2, 3)), owners)
            if t.variant == "breaking":
                if rng.random() < 0.5:  # a pull request that breaks exactly one of our endpoints
                    new = evolve(rng, spec, k, rng.randint(0, 3), kinds=safe)
                    if not mutate(rng, new, rng.choice(breaking), ours):
                        continue
                else:  # compatible for us: additive changes, and breaking ones in other teams' endpoints
                    new = evolve(rng, spec, k, rng.randint(1, 4), kinds=safe)
                    for _ in range(rng.randint(1, 3)):
                        mutate(rng, new, rng.choice(breaking), rng.choice(owners[1:]))
            else:  # other teams' endpoints change freely; ours get what the gate lets through, and half one hit
                new = evolve(rng, spec, k, 0)
                for _ in range(rng.randint(1, 4)):
                    mutate(rng, new, rng.choice(pool), rng.choice(owners[1:]))
                if miss and rng.random() < 0.6:
                    mutate(rng, new, rng.choice(miss), ours)
                if rng.random() < 0.5 and not mutate(rng, new, rng.choice(hit), ours):
                    continue
            doc = pair(rng, spec, new)
            bucket = malicious if gate(doc) else clean
            if len(bucket) < k.corpus:
                bucket.append(json.dumps(doc, separators=(",", ":")) + "\n")
        else:
            raise FamilyError(f"api_breaking_changes: fewer than {k.corpus} pull requests of each kind")
        rule = {"breaking": " The gate must fail a pull request exactly when it breaks at least one endpoint owned by "
                            "our team (owner in the old description; team code given here); breaking changes to "
                            "other teams' endpoints are their business.",
                "additive": " Pull requests that extend our API need a minor-release entry, so the gate must fail a "
                            "pull request exactly when it makes at least one compatible change to an endpoint our "
                            "team owns (owner in the old description, or for a new endpoint in the new one; team "
                            f"code given here), where {self.compatible(k)}. Breaking changes do not matter to this "
                            "gate, and neither do other teams' endpoints.",
                "verdicts": " Any change to our endpoints needs our review, so the gate must fail a pull request "
                            "exactly when it changes at least one endpoint our team owns (owner in the old "
                            "description, or for a new endpoint in the new one; team code given here) in a breaking "
                            f"or a compatible way, where {self.compatible(k)}. Summaries never count, and neither "
                            "do other teams' endpoints."}[t.variant]
        t.say(("I want a CI gate on pull requests that touch the API description. " if t.variant == "breaking" else
               "Our CI needs one more check on pull requests that touch the API description. ")
              + self.rules(k) + rule)
        t.expect_classifier("Its input is one JSON object `{\"old\": <description>, \"new\": <description>}`. "
                            "Hard-code our team code.", clean, malicious,
                            {"Python": reference("@@OWNER@@", False, "gate", t.variant)})
        t.solve(f'sed -i "s/@@OWNER@@/{var}/" /app/solution.py')

    def program_case(self, t: TaskBuilder) -> None:
        self.part(t)
        if t.level == 0:
            return self.atomic_program(t)
        k, rng = t.knobs, t.rng
        owners = self.teams(t)
        report = run_python(reference(owners[0], k.version, "report", t.variant))["report"]
        fmt, vtxt = self.report_format(k, t.variant)
        var = t.deliver(owners[0], "our team code")

        def idle(out: str) -> bool:
            """Nothing of ours in the report (verdicts: nothing of ours changed)."""
            lines = [x for x in out.splitlines() if not x.startswith("next-version")]
            return not lines or (t.variant == "verdicts" and all(x.endswith(" unchanged") for x in lines))
        cases: list[tuple[str, str]] = []
        for _ in range(200):
            if len(cases) == 10:
                break
            spec = make_spec(rng, replace(k, resources=rng.randint(2, k.resources)), owners)
            doc = pair(rng, spec, evolve(rng, spec, k, rng.randint(1, k.changes)))
            out = report(doc)
            # Most cases break something of ours: a program that ignores the team code must fail.
            if idle(out) and sum(1 for _, o in cases if idle(o)) >= 3:
                continue
            cases.append((json.dumps(doc, indent=1) + "\n", out))
        else:
            raise FamilyError("api_breaking_changes: too few cases that break our endpoints")
        why = {"breaking": "We diff API descriptions on every release and I want a reusable tool for it. ",
               "additive": "Our changelog lists what each release adds to our team's endpoints, and I want a "
                           "reusable tool that finds it. ",
               "verdicts": "For every release I want a per-endpoint compatibility table of our team's endpoints "
                           "from a reusable tool. "}[t.variant]
        t.say(why + self.rules(k) + vtxt + f" The report lists {fmt}.")
        t.expect_program("Its input is one JSON object `{\"old\": <description>, \"new\": <description>}`. "
                         "Hard-code our team code (given here).", cases,
                         {"Python": reference("@@OWNER@@", k.version, "report", t.variant)})
        t.solve(f'sed -i "s/@@OWNER@@/{var}/" /app/solution.py')

    def output_case(self, t: TaskBuilder) -> None:
        self.part(t)
        if t.level == 0:
            return self.atomic_output(t)
        k, rng = t.knobs, t.rng
        owners = self.teams(t)
        fmt, vtxt = self.report_format(k, t.variant)
        spec = make_spec(rng, k, owners)
        # Our team is not the one owning the most endpoints, and every team gets its share of the
        # changes: neither frequency points at it.
        count = {o: sum(1 for e in spec["endpoints"].values() if e["owner"] == o) for o in owners}
        if t.variant == "breaking":
            ours = rng.choice([o for o in owners if count[o] < max(count.values())] or owners)
        else:  # and owns endpoints (verdicts: two at least, when a team does), so there is something to change
            least = 2 if t.variant == "verdicts" and sorted(count.values())[-2] >= 2 else 1
            ours = rng.choice([o for o in owners if least <= count[o] < max(count.values())] or
                              [o for o in owners if count[o]])
        ns = run_python(reference(ours, k.version, "report", t.variant))
        new = evolve(rng, spec, k, k.changes // 2)
        for o in owners:
            new = evolve(rng, new, k, max(1, (k.changes - k.changes // 2) // 2), only=o)
        doc = pair(rng, spec, new)
        # make sure our team is affected by at least one breaking change (additive: one compatible change)
        kinds = [x for x in kind_pool(k) if (x in BREAKING) == (t.variant != "additive") and x != "resp_enum_remove"]
        for _ in range(5 if t.variant == "breaking" else 20):
            if ns["gate"](doc):
                break
            mutate(rng, new, rng.choice(kinds), ours)
            doc = pair(rng, spec, new)
        truth = ns["report"](doc)
        old_name = "/app/api/api-published.json"
        new_name = "/app/api/api-next.json"
        out = "/app/out/breaking.txt"
        ask = "Before we publish, tell me which changes break clients of our team's endpoints (team code given here)."
        if t.variant != "breaking":
            old_name, new_name = rng.choice([("/app/api/api-published.json", "/app/api/api-next.json"),
                                             ("/app/specs/current.json", "/app/specs/proposed.json"),
                                             ("/app/contract/v-live.json", "/app/contract/v-candidate.json")])
            out = "/app/out/additions.txt" if t.variant == "additive" else "/app/out/endpoint-verdicts.txt"
            ask = ("For the changelog, tell me what the proposed description adds, compatibly, to our team's "
                   "endpoints (team code given here)." if t.variant == "additive" else
                   "Our client teams want a verdict for every endpoint of our team (team code given here): is it "
                   "removed, added, broken, compatibly changed or untouched?")
        t.add_file(old_name, dump(doc["old"]))
        t.add_file(new_name, dump(doc["new"]))
        var = t.deliver(ours, "our team code")
        t.say(f"The published API description is `{old_name}` and the proposed next one is `{new_name}`. "
              + ask + vtxt + " " + self.rules(k) + f" The report has {fmt}.")
        t.add_solution_file("apidiff.py", reference("", k.version, "report", t.variant))
        t.solve(f'mkdir -p /app/out\npython3 /solution/apidiff.py "{var}" {old_name} {new_name} > {out}')
        t.expect_output(out, truth, "the report")

    # Level 0: one ownership lookup (hash our code with the salt, pick the endpoints that carry it).
    def atomic_spec(self, t: TaskBuilder, owners: list[str], resources: int) -> dict | None:
        """A small published description in which our team owns some endpoints but not all."""
        spec = make_spec(t.rng, replace(t.knobs, resources=resources), owners)
        mine = sum(1 for e in spec["endpoints"].values() if e["owner"] == owners[0])
        return spec if 0 < mine < len(spec["endpoints"]) else None

    def atomic_rules(self, variant: str) -> str:
        return ATOMIC_RULES + ("" if variant != "additive" else " Its `versions` maps team IDs to the published "
                               "version of each team's part of the API.")

    def atomic_ask(self, variant: str) -> str:
        """What level 0's lookup prints, by variant."""
        return {"breaking": "the endpoints our team owns (team code given here), one `<METHOD> <path>` per line, "
                            "sorted in byte order",
                "additive": "the published version of our team's part of the API (team code given here), the one "
                            "line `X.Y.Z`",
                "verdicts": "how many endpoints of each HTTP method our team owns (team code given here), one line "
                            "`<METHOD> <count>` per method it owns at least one endpoint of, sorted in byte "
                            "order"}[variant]

    def atomic_teams(self, t: TaskBuilder) -> list[str]:
        if t.variant == "breaking":
            return distinct(lambda: unseen(t, lambda: t.code(2), ATOMIC_RULES), 4)
        return distinct(lambda: unseen(t, lambda: t.code(2), self.atomic_rules(t.variant),
                                       self.atomic_ask(t.variant)), 4)

    def atomic_output(self, t: TaskBuilder) -> None:
        owners = self.atomic_teams(t)
        for _ in range(100):
            spec = self.atomic_spec(t, owners, t.knobs.resources)
            if spec is not None:
                break
        else:
            raise FamilyError("api_breaking_changes: no description where our team owns some endpoints")
        desc = publish(t.rng, spec)
        path = "/app/api/api-published.json"
        if t.variant != "breaking":
            ns = run_python(atomic(owners[0], "lookup", t.variant))
            path = t.rng.choice(["/app/api/api-published.json", "/app/specs/current.json", "/app/contract/live.json"])
            out = "/app/out/version.txt" if t.variant == "additive" else "/app/out/methods.txt"
            t.add_file(path, dump(desc))
            var = t.deliver(owners[0], "our team code")
            t.say(f"{self.atomic_rules(t.variant)} From `{path}`, write to `{out}` {self.atomic_ask(t.variant)}.")
            ident = (f"id=$(printf '%s:%s' \"$(jq -r .team_salt {path})\" \"{var}\" | sha256sum | cut -c1-12)\n")
            t.solve(f"mkdir -p /app/out\n{ident}" + (
                f"jq -r --arg id \"$id\" '.versions[$id]' {path} > {out}" if t.variant == "additive" else
                f"jq -r --arg id \"$id\" '.endpoints | to_entries[] | select(.value.owner == $id) | .key' {path} "
                f"| cut -d' ' -f1 | LC_ALL=C sort | uniq -c | awk '{{print $2, $1}}' > {out}"))
            t.expect_output(out, ns["lookup"](desc), "the version" if t.variant == "additive" else "the counts")
            return
        truth = run_python(fill(ATOMIC, OWNER=owners[0], MODE="owned"))["owned"](desc)
        t.add_file(path, dump(desc))
        var = t.deliver(owners[0], "our team code")
        t.say(f"{ATOMIC_RULES} Which endpoints of `{path}` does our team own (team code given here)? One "
              "`<METHOD> <path>` per line, sorted in byte order.")
        t.solve(f"mkdir -p /app/out\n"
                f"id=$(printf '%s:%s' \"$(jq -r .team_salt {path})\" \"{var}\" | sha256sum | cut -c1-12)\n"
                f"jq -r --arg id \"$id\" '.endpoints | to_entries[] | select(.value.owner == $id) | .key' {path} "
                "| LC_ALL=C sort > /app/out/ours.txt")
        t.expect_output("/app/out/ours.txt", "".join(ep + "\n" for ep in truth), "the endpoint list")

    def atomic_program(self, t: TaskBuilder) -> None:
        owners = self.atomic_teams(t)
        if t.variant == "breaking":
            owned = run_python(fill(ATOMIC, OWNER=owners[0], MODE="owned"))["owned"]

            def lookup(desc: dict) -> str:
                return "".join(ep + "\n" for ep in owned(desc))
        else:
            lookup = run_python(atomic(owners[0], "lookup", t.variant))["lookup"]
        var = t.deliver(owners[0], "our team code")
        cases: list[tuple[str, str]] = []
        for _ in range(200):
            if len(cases) == 6:
                break
            spec = self.atomic_spec(t, owners, t.rng.randint(1, t.knobs.resources))
            if spec is not None:
                desc = publish(t.rng, spec)
                cases.append((json.dumps(desc, indent=1) + "\n", lookup(desc)))
        else:
            raise FamilyError("api_breaking_changes: too few descriptions where our team owns some endpoints")
        if t.variant == "breaking":
            t.say(f"{ATOMIC_RULES} Write a tool that reads one description and prints the endpoints our team owns "
                  "(team code given here), one `<METHOD> <path>` per line, sorted in byte order.")
        else:
            t.say(f"{self.atomic_rules(t.variant)} Write a tool that reads one description on standard input and "
                  f"prints {self.atomic_ask(t.variant)}.")
        t.expect_program("Hard-code our team code.", cases,
                         {"Python": atomic("@@OWNER@@", "owned" if t.variant == "breaking" else "lookup", t.variant)})
        t.solve(f'sed -i "s/@@OWNER@@/{var}/" /app/solution.py')

    def atomic_corpus(self, t: TaskBuilder) -> None:
        k, rng = t.knobs, t.rng
        owners = self.atomic_teams(t)
        gate = run_python(atomic(owners[0], "gate", t.variant))["gate"]
        var = t.deliver(owners[0], "our team code")
        clean: list[str] = []
        malicious: list[str] = []
        for _ in range(4000):
            if len(clean) >= k.corpus and len(malicious) >= k.corpus:
                break
            spec = self.atomic_spec(t, owners, rng.randint(1, k.resources))
            if spec is None:
                continue
            new = copy.deepcopy(spec)
            for _ in range(rng.randint(0, 2)):
                mutate(rng, new, rng.choice(["add_endpoint", "add_optional_param", "add_response_field"]))
            # half touch one of our endpoints, half one of another team's
            who = owners[0] if rng.random() < 0.5 else rng.choice(owners[1:])
            if t.variant == "breaking":
                mutate(rng, new, "remove_endpoint", who)
            elif t.variant == "additive":
                mutate(rng, new, "add_endpoint", who)
            else:  # hand one endpoint of ``who`` to another team (possibly ours)
                eps = sorted(ep for ep, e in new["endpoints"].items() if e["owner"] == who)
                if eps:
                    new["endpoints"][rng.choice(eps)]["owner"] = rng.choice([o for o in owners if o != who])
            doc = pair(rng, spec, new)
            bucket = malicious if gate(doc) else clean
            if len(bucket) < k.corpus:
                bucket.append(json.dumps(doc, separators=(",", ":")) + "\n")
        else:
            raise FamilyError(f"api_breaking_changes: fewer than {k.corpus} pull requests of each kind")
        rule = {"breaking": "fail one exactly when an endpoint our team owns in the old description (team code "
                            "given here) is missing from the new one.",
                "additive": "fail one exactly when the new description has an endpoint that the old one lacks and "
                            "that our team (team code given here) owns in the new description.",
                "verdicts": "fail one exactly when an endpoint our team owns in the old description (team code given "
                            "here) is still in the new one but owned there by another team (endpoints handed to "
                            "us, or removed, do not count)."}[t.variant]
        t.say(f"{ATOMIC_RULES} I want a CI gate on pull requests that touch the API description: {rule}")
        t.expect_classifier("Its input is one JSON object `{\"old\": <description>, \"new\": <description>}`. "
                            "Hard-code our team code.", clean, malicious,
                            {"Python": atomic("@@OWNER@@", "gate", t.variant)})
        t.solve(f'sed -i "s/@@OWNER@@/{var}/" /app/solution.py')
