"""Sweep a project share of desktop junk and dead directories. One share (keyed by a hash of a
delivered team name) has collected `.DS_Store`, `Thumbs.db` and editor leftovers, and directories
that hold nothing. Variants: every directory that is empty (holds nothing but empty directories),
only the topmost of them (what `rm -r` would be given), or the junk files with their count and bytes
per top-level directory. Traps by level: nested empty chains, hidden placeholder files (`.keep` is
content), names with spaces, more junk patterns with look-alikes that are not junk (`Thumbs.db.bak`),
symlinks (content, never junk), and at the top levels junk that does not count as content, so a
directory holding only junk is empty too."""

from __future__ import annotations

from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.file_operations._common import WORDS, epoch
from tmax.families.file_operations._common import keyed_sides, report_and_ship, solve_keyed
from tmax.families.programs import fill

REFERENCE = r'''
import os
import sys

VARIANT = @VARIANT@
NAMES = @NAMES@  # junk file names
SUFFIXES = @SUFFIXES@  # junk name endings (editor backups)
PREFIXES = @PREFIXES@  # junk name beginnings (editor locks)
JUNK_IS_NOTHING = @JUNK_IS_NOTHING@  # a directory holding only junk (and empty directories) is empty
TOTAL_ONLY = @TOTAL_ONLY@  # the junk report is one line: count and bytes


def is_junk(entry):
    n = entry.name
    return entry.is_file(follow_symlinks=False) and (n in NAMES or n.endswith(SUFFIXES) or n.startswith(PREFIXES))


def walk(path, rel, empty, junk):
    """Is the directory at path empty? Fills empty (relative paths) and junk ((relative path, bytes))."""
    alone = True
    for entry in sorted(os.scandir(path), key=lambda e: e.name):
        sub = f"{rel}/{entry.name}" if rel else entry.name
        if entry.is_dir(follow_symlinks=False):
            alone = walk(entry.path, sub, empty, junk) and alone
        elif is_junk(entry):
            junk.append((sub, entry.stat(follow_symlinks=False).st_size))
            alone = alone and JUNK_IS_NOTHING
        else:
            alone = False  # files, hidden ones included, and symlinks are content
    if alone and rel:
        empty.append(rel)
    return alone


def report(root):
    if not os.path.isdir(root):
        sys.exit(f"no such share: {root}")
    empty, junk = [], []
    walk(root, "", empty, junk)
    gone = set(empty)
    if VARIANT == "empty_dirs":
        return "".join(p + "\n" for p in sorted(empty))
    if VARIANT == "prune_roots":
        return "".join(p + "\n" for p in sorted(empty) if p.rpartition("/")[0] not in gone)
    if TOTAL_ONLY:
        return f"{len(junk)} {sum(size for _, size in junk)}\n"
    tops = {}
    for p, size in junk:
        top = p.split("/")[0] if "/" in p else "."
        got = tops.setdefault(top, [0, 0])
        got[0] += 1
        got[1] += size
    lines = [f"{top}\t{n}\t{size}\n" for top, (n, size) in sorted(tops.items())]
    return "".join(lines) + f"total\t{len(junk)}\t{sum(size for _, size in junk)}\n"


if __name__ == "__main__":
    sys.stdout.write(report(sys.argv[1]))
'''

TOPS = ("design", "photos", "contracts", "handbook", "exports", "archive", "research")
SUBS = ("2023", "2024", "drafts", "final", "old", "review", "raw", "tmp")


@dataclass(frozen=True)
class Knobs:
    tops: int  # top-level directories
    depth: int  # deepest nesting below a top-level directory
    files: int  # ordinary files
    empties: int  # chains of empty directories planted
    junk: int  # junk files
    patterns: int  # 1: .DS_Store; 2: + Thumbs.db; 3: + editor backups and locks, desktop.ini
    noise: bool  # placeholders, spaces, look-alikes, symlinks
    junk_is_nothing: bool  # junk does not keep a directory from being empty


@register
class EmptyDirectorySweep(Family):
    name = "empty_directory_sweep"
    domain = "file_operations"
    skill_types = ("File Discovery", "Storage Accounting")
    primitive_skills = ("empty directory detection", "recursive directory traversal", "glob and pattern matching",
                        "disk usage accounting", "hidden file handling", "sorting with tie-breaks")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("empty_dirs", "prune_roots", "junk_report")
    levels = {0: Knobs(tops=2, depth=1, files=6, empties=1, junk=2, patterns=1, noise=False, junk_is_nothing=False),
              1: Knobs(tops=3, depth=2, files=16, empties=2, junk=4, patterns=2, noise=False, junk_is_nothing=False),
              2: Knobs(tops=4, depth=3, files=30, empties=3, junk=7, patterns=3, noise=True, junk_is_nothing=False),
              3: Knobs(tops=5, depth=3, files=45, empties=4, junk=10, patterns=3, noise=True, junk_is_nothing=True),
              4: Knobs(tops=6, depth=4, files=60, empties=5, junk=14, patterns=3, noise=True, junk_is_nothing=True)}

    @staticmethod
    def _patterns(k):
        names = [".DS_Store"] + (["Thumbs.db"] if k.patterns >= 2 else []) + (["desktop.ini"] if k.patterns >= 3 else [])
        return tuple(names), ("~",) if k.patterns >= 3 else (), (".#",) if k.patterns >= 3 else ()

    def _share(self, t, top):
        """One share as tree entries under ``top``; every directory is listed, so empty ones exist."""
        k, rng = t.knobs, t.rng
        names, suffixes, prefixes = self._patterns(k)
        dirs = set()

        def deep(base, n):
            p = base
            for _ in range(n):
                sub = rng.choice(SUBS)
                if k.noise and rng.random() < 0.15:
                    sub = f"{sub} copy"
                p = f"{p}/{sub}"
                dirs.add(p)
            return p

        tops = [f"{top}/{d}" for d in rng.sample(TOPS, k.tops)]
        dirs.update(tops)
        homes = [deep(rng.choice(tops), rng.randrange(0, k.depth + 1)) for _ in range(k.files)]
        entries = {}
        for d in homes:  # ordinary files keep their directories alive
            entries[f"{d}/{rng.choice(WORDS)}_{rng.randrange(10, 99)}.{rng.choice(['pdf', 'txt', 'jpg', 'docx'])}"] = \
                ["s", rng.randrange(200, 9000)]
        junk_homes = sorted(dirs)  # before the empty chains, so junk never lands in them
        for _ in range(k.empties):  # chains of directories with nothing in them, under a fresh name
            d = f"{rng.choice(tops)}/{rng.choice(SUBS)}_{rng.randrange(100, 999)}"
            dirs.add(d)
            deep(d, rng.randrange(0, k.depth))
        for _ in range(k.junk):
            d = rng.choice(junk_homes + [top])
            kind = rng.randrange(3) if k.patterns >= 3 else 0
            base = (rng.choice(names) if kind == 0 else f"{rng.choice(WORDS)}.txt~" if kind == 1
                    else f".#{rng.choice(WORDS)}.txt")
            entries[f"{d}/{base}"] = ["s", rng.randrange(1000, 20000)]
        if k.junk_is_nothing:  # a directory holding only junk: empty once swept
            d = deep(rng.choice(tops), 1)
            entries[f"{d}/{names[0]}"] = ["s", rng.randrange(1000, 20000)]
        if k.noise:
            d = deep(rng.choice(tops), 1)
            entries[f"{d}/.keep"] = ["s", 0]  # a placeholder is content
            d = deep(rng.choice(tops), 1)
            entries[f"{d}/Thumbs.db.bak"] = ["s", rng.randrange(1000, 5000)]  # not junk
            d = deep(rng.choice(tops), 1)
            entries[f"{d}/{names[0]}"] = ["l", "../../" + names[0]]  # a symlink: content, not junk
        spec = [["d", top, 0o755, epoch(2025, 6, 1)]]
        spec += [["d", d, 0o755, epoch(2025, 1, 1) + rng.randrange(86400 * 90)] for d in sorted(dirs)]
        for p, (kind, x) in sorted(entries.items()):
            spec.append(["s", p, x, 0o644, epoch(2025, 2, 1) + rng.randrange(86400 * 60)] if kind == "s"
                        else ["l", p, x])
        return spec

    def output_case(self, t: TaskBuilder) -> None:
        k, v = t.knobs, t.variant
        sides = [self._share(t, f"share{i}") for i in range(2)]
        name, key, spec = keyed_sides(t, sides, "share")
        names, suffixes, prefixes = self._patterns(k)
        src = fill(REFERENCE, VARIANT=repr(v), NAMES=names, SUFFIXES=suffixes, PREFIXES=prefixes,
                   JUNK_IS_NOTHING=k.junk_is_nothing, TOTAL_ONLY=t.level == 0)
        truth = report_and_ship(t, spec, src, "/app/shares", key)
        if not truth.strip():
            raise FamilyError("empty_directory_sweep: nothing to report")
        t.say("Team shares are under `/app/shares/<KEY>/`, where KEY is the first 16 hex digits of the SHA-256 of "
              "the team name (`printf %s <name> | sha256sum`). The share of the team named below needs sweeping.")
        who = t.deliver(name, "the team name")
        junk = " or ".join(f"`{n}`" for n in names)
        if suffixes:
            junk += ", or whose name ends in `~` (editor backups) or starts with `.#` (editor locks)"
        rules = [f"Junk is a regular file named {junk}."]
        if k.noise:
            rules.append("Other names are not junk however alike (`Thumbs.db.bak` is a file like any other); a "
                         "symbolic link is never junk.")
        empty = ("A directory is empty when it holds nothing but empty directories" +
                 (" and junk: junk does not count, since the sweep removes it. " if k.junk_is_nothing else
                  ". Any file, junk and hidden files included, or symbolic link in it means it is not empty. "))
        if v == "empty_dirs":
            t.say(" ".join(rules) + " " + empty + "List every empty directory below the share (not the share itself), "
                  "relative to the share without a leading `./`, one per line, sorted in byte order.")
            out = "/app/out/empty_dirs.txt"
        elif v == "prune_roots":
            t.say(" ".join(rules) + " " + empty + "List only the topmost empty directories, the ones whose parent is "
                  "not empty (or is the share itself), so that removing them removes every empty directory: "
                  "paths relative to the share without a leading `./`, one per line, sorted in byte order.")
            out = "/app/out/prune_roots.txt"
        elif t.level == 0:
            t.say(" ".join(rules) + " How much junk is there? Write one line: `<number of junk files> <their total "
                  "size in bytes>`.")
            out = "/app/out/junk.txt"
        else:
            t.say(" ".join(rules) + " How much junk is there, and where? For each top-level directory of the share "
                  "that holds junk at any depth, write `<directory><TAB><junk files><TAB><bytes>`; junk directly in "
                  "the share goes under `.`. Sort those lines by name in byte order, and end with "
                  "`total<TAB><junk files><TAB><bytes>`. Sizes are apparent sizes in bytes.")
            out = "/app/out/junk.tsv"
        solve_keyed(t, who, "/app/shares", "sweep.py", src, out)
        t.expect_output(out, truth, {"empty_dirs": "the empty directories", "prune_roots": "the directories to "
                                     "remove", "junk_report": "the junk report"}[v])
