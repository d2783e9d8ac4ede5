"""Which text files of a checkout break the repository's line-ending rules? One checkout (keyed by a
hash of a delivered repository name) mixes files saved on Windows and on Unix. Variants: the text
files with CRLF line ends and how many lines end so, the non-empty text files whose last line has no
newline, or the SHA-256 each file would have after normalisation (CRLF to LF, BOM dropped, final
newline added), for the files it changes. Traps by level: subdirectories, mixed endings in one file,
byte-order marks, empty files, names with spaces, files that are not text by extension, hidden
files, symlinks, a `.git` directory, upper-case extensions and a lone carriage return inside a line
(not a line end)."""

from __future__ import annotations

from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.file_operations._common import WORDS, epoch
from tmax.families.file_operations._common import keyed_sides, report_and_ship, solve_keyed
from tmax.families.programs import fill

REFERENCE = r'''
import hashlib
import os
import stat
import sys

VARIANT = @VARIANT@
TEXT = @TEXT@  # extensions of text files, compared in lower case
BOM = b"\xef\xbb\xbf"


def text_files(root):
    """Regular text files under root, outside .git, symlinks neither followed nor listed: rel -> bytes."""
    if not os.path.isdir(root):
        sys.exit(f"no such checkout: {root}")
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in filenames:
            full = os.path.join(dirpath, name)
            ext = name.rsplit(".", 1)[1].lower() if "." in name.lstrip(".") else ""
            if ext in TEXT and stat.S_ISREG(os.lstat(full).st_mode):
                with open(full, "rb") as f:
                    out[os.path.relpath(full, root)] = f.read()
    return out


def normalised(data):
    if data.startswith(BOM):
        data = data[len(BOM):]
    data = data.replace(b"\r\n", b"\n")
    if data and not data.endswith(b"\n"):
        data += b"\n"
    return data


def report(root):
    files = text_files(root)
    out = []
    for rel in sorted(files):
        data = files[rel]
        crlf = data.count(b"\r\n")
        if VARIANT == "crlf" and crlf:
            out.append(f"{rel}:{crlf}\n")
        elif VARIANT == "no_final_newline" and data and not data.endswith(b"\n"):
            out.append(rel + "\n")
        elif VARIANT == "normalise" and normalised(data) != data:
            out.append(f"{hashlib.sha256(normalised(data)).hexdigest()}  {rel}\n")
    return "".join(out)


if __name__ == "__main__":
    sys.stdout.write(report(sys.argv[1]))
'''

TEXT = ("txt", "md", "py", "sh", "csv", "conf")
OTHER = ("png", "bin", "dat")
DIRS = ("src", "docs", "scripts", "config", "src/util")


@dataclass(frozen=True)
class Knobs:
    files: int  # text files in the checkout
    dirs: int  # subdirectories used (0: flat)
    bad: int  # files with each kind of fault (CRLF, no final newline, BOM)
    decoys: int  # other checkouts beside the one asked about
    mixed: bool  # mixed endings, BOMs, empty files, names with spaces
    noise: bool  # non-text files, hidden files, symlinks, .git
    subtle: bool  # upper-case extensions, a lone CR inside a line


@register
class LineEndingAudit(Family):
    name = "line_ending_audit"
    domain = "file_operations"
    skill_types = ("Bulk Transformation", "Integrity Verification")
    primitive_skills = ("line ending detection", "byte order mark handling", "content hashing",
                        "recursive directory traversal", "glob and pattern matching", "hidden file handling")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("crlf", "no_final_newline", "normalise")
    levels = {0: Knobs(files=6, dirs=0, bad=1, decoys=1, mixed=False, noise=False, subtle=False),
              1: Knobs(files=16, dirs=3, bad=2, decoys=2, mixed=False, noise=False, subtle=False),
              2: Knobs(files=30, dirs=4, bad=3, decoys=3, mixed=True, noise=False, subtle=False),
              3: Knobs(files=45, dirs=5, bad=4, decoys=3, mixed=True, noise=True, subtle=False),
              4: Knobs(files=60, dirs=5, bad=5, decoys=3, mixed=True, noise=True, subtle=True)}

    def _checkout(self, t, top):
        """One checkout as tree entries under ``top``."""
        k, rng = t.knobs, t.rng
        dirs = [""] + list(DIRS[:k.dirs])
        names = set()
        for _ in range(40 * k.files):
            if len(names) == k.files:
                break
            d = rng.choice(dirs)
            ext = rng.choice(TEXT)
            base = f"{rng.choice(WORDS)}_{rng.randrange(10, 99)}"
            if k.mixed and rng.random() < 0.15:
                base = f"{rng.choice(WORDS)} {rng.choice(WORDS)}"
            if k.noise and rng.random() < 0.1:
                base = "." + base
            if k.subtle and rng.random() < 0.15:
                ext = ext.upper()
            names.add((f"{d}/" if d else "") + f"{base}.{ext}")
        if len(names) < k.files:
            raise FamilyError("line_ending_audit: too few distinct file names drawn")
        paths = sorted(names)
        rng.shuffle(paths)
        faults = {p: set() for p in paths}
        for i, kind in enumerate(("crlf", "eof", "bom") if k.mixed else ("crlf", "eof")):
            for p in paths[i * k.bad:(i + 1) * k.bad] + rng.sample(paths, k.bad // 2):
                faults[p].add(kind)
        spec = [["d", top, 0o755, epoch(2025, 2, 1)]]
        for p in sorted(paths):
            lines = [" ".join(rng.choice(WORDS) for _ in range(rng.randrange(2, 9))) for _ in range(rng.randrange(2, 12))]
            if k.subtle and rng.random() < 0.1:
                lines[0] += "\r" + "progress 100%"  # a carriage return inside a line is no line end
            if "crlf" in faults[p]:
                ends = ["\r\n" if not k.mixed or rng.random() < 0.7 else "\n" for _ in lines]
                ends[0] = "\r\n"
            else:
                ends = ["\n"] * len(lines)
            if "eof" in faults[p]:
                ends[-1] = ""
            text = "".join(a + b for a, b in zip(lines, ends))
            if "bom" in faults[p]:
                text = "\ufeff" + text
            if k.mixed and not faults[p] and rng.random() < 0.1:
                text = ""
            spec.append(["f", f"{top}/{p}", text, 0o644, epoch(2025, 1, 1) + rng.randrange(86400 * 30)])
        if k.noise:  # CR bytes outside the rules' reach
            for i in range(3):
                spec.append(["f", f"{top}/assets/blob_{i}.{rng.choice(OTHER)}", "PNG\r\n\x1a\nIHDR\r\n", 0o644,
                             epoch(2025, 1, 3)])
            spec.append(["f", f"{top}/.git/config", "[core]\r\n\tautocrlf = true\r\n", 0o644, epoch(2025, 1, 3)])
            spec.append(["f", f"{top}/.git/info/exclude.txt", "*.tmp\r\n", 0o644, epoch(2025, 1, 3)])
            spec.append(["l", f"{top}/README.txt.lnk.txt", sorted(paths)[0]])
        return spec

    def output_case(self, t: TaskBuilder) -> None:
        k, v = t.knobs, t.variant
        sides = [self._checkout(t, f"repo{i}") for i in range(1 + k.decoys)]
        name, key, spec = keyed_sides(t, sides, "repo")
        src = fill(REFERENCE, VARIANT=repr(v), TEXT=TEXT)
        truth = report_and_ship(t, spec, src, "/app/checkouts", key)
        t.say("Working copies live under `/app/checkouts/<KEY>/`, where KEY is the first 16 hex digits of the "
              "SHA-256 of the repository name (`printf %s <name> | sha256sum`). The repository named below is "
              "supposed to use Unix line ends only.")
        who = t.deliver(name, "the repository name")
        exts = ", ".join(f"`.{e}`" for e in TEXT)
        rules = [f"Text files are the regular files whose extension is one of {exts}"
                 + (" (in any case)" if k.subtle else "") + "; judge only those."]
        if k.noise:
            rules.append("Leave out everything inside `.git` and every symbolic link; hidden files count.")
        if k.subtle:
            rules.append("A carriage return that is not directly followed by a newline is part of the line, not a "
                         "line end.")
        t.say(" ".join(rules) + " Paths are relative to the checkout directory, without a leading `./`.")
        if v == "crlf":
            t.say("Which text files have Windows line ends? For each file with at least one line ending in CRLF "
                  "(`\\r\\n`), write `<path>:<number of lines ending in CRLF>` (as `grep -c` prints it), sorted by "
                  "path in byte order.")
            out = "/app/out/crlf.txt"
        elif v == "no_final_newline":
            t.say("Which non-empty text files do not end with a newline byte (`\\n`)? One path per line, sorted in "
                  "byte order (`LC_ALL=C sort`).")
            out = "/app/out/no_final_newline.txt"
        else:
            t.say("Normalising a text file means: " + ("drop a leading UTF-8 byte-order mark (EF BB BF), " if k.mixed
                                                        else "") +
                  "turn every CRLF into LF, and add a final newline to a non-empty file that lacks one. Do not "
                  "change the files; for each text file that normalisation would change, write the SHA-256 of its "
                  "normalised bytes as `sha256sum` prints it (`<digest>  <path>`), sorted by path in byte order.")
            out = "/app/out/normalised.sha256"
        solve_keyed(t, who, "/app/checkouts", "eol.py", src, out)
        t.expect_output(out, truth, {"crlf": "the CRLF counts", "no_final_newline": "the files without a final "
                                     "newline", "normalise": "the normalised digests"}[v])
