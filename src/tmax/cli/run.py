"""Verbs that run agents and models: demo, solve, train, serve."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import click
from rich.table import Table

from tmax.cli.common import backend_option, Bars, console, DemoScreen, log_line, main, print_error
from tmax.discover import expand_task_dirs
from tmax.jobs import HARNESSES
from tmax.term import markup as _m
from tmax.term import safe, text
from tmax.trial import AGENTS


@main.command()
@click.option("--image", default="default", show_default=True, help="Image for the examples (host: no build).")
@backend_option()
@click.option("-j", "--jobs", default=2, show_default=True)
@click.option("--out", type=click.Path(path_type=Path), default=Path("demo-out"), show_default=True)
@click.option("--generate-n", default=12, show_default=True, help="Tasks to generate and gate.")
@click.option("--solve-n", default=3, show_default=True, help="Generated tasks the embedded model attempts (0: skip).")
@click.option("--train-steps", default=4, show_default=True,
              help="DPPO steps of the embedded model after its warm start (0: skip training).")
def demo(image: str, backend: str, jobs: int, out: Path, generate_n: int, solve_n: int, train_steps: int) -> None:
    """Run the main job small: build or pick the image, gate the example tasks, generate a small
    corpus and gate it, solve part of it with the embedded model (k=2), write the analysis report,
    and train the embedded model: a warm start on replayed reference solutions of level-0 tasks of two
    families, then a few DPPO steps on other seeds of them (the training reward is in curves.png).

    \b
    Examples:
      tmax demo
      tmax demo --image host --backend unshare
    """
    from tmax.demo import DemoConfig, run_demo
    from tmax.images import ImageError

    cfg = DemoConfig(out=out, image=image, backend=backend, jobs=jobs, generate_n=generate_n, solve_n=solve_n,
                     train_steps=train_steps)
    try:
        with DemoScreen() as screen:
            ok = run_demo(cfg, screen)
    except ImageError as e:
        print_error(e)
        sys.exit(1)
    sys.exit(0 if ok else 1)


@main.command()
@click.argument("corpus", nargs=-1, required=True, type=click.Path())
@click.option("--policy", required=True,
              help=f"{', '.join(AGENTS)}, embedded (the packaged SmolLM2-135M), hf:PATH, or openai:MODEL (with --base-url).")
@click.option("-k", "k", default=1, show_default=True, help="Attempts per task.")
@click.option("-j", "--jobs", default=2, show_default=True, help="Trials in parallel.")
@click.option("--job", "job_dir", type=click.Path(path_type=Path), default=None,
              help="Job directory (default jobs/<policy>-<time>); rerun with the same one to resume.")
@click.option("--base-url", default=None, help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1")
@click.option("--harness", type=click.Choice(HARNESSES), default="tmax", show_default=True,
              help="tmax: the one harness used for RL; terminus: a tmux keystroke harness for cross-harness eval.")
@backend_option(None)
@click.option("--max-steps", default=64, show_default=True)
@click.option("--max-tokens", default=16384, show_default=True, help="Tokens per turn.")
@click.option("--command-timeout", default=120.0, show_default=True)
@click.option("--temperature", default=1.0, show_default=True)
def solve(corpus, policy, k, jobs, job_dir, base_url, harness, backend, max_steps, max_tokens, command_timeout,
          temperature) -> None:
    """Run a policy on every task of CORPUS, K attempts each; report pass@k.

    Harbor job layout (result.json per trial and per job, ATIF trajectories). Resumable: rerun with the
    same --job after a crash or kill; finished trials are kept, unfinished ones redone. Infrastructure
    errors are retried and kept out of pass@k.

    \b
    Examples:
      tmax solve examples/tasks --policy oracle -k 2
      tmax solve corpus --policy embedded -k 4 -j 2 --max-steps 16 --job jobs/smol
      tmax solve corpus --policy openai:my-model --base-url http://127.0.0.1:8000/v1 -k 8
    """
    from tmax.jobs import JobSpec
    from tmax.jobs import solve as run_solve

    dirs = expand_task_dirs(corpus)
    job_dir = job_dir or Path("jobs") / f"{policy.replace(':', '-').replace('/', '_')}-{time.strftime('%Y%m%d-%H%M%S')}"
    spec = JobSpec(corpus=dirs, policy=policy, k=k, jobs=jobs, backend=backend, base_url=base_url, harness=harness,
                   max_steps=max_steps, max_tokens_per_turn=max_tokens, command_timeout=command_timeout,
                   temperature=temperature)

    def on(result, summ):
        rate = summ.get("pass@1")
        bars.advance("solve", result, f"pass@1 {rate:.3f}" if rate is not None else "")

    try:
        with Bars() as bars:
            bars.start("solve", len(dirs) * k)
            summary = run_solve(spec, job_dir, progress=on)
    except ValueError as e:
        print_error(e)
        sys.exit(2)
    table = Table(title=f"job {_m(job_dir, oneline=True)}")
    table.add_column("metric")
    table.add_column("value")
    for key in [f"pass@{i}" for i in range(1, k + 1)] + ["mean_reward", "n_tasks", "n_trials"]:
        if summary.get(key) is not None:
            v = summary[key]
            table.add_row(key, f"{v:.3f}" if isinstance(v, float) else str(v))
    table.add_row("outcomes", text(", ".join(f"{a}={b}" for a, b in sorted(summary["outcomes"].items()))))
    console.print(table)
    for path, err in summary.get("load_errors", {}).items():
        print_error(err, "not loaded: ")
    print(json.dumps({key: summary[key] for key in summary if key.startswith("pass@")}))
    bugs = summary["outcomes"].get("error", 0)
    if bugs:  # a bug is not a score: say so and fail, so it is fixed rather than averaged away
        print_error(f"{bugs} trial(s) hit a bug; tracebacks in {_m(job_dir, oneline=True)}/*/exception.txt")
        sys.exit(1)


@main.command(context_settings={"ignore_unknown_options": True})
@click.argument("config", required=False, type=click.Path(dir_okay=False))
@click.argument("overrides", nargs=-1)
def train(config, overrides) -> None:
    """Outcome-only RL (DPPO, FP32 head, groups of 32, async rollouts) from CONFIG (YAML) with
    key=value overrides. Defaults are the paper's recipe; resumes from OUT/checkpoint.

    \b
    Examples:
      tmax train configs/tiny.yaml
      tmax train configs/tiny.yaml steps=20 loss=grpo out=runs/grpo
      tmax train tasks=corpus model=embedded group_size=8 prompts_per_step=2 micro_batch=4
    """
    from tmax.rl.config import ConfigError, load_config

    if config and "=" in config:
        overrides, config = (config, *overrides), None
    try:
        cfg = load_config(config, list(overrides))
    except ConfigError as e:
        print_error(e, "config error: ")
        sys.exit(2)
    from tmax.rl.trainer import Trainer

    Trainer(cfg, log=log_line).run()
    console.print(f"done: {cfg.out}/metrics.jsonl, {cfg.out}/curves.png")


@main.command()
@click.option("--model", default="embedded", show_default=True, help="embedded or a Hugging Face model folder.")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to bind. Anything but loopback needs --api-key.")
@click.option("--port", default=8000, show_default=True, help="Port (0: any free one, printed).")
@click.option("--device", default="cpu", show_default=True)
@click.option("--api-key", envvar="TMAX_API_KEY", show_envvar=True, default=None,
              help="Require 'Authorization: Bearer KEY' on every request (401 otherwise). Prefer the "
                   "environment variable: a key on the command line shows in ps.")
def serve(model, host, port, device, api_key) -> None:
    """Serve a local model behind an OpenAI-compatible API (/v1/chat/completions, /v1/models).

    Binds 127.0.0.1 unless --host says otherwise. With an API key (--api-key or TMAX_API_KEY),
    every request must send "Authorization: Bearer KEY" or gets a 401 with an OpenAI-style error;
    clients take it as OPENAI_API_KEY. Binding a non-loopback address (0.0.0.0, a LAN address)
    without a key is refused.

    \b
    Examples:
      tmax serve --port 8000 &
      tmax solve examples/tasks --policy openai:smollm2-135m-instruct --base-url http://127.0.0.1:8000/v1
      export TMAX_API_KEY=$(openssl rand -hex 16)
      tmax serve --host 0.0.0.0 --port 8000 &
      OPENAI_API_KEY=$TMAX_API_KEY tmax solve c --policy openai:smollm2-135m-instruct --base-url http://HOST:8000/v1
    """
    from tmax.agent.server import check_bind

    api_key = api_key or None
    try:
        check_bind(host, api_key)  # before loading the model
    except ValueError as e:
        raise click.UsageError(safe(e)) from None
    from tmax.agent.hf import HFPolicy
    from tmax.agent.server import make_server

    policy = HFPolicy(model_path=model, device=device)
    srv = make_server(policy, host, port, api_key=api_key)
    shown = f"[{host}]" if ":" in host else host
    console.print(text(f"serving {policy.model_name} at http://{shown}:{srv.server_address[1]}/v1"
                       + (" (API key required)" if api_key else " (no API key: loopback only)")), highlight=False)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
