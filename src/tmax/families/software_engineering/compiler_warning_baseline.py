"""Compare a C build's compiler warnings with the project's accepted-warnings baseline. Each build
folder (named by a hash of the build's branch, the delivered value, beside other branches' builds)
holds a GCC build log and `warnings-baseline.txt`. Variants: the warnings the baseline does not
cover (new), the baseline entries no longer emitted (stale, to delete), or the distinct warnings per
`-W` flag. Traps by level: notes and source context quoting `warning:`, header warnings repeated for
every translation unit, `./` and absolute paths, `-Werror=` flags, and make's directory chatter."""

from __future__ import annotations

from dataclasses import dataclass

from tmax.families.base import Family, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.unseen import distinct, key_cmd, key_of, unseen

REFERENCE = r'''
import re
import sys

MODE = @MODE@  # "new", "stale" or "by_flag"
ROOT = @ROOT@  # the checkout the build ran in: absolute paths under it are made relative
WARNING = re.compile(r"^([^\s:][^:]*):([0-9]+):([0-9]+): warning: (.*) \[(-W[^\]]+)\]$")


def norm_path(p):
    if p.startswith(ROOT):
        p = p[len(ROOT):]
    while p.startswith("./"):
        p = p[2:]
    return p


def norm_flag(f):
    return "-W" + f[len("-Werror="):] if f.startswith("-Werror=") else f


def warnings(log):
    """Distinct warnings as (file, line, column, flag, message), in first-seen order."""
    seen = []
    for line in log.splitlines():
        m = WARNING.match(line)
        if m:
            w = (norm_path(m.group(1)), int(m.group(2)), int(m.group(3)), norm_flag(m.group(5)), m.group(4))
            if w not in seen:
                seen.append(w)
    return seen


def baseline(text):
    out = set()
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            out.add(line)
    return out


def report(log, base):
    ws = warnings(log)
    current = {f"{f} [{flag}] {msg}" for f, _, _, flag, msg in ws}
    if MODE == "new":
        out = sorted(current - baseline(base))
    elif MODE == "stale":
        out = sorted(baseline(base) - current)
    else:
        counts = {}
        for w in ws:
            counts[w[3]] = counts.get(w[3], 0) + 1
        out = [f"{flag} {n}" for flag, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
    return "".join(line + "\n" for line in out)


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as f, open(sys.argv[2], encoding="utf-8") as g:
        sys.stdout.write(report(f.read(), g.read()))
'''

SOURCES = ("parser", "lexer", "buffer", "config", "net", "crypto", "store", "cli", "queue", "timer")
HEADERS = ("util", "compat", "bits", "alloc")
IDS = ("len", "tmp", "buf", "fd", "count", "ctx", "flags", "rc", "offset", "state", "item", "cfg")
FUNCS = ("parse_header", "read_block", "init", "flush_all", "on_timer", "lookup", "encode_frame", "main")
KINDS = (("-Wunused-variable", "unused variable '{id}'"), ("-Wunused-parameter", "unused parameter '{id}'"),
         ("-Wsign-compare", "comparison of integer expressions of different signedness: 'int' and 'size_t'"),
         ("-Wimplicit-fallthrough=", "this statement may fall through"),
         ("-Wmaybe-uninitialized", "'{id}' may be used uninitialized"),
         ("-Wshadow", "declaration of '{id}' shadows a previous local"),
         ("-Wformat=", "format '%d' expects argument of type 'int', but argument 2 has type 'long int'"),
         ("-Wunused-function", "'{id}' defined but not used"))
ROOT = "/work/repo/"


@dataclass(frozen=True)
class Knobs:
    units: int  # translation units compiled
    warnings: int  # warnings emitted in the sources (before header repeats)
    headers: int  # warnings in headers, repeated for every unit including the header
    traps: int  # 1: notes, source context quoting warning:; 3: ./ and absolute paths, -Werror=; 4: make chatter
    decoys: int  # other branches' builds


@register
class CompilerWarningBaseline(Family):
    name = "compiler_warning_baseline"
    domain = "software_engineering"
    skill_types = ("Build Systems",)
    primitive_skills = ("compiler diagnostic parsing", "baseline comparison", "regular expressions",
                        "sorting with tie-breaks", "text report formatting")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("new", "stale", "by_flag")
    levels = {0: Knobs(units=2, warnings=5, headers=0, traps=0, decoys=2),
              1: Knobs(units=4, warnings=10, headers=0, traps=1, decoys=3),
              2: Knobs(units=5, warnings=16, headers=2, traps=2, decoys=3),
              3: Knobs(units=7, warnings=24, headers=3, traps=3, decoys=3),
              4: Knobs(units=9, warnings=34, headers=4, traps=4, decoys=3)}

    def _warning(self, t: TaskBuilder, file: str) -> tuple:
        rng = t.rng
        flag, msg = rng.choice(KINDS)
        return (file, rng.randrange(5, 400), rng.randrange(2, 30), flag, msg.replace("{id}", rng.choice(IDS)))

    def _render(self, t: TaskBuilder, w: tuple, shown: str) -> list[str]:
        """One GCC diagnostic: the warning line, the source context, a caret line and maybe a note."""
        k, rng = t.knobs, t.rng
        file, line, col, flag, msg = w
        if k.traps >= 3 and rng.random() < 0.3:
            flag = "-Werror=" + flag[2:]
        ident = rng.choice(IDS)
        code = rng.choice([f"    int {ident};", "    if (i < n) {", f"    memcpy(dst, {ident}, n);", "    case 3:"])
        out = [f"{shown}:{line}:{col}: warning: {msg} [{flag}]", f"{line:5d} | {code}", "      |     ^~~~"]
        if k.traps >= 1 and rng.random() < 0.3:
            out.append(f"{shown}:{max(1, line - 3)}:{col}: note: '{rng.choice(IDS)}' was declared here")
        if k.traps >= 1 and rng.random() < 0.15:  # source context that itself says "warning:"
            out += [f"{line + 1:5d} |     log_msg(\"warning: queue full [-Wqueue]\");"]
        return out

    def _build(self, t: TaskBuilder) -> tuple[str, str]:
        """One branch's build: (build.log, warnings-baseline.txt)."""
        k, rng = t.knobs, t.rng
        units = rng.sample(SOURCES, k.units)
        headers = [f"include/{h}.h" for h in rng.sample(HEADERS, min(k.headers, len(HEADERS)))]
        per_unit = {u: [] for u in units}
        for _ in range(k.warnings):
            u = rng.choice(units)
            per_unit[u].append(self._warning(t, f"src/{u}.c"))
        header_ws = [self._warning(t, h) for h in headers]
        log = []
        if k.traps >= 4:
            log.append(f"make[1]: Entering directory '{ROOT}build'")
        for u in units:
            src = f"src/{u}.c"
            log.append(f"gcc -O2 -Wall -Wextra -Iinclude -c -o build/{u}.o {src}")
            for w in header_ws:  # a header's warning shows up in every unit that includes it
                if rng.random() < 0.7:
                    shown = w[0] if k.traps < 3 else rng.choice([w[0], "./" + w[0], ROOT + w[0]])
                    log += [f"In file included from {src}:{rng.randrange(2, 9)}:"] + self._render(t, w, shown)
            for w in sorted(per_unit[u], key=lambda x: x[1]):
                shown = src if k.traps < 3 else rng.choice([src, "./" + src, ROOT + src])
                log += [f"{shown}: In function '{rng.choice(FUNCS)}':"] + self._render(t, w, shown)
        if k.traps >= 4:
            log.append(f"make[1]: Leaving directory '{ROOT}build'")
        log.append(f"gcc -o build/app {' '.join(f'build/{u}.o' for u in units)}")
        ws = run_python(fill(REFERENCE, MODE=repr("new"), ROOT=repr(ROOT)))["warnings"]("\n".join(log))
        current = sorted({f"{f} [{flag}] {msg}" for f, _, _, flag, msg in ws})
        kept = rng.sample(current, max(1, len(current) * 3 // 5))
        if len(kept) == len(current):  # at least one new warning
            kept = kept[1:]
        stale = []
        for _ in range(max(1, k.warnings // 5)):  # warnings fixed since the baseline was written
            f, _, _, flag, msg = self._warning(t, f"src/{rng.choice(SOURCES)}.c")
            stale.append(f"{f} [{flag}] {msg}")
        base = sorted(set(kept + stale))
        if k.traps >= 1:
            base = ["# accepted warnings: <file> [<flag>] <message>", ""] + base
        return "\n".join(log) + "\n", "\n".join(base) + "\n"

    def output_case(self, t: TaskBuilder) -> None:
        k, v = t.knobs, t.variant
        src = fill(REFERENCE, MODE=repr(v), ROOT=repr(ROOT))
        report = run_python(src)["report"]
        builds = []
        while len(builds) < 50:  # stale entries may all be re-emitted by chance: draw again
            builds.append(self._build(t))
            if report(*builds[-1]).strip():
                break
        builds = builds[-1:] + [self._build(t) for _ in range(k.decoys)]
        truth = report(*builds[0])
        branch = unseen(t, lambda: t.code(2), *(x for b in builds for x in b))
        keys = [key_of(n) for n in [branch, *distinct(lambda: t.code(2), k.decoys, [branch])]]
        for key, (log, base) in zip(keys, builds):
            t.add_file(f"/app/builds/{key}/build.log", log)
            t.add_file(f"/app/builds/{key}/warnings-baseline.txt", base)
        t.say("Every branch's CI build is kept under `/app/builds/<KEY>/`, where KEY is the first 16 hex digits of "
              "the SHA-256 of the branch name (`printf %s <name> | sha256sum`): `build.log` (GCC's output) and "
              "`warnings-baseline.txt`, the accepted warnings, one `<file> [<flag>] <message>` per line"
              + (" (`#` lines are comments)." if k.traps >= 1 else "."))
        t.deliver(branch, "the branch name")
        notes = ["A warning is a log line `<file>:<line>:<column>: warning: <message> [<flag>]`"
                 + ("; notes, source context and caret lines are not warnings." if k.traps >= 1 else ".")]
        if k.headers:
            notes.append("A header's warning is printed again for every file that includes it: the same file, "
                         "line, column, flag and message is one warning.")
        if k.traps >= 3:
            notes.append(f"Paths are relative to the checkout: drop a leading `./` or `{ROOT}`. A flag "
                         "`-Werror=<name>` is the warning `-W<name>`.")
        ask = {"new": "List the warnings the baseline does not accept (compare `<file> [<flag>] <message>`, "
                      "whatever the line and column), each once in baseline form, sorted in byte order.",
               "stale": "List the baseline entries the build no longer emits (compare `<file> [<flag>] "
                        "<message>`, whatever the line and column), each once as written, sorted in byte order.",
               "by_flag": "Count the distinct warnings per flag: one line `<flag> <count>` per flag, the largest "
                          "count first, ties by flag in byte order."}[v]
        t.say(" ".join(notes + [ask]))
        t.add_solution_file("warning_diff.py", src)
        t.solve(f'mkdir -p /app/out\nkey={key_cmd("$V1")}\nd="/app/builds/$key"\ntest -d "$d"\n'
                'python3 /solution/warning_diff.py "$d/build.log" "$d/warnings-baseline.txt" > /app/out/warnings.txt')
        t.expect_output("/app/out/warnings.txt", truth, "the warnings report")
