"""In what order does a boot target start its units, and what does one failing unit take down? Build the
transaction from Requires=/Wants= and enabled [Install] sections, order it by After=/Before= (ties by
name), and propagate a failure through Requires= (not Wants=). Higher levels add RequiredBy=, repeated
and empty-reset directives, drop-in overrides, units referenced but missing, and unrelated units.
Variants: start_order (the job-by-job start order with each unit's result when one unit fails),
start_rounds (the rounds of units systemd starts in parallel) and stop_cascade (the stop jobs, in stop
order, when one running unit is stopped and its Requires= dependents go down with it).

The failing unit is named in the instruction (unit names are all visible anyway); the delivered value is
the transaction's first job ID (5 digits: shorter numbers turn up by chance in the decodings of a binary
channel), from which every line's job is numbered in start order."""

from __future__ import annotations

from dataclasses import dataclass

from tmax.families.base import CODE_WORDS, Family, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.unseen import unseen

CORE = r'''
import heapq
import os
import sys

TARGET = "@TARGET@"
FAILED = "@FAILED@"
FIRST_JOB = "@@VALUE@@"
LISTS = ("Requires", "Wants", "After", "Before", "WantedBy", "RequiredBy")


def parse(texts, into=None):
    """Merge unit file text(s) in order: list directives accumulate, an empty assignment resets."""
    unit = into if into is not None else {k: [] for k in LISTS}
    for text in texts:
        for line in text.splitlines():
            s = line.strip()
            if not s or s[0] in "#;" or s.startswith("[") or "=" not in s:
                continue
            key, val = s.split("=", 1)
            key = key.strip()
            if key not in LISTS:
                continue
            if not val.strip():
                unit[key] = []
            else:
                unit[key].extend(val.split())
    return unit


def plan(units, first_job=None, failed=None):
    """units: name -> merged directives. Returns the report text."""
    first_job = int(first_job or FIRST_JOB)
    failed = failed or FAILED
    requires = {n: list(u["Requires"]) for n, u in units.items()}
    wants = {n: list(u["Wants"]) for n, u in units.items()}
    for n in sorted(units):
        for other in units[n]["WantedBy"]:
            if other in units:
                wants[other].append(n)
        for other in units[n]["RequiredBy"]:
            if other in units:
                requires[other].append(n)
    trans, todo = [], [TARGET]
    while todo:
        n = todo.pop()
        if n in trans or n not in units:
            continue
        trans.append(n)
        todo.extend(requires[n] + wants[n])
    trans.sort()
    inset = set(trans)
    before = {n: [] for n in trans}  # n -> units that must start after n
    indeg = {n: 0 for n in trans}
    edges = []
    for n in trans:
        for x in units[n]["After"]:
            if x in inset:
                edges.append((x, n))
        for x in units[n]["Before"]:
            if x in inset:
                edges.append((n, x))
    for a, b in sorted(set(edges)):
        before[a].append(b)
        indeg[b] += 1
    heap = [n for n in trans if indeg[n] == 0]
    heapq.heapify(heap)
    order = []
    while heap:
        n = heapq.heappop(heap)
        order.append(n)
        for b in before[n]:
            indeg[b] -= 1
            if indeg[b] == 0:
                heapq.heappush(heap, b)
    bad = {failed: "failed"} if failed in inset else {}
    changed = True
    while changed:
        changed = False
        for n in trans:
            if n not in bad and any(r not in inset or r in bad for r in requires[n]):
                bad[n] = "dependency"
                changed = True
    return "".join(f"{first_job + i} {n} {bad.get(n, 'started')}\n" for i, n in enumerate(order))


def load(root):
    units = {}
    for name in sorted(os.listdir(root)):
        path = os.path.join(root, name)
        if os.path.isfile(path) and (name.endswith(".service") or name.endswith(".target")):
            with open(path) as f:
                units[name] = parse([f.read()])
    for name in sorted(os.listdir(root)):
        path = os.path.join(root, name)
        if os.path.isdir(path) and name.endswith(".d") and name[:-2] in units:
            for conf in sorted(os.listdir(path)):
                if conf.endswith(".conf"):
                    with open(os.path.join(path, conf)) as f:
                        parse([f.read()], units[name[:-2]])
    return units
'''

MAIN = r'''

if __name__ == "__main__":
    sys.stdout.write(@REPORT@(load(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else None))
'''

# The other variants' reports, built on plan()'s start order (appended to CORE before MAIN).
EXTRA = r'''


def rounds(units, first_job=None):
    """One line per round of parallel starts: a unit starts in the round after its last ordering predecessor's."""
    first_job = int(first_job or FIRST_JOB)
    order = [line.split()[1] for line in plan(units, "0", "-").splitlines()]
    inset = set(order)
    preds = {n: [] for n in order}
    for n in order:
        preds[n] += [x for x in units[n]["After"] if x in inset]
        for x in units[n]["Before"]:
            if x in inset:
                preds[x].append(n)
    depth = {}
    for n in order:  # a topological order: every predecessor already has its round
        depth[n] = 1 + max([depth[p] for p in preds[n]] or [-1])
    out, job = [], first_job
    for r in range(max(depth.values()) + 1 if depth else 0):
        names = sorted(n for n in order if depth[n] == r)
        out.append(f"{job} {' '.join(names)}\n")
        job += len(names)
    return "".join(out)


def stops(units, first_job=None, stopped=None):
    """Stop jobs when FAILED is stopped on the running host: it and its Requires= dependents, reverse start order."""
    first_job = int(first_job or FIRST_JOB)
    stopped = stopped or FAILED
    order = [line.split()[1] for line in plan(units, "0", "-").splitlines()]
    requires = {n: list(u["Requires"]) for n, u in units.items()}
    for n in sorted(units):
        for other in units[n]["RequiredBy"]:
            if other in units:
                requires[other].append(n)
    down = {stopped} if stopped in order else set()
    changed = True
    while changed:
        changed = False
        for n in order:
            if n not in down and any(r in down for r in requires[n]):
                down.add(n)
                changed = True
    return "".join(f"{first_job + i} {n}\n" for i, n in enumerate(n for n in reversed(order) if n in down))
'''

REFERENCE = CORE + MAIN
VARIANT_REPORT = {"start_order": "plan", "start_rounds": "rounds", "stop_cascade": "stops"}


def reference(variant: str) -> str:
    """The reference program template of a variant (start_order's text is today's, unchanged)."""
    return CORE + ("" if variant == "start_order" else EXTRA) + MAIN

SYSTEM = ["local-fs.target", "network-online.target", "time-sync.target", "remote-fs.target"]
DESCR = ["API gateway", "job queue worker", "metrics exporter", "cache warmer", "log shipper", "mail relay",
         "search indexer", "session store", "report builder", "backup agent", "license server", "web frontend"]


def _fmt_unit(rng, d, descr, kind):
    """Render directives d (key -> list of lists: each inner list one directive line) as a unit file."""
    unit = [f"Description={descr}"]
    for key in ("Requires", "Wants", "After", "Before"):
        for vals in d.get(key, []):
            unit.append(f"{key}={' '.join(vals)}")
    rng.shuffle(unit)
    lines = ["[Unit]", *unit, ""]
    if kind == "service":
        lines += ["[Service]", f"ExecStart=/usr/local/bin/{descr.split()[0].lower()}d --serve",
                  f"Restart={rng.choice(['on-failure', 'always', 'no'])}", ""]
    inst = [f"{key}={' '.join(vals)}" for key in ("WantedBy", "RequiredBy") for vals in d.get(key, [])]
    if inst:
        lines += ["[Install]", *inst, ""]
    return "\n".join(lines)


@dataclass(frozen=True)
class Knobs:
    services: int  # services of the application
    extra: bool  # [Install] sections, repeated directives, Before=
    dropins: bool  # drop-in overrides
    missing: bool  # units referenced but not on disk
    unrelated: int  # units on disk that nothing pulls in


@register
class SystemdStartOrder(Family):
    name = "systemd_start_order"
    domain = "system_administration"
    skill_types = ("Service Management",)
    primitive_skills = ("systemd unit ordering", "dependency graph traversal", "topological sorting with tie-breaks",
                        "failure propagation", "drop-in override merging")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("start_order", "start_rounds", "stop_cascade")
    levels = {0: Knobs(services=3, extra=False, dropins=False, missing=False, unrelated=0),
              1: Knobs(services=5, extra=False, dropins=False, missing=False, unrelated=0),
              2: Knobs(services=8, extra=True, dropins=False, missing=False, unrelated=1),
              3: Knobs(services=11, extra=True, dropins=False, missing=True, unrelated=2),
              4: Knobs(services=14, extra=True, dropins=True, missing=True, unrelated=3)}

    def output_case(self, t: TaskBuilder) -> None:
        k, rng = t.knobs, t.rng
        for _ in range(self.variants.index(t.variant)):  # a seed's unit files differ between the variants
            rng.random()
        target = rng.choice(["multi-user.target", "graphical.target", "app-stack.target"])
        words = rng.sample(CODE_WORDS, k.services + k.unrelated + 1)
        services = [w.lower() + ".service" for w in words[:k.services]]
        unrelated = [w.lower() + ".service" for w in words[k.services:-1]]
        ghost = words[-1].lower() + ".service"  # referenced, never defined
        systems = rng.sample(SYSTEM, 2 + k.extra)
        # A hidden rank keeps ordering edges acyclic: edges only go from lower rank to higher rank.
        ranked = systems + services
        rng.shuffle(ranked)
        ranked = [u for u in ranked if u in systems] + [u for u in ranked if u not in systems] \
            if rng.random() < 0.5 else ranked
        rank = {u: i for i, u in enumerate(ranked)}
        d: dict = {u: {} for u in [target, *ranked, *unrelated]}

        def add(u, key, vals):
            d[u].setdefault(key, []).append(list(vals))

        for u in ranked:
            earlier = [x for x in ranked if rank[x] < rank[u]]
            later = [x for x in ranked if rank[x] > rank[u]]
            if earlier:
                after = rng.sample(earlier, min(len(earlier), rng.randint(0, 3)))
                if after:
                    if k.extra and len(after) > 1 and rng.random() < 0.5:
                        add(u, "After", after[:1])
                        add(u, "After", after[1:])
                    else:
                        add(u, "After", after)
                if u in services:
                    req = [x for x in rng.sample(earlier, min(len(earlier), rng.randint(0, 2)))]
                    if req:
                        add(u, "Requires", req)
                    # a Requires= without ordering, towards a later unit
                    if later and rng.random() < 0.2:
                        add(u, "Requires", [rng.choice([x for x in later if x in services] or later)])
            if later and k.extra and rng.random() < 0.25:
                add(u, "Before", [rng.choice(later)])
        # How units join the target: directly from the target, via [Install], or only as a dependency.
        tgt_wants, tgt_req = [], []
        for u in services:
            r = rng.random()
            if r < 0.35:
                tgt_wants.append(u)
            elif r < 0.55 and k.extra:
                add(u, "RequiredBy" if rng.random() < 0.3 else "WantedBy", [target])
            elif r < 0.65:
                tgt_req.append(u)
            elif rng.random() < 0.3:
                add(u, "Wants", [rng.choice(services)])
        pulled = [services[0]]
        if tgt_wants or pulled:
            add(target, "Wants", sorted(set(tgt_wants + pulled)))
        if tgt_req:
            add(target, "Requires", tgt_req)
        add(target, "After", sorted(rng.sample(ranked, min(3, len(ranked)))))
        if k.missing:
            add(rng.choice(services), "Requires", [ghost])
            add(rng.choice(services), "Wants", [words[-1].lower() + "-helper.service"])
        for u in unrelated:  # present on disk, pulled in by nothing (their WantedBy names another target)
            add(u, "After", [rng.choice(ranked)])
            add(u, "WantedBy", ["rescue.target"])
            add(u, "Requires", [rng.choice(services)])
        if t.level == 0 and t.variant == "stop_cascade" and not any(d[u].get("Requires") for u in d):
            add(services[-1], "Requires", [services[0]])  # level 0 asks who requires a unit: make sure someone does
        dropins: dict[str, str] = {}
        if k.dropins:
            for u in rng.sample(services, 2):
                if d[u].get("After") and rng.random() < 0.6:
                    earlier = [x for x in ranked if rank[x] < rank[u]]
                    dropins[u] = "[Unit]\nAfter=\nAfter=" + " ".join(rng.sample(earlier, min(len(earlier), 1))) + "\n"
                else:
                    later = [x for x in ranked if rank[x] > rank[u] and x in services]
                    dropins[u] = "[Unit]\nRequires=" + (rng.choice(later) if later else ghost) + "\n"
        files: dict[str, str] = {}
        for u in [target, *ranked, *unrelated]:
            kind = "service" if u.endswith(".service") else "target"
            descr = rng.choice(DESCR) if kind == "service" else u.split(".")[0].replace("-", " ").title() + " Target"
            files[f"/app/units/{u}"] = _fmt_unit(rng, d[u], descr, kind)
        for u, text in dropins.items():
            files[f"/app/units/{u}.d/override.conf"] = text
        src = reference(t.variant)
        ns = run_python(fill(src, TARGET=target, FAILED="", REPORT=VARIANT_REPORT[t.variant]))
        units = {}
        for path in sorted(files):
            name = path.split("/")[3]
            if not name.endswith(".d"):
                units[name] = ns["parse"]([files[path]])
        for path in sorted(files):
            name = path.split("/")[3]
            if name.endswith(".d"):
                ns["parse"]([files[path]], units[name[:-2]])
        # The failing unit: one in the transaction that something requires, when there is one.
        probe = ns["plan"](units, "1", "none.service")
        in_trans = [line.split()[1] for line in probe.splitlines() if line.endswith(".service started")]
        required = [u for u in in_trans if any(u in units[o]["Requires"] or o in units[u]["RequiredBy"]
                                               for o in units)]
        failed = rng.choice(required or in_trans)
        for path, text in files.items():
            t.add_file(path, text)
        if t.level == 0 and t.variant == "start_order":
            return self._atomic(t, target, d[target]["Wants"][0])
        if t.level == 0:
            return self._atomic_variant(t, d)
        if t.variant != "start_order":
            return self._variant(t, target, k, units, failed, ns, src)
        rules = self._graph_rules(target, k)
        rules.append("Ordering: `After=X` in unit A means X starts before A; `Before=X` in A means A starts before X. "
                     "Only units both in the transaction are ordered. Start order: repeatedly start the unit with "
                     "the smallest name (byte order) among those whose ordering predecessors have all started.")
        rules.append(f"The failing unit is `{failed}`; it fails (result `failed`) if it is in the transaction. "
                     "A unit that `Requires=` a unit which did not come up ("
                     + ("result `failed` or `dependency`, or no unit file at all" if k.missing else
                        "result `failed` or `dependency`") + ") gets result `dependency`, transitively, "
                     "whatever the ordering. `Wants=` never propagates failure. Every other unit gets `started`.")
        rules.append("Jobs are numbered in start order: the first unit to start gets the transaction's first job ID "
                     "(given above, from the journal), the next one that ID + 1, and so on.")
        report = ("Report format: one line per unit in the transaction, in start order, as `job unit result` "
                  "(for example `47113 falcon.service dependency`), including targets.")
        rules_txt = "\n".join(f"- {r}" for r in rules)
        # The first job ID: no number the task shows is near it, so it can only come from the channel.
        first_job = int(unseen(t, lambda: str(rng.randrange(10000, 99000)), rules_txt, report, near=50))
        truth = ns["plan"](units, str(first_job), failed)
        v = t.deliver(str(first_job), "the first job ID of the transaction")
        t.say("Our application host's unit files are in `/app/units/` (services and targets, systemd syntax). One "
              "unit fails when the target named below is started (we isolate it again after maintenance, on the "
              "running host) and I need to know, job by job, what that does.\n\n"
              + rules_txt + "\n\n" + report)
        t.add_solution_file("start_order.py", fill(src, TARGET=target, FAILED=failed, REPORT="plan"))
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\n'
                f'python3 /solution/start_order.py /app/units "{v}" > /app/out/start_order.txt')
        t.expect_output("/app/out/start_order.txt", truth, "the report")

    def _atomic(self, t: TaskBuilder, target: str, wants: list[str]) -> None:
        """One line read and numbered: the target's `Wants=` units with their job IDs."""
        fmt = "one line per unit as `<job> <unit>` (for example `47113 falcon.service`)"
        first = int(unseen(t, lambda: str(t.rng.randrange(10000, 99000)), fmt, near=20))
        v = t.deliver(str(first), "the first job ID")
        t.say(f"Our unit files are in `/app/units/`. The journal gave the units on the `Wants=` line of "
              f"`/app/units/{target}` job IDs in the order that line lists them: the first gets the job ID given "
              f"above, the next that ID + 1, and so on. Write {fmt}, in that order.")
        t.solve(f'mkdir -p /app/out\nsed -n "s/^Wants=//p" /app/units/{target} | tr " " "\\n" '
                f'| awk -v n="{v}" \'NF {{print n++, $1}}\' > /app/out/jobs.txt')
        t.expect_output("/app/out/jobs.txt", "".join(f"{first + i} {u}\n" for i, u in enumerate(wants)),
                        "the job list")

    @staticmethod
    def _graph_rules(target: str, k: Knobs) -> list[str]:
        """The transaction and directive rules every variant shares."""
        rules = [f"The transaction starts from `{target}` and pulls in, repeatedly, every unit named in `Requires=` "
                 "or `Wants=` of a unit already in it. Units whose file does not exist are not part of it."]
        if k.extra:
            rules.append("All units are enabled: a unit whose `[Install]` section has `WantedBy=X` counts as if `X` "
                         "had `Wants=` on it, and `RequiredBy=X` as if `X` had `Requires=` on it (only for X "
                         "already in the transaction). A directive can appear on several lines; its lists add up.")
        if k.dropins:
            rules.append("Drop-in files `/app/units/<unit>.d/*.conf` are applied after the unit file, in file name "
                         "order; an empty assignment such as `After=` clears everything set for that directive so "
                         "far.")
        return rules

    def _variant(self, t: TaskBuilder, target: str, k: Knobs, units: dict, failed: str, ns: dict, src: str) -> None:
        """start_rounds: the rounds of parallel starts; stop_cascade: the stop jobs when one running unit stops."""
        rng = t.rng
        rules = self._graph_rules(target, k)
        ordering = ("`After=X` in unit A means X starts before A; `Before=X` in A means A starts before X. Only "
                    "units both in the transaction are ordered.")
        if t.variant == "start_rounds":
            rules.append("Ordering: " + ordering + " systemd starts units in rounds, as many at once as it can: "
                         "round 1 is every unit of the transaction with no ordering predecessor, and every other "
                         "unit starts in the round right after the one in which its last ordering predecessor "
                         "started. Requirements and failures play no part here.")
            rules.append("Jobs are numbered round after round, in name order (byte order) within a round: the first "
                         "unit of round 1 gets the transaction's first job ID (given above, from the journal), the "
                         "next one that ID + 1, and so on.")
            report = ("Report format: one line per round, in round order: the job ID of the round's first unit, "
                      "then the round's units in name order, space-separated (for example "
                      "`47113 falcon.service local-fs.target`), targets included.")
            out, what, script = "/app/out/rounds.txt", "the rounds", "start_rounds.py"
            intro = ("Our application host's unit files are in `/app/units/` (services and targets, systemd "
                     "syntax). We want to see how much of the boot of the target named below systemd can run in "
                     "parallel, round by round.")
        else:
            rules.append("Start order (the transaction is running now, every unit of it up): " + ordering
                         + " Repeatedly start the unit with the smallest name (byte order) among those whose "
                         "ordering predecessors have all started.")
            rules.append(f"We stop `{failed}`. Every running unit that `Requires=` a unit being stopped is stopped "
                         "too, transitively; `Wants=` never propagates a stop, and nothing else stops. The stopped "
                         "units stop in the reverse of their start order.")
            rules.append("Stop jobs are numbered in stop order: the first unit to stop gets the first job ID (given "
                         "above, from the journal), the next one that ID + 1, and so on.")
            report = ("Report format: one line per stopped unit, in stop order, as `job unit` (for example "
                      "`47113 falcon.service`).")
            out, what, script = "/app/out/stop_jobs.txt", "the stop jobs", "stop_cascade.py"
            intro = ("Our application host's unit files are in `/app/units/` (services and targets, systemd "
                     "syntax); the target named below is up. We are about to stop one unit for maintenance and I "
                     "need to know, job by job, what goes down with it.")
        rules_txt = "\n".join(f"- {r}" for r in rules)
        first_job = int(unseen(t, lambda: str(rng.randrange(10000, 99000)), rules_txt, report, near=50))
        truth = ns["rounds"](units, str(first_job)) if t.variant == "start_rounds" else \
            ns["stops"](units, str(first_job), failed)
        v = t.deliver(str(first_job), "the first job ID")
        t.say(intro + "\n\n" + rules_txt + "\n\n" + report)
        t.add_solution_file(script, fill(src, TARGET=target, FAILED=failed, REPORT=VARIANT_REPORT[t.variant]))
        t.solve(f'test -n "{v}"\nmkdir -p /app/out\n'
                f'python3 /solution/{script} /app/units "{v}" > {out}')
        t.expect_output(out, truth, what)

    def _atomic_variant(self, t: TaskBuilder, d: dict) -> None:
        """Level 0 of start_rounds (files without `After=`) and stop_cascade (files whose `Requires=` names one unit)."""
        files = sorted(d)
        if t.variant == "start_rounds":
            names = [u for u in files if not d[u].get("After")]
            fmt = "one line per file as `<job> <file name>` (for example `47113 falcon.service`)"
            ask = ("Which unit files in `/app/units/` have no `After=` line at all? Those units can start first. "
                   "Give them job IDs in file name order (byte order): the first gets the job ID given above, the "
                   f"next that ID + 1, and so on. Write {fmt} to `/app/out/first_round.txt`.")
            out, grep = "/app/out/first_round.txt", "grep -L '^After=' *"
        else:
            required = sorted({x for u in files for vals in d[u].get("Requires", []) for x in vals})
            unit = t.rng.choice(required)
            names = [u for u in files if any(unit in vals for vals in d[u].get("Requires", []))]
            fmt = "one line per file as `<stop job> <file name>` (for example `47113 falcon.service`)"
            ask = (f"We stop `{unit}`. Which unit files in `/app/units/` name it on a `Requires=` line? Those units "
                   "stop with it. Give them stop job IDs in file name order (byte order): the first gets the job ID "
                   f"given above, the next that ID + 1, and so on. Write {fmt} to `/app/out/requirers.txt`.")
            pattern = unit.replace(".", "\\.")
            out, grep = "/app/out/requirers.txt", f"grep -lE '^Requires=(.* )?{pattern}( |$)' *"
        first = int(unseen(t, lambda: str(t.rng.randrange(10000, 99000)), ask, near=20))
        v = t.deliver(str(first), "the first job ID")
        t.say(ask)
        t.solve(f'export LC_ALL=C\nmkdir -p /app/out\ncd /app/units && {grep} '
                f'| awk -v n="{v}" \'{{print n++, $1}}\' > {out}')
        t.expect_output(out, "".join(f"{first + i} {u}\n" for i, u in enumerate(names)), "the job list")
