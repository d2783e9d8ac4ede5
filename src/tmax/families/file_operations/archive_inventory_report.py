"""What is inside a customer's archive drop, without unpacking it? One drop folder (keyed by a hash of
a delivered customer name) holds tar, gzipped tar and zip archives. Variants: where a given file
name occurs among the members, the regular-file count and uncompressed bytes of each archive, or the
largest members over all archives. Traps by level: subdirectories inside the archives, directory
entries (never files), `.tgz` names, `./` member prefixes, symlink and hard-link members in tars
(not regular files), hidden members, look-alike member names, a file that only claims to be an
archive, and archives in subfolders of the drop."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.file_operations._common import WORDS, spec_json
from tmax.families.file_operations._common import keyed_sides, solve_keyed
from tmax.families.programs import fill, run_python

# Builds the archives from a JSON spec, in the sandbox at setup time and on the host for the truth.
BUILDER = r'''
import io
import json
import os
import sys
import tarfile
import zipfile


def build(spec, root):
    for a in spec:
        path = os.path.join(root, a["path"])
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if a["kind"] == "junk":
            with open(path, "w", encoding="utf-8") as f:
                f.write(a["text"])
        elif a["kind"] == "zip":
            with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
                for kind, name, data in a["members"]:
                    info = zipfile.ZipInfo(name + "/" if kind == "d" else name, (2024, 5, 1, 12, 0, 0))
                    z.writestr(info, "" if kind == "d" else data)
        else:
            with tarfile.open(path, "w:gz" if a["kind"] == "tgz" else "w", format=tarfile.GNU_FORMAT) as t:
                for kind, name, data in a["members"]:
                    info = tarfile.TarInfo(name)
                    info.mtime = 1714564800
                    if kind == "d":
                        info.type, info.mode = tarfile.DIRTYPE, 0o755
                        t.addfile(info)
                    elif kind in ("l", "h"):
                        info.type = tarfile.SYMTYPE if kind == "l" else tarfile.LNKTYPE
                        info.linkname = data
                        t.addfile(info)
                    else:
                        blob = data.encode("utf-8")
                        info.size, info.mode = len(blob), 0o644
                        t.addfile(info, io.BytesIO(blob))


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as f:
        build(json.load(f), sys.argv[2])
'''

REFERENCE = r'''
import os
import sys
import tarfile
import zipfile

VARIANT = @VARIANT@
NAME = @NAME@  # the member name the locate variant looks for
TOP = @TOP@  # how many members the largest variant lists


def members(path):
    """(member path without a leading ./, size) of each regular-file member; None if not an archive."""
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as z:
            return [(i.filename, i.file_size) for i in z.infolist() if not i.is_dir()]
    if tarfile.is_tarfile(path):
        with tarfile.open(path) as t:
            return [(m.name[2:] if m.name.startswith("./") else m.name, m.size) for m in t.getmembers() if m.isreg()]
    return None


def report(drop):
    if not os.path.isdir(drop):
        sys.exit(f"no such drop: {drop}")
    found = {}
    for dirpath, dirnames, filenames in os.walk(drop):
        for name in filenames:
            full = os.path.join(dirpath, name)
            got = members(full)
            if got is not None:
                found[os.path.relpath(full, drop)] = got
    if VARIANT == "locate":
        return "".join(sorted(f"{a}:{m}\n" for a, ms in found.items() for m, _ in ms if m.rsplit("/", 1)[-1] == NAME))
    if VARIANT == "sizes":
        return "".join(f"{a}\t{len(ms)}\t{sum(s for _, s in ms)}\n" for a, ms in sorted(found.items()))
    rows = sorted(((s, a, m) for a, ms in found.items() for m, s in ms), key=lambda r: (-r[0], r[1], r[2]))
    return "".join(f"{s}\t{a}\t{m}\n" for s, a, m in rows[:TOP])


if __name__ == "__main__":
    sys.stdout.write(report(sys.argv[1]))
'''

TARGETS = ("settings.yaml", "manifest.json", "schema.sql", "LICENSE")
DIRS = ("src", "conf", "data", "docs/api", "data/2024")


@dataclass(frozen=True)
class Knobs:
    archives: int  # archives in the drop
    members: int  # file members per archive (about)
    kinds: tuple[str, ...]  # archive kinds drawn from
    dirs: bool  # members in subdirectories, with directory entries
    tricky: bool  # ./ prefixes, link members, hidden members, look-alike names
    junk: bool  # a fake archive and archives in subfolders of the drop


@register
class ArchiveInventoryReport(Family):
    name = "archive_inventory_report"
    domain = "file_operations"
    skill_types = ("Archive Handling", "Storage Accounting")
    primitive_skills = ("archive listing", "compressed stream handling", "disk usage accounting",
                        "glob and pattern matching", "sorting with tie-breaks", "hidden file handling")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("locate", "sizes", "largest")
    levels = {0: Knobs(archives=1, members=6, kinds=("tgz",), dirs=False, tricky=False, junk=False),
              1: Knobs(archives=3, members=8, kinds=("tgz", "zip"), dirs=True, tricky=False, junk=False),
              2: Knobs(archives=4, members=12, kinds=("tgz", "tar", "zip"), dirs=True, tricky=False, junk=False),
              3: Knobs(archives=5, members=16, kinds=("tgz", "tar", "zip"), dirs=True, tricky=True, junk=False),
              4: Knobs(archives=6, members=20, kinds=("tgz", "tar", "zip"), dirs=True, tricky=True, junk=True)}

    def _drop(self, t, top, target):
        """A drop's archives (builder spec, paths under ``top``); ``target`` occurs in at least one of them."""
        k, rng = t.knobs, t.rng
        out = []
        for i in range(k.archives):
            kind = rng.choice(k.kinds)
            stem = f"{rng.choice(WORDS)}-{rng.randrange(100, 999)}"
            ext = {"zip": "zip", "tar": "tar", "tgz": rng.choice(["tar.gz", "tgz"]) if k.tricky else "tar.gz"}[kind]
            sub = "incoming/" if k.junk and i % 3 == 2 else ""
            members, names, dirs = [], set(), set()
            for j in range(k.members + rng.randrange(3)):
                d = rng.choice(DIRS) if k.dirs and rng.random() < 0.6 else ""
                base = target if j == 0 and (i == 0 or rng.random() < 0.4) else \
                    f"{rng.choice(WORDS)}_{rng.randrange(10, 99)}.{rng.choice(['txt', 'csv', 'json', 'py'])}"
                if k.tricky and rng.random() < 0.1:
                    base = "." + base
                p = f"{d}/{base}" if d else base
                if p in names:
                    continue
                names.add(p)
                if d and kind != "tgz" or (d and rng.random() < 0.5):
                    for n in range(1, d.count("/") + 2):
                        dirs.add("/".join(d.split("/")[:n]))
                text = " ".join(rng.choice(WORDS) for _ in range(rng.randrange(3, 400))) + "\n"
                members.append(["f", p, text])
            if k.tricky:
                members.append(["f", f"{rng.choice(DIRS)}/{target}.bak", "old copy\n"])  # a look-alike
                if kind != "zip":
                    members.append(["l", f"current_{target}", members[0][1]])
                    members.append(["h", f"copy_of_{rng.randrange(10, 99)}.txt", members[-2][1]])
                    members = [[m[0], "./" + m[1], m[2]] if rng.random() < 0.3 and m[0] == "f" else m for m in members]
            members = [["d", d, ""] for d in sorted(dirs)] + members
            out.append({"path": f"{top}/{sub}{stem}.{ext}", "kind": kind, "members": members})
        if k.junk:
            out.append({"path": f"{top}/{rng.choice(WORDS)}-{rng.randrange(100, 999)}.zip", "kind": "junk",
                        "text": "<html><body>403 Forbidden</body></html>\n"})
        return out

    def output_case(self, t: TaskBuilder) -> None:
        k, rng, v = t.knobs, t.rng, t.variant
        target = rng.choice(TARGETS)
        top_n = min(3 + t.level, k.archives * k.members // 2)
        sides = [self._drop(t, f"drop{i}", target) for i in range(2 if t.level == 0 else 3)]
        name, key, spec = keyed_sides(t, sides, "drop", lambda a, key, cut: dict(a, path=key + a["path"][cut:]))
        src = fill(REFERENCE, VARIANT=repr(v), NAME=repr(target), TOP=top_n)
        with tempfile.TemporaryDirectory(prefix="tmax-ai-") as d:
            run_python(BUILDER)["build"](spec, f"{d}/drops")
            truth = run_python(src)["report"](f"{d}/drops/{key}")
        if not truth:
            raise FamilyError("archive_inventory_report: nothing to report")
        t.add_file("/tmp/ai-fixture/drops.json", spec_json(spec))
        t.add_file("/tmp/ai-fixture/build.py", BUILDER.lstrip("\n"))
        t.add_setup("mkdir -p /app/drops && python3 /tmp/ai-fixture/build.py /tmp/ai-fixture/drops.json /app/drops "
                    "&& rm -rf /tmp/ai-fixture")
        t.say("Customer deliveries land under `/app/drops/<KEY>/`, where KEY is the first 16 hex digits of the "
              "SHA-256 of the customer name (`printf %s <name> | sha256sum`). Inventory the drop of the customer "
              "named below without unpacking anything.")
        who = t.deliver(name, "the customer name")
        rules = ["An archive is a tar (`.tar`), gzipped tar (`.tar.gz`" + (", `.tgz`" if k.tricky else "") +
                 ") or zip (`.zip`) file" + (" anywhere below the drop; a file that is not a readable archive, "
                                             "whatever its name, is skipped." if k.junk else " in the drop.")]
        rules.append("Only regular-file members count" + (": directory entries, symbolic links and hard links "
                                                          "stored in a tar are not files." if k.tricky else
                                                          "; directory entries are not files."))
        if k.tricky:
            rules.append("Write a member path as stored but without a leading `./`.")
        t.say(" ".join(rules) + " Archive paths are relative to the drop directory.")
        if v == "locate":
            t.say(f"Which archives hold a file named exactly `{target}` (at any depth inside the archive)? One line "
                  "per such member, `<archive path>:<member path>`, sorted in byte order.")
            out = "/app/out/locate.txt"
        elif v == "sizes":
            t.say("For every archive write `<archive path><TAB><regular-file members><TAB><their total uncompressed "
                  "size in bytes>`, sorted by archive path in byte order.")
            out = "/app/out/sizes.tsv"
        else:
            t.say(f"List the {top_n} largest regular-file members over all archives (uncompressed size) as "
                  "`<bytes><TAB><archive path><TAB><member path>`, largest first, ties by archive path and then "
                  "member path in byte order.")
            out = "/app/out/largest.tsv"
        solve_keyed(t, who, "/app/drops", "inventory.py", src, out)
        t.expect_output(out, truth, {"locate": "the matching members", "sizes": "the archive sizes",
                                     "largest": "the largest members"}[v])
