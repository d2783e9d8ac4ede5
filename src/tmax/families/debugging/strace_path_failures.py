"""Read a system call trace: a service was run under strace, and the run to look at is named by a
delivered job id. Variants: which paths the program looked for and never found (ENOENT, relative
paths resolved against the process's working directory), how often each system call failed with
each errno, or which file descriptors each process still held at the end (descriptors are reused:
the kernel hands out the lowest free one). Traps by level: relative paths after chdir, a failed
chdir, paths created after a failed lookup, several processes (`strace -f -o`), calls split into
`<unfinished ...>` and `resumed` halves by another process, `..` in paths, signal and exit lines, and
quoted data that looks like a failure."""

from __future__ import annotations

import posixpath
from dataclasses import dataclass

from tmax.families.base import Family, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.unseen import distinct, key_cmd, key_of, unseen

REFERENCE = r'''
import posixpath
import re
import sys

VARIANT = @VARIANT@
CWD = @CWD@  # the working directory strace was started in
HEAD = re.compile(r"^(?:(\d+) +[0-9:.]+ )?(.*)$")
CALL = re.compile(r"^(\w+)\((.*)\) += (-?\d+|0x[0-9a-f]+|\?)(?: (E[A-Z]+) \(.*\))?$")
PATH_CALLS = ("openat", "newfstatat", "access", "execve", "chdir")


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


def first_string(args):
    return re.findall(r'"([^"]*)"', args)[0]


def report(text):
    cwd, fds, lookups, fails = {}, {}, {}, {}
    for pid, name, args, ret, errno in calls(text):
        here = cwd.setdefault(pid, CWD)
        if name == "clone" and errno is None:
            cwd[ret] = here  # the child starts where the parent is
        if errno:
            fails[(name, errno)] = fails.get((name, errno), 0) + 1
        if name == "close" and errno is None:
            fds.get(pid, {}).pop(int(args), None)
        if name not in PATH_CALLS:
            continue
        path = posixpath.normpath(posixpath.join(here, first_string(args)))
        ok = errno is None
        lookups.setdefault(path, []).append(ok or errno != "ENOENT")
        if name == "chdir" and ok:
            cwd[pid] = path
        if name == "openat" and ok:
            fds.setdefault(pid, {})[int(ret)] = path
    if VARIANT == "missing":
        return "".join(p + "\n" for p in sorted(lookups) if not any(lookups[p]))
    if VARIANT == "errno_counts":
        rows = sorted(fails.items(), key=lambda kv: (-kv[1], kv[0]))
        return "".join(f"{n}\t{e}\t{c}\n" for (n, e), c in rows)
    multi = len(cwd) > 1 or "-" not in cwd
    out = []
    for pid in sorted(fds, key=lambda p: int(p) if p.isdigit() else 0):
        for fd in sorted(fds[pid]):
            out.append((f"{pid}\t" if multi else "") + f"{fd}\t{fds[pid][fd]}\n")
    return "".join(out)


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as f:
        sys.stdout.write(report(f.read()))
'''

APPS = ("ingestd", "thumbnailer", "reportgen", "syncer", "mailq")
FILES = ("app.yml", "settings.ini", "plugins.json", "routes.conf", "secrets.env", "schema.sql", "locale.mo",
         "cert.pem", "cache.db", "templates.idx")
DIRS = ("conf", "etc", "config", "share", "data", "var/run")
ERRS = {"ENOENT": "No such file or directory", "EACCES": "Permission denied", "ENOTTY": "Inappropriate ioctl for "
        "device", "EBADF": "Bad file descriptor", "EEXIST": "File exists", "EAGAIN": "Resource temporarily unavailable"}


def _ret(ok, errno="ENOENT"):
    return ok if not isinstance(ok, bool) else "0" if ok else f"-1 {errno} ({ERRS[errno]})"


@dataclass(frozen=True)
class Knobs:
    steps: int  # actions per process
    decoys: int  # traces of other jobs beside the one asked about
    relative: bool  # relative paths, chdir (also failing), files created after a failed lookup
    procs: int  # child processes (strace -f -o: every line starts with pid and time)
    split: bool  # calls split into <unfinished ...> / resumed halves
    dots: bool  # `..` and `.` in paths, signal and exit lines, quoted data that looks like a failure


@register
class StracePathFailures(Family):
    name = "strace_path_failures"
    domain = "debugging"
    skill_types = ("Failure Reproduction", "Configuration Debugging", "Fault Localization")
    primitive_skills = ("reading a system call trace", "resolving relative paths against the working directory",
                        "errno interpretation", "correlating interleaved log lines", "state leaking between calls")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("missing", "errno_counts", "open_fds")
    levels = {0: Knobs(steps=10, decoys=1, relative=False, procs=0, split=False, dots=False),
              1: Knobs(steps=22, decoys=2, relative=True, procs=0, split=False, dots=False),
              2: Knobs(steps=28, decoys=3, relative=True, procs=2, split=False, dots=False),
              3: Knobs(steps=34, decoys=3, relative=True, procs=2, split=True, dots=False),
              4: Knobs(steps=40, decoys=3, relative=True, procs=3, split=True, dots=True)}

    def _process(self, t, root, app, spawn, world):
        """One process's calls in order: text items, and ("spawn", pid, cwd) where a child starts.
        ``world``: absolute path -> exists, shared by the trace's processes so that they agree."""
        k, rng = t.knobs, t.rng
        cwd, fds, out = root, set(), []

        def q(p):
            return f'"{p}"'

        def path(p):
            if k.dots and p.startswith("/") and rng.random() < 0.25:  # the same place, spelled longer
                head, _, tail = p.rpartition("/")
                return f"{head}/./{tail}" if rng.random() < 0.5 else f"{head}/../{head.rsplit('/', 1)[-1]}/{tail}"
            return p

        def opened(p):
            fd = min(set(range(3, 64)) - fds)  # the kernel hands out the lowest free descriptor
            fds.add(fd)
            out.append(f"openat(AT_FDCWD, {q(path(p))}, O_RDONLY|O_CLOEXEC) = {fd}")

        def absent(p, call="openat"):
            if call == "openat":
                out.append(f"openat(AT_FDCWD, {q(path(p))}, O_RDONLY|O_CLOEXEC) = {_ret(False)}")
            elif call == "access":
                out.append(f"access({q(path(p))}, R_OK) = {_ret(False)}")
            else:
                out.append(f"newfstatat(AT_FDCWD, {q(path(p))}, 0x7ffd{rng.randrange(16 ** 8):08x}, 0) = {_ret(False)}")

        def rel(d):
            return d if not k.relative or rng.random() < 0.4 else posixpath.relpath(d, cwd)

        out.append(f'execve("/usr/bin/{app}", ["{app}"], 0x7ffd{rng.randrange(16 ** 8):08x} /* 21 vars */) = 0')
        absent("/etc/ld.so.preload", "access")  # what the dynamic loader checks first, and never finds
        for step in range(k.steps):
            r = rng.random()
            if r < 0.3:  # probe a search path for a file; found in one place or in none
                name = rng.choice(FILES)
                dirs = [f"{root}/{d}" for d in rng.sample(DIRS, rng.randrange(1, 4))] + [f"/etc/{app}"]
                for d in dirs:
                    there = world.setdefault(f"{d}/{name}", rng.random() < (0.6 if d.startswith("/etc") else 0.3))
                    p = rel(d) + "/" + name
                    if there:
                        opened(p)
                        break
                    absent(p, rng.choice(["openat", "openat", "access", "stat"]))
            elif r < 0.42 and len(fds) > 2:
                fd = rng.choice(sorted(fds))
                fds.discard(fd)
                out.append(f"close({fd}) = 0")
            elif r < 0.5 and fds:
                fd = rng.choice(sorted(fds))
                data = rng.choice(["ok\\n", "# generated\\n", "retry", "x) = -1 ENOENT (stale)"
                                   if k.dots else "ready\\n"])
                out.append(f'read({fd}, "{data}", 4096) = {len(data.replace(chr(92) + "n", "n"))}')
            elif r < 0.6 and fds:
                fd = rng.choice(sorted(fds))
                fds.discard(fd)
                out.append(f"close({fd}) = 0")
            elif r < 0.66:
                out.append(f"ioctl(1, TCGETS, 0x7ffd{rng.randrange(16 ** 8):08x}) = {_ret(False, 'ENOTTY')}")
            elif r < 0.72:
                out.append(f"openat(AT_FDCWD, {q(f'/var/log/{app}/{rng.choice(FILES)}')}, O_WRONLY|O_APPEND) = "
                           + _ret(False, "EACCES"))
            elif r < 0.76 and k.relative:
                out.append(f"close({rng.randrange(40, 60)}) = {_ret(False, 'EBADF')}")
            elif r < 0.84 and k.relative:  # a lock file: looked for, not there, then created
                p = rel(f"{root}/var/run") + f"/{app}.{rng.randrange(100, 999)}.lock"
                absent(p, "stat")
                fd = min(set(range(3, 64)) - fds)
                fds.add(fd)
                out.append(f"openat(AT_FDCWD, {q(p)}, O_RDWR|O_CREAT|O_EXCL|O_CLOEXEC, 0644) = {fd}")
            elif r < 0.92 and k.relative:
                d = rng.choice([f"{root}/{rng.choice(DIRS)}", f"{root}/spool/{rng.randrange(10, 99)}", root])
                good = not d.startswith(f"{root}/spool")
                target = ".." if k.dots and cwd != root and rng.random() < 0.5 else rel(d)
                out.append(f"chdir({q(target)}) = {_ret(good)}")
                if good:
                    cwd = posixpath.normpath(posixpath.join(cwd, target))
            elif spawn:
                child = rng.randrange(2000, 32000)
                out.append(("spawn", child, cwd))
                spawn -= 1
            else:
                absent(rng.choice(["/etc/ld.so.preload", f"/usr/lib/{app}/plugins/{rng.choice(FILES)}",
                                   f"/home/svc/.{app}rc"]), rng.choice(["access", "openat"]))
        if not fds:  # something is always left open
            opened(f"/etc/{app}/{rng.choice(FILES)}")
        return out

    def _trace(self, t):
        k, rng = t.knobs, t.rng
        app = rng.choice(APPS)
        root = f"/srv/{app}"
        main = rng.randrange(2000, 32000)
        world = {}
        queues = {main: self._process(t, root, app, k.procs, world)}
        order, lines, clock = [main], [], rng.randrange(3600, 80000) + rng.random()
        live = [main]
        pending = {}  # pid -> the second half of its split call
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
            if isinstance(item, tuple):  # the child's lines follow its clone
                _, child, where = item
                sub = self._process(t, where, app, 0, world)
                queues[child] = sub
                live.append(child)
                item = f"clone(child_stack=NULL, flags=CLONE_CHILD_CLEARTID|SIGCHLD) = {child}"
                if k.dots:
                    queues[pid].insert(rng.randrange(len(queues[pid]) + 1),
                                       "--- SIGCHLD {si_signo=SIGCHLD, si_code=CLD_EXITED} ---")
            # A clone is never split: its child's lines must follow it whole.
            if k.split and len(live) > 1 and not item.startswith(("clone", "---")) and rng.random() < 0.3:
                head, _, tail = item.rpartition(") = ")
                lines.append(stamp + head + " <unfinished ...>")
                pending[pid] = f"<... {item.split('(', 1)[0]} resumed>) = {tail}"
                continue
            lines.append(stamp + item)
        return root, "\n".join(lines) + "\n"

    def output_case(self, t: TaskBuilder) -> None:
        k, v = t.knobs, t.variant
        runs = [self._trace(t) for _ in range(1 + k.decoys)]
        job = unseen(t, lambda: t.code(2), *(text for _, text in runs))
        names = [job, *distinct(lambda: t.code(2), k.decoys, [job])]
        for name, (_, text) in sorted(zip(names, runs), key=lambda nr: key_of(nr[0])):
            t.add_file(f"/app/traces/{key_of(name)}.strace", text)
        root = runs[0][0]
        src = fill(REFERENCE, VARIANT=repr(v), CWD=repr(root))
        truth = run_python(src)["report"](runs[0][1])
        how = ("`strace -f -o`: every line starts with the pid and the time of day" if k.procs
               else "`strace -o` on a single process")
        t.say(f"A service misbehaved and each job was re-run under strace ({how}). The traces are in "
              "`/app/traces/<KEY>.strace`, where KEY is the first 16 hex digits of the SHA-256 of the job id "
              "(`printf %s <job id> | sha256sum`). Look only at the job given below. Each trace was started in "
              f"the service's directory, `/srv/<service>/` (the name the trace's execve runs).")
        who = t.deliver(job, "the job id")
        rules = []
        if k.relative:
            rules.append("Relative paths are relative to the calling process's working directory, which a "
                         "successful `chdir` changes (a failed one does not).")
        if k.procs:
            rules.append("A child process (the pid `clone` returns) starts in its parent's working directory at "
                         "the time of the clone, with no descriptors of its own beyond 0, 1 and 2 (everything is "
                         "opened close-on-exec).")
        if k.split:
            rules.append("When processes interleave, strace splits a call into an `<unfinished ...>` line and a "
                         "later `<... name resumed>` line of the same pid; together they are one call.")
        if k.dots:
            rules.append("Write paths normalised (no `.` or `..` components). Lines starting `---` or `+++` are "
                         "signals and exits, not calls, and quoted data is never part of the result.")
        if rules:
            t.say(" ".join(rules))
        if v == "missing":
            t.say("Which files did the program look for and never find? List every path that some call "
                  "(openat, newfstatat, access, chdir, execve) failed on with ENOENT and that no call on the same "
                  "path ever succeeded on, as an absolute path, one per line, sorted in byte order, no repeats.")
            out = "/app/out/missing.txt"
        elif v == "errno_counts":
            t.say("Summarise the failures: for every system call and errno (the `E...` name after `= -1`), how "
                  "many calls failed that way. One line per pair, `<syscall><TAB><ERRNO><TAB><count>`, sorted by "
                  "count (largest first), ties by syscall name and then errno in byte order.")
            out = "/app/out/errno_counts.tsv"
        else:
            form = "`<pid><TAB><fd><TAB><path>`, sorted by pid and then fd (numerically)" if k.procs else \
                "`<fd><TAB><path>`, sorted by fd (numerically)"
            t.say("Which files were never closed? List every descriptor (3 and up) that a successful openat "
                  "returned and no successful `close` closed before the end of the trace (the kernel reuses a "
                  "closed descriptor number for the next open), one line each as " + form + ", with the path "
                  "that openat opened, as an absolute path.")
            out = "/app/out/open_fds.tsv"
        t.add_solution_file("trace.py", src)
        t.solve(f'test -n "{who}"\nmkdir -p /app/out\nkey={key_cmd(who)}\n'
                f'python3 /solution/trace.py "/app/traces/$key.strace" > {out}')
        t.expect_output(out, truth, "the " + {"missing": "list of missing paths", "errno_counts": "failure summary",
                                              "open_fds": "list of open descriptors"}[v])
