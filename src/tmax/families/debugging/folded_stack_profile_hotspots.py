"""Find where a service burns CPU from its sampling profile. `perf record -g` was run on every host of
the fleet and folded with `stackcollapse-perf.pl` (one line per call stack: `main;serve;parse 42`);
the host to look at is named by a delivered host name. Variants: rank functions by self samples (the
leaf of each stack), by inclusive samples (stacks that have the function anywhere, recursion counted
once), or compare a before and an after profile of a release and name the functions whose share of
self time grew most (the regression). Traps by level: the same stack on several lines, recursion,
stacks of other processes (the first frame is the process name), inlined frames marked `_[i]`,
kernel frames marked `_[k]` whose time belongs to the user-space caller, `[unknown]` frames, and a
profile split over several files."""

from __future__ import annotations

from dataclasses import dataclass

from tmax.families.base import Family, TaskBuilder, register
from tmax.families.programs import fill, host_files, run_python
from tmax.families.unseen import distinct, key_cmd, key_of, unseen

REFERENCE = r'''
import glob
import os
import sys

VARIANT = @VARIANT@
TOP = @TOP@  # lines of the ranking (0: every function)
COMM = @COMM@  # the first frame is the process name (None: stacks start at main)


def stacks(paths):
    """(frames, samples) of our process, with the frames that are no functions of ours taken off."""
    out = []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            for line in f:
                line = line.rstrip("\n")
                if not line.strip():
                    continue
                frames, _, n = line.rpartition(" ")
                frames = frames.split(";")
                if COMM is not None:
                    if frames[0] != COMM:
                        continue  # another process
                    frames = frames[1:]
                frames = [fr[:-4] if fr.endswith("_[i]") else fr for fr in frames if fr != "[unknown]"]
                while frames and frames[-1].endswith("_[k]"):
                    frames.pop()  # time in the kernel belongs to the user-space caller
                if frames:
                    out.append((frames, int(n)))
    return out


def self_samples(st):
    counts = {}
    for frames, n in st:
        counts[frames[-1]] = counts.get(frames[-1], 0) + n
    return counts


def ranked(counts):
    rows = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return rows[:TOP] if TOP else rows


def report(root):
    if VARIANT == "regression":
        share = []
        for phase in ("before", "after"):
            counts = self_samples(stacks(sorted(glob.glob(os.path.join(root, phase + "*.folded")))))
            total = sum(counts.values())
            share.append({fn: 100.0 * n / total for fn, n in counts.items()})
        before, after = share
        change = {fn: after.get(fn, 0.0) - before.get(fn, 0.0) for fn in sorted(set(before) | set(after))}
        rows = sorted(change.items(), key=lambda kv: (-kv[1], kv[0]))
        return "".join(f"{fn}\t{before.get(fn, 0.0):.2f}\t{after.get(fn, 0.0):.2f}\n" for fn, _ in rows)
    st = stacks(sorted(glob.glob(os.path.join(root, "*.folded"))))
    if VARIANT == "self":
        counts = self_samples(st)
    else:
        counts = {}
        for frames, n in st:
            for fn in sorted(set(frames)):  # a recursive function is on the stack once
                counts[fn] = counts.get(fn, 0) + n
    return "".join(f"{n}\t{fn}\n" for fn, n in ranked(counts))


if __name__ == "__main__":
    sys.stdout.write(report(sys.argv[1]))
'''

FUNCS = ("serve", "accept_loop", "handle_request", "route", "parse_headers", "parse_json", "json_value",
         "decode_utf8", "render_page", "template_expand", "escape_html", "db_query", "pg_exec", "row_decode",
         "cache_get", "hash_key", "lru_touch", "compress", "deflate_block", "crc32", "tls_write", "aes_encrypt",
         "sha256_block", "regex_match", "nfa_step", "log_write", "fmt_int", "malloc", "free", "memcpy",
         "strlen", "qsort", "cmp_rows", "walk_tree", "visit_node", "gc_mark", "gc_sweep", "buf_append")
KERNEL = ("entry_SYSCALL_64_[k]", "do_syscall_64_[k]", "ksys_write_[k]", "vfs_write_[k]", "tcp_sendmsg_[k]",
          "copy_user_enhanced_fast_string_[k]", "page_fault_[k]", "clear_page_erms_[k]")
OTHERS = ("swapper;secondary_startup_64_[k];cpu_startup_entry_[k];do_idle_[k]", "perf;__libc_write;"
          "entry_SYSCALL_64_[k];ksys_write_[k]", "sshd;main;select;entry_SYSCALL_64_[k]",
          "kworker/2:1;worker_thread_[k];process_one_work_[k]")
PROG = "ingestd"


@dataclass(frozen=True)
class Knobs:
    stacks: int  # distinct call stacks walked
    funcs: int  # functions in the call graph
    top: int  # lines of a ranking (0: every function)
    dups: bool  # a stack on several lines
    comm: bool  # stacks start with the process name; other processes' stacks are mixed in; recursion
    inline: bool  # inlined frames marked _[i]
    kernel: bool  # kernel frames _[k] at the leaf and [unknown] frames
    chunks: int  # files a profile is split over


@register
class FoldedStackProfileHotspots(Family):
    name = "folded_stack_profile_hotspots"
    domain = "debugging"
    skill_types = ("Fault Localization", "Regression Hunting")
    primitive_skills = ("reading a stack trace", "comparing expected and actual output",
                        "separating application frames from library frames", "correlating interleaved log lines")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("self", "inclusive", "regression")
    levels = {0: Knobs(stacks=8, funcs=8, top=3, dups=False, comm=False, inline=False, kernel=False, chunks=1),
              1: Knobs(stacks=25, funcs=14, top=5, dups=True, comm=False, inline=False, kernel=False, chunks=1),
              2: Knobs(stacks=50, funcs=20, top=8, dups=True, comm=True, inline=False, kernel=False, chunks=1),
              3: Knobs(stacks=80, funcs=26, top=10, dups=True, comm=True, inline=True, kernel=False, chunks=2),
              4: Knobs(stacks=120, funcs=32, top=10, dups=True, comm=True, inline=True, kernel=True, chunks=3)}

    def _graph(self, t):
        """A layered call graph below main: a function calls only later ones (plus itself if recursive)."""
        rng, k = t.rng, t.knobs
        names = ["main", *rng.sample(FUNCS, k.funcs - 1)]
        calls = {f: sorted(rng.sample(names[i + 1:], min(len(names) - i - 1, rng.randrange(1, 4))))
                 for i, f in enumerate(names)}
        rec = sorted(rng.sample(names[2:-1], 2)) if k.comm else []
        inl = sorted(rng.sample(names[2:], 3)) if k.inline else []
        return calls, rec, inl

    def _profile(self, t, graph):
        """Distinct stacks (as frame tuples) to sample counts, walked down the call graph from main."""
        rng, k = t.rng, t.knobs
        calls, rec, _ = graph
        counts = {}
        for _ in range(k.stacks):
            st = ["main"]
            for _ in range(4 * k.funcs):  # the graph is layered: every walk ends well before
                f = st[-1]
                if f in rec and st.count(f) < 4 and rng.random() < 0.4:
                    st.append(f)
                elif calls[f] and rng.random() < 0.7:
                    st.append(rng.choice(calls[f]))
                else:
                    break
            n = int(rng.paretovariate(1.5) * 5) + 1
            counts[tuple(st)] = counts.get(tuple(st), 0) + min(n, 300)
        return counts

    def _lines(self, t, graph, counts):
        """The folded text(s) of one profile: ``k.chunks`` files."""
        rng, k = t.rng, t.knobs
        _, _, inl = graph
        lines = []
        for st in sorted(counts):
            frames = [f + "_[i]" if f in inl and rng.random() < 0.6 else f for f in st]
            if k.kernel and rng.random() < 0.25:
                i = rng.randrange(1, len(frames) + 1)
                frames.insert(i, "[unknown]")
            if k.kernel and rng.random() < 0.3:
                frames += KERNEL[:rng.randrange(2, 5)] if rng.random() < 0.7 else KERNEL[-2:]
            if k.comm:
                frames.insert(0, PROG)
            n = counts[st]
            parts = [n]
            if k.dups and n > 3 and rng.random() < 0.3:  # several runs folded into one file
                cut = rng.randrange(1, n)
                parts = [cut, n - cut]
            lines += [(";".join(frames), p) for p in parts]
        if k.comm:
            lines += [(o, rng.randrange(5, 300)) for o in OTHERS]
        rng.shuffle(lines)
        files = [[] for _ in range(k.chunks)]
        for i, (fr, n) in enumerate(lines):
            files[i % k.chunks if i < k.chunks else rng.randrange(k.chunks)].append(f"{fr} {n}\n")
        return ["".join(f) for f in files]

    def _host(self, t, v):
        """One host's profile directory: file name -> text."""
        graph = self._graph(t)
        if v != "regression":
            texts = self._lines(t, graph, self._profile(t, graph))
            return {f"cpu-{i + 1}.folded": x for i, x in enumerate(texts)}
        rng = t.rng
        before = self._profile(t, graph)
        # The new release: the same stacks with sampling noise, one or two leaf functions several times slower.
        leaves = sorted({st[-1] for st in before} - {"main"}) or ["main"]
        slow = {f: rng.randrange(3, 7) for f in rng.sample(leaves, min(len(leaves), 1 + (t.level >= 3)))}
        after = {st: max(1, round(n * rng.uniform(0.8, 1.25))) * slow.get(st[-1], 1)
                 for st, n in sorted(before.items())}
        out = {}
        for phase, counts in (("before", before), ("after", after)):
            for i, x in enumerate(self._lines(t, graph, counts)):
                out[f"{phase}-{i + 1}.folded"] = x
        return out

    def output_case(self, t: TaskBuilder) -> None:
        k, v = t.knobs, t.variant
        top = {"self": k.top if t.level >= 2 else 0, "inclusive": k.top, "regression": 0}[v]
        src = fill(REFERENCE, VARIANT=repr(v), TOP=top, COMM=repr(PROG) if k.comm else "None")
        ref = run_python(src)
        hosts = [self._host(t, v) for _ in range(4 if t.level else 2)]
        # The host name is the delivered value; each profile lies under a hash of it, so the neighbours
        # are indistinguishable without it.
        host = unseen(t, lambda: t.code(2), *(x for h in hosts for _, x in sorted(h.items())))
        names = [host, *distinct(lambda: t.code(2), len(hosts) - 1, [host])]
        for name, files in sorted(zip(names, hosts), key=lambda nf: key_of(nf[0])):
            for fn, text in sorted(files.items()):
                t.add_file(f"/app/profiles/{key_of(name)}/{fn}", text)
        with host_files(hosts[0]) as (d, _):
            truth = ref["report"](d)
        t.say(f"`{PROG}` is using far too much CPU. We ran `perf record -g` on each host and folded the samples "
              "with `stackcollapse-perf.pl`: each line is a call stack, outermost frame first, frames joined by "
              "`;`, then a space and the number of samples (`main;serve;parse_json 42`). Each host's profile is in "
              "`/app/profiles/<KEY>/`, where KEY is the first 16 hex digits of the SHA-256 of the host name "
              "(`printf %s <host> | sha256sum`). Look only at the host given below.")
        who = t.deliver(host, "the host name")
        rules = []
        if v == "regression":
            rules.append("It has two profiles, one of the old release (`before*.folded`) and one of the new release "
                         "(`after*.folded`)" + (", each split over several files (add them up)." if k.chunks > 1
                                                else "."))
        elif k.chunks > 1:
            rules.append("The profile is split over several `*.folded` files: add them up.")
        if k.dups:
            rules.append("The same stack can appear on several lines; its samples add up.")
        if k.comm:
            rules.append(f"The first frame of a stack is the process name: only `{PROG}`'s stacks count, and the "
                         "process name is not a function.")
        if k.inline:
            rules.append("A frame `<name>_[i]` is the function `<name>`, inlined into its caller.")
        if k.kernel:
            rules.append("Frames ending in `_[k]` are the kernel's: samples whose innermost frames are kernel "
                         "frames count for the innermost user-space frame. `[unknown]` frames are not functions: "
                         "leave them out of the stack.")
        if rules:
            t.say(" ".join(rules))
        self_def = "A function's self samples are the samples of the stacks whose innermost frame it is."
        if v == "self":
            t.say(f"{self_def} Rank the functions by self samples: write "
                  + (f"the top {top} as lines" if top else "one line per function with any self samples,")
                  + " `<self samples><TAB><function>`, most first, ties by function name in byte order.")
            out = "/app/out/self.tsv"
        elif v == "inclusive":
            t.say("A function's inclusive samples are the samples of the stacks it appears in anywhere"
                  + (" (a stack with a recursive function in it several times counts once)" if k.comm else "")
                  + f". Rank the functions by inclusive samples: write the top {top} as lines `<inclusive samples>"
                  "<TAB><function>`, most first, ties by function name in byte order.")
            out = "/app/out/inclusive.tsv"
        else:
            t.say(f"{self_def} A function's share of a profile is its self samples as a percentage of all the "
                  "samples of that profile" + (" that count" if k.comm else "") + ". Which functions got slower? "
                  "Write one line per function with self samples in either profile (a function missing from a "
                  "profile has share 0), `<function><TAB><share before><TAB><share after>`, both shares rounded to 2 "
                  "decimals, sorted by how much the share grew from before to after (largest growth first, computed "
                  "before rounding; shrinking shares last), ties by function name in byte order.")
            out = "/app/out/regression.tsv"
        t.add_solution_file("profile.py", src)
        t.solve(f'test -n "{who}"\nmkdir -p /app/out\nkey={key_cmd(who)}\n'
                f'python3 /solution/profile.py "/app/profiles/$key" > {out}')
        t.expect_output(out, truth, {"self": "the self-time ranking", "inclusive": "the inclusive ranking",
                                     "regression": "the regression report"}[v])
