"""Verbs that make and check tasks: check, image, generate, families, author, qa."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
from rich.table import Table

from tmax.cli.common import (backend_option, Bars, console, int_list, kind_option, load_families, log_line,
                             main, print_error, run_gate, show_gate)
from tmax.author import MAX_REPLY_TOKENS
from tmax.discover import expand_task_dirs
from tmax.term import markup as _m
from tmax.term import safe, text


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
    """Environment images (root filesystems that sandboxes run on).

    \b
    Examples:
      tmax image build default
      tmax image list
    """


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
        path = build_image(p, log=log_line, force=force)
    except ImageError as e:
        print_error(e)
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
@click.option("--band-only", is_flag=True,
              help="With --calibration, draw only families with a measured level inside the band.")
@click.option("--no-channels", is_flag=True, help="With --check, skip the channel-skip check.")
def generate(n, seed, kind, out, jobs, gate, repeat, backend, calibration, band_only, no_channels) -> None:
    """Generate N verifiable tasks by compositional sampling over the nine axes.

    Same arguments, same bytes. Writes task directories, manifest.jsonl (one line per task: every
    axis, family, seed, difficulty, environment hash) and generate-summary.json. Near-duplicates
    (compared on what the agent sees, digits masked) and build errors are dropped, counted and
    replaced by further draws until N tasks are kept (at most 3N draws). With --check, every task is
    gated (oracle 1, nop 0, every generic hack below 0.25, no fixture channel skipped) and failures
    are removed, with reasons in gate.jsonl.

    \b
    Examples:
      tmax generate --n 100 --seed 0 --kind rl_v2 --out corpus
      tmax generate --n 1000 --seed 0 --kind rl_v2 --out corpus --check -j 2
      tmax generate --n 500 --out corpus2 --calibration calibration.json
      tmax generate --n 200 --kind legacy --out band --calibration calibration.json --band-only
    """
    from tmax.generate import gate_corpus, generate_corpus

    if band_only and not calibration:
        raise click.BadParameter("--band-only needs --calibration FILE (a table from `tmax calibrate`)",
                                 param_hint="--band-only")
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
        try:
            summary = generate_corpus(n, seed, kind, out, jobs, calibration=calib, band_only=band_only,
                                      progress=lambda g: bars.advance("generate", g, "error" if g.error else ""))
        except ValueError as e:  # a band no measured family reaches
            raise click.BadParameter(safe(e), param_hint="--calibration") from None
    console.print(f"generated {summary['written']}/{n} tasks in {out} (drew {summary['drawn']}: "
                  f"{summary['near_duplicates']} near-duplicates dropped, {len(summary['errors'])} build errors)")
    for e in summary["errors"][:20]:
        console.print(text(f"build error at index {e['index']}: {e['error'].splitlines()[0]}", style="red"))
    if summary["errors"]:
        console.print(text(f"tracebacks in {out / 'generate-summary.json'}"))
    if gate:
        with Bars() as bars:
            results, dropped = gate_corpus(out, repeat=repeat, backend=backend, jobs=jobs,
                                           channels=not no_channels, watch=bars)
        show_gate(results, backend)
        console.print(f"gate: kept {len(results) - len(dropped)}/{len(results)}; dropped {len(dropped)} "
                      f"(reasons in {out / 'gate.jsonl'})")


@main.group()
def families() -> None:
    """Procedural task families: list them, or check that they build reproducibly and pass the gate.

    \b
    Examples:
      tmax families list
      tmax families check backup_retention_prune --seeds 2
    """


@families.command("list")
def families_list() -> None:
    """List registered families with their domain, levels, variants, the families a composed one chains,
    skill types and verifier kinds, then how many each domain has.

    \b
    Example:
      tmax families list
    """
    from collections import Counter

    from tmax.families import load_all

    fams = load_all()
    table = Table()
    for col in ("family", "domain", "levels", "variants", "chains", "skill types", "verifiers"):
        table.add_column(col, overflow="fold")
    for name, fam in sorted(fams.items()):
        table.add_row(text(name), text(fam.domain), text(",".join(map(str, sorted(fam.levels)))),
                      text(", ".join(fam.variants) or "-"), text(" > ".join(fam.stages) or "-"),
                      text(", ".join(fam.skill_types)), text(", ".join(fam.verifiers)))
    console.print(table)
    per_domain = Counter(f.domain for f in fams.values())
    composed = sum(1 for f in fams.values() if f.stages)
    console.print(f"{len(fams)} families ({composed} composed): "
                  + ", ".join(f"{d} {n}" for d, n in sorted(per_domain.items())))


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
@click.option("--max-tokens", default=MAX_REPLY_TOKENS, show_default=True, help="Tokens per reply.")
@click.option("--tokenizer", default="", help="A local Hugging Face tokenizer folder to count tokens with when the "
              "API reports no usage.")
@click.option("--temperature", default=0.7, show_default=True)
@click.option("--price-in", type=float, default=None, help="USD per 1M prompt tokens (overrides the table).")
@click.option("--price-out", type=float, default=None, help="USD per 1M completion tokens (overrides the table).")
@click.option("--repeat", default=2, show_default=True, help="Oracle runs per task in the gate.")
@backend_option(None)
@click.option("--dry-run", is_flag=True, help="Estimate tokens and cost without calling the model.")
def author(n, seed, kind, base_url, model, out, rounds, jobs, max_tokens, tokenizer, temperature, price_in, price_out,
           repeat, backend, dry_run) -> None:
    """Author tasks with an LLM over the nine axes; gate each; feed failures back for up to --rounds.

    Writes accepted task directories, manifest.jsonl, author_log.jsonl (every prompt, reply, token
    count and cost per round) and author_summary.json (accepted, dropped by reason, tokens, cost).
    An accepted task passed the gate, every generic hack aimed at its declared outputs (each must
    score 0), and the perturbation check (its answer changes when the declared fixture value does).
    Token counts come from the API's usage field, else from --tokenizer, else a conservative
    2.5-characters-per-token estimate.

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
                       kind=kind, backend=backend, repeat=repeat, price=price, tokenizer=tokenizer)

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
