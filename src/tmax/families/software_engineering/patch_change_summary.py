"""What does a patch change? Each pull request's change is saved as a git patch in a folder named by a
hash of its branch name (the delivered value), beside other pull requests' patches. Variants: the
lines added and deleted per file (as `git apply --numstat` counts them), the change status of every
file (added, deleted, modified, renamed), or the functions the hunks touch (their `@@` section
headings). Traps by level: new and deleted files, then removed SQL comments that read `--- ...` inside
hunks and renames with edits, then a `git format-patch` mail with a diffstat and signature, binary
files, pure renames and mode changes, and "no newline at end of file" markers."""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from tmax.families.base import Family, TaskBuilder, register
from tmax.families.programs import fill, host_files, run_python
from tmax.families.software_engineering._common import finish_keyed, ship_keyed

REFERENCE = r'''
import re
import sys

MODE = @MODE@  # "numstat", "status" or "functions"
HUNK = re.compile(r"^@@ -([0-9]+)(?:,([0-9]+))? \+([0-9]+)(?:,([0-9]+))? @@ ?(.*)$")


def parse(text):
    """Every file of a patch: its paths, status, added and deleted lines, binary flag, hunk headings."""
    files, cur = [], None
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        m = HUNK.match(line) if cur is not None else None
        if line.startswith("diff --git "):
            a, b = re.match(r"^diff --git a/(\S+) b/(\S+)$", line).groups()
            cur = {"old": a, "new": b, "status": "M", "added": 0, "deleted": 0, "binary": False, "heads": []}
            files.append(cur)
        elif m:
            old_n = 1 if m.group(2) is None else int(m.group(2))
            new_n = 1 if m.group(4) is None else int(m.group(4))
            if m.group(5) and m.group(5) not in cur["heads"]:
                cur["heads"].append(m.group(5))
            while (old_n > 0 or new_n > 0) and i + 1 < len(lines):  # the header's counts say where it ends
                i += 1
                body = lines[i]
                if body.startswith("\\"):  # "\ No newline at end of file"
                    continue
                if body.startswith("+"):
                    cur["added"], new_n = cur["added"] + 1, new_n - 1
                elif body.startswith("-"):
                    cur["deleted"], old_n = cur["deleted"] + 1, old_n - 1
                else:
                    old_n, new_n = old_n - 1, new_n - 1
        elif cur is not None:
            if line.startswith("new file mode"):
                cur["status"] = "A"
            elif line.startswith("deleted file mode"):
                cur["status"] = "D"
            elif line.startswith("rename from "):
                cur["status"], cur["old"] = "R", line[len("rename from "):]
            elif line.startswith("rename to "):
                cur["new"] = line[len("rename to "):]
            elif line.startswith("Binary files ") or line == "GIT binary patch":
                cur["binary"] = True
        i += 1
    return files


def report(text):
    out = []
    for f in parse(text):
        path = f["old"] if f["status"] == "D" else f["new"]
        if MODE == "numstat":
            out.append((path, "- - " + path if f["binary"] else f"{f['added']} {f['deleted']} {path}"))
        elif MODE == "status":
            out.append((path, f"R {f['old']} {f['new']}" if f["status"] == "R" else f"{f['status']} {path}"))
        else:
            out += [(path + ": " + h, path + ": " + h) for h in f["heads"]]
    return "".join(line + "\n" for _, line in sorted(out))


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as f:
        sys.stdout.write(report(f.read()))
'''

NAMES = ("load_config", "parse_args", "retry", "connect", "flush", "render", "handle_request", "close",
         "validate", "encode", "schedule", "refresh_token", "main", "apply_migration", "compact")
VARS = ("count", "offset", "total", "limit", "retries", "buf", "resp", "timeout", "items", "row")
MODULES = ("api", "store", "worker", "auth", "billing", "sync", "cli", "metrics")


def _py(rng, n):
    out = ["import os", "import sys", ""]
    while len(out) < n:
        out += [f"def {rng.choice(NAMES)}({rng.choice(VARS)}):"]
        out += [f"    {rng.choice(VARS)} = {rng.choice(VARS)} + {rng.randrange(1, 99)}"
                for _ in range(rng.randrange(4, 9))]
        out += [f"    return {rng.choice(VARS)}", ""]
    return out


def _go(rng, n):
    out = ["package main", "", 'import "fmt"', ""]
    while len(out) < n:
        out += [f"func {rng.choice(NAMES)}({rng.choice(VARS)} int) int {{"]
        out += [f"\t{rng.choice(VARS)}++" if rng.random() < 0.3 else
                f"\tfmt.Println({rng.choice(VARS)}, {rng.randrange(1, 99)})" for _ in range(rng.randrange(4, 9))]
        out += ["\treturn 0", "}", ""]
    return out


def _sql(rng, n):
    return [f"-- {rng.choice(NAMES)} step {i}" if i % 3 == 0 else
            f"UPDATE {rng.choice(MODULES)} SET {rng.choice(VARS)} = {rng.randrange(1, 99)};" for i in range(n)]


def _edit(rng, lines, lang, edits, heads):
    """The lines with ``edits`` replacements, insertions and deletions below the first heading."""
    new = list(lines)
    start = next((i for i, x in enumerate(lines) if x.startswith(heads)), 0) + 2 if heads else 0
    for pos in sorted(rng.sample(range(start, len(lines)), min(edits, len(lines) - start)), reverse=True):
        kind = rng.choice(["replace", "insert", "delete"])
        if lang == "sql":  # deleted comments read `--- ...` inside a hunk
            add = [f"UPDATE {rng.choice(MODULES)} SET {rng.choice(VARS)} = {rng.randrange(100, 999)};"]
            kind = "delete" if new[pos].startswith("--") and rng.random() < 0.6 else kind
        elif lang == "go":
            add = [f"\t{rng.choice(VARS)} += {rng.randrange(2, 9)}"]
        else:
            add = [f"    {rng.choice(VARS)} = {rng.choice(NAMES)}({rng.randrange(1, 99)})"]
        if kind == "replace":
            new[pos:pos + 1] = add
        elif kind == "insert":
            new[pos:pos] = add * rng.randrange(1, 3)
        else:
            del new[pos:pos + rng.randrange(1, 3)]
    return new


def _hunks(old, new, heads, no_eol=False):
    """difflib's unified hunks with git's section heading: the last heading line above the hunk."""
    if no_eol:  # the old file had no final newline: its last line differs from the new one
        old = old[:-1] + [old[-1] + "\0"]
    out = []
    for line in list(difflib.unified_diff(old, new, n=3, lineterm=""))[2:]:
        if line.startswith("@@") and heads:
            first = int(line.split()[1].lstrip("-").split(",")[0])
            above = [x for x in old[:max(0, first - 1)] if x.startswith(heads)]
            line += f" {above[-1]}" if above else ""
        out += [line[:-1], "\\ No newline at end of file"] if line.endswith("\0") else [line]
    return out


@dataclass(frozen=True)
class Knobs:
    files: int  # files the patch touches
    edits: int  # the most edit spots in one file
    kinds: int  # 1: new and deleted files; 2: renames, the sql trap; 3: format-patch, binary, mode; 4: no-EOL
    decoys: int  # other pull requests


@register
class PatchChangeSummary(Family):
    name = "patch_change_summary"
    domain = "software_engineering"
    skill_types = ("Version Control",)
    primitive_skills = ("unified diff parsing", "regular expressions", "sorting with tie-breaks",
                        "text report formatting")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("numstat", "status", "functions")
    levels = {0: Knobs(files=2, edits=1, kinds=0, decoys=2),
              1: Knobs(files=4, edits=2, kinds=1, decoys=3),
              2: Knobs(files=6, edits=3, kinds=2, decoys=3),
              3: Knobs(files=8, edits=3, kinds=3, decoys=3),
              4: Knobs(files=10, edits=4, kinds=4, decoys=3)}

    def _file_diff(self, t: TaskBuilder, path: str, lang: str, kind: str) -> list[str]:
        k, rng = t.knobs, t.rng
        heads = {"py": ("def ", "class "), "go": ("func ",), "sql": ()}[lang]
        old = {"py": _py, "go": _go, "sql": _sql}[lang](rng, rng.randrange(18, 40))
        idx = f"index {rng.getrandbits(28):07x}..{rng.getrandbits(28):07x}"
        if kind == "binary":
            return [f"diff --git a/{path} b/{path}", idx + " 100644", f"Binary files a/{path} and b/{path} differ"]
        if kind == "mode":
            return [f"diff --git a/{path} b/{path}", "old mode 100644", "new mode 100755"]
        new = _edit(rng, old, lang, rng.randrange(1, k.edits + 1), heads)
        if kind == "new":
            return [f"diff --git a/{path} b/{path}", "new file mode 100644", f"index 0000000..{idx[-7:]}",
                    "--- /dev/null", f"+++ b/{path}", *_hunks([], old, heads)]
        if kind == "deleted":
            return [f"diff --git a/{path} b/{path}", "deleted file mode 100644", f"index {idx[6:13]}..0000000",
                    f"--- a/{path}", "+++ /dev/null", *_hunks(old, [], heads)]
        dest = path
        head = [f"diff --git a/{path} b/{path}", idx + " 100644"]
        if kind in ("rename", "pure_rename"):
            dest = path.rsplit("/", 1)[0] + f"/{rng.choice(NAMES)}_v2.{lang}"
            new = old if kind == "pure_rename" else new
            sim = 100 if kind == "pure_rename" else rng.randrange(70, 98)
            head = [f"diff --git a/{path} b/{dest}", f"similarity index {sim}%", f"rename from {path}",
                    f"rename to {dest}"] + ([] if sim == 100 else [idx + " 100644"])
            if sim == 100:
                return head
        no_eol = kind == "no_eol"
        return head + [f"--- a/{path}", f"+++ b/{dest}", *_hunks(old, new, heads, no_eol)]

    def _patch(self, t: TaskBuilder) -> str:
        k, rng = t.knobs, t.rng
        kinds = ["modify"] * k.files
        extra = [["new", "deleted"], ["rename", "modify"], ["binary", "pure_rename", "mode"], ["no_eol"]]
        spots = [x for lv in range(min(k.kinds, 4)) for x in extra[lv]]
        kinds[:len(spots)] = spots
        langs = ["py", "go"] + (["sql"] if k.kinds >= 2 else [])
        out, used = [], set()
        for kind in kinds:
            lang = rng.choice(langs)
            path = f"{rng.choice(MODULES)}/{rng.choice(NAMES)}.{lang if kind != 'binary' else 'png'}"
            if path in used:
                continue
            used.add(path)
            out += self._file_diff(t, path, lang, kind)
        if k.kinds >= 2 and not any(p.endswith(".sql") for p in used):  # the `---` trap is always there
            path = f"migrations/{rng.randrange(10, 99)}_{rng.choice(NAMES)}.sql"
            out += self._file_diff(t, path, "sql", "modify")
        if k.kinds < 3:
            return "\n".join(out) + "\n"
        # git format-patch: mail headers, the message, a diffstat after `---`, a signature after the diff
        stat = run_python(fill(REFERENCE, MODE=repr("numstat")))["parse"]("\n".join(out))
        mail = [f"From {rng.getrandbits(160):040x} Mon Sep 17 00:00:00 2001",
                f"From: Dev {rng.randrange(1, 99)} <dev@example.test>", "Date: Tue, 4 Mar 2025 10:12:00 +0100",
                f"Subject: [PATCH] {rng.choice(MODULES)}: {rng.choice(NAMES).replace('_', ' ')}", "",
                "Rework the module; see the review thread.", "", "---"]
        for f in stat:  # the diffstat: its +/- bars are not diff lines
            n = f["added"] + f["deleted"]
            mail.append(f" {f['new']} | " + ("Bin" if f["binary"] else f"{n} " + "+" * f["added"] + "-" * f["deleted"]))
        mail += [f" {len(stat)} files changed", ""]
        return "\n".join(mail + out + ["-- ", "2.43.0", ""]) + "\n"

    def output_case(self, t: TaskBuilder) -> None:
        k, v = t.knobs, t.variant
        src = fill(REFERENCE, MODE=repr(v))
        report = run_python(src)["report"]
        name = "change.patch" if k.kinds < 3 else "0001-change.patch"
        for _ in range(50):  # hunks may all lack a heading: draw the patch again
            patches = [self._patch(t)]
            with host_files({name: patches[0]}) as (_, paths):  # read back as the oracle reads it
                with open(paths[0], encoding="utf-8") as f:
                    truth = report(f.read())
            if truth:
                break
        patches += [self._patch(t) for _ in range(k.decoys)]
        branch = ship_keyed(t, "pulls", [{name: p} for p in patches])
        t.say(f"Every open pull request's change is saved as `/app/pulls/<KEY>/{name}`, where KEY is the first 16 "
              "hex digits of the SHA-256 of the pull request's branch name (`printf %s <name> | sha256sum`)"
              + (": git format-patch output (a mail with the commit message and a diffstat before the diff)."
                 if k.kinds >= 3 else ": the output of `git diff`."))
        t.deliver(branch, "the branch name")
        notes = ["Each file's part starts with `diff --git a/<old> b/<new>`; a hunk header `@@ -<start>,<count> "
                 "+<start>,<count> @@` says how many lines of the old and new file the hunk covers (a count "
                 "left out is 1), so the hunk's lines can start with anything, `---` and `+++` included."]
        ask = {"numstat": "Count the lines each file gains (`+` lines) and loses (`-` lines), as `git apply "
                          "--numstat` does: one line `<added> <deleted> <path>` per file (the new path; for a "
                          "deleted file the old one)" + ("; a binary file is `- - <path>`" if k.kinds >= 3 else "")
                          + "; sorted by path in byte order.",
               "status": "Give every file's change status, as `git diff --name-status` would: `A <path>` (added), "
                         "`D <path>` (deleted), `M <path>` (modified)"
                         + (", `R <old> <new>` (renamed, edited or not)" if k.kinds >= 2 else "")
                         + "; sorted by the last path on the line in byte order.",
               "functions": "List the functions the change touches: every distinct hunk section heading (the text "
                            "after the closing `@@` of a hunk header) as `<path>: <heading>`, with the file's new "
                            "path, sorted in byte order; hunks without a heading add nothing."}[v]
        t.say(" ".join(notes + [ask]))
        finish_keyed(t, "pulls", "patchsum.py", src, "/app/out/summary.txt", truth, "the change summary",
                     f'"$d/{name}"')
