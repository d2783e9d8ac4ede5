"""Does a release still match its checksum manifest? Each release directory (keyed by a hash of a
delivered release name) carries a `SHA256SUMS` manifest in sha256sum format. Variants: the entries
that fail verification, as `sha256sum -c` prints them (content changed, or the file gone); the
release files the manifest does not list; or a count of each verdict. Traps by level:
subdirectories, same-size corruptions, names with spaces, `./` prefixes, binary-mode `*` markers,
comment and blank lines, hidden files, symlinks (never release files), a detached signature, and
per-directory manifests whose paths are relative to their own directory."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.file_operations._common import WORDS, epoch, keyed_sides, report_and_ship, solve_keyed
from tmax.families.programs import fill

REFERENCE = r'''
import hashlib
import os
import re
import stat
import sys

VARIANT = @VARIANT@
NESTED = @NESTED@  # a SHA256SUMS in a subdirectory lists that directory's files, relative to it
MANIFEST = "SHA256SUMS"
LINE = re.compile(r"^([0-9a-f]{64}) [ *](.+)$")  # anything else (comments, blanks) is skipped


def regular(root):
    """Regular files under root (symlinks are not followed or counted), relative paths, sorted."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        for name in filenames:
            full = os.path.join(dirpath, name)
            if stat.S_ISREG(os.lstat(full).st_mode):
                out.append(os.path.relpath(full, root))
    return sorted(out)


def is_meta(rel):
    """A manifest (or its signature) is not a release file."""
    base = os.path.basename(rel)
    return base in (MANIFEST, MANIFEST + ".asc") and (NESTED or rel == base)


def listed(root, files):
    """Path relative to root -> the digest its manifest records."""
    out = {}
    for m in files:
        if os.path.basename(m) != MANIFEST or not (NESTED or m == MANIFEST):
            continue
        with open(os.path.join(root, m), encoding="utf-8") as f:
            for line in f:
                got = LINE.match(line.rstrip("\n"))
                if got:
                    out[os.path.normpath(os.path.join(os.path.dirname(m), got.group(2)))] = got.group(1)
    return out


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def report(root):
    if not os.path.isdir(root):
        sys.exit(f"no such release: {root}")
    files = regular(root)
    sums = listed(root, files)
    verdict = {}
    for rel, want in sums.items():
        full = os.path.join(root, rel)
        if not os.path.isfile(full):
            verdict[rel] = "FAILED open or read"
        else:
            verdict[rel] = "OK" if digest(full) == want else "FAILED"
    unlisted = [p for p in files if p not in sums and not is_meta(p)]
    if VARIANT == "failed":
        return "".join(sorted(f"{p}: {v}\n" for p, v in verdict.items() if v != "OK"))
    if VARIANT == "unlisted":
        return "".join(p + "\n" for p in unlisted)
    counts = [sum(v == "OK" for v in verdict.values()), sum(v == "FAILED" for v in verdict.values()),
              sum(v != "OK" and v != "FAILED" for v in verdict.values()), len(unlisted)]
    return "".join(f"{w} {n}\n" for w, n in zip(("ok", "failed", "missing", "unlisted"), counts))


if __name__ == "__main__":
    sys.stdout.write(report(sys.argv[1]))
'''

DIRS = ("bin", "lib", "share/doc", "share/man", "etc", "lib/plugins")
EXTS = ("so", "txt", "conf", "json", "sh", "md", "dat")


def _text(rng):
    return " ".join(rng.choice(WORDS) for _ in range(rng.randrange(4, 40))) + "\n"


def _flip(rng, text):
    """Other bytes, the same length (a bit rot the size does not show)."""
    i = rng.randrange(len(text) - 1)
    return text[:i] + ("q" if text[i] != "q" else "z") + text[i + 1:]


def _sha(text):
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class Knobs:
    files: int  # release files listed in the manifest
    dirs: int  # subdirectories used (0: flat)
    drift: int  # corrupted, missing and unlisted files (each at least 1)
    decoys: int  # other releases beside the one asked about
    subtle: bool  # same-size corruptions, names with spaces
    messy: bool  # ./ prefixes, * markers, comments, hidden files, symlinks, a signature
    nested: bool  # per-directory manifests


@register
class ChecksumManifestVerify(Family):
    name = "checksum_manifest_verify"
    domain = "file_operations"
    skill_types = ("Integrity Verification", "File Discovery")
    primitive_skills = ("checksum verification", "manifest generation", "recursive directory traversal",
                        "path normalisation", "hidden file handling", "handling special characters in filenames")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("failed", "unlisted", "summary")
    levels = {0: Knobs(files=6, dirs=0, drift=1, decoys=1, subtle=False, messy=False, nested=False),
              1: Knobs(files=16, dirs=3, drift=2, decoys=2, subtle=False, messy=False, nested=False),
              2: Knobs(files=30, dirs=4, drift=3, decoys=3, subtle=True, messy=False, nested=False),
              3: Knobs(files=50, dirs=5, drift=4, decoys=3, subtle=True, messy=True, nested=False),
              4: Knobs(files=70, dirs=6, drift=5, decoys=3, subtle=True, messy=True, nested=True)}

    def _release(self, t, top):
        """One release as tree entries under ``top``."""
        k, rng = t.knobs, t.rng
        dirs = [""] + list(DIRS[:k.dirs])
        nested = ["lib"] if k.nested else []  # directories with a manifest of their own
        tree = {}
        for _ in range(40 * k.files):
            if len(tree) == k.files + k.drift:
                break
            d = rng.choice(dirs)
            base = f"{rng.choice(WORDS)}_{rng.randrange(10, 99)}.{rng.choice(EXTS)}"
            if k.subtle and rng.random() < 0.15:
                base = f"{rng.choice(WORDS)} {rng.choice(WORDS)}.txt"
            if k.messy and rng.random() < 0.1:
                base = "." + base
            p = f"{d}/{base}" if d else base
            if p not in tree and base not in ("SHA256SUMS", "SHA256SUMS.asc"):
                tree[p] = _text(rng)
        if len(tree) < k.files + k.drift:
            raise FamilyError("checksum_manifest_verify: too few distinct file names drawn")
        paths = sorted(tree)
        rng.shuffle(paths)
        listed = paths[k.drift:]  # the first k.drift files were added after the manifest was written
        sums = {p: _sha(tree[p]) for p in listed}
        for p in listed[:k.drift]:  # corrupted since
            tree[p] = _flip(rng, tree[p]) if k.subtle and rng.random() < 0.6 else _text(rng)
        for p in listed[k.drift:2 * k.drift]:  # gone
            del tree[p]
        spec = [["d", top, 0o755, epoch(2025, 4, 1)]]
        spec += [["f", f"{top}/{p}", text, 0o644, epoch(2025, 3, 1) + rng.randrange(86400 * 20)]
                 for p, text in sorted(tree.items())]
        manifests = {}
        for p in sorted(listed, key=lambda p: rng.random()):  # manifest order is not path order
            owner = next((d for d in nested if p.startswith(d + "/")), "")
            rel = p[len(owner) + 1:] if owner else p
            if k.messy and rng.random() < 0.25:
                rel = "./" + rel
            mark = "*" if k.messy and rng.random() < 0.3 else " "
            manifests.setdefault(owner, []).append(f"{sums[p]} {mark}{rel}\n")
        for owner, lines in sorted(manifests.items()):
            if k.messy:
                lines.insert(0, f"# release manifest, generated {rng.randrange(2023, 2026)}\n")
                lines.insert(rng.randrange(1, len(lines)), "\n")
            spec.append(["f", f"{top}/{owner + '/' if owner else ''}SHA256SUMS", "".join(lines), 0o644,
                         epoch(2025, 3, 25)])
        if k.messy:
            spec.append(["f", f"{top}/SHA256SUMS.asc", "-----BEGIN PGP SIGNATURE-----\n" + _text(rng)
                         + "-----END PGP SIGNATURE-----\n", 0o644, epoch(2025, 3, 25)])
            spec.append(["l", f"{top}/current.link", rng.choice(sorted(tree))])
            spec.append(["l", f"{top}/gone.link", "no/such/file.txt"])
        return spec

    def output_case(self, t: TaskBuilder) -> None:
        k, v = t.knobs, t.variant
        sides = [self._release(t, f"release{i}") for i in range(1 + k.decoys)]
        name, key, spec = keyed_sides(t, sides, "release")
        src = fill(REFERENCE, VARIANT=repr(v), NESTED=k.nested)
        truth = report_and_ship(t, spec, src, "/app/releases", key)
        t.say("Each release is unpacked under `/app/releases/<KEY>/`, where KEY is the first 16 hex digits of the "
              "SHA-256 of the release name (`printf %s <name> | sha256sum`). Its top directory holds `SHA256SUMS`, "
              "the manifest written at build time in `sha256sum` format (`<digest>  <path>`, paths relative to the "
              "manifest's directory). Check the release named below.")
        who = t.deliver(name, "the release name")
        rules = ["Only regular files are release files; the manifest itself is not one."]
        if k.messy:
            rules.append("Manifest lines may mark binary mode (`<digest> *<path>`) or start the path with `./`; "
                         "lines that are not a digest and a path (comments, blank lines) are ignored. "
                         "`SHA256SUMS.asc` is the manifest's signature, not a release file; symbolic links are "
                         "never release files. Hidden files are release files like any other.")
        if k.nested:
            rules.append("A subdirectory may carry its own `SHA256SUMS` for the files below it, with paths "
                         "relative to that subdirectory; it is a manifest too, not a release file.")
        t.say(" ".join(rules) + " Report paths relative to the release's top directory, without a leading `./`.")
        if v == "failed":
            t.say("Which listed files fail verification? One line per failing entry, exactly as `sha256sum -c` "
                  "reports it: `<path>: FAILED` when the content differs, `<path>: FAILED open or read` when the "
                  "file is gone. Leave out entries that pass, and sort the lines in byte order (`LC_ALL=C sort`).")
            out = "/app/out/failed.txt"
        elif v == "unlisted":
            t.say("Which release files does the manifest not list (added after it was written)? One path per "
                  "line, sorted in byte order (`LC_ALL=C sort`).")
            out = "/app/out/unlisted.txt"
        else:
            t.say("Count the verdicts: write four lines, `ok <n>`, `failed <n>` (listed, content differs), "
                  "`missing <n>` (listed, file gone) and `unlisted <n>` (release files not listed), in that order.")
            out = "/app/out/summary.txt"
        solve_keyed(t, who, "/app/releases", "verify.py", src, out)
        t.expect_output(out, truth, {"failed": "the failing entries", "unlisted": "the unlisted files",
                                     "summary": "the verdict counts"}[v])
