"""Symbolize a fleet host's segfaults from its kernel log. Every crashed process left a line like
`ingestd[4242]: segfault at 18 ip 00007f3a1c2d4e5f sp ... error 4 in libparse.so.2[7f3a1c2c0000+9000]`;
the host to look at is named by a delivered host name and `nm -S` symbol tables of the shipped build
lie beside the logs. Variants: name the function (and offset) each crash happened in, count crashes
per function (the hotspots), or decode each fault from the page-fault error code and address (read,
write or instruction fetch; NULL, unmapped or protection). Traps by level: per-process load
addresses (ASLR), symbol tables out of address order with local and data symbols, crashes in the
executable itself, the error code printed in hex, instruction pointers in the padding between
functions, calls through a NULL pointer (no module at all), audit and `Code:` lines echoing a crash,
symbol tables of other library versions, and general protection traps in their own format."""

from __future__ import annotations

from dataclasses import dataclass

from tmax.families.base import Family, TaskBuilder, register
from tmax.families.programs import fill, host_files, run_python
from tmax.families.unseen import distinct, key_cmd, key_of, unseen

REFERENCE = r'''
import os
import re
import sys

VARIANT = @VARIANT@
SEGV = re.compile(r"\] (\S+)\[(\d+)\]: segfault at ([0-9a-f]+) ip ([0-9a-f]+) sp [0-9a-f]+ error ([0-9a-f]+)"
                  r"(?: in ([^\s\[]+)\[([0-9a-f]+)\+[0-9a-f]+\])?")
GPF = re.compile(r"\] traps: (\S+)\[(\d+)\] general protection fault ip:([0-9a-f]+) sp:[0-9a-f]+ error:[0-9a-f]+"
                 r" in ([^\s\[]+)\[([0-9a-f]+)\+[0-9a-f]+\]")
CODE = "TtWw"  # text symbols; data (D, B, R...) never holds an instruction pointer


def symbols(path):
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            parts = line.split()
            if len(parts) == 4 and parts[2] in CODE:
                out.append((int(parts[0], 16), int(parts[1], 16), parts[3]))
    return sorted(out)


def crashes(text):
    """(pid, kind, fault address or None, error code or None, module or None, offset in module)."""
    out = []
    for line in text.splitlines():
        m = SEGV.search(line)
        if m:
            _, pid, addr, ip, err, mod, base = m.groups()
            off = int(ip, 16) - int(base, 16) if mod else None
            out.append((pid, "segv", int(addr, 16), int(err, 16), mod, off))
            continue
        m = GPF.search(line)
        if m:
            _, pid, ip, mod, base = m.groups()
            out.append((pid, "gp", None, None, mod, int(ip, 16) - int(base, 16)))
    return out


def where(symdir, mod, off, cache):
    if mod is None:
        return "??", "??"
    if mod not in cache:
        cache[mod] = symbols(os.path.join(symdir, mod + ".sym"))
    best = None
    for addr, size, name in cache[mod]:
        if addr <= off:
            best = (addr, size, name)
    if best is None or off >= best[0] + best[1]:
        return mod, "??"
    return mod, f"{best[2]}+0x{off - best[0]:x}"


def kind(addr, err):
    access = "exec" if err & 0x10 else "write" if err & 0x2 else "read"
    cause = "null" if addr < 0x1000 else "protection" if err & 0x1 else "unmapped"
    return access, cause


def report(text, symdir):
    rows, cache = [], {}
    for pid, k, addr, err, mod, off in crashes(text):
        if VARIANT == "fault_kind":
            access, cause = ("gp", "protection") if k == "gp" else kind(addr, err)
            rows.append(f"{pid}\t{access}\t{cause}\n")
        else:
            m, fn = where(symdir, mod, off, cache)
            rows.append((pid, m, fn))
    if VARIANT == "fault_kind":
        return "".join(rows)
    if VARIANT == "symbolize":
        return "".join(f"{pid}\t{m}\t{fn}\n" for pid, m, fn in rows)
    counts = {}
    for _, m, fn in rows:
        if fn != "??":
            key = (m, fn.split("+")[0])
            counts[key] = counts.get(key, 0) + 1
    order = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return "".join(f"{n}\t{m}\t{fn}\n" for (m, fn), n in order)


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as f:
        sys.stdout.write(report(f.read(), sys.argv[2]))
'''

LIBS = ("libparse.so.2", "libnet.so.1", "libstore.so.3", "libjson.so.0", "libzip.so.1", "libcrypt.so.4")
PROGS = ("ingestd", "workerd", "feedsync", "indexer")
FUNCS = ("parse_header", "read_chunk", "load_table", "intern_string", "session_new", "buf_grow", "vec_push",
         "path_join", "node_make", "record_copy", "stream_open", "cache_put", "index_build", "split_fields",
         "hash_mix", "frame_decode", "json_value", "token_next", "conn_close", "queue_pop", "map_lookup",
         "str_dup", "list_free", "checksum", "inflate_block", "key_compare", "io_flush", "timer_fire")
DATA = ("config_table", "default_opts", "crc_table", "version_str", "log_level", "pool_state")
NOISE = ("EXT4-fs (nvme0n1p2): re-mounted. Quota mode: none.", "systemd-journald[412]: Data hash table of "
         "/var/log/journal/system.journal has a fill level at 75.1, suggesting rotation.",
         "IPv6: ADDRCONF(NETDEV_CHANGE): eth0: link becomes ready", "perf: interrupt took too long, lowering "
         "kernel.perf_event_max_sample_rate to 79750")


@dataclass(frozen=True)
class Knobs:
    crashes: int  # crash lines in the host's log
    libs: int  # shared libraries the crashes land in
    funcs: int  # functions per symbol table
    shuffled: bool  # symbol tables out of address order, with local and data symbols; the executable crashes too
    traps: int  # 1: hex error codes, padding hits, NULL calls, echo lines, decoy versions; 2: + GP traps
    decoys: int  # other hosts' logs beside the one asked about


@register
class SegfaultAddressSymbolize(Family):
    name = "segfault_address_symbolize"
    domain = "debugging"
    skill_types = ("Crash Analysis", "Fault Localization")
    primitive_skills = ("symbolizing crash addresses", "classifying failure signatures",
                        "correlating interleaved log lines", "reading a stack trace")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("symbolize", "hotspots", "fault_kind")
    levels = {0: Knobs(crashes=4, libs=1, funcs=5, shuffled=False, traps=0, decoys=1),
              1: Knobs(crashes=10, libs=2, funcs=8, shuffled=False, traps=0, decoys=2),
              2: Knobs(crashes=18, libs=3, funcs=12, shuffled=True, traps=0, decoys=3),
              3: Knobs(crashes=28, libs=3, funcs=16, shuffled=True, traps=1, decoys=3),
              4: Knobs(crashes=40, libs=4, funcs=20, shuffled=True, traps=2, decoys=3)}

    def _table(self, t, n):
        """One module's functions as (address, size, type, name), laid out upwards with padding between."""
        rng = t.rng
        addr, out = 0x1000 + rng.randrange(0, 64) * 16, []
        for name in rng.sample(FUNCS, n):
            size = rng.randrange(3, 80) * 16 + rng.choice([0, 4, 9])
            typ = "t" if t.knobs.shuffled and rng.random() < 0.25 else "T"
            out.append((addr, size, typ, name))
            addr += size + rng.choice([0, 16, 32, 48]) + (16 - size % 16) % 16
        return out

    def _symfile(self, t, table):
        rng, k = t.rng, t.knobs
        rows = list(table)
        if k.shuffled:  # nm without -n lists by name; data objects sit beside the code
            end = table[-1][0] + table[-1][1]
            for i, d in enumerate(rng.sample(DATA, 3)):
                rows.append((end + 0x200 + i * 0x40 + rng.randrange(0, 4) * 16, 0x40, rng.choice("DdBR"), d))
            rows.sort(key=lambda r: r[3])
        return "".join(f"{a:016x} {s:016x} {ty} {n}\n" for a, s, ty, n in rows)

    def _log(self, t, prog, tables):
        """One host's kernel log and nothing else: the crash lines among echoes and noise."""
        k, rng = t.knobs, t.rng
        mods = sorted(tables)
        ts, lines, pids = rng.randrange(300, 90000) + rng.random(), [], set()
        for i in range(k.crashes):
            ts += rng.randrange(1, 4000) + rng.random()
            stamp = f"[{ts:12.6f}]"
            pid = rng.randrange(1000, 60000)
            while pid in pids:  # a crashed process is gone: every crash has its own pid
                pid = rng.randrange(1000, 60000)
            pids.add(pid)
            mod = mods[min(int(rng.random() ** 1.6 * len(mods)), len(mods) - 1)]  # skewed: hotspots exist
            table = tables[mod]
            fn = table[min(int(rng.random() ** 2 * len(table)), len(table) - 1)]
            if k.traps and rng.random() < 0.12:  # in the padding after a function: no symbol covers it
                off = fn[0] + fn[1] + (0 if rng.random() < 0.5 else 3)
                nxt = [s for s in table if s[0] > fn[0]]
                if nxt and off >= nxt[0][0]:
                    off = fn[0] + rng.randrange(fn[1])
            else:
                off = fn[0] + rng.randrange(fn[1])
            span = (table[-1][0] + table[-1][1] + 0xfff) // 0x1000 * 0x1000
            base = (0x7f0000000 + rng.randrange(0x10000000)) * 0x1000 if mod != prog else \
                (0x550000000 + rng.randrange(0x10000000)) * 0x1000
            sp = 0x7ffc00000000 + rng.randrange(1 << 32) & ~0xf
            if k.traps >= 2 and rng.random() < 0.15:
                lines.append(f"{stamp} traps: {prog}[{pid}] general protection fault ip:{base + off:x} sp:{sp:x} "
                             f"error:0 in {mod}[{base:x}+{span:x}]")
                continue
            hex_err = k.traps >= 1
            if k.traps and rng.random() < 0.1:  # a call through a NULL function pointer: no module
                addr, ip, err, where = 0, 0, rng.choice([0x14, 0x15]), ""
            else:
                addr = rng.choice([rng.randrange(0, 0x100) * 8, rng.randrange(0x1000, 0x10000) * 16,
                                   (0x56000000000 + rng.randrange(1 << 32)) * 16])
                err = rng.choice([4, 6, 7, 5] if hex_err else [4, 6, 4, 6, 7] if t.level else [4, 6])
                ip, where = base + off, f" in {mod}[{base:x}+{span:x}]"
            cpu = f" likely on CPU {rng.randrange(16)} (core {rng.randrange(8)}, socket 0)" if k.traps else ""
            lines.append(f"{stamp} {prog}[{pid}]: segfault at {addr:x} ip {ip:016x} sp {sp:016x} error {err:x}"
                         f"{where}{cpu}")
            if k.traps and rng.random() < 0.4:  # the faulting bytes: not a crash of its own
                lines.append(f"{stamp} Code: " + " ".join(f"{rng.randrange(256):02x}" for _ in range(12)))
            if k.traps and rng.random() < 0.3:
                lines.append(f"{stamp} audit: type=1701 audit({int(ts)}.{rng.randrange(1000):03d}:{rng.randrange(99)}):"
                             f" auid=4294967295 uid=998 gid=998 ses=4294967295 pid={pid} comm=\"{prog}\" "
                             f"exe=\"/usr/bin/{prog}\" sig=11 res=1")
            if k.shuffled and rng.random() < 0.2:
                lines.append(f"{stamp} {rng.choice(NOISE)}")
        return "\n".join(lines) + "\n"

    def output_case(self, t: TaskBuilder) -> None:
        k, rng, v = t.knobs, t.rng, t.variant
        src = fill(REFERENCE, VARIANT=repr(v))
        ref = run_python(src)
        prog = rng.choice(PROGS)
        libs = rng.sample(LIBS, k.libs)
        tables = {lib: self._table(t, k.funcs) for lib in libs}
        if k.shuffled:  # the executable's own code crashes too
            tables[prog] = self._table(t, max(4, k.funcs // 2))
        symfiles = {mod: self._symfile(t, tab) for mod, tab in tables.items()}
        if k.traps:  # another build's tables of the same libraries: the log names the version that ran
            for lib in libs[:2]:
                other = lib + "." + str(rng.randrange(1, 9))
                symfiles[other] = self._symfile(t, self._table(t, k.funcs))
        logs = [self._log(t, prog, tables) for _ in range(1 + k.decoys)]
        for mod in sorted(symfiles):
            t.add_file(f"/app/symbols/{mod}.sym", symfiles[mod])
        # The host name is the delivered value; logs are stored under a hash of it, so the neighbours are
        # indistinguishable without it.
        host = unseen(t, lambda: t.code(2), *logs)
        names = [host, *distinct(lambda: t.code(2), k.decoys, [host])]
        for name, text in sorted(zip(names, logs), key=lambda nt: key_of(nt[0])):
            t.add_file(f"/app/kern/{key_of(name)}.log", text)
        with host_files({f"{m}.sym": s for m, s in sorted(symfiles.items())}) as (d, _):
            truth = ref["report"](logs[0], d)
        t.say(f"`{prog}` keeps crashing across the fleet. Each host's kernel log is in `/app/kern/<KEY>.log`, "
              "where KEY is the first 16 hex digits of the SHA-256 of the host name (`printf %s <host> | "
              "sha256sum`). A crash is logged as `<prog>[<pid>]: segfault at <fault address> ip <instruction "
              "pointer> sp <stack pointer> error <code> in <module>[<mapping start>+<mapping size>]`. Look only at "
              "the host given below.")
        who = t.deliver(host, "the host name")
        sym = ("`/app/symbols/<module>.sym` is `nm -S` output for each module of the build (`<address> <size> "
               "<type> <name>`, hex). A crash's offset in its module is the instruction pointer minus the mapping "
               "start (each process is loaded at its own address); it lies in the text symbol (type T, t, W or w) "
               "whose range `[address, address + size)` holds it.")
        if k.shuffled:
            sym += " The tables are not sorted by address and also list data symbols, which never hold code."
        rules = []
        if k.traps:
            rules.append("An offset that no text symbol's range holds is `??`, and a crash line without an "
                         "` in <module>[...]` part (the process jumped to an unmapped address) has module `??` "
                         "and function `??`. Audit records and `Code:` dumps repeat a crash; they are not crashes.")
        if k.traps >= 2:
            rules.append("General protection traps are crashes too, logged as `traps: <prog>[<pid>] general "
                         "protection fault ip:<ip> sp:<sp> error:<code> in <module>[<start>+<size>]`.")
        if v == "fault_kind":
            rules.append("The error code is a hex bit field of the page fault: 0x10 set means an instruction fetch "
                         "(`exec`), otherwise 0x2 set means a `write`, otherwise a `read`; 0x1 set means the page "
                         "was present (a protection fault).")
            t.say(" ".join(rules) + " For every crash of the host, in log order, write one line `<pid><TAB>"
                  "<access><TAB><cause>`, where access is `read`, `write` or `exec` and cause is `null` if the fault "
                  "address is below 0x1000, else `protection` if 0x1 is set, else `unmapped`."
                  + (" A general protection trap is `gp` and `protection`." if k.traps >= 2 else ""))
            out = "/app/out/faults.tsv"
        elif v == "symbolize":
            t.say(sym + " " + " ".join(rules) + " For every crash of the host, in log order, write one line "
                  "`<pid><TAB><module><TAB><function>+0x<offset from the function's start, lower-case hex>`.")
            out = "/app/out/symbolized.tsv"
        else:
            t.say(sym + " " + " ".join(rules) + " Which functions crash most? Write one line per function that "
                  "at least one of the host's crashes happened in, `<crashes><TAB><module><TAB><function>`, sorted "
                  "by crashes (most first), then module and function in byte order"
                  + (" (crashes outside every function are left out)." if k.traps else "."))
            out = "/app/out/hotspots.tsv"
        t.add_solution_file("segv.py", src)
        t.solve(f'test -n "{who}"\nmkdir -p /app/out\nkey={key_cmd(who)}\n'
                f'python3 /solution/segv.py "/app/kern/$key.log" /app/symbols > {out}')
        t.expect_output(out, truth, {"fault_kind": "the fault list", "symbolize": "the symbolized crashes",
                                     "hotspots": "the crash hotspots"}[v])
