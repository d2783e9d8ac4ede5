"""A runaway supervisor must go, with everything it spawned: from a ps snapshot, walk the process tree
under the given PID, leave out zombies (they cannot be killed), order the kills deepest first (then by
RSS, then PID) and total the memory freed. Decoys share command names outside the tree, orphans were
reparented to init, columns move around and commands carry arguments at higher levels."""

from __future__ import annotations

from tmax.families.base import Family, TaskBuilder, register

REFERENCE = r'''
import sys

ROOT = "@@VALUE@@"


def kill_plan(text, root=None):
    root = int(root or ROOT)
    lines = [line for line in text.splitlines() if line.strip()]
    header = lines[0].split()
    col = {{h: i for i, h in enumerate(header)}}
    procs, children = {{}}, {{}}
    for line in lines[1:]:
        parts = line.split(None, len(header) - 1)
        if len(parts) < len(header):
            continue
        pid, ppid = int(parts[col["PID"]]), int(parts[col["PPID"]])
        cmd = parts[col["COMMAND"]]
        name = cmd.split()[0].rsplit("/", 1)[-1]
        procs[pid] = (ppid, int(parts[col["RSS"]]), parts[col["STAT"]], name)
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
    out = "".join(f"{{pid}} {{name}}\n" for _, _, pid, name, _ in rows)
    return out + f"TOTAL {{sum(r[4] for r in rows)}}\n"


if __name__ == "__main__":
    sys.stdout.write(kill_plan(sys.stdin.read(), sys.argv[1] if len(sys.argv) > 1 else None))
'''

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


def snapshot(rng, level, root, size):
    """ps text with the tree under `root` (its PID fixed), decoys and system processes."""
    used = {p for p, _, _ in SYSTEM} | {root}
    sup = rng.choice(SUPERVISORS)

    def fresh():
        while True:
            p = rng.randrange(700, 32768)
            if p not in used:
                used.add(p)
                return p

    rows = [(p, pp, rng.choice(["Ss", "S", "Sl"]), rng.randrange(800, 20000), cmd) for p, pp, cmd in SYSTEM]
    rows.append((rng.randrange(3, 60), 2, "I<", 0, f"[kworker/{rng.randrange(8)}:1H]"))

    def cmd_for(name, full):
        return (f"/usr/bin/{name}" if rng.random() < 0.5 else name) + (" " + ARGS.get(name, "") if full else "")

    full = level >= 2
    rows.append((root, 1, "Ss", rng.randrange(20000, 90000), cmd_for(sup, full)))
    frontier = [(root, 0)]
    max_depth = 1 + min(level, 3)
    for _ in range(size):
        parent, depth = rng.choice(frontier)
        pid = fresh()
        name = rng.choice(WORKERS[sup])
        stat = rng.choice(["S", "S", "R", "Sl", "D"])
        if level >= 3 and rng.random() < 0.15:
            stat = "Z"
        rss = 0 if stat == "Z" else rng.choice([rng.randrange(1000, 400000), rng.randrange(1000, 400000),
                                                 rng.choice([65536, 131072])])
        rows.append((pid, parent, stat, rss, f"[{name}] <defunct>" if stat == "Z" else cmd_for(name, full)))
        if depth + 1 < max_depth and stat != "Z":
            frontier.append((pid, depth + 1))
    # decoys: another instance of the same supervisor with workers, and orphans reparented to init
    other = fresh()
    rows.append((other, 1, "Ss", rng.randrange(20000, 90000), cmd_for(sup, full)))
    for _ in range(max(2, size // 3)):
        rows.append((fresh(), rng.choice([other, 1, 1]) if level >= 2 else other, rng.choice(["S", "Sl"]),
                     rng.randrange(1000, 300000), cmd_for(rng.choice(WORKERS[sup]), full)))
    rng.shuffle(rows)
    if rng.random() < 0.5 or level < 3:
        rows.sort(key=lambda r: r[0])
    cols = ["PID", "PPID", "USER", "STAT", "RSS", "COMMAND"]
    if level >= 3:
        mid = ["PPID", "USER", "STAT", "RSS", "%CPU", "ELAPSED"]
        rng.shuffle(mid)
        cols = ["PID", *mid, "COMMAND"] if rng.random() < 0.5 else [mid[0], "PID", *mid[1:], "COMMAND"]
    widths = {"PID": 6, "PPID": 6, "USER": 9, "STAT": 5, "RSS": 8, "%CPU": 5, "ELAPSED": 12}
    out = [" ".join(c.rjust(widths[c]) if c != "COMMAND" else c for c in cols)]
    for pid, ppid, stat, rss, cmd in rows:
        vals = {"PID": str(pid), "PPID": str(ppid), "USER": rng.choice(USERS), "STAT": stat, "RSS": str(rss),
                "%CPU": f"{rng.random() * 90:.1f}",
                "ELAPSED": rng.choice([f"{rng.randrange(60):02d}:{rng.randrange(60):02d}",
                                       f"{rng.randrange(1, 30)}-{rng.randrange(24):02d}:{rng.randrange(60):02d}:"
                                       f"{rng.randrange(60):02d}"]),
                "COMMAND": cmd}
        out.append(" ".join(vals[c].rjust(widths[c]) if c != "COMMAND" else vals[c] for c in cols))
    return "\n".join(out) + "\n"


@register
class ProcessKillPlan(Family):
    name = "process_kill_plan"
    domain = "system_administration"
    skill_types = ("Resource Monitoring",)
    primitive_skills = ("process tree analysis", "ps output parsing", "memory accounting", "signal and kill ordering",
                        "zombie process handling", "sorting with tie-breaks")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol", "fuzz_equivalence")
    programs = {"Python": REFERENCE}
    levels = {1: {"size": 6}, 2: {"size": 12}, 3: {"size": 20}, 4: {"size": 32}}

    def build(self, t: TaskBuilder) -> None:
        k, rng, level = t.knobs, t.rng, t.level
        root = rng.randrange(1000, 30000)
        ns: dict = {}
        exec(REFERENCE.format().replace("@@VALUE@@", str(root)), ns)  # noqa: S102 - our own reference program
        ref_src = REFERENCE.format()
        rules = ["The processes to kill are the given PID and all of its descendants (children, their children, and "
                 "so on, following the PPID column). Processes outside that tree are left alone, even when they run "
                 "the same program.",
                 "The name of a process is the last path component of the first word of its COMMAND "
                 "(`/usr/bin/python3 -m worker` is `python3`)."]
        if level >= 3:
            rules.append("Zombies (STAT beginning with `Z`) are already dead and are not listed or counted.")
            rules.append("Columns differ between snapshots: find them by the header line; COMMAND is always last "
                         "and may contain spaces.")
        rules.append("Kill order: deepest first (the given PID is depth 0, its children depth 1, ...); at equal depth "
                     "the larger RSS first; then the smaller PID first.")
        rules_txt = "\n".join(f"- {r}" for r in rules)
        fmt = ("one line per process in kill order as `PID name`, then a last line `TOTAL <n>` where n is the sum "
               "of the RSS column (KiB) over the listed processes")
        if t.axes.verifier == "fuzz_equivalence":
            t.deliver(str(root), "the PID of the runaway supervisor")
            cases = []
            for _ in range(10):
                text = snapshot(rng, level, root, rng.randint(max(2, k["size"] // 2), k["size"]))
                cases.append((text, ns["kill_plan"](text)))
            t.say("We want a helper that plans how to take down a runaway process tree. It reads a `ps` snapshot "
                  "(a header line, then one process per line) on standard input and prints the kill plan for the "
                  f"supervisor whose PID is given above.\n\n{rules_txt}\n\nOutput {fmt}.")
            t.expect_program("Hard-code the supervisor PID.", cases, {"Python": ref_src})
            t.solve('sed -i "s/@@VALUE@@/$V1/" /app/solution.py')
            return
        text = snapshot(rng, level, root, k["size"])
        t.add_file("/app/snapshot/ps.txt", text)
        truth = ns["kill_plan"](text)
        v = t.deliver(str(root), "the PID of the runaway supervisor")
        t.say("A supervisor process on one of our app servers ran away and is eating memory; its PID is given above. "
              "Before we pull the trigger I want the exact kill plan. A `ps` snapshot taken at the time is "
              f"`/app/snapshot/ps.txt`.\n\n{rules_txt}\n\nReport format: {fmt}.")
        t.add_solution_file("kill_plan.py", ref_src)
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\n'
                f'python3 /solution/kill_plan.py "{v}" < /app/snapshot/ps.txt > /app/out/kill_plan.txt')
        t.expect_output("/app/out/kill_plan.txt", truth, "the report")
