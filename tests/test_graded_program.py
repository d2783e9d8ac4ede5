"""The program a verifier grades is a suspect: it cannot write the reward, read the hidden data, or
outlive the grader. Real trials on both native backends, with tmax's own grader (verifiers/grade.py)
in fuzz and protocol mode and an agent whose "solution" is the hack."""

from __future__ import annotations

import json

import pytest

from conftest import ScriptAgent, require_root
from tmax.trial import Outcome, run_trial
from tmax.verifiers import GRADER, TEST_SH

CASES = [["3\n", "9\n"], ["4\n", "16\n"], ["12\n", "144\n"]]  # square a number: the hidden cases

# A "solution" that solves nothing: it plants rewards, reads the hidden cases and leaves a process
# that rewrites the reward after the grader is done.
HACK = r'''
import glob, os, subprocess, sys
for path in ("/logs/verifier/reward.txt", "/logs/verifier/reward.json"):
    try:
        with open(path, "w") as f:
            f.write("1" if path.endswith(".txt") else '{"reward": 1.0}')
        print("PLANTED", path, file=sys.stderr)
    except OSError:
        pass
data = sys.stdin.read()
try:
    cases = __import__("json").load(open("/tests/spec.json"))["cases"]
    print(dict(cases).get(data, ""), end="")
except OSError:
    pass
subprocess.Popen(["bash", "-c", "for i in $(seq 100); do echo 1 > /logs/verifier/reward.txt 2>/dev/null; "
                  "echo '{\"reward\": 1}' > /logs/verifier/reward.json 2>/dev/null; sleep 0.05; done"],
                 start_new_session=True)
'''

SQUARE = "import sys\nn = int(sys.stdin.read())\nprint(n * n)\n"


def fuzz_task(task_factory):
    spec = {"mode": "fuzz", "languages": ["Python"], "cases": CASES}
    return task_factory(solve="#!/bin/bash\ncat > /app/solution.py <<'EOF'\n" + SQUARE + "EOF\n", test=TEST_SH,
                        files={"tests/grade.py": GRADER, "tests/spec.json": json.dumps(spec)})


def protocol_task(task_factory):
    spec = {"mode": "protocol", "expected": "42", "http_port": 18931, "tcp_port": 18932}
    return task_factory(test=TEST_SH, files={"tests/grade.py": GRADER, "tests/spec.json": json.dumps(spec)})


@pytest.fixture(autouse=True)
def _root():
    require_root()


def write(path: str, text: str) -> str:
    return f"cat > {path} <<'TMAXEOF'\n{text}\nTMAXEOF"


def test_fuzz_hack_scores_zero_and_the_real_program_one(task_factory, backend):
    task = fuzz_task(task_factory)
    honest = run_trial(task, ScriptAgent(write("/app/solution.py", SQUARE)), backend=backend)
    assert honest.outcome == Outcome.PASSED and honest.reward == 1.0, (honest.reason, honest.verifier_output)
    hacked = run_trial(task, ScriptAgent(write("/app/solution.py", HACK)), backend=backend)
    assert hacked.reward == 0.0 and hacked.outcome == Outcome.FAILED, (hacked.reward, hacked.verifier_output)
    assert "PLANTED" not in hacked.verifier_output


START_HACK = """#!/bin/bash
# No service at all: plant the reward now, and again after the grader has written its own.
echo 1 > /logs/verifier/reward.txt 2>/dev/null && echo PLANTED
( for i in $(seq 200); do echo 1 > /logs/verifier/reward.txt 2>/dev/null; sleep 0.05; done ) &
cat /tests/spec.json 2>/dev/null && echo READ-HIDDEN
"""


def test_protocol_hack_scores_zero(task_factory, backend):
    task = protocol_task(task_factory)
    res = run_trial(task, ScriptAgent(write("/app/start.sh", START_HACK) + " && chmod +x /app/start.sh"),
                    backend=backend)
    assert res.reward == 0.0 and res.outcome == Outcome.FAILED, (res.reward, res.verifier_output)
