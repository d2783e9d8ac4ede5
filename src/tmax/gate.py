"""The correctness gate: a task passes iff its oracle scores 1.0 on every one of R runs, doing
nothing scores 0.0, and every hack of the adversarial battery that applies to it (``tmax.hacks``)
scores below ``HACK_THRESHOLD``, all in the environment that will be solved (built once, shared by
every run). With ``channels`` (the default), a task that delivers a value through a fixture channel
must also pass the channel-skip check (``tmax.channels``): the reference solution with that value
replaced by any of the most plausible candidates visible without the channel scores 0 (``tmax
families check`` runs it with more candidates). The report names the first hack that beat the task."""

from __future__ import annotations

import json
import time
import traceback
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from tmax.images import ImageError, task_environment
from tmax.sandbox import DEFAULT_BACKEND
from tmax.task import TaskError, load_task
from tmax.hacks import HACK_THRESHOLD, applicable

CHANNEL_RUNS = 3  # candidates of the channel-skip check run through the verifier per task
from tmax.trial import NopAgent, OracleAgent, Outcome, TrialResult, run_trial


@dataclass
class GateResult:
    task: str  # the task directory
    ok: bool
    oracle_rewards: list[float | None] = field(default_factory=list)
    nop_reward: float | None = None
    hack_rewards: dict[str, float | None] = field(default_factory=dict)  # the hacks run, in order
    beaten_by: str = ""  # the hack that scored HACK_THRESHOLD or more
    reason: str = ""
    seconds: float = 0.0
    env_hash: str = ""
    name: str = ""

    def to_json(self) -> dict:
        return asdict(self)


def _why(trial: TrialResult) -> str:
    return f"{trial.outcome.value}" + (f": {trial.reason}" if trial.reason else "")


def check_task(path: str | Path, repeat: int = 2, backend: str = DEFAULT_BACKEND, image: str | None = None,
               adversarial: bool = True, channels: bool = True) -> GateResult:
    t0 = time.monotonic()
    res = GateResult(task=str(path), ok=False)
    try:
        task = load_task(path)
        res.name = task.name
        dropped = task.metadata.get("import_dropped")
        if dropped:  # its environment is not what its author wrote: nothing is built, no score would mean anything
            res.reason = "the import dropped what the task's author wrote: " + "; ".join(map(str, dropped))
            res.seconds = time.monotonic() - t0
            return res
        env = task_environment(task, backend, image=image)
        res.env_hash = env.hash
    except (TaskError, ImageError) as e:
        res.reason = str(e)
        res.seconds = time.monotonic() - t0
        return res
    except Exception as e:  # a bad task must never stop the batch; a bug keeps its traceback
        res.reason = f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=5)}"
        res.seconds = time.monotonic() - t0
        return res
    problems: list[str] = []
    for i in range(repeat):
        tr = run_trial(task, OracleAgent(), backend=backend, env=env)
        res.oracle_rewards.append(tr.reward)
        if tr.reward is None or tr.reward < 1.0:
            problems.append(f"oracle run {i + 1} scored {tr.reward} ({_why(tr)})")
            break
    if not problems:
        tr = run_trial(task, NopAgent(), backend=backend, env=env)
        res.nop_reward = tr.reward
        if tr.outcome == Outcome.INFRA_ERROR or tr.reward is None:
            problems.append(f"nop run could not be scored ({_why(tr)})")
        elif tr.outcome == Outcome.VERIFIER_TIMEOUT:  # scored 0, but a verifier must not hang on no work
            problems.append(f"nop run hung the verifier ({_why(tr)})")
        elif tr.reward != 0.0:
            problems.append(f"nop scored {tr.reward}; expected 0.0 (the task is solved by doing nothing)")
    if not problems and adversarial:
        problems += _adversarial_leg(task, env, backend, res)
    if not problems and adversarial and channels and task.metadata.get("fixture"):
        problems += _channel_leg(task, backend, image, res)
    res.ok = not problems
    res.reason = "; ".join(problems)
    res.seconds = time.monotonic() - t0
    return res


def _adversarial_leg(task, env, backend: str, res: GateResult) -> list[str]:
    """Run the hacks that apply; stop at the first that beats the task (the gate is a filter)."""
    for hack in applicable(task):
        tr = run_trial(task, hack, backend=backend, env=env)
        res.hack_rewards[hack.name] = tr.reward
        if tr.outcome == Outcome.INFRA_ERROR or tr.reward is None:
            return [f"hack {hack.name} could not be scored ({_why(tr)})"]
        if tr.reward >= HACK_THRESHOLD:
            res.beaten_by = hack.name
            return [f"hack {hack.name} scored {tr.reward:g} (a hack must score below {HACK_THRESHOLD:g})"]
    return []


def _channel_leg(task, backend: str, image: str | None, res: GateResult) -> list[str]:
    """The channel-skip check, kept short: every visible candidate statically, three run through the
    verifier (``tmax families check`` runs more)."""
    from tmax.channels import channel_skip

    r = channel_skip(task.path, backend=backend, max_runs=CHANNEL_RUNS, jobs=1, image=image, replay_tmp=False)
    res.hack_rewards["channel_skip"] = 0.0 if r.ok else 1.0
    if r.ok:
        return []
    res.beaten_by = "channel_skip"
    return [f"channel skipped: {r.reason}"]


def check_many(paths: Iterable[str | Path], repeat: int = 2, backend: str = DEFAULT_BACKEND, jobs: int = 2,
               image: str | None = None, on_result: Callable[[GateResult], None] | None = None,
               adversarial: bool = True, channels: bool = True) -> Iterator[GateResult]:
    """Gate tasks in parallel; yields results as they finish."""
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = [pool.submit(check_task, p, repeat, backend, image, adversarial, channels) for p in paths]
        for fut in as_completed(futures):
            r = fut.result()
            if on_result:
                on_result(r)
            yield r


class Watch(Protocol):
    """Who follows a batch as it runs (a progress bar, a log): told each stage's size, then each result."""

    def start(self, stage: str, total: int) -> None: ...

    def advance(self, stage: str, result: Any) -> None: ...


def stream_jsonl(records: Iterable[Any], out: Path) -> Iterator[Any]:
    """Pass ``records`` on, writing each as one JSON line (its ``to_json()``, keys sorted) as it comes:
    a batch that is killed keeps the lines of what finished."""
    with open(out, "w") as fh:
        for r in records:
            fh.write(json.dumps(r.to_json() if hasattr(r, "to_json") else r, sort_keys=True) + "\n")
            fh.flush()
            yield r


def write_jsonl(records: Iterable[Any], out: Path) -> None:
    for _ in stream_jsonl(records, out):
        pass


def gate_tasks(dirs: list[Path], jsonl: Path | None = None, *, repeat: int = 2, backend: str = DEFAULT_BACKEND,
               jobs: int = 2, image: str | None = None, adversarial: bool = True, channels: bool = True,
               watch: Watch | None = None) -> list[GateResult]:
    """Gate ``dirs`` in parallel, one JSON line per task in ``jsonl`` as each finishes; the results
    sorted by task."""
    on_result = None
    if watch:
        watch.start("gate", len(dirs))
        on_result = lambda r: watch.advance("gate", r)  # noqa: E731
    results = check_many(dirs, repeat=repeat, backend=backend, jobs=jobs, image=image, adversarial=adversarial,
                         channels=channels, on_result=on_result)
    return sorted(stream_jsonl(results, jsonl) if jsonl else results, key=lambda r: r.task)
