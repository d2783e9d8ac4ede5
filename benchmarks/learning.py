"""Learning demonstration on a CPU: does `tmax train` raise a small model's pass rate on held-out tasks?

Setup (all seeded):
  - tasks: generated exact-answer questions ("What is a + b?"), turned into gated terminal tasks by
    the QA adapter; the agent must write the answer to /app/answer.txt and submit. A training split
    and a disjoint held-out split.
  - model: the embedded SmolLM2-135M-Instruct. Out of the box it almost never produces the harness'
    format, so both RL runs start from the same SFT warm start (tmax.rl.sft, what the config's
    ``warm_start_jobs`` runs) on scripted successful trajectories of *training* tasks, in two styles:
    half write the answer as a literal number (right on that task, a guess on a new one), half let
    the shell compute it (``echo $((a + b))``). The warm model does both; outcome-only RL has
    to find out from rewards alone which one pays.
  - training: the Trainer that `tmax train` runs, for a wall-clock budget (``max_minutes``), once with
    DPPO (binary TV) and once with GRPO, everything else equal.
  - turns: 2 (answer, then submit) in training and evaluation alike, to fit a CPU hour.
  - evaluation: held-out pass@1 from k attempts per task through the same harness (`tmax solve`'s
    runner), with a 95% bootstrap interval over tasks: base model, after the warm start, after RL.

Prints a table, writes learning.png (training reward per step, both losses) and results.json;
the last line holds the figures.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))


def questions(n: int, rng: random.Random, taken: set) -> list[dict]:
    out = []
    while len(out) < n:
        a, b = rng.randint(2, 40), rng.randint(2, 40)
        if (a, b) in taken:
            continue
        taken.add((a, b))
        out.append({"id": f"add-{a}-{b}", "question": f"What is {a} + {b}?", "answer": str(a + b)})
    return out


def make_tasks(out: Path, n_train: int, n_eval: int, seed: int) -> tuple[Path, Path]:
    from tmax.qa import convert

    rng, taken = random.Random(seed), set()
    dirs = []
    for split, n in (("train", n_train), ("heldout", n_eval)):
        jsonl = out / f"{split}.jsonl"
        jsonl.write_text("".join(json.dumps(q) + "\n" for q in questions(n, rng, taken)))
        dest = out / f"tasks-{split}"
        if not dest.exists():
            res = convert(jsonl, dest, id_field="id")
            assert not res.errors, res.errors
        dirs.append(dest)
    return dirs[0], dirs[1]


def warm_start_job(train_dir: Path, job: Path, n: int, shell_fraction: float, seed: int) -> Path:
    """Scripted successful trajectories on ``n`` training tasks, in two styles: a ``shell_fraction``
    of them let the shell add (``echo $((a + b))``), the rest write the number they know. Both
    succeed on their task; only the first carries over to new numbers. What RL should then learn is
    which of its behaviours earns reward."""
    import re

    from tmax.agent.policies import ScriptedPolicy
    from tmax.jobs import JobSpec, run_one
    from tmax.task import load_task

    tasks = [load_task(d) for d in sorted(p for p in train_dir.iterdir() if p.is_dir())[:n]]
    spec = JobSpec(corpus=[t.path for t in tasks], policy="scripted", max_steps=3)
    shell = set(random.Random(f"{seed}:warm").sample(range(len(tasks)), round(shell_fraction * len(tasks))))
    for i, t in enumerate(tasks):
        if (job / f"{t.name}__0" / "result.json").exists():
            continue
        if i in shell:
            a, b = re.search(r"add-(\d+)-(\d+)$", t.name).groups()
            command = f"echo $(({a} + {b})) > /app/answer.txt"
        else:
            command = f"echo {json.loads((t.path / 'tests' / 'expected.json').read_text())['answer']} > /app/answer.txt"
        run_one(spec, t, 0, job, {"policy": ScriptedPolicy(script=[command], tool_calling=False)})
    return job


def evaluate(policy: str, heldout: Path, job: Path, k: int, jobs: int, seed: int, args_turns: int = 2) -> dict:
    from tmax.jobs import JobSpec, solve

    spec = JobSpec(corpus=sorted(p for p in heldout.iterdir() if p.is_dir()), policy=policy, k=k, jobs=jobs,
                   max_steps=args_turns, max_tokens_per_turn=48)
    t0 = time.monotonic()
    solve(spec, job)
    per_task: dict[str, list[float]] = {}
    for res in job.glob("*/result.json"):
        r = json.loads(res.read_text())
        if r.get("reward") is not None:
            per_task.setdefault(r["task"], []).append(1.0 if r["reward"] >= 1.0 else 0.0)
    rates = [sum(v) / len(v) for v in per_task.values()]
    rng = random.Random(seed)
    boots = sorted(sum(rng.choice(rates) for _ in rates) / len(rates) for _ in range(2000))
    return {"pass@1": sum(rates) / len(rates), "ci95": [boots[50], boots[1949]], "tasks": len(rates), "k": k,
            "seconds": round(time.monotonic() - t0, 1)}


def export_model(trainer, dest: Path) -> Path:
    """The trainer's current weights as a plain Hugging Face folder (for the evaluation runner)."""
    if dest.exists():
        shutil.rmtree(dest)
    trainer.model.save_pretrained(dest)
    trainer.engine.tokenizer.save_pretrained(dest)
    return dest


def warm_model(args, warm_job: Path, out: Path) -> Path:
    """The one warm start both RL runs begin from (the same code as the config's warm_start_jobs)."""
    dest = out / "model-warm"
    if (dest / "config.json").exists():
        return dest
    from tmax.agent.hf import HFPolicy
    from tmax.rl.sft import successful_conversations, warm_start

    engine = HFPolicy(model_path="embedded", seed=args.seed)
    summary = warm_start(engine.model, engine, successful_conversations([warm_job]), epochs=args.warm_epochs,
                         lr=args.warm_lr, micro_batch=4, seed=args.seed)
    print(f"warm start: {summary}", flush=True)
    tmp = dest.with_name(dest.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    engine.model.save_pretrained(tmp)
    engine.tokenizer.save_pretrained(tmp)
    tmp.rename(dest)
    return dest


def train(loss: str, args, train_dir: Path, warm: Path, out: Path):
    from tmax.rl.config import TrainConfig
    from tmax.rl.trainer import Trainer

    cfg = TrainConfig(tasks=[str(train_dir)], model=str(warm), out=str(out / f"train-{loss}"), loss=loss,
                      steps=10_000, max_minutes=args.minutes, prompts_per_step=args.prompts, group_size=args.group,
                      micro_batch=args.micro_batch, max_turns=2, max_tokens_per_turn=48, max_total_tokens=2048,
                      max_prompt_tokens=1024, lr=args.lr, async_rollouts=True, rollout_workers=args.group,
                      checkpoint_every=5, seed=args.seed)
    cfg.validate()
    shutil.rmtree(cfg.out, ignore_errors=True)  # a fresh run: the point is the budget from step 0
    trainer = Trainer(cfg, log=lambda s: print(f"[{loss}] {s}", flush=True))
    t0 = time.monotonic()
    trainer.run()
    minutes = (time.monotonic() - t0) / 60
    final = export_model(trainer, out / f"model-{loss}")
    rows = [json.loads(x) for x in (Path(cfg.out) / "metrics.jsonl").read_text().splitlines() if x]
    return final, rows, minutes


def plot(results: dict, curves: dict, png: Path) -> None:
    """Training reward per step for each loss; held-out pass@1 of each model as a labelled line
    (models with the same figure share one label)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for loss, pts in curves.items():
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=".", label=f"{loss} (training reward)")
    levels: dict[float, list[str]] = {}
    for label in ("base", "warm_start", *curves):
        if label in results:
            levels.setdefault(round(results[label]["pass@1"], 2), []).append(label)
    for value, labels in levels.items():
        ax.axhline(value, ls=":", lw=1, color="grey")
        ax.annotate(f"held-out {', '.join(labels)}: {value:.2f}", (0.01, value), xycoords=("axes fraction", "data"),
                    fontsize=7, va="bottom")
    ax.set_xlabel("step")
    ax.set_ylabel("reward / pass@1")
    ax.set_ylim(-0.05, 1.08)
    ax.legend(fontsize=8, loc="center right")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(png, dpi=90)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=Path("runs/learning"))
    ap.add_argument("--minutes", type=float, default=20.0, help="training budget per loss")
    ap.add_argument("--losses", default="dppo_tv,grpo")
    ap.add_argument("--train-tasks", type=int, default=64)
    ap.add_argument("--eval-tasks", type=int, default=24)
    ap.add_argument("--warm-examples", type=int, default=32)
    ap.add_argument("--warm-epochs", type=int, default=3)
    ap.add_argument("--warm-shell-fraction", type=float, default=0.5,
                    help="share of warm-start examples that compute with $((a + b)) instead of a literal")
    ap.add_argument("-k", type=int, default=2)
    ap.add_argument("-j", "--jobs", type=int, default=8)
    ap.add_argument("--prompts", type=int, default=1)
    ap.add_argument("--group", type=int, default=8)
    ap.add_argument("--micro-batch", type=int, default=4)
    ap.add_argument("--lr", type=float, default=3e-5)
    ap.add_argument("--warm-lr", type=float, default=5e-5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--plot-only", action="store_true", help="redraw learning.png from a finished --out")
    args = ap.parse_args()
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    if args.plot_only:
        results = json.loads((out / "results.json").read_text())
        curves = {}
        for loss in args.losses.split(","):
            rows = [json.loads(x) for x in (out / f"train-{loss}" / "metrics.jsonl").read_text().splitlines() if x]
            curves[loss] = [(r["step"], r["reward"]) for r in rows if r.get("reward") is not None]
        plot(results, curves, out / "learning.png")
        return

    train_dir, heldout = make_tasks(out, args.train_tasks, args.eval_tasks, args.seed)
    warm_job = warm_start_job(train_dir, out / "warm-job", args.warm_examples, args.warm_shell_fraction, args.seed)
    results: dict = {"model": "SmolLM2-135M-Instruct (embedded)", "train_tasks": args.train_tasks,
                     "heldout_tasks": args.eval_tasks, "k": args.k, "minutes_per_loss": args.minutes,
                     "batch": f"{args.prompts} prompts x {args.group}", "lr": args.lr}
    print("evaluating the base model ...", flush=True)
    results["base"] = evaluate("embedded", heldout, out / "eval-base", args.k, args.jobs, args.seed)
    warm = warm_model(args, warm_job, out)
    print("evaluating the warm start ...", flush=True)
    results["warm_start"] = evaluate(f"hf:{warm}", heldout, out / "eval-warm", args.k, args.jobs, args.seed)
    curves = {}
    for loss in args.losses.split(","):
        final, rows, minutes = train(loss, args, train_dir, warm, out)
        print(f"evaluating after {loss} ...", flush=True)
        results[loss] = evaluate(f"hf:{final}", heldout, out / f"eval-{loss}", args.k, args.jobs, args.seed)
        results[loss].update(steps=len(rows), train_minutes=round(minutes, 1))
        curves[loss] = [(r["step"], r["reward"]) for r in rows if r.get("reward") is not None]
        (out / "results.json").write_text(json.dumps(results, indent=1) + "\n")

    plot(results, curves, out / "learning.png")

    def fmt(key: str) -> str:
        r = results[key]
        extra = f", {r['steps']} steps in {r['train_minutes']} min" if "steps" in r else ""
        return f"{key} {r['pass@1']:.3f} [{r['ci95'][0]:.3f}, {r['ci95'][1]:.3f}]{extra}"

    print(json.dumps(results, indent=1))
    print("RESULT held-out pass@1 (k=%d, %d tasks): " % (args.k, args.eval_tasks)
          + " | ".join(fmt(key) for key in ("base", "warm_start", *curves) if key in results))


if __name__ == "__main__":
    main()
