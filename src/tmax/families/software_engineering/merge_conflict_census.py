"""What did a failed merge leave behind? Each merge's working tree is kept under a folder named by a
hash of the merged branch (the delivered value), beside other merges built the same way; some files
hold git conflict blocks (`<<<<<<<`, `=======`, `>>>>>>>`). Variants: the conflict hunks per file, the
size of each side of every hunk, or the sha256 of every conflicted file resolved by a side policy.
Traps by level: Markdown and reStructuredText underlines made of `=` and `<` that are not markers,
conflict examples indented in the contributing guide, empty sides, then diff3 base sections, a
theirs-wins rule for lockfiles and generated code, CRLF files and the merge tool's `*.orig` backups."""

from __future__ import annotations

from dataclasses import dataclass

from tmax.families.base import Family, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.software_engineering._common import finish_keyed, report_on_tree, ship_keyed

REFERENCE = r'''
import hashlib
import os
import sys

MODE = @MODE@  # "hunks", "sides" or "resolve"
THEIRS = @THEIRS@  # resolve: files ending so, or under such a folder, keep the incoming side
SKIP = @SKIP@  # file name endings that are not part of the tree (merge tool backups)


def marker(line, ch, label):
    """A git conflict marker: seven `ch` at the start of the line, then a space (and a label) or the
    end of the line; the separator never has a label."""
    body = line.rstrip("\r\n")
    if not body.startswith(ch * 7):
        return False
    rest = body[7:]
    return rest == "" if not label else (rest == "" or rest.startswith(" "))


def parse(text):
    """(plain chunks and hunks): a hunk is (marker line number, ours lines, theirs lines)."""
    out, state, cur = [], None, None
    for no, line in enumerate(text.splitlines(keepends=True), 1):
        if state is None:
            if marker(line, "<", True):
                state, cur = "ours", (no, [], [])
            else:
                out.append(line)
        elif state in ("ours", "base") and marker(line, "|", True):
            state = "base"
        elif state in ("ours", "base") and marker(line, "=", False):
            state = "theirs"
        elif state == "theirs" and marker(line, ">", True):
            out.append(cur)
            state = None
        elif state == "ours":
            cur[1].append(line)
        elif state == "theirs":
            cur[2].append(line)
    return out


def keeps_theirs(rel):
    return any(rel.endswith(s) or rel.startswith(s) or ("/" + s) in rel for s in THEIRS)


def files(root):
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            if not name.endswith(SKIP):
                full = os.path.join(dirpath, name)
                yield os.path.relpath(full, root), full


def report(root):
    lines = []
    for rel, full in sorted(files(root)):
        with open(full, encoding="utf-8", newline="") as f:
            parts = parse(f.read())
        hunks = [p for p in parts if isinstance(p, tuple)]
        if not hunks:
            continue
        if MODE == "hunks":
            lines.append(f"{rel} {len(hunks)}")
        elif MODE == "sides":
            lines += [f"{rel}:{no} {len(ours)} {len(theirs)}" for no, ours, theirs in hunks]
        else:
            side = 2 if keeps_theirs(rel) else 1
            text = "".join(p if isinstance(p, str) else "".join(p[side]) for p in parts)
            lines.append(f"{hashlib.sha256(text.encode()).hexdigest()}  {rel}")
    return "".join(line + "\n" for line in lines)


if __name__ == "__main__":
    sys.stdout.write(report(sys.argv[1]))
'''

IDENTS = ("retries", "timeout", "backoff", "pool_size", "region", "cache_ttl", "batch", "endpoint", "workers",
          "log_level", "max_conn", "queue", "shard", "quota", "window", "threshold")
PROSE = ("run the tests before you push", "the client retries on 503", "see the runbook for rollbacks",
         "configuration lives in config/", "the cache is warmed at startup", "use the staging cluster",
         "each worker owns one shard", "metrics are scraped every minute", "tokens expire after an hour")
DIRS = ("src", "src/api", "lib", "config", "docs", "scripts", "generated", "deploy")
THEIRS = ("generated/", ".lock")
TITLES7 = ("Install", "Testing", "Caching", "Metrics", "Release")  # seven letters: a `=======` underline


def _code_line(rng, ext):
    name, val = rng.choice(IDENTS), rng.randrange(1, 500)
    return {"py": f"{name} = {val}", "js": f"const {name} = {val};", "go": f"\t{name} := {val}",
            "yaml": f"{name}: {val}", "lock": f"{name}@^{val % 9}.{val % 7}.0:", "md": rng.choice(PROSE),
            "rst": rng.choice(PROSE)}[ext]


@dataclass(frozen=True)
class Knobs:
    files: int  # files in each tree
    conflicted: int  # files with conflict blocks
    hunks: int  # the most hunks in one file
    traps: int  # 1: underlines; 2: indented examples, empty sides; 3: diff3 bases, theirs rule; 4: CRLF, .orig
    decoys: int  # other merges' trees


@register
class MergeConflictCensus(Family):
    name = "merge_conflict_census"
    domain = "software_engineering"
    skill_types = ("Version Control",)
    primitive_skills = ("regular expressions", "text report formatting", "sorting with tie-breaks")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("hunks", "sides", "resolve")
    levels = {0: Knobs(files=4, conflicted=1, hunks=2, traps=0, decoys=2),
              1: Knobs(files=7, conflicted=3, hunks=2, traps=1, decoys=3),
              2: Knobs(files=10, conflicted=4, hunks=3, traps=2, decoys=3),
              3: Knobs(files=14, conflicted=6, hunks=4, traps=3, decoys=3),
              4: Knobs(files=18, conflicted=8, hunks=5, traps=4, decoys=3)}

    def _hunk(self, t: TaskBuilder, ext: str, nl: str) -> list[str]:
        k, rng = t.knobs, t.rng
        lo = 0 if k.traps >= 2 else 1  # an empty side: one branch deleted the lines
        ours = [_code_line(rng, ext) for _ in range(rng.randrange(lo, 4))]
        theirs = [_code_line(rng, ext) for _ in range(rng.randrange(1 if not ours else lo, 4))]
        out = ["<<<<<<< HEAD", *ours]
        if k.traps >= 3 and rng.random() < 0.5:
            out += [rng.choice(["||||||| merged common ancestors", "||||||| base"]),
                    *[_code_line(rng, ext) for _ in range(rng.randrange(1, 3))]]
        return [x + nl for x in out + ["=======", *theirs, ">>>>>>> @SHA@"]]

    def _file(self, t: TaskBuilder, ext: str, hunks: int, nl: str) -> str:
        rng = t.rng
        lines = []
        if ext in ("md", "rst") and t.knobs.traps >= 1:
            title = rng.choice(TITLES7)
            under = "=" * 7 if ext == "md" else rng.choice(["<", "="]) * rng.randrange(8, 14)
            lines += [title + nl, under + nl, nl]
        for _ in range(hunks + 1):
            lines += [_code_line(rng, ext) + nl for _ in range(rng.randrange(2, 7))]
            lines += self._hunk(t, ext, nl) if _ < hunks else []
        return "".join(lines)

    def _tree(self, t: TaskBuilder) -> dict[str, str]:
        """One merge's working tree: relative path -> text."""
        k, rng = t.knobs, t.rng
        sha = "".join(rng.choice("0123456789abcdef") for _ in range(40))
        exts = ["py", "js", "go", "yaml", "md"] + (["rst"] if k.traps >= 1 else [])
        tree: dict[str, str] = {}
        paths = []
        while len(paths) < k.files:
            ext = rng.choice(exts)
            d = rng.choice(DIRS[:4] + (("docs",) if ext in ("md", "rst") else ()))
            p = f"{d}/{rng.choice(IDENTS)}_{rng.randrange(10, 99)}.{ext}"
            if p not in paths:
                paths.append(p)
        if k.traps >= 3:  # lockfiles and generated code: the theirs-wins rule
            paths[0] = "yarn.lock"
            paths[1] = f"generated/{rng.choice(IDENTS)}_pb.py"
        conflicted = set(rng.sample(range(len(paths)), k.conflicted)) | ({0, 1} if k.traps >= 3 else set())
        for i, p in enumerate(paths):
            ext = p.rsplit(".", 1)[1]
            nl = "\r\n" if k.traps >= 4 and i == 2 else "\n"  # one file from a Windows checkout
            tree[p] = self._file(t, ext, rng.randrange(1, k.hunks + 1) if i in conflicted else 0, nl)
        if k.traps >= 2:  # the contributing guide shows a conflict, indented as a code block
            tree["CONTRIBUTING.md"] = ("How to resolve a conflict\n=======\n\nA conflict looks like this:\n\n"
                                       "    <<<<<<< HEAD\n    your change\n    =======\n    their change\n"
                                       "    >>>>>>> main\n\nKeep one side and delete the markers.\n")
        if k.traps >= 4:  # the merge tool's backups of two conflicted files
            for p in sorted(p for i, p in enumerate(paths) if i in conflicted)[:2]:
                tree[p + ".orig"] = tree[p]
        return {p: text.replace("@SHA@", sha) for p, text in sorted(tree.items())}

    def output_case(self, t: TaskBuilder) -> None:
        k, v = t.knobs, t.variant
        theirs = THEIRS if k.traps >= 3 else ()
        skip = (".orig",) if k.traps >= 4 else ("\0",)
        src = fill(REFERENCE, MODE=repr(v), THEIRS=theirs, SKIP=skip)
        ref = run_python(src)
        trees = [self._tree(t) for _ in range(1 + k.decoys)]
        branch = ship_keyed(t, "merges", trees)
        truth = report_on_tree(ref["report"], trees[0])
        t.say("After a `git pull` that stopped on conflicts, every merged branch's working tree was saved under "
              "`/app/merges/<KEY>/`, where KEY is the first 16 hex digits of the SHA-256 of the branch name "
              "(`printf %s <name> | sha256sum`).")
        t.deliver(branch, "the branch name")
        notes = ["A conflict hunk is the block git writes: a line `<<<<<<< <label>` (our side follows), a line "
                 "`=======` (their side follows) and a line `>>>>>>> <label>`. A marker starts in the first "
                 "column, is exactly seven characters long and is followed by a space or the end of the line; "
                 "anything else (an indented example, a longer underline) is ordinary text."]
        if k.traps >= 3:
            notes.append("Some hunks are in diff3 style: a line `||||||| <label>` after our side starts the common "
                         "ancestor's lines, which belong to neither side.")
        if k.traps >= 4:
            notes.append("Lines may end in CRLF. The merge tool's backups (`*.orig`) are not part of the tree.")
        ask = {"hunks": "List every file with at least one conflict hunk as `<path> <hunks>` (path relative to the "
                        "tree), sorted by path in byte order.",
               "sides": "List every conflict hunk as `<path>:<line> <ours> <theirs>`: the path relative to the "
                        "tree, the line number of its `<<<<<<<` marker (the first line is 1), and how many lines "
                        "our side and their side hold; sorted by path in byte order, then by line.",
               "resolve": "Resolve every conflicted file by keeping one side of each hunk and dropping the markers"
                          + (" (and the ancestor's lines)" if k.traps >= 3 else "") + ": our side, except in "
                          + ("files ending in `.lock` and files under `generated/`, which keep their side"
                             if k.traps >= 3 else "no file") + ". Everything outside the hunks stays byte for "
                          "byte. Report each conflicted file as `sha256sum` prints it (`<sha256 of the resolved "
                          "content>  <path relative to the tree>`), sorted by path in byte order; do not edit the "
                          "saved trees."}[v]
        t.say(" ".join(notes + [ask]))
        finish_keyed(t, "merges", "conflicts.py", src, "/app/out/conflicts.txt", truth, "the conflict report")
