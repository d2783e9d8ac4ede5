"""A runaway supervisor must go, with everything it spawned: from a ps snapshot, find the supervisor by
the start time the memory alert reported (Unix seconds, the delivered value; the snapshot shows start
times only as UTC dates, and PIDs get recycled), walk the process tree under it, leave out zombies (they
cannot be killed), order the kills deepest first (then by RSS, then PID) and total the memory freed.
Decoy instances of the same supervisor, with trees of similar size, share command names; orphans were
reparented to init, columns move around and commands carry arguments at higher levels.
Variants: kill_plan (the kill order with the memory freed), memory_by_name (the tree's memory grouped by
program name) and kill_waves (the kill rounds, one per depth, deepest first: a wave waits for the one
before it). Level 0 asks one lookup about the supervisor: its PID, its name and RSS, or its children."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import run_python
from tmax.families.unseen import clear_of, unseen, visible_numbers

REFERENCE = r'''
import sys
from datetime import datetime, timezone

STARTED_AT = "@@VALUE@@"


def epoch(stamp):
    return int(datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=timezone.utc).timestamp())


def kill_plan(text, started=None):
    started = int(started or STARTED_AT)
    root = None
    lines = [line for line in text.splitlines() if line.strip()]
    header = lines[0].split()
    col = {h: i for i, h in enumerate(header)}
    procs, children = {}, {}
    for line in lines[1:]:
        parts = line.split(None, len(header) - 1)
        if len(parts) < len(header):
            continue
        pid, ppid = int(parts[col["PID"]]), int(parts[col["PPID"]])
        cmd = parts[col["COMMAND"]]
        name = cmd.split()[0].rsplit("/", 1)[-1]
        procs[pid] = (ppid, int(parts[col["RSS"]]), parts[col["STAT"]], name)
        if epoch(parts[col["STARTED"]]) == started:
            root = pid
        children.setdefault(ppid, []).append(pid)
    rows, todo = [], [(root, 0)]
    while todo:
        pid, depth = todo.pop()
        if pid not in procs:
            continue
        ppid, rss, stat, name = procs[pid]
        if not stat.startswith("Z"):
            rows.append((-depth, -rss, pid, name, rss))
        todo.extend((c, depth + 1) for c in children.get(pid, []) if c != pid)
    rows.sort()
    out = "".join(f"{pid} {name}\n" for _, _, pid, name, _ in rows)
    return out + f"TOTAL {sum(r[4] for r in rows)}\n"


if __name__ == "__main__":
    sys.stdout.write(kill_plan(sys.stdin.read(), sys.argv[1] if len(sys.argv) > 1 else None))
'''

# Level 0: only the lookup, the supervisor's PID from its start time.
FIND = r'''
import sys
from datetime import datetime, timezone

STARTED_AT = "@@VALUE@@"


def find(text, started=None):
    stamp = datetime.fromtimestamp(int(started or STARTED_AT), timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
    lines = text.splitlines()
    col = lines[0].split()
    for line in lines[1:]:
        parts = line.split(None, len(col) - 1)
        if len(parts) == len(col) and parts[col.index("STARTED")] == stamp:
            return parts[col.index("PID")] + "\n"
    return ""


if __name__ == "__main__":
    sys.stdout.write(find(sys.stdin.read(), sys.argv[1] if len(sys.argv) > 1 else None))
'''

# The other variants' reports (appended before the main block of REFERENCE or FIND; those stay as shipped).
EXTRA = r'''


def tree(text, started=None):
    """(depth, pid, name, rss) of every live process in the tree of the supervisor started at `started`."""
    started = int(started or STARTED_AT)
    lines = [line for line in text.splitlines() if line.strip()]
    header = lines[0].split()
    col = {h: i for i, h in enumerate(header)}
    procs, children, root = {}, {}, None
    for line in lines[1:]:
        parts = line.split(None, len(header) - 1)
        if len(parts) < len(header):
            continue
        pid, ppid = int(parts[col["PID"]]), int(parts[col["PPID"]])
        procs[pid] = (int(parts[col["RSS"]]), parts[col["STAT"]], parts[col["COMMAND"]].split()[0].rsplit("/", 1)[-1])
        children.setdefault(ppid, []).append(pid)
        if epoch(parts[col["STARTED"]]) == started:
            root = pid
    out, todo = [], [(root, 0)]
    while todo:
        pid, depth = todo.pop()
        if pid in procs:
            rss, stat, name = procs[pid]
            if not stat.startswith("Z"):
                out.append((depth, pid, name, rss))
            todo.extend((c, depth + 1) for c in children.get(pid, []) if c != pid)
    return out


def by_name(text, started=None):
    """Per program name: processes and RSS in the tree, the largest RSS first, then a TOTAL line."""
    groups = {}
    for _, _, name, rss in tree(text, started):
        n, total = groups.get(name, (0, 0))
        groups[name] = (n + 1, total + rss)
    rows = sorted(groups.items(), key=lambda g: (-g[1][1], g[0]))
    return "".join(f"{name} {n} {rss}\n" for name, (n, rss) in rows) + f"TOTAL {sum(g[1] for _, g in rows)}\n"


def waves(text, started=None):
    """One kill wave per depth, deepest first: the depth, then its PIDs in increasing order."""
    depths = {}
    for depth, pid, _, _ in tree(text, started):
        depths.setdefault(depth, []).append(pid)
    return "".join(f"{d} {' '.join(map(str, sorted(depths[d])))}\n" for d in sorted(depths, reverse=True))
'''

# Level 0 of the other variants: one more lookup on the supervisor's line (appended to FIND).
FIND_EXTRA = r'''


def footprint(text, started=None):
    """`name rss` of the process that started at `started`."""
    pid = find(text, started).strip()
    lines = text.splitlines()
    col = lines[0].split()
    for line in lines[1:]:
        parts = line.split(None, len(col) - 1)
        if len(parts) == len(col) and parts[col.index("PID")] == pid:
            return parts[-1].split()[0].rsplit("/", 1)[-1] + " " + parts[col.index("RSS")] + "\n"
    return ""


def children(text, started=None):
    """The PIDs whose parent is the process that started at `started`, in increasing order."""
    pid = find(text, started).strip()
    lines = text.splitlines()
    col = lines[0].split()
    kids = [int(p[col.index("PID")]) for p in (line.split(None, len(col) - 1) for line in lines[1:])
            if len(p) == len(col) and p[col.index("PPID")] == pid]
    return "".join(f"{k}\n" for k in sorted(kids))
'''
VARIANT_REPORT = {"kill_plan": ("kill_plan", "find"), "memory_by_name": ("by_name", "footprint"),
                  "kill_waves": ("waves", "children")}


def reference(variant: str, level: int) -> tuple[str, str]:
    """(the reference program of a variant at a level, its report function); kill_plan's are today's texts."""
    report = VARIANT_REPORT[variant][level == 0]
    base = FIND if level == 0 else REFERENCE
    if variant == "kill_plan":
        return base, report
    core, main = base.split("\n\n\nif __name__")
    extra = FIND_EXTRA if level == 0 else EXTRA
    return core + extra + "\n\nif __name__" + main.replace("(find(" if level == 0 else "(kill_plan(", f"({report}("), report

EPOCH_LO, EPOCH_HI = 1_700_000_000, 1_760_000_000

SUPERVISORS = ["gunicorn", "php-fpm", "celery", "uwsgi", "puma", "node", "postgres", "httpd"]
WORKERS = {"gunicorn": ["gunicorn", "python3"], "php-fpm": ["php-fpm", "sh"], "celery": ["celery", "python3", "ffmpeg"],
           "uwsgi": ["uwsgi", "python3"], "puma": ["ruby", "puma"], "node": ["node", "esbuild", "sh"],
           "postgres": ["postgres"], "httpd": ["httpd", "rotatelogs"]}
ARGS = {"gunicorn": "app:wsgi --workers 4 --bind 0.0.0.0:8000", "python3": "-m worker --queue 12 --max-mem 512",
        "celery": "-A tasks worker --concurrency 8", "ffmpeg": "-i /srv/in/42.mov -vf scale=640:360 out.mp4",
        "php-fpm": "pool www", "sh": "-c /usr/local/bin/hook 7 3", "uwsgi": "--ini /etc/uwsgi/app.ini",
        "ruby": "/srv/app/bin/rails 3000", "puma": "5.6.7 (tcp://0.0.0.0:9292) [app]", "node": "/srv/app/server.js 80",
        "esbuild": "--service=0.19.2 --ping", "postgres": "checkpointer 5432", "httpd": "-DFOREGROUND",
        "rotatelogs": "/var/log/httpd/access 86400"}
SYSTEM = [(1, 0, "/sbin/init"), (2, 0, "[kthreadd]"), (412, 1, "/lib/systemd/systemd-journald"),
          (533, 1, "/usr/sbin/sshd -D"), (601, 1, "/usr/sbin/cron -f"), (655, 1, "/usr/sbin/rsyslogd -n")]
USERS = ["root", "www-data", "app", "postgres", "celery"]


def _stamp(t):
    return datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")


def _elapsed(sec):
    d, sec = divmod(sec, 86400)
    h, sec = divmod(sec, 3600)
    m, sec = divmod(sec, 60)
    return (f"{d}-{h:02d}:{m:02d}:{sec:02d}" if d else f"{h:02d}:{m:02d}:{sec:02d}" if h else f"{m:02d}:{sec:02d}")


def snapshot(rng, level, started, size, avoid=()):
    """ps text with the tree under the supervisor that started at `started` (the only process that did),
    decoy instances of the same supervisor and system processes; no other process starts at a time in
    `avoid` either."""
    used = {p for p, _, _ in SYSTEM}
    taken = {started, *avoid}
    sup = rng.choice(SUPERVISORS)
    now = started + rng.randrange(600, 5 * 86400)  # when the snapshot was taken
    boot = started - rng.randrange(3600, 30 * 86400)

    def fresh():
        for _ in range(10000):
            p = rng.randrange(700, 32768)
            if p not in used:
                used.add(p)
                return p
        raise FamilyError("process_kill_plan: no free PID left")

    def when(lo, hi):
        for _ in range(1000):
            t = rng.randrange(lo, max(lo + 2, hi))
            if t not in taken:
                return t
        raise FamilyError("process_kill_plan: no free start second left")

    start = {}
    rows = []
    for p, pp, cmd in SYSTEM:
        start[p] = boot if p < 400 else when(boot + 1, boot + 40)
        rows.append((p, pp, rng.choice(["Ss", "S", "Sl"]), rng.randrange(800, 20000), cmd))
    kw = rng.randrange(3, 60)
    start[kw] = when(boot + 1, now)
    rows.append((kw, 2, "I<", 0, f"[kworker/{rng.randrange(8)}:1H]"))

    def cmd_for(name, full):
        return (f"/usr/bin/{name}" if rng.random() < 0.5 else name) + (" " + ARGS.get(name, "") if full else "")

    full = level >= 2
    max_depth = 1 + min(level, 3)

    def grow(top, n):
        """A supervisor `top` (already in `start`) and n descendants."""
        rows.append((top, 1, "Ss", rng.randrange(20000, 90000), cmd_for(sup, full)))
        frontier = [(top, 0)]
        for _ in range(n):
            parent, depth = rng.choice(frontier)
            pid = fresh()
            start[pid] = when(start[parent] + rng.randrange(0, 3), min(now, start[parent] + rng.randrange(5, 7200)))
            name = rng.choice(WORKERS[sup])
            stat = rng.choice(["S", "S", "R", "Sl", "D"])
            if level >= 3 and rng.random() < 0.15:
                stat = "Z"
            rss = 0 if stat == "Z" else rng.choice([rng.randrange(1000, 400000), rng.randrange(1000, 400000),
                                                     rng.choice([65536, 131072])])
            rows.append((pid, parent, stat, rss, f"[{name}] <defunct>" if stat == "Z" else cmd_for(name, full)))
            if depth + 1 < max_depth and stat != "Z":
                frontier.append((pid, depth + 1))

    root = fresh()
    start[root] = started
    grow(root, size)
    # decoys: other instances of the same supervisor (a botched redeploy) with trees of a similar size, so
    # neither the program nor the size of its tree tells the runaway apart; and orphans reparented to init
    for _ in range(1 + level):
        other = fresh()
        start[other] = when(boot + 30, now - 60)
        grow(other, rng.randint(max(1, size // 2), size + 2))
    for _ in range(max(2, size // 4)):
        pid = fresh()
        start[pid] = when(boot + 30, now)
        rows.append((pid, 1, rng.choice(["S", "Sl"]), rng.randrange(1000, 300000),
                     cmd_for(rng.choice(WORKERS[sup]), full)))
    rng.shuffle(rows)
    if rng.random() < 0.5 or level < 3:
        rows.sort(key=lambda r: r[0])
    cols = ["PID", "PPID", "USER", "STAT", "RSS", "STARTED", "COMMAND"]
    if level >= 3:
        mid = ["PPID", "USER", "STAT", "RSS", "%CPU", "STARTED", "ELAPSED"]
        rng.shuffle(mid)
        cols = ["PID", *mid, "COMMAND"] if rng.random() < 0.5 else [mid[0], "PID", *mid[1:], "COMMAND"]
    widths = {"PID": 6, "PPID": 6, "USER": 9, "STAT": 5, "RSS": 8, "%CPU": 5, "STARTED": 19, "ELAPSED": 12}
    out = [" ".join(c.rjust(widths[c]) if c != "COMMAND" else c for c in cols)]
    for pid, ppid, stat, rss, cmd in rows:
        vals = {"PID": str(pid), "PPID": str(ppid), "USER": rng.choice(USERS), "STAT": stat, "RSS": str(rss),
                "%CPU": f"{rng.random() * 90:.1f}", "STARTED": _stamp(start[pid]),
                "ELAPSED": _elapsed(max(0, now - start[pid])), "COMMAND": cmd}
        out.append(" ".join(vals[c].rjust(widths[c]) if c != "COMMAND" else vals[c] for c in cols))
    return "\n".join(out) + "\n"


def alert_time(t: TaskBuilder, *texts: str, near: float = 0) -> int:
    """A start time (Unix seconds) that no visible text holds as a number (nor within ``near`` of one)."""
    return int(unseen(t, lambda: str(t.rng.randrange(EPOCH_LO, EPOCH_HI)), *texts, near=near))


@dataclass(frozen=True)
class Knobs:
    size: int  # descendants of the runaway supervisor


WHAT = "the start time of the runaway supervisor"
VARIANT_FORMAT = {
    "kill_plan": "one line per process in kill order as `PID name`, then a last line `TOTAL <n>` where n is the "
                 "sum of the RSS column (KiB) over the listed processes",
    "memory_by_name": "one line per program name in the tree as `name count rss` (how many of the listed processes "
                      "run it, and the sum of their RSS column, KiB), the largest rss first, then by name in byte "
                      "order; then a last line `TOTAL <n>` where n is the sum of RSS over all listed processes",
    "kill_waves": "one line per wave, in kill order, as `depth PID PID ...` (the wave's depth, then its PIDs in "
                  "increasing order, space-separated)"}
TITLE = {"kill_plan": "kill plan", "memory_by_name": "memory of the tree by program name", "kill_waves": "kill waves"}
PROGRAM_ASK = {"kill_plan": "the PID of", "memory_by_name": "`name rss` (the last path component of the first word "
               "of its COMMAND, and its RSS) of", "kill_waves": "the PIDs of the children (one per line, in "
               "increasing order) of"}
# Level 0: one lookup on the supervisor's line, as (the question, the output file, the shell after its PID).
ATOMIC = {
    "kill_plan": ("what is its PID?", "pid.txt", "| awk '{print $1}'"),
    "memory_by_name": ("write its program name (the last path component of the first word of its COMMAND) and "
                       "its RSS as `name rss`.", "footprint.txt",
                       "| awk '{n = $7; sub(\".*/\", \"\", n); print n, $5}'"),
    "kill_waves": ("write the PIDs of its children (the processes whose PPID is its PID), one per line in "
                   "increasing order.", "children.txt", "| awk '{print $1}' | { read -r p; awk -v p=\"$p\" "
                   "'NR > 1 && $2 == p {print $1}' /app/snapshot/ps.txt; } | sort -n")}


@register
class ProcessKillPlan(Family):
    name = "process_kill_plan"
    domain = "system_administration"
    skill_types = ("Resource Monitoring",)
    primitive_skills = ("process tree analysis", "ps output parsing", "memory accounting", "signal and kill ordering",
                        "zombie process handling", "sorting with tie-breaks")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol", "fuzz_equivalence")
    variants = ("kill_plan", "memory_by_name", "kill_waves")
    programs = {"Python": REFERENCE}
    levels = {0: Knobs(size=3), 1: Knobs(size=6), 2: Knobs(size=12), 3: Knobs(size=20), 4: Knobs(size=32)}

    def rules(self, level: int, variant: str = "kill_plan") -> tuple[str, str]:
        """(the rules as a bullet list, the report format): both cases state them alike."""
        rules = ["The runaway supervisor is the process whose start time (the STARTED column, a UTC date and "
                 "time) is the instant given above, which is in Unix time (seconds since 1970-01-01 00:00 UTC). "
                 "No other process started in that same second.",
                 "The processes to kill are that supervisor and all of its descendants (children, their children, "
                 "and so on, following the PPID column). Processes outside that tree are left alone, even when they "
                 "run the same program.",
                 "The name of a process is the last path component of the first word of its COMMAND "
                 "(`/usr/bin/python3 -m worker` is `python3`)."]
        if level >= 3:
            rules.append("Zombies (STAT beginning with `Z`) are already dead and are not listed or counted.")
            rules.append("Columns differ between snapshots: find them by the header line; COMMAND is always last "
                         "and may contain spaces.")
        fmt = VARIANT_FORMAT[variant]
        if variant == "kill_plan":
            rules.append("Kill order: deepest first (the supervisor is depth 0, its children depth 1, ...); at "
                         "equal depth the larger RSS first; then the smaller PID first.")
        elif variant == "kill_waves":
            rules.append("We kill in waves: first every process of the tree at the greatest depth (the supervisor "
                         "is depth 0, its children depth 1, ...), then every one a level shallower, and so on up to "
                         "the supervisor itself.")
        return "\n".join(f"- {r}" for r in rules), fmt

    def program_case(self, t: TaskBuilder) -> None:
        k, rng, level = t.knobs, t.rng, t.level
        for _ in range(self.variants.index(t.variant)):  # a seed's snapshots differ between the variants
            rng.random()
        if level == 0:
            return self._atomic_program(t)
        src, report = reference(t.variant, level)
        ns = run_python(src)
        rules_txt, fmt = self.rules(level, t.variant)
        # The worked examples are for a demo start time stated in the instruction: they show the format,
        # not the supervisor we want; the hidden inputs all hold ours (a day or more away from the demo).
        demo = rng.randrange(EPOCH_LO, EPOCH_HI)
        started = alert_time(t, str(demo), rules_txt, fmt, near=86400)
        cases = []
        for i in range(10):
            at, avoid = (demo, (started,)) if i < 2 else (started, (demo,))
            text = snapshot(rng, level, at, rng.randint(max(2, k.size // 2), k.size), avoid)
            cases.append((text, ns[report](text, str(at))))
        t.deliver(str(started), WHAT)
        t.say("We want a helper that plans how to take down a runaway process tree. It reads a `ps` snapshot "
              f"(a header line, then one process per line) on standard input and prints the {TITLE[t.variant]} for the "
              f"supervisor our memory alert reported, whose start time is given above.\n\n{rules_txt}\n\n"
              f"Output {fmt}. The worked examples are for a demo supervisor started at Unix time {demo}; your "
              "program must plan for ours.")
        t.expect_program("Hard-code the supervisor's start time.", cases, {"Python": src})
        t.solve('sed -i "s/@@VALUE@@/$V1/" /app/solution.py')

    def output_case(self, t: TaskBuilder) -> None:
        k, rng, level = t.knobs, t.rng, t.level
        for _ in range(self.variants.index(t.variant)):  # a seed's snapshot differs between the variants
            rng.random()
        src, report = reference(t.variant, level)
        ns = run_python(src)
        rules_txt, fmt = self.rules(level, t.variant)
        # The snapshot shows start times as dates only; it is redrawn (never, in practice) should a number in
        # it read as ours. (Its many integer columns make the full decodings of unseen() too slow to run at
        # build time; the channel-skip check runs them.)
        for _ in range(20):
            started = alert_time(t, rules_txt, fmt)
            text = snapshot(rng, level, started, k.size)
            if clear_of(started, visible_numbers(text), 0):
                break
        else:
            raise FamilyError(f"family {self.name}: every snapshot drawn shows the supervisor's start time")
        t.add_file("/app/snapshot/ps.txt", text)
        if level == 0:  # one lookup: the date of the delivered instant, then its line
            ask, out, tail = ATOMIC[t.variant]
            v = t.deliver(str(started), "a process start time")
            t.say("`/app/snapshot/ps.txt` is a `ps` snapshot; its STARTED column is a UTC date and time. Exactly one "
                  f"process started at the Unix time given above: {ask}"
                  + ("" if t.variant == "kill_plan" else f" Write it to `/app/out/{out}`."))
            t.solve(f'mkdir -p /app/out\ngrep -F " $(date -u -d "@{v}" +%Y-%m-%dT%H:%M:%S) " /app/snapshot/ps.txt '
                    f"{tail} > /app/out/{out}")
            t.expect_output(f"/app/out/{out}", ns[report](text, str(started)),
                            "the PID" if t.variant == "kill_plan" else "the answer")
            return
        truth = ns[report](text, str(started))
        v = t.deliver(str(started), WHAT)
        t.say("A supervisor process on one of our app servers ran away and is eating memory. Our memory alert "
              "identifies it by its start time (PIDs get recycled), given above. Before we pull the trigger I want "
              f"the exact {TITLE[t.variant]}. A `ps` snapshot taken at the time is `/app/snapshot/ps.txt`.\n\n{rules_txt}"
              f"\n\nReport format: {fmt}.")
        t.add_solution_file(f"{t.variant}.py", src)
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\n'
                f'python3 /solution/{t.variant}.py "{v}" < /app/snapshot/ps.txt > /app/out/{t.variant}.txt')
        t.expect_output(f"/app/out/{t.variant}.txt", truth, "the report")

    def _atomic_program(self, t: TaskBuilder) -> None:
        """Level 0 as a program: print the PID of the process that started at the hard-coded instant."""
        k, rng = t.knobs, t.rng
        src, report = reference(t.variant, 0)
        find = run_python(src)[report]
        demo = rng.randrange(EPOCH_LO, EPOCH_HI)
        started = alert_time(t, str(demo), near=86400)
        cases = []
        for i in range(10):
            at, avoid = (demo, (started,)) if i < 2 else (started, (demo,))
            text = snapshot(rng, 0, at, rng.randint(2, k.size), avoid)
            cases.append((text, find(text, str(at))))
        t.deliver(str(started), "a process start time")
        t.say("I want a helper that reads a `ps` snapshot (a header line, then one process per line; STARTED is a "
              f"UTC date and time) on standard input and prints {PROGRAM_ASK[t.variant]} the one process that "
              f"started at the Unix time given above. The worked examples are for a demo start time, Unix time {demo}.")
        t.expect_program("Hard-code the start time.", cases, {"Python": src})
        t.solve('sed -i "s/@@VALUE@@/$V1/" /app/solution.py')
