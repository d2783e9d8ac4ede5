"""A worker pool ran out of memory. Two stages, the first feeding the second: triage the run's worker
log (the run id is delivered; other runs' logs lie beside it) to find the worker processes whose job
finally failed with a MemoryError at the root of its traceback; then audit the run's heap trace for
exactly those processes. Variants differ in the audit: the leaking allocation sites of the crashed
workers, each crashed worker's peak of live heap bytes, or each crashed worker's biggest leaking site.
Traps by level: failures with other root causes, chained exceptions (`raise ... from` puts the root
first; a MemoryError raised while handling another error is not the root), calloc sizes, retried jobs
(only a job's last attempt counts), realloc moving blocks and reused addresses, recovered MemoryErrors
logged as warnings with a traceback, failed allocations and tracer notes."""

from __future__ import annotations

from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.unseen import distinct, key_cmd, key_of, unseen

REFERENCE = r'''
import re
import sys

VARIANT = @VARIANT@
STAGES = @STAGES@  # 1: the log only; 2: and the heap audit of the crashed workers
HEADER = re.compile(r"^\S+ \S+ (INFO|WARNING|ERROR) \[\S+ pid (\d+)\] job (\d+) attempt (\d+) (\w+)")
CALL = re.compile(r"^\S+ \[(\d+)\] (malloc|calloc|realloc|free)\(([^)]*)\)"
                  r"(?: = (0x[0-9a-f]+))?(?: @ (\w+)\+0x[0-9a-f]+)?$")


def triage(text):
    """job -> (attempt, pid, outcome, root exception type) of its last attempt."""
    entries = []
    for line in text.split("\n"):
        m = HEADER.match(line)
        if m:
            entries.append([m.groups(), []])
        elif entries and not re.match(r"^\S+ \S+ [A-Z]+ \[", line):
            entries[-1][1].append(line)
    last = {}
    for (level, pid, job, attempt, outcome), extra in entries:
        if level == "WARNING" or outcome not in ("failed", "done"):
            continue  # a recovered error is no failure
        root = None
        if outcome == "failed":
            start = extra.index("Traceback (most recent call last):")
            root = next(x for x in extra[start + 1:] if x and not x.startswith(" ")).split(":")[0]
        if job not in last or int(attempt) >= last[job][0]:
            last[job] = (int(attempt), pid, outcome, root)
    return last


def crashed(text):
    return sorted({pid for _, pid, outcome, root in triage(text).values() if root == "MemoryError"}, key=int)


def audit(text, pids):
    """Per pid in ``pids``: live blocks at the end {addr: (size, site)} and the peak of live bytes."""
    live = {p: {} for p in pids}
    cur = {p: 0 for p in pids}
    peak = dict(cur)
    for line in text.splitlines():
        m = CALL.match(line)
        if not m or m.group(1) not in live:
            continue  # a tracer note, or another process
        pid, fn, args, ret, site = m.groups()
        args = [a.strip() for a in args.split(",")]
        blocks = live[pid]
        if fn == "free":
            if args[0] in blocks:
                cur[pid] -= blocks.pop(args[0])[0]
            continue
        if ret == "0x0":
            continue  # failed: nothing changes (a failed realloc keeps the old block)
        size = int(args[0]) if fn == "malloc" else int(args[0]) * int(args[1]) if fn == "calloc" else int(args[1])
        if fn == "realloc" and args[0] in blocks:
            cur[pid] -= blocks.pop(args[0])[0]
        blocks[ret] = (size, site)
        cur[pid] += size
        peak[pid] = max(peak[pid], cur[pid])
    return live, peak


def sites(blocks):
    out = {}
    for size, site in blocks.values():
        s = out.setdefault(site, [0, 0])
        s[0] += 1
        s[1] += size
    return sorted(out.items(), key=lambda kv: (-kv[1][1], kv[0]))


def report(log, trace):
    if STAGES == 1:
        last = triage(log)
        if VARIANT == "leaks":
            return "".join(f"{j}\n" for j in sorted(last, key=int) if last[j][2] == "failed")
        if VARIANT == "peak":
            return "".join(f"{p}\n" for p in sorted({v[1] for v in last.values() if v[2] == "failed"}, key=int))
        return f"{sum(1 for v in last.values() if v[2] == 'failed')}\n"
    pids = crashed(log)
    live, peak = audit(trace, pids)
    if VARIANT == "leaks":
        merged = {(p, a): b for p in pids for a, b in live[p].items()}
        return "".join(f"{s}\t{n}\t{b}\n" for s, (n, b) in sites(merged))
    if VARIANT == "peak":
        return "".join(f"{p}\t{peak[p]}\n" for p in pids)
    out = []
    for p in pids:
        top = sites(live[p])
        if top:
            out.append(f"{p}\t{top[0][0]}\t{top[0][1][1]}\n")
    return "".join(out)


if __name__ == "__main__":
    log = open(sys.argv[1], encoding="utf-8").read()
    trace = open(sys.argv[2], encoding="utf-8").read() if len(sys.argv) > 2 else ""
    sys.stdout.write(report(log, trace))
'''

PKG = ("billing", "payouts", "ingest", "render")
SITES = ("parse_header", "read_chunk", "load_table", "intern_string", "new_session", "alloc_buffer", "grow_vec",
         "dup_path", "make_node", "copy_record", "open_stream", "cache_put", "build_index", "split_fields")
NOTES = ("--- tracer: buffer flushed ---", "--- tracer: SIGCHLD ignored ---", "# tracer: symbols resolved lazily")
# (function, source line, exception line) of a traceback's innermost frame
ROOTS = {"MemoryError": ("load_table", "rows = [bytearray(n) for n in sizes]", "MemoryError"),
         "KeyError": ("lookup_rate", "return RATES[currency]", "KeyError: 'XAU'"),
         "ValueError": ("parse_date", 'return datetime.strptime(text, "%Y-%m-%d").date()',
                        "ValueError: time data '2024-13-01' does not match format '%Y-%m-%d'")}


def traceback(rng, pkg, root, chain):
    """A CPython traceback; chain: None, "cause" (raise ... from root) or "context" (a MemoryError raised
    while handling ``root``)."""
    fn, src, exc = ROOTS[root]
    first = ["Traceback (most recent call last):",
             f'  File "/app/{pkg}/worker.py", line {rng.randrange(10, 40)}, in handle',
             f"    record = store.{fn}(job)",
             f'  File "/app/{pkg}/store.py", line {rng.randrange(20, 90)}, in {fn}', f"    {src}", exc]
    if chain == "cause":
        return first + ["", "The above exception was the direct cause of the following exception:", "",
                        "Traceback (most recent call last):",
                        f'  File "/app/{pkg}/worker.py", line {rng.randrange(40, 60)}, in handle',
                        f'    raise JobError(f"job {{job_id}}: {root} while loading") from exc',
                        f"{pkg}.errors.JobError: job failed: {root} while loading"]
    if chain == "context":
        fn2, src2, exc2 = ROOTS["MemoryError"]
        return first + ["", "During handling of the above exception, another exception occurred:", "",
                        "Traceback (most recent call last):",
                        f'  File "/app/{pkg}/worker.py", line {rng.randrange(40, 60)}, in handle',
                        "    store.dump_state(job)", f'  File "/app/{pkg}/store.py", line {rng.randrange(90, 120)}, '
                        f"in dump_state", "    snapshot = bytearray(len(state) * 64)", exc2]
    return first


@dataclass(frozen=True)
class Knobs:
    workers: int  # worker processes in a run
    jobs: int  # jobs per run
    decoys: int  # other runs' logs and traces
    calls: int  # allocator calls per worker
    chained: bool  # chained exceptions, calloc
    retries: bool  # retried jobs, realloc, reused addresses
    warnings: bool  # recovered MemoryErrors logged with a traceback, failed allocations, tracer notes


@register
class OomWorkerHeapAudit(Family):
    name = "oom_worker_heap_audit"
    domain = "debugging"
    skill_types = ("Crash Analysis", "Fault Localization")
    primitive_skills = ("reading a stack trace", "following chained exceptions", "correlating interleaved log lines",
                        "reading an allocation trace", "memory leak accounting")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("leaks", "peak", "top_site")
    stages = ("traceback_triage", "heap_trace_audit")
    levels = {0: Knobs(workers=3, jobs=5, decoys=1, calls=0, chained=False, retries=False, warnings=False),
              1: Knobs(workers=3, jobs=6, decoys=2, calls=30, chained=False, retries=False, warnings=False),
              2: Knobs(workers=4, jobs=10, decoys=2, calls=60, chained=True, retries=False, warnings=False),
              3: Knobs(workers=5, jobs=14, decoys=3, calls=90, chained=True, retries=True, warnings=False),
              4: Knobs(workers=6, jobs=20, decoys=3, calls=120, chained=True, retries=True, warnings=True)}

    def _log(self, t, pkg, pids):
        """One run's log, the pids whose job's last attempt failed with a root MemoryError, and the pids a
        grep for MemoryError would name."""
        k, rng = t.knobs, t.rng
        seqs, oom, naive = [], set(), set()
        for i, job in enumerate(sorted(rng.sample(range(1000, 9999), k.jobs))):
            attempts = rng.choice([1, 1, 2]) if k.retries else 1
            seq = []
            for a in range(1, attempts + 1):
                w = rng.randrange(len(pids)) if i >= 2 else i  # the first two jobs: a crash and a bystander
                pid, final = pids[w], a == attempts
                fate = rng.choice(["oom", "fail", "done", "done"]) if final else rng.choice(["oom", "fail"])
                if final and i < 2:
                    fate = "oom" if i == 0 else "fail"
                head = f"[worker-{w + 1} pid {pid}] job {job} attempt {a}"
                seq.append(("INFO", f"{head} started", []))
                if k.warnings and rng.random() < 0.25:  # recovered: no failure
                    seq.append(("WARNING", f"{head} shrinking cache after MemoryError",
                                traceback(rng, pkg, "MemoryError", None)))
                    naive.add(pid)
                if fate == "done":
                    seq.append(("INFO", f"{head} done", []))
                    continue
                root = "MemoryError" if fate == "oom" else rng.choice(["KeyError", "ValueError"])
                chain = None
                if k.chained and rng.random() < 0.5:
                    chain = "cause" if root == "MemoryError" or rng.random() < 0.4 else "context"
                seq.append(("ERROR", f"{head} failed", traceback(rng, pkg, root, chain)))
                if final and root == "MemoryError":
                    oom.add(pid)
                if root == "MemoryError" or chain == "context":
                    naive.add(pid)
            seqs.append(seq)
        lines, clock = [], rng.randrange(3600 * 20)
        while seqs:  # workers interleave; each job's lines stay in order
            seq = rng.choice(seqs)
            level, msg, tb = seq.pop(0)
            if not seq:
                seqs.remove(seq)
            clock += rng.randint(1, 30)
            h, rem = divmod(clock, 3600)
            lines.append(f"2024-06-{11 + h // 24:02d} {h % 24:02d}:{rem // 60:02d}:{rem % 60:02d},"
                         f"{rng.randrange(1000):03d} {level} {msg}")
            lines += tb
        return "\n".join(lines) + "\n", sorted(oom), naive

    def _heap(self, t, pid, base, big):
        """One worker's allocator calls; ``big``: it ran out of memory (large blocks it never frees)."""
        k, rng = t.knobs, t.rng
        live, freed, out, nxt = {}, [], [], [base]

        def addr(n):
            if k.retries and freed and rng.random() < 0.35:  # the allocator hands a freed address out again
                return freed.pop(rng.randrange(len(freed)))
            a = nxt[0]
            nxt[0] += (n + 31) // 16 * 16 + rng.choice([0, 16, 32])
            return f"0x{a:x}"

        def site():
            return f" @ {rng.choice(SITES)}+0x{rng.randrange(16, 900):x}"

        for _ in range(k.calls):
            r = rng.random()
            if live and r < (0.3 if big else 0.45):
                a = rng.choice(sorted(live))
                del live[a]
                freed.append(a)
                out.append(f"free({a})" + site())
            elif k.retries and live and r < 0.55:
                a, n = rng.choice(sorted(live)), rng.randrange(16, 4096)
                if k.warnings and rng.random() < 0.15:
                    out.append(f"realloc({a}, {n}) = 0x0" + site())
                    continue
                b = a if rng.random() < 0.3 else addr(n)
                del live[a]
                if b != a:
                    freed.append(a)
                live[b] = n
                out.append(f"realloc({a}, {n}) = {b}" + site())
            else:
                n = rng.randrange(8, 1024) * (rng.choice([1, 1, 40]) if big else 1)
                call = f"malloc({n})"
                if k.chained and rng.random() < 0.3:
                    c = rng.randrange(2, 12)
                    call, n = f"calloc({c}, {max(1, n // c)})", c * max(1, n // c)
                if k.warnings and rng.random() < 0.05:
                    out.append(f"{call} = 0x0" + site())
                    continue
                a = addr(n)
                live[a] = n
                out.append(f"{call} = {a}" + site())
        n = rng.randrange(8, 1024)  # every worker leaks something
        out.append(f"malloc({n}) = 0x{nxt[0]:x}" + site())
        return [(pid, c) for c in out]

    def _run(self, t, pkg):
        k, rng = t.knobs, t.rng
        pids = sorted(rng.sample(range(1200, 32000), k.workers))
        for _ in range(20):  # where the level has traps, grepping for MemoryError must name other workers
            log, oom, naive = self._log(t, pkg, pids)
            if not k.chained or naive != set(oom):
                break
        if not k.calls:
            return log, "", oom
        base = 0x55d0c2a00000 + rng.randrange(1 << 20) * 16  # forked workers share one address layout
        procs = [self._heap(t, p, base, p in oom) for p in pids]
        calls = []
        while any(procs):
            p = rng.choice([p for p in procs if p])
            calls.append(p.pop(0))
        ts, lines = rng.randrange(1000, 90000) + rng.random(), []
        for pid, call in calls:
            ts += rng.randrange(10, 3000) / 1e6
            if k.warnings and rng.random() < 0.04:
                lines.append(f"{ts:.6f} [{pid}] {rng.choice(NOTES)}")
            lines.append(f"{ts:.6f} [{pid}] {call}")
        return log, "\n".join(lines) + "\n", oom

    def output_case(self, t: TaskBuilder) -> None:
        k, rng, v = t.knobs, t.rng, t.variant
        stages = 1 if t.level == 0 else 2
        pkg = rng.choice(PKG)
        runs = [self._run(t, pkg) for _ in range(1 + k.decoys)]
        run = unseen(t, lambda: t.code(2), *(x for r in runs for x in r[:2]))
        names = [run, *distinct(lambda: t.code(2), k.decoys, [run])]
        for name, (log, trace, _) in sorted(zip(names, runs), key=lambda nr: key_of(nr[0])):
            t.add_file(f"/app/logs/{key_of(name)}.log", log)
            if trace:
                t.add_file(f"/app/traces/{key_of(name)}.trace", trace)
        src = fill(REFERENCE, VARIANT=repr(v), STAGES=stages)
        ref = run_python(src)
        truth = ref["report"](runs[0][0], runs[0][1])
        if ref["crashed"](runs[0][0]) != [str(p) for p in runs[0][2]]:
            raise FamilyError(f"family {self.name}: the log's crashed workers disagree with how it was built")
        t.say(f"Our `{pkg}` worker pool runs jobs in several worker processes. Each run's log is "
              "`/app/logs/<KEY>.log`" + (" and its heap trace `/app/traces/<KEY>.trace`" if stages == 2 else "")
              + ", where KEY is the first 16 hex digits of the SHA-256 of the run id (`printf %s <run id> | "
              "sha256sum`). Look only at the run given below.")
        who = t.deliver(run, "the run id")
        t.say("A log line starts `<date> <time> <LEVEL> [worker-<n> pid <pid>] job <id> attempt <n> ...`; a failed "
              "attempt is followed by the Python traceback of its exception." + (
                  " Only the last attempt of a job counts." if k.retries else "")
              + (" A WARNING with a traceback is an error the worker recovered from, not a failure." if k.warnings
                 else ""))
        if stages == 1:
            t.say({"leaks": "List the ids of the jobs that failed, one per line, sorted numerically.",
                   "peak": "List the pids of the worker processes that logged a failed attempt, one per line, sorted "
                           "numerically, no repeats.",
                   "top_site": "How many jobs failed? Write the number alone."}[v])
            out = {"leaks": "/app/out/failed_jobs.txt", "peak": "/app/out/failed_pids.txt",
                   "top_site": "/app/out/failed_count.txt"}[v]
            t.add_solution_file("oom.py", src)
            t.solve(f'test -n "{who}"\nmkdir -p /app/out\nkey={key_cmd(who)}\n'
                    f'python3 /solution/oom.py "/app/logs/$key.log" > {out}')
            t.expect_output(out, truth, "the answer")
            return
        root = ("The root exception is the original one: with chained exceptions it is the first traceback printed "
                "(a MemoryError raised while handling another error is not the root)." if k.chained else "")
        t.say("The pool ran out of memory. First find the crashed workers: the processes (pids) that ran a job "
              "whose last attempt failed with `MemoryError` as the root exception of its traceback. " + root)
        t.say("Then audit the heap trace for those processes only. It logs every allocator call, one per line: "
              "`<time> [<pid>] malloc(<size>) = <ptr> @ <function>+<offset>`, "
              + ("`calloc(<count>, <size>) = <ptr> ...` (count times size bytes), " if k.chained else "")
              + ("`realloc(<old>, <size>) = <new> ...` (ends the old block, starts one of the new size at the "
                 "returned address, which may be the same), " if k.retries else "")
              + "and `free(<ptr>) @ ...`. An address belongs to its process; freed addresses may be handed out "
              "again." + (" A call returning `0x0` failed and changed nothing; lines that are not allocator calls "
                          "are tracer notes." if k.warnings else ""))
        if v == "leaks":
            t.say("A block leaks if it is still allocated at the end of the trace; its site is the function of the "
                  "call that returned it. Over all crashed workers together, write one line per leaking site, "
                  "`<function><TAB><leaked blocks><TAB><leaked bytes>`, sorted by leaked bytes (largest first), "
                  "ties by function name in byte order.")
            out = "/app/out/leaks.tsv"
        elif v == "peak":
            t.say("For each crashed worker, the peak of its live heap bytes (the sizes of its blocks allocated and "
                  "not yet freed, at the worst moment of the trace): one line per worker, `<pid><TAB><bytes>`, "
                  "sorted by pid numerically.")
            out = "/app/out/peaks.tsv"
        else:
            t.say("For each crashed worker, its biggest leaking site: of its blocks still allocated at the end of "
                  "the trace, grouped by the function of the call that returned them, the function with the most "
                  "bytes (ties: the function name first in byte order). One line per worker, "
                  "`<pid><TAB><function><TAB><bytes>`, sorted by pid numerically.")
            out = "/app/out/top_sites.tsv"
        t.add_solution_file("oom.py", src)
        t.solve(f'test -n "{who}"\nmkdir -p /app/out\nkey={key_cmd(who)}\n'
                f'python3 /solution/oom.py "/app/logs/$key.log" "/app/traces/$key.trace" > {out}')
        t.expect_output(out, truth, "the result")
