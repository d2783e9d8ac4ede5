"""Triage a golden-output regression suite. The suite's expected outputs are in `/app/suite/expected/`;
each CI run left its actual outputs under a folder named by a hash of the run id (the delivered value),
beside other runs. The harness compares a case's actual output with the expected one after its own
normalisation rules. Variants: list the failing cases, give each failing case's first differing line
(expected against actual), or classify every case (pass, missing, whitespace-only, order-only or a
real content change). Traps by level: trailing whitespace the harness ignores, CRLF line ends from a
Windows runner, crashed cases without output, stray files that are no case, skipped cases, trailing
blank lines, and volatile fields (timings, addresses) the harness masks before comparing."""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tmax.families.base import Family, TaskBuilder, register
from tmax.families.programs import fill, run_python
from tmax.families.unseen import distinct, key_cmd, key_of, unseen

REFERENCE = r'''
import os
import re
import sys

VARIANT = @VARIANT@
NORM = @NORM@  # harness rules: 1 trailing blanks on a line, 2 CRLF, 3 trailing empty lines, 4 masks
MASKS = [(re.compile(r"elapsed=[0-9]+\.[0-9]+s"), "elapsed=*"), (re.compile(r"0x[0-9a-f]+"), "0x?")]


def lines(path):
    """The file as the harness sees it (None: no such file)."""
    if not os.path.exists(path):
        return None
    with open(path, "rb") as f:
        text = f.read().decode("utf-8")
    if NORM >= 2:
        text = text.replace("\r\n", "\n")
    out = text.split("\n")
    if out and out[-1] == "":
        out.pop()  # the final newline ends the last line
    if NORM >= 1:
        out = [ln.rstrip(" \t") for ln in out]
    if NORM >= 3:
        while out and out[-1] == "":
            out.pop()
    if NORM >= 4:
        for rx, repl in MASKS:
            out = [rx.sub(repl, ln) for ln in out]
    return out


def status(exp, act):
    if act is None:
        return "missing"
    if exp == act:
        return "pass"
    if [re.sub(r"[ \t]", "", ln) for ln in exp] == [re.sub(r"[ \t]", "", ln) for ln in act]:
        return "whitespace"
    if sorted(exp) == sorted(act):
        return "order"
    return "content"


def report(expected_dir, run_dir):
    if not os.path.isdir(run_dir):
        raise SystemExit(f"no such run: {run_dir}")
    skipped = set()
    if os.path.exists(os.path.join(run_dir, "skipped.txt")):
        with open(os.path.join(run_dir, "skipped.txt"), encoding="utf-8") as f:
            skipped = {ln.strip() for ln in f if ln.strip() and not ln.startswith("#")}
    rows = []
    for name in sorted(os.listdir(expected_dir)):
        if not name.endswith(".out"):
            continue
        case = name[:-4]
        if case in skipped:
            continue
        exp = lines(os.path.join(expected_dir, name))
        act = lines(os.path.join(run_dir, "actual", name))
        st = status(exp, act)
        if VARIANT == "classify":
            rows.append(f"{case}\t{st}\n")
        elif st != "pass" and VARIANT == "failing":
            rows.append(case + "\n")
        elif st != "pass":
            act = act or []
            i = next(i for i in range(max(len(exp), len(act)))
                     if i >= len(exp) or i >= len(act) or exp[i] != act[i])
            e = exp[i] if i < len(exp) else "<EOF>"
            a = act[i] if i < len(act) else "<EOF>"
            rows.append(f"{case}\t{i + 1}\t{e}\t{a}\n")
    return "".join(rows)


if __name__ == "__main__":
    sys.stdout.write(report(sys.argv[1], sys.argv[2]))
'''

TOPICS = ("totals", "refunds", "tax_rounding", "empty_cart", "bulk_discount", "currency", "unicode_names",
          "late_fees", "split_payment", "coupon_stack", "zero_qty", "negative_adjust", "multi_warehouse",
          "backorder", "leap_day", "timezone_cutoff", "partial_ship", "gift_card", "loyalty_points", "vat_exempt",
          "duplicate_sku", "price_override", "rounding_half_even", "store_credit", "exchange", "preorder",
          "subscription", "trial_period", "chargeback", "bundle", "free_shipping", "min_order")
STATUSES = ("shipped", "pending", "refunded", "held", "cancelled")


@dataclass(frozen=True)
class Knobs:
    cases: int  # cases in the suite
    lines: int  # most lines of one expected output
    broken: int  # cases the run changed in some way (some of them still pass)
    norm: int  # harness rules in force (see NORM) and the traps that go with them
    runs: int  # other runs beside the one asked about


@register
class GoldenOutputDiffTriage(Family):
    name = "golden_output_diff_triage"
    domain = "debugging"
    skill_types = ("Failure Reproduction", "Regression Hunting")
    primitive_skills = ("comparing expected and actual output", "differential testing against a reference",
                        "reproducing a failure", "classifying failure signatures")
    verifiers = ("exact_text", "metric_threshold", "multi_protocol")
    variants = ("failing", "first_diff", "classify")
    levels = {0: Knobs(cases=5, lines=6, broken=2, norm=0, runs=1),
              1: Knobs(cases=10, lines=10, broken=5, norm=1, runs=2),
              2: Knobs(cases=16, lines=16, broken=8, norm=2, runs=3),
              3: Knobs(cases=22, lines=22, broken=12, norm=3, runs=3),
              4: Knobs(cases=30, lines=28, broken=16, norm=4, runs=3)}

    def _expected(self, t):
        """Case name -> expected output lines (records unique within a case, so every diff is clear-cut)."""
        rng, k = t.rng, t.knobs
        out = {}
        for i, topic in enumerate(sorted(rng.sample(TOPICS, k.cases))):
            n = rng.randrange(max(2, k.lines // 2), k.lines + 1)
            ids = rng.sample(range(10000, 99999), n)
            rows = []
            for oid in ids:
                row = f"order {oid} items={rng.randrange(1, 9)} total={rng.randrange(100, 99999) / 100:.2f} " \
                      f"status={rng.choice(STATUSES)}"
                if k.norm >= 4 and rng.random() < 0.4:
                    row += rng.choice([f" elapsed={rng.randrange(0, 3)}.{rng.randrange(1000):03d}s",
                                       f" handle=0x{rng.randrange(1 << 40):x}"])
                rows.append(row)
            out[f"t{i + 1:02d}_{topic}"] = rows
        return out

    def _mutate(self, t, rows):
        """A changed copy of ``rows`` (as text) by one of the ways a run's output differs."""
        rng, k = t.rng, t.knobs
        rows = list(rows)
        kinds = ["value", "drop", "extra", "swap", "space"]
        if k.norm >= 1:
            kinds.append("trailing")  # ignored by the harness
        if k.norm >= 2:
            kinds.append("crlf")  # ignored by the harness
        if k.norm >= 3:
            kinds.append("blank")  # ignored by the harness
        if k.norm >= 4:
            kinds.append("volatile")  # masked by the harness
        kind = rng.choice(kinds)
        i = rng.randrange(len(rows))
        end = "\n"
        if kind == "value":
            head, _, tail = rows[i].partition(" total=")
            amount, _, rest = tail.partition(" ")
            rows[i] = f"{head} total={float(amount) + rng.choice([-0.01, 0.01, 1.0]):.2f} {rest}"
        elif kind == "drop":
            del rows[i]
        elif kind == "extra":
            rows.insert(i, f"order {rng.randrange(100000, 999999)} items=1 total=0.00 status=pending")
        elif kind == "swap":
            j = (i + 1) % len(rows)
            rows[i], rows[j] = rows[j], rows[i]
        elif kind == "space":
            rows[i] = rows[i].replace(" ", rng.choice(["  ", "   "]), 1)
        elif kind == "trailing":
            rows = [r + rng.choice([" ", "  ", "\t"]) if rng.random() < 0.5 else r for r in rows]
        elif kind == "crlf":
            end = "\r\n"
        elif kind == "blank":
            rows += [""] * rng.randrange(1, 3)
        else:  # new timings and addresses: the masks hide them
            rows = [re.sub(r"elapsed=[0-9]+\.[0-9]+s", f"elapsed={rng.randrange(3, 9)}.{rng.randrange(1000):03d}s",
                           re.sub(r"0x[0-9a-f]+", f"0x{rng.randrange(1 << 40):x}", r)) for r in rows]
        return "".join(r + end for r in rows)

    def _run(self, t, expected):
        """One run's files (relative to its folder): actual outputs, stray files, the skip list."""
        rng, k = t.rng, t.knobs
        names = sorted(expected)
        broken = set(rng.sample(names, k.broken))
        files, skipped = {}, []
        for name in names:
            if k.norm >= 3 and rng.random() < 0.12:
                skipped.append(name)  # its output is stale or absent, and it does not count
                if rng.random() < 0.5:
                    continue
            if k.norm >= 2 and name in broken and rng.random() < 0.15:
                continue  # the case crashed before writing output
            text = self._mutate(t, expected[name]) if name in broken else "".join(r + "\n" for r in expected[name])
            files[f"actual/{name}.out"] = text
        if k.norm >= 2:
            files["actual/core.4242.txt"] = "Segmentation fault (core dumped)\n"
            files[f"actual/{rng.choice(names)}.out.orig"] = "".join(r + "\n" for r in expected[names[0]][:2])
        if k.norm >= 3:
            files["skipped.txt"] = "# cases skipped in this run\n" + "".join(s + "\n" for s in skipped)
        return files

    def output_case(self, t: TaskBuilder) -> None:
        k, v = t.knobs, t.variant
        src = fill(REFERENCE, VARIANT=repr(v), NORM=k.norm)
        ref = run_python(src)
        expected = self._expected(t)
        for name, rows in sorted(expected.items()):
            t.add_file(f"/app/suite/expected/{name}.out", "".join(r + "\n" for r in rows))
        runs = [self._run(t, expected) for _ in range(1 + k.runs)]
        # The run id is the delivered value; each run's outputs lie under a hash of it, so the other runs
        # are indistinguishable without it.
        run = unseen(t, lambda: t.code(2), *(x for r in runs for _, x in sorted(r.items())))
        ids = [run, *distinct(lambda: t.code(2), k.runs, [run])]
        for rid, files in sorted(zip(ids, runs), key=lambda rf: key_of(rf[0])):
            for path, text in sorted(files.items()):
                t.add_file(f"/app/runs/{key_of(rid)}/{path}", text)
        with tempfile.TemporaryDirectory(prefix="tmax-ref-") as d:
            for rel, text in [*((f"expected/{n}.out", "".join(r + "\n" for r in rows)) for n, rows in
                                sorted(expected.items())), *sorted(runs[0].items())]:
                p = Path(d, rel if rel.startswith("expected/") else "run/" + rel)
                p.parent.mkdir(parents=True, exist_ok=True)
                p.write_bytes(text.encode())
            truth = ref["report"](f"{d}/expected", f"{d}/run")
        t.say("The nightly golden-output suite went red. Each case `<case>` has its expected output in "
              "`/app/suite/expected/<case>.out`; a CI run writes what the program printed to "
              "`/app/runs/<KEY>/actual/<case>.out`, where KEY is the first 16 hex digits of the SHA-256 of the run "
              "id (`printf %s <run id> | sha256sum`). Look only at the run given below.")
        who = t.deliver(run, "the run id")
        rules = ["The cases are the `.out` files of the expected folder."]
        if k.norm >= 2:
            rules.append("Anything else in the actual folder is not a case; a case with no actual output crashed "
                         "and fails.")
        if k.norm >= 3:
            rules.append("Cases listed in the run's `skipped.txt` (one per line, `#` starts a comment) were not "
                         "run: leave them out entirely.")
        harness = []
        if k.norm >= 2:
            harness.append("CRLF line ends count as LF")
        if k.norm >= 1:
            harness.append("spaces and tabs at the end of a line are ignored")
        if k.norm >= 3:
            harness.append("empty lines at the end of the file are ignored")
        if k.norm >= 4:
            harness.append("every `elapsed=<digits>.<digits>s` becomes `elapsed=*` and every `0x<lower-case hex>` "
                           "becomes `0x?` (on both sides)")
        rules.append("The harness compares the files line by line, " + ("after these rules, in this order: "
                     + "; ".join(harness) + "." if harness else "byte for byte."))
        t.say(" ".join(rules))
        if v == "failing":
            t.say("Which cases fail (their actual output differs from the expected one)? Write their names, one "
                  "per line, sorted in byte order.")
            out = "/app/out/failing.txt"
        elif v == "first_diff":
            t.say("For each failing case, in byte order of the names, write one line `<case><TAB><line number>"
                  "<TAB><expected line><TAB><actual line>` for the first line where they differ (numbered from 1, "
                  "the lines as the harness sees them; `<EOF>` when one side has no line there"
                  + ("; a case without output has no lines" if k.norm >= 2 else "") + ").")
            out = "/app/out/first_diff.tsv"
        else:
            t.say("Classify every case: write one line `<case><TAB><status>` per case, in byte order of the names, "
                  "where status is the first that applies: `pass` (no difference)"
                  + (", `missing` (no actual output)" if k.norm >= 2 else "") + ", `whitespace` (equal once all "
                  "spaces and tabs are removed from every line), `order` (the same lines in another order), "
                  "`content` (anything else).")
            out = "/app/out/triage.tsv"
        t.add_solution_file("golden.py", src)
        t.solve(f'test -n "{who}"\nmkdir -p /app/out\nkey={key_cmd(who)}\n'
                f'python3 /solution/golden.py /app/suite/expected "/app/runs/$key" > {out}')
        t.expect_output(out, truth, {"failing": "the failing cases", "first_diff": "the first differences",
                                     "classify": "the triage"}[v])
