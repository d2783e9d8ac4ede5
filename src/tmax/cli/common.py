"""The group and what its verbs share: options, progress bars, error lines, gate tables."""

from __future__ import annotations

import os
from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from tmax.sandbox import BACKENDS, DEFAULT_BACKEND
from tmax.taxonomy import CORPUS_KINDS
from tmax.term import safe, text

console = Console(stderr=True)


def backend_option(help: str | None = "Sandbox backend."):
    return click.option("--backend", default=DEFAULT_BACKEND, show_default=True, type=click.Choice(BACKENDS),
                        help=help)


kind_option = click.option("--kind", type=click.Choice(CORPUS_KINDS), default="rl_v2", show_default=True,
                           help="Corpus kind: how strongly the newer axis values are drawn.")


def log_line(s) -> None:
    """Lines from builds and runs (they may carry a task's output): printed inert."""
    console.print(text(s), highlight=False)


def print_error(e, prefix: str = "error: ") -> None:
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
        log_line(line)

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
