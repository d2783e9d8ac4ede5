"""The ``tmax`` command: parse, call one library function, print. Nothing imports this module."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from tmax.discover import expand_task_dirs
from tmax.sandbox import BACKENDS, DEFAULT_BACKEND
from tmax.taxonomy import CORPUS_KINDS
from tmax.term import markup as _m
from tmax.term import safe, text
from tmax.trial import AGENTS

console = Console(stderr=True)
HARNESSES = ("tmax", "terminus")  # what tmax.runs.make_agent dispatches on


def backend_option(help: str | None = "Sandbox backend."):
    return click.option("--backend", default=DEFAULT_BACKEND, show_default=True, type=click.Choice(BACKENDS),
                        help=help)


kind_option = click.option("--kind", type=click.Choice(CORPUS_KINDS), default="rl_v2", show_default=True,
                           help="Corpus kind: how strongly the newer axis values are drawn.")


def _log(s) -> None:
    """Lines from builds and runs (they may carry a task's output): printed inert."""
    console.print(text(s), highlight=False)


def _error(e, prefix: str = "error: ") -> None:
    console.print(Text.assemble((prefix, "red"), text(e)), highlight=False)


class Bars:
    """The library's Watch on the terminal: a progress bar per stage, closed when its last item is in;
    where no terminal shows bars, a line per gate result instead."""

    prog: Progress | None = None

    def start(self, stage: str, total: int) -> None:
        self.close()
        self.prog = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                             TextColumn("{task.fields[status]}"), TimeElapsedColumn(), console=console,
                             disable=not console.is_terminal and os.environ.get("TMAX_PROGRESS") != "1")
        self.prog.start()
        self.bar = self.prog.add_task(stage, total=total, status="")
        self.total, self.seen, self.passed = total, 0, 0

    def advance(self, stage: str, result, status: str = "") -> None:
        if self.prog is None:  # more results than announced (a retried trial): the bar is already done
            return
        self.seen += 1
        if stage == "gate":
            self.passed += result.ok
            status = f"{self.passed}/{self.seen} ok"
            if not console.is_terminal:
                console.print(text(f"{'ok  ' if result.ok else 'FAIL'} {safe(result.task, oneline=True)}"
                                   + ("" if result.ok else f": {result.reason}")), highlight=False)
        self.prog.update(self.bar, advance=1, status=status)
        if self.seen == self.total:
            self.close()

    def close(self) -> None:
        if self.prog:
            self.prog.stop()
        self.prog = None

    def __enter__(self) -> Bars:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class DemoScreen(Bars):
    """The demo's DemoView on the terminal."""

    def step(self, title: str) -> None:
        console.rule(title)

    def say(self, line: str) -> None:
        console.print(text(line), highlight=False)

    def log(self, line: str) -> None:
        _log(line)

    def gated(self, results, backend: str) -> None:
        show_gate(results, backend)


def show_gate(results, backend: str) -> bool:
    """The gate's table and tally; True iff every task passed."""
    from tmax.hacks import HACK_THRESHOLD

    table = Table(title="correctness gate", show_lines=False)
    for col in ("task", "ok", "oracle", "nop", "hacks", "seconds", "reason"):
        table.add_column(col, overflow="fold")
    for r in results:
        held = sum(v is not None and v < HACK_THRESHOLD for v in r.hack_rewards.values())
        hacks = (f"[red]beaten by {r.beaten_by}" if r.beaten_by else
                 f"{held}/{len(r.hack_rewards)} held" if r.hack_rewards else "-")
        table.add_row(text(r.name or r.task, oneline=True), "[green]yes" if r.ok else "[red]no",
                      ",".join("-" if x is None else f"{x:g}" for x in r.oracle_rewards),
                      "-" if r.nop_reward is None else f"{r.nop_reward:g}", hacks, f"{r.seconds:.1f}",
                      text(r.reason[:300]))
    console.print(table)
    n_ok = sum(r.ok for r in results)
    console.print(f"[bold]{n_ok}/{len(results)} tasks pass the gate[/bold] (backend {backend})")
    return n_ok == len(results)


def run_gate(dirs: list[Path], jsonl: Path | None, backend: str, **options) -> bool:
    from tmax.gate import gate_tasks

    with Bars() as bars:
        results = gate_tasks(dirs, jsonl, backend=backend, watch=bars, **options)
    return show_gate(results, backend)


def load_families(failure: str, style: str) -> dict:
    """The family registry; a line per module that did not load (``failure`` says what that means here)."""
    from tmax.families import LOAD_ERRORS, load_all

    fams = load_all()
    for mod, err in sorted(LOAD_ERRORS.items()):
        console.print(text(failure.format(mod=mod, err=err), style=style))
    return fams


def int_list(ctx, param, value: str | None) -> list[int] | None:
    if value is None:
        return None
    try:
        return [int(x) for x in value.split(",")]
    except ValueError:
        raise click.BadParameter(f"expected integers separated by commas, got {value!r}") from None


def rate_band(ctx, param, value: str) -> tuple[float, float]:
    try:
        lo, hi = (float(x) for x in value.split(","))
    except ValueError:
        lo = hi = float("nan")  # not two numbers: refused with the one message below
    if not 0 <= lo < hi <= 1:
        raise click.BadParameter("expected lo,hi with 0 <= lo < hi <= 1")
    return lo, hi


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="tmax")
def main() -> None:
    """tmax: verifiable terminal tasks, safe sandboxes, one agent harness, RL training.

    \b
    Start here:
      tmax demo                         the main job, small: image, gate, generate, solve, report
      tmax check examples/tasks         the correctness gate on task directories
      tmax generate --n 100 --out c     a corpus over the nine axes (add --check to gate it)
      tmax solve c --policy oracle -k 2 pass@k through the one harness
      tmax analyze c --job J --out r    plots, report.html, stats.json
      tmax train configs/tiny.yaml      a few DPPO steps
      tmax export harbor c out          Harbor tasks that run outside tmax (also tb1, hf)
      tmax author --n 10 --base-url U   tasks written by an LLM, gated, with feedback rounds
    """


@main.command()
@click.argument("task_dirs", nargs=-1, required=True, type=click.Path())
@click.option("-j", "--jobs", default=2, show_default=True, help="Tasks gated in parallel.")
@click.option("--repeat", default=2, show_default=True, help="Oracle runs per task; each must score 1.0.")
@backend_option()
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), help="Write one JSON line per task here.")
@click.option("--image", default=None, help="Override every task's image (e.g. host, default, minimal).")
@click.option("--no-adversarial", is_flag=True, help="Skip the adversarial leg (the battery of generic hacks).")
@click.option("--no-channels", is_flag=True, help="Skip the channel-skip check.")
def check(task_dirs, jobs, repeat, backend, out, image, no_adversarial, no_channels) -> None:
    """The correctness gate: oracle scores 1.0 on every run, doing nothing scores 0.0, every
    generic hack that applies (planted rewards, replayed hidden data, empty, constant or copied
    answers, accept-all, echo, empty servers, ...; see tmax.hacks) scores below 0.25, and on a task
    that delivers a value through a fixture, the reference solution given any candidate for the value
    visible without the channel scores 0 (the channel-skip check, see tmax.channels).

    Exit status 0 iff every task passes. The report names the hack that beat a task. A directory that is not a task stands for its
    sub-directories. Bad tasks get one line each with the file, field and what was expected;
    the rest of the batch still runs.

    \b
    Examples:
      tmax check examples/tasks
      tmax check examples/tasks/* -j 4 --repeat 3 --out gate.jsonl
      tmax check my-task --backend unshare --image host
      tmax check my-task --no-adversarial     # oracle and nop only
      tmax check corpus --no-channels         # without the channel-skip check
    """
    ok = run_gate(expand_task_dirs(task_dirs), out, backend, jobs=jobs, repeat=repeat, image=image,
                  adversarial=not no_adversarial, channels=not no_channels)
    sys.exit(0 if ok else 1)


@main.group()
def image() -> None:
    """Environment images (root filesystems that sandboxes run on)."""


@image.command("build")
@click.argument("profile", default="default")
@click.option("--force", is_flag=True, help="Rebuild even if cached.")
def image_build(profile: str, force: bool) -> None:
    """Build (or reuse) the image of PROFILE: a name in tmax/profiles or a TOML path.

    Debootstrap, then apt and pip inside; cached under $TMAX_HOME/images by the profile's content hash.

    \b
    Examples:
      tmax image build              # the default profile
      tmax image build minimal
      tmax image build ./my-profile.toml --force
    """
    from tmax.images import ImageError, build_image, host_environment, load_profile

    if profile == "host":
        console.print(f"host image: nothing to build (hash {host_environment().hash})")
        return
    try:
        p = load_profile(profile)
        path = build_image(p, log=_log, force=force)
    except ImageError as e:
        _error(e)
        sys.exit(1)
    console.print(f"[green]image {_m(p.name)}-{p.hash}[/green] at {_m(path)}")


@image.command("list")
def image_list() -> None:
    """List built images and available profiles.

    \b
    Example:
      tmax image list
    """
    from tmax.images import PROFILES_DIR, host_environment, images_root, load_profile

    table = Table()
    table.add_column("image")
    table.add_column("status")
    table.add_row("host", host_environment().hash)
    built = {p.name for p in images_root().glob("*") if (p / "done").exists()}
    for prof in sorted(PROFILES_DIR.glob("*.toml")):
        pr = load_profile(str(prof))
        name = f"{pr.name}-{pr.hash}"
        table.add_row(text(pr.name), text(f"built ({name})" if name in built else "not built"))
    console.print(table)


@main.command()
@click.option("--image", default="default", show_default=True, help="Image for the examples (host: no build).")
@backend_option()
@click.option("-j", "--jobs", default=2, show_default=True)
@click.option("--out", type=click.Path(path_type=Path), default=Path("demo-out"), show_default=True)
@click.option("--generate-n", default=12, show_default=True, help="Tasks to generate and gate.")
@click.option("--solve-n", default=3, show_default=True, help="Generated tasks the embedded model attempts (0: skip).")
@click.option("--train-steps", default=2, show_default=True, help="DPPO steps of the embedded model (0: skip).")
def demo(image: str, backend: str, jobs: int, out: Path, generate_n: int, solve_n: int, train_steps: int) -> None:
    """Run the main job small: build or pick the image, gate the example tasks, generate a small
    corpus and gate it, solve part of it with the embedded model (k=2), write the analysis report,
    and take a few DPPO steps of the embedded model on two example tasks.

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
        _error(e)
        sys.exit(1)
    sys.exit(0 if ok else 1)


@main.command()
@click.option("--n", "n", type=int, required=True, help="Number of tasks.")
@click.option("--seed", type=int, default=0, show_default=True)
@kind_option
@click.option("--out", type=click.Path(path_type=Path), required=True, help="Output directory.")
@click.option("-j", "--jobs", default=2, show_default=True, help="Parallel workers.")
@click.option("--check", "gate", is_flag=True, help="Gate every task; keep only those that pass.")
@click.option("--repeat", default=2, show_default=True, help="Oracle runs per task with --check.")
@backend_option("Sandbox backend of the gate with --check.")
@click.option("--calibration", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="A table from `tmax calibrate`: redraw levels so measured pass rates land in its band.")
@click.option("--no-channels", is_flag=True, help="With --check, skip the channel-skip check.")
def generate(n, seed, kind, out, jobs, gate, repeat, backend, calibration, no_channels) -> None:
    """Generate N verifiable tasks by compositional sampling over the nine axes.

    Same arguments, same bytes. Writes task directories, manifest.jsonl (one line per task: every
    axis, family, seed, difficulty, environment hash) and generate-summary.json. Near-duplicates are
    dropped and counted (compared on what the agent sees, digits masked). With --check, every task is
    gated (oracle 1, nop 0, every generic hack below 0.25, no fixture channel skipped) and failures
    are removed, with reasons in gate.jsonl.

    \b
    Examples:
      tmax generate --n 100 --seed 0 --kind rl_v2 --out corpus
      tmax generate --n 1000 --seed 0 --kind rl_v2 --out corpus --check -j 2
      tmax generate --n 500 --out corpus2 --calibration calibration.json
    """
    from tmax.generate import gate_corpus, generate_corpus

    calib = None
    if calibration:
        from tmax.calibrate import load as load_calibration

        try:
            calib = load_calibration(calibration)
        except (ValueError, json.JSONDecodeError) as e:
            raise click.BadParameter(safe(e), param_hint="--calibration") from None
    load_families("skipped family module {mod}: {err}", "yellow")
    with Bars() as bars:
        bars.start("generate", n)
        summary = generate_corpus(n, seed, kind, out, jobs, calibration=calib,
                                  progress=lambda g: bars.advance("generate", g, "error" if g.error else ""))
    console.print(f"generated {summary['written']}/{n} tasks in {out} "
                  f"({summary['near_duplicates']} near-duplicates dropped, {len(summary['errors'])} build errors)")
    for e in summary["errors"][:20]:
        console.print(text(f"build error at index {e['index']}: {e['error']}", style="red"))
    if gate:
        with Bars() as bars:
            results, dropped = gate_corpus(out, repeat=repeat, backend=backend, jobs=jobs,
                                           channels=not no_channels, watch=bars)
        show_gate(results, backend)
        console.print(f"gate: kept {len(results) - len(dropped)}/{len(results)}; dropped {len(dropped)} "
                      f"(reasons in {out / 'gate.jsonl'})")


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
    from tmax.runs import JobSpec
    from tmax.runs import solve as run_solve

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
        _error(e)
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
        _error(err, "not loaded: ")
    print(json.dumps({key: summary[key] for key in summary if key.startswith("pass@")}))
    bugs = summary["outcomes"].get("error", 0)
    if bugs:  # a bug is not a score: say so and fail, so it is fixed rather than averaged away
        _error(f"{bugs} trial(s) hit a bug; tracebacks in {_m(job_dir, oneline=True)}/*/exception.txt")
        sys.exit(1)


@main.command()
@click.argument("corpus", nargs=-1, type=click.Path(exists=True, path_type=Path))
@click.option("--job", "jobs_", multiple=True, type=click.Path(exists=True, path_type=Path),
              help="A job directory (repeatable): several side by side.")
@click.option("--out", type=click.Path(path_type=Path), required=True)
def analyze(corpus, jobs_, out) -> None:
    """Composition, balance, pass@k by axis, difficulty buckets, turns, tokens and command mix.

    Writes PNG plots, report.html (self-contained) and stats.json (every figure) to --out. Several
    corpora and jobs appear side by side.

    \b
    Examples:
      tmax analyze corpus --out report
      tmax analyze corpus --job jobs/base --job jobs/trained --out report
    """
    from tmax.analysis import analyze as run_analyze

    if not corpus and not jobs_:
        raise click.UsageError("give at least one CORPUS or --job")
    stats = run_analyze(list(corpus), list(jobs_), out)
    for name, c in stats["corpora"].items():
        bal = ", ".join(f"{a} {v['balance']:.3f}" for a, v in c["composition"].items())
        console.print(text(f"corpus {name}: {c['tasks']} tasks; balance: {bal}"), highlight=False)
    for name, j in stats["jobs"].items():
        console.print(text(f"job {name}: " + ", ".join(f"{k} {v:.3f}" for k, v in j["pass_at_k"].items()
                                                     if v is not None)), highlight=False)
    console.print(text(f"report: {out / 'report.html'}"))


@main.command()
@click.argument("corpus", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("--against", type=click.Path(exists=True, file_okay=False, path_type=Path), required=True,
              help="Benchmark instructions: task dirs (instruction.md / task.yaml) or .md/.txt/.json files.")
@click.option("--fuzzy-threshold", default=0.5, show_default=True, help="MinHash Jaccard estimate that flags a task.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), help="Write the report as JSON.")
def decontam(corpus, against, fuzzy_threshold, out) -> None:
    """Flag tasks whose instruction shares a word 13-gram with, or is fuzzily similar to, a benchmark's.

    \b
    Example:
      tmax decontam corpus --against benchmarks/tb2-instructions --out decontam.json
    """
    from tmax.analysis.decontam import decontaminate

    report = decontaminate(expand_task_dirs(corpus), against, fuzzy_threshold)
    for f in report["flagged"]:
        console.print(text(f"flagged {f['task']}: 13-gram matches {f['ngram_matches'][:3]}, "
                           f"closest {f['fuzzy_match']} ({f['fuzzy_similarity']})"), highlight=False)
    console.print(f"{len(report['flagged'])}/{report['tasks']} tasks flagged "
                  f"({100 * report['flagged_fraction']:.2f}%) against {report['benchmark_items']} benchmark items")
    if out:
        out.write_text(json.dumps(report, indent=1) + "\n")


@main.command()
@click.option("--job", "jobs_", multiple=True, required=True, type=click.Path(exists=True, path_type=Path),
              help="Job directories whose trials measure pass rates (repeatable).")
@click.option("--band", default="0.2,0.8", show_default=True, callback=rate_band, help="Target pass-rate band lo,hi.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=Path("calibration.json"),
              show_default=True)
def calibrate(jobs_, band, out) -> None:
    """Measure pass rates per family and level from jobs; write a table for `generate --calibration`.

    \b
    Example:
      tmax solve corpus --policy openai:m --base-url URL -k 8 --job jobs/probe
      tmax calibrate --job jobs/probe --band 0.2,0.8 --out calibration.json
      tmax generate --n 1000 --out corpus2 --calibration calibration.json
    """
    from tmax.calibrate import write

    lo, hi = band
    doc = write(list(jobs_), out, band)
    table = Table(title=f"pass rate estimates (band {lo}-{hi})")
    for col in ("family", "level", "passed/trials", "estimate"):
        table.add_column(col)
    for fam, levels in sorted(doc["families"].items()):
        for level, cell in sorted(levels.items()):
            table.add_row(text(fam), text(level), f"{cell['passed']}/{cell['trials']}", f"{cell['estimate']:.2f}")
    console.print(table)
    console.print(f"wrote {out}")


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
        _error(e, "config error: ")
        sys.exit(2)
    from tmax.rl.trainer import Trainer

    Trainer(cfg, log=_log).run()
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


@main.group()
def families() -> None:
    """Procedural task families."""


@families.command("list")
def families_list() -> None:
    """List registered families with their domain, levels, variants, skill types and verifier kinds, then
    how many each domain has.

    \b
    Example:
      tmax families list
    """
    from collections import Counter

    from tmax.families import load_all

    fams = load_all()
    table = Table()
    for col in ("family", "domain", "levels", "variants", "skill types", "verifiers"):
        table.add_column(col, overflow="fold")
    for name, fam in sorted(fams.items()):
        table.add_row(text(name), text(fam.domain), text(",".join(map(str, sorted(fam.levels)))),
                      text(", ".join(fam.variants) or "-"), text(", ".join(fam.skill_types)),
                      text(", ".join(fam.verifiers)))
    console.print(table)
    per_domain = Counter(f.domain for f in fams.values())
    console.print(f"{len(fams)} families: " + ", ".join(f"{d} {n}" for d, n in sorted(per_domain.items())))


@families.command("check")
@click.argument("names", nargs=-1, required=True)
@click.option("--seeds", default=3, show_default=True, help="Seeds per difficulty level.")
@click.option("--levels", default=None, callback=int_list,
              help="Comma-separated levels to build (default: every level each family offers, 0 to 4).")
@click.option("--out", type=click.Path(path_type=Path), default=Path("family-check"), show_default=True)
@click.option("-j", "--jobs", default=2, show_default=True)
@click.option("--repeat", default=1, show_default=True)
@backend_option()
@click.option("--no-channels", "no_channels", is_flag=True, help="Skip the channel-skip check.")
def families_check(names, seeds, levels, out, jobs, repeat, backend, no_channels) -> None:
    """Build NAMES at every level with several seeds (cycling fixture and verifier kinds), check that
    each regenerates byte-identical, gate them all (oracle, nop, the adversarial battery), and run the
    channel-skip check on each: the reference solution with the delivered value replaced by every
    plausible candidate visible to the agent must score 0. Exit 0 iff all pass.

    \b
    Examples:
      tmax families check log_error_paths
      tmax families check all --seeds 3 -j 2
    """
    from tmax.families.check import check_families

    fams = load_families("family module {mod} failed to load: {err}", "red")
    chosen = sorted(fams) if names == ("all",) else list(names)
    unknown = [n for n in chosen if n not in fams]
    if unknown:
        raise click.BadParameter(f"unknown families: {', '.join(unknown)} (see `tmax families list`, or give all)",
                                 param_hint="NAMES")
    with Bars() as bars:
        found = check_families([fams[n] for n in chosen], out, levels=levels, seeds=seeds, repeat=repeat, jobs=jobs,
                               backend=backend, channels=not no_channels, watch=bars)
    if found.dirs:
        show_gate(found.gate, backend)
    if found.channel:
        n_ok = sum(r.ok for r in found.channel)
        console.print(f"[bold]{n_ok}/{len(found.channel)} tasks pass the channel-skip check[/bold] "
                      f"(details in {_m(out / 'channel-skip.jsonl')})")
    for p in found.problems:
        console.print(text(p, style="red"))
    sys.exit(0 if found.ok else 1)


@main.command()
@click.option("--n", "n", type=int, required=True, help="Number of tasks to author.")
@click.option("--seed", type=int, default=0, show_default=True)
@kind_option
@click.option("--base-url", default=None, help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1")
@click.option("--model", required=True, help="Model name sent to the endpoint; also the price table key "
              "(e.g. openai/gpt-4o).")
@click.option("--out", type=click.Path(path_type=Path), default=None, help="Output directory (needed unless --dry-run).")
@click.option("--rounds", default=3, show_default=True, type=click.IntRange(1),
              help="Replies per task (the first and its corrections).")
@click.option("-j", "--jobs", default=1, show_default=True, help="Tasks authored in parallel.")
@click.option("--max-tokens", default=4096, show_default=True, help="Tokens per reply.")
@click.option("--temperature", default=0.7, show_default=True)
@click.option("--price-in", type=float, default=None, help="USD per 1M prompt tokens (overrides the table).")
@click.option("--price-out", type=float, default=None, help="USD per 1M completion tokens (overrides the table).")
@click.option("--repeat", default=2, show_default=True, help="Oracle runs per task in the gate.")
@backend_option(None)
@click.option("--dry-run", is_flag=True, help="Estimate tokens and cost without calling the model.")
def author(n, seed, kind, base_url, model, out, rounds, jobs, max_tokens, temperature, price_in, price_out, repeat,
           backend, dry_run) -> None:
    """Author tasks with an LLM over the nine axes; gate each; feed failures back for up to --rounds.

    Writes accepted task directories, manifest.jsonl, author_log.jsonl (every prompt, reply, token
    count and cost per round) and author_summary.json (accepted, dropped by reason, tokens, cost).
    Token counts come from the API's usage field, else from a 4-characters-per-token estimate.

    \b
    Examples:
      tmax author --n 3 --model openai/gpt-4o --dry-run
      tmax serve --port 8000 &
      tmax author --n 2 --base-url http://127.0.0.1:8000/v1 --model smollm2-135m-instruct --out authored
      tmax author --n 50 --base-url URL --model my-model --price-in 0.2 --price-out 0.6 --out a -j 4
    """
    from tmax.author import AuthorConfig, author_corpus, dry_run as estimate, price_for

    price = price_for(model, price_in, price_out)
    if dry_run:
        click.echo(json.dumps(estimate(n, seed, kind, model, rounds, max_tokens, price), indent=1))
        return
    if not base_url:
        raise click.BadParameter("needed unless --dry-run (e.g. http://127.0.0.1:8000/v1)", param_hint="--base-url")
    if out is None:
        raise click.BadParameter("needed unless --dry-run", param_hint="--out")
    cfg = AuthorConfig(base_url=base_url, model=model, rounds=rounds, max_tokens=max_tokens, temperature=temperature,
                       kind=kind, backend=backend, repeat=repeat, price=price)

    def show(rec: dict) -> None:
        mark = "ok  " if rec["accepted"] else "DROP"
        console.print(text(f"{mark} {safe(rec['task'], oneline=True)} after {rec['n_rounds']} round(s)"
                           + ("" if rec["accepted"] else f": {rec['reason_kind']}: {rec['reason'][:200]}")),
                      highlight=False)

    s = author_corpus(n, seed, cfg, out, jobs, progress=show)
    console.print(text(f"authored {s['accepted']}/{n} tasks in {out}; dropped {s['dropped_by_reason']}; "
                       f"{s['tokens']['total']} tokens, ${s['cost_usd']:.4f}"))


@main.command()
@click.argument("jsonl", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--out", type=click.Path(path_type=Path), required=True, help="Output directory.")
@click.option("--question-field", default="question", show_default=True)
@click.option("--answer-field", default="answer", show_default=True)
@click.option("--id-field", default=None, help="A field naming each item (used in the task name).")
@click.option("--case-fold", is_flag=True, help="Compare text answers case-insensitively.")
@click.option("--image", default="default", show_default=True)
@click.option("--check", "gate", is_flag=True, help="Gate every task (oracle 1, nop 0).")
@click.option("-j", "--jobs", default=2, show_default=True, help="Tasks gated in parallel with --check.")
@backend_option("Sandbox backend of the gate with --check.")
def qa(jsonl, out, question_field, answer_field, id_field, case_fold, image, gate, jobs, backend) -> None:
    """Turn a JSONL of {question, answer} into gated tasks (answer in /app/answer.txt).

    The test compares after normalisation (whitespace, \\boxed{}, thousands separators, numbers
    compared by value, optional case folding). The answer lives only in tests/. A bad line is
    reported with its file and line number; the others convert. Exit status 1 if any line was bad
    or any task failed the gate.

    \b
    Examples:
      tmax qa examples/qa/sample.jsonl --out qa-tasks --check
      tmax qa aime.jsonl --out aime --question-field problem --answer-field answer --id-field id
    """
    from tmax.qa import QAError, convert

    try:
        res = convert(jsonl, out, question_field, answer_field, id_field, case_fold, image)
    except QAError as e:
        raise click.ClickException(safe(e)) from None
    for err in res.errors:
        console.print(text(err, style="red"))
    console.print(f"wrote {len(res.written)} tasks to {out} ({len(res.errors)} bad lines)")
    ok = True
    if gate and res.written:
        ok = run_gate([out / name for name in res.written], out / "gate.jsonl", backend, jobs=jobs, repeat=2)
    sys.exit(0 if ok and not res.errors else 1)


@main.group("export")
def export_() -> None:
    """Write tasks in other formats: Harbor or Terminal-Bench 1 directories, a Hugging Face dataset."""


def _batch(label: str, items: list, work) -> list:
    """Run ``work`` on each item under a progress bar; one red line per failure, the batch goes on."""
    out, bad = [], 0
    with Bars() as bars:
        bars.start(label, len(items))
        for item in items:
            try:
                out.append(work(item))
            except Exception as e:  # one clear line per bad task; the rest still runs
                bad += 1
                console.print(Text.assemble(("error ", "red"), text(e)), soft_wrap=True, highlight=False)
            bars.advance(label, item, f"{bad} failed" if bad else "")
    return out


@export_.command("harbor")
@click.argument("corpus", nargs=-1, required=True, type=click.Path(exists=True))
@click.argument("out", type=click.Path(file_okay=False, path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["harbor", "tb1"]), default="harbor", show_default=True,
              help="harbor: task.toml + environment/Dockerfile; tb1: task.yaml, Dockerfile, docker-compose.yaml.")
def export_harbor(corpus, out, fmt) -> None:
    """Write Harbor (or Terminal-Bench 1) task directories that run outside tmax.

    Each task gets a Dockerfile that rebuilds its image profile from debian:<suite>-slim and runs
    environment/setup.sh in /app. A directory that is not a task stands for its sub-directories.

    \b
    Examples:
      tmax export harbor examples/tasks harbor-tasks
      harbor run -p harbor-tasks -a oracle -e docker        # then, where docker runs
      tmax export harbor corpus tb1-tasks --format tb1
    """
    from tmax.interop.export import export_task

    dirs = expand_task_dirs(corpus)
    done = _batch(f"export {fmt}", dirs, lambda d: export_task(d, out, fmt))
    console.print(f"wrote {len(done)}/{len(dirs)} {fmt} tasks to {out}")
    sys.exit(0 if len(done) == len(dirs) else 1)


@export_.command("hf")
@click.argument("corpus", nargs=-1, required=True, type=click.Path(exists=True))
@click.argument("out", type=click.Path(file_okay=False, path_type=Path))
def export_hf(corpus, out) -> None:
    """Write a Hugging Face dataset (parquet, one row per task, every file inside it).

    Columns: name, instruction, files (list of {path, content, mode}), the nine axes, family, seed,
    level, difficulty, image. `tmax import hf` writes the tasks back byte for byte.

    \b
    Examples:
      tmax export hf corpus corpus-hf
      python -c "import datasets; print(datasets.load_dataset('corpus-hf'))"
    """
    from tmax.interop.hf_dataset import task_row, write_dataset

    dirs = expand_task_dirs(corpus)
    rows = _batch("export hf", dirs, task_row)
    shard = write_dataset(rows, out)
    console.print(f"wrote {len(rows)}/{len(dirs)} tasks to {shard}")
    sys.exit(0 if len(rows) == len(dirs) else 1)


class _DefaultToTasks(click.Group):
    """`tmax import SRC... OUT` (no sub-command) means `tmax import tasks SRC... OUT`."""

    def parse_args(self, ctx, args):
        if args and args[0] not in self.commands and args[0] not in ("-h", "--help"):
            args = ["tasks", *args]
        return super().parse_args(ctx, args)


@main.group("import", cls=_DefaultToTasks)
def import_() -> None:
    """Bring Harbor or Terminal-Bench 1 tasks, or a tmax Hugging Face dataset, into tmax.

    \b
    Examples:
      tmax import harbor-tasks imported          # Harbor and TB1 detected per task
      tmax import tb1 tb-tasks/* imported
      tmax import hf corpus-hf restored
    """


IMPORT_COLOURS = {"native": "green", "container": "yellow", "partial": "yellow"}


def _import(srcs, out: Path, fmt: str | None) -> None:
    from tmax.gate import stream_jsonl
    from tmax.interop.importer import import_task

    dirs = expand_task_dirs(srcs)
    results = _batch("import", dirs, lambda d: import_task(d, out, fmt))
    out.mkdir(parents=True, exist_ok=True)
    for r in stream_jsonl(results, out / "import-report.jsonl"):
        why = r.error or "; ".join([*(f"dropped: {d}" for d in r.dropped), *r.notes])
        console.print(Text.assemble((f"{safe(r.way, oneline=True):9} ", IMPORT_COLOURS.get(r.way, "red")),
                                    text(f"{safe(Path(r.source).name, oneline=True)}: {why}")), soft_wrap=True,
                      highlight=False)
    counts = {w: sum(r.way == w for r in results) for w in ("native", "partial", "container", "error")}
    console.print(f"imported {counts['native']} native, {counts['partial']} partial (features dropped: the gate "
                  f"refuses them), {counts['container']} container (backend podman), {counts['error']} errors; "
                  f"report in {out / 'import-report.jsonl'}")
    sys.exit(1 if counts["error"] else 0)


_import_help = """Import {what} task directories into OUT as tmax tasks.

    A task whose Dockerfile is one tmax rendered, or translates (Debian/Ubuntu/python-slim base;
    COPY, WORKDIR, ENV, RUN, apt-get/pip with the network at build time; ENTRYPOINT as the task's
    service), runs natively on the default image with environment/setup.sh. Harbor's network modes
    per phase, separate verifier environments, multi-step tasks, named rewards and healthchecks carry
    over. Otherwise it keeps its Dockerfile and task.toml gets backend = "podman": a container engine
    builds its environment. A feature tmax cannot carry is a "dropped" line in import-report.jsonl
    and the task is "partial": the gate refuses it. One line per task says which.

    \b
    Examples:
      tmax import {sub}harbor-tasks imported
      tmax import {sub}a-task another-task imported && tmax check imported
    """


def _import_command(name: str, fmt: str | None, what: str):
    @click.argument("srcs", nargs=-1, required=True, type=click.Path(exists=True))
    @click.argument("out", type=click.Path(file_okay=False, path_type=Path))
    def cmd(srcs, out) -> None:
        _import(srcs, out, fmt)

    cmd.__doc__ = _import_help.format(what=what, sub="" if fmt is None else f"{name} ")
    return import_.command(name)(cmd)


_import_command("tasks", None, "Harbor or Terminal-Bench 1 (detected per task)")
_import_command("harbor", "harbor", "Harbor")
_import_command("tb1", "tb1", "Terminal-Bench 1")


@import_.command("hf")
@click.argument("src", type=click.Path(exists=True, path_type=Path))
@click.argument("out", type=click.Path(file_okay=False, path_type=Path))
def import_hf(src, out) -> None:
    """Write the tasks of a dataset made by `tmax export hf` back as task directories.

    SRC is a parquet file or a directory holding data/*.parquet. The trees are byte-identical to
    the exported ones (contents and permission bits).

    \b
    Examples:
      tmax import hf corpus-hf restored
      tmax import hf corpus-hf/data/train-00000-of-00001.parquet restored && tmax check restored
    """
    from tmax.interop.hf_dataset import read_rows, write_task_tree

    done = _batch("import hf", list(read_rows(src)), lambda row: write_task_tree(row, out))
    console.print(f"wrote {len(done)} tasks to {out}")


if __name__ == "__main__":
    main()
