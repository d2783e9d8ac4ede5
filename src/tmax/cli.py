"""The ``tmax`` command: thin verbs over the library. Nothing imports this module."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from tmax.term import markup as _m
from tmax.term import safe, text

console = Console(stderr=True)
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "tasks"


def _log(s) -> None:
    """Lines from builds and runs (they may carry a task's output): printed inert."""
    console.print(text(s), highlight=False)


def _error(e, prefix: str = "error: ") -> None:
    console.print(Text.assemble((prefix, "red"), text(e)), highlight=False)


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


def expand_task_dirs(args: tuple[str, ...]) -> list[Path]:
    """Task dirs as given; a directory that is not a task itself stands for its sub-directories."""
    out: list[Path] = []
    for a in args:
        p = Path(a)
        markers = ("task.toml", "instruction.md", "task.yaml")
        if p.is_dir() and not any((p / m).exists() for m in markers) and any(c.is_dir() for c in p.iterdir()):
            out.extend(sorted(c for c in p.iterdir() if c.is_dir()))
        else:
            out.append(p)
    return out


def _progress() -> Progress:
    return Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TextColumn("{task.fields[status]}"), TimeElapsedColumn(), console=console,
                    disable=not console.is_terminal and os.environ.get("TMAX_PROGRESS") != "1")


def run_gate(dirs: list[Path], jobs: int, repeat: int, backend: str, out: Path | None, image: str | None,
             adversarial: bool = True, channels: bool = True) -> bool:
    from tmax.gate import check_many
    from tmax.hacks import HACK_THRESHOLD

    results = []
    with _progress() as prog:
        bar = prog.add_task("gate", total=len(dirs), status="")
        fh = open(out, "w") if out else None
        try:
            for r in check_many(dirs, repeat=repeat, backend=backend, jobs=jobs, image=image, adversarial=adversarial,
                                channels=channels):
                results.append(r)
                if fh:
                    fh.write(json.dumps(r.to_json(), sort_keys=True) + "\n")
                    fh.flush()
                passed = sum(x.ok for x in results)
                prog.update(bar, advance=1, status=f"{passed}/{len(results)} ok")
                if not prog.console.is_terminal:
                    mark = "ok  " if r.ok else "FAIL"
                    console.print(text(f"{mark} {safe(r.task, oneline=True)}" + ("" if r.ok else f": {r.reason}")),
                                  highlight=False)
        finally:
            if fh:
                fh.close()
    results.sort(key=lambda r: r.task)
    table = Table(title="correctness gate", show_lines=False)
    for col in ("task", "ok", "oracle", "nop", "hacks", "seconds", "reason"):
        table.add_column(col, overflow="fold")
    for r in results:
        hacks = (f"[red]beaten by {r.beaten_by}" if r.beaten_by else
                 f"{sum(v is not None and v < HACK_THRESHOLD for v in r.hack_rewards.values())}/{len(r.hack_rewards)} held"
                 if r.hack_rewards else "-")
        table.add_row(text(r.name or r.task, oneline=True), "[green]yes" if r.ok else "[red]no",
                      ",".join("-" if x is None else f"{x:g}" for x in r.oracle_rewards),
                      "-" if r.nop_reward is None else f"{r.nop_reward:g}", hacks, f"{r.seconds:.1f}",
                      text(r.reason[:300]))
    console.print(table)
    n_ok = sum(r.ok for r in results)
    console.print(f"[bold]{n_ok}/{len(results)} tasks pass the gate[/bold] (backend {backend})")
    return n_ok == len(results)


@main.command()
@click.argument("task_dirs", nargs=-1, required=True, type=click.Path())
@click.option("-j", "--jobs", default=2, show_default=True, help="Tasks gated in parallel.")
@click.option("--repeat", default=2, show_default=True, help="Oracle runs per task; each must score 1.0.")
@click.option("--backend", default="bwrap", show_default=True,
              type=click.Choice(["bwrap", "unshare", "podman", "docker", "apptainer"]), help="Sandbox backend.")
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
    ok = run_gate(expand_task_dirs(task_dirs), jobs, repeat, backend, out, image, adversarial=not no_adversarial,
                  channels=not no_channels)
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
    from tmax.images import PROFILES_DIR, host_environment, images_root

    table = Table()
    table.add_column("image")
    table.add_column("status")
    table.add_row("host", host_environment().hash)
    built = {p.name for p in images_root().glob("*") if (p / "done").exists()}
    for prof in sorted(PROFILES_DIR.glob("*.toml")):
        from tmax.images import load_profile

        pr = load_profile(str(prof))
        name = f"{pr.name}-{pr.hash}"
        table.add_row(text(pr.name), text(f"built ({name})" if name in built else "not built"))
    console.print(table)


@main.command()
@click.option("--image", default="default", show_default=True, help="Image for the examples (host: no build).")
@click.option("--backend", default="bwrap", show_default=True, help="Sandbox backend.")
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
    from tmax.images import ImageError, get_environment

    out.mkdir(parents=True, exist_ok=True)
    console.rule("1. environment image")
    try:
        env = get_environment(image, log=_log)
    except ImageError as e:
        _error(e)
        sys.exit(1)
    console.print(text(f"image {env.name}: {env.hash}"))
    console.rule("2. correctness gate on examples/tasks")
    ok = run_gate(expand_task_dirs((str(EXAMPLES),)), jobs, 2, backend, out / "gate.jsonl", image)
    console.print(f"gate report: {out / 'gate.jsonl'}")
    if image != "host":  # generated tasks need the default image's tools
        from tmax.generate import generate_corpus, prune_failed

        console.rule(f"3. generate {generate_n} tasks (rl_v2, seed 0) and gate them")
        corpus = out / "corpus"
        summary = generate_corpus(generate_n, 0, "rl_v2", corpus, jobs)
        console.print(f"generated {summary['written']} tasks in {corpus}")
        dirs = sorted(p for p in corpus.iterdir() if p.is_dir())
        ok = run_gate(dirs, jobs, 2, backend, corpus / "gate.jsonl", None) and ok
        prune_failed(corpus, corpus / "gate.jsonl")
        kept = sorted(p for p in corpus.iterdir() if p.is_dir())
        job_dirs = []
        if solve_n > 0:
            from tmax.runs import JobSpec
            from tmax.runs import solve as run_solve

            console.rule(f"4. solve {min(solve_n, len(kept))} tasks with the embedded model (k=2)")
            spec = JobSpec(corpus=kept[:solve_n], policy="embedded", k=2, jobs=jobs, backend=backend, max_steps=6,
                           max_tokens_per_turn=160)
            summary = run_solve(spec, out / "job-embedded")
            console.print(f"embedded model: pass@1 {summary.get('pass@1')}, pass@2 {summary.get('pass@2')}, "
                          f"outcomes {summary['outcomes']}")
            job_dirs.append(out / "job-embedded")
        console.rule("5. analysis report")
        from tmax.analysis import analyze as run_analyze

        run_analyze([corpus], job_dirs, out / "report")
        console.print(f"report: {out / 'report' / 'report.html'}")
    if train_steps > 0:
        from tmax.rl.config import TrainConfig
        from tmax.rl.trainer import Trainer

        console.rule(f"6. {train_steps} DPPO steps of the embedded model (groups of 4)")
        cfg = TrainConfig(tasks=[str(EXAMPLES / "log-5xx-summary"), str(EXAMPLES / "sqlite-revenue-report")],
                          out=str(out / "train"), steps=train_steps, prompts_per_step=1, group_size=4, micro_batch=4,
                          max_turns=2, max_tokens_per_turn=64, max_total_tokens=4096, lr=1e-5, async_rollouts=False,
                          rollout_workers=4, checkpoint_every=train_steps, backend=backend,
                          max_refill_factor=1)  # one group per step: the demo shows the loop, not a long run
        cfg.validate()
        Trainer(cfg, log=_log).run()
        console.print(f"metrics: {out / 'train' / 'metrics.jsonl'}, curves: {out / 'train' / 'curves.png'}")
    sys.exit(0 if ok else 1)


@main.command()
@click.option("--n", "n", type=int, required=True, help="Number of tasks.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--kind", type=click.Choice(["legacy", "sft_v2", "rl_v2", "balanced"]), default="rl_v2", show_default=True,
              help="Corpus kind: how strongly the newer axis values are drawn.")
@click.option("--out", type=click.Path(path_type=Path), required=True, help="Output directory.")
@click.option("-j", "--jobs", default=2, show_default=True, help="Parallel workers.")
@click.option("--check", "gate", is_flag=True, help="Gate every task; keep only those that pass.")
@click.option("--repeat", default=2, show_default=True, help="Oracle runs per task with --check.")
@click.option("--calibration", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="A table from `tmax calibrate`: redraw levels so measured pass rates land in its band.")
@click.option("--no-channels", is_flag=True, help="With --check, skip the channel-skip check.")
def generate(n, seed, kind, out, jobs, gate, repeat, calibration, no_channels) -> None:
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
    from tmax.families import LOAD_ERRORS, load_all
    from tmax.generate import generate_corpus, prune_failed

    calib = None
    if calibration:
        from tmax.calibrate import load as load_calibration

        try:
            calib = load_calibration(calibration)
        except (ValueError, json.JSONDecodeError) as e:
            raise click.BadParameter(safe(e), param_hint="--calibration") from None
    load_all()
    for mod, err in sorted(LOAD_ERRORS.items()):
        console.print(text(f"skipped family module {mod}: {err}", style="yellow"))
    with _progress() as prog:
        bar = prog.add_task("generate", total=n, status="")
        summary = generate_corpus(n, seed, kind, out, jobs, calibration=calib,
                                  progress=lambda g: prog.update(bar, advance=1, status="error" if g.error else ""))
    console.print(f"generated {summary['written']}/{n} tasks in {out} "
                  f"({summary['near_duplicates']} near-duplicates dropped, {len(summary['errors'])} build errors)")
    for e in summary["errors"][:20]:
        console.print(text(f"build error at index {e['index']}: {e['error']}", style="red"))
    if gate:
        from tmax.gate import GateResult  # noqa: F401

        dirs = sorted(p for p in out.iterdir() if p.is_dir())
        run_gate(dirs, jobs, repeat, "bwrap", out / "gate.jsonl", None, channels=not no_channels)
        dropped = prune_failed(out, out / "gate.jsonl")
        console.print(f"gate: kept {len(dirs) - len(dropped)}/{len(dirs)}; dropped {len(dropped)} "
                      f"(reasons in {out / 'gate.jsonl'})")


@main.command()
@click.argument("corpus", nargs=-1, required=True, type=click.Path())
@click.option("--policy", required=True,
              help="oracle, nop, embedded (the packaged SmolLM2-135M), hf:PATH, or openai:MODEL (with --base-url).")
@click.option("-k", "k", default=1, show_default=True, help="Attempts per task.")
@click.option("-j", "--jobs", default=2, show_default=True, help="Trials in parallel.")
@click.option("--job", "job_dir", type=click.Path(path_type=Path), default=None,
              help="Job directory (default jobs/<policy>-<time>); rerun with the same one to resume.")
@click.option("--base-url", default=None, help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1")
@click.option("--harness", type=click.Choice(["tmax", "terminus"]), default="tmax", show_default=True,
              help="tmax: the one harness used for RL; terminus: a tmux keystroke harness for cross-harness eval.")
@click.option("--backend", default="bwrap", show_default=True)
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
    import time as _time

    from tmax.runs import JobSpec
    from tmax.runs import solve as run_solve

    dirs = expand_task_dirs(corpus)
    job_dir = job_dir or Path("jobs") / f"{policy.replace(':', '-').replace('/', '_')}-{_time.strftime('%Y%m%d-%H%M%S')}"
    spec = JobSpec(corpus=dirs, policy=policy, k=k, jobs=jobs, backend=backend, base_url=base_url, harness=harness,
                   max_steps=max_steps, max_tokens_per_turn=max_tokens, command_timeout=command_timeout,
                   temperature=temperature)
    with _progress() as prog:
        bar = prog.add_task("solve", total=len(dirs) * k, status="")

        def on(result, summ):
            rate = summ.get("pass@1")
            prog.update(bar, advance=1, status=f"pass@1 {rate:.3f}" if rate is not None else "")

        try:
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
@click.option("--band", default="0.2,0.8", show_default=True, help="Target pass-rate band lo,hi.")
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

    try:
        lo, hi = (float(x) for x in band.split(","))
        assert 0 <= lo < hi <= 1
    except (ValueError, AssertionError):
        raise click.BadParameter("expected lo,hi with 0 <= lo < hi <= 1", param_hint="--band") from None
    doc = write(list(jobs_), out, (lo, hi))
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
    """List registered families with their domain, skill types and verifier kinds.

    \b
    Example:
      tmax families list
    """
    from tmax.families import load_all

    table = Table()
    for col in ("family", "domain", "skill types", "verifiers"):
        table.add_column(col, overflow="fold")
    for name, fam in sorted(load_all().items()):
        table.add_row(text(name), text(fam.domain), text(", ".join(fam.skill_types)), text(", ".join(fam.verifiers)))
    console.print(table)


@families.command("check")
@click.argument("names", nargs=-1, required=True)
@click.option("--seeds", default=3, show_default=True, help="Seeds per difficulty level.")
@click.option("--levels", default="1,2,3,4", show_default=True)
@click.option("--out", type=click.Path(path_type=Path), default=Path("family-check"), show_default=True)
@click.option("-j", "--jobs", default=2, show_default=True)
@click.option("--repeat", default=1, show_default=True)
@click.option("--no-channels", "no_channels", is_flag=True, help="Skip the channel-skip check.")
def families_check(names, seeds, levels, out, jobs, repeat, no_channels) -> None:
    """Build NAMES at every level with several seeds (cycling fixture and verifier kinds), check that
    each regenerates byte-identical, gate them all (oracle, nop, the adversarial battery), and run the
    channel-skip check on each: the reference solution with the delivered value replaced by every
    plausible candidate visible to the agent must score 0. Exit 0 iff all pass.

    \b
    Examples:
      tmax families check log_error_paths
      tmax families check all --seeds 3 -j 2
    """
    from tmax.families import build_task, load_all
    from tmax.generate import axes_for_family, tree_digest

    channels = not no_channels
    from tmax.families import LOAD_ERRORS

    fams = load_all()
    for mod, err in sorted(LOAD_ERRORS.items()):
        console.print(text(f"family module {mod} failed to load: {err}", style="red"))
    chosen = sorted(fams) if names == ("all",) else list(names)
    unknown = [n for n in chosen if n not in fams]
    if unknown:
        console.print(text(f"unknown families: {', '.join(unknown)}", style="red"))
        sys.exit(2)
    dirs, problems = [], []
    for name in chosen:
        fam = fams[name]
        combos = [(fx, vf) for vf in fam.verifiers for fx in fam.fixtures]
        i = 0
        for level in (int(x) for x in levels.split(",")):
            for seed in range(seeds):
                fx, vf = combos[(level * 7 + seed * 3 + i) % len(combos)]
                i += 1
                axes = axes_for_family(fam, seed, level, level=level, fixture=fx, verifier=vf)
                d = out / f"{name}-L{level}-s{seed}-{fx}-{vf}"
                try:
                    build_task(fam, axes, seed, level, d)
                    first = tree_digest(d)
                    build_task(fam, axes, seed, level, d)
                    if tree_digest(d) != first:
                        problems.append(f"{d.name}: regenerating gave different bytes")
                    dirs.append(d)
                except Exception as e:  # report and go on
                    problems.append(f"{d.name}: build failed: {type(e).__name__}: {e}")
    # The channel-skip check runs below, in full (more candidates, the setup replayed), not in the gate.
    ok = run_gate(dirs, jobs, repeat, "bwrap", out / "gate.jsonl", None, channels=False) if dirs else True
    if dirs and channels:
        problems += _channel_skip_all(dirs, out / "channel-skip.jsonl", jobs)
    for p in problems:
        console.print(text(p, style="red"))
    sys.exit(0 if ok and not problems else 1)


def _channel_skip_all(dirs: list[Path], out: Path, jobs: int) -> list[str]:
    """The channel-skip check on every task that delivers a value; one JSON line per task in ``out``."""
    from tmax.channels import channel_skip

    problems = []
    with _progress() as prog, open(out, "w") as fh:
        bar = prog.add_task("channel-skip", total=len(dirs), status="")
        for d in dirs:
            r = channel_skip(d, max_runs=5, jobs=jobs)
            fh.write(json.dumps(r.to_json(), sort_keys=True) + "\n")
            prog.update(bar, advance=1)
            if not r.ok:
                problems.append(f"{d.name}: channel skipped: {r.reason}")
    n_bad = len(problems)
    console.print(f"[bold]{len(dirs) - n_bad}/{len(dirs)} tasks pass the channel-skip check[/bold] (details in {out})")
    return problems


@main.command()
@click.option("--n", "n", type=int, required=True, help="Number of tasks to author.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--kind", type=click.Choice(["legacy", "sft_v2", "rl_v2", "balanced"]), default="rl_v2", show_default=True,
              help="Corpus kind: how strongly the newer axis values are drawn.")
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
@click.option("--backend", default="bwrap", show_default=True)
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
def qa(jsonl, out, question_field, answer_field, id_field, case_fold, image, gate, jobs) -> None:
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
        ok = run_gate([out / name for name in res.written], jobs, 2, "bwrap", out / "gate.jsonl", None)
    sys.exit(0 if ok and not res.errors else 1)


@main.group("export")
def export_() -> None:
    """Write tasks in other formats: Harbor or Terminal-Bench 1 directories, a Hugging Face dataset."""


def _batch(label: str, items: list, work) -> list:
    """Run ``work`` on each item under a progress bar; one red line per failure, the batch goes on."""
    out, bad = [], 0
    with _progress() as prog:
        bar = prog.add_task(label, total=len(items), status="")
        for item in items:
            try:
                out.append(work(item))
            except Exception as e:  # one clear line per bad task; the rest still runs
                bad += 1
                console.print(Text.assemble(("error ", "red"), text(e)), soft_wrap=True, highlight=False)
            prog.update(bar, advance=1, status=f"{bad} failed" if bad else "")
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


def _import(srcs, out: Path, fmt: str | None) -> None:
    from tmax.interop.importer import import_task

    dirs = expand_task_dirs(srcs)
    results = _batch("import", dirs, lambda d: import_task(d, out, fmt))
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "import-report.jsonl", "w") as fh:
        for r in results:
            fh.write(json.dumps(r.to_json(), sort_keys=True) + "\n")
            colour = {"native": "green", "container": "yellow", "partial": "yellow"}.get(r.way, "red")
            why = r.error or "; ".join([*(f"dropped: {d}" for d in r.dropped), *r.notes])
            console.print(Text.assemble((f"{safe(r.way, oneline=True):9} ", colour),
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
