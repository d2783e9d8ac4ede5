"""Which uploads lie about their type? An upload batch (keyed by a hash of a delivered batch id) holds
files whose extension may not match their content; the content type is told by the file's leading
magic bytes. Variants: the files whose extension names another type, a count and byte total per
real type, or a rename plan that gives each mislabelled file the right extension (with collision
suffixes). Traps by level: subdirectories, upper-case extensions, files without an extension, empty
files, office documents that are ZIP containers, names with spaces, hidden files, rename collisions,
symlinks, truncated signatures and signatures that do not start at byte 0."""

from __future__ import annotations

import base64
import json
import tempfile
from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.file_operations._common import WORDS
from tmax.families.programs import fill, run_python
from tmax.families.unseen import distinct, key_cmd, key_of, unseen

REFERENCE = r'''
import os
import stat
import sys

VARIANT = @VARIANT@
MAGIC = [(b"\x89PNG\r\n\x1a\n", "png"), (b"\xff\xd8\xff", "jpeg"), (b"GIF87a", "gif"), (b"GIF89a", "gif"),
         (b"%PDF-", "pdf"), (b"PK\x03\x04", "zip"), (b"\x1f\x8b", "gzip"), (b"\x7fELF", "elf"),
         (b"SQLite format 3\x00", "sqlite")]
BY_EXT = {"png": "png", "jpg": "jpeg", "jpeg": "jpeg", "gif": "gif", "pdf": "pdf", "zip": "zip", "docx": "zip",
          "xlsx": "zip", "gz": "gzip", "so": "elf", "db": "sqlite", "sqlite": "sqlite", "txt": "text",
          "csv": "text", "md": "text"}
CANON = {"png": "png", "jpeg": "jpg", "gif": "gif", "pdf": "pdf", "zip": "zip", "gzip": "gz", "elf": "so",
         "sqlite": "sqlite", "text": "txt"}
PRINTABLE = set(range(32, 127)) | {9, 10, 13}


def kind(data):
    if not data:
        return "empty"
    for magic, name in MAGIC:
        if data.startswith(magic):
            return name
    return "text" if all(b in PRINTABLE for b in data) else "unknown"


def ext_of(name):
    stem, dot, ext = name.rpartition(".")
    return ext.lower() if dot and stem else ""


def scan(root):
    """(relative path, real type, size) for every regular file (symlinks are not followed or listed)."""
    if not os.path.isdir(root):
        sys.exit(f"no such batch: {root}")
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        for name in filenames:
            full = os.path.join(dirpath, name)
            if stat.S_ISREG(os.lstat(full).st_mode):
                with open(full, "rb") as f:
                    data = f.read()
                out.append((os.path.relpath(full, root), kind(data), len(data)))
    return sorted(out)


def report(root):
    files = scan(root)
    wrong = [(p, BY_EXT[ext_of(p)], k) for p, k, _ in files
             if ext_of(p) in BY_EXT and k != "empty" and BY_EXT[ext_of(p)] != k]
    if VARIANT == "mismatch":
        return "".join(f"{p}\t{want}\t{k}\n" for p, want, k in wrong)
    if VARIANT == "type_counts":
        counts = {}
        for _, k, size in files:
            c = counts.setdefault(k, [0, 0])
            c[0] += 1
            c[1] += size
        return "".join(f"{k}\t{n}\t{b}\n" for k, (n, b) in sorted(counts.items(), key=lambda kv: (-kv[1][0], kv[0])))
    # Names in use: files, folders and links alike.
    taken = {os.path.relpath(os.path.join(d, n), root) for d, ds, ns in os.walk(root) for n in ns + ds}
    out = []
    for p, _, k in wrong:
        if k == "unknown":
            continue  # nothing to rename it to: left for a person
        stem = p.rpartition(".")[0]
        new, n = f"{stem}.{CANON[k]}", 0
        while new in taken:
            n += 1
            new = f"{stem}-{n}.{CANON[k]}"
        taken.add(new)
        out.append(f"{p}\t{new}\n")
    return "".join(out)


if __name__ == "__main__":
    sys.stdout.write(report(sys.argv[1]))
'''

# Writes the batch from a JSON spec: ["f", path, base64 bytes, mtime] and ["l", path, target].
MKBIN = r'''
import base64
import json
import os
import sys


def mkbin(spec, root):
    for e in spec:
        p = os.path.join(root, e[1])
        os.makedirs(os.path.dirname(p), exist_ok=True)
        if e[0] == "f":
            with open(p, "wb") as f:
                f.write(base64.b64decode(e[2]))
            os.utime(p, (e[3], e[3]))
        else:
            os.symlink(e[2], p)


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as f:
        mkbin(json.load(f), sys.argv[2])
'''

BODY = {"png": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "jpeg": b"\xff\xd8\xff\xe0\x00\x10JFIF\x00",
        "gif": b"GIF89a\x10\x00\x10\x00", "pdf": b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n", "zip": b"PK\x03\x04\x14\x00\x06\x00",
        "gzip": b"\x1f\x8b\x08\x00\x00\x00\x00\x00", "elf": b"\x7fELF\x02\x01\x01\x00",
        "sqlite": b"SQLite format 3\x00"}
EXT_FOR = {"png": ("png",), "jpeg": ("jpg", "jpeg"), "gif": ("gif",), "pdf": ("pdf",), "zip": ("zip",),
           "gzip": ("gz",), "elf": ("so",), "sqlite": ("db", "sqlite"), "text": ("txt", "csv", "md")}
SIGN = {"png": "`89 50 4E 47 0D 0A 1A 0A`", "jpeg": "`FF D8 FF`", "gif": "`GIF87a` or `GIF89a`", "pdf": "`%PDF-`",
        "zip": "`PK\\x03\\x04`", "gzip": "`1F 8B`", "elf": "`7F 45 4C 46`", "sqlite": "`SQLite format 3\\x00`"}
NAMES = {"png": "png", "jpeg": "jpg, jpeg -> jpeg", "gif": "gif", "pdf": "pdf", "zip": "zip, docx, xlsx -> zip",
         "gzip": "gz -> gzip", "elf": "so -> elf", "sqlite": "db, sqlite -> sqlite", "text": "txt, csv, md -> text"}
CANON = {"png": "png", "jpeg": "jpg", "gif": "gif", "pdf": "pdf", "zip": "zip", "gzip": "gz", "elf": "so",
         "sqlite": "sqlite", "text": "txt"}
DIRS = ("scans", "invoices", "photos/2024", "exports", "misc")


@dataclass(frozen=True)
class Knobs:
    files: int  # regular files in each batch
    types: tuple[str, ...]  # real types drawn
    lies: int  # files whose extension names another type
    dirs: bool  # subdirectories
    odd: bool  # upper-case extensions, no extension, empty files, unknown binaries
    names: bool  # names with spaces, hidden files, rename collisions, office documents (ZIP)
    broken: bool  # symlinks, truncated signatures, signatures after a prefix
    decoys: int  # other batches beside the one asked about


@register
class FileSignatureAudit(Family):
    name = "file_signature_audit"
    domain = "file_operations"
    skill_types = ("Integrity Verification", "File Discovery", "Bulk Transformation")
    primitive_skills = ("file type identification by magic bytes", "grouping by extension", "batch renaming",
                        "collision handling", "recursive directory traversal",
                        "handling special characters in filenames",
                        "hidden file handling")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("mismatch", "type_counts", "rename_plan")
    levels = {0: Knobs(files=8, types=("png", "pdf", "jpeg", "text"), lies=2, dirs=False, odd=False, names=False,
                       broken=False, decoys=1),
              1: Knobs(files=20, types=("png", "pdf", "jpeg", "text", "gif", "zip"), lies=3, dirs=True, odd=False,
                       names=False, broken=False, decoys=2),
              2: Knobs(files=40, types=tuple(EXT_FOR), lies=5, dirs=True, odd=True, names=False, broken=False,
                       decoys=3),
              3: Knobs(files=60, types=tuple(EXT_FOR), lies=7, dirs=True, odd=True, names=True, broken=False,
                       decoys=3),
              4: Knobs(files=80, types=tuple(EXT_FOR), lies=9, dirs=True, odd=True, names=True, broken=True,
                       decoys=3)}

    def _batch(self, t):
        """One batch: relative path -> bytes, and its symlinks."""
        k, rng = t.knobs, t.rng
        files, links = {}, []

        def content(kind):
            if kind == "text":
                return (" ".join(rng.choice(WORDS) for _ in range(rng.randrange(4, 40))) + "\n").encode()
            return BODY[kind] + bytes(rng.randrange(256) for _ in range(rng.randrange(16, 300)))

        def place(stem, ext):
            d = rng.choice(DIRS) + "/" if k.dirs and rng.random() < 0.7 else ""
            if k.names and rng.random() < 0.15:
                stem = rng.choice([f"{stem} copy", f"{stem} ({rng.randrange(1, 5)})", "." + stem])
            return f"{d}{stem}.{ext}" if ext else f"{d}{stem}"

        def add(path, data):
            if path in files:
                return False
            files[path] = data
            return True

        n = 0
        for _ in range(50 * k.files):
            if n >= k.files - k.lies:
                break
            kind = rng.choice(k.types)
            ext = rng.choice(EXT_FOR[kind])
            if k.names and kind == "zip" and rng.random() < 0.5:
                ext = rng.choice(["docx", "xlsx"])  # office documents are ZIP containers: not a lie
            if k.odd and rng.random() < 0.15:
                ext = ext.upper()
            n += add(place(f"{rng.choice(WORDS)}_{rng.randrange(100, 999)}", ext), content(kind))
        lies = 0
        for _ in range(50 * k.lies):
            if lies == k.lies:
                break
            real, said = rng.sample(k.types, 2)
            stem = f"{rng.choice(WORDS)}_{rng.randrange(100, 999)}"
            path = place(stem, rng.choice(EXT_FOR[said]))
            if k.names and rng.random() < 0.4:  # the right name is taken already: a collision
                add(path.rpartition(".")[0] + "." + CANON[real], content(real))
            lies += add(path, content(real))
        if lies < k.lies or n < k.files - k.lies:
            raise FamilyError("file_signature_audit: too few distinct names drawn")
        if k.odd:
            add(place(f"notes_{rng.randrange(100, 999)}", ""), content(rng.choice(k.types)))  # no extension
            add(place(f"blank_{rng.randrange(100, 999)}", "pdf"), b"")  # empty: no type to lie about
            blob = b"\x00\x93" + bytes(rng.randrange(256) for _ in range(80))  # no signature, not text
            add(place(f"blob_{rng.randrange(100, 999)}", "png"), blob)
        if k.broken:
            add(place(f"cut_{rng.randrange(100, 999)}", "png"), b"\x89PN")  # truncated: not a PNG
            add(place(f"wrapped_{rng.randrange(100, 999)}", "pdf"), b"\n\n" + content("pdf"))  # not at byte 0
            for p, n in zip(rng.sample(sorted(files), 2), rng.sample(range(100, 999), 2)):  # two distinct names
                links.append((f"link_{n}.jpg", p))
        return files, links

    def output_case(self, t: TaskBuilder) -> None:
        k, v = t.knobs, t.variant
        batches = [self._batch(t) for _ in range(1 + k.decoys)]

        def spec_of(prefix, batch):
            files, links = batch
            spec = [["f", f"{prefix}/{p}", base64.b64encode(d).decode(), 1735689600 + i * 3600]
                    for i, (p, d) in enumerate(sorted(files.items()))]
            return spec + [["l", f"{prefix}/{p}", tgt] for p, tgt in links]

        raw = [b"".join(batch[0].values()) for batch in batches]
        name = unseen(t, lambda: t.code(2), *(json.dumps(spec_of("b", b)) for b in batches), *raw)
        names = [name, *distinct(lambda: t.code(2), k.decoys, [name])]
        keys = [key_of(n) for n in names]
        spec = [e for i in sorted(range(len(keys)), key=lambda i: keys[i]) for e in spec_of(keys[i], batches[i])]
        src = fill(REFERENCE, VARIANT=repr(v))
        ns = run_python(MKBIN)
        with tempfile.TemporaryDirectory(prefix="tmax-sig-") as root:
            ns["mkbin"](spec, root)
            truth = run_python(src)["report"](f"{root}/{keys[0]}")
        t.add_file("/tmp/fo-fixture/batches.json", json.dumps(spec, separators=(",", ":")) + "\n")
        t.add_file("/tmp/fo-fixture/mkbin.py", MKBIN.lstrip("\n"))
        t.add_setup("mkdir -p /app/uploads && python3 /tmp/fo-fixture/mkbin.py /tmp/fo-fixture/batches.json "
                    "/app/uploads && rm -rf /tmp/fo-fixture")
        t.say("Partner uploads land in `/app/uploads/<KEY>/`, one folder per batch, where KEY is the first 16 hex "
              "digits of the SHA-256 of the batch id (`printf %s <batch id> | sha256sum`). Look only at the batch "
              "given below" + (", including its subfolders." if k.dirs else "."))
        who = t.deliver(name, "the batch id")
        types = [x for x in EXT_FOR if x in k.types and x != "text"]  # only the types this batch can hold
        t.say("A file's real type is told by its first bytes, from byte 0: "
              + ", ".join(f"{SIGN[x]} {x}" for x in types)
              + ". A file with none of these is " + ("`empty` if it has no bytes, " if k.odd else "") + "`text` if "
              "every byte is printable ASCII, tab, LF or CR" + (", and `unknown` otherwise" if k.odd else "") + ". "
              "Extensions (the text after the last dot of the name, ignoring case) name types as: "
              + "; ".join(NAMES[x] for x in [*types, "text"]) + ". A file lies if its extension names a type, it is "
              "not empty, and its real type is another one."
              + (" Only regular files count: symbolic links are not files." if k.broken else ""))
        if v == "mismatch":
            t.say("List the files that lie, one per line: `<path relative to the batch folder><TAB><type the "
                  "extension names><TAB><real type>`, sorted by path in byte order.")
            out = "/app/out/mismatch.tsv"
        elif v == "type_counts":
            t.say("Count every file of the batch by real type, whatever its name: one line per type, "
                  "`<type><TAB><files><TAB><total bytes>`, sorted by the number of files (most first), ties by type "
                  "name in byte order.")
            out = "/app/out/types.tsv"
        else:
            t.say("Plan the renames that fix the lying files whose real type is known (leave `unknown` ones out): "
                  "replace the last extension with the real type's own one (png, jpg, gif, pdf, zip, gz, so, sqlite, "
                  "txt), in the same folder. If that name is taken (by any existing entry, or by an earlier rename "
                  "of the plan), add `-1`, `-2`, ... to the stem before the dot, the first that is free. Work "
                  "through the files in byte order of their paths, one line each: `<old path><TAB><new path>`, "
                  "both relative to the batch folder. Do not rename anything yet.")
            out = "/app/out/renames.tsv"
        t.add_solution_file("sig.py", src)
        t.solve(f'test -n "{who}"\nmkdir -p /app/out\nkey={key_cmd(who)}\ntest -d "/app/uploads/$key"\n'
                f'python3 /solution/sig.py "/app/uploads/$key" > {out}')
        t.expect_output(out, truth, {"mismatch": "the list of lying files", "type_counts": "the type counts",
                                     "rename_plan": "the rename plan"}[v])
