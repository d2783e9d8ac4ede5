"""Which version of each dependency would the resolver pick? npm-style range constraints from one or
several manifests, a local registry mirror (JSON per package) with pre-releases and yanked versions
at higher levels. Variants: the highest version that satisfies every constraint on each package; the
entries of a lockfile that no longer satisfy them (with the version to move to); or the approved
package's releases in one major, in semver precedence order. The approved major of one package is
the delivered value; under partial credit every line that would not depend on it carries it."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import fill, run_python

# One source of truth: host truth, oracle helper and fuzz reference.
REFERENCE = r'''
import sys

APPROVED_PKG = "@PKG@"
APPROVED_MAJOR = @MAJOR@
VARIANT = @VARIANT@  # "resolve", "stale_lock" or "precedence"


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


def eligible(tok, cons, yanked):
    """May the resolver install ``tok`` under the constraints ``cons``?"""
    if yanked:
        return False
    if "-" in tok and not any(pinned(tok, c) for c in cons):
        return False  # pre-releases only when pinned exactly
    return all(satisfies(tok, c) for c in cons)


def resolve(text, major=None):
    major = APPROVED_MAJOR if major is None else major
    cons, avail, locked, section = {}, {}, {}, None
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line in ("[constraints]", "[available]", "[locked]"):
            section = line
            continue
        name, _, rest = line.partition(" ")
        if section == "[constraints]":
            cons.setdefault(name, []).append(rest.strip())
        elif section == "[available]":
            avail.setdefault(name, []).extend(rest.split())
        elif section == "[locked]":
            locked[name] = rest.strip()
    if VARIANT == "precedence":  # the approved package's releases in the major, yanked ones left out
        got = [v for v in avail.get(APPROVED_PKG, []) if not v.endswith("!") and key(v)[0][0] == major]
        return "".join(v + "\n" for v in sorted(got, key=key))
    cons.setdefault(APPROVED_PKG, []).append(f"^{major}.0.0")
    out = []
    for name in sorted(cons):
        best = None
        for tok in avail.get(name, []):
            if eligible(tok, cons[name], tok.endswith("!")) and (best is None or key(tok) > key(best)):
                best = tok
        if VARIANT == "resolve":
            out.append(f"{name} {best or 'NONE'}\n")
        elif name in locked and not eligible(locked[name], cons[name], locked[name] + "!" in avail.get(name, [])):
            out.append(f"{name} {locked[name]} {best or 'NONE'}\n")
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
#define VARIANT @VARIANT@ /* 0: resolve, 1: stale lock entries, 2: precedence order of one major */
#define MAXP 256
#define MAXV 256

typedef struct { char name[128]; char *cons[MAXV]; int ncons; char *vers[MAXV]; int nvers; char *locked; } Pkg;
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

static int byprec(const void *a, const void *b) {
    Ver x, y;
    parse(*(char *const *)a, &x);
    parse(*(char *const *)b, &y);
    return cmpv(&x, &y);
}

/* May the resolver install tok (yanked: published with a trailing '!')? */
static int eligible(const Pkg *p, const char *tok, int yanked) {
    if (yanked) return 0;
    Ver v; parse(tok, &v);
    if (strchr(tok, '-')) {
        int pinned = 0;
        for (int c = 0; c < p->ncons; c++) if (check(&v, p->cons[c], 1)) pinned = 1;
        if (!pinned) return 0;
    }
    for (int c = 0; c < p->ncons; c++) if (!check(&v, p->cons[c], 0)) return 0;
    return 1;
}

static int is_yanked(const Pkg *p, const char *v) {
    size_t n = strlen(v);
    for (int j = 0; j < p->nvers; j++)
        if (strlen(p->vers[j]) == n + 1 && !strncmp(p->vers[j], v, n) && p->vers[j][n] == '!') return 1;
    return 0;
}

int main(void) {
    static char raw[1 << 16];
    int section = 0;
    while (fgets(raw, sizeof raw, stdin)) {
        char *line = trim(raw);
        if (!*line || *line == '#') continue;
        if (!strcmp(line, "[constraints]")) { section = 1; continue; }
        if (!strcmp(line, "[available]")) { section = 2; continue; }
        if (!strcmp(line, "[locked]")) { section = 3; continue; }
        if (!section) continue;
        char *sp = strchr(line, ' ');
        char *rest = "";
        if (sp) { *sp = 0; rest = sp + 1; }
        Pkg *p = get(line);
        if (section == 1) {
            p->cons[p->ncons++] = strdup(trim(rest));
        } else if (section == 3) {
            p->locked = strdup(trim(rest));
        } else {
            char *save, *tok = strtok_r(rest, " \t", &save);
            for (; tok; tok = strtok_r(NULL, " \t", &save)) p->vers[p->nvers++] = strdup(tok);
        }
    }
    Pkg *ap = get(APPROVED_PKG);
    if (VARIANT == 2) {
        char *got[MAXV];
        int n = 0;
        for (int j = 0; j < ap->nvers; j++) {
            size_t l = strlen(ap->vers[j]);
            Ver v; parse(ap->vers[j], &v);
            if (l && ap->vers[j][l - 1] != '!' && v.n[0] == APPROVED_MAJOR) got[n++] = ap->vers[j];
        }
        qsort(got, n, sizeof got[0], byprec);
        for (int j = 0; j < n; j++) printf("%s\n", got[j]);
        return 0;
    }
    char approved[64];
    snprintf(approved, sizeof approved, "^%d.0.0", APPROVED_MAJOR);
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
            if (!eligible(p, tok, n && tok[n - 1] == '!')) continue;
            Ver v; parse(tok, &v);
            if (!best || cmpv(&v, &bv) > 0) { best = tok; bv = v; }
        }
        if (VARIANT == 0) printf("%s %s\n", p->name, best ? best : "NONE");
        else if (p->locked && !eligible(p, p->locked, is_yanked(p, p->locked)))
            printf("%s %s %s\n", p->name, p->locked, best ? best : "NONE");
    }
    return 0;
}
'''

NAMES = ["left-pad", "fastjson", "httpkit", "logtail", "yamlish", "cryptbox", "tinyorm", "queuelet", "ratelimit",
         "uuidgen", "datefmt", "colorize", "argkit", "mimetypes", "zipstream", "retrykit", "pathutil", "csvtool",
         "eventbus", "cachelib", "templar", "minihttp", "sockpool", "textwrap2", "bytesize", "globber"]
# Level 0: the newest release in one major (one version per input line); for the other variants the
# lock lines (`<package> <version>`) off that major, or the major's releases in order.
NEWEST = r'''
import sys

APPROVED_MAJOR = @MAJOR@
VARIANT = @VARIANT@


def newest(text, major=None):
    major = APPROVED_MAJOR if major is None else major
    if VARIANT == "stale_lock":
        pairs = [line.split() for line in text.splitlines() if line.strip()]
        return "".join(sorted(f"{name}\n" for name, v in pairs if int(v.split(".")[0]) != major))
    got = [tuple(int(x) for x in v.split(".")) for v in text.split() if int(v.split(".")[0]) == major]
    if VARIANT == "precedence":
        return "".join(".".join(str(x) for x in v) + "\n" for v in sorted(got))
    return ".".join(str(x) for x in max(got)) + "\n" if got else "NONE\n"


if __name__ == "__main__":
    sys.stdout.write(newest(sys.stdin.read()))
'''
C_NEWEST = r'''
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define APPROVED_MAJOR @@MAJOR@@
#define VARIANT @VARIANT@ /* 0: newest in the major, 1: lock lines off it, 2: the major's releases in order */

static int cmp2(const void *x, const void *y) {
    const long *a = x, *b = y;
    return a[0] != b[0] ? (a[0] < b[0] ? -1 : 1) : (a[1] < b[1] ? -1 : a[1] > b[1]);
}

static int cmps(const void *x, const void *y) { return strcmp(*(char *const *)x, *(char *const *)y); }

int main(void) {
    long a, b, c, bb = -1, bc = -1, got[1024][2];
    int n = 0;
    char line[256], name[200], *off[1024];
    while (fgets(line, sizeof line, stdin) && n < 1024) {
        if (VARIANT == 1) {
            if (sscanf(line, "%199s %ld.", name, &a) == 2 && a != APPROVED_MAJOR) off[n++] = strdup(name);
        } else if (sscanf(line, "%ld.%ld.%ld", &a, &b, &c) == 3 && a == APPROVED_MAJOR) {
            got[n][0] = b;
            got[n++][1] = c;
            if (b > bb || (b == bb && c > bc)) {
                bb = b;
                bc = c;
            }
        }
    }
    if (VARIANT == 1) {
        qsort(off, n, sizeof off[0], cmps);
        for (int i = 0; i < n; i++) printf("%s\n", off[i]);
    } else if (VARIANT == 2) {
        qsort(got, n, sizeof got[0], cmp2);
        for (int i = 0; i < n; i++) printf("%d.%ld.%ld\n", APPROVED_MAJOR, got[i][0], got[i][1]);
    } else if (bb < 0)
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


def stdin_text(reg, cons, lock=None):
    lines = ["[constraints]"] + [f"{p} {c}" for _, p, c in cons] + ["[available]"]
    for name in sorted(reg):
        vers, yanked = reg[name]
        lines.append(name + " " + " ".join(v + ("!" if v in yanked else "") for v in vers))
    if lock is not None:
        lines += ["[locked]"] + [f"{name} {v}" for name, v in sorted(lock.items())]
    return "\n".join(lines) + "\n"


PRE_TAGS = ("alpha", "alpha.1", "alpha.beta", "beta", "beta.2", "beta.11", "rc.1", "rc.2", "rc.10")


def history(rng, k, major):
    """The approved package's releases when their order is asked: most in the major, some beside it; with
    pre-releases on, several tags per release core (where precedence differs from a plain version sort)."""
    cores = [f"{major}.{rng.randint(0, 3)}.{rng.randint(0, 9)}", f"{major}.{rng.randint(4, 12)}.{rng.randint(0, 14)}"]
    n = rng.randint(max(6, k.versions - 4), k.versions)
    for _ in range(50 * n):
        if len(cores) >= n:
            break
        v = (f"{rng.choice([major - 1, major, major, major + 1])}.{rng.choice([0, 1, 2, 3, 8, 9, 10, 11, 12])}."
             f"{rng.choice([0, 1, 2, 3, 5, 9, 10, 14])}")
        if v not in cores:
            cores.append(v)
    out = list(dict.fromkeys(cores))
    if k.pre:
        mine = [v for v in out if v.split(".")[0] == str(major)]
        out += [f"{v}-{tag}" for v in rng.sample(mine, min(3, len(mine))) for tag in rng.sample(PRE_TAGS, 3)]
    rng.shuffle(out)
    yanked = rng.sample([v for v in out if v.split(".")[0] == str(major)], 2) if k.yank else []
    return out, yanked


def lock_world(rng, k, approved, major, eligible):
    """fixture_world with a lockfile: each package locked to an installable version or to any published
    one; at least one entry stale (the approved package, on the next major, when the draw has none)."""
    names, reg, cons = fixture_world(rng, k, approved, major)
    need = {approved: [f"^{major}.0.0"]}
    for _, name, c in cons:
        need.setdefault(name, []).append(c)
    lock = {}
    for name in [*names, approved]:
        vers, yanked = reg[name]
        good = [v for v in vers if eligible(v, need[name], v in yanked)]
        lock[name] = rng.choice(good if good and rng.random() < 0.5 else vers)
    if all(eligible(v, need[name], v in reg[name][1]) for name, v in lock.items()):
        lock[approved] = next(v for v in reg[approved][0] if v.startswith(f"{major + 1}.0."))
    return names, reg, cons, lock


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


def stale_rules(rules: str) -> str:
    return ("The lockfile records the version installed for each package. An entry is stale when the resolver "
            f"could not install its locked version any more: the version fails a constraint on the package{rules}. "
            "The report has one line per stale entry, sorted by package name: the name, the locked version and the "
            "version the resolver would install instead (the highest published version that satisfies every "
            "constraint on the package, or `NONE`), separated by spaces")
PRE_ORDER = (" A pre-release (`2.0.0-rc.1`) comes before its release; pre-release identifiers compare left to right, "
             "digits-only ones numerically and others in ASCII order, a digits-only identifier before any other, "
             "and a shorter run of identifiers before a longer one that begins with it. Leave out yanked releases.")
VARIANT_CODE = {"resolve": 0, "stale_lock": 1, "precedence": 2}  # the C references' VARIANT


@register
class SemverResolve(Family):
    name = "semver_resolve"
    domain = "software_engineering"
    skill_types = ("Dependency Management", "Release Engineering")
    primitive_skills = ("semantic version parsing", "version range matching", "pre-release precedence rules",
                        "lockfile analysis", "JSON traversal", "sorting with tie-breaks")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol", "fuzz_equivalence")
    programs = {"Python": REFERENCE, "C": C_REFERENCE}
    variants = ("resolve", "stale_lock", "precedence")
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

    def stale(self, t: TaskBuilder) -> str:
        return stale_rules(", is yanked, or is a pre-release that no constraint pins exactly" if t.knobs.pre else "")

    def program_case(self, t: TaskBuilder) -> None:
        k, rng, variant = t.knobs, t.rng, t.variant
        approved = rng.choice(APPROVED)
        major = rng.randint(1, 4)
        if t.level == 0:
            return self._atomic_program(t, approved, major)
        # The worked examples resolve for a demo major named in the instruction: they would show ours.
        demo = rng.choice([m for m in range(1, 6) if m != major])
        ref = run_python(fill(REFERENCE, PKG=approved, MAJOR=major, VARIANT=repr(variant)))
        cases = []
        for i in range(10):
            m = demo if i < 2 else major
            kk = replace(k, pkgs=rng.randint(2, k.pkgs))
            if variant == "stale_lock":
                _, reg, cons, lock = lock_world(rng, kk, approved, m, ref["eligible"])
                text = stdin_text(reg, cons, lock)
            else:
                _, reg, cons = fixture_world(rng, kk, approved, m)
                if variant == "precedence":
                    reg[approved], cons = history(rng, k, m), []
                text = stdin_text(reg, cons)
            cases.append((text, ref["resolve"](text, m)))
        var = t.deliver(str(major), f"the approved major version of {approved}")
        head = ("Our release tooling needs a tiny resolver. Its input is a `[constraints]` section (lines "
                "`<package> <constraint>`; several lines for one package must all hold) followed by an "
                "`[available]` section (lines `<package> <version> <version> ...`, the published versions; a "
                "version ending in `!` is yanked)")
        approve = (f"`{approved}` is always required with the constraint `^N.0.0`, where N is the approved major "
                   "version given above")
        if variant == "resolve":
            ask = (f"{head}. For every package that has a constraint, pick the highest "
                   f"published version that satisfies all of its constraints. {SYNTAX}{self.rules(t)} In addition, "
                   f"{approve}. Print {FMT}.")
        elif variant == "stale_lock":
            ask = (f"{head} and a `[locked]` section (lines `<package> <version>`: what the lockfile installs). "
                   f"{SYNTAX}{self.rules(t)} In addition, {approve}. {self.stale(t)}.")
        else:
            ask = ("Our release tooling needs a tiny helper. Its input is an empty `[constraints]` section followed "
                   "by an `[available]` section (lines `<package> <version> <version> ...`, the published versions "
                   "of each package; a version ending in `!` is yanked). Print the published versions of "
                   f"`{approved}` whose major version is the approved major given above, one per line, oldest "
                   "first in semantic-versioning precedence (versions compare numerically part by part)."
                   + (PRE_ORDER if k.pre else ""))
        t.say(f"{ask} The worked examples were resolved with a demo approved major of {demo}; your program must "
              "use ours.")
        t.expect_program("Hard-code the approved major version in the program.", cases,
                         {"Python": fill(REFERENCE, PKG=approved, MAJOR="@@MAJOR@@", VARIANT=repr(variant)),
                          "C": fill(C_REFERENCE, PKG=approved, VARIANT=VARIANT_CODE[variant])})
        t.solve(f'for f in /app/solution.*; do sed -i "s/@@MAJOR@@/{var}/" "$f"; done')

    def output_case(self, t: TaskBuilder) -> None:
        k, rng, variant = t.knobs, t.rng, t.variant
        approved = rng.choice(APPROVED)
        major = rng.randint(1, 4)
        if variant == "stale_lock" and t.level == 0:
            return self._atomic_lock(t, approved, major)
        src = fill(REFERENCE, PKG=approved, MAJOR=major, VARIANT=repr(variant))
        lock = None
        if variant == "stale_lock":
            _, reg, cons, lock = lock_world(rng, k, approved, major, run_python(src)["eligible"])
        else:
            _, reg, cons = fixture_world(rng, k, approved, major)
        if variant == "precedence":  # a release history of its own; no manifests
            reg[approved], cons = history(rng, k, major), []
        for name in sorted(reg):
            vers, yanked = reg[name]
            entries = ",\n".join(f'    "{v}": {{"yanked": {"true" if v in yanked else "false"}, '
                                 f'"published": "2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"}}'
                                 for v in vers)
            t.add_file(f"/app/registry/{name}.json",
                       f'{{\n  "name": "{name}",\n  "versions": {{\n{entries}\n  }}\n}}\n')
        if variant == "precedence":
            where, cat = "", "true"
        elif k.services:
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
        if t.level == 0:  # one lookup: the newest release of one package in the approved major (or all of them)
            var = t.deliver(str(major), f"the approved major version of {approved}")
            truth = run_python(fill(NEWEST, MAJOR=major, VARIANT=repr(variant)))["newest"](" ".join(reg[approved][0]))
            if variant == "resolve":
                t.say(f"The local registry mirror is `/app/registry/` (one JSON file per package; the keys of "
                      f"`versions` are its published versions). What is the highest published version of `{approved}` "
                      "whose major version is the one given above? Versions compare numerically part by part.")
                t.solve(f"mkdir -p /app/out\njq -r '.versions | keys[]' /app/registry/{approved}.json | "
                        f'grep "^{var}\\." | sort -V | tail -n 1 > /app/out/version.txt')
                t.expect_output("/app/out/version.txt", truth, "the version")
                return
            fmt, tag, truth = self._tagged(t, "", var, major, truth)
            t.say(f"The local registry mirror is `/app/registry/` (one JSON file per package; the keys of `versions` "
                  f"are its published versions). List the published versions of `{approved}` whose major version is "
                  f"the one given above, one per line{fmt}, oldest first; versions compare numerically part by part.")
            t.solve(f"mkdir -p /app/out\njq -r '.versions | keys[]' /app/registry/{approved}.json | "
                    f'grep "^{var}\\." | sort -V{tag} > /app/out/versions.txt')
            t.expect_output("/app/out/versions.txt", truth, "the versions")
            return
        var = t.deliver(str(major), f"the approved major version of {approved}")
        truth = run_python(src)["resolve"](stdin_text(reg, cons, lock))
        registry = ("The local registry mirror is `/app/registry/` (one JSON file per package, listing its "
                    "published versions).")
        adding = (f"We are also adding `{approved}` with the constraint `^N.0.0`, where N is the approved major "
                  "version given here.")
        locked = ""
        if variant == "resolve":
            fmt, tag, truth = self._tagged(t, FMT, var, major, truth)
            t.say(f"{where} {registry} {SYNTAX}{self.rules(t)} {adding} Work out which version of each package "
                  "(including that one) the resolver has to install: the highest published version that satisfies "
                  f"every constraint on it. The report has {fmt}.")
            out, what = "/app/out/resolved.txt", "the resolution report"
        elif variant == "stale_lock":
            t.add_file("/app/deps.lock", json.dumps({"lockfileVersion": 2, "packages": {
                name: {"version": v, "resolved": f"registry/{name}.json"} for name, v in sorted(lock.items())}},
                indent=2) + "\n")
            fmt, tag, truth = self._tagged(t, self.stale(t), var, major, truth)
            t.say(f"{where} {registry} {SYNTAX}{self.rules(t)} {adding} Our lockfile is `/app/deps.lock` "
                  f"(`.packages.<name>.version`). {fmt}.")
            locked = "; echo '[locked]'; jq -r '.packages | to_entries[] | .key + \" \" + .value.version' /app/deps.lock"
            out, what = "/app/out/stale.txt", "the stale lock entries"
        else:
            fmt, tag, truth = self._tagged(t, "", var, major, truth)
            t.say(f"{registry} Release engineering wants the release history of `{approved}` in the approved major "
                  f"version N given here: list its published versions whose major version is N, one per line{fmt}, "
                  "oldest first in semantic-versioning precedence (versions compare numerically part by part)."
                  + (PRE_ORDER if k.pre else ""))
            out, what = "/app/out/versions.txt", "the release history"
        t.add_solution_file("resolve.py", fill(REFERENCE, PKG=approved, MAJOR=0, VARIANT=repr(variant)))
        t.solve("mkdir -p /app/out\n"
                f"{{ echo '[constraints]'; {cat}; echo '[available]'; for f in /app/registry/*.json; do "
                "jq -r '.name + \" \" + ([.versions | to_entries[] | .key + (if .value.yanked then \"!\" else \"\" "
                f"end)] | join(\" \"))' \"$f\"; done{locked}; }} | "
                f'python3 /solution/resolve.py "{var}"{tag} > {out}')
        t.expect_output(out, truth, what)

    @staticmethod
    def _tagged(t: TaskBuilder, fmt: str, var: str, major: int, truth: str) -> tuple[str, str, str]:
        """Under partial credit a line that does not depend on N would earn credit without it: every line
        then ends with ` @N` (in the format sentence, the oracle's sed and the truth)."""
        if not t.partial_credit:
            return fmt, "", truth
        return (fmt + ", then a space and `@N` (the approved major version)", f' | sed "s/\\$/ @{var}/"',
                "".join(f"{line} @{major}\n" for line in truth.splitlines()))

    def _atomic_lock(self, t: TaskBuilder, approved: str, major: int) -> None:
        """Level 0 of the lock variant: the lockfile's entries on another major than the approved one."""
        rng = t.rng
        names = sorted(rng.sample(NAMES, rng.randint(3, 5)) + [approved])
        off = rng.sample(names, rng.randint(1, len(names) - 1))  # on another major: some, never all
        lock = {}
        for name in names:
            a = rng.choice([m for m in range(0, 6) if m != major]) if name in off else major
            lock[name] = f"{a}.{rng.choice([0, 1, 2, 3, 8, 9, 10, 11, 12])}.{rng.choice([0, 1, 2, 5, 9, 10, 14])}"
        t.add_file("/app/deps.lock", json.dumps({"lockfileVersion": 2, "packages": {
            name: {"version": v, "resolved": f"registry/{name}.json"} for name, v in lock.items()}}, indent=2) + "\n")
        var = t.deliver(str(major), "the approved major version of our platform packages")
        off_major = run_python(fill(NEWEST, MAJOR=major, VARIANT=repr("stale_lock")))["newest"]
        fmt, tag, truth = self._tagged(t, "", var, major, off_major("".join(f"{n} {v}\n" for n, v in lock.items())))
        t.say("Every package in the lockfile `/app/deps.lock` (`.packages.<name>.version`) is one of our platform "
              "packages, released in lockstep: all of them must be on the approved major version given above. "
              f"Which packages are locked to another major? One name per line{fmt}, sorted in byte order "
              "(`LC_ALL=C sort`).")
        t.solve("mkdir -p /app/out\njq -r --arg m \"" + var + "\" '.packages | to_entries[] | "
                "select((.value.version | split(\".\")[0]) != $m) | .key' /app/deps.lock | LC_ALL=C sort"
                f"{tag} > /app/out/stale.txt")
        t.expect_output("/app/out/stale.txt", truth, "the packages")

    def _atomic_program(self, t: TaskBuilder, approved: str, major: int) -> None:
        """Level 0 as a program: the newest release in the hard-coded major from a list of versions (or all of
        them in order; or, for the lock, the names of the `<package> <version>` lines off that major)."""
        k, rng, variant = t.knobs, t.rng, t.variant
        demo = rng.choice([m for m in range(1, 6) if m != major])
        newest = run_python(fill(NEWEST, MAJOR=major, VARIANT=repr(variant)))["newest"]
        cases = []
        for i in range(10):
            m = demo if i < 2 else major
            _, reg, _ = fixture_world(rng, k, approved, m)
            if variant == "stale_lock":
                text = "".join(f"{name} {rng.choice(vers)}\n" for name, (vers, _) in sorted(reg.items()))
            else:
                text = "".join(v + "\n" for v in reg[approved][0])
            cases.append((text, newest(text, m)))
        var = t.deliver(str(major), f"the approved major version of {approved}")
        ask = {"resolve": (f"its input is the published versions of `{approved}`, one `X.Y.Z` per line; it prints the "
                           "highest one whose major version (X) is the approved major given above, or `NONE` if there "
                           "is none"),
               "precedence": (f"its input is the published versions of `{approved}`, one `X.Y.Z` per line; it prints "
                              "those whose major version (X) is the approved major given above, one per line, oldest "
                              "first"),
               "stale_lock": ("its input is a lockfile's entries, one `<package> X.Y.Z` per line; it prints the names "
                              "of the packages whose major version (X) is not the approved major given above, one per "
                              "line, sorted in byte order")}[variant]
        t.say(f"I want a tiny helper: {ask}. Versions compare numerically part by part (1.10.0 is newer than 1.9.0). "
              f"The worked examples use a demo approved major of {demo}.")
        t.expect_program("Hard-code the approved major version in the program.", cases,
                         {"Python": fill(NEWEST, MAJOR="@@MAJOR@@", VARIANT=repr(variant)),
                          "C": fill(C_NEWEST, VARIANT=VARIANT_CODE[variant])})
        t.solve(f'for f in /app/solution.*; do sed -i "s/@@MAJOR@@/{var}/" "$f"; done')
