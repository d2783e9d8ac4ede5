"""Checks for site-backup-archive (all must pass).

- /app/site: every original file still present with identical content; modes fixed
  (dirs 755, files 644, site/bin/* 755, config/secrets.env 600); symlink untouched.
- /app/backups/site-20240315.tar.gz: gzip tar; members under site/; exactly the expected
  regular files (same content), directories (incl. the empty uploads/) and the symlink;
  nothing excluded sneaks in; member modes are the fixed ones.
- /app/backups/site-20240315.sha256: sha256sum format, one line per regular file of the
  archive, correct digests, sorted by name in byte order.
"""
import hashlib
import json
import os
import stat
import sys
import tarfile

HERE = os.path.dirname(os.path.abspath(__file__))
EXP = json.load(open(os.path.join(HERE, "expected.json")))
ARCHIVE = "/app/backups/site-20240315.tar.gz"
MANIFEST = "/app/backups/site-20240315.sha256"
problems = []


def want_mode(rel, is_dir):
    if is_dir:
        return 0o755
    if rel == "site/config/secrets.env":
        return 0o600
    if os.path.dirname(rel) == "site/bin":
        return 0o755
    return 0o644


def check_tree():
    for rel, digest in EXP["all_files"].items():
        p = os.path.join("/app", rel)
        if not os.path.isfile(p) or os.path.islink(p):
            problems.append("tree: %s missing" % rel)
            continue
        if hashlib.sha256(open(p, "rb").read()).hexdigest() != digest:
            problems.append("tree: %s content changed" % rel)
        mode = stat.S_IMODE(os.lstat(p).st_mode)
        if mode != want_mode(rel, False):
            problems.append("tree: %s mode %o, want %o" % (rel, mode, want_mode(rel, False)))
    for rel in EXP["all_dirs"]:
        p = os.path.join("/app", rel)
        if not os.path.isdir(p):
            problems.append("tree: dir %s missing" % rel)
        elif stat.S_IMODE(os.lstat(p).st_mode) != 0o755:
            problems.append("tree: dir %s mode %o, want 755" % (rel, stat.S_IMODE(os.lstat(p).st_mode)))
    for rel, target in EXP["symlinks"].items():
        p = os.path.join("/app", rel)
        if not os.path.islink(p) or os.readlink(p) != target:
            problems.append("tree: symlink %s changed" % rel)


def norm(name):
    return name.rstrip("/")


def check_archive():
    try:
        tf = tarfile.open(ARCHIVE, "r:gz")
        members = tf.getmembers()
    except Exception as e:  # noqa: BLE001
        problems.append("archive: cannot open as tar.gz: %s" % e)
        return None
    files, dirs, links, other = {}, set(), {}, []
    for m in members:
        name = norm(m.name)
        if name != "site" and not name.startswith("site/"):
            problems.append("archive: member outside site/: %r" % m.name)
            continue
        if m.isfile():
            if name in files:
                problems.append("archive: duplicate member %s" % name)
            files[name] = m
        elif m.isdir():
            dirs.add(name)
            if stat.S_IMODE(m.mode) != 0o755:
                problems.append("archive: dir %s mode %o" % (name, stat.S_IMODE(m.mode)))
        elif m.issym():
            links[name] = m.linkname
        else:
            other.append(name)
    if other:
        problems.append("archive: unexpected member types: %s" % other)
    if sorted(files) != EXP["archive_files"]:
        problems.append("archive: regular files differ; missing %s, extra %s" % (
            sorted(set(EXP["archive_files"]) - set(files)), sorted(set(files) - set(EXP["archive_files"]))))
    want_dirs = set(EXP["archive_dirs"]) - {"site"}
    if dirs - {"site"} != want_dirs:
        problems.append("archive: directories differ; missing %s, extra %s" % (
            sorted(want_dirs - dirs), sorted(dirs - want_dirs - {"site"})))
    if links != EXP["symlinks"]:
        problems.append("archive: symlinks %r, want %r" % (links, EXP["symlinks"]))
    digests = {}
    for name, m in files.items():
        digests[name] = hashlib.sha256(tf.extractfile(m).read()).hexdigest()
        if name in EXP["all_files"] and digests[name] != EXP["all_files"][name]:
            problems.append("archive: %s content differs" % name)
        if stat.S_IMODE(m.mode) != want_mode(name, False):
            problems.append("archive: %s mode %o, want %o" % (name, stat.S_IMODE(m.mode), want_mode(name, False)))
    return digests


def check_manifest(archive):
    try:
        lines = open(MANIFEST, "rb").read().decode("utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        problems.append("manifest: %s" % e)
        return
    lines = [l for l in lines if l.strip()]
    entries = []
    for l in lines:
        if len(l) < 67 or l[64:66] not in ("  ", " *"):
            problems.append("manifest: bad line %r" % l[:80])
            return
        entries.append((l[66:], l[:64].lower()))
    digests = archive
    names = [n for n, _ in entries]
    if names != sorted(names, key=lambda s: s.encode()):
        problems.append("manifest: not sorted in byte order")
    got = dict(entries)
    if len(got) != len(entries) or got != digests:
        problems.append("manifest: entries do not match the archive's regular files")


def main():
    check_tree()
    archive = check_archive()
    if archive is not None:
        check_manifest(archive)
    for p in problems:
        print("FAIL", p)
    if not problems:
        print("ok   tree, archive and manifest")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
