"""Audit an allocation trace: a preload tracer logged every malloc/calloc/realloc/free of a run, and
the run to look at is named by a delivered run id. Variants: which allocation sites leak (blocks
never freed, by site), which frees are bad (double or invalid frees, by trace line), or the peak of
live heap bytes. Traps by level: calloc sizes (count times size), realloc moving a block, free(NULL),
addresses reused after a free (a later free of the same address is fine), several processes in one
trace (an address belongs to its process), failed allocations that return NULL (a failed realloc
leaves the old block live) and tracer notes between the calls."""

from __future__ import annotations

from dataclasses import dataclass

from tmax.families.base import Family, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.unseen import distinct, key_cmd, key_of, unseen

REFERENCE = r'''
import re
import sys

VARIANT = @VARIANT@
CALL = re.compile(r"^\S+ \[(\d+)\] (malloc|calloc|realloc|free)\(([^)]*)\)"
                  r"(?: = (0x[0-9a-f]+))?(?: @ (\w+)\+0x[0-9a-f]+)?$")


def audit(text):
    live = {}  # (pid, address) -> (size, site)
    seen = set()  # (pid, address) ever returned by an allocator
    bad, cur, peak = [], 0, 0
    for no, line in enumerate(text.splitlines(), 1):
        m = CALL.match(line)
        if not m:
            continue  # a tracer note
        pid, fn, args, ret, site = m.groups()
        args = [a.strip() for a in args.split(",")]
        if fn == "free":
            key = (pid, args[0])
            if args[0] == "0x0":
                continue  # free(NULL) does nothing
            if key in live:
                cur -= live.pop(key)[0]
            else:
                bad.append((no, args[0], "double-free" if key in seen else "invalid"))
            continue
        if ret == "0x0":
            continue  # the allocation failed: nothing changes (a failed realloc keeps the old block)
        if fn == "malloc":
            size = int(args[0])
        elif fn == "calloc":
            size = int(args[0]) * int(args[1])
        else:
            size = int(args[1])
            old = (pid, args[0])
            if args[0] != "0x0" and old in live:
                cur -= live.pop(old)[0]
        live[(pid, ret)] = (size, site)
        seen.add((pid, ret))
        cur += size
        peak = max(peak, cur)
    return live, bad, peak


def report(text):
    live, bad, peak = audit(text)
    if VARIANT == "leaks":
        sites = {}
        for key in sorted(live):
            size, site = live[key]
            s = sites.setdefault(site, [0, 0])
            s[0] += 1
            s[1] += size
        rows = sorted(sites.items(), key=lambda kv: (-kv[1][1], kv[0]))
        return "".join(f"{site}\t{n}\t{b}\n" for site, (n, b) in rows)
    if VARIANT == "bad_frees":
        return "".join(f"{no}\t{ptr}\t{kind}\n" for no, ptr, kind in bad)
    return f"{peak}\n"


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as f:
        sys.stdout.write(report(f.read()))
'''

SITES = ("parse_header", "read_chunk", "load_table", "intern_string", "new_session", "alloc_buffer", "grow_vec",
         "dup_path", "make_node", "copy_record", "open_stream", "cache_put", "build_index", "split_fields")
NOTES = ("--- tracer: buffer flushed ---", "--- tracer: SIGCHLD ignored ---", "# tracer: symbols resolved lazily",
         "--- tracer: 0 calls dropped ---")


@dataclass(frozen=True)
class Knobs:
    calls: int  # allocator calls per process
    pids: int  # processes logged into one trace
    decoys: int  # traces of other runs beside the one asked about
    calloc: bool  # calloc(count, size)
    realloc: bool  # realloc moves blocks; free(NULL); addresses are reused after a free
    failures: bool  # failed allocations (= 0x0) and tracer notes between the calls
    bad: int  # bad frees per process (at least one in the bad_frees variant)


@register
class HeapTraceAudit(Family):
    name = "heap_trace_audit"
    domain = "debugging"
    skill_types = ("Fault Localization", "Crash Analysis")
    primitive_skills = ("reading an allocation trace", "memory leak accounting", "double free detection",
                        "correlating interleaved log lines", "print-debugging intermediate state")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("leaks", "bad_frees", "peak")
    levels = {0: Knobs(calls=14, pids=1, decoys=1, calloc=False, realloc=False, failures=False, bad=0),
              1: Knobs(calls=50, pids=1, decoys=2, calloc=True, realloc=False, failures=False, bad=1),
              2: Knobs(calls=120, pids=1, decoys=3, calloc=True, realloc=True, failures=False, bad=2),
              3: Knobs(calls=160, pids=3, decoys=3, calloc=True, realloc=True, failures=False, bad=2),
              4: Knobs(calls=220, pids=3, decoys=3, calloc=True, realloc=True, failures=True, bad=3)}

    def _process(self, t, pid, base, bad):
        """One process's calls as (pid, call text) in order."""
        k, rng = t.knobs, t.rng
        live, freed, out = {}, [], []
        nxt = [base]

        def fresh(n):
            a = nxt[0]
            nxt[0] += (n + 31) // 16 * 16 + rng.choice([0, 16, 32])
            return f"0x{a:x}"

        def addr(n):
            if k.realloc and freed and rng.random() < 0.35:  # the allocator hands a freed address out again
                return freed.pop(rng.randrange(len(freed)))
            return fresh(n)

        def site():
            return f" @ {rng.choice(SITES)}+0x{rng.randrange(16, 900):x}"

        bad_at = sorted(rng.sample(range(3, k.calls), bad))
        for i in range(k.calls):
            if i in bad_at:
                gone = [a for a in freed if a not in live]
                if gone and rng.random() < 0.6:
                    out.append(f"free({rng.choice(gone)})" + site())  # freed before: a double free
                else:  # never returned by the allocator (a stack or static address)
                    out.append(f"free(0x7ffd{rng.randrange(16 ** 8):08x})" + site())
                continue
            r = rng.random()
            if live and r < 0.4:
                a = rng.choice(sorted(live))
                del live[a]
                freed.append(a)
                out.append(f"free({a})" + site())
            elif k.realloc and live and r < 0.5:
                a = rng.choice(sorted(live))
                n = rng.randrange(16, 2048)
                if k.failures and rng.random() < 0.15:
                    out.append(f"realloc({a}, {n}) = 0x0" + site())
                    continue
                b = a if rng.random() < 0.3 else addr(n)
                del live[a]
                if b != a:
                    freed.append(a)
                live[b] = n
                out.append(f"realloc({a}, {n}) = {b}" + site())
            elif k.realloc and 0.5 <= r < 0.53:
                out.append("free(0x0)" + site())
            else:
                n = rng.randrange(8, 1024)
                call = f"malloc({n})"
                if k.calloc and rng.random() < 0.3:
                    c = rng.randrange(2, 12)
                    call, n = f"calloc({c}, {max(1, n // c)})", c * max(1, n // c)
                if k.failures and rng.random() < 0.05:
                    out.append(f"{call} = 0x0" + site())
                    continue
                a = addr(n)
                live[a] = n
                out.append(f"{call} = {a}" + site())
        if not live:  # every run leaks something
            n = rng.randrange(8, 1024)
            out.append(f"malloc({n}) = {fresh(n)}" + site())
        return [(pid, c) for c in out]

    def _trace(self, t, variant):
        k, rng = t.knobs, t.rng
        procs = []
        base = 0x55d0c2a00000 + rng.randrange(1 << 20) * 16  # forked workers share one address layout
        for _ in range(k.pids):
            pid = rng.randrange(1200, 32000)
            bad = max(k.bad, 1) if variant == "bad_frees" else k.bad
            procs.append(self._process(t, pid, base, bad))
        calls = []
        while any(procs):  # interleave the processes in random order, each kept in its own order
            p = rng.choice([p for p in procs if p])
            calls.append(p.pop(0))
        ts = rng.randrange(1000, 90000) + rng.random()
        lines = []
        for pid, call in calls:
            ts += rng.randrange(10, 3000) / 1e6
            if k.failures and rng.random() < 0.04:
                lines.append(f"{ts:.6f} [{pid}] {rng.choice(NOTES)}")
            lines.append(f"{ts:.6f} [{pid}] {call}")
        return "\n".join(lines) + "\n"

    def output_case(self, t: TaskBuilder) -> None:
        k, rng, v = t.knobs, t.rng, t.variant
        src = fill(REFERENCE, VARIANT=repr(v))
        ref = run_python(src)
        traces = [self._trace(t, v) for _ in range(1 + k.decoys)]
        # The run id is the delivered value; traces are stored under a hash of it, so the neighbours are
        # indistinguishable without it.
        run = unseen(t, lambda: t.code(2), *traces)
        names = [run, *distinct(lambda: t.code(2), k.decoys, [run])]
        for name, text in sorted(zip(names, traces), key=lambda nt: key_of(nt[0])):
            t.add_file(f"/app/traces/{key_of(name)}.trace", text)
        truth = ref["report"](traces[0])
        t.say("Our LD_PRELOAD heap tracer logs every allocator call of a run, one per line: "
              "`<time> [<pid>] malloc(<size>) = <ptr> @ <function>+<offset>`" + (", " if k.calloc else " and ")
              + ("`calloc(<count>, <size>) = <ptr> ...`, " if k.calloc else "")
              + ("`realloc(<old ptr>, <size>) = <new ptr> ...`, " if k.realloc else "")
              + ("and " if k.calloc else "") + "`free(<ptr>) @ ...` (no return value). The traces are in "
              "`/app/traces/<KEY>.trace`, where KEY is "
              "the first 16 hex digits of the SHA-256 of the run id (`printf %s <run id> | sha256sum`). Look only "
              "at the run given below.")
        who = t.deliver(run, "the run id")
        rules = []
        if k.calloc:
            rules.append("A calloc block holds count times size bytes.")
        if k.realloc:
            rules.append("A successful realloc ends the old block and starts a new one of the new size at the "
                         "returned address (which may be the same); `realloc(0x0, n)` is a malloc. `free(0x0)` does "
                         "nothing. The allocator hands freed addresses out again.")
        if k.pids > 1:
            rules.append("Several processes share the trace; an address belongs to its process (pid), so the same "
                         "address in two processes is two different blocks.")
        if k.failures:
            rules.append("A call that returns `0x0` failed and allocated nothing (a failed realloc leaves the old "
                         "block as it was). Lines that are not allocator calls are tracer notes: skip them.")
        if rules:
            t.say(" ".join(rules))
        if v == "leaks":
            t.say("Which allocation sites leak? A block leaks if it is still allocated at the end of the trace; its "
                  "site is the function of the call that returned it. Write one line per leaking site, "
                  "`<function><TAB><leaked blocks><TAB><leaked bytes>`, sorted by leaked bytes (largest first), "
                  "ties by function name in byte order.")
            out = "/app/out/leaks.tsv"
        elif v == "bad_frees":
            t.say("Find the bad frees: a `free` of a pointer that is not allocated at that moment (`free(0x0)` is "
                  "never bad). It is a `double-free` if the allocator had returned that address before"
                  + (" in that process" if k.pids > 1 else "") + ", otherwise `invalid`. Write one line per bad "
                  "free in trace order, `<line number in the trace file, from 1><TAB><ptr><TAB><double-free or "
                  "invalid>`.")
            out = "/app/out/bad_frees.tsv"
        else:
            t.say("What was the peak heap use? Live bytes are the sizes of all blocks allocated and not yet freed"
                  + (" (in all processes together)" if k.pids > 1 else "") + "; give the largest value they "
                  "reach at any point of the trace, in bytes. A bad free (of a pointer that is not allocated) "
                  "changes nothing.")
            out = "/app/out/peak.txt"
        t.add_solution_file("heap.py", src)
        t.solve(f'test -n "{who}"\nmkdir -p /app/out\nkey={key_cmd(who)}\n'
                f'python3 /solution/heap.py "/app/traces/$key.trace" > {out}')
        if v == "peak":
            t.expect_number(out, float(truth), rel_tol=1e-9, what="the peak live bytes")
        else:
            t.expect_output(out, truth, "the " + ("leak report" if v == "leaks" else "bad-free report"))
