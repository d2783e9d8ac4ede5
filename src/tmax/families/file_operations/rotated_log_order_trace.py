"""Follow one order through a logrotate set. `/app/logs/app.log` has been rotated to `app.log.1`
and gzipped `app.log.2.gz` ... `app.log.N.gz`; order numbers are pseudonymised in the logs (the
`order=` field holds the first 12 hex digits of the SHA-256 of the delivered order number).
Variants: every line of the order's entries in the order they were written, a count of its entries
per level, or the rotated files that mention it with a count each. Traps by level: more than nine
rotations (numeric, not lexical order), other fields that name the order (`previous_order=`),
other log sets and editor leftovers beside the rotation, continuation lines (stack traces) that
belong to the entry above them, an empty rotation, a gzip file of two members and a clock that
was stepped back (timestamps are no order)."""

from __future__ import annotations

import datetime as dt
import gzip
import os
from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.file_operations._common import epoch, finish_setup, host_tree, ship_tree, spec_json
from tmax.families.programs import fill, run_python
from tmax.families.unseen import distinct, key_of, unseen

REFERENCE = r'''
import gzip
import os
import re
import stat
import sys

VARIANT = @VARIANT@
ROTATED = re.compile(r"^app\.log(?:\.([0-9]+)(\.gz)?)?$")
ENTRY = re.compile(r"^\S+ ([A-Z]+) ")


def rotation(logdir):
    """The rotation's regular files, oldest first (the highest number is the oldest)."""
    got = []
    for name in os.listdir(logdir):
        m = ROTATED.match(name)
        if m and stat.S_ISREG(os.lstat(os.path.join(logdir, name)).st_mode):
            got.append((-int(m.group(1) or 0), name))
    return [name for _, name in sorted(got)]


def read(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:  # gzip reads every member of the file
        return f.read().splitlines()


def entries(logdir, key):
    """(file, level, lines) of each entry whose order= field is key; indented lines continue an entry."""
    field = "order=" + key
    out, cur = [], None
    for name in rotation(logdir):
        cur = None
        for line in read(os.path.join(logdir, name)):
            if line.strip() and (line[:1].isspace() or line.startswith("Caused by:")):
                if cur is not None:
                    cur[2].append(line)
                continue
            m = ENTRY.match(line)
            cur = (name, m.group(1), [line]) if m and field in line.split() else None
            if cur is not None:
                out.append(cur)
    return out


def report(logdir, order):
    import hashlib

    key = hashlib.sha256(order.encode()).hexdigest()[:12]
    found = entries(logdir, key)
    if VARIANT == "trace":
        return "".join(line + "\n" for _, _, lines in found for line in lines)
    if VARIANT == "levels":
        counts = {}
        for _, level, _ in found:
            counts[level] = counts.get(level, 0) + 1
        return "".join(f"{level} {n}\n" for level, n in sorted(counts.items()))
    counts = {}
    for name, _, _ in found:
        counts[name] = counts.get(name, 0) + 1
    return "".join(f"{name} {counts[name]}\n" for name in rotation(logdir) if name in counts)


if __name__ == "__main__":
    sys.stdout.write(report(sys.argv[1], sys.argv[2]))
'''

SERVICES = ("checkout", "cart", "payments", "shipping", "inventory")
MESSAGES = {"INFO": ("order created", "item added", "address validated", "label printed", "status synced"),
            "WARN": ("retrying gateway call", "slow response from carrier", "stock level low"),
            "ERROR": ("payment declined", "carrier timeout", "inventory lock lost")}
STACK = (lambda svc, n: f"    at shop.{svc}.Handler.process(Handler.java:{n})",  # continuation lines
         lambda svc, n: f"    at shop.core.Retry.run(Retry.java:{n})",
         lambda svc, n: "Caused by: java.net.SocketTimeoutException: read timed out")


@dataclass(frozen=True)
class Knobs:
    rotations: int  # app.log.1 .. app.log.N
    entries: int  # log entries across the set
    others: int  # other orders in the logs
    fields: bool  # previous_order= fields that name an order without being about it
    junk: bool  # other log sets and leftovers beside the rotation
    stacks: bool  # continuation lines under ERROR entries
    skew: bool  # an empty rotation, a two-member gzip, the clock stepped back


@register
class RotatedLogOrderTrace(Family):
    name = "rotated_log_order_trace"
    domain = "file_operations"
    skill_types = ("Archive Handling", "File Discovery")
    primitive_skills = ("compressed stream handling", "natural sort ordering", "glob and pattern matching",
                        "content hashing", "sorting with tie-breaks")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("trace", "levels", "files")
    levels = {0: Knobs(rotations=2, entries=40, others=5, fields=False, junk=False, stacks=False, skew=False),
              1: Knobs(rotations=5, entries=90, others=7, fields=False, junk=False, stacks=False, skew=False),
              2: Knobs(rotations=11, entries=180, others=8, fields=True, junk=False, stacks=False, skew=False),
              3: Knobs(rotations=12, entries=260, others=9, fields=True, junk=True, stacks=True, skew=False),
              4: Knobs(rotations=13, entries=340, others=10, fields=True, junk=True, stacks=True, skew=True)}

    def _entries(self, t, keys):
        """Log entries oldest first, each a list of lines; keys[0] (the target) gets about a tenth."""
        k, rng = t.knobs, t.rng
        when = dt.datetime(2025, 1, 1) + dt.timedelta(days=rng.randrange(300))
        out = []
        for i in range(k.entries):
            when += dt.timedelta(seconds=rng.randrange(5, 400))
            if k.skew and i == k.entries // 2:
                when -= dt.timedelta(minutes=rng.randrange(70, 120))  # the host clock stepped back
            r = rng.random()
            level = "ERROR" if r < 0.12 else "WARN" if r < 0.3 else "INFO"
            svc = rng.choice(SERVICES)
            who = keys[0] if rng.random() < 0.1 else rng.choice(keys[1:]) if rng.random() < 0.8 else None
            order = f" order={who}" if who else ""
            if k.fields and who and who != keys[0] and rng.random() < 0.12:
                order += f" previous_order={keys[0]}"  # about another order: not ours
            line = f'{when:%Y-%m-%dT%H:%M:%S}Z {level} svc={svc}{order} msg="{rng.choice(MESSAGES[level])}"'
            lines = [line]
            if k.stacks and level == "ERROR":
                lines += [rng.choice(STACK)(svc, rng.randrange(20, 400)) for _ in range(rng.randrange(1, 4))]
            out.append(lines)
        return out

    def output_case(self, t: TaskBuilder) -> None:
        k, rng, v = t.knobs, t.rng, t.variant
        # The order number is drawn clear of everything shown; the logs only carry keys. The key list is
        # drawn first from placeholders so the log text does not depend on the order number.
        marks = [f"@K{i}@" for i in range(1 + k.others)]
        n = k.rotations + 1
        names = [f"app.log.{n - 1 - i}" for i in range(n - 1)] + ["app.log"]  # oldest first
        for _ in range(100):  # until the target spans files, mostly gzipped ones (bounded)
            log = self._entries(t, marks)
            cuts = sorted(rng.sample(range(1, len(log)), n - 1))
            if k.skew:
                cuts = sorted(cuts[:-1] + [cuts[0]])  # a rotation that happened with nothing logged
            chunks = [log[a:b] for a, b in zip([0, *cuts], [*cuts, len(log)])]
            hits = [sum(1 for e in c if f"order={marks[0]}" in e[0].split()) for c in chunks]
            if sum(1 for h in hits if h) >= 2 and sum(hits[:-2]) > sum(hits[-2:]):
                break
        else:
            raise FamilyError("rotated_log_order_trace: no log spread the target over gzipped files")
        text = {nm: "".join(line + "\n" for e in c for line in e) for nm, c in zip(names, chunks)}
        spec_pre = [["f", nm, txt, 0o640, epoch(2025, 12, 1) - (n - 1 - i) * 86400]
                    for i, (nm, txt) in enumerate(text.items())]
        order = unseen(t, lambda: str(rng.randrange(10 ** 7, 10 ** 8)), spec_json(spec_pre))
        others = distinct(lambda: str(rng.randrange(10 ** 7, 10 ** 8)), k.others, [order])
        keys = [key_of(x, 12) for x in [order, *others]]

        def real(s):
            for i, key in enumerate(keys):
                s = s.replace(f"@K{i}@", key)
            return s

        gz = [nm for nm in names if nm not in ("app.log", "app.log.1")]
        two = gz[len(gz) // 2] if k.skew else None  # built from two gzip members
        spec = [["d", "logs", 0o755, epoch(2025, 12, 2)]]
        for nm, _, mode, mtime in (e[1:] for e in spec_pre):
            body = real(text[nm])
            if nm == two:
                half = body.count("\n") // 2
                lines = body.splitlines(keepends=True)
                spec.append(["f", f"logs/{nm}.p1", "".join(lines[:half]), mode, mtime])
                spec.append(["f", f"logs/{nm}.p2", "".join(lines[half:]), mode, mtime])
            else:
                spec.append(["f", f"logs/{nm}", body, mode, mtime])
        if k.junk:
            for i in range(1, 4):
                spec.append(["f", f"logs/access.log.{i}", real(text[names[-1]]).replace(" svc=", " vhost="), 0o640,
                             epoch(2025, 11, 20)])
            spec.append(["f", "logs/app.log.3.swp", real(text[names[-2]]), 0o600, epoch(2025, 11, 2)])
            spec.append(["f", "logs/app.log-old", real(text[names[0]]).replace("2025-", "2024-"), 0o640, epoch(2025, 6, 2)])
            spec.append(["l", "logs/app.log.0", "app.log"])
        # Gzipped on the host as the setup does in the sandbox: the same content (the bytes may differ).
        cmds = [f"gzip -n {nm}" for nm in gz if nm != two]
        if two:
            cmds.append(f"gzip -n {two}.p1 {two}.p2 && cat {two}.p1.gz {two}.p2.gz > {two}.gz && rm {two}.p?.gz")
        with host_tree(spec) as root:
            for nm in gz:
                parts = [f"{nm}.p1", f"{nm}.p2"] if nm == two else [nm]
                blob = b""
                for p in parts:
                    path = os.path.join(root, "logs", p)
                    with open(path, "rb") as f:
                        blob += gzip.compress(f.read(), mtime=0)
                    os.remove(path)
                with open(os.path.join(root, "logs", nm + ".gz"), "wb") as f:
                    f.write(blob)
            src = fill(REFERENCE, VARIANT=repr(v))
            ref = run_python(src)
            truth = ref["report"](f"{root}/logs", order)
        ship_tree(t, spec, "/app", "logs")
        t.add_setup("(cd /app/logs && " + " && ".join(cmds) + ")")
        finish_setup(t)
        t.say("`/app/logs/app.log` is rotated by logrotate: `app.log` is the live file, `app.log.1` the previous "
              "one, and `app.log.2.gz`, `app.log.3.gz`, ... are older, gzipped (the higher the number, the older). "
              "Order numbers are pseudonymised in the logs: an entry about an order carries the field "
              "`order=<KEY>`, where KEY is the first 12 hex digits of the SHA-256 of the order number "
              "(`printf %s <number> | sha256sum | cut -c1-12`). I need the entries about the order below.")
        num = t.deliver(order, "the order number")
        rules = []
        if k.fields:
            rules.append("Only the `order=` field says which order an entry is about: an entry whose "
                         "`previous_order=` names ours is about another order.")
        if k.junk:
            rules.append("Only `app.log` and its numbered rotations belong to the set: other logs, editor swap "
                         "files, symbolic links and renamed copies in the directory do not.")
        if k.stacks:
            rules.append("A line that starts with whitespace or `Caused by:` continues the entry above it (a stack "
                         "trace); it is part of that entry.")
        if k.skew:
            rules.append("The host clock was stepped back once, so timestamps are not a reliable order: go by the "
                         "rotation (oldest file first, each file top to bottom).")
        if rules:
            t.say(" ".join(rules))
        if v == "trace":
            t.say("Write every line of the order's entries" + (", continuation lines included," if k.stacks else "")
                  + " exactly as logged, in the order they were written: oldest file first, each file top to "
                  "bottom.")
            out = "/app/out/trace.log"
        elif v == "levels":
            t.say("Count the order's entries by level (the second field, e.g. `INFO`): one line `<LEVEL> <count>` "
                  "per level that occurs, sorted by level name in byte order.")
            out = "/app/out/levels.txt"
        else:
            t.say("Which files of the rotation hold entries about the order? One line `<file name> <entries>` per "
                  "such file, oldest file first; leave out files without any.")
            out = "/app/out/files.txt"
        t.add_solution_file("trace.py", src)
        t.solve(f'test -n "{num}"\nmkdir -p /app/out\npython3 /solution/trace.py /app/logs "{num}" > {out}\n'
                f"test -s {out}")
        t.expect_output(out, truth, {"trace": "the order's log lines", "levels": "the counts by level",
                                     "files": "the files and their counts"}[v])
