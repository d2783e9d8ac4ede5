"""Cut a release from a git history written in Conventional Commits: find the last release tag (semver
order, pre-release and deploy tags ignored), bump the version by the commits since (breaking, feat,
fix; reverts cancel; 0.x keeps breaking changes in the minor), and write the release notes section.
Program variants: the notes generator (fuzzed), or a commit-msg linter (adversarial corpus). The codename
(the header length limit for the linter) is the delivered value; under partial credit every line of
the notes carries the codename. Level 0 asks for the `feat` headers since the last tag (or a header length
check). Variants: the
release notes (notes), the commits that move the version and what each asks for (bump; its hook keeps messages
that move the version; level 0 counts the feat, fix and perf commits), or the commits the notes leave out and why
(ignored; its hook keeps messages the tooling can read; level 0 lists the other commits)."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.unseen import unseen

REFERENCE = r'''
import re
import sys

CODENAME = "@CODENAME@"
HEADER = re.compile(r"^([a-z]+)(?:\(([a-z0-9-]+)\))?(!)?: (.+)$")
SECTIONS = (("feat", "Features"), ("fix", "Bug fixes"), ("perf", "Performance"))


def notes(text, codename=None):
    codename = codename or CODENAME
    lines = text.split("\n")
    prev = lines[0].split()[1]
    msgs, cur = [], None
    for line in lines[1:]:
        if line == "==== commit":
            cur = []
            msgs.append(cur)
        elif cur is not None:
            cur.append(line)
    commits = []
    for m in msgs:
        h = HEADER.match(m[0]) if m else None
        if not h:
            continue
        footer = None
        for line in m[1:]:
            if line.startswith("BREAKING CHANGE: "):
                footer = line[len("BREAKING CHANGE: "):]
        commits.append({"type": h.group(1), "scope": h.group(2), "bang": bool(h.group(3)), "desc": h.group(4),
                        "header": m[0], "footer": footer, "dead": False})
    for i, c in enumerate(commits):
        if c["type"] == "revert" and not c["dead"]:
            c["dead"] = True
            for j in range(i - 1, -1, -1):
                if not commits[j]["dead"] and commits[j]["header"] == c["desc"]:
                    commits[j]["dead"] = True
                    break
    live = [c for c in commits if not c["dead"]]
    breaking = [c for c in live if c["bang"] or c["footer"] is not None]
    a, b, p = (int(x) for x in prev.split("."))
    if breaking:
        a, b, p = (a + 1, 0, 0) if a > 0 else (0, b + 1, 0)
    elif any(c["type"] == "feat" for c in live):
        b, p = b + 1, 0
    elif any(c["type"] in ("fix", "perf") for c in live):
        p += 1
    else:
        return "no release\n"

    def entry(c, text):
        return f"- **{c['scope']}:** {text}" if c["scope"] else f"- {text}"

    out = [f"## {a}.{b}.{p} ({codename})"]
    if breaking:
        out += ["", "### Breaking changes"] + [entry(c, c["footer"] or c["desc"]) for c in breaking]
    for t, title in SECTIONS:
        items = [entry(c, c["desc"]) for c in live if c["type"] == t]
        if items:
            out += ["", f"### {title}"] + items
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    sys.stdout.write(notes(sys.stdin.read(), sys.argv[1] if len(sys.argv) > 1 else None))
'''

LINTER = r'''
import re
import sys

MAX_HEADER = @LIMIT@
TYPES = ("feat", "fix", "perf", "refactor", "docs", "chore", "test", "ci", "build", "style", "revert")


def ok(msg):
    if msg.endswith("\n"):
        msg = msg[:-1]
    lines = msg.split("\n")
    h = re.fullmatch(r"([a-z]+)(\(([a-z0-9-]+)\))?(!)?: (\S.*)", lines[0])
    if not h or h.group(1) not in TYPES or len(lines[0]) > MAX_HEADER:
        return False
    desc = h.group(5)
    if desc.endswith(".") or desc != desc.rstrip() or desc[0].isupper():
        return False
    if len(lines) > 1 and lines[1] != "":
        return False
    for line in lines[1:]:
        if len(line) > 100 or line != line.rstrip():
            return False
        if line.lower().startswith("breaking change") or line.lower().startswith("breaking-change"):
            if not re.fullmatch(r"BREAKING CHANGE: \S.*", line):
                return False
    return True


if __name__ == "__main__":
    sys.exit(0 if ok(sys.stdin.read()) else 1)
'''

C_REFERENCE = r'''
/* Release notes from Conventional Commits: version bump, reverts, sections. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CODENAME "@@CODENAME@@"
#define MAXC 4096

typedef struct {
    char type[64], scope[128], header[1024], desc[1024], footer[1024];
    int bang, has_footer, dead;
} Commit;

static Commit commits[MAXC];
static int nc;

static int parse_header(const char *h, Commit *c) {
    size_t i = 0, n = strlen(h);
    while (i < n && h[i] >= 'a' && h[i] <= 'z') i++;
    if (i == 0 || i >= sizeof c->type) return 0;
    memcpy(c->type, h, i);
    c->type[i] = 0;
    c->scope[0] = 0;
    if (h[i] == '(') {
        size_t j = i + 1, k = j;
        while (k < n && ((h[k] >= 'a' && h[k] <= 'z') || (h[k] >= '0' && h[k] <= '9') || h[k] == '-')) k++;
        if (k == j || h[k] != ')' || k - j >= sizeof c->scope) return 0;
        memcpy(c->scope, h + j, k - j);
        c->scope[k - j] = 0;
        i = k + 1;
    }
    c->bang = 0;
    if (h[i] == '!') { c->bang = 1; i++; }
    if (h[i] != ':' || h[i + 1] != ' ' || h[i + 2] == 0) return 0;
    snprintf(c->desc, sizeof c->desc, "%s", h + i + 2);
    snprintf(c->header, sizeof c->header, "%s", h);
    return 1;
}

static void entry(const Commit *c, const char *text) {
    if (c->scope[0]) printf("- **%s:** %s\n", c->scope, text);
    else printf("- %s\n", text);
}

int main(void) {
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    int ch;
    while ((ch = getchar()) != EOF) {
        if (len + 1 >= cap) buf = realloc(buf, cap *= 2);
        buf[len++] = (char)ch;
    }
    buf[len] = 0;
    char *line = buf, *next;
    int a = 0, b = 0, p = 0, lineno = 0, state = 0; /* state: 0 before a commit, 1 expecting header, 2 in body */
    Commit *cur = NULL;
    for (;;) {
        next = strchr(line, '\n');
        if (next) *next = 0;
        if (lineno == 0) {
            char word[64];
            sscanf(line, "%63s %d.%d.%d", word, &a, &b, &p);
        } else if (strcmp(line, "==== commit") == 0) {
            state = 1;
            cur = NULL;
        } else if (state == 1) {
            state = 2;
            Commit *c = &commits[nc];
            memset(c, 0, sizeof *c);
            if (parse_header(line, c)) { cur = c; nc++; }
        } else if (state == 2 && cur && strncmp(line, "BREAKING CHANGE: ", 17) == 0) {
            cur->has_footer = 1;
            snprintf(cur->footer, sizeof cur->footer, "%s", line + 17);
        }
        lineno++;
        if (!next) break;
        line = next + 1;
    }
    for (int i = 0; i < nc; i++) {
        if (strcmp(commits[i].type, "revert") != 0 || commits[i].dead) continue;
        commits[i].dead = 1;
        for (int j = i - 1; j >= 0; j--)
            if (!commits[j].dead && strcmp(commits[j].header, commits[i].desc) == 0) { commits[j].dead = 1; break; }
    }
    int brk = 0, feat = 0, fix = 0;
    for (int i = 0; i < nc; i++) {
        if (commits[i].dead) continue;
        if (commits[i].bang || commits[i].has_footer) brk = 1;
        if (strcmp(commits[i].type, "feat") == 0) feat = 1;
        if (strcmp(commits[i].type, "fix") == 0 || strcmp(commits[i].type, "perf") == 0) fix = 1;
    }
    if (brk) { if (a > 0) { a++; b = 0; p = 0; } else { b++; p = 0; } }
    else if (feat) { b++; p = 0; }
    else if (fix) p++;
    else { printf("no release\n"); return 0; }
    printf("## %d.%d.%d (%s)\n", a, b, p, CODENAME);
    if (brk) {
        printf("\n### Breaking changes\n");
        for (int i = 0; i < nc; i++) {
            const Commit *c = &commits[i];
            if (!c->dead && (c->bang || c->has_footer)) entry(c, c->has_footer && c->footer[0] ? c->footer : c->desc);
        }
    }
    const char *types[] = {"feat", "fix", "perf"}, *titles[] = {"Features", "Bug fixes", "Performance"};
    for (int t = 0; t < 3; t++) {
        int any = 0;
        for (int i = 0; i < nc; i++) {
            const Commit *c = &commits[i];
            if (c->dead || strcmp(c->type, types[t]) != 0) continue;
            if (!any) printf("\n### %s\n", titles[t]);
            any = 1;
            entry(c, c->desc);
        }
    }
    return 0;
}
'''

C_LINTER = r'''
/* commit-msg hook: exit 0 for a valid Conventional Commits message, 1 otherwise. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_HEADER @@LIMIT@@

static const char *TYPES[] = {"feat", "fix", "perf", "refactor", "docs", "chore", "test", "ci", "build", "style",
                              "revert"};

static int trailing_space(const char *s, size_t n) { return n > 0 && isspace((unsigned char)s[n - 1]); }

static int starts_ci(const char *s, size_t n, const char *p) {
    size_t m = strlen(p);
    if (n < m) return 0;
    for (size_t i = 0; i < m; i++)
        if (tolower((unsigned char)s[i]) != p[i]) return 0;
    return 1;
}

static int header_ok(const char *h, size_t n) {
    size_t i = 0;
    while (i < n && h[i] >= 'a' && h[i] <= 'z') i++;
    if (i == 0) return 0;
    int known = 0;
    for (size_t t = 0; t < sizeof TYPES / sizeof *TYPES; t++)
        if (strlen(TYPES[t]) == i && strncmp(h, TYPES[t], i) == 0) known = 1;
    if (!known) return 0;
    if (i < n && h[i] == '(') {
        size_t j = ++i;
        while (i < n && ((h[i] >= 'a' && h[i] <= 'z') || (h[i] >= '0' && h[i] <= '9') || h[i] == '-')) i++;
        if (i == j || i >= n || h[i] != ')') return 0;
        i++;
    }
    if (i < n && h[i] == '!') i++;
    if (i + 1 >= n || h[i] != ':' || h[i + 1] != ' ') return 0;
    i += 2;
    if (i >= n || isspace((unsigned char)h[i])) return 0;
    if (n > MAX_HEADER) return 0;
    if (h[n - 1] == '.' || trailing_space(h, n) || isupper((unsigned char)h[i])) return 0;
    return 1;
}

int main(void) {
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    int c;
    while ((c = getchar()) != EOF) {
        if (len + 1 >= cap) buf = realloc(buf, cap *= 2);
        buf[len++] = (char)c;
    }
    if (len && buf[len - 1] == '\n') len--;
    buf[len] = 0;
    size_t start = 0, lineno = 0;
    for (;;) {
        char *nl = memchr(buf + start, '\n', len - start);
        size_t end = nl ? (size_t)(nl - buf) : len;
        const char *s = buf + start;
        size_t n = end - start;
        if (lineno == 0) {
            if (!header_ok(s, n)) return 1;
        } else {
            if (lineno == 1 && n != 0) return 1;
            if (n > 100 || trailing_space(s, n)) return 1;
            if (starts_ci(s, n, "breaking change") || starts_ci(s, n, "breaking-change")) {
                if (n < 18 || strncmp(s, "BREAKING CHANGE: ", 17) != 0 || isspace((unsigned char)s[17])) return 1;
            }
        }
        lineno++;
        if (!nl) break;
        start = end + 1;
    }
    return 0;
}
'''

ATOMIC = r'''
import re
import sys

CODENAME = "@CODENAME@"


def features(text, codename=None):
    """The first line of every feat commit, prefixed by the codename."""
    heads = [m.split("\n")[0] for m in text.split("==== commit\n")[1:]]
    return "".join(f"{codename or CODENAME} {h}\n" for h in heads if re.match(r"feat[(!:]", h))


if __name__ == "__main__":
    sys.stdout.write(features(sys.stdin.read()))
'''

C_ATOMIC = r'''
/* The first line of every feat commit, prefixed by the codename. */
#include <stdio.h>
#include <string.h>

#define CODENAME "@@CODENAME@@"

int main(void) {
    static char line[1 << 16];
    int head = 0;
    while (fgets(line, sizeof line, stdin)) {
        if (strcmp(line, "==== commit\n") == 0) {
            head = 1;
            continue;
        }
        if (head && strncmp(line, "feat", 4) == 0 && line[4] && strchr("(!:", line[4]))
            printf("%s %s", CODENAME, line);
        head = 0;
    }
    return 0;
}
'''

ATOMIC_LINTER = r'''
import sys

MAX_HEADER = @LIMIT@


def ok(msg):
    return len(msg.split("\n")[0]) <= MAX_HEADER


if __name__ == "__main__":
    sys.exit(0 if ok(sys.stdin.read()) else 1)
'''

C_ATOMIC_LINTER = r'''
/* commit-msg hook: the header (first line) is at most MAX_HEADER characters. */
#include <stdio.h>

#define MAX_HEADER @@LIMIT@@

int main(void) {
    int c, n = 0;
    while ((c = getchar()) != EOF && c != '\n')
        n++;
    return n > MAX_HEADER;
}
'''

BUILDER = r'''
import json, os, subprocess, sys

plan = json.load(open(sys.argv[1]))
repo = sys.argv[2]
subprocess.run(["git", "init", "-q", "-b", "main", repo], check=True)
for i, c in enumerate(plan):
    with open(os.path.join(repo, c["file"]), "a") as f:
        f.write(f"change {i}\n")
    env = dict(os.environ, GIT_AUTHOR_NAME=c["name"], GIT_AUTHOR_EMAIL=c["email"], GIT_AUTHOR_DATE=c["date"],
               GIT_COMMITTER_NAME=c["name"], GIT_COMMITTER_EMAIL=c["email"], GIT_COMMITTER_DATE=c["date"])
    with open("/tmp/tmax-msg", "w") as f:
        f.write(c["message"])
    subprocess.run(["git", "-C", repo, "add", "-A"], check=True)
    subprocess.run(["git", "-C", repo, "-c", "commit.gpgsign=false", "commit", "-q", "--cleanup=verbatim",
                    "-F", "/tmp/tmax-msg"], check=True, env=env)
    for tag in c["tags"]:
        subprocess.run(["git", "-C", repo, "tag", tag], check=True, env=env)
os.remove("/tmp/tmax-msg")
'''

# The bump and ignored variants' program: the same reading of the range, another report. bump: the commits that
# move the version and what each asks for; ignored: the commits the notes leave out and why.
VARIANT_REFERENCE = r'''
import re
import sys

CODENAME = "@CODENAME@"
VARIANT = "@VARIANT@"
HEADER = re.compile(r"^([a-z]+)(?:\(([a-z0-9-]+)\))?(!)?: (.+)$")


def commits_of(text):
    lines = text.split("\n")
    msgs, cur = [], None
    for line in lines[1:]:
        if line == "==== commit":
            cur = []
            msgs.append(cur)
        elif cur is not None:
            cur.append(line)
    out = []
    for m in msgs:
        h = HEADER.match(m[0]) if m else None
        c = {"header": m[0] if m else "", "ok": bool(h), "dead": False, "footer": False}
        if h:
            c.update(type=h.group(1), bang=bool(h.group(3)), desc=h.group(4),
                     footer=any(x.startswith("BREAKING CHANGE: ") for x in m[1:]))
        out.append(c)
    ok = [c for c in out if c["ok"]]
    for i, c in enumerate(ok):
        if c["type"] == "revert" and not c["dead"]:
            c["dead"] = True
            for j in range(i - 1, -1, -1):
                if not ok[j]["dead"] and ok[j]["header"] == c["desc"]:
                    ok[j]["dead"] = True
                    break
    return lines[0].split()[1], out


def report(text, codename=None):
    codename = codename or CODENAME
    prev, commits = commits_of(text)
    if VARIANT == "ignored":
        out = [f"## Left out of {codename}"]
        for c in commits:
            if not c["ok"]:
                why = "not-conventional"
            elif c["type"] == "revert":
                why = "revert"
            elif c["dead"]:
                why = "reverted"
            elif not (c["bang"] or c["footer"]) and c["type"] not in ("feat", "fix", "perf"):
                why = "other-type"
            else:
                continue
            out.append(f"- {why}: {c['header']}")
        return "\n".join(out) + "\n"
    live = [c for c in commits if c["ok"] and not c["dead"]]
    drivers = []
    for c in live:
        if c["bang"] or c["footer"]:
            drivers.append(f"- breaking: {c['header']}")
        elif c["type"] == "feat":
            drivers.append(f"- feature: {c['header']}")
        elif c["type"] in ("fix", "perf"):
            drivers.append(f"- fix: {c['header']}")
    if not drivers:
        return "no release\n"
    a, b, p = (int(x) for x in prev.split("."))
    if any(d.startswith("- breaking") for d in drivers):
        a, b, p = (a + 1, 0, 0) if a > 0 else (0, b + 1, 0)
    elif any(d.startswith("- feature") for d in drivers):
        b, p = b + 1, 0
    else:
        p += 1
    return "\n".join([f"## {a}.{b}.{p} ({codename})"] + drivers) + "\n"


if __name__ == "__main__":
    sys.stdout.write(report(sys.stdin.read(), sys.argv[1] if len(sys.argv) > 1 else None))
'''

C_VARIANT_REFERENCE = r'''
/* From Conventional Commits: the commits that move the version (bump) or those the notes leave out (ignored). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CODENAME "@@CODENAME@@"
#define VARIANT @VARIANT@ /* 1: bump, 2: ignored */
#define MAXC 4096

typedef struct {
    char type[64], header[1024], desc[1024];
    int ok, bang, footer, dead;
} Commit;

static Commit commits[MAXC];
static int nc;

static int parse_header(const char *h, Commit *c) {
    size_t i = 0, n = strlen(h);
    while (i < n && h[i] >= 'a' && h[i] <= 'z') i++;
    if (i == 0 || i >= sizeof c->type) return 0;
    memcpy(c->type, h, i);
    c->type[i] = 0;
    if (h[i] == '(') {
        size_t j = i + 1, k = j;
        while (k < n && ((h[k] >= 'a' && h[k] <= 'z') || (h[k] >= '0' && h[k] <= '9') || h[k] == '-')) k++;
        if (k == j || h[k] != ')') return 0;
        i = k + 1;
    }
    if (h[i] == '!') { c->bang = 1; i++; }
    if (h[i] != ':' || h[i + 1] != ' ' || h[i + 2] == 0) return 0;
    snprintf(c->desc, sizeof c->desc, "%s", h + i + 2);
    return 1;
}

static int is(const Commit *c, const char *t) { return strcmp(c->type, t) == 0; }

int main(void) {
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    int ch;
    while ((ch = getchar()) != EOF) {
        if (len + 1 >= cap) buf = realloc(buf, cap *= 2);
        buf[len++] = (char)ch;
    }
    buf[len] = 0;
    char *line = buf, *next;
    int a = 0, b = 0, p = 0, lineno = 0, state = 0; /* state: 0 before a commit, 1 expecting header, 2 in body */
    Commit *cur = NULL;
    for (;;) {
        next = strchr(line, '\n');
        if (next) *next = 0;
        if (lineno == 0) {
            char word[64];
            sscanf(line, "%63s %d.%d.%d", word, &a, &b, &p);
        } else if (strcmp(line, "==== commit") == 0) {
            state = 1;
            cur = &commits[nc++];
            memset(cur, 0, sizeof *cur);
        } else if (state == 1) {
            state = 2;
            snprintf(cur->header, sizeof cur->header, "%s", line);
            cur->ok = parse_header(line, cur);
        } else if (state == 2 && cur->ok && strncmp(line, "BREAKING CHANGE: ", 17) == 0) {
            cur->footer = 1;
        }
        lineno++;
        if (!next) break;
        line = next + 1;
    }
    for (int i = 0; i < nc; i++) {
        if (!commits[i].ok || !is(&commits[i], "revert") || commits[i].dead) continue;
        commits[i].dead = 1;
        for (int j = i - 1; j >= 0; j--)
            if (commits[j].ok && !commits[j].dead && strcmp(commits[j].header, commits[i].desc) == 0) {
                commits[j].dead = 1;
                break;
            }
    }
    if (VARIANT == 2) {
        printf("## Left out of %s\n", CODENAME);
        for (int i = 0; i < nc; i++) {
            const Commit *c = &commits[i];
            const char *why = NULL;
            if (!c->ok) why = "not-conventional";
            else if (is(c, "revert")) why = "revert";
            else if (c->dead) why = "reverted";
            else if (!c->bang && !c->footer && !is(c, "feat") && !is(c, "fix") && !is(c, "perf")) why = "other-type";
            if (why) printf("- %s: %s\n", why, c->header);
        }
        return 0;
    }
    int brk = 0, feat = 0, fix = 0;
    for (int i = 0; i < nc; i++) {
        const Commit *c = &commits[i];
        if (!c->ok || c->dead) continue;
        if (c->bang || c->footer) brk = 1;
        else if (is(c, "feat")) feat = 1;
        else if (is(c, "fix") || is(c, "perf")) fix = 1;
    }
    if (brk) { if (a > 0) { a++; b = 0; p = 0; } else { b++; p = 0; } }
    else if (feat) { b++; p = 0; }
    else if (fix) p++;
    else { printf("no release\n"); return 0; }
    printf("## %d.%d.%d (%s)\n", a, b, p, CODENAME);
    for (int i = 0; i < nc; i++) {
        const Commit *c = &commits[i];
        if (!c->ok || c->dead) continue;
        if (c->bang || c->footer) printf("- breaking: %s\n", c->header);
        else if (is(c, "feat")) printf("- feature: %s\n", c->header);
        else if (is(c, "fix") || is(c, "perf")) printf("- fix: %s\n", c->header);
    }
    return 0;
}
'''

# The bump and ignored variants' hook: keep a message that moves the version (bump) or one the release
# tooling reads at all (ignored: a Conventional Commits header of a known type), with the header within the limit.
VARIANT_LINTER = r'''
import re
import sys

MAX_HEADER = @LIMIT@
VARIANT = "@VARIANT@"
TYPES = ("feat", "fix", "perf", "refactor", "docs", "chore", "test", "ci", "build", "style", "revert")


def ok(msg):
    lines = msg.split("\n")
    h = re.fullmatch(r"([a-z]+)(\(([a-z0-9-]+)\))?(!)?: (.+)", lines[0])
    if not h or len(lines[0]) > MAX_HEADER:
        return False
    if VARIANT == "ignored":
        return h.group(1) in TYPES
    return h.group(1) in ("feat", "fix", "perf") or bool(h.group(4)) or \
        any(x.startswith("BREAKING CHANGE: ") for x in lines[1:])


if __name__ == "__main__":
    sys.exit(0 if ok(sys.stdin.read()) else 1)
'''

C_VARIANT_LINTER = r'''
/* commit-msg hook: a header within MAX_HEADER that moves the version (bump) or is of a known type (ignored). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_HEADER @@LIMIT@@
#define VARIANT @VARIANT@ /* 1: bump, 2: ignored */

static const char *TYPES[] = {"feat", "fix", "perf", "refactor", "docs", "chore", "test", "ci", "build", "style",
                              "revert"};

int main(void) {
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    int c;
    while ((c = getchar()) != EOF) {
        if (len + 1 >= cap) buf = realloc(buf, cap *= 2);
        buf[len++] = (char)c;
    }
    buf[len] = 0;
    char *nl = strchr(buf, '\n');
    size_t n = nl ? (size_t)(nl - buf) : len, i = 0;
    const char *h = buf;
    while (i < n && h[i] >= 'a' && h[i] <= 'z') i++;
    size_t tlen = i;
    if (tlen == 0 || n > MAX_HEADER) return 1;
    if (i < n && h[i] == '(') {
        size_t j = ++i;
        while (i < n && ((h[i] >= 'a' && h[i] <= 'z') || (h[i] >= '0' && h[i] <= '9') || h[i] == '-')) i++;
        if (i == j || i >= n || h[i] != ')') return 1;
        i++;
    }
    int bang = 0;
    if (i < n && h[i] == '!') { bang = 1; i++; }
    if (i + 2 >= n || h[i] != ':' || h[i + 1] != ' ') return 1;
    int known = 0, moves = 0;
    for (size_t t = 0; t < sizeof TYPES / sizeof *TYPES; t++)
        if (strlen(TYPES[t]) == tlen && strncmp(h, TYPES[t], tlen) == 0) known = 1, moves = t < 3;
    if (VARIANT == 2) return !known;
    if (moves || bang) return 0;
    for (char *s = nl; s; s = strchr(s + 1, '\n'))
        if (strncmp(s + 1, "BREAKING CHANGE: ", 17) == 0) return 0;
    return 1;
}
'''

# Level 0 of the bump and ignored variants: the feat, fix and perf commits counted, or the other commits' headers.
ATOMIC_VARIANT = r'''
import re
import sys

CODENAME = "@CODENAME@"
VARIANT = "@VARIANT@"


def report(text, codename=None):
    codename = codename or CODENAME
    heads = [m.split("\n")[0] for m in text.split("==== commit\n")[1:]]
    moving = [h for h in heads if re.match(r"(feat|fix|perf)[(!:]", h)]
    if VARIANT == "ignored":
        return "".join(f"{codename} {h}\n" for h in heads if h not in moving)
    return "".join(f"{codename} {t} {sum(1 for h in moving if h.startswith(t))}\n" for t in ("feat", "fix", "perf"))


if __name__ == "__main__":
    sys.stdout.write(report(sys.stdin.read()))
'''

C_ATOMIC_VARIANT = r'''
/* The feat, fix and perf commits counted (bump), or the other commits' first lines (ignored). */
#include <stdio.h>
#include <string.h>

#define CODENAME "@@CODENAME@@"
#define VARIANT @VARIANT@ /* 1: bump, 2: ignored */

static int moving(const char *h) {
    const char *types[] = {"feat", "fix", "perf"};
    for (int t = 0; t < 3; t++) {
        size_t n = strlen(types[t]);
        if (strncmp(h, types[t], n) == 0 && h[n] && strchr("(!:", h[n])) return t + 1;
    }
    return 0;
}

int main(void) {
    static char line[1 << 16];
    int head = 0, count[4] = {0};
    while (fgets(line, sizeof line, stdin)) {
        if (strcmp(line, "==== commit\n") == 0) {
            head = 1;
            continue;
        }
        if (head) {
            int m = moving(line);
            count[m]++;
            if (VARIANT == 2 && !m) printf("%s %s", CODENAME, line);
        }
        head = 0;
    }
    if (VARIANT == 1) printf("%s feat %d\n%s fix %d\n%s perf %d\n", CODENAME, count[1], CODENAME, count[2], CODENAME,
                             count[3]);
    return 0;
}
'''

SCOPES = ["api", "ui", "db", "auth", "cli", "deps", "core", "parser", "cache", "docs"]
DESCS = {"feat": ["add export to csv", "support dark mode", "allow custom retry policies", "add bulk delete endpoint",
                  "expose health metrics", "add sso login", "support webhooks", "add pagination to search"],
         "fix": ["handle empty payloads", "avoid crash on missing config", "correct timezone offsets",
                 "close leaked file handles", "retry on connection reset", "escape quotes in csv output",
                 "fix off-by-one in pager"],
         "perf": ["cache compiled templates", "batch database writes", "avoid quadratic merge"],
         "refactor": ["split request handler", "extract validation module", "rename internal helpers"],
         "docs": ["document rate limits", "update install guide", "fix typos in readme"],
         "chore": ["bump dev dependencies", "update license year", "tidy makefile"],
         "test": ["add regression test for pager", "speed up fixtures"], "ci": ["cache pip downloads"],
         "build": ["pin toolchain version"], "style": ["apply formatter"]}
BREAK_TEXT = ["the `--legacy` flag was removed", "config keys are now snake_case", "drop support for python 3.8",
              "the v1 endpoints are gone", "timeouts are now in milliseconds"]
NOISE = ["Merge branch 'hotfix' into main", "wip", "Update README.md", "Fixed stuff", "fix typo"]
PEOPLE = [("Ana Souza", "ana@proj.example"), ("Lars Berg", "lars@proj.example"), ("Mei Chen", "mei@proj.example"),
          ("Omar Haddad", "omar@proj.example")]


def commit_msgs(rng, k, n):
    """n commit messages (oldest first), conventional with noise, breaking changes and reverts per level."""
    out: list[str] = []
    headers: list[str] = []
    types = ["feat", "fix", "fix", "perf", "refactor", "docs", "chore", "test", "ci", "build", "style"]
    for _ in range(n):
        r = rng.random()
        if k.noise and r < 0.12:
            out.append(rng.choice(NOISE) + "\n")
            continue
        if k.reverts and r < 0.22 and headers:
            out.append(f"revert: {rng.choice(headers)}\n\nThis reverts an earlier change.\n")
            continue
        t = rng.choice(types)
        scope = rng.choice(SCOPES) if rng.random() < 0.6 else None
        bang = k.bang and rng.random() < 0.1
        header = f"{t}{f'({scope})' if scope else ''}{'!' if bang else ''}: {rng.choice(DESCS[t])}"
        body = []
        if rng.random() < 0.4:
            body.append(rng.choice(["The old behaviour surprised users.", "Found while profiling.",
                                    "Requested by support."]))
        footers = []
        if k.footer and rng.random() < 0.1:
            footers.append(f"BREAKING CHANGE: {rng.choice(BREAK_TEXT)}")
        if rng.random() < 0.3:
            footers.append(f"Refs: DEV-{rng.randrange(100, 999)}")
        msg = header + "\n"
        if body:
            msg += "\n" + "\n".join(body) + "\n"
        if footers:
            msg += "\n" + "\n".join(footers) + "\n"
        out.append(msg)
        headers.append(header)
    if not any(m.startswith(("feat", "fix")) for m in out):
        out.append(f"fix: {rng.choice(DESCS['fix'])}\n")
    return out


def fuzz_text(prev: str, msgs: list[str]) -> str:
    return f"previous {prev}\n" + "".join("==== commit\n" + m for m in msgs)


def valid_msg(rng, limit: int) -> str:
    t = rng.choice(["feat", "fix", "perf", "refactor", "docs", "chore", "test", "ci", "build", "style", "revert"])
    scope = rng.choice(SCOPES + ["api-v2", "i18n"]) if rng.random() < 0.6 else None
    desc = rng.choice([d for ds in DESCS.values() for d in ds])
    header = f"{t}{f'({scope})' if scope else ''}{'!' if rng.random() < 0.15 else ''}: {desc}"
    while len(header) > limit:
        header = header[:-1].rstrip()
    msg = header
    if rng.random() < 0.5:
        msg += "\n\n" + rng.choice(["Some context for reviewers.", "Fixes the nightly build.\nSee the ticket."])
    if rng.random() < 0.3:
        msg += "\n\n" + rng.choice([f"BREAKING CHANGE: {rng.choice(BREAK_TEXT)}", f"Refs: DEV-{rng.randrange(1000)}"])
    return msg + "\n"


def broken_msg(rng, limit: int) -> str:
    good = valid_msg(rng, limit)
    header, _, rest = good.partition("\n")
    kind = rng.choice(["type_case", "no_space", "empty_scope", "upper_scope", "bad_type", "period", "too_long",
                       "no_blank", "footer_case", "space_before_colon", "double_space", "capital", "trailing_ws",
                       "long_body"])
    t, _, desc = header.partition(": ")
    if kind == "type_case":
        header = t[0].upper() + t[1:] + ": " + desc
    elif kind == "no_space":
        header = t + ":" + desc
    elif kind == "empty_scope":
        header = t.split("(")[0] + "(): " + desc
    elif kind == "upper_scope":
        header = t.split("(")[0] + "(API): " + desc
    elif kind == "bad_type":
        header = rng.choice(["feature", "bugfix", "hotfix", "update", "misc"]) + ": " + desc
    elif kind == "period":
        header = header + "."
    elif kind == "too_long":
        header = t + ": " + desc + " and " + "also tidy the surrounding code paths" * 2
        header = header[:limit + rng.randint(1, 6)]
    elif kind == "no_blank":
        return header + "\n" + "This line should have been separated by a blank line.\n"
    elif kind == "footer_case":
        return header + "\n\n" + rng.choice(["breaking change: ", "Breaking Change: ", "BREAKING-CHANGE "]) + \
            rng.choice(BREAK_TEXT) + "\n"
    elif kind == "space_before_colon":
        header = t + " : " + desc
    elif kind == "double_space":
        header = t + ":  " + desc
    elif kind == "capital":
        header = t + ": " + desc[0].upper() + desc[1:]
    elif kind == "trailing_ws":
        header = header + " "
    else:
        return header + "\n\n" + "x" * 101 + "\n"
    return header + "\n" + rest


def boundary_msgs(rng, limit: int, valid) -> tuple[str, str]:
    """(a valid message whose header is exactly ``limit`` long, one whose header is one longer and has no
    other fault): together they pin the length limit, so no other limit sorts the corpus right."""
    out = []
    for n in (limit, limit + 1):
        for _ in range(50):
            words = [rng.choice([d for ds in DESCS.values() for d in ds])]
            while len(" ".join(words)) < n:  # grows every pass: bounded by n
                words.append(rng.choice(["and", "also", "tidy", "the", "old", "code", "paths", "for", "users"]))
            header = f"{rng.choice(['feat', 'fix', 'perf', 'chore'])}({rng.choice(SCOPES)}): {' '.join(words)}"[:n]
            if header[-1] not in " .":
                msg = header + "\n"
                if valid[limit](msg) == (n == limit) and valid[limit + 1](msg):
                    out.append(msg)
                    break
        else:
            raise FamilyError(f"release_notes: no commit message with a header of exactly {n} characters")
    return out[0], out[1]


@dataclass(frozen=True)
class Knobs:
    commits: int  # commits in the coming release
    noise: bool  # commits that are not Conventional Commits
    bang: bool  # `!` breaking markers
    footer: bool  # BREAKING CHANGE footers
    reverts: bool  # reverts that cancel an earlier commit
    tags: int  # earlier release tags
    odd_tags: bool  # pre-release and deploy tags beside the releases
    zero: bool  # 0.x versions (breaking bumps the minor)
    corpus: int  # items per corpus (clean and malicious) for the commit-msg hook


@register
class ReleaseNotes(Family):
    name = "release_notes"
    domain = "software_engineering"
    skill_types = ("Release Engineering", "Version Control")
    primitive_skills = ("conventional commits", "changelog generation", "tag-based release tracking",
                        "semantic version parsing", "commit message parsing", "git log filtering",
                        "regular expressions", "input validation")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol", "fuzz_equivalence", "adversarial_corpus")
    programs = {"Python": REFERENCE, "C": C_REFERENCE}
    variants = ("notes", "bump", "ignored")
    levels = {0: Knobs(commits=5, noise=False, bang=False, footer=False, reverts=False, tags=1, odd_tags=False,
                       zero=False, corpus=12),
              1: Knobs(commits=6, noise=False, bang=False, footer=False, reverts=False, tags=1, odd_tags=False,
                       zero=False, corpus=20),
              2: Knobs(commits=10, noise=True, bang=True, footer=False, reverts=False, tags=3, odd_tags=False,
                       zero=False, corpus=30),
              3: Knobs(commits=16, noise=True, bang=True, footer=True, reverts=True, tags=4, odd_tags=True,
                       zero=False, corpus=40),
              4: Knobs(commits=24, noise=True, bang=True, footer=True, reverts=True, tags=6, odd_tags=True,
                       zero=True, corpus=50)}

    def rules(self, k) -> str:
        r = ("Commit messages follow Conventional Commits: the first line is `<type>(<scope>)!: <description>` "
             "(scope and `!` optional); commits whose first line does not have that form are ignored. ")
        if k.reverts:
            r += ("A commit `revert: <first line of another commit>` cancels the most recent earlier, not yet "
                  "cancelled commit in the range with exactly that first line; neither of the two counts any more. ")
        r += ("A commit is breaking if it has `!` before the colon"
              + (" or a footer line starting with `BREAKING CHANGE: `" if k.footer else "") + ". The new version "
              "bumps the previous one: major if any counted commit is breaking"
              + (" (while the major version is 0, a breaking change bumps the minor instead)" if k.zero else "")
              + ", otherwise minor if there is a `feat`, otherwise patch if there is a `fix` or `perf`; if none "
              "applies the whole output is the single line `no release`. The notes are: a line `## X.Y.Z (<codename>)`; "
              "then, each only if not empty and each preceded by an empty line, the sections `### Breaking changes`"
              + (" (one entry per breaking commit, whose text is the footer text after `BREAKING CHANGE: ` if it has "
                 "one, else its description)" if k.footer else " (one entry per breaking commit, with its "
                                                                "description)")
              + ", `### Features` (`feat`), `### Bug fixes` (`fix`) and `### Performance` (`perf`), whose entries "
              "are the commits' descriptions (a breaking `feat` appears under both headings). Each entry is a line "
              "`- **<scope>:** <text>`, or `- <text>` for a commit without scope; entries keep commit order, oldest "
              "first. Other commit types do not appear except under breaking changes.")
        return r

    def corpus_case(self, t: TaskBuilder) -> None:
        self.part(t)
        if t.variant != "notes":  # one hook for every level
            return self.variant_corpus(t)
        if t.level == 0:
            return self.atomic_corpus(t)
        k, rng = t.knobs, t.rng
        limit = rng.choice([50, 60, 64, 72])
        var = t.deliver(str(limit), "the maximum header length")
        valid = {n: run_python(fill(LINTER, LIMIT=n))["ok"] for n in (limit, limit + 1)}
        ok = valid[limit]
        clean: list[str] = []
        malicious: list[str] = []
        for _ in range(k.corpus * 50):
            if len(clean) == k.corpus - 1 and len(malicious) == k.corpus - 1:
                break
            m = valid_msg(rng, limit)
            if len(clean) < k.corpus - 1 and ok(m) and m not in clean:
                clean.append(m)
            m = broken_msg(rng, limit)
            if len(malicious) < k.corpus - 1 and not ok(m) and m not in malicious:
                malicious.append(m)
        else:
            raise FamilyError("release_notes: too few distinct commit messages for the corpora")
        at, over = boundary_msgs(rng, limit, valid)
        clean.insert(rng.randrange(len(clean) + 1), at)
        malicious.insert(rng.randrange(len(malicious) + 1), over)
        t.say("Half the team ignores our commit conventions and it breaks the release tooling. I need a "
              "`commit-msg` hook that checks one commit message. A valid message: the first line (the header) is "
              "`<type>(<scope>)!: <description>` where the scope in parentheses and the `!` are optional; type "
              "is one of feat, fix, perf, refactor, docs, chore, test, ci, build, style, revert; the scope is "
              "one or more lower-case letters, digits or `-`; exactly one space follows the colon; the "
              "description is not empty, does not start with an upper-case letter, does not end with `.` and has "
              "no trailing whitespace; the whole header is at most the maximum header length given here. If the "
              "message has more lines, the second one is empty. No line after the header is longer than 100 "
              "characters or ends in whitespace. A line that starts with `breaking change` or `breaking-change` "
              "in any letter case must be exactly `BREAKING CHANGE: ` followed by text that starts with a "
              "non-space. A final newline at the end of the message is not part of it.")
        t.expect_classifier("The message arrives on standard input. Hard-code the length limit.", clean,
                            malicious, {"Python": fill(LINTER, LIMIT="@@LIMIT@@"), "C": C_LINTER})
        t.solve(f'for f in /app/solution.*; do sed -i "s/@@LIMIT@@/{var}/" "$f"; done')

    def codename(self, t: TaskBuilder, *extra: str) -> str:
        """The release codename: the delivered value, one code word nothing the agent sees spells."""
        return unseen(t, lambda: t.code(1), self.rules(t.knobs), *extra)

    def program_case(self, t: TaskBuilder) -> None:
        self.part(t)
        if t.level == 0:
            return self.atomic_program(t)
        if t.variant != "notes":
            return self.variant_program(t)
        k, rng = t.knobs, t.rng
        texts = []
        for _ in range(10):
            major = 0 if k.zero and rng.random() < 0.4 else rng.randint(1, 4)
            prev = f"{major}.{rng.randint(0, 12)}.{rng.randint(0, 9)}"
            texts.append(fuzz_text(prev, commit_msgs(rng, k, rng.randint(2, k.commits))))
        # The worked examples carry a demo codename named in the instruction: they would show ours.
        demo = self.codename(t, *texts)
        codename = self.codename(t, *texts, demo)
        notes = run_python(fill(REFERENCE, CODENAME=codename))["notes"]
        cases = [(text, notes(text, demo if i < 2 else codename)) for i, text in enumerate(texts)]
        if all(out == "no release\n" for _, out in cases[2:]):
            raise FamilyError("release_notes: no hidden case makes a release, so none needs the codename")
        var = t.deliver(codename, "the release codename")
        t.say("I want our release notes generated instead of handwritten. The input is a line "
              "`previous X.Y.Z` (the last released version) followed by the commits since that release, oldest "
              "first, each introduced by a line `==== commit` and followed by its full message. "
              + self.rules(k) + f" The codename is the release codename given here; the worked examples were made "
              f"with the demo codename `{demo}` instead.")
        t.expect_program("Hard-code the codename.", cases, {"Python": fill(REFERENCE, CODENAME="@@CODENAME@@"),
                                                            "C": C_REFERENCE})
        t.solve(f'for f in /app/solution.*; do sed -i "s/@@CODENAME@@/{var}/" "$f"; done')

    def history(self, t: TaskBuilder) -> tuple[str, list[str], str]:
        """The repository's plan: (the previous release, the coming release's commit messages, the plan)."""
        k, rng = t.knobs, t.rng
        # The repository: older releases, then the commits of the coming release.
        major = 0 if k.zero and rng.random() < 0.5 else rng.randint(1, 3)
        minor = rng.randint(8, 10) if k.tags > 2 else rng.randint(0, 5)  # crosses 9 -> 10 for sort traps
        versions = []
        for i in range(k.tags):
            versions.append(f"{major}.{minor + i}.{rng.randint(0, 3) if i < k.tags - 1 else rng.randint(0, 2)}")
        plan = []
        day = 1_720_000_000 + rng.randrange(10**6)

        def add(msg: str, tags: list[str]) -> None:
            nonlocal day
            who = rng.choice(PEOPLE)
            day += rng.randrange(3600, 86400 * 2)
            plan.append({"name": who[0], "email": who[1], "date": f"@{day} +0000", "message": msg, "tags": tags,
                         "file": rng.choice(["CHANGES.txt", "src.txt", "notes.txt"])})

        add("chore: initial import\n", [])
        for v in versions:
            for m in commit_msgs(rng, replace(k, reverts=False), rng.randint(2, 4)):
                add(m, [])
            plan[-1]["tags"].append(f"v{v}")
        prev = versions[-1]
        msgs = commit_msgs(rng, k, k.commits)
        for i, m in enumerate(msgs):
            tags = []
            if k.odd_tags and i == len(msgs) // 2:
                tags.append(f"v{int(prev.split('.')[0]) + 1}.0.0-rc.1")
            if k.odd_tags and i == len(msgs) // 3:
                tags.append(f"deploy-{rng.randrange(100, 999)}")
            add(m, tags)
        plan_json = json.dumps(plan, sort_keys=True) + "\n"
        return prev, msgs, plan_json

    def output_case(self, t: TaskBuilder) -> None:
        self.part(t)
        if t.level == 0:
            return self.atomic_output(t)
        if t.variant != "notes":
            return self.variant_output(t)
        k = t.knobs
        prev, msgs, plan_json = self.history(t)
        codename = self.codename(t, plan_json)
        truth = run_python(fill(REFERENCE, CODENAME=codename))["notes"](fuzz_text(prev, msgs))
        t.add_file("/tmp/tmax-git/plan.json", plan_json)
        t.add_file("/tmp/tmax-git/build.py", BUILDER)
        t.add_setup("python3 /tmp/tmax-git/build.py /tmp/tmax-git/plan.json /app/repo && rm -rf /tmp/tmax-git")
        var = t.deliver(codename, "the release codename")
        tags = (" Release tags are `vX.Y.Z`; other tags (pre-releases such as `v3.0.0-rc.1`, deploy markers) are "
                "not releases.") if k.odd_tags else " Releases are tagged `vX.Y.Z`."
        t.say("Time to cut the next release of the project in `/app/repo` (branch `main`)." + tags + " The previous "
              "release is the highest released version by semantic-version order, and the release contains every "
              "commit after it up to `main`'s latest commit. " + self.rules(k) + " The codename is the release "
              "codename given here.")
        tag = ""
        if t.partial_credit:  # headings, empty lines and entries do not depend on the codename: tag them all
            t.say("Our release database takes the notes without their empty lines and with every line prefixed "
                  "by the codename and a space (`<codename> ### Features`, `<codename> no release`).")
            truth = "".join(f"{codename} {line}\n" for line in truth.splitlines() if line)
            tag = f' | sed -e "/^\\$/d" -e "s/^/{var} /"'
        t.add_solution_file("notes.py", fill(REFERENCE, CODENAME=""))
        t.solve("mkdir -p /app/out\ncd /app/repo\n"
                "prev=$(git tag -l 'v*' | grep -E '^v[0-9]+\\.[0-9]+\\.[0-9]+$' | sort -V | tail -n1)\n"
                "{ echo \"previous ${prev#v}\"; git log --reverse --format='==== commit%n%B' \"$prev..HEAD\" | "
                "python3 -c 'import sys,re; sys.stdout.write(re.sub(r\"\\n+(?=(==== commit\\n|$))\", \"\\n\", "
                "sys.stdin.read()))'; } | "
                f'python3 /solution/notes.py "{var}"{tag} > /app/out/RELEASE_NOTES.md')
        t.expect_output("/app/out/RELEASE_NOTES.md", truth, "the release notes (exactly as specified)")

    # Level 0: the feature commits of a range (one `git log | grep`), or a header length check.
    FEAT = ("whose type is `feat` (the first line starts with `feat:` or `feat(`), oldest first, each prefixed by "
            "the release codename (given here) and a space")

    def atomic_msgs(self, t: TaskBuilder, n: int) -> list[str]:
        """Commit messages with at least one feat among them."""
        for _ in range(100):
            msgs = commit_msgs(t.rng, t.knobs, n)
            if any(m.startswith("feat") for m in msgs):
                return msgs
        raise FamilyError("release_notes: no history with a feat commit")

    def atomic_output(self, t: TaskBuilder) -> None:
        if t.variant != "notes":
            return self.variant_atomic_output(t)
        rng = t.rng
        tag = f"v{rng.randint(1, 3)}.{rng.randint(0, 9)}.{rng.randint(0, 3)}"
        plan = []
        day = 1_720_000_000 + rng.randrange(10**6)
        before = commit_msgs(rng, t.knobs, rng.randint(2, 3))
        msgs = self.atomic_msgs(t, t.knobs.commits)
        for i, m in enumerate(["chore: initial import\n", *before, *msgs]):
            who = rng.choice(PEOPLE)
            day += rng.randrange(3600, 86400 * 2)
            plan.append({"name": who[0], "email": who[1], "date": f"@{day} +0000", "message": m,
                         "tags": [tag] if i == len(before) else [], "file": rng.choice(["CHANGES.txt", "src.txt"])})
        plan_json = json.dumps(plan, sort_keys=True) + "\n"
        codename = unseen(t, lambda: t.code(1), plan_json, self.FEAT)
        truth = run_python(fill(ATOMIC, CODENAME=codename))["features"]("".join("==== commit\n" + m for m in msgs))
        t.add_file("/tmp/tmax-git/plan.json", plan_json)
        t.add_file("/tmp/tmax-git/build.py", BUILDER)
        t.add_setup("python3 /tmp/tmax-git/build.py /tmp/tmax-git/plan.json /app/repo && rm -rf /tmp/tmax-git")
        var = t.deliver(codename, "the release codename")
        t.say(f"The project in `/app/repo` (branch `main`) was last released as tag `{tag}`. For the next release I "
              f"need the first line of every commit after that tag {self.FEAT}.")
        t.solve(f"mkdir -p /app/out\ngit -C /app/repo log --reverse --format=%s {tag}..HEAD | grep -E '^feat[(!:]' "
                f'| sed "s/^/{var} /" > /app/out/FEATURES.txt')
        t.expect_output("/app/out/FEATURES.txt", truth, "the feature lines")

    def atomic_program(self, t: TaskBuilder) -> None:
        if t.variant != "notes":
            return self.variant_atomic_program(t)
        texts = ["".join("==== commit\n" + m for m in self.atomic_msgs(t, t.rng.randint(2, t.knobs.commits)))
                 for _ in range(6)]
        demo = unseen(t, lambda: t.code(1), self.FEAT, *texts)
        codename = unseen(t, lambda: t.code(1), self.FEAT, *texts, demo)
        features = run_python(fill(ATOMIC, CODENAME=codename))["features"]
        cases = [(text, features(text, demo if i < 2 else codename)) for i, text in enumerate(texts)]
        var = t.deliver(codename, "the release codename")
        t.say("The input is a list of commits, oldest first, each introduced by a line `==== commit` and followed "
              f"by its full message. Print the first line of every commit {self.FEAT}. The worked examples were "
              f"made with the demo codename `{demo}` instead.")
        t.expect_program("Hard-code the codename.", cases, {"Python": fill(ATOMIC, CODENAME="@@CODENAME@@"),
                                                            "C": C_ATOMIC})
        t.solve(f'for f in /app/solution.*; do sed -i "s/@@CODENAME@@/{var}/" "$f"; done')

    def atomic_corpus(self, t: TaskBuilder) -> None:
        k, rng = t.knobs, t.rng
        limit = rng.choice([50, 60, 64, 72])
        var = t.deliver(str(limit), "the maximum header length")
        valid = {n: run_python(fill(ATOMIC_LINTER, LIMIT=n))["ok"] for n in (limit, limit + 1)}
        clean: list[str] = []
        malicious: list[str] = []
        for _ in range(k.corpus * 50):
            if len(clean) == k.corpus - 1 and len(malicious) == k.corpus - 1:
                break
            m = valid_msg(rng, limit)
            if len(clean) < k.corpus - 1 and m not in clean:
                clean.append(m)
            header, _, rest = valid_msg(rng, limit).partition("\n")
            header = (header + " and also tidy the surrounding code paths for users" * 2)[:limit + rng.randint(1, 20)]
            m = header.rstrip() + "\n" + rest
            if len(malicious) < k.corpus - 1 and not valid[limit](m) and m not in malicious:
                malicious.append(m)
        else:
            raise FamilyError("release_notes: too few distinct commit messages for the corpora")
        at, over = boundary_msgs(rng, limit, valid)
        clean.insert(rng.randrange(len(clean) + 1), at)
        malicious.insert(rng.randrange(len(malicious) + 1), over)
        t.say("Long commit headers get cut off in our release tooling. I need a `commit-msg` hook that accepts a "
              "commit message exactly when its first line (the header, without its newline) is at most the maximum "
              "header length given here, in characters.")
        t.expect_classifier("The message arrives on standard input. Hard-code the length limit.", clean,
                            malicious, {"Python": fill(ATOMIC_LINTER, LIMIT="@@LIMIT@@"), "C": C_ATOMIC_LINTER})
        t.solve(f'for f in /app/solution.*; do sed -i "s/@@LIMIT@@/{var}/" "$f"; done')

    def part(self, t: TaskBuilder) -> None:
        """Every case method starts here: the later variants reseed the task's stream from itself and the variant,
        so their histories share nothing with the first variant's for the same seed. The first variant draws
        as it always has."""
        if t.variant != self.variants[0]:
            t.rng.seed(f"{t.variant}:{t.rng.getrandbits(64)}")

    # The bump and ignored variants (the notes variant is the methods above).
    def variant_rules(self, k, variant: str) -> str:
        """The commit rules the notes state, with the variant's report instead of the notes."""
        r = self.rules(k)
        if variant == "bump":
            return (r.split(" The notes are:")[0] + " The report is the line `## X.Y.Z (<codename>)`, then one line "
                    "per counted commit that moves the version, oldest first: `- breaking: <first line>` for a "
                    "breaking commit, else `- feature: <first line>` for a `feat`, else `- fix: <first line>` for a "
                    "`fix` or `perf`; other commits are not listed.")
        return (r.split(" The new version")[0] + " The release notes list the counted commits that are breaking or "
                "whose type is `feat`, `fix` or `perf`; they leave out every other commit. The report is the line "
                "`## Left out of <codename>`, then one line per left-out commit, oldest first, as `- <reason>: <first "
                "line>`, the reason being the first that applies of: `not-conventional` (its first line does not "
                "have the form), `revert` (a `revert` commit), `reverted` (cancelled by a revert), `other-type` "
                "(any other left-out commit).")

    def variant_codename(self, t: TaskBuilder, *extra: str) -> str:
        return unseen(t, lambda: t.code(1), self.variant_rules(t.knobs, t.variant), *extra)

    def variant_programs(self, t: TaskBuilder, codename: str) -> dict[str, str]:
        return {"Python": fill(VARIANT_REFERENCE, CODENAME=codename, VARIANT=t.variant),
                "C": fill(C_VARIANT_REFERENCE, VARIANT=self.variants.index(t.variant))}

    def variant_output(self, t: TaskBuilder) -> None:
        k = t.knobs
        probe = run_python(fill(VARIANT_REFERENCE, CODENAME="", VARIANT=t.variant))["report"]
        for _ in range(20):  # a history that makes a release: `no release` would not need the codename
            prev, msgs, plan_json = self.history(t)
            if probe(fuzz_text(prev, msgs), "-") != "no release\n":
                break
        else:
            raise FamilyError("release_notes: no history that makes a release")
        codename = self.variant_codename(t, plan_json)
        truth = run_python(fill(VARIANT_REFERENCE, CODENAME=codename, VARIANT=t.variant))["report"](
            fuzz_text(prev, msgs))
        t.add_file("/tmp/tmax-git/plan.json", plan_json)
        t.add_file("/tmp/tmax-git/build.py", BUILDER)
        t.add_setup("python3 /tmp/tmax-git/build.py /tmp/tmax-git/plan.json /app/repo && rm -rf /tmp/tmax-git")
        var = t.deliver(codename, "the release codename")
        tags = (" Release tags are `vX.Y.Z`; other tags (pre-releases such as `v3.0.0-rc.1`, deploy markers) are "
                "not releases.") if k.odd_tags else " Releases are tagged `vX.Y.Z`."
        ask, out = (("Before we cut the next release of the project in `/app/repo` (branch `main`) I want to see what "
                     "moves its version.", "/app/out/BUMP.md") if t.variant == "bump" else
                    ("The next release notes of the project in `/app/repo` (branch `main`) will leave commits out, and "
                     "I want to review which and why.", "/app/out/LEFT_OUT.md"))
        t.say(ask + tags + " The previous release is the highest released version by semantic-version order, and the "
              "coming release contains every commit after it up to `main`'s latest commit. "
              + self.variant_rules(k, t.variant) + f" The codename is the release codename given here. Write the "
              f"report to `{out}`.")
        tag = ""
        if t.partial_credit:  # every line then carries the codename
            t.say("Our release database takes the report with every line prefixed by the codename and a space.")
            truth = "".join(f"{codename} {line}\n" for line in truth.splitlines() if line)
            tag = f' | sed -e "/^\\$/d" -e "s/^/{var} /"'
        t.add_solution_file("report.py", fill(VARIANT_REFERENCE, CODENAME="", VARIANT=t.variant))
        t.solve("mkdir -p /app/out\ncd /app/repo\n"
                "prev=$(git tag -l 'v*' | grep -E '^v[0-9]+\\.[0-9]+\\.[0-9]+$' | sort -V | tail -n1)\n"
                "{ echo \"previous ${prev#v}\"; git log --reverse --format='==== commit%n%B' \"$prev..HEAD\" | "
                "python3 -c 'import sys,re; sys.stdout.write(re.sub(r\"\\n+(?=(==== commit\\n|$))\", \"\\n\", "
                "sys.stdin.read()))'; } | "
                f'python3 /solution/report.py "{var}"{tag} > {out}')
        t.expect_output(out, truth, "the report (exactly as specified)")

    def variant_program(self, t: TaskBuilder) -> None:
        k, rng = t.knobs, t.rng
        texts = []
        for _ in range(10):
            major = 0 if k.zero and rng.random() < 0.4 else rng.randint(1, 4)
            prev = f"{major}.{rng.randint(0, 12)}.{rng.randint(0, 9)}"
            texts.append(fuzz_text(prev, commit_msgs(rng, k, rng.randint(2, k.commits))))
        demo = self.variant_codename(t, *texts)
        codename = self.variant_codename(t, *texts, demo)
        report = run_python(fill(VARIANT_REFERENCE, CODENAME=codename, VARIANT=t.variant))["report"]
        cases = [(text, report(text, demo if i < 2 else codename)) for i, text in enumerate(texts)]
        if all(out == "no release\n" for _, out in cases[2:]):
            raise FamilyError("release_notes: no hidden case makes a release, so none needs the codename")
        var = t.deliver(codename, "the release codename")
        why = ("Before each release I want to see which commits move the version and how."
               if t.variant == "bump" else "Before each release I review the commits its notes leave out.")
        t.say(f"{why} The input is a line `previous X.Y.Z` (the last released version) followed by the commits since "
              "that release, oldest first, each introduced by a line `==== commit` and followed by its full message. "
              + self.variant_rules(k, t.variant) + " The codename is the release codename given here; the worked "
              f"examples were made with the demo codename `{demo}` instead.")
        t.expect_program("Hard-code the codename.", cases, self.variant_programs(t, "@@CODENAME@@"))
        t.solve(f'for f in /app/solution.*; do sed -i "s/@@CODENAME@@/{var}/" "$f"; done')

    def variant_corpus(self, t: TaskBuilder) -> None:
        k, rng = t.knobs, t.rng
        limit = rng.choice([50, 60, 64, 72])
        var = t.deliver(str(limit), "the maximum header length")
        valid = {n: run_python(fill(VARIANT_LINTER, LIMIT=n, VARIANT=t.variant))["ok"] for n in (limit, limit + 1)}
        ok = valid[limit]
        clean: list[str] = []
        malicious: list[str] = []
        for _ in range(k.corpus * 80):
            if len(clean) == k.corpus - 1 and len(malicious) == k.corpus - 1:
                break
            m = rng.choice([valid_msg, valid_msg, broken_msg])(rng, limit)
            if rng.random() < 0.1:
                m = rng.choice(NOISE) + "\n"
            bucket = clean if ok(m) else malicious
            if len(bucket) < k.corpus - 1 and m not in bucket:
                bucket.append(m)
        else:
            raise FamilyError("release_notes: too few distinct commit messages for the corpora")
        at, over = boundary_msgs(rng, limit, valid)
        clean.insert(rng.randrange(len(clean) + 1), at)
        malicious.insert(rng.randrange(len(malicious) + 1), over)
        form = ("the first line (the header) is `<type>(<scope>)!: <description>`, where the type is one or more "
                "lower-case letters, the scope in parentheses (one or more lower-case letters, digits or `-`) and "
                "the `!` are optional, and the description after the colon and one space is not empty")
        if t.variant == "bump":
            t.say("Our release bot only wakes up for commits that move the version. I need a hook that keeps a commit "
                  f"message (exit 0) exactly when {form}; the whole header is at most the maximum header length given "
                  "here; and the commit moves the version: its type is `feat`, `fix` or `perf`, or its header has "
                  "the `!`, or a later line starts with `BREAKING CHANGE: `. Anything else is rejected (exit 1).")
        else:
            t.say("Commits the release tooling cannot read are silently left out of the notes, so I want a hook "
                  f"that keeps a commit message (exit 0) exactly when {form}; the type is one of feat, fix, perf, "
                  "refactor, docs, chore, test, ci, build, style, revert; and the whole header is at most the "
                  "maximum header length given here. Anything else is rejected (exit 1).")
        t.expect_classifier("The message arrives on standard input. Hard-code the length limit.", clean, malicious,
                            {"Python": fill(VARIANT_LINTER, LIMIT="@@LIMIT@@", VARIANT=t.variant),
                             "C": fill(C_VARIANT_LINTER, VARIANT=self.variants.index(t.variant))})
        t.solve(f'for f in /app/solution.*; do sed -i "s/@@LIMIT@@/{var}/" "$f"; done')

    # Level 0 of the bump and ignored variants.
    ATOMIC_ASK = {"bump": "how many commits after that tag are of each type that moves the version: exactly three "
                          "lines `<codename> feat <n>`, `<codename> fix <n>` and `<codename> perf <n>`, in that "
                          "order, where a commit's type is read off its first line (`feat:`, `feat(` or `feat!`, "
                          "and so on) and the codename is the release codename given here",
                  "ignored": "the first line of every commit after that tag whose type is none of `feat`, `fix` and "
                             "`perf` (its first line does not start with `feat`, `fix` or `perf` followed by `(`, `!` "
                             "or `:`), oldest first, each prefixed by the release codename (given here) and a space"}

    def variant_atomic_msgs(self, t: TaskBuilder, n: int) -> list[str]:
        """Commit messages with a feat and (ignored) a commit of another type among them."""
        for _ in range(100):
            msgs = self.atomic_msgs(t, n)
            if t.variant == "bump" or any(not m.startswith(("feat", "fix", "perf")) for m in msgs):
                return msgs
        raise FamilyError("release_notes: no history with a commit of another type")

    def variant_atomic_output(self, t: TaskBuilder) -> None:
        rng = t.rng
        tag = f"v{rng.randint(1, 3)}.{rng.randint(0, 9)}.{rng.randint(0, 3)}"
        plan = []
        day = 1_720_000_000 + rng.randrange(10**6)
        before = commit_msgs(rng, t.knobs, rng.randint(2, 3))
        msgs = self.variant_atomic_msgs(t, t.knobs.commits + rng.randint(0, 2))
        for i, m in enumerate(["chore: initial import\n", *before, *msgs]):
            who = rng.choice(PEOPLE)
            day += rng.randrange(3600, 86400 * 2)
            plan.append({"name": who[0], "email": who[1], "date": f"@{day} +0000", "message": m,
                         "tags": [tag] if i == len(before) else [], "file": rng.choice(["CHANGES.txt", "src.txt"])})
        plan_json = json.dumps(plan, sort_keys=True) + "\n"
        codename = unseen(t, lambda: t.code(1), plan_json, self.ATOMIC_ASK[t.variant])
        truth = run_python(fill(ATOMIC_VARIANT, CODENAME=codename, VARIANT=t.variant))["report"](
            "".join("==== commit\n" + m for m in msgs))
        t.add_file("/tmp/tmax-git/plan.json", plan_json)
        t.add_file("/tmp/tmax-git/build.py", BUILDER)
        t.add_setup("python3 /tmp/tmax-git/build.py /tmp/tmax-git/plan.json /app/repo && rm -rf /tmp/tmax-git")
        var = t.deliver(codename, "the release codename")
        out = "/app/out/BUMP_COUNTS.txt" if t.variant == "bump" else "/app/out/OTHER_COMMITS.txt"
        t.say(f"The project in `/app/repo` (branch `main`) was last released as tag `{tag}`. Write to `{out}` "
              f"{self.ATOMIC_ASK[t.variant]}.")
        log = f"git -C /app/repo log --reverse --format=%s {tag}..HEAD"
        if t.variant == "bump":
            t.solve(f'mkdir -p /app/out\nfor ty in feat fix perf; do echo "{var} $ty $({log} | grep -cE "^$ty[(!:]" '
                    f'|| true)"; done > {out}')
        else:
            t.solve(f"mkdir -p /app/out\n{log} | grep -vE '^(feat|fix|perf)[(!:]' | sed \"s/^/{var} /\" > {out}")
        t.expect_output(out, truth, "the counts" if t.variant == "bump" else "the commit lines")

    def variant_atomic_program(self, t: TaskBuilder) -> None:
        texts = ["".join("==== commit\n" + m for m in self.variant_atomic_msgs(t, t.rng.randint(2, t.knobs.commits)))
                 for _ in range(6)]
        demo = unseen(t, lambda: t.code(1), self.ATOMIC_ASK[t.variant], *texts)
        codename = unseen(t, lambda: t.code(1), self.ATOMIC_ASK[t.variant], *texts, demo)
        report = run_python(fill(ATOMIC_VARIANT, CODENAME=codename, VARIANT=t.variant))["report"]
        cases = [(text, report(text, demo if i < 2 else codename)) for i, text in enumerate(texts)]
        var = t.deliver(codename, "the release codename")
        ask = self.ATOMIC_ASK[t.variant].replace("after that tag ", "")
        t.say("The input is a list of commits, oldest first, each introduced by a line `==== commit` and followed "
              f"by its full message. Print {ask}. The worked examples were made with the demo codename `{demo}` "
              "instead.")
        t.expect_program("Hard-code the codename.", cases,
                         {"Python": fill(ATOMIC_VARIANT, CODENAME="@@CODENAME@@", VARIANT=t.variant),
                          "C": fill(C_ATOMIC_VARIANT, VARIANT=self.variants.index(t.variant))})
        t.solve(f'for f in /app/solution.*; do sed -i "s/@@CODENAME@@/{var}/" "$f"; done')
