"""Verifier kinds: how a task's result is graded. Each ``grade_*`` writes the hidden spec and the
grader into ``tests/``, adds the output requirement to the instruction, and (where the kind changes
what must be delivered) completes the oracle.

| kind               | what the agent delivers                    | reward                                  |
|--------------------|--------------------------------------------|-----------------------------------------|
| exact_text         | a file                                     | 1 if equal (trailing whitespace aside)  |
| metric_threshold   | a file of lines                            | F1 of matched lines (in order: longest  |
|                    |                                            | common subsequence; unordered: multiset |
|                    |                                            | intersection); 1 only at F1 = 1         |
|                    | a file holding one number                  | 1 within rel_tol, else                  |
|                    |                                            | max(0, 1 - log10(err / rel_tol))        |
| multi_protocol     | /app/start.sh serving it on HTTP and TCP   | fraction of protocols answering right   |
|                    |                                            | (HTTP: status 200 and the exact body)   |
| fuzz_equivalence   | a program (stdin -> stdout)                | 1 iff equal to the hidden reference on  |
|                    |                                            | every seeded random input               |
| adversarial_corpus | a program (item on stdin -> exit status)   | 1 iff every malicious item is rejected  |
|                    |                                            | and every benign one kept               |

Answer files are read only if they are regular files reached without a symlink, of at most 16 MiB;
anything else scores 0 with an error naming the path. Curves and examples: README.md.
"""

from __future__ import annotations

import json
from pathlib import Path

from tmax.taxonomy import PROGRAM_FILES, FamilyError

GRADER = (Path(__file__).parent / "grade.py").read_text()
SERVER = (Path(__file__).parent / "serve.py").read_text()
TEST_SH = """#!/bin/bash
# Grades the agent's work; writes /logs/verifier/reward.json (numbers) and details.json.
set -u
mkdir -p /logs/verifier
cd /  # not /app: nothing of the agent's is found relative to the grader
# -I: no user site-packages, no PYTHON* variables, neither the script's nor this directory on sys.path.
if ! python3 -I /tests/grade.py /tests/spec.json; then
  echo '{"reward": 0.0}' > /logs/verifier/reward.json
  echo '{"reward": 0.0, "error": "grader failed"}' > /logs/verifier/details.json
fi
"""
BUILD_NOTES = {"Python": "it is run with `python3`", "Bash": "it is run with `bash`",
               "C": "it is compiled with `gcc -O2 ... -lm`", "C++": "it is compiled with `g++ -O2`",
               "Rust": "it is compiled with `rustc -O` (standard library only)",
               "Go": "it is built with `go build` (standard library only)"}


def _write(t, spec: dict) -> None:
    if t.grading is not None:
        raise FamilyError(f"family {t.axes.family}: more than one expect_* call")
    t.grading = spec
    t.add_test_file("test.sh", TEST_SH)
    t.add_test_file("grade.py", GRADER)
    t.add_test_file("spec.json", json.dumps(spec, indent=1, sort_keys=True) + "\n")


def _serve(t, path: str, expected: str, what: str) -> None:
    http_port = 8000 + t.rng.randrange(1000)
    tcp_port = 9000 + t.rng.randrange(1000)
    _write(t, {"mode": "protocol", "expected": expected, "http_port": http_port, "tcp_port": tcp_port})
    t.requirements.append(
        f"Do not stop at a file: serve {what}. Write an executable `/app/start.sh` that starts your server "
        "in the background and returns at once. Serve it over two protocols: "
        f"(1) HTTP: `GET http://127.0.0.1:{http_port}/result` answers with it as the response body; "
        f"(2) raw TCP on 127.0.0.1:{tcp_port}: after a client sends the line `RESULT`, the server sends it "
        "and closes the connection. Your server will be started by running `/app/start.sh` in a fresh copy "
        "of the machine in which only `/app` is kept, so keep everything it needs under `/app`.")
    t.add_solution_file("serve.py", SERVER)
    t.solve(f"mkdir -p /app/srv && cp {path} /app/srv/result.txt && cp /solution/serve.py /app/srv/serve.py\n"
            "cat > /app/start.sh <<'EOF'\n#!/bin/bash\ncd /app/srv\n"
            f"setsid nohup python3 serve.py result.txt {http_port} {tcp_port} >/dev/null 2>&1 &\nEOF\n"
            "chmod +x /app/start.sh")


def grade_output(t, path: str, content: str, what: str, ordered: bool = True) -> None:
    """``ordered``: the instruction fixes the order of the lines (metric_threshold grades it then)."""
    if not content.strip():  # an empty answer would be earned by an empty file or an empty reply
        raise FamilyError(f"family {t.axes.family}: the expected output is empty; draw another case")
    kind = t.axes.verifier
    if kind == "multi_protocol":
        _serve(t, path, content, what)
    elif kind == "exact_text":
        _write(t, {"mode": "exact", "path": path, "expected": content})
        t.requirements.append(f"Write {what} to `{path}`. It is compared exactly (trailing whitespace aside).")
    elif kind == "metric_threshold":
        _write(t, {"mode": "lines", "path": path, "expected": content, "threshold": 1.0, "ordered": ordered})
        how = ("in order: the matched lines are the longest sequence of lines found in both files in the same "
               "order, so order matters" if ordered else
               "as a multiset: each expected line is matched at most as often as it is expected, in any order")
        t.requirements.append(
            f"Write {what} to `{path}`. Partial credit: your lines are compared with the expected lines (trailing "
            f"whitespace aside) {how}. With precision P = matched / your lines and recall R = matched / expected "
            "lines, the score is F1 = 2PR / (P + R), so missing, wrong and extra lines all cost credit; only "
            "exactly the expected lines earn full credit.")
    else:
        raise FamilyError(f"family {t.axes.family}: expect_output cannot be graded by {kind}")


def grade_number(t, path: str, value: float, rel_tol: float, what: str) -> None:
    kind = t.axes.verifier
    text = f"{value:.10g}\n"
    if kind == "multi_protocol":
        _serve(t, path, text, what)
        t.requirements.append("Serve the number alone, written with 10 significant digits and no trailing "
                              "zeros (printf's %.10g), followed by a newline.")
    elif kind == "exact_text":  # exact: the number as %.10g, compared as text
        _write(t, {"mode": "exact", "path": path, "expected": text})
        t.requirements.append(f"Write {what} to `{path}` as a single number with 10 significant digits and no "
                              "trailing zeros (printf's %.10g). It is compared exactly.")
    elif kind == "metric_threshold":
        _write(t, {"mode": "number", "path": path, "expected": value, "rel_tol": rel_tol})
        t.requirements.append(
            f"Write {what} to `{path}` as a single number. Within a relative error of {rel_tol:g} it earns "
            f"full credit; further off, the credit is 1 - log10(relative error / {rel_tol:g}), which is 0 at ten "
            "times that tolerance or more.")
    else:
        raise FamilyError(f"family {t.axes.family}: expect_number cannot be graded by {kind}")


def _program_languages(t, programs: dict[str, str]) -> list[str]:
    lang = t.axes.language
    if lang == "multi-language":
        second = next(x for x in PROGRAM_FILES if x != "Python" and x in programs)
        return ["Python", second]
    if lang == "any":
        return ["any"]
    if lang not in programs:
        raise FamilyError(f"family {t.axes.family}: no reference program in {lang}")
    return [lang]


def _program_text(langs: list[str]) -> str:
    if langs == ["any"]:
        options = ", ".join(f"{lang} (`/app/{f}`)" for lang, f in PROGRAM_FILES.items())
        return (f"Write the program in the language of your choice, as exactly one of: {options}. "
                "Compiled languages are built by the grader (gcc -O2, g++ -O2, rustc -O, go build; standard "
                "libraries only).")
    parts = [f"{lang} at `/app/{PROGRAM_FILES[lang]}` ({BUILD_NOTES[lang]})" for lang in langs]
    if len(parts) == 2:
        return f"Write the program twice, in two languages that must agree exactly: {parts[0]}, and {parts[1]}."
    return f"Write the program in {parts[0]}."


def _oracle_programs(t, langs: list[str], programs: dict[str, str]) -> None:
    for lang in (["Python"] if langs == ["any"] else langs):
        name = PROGRAM_FILES[lang]
        t.add_solution_file("prog_" + name, programs[lang])
        t.solve(f"cp /solution/prog_{name} /app/{name}")


def grade_program(t, spec: str, cases: list[tuple[str, str]], programs: dict[str, str]) -> None:
    if t.axes.verifier != "fuzz_equivalence":
        raise FamilyError(f"family {t.axes.family}: expect_program needs the fuzz_equivalence verifier")
    if len(cases) < 4:
        raise FamilyError(f"family {t.axes.family}: expect_program needs at least 4 cases")
    langs = _program_languages(t, programs)
    examples, hidden = cases[:2], cases[2:]
    for i, (inp, out) in enumerate(examples, 1):
        t.add_file(f"/app/examples/input{i}.txt", inp)
        t.add_file(f"/app/examples/output{i}.txt", out)
    _write(t, {"mode": "fuzz", "languages": langs, "cases": [list(c) for c in hidden]})
    t.say(spec)
    t.requirements.append(
        _program_text(langs) + " It reads the whole input from standard input and writes the result to standard "
        "output. Two worked examples are in `/app/examples/` (inputN.txt -> outputN.txt). The program will be run "
        f"on {len(hidden)} hidden inputs of the same form and its output must match the reference exactly.")
    _oracle_programs(t, langs, programs)


def grade_classifier(t, spec: str, clean: list[str], malicious: list[str],
                     programs: dict[str, str]) -> None:
    if t.axes.verifier != "adversarial_corpus":
        raise FamilyError(f"family {t.axes.family}: expect_classifier needs the adversarial_corpus verifier")
    if not clean or not malicious:
        raise FamilyError(f"family {t.axes.family}: expect_classifier needs clean and malicious items")
    langs = _program_languages(t, programs)
    _write(t, {"mode": "classifier", "languages": langs, "clean": clean, "malicious": malicious})
    t.say(spec)
    t.requirements.append(
        _program_text(langs) + " It reads one item from standard input and exits with status 0 if the item is "
        "acceptable and 1 if it must be rejected. It is tested on hidden corpora of benign and malicious items: "
        "every malicious item must be rejected and every benign item accepted.")
    _oracle_programs(t, langs, programs)
