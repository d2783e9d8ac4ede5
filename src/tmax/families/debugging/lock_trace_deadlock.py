"""Debug a hang from a mutex trace: a tracer logged every lock request, grant and release of a
service's threads until it hung, and the run to look at is named by a delivered run id. Variants:
the lock pairs taken in both orders (the potential deadlocks), how long each lock was held, or which
threads are stuck at the end, on which lock and behind whom. Traps by level: nested sections, a
lock granted later than it was requested, trylocks (they cannot block, so they add no order; a busy
one acquires nothing), releases out of nesting order, and lines written out of time order by
per-CPU buffers, with tracer notes between them."""

from __future__ import annotations

from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.unseen import distinct, key_cmd, key_of, unseen

REFERENCE = r'''
import re
import sys

VARIANT = @VARIANT@
EVENT = re.compile(r"^(\d+) tid=(\d+) (wait|got|unlock|trylock-ok|trylock-busy) (\w+)$")


def events(text):
    """Events in time order (the line order breaks ties); other lines are tracer notes."""
    found = []
    for no, line in enumerate(text.splitlines()):
        m = EVENT.match(line.strip())
        if m:
            found.append((int(m.group(1)), no, m.group(2), m.group(3), m.group(4)))
    return sorted(found)


def report(text):
    held, since, waiting, holder = {}, {}, {}, {}
    order, stats = set(), {}
    for ts, _, tid, what, lock in events(text):
        mine = held.setdefault(tid, [])
        if what == "wait":  # asking for a lock (a trylock never waits) orders the locks already held before it
            waiting[tid] = lock
            order |= {(h, lock) for h in mine if h != lock}
        elif what in ("got", "trylock-ok"):
            if what == "got":
                waiting.pop(tid, None)
            mine.append(lock)
            since[(tid, lock)] = ts
            holder[lock] = tid
            s = stats.setdefault(lock, [0, 0])
            s[0] += 1
        elif what == "unlock":
            mine.remove(lock)
            stats[lock][1] += ts - since.pop((tid, lock))
            holder.pop(lock, None)
    if VARIANT == "inversions":
        pairs = sorted({(a, b) if a < b else (b, a) for a, b in order if (b, a) in order})
        return "".join(f"{a}\t{b}\n" for a, b in pairs)
    if VARIANT == "hold_times":
        rows = sorted(stats.items(), key=lambda kv: (-kv[1][1], kv[0]))
        return "".join(f"{lock}\t{n}\t{total}\n" for lock, (n, total) in rows)
    return "".join(f"{tid}\t{lock}\t{holder.get(lock, '-')}\n" for tid, lock in sorted(waiting.items()))


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as f:
        sys.stdout.write(report(f.read()))
'''

LOCKS = ("cache_mu", "queue_mu", "stats_mu", "conn_pool", "log_mu", "index_mu", "session_mu", "config_mu")
NOTES = ("# tracer: ring buffer 4096 entries", "# tracer: cpu1 buffer merged", "# tracer: 2 events dropped")


@dataclass(frozen=True)
class Knobs:
    threads: int
    locks: int
    sections: int  # critical sections per thread
    depth: int  # most locks held at once in a section
    inverted: float  # chance a section takes its locks out of the usual order
    trylock: bool  # trylocks inside sections (never blocking, may be busy)
    loose: bool  # releases out of nesting order
    shuffled: bool  # lines out of time order, tracer notes
    decoys: int  # traces of other runs beside the one asked about


@register
class LockTraceDeadlock(Family):
    name = "lock_trace_deadlock"
    domain = "debugging"
    skill_types = ("Fault Localization", "Failure Reproduction")
    primitive_skills = ("lock order analysis", "correlating interleaved log lines", "state leaking between calls",
                        "print-debugging intermediate state", "sorting events by timestamp")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("inversions", "hold_times", "stuck")
    levels = {0: Knobs(threads=2, locks=2, sections=2, depth=1, inverted=0.0, trylock=False, loose=False,
                       shuffled=False, decoys=1),
              1: Knobs(threads=3, locks=3, sections=5, depth=2, inverted=0.15, trylock=False, loose=False,
                       shuffled=False, decoys=2),
              2: Knobs(threads=4, locks=5, sections=7, depth=3, inverted=0.15, trylock=True, loose=False,
                       shuffled=False, decoys=3),
              3: Knobs(threads=5, locks=6, sections=9, depth=3, inverted=0.15, trylock=True, loose=True,
                       shuffled=False, decoys=3),
              4: Knobs(threads=6, locks=7, sections=11, depth=3, inverted=0.15, trylock=True, loose=True,
                       shuffled=True, decoys=3)}

    def _program(self, t, locks):
        """One thread's actions: ("lock" | "try" | "unlock", lock) in order."""
        k, rng = t.knobs, t.rng
        acts = []
        for _ in range(k.sections):
            take = sorted(rng.sample(range(len(locks)), rng.randrange(1, k.depth + 1)))
            if rng.random() < k.inverted:
                rng.shuffle(take)
            acts += [("lock", locks[i]) for i in take]
            tried = []
            if k.trylock and rng.random() < 0.4:
                tried = [rng.choice([x for x in locks if x not in [locks[i] for i in take]])]
                acts.append(("try", tried[0]))
            out = [locks[i] for i in reversed(take)] + tried
            if k.loose:
                rng.shuffle(out)
            acts += [("unlock", x) for x in out]
        return acts

    def _trace(self, t):
        k, rng = t.knobs, t.rng
        locks = rng.sample(LOCKS, k.locks)
        tids = sorted(rng.sample(range(4100, 4999), k.threads))
        todo = {tid: self._program(t, locks) for tid in tids}
        holder, waiters, blocked = {}, {x: [] for x in locks}, {}
        held = {tid: [] for tid in tids}
        lines, clock, final = [], [rng.randrange(10 ** 6, 10 ** 7)], False

        def emit(tid, what, lock):
            clock[0] += rng.randrange(3, 400)
            lines.append((clock[0], f"tid={tid} {what} {lock}"))

        def grant(tid, lock):
            holder[lock] = tid
            held[tid].append(lock)
            emit(tid, "got", lock)

        for _ in range(100 * k.threads * k.sections * (k.depth + 2)):  # bounded: every action is taken once
            ready = [tid for tid in tids if todo[tid] and tid not in blocked]
            if not ready:
                if blocked or final or k.threads < 2:
                    break
                # Everything ran through: end the run the way it hung, two threads in opposite orders.
                final = True
                a, b = rng.sample(tids, 2)
                x, y = rng.sample(locks, 2)
                todo[a] += [("lock", x), ("lock", y)]
                todo[b] += [("lock", y), ("lock", x)]
                for tid, lock in ((a, x), (b, y), (a, y), (b, x)):  # this interleaving, whatever the draw
                    todo[tid].pop(0)
                    emit(tid, "wait", lock)
                    if lock in holder:
                        blocked[tid] = lock
                        waiters[lock].append(tid)
                    else:
                        grant(tid, lock)
                continue
            tid = rng.choice(ready)
            what, lock = todo[tid].pop(0)
            if what == "lock":
                emit(tid, "wait", lock)
                if lock in holder or waiters[lock]:
                    blocked[tid] = lock
                    waiters[lock].append(tid)
                else:
                    grant(tid, lock)
            elif what == "try":
                if lock in holder:
                    emit(tid, "trylock-busy", lock)
                else:
                    holder[lock] = tid
                    held[tid].append(lock)
                    emit(tid, "trylock-ok", lock)
            elif lock in held[tid]:  # a busy trylock is not released: the code checks its result
                emit(tid, "unlock", lock)
                held[tid].remove(lock)
                del holder[lock]
                if waiters[lock]:  # the next in line gets it
                    nxt = waiters[lock].pop(0)
                    del blocked[nxt]
                    grant(nxt, lock)
        else:
            raise FamilyError("lock_trace_deadlock: the simulated run did not end")
        text = [f"{ts} {body}" for ts, body in lines]
        if k.shuffled:  # per-CPU buffers: each line may land a little late
            keyed = [(i + rng.randrange(0, 4), i, line) for i, line in enumerate(text)]
            text = [line for _, _, line in sorted(keyed)]
            for _ in range(3):
                text.insert(rng.randrange(len(text) + 1), rng.choice(NOTES))
        return "\n".join(text) + "\n"

    def output_case(self, t: TaskBuilder) -> None:
        k, v = t.knobs, t.variant
        src = fill(REFERENCE, VARIANT=repr(v))
        ref = run_python(src)
        for _ in range(30):  # a run that hung in a longer cycle may have no pair inverted: draw another
            traces = [self._trace(t)]
            if ref["report"](traces[0]):
                break
        traces += [self._trace(t) for _ in range(k.decoys)]
        run = unseen(t, lambda: t.code(2), *traces)
        names = [run, *distinct(lambda: t.code(2), k.decoys, [run])]
        for name, text in sorted(zip(names, traces), key=lambda nt: key_of(nt[0])):
            t.add_file(f"/app/traces/{key_of(name)}.locks", text)
        truth = ref["report"](traces[0])
        t.say("The service hung and we had the mutex tracer on. Each run's trace is `/app/traces/<KEY>.locks`, "
              "where KEY is the first 16 hex digits of the SHA-256 of the run id (`printf %s <run id> | "
              "sha256sum`); look only at the run given below. A line is `<time in microseconds> tid=<thread> <event> "
              "<lock>`: `wait` (the thread asks for the lock and blocks until it has it), `got` (it now holds it), "
              "`unlock` (it lets go of it)"
              + (", `trylock-ok` (took it without blocking) and `trylock-busy` (it was taken: nothing happens)"
                 if k.trylock else "") + ".")
        who = t.deliver(run, "the run id")
        rules = []
        if k.loose:
            rules.append("Threads do not always release locks in the reverse order they took them.")
        if k.shuffled:
            rules.append("Lines were merged from per-CPU buffers and are not always in time order: go by the "
                         "timestamps (they are all different). Lines starting with `#` are tracer notes.")
        if rules:
            t.say(" ".join(rules))
        if v == "inversions":
            t.say("Find the lock-order inversions: lock A is ordered before lock B when some thread asked for B (a "
                  "`wait` line" + ("; a trylock cannot block, so it orders nothing" if k.trylock else "") + ") while "
                  "holding A. List every pair ordered both ways, one line each, `<A><TAB><B>` with A before B in "
                  "byte order, lines sorted in byte order.")
            out = "/app/out/inversions.tsv"
        elif v == "hold_times":
            t.say("How long was each lock held? A hold starts when a thread gets the lock"
                  + (" (`got` or `trylock-ok`)" if k.trylock else "") + " and ends at its `unlock`; holds that "
                  "never ended do not add time but still count as acquisitions. One line per lock that was ever "
                  "acquired, `<lock><TAB><acquisitions><TAB><total microseconds held>`, sorted by total time "
                  "(largest first), "
                  "ties by lock name in byte order.")
            out = "/app/out/hold_times.tsv"
        else:
            t.say("Which threads are stuck? A thread is stuck if its last `wait` was never followed by its `got`. "
                  "One line per stuck thread, `<tid><TAB><lock it waits for><TAB><tid holding that lock at the end, "
                  "or `-`>`, sorted by tid.")
            out = "/app/out/stuck.tsv"
        t.add_solution_file("locks.py", src)
        t.solve(f'test -n "{who}"\nmkdir -p /app/out\nkey={key_cmd(who)}\n'
                f'python3 /solution/locks.py "/app/traces/$key.locks" > {out}')
        t.expect_output(out, truth, {"inversions": "the inversion list", "hold_times": "the hold times",
                                     "stuck": "the stuck threads"}[v])
