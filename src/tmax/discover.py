"""Finding task directories from what a user names: a task, or a folder of tasks. One rule for every
verb and the trainer, so a path means the same thing everywhere."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from tmax.task import Task, TaskError, load_task

# Files whose presence makes a directory a task (Harbor's two, Terminal-Bench 1's one): what load_task reads.
TASK_MARKERS = ("task.toml", "instruction.md", "task.yaml")


def is_task_dir(path: Path) -> bool:
    return path.is_dir() and any((path / m).exists() for m in TASK_MARKERS)


def expand_task_dirs(paths: Iterable[str | Path]) -> list[Path]:
    """Task dirs as given; a directory that is not a task itself stands for its sub-directories.

    Anything else (a file, a missing path, an empty folder) is kept as given, so that loading it
    reports the path and what was expected instead of it vanishing from the batch."""
    out: list[Path] = []
    for p in map(Path, paths):
        subdirs = sorted(c for c in p.iterdir() if c.is_dir()) if p.is_dir() and not is_task_dir(p) else []
        out.extend(subdirs or [p])
    return out


def corpus_task_dirs(corpus: Path) -> list[Path]:
    """The task directories a corpus folder holds (generate's output: one sub-directory per task)."""
    return sorted(p for p in corpus.iterdir() if p.is_dir())


def load_tasks(paths: Iterable[str | Path]) -> tuple[list[Task], dict[str, str]]:
    """Every task under ``paths`` that loads, and {path: why} for those that do not."""
    tasks, errors = [], {}
    for d in expand_task_dirs(paths):
        try:
            tasks.append(load_task(d))
        except TaskError as e:
            errors[str(d)] = str(e)
    return tasks, errors
