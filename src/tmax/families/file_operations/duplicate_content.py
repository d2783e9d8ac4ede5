"""Which files on a share are byte-for-byte copies of each other? Walk one share (not its
neighbours), hash every regular file, report the copies in sha256sum format. Traps by level: names
with spaces, empty files, symlinks and same-size near-copies, hidden files, then hard links (one file,
not a copy), a directory symlink loop and names that sha256sum has to escape. Variants: that report;
a hard-link plan (each copy and the first file of its group it is to become a link to); or the space
each group of copies wastes."""

from __future__ import annotations

from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.file_operations._common import WORDS, epoch, finish_setup, host_tree, ship_tree, spec_json
from tmax.families.programs import fill, run_python
from tmax.families.unseen import distinct, key_cmd, key_of, unseen

REFERENCE = r'''
import hashlib
import os
import stat
import sys


def escape(path):
    """sha256sum's escaping: a leading backslash marks a name with backslash, newline or CR."""
    if "\\" in path or "\n" in path or "\r" in path:
        return "\\", path.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")
    return "", path


def report(root):
    first = {}  # inode -> the byte-order-first path that names it
    for dirpath, dirnames, filenames in os.walk(root):  # does not follow symlinks
        dirnames.sort()
        for name in filenames:
            full = os.path.join(dirpath, name)
            st = os.lstat(full)
            if not stat.S_ISREG(st.st_mode) or st.st_size == 0:
                continue
            rel = os.path.relpath(full, root)
            key = (st.st_dev, st.st_ino)
            if key not in first or rel < first[key][0]:
                first[key] = (rel, full)
    groups = {}
    for rel, full in first.values():
        with open(full, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        groups.setdefault(digest, []).append(rel)
    out = []
    for digest in sorted(groups):
        paths = sorted(groups[digest])
        if len(paths) < 2:
            continue
        for p in paths:
            mark, shown = escape(p)
            out.append(f"{mark}{digest}  {shown}\n")
    return "".join(out)


@VARIANT_CODE@if __name__ == "__main__":
    sys.stdout.write(report(sys.argv[1]))
'''

# The other variants' report (defined after the sha256sum one, which it replaces): over the groups of files
# with the same content, as the sha256sum report counts them.
GROUPS_PY = r'''def groups(root):
    """digest -> (size, the byte-order-sorted paths of the different files with that content), copies only."""
    first = {}  # inode -> the byte-order-first path that names it
    for dirpath, dirnames, filenames in os.walk(root):  # does not follow symlinks
        for name in filenames:
            full = os.path.join(dirpath, name)
            st = os.lstat(full)
            if not stat.S_ISREG(st.st_mode) or st.st_size == 0:
                continue
            rel = os.path.relpath(full, root)
            key = (st.st_dev, st.st_ino)
            if key not in first or rel < first[key][0]:
                first[key] = (rel, full)
    found = {}
    for rel, full in first.values():
        with open(full, "rb") as f:
            data = f.read()
        found.setdefault(hashlib.sha256(data).hexdigest(), [len(data), []])[1].append(rel)
    return {d: (size, sorted(paths)) for d, (size, paths) in found.items() if len(paths) > 1}


'''
VARIANT_CODE = {
    "sha256_report": "",
    "link_plan": GROUPS_PY + r'''def report(root):
    """The hard-link plan: every copy but the first of its group, and the first one it is to become a link to."""
    rows = []
    for size, paths in groups(root).values():
        rows += [(p, paths[0]) for p in paths[1:]]
    return "".join(f"{escape(p)[1]}\t{escape(keep)[1]}\n" for p, keep in sorted(rows))


''',
    "wasted_space": GROUPS_PY + r'''def report(root):
    """Per group of copies: its digest, how many files, the size of each and the bytes all but one of them take."""
    rows = sorted((-size * (len(paths) - 1), digest, len(paths), size) for digest, (size, paths) in groups(root).items())
    return "".join(f"{digest} {n} {size} {-wasted}\n" for wasted, digest, n, size in rows)


'''}

EXTS = ("txt", "md", "csv", "log", "json", "conf", "ini", "xml")
DIRS = ("docs", "finance", "hr/contracts", "projects/alpha", "projects/beta/old", "scans", "misc",
        "archive/2023", "archive/2024/q1", "team/shared")


def _content(rng, lo, hi):
    n = rng.randrange(lo, hi)
    words = []
    size = 0
    while size < n:
        w = rng.choice(WORDS)
        words.append(w + ("\n" if rng.random() < 0.15 else " "))
        size += len(words[-1])
    return "".join(words).rstrip() + "\n"


def _near_copy(rng, text):
    """Same length, one character different."""
    i = rng.randrange(len(text) - 1)
    c = text[i]
    repl = "x" if c != "x" else "y"
    if c == "\n":
        i, repl = 0, ("Z" if text[0] != "Z" else "Q")
    return text[:i] + repl + text[i + 1:]


def _rename(spec, old, new):
    """``spec`` with the share folder ``old`` renamed ``new`` (paths, hard-link sources, absolute symlinks)."""
    def move(p, pre=""):
        return pre + new + p[len(pre + old):] if p == pre + old or p.startswith(pre + old + "/") else p

    out = []
    for e in spec:
        e = [e[0], move(e[1]), *e[2:]]
        if e[0] == "h":
            e[2] = move(e[2])
        elif e[0] == "l":
            e[2] = move(e[2], "/app/shares/")
        out.append(e)
    return out


@dataclass(frozen=True)
class Knobs:
    files: int  # files in each share
    groups: int  # groups of copies
    spaces: bool  # names with spaces and parentheses
    traps: int  # 1: empty files, near-copies, symlinks; 2: hidden files; 3: hard links, a loop, escaped names
    decoys: int  # neighbour shares built the same way


@register
class DuplicateContent(Family):
    name = "duplicate_content_report"
    domain = "file_operations"
    skill_types = ("Integrity Verification", "File Discovery")
    primitive_skills = ("content hashing", "duplicate detection", "recursive directory traversal",
                        "manifest generation",
                        "handling special characters in filenames", "hidden file handling",
                        "hard link identification", "symlink loop detection", "sorting with tie-breaks")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("sha256_report", "link_plan", "wasted_space")
    levels = {0: Knobs(files=6, groups=1, spaces=False, traps=0, decoys=2),
              1: Knobs(files=18, groups=3, spaces=False, traps=0, decoys=3),
              2: Knobs(files=45, groups=5, spaces=True, traps=1, decoys=3),
              3: Knobs(files=90, groups=8, spaces=True, traps=2, decoys=3),
              4: Knobs(files=160, groups=12, spaces=True, traps=3, decoys=3)}

    def _share(self, t, share):
        """Entries for one share (paths relative to /app/shares)."""
        k, rng = t.knobs, t.rng
        spec = [["d", share, 0o755, epoch(2024, 1, 5)]]
        dirs = list(DIRS[:3 + k.traps * 2])
        if k.traps >= 2:
            dirs += [".cache", "projects/.snapshots"]
        for d in dirs:
            spec.append(["d", f"{share}/{d}", 0o755, epoch(2024, 2, 1)])
        used = set()

        def name(d):
            for _ in range(1000):
                w = rng.choice(WORDS)
                if k.spaces and rng.random() < 0.35:
                    base = f"{w} {rng.choice(WORDS)} ({rng.randrange(1, 9)})"
                else:
                    base = f"{w}_{rng.randrange(100, 999)}"
                if k.traps >= 2 and rng.random() < 0.1:
                    base = "." + base
                p = f"{share}/{d}/{base}.{rng.choice(EXTS)}"
                if p not in used:
                    used.add(p)
                    return p
            raise FamilyError("duplicate_content_report: no free file name in 1000 draws")

        def mtime():
            return epoch(2023, 1, 1) + rng.randrange(0, 700 * 86400)

        n_orig = k.files - k.groups * 2
        originals = []
        for _ in range(n_orig):
            text = _content(rng, 30, 500)
            p = name(rng.choice(dirs))
            originals.append((p, text))
            spec.append(["f", p, text, 0o644, mtime()])
        for gi in range(k.groups):
            src_p, text = originals[gi]
            for _ in range(rng.choice([1, 1, 2, 3])):
                spec.append(["f", name(rng.choice(dirs)), text, rng.choice([0o644, 0o600, 0o664]), mtime()])
        if k.traps >= 1:
            for _ in range(3):  # empty files: never duplicates
                spec.append(["f", name(rng.choice(dirs)), "", 0o644, mtime()])
            for gi in range(k.groups, k.groups + 3):  # same size, different content
                p, text = originals[gi]
                spec.append(["f", name(rng.choice(dirs)), _near_copy(rng, text), 0o644, mtime()])
            for gi in range(0, k.groups + 2):  # symlinks to files are not files
                p, _ = originals[gi]
                spec.append(["l", name(rng.choice(dirs)), "/app/shares/" + p])
        if k.traps >= 3:
            spec.append(["l", f"{share}/projects/alpha/up", "../.."])  # a directory loop
            for gi in range(k.groups - 2, k.groups + 2):  # hard links: one file, several names
                p, _ = originals[gi]
                spec.append(["h", name(rng.choice(dirs)), p])
            odd = [f"{share}/misc/line\nbreak {rng.randrange(10, 99)}.txt",
                   f"{share}/misc/back\\slash_{rng.randrange(10, 99)}.txt"]
            spec.append(["f", odd[0], originals[0][1], 0o644, mtime()])
            spec.append(["f", odd[1], _content(rng, 30, 200), 0o644, mtime()])
            spec.append(["f", f"{share}/misc/copy of {odd[1].rsplit('/', 1)[1]}", spec[-1][2], 0o644, mtime()])
        return spec, originals

    def output_case(self, t: TaskBuilder) -> None:
        k, rng = t.knobs, t.rng
        for _ in range(self.variants.index(t.variant)):  # each variant its own draw of the shares
            rng.random()
        # Share folders are named by a hash of the share name (the delivered value), so the name shows
        # nowhere on disk and the neighbour shares are indistinguishable decoys without it. The shares
        # are built under placeholder folders first, so the name can be drawn clear of their content.
        spec, originals = self._share(t, "share0")
        shares = [spec]
        for i in range(1, 1 + k.decoys):
            dspec, _ = self._share(t, f"share{i}")  # same traps: the target must not stand out
            # cross-share copies: a copy in a neighbour share is not a copy within this share
            p, text = originals[-1]
            dspec.append(["f", f"share{i}/docs/imported_{rng.randrange(100, 999)}.txt", text, 0o644,
                          epoch(2024, 3, 3)])
            shares.append(dspec)
        target = unseen(t, lambda: t.code(2), *(spec_json(s) for s in shares))
        names = [target, *distinct(lambda: t.code(2), k.decoys, [target])]
        keys = [key_of(n) for n in names]
        share = keys[0]
        # Built in the order of their keys, so creation order (inode numbers) does not single out the target.
        spec = [e for i in sorted(range(len(keys)), key=lambda i: keys[i])
                for e in _rename(shares[i], f"share{i}", keys[i])]
        v = t.variant
        src = fill(REFERENCE, VARIANT_CODE=VARIANT_CODE[v])
        ref = run_python(src)
        with host_tree(spec) as root:
            truth = ref["report"](f"{root}/{share}")
        ship_tree(t, spec, "/app/shares", "shares")
        finish_setup(t)
        traps = []
        if k.traps >= 1:
            traps.append("Only regular files count: do not follow symbolic links, and empty files are never "
                         "duplicates.")
        if k.traps >= 2:
            traps.append("Hidden files and directories are part of the share.")
        if k.traps >= 3 and v == "sha256_report":
            traps.append("Hard links to the same file are one file, not copies of each other: list such a file "
                         "once, under whichever of its paths sorts first, and it only appears if another file "
                         "has the same content.")
        elif k.traps >= 3:
            traps.append("Hard links to the same file are one file, not copies of each other: such a file counts "
                         "once, under whichever of its paths sorts first, and only as a copy of another file with "
                         "the same content.")
        t.say("Every team share lives under `/app/shares/<KEY>/`, where KEY is the first 16 hex digits of the "
              "SHA-256 of the share's name (the file server keeps names off the disk; `printf %s <name> | "
              "sha256sum`). Find the files in the share named below whose content is byte-for-byte identical to "
              "at least one other file in that same share (copies in other shares do not matter). "
              + " ".join(traps))
        who = t.deliver(target, "the share name")
        if v == "sha256_report":
            t.say("The report has one line per duplicated file, exactly as `sha256sum` prints it (`<sha256 hex "
                  "digest>  <path>`, including sha256sum's escaping of unusual names), with the path relative to the "
                  "share directory and no leading `./`. Sort the lines by digest, then by path in byte order.")
        elif v == "link_plan":
            esc = (" In a path, write a backslash as `\\\\` and a newline as `\\n`." if k.traps >= 3 else "")
            t.say("We will reclaim the space by turning the copies into hard links. Within each group of files with "
                  "the same content, the file whose path sorts first in byte order stays; every other file of the "
                  "group is to become a hard link to it. Write the plan, one line per file to be replaced: "
                  "`<its path><TAB><path of the file it will link to>`, both relative to the share directory with "
                  f"no leading `./`, sorted by the first path in byte order.{esc} Do not change the share yet.")
        else:
            t.say("We want to know how much space the copies waste. One line per group of files with the same "
                  "content: `<sha256 hex digest> <files in the group> <size of one file in bytes> <bytes wasted>`, "
                  "where the bytes wasted are what all but one of the group's files take (size times files minus "
                  "one). Most bytes wasted first, ties by digest.")
        out, what = {"sha256_report": ("duplicates.txt", "the duplicate report"),
                     "link_plan": ("link-plan.tsv", "the hard-link plan"),
                     "wasted_space": ("wasted.txt", "the wasted-space report")}[v]
        t.add_solution_file("dupes.py", src)
        t.solve(f'test -n "{who}"\nmkdir -p /app/out\nkey={key_cmd(who)}\n'
                f'python3 /solution/dupes.py "/app/shares/$key" > /app/out/{out}')
        t.expect_output(f"/app/out/{out}", truth, what)
