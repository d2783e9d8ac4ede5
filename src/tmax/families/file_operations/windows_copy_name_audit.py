"""Will an export survive the copy to a Windows (NTFS/SMB) share? One export directory (keyed by a
hash of a delivered project name) is checked before the copy. Variants: the paths that collide when
case is ignored (the share folds case), the names Windows refuses (reserved device names, forbidden
characters, a trailing dot or space) with the reason, or the paths longer than the destination's
limit. Traps by level: subdirectories (names in different directories never collide), directories
that collide, names with spaces, reserved names with extensions and look-alikes that are allowed
(`COM10`, `console.txt`), hidden files, symlinks (not copied) and names that need shell quoting."""

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
LIMIT = @LIMIT@  # the longest relative path the destination takes
RESERVED = {"CON", "PRN", "AUX", "NUL", *(f"COM{i}" for i in range(1, 10)), *(f"LPT{i}" for i in range(1, 10))}
FORBIDDEN = set('<>:"\\|?*')


def entries(root):
    """Every file and directory to copy (symlinks are not copied), relative to root."""
    if not os.path.isdir(root):
        sys.exit(f"no such export: {root}")
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            full = os.path.join(dirpath, name)
            if not os.path.islink(full):
                out.append(os.path.relpath(full, root))
    return sorted(out)


def refusal(name):
    """Why Windows refuses a name (the first rule that applies), or None."""
    if name.split(".")[0].upper() in RESERVED:
        return "reserved"
    if any(c in FORBIDDEN or ord(c) < 32 for c in name):
        return "character"
    if name.endswith(".") or name.endswith(" "):
        return "trailing"
    return None


def report(root):
    paths = entries(root)
    if VARIANT == "collisions":
        folded = {}
        for p in paths:
            folded.setdefault(p.lower(), []).append(p)
        return "".join(p + "\n" for p in paths if len(folded[p.lower()]) > 1)
    if VARIANT == "refused":
        rows = [(p, refusal(os.path.basename(p))) for p in paths]
        return "".join(f"{p}\t{why}\n" for p, why in rows if why)
    return "".join(f"{len(p)}\t{p}\n" for p in sorted(paths, key=lambda p: (-len(p), p)) if len(p) > LIMIT)


if __name__ == "__main__":
    sys.stdout.write(report(sys.argv[1]))
'''

DIRS = ("src", "docs", "assets", "build/scripts", "data/raw", "data/processed")
EXTS = ("c", "h", "md", "txt", "png", "csv", "py")
ALLOWED_LOOKALIKES = ("COM10.txt", "console.log", "nullable.h", "auxiliary.md", "LPT0.cfg", "prn_driver.c")
RESERVED_NAMES = ("CON", "con.txt", "NUL", "nul.tar.gz", "aux.c", "Com1.log", "LPT3", "prn.md")
BAD_CHARS = ("notes: draft.txt", "what?.md", 'say "hi".txt', "a|b.csv", "star*.py", "back\\slash.txt", "<tmp>.h")
TRAILING = ("ends with dot.", "trailing space ", "v2.", "old .")


@dataclass(frozen=True)
class Knobs:
    files: int  # ordinary files in the export
    dirs: int  # subdirectories used (0: flat)
    bad: int  # offending entries of the kind the variant asks about
    decoys: int  # other exports beside the one asked about
    hard: bool  # directory collisions, look-alikes, reserved names with extensions, trailing dots
    noise: bool  # spaces, hidden files, symlinks


@register
class WindowsCopyNameAudit(Family):
    name = "windows_copy_name_audit"
    domain = "file_operations"
    skill_types = ("File Discovery", "Bulk Transformation")
    primitive_skills = ("collision handling", "handling special characters in filenames", "recursive directory traversal",
                        "hidden file handling", "glob and pattern matching", "sorting with tie-breaks")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("collisions", "refused", "long_paths")
    levels = {0: Knobs(files=8, dirs=0, bad=1, decoys=1, hard=False, noise=False),
              1: Knobs(files=20, dirs=3, bad=2, decoys=2, hard=False, noise=False),
              2: Knobs(files=40, dirs=5, bad=3, decoys=3, hard=False, noise=True),
              3: Knobs(files=60, dirs=6, bad=4, decoys=3, hard=True, noise=True),
              4: Knobs(files=90, dirs=6, bad=5, decoys=3, hard=True, noise=True)}

    def _export(self, t, top, limit):
        """One export as tree entries under ``top``: ordinary files plus every kind of trouble."""
        k, rng = t.knobs, t.rng
        dirs = [""] + list(DIRS[:k.dirs])
        paths = set()

        def add(p):
            if p.lower() in {q.lower() for q in paths}:
                return False
            paths.add(p)
            return True

        for _ in range(40 * k.files):
            if len(paths) >= k.files:
                break
            d = rng.choice(dirs)
            base = f"{rng.choice(WORDS)}_{rng.randrange(10, 99)}.{rng.choice(EXTS)}"
            if k.noise and rng.random() < 0.15:
                base = rng.choice([f"{rng.choice(WORDS)} {rng.choice(WORDS)}.txt", "." + base])
            add(f"{d}/{base}" if d else base)
        if len(paths) < k.files:
            raise FamilyError("windows_copy_name_audit: too few distinct file names drawn")
        plain = sorted(paths)
        # Case twins: same name in the same directory, other case (and same name elsewhere: no collision).
        for p in rng.sample(plain, k.bad):
            d, _, base = p.rpartition("/")
            twin = base.upper() if base != base.upper() else base.lower()
            paths.add(f"{d}/{twin}" if d else twin)
            if k.dirs and rng.random() < 0.5:
                other = rng.choice([x for x in dirs if x != d])
                paths.add(f"{other}/{base}" if other else base)
        if k.hard:  # a directory that exists twice, in two cases
            d = rng.choice([x for x in dirs if x and "/" not in x] or ["src"])
            paths.add(f"{d.capitalize()}/{rng.choice(WORDS)}_{rng.randrange(10, 99)}.txt")
        refused = list(BAD_CHARS) + (list(RESERVED_NAMES) + list(TRAILING) if k.hard else ["CON", "nul.txt"])
        for base in rng.sample(refused, k.bad):
            d = rng.choice(dirs)
            paths.add(f"{d}/{base}" if d else base)
        if k.hard:
            for base in rng.sample(ALLOWED_LOOKALIKES, 3):
                d = rng.choice(dirs)
                paths.add(f"{d}/{base}" if d else base)
        for _ in range(k.bad):  # too long, and some just at the limit (allowed)
            d = rng.choice(dirs)
            pre = f"{d}/" if d else ""
            deep = pre + ("/".join(rng.choice(WORDS) + "_archive" for _ in range(rng.randrange(0, 3))) + "/"
                          if k.dirs else "")
            for want in (limit + rng.randrange(1, 25), limit):
                stem = deep + "_".join(rng.choice(WORDS) for _ in range(20))
                paths.add(stem[:want - 4].rstrip("/_").ljust(want - 4, "x") + ".txt")
        spec = [["d", top, 0o755, epoch(2025, 5, 1)]]
        spec += [["f", f"{top}/{p}", " ".join(rng.choice(WORDS) for _ in range(6)) + "\n", 0o644,
                  epoch(2025, 1, 1) + rng.randrange(86400 * 100)] for p in sorted(paths)]
        if k.noise:  # symlinks are not copied, whatever their names
            target = rng.choice(plain)
            shadow = target.rpartition("/")[2].upper()  # folds onto a top-level name, or none
            if shadow not in paths:
                spec.append(["l", f"{top}/{shadow}", target])
            spec.append(["l", f"{top}/aux.lnk", target])
        return spec

    def output_case(self, t: TaskBuilder) -> None:
        k, rng, v = t.knobs, t.rng, t.variant
        limit = rng.randrange(48, 80)
        sides = [self._export(t, f"export{i}", limit) for i in range(1 + k.decoys)]
        name, key, spec = keyed_sides(t, sides, "export")
        src = fill(REFERENCE, VARIANT=repr(v), LIMIT=limit)
        truth = report_and_ship(t, spec, src, "/app/exports", key)
        t.say("Project exports wait under `/app/exports/<KEY>/` to be copied to a Windows file share, where KEY is "
              "the first 16 hex digits of the SHA-256 of the project name (`printf %s <name> | sha256sum`). Check "
              "the export of the project named below before the copy runs.")
        who = t.deliver(name, "the project name")
        scope = "Every file and directory below the export is copied"
        if k.noise:
            scope += "; symbolic links are not copied, so ignore them, but hidden files are copied like any other"
        t.say(scope + ". Paths are relative to the export directory, without a leading `./`, with `/` between "
              "names.")
        if v == "collisions":
            t.say("The share ignores case, so two paths that differ only in the case of their letters would land "
                  "on the same name (paths in different directories never collide"
                  + (", but two directories can" if k.hard else "") + "). List every path that is equal to another "
                  "path of the export when case is ignored, one per line, sorted in byte order (`LC_ALL=C sort`).")
            out = "/app/out/collisions.txt"
        elif v == "refused":
            t.say("Windows refuses some names. Judge the last component of each path and give the first rule that "
                  "applies: `reserved` when the part before the first dot, in any case, is a device name (`CON`, "
                  "`PRN`, `AUX`, `NUL`, `COM1`-`COM9`, `LPT1`-`LPT9`); `character` when it contains one of "
                  "`< > : \" \\ | ? *` or a control character; `trailing` when it ends with a dot or a space. "
                  "Write `<path><TAB><rule>` for each refused entry, sorted by path in byte order.")
            out = "/app/out/refused.tsv"
        else:
            t.say(f"The destination takes relative paths of at most {limit} characters. List every longer path "
                  "as `<length><TAB><path>`, longest first, ties by path in byte order.")
            out = "/app/out/long_paths.tsv"
        solve_keyed(t, who, "/app/exports", "names.py", src, out)
        t.expect_output(out, truth, {"collisions": "the colliding paths", "refused": "the refused names",
                                     "long_paths": "the paths that are too long"}[v])
