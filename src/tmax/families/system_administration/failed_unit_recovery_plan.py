"""How do we bring one host's failed services back? Two stages on the host's dump: replay its systemd
journal (`journalctl -o short-iso`) to find each unit's state at the end of the current boot and how long
its latest complete start took, then build the `systemctl start` transaction for the failed units from
the unit files (Requires=/Wants= pull in what is not running, After=/Before= order the jobs). Variants:
the start plan in order, the parallel start waves, and the second at which each unit is up when jobs run
in parallel (a critical path weighted by the journal's start times). Traps by level: failures followed by
a successful automatic restart, deliberately stopped units that get pulled in, a previous boot, restart
loops that hit the start limit, units without a unit file, descriptions that name other units,
repeated directives and drop-ins whose empty assignment resets a list.

The delivered value is the host's name; each dump sits under the first 16 hex digits of its SHA-256, so
the neighbour hosts' dumps are decoys without it."""

from __future__ import annotations

import datetime as dt
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.unseen import distinct, key_cmd, key_of, unseen

REFERENCE = r'''
import datetime
import heapq
import os
import re
import sys

STAGES = @STAGES@  # 1: the journal only; 2: and the unit files
VARIANT = "@VARIANT@"
DEFAULT = @DEFAULT@  # seconds a start takes when the journal shows no complete one
LINE = re.compile(r"^(\S+) \S+ systemd\[1\]: (.*)$")
EVENT = re.compile(r"^(?:(Starting|Started|Stopped) (\S+\.service) |(\S+\.service): Failed with result )")
LISTS = ("Requires", "Wants", "After", "Before")


def journal(text):
    """Stage 1: unit -> state at the end of the last boot, unit -> seconds its latest complete start
    took (any boot), unit -> (failures, time of the last one as logged)."""
    state, took, since, fails = {}, {}, {}, {}
    for line in text.splitlines():
        if line.startswith("-- Boot "):
            state, since = {}, {}
            continue
        m = LINE.match(line)
        e = EVENT.match(m.group(2)) if m else None
        if not e:
            continue
        when = datetime.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S%z")
        what, unit = (e.group(1), e.group(2)) if e.group(1) else ("Failed", e.group(3))
        if what == "Starting":
            since[unit] = when
            continue
        if what == "Started" and unit in since:
            took[unit] = int((when - since[unit]).total_seconds())
        since.pop(unit, None)
        state[unit] = {"Started": "active", "Stopped": "inactive", "Failed": "failed"}[what]
        if what == "Failed":
            fails[unit] = (fails.get(unit, (0, ""))[0] + 1, m.group(1))
    return state, took, fails


def parse(text, unit):
    """List directives accumulate over lines and files; an empty assignment resets the list."""
    for line in text.splitlines():
        s = line.strip()
        if not s or s[0] in "#;[" or "=" not in s:
            continue
        key, val = (x.strip() for x in s.split("=", 1))
        if key in LISTS:
            unit[key] = unit[key] + val.split() if val else []
    return unit


def load(root):
    units = {}
    for name in sorted(os.listdir(root)):
        if name.endswith(".service") and os.path.isfile(os.path.join(root, name)):
            with open(os.path.join(root, name)) as f:
                units[name] = parse(f.read(), {k: [] for k in LISTS})
    for name in sorted(os.listdir(root)):
        if name.endswith(".service.d") and name[:-2] in units:
            for conf in sorted(os.listdir(os.path.join(root, name))):
                if conf.endswith(".conf"):
                    with open(os.path.join(root, name, conf)) as f:
                        parse(f.read(), units[name[:-2]])
    return units


def plan(units, state, took):
    """Stage 2: the start jobs, their order, waves and the second each unit is up."""
    todo, seen, jobs = sorted(u for u in units if state.get(u) == "failed"), set(), {}
    while todo:
        u = todo.pop()
        if u in seen or u not in units:
            continue
        seen.add(u)
        if state.get(u) != "active":  # a running unit needs no job; what it pulls in still counts
            jobs[u] = "failed" if state.get(u) == "failed" else "pulled"
        todo += units[u]["Requires"] + units[u]["Wants"]
    names = sorted(jobs)
    edges = sorted({(a, b) for b in names for a in units[b]["After"] if a in jobs}
                   | {(a, b) for a in names for b in units[a]["Before"] if b in jobs})
    preds = {u: [a for a, b in edges if b == u] for u in names}
    indeg = {u: len(preds[u]) for u in names}
    heap, order = [u for u in names if not indeg[u]], []
    heapq.heapify(heap)
    while heap:
        u = heapq.heappop(heap)
        order.append(u)
        for a, b in edges:
            if a == u:
                indeg[b] -= 1
                if not indeg[b]:
                    heapq.heappush(heap, b)
    wave, up = {}, {}
    for u in order:
        wave[u] = 1 + max((wave[p] for p in preds[u]), default=0)
        up[u] = max((up[p] for p in preds[u]), default=0) + took.get(u, DEFAULT)
    if VARIANT == "plan":
        return [f"{i} {u} {jobs[u]}" for i, u in enumerate(order, 1)]
    if VARIANT == "waves":
        return [f"{wave[u]} {u}" for u in sorted(order, key=lambda u: (wave[u], u))]
    return [f"{u} {up[u]}" for u in sorted(order, key=lambda u: (up[u], u))]


def recover(host):
    with open(os.path.join(host, "journal.txt")) as f:
        state, took, fails = journal(f.read())
    if STAGES == 1:  # the failure summary alone
        col = {"plan": lambda u: "", "waves": lambda u: f" {fails[u][0]}", "timeline": lambda u: f" {fails[u][1]}"}
        rows = [u + col[VARIANT](u) for u in sorted(fails)]
    else:
        rows = plan(load(os.path.join(host, "units")), state, took)
    return "".join(r + "\n" for r in rows)


if __name__ == "__main__":
    sys.stdout.write(recover(sys.argv[1]))
'''

SERVICES = {"nginx": "Web frontend", "postgresql": "Primary database", "redis-server": "Session cache",
            "app-api": "Order API", "app-worker": "Background worker pool", "rabbitmq-server": "Message broker",
            "memcached": "Object cache", "node-exporter": "Metrics exporter", "fluent-bit": "Log shipper",
            "haproxy": "Load balancer", "keycloak": "Identity provider", "minio": "Object storage",
            "grafana-server": "Dashboards", "prometheus": "Metrics store", "consul": "Service discovery",
            "vault": "Secret store", "php-fpm": "PHP worker pool", "opensearch": "Search cluster node",
            "kafka": "Event stream broker", "zookeeper": "Coordination service", "mailer": "Outbound mail relay"}
CHATTER = ["listening on 0.0.0.0:8080", "connection reset by peer", "ready to accept connections", "reloaded config",
           "health check ok", "slow request took 2.3s", "worker 3 exited, respawning", "flushed 120 records"]
OUTPUTS = {"plan": "/app/out/recovery_plan.txt", "waves": "/app/out/start_waves.txt",
           "timeline": "/app/out/ready_times.txt"}


@dataclass(frozen=True)
class Knobs:
    stages: int  # 1: the journal only; 2: and the unit files
    units: int  # services on the host
    failed: int  # services down at the end
    boots: int  # boots in the journal (only the last says what runs)
    extra: bool  # Before=, repeated directives, deliberately stopped units, Requires= without ordering
    loops: bool  # restart loops that hit the start limit, units with no file, descriptions naming units
    dropins: bool  # drop-in overrides
    noise: int  # chatter lines
    decoys: int  # neighbour hosts built the same way


@register
class FailedUnitRecoveryPlan(Family):
    name = "failed_unit_recovery_plan"
    domain = "system_administration"
    skill_types = ("Service Management",)
    primitive_skills = ("journal replay", "service health checking", "systemd unit ordering",
                        "dependency graph traversal", "topological sorting with tie-breaks", "drop-in override merging",
                        "restart planning", "time window arithmetic")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("plan", "waves", "timeline")
    stages = ("service_downtime_report", "systemd_start_order")
    levels = {0: Knobs(stages=1, units=4, failed=2, boots=1, extra=False, loops=False, dropins=False, noise=8, decoys=2),
              1: Knobs(stages=2, units=6, failed=2, boots=1, extra=False, loops=False, dropins=False, noise=20, decoys=2),
              2: Knobs(stages=2, units=9, failed=2, boots=2, extra=True, loops=False, dropins=False, noise=50, decoys=3),
              3: Knobs(stages=2, units=12, failed=3, boots=2, extra=True, loops=True, dropins=False, noise=120, decoys=3),
              4: Knobs(stages=2, units=15, failed=4, boots=2, extra=True, loops=True, dropins=True, noise=250, decoys=3)}

    def _units(self, t, units):
        """Unit files (name -> text) whose ordering edges only point back along the list: no cycles."""
        k, rng = t.knobs, t.rng
        files = {}
        for i, u in enumerate(units):
            earlier, later = units[:i], units[i + 1:]
            req = rng.sample(earlier, min(len(earlier), rng.randint(0, 2)))
            want = rng.sample(earlier, min(len(earlier), rng.randint(0, 1)))
            after = [x for x in earlier if x in req + want and (not k.extra or rng.random() < 0.85)]
            after += [x for x in rng.sample(earlier, min(len(earlier), 1)) if x not in after]
            lines = [f"Description={SERVICES[u[:-8]]}"]
            if after and k.extra and len(after) > 1 and rng.random() < 0.5:  # one directive over two lines
                lines += [f"After=network-online.target {after[0]}", "After=" + " ".join(after[1:])]
            elif after:
                lines.append("After=network-online.target " + " ".join(after))
            if req:
                lines.append("Requires=" + " ".join(req))
            if want:
                lines.append("Wants=" + " ".join(want))
            if k.loops and rng.random() < 0.15:
                lines.append(f"Wants={rng.choice(['backup-agent', 'licensed', 'old-exporter'])}.service")
            if k.extra and later and rng.random() < 0.25:
                lines.append(f"Before={rng.choice(later)}")
            rng.shuffle(lines)
            files[f"units/{u}"] = "\n".join(["[Unit]", *lines, "", "[Service]", f"ExecStart=/usr/bin/{u[:-8]}",
                                              "Restart=on-failure", "", "[Install]", "WantedBy=multi-user.target"]) + "\n"
        if k.dropins:
            for u in rng.sample(units[2:], 2):
                earlier = units[:units.index(u)]
                files[f"units/{u}.d/override.conf"] = (
                    f"[Unit]\nAfter=\nAfter={rng.choice(earlier)}\n" if rng.random() < 0.6 else
                    f"[Unit]\nWants={rng.choice(earlier)}\n")
        return files

    def _journal(self, t, units, files):
        """The journal text: a previous boot, then the current one with the episodes that leave the
        failed units down and the stopped ones stopped."""
        k, rng = t.knobs, t.rng
        host = rng.choice(["web01", "app02", "db03", "ops04"])
        lines: list[tuple[int, str]] = []
        deps = sorted({d for u in units for line in files[f"units/{u}"].splitlines()
                       if line.startswith(("Requires=", "Wants=")) for d in line.split("=", 1)[1].split()} & set(units))
        failed = rng.sample(units[len(units) // 2:], k.failed)
        quiet = [u for u in deps if u not in failed]
        # Dependencies left down, so the recovery must pull them in: some the current boot never started,
        # some stopped by hand.
        never = rng.sample(quiet, min(len(quiet), rng.randint(1, 1 + k.failed // 2))) if k.stages > 1 else []
        stopped = rng.sample([u for u in quiet if u not in never],
                             min(len(quiet) - len(never), rng.randint(1, k.failed))) if k.extra else []

        descs = {u: SERVICES[u[:-8]] + (f" (after {rng.choice(units)})" if k.loops and rng.random() < 0.2 else "")
                 for u in units}  # a description that names another unit: the unit is the first name

        def desc(u):
            return descs[u]

        def sd(at, msg):
            lines.append((at, f"systemd[1]: {msg}"))

        def start(at, u, ok=True):
            sd(at, f"Starting {u} - {desc(u)}...")
            dur = rng.randint(1, 40)
            if ok:
                sd(at + dur, f"Started {u} - {desc(u)}.")
            else:
                fail(at + dur, u)
            return at + dur

        def fail(at, u, result="exit-code"):
            sd(at, f"{u}: Main process exited, code=exited, status={rng.randint(1, 3)}/FAILURE")
            sd(at, f"{u}: Failed with result '{result}'.")

        def bounce(at, u, ok):  # an automatic restart after a crash
            fail(at, u)
            sd(at + 1, f"{u}: Scheduled restart job, restart counter is at 1.")
            sd(at + 1, f"Stopped {u} - {desc(u)}.")
            return start(at + 2, u, ok)

        base = 0
        for boot in range(k.boots):
            current = boot == k.boots - 1
            if boot:
                lines.append((base, f"-- Boot {rng.getrandbits(128):032x} --"))
            at = base + 1
            for u in units:
                if not (current and u in never):
                    at = start(at, u) + rng.randint(0, 2)
            sd(at + 1, "Reached target multi-user.target - Multi-User System.")
            slots = sorted(rng.sample(range(4, 80), 3 * len(units)))
            for u in units:
                mine = [base + 300 * slots.pop(rng.randrange(len(slots))) for _ in range(2)]
                mine.sort()
                if not current or (k.stages > 1 and u not in failed + stopped + never and rng.random() < 0.3):
                    if rng.random() < 0.5:
                        bounce(mine[0], u, True)  # a crash it recovered from: still running
                if not current:
                    continue
                if u in failed:
                    if k.stages == 1 and rng.random() < 0.6:
                        bounce(mine[0], u, True)
                    if k.loops and rng.random() < 0.5:
                        at = mine[1]
                        for n in range(1, 4):
                            fail(at, u)
                            sd(at + 1, f"{u}: Scheduled restart job, restart counter is at {n}.")
                            sd(at + 1, f"Stopped {u} - {desc(u)}.")
                            sd(at + 2, f"Starting {u} - {desc(u)}...")
                            at += 3
                        sd(at, f"{u}: Start request repeated too quickly.")
                        fail(at, u, "start-limit-hit")
                        sd(at, f"Failed to start {u} - {desc(u)}.")
                    elif k.stages > 1 and rng.random() < 0.5:
                        bounce(mine[1], u, False)
                    else:
                        fail(mine[1], u)
                elif u in stopped:
                    sd(mine[1], f"Stopping {u} - {desc(u)}...")
                    sd(mine[1] + 2, f"{u}: Deactivated successfully.")
                    sd(mine[1] + 2, f"Stopped {u} - {desc(u)}.")
                elif u not in never and k.extra and rng.random() < 0.3:  # an admin restart: a newer start time
                    sd(mine[1], f"Stopping {u} - {desc(u)}...")
                    sd(mine[1] + 1, f"Stopped {u} - {desc(u)}.")
                    start(mine[1] + 2, u)
            if k.loops and current:  # a failed unit that is none of ours (no unit file)
                fail(base + 300 * slots[0] + 7, rng.choice(["fwupd-refresh.service", "apt-daily.service"]))
            for _ in range(k.noise):
                at, name = base + rng.randrange(60, 80 * 300), rng.choice(units)[:-8]
                lines.append((at, f"{name}[{rng.randrange(300, 9999)}]: {rng.choice(CHATTER)}"))
            base += 30 * 3600
        start_at = dt.datetime(2026, rng.randrange(1, 13), rng.randrange(1, 28), rng.randrange(24),
                               tzinfo=dt.timezone.utc)
        out = []
        for at, msg in sorted(lines, key=lambda x: x[0]):  # stable: a second's lines keep their order
            out.append(msg if msg.startswith("-- Boot") else
                       f"{start_at + dt.timedelta(seconds=at):%Y-%m-%dT%H:%M:%S+0000} {host} {msg}")
        return "\n".join(out) + "\n"

    def _host(self, t):
        k, rng = t.knobs, t.rng
        units = [u + ".service" for u in rng.sample(sorted(SERVICES), k.units)]
        files = self._units(t, units) if k.stages > 1 else {f"units/{u}": "" for u in units}
        files["journal.txt"] = self._journal(t, units, files)
        return files if k.stages > 1 else {"journal.txt": files["journal.txt"]}

    def output_case(self, t: TaskBuilder) -> None:
        k, rng, v = t.knobs, t.rng, t.variant
        default = rng.choice([5, 10, 15, 20])
        src = fill(REFERENCE, STAGES=k.stages, VARIANT=v, DEFAULT=default)
        plan_src = fill(REFERENCE, STAGES=k.stages, VARIANT="plan", DEFAULT=default)
        # The target host is redrawn until its recovery pulls in more than the failed units themselves.
        for _ in range(40):
            target = self._host(t)
            rows = self._truth(plan_src, target).splitlines()
            if rows and (k.stages == 1 or any(r.endswith(" pulled") for r in rows)):
                break
        else:
            raise FamilyError(f"{self.name}: no host whose recovery pulls in a dependency in 40 draws")
        with_files = [target] + [self._host(t) for _ in range(k.decoys)]
        name = unseen(t, lambda: t.code(2), *(x for files in with_files for x in files.values()))
        keys = [key_of(n) for n in [name, *distinct(lambda: t.code(2), k.decoys, [name])]]
        for i in sorted(range(len(keys)), key=lambda i: keys[i]):  # on disk in key order: the target hides
            for path, text in with_files[i].items():
                t.add_file(f"/app/hosts/{keys[i]}/{path}", text)
        truth = self._truth(src, target)
        t.say("Our fleet collector dumped each host into `/app/hosts/<KEY>/`, where KEY is the first 16 hex digits "
              "of the SHA-256 of the host's name (`printf %s <name> | sha256sum`). The host I mean is named below.")
        who = t.deliver(name, "the host's name")
        out = OUTPUTS[v]
        t.say(self._text(k, v, default, out))
        t.add_solution_file("recover.py", src)
        t.solve(f'test -n "{who}"\nmkdir -p /app/out\npython3 /solution/recover.py "/app/hosts/{key_cmd(who)}" '
                f"> {out}")
        t.expect_output(out, truth, "the result")

    @staticmethod
    def _truth(src, files):
        """Run the reference on the host's files, written out as the oracle will see them."""
        with tempfile.TemporaryDirectory(prefix="tmax-ref-") as d:
            for path, text in files.items():
                (Path(d) / path).parent.mkdir(parents=True, exist_ok=True)
                (Path(d) / path).write_text(text)
            return run_python(src)["recover"](d)

    @staticmethod
    def _text(k, v, default, out):
        if k.stages == 1:
            ask = {"plan": "Which units failed at some point? Write one unit name per line",
                   "waves": "How often did each unit fail? Write one line per unit that failed, `<unit> <failures>`",
                   "timeline": "When did each unit fail last? Write one line per unit that failed, `<unit> <time>` "
                               "with the time exactly as the journal prints it"}[v]
            return ("`journal.txt` there is the host's `journalctl -o short-iso` output. A failure is a `<unit>: "
                    f"Failed with result '...'.` line from systemd. {ask} to `{out}`, sorted by unit name.")
        parts = ["`journal.txt` there is the host's `journalctl -o short-iso` output"
                 + (", covering several boots (a `-- Boot <id> --` line starts each new one)" if k.boots > 1 else "")
                 + ", and `units/` holds its service unit files (systemd syntax). First, find the state of every unit "
                 "at the end of the " + ("current (last) boot" if k.boots > 1 else "journal") + " from systemd's "
                 "lines: `Started <unit> - ...` means running, `Stopped <unit> - ...` stopped, and `<unit>: Failed "
                 "with result '...'.` failed; the last of them counts, and a unit "
                 + ("the current boot never started" if k.boots > 1 else "never started") + " is not running. "
                 "The units to recover are the failed ones" + (" that have a unit file in `units/`" if k.loops else "")
                 + ".",
                 "Then build the recovery as one `systemctl start` of all of them: the transaction takes in, "
                 "repeatedly, every unit named in `Requires=` or `Wants=` of a unit already in it (names without a "
                 "unit file are ignored). A unit that is running needs no start job (what it pulls in still counts); "
                 "every other unit in the transaction gets one. Jobs are ordered by `After=` and `Before=` between "
                 "two units that both have a job: `After=X` in A means X's job finishes before A's starts, "
                 "`Before=X` in A the reverse."
                 + (" A directive can appear on several lines; its lists add up." if k.extra else "")
                 + (" Drop-ins `units/<unit>.d/*.conf` apply after the unit file, in file name order; an empty "
                    "assignment such as `After=` clears that list so far." if k.dropins else "")]
        if v == "plan":
            parts.append(f"Write `{out}`: one line per start job in start order, `<step> <unit> <why>`, steps from 1, "
                         "why `failed` for a unit to recover and `pulled` for one the transaction took in. Start "
                         "order: repeatedly the job with the smallest unit name (byte order) among those whose "
                         "predecessors (the jobs ordered before it) have all started.")
        elif v == "waves":
            parts.append(f"Jobs start in waves: a job with no job ordered before it is in wave 1, any other in the "
                         f"wave after the latest wave among the jobs ordered before it. Write `{out}`: one line per job, "
                         "`<wave> <unit>`, sorted by wave, then unit name (byte order).")
        else:
            parts.append("Jobs run in parallel from second 0, each as soon as every job ordered before it is up. A job "
                         "takes as long as the unit's most recent complete start in the journal (from a `Starting "
                         "<unit> - ...` line to the next `Started <unit> - ...` line, in any boot, in whole seconds; a "
                         f"start attempt that failed does not count), or {default} seconds if the journal shows none. "
                         f"Write `{out}`: one line per job, `<unit> <second it is up>`, sorted by that second, then "
                         "unit name (byte order).")
        return "\n\n".join(parts)
