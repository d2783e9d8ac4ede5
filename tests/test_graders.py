"""The reward curves of verifiers/grade.py and its handling of hostile answers: scoring functions
loaded straight from the file the verifier runs, hostile files (FIFO, symlink, huge) refused without
hanging, and real generated metric_threshold tasks through the gate."""

from __future__ import annotations

import http.server
import importlib.util
import json
import math
import os
import random
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tmax.families import load_all
from tmax.families.base import build_task
from tmax.generate import axes_for_family
from tmax.verifiers import TEST_SH

GRADE_PY = Path(__file__).resolve().parents[1] / "src" / "tmax" / "verifiers" / "grade.py"


def load_grade():
    spec = importlib.util.spec_from_file_location("tmax_grade_under_test", GRADE_PY)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def g():
    return load_grade()


@pytest.fixture
def logs(g, tmp_path, monkeypatch):
    d = tmp_path / "logs"
    d.mkdir()
    monkeypatch.setattr(g, "LOGS", str(d))
    return d


def run_mode(g, fn, spec) -> dict:
    """Run one grade_* function to its finish(); return details.json (reward.json checked on the way)."""
    with pytest.raises(SystemExit) as e:
        fn(spec)
    assert e.value.code == 0
    logs = Path(g.LOGS)
    rewards = json.loads((logs / "reward.json").read_text())
    assert all(isinstance(v, float) for v in rewards.values()), rewards
    assert sorted(p.name for p in logs.iterdir()) == ["details.json", "reward.json"]  # no temp files left
    details = json.loads((logs / "details.json").read_text())
    assert details["reward"] == rewards["reward"]
    return details


# -- lines ----------------------------------------------------------------------------------------

def text(lines) -> str:
    return "".join(f"{x}\n" for x in lines)


EXPECTED = [f"host{i:03d}\t{i * 7 % 11}" for i in (3, 17, 42, 99, 150)]
CANDIDATES = [f"host{i:03d}\t{i * 7 % 11}" for i in range(200)]  # every line that could be an answer


@pytest.mark.parametrize("ordered", [True, False])
def test_listing_every_candidate_scores_low(g, ordered):
    f1, precision, recall = g.lines_score(text(EXPECTED), text(CANDIDATES), ordered)
    assert recall == 1.0 and precision == 5 / 200
    assert f1 < 0.1


@pytest.mark.parametrize("ordered", [True, False])
def test_exact_lines_score_one_and_a_superset_of_twice_the_size_well_below(g, ordered):
    assert g.lines_score(text(EXPECTED), text(EXPECTED), ordered) == (1.0, 1.0, 1.0)
    # trailing whitespace and blank lines at the end, CRLF: all normalised away
    assert g.lines_score(text(EXPECTED), "\r\n".join(x + "  " for x in EXPECTED) + "\r\n\n\n", ordered)[0] == 1.0
    f1 = g.lines_score(text(EXPECTED), text(EXPECTED + CANDIDATES[:5]), ordered)[0]
    assert math.isclose(f1, 2 * 5 / 15)  # was 0.5 as a fraction of the larger count


def test_order_is_graded_only_when_ordered(g):
    rev = text(reversed(EXPECTED))
    f1, precision, recall = g.lines_score(text(EXPECTED), rev, ordered=True)
    assert f1 == precision == recall == 1 / 5  # longest common subsequence of a reversal: one line
    assert g.lines_score(text(EXPECTED), rev, ordered=False) == (1.0, 1.0, 1.0)
    swapped = EXPECTED[:]
    swapped[1], swapped[2] = swapped[2], swapped[1]
    assert g.lines_score(text(EXPECTED), text(swapped), True)[0] == pytest.approx(4 / 5)


def test_subsets_repeats_and_empty_answers(g):
    f1, precision, recall = g.lines_score(text(EXPECTED), text(EXPECTED[:2]), True)
    assert (precision, recall) == (1.0, 2 / 5) and f1 == pytest.approx(4 / 7)
    # an expected line repeated does not match more often than it is expected
    assert g.lines_score(text(EXPECTED), text([EXPECTED[0]] * 50), False)[0] == pytest.approx(2 / 55)
    assert g.lines_score(text(EXPECTED), "", True) == (0.0, 0.0, 0.0)
    assert g.lines_score("", "", True) == (1.0, 1.0, 1.0)
    assert g.lines_score("", "x\n", True)[0] == 0.0


def test_lcs_matches_the_textbook_recurrence(g):
    def dp(a, b):
        row = [0] * (len(b) + 1)
        for x in a:
            prev, row = row, [0]
            for j, y in enumerate(b):
                row.append(prev[j] + 1 if x == y else max(prev[j + 1], row[j]))
        return row[-1]

    rng = random.Random(7)
    for _ in range(2000):
        a = [rng.choice("abcd") for _ in range(rng.randrange(0, 14))]
        b = [rng.choice("abcde") for _ in range(rng.randrange(0, 14))]
        assert g.lcs_length(a, b) == dp(a, b), (a, b)


def test_a_large_answer_is_scored_quickly(g):
    exp = text(f"row {i}" for i in range(5000))
    got = text(f"row {i}" for i in range(0, 400_000))  # ~4.5 MB, 80x too many lines
    t0 = time.monotonic()
    f1 = g.lines_score(exp, got, True)[0]
    assert f1 == pytest.approx(2 * 5000 / 405_000)
    assert time.monotonic() - t0 < 20


def test_grade_lines_writes_f1_precision_recall(g, logs):
    spec = {"mode": "lines", "path": str(logs.parent / "ans.txt"), "expected": text(EXPECTED), "threshold": 1.0,
            "ordered": True}
    Path(spec["path"]).write_text(text(CANDIDATES))
    d = run_mode(g, g.grade_lines, spec)
    assert d["reward"] < 0.1 and d["recall"] == 1.0 and d["precision"] == 0.025
    Path(spec["path"]).write_text(text(EXPECTED))
    assert run_mode(g, g.grade_lines, spec)["reward"] == 1.0


# -- number ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("factor, want", [(0.5, 1.0), (1.0, 1.0), (2.0, 1 - math.log10(2)), (10 ** 0.5, 0.5),
                                          (10.0, 0.0), (11.0, 0.0), (1e3, 0.0)])
def test_number_curve(g, factor, want):
    expected, tol = 2.5, 1e-6
    value = expected * (1 + factor * tol)
    score, err = g.number_score(expected, f"{value!r}\n", tol)
    assert err == pytest.approx(factor * tol, rel=1e-6)
    assert score == pytest.approx(want, abs=1e-6)


def test_number_two_tolerances_off_is_partial(g):
    score, _ = g.number_score(100.0, "100.0002", 1e-6)
    assert 0.0 < score < 1.0


@pytest.mark.parametrize("answer", ["", "nan", "inf", "-inf", "x=3", "\n\n"])
def test_number_that_is_not_one_scores_zero(g, answer):
    assert g.number_score(3.0, answer, 1e-3)[0] == 0.0


# -- hostile answer files ---------------------------------------------------------------------------

def test_fifo_answer_is_refused_without_hanging(tmp_path):
    """In a subprocess: if the grader ever blocked on the FIFO, the timeout would catch it."""
    fifo = tmp_path / "out.txt"
    os.mkfifo(fifo)
    logs = tmp_path / "logs"
    logs.mkdir()
    specs = {"grade_lines": {"mode": "lines", "path": str(fifo), "expected": "a\n", "threshold": 1.0},
             "grade_exact": {"mode": "exact", "path": str(fifo), "expected": "a\n"},
             "grade_number": {"mode": "number", "path": str(fifo), "expected": 1.0, "rel_tol": 1e-6}}
    for fn, spec in specs.items():
        src = (f"import importlib.util as u\ns = u.spec_from_file_location('grade', {str(GRADE_PY)!r})\n"
               f"g = u.module_from_spec(s)\ns.loader.exec_module(g)\ng.LOGS = {str(logs)!r}\ng.{fn}({spec!r})\n")
        p = subprocess.run([sys.executable, "-I", "-c", src], capture_output=True, text=True, timeout=30)
        assert p.returncode == 0, p.stderr
        details = json.loads((logs / "details.json").read_text())
        assert json.loads((logs / "reward.json").read_text())["reward"] == 0.0
        assert details["reward"] == 0.0 and str(fifo) in details["error"] and "FIFO" in details["error"], details


def test_symlinked_answer_is_refused(g, logs, tmp_path):
    real = tmp_path / "real.txt"
    real.write_text(text(EXPECTED))
    link = tmp_path / "out.txt"
    link.symlink_to(real)
    spec = {"mode": "lines", "path": str(link), "expected": text(EXPECTED), "threshold": 1.0}
    d = run_mode(g, g.grade_lines, spec)
    assert d["reward"] == 0.0 and str(link) in d["error"] and "symbolic link" in d["error"]
    # a symlinked directory on the way is refused too
    (tmp_path / "realdir").mkdir()
    (tmp_path / "realdir" / "out.txt").write_text(text(EXPECTED))
    (tmp_path / "out").symlink_to(tmp_path / "realdir")
    d = run_mode(g, g.grade_exact, {"mode": "exact", "path": str(tmp_path / "out" / "out.txt"),
                                    "expected": text(EXPECTED)})
    assert d["reward"] == 0.0 and str(tmp_path / "out") in d["error"] and "symbolic link" in d["error"]


def test_huge_missing_and_odd_answers_are_refused(g, tmp_path):
    huge = tmp_path / "huge.txt"
    with open(huge, "wb") as f:
        f.truncate(g.MAX_BYTES + 1)  # sparse: no disk used
    got, err = g.read_output(str(huge))
    assert got is None and str(huge) in err and "too large" in err
    at_cap = tmp_path / "cap.txt"
    with open(at_cap, "wb") as f:
        f.truncate(g.MAX_BYTES)
    assert len(g.read_output(str(at_cap))[0]) == g.MAX_BYTES
    assert g.read_output(str(tmp_path / "nope.txt")) == (None, f"{tmp_path / 'nope.txt'} not found")
    got, err = g.read_output(str(tmp_path))
    assert got is None and "directory" in err
    got, err = g.read_output(str(huge) + "/x")
    assert got is None and "not a directory" in err
    assert g.read_output("relative.txt")[0] is None


def test_answer_program_output_is_capped_and_background_children_do_not_stall(g, tmp_path):
    t0 = time.monotonic()
    code, out = g.run_prog(["python3", "-c", "import sys\nwhile True: sys.stdout.write('y' * 65536)"], "", timeout=30)
    assert code != 0 and len(out) <= g.MAX_BYTES  # killed by the file size limit, not after 30 s
    assert time.monotonic() - t0 < 20
    t0 = time.monotonic()
    code, out = g.run_prog(["bash", "-c", "(sleep 30 &) ; echo done"], "", timeout=10)
    assert (code, out) == (0, "done\n") and time.monotonic() - t0 < 10


# -- protocol ---------------------------------------------------------------------------------------

class _Handler(http.server.BaseHTTPRequestHandler):
    routes: dict = {}

    def do_GET(self):  # noqa: N802
        status, body, headers = self.routes[self.path]
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def http_port():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def test_http_answer_needs_status_200_and_the_exact_body(g, http_port):
    deadline = time.time() + 10
    for status, body, want in [(200, b"42\n", True), (200, b"42", True), (404, b"42\n", False),
                               (201, b"42\n", False), (200, b"", False), (200, b"42\n43\n", False)]:
        _Handler.routes = {"/result": (status, body, {})}
        got_status, got_body = g.http_answer(http_port, deadline)
        assert (got_status == 200 and g.answer_matches(got_body, "42\n")) == want, (status, body)
    _Handler.routes = {"/result": (302, b"", {"Location": "/elsewhere"}), "/elsewhere": (200, b"42\n", {})}
    assert g.http_answer(http_port, deadline)[0] == 302  # not followed


def test_empty_answers_never_match_a_non_empty_result(g):
    assert not g.answer_matches("", "42\n")
    assert not g.answer_matches("\n \n", "42\n")
    assert g.answer_matches("", "\n")  # an empty result is answered by an empty reply
    assert g.answer_matches("42  \r\n", "42\n")


# -- the verifier script --------------------------------------------------------------------------

def test_test_sh_runs_the_grader_isolated_outside_app():
    assert "python3 -I /tests/grade.py /tests/spec.json" in TEST_SH
    assert "\ncd /  " in TEST_SH
    # the fallback is a valid reward file: numbers only
    fallback = [line for line in TEST_SH.splitlines() if "reward.json" in line and "echo" in line]
    assert fallback and all(json.loads(line.split("'")[1]) == {"reward": 0.0} for line in fallback)


def test_a_grader_crash_is_reward_zero_with_an_error(g, logs, monkeypatch):
    answer = logs.parent / "x.txt"
    answer.write_text("1.0\n")
    spec_file = logs.parent / "spec.json"
    spec_file.write_text(json.dumps({"mode": "number", "path": str(answer), "expected": 1.0, "rel_tol": None}))
    monkeypatch.setattr(sys, "argv", ["grade.py", str(spec_file)])
    monkeypatch.chdir(logs.parent)  # main() moves to /; monkeypatch moves back
    d = run_mode(g, lambda spec: g.main(), None)
    assert os.getcwd() == "/"
    assert d["reward"] == 0.0 and d["error"].startswith("grader error: TypeError")


# -- the RK4 family: the instructed scheme, not the exact solution ------------------------------------

def _build(tmp_path, family, level, seed, verifier, fixture="text_only"):
    fam = load_all()[family]
    axes = axes_for_family(fam, seed, level, level=level, fixture=fixture, verifier=verifier)
    d = tmp_path / f"{family}-L{level}-s{seed}-{verifier}"
    build_task(fam, axes, seed, level, d)
    return d


def _cfg(d: Path) -> dict:
    p = {}
    for line in (d / "environment/files/app/sim/oscillator.cfg").read_text().splitlines():
        k, v = line.split("=")
        p[k.strip()] = float(v)
    return p


def _exact(p: dict) -> float:
    """The exact x(T): closed form for the free (damped) oscillator, else RK4 at a far finer step."""
    w, z, x0, v0, T = p["omega"], p.get("zeta", 0.0), p["x0"], p["v0"], p["T"]
    if not p.get("force") and not p.get("beta"):
        wd = w * math.sqrt(1 - z * z)
        return math.exp(-z * w * T) * (x0 * math.cos(wd * T) + (v0 + z * w * x0) / wd * math.sin(wd * T))
    from tmax.families.programs import fill, run_python
    from tmax.families.scientific_computing.rk4_oscillator_state import REFERENCE

    ns = run_python(fill(REFERENCE, FIELDS=["x_T"]))  # the step is given below, not the delivered one
    text = "".join(f"{k} = {v!r}\n" for k, v in p.items())
    return ns["measure"](text, 0.1)["x_T"]  # h = 0.1 ms


def test_rk4_closed_form_scores_zero_and_rk4_one(g, tmp_path):
    for level in (1, 2, 3, 4):
        for seed in range(3):
            d = _build(tmp_path, "rk4_oscillator_state", level, seed, "metric_threshold")
            spec = json.loads((d / "tests/spec.json").read_text())
            assert spec["mode"] == "number"
            exact = _exact(_cfg(d))
            assert g.number_score(spec["expected"], repr(exact), spec["rel_tol"])[0] == 0.0, (level, seed)
            assert g.number_score(spec["expected"], f"{spec['expected']:.12g}", spec["rel_tol"])[0] == 1.0
            assert "at least 12 significant digits" in (d / "instruction.md").read_text()
        # compared as text (%.6f), the exact solution's x_T differs from the scheme's too
        d = _build(tmp_path, "rk4_oscillator_state", level, 0, "exact_text")
        expected = json.loads((d / "tests/spec.json").read_text())["expected"]
        assert f"x_T={_exact(_cfg(d)):.6f}\n" not in expected, level


def test_instruction_states_the_curves(tmp_path):
    d = _build(tmp_path, "rk4_oscillator_state", 1, 0, "metric_threshold")
    assert "0 at ten times that tolerance" in (d / "instruction.md").read_text()
    fam = next(name for name, f in sorted(load_all().items()) if "metric_threshold" in f.verifiers
               and name == "cron_next_runs")
    d = _build(tmp_path, fam, 1, 0, "metric_threshold")
    spec = json.loads((d / "tests/spec.json").read_text())
    assert spec["mode"] == "lines" and spec["ordered"] is True
    instruction = (d / "instruction.md").read_text()
    assert "order matters" in instruction and "F1 = 2PR / (P + R)" in instruction and "extra lines" in instruction


# -- end to end: real tasks through the gate -----------------------------------------------------------


@pytest.mark.image
@pytest.mark.parametrize("family, level", [("rk4_oscillator_state", 2), ("cron_next_runs", 1)])
def test_metric_threshold_tasks_pass_the_gate(tmp_path, default_image, family, level):
    from tmax.gate import check_task

    if os.geteuid() != 0:
        pytest.skip("the gate's sandboxes need root here")
    d = _build(tmp_path, family, level, 0, "metric_threshold")
    res = check_task(d, repeat=1)
    assert res.ok, res.reason
    assert res.oracle_rewards == [1.0] and res.nop_reward == 0.0


@pytest.mark.image
def test_hostile_answer_files_score_zero_in_a_real_trial(tmp_path, default_image):
    """A FIFO at the answer path, or a symlink to a right answer, in the real sandbox: 0, no hang."""
    from conftest import ScriptAgent
    from tmax.task import load_task
    from tmax.trial import Outcome, run_trial

    if os.geteuid() != 0:
        pytest.skip("the sandboxes need root here")
    d = _build(tmp_path, "cron_next_runs", 1, 0, "metric_threshold")
    task = load_task(d)
    path = json.loads((d / "tests/spec.json").read_text())["path"]
    right = json.loads((d / "tests/spec.json").read_text())["expected"]
    put_right = f"mkdir -p {os.path.dirname(path)} && cat > /app/right.txt <<'TMAXEOF'\n{right}TMAXEOF\n"
    control = run_trial(task, ScriptAgent(put_right + f"cp /app/right.txt {path}"), backend="bwrap")
    assert control.reward == 1.0, (control.reason, control.verifier_output)  # the right file, as a file
    for step in (f"mkdir -p {os.path.dirname(path)} && mkfifo {path}", put_right + f"ln -s /app/right.txt {path}"):
        t0 = time.monotonic()
        res = run_trial(task, ScriptAgent(step), backend="bwrap")
        assert res.reward == 0.0 and res.outcome == Outcome.FAILED, (res.reward, res.reason, res.verifier_output)
        assert path in res.verifier_output, res.verifier_output
        assert time.monotonic() - t0 < 120
