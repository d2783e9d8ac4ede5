"""Which symlinks in a release directory are healthy? Classify every symbolic link in one release
(its folder is keyed by a hash of the delivered build id) as ok, dangling, outside (resolves out of
the release) or loop; at higher levels, chains, links through symlinked directories, absolute links
back into the tree, hidden directories and names with spaces, and the resolved target of every
healthy link. Variants: that per-link report; per directory, how many links it holds and how many are
broken; or the reverse map, each file or directory the healthy links reach and how many reach it."""

from __future__ import annotations

import json
from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.file_operations._common import WORDS, epoch, finish_setup, host_tree, ship_tree, spec_json
from tmax.families.programs import fill, run_python
from tmax.families.unseen import distinct, key_cmd, key_of, unseen

REFERENCE = r'''
import errno
import os
import sys

WITH_TARGET = @WITH_TARGET@
VARIANT = @VARIANT@


def classify(root):
    root = os.path.realpath(root)
    rows = []
    for dirpath, dirnames, filenames in os.walk(root):  # symlinks to directories are listed, not entered
        for name in dirnames + filenames:
            full = os.path.join(dirpath, name)
            if not os.path.islink(full):
                continue
            rel = os.path.relpath(full, root)
            try:
                os.stat(full)
            except OSError as e:
                rows.append((rel, "loop" if e.errno == errno.ELOOP else "dangling", ""))
                continue
            real = os.path.realpath(full)
            if real == root or real.startswith(root + os.sep):
                rows.append((rel, "ok", os.path.relpath(real, root)))
            else:
                rows.append((rel, "outside", ""))
    if VARIANT == "broken_by_dir":
        per = {}
        for rel, status, _ in rows:
            g = per.setdefault(os.path.dirname(rel) or ".", [0, 0])
            g[0] += 1
            g[1] += status != "ok"
        return "".join(f"{d}\t{n}\t{bad}\n" for d, (n, bad) in sorted(per.items()))
    if VARIANT == "link_targets":  # what would break if it were removed
        counts = {}
        for rel, status, target in rows:
            if status == "ok":
                counts[target] = counts.get(target, 0) + 1
        return "".join(f"{p}\t{n}\n" for p, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    out = []
    for rel, status, target in sorted(rows):
        out.append(f"{rel}\t{status}\t{target}\n" if WITH_TARGET and status == "ok" else f"{rel}\t{status}\n")
    return "".join(out)


if __name__ == "__main__":
    sys.stdout.write(classify(sys.argv[1]))
'''

DIRS = ("docs", "static/css", "static/js", "static/img", "templates", "config", "lib/vendor", "api/v1")
EXTRA_DIRS = (".well-known", "media files", "docs/user guide")
EXT = {"docs": "md", "static/css": "css", "static/js": "js", "static/img": "png", "templates": "html",
       "config": "yaml", "lib/vendor": "js", "api/v1": "json", ".well-known": "txt", "media files": "mp4",
       "docs/user guide": "md"}


def _rel(frm_dir, to):
    """Relative path from directory frm_dir to path ``to`` (both relative to the same root)."""
    a = [p for p in frm_dir.split("/") if p]
    b = [p for p in to.split("/") if p]
    i = 0
    while i < len(a) and i < len(b) and a[i] == b[i]:
        i += 1
    return "/".join([".."] * (len(a) - i) + b[i:]) or "."


@dataclass(frozen=True)
class Knobs:
    links: int  # symbolic links in each release
    kinds: tuple[str, ...]  # the kinds of link drawn (each at least once)
    extra_dirs: int  # extra directories: hidden, with spaces in the name
    target: bool  # report the resolved target of every ok link


@register
class SymlinkHealth(Family):
    name = "symlink_health_audit"
    domain = "file_operations"
    skill_types = ("Link and Permission Management", "File Discovery")
    primitive_skills = ("symlink resolution", "broken link detection", "symlink loop detection",
                        "recursive directory traversal", "path normalisation", "hidden file handling",
                        "handling special characters in filenames")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("classify", "broken_by_dir", "link_targets")
    levels = {0: Knobs(links=6, kinds=("ok", "dangling"), extra_dirs=0, target=False),
              1: Knobs(links=10, kinds=("ok", "dangling"), extra_dirs=0, target=False),
              2: Knobs(links=18, kinds=("ok", "dangling", "outside", "chain"), extra_dirs=0, target=False),
              3: Knobs(links=28, kinds=("ok", "dangling", "outside", "chain", "loop", "dirlink"), extra_dirs=2,
                       target=True),
              4: Knobs(links=40, kinds=("ok", "dangling", "outside", "chain", "loop", "dirlink", "through", "abs"),
                       extra_dirs=3, target=True)}

    def output_case(self, t: TaskBuilder) -> None:
        k, rng = t.knobs, t.rng
        # Release folders are named by a hash of the build id (the delivered value): the id shows nowhere
        # on disk, and without it the other releases are indistinguishable decoys. The releases are drawn
        # under placeholder names first (release 0 is the candidate), so the ids can be drawn clear of them.
        tokens = [f"RELEASE{i}" for i in range(5)]
        dirs = list(DIRS[:5 + t.level]) + list(EXTRA_DIRS[:k.extra_dirs])
        shared = [["d", "shared/uploads", 0o755, epoch(2024, 1, 2)],
                  ["f", "shared/uploads/banner.png", "PNG\n", 0o644, epoch(2024, 1, 2)]]
        per: dict = {num: [] for num in tokens}
        files_by: dict = {}
        for num in tokens:
            for d in dirs:
                per[num].append(["d", f"releases/{num}/{d}", 0o755, epoch(2024, 3, 1)])
                for _ in range(rng.randrange(2, 5)):
                    fname = f"{rng.choice(WORDS)}_{rng.randrange(10, 99)}.{EXT[d]}"
                    if d in EXTRA_DIRS and rng.random() < 0.5:
                        fname = f"{rng.choice(WORDS)} {fname}"
                    p = f"{d}/{fname}"
                    per[num].append(["f", f"releases/{num}/{p}", f"{num} {p}\n", 0o644, epoch(2024, 3, 1)])
                    if p not in files_by.setdefault(num, []):
                        files_by[num].append(p)
        live = rng.choice(tokens[1:])
        for num in tokens:  # every release carries the same kinds of links, so none stands out
            base = f"releases/{num}"
            files = files_by[num]
            other = rng.choice([n for n in tokens if n != num])
            links = []  # (path relative to the release, target)
            used = set(files) | set(dirs)

            def link_name(d):
                for _ in range(1000):
                    w = rng.choice(WORDS)
                    name = f"{d}/{w}" + rng.choice(["", "-link", ".lnk", f"_{rng.randrange(9)}"])
                    if k.extra_dirs and rng.random() < 0.2:
                        name = f"{d}/{w} {rng.choice(WORDS)}"
                    if name not in used:
                        used.add(name)
                        return name
                raise FamilyError("symlink_health_audit: no free link name in 1000 draws")

            kinds = list(k.kinds)
            made = []
            for i in range(k.links):
                kind = kinds[i % len(kinds)] if i < len(kinds) else rng.choice(kinds)
                d = rng.choice(dirs)
                name = link_name(d)
                if kind == "ok":
                    links.append((name, _rel(d, rng.choice(files))))
                elif kind == "dangling":
                    form = rng.randrange(3 if t.level >= 3 else 2)
                    if form == 0:
                        miss = rng.choice(files).replace("_", "_old_", 1)
                        links.append((name, _rel(d, miss)))
                    elif form == 1:
                        links.append((name, f"/var/www-legacy/{rng.choice(WORDS)}/{rng.choice(WORDS)}.html"))
                    else:  # through a regular file: ENOTDIR
                        links.append((name, _rel(d, rng.choice(files)) + "/index.html"))
                elif kind == "outside":
                    form = rng.randrange(4)
                    links.append((name, ["/etc/passwd", "/usr/share", _rel(f"{base}/{d}", "shared/uploads/banner.png"),
                                         _rel(f"{base}/{d}", f"releases/{other}/{rng.choice(files_by[other])}")][form]))
                elif kind == "chain" and made:
                    links.append((name, _rel(d, rng.choice(made))))
                elif kind == "loop":
                    form = rng.randrange(3)
                    if form == 0:
                        links.append((name, name.rsplit("/", 1)[1]))
                    else:
                        other_name = link_name(d)
                        links.append((name, other_name.rsplit("/", 1)[1]))
                        if form == 1:
                            links.append((other_name, name.rsplit("/", 1)[1]))
                        else:
                            third = link_name(rng.choice(dirs))
                            links.append((other_name, _rel(d, third)))
                            links.append((third, _rel(third.rsplit("/", 1)[0], name)))
                elif kind == "dirlink":
                    target_dir = rng.choice([x for x in dirs if x != d])
                    links.append((name, _rel(d, target_dir)))
                elif kind == "through":
                    # a link whose target passes through a symlinked directory elsewhere in the release
                    target_dir = rng.choice(dirs)
                    alias = link_name(rng.choice(dirs))
                    links.append((alias, _rel(alias.rsplit("/", 1)[0], target_dir)))
                    f = rng.choice([x for x in files if x.startswith(target_dir + "/")] or files)
                    via = alias + "/" + f.rsplit("/", 1)[1] if f.startswith(target_dir + "/") else f
                    links.append((name, _rel(d, via)))
                elif kind == "abs":
                    links.append((name, f"/app/deploy/{base}/{rng.choice(files + dirs)}"))
                else:
                    links.append((name, _rel(d, rng.choice(files))))
                if kind != "loop" or rng.random() < 0.3:
                    made.append(links[-1][0])
            if t.level >= 2:
                links.append(("assets", "static"))  # a top-level directory link
            for name, target in links:
                per[num].append(["l", f"{base}/{name}", target])
        draft = spec_json(shared + [e for num in tokens for e in per[num]])
        builds = [unseen(t, lambda: str(rng.randrange(10 ** 11, 10 ** 12)), draft)]
        builds += distinct(lambda: str(rng.randrange(10 ** 11, 10 ** 12)), len(tokens) - 1, builds)
        keys = [key_of(b) for b in builds]
        release = keys[0]
        # Written in the order of their keys, so creation order (inode numbers) does not single out the candidate.
        text = spec_json(shared + [e for i in sorted(range(len(tokens)), key=lambda i: keys[i])
                                   for e in per[tokens[i]]] + [["l", "current", f"releases/{live}"]])
        for tok, key in zip(tokens, keys):
            text = text.replace(tok, key)
        spec = json.loads(text)
        v = t.variant
        src = fill(REFERENCE, WITH_TARGET=k.target, VARIANT=repr(v))
        ref = run_python(src)
        with host_tree(spec, rebase="/app/deploy") as root:
            truth = ref["classify"](f"{root}/releases/{release}")
        ship_tree(t, spec, "/app/deploy", "deploy")
        finish_setup(t)
        t.add_solution_file("links.py", src)
        if t.level == 0 and v == "classify":  # atomic: only the dangling links of one release, a single `find -xtype l`
            t.say("Each release lives in `/app/deploy/releases/<KEY>/`, where KEY is the first 16 hex digits of the "
                  "SHA-256 of its build id (`printf %s <build id> | sha256sum`).")
            var = t.deliver(builds[0], "the candidate build id")
            t.say("List the dangling symbolic links (their target does not exist) inside that release directory: "
                  "one path per line, relative to the release directory, sorted in byte order.")
            t.solve(f'mkdir -p /app/out\nkey={key_cmd(var)}\npython3 /solution/links.py "/app/deploy/releases/$key" '
                    "| awk -F '\\t' '$2 == \"dangling\" {print $1}' > /app/out/dangling.txt")
            dangling = "".join(line.split("\t")[0] + "\n" for line in truth.splitlines()
                               if line.split("\t")[1] == "dangling")
            t.expect_output("/app/out/dangling.txt", dangling, "the dangling links")
            return
        if t.level == 0:  # atomic: one find over one release, counted with sort | uniq -c or awk
            t.say("Each release lives in `/app/deploy/releases/<KEY>/`, where KEY is the first 16 hex digits of the "
                  "SHA-256 of its build id (`printf %s <build id> | sha256sum`).")
            var = t.deliver(builds[0], "the candidate build id")
            t.say("A symbolic link there is `ok` if its target exists, `dangling` if not.")
        else:
            t.say("Our deploys live in `/app/deploy/releases/<KEY>/` (`/app/deploy/current` points at the live one, "
                  "which is not the one we care about); the deploy tool names each release directory after the first "
                  "16 hex digits of the SHA-256 of its build id (`printf %s <build id> | sha256sum`). The release "
                  "candidate whose build id is given below is full of symbolic links from years of hand edits. Audit "
                  "every symbolic link inside that release directory, at any depth (do not descend into linked "
                  "directories to look for more).")
            # Not just "build id": the stripped-binary fixture keeps a decoy entry named build_id.
            var = t.deliver(builds[0], "the candidate build id")
            statuses = ["`ok`: following it (and any further links) reaches an existing file or directory inside "
                        "the release directory",
                        "`dangling`: it leads to something that does not exist"]
            if "outside" in k.kinds:
                statuses.append("`outside`: it reaches an existing file or directory outside the release directory")
            if "loop" in k.kinds:
                statuses.append("`loop`: resolving it never ends (links that lead back to each other)")
            t.say("A link is " + "; ".join(statuses) + ".")
        if v == "classify":
            target = (" For `ok` links add a third field: the fully resolved path, relative to the release directory "
                      "(`.` for the release directory itself)." if k.target else "")
            t.say("The report has one line per link: `<link path relative to the release directory><TAB><status>`, "
                  f"sorted by path in byte order.{target}")
        elif v == "broken_by_dir":
            t.say("Count the links per directory that directly holds them: one line per directory holding at least "
                  "one link, `<directory><TAB><links><TAB><links not ok>`, the directory relative to the release "
                  "directory (`.` for the release directory itself), sorted by directory in byte order.")
        else:
            t.say("Before files are removed from the release we need to know what the healthy links lean on. For "
                  "each file or directory that at least one `ok` link finally reaches (after following every "
                  "further link), write `<its path relative to the release directory><TAB><number of ok links "
                  "reaching it>`, `.` for the release directory itself; most links first, ties by path in byte "
                  "order.")
        out = {"classify": "links.tsv", "broken_by_dir": "dirs.tsv", "link_targets": "targets.tsv"}[v]
        t.solve(f'mkdir -p /app/out\nkey={key_cmd(var)}\n'
                f'python3 /solution/links.py "/app/deploy/releases/$key" > /app/out/{out}')
        t.expect_output(f"/app/out/{out}", truth, {"classify": "the link report", "broken_by_dir": "the link counts",
                                                   "link_targets": "the link targets"}[v])
