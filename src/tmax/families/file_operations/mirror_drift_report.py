"""How far has a mirror drifted from its source? A source tree is copied to several mirrors; the
mirror to check is keyed by a hash of a delivered mirror name. Variants: the source files the mirror
lacks, the files whose content differs (with both sizes), or a full sync plan (copy, update, delete)
in one sorted list. Traps by level: subdirectories, copies with the same size but other bytes,
modification times that differ on identical files, empty files, names with spaces, hidden files,
symlinks (never synced), excluded `*.tmp` files and `.git` directories, and a path that is a
directory in the source but a file in the mirror."""

from __future__ import annotations

from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.file_operations._common import WORDS, epoch, finish_setup, host_tree, ship_tree, spec_json
from tmax.families.programs import fill, run_python
from tmax.families.unseen import distinct, key_cmd, key_of, unseen

REFERENCE = r'''
import os
import stat
import sys

VARIANT = @VARIANT@
EXCLUDE = @EXCLUDE@  # whether *.tmp files and .git directories are left out on both sides


def files(root):
    """Regular files under root (symlinks are not followed or listed): relative path -> full path."""
    if not os.path.isdir(root):
        sys.exit(f"no such tree: {root}")
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        if EXCLUDE:
            dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in filenames:
            full = os.path.join(dirpath, name)
            if not stat.S_ISREG(os.lstat(full).st_mode) or (EXCLUDE and name.endswith(".tmp")):
                continue
            out[os.path.relpath(full, root)] = full
    return out


def data(path):
    with open(path, "rb") as f:
        return f.read()


def report(source, mirror):
    a, b = files(source), files(mirror)
    missing = sorted(p for p in a if p not in b)
    changed = sorted(p for p in a if p in b and data(a[p]) != data(b[p]))
    if VARIANT == "missing":
        return "".join(p + "\n" for p in missing)
    if VARIANT == "changed":
        return "".join(f"{p}\t{os.path.getsize(a[p])}\t{os.path.getsize(b[p])}\n" for p in changed)
    plan = [(p, "+") for p in missing] + [(p, "~") for p in changed] + [(p, "-") for p in b if p not in a]
    return "".join(f"{op} {p}\n" for p, op in sorted(plan))


if __name__ == "__main__":
    sys.stdout.write(report(sys.argv[1], sys.argv[2]))
'''

DIRS = ("docs", "src", "src/lib", "assets/img", "config", "reports/2024", "reports/2025")
EXTS = ("txt", "md", "json", "csv", "yaml", "html")


def _text(rng, lo, hi):
    return " ".join(rng.choice(WORDS) for _ in range(rng.randrange(lo, hi))) + "\n"


def _same_size(rng, text):
    """Other bytes, the same length."""
    i = rng.randrange(len(text) - 1)
    return text[:i] + ("q" if text[i] != "q" else "z") + text[i + 1:]


@dataclass(frozen=True)
class Knobs:
    files: int  # regular files in the source
    dirs: int  # subdirectories used (0: a flat tree)
    drift: int  # files of each kind of drift (missing, changed, extra) per mirror
    decoys: int  # other mirrors beside the one asked about
    subtle: bool  # same-size changes, mtime-only differences, empty files
    noise: bool  # names with spaces, hidden files, symlinks, *.tmp and .git (excluded)
    conflict: bool  # a directory in the source is a file in the mirror


@register
class MirrorDriftReport(Family):
    name = "mirror_drift_report"
    domain = "file_operations"
    skill_types = ("Integrity Verification", "File Discovery")
    primitive_skills = ("tree comparison", "content hashing", "recursive directory traversal",
                        "handling special characters in filenames", "hidden file handling", "sorting with tie-breaks",
                        "glob and pattern matching")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("missing", "changed", "sync_plan")
    levels = {0: Knobs(files=8, dirs=0, drift=1, decoys=1, subtle=False, noise=False, conflict=False),
              1: Knobs(files=24, dirs=4, drift=2, decoys=2, subtle=False, noise=False, conflict=False),
              2: Knobs(files=45, dirs=6, drift=3, decoys=3, subtle=True, noise=False, conflict=False),
              3: Knobs(files=70, dirs=7, drift=4, decoys=3, subtle=True, noise=True, conflict=False),
              4: Knobs(files=100, dirs=7, drift=5, decoys=3, subtle=True, noise=True, conflict=True)}

    def _source(self, t):
        """The source tree: relative path -> (text, mtime), and its symlinks."""
        k, rng = t.knobs, t.rng
        dirs = [""] + list(DIRS[:k.dirs])
        tree = {}
        for _ in range(20 * k.files):
            if len(tree) == k.files:
                break
            d = rng.choice(dirs)
            base = f"{rng.choice(WORDS)}_{rng.randrange(10, 99)}.{rng.choice(EXTS)}"
            if k.noise and rng.random() < 0.15:
                base = rng.choice([f"{rng.choice(WORDS)} {rng.choice(WORDS)} {rng.randrange(1, 9)}.txt", "." + base])
            p = f"{d}/{base}" if d else base
            if p not in tree:
                tree[p] = ("" if k.subtle and rng.random() < 0.04 else _text(rng, 5, 60),
                           epoch(2024, 1, 1) + rng.randrange(400 * 86400))
        if len(tree) < k.files:
            raise FamilyError("mirror_drift_report: too few distinct file names drawn")
        return tree

    def _mirror(self, t, src):
        """A drifted copy of ``src`` (same form)."""
        k, rng = t.knobs, t.rng
        tree = dict(src)
        paths = sorted(p for p in tree if tree[p][0])
        picks = rng.sample(paths, 2 * k.drift)
        for p in picks[:k.drift]:  # deleted from the mirror, or never copied
            del tree[p]
        for p in picks[k.drift:]:
            text, mtime = tree[p]
            if k.subtle and rng.random() < 0.5:
                tree[p] = (_same_size(rng, text), mtime)  # same size and time: only the bytes tell
            else:
                tree[p] = (_text(rng, 5, 60), mtime + rng.randrange(-86400, 86400))
        extra = 0
        for _ in range(1000):  # left behind after the source dropped them, named like the rest
            if extra == k.drift:
                break
            d = rng.choice([""] + list(DIRS[:k.dirs]))
            p = (f"{d}/" if d else "") + f"{rng.choice(WORDS)}_{rng.randrange(10, 99)}.{rng.choice(EXTS)}"
            if p not in src and p not in tree:
                tree[p] = (_text(rng, 5, 60), epoch(2023, 6, 1) + rng.randrange(200 * 86400))
                extra += 1
        if k.subtle:  # re-copied without preserving times: identical files, other mtimes
            for p in rng.sample(sorted(set(tree) & set(src) - set(picks)), 3):
                tree[p] = (tree[p][0], tree[p][1] + rng.randrange(3600, 90 * 86400))
        return tree

    def output_case(self, t: TaskBuilder) -> None:
        k, rng, v = t.knobs, t.rng, t.variant
        src = self._source(t)
        mirrors = [self._mirror(t, src) for _ in range(1 + k.decoys)]
        links, junk = [], []  # (path, target) symlinks and excluded files, in the source and in every mirror
        if k.noise:
            some = sorted(src)
            links = [(f"latest_{i}.lnk", rng.choice(some)) for i in range(3)]
            junk = [(f"{rng.choice(DIRS)}/{rng.choice(WORDS)}.tmp", _text(rng, 3, 20)) for _ in range(3)]
            junk += [(f".git/objects/{rng.randrange(10, 99)}/{rng.randrange(16 ** 8):08x}", _text(rng, 3, 20))
                     for _ in range(3)]
        if k.conflict:  # `data` is a directory in the source, a file in the mirrors
            for i in range(2):
                src[f"data/part_{i}.csv"] = (_text(rng, 5, 30), epoch(2025, 2, 1))
            for m in mirrors:
                m["data"] = (_text(rng, 5, 30), epoch(2024, 11, 1))

        def entries(prefix, tree, side):
            out = [["f", f"{prefix}/{p}", text, 0o644, mtime] for p, (text, mtime) in sorted(tree.items())]
            out += [["l", f"{prefix}/{p}", tgt] for p, tgt in links if side == "source" or rng.random() < 0.5]
            for p, text in junk:  # different on every side, and never part of the answer
                out.append(["f", f"{prefix}/{p}", text if side == "source" else _text(rng, 3, 20), 0o644,
                            epoch(2025, 1, 1)])
            return out

        base = entries("data/source", src, "source")
        sides = [entries(f"mirror{i}", m, "mirror") for i, m in enumerate(mirrors)]
        name = unseen(t, lambda: t.code(2), spec_json(base), *(spec_json(s) for s in sides))
        names = [name, *distinct(lambda: t.code(2), k.decoys, [name])]
        keys = [key_of(n) for n in names]
        spec = [["d", "data", 0o755, epoch(2025, 3, 1)], *base]
        for i in sorted(range(len(keys)), key=lambda i: keys[i]):  # creation order must not single one out
            spec += [[e[0], f"mirrors/{keys[i]}" + e[1][len(f"mirror{i}"):], *e[2:]] for e in sides[i]]
        ref_src = fill(REFERENCE, VARIANT=repr(v), EXCLUDE=k.noise)
        with host_tree(spec) as root:
            truth = run_python(ref_src)["report"](f"{root}/data/source", f"{root}/mirrors/{keys[0]}")
        ship_tree(t, spec, "/app", "trees")
        finish_setup(t)
        t.say("`/app/data/source/` is synced to several mirrors, each under `/app/mirrors/<KEY>/`, where KEY is the "
              "first 16 hex digits of the SHA-256 of the mirror's name (`printf %s <name> | sha256sum`). Check the "
              "mirror named below against the source. Paths are relative to the tree's top directory, without a "
              "leading `./`; two files are the same if their bytes are identical.")
        who = t.deliver(name, "the mirror name")
        rules = ["Only regular files count" + ("; modification times do not matter, only content." if k.subtle
                                               else ".")]
        if k.noise:
            rules.append("Symbolic links are never synced: ignore them on both sides. Files ending in `.tmp` and "
                         "everything inside a `.git` directory are excluded from syncing: leave them out too. Hidden "
                         "files and names with spaces are synced like any other.")
        if k.conflict:
            rules.append("A path that is a file on one side and a directory on the other is not the same file: "
                         "compare the files under it as they are.")
        t.say(" ".join(rules))
        if v == "missing":
            t.say("Which source files does the mirror lack? One path per line, sorted in byte order (`LC_ALL=C "
                  "sort`).")
            out = "/app/out/missing.txt"
        elif v == "changed":
            t.say("Which files exist on both sides with different content? One line per file, `<path><TAB><size in "
                  "the source><TAB><size in the mirror>` (bytes), sorted by path in byte order.")
            out = "/app/out/changed.tsv"
        else:
            t.say("Write the sync plan that would make the mirror match the source: `+ <path>` for a source file "
                  "the mirror lacks, `~ <path>` for a file whose content differs, `- <path>` for a mirror file the "
                  "source does not have. One line each, sorted by path in byte order.")
            out = "/app/out/sync_plan.txt"
        t.add_solution_file("drift.py", ref_src)
        t.solve(f'test -n "{who}"\nmkdir -p /app/out\nkey={key_cmd(who)}\ntest -d "/app/mirrors/$key"\n'
                f'python3 /solution/drift.py /app/data/source "/app/mirrors/$key" > {out}')
        t.expect_output(out, truth, {"missing": "the list of missing files", "changed": "the list of changed files",
                                     "sync_plan": "the sync plan"}[v])
