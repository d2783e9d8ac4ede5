"""Triage a CI pipeline's JUnit XML reports. Each pipeline keeps its reports under a folder named by a
hash of the pipeline name (the delivered value), beside other pipelines built the same way; CI re-runs
failed tests in later attempts. Variants: list the tests that still fail after the retries, summarise
each test class (tests, failed, skipped, seconds spent), or list the flaky tests (failed, then passed
on a retry). Traps by level: errors and skips, multi-line failures and log output quoting
`<failure>` inside CDATA, stale suite header counts and escaped names, classes split across shards
and non-JUnit XML files beside the reports."""

from __future__ import annotations

from dataclasses import dataclass

from tmax.families.base import Family, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.unseen import distinct, key_cmd, key_of, unseen

REFERENCE = r'''
import os
import re
import sys
import xml.etree.ElementTree as ET

MODE = @MODE@  # "failing", "summary" or "flaky"
REPORT = re.compile(r"^attempt-([0-9]+)/junit-[^/]*\.xml$")


def outcomes(files):
    """files: (relative path, XML text) pairs -> {(classname, name): [(attempt, outcome, ms), ...]}."""
    runs = {}
    picked = []
    for rel, text in files:
        m = REPORT.match(rel)
        if m:
            picked.append((int(m.group(1)), rel, text))
    for attempt, rel, text in sorted(picked):
        for case in ET.fromstring(text).iter("testcase"):
            tags = {child.tag for child in case}
            state = "fail" if tags & {"failure", "error"} else "skip" if "skipped" in tags else "pass"
            ms = int(round(float(case.get("time", "0")) * 1000))
            runs.setdefault((case.get("classname"), case.get("name")), []).append((attempt, state, ms))
    return runs


def report(files):
    runs = outcomes(files)
    out = []
    if MODE == "failing":  # the outcome of the last attempt a test ran in
        out = sorted(f"{c}.{n}" for (c, n), r in runs.items() if max(r)[1] == "fail")
    elif MODE == "flaky":  # failed in one attempt, passed in a later one
        for (c, n), r in runs.items():
            r = sorted(r)
            if any(s == "fail" and any(s2 == "pass" for a2, s2, _ in r if a2 > a) for a, s, _ in r):
                out.append(f"{c}.{n}")
        out.sort()
    else:
        classes = {}
        for (c, n), r in runs.items():
            row = classes.setdefault(c, [0, 0, 0, 0])
            last = max(r)[1]
            row[0] += 1
            row[1] += last == "fail"
            row[2] += last == "skip"
            row[3] += sum(ms for _, _, ms in r)
        out = [f"{c} {t} {f} {s} {ms // 1000}.{ms % 1000:03d}" for c, (t, f, s, ms) in sorted(classes.items())]
    return "".join(line + "\n" for line in out)


def read_tree(root):
    files = []
    for dirpath, dirnames, filenames in os.walk(root):
        for name in filenames:
            full = os.path.join(dirpath, name)
            with open(full, encoding="utf-8") as f:
                files.append((os.path.relpath(full, root), f.read()))
    return sorted(files)


if __name__ == "__main__":
    sys.stdout.write(report(read_tree(sys.argv[1])))
'''

PACKAGES = ("billing", "auth", "search", "ledger", "notify", "catalog", "checkout", "export")
CLASSES = ("InvoiceTest", "ParserTest", "SessionTest", "RetryPolicyTest", "CacheTest", "MapperTest",
           "ClientTest", "SchemaTest", "QuotaTest", "RouterTest")
VERBS = ("parses", "rejects", "retries", "rounds", "caches", "expires", "merges", "encodes", "sorts", "locks")
NOUNS = ("empty_input", "unicode_names", "large_totals", "stale_token", "negative_amount", "duplicate_keys",
         "timeout", "nested_maps", "utc_offsets", "missing_field", "zero_rows", "long_lines")
MESSAGES = ("expected 3 but was 4", "NullPointerException", "timed out after 30s", "connection refused",
            "assertion failed: totals differ", "KeyError: 'id'")


def _esc(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


@dataclass(frozen=True)
class Knobs:
    tests: int  # test cases in a pipeline
    classes: int  # test classes
    shards: int  # report files per attempt
    attempts: int  # CI attempts (a re-run of the failures each); the flaky variant has at least 2
    traps: int  # 1: errors, skips; 2: multi-line failures, CDATA log quoting <failure>; 3: stale headers,
    #             escaped names, classes split over shards; 4: non-JUnit XML beside the reports
    decoys: int  # other pipelines under /app/ci


@register
class JunitRetryTriage(Family):
    name = "junit_retry_triage"
    domain = "software_engineering"
    skill_types = ("Build Systems", "Release Engineering")
    primitive_skills = ("JUnit XML parsing", "test result aggregation", "flaky test detection",
                        "sorting with tie-breaks", "text report formatting")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("failing", "summary", "flaky")
    levels = {0: Knobs(tests=7, classes=2, shards=1, attempts=1, traps=0, decoys=2),
              1: Knobs(tests=16, classes=3, shards=2, attempts=1, traps=1, decoys=3),
              2: Knobs(tests=30, classes=5, shards=3, attempts=2, traps=2, decoys=3),
              3: Knobs(tests=50, classes=7, shards=4, attempts=3, traps=3, decoys=3),
              4: Knobs(tests=80, classes=10, shards=5, attempts=3, traps=4, decoys=3)}

    def _pipeline(self, t: TaskBuilder, attempts: int) -> list[tuple[str, str]]:
        """One pipeline's report files as (path relative to its folder, text)."""
        k, rng = t.knobs, t.rng
        classes = [f"com.acme.{p}.{c}" for p, c in zip(rng.sample(PACKAGES * 2, k.classes),
                                                        rng.sample(CLASSES, k.classes))]
        tests, seen = [], set()
        while len(tests) < k.tests:
            c = rng.choice(classes)
            n = f"test_{rng.choice(VERBS)}_{rng.choice(NOUNS)}"
            if k.traps >= 3 and rng.random() < 0.15:  # parameterised names need XML unescaping
                n += rng.choice(['[a<b]', '["x & y"]', "[size>10]"])
            if (c, n) not in seen:
                seen.add((c, n))
                tests.append((c, n))
        # Per test, its outcomes over the attempts: a failure is re-run in the next attempt.
        fail_p = 0.45 if t.variant == "flaky" else 0.3
        runs: dict = {}
        for c, n in tests:
            r = rng.random()
            first = "fail" if r < fail_p else "skip" if k.traps >= 1 and r < fail_p + 0.1 else "pass"
            seq = [first]
            while seq[-1] == "fail" and len(seq) < attempts:
                seq.append("pass" if rng.random() < 0.55 else "fail")
            runs[(c, n)] = seq
        if attempts > 1 and not any("fail" in s and s[-1] == "pass" for s in runs.values()):
            runs[tests[-1]] = ["fail", "pass"]
        if not any(s[-1] == "fail" for s in runs.values()):  # never an empty answer
            runs[tests[0]] = ["fail"] * attempts
        shard_of = {x: rng.randrange(k.shards) for x in tests}
        if k.traps < 3:  # a class stays within one shard until level 3
            home = {c: rng.randrange(k.shards) for c in classes}
            shard_of = {x: home[x[0]] for x in tests}
        files = []
        for a in range(1, attempts + 1):
            for s in range(k.shards):
                mine = [x for x in tests if shard_of[x] == s and len(runs[x]) >= a]
                if a > 1 and not mine:
                    continue
                files.append((f"attempt-{a}/junit-{s + 1}.xml", self._xml(t, mine, runs, a)))
        if k.traps >= 4:  # other XML the CI leaves beside the reports
            files.append(("attempt-1/coverage.xml", '<?xml version="1.0"?>\n<coverage line-rate="0.81">\n'
                          '  <testcase classname="com.acme.fake.CoverageTest" name="not_a_test"><failure/>'
                          '</testcase>\n</coverage>\n'))
            files.append((f"attempt-1/junit-{k.shards + 1}.xml.partial",
                          '<?xml version="1.0"?>\n<testsuite name="partial">\n'))
        return files

    def _xml(self, t: TaskBuilder, mine: list, runs: dict, a: int) -> str:
        k, rng = t.knobs, t.rng
        by_class: dict = {}
        for c, n in mine:
            by_class.setdefault(c, []).append(n)
        out = ['<?xml version="1.0" encoding="UTF-8"?>', "<testsuites>"]
        for c in sorted(by_class):
            cases = []
            fails = skips = 0
            for n in by_class[c]:
                state = runs[(c, n)][a - 1]
                ms = rng.randrange(3, 4000)
                head = f'    <testcase classname="{_esc(c)}" name="{_esc(n)}" time="{ms / 1000:.3f}"'
                if state == "pass":
                    cases.append(head + "/>")
                elif state == "skip":
                    skips += 1
                    cases.append(head + '><skipped message="disabled on CI"/></testcase>')
                else:
                    fails += 1
                    tag = "error" if k.traps >= 1 and rng.random() < 0.35 else "failure"
                    msg = rng.choice(MESSAGES)
                    if k.traps >= 2 and rng.random() < 0.6:
                        cases.append(f'{head}>\n      <{tag} message="{_esc(msg)}" type="AssertionError">\n'
                                     f"at {c}.{_esc(n)}({c.rsplit('.', 1)[1]}.java:{rng.randrange(20, 400)})\n"
                                     f"      </{tag}>\n    </testcase>")
                    else:
                        cases.append(f'{head}><{tag} message="{_esc(msg)}"/></testcase>')
                if k.traps >= 2 and state == "pass" and rng.random() < 0.2:  # a passing test logging XML
                    cases[-1] = (head + '>\n      <system-out><![CDATA[fixture: <testcase name="x">'
                                 '<failure message="simulated"/></testcase>]]></system-out>\n    </testcase>')
            if k.traps >= 3 and rng.random() < 0.5:  # header counts from before the retries: stale
                fails += rng.randrange(1, 3)
            out.append(f'  <testsuite name="{c}" tests="{len(cases)}" failures="{fails}" skipped="{skips}">')
            out += cases
            out.append("  </testsuite>")
        return "\n".join(out + ["</testsuites>"]) + "\n"

    def output_case(self, t: TaskBuilder) -> None:
        k, rng, v = t.knobs, t.rng, t.variant
        attempts = max(k.attempts, 2) if v == "flaky" else k.attempts
        # Every pipeline is built the same way, in a folder named by a hash of its name: only the
        # delivered pipeline name says which folder is ours.
        pipes = [self._pipeline(t, attempts) for _ in range(1 + k.decoys)]
        name = unseen(t, lambda: t.code(2), *(text for p in pipes for _, text in p))
        keys = [key_of(n) for n in [name, *distinct(lambda: t.code(2), k.decoys, [name])]]
        for key, files in zip(keys, pipes):
            for rel, text in files:
                t.add_file(f"/app/ci/{key}/{rel}", text)
        src = fill(REFERENCE, MODE=repr(v))
        truth = run_python(src)["report"](sorted(pipes[0]))
        t.say("CI keeps the JUnit XML reports of every pipeline under `/app/ci/<KEY>/`, where KEY is the first 16 "
              "hex digits of the SHA-256 of the pipeline's name (`printf %s <name> | sha256sum`). "
              + ("Reports are in `attempt-<N>/junit-*.xml`; failed tests are re-run in the next attempt, so a "
                 "test's outcome is the one from the last attempt it ran in. " if attempts > 1 else
                 "The report is `attempt-1/junit-*.xml`. ")
              + "A test is identified as `<classname>.<name>` (the testcase attributes, XML entities decoded); it "
              "failed if its testcase has a `<failure>` or `<error>` child"
              + (", was skipped if it has `<skipped>`, and passed otherwise." if k.traps else
                 " and passed otherwise."))
        t.deliver(name, "the pipeline name")
        notes = []
        if k.traps >= 2:
            notes.append("Failure elements may span several lines, and test output (`<system-out>`) may quote "
                         "XML; only real testcase elements count.")
        if k.traps >= 3:
            notes.append("Suite header attributes (`tests=`, `failures=`) are not reliable; go by the testcases.")
        if k.traps >= 4:
            notes.append("Only files named `junit-*.xml` are reports.")
        ask = {"failing": "List the tests that still fail (after the retries), one id per line, sorted in byte "
                          "order." if attempts > 1 else "List the failing tests, one id per line, sorted in byte order.",
               "flaky": "List the flaky tests: those that failed in one attempt and passed in a later one, one id "
                        "per line, sorted in byte order.",
               "summary": "Summarise each test class (by classname" + (", over all shards" if k.traps >= 3 else "")
                          + "): one line `<classname> <tests> <failed> <skipped> <seconds>` per class, sorted by "
                          "classname in byte order, where tests counts distinct tests, failed and skipped count "
                          "final outcomes, and seconds is the total `time` of all its testcases"
                          + (" over every attempt" if attempts > 1 else "") + ", with exactly 3 decimals."}[v]
        t.say(" ".join(notes + [ask]))
        t.add_solution_file("junit_triage.py", src)
        t.solve(f'mkdir -p /app/out\nkey={key_cmd("$V1")}\ntest -d "/app/ci/$key"\n'
                'python3 /solution/junit_triage.py "/app/ci/$key" > /app/out/triage.txt')
        t.expect_output("/app/out/triage.txt", truth, "the triage report")
