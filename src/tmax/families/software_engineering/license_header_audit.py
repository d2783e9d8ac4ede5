"""Do a repository's source files carry the SPDX licence headers its policy asks for? Each repository
is checked out under a folder named by a hash of its name (the delivered value), beside other
repositories. Variants: the source files without an `SPDX-License-Identifier` header, the number of
files per licence expression, or the files whose licence differs from what `LICENSE-POLICY` (longest
path prefix wins) requires there. Traps by level: comment syntaxes and shebang lines, docs and data
files that are not source, then tags below the header and nested policy prefixes, then vendored and
generated code, `OR` expressions and comment closers, and finally REUSE `.license` sidecar files and
CRLF line ends."""

from __future__ import annotations

from dataclasses import dataclass

from tmax.families.base import Family, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.software_engineering._common import finish_keyed, report_on_tree, ship_keyed

REFERENCE = r'''
import os
import re
import sys

MODE = @MODE@  # "missing", "by_license" or "violations"
EXTS = (".py", ".sh", ".go", ".js", ".ts", ".c", ".h", ".sql", ".html")  # source files
HEAD = 5  # the header: a file's first lines
SKIP_DIRS = @SKIP_DIRS@  # vendored code: not ours to license
SKIP_GENERATED = @SKIP_GENERATED@  # files whose header says "Code generated ... DO NOT EDIT."
SIDECARS = @SIDECARS@  # a `<file>.license` next to a file holds its licence instead
TAG = re.compile(r"SPDX-License-Identifier:\s*(.+?)\s*(?:\*/|-->)?\s*$")


def read_lines(path):
    with open(path, encoding="utf-8", newline="") as f:
        return f.read().splitlines()


def licence(full):
    """The file's licence expression, or None."""
    lines = read_lines(full + ".license") if SIDECARS and os.path.exists(full + ".license") else read_lines(full)[:HEAD]
    for line in lines:
        m = TAG.search(line)
        if m:
            return m.group(1)
    return None


def sources(root):
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        for name in sorted(filenames):
            full = os.path.join(dirpath, name)
            if not name.endswith(EXTS):
                continue
            head = "\n".join(read_lines(full)[:HEAD])
            if SKIP_GENERATED and "Code generated" in head and "DO NOT EDIT" in head:
                continue
            yield os.path.relpath(full, root), full


def policy(root):
    rules = []
    for line in read_lines(os.path.join(root, "LICENSE-POLICY")):
        line = line.split("#", 1)[0].strip()
        if line:
            prefix, lic = line.split(None, 1)
            rules.append((prefix.strip("/"), lic.strip()))
    return rules


def required(rel, rules):
    best = None
    for prefix, lic in rules:  # the longest matching prefix wins
        if prefix == "" or rel == prefix or rel.startswith(prefix + "/"):
            if best is None or len(prefix) > len(best[0]):
                best = (prefix, lic)
    return best[1]


def report(root):
    found = sorted((rel, licence(full)) for rel, full in sources(root))
    if MODE == "missing":
        lines = [rel for rel, lic in found if lic is None]
    elif MODE == "by_license":
        counts = {}
        for _, lic in found:
            counts[lic or "NONE"] = counts.get(lic or "NONE", 0) + 1
        lines = [f"{lic} {n}" for lic, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
    else:
        rules = policy(root)
        lines = [f"{rel} {lic or 'NONE'} {required(rel, rules)}" for rel, lic in found
                 if lic != required(rel, rules)]
    return "".join(line + "\n" for line in lines)


if __name__ == "__main__":
    sys.stdout.write(report(sys.argv[1]))
'''

COMMENT = {"py": ("# ", ""), "sh": ("# ", ""), "go": ("// ", ""), "js": ("// ", ""), "ts": ("/* ", " */"),
           "c": ("/* ", " */"), "h": ("// ", ""), "sql": ("-- ", ""), "html": ("<!-- ", " -->")}
LICENCES = ("MIT", "Apache-2.0", "BSD-3-Clause", "MPL-2.0", "GPL-2.0-only", "Apache-2.0 OR MIT")
DIRS = ("src", "src/core", "src/plugins", "tools", "scripts", "web", "web/static", "db")
WORDS = ("client", "server", "cache", "queue", "router", "codec", "store", "auth", "sync", "report")
SKIP = ("third_party", "node_modules")


@dataclass(frozen=True)
class Knobs:
    files: int  # source files in each repository
    traps: int  # 1: syntaxes, shebangs, non-source; 2: late tags, nested policy; 3: vendored, generated,
    #             OR, closers; 4: sidecars, CRLF
    decoys: int  # other repositories


@register
class LicenseHeaderAudit(Family):
    name = "license_header_audit"
    domain = "software_engineering"
    skill_types = ("Release Engineering", "Configuration Management")
    primitive_skills = ("regular expressions", "rule precedence", "sorting with tie-breaks",
                        "text report formatting")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("missing", "by_license", "violations")
    levels = {0: Knobs(files=5, traps=0, decoys=2),
              1: Knobs(files=10, traps=1, decoys=3),
              2: Knobs(files=16, traps=2, decoys=3),
              3: Knobs(files=24, traps=3, decoys=3),
              4: Knobs(files=32, traps=4, decoys=3)}

    def _body(self, t: TaskBuilder, ext: str, n: int) -> list[str]:
        rng = t.rng
        c, close = COMMENT[ext]
        return [f"{c}{rng.choice(WORDS)} {rng.choice(WORDS)} step {i}{close}" if rng.random() < 0.3 else
                f"{rng.choice(WORDS)}_{i} = {rng.randrange(100)}" for i in range(n)]

    def _file(self, t: TaskBuilder, ext: str, lic: str | None, late: bool, pool) -> tuple[str, str | None]:
        """(text, sidecar text or None) for one source file."""
        k, rng = t.knobs, t.rng
        c, close = COMMENT[ext]
        head = [f"#!/usr/bin/env {'python3' if ext == 'py' else 'bash'}"] if ext in ("py", "sh") and \
            k.traps >= 1 and rng.random() < 0.5 else []
        head.append(f"{c}SPDX-FileCopyrightText: 20{rng.randrange(18, 26)} Example Corp{close}")
        body = self._body(t, ext, rng.randrange(8, 20))
        tag = f"{c}SPDX-License-Identifier: {lic}{close}" if lic else None
        sidecar = None
        if tag and k.traps >= 4 and rng.random() < 0.15:  # REUSE: the licence lives beside the file
            sidecar, tag = f"SPDX-FileCopyrightText: 2024 Example Corp\nSPDX-License-Identifier: {lic}\n", None
            if rng.random() < 0.5:  # a stale tag in the file itself: the sidecar wins
                head.append(f"{c}SPDX-License-Identifier: {rng.choice(pool)}{close}")
        if tag and late:  # below the header: does not count
            body.insert(rng.randrange(3, len(body)), tag)
        elif tag:
            head.append(tag)
        nl = "\r\n" if k.traps >= 4 and rng.random() < 0.15 else "\n"
        return nl.join(head + body) + nl, sidecar

    def _repo(self, t: TaskBuilder) -> dict[str, str]:
        k, rng = t.knobs, t.rng
        pool = LICENCES if k.traps >= 3 else LICENCES[:5]  # `OR` expressions from level 3 on
        main = rng.choice(LICENCES[:3])
        rules = [("/", main)]
        if k.traps >= 2:
            rules.append(("/web", rng.choice([x for x in pool if x != main])))
        if k.traps >= 4:
            rules.append(("/web/static", rng.choice(pool)))
        exts = ["py"] if k.traps == 0 else list(COMMENT)[:8 if k.traps < 3 else 9]
        tree = {"LICENSE-POLICY": "# <path prefix> <SPDX licence expression>; the longest prefix wins\n"
                + "".join(f"{p} {lic}\n" for p, lic in rules)}
        req = run_python(fill(REFERENCE, MODE=repr("violations"), SKIP_DIRS=(), SKIP_GENERATED=False,
                              SIDECARS=False))["required"]
        for i in range(k.files):
            ext = rng.choice(exts)
            d = rng.choice(DIRS if k.traps >= 1 else DIRS[:3])
            path = f"{d}/{rng.choice(WORDS)}_{i}.{ext}"
            want = req(path, [(p.strip("/"), lic) for p, lic in rules])
            roll = rng.random()
            lic = None if i == 0 or roll < 0.15 else want if roll < 0.75 else rng.choice(pool)
            late = k.traps >= 2 and lic is not None and rng.random() < 0.12
            tree[path], side = self._file(t, ext, lic, late, pool)
            if side:
                tree[path + ".license"] = side
        if k.traps >= 1:  # docs and data: not source, whatever they say
            tree["README.md"] = f"# Project\n\nSPDX-License-Identifier: {main}\n"
            tree["config/settings.json"] = '{"debug": false}\n'
        if k.traps >= 3:
            for d in SKIP:
                tree[f"{d}/{rng.choice(WORDS)}/lib.js"] = "// SPDX-License-Identifier: GPL-3.0-only\nvar x = 1;\n"
            tree[f"src/{rng.choice(WORDS)}_pb.go"] = ("// Code generated by protoc-gen-go. DO NOT EDIT.\n"
                                                     "package pb\n")
        return dict(sorted(tree.items()))

    def output_case(self, t: TaskBuilder) -> None:
        k, v = t.knobs, t.variant
        src = fill(REFERENCE, MODE=repr(v), SKIP_DIRS=SKIP if k.traps >= 3 else (),
                   SKIP_GENERATED=k.traps >= 3, SIDECARS=k.traps >= 4)
        ref = run_python(src)
        repos = [self._repo(t) for _ in range(1 + k.decoys)]
        name = ship_keyed(t, "repos", repos)
        truth = report_on_tree(ref["report"], repos[0])
        t.say("Every repository is checked out under `/app/repos/<KEY>/`, where KEY is the first 16 hex digits of "
              "the SHA-256 of the repository name (`printf %s <name> | sha256sum`).")
        t.deliver(name, "the repository name")
        notes = ["Source files are those ending in `.py`, `.sh`, `.go`, `.js`, `.ts`, `.c`, `.h`, `.sql` or "
                 "`.html`; nothing else is checked. A file's licence is the expression after "
                 "`SPDX-License-Identifier:` on the first such line among its first 5 lines (the header; a "
                 "shebang counts as a line), without a trailing comment closer (`*/`, `-->`) or spaces; a file "
                 "without one has none."]
        if k.traps >= 3:
            notes.append("Vendored code (any `third_party/` or `node_modules/` folder) and generated files (their "
                         "header says `Code generated` and `DO NOT EDIT`) are not checked.")
        if k.traps >= 4:
            notes.append("When a file `<file>.license` exists beside a source file, the licence is read from it "
                         "(any line) instead of the file's header.")
        ask = {"missing": "List the source files that have no licence, one path (relative to the repository) per "
                          "line, sorted in byte order.",
               "by_license": "Count the source files per licence expression: one line `<expression> <count>`, "
                             "files without a licence counted as `NONE`, the largest count first, ties by "
                             "expression in byte order.",
               "violations": "`LICENSE-POLICY` maps path prefixes to the required licence (the longest prefix "
                             "that matches a path wins; `/` matches everything). List every source file whose "
                             "licence (compared as written) is not the required one as `<path> <licence or NONE> "
                             "<required>`, sorted by path in byte order."}[v]
        t.say(" ".join(notes + [ask]))
        finish_keyed(t, "repos", "spdx_audit.py", src, "/app/out/licenses.txt", truth, "the licence report")

