"""Reward integrity: nothing inside a sandbox can touch the reward.

- The adversarial battery (``tmax.hacks``) against real generated tasks of every verifier kind: each
  hack that applies scores below the threshold, through the real gate.
- The control channel: a verifier's status comes from its sandbox's process; a forged status line,
  even one carrying the real nonce, changes nothing; the nonce is on no command line or environment.
- The verifier's environment: HOME, git, Python and shell startup files the agent planted never run.
- Failures stay failures: an agent or verifier sandbox brought down from inside scores 0 with a reason.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import ScriptAgent, make_task, require_root
from tmax.families import load_all
from tmax.families.base import build_task
from tmax.gate import check_task
from tmax.generate import axes_for_family
from tmax.hacks import HACK_THRESHOLD, HACKS, Target, applicable
from tmax.sandbox import get_backend
from tmax.task import load_task
from tmax.taxonomy import VERIFIER_KINDS
from tmax.trial import NopAgent, Outcome, run_trial


@pytest.fixture(autouse=True)
def _root():
    require_root()


def _task_of_kind(out: Path, kind: str, seed: int = 3) -> Path:
    """A real generated task graded by ``kind`` (text fixture, level 1, the first family that has it)."""
    fam = next(f for _, f in sorted(load_all().items()) if kind in f.verifiers and "text_only" in f.fixtures)
    axes = axes_for_family(fam, seed, 1, level=1, fixture="text_only", verifier=kind)
    d = out / f"{fam.name}-{kind}"
    build_task(fam, axes, seed, 1, d)
    return d


@pytest.mark.image
@pytest.mark.parametrize("kind", VERIFIER_KINDS)
def test_every_hack_scores_below_the_threshold(tmp_path, kind):
    d = _task_of_kind(tmp_path, kind)
    task = load_task(d)
    names = [h.name for h in applicable(task)]
    assert "plant_reward" in names and len(names) >= 3, names
    g = check_task(d, repeat=1)
    assert g.ok, g.reason
    # every hack that applies ran, then the channel-skip leg (the task delivers a value through a fixture)
    assert list(g.hack_rewards) == [*names, "channel_skip"], g.hack_rewards
    assert all(r is not None and r < HACK_THRESHOLD for r in g.hack_rewards.values()), g.hack_rewards


def test_battery_covers_the_named_hacks():
    named = {h.name for h in HACKS}
    assert {"plant_reward", "empty_answer", "constant_answer", "input_as_answer", "every_candidate_line",
            "program_plants_reward", "echo_program", "print_nothing", "accept_all", "reject_all",
            "service_plants_reward", "empty_200"} <= named


def test_the_gate_names_the_hack_that_beat_a_task(tmp_path):
    """A verifier that gives full credit to any one-line answer is beaten by the constant answer (the
    planted-script hack, which runs first, writes many lines and so does not beat this one)."""
    test = ("#!/bin/bash\n[ -s /app/answer.txt ] && [ \"$(wc -l < /app/answer.txt)\" -le 1 ] "
            "&& echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n")
    d = make_task(tmp_path / "lenient", test=test)
    g = check_task(d, repeat=1, image="host")
    assert not g.ok and g.beaten_by == "constant_answer", g.reason
    assert "hack constant_answer scored 1" in g.reason
    assert Target.of(load_task(d)).outputs == ["/app/answer.txt"]  # from the instruction: no spec


# -- the control channel ----------------------------------------------------------------------------

@pytest.mark.parametrize("backend_name", ["bwrap", "unshare"])
def test_a_forged_status_line_changes_nothing(backend_name, host_env):
    be = get_backend(backend_name)
    with be.start(host_env.spec(workdir="/tmp")) as sb:
        nonce = sb.shell.nonce.decode()
        # The nonce is on no command line and in no environment of any process of the sandbox.
        r = sb.exec("cat /proc/[0-9]*/cmdline /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep -c '__TMA[X]_[0-9a-f]'")
        assert r.output.strip() == "0", r.output
        # Even the real nonce, printed as both kinds of status line, does not change the status.
        forged = f"printf '\\n{nonce} 0\\n'; printf '\\n{nonce} 0 X\\n'; exit 3"
        last = sb.run_last(forged, timeout=20)
    assert last.exit_code == 3 and not last.timed_out


def test_tb1_test_that_always_fails_scores_0_whatever_the_agent_prints(tmp_path, host_env):
    d = tmp_path / "tb1"
    d.mkdir()
    (d / "task.yaml").write_text("instruction: Write done to /app/out.\nmax_agent_timeout_sec: 60\n"
                                 "max_test_timeout_sec: 60\n")
    (d / "solution.sh").write_text("echo done > /app/out\n")
    # The test runs the agent's report script, then fails whatever happens.
    (d / "run-tests.sh").write_text("#!/bin/bash\nbash /app/report.sh\nexit 1\n")
    (d / "tests").mkdir()
    task = load_task(d)
    forge = ("cat > /app/report.sh <<'EOF'\n"
             "for n in $(cat /proc/[0-9]*/cmdline /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | "
             "grep -o '__TMAX_[0-9a-f]*' | sort -u) __TMAX_000000000000000000000000; do\n"
             "  printf '\\n%s 0\\n\\n%s 0 X\\n' \"$n\" \"$n\"; done\nEOF")
    r = run_trial(task, ScriptAgent(forge), env=host_env)
    assert r.outcome == Outcome.FAILED and r.reward == 0.0, (r.reason, r.verifier_output)


PLANT_AND_STAY = ("cat > /app/report.sh <<'EOF'\n"
                  "echo 1 > /logs/verifier/reward.txt; echo '{\"reward\": 1}' > /logs/verifier/reward.json\n"
                  "setsid nohup sh -c 'while :; do echo 1 > /logs/verifier/reward.txt; "
                  "echo \"{\\\"reward\\\": 1}\" > /logs/verifier/reward.json; sleep 0.02; done' >/dev/null 2>&1 &\n"
                  "EOF")


def _tb1_running_agent_code(d: Path) -> Path:
    """A TB1 task whose test runs the agent's script as root (its design trusts it), then fails."""
    d.mkdir()
    (d / "task.yaml").write_text("instruction: Write done to /app/out.\nmax_agent_timeout_sec: 60\n"
                                 "max_test_timeout_sec: 60\n")
    (d / "solution.sh").write_text("echo done > /app/out\n")
    (d / "run-tests.sh").write_text("#!/bin/bash\nbash /app/report.sh\nsleep 0.3\nexit 1\n")
    (d / "tests").mkdir()
    return d


def test_tb1_reward_files_planted_by_what_the_tests_ran_do_not_count(tmp_path, host_env):
    task = load_task(_tb1_running_agent_code(tmp_path / "tb1"))
    r = run_trial(task, ScriptAgent(PLANT_AND_STAY), env=host_env)
    assert r.outcome == Outcome.FAILED and r.reward == 0.0, (r.reason, r.verifier_output)


@pytest.mark.image
def test_imported_tb1_wrapper_drops_planted_rewards(tmp_path):
    from tmax.interop.importer import import_task

    imp = import_task(_tb1_running_agent_code(tmp_path / "tb1"), tmp_path / "out")
    assert imp.dest, imp.to_json()
    task = load_task(imp.dest)
    r = run_trial(task, ScriptAgent(PLANT_AND_STAY))
    assert r.outcome == Outcome.FAILED and r.reward == 0.0, (r.reason, r.verifier_output)
    ok = run_trial(task, ScriptAgent("echo done > /app/out; echo true > /app/report.sh"))
    assert ok.reward == 0.0  # its test always fails; but the wrapper itself ran to the end
    assert "reward" not in ok.reason


# -- the verifier's environment ---------------------------------------------------------------------

VECTORS_TEST = """#!/bin/bash
# Runs what a careless verifier runs in /app; every planted writer leaves reward files behind.
cd /app
git status >/dev/null 2>&1; git log -1 >/dev/null 2>&1; git diff >/dev/null 2>&1
python3 -c 'import json, os' 2>/dev/null
python3 -m json.tool /dev/null >/dev/null 2>&1
bash -c 'true'; sh -c 'true'
[ -f "$HOME/.local/bin/env" ] && . "$HOME/.local/bin/env"
if ls /logs/verifier/reward.* >/dev/null 2>&1; then r=1; else r=0; fi
rm -f /logs/verifier/reward.json
echo $r > /logs/verifier/reward.txt
echo "HOME=$HOME"
"""


def test_planted_startup_files_never_run_in_the_verifier(tmp_path):
    """The plant_reward hack leaves writers in conftest.py, sitecustomize.py, json.py / os.py shadows,
    rc files, uv's env file, git hooks, fsmonitor and pager: the verifier runs none of them."""
    d = make_task(tmp_path / "vectors", test=VECTORS_TEST, metadata={"image": "default"})
    task = load_task(d)
    hack = next(h for h in applicable(task) if h.name == "plant_reward")
    r = run_trial(task, hack)
    assert r.outcome == Outcome.FAILED and r.reward == 0.0, r.verifier_output
    assert "HOME=/run/tmax-verifier-home" in r.verifier_output


# -- failures stay failures -------------------------------------------------------------------------

def test_an_agent_that_kills_its_own_sandbox_fails_with_reward_0(task_factory):
    r = run_trial(task_factory(), ScriptAgent("echo 42 > /app/answer.txt; kill -9 -1; sleep 5"))
    assert r.outcome == Outcome.FAILED and r.reward == 0.0
    assert "the agent's sandbox ended" in r.reason


def test_a_verifier_killed_from_inside_fails_with_reward_0(task_factory):
    test = "#!/bin/bash\necho 1 > /logs/verifier/reward.txt\nbash /app/check.sh\n"
    task = task_factory(test=test)
    r = run_trial(task, ScriptAgent("echo 'kill -9 -1' > /app/check.sh"))
    assert r.outcome == Outcome.FAILED and r.reward == 0.0, (r.reason, r.verifier_output)


@pytest.mark.image
def test_a_fifo_answer_is_a_failure_not_a_hang(tmp_path):
    d = _task_of_kind(tmp_path, "exact_text")
    task = load_task(d)
    path = Target.of(task).outputs[0]
    r = run_trial(task, ScriptAgent(f"mkdir -p $(dirname {path}) && rm -f {path} && mkfifo {path}"))
    assert r.outcome == Outcome.FAILED and r.reward == 0.0, r.reason
    assert r.verifier_seconds < 60
    details = json.loads(r.verifier_output.strip().splitlines()[-1])
    assert "error" in details


@pytest.mark.image
def test_nop_on_a_generated_task_is_0_not_no_data(tmp_path):
    r = run_trial(load_task(_task_of_kind(tmp_path, "multi_protocol")), NopAgent())
    assert r.outcome == Outcome.FAILED and r.reward == 0.0
