"""Where is a service's test coverage missing? Each service's CI build leaves lcov tracefiles
(`*.info`: SF/DA/FN/BRDA records) and the change under review as a unified diff, in a folder named by
a hash of the service name (the delivered value), beside other services' builds. Variants: the
uncovered line ranges of each file, the per-file line coverage (worst first), or the diff coverage
(lines the change adds that the tests never run). Traps by level: function and branch records, tracefiles
from several test suites to merge, absolute build paths and stale LF/LH summaries, a file recorded
twice, and paths the coverage policy excludes."""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from tmax.families.base import Family, FamilyError, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.unseen import distinct, key_cmd, key_of, unseen

REFERENCE = r'''
import os
import re
import sys

MODE = @MODE@  # "uncovered", "percent" or "diff"
EXCLUDE = @EXCLUDE@  # path prefixes outside the product


def norm(path):
    """A path relative to the repository root (CI builds under .../repo/)."""
    return path.rsplit("/repo/", 1)[1] if "/repo/" in path else path


def merged(files):
    """Line hits summed over every tracefile and every record of a file: {path: {line: hits}}."""
    hits = {}
    for rel, text in files:
        if not rel.endswith(".info"):
            continue
        cur = None
        for line in text.splitlines():
            if line.startswith("SF:"):
                cur = hits.setdefault(norm(line[3:].strip()), {})
            elif line.startswith("DA:") and cur is not None:
                no, count = line[3:].split(",")[:2]
                cur[int(no)] = cur.get(int(no), 0) + int(count)
            elif line == "end_of_record":
                cur = None
    return {p: h for p, h in hits.items() if h and not p.startswith(EXCLUDE)}


def ranges(nums):
    out, start, prev = [], None, None
    for n in nums:
        if start is not None and n == prev + 1:
            prev = n
            continue
        if start is not None:
            out.append(f"{start}-{prev}" if prev > start else str(start))
        start = prev = n
    if start is not None:
        out.append(f"{start}-{prev}" if prev > start else str(start))
    return ",".join(out)


def added(diff):
    """{path: [new-file line numbers the diff adds]} from a unified diff."""
    out, path, no = {}, None, 0
    for line in diff.splitlines():
        if line.startswith("+++ "):
            name = line[4:].split("\t")[0]
            path = None if name == "/dev/null" else name[2:] if name.startswith("b/") else name
        elif line.startswith("--- "):
            continue
        elif line.startswith("@@"):
            no = int(re.match(r"@@ -[0-9,]+ \+([0-9]+)", line).group(1))
        elif path is not None and line.startswith("+"):
            out.setdefault(path, []).append(no)
            no += 1
        elif path is not None and line.startswith(" "):
            no += 1
    return out


def report(files):
    hits = merged(files)
    out = []
    if MODE == "uncovered":
        for p in sorted(hits):
            zero = sorted(n for n, c in hits[p].items() if c == 0)
            if zero:
                out.append(f"{p}:{ranges(zero)}")
    elif MODE == "percent":
        rows = []
        for p, h in hits.items():
            lh, lf = sum(1 for c in h.values() if c > 0), len(h)
            rows.append((lh * 1000 // lf, p, f"{p} {lh}/{lf} {lh * 1000 // lf // 10}.{lh * 1000 // lf % 10}"))
        out = [r[2] for r in sorted(rows)]
    else:
        diff = "".join(text for rel, text in files if rel.endswith(".diff"))
        for p, nums in sorted(added(diff).items()):
            if p.startswith(EXCLUDE) or p not in hits:
                continue
            out += [f"{p}:{n}" for n in sorted(nums) if hits[p].get(n) == 0]
    return "".join(line + "\n" for line in out)


def read_tree(root):
    files = []
    for name in sorted(os.listdir(root)):
        with open(os.path.join(root, name), encoding="utf-8") as f:
            files.append((name, f.read()))
    return files


if __name__ == "__main__":
    sys.stdout.write(report(read_tree(sys.argv[1])))
'''

MODULES = ("billing", "auth", "search", "ledger", "notify", "export", "quota", "router")
FILES = ("handlers.py", "models.py", "client.py", "cache.py", "parser.py", "retry.py", "schema.py", "views.py")
FUNCS = ("load", "save", "parse", "render", "retry", "flush", "lookup", "merge", "validate", "encode")
SUITES = ("unit", "integration", "e2e")


@dataclass(frozen=True)
class Knobs:
    files: int  # source files in a service
    length: tuple[int, int]  # lines per file
    suites: int  # tracefiles (test suites) to merge
    traps: int  # 1: FN/BRDA records; 3: absolute build paths, stale LF/LH, a file recorded twice, lcov
    #             checksums; 4: tests/ and third_party/ records excluded by policy
    decoys: int  # other services' builds


@register
class LcovCoverageGaps(Family):
    name = "lcov_coverage_gaps"
    domain = "software_engineering"
    skill_types = ("Build Systems", "Release Engineering")
    primitive_skills = ("coverage report parsing", "unified diff parsing", "range compression",
                        "sorting with tie-breaks", "text report formatting")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("uncovered", "percent", "diff")
    levels = {0: Knobs(files=2, length=(12, 20), suites=1, traps=0, decoys=2),
              1: Knobs(files=4, length=(20, 50), suites=1, traps=1, decoys=3),
              2: Knobs(files=6, length=(30, 80), suites=2, traps=2, decoys=3),
              3: Knobs(files=8, length=(40, 120), suites=2, traps=3, decoys=3),
              4: Knobs(files=10, length=(40, 150), suites=3, traps=4, decoys=3)}

    def _build(self, t: TaskBuilder) -> list[tuple[str, str]]:
        """One service's build folder: tracefiles and the change under review, as (name, text)."""
        k, rng = t.knobs, t.rng
        paths = sorted({f"src/{rng.choice(MODULES)}/{rng.choice(FILES)}" for _ in range(k.files * 3)})[:k.files]
        rng.shuffle(paths)
        if k.traps >= 4:
            paths += [f"tests/test_{rng.choice(FILES)}", f"third_party/vendored/{rng.choice(FILES)}"]
        size = {p: rng.randint(*k.length) for p in paths}
        code = {p: rng.sample(range(1, size[p] + 1), max(3, size[p] * 3 // 5)) for p in paths}
        suites = SUITES[:k.suites]
        # Hits per suite; a line untouched by every suite is the gap.
        hits = {s: {p: {n: (0 if rng.random() < 0.45 else rng.randrange(1, 300)) for n in code[p]} for p in paths}
                for s in suites}
        files = []
        build = rng.randrange(1000, 9999)
        for s in suites:
            recs = []
            for p in paths:
                if s != suites[0] and rng.random() < 0.3:  # a suite that never loads a file
                    continue
                name = f"/home/ci/builds/{build + suites.index(s)}/repo/{p}" if k.traps >= 3 else p
                lines = sorted(code[p])
                parts = [lines] if k.traps < 3 or rng.random() < 0.7 else [lines[::2], lines[1::2]]
                for part in parts:  # traps >= 3: now and then one file in two records
                    rec = [f"SF:{name}"]
                    if k.traps >= 1:
                        for fn in rng.sample(FUNCS, 2):
                            first = rng.choice(lines)
                            rec += [f"FN:{first},{fn}", f"FNDA:{rng.randrange(0, 9)},{fn}"]
                    da = [n for n in lines if n in part]
                    for n in da:
                        c = hits[s][p][n]
                        tail = f",{rng.choice(['q5+Ae', 'XpL0d', 'm2Kvw'])}{n % 7}w" if k.traps >= 3 and rng.random() < 0.2 else ""
                        rec.append(f"DA:{n},{c}{tail}")
                        if k.traps >= 1 and rng.random() < 0.1:
                            rec.append(f"BRDA:{n},0,0,{rng.choice(['-', '0', '4'])}")
                    lh = sum(1 for n in da if hits[s][p][n])
                    if k.traps >= 3 and rng.random() < 0.4:  # summary lines from an older run
                        lh += rng.randrange(1, 4)
                    recs.append("\n".join(rec + [f"LF:{len(da)}", f"LH:{lh}", "end_of_record"]))
            files.append((f"{s}.info", "TN:" + s + "\n" + "\n".join(recs) + "\n"))
        files.append(("change.diff", self._diff(t, paths, size)))
        return files

    def _diff(self, t: TaskBuilder, paths: list[str], size: dict) -> str:
        """A unified diff (difflib) whose new side has the instrumented file's line count."""
        rng = t.rng
        out = []
        for p in sorted(rng.sample(paths, min(len(paths), rng.randint(1, 3)))):
            new = [f"    {rng.choice(FUNCS)}_{i}({rng.choice(FUNCS)}, {rng.randrange(100)})\n" for i in range(size[p])]
            old = list(new)
            for _ in range(rng.randint(1, 3)):  # blocks added (deleted from old), some replacing lines
                at = rng.randrange(0, max(1, len(old) - 4))
                n = rng.randint(1, 4)
                old[at:at + n] = [f"    legacy_{rng.choice(FUNCS)}({j})\n" for j in range(rng.randint(0, 2))]
            out += difflib.unified_diff(old, new, f"a/{p}", f"b/{p}", n=3)
        return "".join(out) or "\n"

    def output_case(self, t: TaskBuilder) -> None:
        k, v = t.knobs, t.variant
        exclude = ("tests/", "third_party/") if k.traps >= 4 else ()
        src = fill(REFERENCE, MODE=repr(v), EXCLUDE=repr(exclude))
        ref = run_python(src)
        for _ in range(50):  # a change whose added lines are all covered has no answer: draw again
            builds = [self._build(t)]
            truth = ref["report"](sorted(builds[0]))
            if truth.strip():
                break
        else:
            raise FamilyError("lcov_coverage_gaps: 50 builds in a row had nothing to report")
        builds += [self._build(t) for _ in range(k.decoys)]
        name = unseen(t, lambda: t.code(2), *(text for b in builds for _, text in b))
        keys = [key_of(n) for n in [name, *distinct(lambda: t.code(2), k.decoys, [name])]]
        for key, files in zip(keys, builds):
            for rel, text in files:
                t.add_file(f"/app/coverage/{key}/{rel}", text)
        t.say("Every service's CI build leaves its coverage under `/app/coverage/<KEY>/`, where KEY is the first "
              "16 hex digits of the SHA-256 of the service's name (`printf %s <name> | sha256sum`): lcov "
              "tracefiles (`*.info`) and `change.diff`, the change under review. A line's hit count is the "
              "count on its `DA:<line>,<count>` record" + (
                  ", summed over every tracefile (one per test suite) and every record of that file; a line is "
                  "covered if the sum is above 0." if k.suites > 1 or k.traps >= 3 else
                  "; a line is covered if it is above 0."))
        t.deliver(name, "the service name")
        notes = []
        if k.traps >= 1:
            notes.append("Only `DA` records are line data (`FN`, `FNDA` and `BRDA` are functions and branches).")
        if k.traps >= 3:
            notes.append("Paths are reported relative to the repository root: a source path recorded as "
                         "`.../repo/<path>` is `<path>`. The `LF`/`LH` summary lines may be stale; count the "
                         "`DA` records yourself.")
        if k.traps >= 4:
            notes.append("Files under `tests/` and `third_party/` are outside the coverage policy: leave them out.")
        ask = {"uncovered": "For every file with uncovered lines, write one line `<path>:<ranges>`: its uncovered "
                            "line numbers ascending, runs of consecutive numbers written `a-b`, separated by commas "
                            "(e.g. `src/x.py:3-5,9`). Sort the lines by path in byte order.",
               "percent": "For every file with line data, write `<path> <covered>/<instrumented> <percent>`, where "
                          "percent is 100 * covered / instrumented truncated (not rounded) to one decimal, like "
                          "`66.6`. Sort by that percentage ascending, then by path in byte order.",
               "diff": "Report the diff coverage gaps: every line the change adds (a `+` line of the diff, numbered "
                       "in the new file) whose hit count is 0, as `<path>:<line>`. Added lines without a DA "
                       "record are not code; ignore them. Sort by path in byte order, then by line number."}[v]
        t.say(" ".join(notes + [ask]))
        t.add_solution_file("coverage_gaps.py", src)
        t.solve(f'mkdir -p /app/out\nkey={key_cmd("$V1")}\ntest -d "/app/coverage/$key"\n'
                'python3 /solution/coverage_gaps.py "/app/coverage/$key" > /app/out/coverage.txt')
        t.expect_output("/app/out/coverage.txt", truth, "the coverage report")
