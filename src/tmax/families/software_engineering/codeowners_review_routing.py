"""Who must review a pull request? A repository's CODEOWNERS file (gitignore-style patterns, the last
matching rule wins, a rule without owners un-owns) and the changed-file lists of open pull requests,
each stored under a hash of its branch name (the delivered value). Variants: the owners of every
changed file, the review load per owner, or the changed files nobody owns. Traps by level: a catch-all
rule overridden later, unanchored directory names and `?`, patterns anchored by an inner slash, `**`,
owner-less rules, comments and e-mail owners, then stale CODEOWNERS files in lower-priority locations
and `git diff --name-status` lists with renames."""

from __future__ import annotations

from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.unseen import distinct, key_cmd, key_of, unseen

REFERENCE = r'''
import os
import re
import sys

MODE = @MODE@  # "owners", "load" or "unowned"
LOCATIONS = (".github/CODEOWNERS", "CODEOWNERS", "docs/CODEOWNERS")  # the first one present is used


def compile_pattern(pat):
    """A CODEOWNERS pattern as a regex over a file's path (gitignore rules)."""
    dir_only = pat.endswith("/")
    core = pat.strip("/")
    anchored = pat.startswith("/") or "/" in core
    body, i = "", 0
    while i < len(core):
        if core.startswith("**/", i):
            body, i = body + "(?:.*/)?", i + 3
        elif core.startswith("**", i):
            body, i = body + ".*", i + 2
        elif core[i] == "*":
            body, i = body + "[^/]*", i + 1
        elif core[i] == "?":
            body, i = body + "[^/]", i + 1
        else:
            body, i = body + re.escape(core[i]), i + 1
    head = "^" if anchored else "^(?:.*/)?"
    return re.compile(head + body + ("/.*$" if dir_only else "(?:/.*)?$"))


def rules(text):
    out = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()  # patterns and owners here never contain "#"
        if line:
            pat, *owners = line.split()
            out.append((compile_pattern(pat), owners))
    return out


def owners_of(path, rs):
    found = []
    for rx, owners in rs:  # the last matching rule wins
        if rx.match(path):
            found = owners
    return found


def changed(text):
    """Paths from `git diff --name-status` (a rename counts as its new path)."""
    out = []
    for line in text.splitlines():
        parts = line.split("\t")
        if not line.strip():
            continue
        out.append(parts[-1].strip())
    return sorted(set(out))


def report(codeowners, pr):
    rs = rules(codeowners)
    files = changed(pr)
    out = []
    if MODE == "owners":
        out = [f"{p} {' '.join(owners_of(p, rs)) or '-'}" for p in files]
    elif MODE == "unowned":
        out = [p for p in files if not owners_of(p, rs)]
    else:
        load = {}
        for p in files:
            for o in dict.fromkeys(owners_of(p, rs)):
                load[o] = load.get(o, 0) + 1
        out = [f"{o} {n}" for o, n in sorted(load.items(), key=lambda kv: (-kv[1], kv[0]))]
    return "".join(line + "\n" for line in out)


def main(repo, pr_file):
    for loc in LOCATIONS:
        if os.path.isfile(os.path.join(repo, loc)):
            with open(os.path.join(repo, loc), encoding="utf-8") as f:
                codeowners = f.read()
            break
    with open(pr_file, encoding="utf-8") as f:
        return report(codeowners, f.read())


if __name__ == "__main__":
    sys.stdout.write(main(sys.argv[1], sys.argv[2]))
'''

TOP = ("src", "web", "deploy", "docs", "tools", "scripts")
SUB = ("api", "billing", "auth", "ui", "k8s", "migrations", "docs", "generated", "v1", "v2")
NAMES = ("main", "handler", "schema", "index", "README", "values", "client", "setup", "routes", "model")
EXTS = ("go", "js", "ts", "md", "yaml", "sql", "py", "sh")
TEAMS = ("@acme/backend", "@acme/frontend", "@acme/platform", "@acme/docs", "@acme/security", "@acme/data",
         "@mlopez", "@kchen", "@rsingh", "ops-oncall@acme.example")


@dataclass(frozen=True)
class Knobs:
    rules: int  # CODEOWNERS rules
    files: int  # changed files in a pull request
    traps: int  # 1: catch-all rule, overrides; 2: unanchored dirs, ?, inner-slash anchoring; 3: **, owner-less
    #             rules, comments, e-mail owners; 4: stale CODEOWNERS elsewhere, name-status lists with renames
    decoys: int  # other open pull requests


@register
class CodeownersReviewRouting(Family):
    name = "codeowners_review_routing"
    domain = "software_engineering"
    skill_types = ("Version Control", "Configuration Management")
    primitive_skills = ("gitignore-style pattern matching", "rule precedence", "regular expressions",
                        "sorting with tie-breaks", "text report formatting")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("owners", "load", "unowned")
    levels = {0: Knobs(rules=3, files=4, traps=0, decoys=2),
              1: Knobs(rules=6, files=8, traps=1, decoys=3),
              2: Knobs(rules=9, files=14, traps=2, decoys=3),
              3: Knobs(rules=12, files=20, traps=3, decoys=3),
              4: Knobs(rules=15, files=28, traps=4, decoys=3)}

    def _path(self, t: TaskBuilder) -> str:
        rng = t.rng
        depth = rng.choice([0, 1, 1, 2])
        parts = [rng.choice(TOP)] + [rng.choice(SUB) for _ in range(depth)]
        return "/".join(parts + [f"{rng.choice(NAMES)}.{rng.choice(EXTS)}"])

    def _pattern(self, t: TaskBuilder, paths: list[str]) -> str:
        """A pattern drawn near the changed files, in the forms the level allows."""
        k, rng = t.knobs, t.rng
        p = rng.choice(paths).split("/")
        forms = ["ext", "anchored"] + (["unanchored", "question", "inner"] if k.traps >= 2 else []) + \
                (["double"] if k.traps >= 3 else [])
        form = rng.choice(forms)
        if form == "ext":
            return "*." + p[-1].rsplit(".", 1)[1]
        if form == "anchored" or len(p) < 3:
            return "/" + "/".join(p[:rng.randint(1, len(p) - 1)]) + "/"
        if form == "unanchored":
            return p[rng.randint(1, len(p) - 2)] + "/"
        if form == "question":
            d = p[1]
            return f"/{p[0]}/{d[:-1]}?/" if len(d) > 2 else f"/{p[0]}/{d}/"
        if form == "inner":  # an inner slash anchors it: direct children only
            return f"{p[0]}/*.{p[-1].rsplit('.', 1)[1]}"
        return f"{p[0]}/**/{p[-2]}/" if rng.random() < 0.5 else f"**/{p[-2]}/*.{p[-1].rsplit('.', 1)[1]}"

    def _codeowners(self, t: TaskBuilder, paths: list[str]) -> str:
        k, rng = t.knobs, t.rng
        lines = ["# Code owners: the last matching pattern takes precedence."] if k.traps >= 1 else []
        if k.traps >= 1 and (t.variant != "unowned" or k.traps >= 3):  # a catch-all would leave none unowned
            lines.append(f"*  {rng.choice(TEAMS[:3])}")
        for i in range(k.rules):
            owners = rng.sample(TEAMS, rng.choice([1, 1, 2, 3]))
            if k.traps >= 3 and rng.random() < 0.15:
                owners = []  # owner-less: un-owns what it matches
            if k.traps >= 3 and rng.random() < 0.2:
                lines.append(f"# {rng.choice(['legacy', 'review rotation', 'TODO split'])}: {rng.choice(TEAMS)}")
            lines.append(" ".join([self._pattern(t, paths), *owners]))
        if k.traps >= 3:
            lines.append(f"/{rng.choice(TOP)}/generated/")
        return "\n".join(lines) + "\n"

    def _pr(self, t: TaskBuilder, pool: list[str]) -> str:
        k, rng = t.knobs, t.rng
        files = sorted(set(rng.sample(pool, min(len(pool), k.files))))
        out = []
        for f in files:
            r = rng.random()
            if r < 0.15 and k.traps >= 4:
                out.append(f"R{rng.randrange(60, 100):03d}\t{self._path(t)}\t{f}")
            else:
                out.append(f"{'MAD'[int(r * 10) % 3]}\t{f}")
        return "".join(x + "\n" for x in out)

    def output_case(self, t: TaskBuilder) -> None:
        k, rng, v = t.knobs, t.rng, t.variant
        src = fill(REFERENCE, MODE=repr(v))
        ns = run_python(src)
        for _ in range(50):  # a draw where nothing is unowned (say) has no answer: draw again
            pool = sorted({self._path(t) for _ in range(k.files * 4)})
            if k.traps >= 3:
                pool += [f"{p.split('/')[0]}/generated/{p.rsplit('/', 1)[1]}" for p in rng.sample(pool, 3)]
            codeowners = self._codeowners(t, pool)
            prs = [self._pr(t, pool) for _ in range(1 + k.decoys)]
            truth = ns["report"](codeowners, prs[0])
            if truth.strip():
                break
        else:
            raise FamilyError("codeowners_review_routing: 50 draws in a row had an empty answer")
        t.add_file("/app/repo/.github/CODEOWNERS", codeowners)
        if k.traps >= 4:  # lower-priority locations that GitHub ignores while .github/CODEOWNERS exists
            t.add_file("/app/repo/CODEOWNERS", self._codeowners(t, pool))
            t.add_file("/app/repo/docs/CODEOWNERS", f"* {rng.choice(TEAMS)}\n")
        branch = unseen(t, lambda: t.code(2), *prs)
        keys = [key_of(n) for n in [branch, *distinct(lambda: t.code(2), k.decoys, [branch])]]
        for key, pr in zip(keys, prs):
            t.add_file(f"/app/prs/{key}.txt", pr)
        where = ("GitHub reads the first of `.github/CODEOWNERS`, `CODEOWNERS` and `docs/CODEOWNERS` that exists "
                 "in `/app/repo/`." if k.traps >= 4 else "The code owners are in `/app/repo/.github/CODEOWNERS`.")
        t.say(f"{where} The changed files of each open pull request are in `/app/prs/<KEY>.txt`, where KEY is "
              "the first 16 hex digits of the SHA-256 of the pull request's branch name (`printf %s <name> | "
              "sha256sum`), as `git diff --name-status` prints them (`<status><TAB><path>`"
              + ("; a rename `R<score><TAB><old><TAB><new>` counts as its new path)." if k.traps >= 4 else ")."))
        t.deliver(branch, "the pull request's branch name")
        rules = ["Each CODEOWNERS line is a pattern followed by its owners; for a file, the last line whose "
                 "pattern matches wins"]
        rules.append("patterns follow gitignore: `*` matches within one path segment, a trailing `/` matches a "
                     "directory and everything below it, a pattern without a trailing `/` also matches a "
                     "directory's contents, and a pattern that starts with `/` or has a `/` before its end is "
                     "anchored at the repository root while any other pattern matches at any depth")
        if k.traps >= 2:
            rules.append("`?` matches one character other than `/`")
        if k.traps >= 3:
            rules.append("`**` matches any number of directories; `#` starts a comment; a pattern with no owners "
                         "leaves the files it matches without an owner")
        ask = {"owners": "For every changed file, write `<path> <owners>`: its owners in the order the winning line "
                         "lists them, separated by single spaces, or `-` when it has none. Sort by path in byte "
                         "order.",
               "load": "Count how many changed files each owner must review: one line `<owner> <files>` per owner "
                       "(files without owners count for nobody), most files first, ties by owner in byte order.",
               "unowned": "List the changed files that have no owner, one path per line, sorted in byte order."}[v]
        t.say("; ".join(rules) + ". " + ask)
        t.add_solution_file("codeowners.py", src)
        t.solve(f'mkdir -p /app/out\nkey={key_cmd("$V1")}\ntest -f "/app/prs/$key.txt"\n'
                'python3 /solution/codeowners.py /app/repo "/app/prs/$key.txt" > /app/out/review.txt')
        t.expect_output("/app/out/review.txt", truth, "the review routing")
