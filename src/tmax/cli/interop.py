"""Verbs that move tasks in and out: export (Harbor, TB1, Hugging Face) and import."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.text import Text

from tmax.cli.common import Bars, console, main
from tmax.discover import expand_task_dirs
from tmax.term import safe, text


@main.group("export")
def export_() -> None:
    """Write tasks in other formats: Harbor or Terminal-Bench 1 directories, a Hugging Face dataset.

    \b
    Examples:
      tmax export harbor corpus harbor-tasks
      tmax export harbor corpus tb1-tasks --format tb1
      tmax export hf corpus corpus-hf
    """


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
