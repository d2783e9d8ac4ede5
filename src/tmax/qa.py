"""Exact-answer question sets (AIME-style integers, or any set of short exact answers) as gated
terminal tasks.

Each JSONL line ``{question, answer}`` becomes a Harbor task: the instruction asks for the final
answer in ``/app/answer.txt``; ``tests/`` holds the hidden answer and a checker that compares after
normalisation (whitespace, ``\\boxed{}``, thousands separators, numeric equality such as
``042 == 42.0``, optional case folding) and writes the reward; the reference solution writes the
answer. The answer lives only in ``tests/`` (and the oracle's ``solution/``), never in the
environment the agent sees.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from tmax.task import write_task

ANSWER_PATH = "/app/answer.txt"

INSTRUCTION = """{question}

Work it out in the terminal if that helps. When you are done, write only your final answer
(no words, no units, no explanation) to `{path}`.
"""

# Runs in the verifier sandbox. Kept dependency-free (python3 only) and mirrored by normalise() below.
CHECKER = r'''import json
import re
import sys
from fractions import Fraction


def normalise(text, case_fold):
    s = text.strip()
    m = re.fullmatch(r"\\boxed\{(.*)\}", s, re.S) or re.fullmatch(r"\$(.*)\$", s, re.S)
    if m:
        s = m.group(1).strip()
    s = " ".join(s.split())
    if re.fullmatch(r"[-+]?\d{1,3}(,\d{3})+(\.\d+)?", s):
        s = s.replace(",", "")
    try:
        return ("number", Fraction(s))
    except (ValueError, ZeroDivisionError):
        return ("text", s.casefold() if case_fold else s)


def main():
    cfg = json.load(open("/tests/expected.json"))
    try:
        got = open(sys.argv[1], encoding="utf-8", errors="replace").read()
    except OSError as e:
        print(f"no answer: {e}")
        return 0.0
    want = normalise(cfg["answer"], cfg["case_fold"])
    have = normalise(got, cfg["case_fold"])
    print(f"expected {want[1]!s}, got {have[1]!s}")
    return 1.0 if want == have else 0.0


print(main(), file=open("/logs/verifier/reward.txt", "w"))
'''

TEST_SH = f"""#!/bin/bash
# Compare the agent's final answer with the hidden one; always writes a reward.
mkdir -p /logs/verifier
python3 /tests/check.py {ANSWER_PATH} || echo 0 > /logs/verifier/reward.txt
"""


class QAError(ValueError):
    """A bad input line. ``str()`` names the file, the line, the field and what was expected."""


@dataclass
class QAResult:
    written: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"written": len(self.written), "tasks": self.written, "errors": self.errors}


def _field(doc: dict, name: str, where: str) -> str:
    if name not in doc:
        raise QAError(f"{where}: {name}: missing; expected the field {name!r} (fields present: "
                      f"{', '.join(sorted(doc)) or 'none'})")
    v = doc[name]
    if isinstance(v, bool) or not isinstance(v, (str, int, float)):
        raise QAError(f"{where}: {name}: expected a string or a number, got {type(v).__name__}")
    text = str(v).strip()
    if not text:
        raise QAError(f"{where}: {name}: expected a non-empty value")
    return text


def parse_line(line: str, where: str, question_field: str = "question", answer_field: str = "answer",
               id_field: str | None = None) -> tuple[str, str, str | None]:
    """(question, answer, id) from one JSONL line, or QAError naming ``where`` and the field."""
    try:
        doc = json.loads(line)
    except json.JSONDecodeError as e:
        raise QAError(f"{where}: invalid JSON ({e.msg} at column {e.colno}); expected one JSON object per line") \
            from None
    if not isinstance(doc, dict):
        raise QAError(f"{where}: expected a JSON object, got {type(doc).__name__}")
    question = _field(doc, question_field, where)
    answer = _field(doc, answer_field, where)
    if "\n" in answer:
        raise QAError(f"{where}: {answer_field}: expected a one-line exact answer")
    ident = _field(doc, id_field, where) if id_field else None
    return question, answer, ident


def task_files(answer: str, case_fold: bool) -> dict[str, str]:
    quoted = "'" + answer.replace("'", "'\\''") + "'"
    return {
        "tests/test.sh": TEST_SH,
        "tests/check.py": CHECKER,
        "tests/expected.json": json.dumps({"answer": answer, "case_fold": case_fold}) + "\n",
        "solution/solve.sh": f"#!/bin/bash\n# Reference solution: the known answer.\nprintf '%s\\n' {quoted} > "
                             f"{ANSWER_PATH}\n",
    }


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:40] or "q"


def convert(jsonl: Path, out: Path, question_field: str = "question", answer_field: str = "answer",
            id_field: str | None = None, case_fold: bool = False, image: str = "default",
            agent_timeout: float = 600.0) -> QAResult:
    """Write one task per valid line under ``out``; bad lines are reported, the rest convert."""
    res = QAResult()
    out.mkdir(parents=True, exist_ok=True)
    try:
        lines = jsonl.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise QAError(f"{jsonl}: cannot read ({e}); expected a UTF-8 JSONL file") from None
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{jsonl}:{lineno}"
        try:
            question, answer, ident = parse_line(line, where, question_field, answer_field, id_field)
        except QAError as e:
            res.errors.append(str(e))
            continue
        name = f"qa-{lineno:05d}-{_slug(ident or question)}"
        meta = {"image": image, "kind": "qa", "source": jsonl.name, "line": lineno, "case_fold": case_fold}
        if ident:
            meta["id"] = ident
        write_task(out / name, name=name, instruction=INSTRUCTION.format(question=question, path=ANSWER_PATH),
                   files=task_files(answer, case_fold), metadata=meta, agent_timeout=agent_timeout,
                   verifier_timeout=60.0)
        res.written.append(name)
    (out / "qa_summary.json").write_text(json.dumps(res.to_json(), indent=1) + "\n")
    return res
