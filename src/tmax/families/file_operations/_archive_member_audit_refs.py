"""Program texts of archive_member_audit's escape_paths and extract_manifest variants (kept apart so the
family file stays readable). They extend the family's AUDIT and gatekeeper templates; the audit variant's
texts are untouched."""

from tmax.families.file_operations._common import WORDS

# Appended to AUDIT's functions (before the main block): the two other reports over the same walk.
VARIANT_REPORTS = r'''

UNPACK = "/srv/unpack"


def stem(name):
    """An archive's name without its archive suffix (the directory it is unpacked into)."""
    for s in (".tar.gz", ".tgz", ".tar", ".zip"):
        if name.endswith(s):
            return name[:-len(s)]
    return name


def resolve(base, path):
    """The absolute normalised path of ``path`` taken from directory ``base`` (a `..` at `/` stays at `/`)."""
    out = []
    for c in (path if path.startswith("/") else base + "/" + path).split("/"):
        if c in ("", "."):
            continue
        if c == "..":
            if out:
                out.pop()
        else:
            out.append(c)
    return "/" + "/".join(out)


def walk(label, base, source, is_zip, visit):
    """visit(label, base, members) for an archive and, when NESTED, the archives inside it."""
    import io
    members = open_members(source, is_zip)
    visit(label, base, members)
    if NESTED:
        for typ, name, _, reader in members:
            if typ == "file" and name.endswith(SUFFIXES):
                walk(f"{label}!{name}", resolve(base, stem(name)), io.BytesIO(reader()), name.endswith(".zip"), visit)


def escapes(label, base, members, rows):
    """Members written outside ``base`` by name, and links that point outside it: where they end up."""
    for i, (typ, name, target, _) in enumerate(members):
        norm = parts(name)
        if name.startswith("/") or norm is None:
            rows.append((label, i, f"{label}\t{name}\t{resolve(base, name)}\n"))
        elif typ == "symlink" and (target.startswith("/") or parts("/".join(norm[:-1]) + "/" + target) is None):
            rows.append((label, i, f"{label}\t{name}\t{resolve(resolve(base, '/'.join(norm[:-1])), target)}\n"))
        elif typ == "hardlink" and (target.startswith("/") or parts(target) is None):
            rows.append((label, i, f"{label}\t{name}\t{resolve(base, target)}\n"))


def manifest(label, base, members, rows):
    """The non-directory members that break no rule, by normalised name (each name once)."""
    bad = {i for i, _ in verdicts([m[:3] for m in members])}
    names = {"/".join(parts(m[1])) for i, m in enumerate(members) if i not in bad and m[0] != "dir"}
    rows.extend((label, n, f"{label}\t{n}\n") for n in names)


def variant_report(folder, visit):
    rows = []
    for name in sorted(os.listdir(folder)):
        if name.endswith(SUFFIXES):
            walk(name, resolve(UNPACK, stem(name)), os.path.join(folder, name), name.endswith(".zip"),
                 lambda label, base, members: visit(label, base, members, rows))
    return "".join(r[2] for r in sorted(rows))
'''

VARIANT_MAIN = r'''

if __name__ == "__main__":
    sys.stdout.write(variant_report(sys.argv[1], @VISIT@))
'''

# The extract_manifest gatekeeper also refuses a member that would overwrite an earlier one.
CLOBBER_PY = r'''


def clobbers(members):
    """Non-directory members whose normalised name an earlier member already has."""
    seen, bad = set(), []
    for i, (typ, name, _) in enumerate(members):
        norm = parts(name)
        if norm is None:
            continue
        key = "/".join(norm)
        if typ != "dir" and key in seen:
            bad.append((i, "clobber"))
        seen.add(key)
    return bad
'''

CLASSIFIER_MAIN = r'''

if __name__ == "__main__":
    import sys
    data = sys.stdin.buffer.read().decode("utf-8", "replace")
    members = parse_listing(data)
    sys.exit(1 if verdicts(members) or clobbers(members) else 0)
'''

# Spliced into the C gatekeeper at two anchors: a table of the names seen so far, and the check.
_C_CLOBBER_DECL = ("    int nlinks = 0;\n",
                  "    int nlinks = 0;\n    char **seen = malloc(sizeof(char *) * (len + 1));\n    int nseen = 0;\n")
_C_CLOBBER_CHECK = ("            if (strcmp(typ, \"symlink\") == 0 && n > 0) links[nlinks++] = nb;\n",
                   "            if (strcmp(typ, \"dir\") != 0)\n"
                   "                for (int i = 0; i < nseen; i++)\n"
                   "                    if (strcmp(seen[i], nb) == 0) return 1;\n"
                   "            seen[nseen++] = strdup(nb);\n"
                   "            if (strcmp(typ, \"symlink\") == 0 && n > 0) links[nlinks++] = nb;\n")

# Level 0 of the variants: where the answer goes, the truth's column it keeps, the ask and the shell reference.
ATOMIC = {
    "escape_paths": (
        "/app/out/escapes.txt", 2,
        "It holds one `.tar.gz` archive. A naive extractor would unpack it into `/srv/unpack/<STEM>/`, STEM being the "
        "archive's file name without `.tar.gz`. Write to `/app/out/escapes.txt`, for each member whose name starts "
        "with `/` or with `../`, in archive order, the absolute path it would be written to: an absolute name as it "
        "is, any other name joined to that directory, normalised (`realpath -m` does it), one path per line.",
        "mkdir -p /app/out\n"
        'cd "/app/incoming/@KEY@"\n'
        "f=$(ls)\n"
        "tar tzf \"$f\" | grep -E '^(/|\\.\\./)' | while IFS= read -r n; do\n"
        '  case $n in /*) realpath -m -- "$n" ;; *) realpath -m -- "/srv/unpack/${f%.tar.gz}/$n" ;; esac\n'
        "done > /app/out/escapes.txt"),
    "extract_manifest": (
        "/app/out/manifest.txt", 1,
        "It holds one `.tar.gz` archive. Write to `/app/out/manifest.txt` the names of its regular-file members (not "
        "directories) whose names start neither with `/` nor with `../`, as stored, one per line, sorted in byte "
        "order.",
        "mkdir -p /app/out\n"
        'cd "/app/incoming/@KEY@"\n'
        "tar tzf \"$(ls)\" | grep -vE '^(/|\\.\\./)|/$' | LC_ALL=C sort -u > /app/out/manifest.txt"),
}


def with_clobber_check(c_src: str) -> str:
    """The C gatekeeper ``c_src`` that also refuses a non-directory member named like an earlier one."""
    for anchor, spliced in (_C_CLOBBER_DECL, _C_CLOBBER_CHECK):
        if c_src.count(anchor) != 1:
            raise ValueError(f"archive_member_audit: C anchor {anchor.strip()!r} not found once")
        c_src = c_src.replace(anchor, spliced)
    return c_src


def clobbered(rng, members):
    """``members`` with a later copy of one regular file's name, spelt another way (it overwrites the first)."""
    files = [i for i, m in enumerate(members) if m[0] == "file" and not m[1].startswith(("/", "."))
             and ".." not in m[1] and "//" not in m[1]]
    i = rng.choice(files) if files else None
    if i is None:
        members, i = members + [("file", "docs/readme.txt", None)], len(members)
    top, _, rest = members[i][1].partition("/")
    twin = rng.choice([f"./{members[i][1]}", f"{top}//{rest}" if rest else f"./{top}",
                       f"{top}/{rng.choice(WORDS)}/../{rest}" if rest else f"{rng.choice(WORDS)}/../{top}"])
    at = rng.randrange(i + 1, len(members) + 1)
    return members[:at] + [("file", twin, None)] + members[at:]


# What each variant's gatekeeper is for (the audit's sentence is today's).
CORPUS_GOAL = {"audit": "Our upload pipeline should refuse any archive that would write outside its extraction "
                        "directory.",
               "escape_paths": "Our upload pipeline should refuse any archive with a member that reaches outside its "
                               "extraction directory, by its name or as a link.",
               "extract_manifest": "Our upload pipeline should refuse any archive that would write outside its "
                                   "extraction directory or overwrite, while it is extracted, a path that an earlier "
                                   "member of the same archive created."}
