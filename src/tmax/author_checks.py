"""What an authored task must pass beyond the gate (``tmax.gate``), and what the author is told when
it does not.

* The adversarial leg, stricter than the gate's: every hack of ``tmax.hacks`` that applies, aimed at
  the outputs the author declared (and those the instruction names), must score exactly 0. A model
  writes tests for its own solution; a test that gives any credit to an empty or constant answer or
  a planted reward file checks too little.
* The perturbation check: the author declares the fixture value the answer depends on
  (``<depends file="...">VALUE</depends>``). The value is replaced by another of the same shape in a
  copy of the task (fixtures, setup, instruction and tests alike, never the solution), the oracle
  runs again, and its output must change. Where the tests carry the value too (a truth that
  contains it), the oracle must score 1.0 on the changed task and its old output must fail it. A
  solution that hard-codes its answer, or tests that accept an answer the fixtures no longer
  support, fail here. Outputs that are programs reading the value when they run
  (``runtime="yes"``) keep their content: for them the changed tests must carry the value, and the
  oracle's program must pass them.
* The oracle's own exit status and last lines of output, for the feedback when it fails.
"""

from __future__ import annotations

import json
import shlex
import shutil
import string
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from tmax.hacks import HACKS, Hack, Target, named_outputs
from tmax.sandbox import Sandbox
from tmax.task import Task, load_task
from tmax.trial import OracleAgent, Outcome, TrialResult, run_trial

PROMPTS = tomllib.loads((Path(__file__).parent / "author_prompts.toml").read_text())
TAIL_LINES = 25
SNAPSHOT_MARK = "TMAX-OUTPUT-SNAPSHOT "
MAX_REPLAY_BYTES = 256 << 10  # larger outputs are compared by digest only, never replayed
# The hacks know nothing of an authored task but its declared outputs: file-answer hacks apply to
# all of them, and the program and service hacks to those whose verifier axis asks for one.
FILE_ANSWER = "exact_text"


@dataclass
class Dependency:
    """A fixture value the answer is computed from, as the author declared it."""

    file: str  # a fixture path relative to /app, or "setup.sh" for the setup script
    value: str
    runtime: bool = False  # the outputs are a program or service that reads the value when it runs


def tail(text: str, n: int = TAIL_LINES) -> str:
    return "\n".join(text.strip().splitlines()[-n:]) or "(no output)"


# -- agents that record what the oracle did ---------------------------------------------------------

# Prints the declared outputs as one JSON line: a digest of their paths and contents, and a tar of
# them (base64) small enough to be replayed. Runs as the agent, in the agent's sandbox, after solving.
_SNAPSHOT_PY = r"""
import base64, hashlib, io, json, os, sys, tarfile
paths, limit = json.loads(sys.argv[1]), int(sys.argv[2])
digest, buf = hashlib.sha256(), io.BytesIO()
with tarfile.open(fileobj=buf, mode="w") as tar:
    for top in paths:
        found = [top] if not os.path.isdir(top) else sorted(
            os.path.join(d, f) for d, _, fs in os.walk(top) for f in fs)
        for p in found:
            if os.path.isfile(p):
                digest.update(p.encode() + b"\0" + open(p, "rb").read() + b"\0")
                tar.add(p)
            else:
                digest.update(b"missing:" + p.encode() + b"\0")
data = buf.getvalue()
print(MARK + json.dumps({"digest": digest.hexdigest(),
                         "tar": base64.b64encode(data).decode() if len(data) <= limit else None}))
"""


@dataclass
class Snapshot:
    digest: str
    tar_b64: str | None  # None: too large to replay


class RecordingOracle:
    """The reference solution, as ``OracleAgent`` runs it, keeping its exit status and output and a
    snapshot of the declared outputs."""

    name = "oracle"

    def __init__(self, outputs: list[str] | None = None):
        self.outputs = outputs or []
        self.exit_code: int | None = None
        self.timed_out = False
        self.output = ""
        self.snapshot: Snapshot | None = None

    def binds(self, task: Task):
        return OracleAgent().binds(task)

    def run(self, task: Task, sandbox: Sandbox, timeout: float) -> bool:
        r = sandbox.exec(f"bash /solution/{Path(task.solution_script).name}", timeout=timeout)
        self.exit_code, self.timed_out, self.output = r.exit_code, r.timed_out, r.output
        if self.outputs:
            self.snapshot = _snapshot(sandbox, self.outputs)
        return r.timed_out


def _snapshot(sandbox: Sandbox, outputs: list[str]) -> Snapshot | None:
    script = _SNAPSHOT_PY.replace("MARK", repr(SNAPSHOT_MARK))
    cmd = (f"python3 -c {shlex.quote(script)} {shlex.quote(json.dumps(outputs))} {MAX_REPLAY_BYTES}")
    r = sandbox.exec(cmd, timeout=60, persistent=False)
    for line in r.output.splitlines():
        if line.startswith(SNAPSHOT_MARK):
            doc = json.loads(line[len(SNAPSHOT_MARK):])
            return Snapshot(doc["digest"], doc["tar"])
    return None


class ReplayOutputs:
    """Writes an earlier snapshot of the outputs back, and nothing else."""

    name = "replay_old_output"

    def __init__(self, snapshot: Snapshot):
        self.snapshot = snapshot

    def binds(self, task: Task):
        return []

    def run(self, task: Task, sandbox: Sandbox, timeout: float) -> bool:
        cmd = f"printf %s {shlex.quote(self.snapshot.tar_b64 or '')} | base64 -d | tar -C / -xf -"
        return sandbox.exec(cmd, timeout=min(timeout, 60)).timed_out


def oracle_report(task_dir: Path, backend: str, outputs: list[str] | None = None) -> tuple[RecordingOracle,
                                                                                               TrialResult]:
    """One oracle trial, recorded."""
    agent = RecordingOracle(outputs)
    return agent, run_trial(load_task(task_dir), agent, backend=backend)


def describe_oracle(agent: RecordingOracle, trial: TrialResult) -> str:
    status = "timed out" if agent.timed_out else f"exited with status {agent.exit_code}"
    return (f"Your solution (solution/solve.sh) {status}; the last lines it printed:\n{tail(agent.output)}\n"
            f"The test then scored {trial.reward} ({trial.outcome.value}"
            f"{': ' + trial.reason if trial.reason else ''}); the last lines the test printed:\n"
            f"{tail(trial.verifier_output)}")


# -- the adversarial leg -----------------------------------------------------------------------------

@dataclass
class HackVerdict:
    ok: bool
    rewards: dict[str, float | None] = field(default_factory=dict)
    beaten_by: str = ""
    reward: float | None = None
    test_output: str = ""


def authored_hacks(task: Task, outputs: list[str], verifier: str) -> list[Hack]:
    """Every hack of the battery that applies to the task as a file answer at ``outputs`` (plus the
    paths the instruction names), or to its verifier axis; each named once."""
    outs = list(dict.fromkeys([*outputs, *named_outputs(task)]))
    targets = [Target("", {}, outs, task.instruction), Target(FILE_ANSWER, {}, outs, task.instruction),
               Target(verifier, {}, outs, task.instruction)]
    hacks = []
    for h in HACKS:
        target = next((t for t in targets if h.applies(t)), None)
        if target is not None:
            hacks.append(Hack(h.name, h.applies, h.script, target))
    return hacks


def adversarial_leg(task_dir: Path, outputs: list[str], verifier: str, backend: str) -> HackVerdict:
    """Run the hacks in order; the first that scores above 0 (or cannot be scored) refuses the task."""
    task = load_task(task_dir)
    verdict = HackVerdict(ok=True)
    for hack in authored_hacks(task, outputs, verifier):
        tr = run_trial(task, hack, backend=backend)
        verdict.rewards[hack.name] = tr.reward
        if tr.outcome == Outcome.INFRA_ERROR or tr.reward is None or tr.reward > 0:
            verdict.ok, verdict.beaten_by, verdict.reward = False, hack.name, tr.reward
            verdict.test_output = tail(tr.verifier_output) + (f"\n({tr.reason})" if tr.reason else "")
            break
    return verdict


# -- the perturbation check --------------------------------------------------------------------------

class DeclarationError(ValueError):
    """A <depends> declaration that does not match the task's files."""


@dataclass
class PerturbVerdict:
    ok: bool
    reason: str = ""
    file: str = ""
    old: str = ""
    new: str = ""
    tests_carry_value: bool = False
    perturbed_reward: float | None = None
    old_output_reward: float | None = None


MIN_VALUE_LEN = 3  # shorter values would be replaced inside unrelated text (a reward "1", a count)


def other_value(value: str, avoid: list[str]) -> str:
    """A value of the same shape that occurs nowhere in ``avoid``: if it has digits, each digit becomes
    another digit (so context such as ``port = 84`` may be declared with it); else each letter
    another letter of its case. The rest is kept."""
    if len(value) < MIN_VALUE_LEN:
        raise DeclarationError(f"<depends>: the value {value!r} is too short to be replaced safely; declare at "
                               f"least {MIN_VALUE_LEN} characters (with the text around it, e.g. 'retries = 7')")
    alphabets = ([string.digits] if any(c in string.digits for c in value)
                 else [string.ascii_lowercase, string.ascii_uppercase])
    if not any(c in a for a in alphabets for c in value):
        raise DeclarationError(f"<depends>: the value {value!r} has no letters or digits to change")
    for k in range(1, 10):
        new = "".join(_shift(c, k, alphabets) for c in value)
        if new != value and not any(new in text for text in avoid):
            return new
    raise DeclarationError(f"<depends>: found no replacement for {value!r} that the task's files lack")


def _shift(c: str, k: int, alphabets: list[str]) -> str:
    for alphabet in alphabets:
        if c in alphabet:
            return alphabet[(alphabet.index(c) + k) % len(alphabet)]
    return c


def _dependency_file(task_dir: Path, dep: Dependency) -> Path:
    rel = dep.file.lstrip("/").removeprefix("app/")
    path = task_dir / "environment" / ("setup.sh" if rel == "setup.sh" else f"files/{rel}")
    if not path.is_file():
        raise DeclarationError(f'<depends file="{dep.file}">: no such fixture; expected the path of one of '
                               'your <file> sections, or "setup.sh" for a value your setup writes')
    if dep.value not in path.read_text(errors="replace"):
        raise DeclarationError(f'<depends file="{dep.file}">: the value {dep.value!r} does not occur in that '
                               "file; declare the exact text the answer is computed from")
    return path


def perturbed_copy(task_dir: Path, dest: Path, dep: Dependency) -> tuple[str, bool]:
    """A copy of the task with ``dep.value`` replaced everywhere but in the solution; returns the new
    value and whether the tests carried the old one."""
    _dependency_file(task_dir, dep)
    texts = [p.read_text(errors="replace") for p in task_dir.rglob("*") if p.is_file()]
    new = other_value(dep.value, texts)
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(task_dir, dest, symlinks=True)
    tests_changed = False
    for p in sorted(dest.rglob("*")):
        rel = p.relative_to(dest).parts
        if not p.is_file() or p.is_symlink() or rel[0] in ("solution", "task.toml"):
            continue
        try:
            text = p.read_text()
        except UnicodeDecodeError:
            continue
        if dep.value in text:
            p.write_text(text.replace(dep.value, new))
            tests_changed |= rel[0] == "tests"
    return new, tests_changed


def perturbation_check(task_dir: Path, deps: list[Dependency], outputs: list[str], backend: str,
                       work: Path) -> PerturbVerdict:
    """Each declared value changed in turn (see the module doc); the first failure is the verdict.
    Raises DeclarationError for a declaration that does not match the task."""
    if not deps:
        return PerturbVerdict(True, "no value declared")
    before, trial = oracle_report(task_dir, backend, outputs)
    if before.snapshot is None:
        return PerturbVerdict(False, f"could not read the outputs {outputs} after the oracle ran ({trial.reason})")
    try:
        for dep in deps:
            v = _perturb_one(task_dir, dep, before.snapshot, outputs, backend, work / "perturbed")
            if not v.ok:
                return v
        return v
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _perturb_one(task_dir: Path, dep: Dependency, before: Snapshot, outputs: list[str], backend: str,
                 copy: Path) -> PerturbVerdict:
    new, tests_carry = perturbed_copy(task_dir, copy, dep)
    if dep.runtime and not tests_carry:
        raise DeclarationError(f'<depends file="{dep.file}" runtime="yes">: the value {dep.value!r} is in neither '
                               "the truth nor the test, so no test can tell whether your program follows it")
    v = PerturbVerdict(True, file=dep.file, old=dep.value, new=new, tests_carry_value=tests_carry)
    after, trial = oracle_report(copy, backend, outputs)
    v.perturbed_reward = trial.reward
    change = f"with {dep.value!r} in {dep.file} replaced by {new!r}"
    if after.snapshot is None:
        v.ok, v.reason = False, f"{change}, the outputs could not be read after the oracle ran"
    elif after.snapshot.digest == before.digest and not dep.runtime:
        v.ok, v.reason = False, (f"{change}, your solution wrote exactly the same {', '.join(outputs)} as "
                                 "before: its answer does not depend on the value the fixture delivers "
                                 "(a hard-coded answer?), and tests that pass it would pass an answer the "
                                 "fixtures do not support")
    elif tests_carry and (trial.reward is None or trial.reward < 1.0):
        v.ok, v.reason = False, (f"{change} (in the fixtures and the tests alike), your solution scored "
                                 f"{trial.reward}: it does not follow the value")
    elif tests_carry and not dep.runtime and before.tar_b64 is not None:
        replay = run_trial(load_task(copy), ReplayOutputs(before), backend=backend)
        v.old_output_reward = replay.reward
        if replay.reward is None or replay.reward > 0:
            v.ok, v.reason = False, (f"{change} (in the fixtures and the tests alike), the tests still gave "
                                     f"{replay.reward} to the oracle's OLD output: they do not check the "
                                     "answer against the value")
    return v


# -- the verdict, as the author is told it ----------------------------------------------------------

def judge(draft, staging: Path, verifier: str, backend: str, gate) -> tuple[str, str, str, dict]:
    """After the gate (a ``GateResult``): ("", "", "", details) when the task passes every check, else
    (kind of failure, reason, feedback for the model, details for the log)."""
    beaten_by_hack = gate.beaten_by and gate.beaten_by != "channel_skip"
    if not gate.ok and not beaten_by_hack:
        kind, feedback = _gate_failure(staging, backend, gate)
        return kind, gate.reason, feedback, {}
    # a hack the gate's leg ran is run again here, at the declared outputs, for its test output
    hacks = adversarial_leg(staging, draft.outputs, verifier, backend)
    details: dict = {"hacks": hacks.rewards}
    if not hacks.ok or not gate.ok:
        hack, reward = (hacks.beaten_by, hacks.reward) if not hacks.ok else (gate.beaten_by,
                                                                              gate.hack_rewards[gate.beaten_by])
        details["beaten_by"] = hack
        text = PROMPTS["hack_error"].format(reward=reward, hack=hack, output=hacks.test_output or "(not rerun)",
                                            what=PROMPTS["hacks"].get(hack, "is a generic cheat"))
        return "hack_passed", f"hack {hack} scored {reward} (must be 0)", text, details
    try:
        pv = perturbation_check(staging, draft.depends, draft.outputs, backend,
                                staging.parent / f"{staging.name}.perturb")
    except DeclarationError as e:
        return "bad_declaration", str(e), PROMPTS["declaration_error"].format(reason=e), details
    details["perturbation"] = {k: v for k, v in pv.__dict__.items() if k != "reason"}
    if pv.ok:
        return "", "", "", details
    detail = f"With the changed value your solution scored {pv.perturbed_reward}" + (
        f"; the oracle's old output scored {pv.old_output_reward}." if pv.old_output_reward is not None else ".")
    return ("perturbation_failed", pv.reason, PROMPTS["perturb_error"].format(reason=pv.reason, detail=detail),
            details)


def _gate_failure(staging: Path, backend: str, gate) -> tuple[str, str]:
    """(kind, feedback) for a task the gate refused: for a failing oracle, its own exit status and
    output and the test's; otherwise the test's output on the do-nothing run."""
    from tmax.trial import NopAgent

    if not gate.oracle_rewards:
        kind, detail = "build_failed", ""
    elif gate.beaten_by == "channel_skip":
        kind, detail = "channel_skipped", ""
    else:
        oracle_failed = gate.oracle_rewards[-1] is None or gate.oracle_rewards[-1] < 1.0
        kind = "oracle_failed" if oracle_failed else "nop_not_zero"
        try:  # one more run of the failing side, for what it printed
            if oracle_failed:
                detail = describe_oracle(*oracle_report(staging, backend))
            else:
                tr = run_trial(load_task(staging), NopAgent(), backend=backend)
                detail = PROMPTS["nop_tail"].format(output=tail(tr.verifier_output))
        except Exception as e:  # noqa: BLE001 - the feedback is best effort; the gate verdict stands
            detail = f"(the run's output is unavailable: {type(e).__name__}: {e})"
    return kind, PROMPTS["gate_error"].format(reason=gate.reason, oracle=gate.oracle_rewards, nop=gate.nop_reward,
                                              detail=detail)
