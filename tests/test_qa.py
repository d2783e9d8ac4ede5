"""Exact-answer question sets as gated tasks: convert, gate (oracle 1, nop 0), bad lines named."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

from tmax.gate import check_task
from tmax.qa import CHECKER, convert
from tmax.task import load_task

SAMPLE = Path(__file__).resolve().parents[1] / "examples" / "qa" / "sample.jsonl"


def test_sample_converts_and_every_task_passes_the_gate(tmp_path, bwrap):
    res = convert(SAMPLE, tmp_path / "qa")
    assert len(res.written) == 5 and not res.errors
    for name in res.written:
        d = tmp_path / "qa" / name
        task = load_task(d)
        assert "/app/answer.txt" in task.instruction and task.metadata["kind"] == "qa"
        answer = json.loads((d / "tests" / "expected.json").read_text())["answer"]
        # the hidden answer is only in tests/ (and the oracle's solution), never in the environment
        assert not (d / "environment").exists() and answer not in task.instruction.split("?")[-1]
        r = check_task(d, repeat=1)
        assert r.ok, r.reason
        assert r.oracle_rewards == [1.0] and r.nop_reward == 0.0


def test_a_bad_line_is_named_and_the_rest_convert(tmp_path):
    src = tmp_path / "set.jsonl"
    src.write_text('{"q": "1+1?", "a": 2}\n{"q": "no answer"}\nnot json\n\n{"q": "2+2?", "a": "4"}\n')
    res = convert(src, tmp_path / "out", question_field="q", answer_field="a")
    assert len(res.written) == 2
    assert len(res.errors) == 2
    assert f"{src}:2: a: missing" in res.errors[0] and "'a'" in res.errors[0]
    assert f"{src}:3: invalid JSON" in res.errors[1]
    summary = json.loads((tmp_path / "out" / "qa_summary.json").read_text())
    assert summary["written"] == 2 and summary["errors"] == res.errors


def test_normalisation():
    ns: dict = {}
    exec(CHECKER.split("\n\ndef main")[0], ns)  # the checker's own normalise(), as the verifier runs it
    norm = ns["normalise"]
    assert norm(" 042\n", False) == norm("42", False) == norm("42.0", False) == ("number", Fraction(42))
    assert norm("\\boxed{1,000}", False) == norm("1000", False)
    assert norm("3/4", False) == norm("0.75", False)
    assert norm("Paris", False) != norm("paris", False)
    assert norm("Paris ", True) == norm("paris", True)
    assert norm("New  York", False) == norm("New York", False)
