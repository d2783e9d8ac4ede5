"""Which version of each dependency would the resolver pick? npm-style range constraints from one or
several manifests, a local registry mirror (JSON per package) with pre-releases and yanked versions
at higher levels; report the highest version that satisfies every constraint on a package. The approved
major of one package is the delivered value; under partial credit every line carries it."""

from __future__ import annotations

from dataclasses import dataclass, replace

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import fill, run_python

# One source of truth: host truth, oracle helper and fuzz reference.
REFERENCE = r'''
import sys

APPROVED_PKG = "@PKG@"
APPROVED_MAJOR = @MAJOR@


def key(v):
    core, _, pre = v.partition("-")
    nums = tuple(int(x) for x in core.split("."))
    if not pre:
        return (nums, 1, ())
    ids = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in pre.split("."))
    return (nums, 0, ids)


def expand(tok):
    """One constraint token -> list of (op, version) comparators."""
    if tok in ("*", "x", "X"):
        return []
    if tok[0] == "^":
        a, b, c = (int(x) for x in tok[1:].split("."))
        hi = f"{a + 1}.0.0" if a else (f"0.{b + 1}.0" if b else f"0.0.{c + 1}")
        return [(">=", f"{a}.{b}.{c}"), ("<", hi)]
    if tok[0] == "~":
        parts = [int(x) for x in tok[1:].split(".")] + [0]
        a, b, c = parts[0], parts[1], parts[2]
        return [(">=", f"{a}.{b}.{c}"), ("<", f"{a}.{b + 1}.0")]
    for op in (">=", "<=", ">", "<", "="):
        if tok.startswith(op):
            return [(op, tok[len(op):])]
    parts = tok.split(".")
    if parts[-1] in ("x", "X", "*"):
        if len(parts) == 2:
            a = int(parts[0])
            return [(">=", f"{a}.0.0"), ("<", f"{a + 1}.0.0")]
        a, b = int(parts[0]), int(parts[1])
        return [(">=", f"{a}.{b}.0"), ("<", f"{a}.{b + 1}.0")]
    return [("=", tok)]


def holds(v, op, w):
    x, y = key(v), key(w)
    return {">=": x >= y, "<=": x <= y, ">": x > y, "<": x < y, "=": x == y}[op]


def satisfies(v, constraint):
    """constraint: 'a b || c' -> any alternative whose comparators all hold."""
    for alt in constraint.split("||"):
        if all(holds(v, op, w) for tok in alt.split() for op, w in expand(tok)):
            return True
    return False


def pinned(v, constraint):
    return any(op == "=" and key(w) == key(v)
               for alt in constraint.split("||") for tok in alt.split() for op, w in expand(tok))


def resolve(text, major=None):
    major = APPROVED_MAJOR if major is None else major
    cons, avail, section = {}, {}, None
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line in ("[constraints]", "[available]"):
            section = line
            continue
        name, _, rest = line.partition(" ")
        if section == "[constraints]":
            cons.setdefault(name, []).append(rest.strip())
        elif section == "[available]":
            avail.setdefault(name, []).extend(rest.split())
    cons.setdefault(APPROVED_PKG, []).append(f"^{major}.0.0")
    out = []
    for name in sorted(cons):
        best = None
        for tok in avail.get(name, []):
            if tok.endswith("!"):
                continue  # yanked
            if "-" in tok and not any(pinned(tok, c) for c in cons[name]):
                continue  # pre-releases only when pinned exactly
            if all(satisfies(tok, c) for c in cons[name]) and (best is None or key(tok) > key(best)):
                best = tok
        out.append(f"{name} {best or 'NONE'}\n")
    return "".join(out)


if __name__ == "__main__":
    sys.stdout.write(resolve(sys.stdin.read(), int(sys.argv[1]) if len(sys.argv) > 1 else None))
'''

C_REFERENCE = r'''
/* Dependency resolver: highest published version satisfying every npm-style constraint. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define APPROVED_PKG "@PKG@"
#define APPROVED_MAJOR @@MAJOR@@
#define MAXP 256
#define MAXV 256

typedef struct { char name[128]; char *cons[MAXV]; int ncons; char *vers[MAXV]; int nvers; } Pkg;
typedef struct { long n[3]; int pre, nid; int isnum[16]; long num[16]; char str[16][32]; } Ver;

static Pkg pkgs[MAXP];
static int np;

static Pkg *get(const char *name) {
    for (int i = 0; i < np; i++) if (strcmp(pkgs[i].name, name) == 0) return &pkgs[i];
    Pkg *p = &pkgs[np++];
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "%s", name);
    return p;
}

static void parse(const char *s, Ver *v) {
    memset(v, 0, sizeof *v);
    char buf[128];
    snprintf(buf, sizeof buf, "%s", s);
    char *dash = strchr(buf, '-');
    if (dash) { *dash = 0; v->pre = 1; }
    sscanf(buf, "%ld.%ld.%ld", &v->n[0], &v->n[1], &v->n[2]);
    if (dash) {
        char *save, *id = strtok_r(dash + 1, ".", &save);
        for (; id && v->nid < 16; id = strtok_r(NULL, ".", &save)) {
            int digits = *id != 0;
            for (char *q = id; *q; q++) if (!isdigit((unsigned char)*q)) digits = 0;
            v->isnum[v->nid] = digits;
            if (digits) v->num[v->nid] = atol(id);
            else snprintf(v->str[v->nid], 32, "%s", id);
            v->nid++;
        }
    }
}

static int cmpv(const Ver *a, const Ver *b) {
    for (int i = 0; i < 3; i++) if (a->n[i] != b->n[i]) return a->n[i] < b->n[i] ? -1 : 1;
    if (a->pre != b->pre) return a->pre ? -1 : 1;
    for (int i = 0; i < a->nid && i < b->nid; i++) {
        if (a->isnum[i] != b->isnum[i]) return a->isnum[i] ? -1 : 1;
        if (a->isnum[i]) { if (a->num[i] != b->num[i]) return a->num[i] < b->num[i] ? -1 : 1; }
        else { int c = strcmp(a->str[i], b->str[i]); if (c) return c < 0 ? -1 : 1; }
    }
    return a->nid == b->nid ? 0 : (a->nid < b->nid ? -1 : 1);
}

/* Expand one token into comparators: ops[i] in {">=", "<=", ">", "<", "="}, versions vs[i]. */
static int expand(const char *tok, const char *ops[2], char vs[2][128]) {
    long a = 0, b = 0, c = 0;
    if (!strcmp(tok, "*") || !strcmp(tok, "x") || !strcmp(tok, "X")) return 0;
    if (tok[0] == '^') {
        sscanf(tok + 1, "%ld.%ld.%ld", &a, &b, &c);
        ops[0] = ">="; snprintf(vs[0], 128, "%ld.%ld.%ld", a, b, c);
        ops[1] = "<";
        if (a) snprintf(vs[1], 128, "%ld.0.0", a + 1);
        else if (b) snprintf(vs[1], 128, "0.%ld.0", b + 1);
        else snprintf(vs[1], 128, "0.0.%ld", c + 1);
        return 2;
    }
    if (tok[0] == '~') {
        sscanf(tok + 1, "%ld.%ld.%ld", &a, &b, &c);
        ops[0] = ">="; snprintf(vs[0], 128, "%ld.%ld.%ld", a, b, c);
        ops[1] = "<"; snprintf(vs[1], 128, "%ld.%ld.0", a, b + 1);
        return 2;
    }
    const char *pre[] = {">=", "<=", ">", "<", "="};
    for (int i = 0; i < 5; i++) {
        size_t l = strlen(pre[i]);
        if (!strncmp(tok, pre[i], l)) { ops[0] = pre[i]; snprintf(vs[0], 128, "%s", tok + l); return 1; }
    }
    size_t n = strlen(tok);
    char last = n ? tok[n - 1] : 0;
    if ((last == 'x' || last == 'X' || last == '*') && n >= 2 && tok[n - 2] == '.') {
        int parts = sscanf(tok, "%ld.%ld", &a, &b);
        int dots = 0;
        for (size_t i = 0; i < n; i++) dots += tok[i] == '.';
        ops[0] = ">="; ops[1] = "<";
        if (dots == 1 || parts < 2) { snprintf(vs[0], 128, "%ld.0.0", a); snprintf(vs[1], 128, "%ld.0.0", a + 1); }
        else { snprintf(vs[0], 128, "%ld.%ld.0", a, b); snprintf(vs[1], 128, "%ld.%ld.0", a, b + 1); }
        return 2;
    }
    ops[0] = "="; snprintf(vs[0], 128, "%s", tok);
    return 1;
}

static int holds(const Ver *v, const char *op, const char *w) {
    Ver x; parse(w, &x);
    int c = cmpv(v, &x);
    if (!strcmp(op, ">=")) return c >= 0;
    if (!strcmp(op, "<=")) return c <= 0;
    if (!strcmp(op, ">")) return c > 0;
    if (!strcmp(op, "<")) return c < 0;
    return c == 0;
}

/* mode 0: does v satisfy the constraint; mode 1: does the constraint pin v exactly. */
static int check(const Ver *v, const char *constraint, int mode) {
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", constraint);
    char *alt = buf;
    for (;;) {
        char *bar = strstr(alt, "||");
        if (bar) *bar = 0;
        int all = 1, pin = 0;
        char *save, *tok = strtok_r(alt, " \t", &save);
        for (; tok; tok = strtok_r(NULL, " \t", &save)) {
            const char *ops[2]; char vs[2][128];
            int k = expand(tok, ops, vs);
            for (int i = 0; i < k; i++) {
                if (!holds(v, ops[i], vs[i])) all = 0;
                if (!strcmp(ops[i], "=") && holds(v, "=", vs[i])) pin = 1;
            }
        }
        if (mode == 0 && all) return 1;
        if (mode == 1 && pin) return 1;
        if (!bar) return 0;
        alt = bar + 2;
    }
}

static char *trim(char *s) {
    while (isspace((unsigned char)*s)) s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1])) *--e = 0;
    return s;
}

static int byname(const void *a, const void *b) { return strcmp(((const Pkg *)a)->name, ((const Pkg *)b)->name); }

int main(void) {
    static char raw[1 << 16];
    int section = 0;
    while (fgets(raw, sizeof raw, stdin)) {
        char *line = trim(raw);
        if (!*line || *line == '#') continue;
        if (!strcmp(line, "[constraints]")) { section = 1; continue; }
        if (!strcmp(line, "[available]")) { section = 2; continue; }
        if (!section) continue;
        char *sp = strchr(line, ' ');
        char *rest = "";
        if (sp) { *sp = 0; rest = sp + 1; }
        Pkg *p = get(line);
        if (section == 1) {
            p->cons[p->ncons++] = strdup(trim(rest));
        } else {
            char *save, *tok = strtok_r(rest, " \t", &save);
            for (; tok; tok = strtok_r(NULL, " \t", &save)) p->vers[p->nvers++] = strdup(tok);
        }
    }
    char approved[64];
    snprintf(approved, sizeof approved, "^%d.0.0", APPROVED_MAJOR);
    Pkg *ap = get(APPROVED_PKG);
    ap->cons[ap->ncons++] = strdup(approved);
    qsort(pkgs, np, sizeof(Pkg), byname);
    for (int i = 0; i < np; i++) {
        Pkg *p = &pkgs[i];
        if (!p->ncons) continue;
        const char *best = NULL;
        Ver bv;
        for (int j = 0; j < p->nvers; j++) {
            const char *tok = p->vers[j];
            size_t n = strlen(tok);
            if (n && tok[n - 1] == '!') continue;
            Ver v; parse(tok, &v);
            if (strchr(tok, '-')) {
                int pinned = 0;
                for (int c = 0; c < p->ncons; c++) if (check(&v, p->cons[c], 1)) pinned = 1;
                if (!pinned) continue;
            }
            int ok = 1;
            for (int c = 0; c < p->ncons && ok; c++) ok = check(&v, p->cons[c], 0);
            if (ok && (!best || cmpv(&v, &bv) > 0)) { best = tok; bv = v; }
        }
        printf("%s %s\n", p->name, best ? best : "NONE");
    }
    return 0;
}
'''

NAMES = ["left-pad", "fastjson", "httpkit", "logtail", "yamlish", "cryptbox", "tinyorm", "queuelet", "ratelimit",
         "uuidgen", "datefmt", "colorize", "argkit", "mimetypes", "zipstream", "retrykit", "pathutil", "csvtool",
         "eventbus", "cachelib", "templar", "minihttp", "sockpool", "textwrap2", "bytesize", "globber"]
# Level 0: the newest release in one major (one version per input line).
NEWEST = r'''
import sys

APPROVED_MAJOR = @MAJOR@


def newest(text, major=None):
    major = APPROVED_MAJOR if major is None else major
    got = [tuple(int(x) for x in v.split(".")) for v in text.split() if int(v.split(".")[0]) == major]
    return ".".join(str(x) for x in max(got)) + "\n" if got else "NONE\n"


if __name__ == "__main__":
    sys.stdout.write(newest(sys.stdin.read()))
'''
C_NEWEST = r'''
#include <stdio.h>

#define APPROVED_MAJOR @@MAJOR@@

int main(void) {
    long a, b, c, bb = -1, bc = -1;
    char line[256];
    while (fgets(line, sizeof line, stdin))
        if (sscanf(line, "%ld.%ld.%ld", &a, &b, &c) == 3 && a == APPROVED_MAJOR && (b > bb || (b == bb && c > bc))) {
            bb = b;
            bc = c;
        }
    if (bb < 0)
        printf("NONE\n");
    else
        printf("%d.%ld.%ld\n", APPROVED_MAJOR, bb, bc);
    return 0;
}
'''
APPROVED = ["corelib", "authz", "platform-sdk", "telemetry"]
SERVICES = ["billing", "gateway", "search", "notifier", "ledger", "checkout"]


def versions(rng, n, pre: bool, yank: bool):
    """A package's published versions (numeric-order traps like 1.9.x next to 1.10.x)."""
    got: list[str] = []
    majors = rng.sample(range(0, 5), rng.randint(2, 4))
    for _ in range(50 * n):
        if len(got) == n:
            break
        a = rng.choice(majors)
        b = rng.choice([0, 1, 2, 3, 8, 9, 10, 11, 12])
        c = rng.choice([0, 0, 1, 2, 3, 5, 9, 10, 14])
        v = f"{a}.{b}.{c}"
        if v not in got:
            got.append(v)
    else:
        raise FamilyError(f"semver_resolve: fewer than {n} different versions drawn")
    out = list(got)
    if pre:
        for v in rng.sample(got, min(3, len(got))):
            a, b, c = (int(x) for x in v.split("."))
            tag = rng.choice(["alpha.1", "beta.2", "rc.1", "rc.10", "rc.2"])
            nv = f"{a}.{b}.{c + 1}-{tag}" if rng.random() < 0.5 else f"{a + 1}.0.0-{tag}"
            if nv not in out:
                out.append(nv)
    rng.shuffle(out)
    yanked = []
    if yank:
        rel = [v for v in out if "-" not in v]
        yanked = rng.sample(rel, min(2, len(rel) // 4 + 1))
    return out, yanked


def constraint(rng, vers, ops, anchor):
    a, b, c = (int(x) for x in anchor.split("."))
    op = rng.choice(ops)
    if op == "^":
        return f"^{a}.{b}.{c}"
    if op == "~":
        return f"~{a}.{b}.{c}" if rng.random() < 0.6 else f"~{a}.{b}"
    if op == "exact":
        return f"{a}.{b}.{c}" if rng.random() < 0.5 else f"={a}.{b}.{c}"
    if op == "range":
        return f">={a}.{b}.0 <{a}.{b + rng.randint(1, 4)}.0"
    if op == "x":
        return f"{a}.x" if rng.random() < 0.5 else f"{a}.{b}.x"
    if op == "lt":
        return f"<={a}.{b}.{c}" if rng.random() < 0.5 else f"<{a}.{b}.{c + 1}"
    if op == "or":
        a2 = a + rng.randint(1, 2)
        return f"^{a}.{b}.0 || ^{a2}.0.0"
    if op == "none":  # the next major: at most a pre-release of it exists
        top = max(int(v.split(".")[0]) for v in vers if "-" not in v)
        return f"^{top + 1}.0.0"
    if op == "pin-pre":
        pres = [v for v in vers if "-" in v]
        return f"={rng.choice(pres)}" if pres else f"^{a}.{b}.{c}"
    raise AssertionError(op)


def fixture_world(rng, k, approved, major):
    names = sorted(rng.sample(NAMES, k.pkgs))
    reg = {}
    for name in names + [approved]:
        vers, yanked = versions(rng, rng.randint(6, k.versions), k.pre, k.yank)
        reg[name] = (vers, yanked)
    # the approved package always has releases in the approved major (and a newer major beside it)
    vers, yanked = reg[approved]
    for v in (f"{major}.{rng.randint(0, 3)}.{rng.randint(0, 9)}", f"{major}.{rng.randint(4, 12)}.{rng.randint(0, 9)}",
              f"{major + 1}.0.{rng.randint(0, 3)}"):
        if v not in vers:
            vers.insert(rng.randrange(len(vers) + 1), v)
    cons: list[tuple[str, str, str]] = []  # (service, pkg, constraint)
    for name in names:
        vers = reg[name][0]
        # services constrain a package around one release, so their ranges usually (not always) meet
        anchor = rng.choice([v for v in vers if "-" not in v and v not in reg[name][1]])
        for i, svc in enumerate(rng.sample(SERVICES, rng.randint(1, 2)) if k.services else ["app"]):
            op = rng.choice(k.ops)
            if k.pre and rng.random() < 0.1:
                op = rng.choice(["none", "pin-pre"])
            cons.append((svc, name, constraint(rng, vers, [op], anchor)))
    return names, reg, cons


def stdin_text(reg, cons):
    lines = ["[constraints]"] + [f"{p} {c}" for _, p, c in cons] + ["[available]"]
    for name in sorted(reg):
        vers, yanked = reg[name]
        lines.append(name + " " + " ".join(v + ("!" if v in yanked else "") for v in vers))
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class Knobs:
    pkgs: int  # constrained packages
    versions: int  # published versions per package (at most)
    ops: tuple[str, ...]  # constraint forms drawn
    pre: bool  # pre-releases (and constraints around them)
    yank: bool  # yanked releases
    services: bool  # constraints spread over several services' manifests


SYNTAX = ("Constraints use npm semantics: `^1.2.3` means >=1.2.3 <2.0.0 (for a 0.x version the caret "
          "locks the leftmost non-zero part: `^0.2.3` is >=0.2.3 <0.3.0, `^0.0.3` is >=0.0.3 <0.0.4); "
          "`~1.2.3` means >=1.2.3 <1.3.0 and `~1.2` means >=1.2.0 <1.3.0; `1.x` means >=1.0.0 <2.0.0 and "
          "`1.2.x` means >=1.2.0 <1.3.0; `1.2.3` and `=1.2.3` "
          "are exact pins; `>=`, `>`, `<=`, `<` are comparators and space-separated comparators must all "
          "hold; `||` separates alternatives. Versions compare numerically part by part (1.10.0 is newer "
          "than 1.9.0).")
FMT = ("one line per package, sorted by package name: the name, a space, and the chosen version, or "
       "`NONE` if no published version qualifies")


@register
class SemverResolve(Family):
    name = "semver_resolve"
    domain = "software_engineering"
    skill_types = ("Dependency Management", "Release Engineering")
    primitive_skills = ("semantic version parsing", "version range matching", "pre-release precedence rules",
                        "lockfile analysis", "JSON traversal", "sorting with tie-breaks")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol", "fuzz_equivalence")
    programs = {"Python": REFERENCE, "C": C_REFERENCE}
    levels = {0: Knobs(pkgs=2, versions=6, ops=("^",), pre=False, yank=False, services=False),
              1: Knobs(pkgs=4, versions=8, ops=("^", "~", "exact"), pre=False, yank=False, services=False),
              2: Knobs(pkgs=7, versions=12, ops=("^", "~", "exact", "range", "x", "lt"), pre=False, yank=False,
                       services=False),
              3: Knobs(pkgs=10, versions=16, ops=("^", "~", "exact", "range", "x", "lt", "or"), pre=True,
                       yank=True, services=False),
              4: Knobs(pkgs=14, versions=22, ops=("^", "~", "exact", "range", "x", "lt", "or"), pre=True,
                       yank=True, services=True)}

    def rules(self, t: TaskBuilder) -> str:
        if not t.knobs.pre:
            return ""
        return (" A version with a pre-release tag (such as `2.0.0-rc.1`) is never picked unless a constraint "
                "pins exactly that version. Yanked releases are never picked.")

    def program_case(self, t: TaskBuilder) -> None:
        k, rng = t.knobs, t.rng
        approved = rng.choice(APPROVED)
        major = rng.randint(1, 4)
        if t.level == 0:
            return self._atomic_program(t, approved, major)
        # The worked examples resolve for a demo major named in the instruction: they would show ours.
        demo = rng.choice([m for m in range(1, 6) if m != major])
        resolve = run_python(fill(REFERENCE, PKG=approved, MAJOR=major))["resolve"]
        cases = []
        for i in range(10):
            m = demo if i < 2 else major
            _, reg, cons = fixture_world(rng, replace(k, pkgs=rng.randint(2, k.pkgs)), approved, m)
            text = stdin_text(reg, cons)
            cases.append((text, resolve(text, m)))
        var = t.deliver(str(major), f"the approved major version of {approved}")
        t.say("Our release tooling needs a tiny resolver. Its input is a `[constraints]` section (lines "
              "`<package> <constraint>`; several lines for one package must all hold) followed by an "
              "`[available]` section (lines `<package> <version> <version> ...`, the published versions; a "
              "version ending in `!` is yanked). For every package that has a constraint, pick the highest "
              f"published version that satisfies all of its constraints. {SYNTAX}{self.rules(t)} In addition, "
              f"`{approved}` is always required with the constraint `^N.0.0`, where N is the approved major "
              f"version given above. Print {FMT}. The worked examples were resolved with a demo approved major "
              f"of {demo}; your program must use ours.")
        t.expect_program("Hard-code the approved major version in the program.", cases,
                         {"Python": fill(REFERENCE, PKG=approved, MAJOR="@@MAJOR@@"),
                          "C": fill(C_REFERENCE, PKG=approved)})
        t.solve(f'for f in /app/solution.*; do sed -i "s/@@MAJOR@@/{var}/" "$f"; done')

    def output_case(self, t: TaskBuilder) -> None:
        k, rng = t.knobs, t.rng
        approved = rng.choice(APPROVED)
        major = rng.randint(1, 4)
        names, reg, cons = fixture_world(rng, k, approved, major)
        for name in sorted(reg):
            vers, yanked = reg[name]
            entries = ",\n".join(f'    "{v}": {{"yanked": {"true" if v in yanked else "false"}, '
                                 f'"published": "2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"}}'
                                 for v in vers)
            t.add_file(f"/app/registry/{name}.json",
                       f'{{\n  "name": "{name}",\n  "versions": {{\n{entries}\n  }}\n}}\n')
        if k.services:
            by_svc: dict[str, list[str]] = {}
            for svc, p, c in cons:
                by_svc.setdefault(svc, []).append(f"{p} {c}")
            for svc in sorted(by_svc):
                t.add_file(f"/app/services/{svc}/deps.txt",
                           f"# dependencies of the {svc} service\n" + "\n".join(by_svc[svc]) + "\n")
            where = ("Each service under `/app/services/` declares its dependencies in `deps.txt` (lines "
                     "`<package> <constraint>`, `#` starts a comment). The services share one install, so a "
                     "package must satisfy the constraints of every service that uses it at once.")
            cat = "grep -hv '^#' /app/services/*/deps.txt"
        else:
            t.add_file("/app/deps.txt", "# package constraints\n" + "\n".join(f"{p} {c}" for _, p, c in cons) + "\n")
            where = "Our dependencies are declared in `/app/deps.txt` (lines `<package> <constraint>`)."
            cat = "grep -v '^#' /app/deps.txt"
        if t.level == 0:  # one lookup: the newest release of one package in the approved major
            var = t.deliver(str(major), f"the approved major version of {approved}")
            t.say(f"The local registry mirror is `/app/registry/` (one JSON file per package; the keys of "
                  f"`versions` are its published versions). What is the highest published version of `{approved}` "
                  "whose major version is the one given above? Versions compare numerically part by part.")
            t.solve(f"mkdir -p /app/out\njq -r '.versions | keys[]' /app/registry/{approved}.json | "
                    f'grep "^{var}\\." | sort -V | tail -n 1 > /app/out/version.txt')
            t.expect_output("/app/out/version.txt", run_python(fill(NEWEST, MAJOR=major))["newest"](
                " ".join(reg[approved][0])),
                            "the version")
            return
        truth = run_python(fill(REFERENCE, PKG=approved, MAJOR=major))["resolve"](stdin_text(reg, cons))
        var = t.deliver(str(major), f"the approved major version of {approved}")
        fmt, tag = FMT, ""
        if t.partial_credit:  # only the approved package's line depends on N: tag every line with it
            fmt += ", then a space and `@N` (the approved major version)"
            truth = "".join(f"{line} @{major}\n" for line in truth.splitlines())
            tag = f' | sed "s/\\$/ @{var}/"'
        t.say(f"{where} The local registry mirror is `/app/registry/` (one JSON file per package, listing its "
              f"published versions). {SYNTAX}{self.rules(t)} We are also adding `{approved}` with the constraint "
              "`^N.0.0`, where N is the approved major version given here. Work out which version of each package "
              "(including that one) the resolver has to install: the highest published version that satisfies "
              f"every constraint on it. The report has {fmt}.")
        t.add_solution_file("resolve.py", fill(REFERENCE, PKG=approved, MAJOR=0))
        t.solve("mkdir -p /app/out\n"
                f"{{ echo '[constraints]'; {cat}; echo '[available]'; for f in /app/registry/*.json; do "
                "jq -r '.name + \" \" + ([.versions | to_entries[] | .key + (if .value.yanked then \"!\" else \"\" "
                "end)] | join(\" \"))' \"$f\"; done; } | "
                f'python3 /solution/resolve.py "{var}"{tag} > /app/out/resolved.txt')
        t.expect_output("/app/out/resolved.txt", truth, "the resolution report")

    def _atomic_program(self, t: TaskBuilder, approved: str, major: int) -> None:
        """Level 0 as a program: the newest release in the hard-coded major, from a list of versions."""
        k, rng = t.knobs, t.rng
        demo = rng.choice([m for m in range(1, 6) if m != major])
        newest = run_python(fill(NEWEST, MAJOR=major))["newest"]
        cases = []
        for i in range(10):
            m = demo if i < 2 else major
            _, reg, _ = fixture_world(rng, k, approved, m)
            text = "".join(v + "\n" for v in reg[approved][0])
            cases.append((text, newest(text, m)))
        var = t.deliver(str(major), f"the approved major version of {approved}")
        t.say(f"I want a tiny helper: its input is the published versions of `{approved}`, one `X.Y.Z` per line; it "
              "prints the highest one whose major version (X) is the approved major given above, or `NONE` if "
              "there is none. Versions compare numerically part by part (1.10.0 is newer than 1.9.0). The worked "
              f"examples use a demo approved major of {demo}.")
        t.expect_program("Hard-code the approved major version in the program.", cases,
                         {"Python": fill(NEWEST, MAJOR="@@MAJOR@@"), "C": C_NEWEST})
        t.solve(f'for f in /app/solution.*; do sed -i "s/@@MAJOR@@/{var}/" "$f"; done')
