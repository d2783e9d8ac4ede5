"""Does a deployed site follow the permission policy? One site (its folder keyed by a hash of a
delivered site name) is checked against a mode policy. Variants: a count of regular files per mode,
the entries whose mode breaks the policy (with the mode wanted), or the files that someone other
than their owner can modify (the file is group/other-writable, or a directory above it is and has
no sticky bit). Traps by level: subdirectories and directory rules, `bin` tools, secrets whose rule
wins over the others, setuid/setgid/sticky bits (modes are four octal digits), hidden files, names
with spaces, and symlinks (never judged: their mode means nothing)."""

from __future__ import annotations

from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.file_operations._common import WORDS, epoch, finish_setup, host_tree, ship_tree, spec_json
from tmax.families.programs import fill, run_python
from tmax.families.unseen import distinct, key_cmd, key_of, unseen

REFERENCE = r'''
import os
import stat
import sys

VARIANT = @VARIANT@
RULES = @RULES@  # 0: files 0644; 1: + directories 0755 and bin/ tools 0755; 2: + secrets 0600


def wanted(rel, is_dir):
    name = rel.rsplit("/", 1)[-1]
    if is_dir:
        return 0o755 if RULES >= 1 else None
    if RULES >= 2 and (name.endswith((".key", ".pem")) or name == ".env"):
        return 0o600
    if RULES >= 1 and "bin" in rel.split("/")[:-1]:
        return 0o755
    return 0o644


def walk(root):
    """(relative path, mode, is directory) below root, symlinks left out, sorted by path."""
    if not os.path.isdir(root):
        sys.exit(f"no such site: {root}")
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            full = os.path.join(dirpath, name)
            st = os.lstat(full)
            if stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode):
                out.append((os.path.relpath(full, root), stat.S_IMODE(st.st_mode), stat.S_ISDIR(st.st_mode)))
    return sorted(out)


def report(root):
    entries = walk(root)
    if VARIANT == "mode_summary":
        counts = {}
        for _, mode, is_dir in entries:
            if not is_dir:
                counts[mode] = counts.get(mode, 0) + 1
        return "".join(f"{m:04o}\t{n}\n" for m, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    if VARIANT == "violations":
        out = []
        for rel, mode, is_dir in entries:
            want = wanted(rel, is_dir)
            if want is not None and mode != want:
                out.append(f"{rel}\t{mode:04o}\t{want:04o}\n")
        return "".join(out)
    # Directories through which another user could replace what lies below.
    open_dirs = {rel for rel, mode, is_dir in entries if is_dir and mode & 0o022 and not mode & 0o1000}
    out = []
    for rel, mode, is_dir in entries:
        if is_dir:
            continue
        parts = rel.split("/")[:-1]
        above = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
        if mode & 0o022:
            out.append(f"{rel}\tfile\n")
        elif any(d in open_dirs for d in above):
            out.append(f"{rel}\tdir {next(d for d in above if d in open_dirs)}\n")
    return "".join(out)


if __name__ == "__main__":
    sys.stdout.write(report(sys.argv[1]))
'''

DIRS = ("public", "public/css", "public/img", "bin", "config", "uploads", "lib", "lib/bin", "storage/cache")
EXTS = ("html", "css", "js", "php", "json", "png", "txt")


@dataclass(frozen=True)
class Knobs:
    files: int  # regular files per site
    dirs: int  # subdirectories used (0: flat)
    rules: int  # 0: files 0644; 1: + directories and bin tools 0755; 2: + secrets 0600
    bad: int  # entries given a mode the policy does not want
    special: bool  # setuid/setgid/sticky bits, hidden files, names with spaces
    links: bool  # symlinks (never judged)
    decoys: int  # other sites beside the one asked about


@register
class PermissionPolicyAudit(Family):
    name = "permission_policy_audit"
    domain = "file_operations"
    skill_types = ("Link and Permission Management", "File Discovery")
    primitive_skills = ("permission policy enforcement", "permission bits inspection", "recursive directory traversal",
                        "finding files by metadata", "hidden file handling", "handling special characters in filenames",
                        "sorting with tie-breaks")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("mode_summary", "violations", "writable_by_others")
    levels = {0: Knobs(files=8, dirs=0, rules=0, bad=2, special=False, links=False, decoys=1),
              1: Knobs(files=20, dirs=5, rules=1, bad=4, special=False, links=False, decoys=2),
              2: Knobs(files=35, dirs=7, rules=2, bad=6, special=False, links=False, decoys=3),
              3: Knobs(files=55, dirs=9, rules=2, bad=8, special=True, links=False, decoys=3),
              4: Knobs(files=75, dirs=9, rules=2, bad=10, special=True, links=True, decoys=3)}

    def _site(self, t, prefix, ns):
        k, rng = t.knobs, t.rng
        dirs = list(DIRS[:k.dirs])
        dirs += sorted({d.rsplit("/", 1)[0] for d in dirs if "/" in d} - set(dirs))  # every parent has its mode set
        dir_mode = {d: 0o755 for d in dirs}
        files = {}
        for _ in range(30 * k.files):
            if len(files) == k.files:
                break
            d = rng.choice([""] + dirs)
            if d.endswith("bin"):
                name = rng.choice([f"{rng.choice(WORDS)}-ctl", f"{rng.choice(WORDS)}.sh", f"run_{rng.choice(WORDS)}"])
            elif k.rules >= 2 and rng.random() < 0.12:
                name = rng.choice([".env", f"{rng.choice(WORDS)}.key", f"{rng.choice(WORDS)}.pem"])
            else:
                name = f"{rng.choice(WORDS)}_{rng.randrange(10, 99)}.{rng.choice(EXTS)}"
                if k.special and rng.random() < 0.12:
                    name = rng.choice(["." + name, f"{rng.choice(WORDS)} {rng.choice(WORDS)}.{rng.choice(EXTS)}"])
            rel = f"{d}/{name}" if d else name
            if rel not in files:
                files[rel] = ns["wanted"](rel, False)
        if len(files) < k.files:
            raise FamilyError("permission_policy_audit: too few distinct names drawn")
        bad_file = [0o664, 0o666, 0o600, 0o640, 0o755, 0o444, 0o646]
        bad_dir = [0o775, 0o777, 0o750, 0o1777, 0o2775]
        if k.special:
            bad_file += [0o4755, 0o2755, 0o6755, 0o1644]
        paths = sorted(files) + (dirs if k.rules >= 1 else [])
        for p in rng.sample(paths, min(k.bad, len(paths))):
            if p in dir_mode:
                dir_mode[p] = rng.choice(bad_dir)
            else:
                files[p] = rng.choice([m for m in bad_file if m != files[p]])
        if not any(m & 0o022 for m in files.values()):  # someone can always write somewhere
            p = rng.choice(sorted(files))
            files[p] = rng.choice([0o664, 0o666])
        spec = [["d", prefix, 0o755, epoch(2025, 1, 2)]]
        spec += [["d", f"{prefix}/{d}", m, epoch(2025, 1, 2)] for d, m in sorted(dir_mode.items())]
        spec += [["s", f"{prefix}/{p}", rng.randrange(10, 3000), m, epoch(2024, 1, 1) + rng.randrange(10 ** 7)]
                 for p, m in sorted(files.items())]
        if k.links:  # a link's own mode is always 0777 and means nothing
            for p in rng.sample(sorted(files), 3):
                folder, _, base = p.rpartition("/")
                spec.append(["l", f"{prefix}/{folder + '/' if folder else ''}current_{rng.randrange(10, 99)}", base])
        return spec

    def output_case(self, t: TaskBuilder) -> None:
        k, v = t.knobs, t.variant
        src = fill(REFERENCE, VARIANT=repr(v), RULES=k.rules)
        ns = run_python(src)
        sites = [self._site(t, f"site{i}", ns) for i in range(1 + k.decoys)]
        name = unseen(t, lambda: t.code(2), *(spec_json(s) for s in sites))
        names = [name, *distinct(lambda: t.code(2), k.decoys, [name])]
        keys = [key_of(n) for n in names]
        spec = [[e[0], keys[i] + e[1][len(f"site{i}"):], *e[2:]]
                for i in sorted(range(len(keys)), key=lambda i: keys[i]) for e in sites[i]]
        with host_tree(spec) as root:
            truth = ns["report"](f"{root}/{keys[0]}")
        ship_tree(t, spec, "/app/sites", "sites")
        finish_setup(t)
        t.say("Each deployed site lives in `/app/sites/<KEY>/`, where KEY is the first 16 hex digits of the SHA-256 "
              "of the site's name (`printf %s <name> | sha256sum`). Audit the site named below; paths are relative "
              "to its folder (which itself is not judged), without a leading `./`.")
        who = t.deliver(name, "the site name")
        policy = ["every regular file 0644"]
        if k.rules >= 1:
            policy = ["every directory 0755", "every regular file inside a directory named `bin` (at any depth) "
                      "0755", "every other regular file 0644"]
        if k.rules >= 2:
            policy.insert(0, "a regular file named `*.key`, `*.pem` or `.env` 0600, wherever it is (this rule wins)")
        t.say("The policy: " + "; ".join(policy) + ". Modes are written as four octal digits, the setuid/setgid/"
              "sticky digit first (`0644`, `4755`), and a mode must match exactly, special bits included."
              + (" Symbolic links are not judged and not counted: their own mode means nothing." if k.links else ""))
        if v == "mode_summary":
            t.say("Count the regular files by mode: one line per mode, `<mode><TAB><files>`, sorted by the number of "
                  "files (most first), ties by mode.")
            out = "/app/out/modes.tsv"
        elif v == "violations":
            t.say("List every " + ("directory and regular file" if k.rules >= 1 else "regular file") + " whose mode "
                  "breaks the policy, one per line, `<path><TAB><its mode><TAB><mode the policy wants>`, sorted by "
                  "path in byte order.")
            out = "/app/out/violations.tsv"
        else:
            t.say("Which regular files could a user other than the owner modify or replace? A file is exposed if it "
                  "has the group or other write bit (`file`), or else if a directory above it inside the site has "
                  "the group or other write bit and no sticky bit (`dir <that directory's path>`, the one nearest "
                  "the site folder). One line per exposed file, `<path><TAB><reason>`, sorted by path in byte order.")
            out = "/app/out/exposed.tsv"
        t.add_solution_file("perms.py", src)
        t.solve(f'test -n "{who}"\nmkdir -p /app/out\nkey={key_cmd(who)}\ntest -d "/app/sites/$key"\n'
                f'python3 /solution/perms.py "/app/sites/$key" > {out}')
        t.expect_output(out, truth, {"mode_summary": "the mode counts", "violations": "the violations",
                                     "writable_by_others": "the exposed files"}[v])
