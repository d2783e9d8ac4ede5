"""The main job, small (``tmax demo``): build or pick the image, gate the example tasks, generate a
small corpus and gate it, solve part of it with the embedded model (k=2), write the analysis report,
and train the embedded model: a short warm start on replayed reference solutions of level-0 tasks of two
families, then a few DPPO steps on other seeds of those families, where its reward is neither 0 nor 1.

The example tasks ship inside the package, so the demo runs from an installed tmax as from a checkout."""

from __future__ import annotations

from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Protocol

from tmax.gate import GateResult, Watch
from tmax.sandbox import DEFAULT_BACKEND

EXAMPLES = Path(str(files("tmax") / "examples" / "tasks"))
# Level-0 tasks of these families have a reference that is one plain shell command, so it can be replayed
# as the agent's: the warm start learns from seeds 0-7, DPPO trains on seeds 100-103.
TRAIN_FAMILIES = ("git_leak_forensics", "service_downtime_report")
WARM_SEEDS, TRAIN_SEEDS = range(8), range(100, 104)
GENERATE_KIND, GENERATE_SEED = "rl_v2", 0
# A small model's commands often wait on something that never comes (a server, a prompt): 20 s per
# command, not the 120 s default, keeps the solve and training steps to minutes.
COMMAND_TIMEOUT = 20.0


@dataclass(frozen=True)
class DemoConfig:
    out: Path = Path("demo-out")
    image: str = "default"  # "host": no build, and no generated corpus (its tasks need the default image's tools)
    backend: str = DEFAULT_BACKEND
    jobs: int = 2
    generate_n: int = 12
    solve_n: int = 3  # generated tasks the embedded model attempts (0: skip)
    train_steps: int = 4  # DPPO steps after the warm start (0: skip training)


class DemoView(Watch, Protocol):
    """What the demo shows as it goes: its steps, lines for the user, lines from builds and runs (they
    may carry a task's output), and each gate's results."""

    def step(self, title: str) -> None: ...

    def say(self, line: str) -> None: ...

    def log(self, line: str) -> None: ...

    def gated(self, results: list[GateResult], backend: str) -> None: ...


def run_demo(cfg: DemoConfig, view: DemoView) -> bool:
    """Every step of the demo; True iff every gated task passed. Raises ImageError if the image cannot be had."""
    from tmax.images import get_environment

    cfg.out.mkdir(parents=True, exist_ok=True)
    view.step("1. environment image")
    env = get_environment(cfg.image, log=view.log)
    view.say(f"image {env.name}: {env.hash}")
    ok = gate_examples(cfg, view)
    if cfg.image != "host":  # generated tasks need the default image's tools
        corpus = cfg.out / "corpus"
        ok = generate_and_gate(cfg, corpus, view) and ok
        job_dirs = [solve_some(cfg, corpus, view)] if cfg.solve_n > 0 else []
        report(corpus, job_dirs, cfg.out / "report", view)
    if cfg.train_steps > 0:
        train(cfg, view)
    return ok


def gate_examples(cfg: DemoConfig, view: DemoView) -> bool:
    from tmax.discover import expand_task_dirs
    from tmax.gate import gate_tasks

    view.step("2. correctness gate on examples/tasks")
    results = gate_tasks(expand_task_dirs([EXAMPLES]), cfg.out / "gate.jsonl", repeat=2, backend=cfg.backend,
                         jobs=cfg.jobs, image=cfg.image, watch=view)
    view.gated(results, cfg.backend)
    view.say(f"gate report: {cfg.out / 'gate.jsonl'}")
    return all(r.ok for r in results)


def generate_and_gate(cfg: DemoConfig, corpus: Path, view: DemoView) -> bool:
    from tmax.generate import gate_corpus, generate_corpus

    view.step(f"3. generate {cfg.generate_n} tasks ({GENERATE_KIND}, seed {GENERATE_SEED}) and gate them")
    summary = generate_corpus(cfg.generate_n, GENERATE_SEED, GENERATE_KIND, corpus, cfg.jobs)
    view.say(f"generated {summary['written']} tasks in {corpus}")
    results, _ = gate_corpus(corpus, repeat=2, backend=cfg.backend, jobs=cfg.jobs, watch=view)
    view.gated(results, cfg.backend)
    return all(r.ok for r in results)


def solve_some(cfg: DemoConfig, corpus: Path, view: DemoView) -> Path:
    from tmax.discover import corpus_task_dirs
    from tmax.jobs import JobSpec, solve

    kept = corpus_task_dirs(corpus)[:cfg.solve_n]
    view.step(f"4. solve {len(kept)} tasks with the embedded model (k=2)")
    spec = JobSpec(corpus=kept, policy="embedded", k=2, jobs=cfg.jobs, backend=cfg.backend, max_steps=6,
                   max_tokens_per_turn=160, command_timeout=COMMAND_TIMEOUT)
    job = cfg.out / "job-embedded"
    summary = solve(spec, job)
    view.say(f"embedded model: pass@1 {summary.get('pass@1')}, pass@2 {summary.get('pass@2')}, "
             f"outcomes {summary['outcomes']}")
    return job


def report(corpus: Path, job_dirs: list[Path], out: Path, view: DemoView) -> None:
    from tmax.analysis import analyze

    view.step("5. analysis report")
    analyze([corpus], job_dirs, out)
    view.say(f"report: {out / 'report.html'}")


def train_config(cfg: DemoConfig, tasks: Path, warm_job: Path):
    """Groups of 4 on level-0 tasks after a warm start on ``warm_job``: the demo shows the loop, not a
    long run."""
    from tmax.rl.config import TrainConfig

    train_cfg = TrainConfig(tasks=[str(tasks)], out=str(cfg.out / "train"), steps=cfg.train_steps,
                            prompts_per_step=1, group_size=4, micro_batch=4, max_turns=2, max_tokens_per_turn=192,
                            command_timeout=COMMAND_TIMEOUT, max_total_tokens=2048, max_prompt_tokens=1024, lr=2e-5,
                            async_rollouts=False,
                            rollout_workers=4, checkpoint_every=cfg.train_steps, backend=cfg.backend,
                            max_refill_factor=1,  # one group per step, kept or not: the reward is what it is
                            warm_start_jobs=[str(warm_job)], warm_start_epochs=3, warm_start_lr=5e-5)
    train_cfg.validate()
    return train_cfg


def train(cfg: DemoConfig, view: DemoView) -> None:
    from tmax.generate import build_family_tasks
    from tmax.rl.sft import replay_references
    from tmax.rl.trainer import Trainer

    view.step(f"6. train the embedded model: warm start, then {cfg.train_steps} DPPO steps (groups of 4)")
    warm_tasks = build_family_tasks(cfg.out / "warm-tasks", TRAIN_FAMILIES, WARM_SEEDS)
    tasks = cfg.out / "train-tasks"
    build_family_tasks(tasks, TRAIN_FAMILIES, TRAIN_SEEDS)
    warm_job = replay_references(warm_tasks, cfg.out / "warm-job")
    view.say(f"warm start on {len(warm_tasks)} replayed reference solutions ({', '.join(TRAIN_FAMILIES)}, level 0)")
    Trainer(train_config(cfg, tasks, warm_job), log=view.log).run()
    view.say(f"metrics: {cfg.out / 'train' / 'metrics.jsonl'}, curves: {cfg.out / 'train' / 'curves.png'}")
