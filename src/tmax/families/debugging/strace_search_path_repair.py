"""A service job failed because resource files it needs are gone from its search path. Two stages, the
first feeding the second: read the job's system call trace (the job id is delivered; other jobs' traces
lie beside it) to find the resources it looked for in its search directories and never found; then
locate where each of them now lives under the service root and repair the service's search path
configuration so the job finds them. Variants differ in the final artefact: the directories appended
to the search path, the path every resource of the job resolves to after the repair, or the sha256
manifest of the files the repaired job loads. Traps by level: relative paths after chdir, lookups that
fail in early directories and succeed later, lock files created after a failed stat, several processes
(`strace -f`) with split calls, `.`/`..` components, stale copies in `attic/` and shadowed copies in
later search directories."""

from __future__ import annotations

import posixpath
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.unseen import distinct, key_cmd, key_of, unseen

REFERENCE = r'''
import hashlib
import os
import posixpath
import re
import sys

VARIANT = @VARIANT@
STAGES = @STAGES@  # 1: the trace only; 2: and the search path repair
ROOT = @ROOT@  # the service root: the trace starts there, the config's relative directories are under it
CONF = @CONF@  # the search path config, one directory per line
HEAD = re.compile(r"^(?:(\d+) +[0-9:.]+ )?(.*)$")
CALL = re.compile(r"^(\w+)\((.*)\) += (-?\d+|0x[0-9a-f]+|\?)(?: (E[A-Z]+) \(.*\))?$")
LOOKUPS = ("openat", "newfstatat", "access")


def calls(text):
    """(pid, name, args, ret, errno) for every complete call, halves of split calls joined."""
    pending = {}
    for line in text.splitlines():
        pid, rest = HEAD.match(line).groups()
        pid = pid or "-"
        if rest.endswith(" <unfinished ...>"):
            pending[pid] = rest[:-len(" <unfinished ...>")]
            continue
        m = re.match(r"^<\.\.\. \w+ resumed>(.*)$", rest)
        if m:
            rest = pending.pop(pid) + m.group(1)
        m = CALL.match(rest)
        if m:  # signal (---) and exit (+++) lines are not calls
            yield (pid, *m.groups())


def stage1(text):
    """Per call, with the path made absolute against the calling process's working directory."""
    cwd, out = {}, []
    for pid, name, args, ret, errno in calls(text):
        here = cwd.setdefault(pid, "/")
        if name == "clone" and errno is None:
            cwd[ret] = here  # the child starts where the parent is
        quoted = re.findall(r'"([^"]*)"', args)
        path = posixpath.normpath(posixpath.join(here, quoted[0])) if quoted else ""
        if name == "chdir" and errno is None:
            cwd[pid] = path
        out.append((name, path, ret, errno))
    return out


def search_dirs(disk):
    with open(os.path.join(disk, CONF)) as f:
        lines = [ln.strip() for ln in f if ln.strip() and not ln.startswith("#")]
    return lines


def absdir(d):
    return posixpath.normpath(posixpath.join(ROOT, d))


def resources(events, dirs):
    """name -> the absolute path it was found at (None: never found), for lookups in the search dirs."""
    where = {absdir(d): d for d in dirs}
    found = {}
    for name, path, ret, errno in events:
        if name in LOOKUPS and posixpath.dirname(path) in where:
            base = posixpath.basename(path)
            found.setdefault(base, None)
            if errno is None and found[base] is None:
                found[base] = path
    return found


def locate(disk, base, dirs):
    """The directory (relative to ROOT) outside the search path and attic/ that holds ``base``."""
    hits = []
    for dirpath, dirnames, filenames in os.walk(disk):
        dirnames.sort()
        rel = os.path.relpath(dirpath, disk).replace(os.sep, "/")
        if rel == "attic" or rel.startswith("attic/") or rel in dirs:
            continue
        if base in filenames and os.path.isfile(os.path.join(dirpath, base)):
            hits.append(rel)
    if len(hits) != 1:
        raise SystemExit(f"{base}: {len(hits)} candidate locations")
    return hits[0]


def repair(text, disk):
    """The directories to append (in missing-name order) and name -> resolved absolute path."""
    dirs = search_dirs(disk)
    found = resources(stage1(text), dirs)
    added = []
    for base in sorted(b for b in found if found[b] is None):
        d = locate(disk, base, dirs)
        if d not in dirs + added:
            added.append(d)
    resolved = {}
    for base in sorted(found):
        for d in dirs + added:
            if os.path.isfile(os.path.join(disk, d, base)):
                resolved[base] = posixpath.join(absdir(d), base)
                break
    return added, resolved


def report(text, disk):
    if STAGES == 1:
        events = stage1(text)
        if VARIANT == "search_path":
            miss = sorted({p for n, p, r, e in events if e == "ENOENT"})
            return "".join(p + "\n" for p in miss)
        if VARIANT == "resolve":
            return "".join(f"{r}\t{p}\n" for n, p, r, e in events if n == "openat" and e is None)
        counts = {}
        for n, p, r, e in events:
            if e:
                counts[e] = counts.get(e, 0) + 1
        return "".join(f"{e}\t{c}\n" for e, c in sorted(counts.items()))
    added, resolved = repair(text, disk)
    if VARIANT == "search_path":
        return "".join(d + "\n" for d in added)
    if VARIANT == "resolve":
        return "".join(f"{b}\t{p}\n" for b, p in sorted(resolved.items()))
    out = []
    for p in sorted(resolved.values()):
        with open(os.path.join(disk, os.path.relpath(p, ROOT)), "rb") as f:
            out.append(f"{hashlib.sha256(f.read()).hexdigest()}  {p}\n")
    return "".join(out)


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as f:
        sys.stdout.write(report(f.read(), ROOT))
'''

APPS = ("ingestd", "thumbnailer", "reportgen", "syncer", "mailq", "indexer")
WORDS = ("routes", "schema", "locale", "plugins", "settings", "cert", "templates", "mime", "filters", "hooks",
         "tariffs", "regions", "codecs", "fonts", "rules", "aliases", "banner", "quotas", "zones", "keys")
EXTS = ("conf", "json", "yml", "ini", "idx", "pem", "tpl", "map")
SEARCH = ("conf", "etc", "share", "lib", "config")
MOVED = ("opt/legacy", "contrib", "data/imported", "plugins/extra", "var/lib", "shared/res", "vendor/defaults")
ERRS = {"ENOENT": "No such file or directory", "EACCES": "Permission denied",
        "ENOTTY": "Inappropriate ioctl for device"}


@dataclass(frozen=True)
class Knobs:
    dirs: int  # directories on the search path
    uses: int  # resources each job loads
    missing: int  # of them gone from the search path
    decoys: int  # other jobs' traces
    relative: bool  # chdir and relative paths, lookups that fail before they succeed, noise calls
    procs: int  # worker processes (strace -f: pid and time on every line)
    split: bool  # <unfinished ...> / resumed halves
    dots: bool  # `.`/`..` in paths, signal and exit lines, attic/ copies, shadowed copies


@register
class StraceSearchPathRepair(Family):
    name = "strace_search_path_repair"
    domain = "debugging"
    skill_types = ("Configuration Debugging", "Failure Reproduction", "Fault Localization")
    primitive_skills = ("reading a system call trace", "resolving relative paths against the working directory",
                        "errno interpretation", "config file validation", "correlating interleaved log lines")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("search_path", "resolve", "digest")
    stages = ("strace_path_failures", "service_config_repair")
    levels = {0: Knobs(dirs=1, uses=5, missing=2, decoys=1, relative=False, procs=0, split=False, dots=False),
              1: Knobs(dirs=2, uses=6, missing=2, decoys=2, relative=True, procs=0, split=False, dots=False),
              2: Knobs(dirs=3, uses=9, missing=3, decoys=2, relative=True, procs=0, split=False, dots=False),
              3: Knobs(dirs=3, uses=12, missing=4, decoys=3, relative=True, procs=2, split=True, dots=False),
              4: Knobs(dirs=4, uses=16, missing=5, decoys=3, relative=True, procs=3, split=True, dots=True)}

    def _world(self, t, jobs):
        """Where every resource lives: rel path -> content; per job its names and the missing ones."""
        k, rng = t.knobs, t.rng
        dirs = list(SEARCH[:k.dirs])
        names = [f"{w}.{e}" for w in WORDS for e in EXTS]
        rng.shuffle(names)
        tree, plans = {}, []

        def text():
            return "".join(f"{rng.choice(WORDS)} = {rng.randrange(1000)}\n" for _ in range(rng.randrange(2, 8)))

        for _ in range(jobs):
            uses = [names.pop() for _ in range(k.uses)]
            gone = uses[:k.missing]
            for n in uses:
                if n in gone:
                    tree[f"{rng.choice(MOVED)}/{n}"] = text()
                    if k.dots and rng.random() < 0.5:  # a stale copy: not a location
                        tree[f"attic/{rng.choice(dirs)}/{n}"] = text()
                else:
                    i = rng.randrange(len(dirs))
                    tree[f"{dirs[i]}/{n}"] = text()
                    if k.dots and i + 1 < len(dirs) and rng.random() < 0.4:  # shadowed by the earlier directory
                        tree[f"{dirs[rng.randrange(i + 1, len(dirs))]}/{n}"] = text()
            order = uses[:]
            rng.shuffle(order)
            plans.append(order)
        for d in dirs:  # every search directory exists
            tree.setdefault(f"{d}/README", "resource directory\n")
        return dirs, tree, plans

    def _process(self, t, root, app, dirs, tree, names, cwd, spawn):
        """One process's calls: text items, and ("spawn", names, cwd) where a worker starts."""
        k, rng = t.knobs, t.rng
        out, fds = [], set()

        def spell(p):
            if k.dots and p.startswith("/") and rng.random() < 0.3:  # the same place, spelled longer
                head, _, tail = p.rpartition("/")
                return f"{head}/./{tail}" if rng.random() < 0.5 else f"{head}/../{head.rsplit('/', 1)[-1]}/{tail}"
            return p

        def rel(p):
            return spell(p) if not k.relative or rng.random() < 0.3 else posixpath.relpath(p, cwd)

        def fd():
            n = min(set(range(3, 64)) - fds)  # the kernel hands out the lowest free descriptor
            fds.add(n)
            return n

        def lookup(name):
            for d in dirs:
                p = rel(f"{root}/{d}/{name}")
                if f"{d}/{name}" in tree:
                    if k.relative and rng.random() < 0.4:
                        out.append(f"newfstatat(AT_FDCWD, \"{p}\", {{st_mode=S_IFREG|0644, st_size=1}}, 0) = 0")
                    out.append(f"openat(AT_FDCWD, \"{p}\", O_RDONLY|O_CLOEXEC) = {fd()}")
                    return
                call = rng.choice(["openat", "openat", "access", "newfstatat"]) if k.relative else "openat"
                if call == "openat":
                    out.append(f"openat(AT_FDCWD, \"{p}\", O_RDONLY|O_CLOEXEC) = -1 ENOENT ({ERRS['ENOENT']})")
                elif call == "access":
                    out.append(f"access(\"{p}\", R_OK) = -1 ENOENT ({ERRS['ENOENT']})")
                else:
                    out.append(f"newfstatat(AT_FDCWD, \"{p}\", 0x7ffd{rng.randrange(16 ** 8):08x}, 0) = -1 ENOENT "
                               f"({ERRS['ENOENT']})")

        todo = list(names)
        workers = []
        if spawn:  # the workers load part of the job's resources
            share = todo[len(todo) // 2:]
            todo = todo[:len(todo) // 2]
            workers = [share[i::spawn] for i in range(spawn)]
        while todo or workers:
            r = rng.random()
            if r < 0.45 and todo:
                lookup(todo.pop(0))
            elif r < 0.55 and len(fds) > 1:
                n = rng.choice(sorted(fds))
                fds.discard(n)
                out.append(f"close({n}) = 0")
            elif r < 0.62:
                out.append(f"ioctl(1, TCGETS, 0x7ffd{rng.randrange(16 ** 8):08x}) = -1 ENOTTY ({ERRS['ENOTTY']})")
            elif r < 0.68 and k.relative:
                out.append(f"openat(AT_FDCWD, \"/var/log/{app}/{rng.choice(WORDS)}.log\", O_WRONLY|O_APPEND) = -1 "
                           f"EACCES ({ERRS['EACCES']})")
            elif r < 0.74 and k.relative:  # a lock file: looked for, not there, then created
                p = rel(f"{root}/run") + f"/{app}.{rng.randrange(100, 999)}.lock"
                out.append(f"newfstatat(AT_FDCWD, \"{p}\", 0x7ffd{rng.randrange(16 ** 8):08x}, 0) = -1 ENOENT "
                           f"({ERRS['ENOENT']})")
                out.append(f"openat(AT_FDCWD, \"{p}\", O_RDWR|O_CREAT|O_EXCL|O_CLOEXEC, 0644) = {fd()}")
            elif r < 0.82 and k.relative:
                d = rng.choice([f"{root}/run", f"{root}/{rng.choice(dirs)}", root])
                target = ".." if k.dots and cwd != root and rng.random() < 0.5 else rel(d)
                out.append(f"chdir(\"{target}\") = 0")
                cwd = posixpath.normpath(posixpath.join(cwd, target))
            elif workers and (r >= 0.82 or not todo):
                out.append(("spawn", workers.pop(0), cwd))
        return out

    def _trace(self, t, root, app, dirs, tree, names):
        k, rng = t.knobs, t.rng
        main = rng.randrange(2000, 32000)
        head = [f'execve("/usr/bin/{app}", ["{app}"], 0x7ffd{rng.randrange(16 ** 8):08x} /* 21 vars */) = 0']
        if k.relative:
            head += [f"access(\"/etc/ld.so.preload\", R_OK) = -1 ENOENT ({ERRS['ENOENT']})", f'chdir("{root}") = 0']
        queues = {main: head + self._process(t, root, app, dirs, tree, names, root if k.relative else "/", k.procs)}
        lines, live, pending = [], [main], {}
        clock = rng.randrange(3600, 80000) + rng.random()
        while live:
            pid = rng.choice(live)
            clock += rng.randrange(5, 900) / 1e6
            stamp = f"{pid} {int(clock) // 3600:02d}:{int(clock) // 60 % 60:02d}:{clock % 60:09.6f} " if k.procs else ""
            if pid in pending:
                lines.append(stamp + pending.pop(pid))
                continue
            if not queues[pid]:
                live.remove(pid)
                if k.dots:
                    lines.append(stamp + "+++ exited with 0 +++")
                continue
            item = queues[pid].pop(0)
            if isinstance(item, tuple):  # the worker's lines follow its clone
                _, share, where = item
                child = rng.randrange(2000, 32000)
                queues[child] = self._process(t, root, app, dirs, tree, share, where, 0)
                live.append(child)
                item = f"clone(child_stack=NULL, flags=CLONE_CHILD_CLEARTID|SIGCHLD) = {child}"
            if k.split and len(live) > 1 and not item.startswith("clone") and rng.random() < 0.3:
                head, _, tail = item.rpartition(") = ")
                lines.append(stamp + head + " <unfinished ...>")
                pending[pid] = f"<... {item.split('(', 1)[0]} resumed>) = {tail}"
                continue
            lines.append(stamp + item)
        if k.dots:
            lines.insert(len(lines) // 2, ("" if not k.procs else f"{main} 00:00:00.000000 ")
                         + "--- SIGCHLD {si_signo=SIGCHLD, si_code=CLD_EXITED} ---")
        return "\n".join(lines) + "\n"

    def output_case(self, t: TaskBuilder) -> None:
        k, rng, v = t.knobs, t.rng, t.variant
        stages = 1 if t.level == 0 else 2
        app = rng.choice(APPS)
        root, conf = f"/srv/{app}", f"{app}.path"
        dirs, tree, plans = self._world(t, 1 + k.decoys)
        conf_text = (f"# {app}: resource directories, one per line, searched in order (relative to {root})\n"
                     + "".join(d + "\n" for d in dirs))
        for rel_path, text in sorted(tree.items()):
            t.add_file(f"{root}/{rel_path}", text)
        t.add_file(f"{root}/{conf}", conf_text)
        traces = [self._trace(t, root, app, dirs, tree, names) for names in plans]
        job = unseen(t, lambda: t.code(2), *traces)
        names = [job, *distinct(lambda: t.code(2), k.decoys, [job])]
        for name, text in sorted(zip(names, traces), key=lambda nt: key_of(nt[0])):
            t.add_file(f"/app/traces/{key_of(name)}.strace", text)
        src = fill(REFERENCE, VARIANT=repr(v), STAGES=stages, ROOT=repr(root), CONF=repr(conf))
        ref = run_python(src)
        with tempfile.TemporaryDirectory(prefix="tmax-ref-") as disk:  # the tree as the oracle sees it
            for rel_path, text in [*tree.items(), (conf, conf_text)]:
                p = Path(disk) / rel_path
                p.parent.mkdir(parents=True, exist_ok=True)
                p.write_text(text)
            truth = ref["report"](traces[0], disk)
            if stages == 2 and not ref["repair"](traces[0], disk)[0]:  # the repair must touch the config
                raise FamilyError(f"family {self.name}: the job's repair appends nothing")
        how = ("`strace -f -o`: every line starts with the pid and the time of day" if k.procs
               else "`strace -o` on a single process")
        t.say(f"The `{app}` service (installed under `{root}/`) runs jobs, and one of them keeps failing. Each job "
              f"was re-run under strace ({how}); the traces are in `/app/traces/<KEY>.strace`, where KEY is the "
              "first 16 hex digits of the SHA-256 of the job id (`printf %s <job id> | sha256sum`). Look only at "
              "the job given below.")
        who = t.deliver(job, "the job id")
        rules = []
        if k.relative:
            rules.append("Relative paths in the trace are relative to the calling process's working directory, "
                         "which `chdir` changes.")
        if k.procs:
            rules.append("A worker process (the pid `clone` returns) starts in its parent's working directory at "
                         "the time of the clone.")
        if k.split:
            rules.append("strace splits a call into an `<unfinished ...>` line and a later `<... name resumed>` line "
                         "of the same pid; together they are one call.")
        if k.dots:
            rules.append("Paths may contain `.` and `..` components; lines starting `---` or `+++` are signals "
                         "and exits, not calls.")
        if stages == 1:
            t.say(" ".join(rules + [{
                "search_path": "List every path that a call in the trace failed on with ENOENT, as an absolute "
                               "path, one per line, sorted in byte order, no repeats.",
                "resolve": "List every successful openat in trace order, one line each as `<fd><TAB><path>` "
                           "(the descriptor it returned and the path exactly as the trace spells it).",
                "digest": "Count the failed calls per errno (the `E...` name after `= -1`): one line per errno "
                          "as `<ERRNO><TAB><count>`, sorted by errno in byte order."}[v]]))
            out = {"search_path": "/app/out/enoent.txt", "resolve": "/app/out/opened.tsv",
                   "digest": "/app/out/errno.tsv"}[v]
        else:
            t.say(f"The service looks each resource file up in the directories listed in `{root}/{conf}`, in "
                  f"order (relative entries are relative to `{root}`), and uses the first it finds. A lookup of a "
                  "resource is an openat, newfstatat or access call on `<search directory>/<file name>`; a resource "
                  "of the job is missing when none of its lookups succeeded. " + " ".join(rules))
            t.say(f"Since the last upgrade, every missing resource lives in exactly one other directory under "
                  f"`{root}/`" + (" (copies under `attic/` are stale and never count)" if k.dots else "") + ". "
                  f"Repair `{root}/{conf}`: take the job's missing resources sorted by file name in byte order, "
                  "and for each append the directory that holds it (written relative to the root, as the other "
                  "entries are) unless that directory is already listed. Do not move or copy any file.")
            if v == "search_path":
                t.say("Then write the directories you appended, one per line in the order appended.")
                out = "/app/out/appended.txt"
            elif v == "resolve":
                t.say("Then check the repair: for every resource the job looked up, the absolute path the service "
                      "now resolves it to (the first search directory holding it), one line each as `<file name>"
                      "<TAB><absolute path>`, sorted by file name in byte order.")
                out = "/app/out/resolved.tsv"
            else:
                t.say("Then write the integrity manifest of the repaired job: for every resource the job looked "
                      "up, the file the service now loads for it (the first search directory holding it), in "
                      "`sha256sum` format (`<digest>  <absolute path>`), sorted by path in byte order.")
                out = "/app/out/resources.sha256"
        t.add_solution_file("repair.py", src)
        cmd = f'python3 /solution/repair.py "/app/traces/$key.strace" > {out}'
        if stages == 2:  # the oracle repairs the config too (after reading it: the report is of the old one)
            fix = "" if v == "search_path" else (
                f"sed \"s/^VARIANT = .*/VARIANT = 'search_path'/\" /solution/repair.py > /tmp/append.py\n"
                f'python3 /tmp/append.py "/app/traces/$key.strace" > /tmp/appended.txt\n')
            cmd += f"\n{fix}cat {'/tmp/appended.txt' if fix else out} >> {root}/{conf}"
        t.solve(f'test -n "{who}"\nmkdir -p /app/out\nkey={key_cmd(who)}\n{cmd}')
        t.expect_output(out, truth, "the result")
