"""Which members of an untrusted upload would escape the extraction directory? Audit the tar, tar.gz
and zip archives of one delivered upload (its folder is keyed by a hash of the ticket number) for
absolute names, `..` traversal, members written through an earlier symlink, link targets that leave
the tree and device nodes; at the top level, archives nested inside archives. The adversarial
case asks for the gatekeeper program itself: given an archive listing, accept it or reject it.
Variants: audit (each unsafe member with the first rule it breaks), escape_paths (where each member
that leaves its extraction directory by name or by link target would end up on disk; its gatekeeper
judges escapes only) and extract_manifest (the normalised names a safe extraction creates; its
gatekeeper also refuses members that overwrite an earlier one)."""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.file_operations._archive_member_audit_refs import (ATOMIC, CLASSIFIER_MAIN, CLOBBER_PY,
                                                                       CORPUS_GOAL, VARIANT_MAIN, VARIANT_REPORTS,
                                                                       clobbered, with_clobber_check)
from tmax.families.file_operations._common import WORDS, finish_setup
from tmax.families.programs import fill, run_python
from tmax.families.unseen import distinct, key_cmd, key_of, unseen

# Builds archives from a JSON spec; shipped to the environment and run on the host for the truth.
ARCHIVER = r'''
import gzip
import io
import json
import os
import sys
import tarfile
import zipfile

MTIME = 1714564800
TYPES = {"dir": tarfile.DIRTYPE, "symlink": tarfile.SYMTYPE, "hardlink": tarfile.LNKTYPE,
         "char": tarfile.CHRTYPE, "block": tarfile.BLKTYPE, "fifo": tarfile.FIFOTYPE}


def data_of(name, extra):
    if isinstance(extra, dict):
        return archive_bytes(extra["kind"], extra["members"])
    return (extra or f"contents of {name}\n").encode("utf-8")


def tar_bytes(members):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tf:
        for typ, name, extra in members:
            ti = tarfile.TarInfo(name)
            ti.mtime, ti.uid, ti.gid, ti.uname, ti.gname = MTIME, 1000, 1000, "build", "build"
            if typ == "file":
                data = data_of(name, extra)
                ti.size, ti.mode = len(data), 0o644
                tf.addfile(ti, io.BytesIO(data))
                continue
            ti.type = TYPES[typ]
            ti.mode = 0o755 if typ == "dir" else 0o777 if typ == "symlink" else 0o644
            if typ in ("symlink", "hardlink"):
                ti.linkname = extra
            if typ in ("char", "block"):
                ti.devmajor, ti.devminor = 1, 3
            tf.addfile(ti)
    return buf.getvalue()


def zip_bytes(members):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for typ, name, extra in members:
            zi = zipfile.ZipInfo(name + ("/" if typ == "dir" else ""), date_time=(2024, 5, 1, 12, 0, 0))
            zi.create_system = 3
            zi.compress_type = zipfile.ZIP_DEFLATED
            if typ == "dir":
                zi.external_attr = (0o40755 << 16) | 0x10
                zf.writestr(zi, b"")
            elif typ == "symlink":
                zi.external_attr = 0o120777 << 16
                zf.writestr(zi, extra.encode("utf-8"))
            else:
                zi.external_attr = 0o100644 << 16
                zf.writestr(zi, data_of(name, extra))
    return buf.getvalue()


def archive_bytes(kind, members):
    if kind == "zip":
        return zip_bytes(members)
    raw = tar_bytes(members)
    if kind == "tgz":
        buf = io.BytesIO()
        with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0) as gz:
            gz.write(raw)
        return buf.getvalue()
    return raw


def build(spec, root):
    os.makedirs(root, exist_ok=True)
    for a in spec:
        with open(os.path.join(root, a["name"]), "wb") as f:
            f.write(archive_bytes(a["kind"], a["members"]))


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as f:
        build(json.load(f), sys.argv[2])
'''

# The rules, on a listing: one member per line, TYPE<TAB>NAME<TAB>LINK-TARGET (target empty unless a link).
RULES = r'''
MAX_DEPTH = @MAX_DEPTH@  # 0: no depth limit
CHECKS = @CHECKS@


def parts(path):
    """Normalised components, or None if the path climbs above the top."""
    out = []
    for c in path.split("/"):
        if c in ("", "."):
            continue
        if c == "..":
            if not out:
                return None
            out.pop()
        else:
            out.append(c)
    return out


def verdicts(members):
    """members: (type, name, target) in archive order -> list of (index, reason) for unsafe ones."""
    links = []
    bad = []
    for i, (typ, name, target) in enumerate(members):
        reason = None
        norm = parts(name)
        if name.startswith("/"):
            reason = "absolute"
        elif norm is None:
            reason = "traversal"
        elif "through-link" in CHECKS and any(len(l) < len(norm) and norm[:len(l)] == l for l in links):
            reason = "through-link"
        elif "link-escape" in CHECKS and typ == "symlink" and (
                target.startswith("/") or parts("/".join(norm[:-1]) + "/" + target) is None):
            reason = "link-escape"
        elif "link-escape" in CHECKS and typ == "hardlink" and (target.startswith("/") or parts(target) is None):
            reason = "link-escape"
        elif "special" in CHECKS and typ in ("char", "block", "fifo"):
            reason = "special"
        elif MAX_DEPTH and len(norm) > MAX_DEPTH:
            reason = "too-deep"
        if typ == "symlink" and norm:
            links.append(norm)
        if reason:
            bad.append((i, reason))
    return bad


def parse_listing(text):
    members = []
    for line in text.split("\n"):
        if not line:
            continue
        typ, name, target = (line.split("\t") + ["", ""])[:3]
        members.append((typ, name, target))
    return members
'''

CLASSIFIER = RULES + r'''

if __name__ == "__main__":
    import sys
    data = sys.stdin.buffer.read().decode("utf-8", "replace")
    sys.exit(1 if verdicts(parse_listing(data)) else 0)
'''

AUDIT = RULES + r'''
import os
import stat
import sys
import tarfile
import zipfile

NESTED = @NESTED@
SUFFIXES = (".tar", ".tar.gz", ".tgz", ".zip")


def open_members(path_or_file, is_zip):
    """(type, name, target, reader) for each member, in archive order."""
    out = []
    if is_zip:
        zf = zipfile.ZipFile(path_or_file)
        for zi in zf.infolist():
            mode = zi.external_attr >> 16
            if zi.is_dir():
                out.append(("dir", zi.filename, "", None))
            elif stat.S_ISLNK(mode):
                out.append(("symlink", zi.filename, zf.read(zi).decode("utf-8"), None))
            else:
                out.append(("file", zi.filename, "", (lambda zi=zi: zf.read(zi))))
        return out
    tf = tarfile.open(fileobj=path_or_file) if hasattr(path_or_file, "read") else tarfile.open(path_or_file)
    for ti in tf.getmembers():
        if ti.isdir():
            typ = "dir"
        elif ti.issym():
            typ = "symlink"
        elif ti.islnk():
            typ = "hardlink"
        elif ti.ischr():
            typ = "char"
        elif ti.isblk():
            typ = "block"
        elif ti.isfifo():
            typ = "fifo"
        else:
            typ = "file"
        reader = (lambda ti=ti: tf.extractfile(ti).read()) if typ == "file" else None
        out.append((typ, ti.name, ti.linkname if typ in ("symlink", "hardlink") else "", reader))
    return out


def audit(label, source, is_zip, rows):
    import io
    members = open_members(source, is_zip)
    for i, reason in verdicts([m[:3] for m in members]):
        rows.append((label, i, f"{label}\t{members[i][1]}\t{reason}\n"))
    if NESTED:
        for typ, name, _, reader in members:
            if typ == "file" and name.endswith(SUFFIXES):
                audit(f"{label}!{name}", io.BytesIO(reader()), name.endswith(".zip"), rows)


def report(folder):
    rows = []
    for name in sorted(os.listdir(folder)):
        if name.endswith(SUFFIXES):
            audit(name, os.path.join(folder, name), name.endswith(".zip"), rows)
    return "".join(r[2] for r in sorted(rows))


if __name__ == "__main__":
    sys.stdout.write(report(sys.argv[1]))
'''

CLASSIFIER_C = r"""
/* Archive listing gatekeeper: exit 1 if any member would land outside the extraction directory. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH @MAX_DEPTH@
#define CHECK_THROUGH @THROUGH@
#define CHECK_LINK @LINK@
#define CHECK_SPECIAL @SPECIAL@
#define MAXC 4096

/* Normalise path into out (components joined by '/'); returns the number of components, or -1 if a
   '..' climbs above the top. */
static int norm(const char *path, char *out) {
    static size_t starts[MAXC];
    int n = 0;
    size_t len = 0;
    const char *p = path;
    out[0] = 0;
    for (;;) {
        const char *e = strchr(p, '/');
        size_t cl = e ? (size_t)(e - p) : strlen(p);
        if (cl == 0 || (cl == 1 && p[0] == '.')) {
            /* skip */
        } else if (cl == 2 && p[0] == '.' && p[1] == '.') {
            if (n == 0) return -1;
            n--;
            len = starts[n];
            out[len] = 0;
        } else {
            if (n >= MAXC) return n;
            starts[n++] = len;
            if (len) out[len++] = '/';
            memcpy(out + len, p, cl);
            len += cl;
            out[len] = 0;
        }
        if (!e) break;
        p = e + 1;
    }
    return n;
}

int main(void) {
    size_t cap = 1 << 16, len = 0, r;
    char *buf = malloc(cap + 1);
    while ((r = fread(buf + len, 1, cap - len, stdin)) > 0) {
        len += r;
        if (len == cap) { cap *= 2; buf = realloc(buf, cap + 1); }
    }
    buf[len] = 0;
    char **links = malloc(sizeof(char *) * (len + 1));
    int nlinks = 0;
    char *line = buf;
    while (line && *line != 0) {
        char *nl = strchr(line, '\n');
        if (nl) *nl = 0;
        if (*line) {
            char *typ = line, *name = "", *target = "";
            char *t1 = strchr(typ, '\t');
            if (t1) {
                *t1 = 0;
                name = t1 + 1;
                char *t2 = strchr(name, '\t');
                if (t2) {
                    *t2 = 0;
                    target = t2 + 1;
                    char *t3 = strchr(target, '\t');
                    if (t3) *t3 = 0;
                }
            }
            size_t ln = strlen(name), lt = strlen(target);
            char *nb = malloc(ln + 2), *tmp = malloc(ln + lt + 4);
            int n = norm(name, nb);
            if (name[0] == '/' || n < 0) return 1;
            if (CHECK_THROUGH) {
                for (int i = 0; i < nlinks; i++) {
                    size_t l = strlen(links[i]);
                    if (strncmp(nb, links[i], l) == 0 && nb[l] == '/') return 1;
                }
            }
            if (CHECK_LINK && strcmp(typ, "symlink") == 0) {
                if (target[0] == '/') return 1;
                char *slash = strrchr(nb, '/');
                size_t dl = slash ? (size_t)(slash - nb) : 0;
                memcpy(tmp, nb, dl);
                tmp[dl] = '/';
                strcpy(tmp + dl + 1, target);
                char *scratch = malloc(strlen(tmp) + 2);
                if (norm(tmp, scratch) < 0) return 1;
                free(scratch);
            }
            if (CHECK_LINK && strcmp(typ, "hardlink") == 0) {
                char *scratch = malloc(lt + 2);
                if (target[0] == '/' || norm(target, scratch) < 0) return 1;
                free(scratch);
            }
            if (CHECK_SPECIAL && (strcmp(typ, "char") == 0 || strcmp(typ, "block") == 0 || strcmp(typ, "fifo") == 0))
                return 1;
            if (MAX_DEPTH && n > MAX_DEPTH) return 1;
            if (strcmp(typ, "symlink") == 0 && n > 0) links[nlinks++] = nb;
            else free(nb);
            free(tmp);
        }
        line = nl ? nl + 1 : NULL;
    }
    return 0;
}
"""


def classifiers(max_depth, checks, clobber=False) -> dict[str, str]:
    """The gatekeeper programs; ``max_depth`` may be source text (the oracle's "@@MAX_DEPTH@@").
    ``clobber``: also refuse a member that overwrites an earlier one (extract_manifest)."""
    flags = {name: "1" if check in checks else "0"
             for name, check in (("THROUGH", "through-link"), ("LINK", "link-escape"), ("SPECIAL", "special"))}
    if not clobber:
        return {"Python": fill(CLASSIFIER, MAX_DEPTH=max_depth, CHECKS=tuple(checks)),
                "C": fill(CLASSIFIER_C.lstrip("\n"), MAX_DEPTH=str(max_depth), **flags)}
    return {"Python": fill(RULES + CLOBBER_PY + CLASSIFIER_MAIN, MAX_DEPTH=max_depth, CHECKS=tuple(checks)),
            "C": fill(with_clobber_check(CLASSIFIER_C.lstrip("\n")), MAX_DEPTH=str(max_depth), **flags)}


def audit_program(variant, checks, nested) -> str:
    """The reference audit of a variant's output case (audit's text is today's, unchanged)."""
    if variant == "audit":
        return fill(AUDIT, MAX_DEPTH=0, CHECKS=checks, NESTED=nested)
    body = AUDIT[:AUDIT.index("\n\nif __name__")]
    return fill(body + VARIANT_REPORTS + VARIANT_MAIN, MAX_DEPTH=0, CHECKS=checks, NESTED=nested,
                VISIT=VISITS[variant])


VISITS = {"escape_paths": "escapes", "extract_manifest": "manifest"}  # each variant's report over the walk


VENDORS = ("acme", "globex", "initech", "umbrella", "hooli", "vandelay", "stark", "wayne")
TOPS = ("docs", "src", "data", "config", "assets", "lib", "reports", "bin")
EXT = ("txt", "csv", "json", "py", "md", "yaml", "png", "js")


class _Gen:
    """Random members: safe ones (including look-alikes of attacks) and unsafe ones, by rule."""

    def __init__(self, rng, level):
        self.rng, self.level = rng, level

    def fname(self):
        r = self.rng
        w = r.choice(WORDS)
        if self.level >= 3 and r.random() < 0.25:
            w = f"{w} {r.choice(WORDS)}"
        return f"{w}_{r.randrange(10, 99)}.{r.choice(EXT)}"

    def path(self, depth=None):
        r = self.rng
        depth = depth if depth is not None else r.randrange(1, 4)
        dirs = [r.choice(TOPS)] + [r.choice(WORDS) for _ in range(depth - 1)]
        return "/".join(dirs + [self.fname()])

    def safe(self, files):
        """One safe member (type, name, target); files: earlier safe regular files."""
        r = self.rng
        roll = r.random()
        lv = self.level
        if lv >= 2 and roll < 0.12 and files:
            src = r.choice(files)  # a relative symlink that stays inside
            depth = src.count("/")
            name = "/".join(src.split("/")[:1] + [f"link_{r.randrange(100)}"]) if depth else f"link_{r.randrange(100)}"
            up = name.count("/")
            return ("symlink", name, "../" * up + src)
        if lv >= 2 and roll < 0.2 and files:
            return ("hardlink", f"{r.choice(TOPS)}/copy_{r.randrange(100)}.bak", r.choice(files))
        if roll < 0.35 and lv:  # look-alikes: names that merely contain dots (none at the atomic level)
            top = r.choice(TOPS)
            form = r.randrange(5)
            if form == 0:
                return ("file", f"{top}/{r.choice(WORDS)}/../{self.fname()}", None)
            if form == 1:
                return ("file", f"{top}/..{r.choice(WORDS)}/{self.fname()}", None)
            if form == 2:
                return ("file", f"./{top}/{self.fname()}", None)
            if form == 3:
                return ("file", f"{top}/{r.choice(WORDS)}..{r.choice(EXT)}", None)
            return ("file", f"{top}//{self.fname()}", None)
        if roll < 0.45:
            return ("dir", f"{r.choice(TOPS)}/{r.choice(WORDS)}", "")
        return ("file", self.path(), None)

    def unsafe(self, reason):
        r = self.rng
        if reason == "absolute":
            return ("file", r.choice(["/etc/cron.d/", "/root/.ssh/", "/usr/local/bin/", "/tmp/"]) + self.fname(), None)
        if reason == "traversal":
            form = r.randrange(3) if self.level else 0  # atomic: only a leading `../`
            if form == 0:
                return ("file", "../" * r.randrange(1, 4) + self.fname(), None)
            if form == 1:
                top = r.choice(TOPS)
                return ("file", f"{top}/" + "../" * 2 + f"{r.choice(WORDS)}/{self.fname()}", None)
            return ("file", f"{r.choice(TOPS)}/./../../{self.fname()}", None)
        if reason == "link-escape":
            form = r.randrange(4)
            if form == 0:
                return ("symlink", f"{r.choice(TOPS)}/{r.choice(WORDS)}", r.choice(["/etc", "/root/.ssh", "/"]))
            if form == 1:
                return ("symlink", f"{r.choice(TOPS)}/{r.choice(WORDS)}", "../" * 2 + r.choice(WORDS))
            if form == 2:
                return ("hardlink", f"{r.choice(TOPS)}/{self.fname()}", "/etc/shadow")
            return ("hardlink", f"{r.choice(TOPS)}/{self.fname()}", "../" + self.fname())
        if reason == "special":
            return (r.choice(["char", "block", "fifo"]), f"dev/{r.choice(WORDS)}{r.randrange(9)}", "")
        raise ValueError(reason)

    def through(self):
        """A safe-looking symlink and, later, a member written through it."""
        r = self.rng
        top = r.choice(TOPS)
        link = ("symlink", f"{top}/current", f"v{r.randrange(1, 9)}")
        return link, ("file", f"{top}/current/{self.fname()}", None)

    def listing(self, n, reasons):
        """n members with one member for each reason in ``reasons`` (may be empty) at random places."""
        files, members, seen = [], [], set()
        bad_at = sorted(self.rng.sample(range(1, n), len(reasons))) if reasons else []
        todo = dict(zip(bad_at, reasons))
        near = self.rng.randrange(n) if self.level >= 3 and self.rng.random() < 0.4 else -1
        for i in range(n):
            if i == near and i not in todo:  # looks like writing through a link, but is not
                link, victim = self.through()
                seen.add(link[1])
                members += [link, ("file", victim[1].replace("/current/", "/current-"), None)]
                continue
            if i in todo:
                reason = todo[i]
                if reason == "through-link":
                    link, victim = self.through()
                    members += [link, victim]
                    continue
                members.append(self.unsafe(reason))
                continue
            for _ in range(100):
                m = self.safe(files)
                if m[1].rstrip("/") not in seen:
                    break
            else:
                raise FamilyError("archive_member_audit: no new member name in 100 draws")
            seen.add(m[1].rstrip("/"))
            if m[0] == "file" and m[2] is None and ".." not in m[1] and "//" not in m[1] and not m[1].startswith("./"):
                files.append(m[1])
            members.append(m)
        return members


def _as_text(members):
    return "".join(f"{typ}\t{name}\t{target if typ in ('symlink', 'hardlink') else ''}\n"
                   for typ, name, target in members)


@dataclass(frozen=True)
class Knobs:
    archives: int  # archives in the upload
    members: int  # members in each archive (the most in a classifier item)
    checks: tuple[str, ...]  # rules beyond absolute and traversal
    kinds: tuple[str, ...]  # archive formats, in turn
    nested: bool  # archives inside archives


@register
class ArchiveMemberAudit(Family):
    name = "archive_member_audit"
    domain = "file_operations"
    skill_types = ("Archive Handling", "Link and Permission Management")
    primitive_skills = ("archive listing", "archive extraction", "path traversal prevention", "path normalisation",
                        "symlink resolution", "compressed stream handling", "handling special characters in filenames")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol", "adversarial_corpus")
    variants = ("audit", "escape_paths", "extract_manifest")
    levels = {0: Knobs(archives=1, members=6, checks=(), kinds=("tgz",), nested=False),
              1: Knobs(archives=1, members=14, checks=(), kinds=("tgz",), nested=False),
              2: Knobs(archives=2, members=22, checks=("link-escape",), kinds=("tgz", "zip"), nested=False),
              3: Knobs(archives=3, members=30, checks=("link-escape", "through-link", "special"),
                       kinds=("tgz", "zip", "tar"), nested=False),
              4: Knobs(archives=4, members=36, checks=("link-escape", "through-link", "special"),
                       kinds=("tgz", "zip", "tar"), nested=True)}
    programs = classifiers(0, ())

    def _rules_text(self, checks, depth=None, clobber=False):
        rules = ["`absolute`: the name starts with `/`",
                 "`traversal`: the name climbs above the extraction directory (split on `/`, ignore empty and `.` "
                 "components, let `..` remove the previous component: a `..` with nothing left to remove climbs "
                 "out; `a/../b` is fine, `a/../../b` is not)"]
        if "through-link" in checks:
            rules.append("`through-link`: the (normalised) name lies inside the path of a symlink member that "
                         "appears earlier in the same archive, wherever that symlink points")
        if "link-escape" in checks:
            rules.append("`link-escape`: a symlink whose target is absolute or, resolved from the symlink's own "
                         "directory, climbs out; or a hard link whose target (a path from the archive root) is "
                         "absolute or climbs out")
        if "special" in checks:
            rules.append("`special`: a character device, block device or FIFO")
        if depth:
            rules.append("`too-deep`: the normalised name has more than the maximum number of components (the "
                         "depth limit given above)")
        if clobber:
            rules.append("`clobber`: a member other than a directory whose normalised name is that of an earlier "
                         "member (it would overwrite it)")
        return "; ".join(f"({i}) {r}" for i, r in enumerate(rules, 1))

    @staticmethod
    def _reasons(checks):
        """The rules a single unsafe member can break on its own (through-link needs two members)."""
        return ["absolute", "traversal", *[c for c in ("link-escape", "special") if c in checks]]

    def output_case(self, t: TaskBuilder) -> None:
        k, rng = t.knobs, t.rng
        gen = _Gen(rng, t.level)
        checks = k.checks
        all_reasons = self._reasons(checks)
        # One folder per upload, keyed by a hash of its ticket number: the ticket (the delivered value)
        # shows nowhere on disk, and the other uploads are decoys audited the same way.
        n_uploads = 5 if t.level <= 2 else 6
        sizes = [k.archives] + [max(1, k.archives + rng.choice([-1, 0, 1])) for _ in range(n_uploads - 1)]
        suffix = {"tgz": ".tar.gz", "zip": ".zip", "tar": ".tar"}
        rules = run_python(fill(RULES, MAX_DEPTH=0, CHECKS=checks))
        uploads = []
        for u, n_arch in enumerate(sizes):
            spec = []
            vendors = rng.sample(VENDORS, n_arch)
            for i in range(n_arch):
                kind = k.kinds[(i + u) % len(k.kinds)]
                for _ in range(100):  # every archive carries at least one unsafe member
                    reasons = [r for r in all_reasons if rng.random() < 0.7 and not (kind == "zip" and r == "special")]
                    if "through-link" in checks and kind != "zip" and rng.random() < 0.7:
                        reasons.append("through-link")
                    rng.shuffle(reasons)
                    members = gen.listing(k.members, reasons)
                    if kind == "zip":
                        members = [m for m in members if m[0] in ("file", "dir", "symlink")]
                    if rules["verdicts"](members):
                        break
                else:
                    raise FamilyError("archive_member_audit: no archive with an unsafe member in 100 draws")
                if k.nested and rng.random() < 0.75:
                    ikind = rng.choice(["zip", "tgz"])
                    ireasons = rng.sample(all_reasons[:3], 2)
                    inner = gen.listing(12, ireasons)
                    if ikind == "zip":
                        inner = [m for m in inner if m[0] in ("file", "dir", "symlink")]
                    iname = f"{rng.choice(TOPS)}/bundle_{rng.randrange(10, 99)}{suffix[ikind]}"
                    members.insert(rng.randrange(len(members)), ("file", iname, {"kind": ikind, "members": inner}))
                spec.append({"name": f"{vendors[i]}{suffix[kind]}", "kind": kind, "members": members})
            spec.sort(key=lambda a: a["name"])
            uploads.append(spec)
        ns_arch = run_python(ARCHIVER)
        audit_src = audit_program(t.variant, checks, k.nested)
        ref = run_python(audit_src)
        report = ref["report"] if t.variant == "audit" else \
            (lambda folder: ref["variant_report"](folder, ref[VISITS[t.variant]]))
        blobs = []
        with tempfile.TemporaryDirectory(prefix="tmax-fo-") as d:
            reports = []
            for u, spec in enumerate(uploads):
                ns_arch["build"](spec, f"{d}/{u}")
                reports.append(report(f"{d}/{u}"))
                for a in spec:
                    with open(f"{d}/{u}/{a['name']}", "rb") as f:
                        blobs.append(f.read())
        truth = reports[0]
        spec_text = json.dumps(uploads, ensure_ascii=True, separators=(",", ":"))
        tickets = [unseen(t, lambda: str(rng.randrange(10 ** 11, 10 ** 12)), spec_text, *blobs)]
        tickets += distinct(lambda: str(rng.randrange(10 ** 11, 10 ** 12)), n_uploads - 1, tickets)
        order = sorted(range(n_uploads), key=lambda u: key_of(tickets[u]))
        for u in order:
            t.add_file(f"/tmp/fo-fixture/upload{u}.json", json.dumps(uploads[u], ensure_ascii=True,
                                                                    separators=(",", ":")) + "\n")
        t.add_file("/tmp/fo-fixture/archiver.py", ARCHIVER.lstrip("\n"))
        for u in order:
            t.add_setup(f"python3 /tmp/fo-fixture/archiver.py /tmp/fo-fixture/upload{u}.json "
                        f"/app/incoming/{key_of(tickets[u])}")
        finish_setup(t)
        if t.variant != "audit":
            return self._variant_output(t, tickets[0], truth, audit_src)
        if t.level == 0:  # atomic: one archive, list the names that start with `/` or `../`
            t.say("Uploads land in `/app/incoming/<KEY>/`, where KEY is the first 16 hex digits of the SHA-256 of the "
                  "upload's ticket number (`printf %s <ticket> | sha256sum`). The upload named below holds one "
                  "`.tar.gz` archive.")
            num_var = t.deliver(tickets[0], "the upload ticket number")
            t.say("Write to `/app/out/unsafe.txt` the names of its members that start with `/` or with `../`, as "
                  "stored in the archive, one per line, in archive order.")
            t.add_solution_file("audit.py", audit_src)
            t.solve(f'mkdir -p /app/out\nkey={key_cmd(num_var)}\n'
                    'python3 /solution/audit.py "/app/incoming/$key" | cut -f2 > /app/out/unsafe.txt')
            t.expect_output("/app/out/unsafe.txt", "".join(line.split("\t")[1] + "\n"
                                                           for line in truth.splitlines()), "the unsafe names")
            return
        t.say("External uploads land in `/app/incoming/<KEY>/`, one folder per upload ticket, holding that "
              "upload's archives (`.tar`, `.tar.gz` or `.zip`). The gateway keeps ticket numbers off the disk: KEY is "
              "the first 16 hex digits of the SHA-256 of the ticket number (of its decimal digits alone, no newline: "
              "`printf %s <ticket> | sha256sum`). Before anything from the upload named below is unpacked, audit "
              "every archive of that upload (and only that upload) for members that are unsafe to extract. Do not "
              "extract them to find out.")
        num_var = t.deliver(tickets[0], "the upload ticket number")
        nested = (" Some archives contain other archives (regular members whose names end in `.tar`, `.tar.gz`, "
                  "`.tgz` or `.zip`): audit those too, one level deep, and report their members with the archive "
                  "written as `<outer archive file name>!<inner member name>`." if k.nested else "")
        t.say(f"A member is unsafe if one of these rules applies; report the first that does, in this order: "
              f"{self._rules_text(checks)}.{nested}")
        t.say("The audit report has one line per unsafe member: `<archive file name><TAB><member name as stored in "
              "the archive><TAB><rule>`, with tabs between the fields. Order the lines by archive name (byte order), "
              "then by the member's position in its archive.")
        t.add_solution_file("audit.py", audit_src)
        t.solve(f'mkdir -p /app/out\nkey={key_cmd(num_var)}\n'
                'python3 /solution/audit.py "/app/incoming/$key" > /app/out/audit.tsv')
        t.expect_output("/app/out/audit.tsv", truth, "the audit report")

    def corpus_case(self, t: TaskBuilder) -> None:
        rng, k = t.rng, t.knobs
        gen = _Gen(rng, t.level)
        v = t.variant
        # escape_paths judges escapes only: writes through a symlink and device nodes are clean look-alikes there.
        checks = ("link-escape",) if v == "escape_paths" else k.checks
        decoys = [c for c in ("through-link", "special") if c in k.checks and c not in checks]
        # The depth limit is the delivered value: the host judges the corpora with it, the oracle's
        # programs get it at solve time. Clean items reach the limit and too-deep items pass it by one,
        # so no other limit classifies both corpora right.
        depth = rng.randrange(5, 9)
        programs = classifiers(depth, checks, clobber=v == "extract_manifest")
        ref = run_python(programs["Python"])
        judge = ref["verdicts"] if v != "extract_manifest" else (lambda m: ref["verdicts"](m) + ref["clobbers"](m))
        bad_reasons = self._reasons(checks) + (["through-link"] if "through-link" in checks else []) + ["too-deep"]
        bad_reasons += ["clobber"] if v == "extract_manifest" else []
        clean, malicious = [], []
        for _ in range(3000):
            if len(clean) == 30:
                break
            members = gen.listing(rng.randrange(4, k.members), [rng.choice(decoys)] if decoys and rng.random() < 0.5
                                  else [])
            if judge(members) and not all(r == "too-deep" for _, r in judge(members)):
                continue
            members = [m for m in members if not (len(ref["parts"](m[1]) or []) > depth)]
            if len(clean) % 2 == 0:  # a member exactly at the limit: a lower limit must reject it
                members.insert(rng.randrange(len(members) + 1), ("file", gen.path(depth - 1), None))
            if not judge(members):
                clean.append(_as_text(members))
        if len(clean) < 30:
            raise FamilyError(f"archive_member_audit: only {len(clean)} clean listings drawn")
        for i in range(40):
            reason = bad_reasons[i % len(bad_reasons)]
            if reason == "too-deep":
                members = gen.listing(rng.randrange(4, k.members), [])
                members = [m for m in members if not (len(ref["parts"](m[1]) or []) > depth)]
                members.insert(rng.randrange(len(members) + 1),
                               ("file", gen.path(depth), None))
            elif reason == "clobber":
                members = clobbered(rng, gen.listing(rng.randrange(4, k.members), []))
            else:
                members = gen.listing(rng.randrange(4, k.members), [reason])
            if judge(members):
                malicious.append(_as_text(members))
        t.say(CORPUS_GOAL[v] + " We need the gatekeeper: a program that reads an archive listing and decides. The listing has one "
              "member per line, in archive order: `<type><TAB><name><TAB><link target>`, where the type is one of "
              "`file`, `dir`, `symlink`, `hardlink`, `char`, `block`, `fifo` and the link target is empty unless the "
              "member is a link. Reject the archive (exit 1) if any member breaks a rule; accept it (exit 0) "
              "otherwise.")
        var = t.deliver(str(depth), "the depth limit")
        t.say("The rules, in the extractor's terms: " + self._rules_text(checks, depth, v == "extract_manifest")
              + ". Hard-code the depth limit in the program. Names that only "
              "look odd (`a/../b`, `..notes`, `v1..2.txt`, `./x`, doubled slashes) are fine."
              + (" So are device nodes, FIFOs and members below an earlier symlink: other checks handle those."
                 if decoys else ""))
        t.expect_classifier("", clean, malicious, classifiers("@@MAX_DEPTH@@", checks, v == "extract_manifest"))
        t.solve(f'test -n "{var}"\nfor f in /app/solution.*; do sed -i "s/@@MAX_DEPTH@@/{var}/" "$f"; done')

    def _variant_output(self, t: TaskBuilder, ticket: str, truth: str, src: str) -> None:
        """escape_paths: where escaping members land; extract_manifest: what a safe extraction creates."""
        k = t.knobs
        t.say("Uploads land in `/app/incoming/<KEY>/`, one folder per upload ticket, where KEY is the first 16 hex "
              "digits of the SHA-256 of the ticket number (its decimal digits alone, no newline: "
              "`printf %s <ticket> | sha256sum`). Work on the upload named below only, and do not extract anything.")
        var = t.deliver(ticket, "the upload ticket number")
        norm = ("Normalise a path by splitting it on `/`, dropping empty and `.` components and letting `..` remove "
                "the previous component")
        if t.level == 0:  # atomic: one archive, tar's own listing
            out, col, ask, script = ATOMIC[t.variant]
            t.say(ask)
            t.solve(fill(script, KEY=key_cmd(var)))
            return t.expect_output(out, "".join(line.split("\t")[col] + "\n" for line in truth.splitlines()),
                                   "the list")
        nested = (" Archives inside archives (regular members whose names end in `.tar`, `.tar.gz`, `.tgz` or "
                  "`.zip`) are handled too, one level deep, and written as `<outer archive file name>!<inner member "
                  "name>`" + ("; such an inner archive is unpacked into its outer archive's directory joined with "
                              "the inner member's name without that suffix" if t.variant == "escape_paths" else "")
                  + "." if k.nested else "")
        if t.variant == "escape_paths":
            links = ("; (2) otherwise, a symlink whose target is absolute or, resolved from the symlink's own "
                     "directory, climbs out: the path it points to (an absolute target as it is, any other joined "
                     "to the symlink's directory); a hard link whose target (a path from the archive root) is "
                     "absolute or climbs out: that target joined to the archive's directory"
                     if "link-escape" in k.checks else "")
            t.say("A naive extractor unpacks each archive of the upload into `/srv/unpack/<STEM>/`, STEM being the "
                  f"archive's file name without `.tar.gz`, `.tgz`, `.tar` or `.zip`.{nested} {norm}; a `..` with "
                  "nothing left to remove climbs out of the archive (at `/` it stays at `/`). Report the members that reach outside their archive's directory, with the normalised "
                  "absolute path they reach: (1) a member whose name is absolute or climbs out: the path it would "
                  f"be written to (an absolute name as it is, any other joined to the archive's directory){links}.")
            t.say("Write `/app/out/escapes.tsv`: one line per such member, `<archive file name><TAB><member name as "
                  "stored><TAB><absolute path>`, ordered by archive name (byte order), then by the member's position "
                  "in its archive.")
            out = "/app/out/escapes.tsv"
        else:
            t.say("A safe extraction of each archive of the upload skips every member that is unsafe, i.e. to which "
                  f"one of these rules applies: {self._rules_text(k.checks)}.{nested}")
            t.say(f"{norm}. Write `/app/out/manifest.tsv`: one line per path the safe extraction creates, i.e. per "
                  "normalised name of a member that is not a directory and breaks no rule, as `<archive file "
                  "name><TAB><normalised name>`, each such line once, ordered by archive name, then by normalised "
                  "name (byte order).")
            out = "/app/out/manifest.tsv"
        t.add_solution_file("report.py", src)
        t.solve(f'mkdir -p /app/out\nkey={key_cmd(var)}\npython3 /solution/report.py "/app/incoming/$key" > {out}')
        t.expect_output(out, truth, "the report")

