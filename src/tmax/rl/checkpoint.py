"""Crash-safe checkpoints: a run directory's ``checkpoint`` is a symlink to one complete
``checkpoint-<step>-<id>`` folder, and a save moves it with one atomic rename.

A save writes a fresh ``.checkpoint-<step>-<id>.partial`` folder, fsyncs its files, renames it to
``checkpoint-<step>-<id>``, then points a new symlink at it and renames that over ``checkpoint``; only
then are older folders removed. A kill at any point leaves ``checkpoint`` naming a complete folder
(the old one or the new one), and leftovers of a killed save are removed by the next one.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

LINK = "checkpoint"
STATE = "state.json"


def save(out: Path, step: int, write: Callable[[Path], None], state: dict) -> Path:
    """Write a checkpoint of ``step``: ``write(folder)`` puts the tensors' files in a fresh folder."""
    for _ in save_steps(out, step, write, state):
        pass
    return out / LINK


def save_tensors(out: Path, step: int, files: dict[str, object], state: dict) -> Path:
    """:func:`save` a checkpoint holding ``NAME.pt`` (``torch.save``) for each entry of ``files``."""
    import torch

    def write(folder: Path) -> None:
        for name, obj in files.items():
            torch.save(obj, folder / f"{name}.pt")

    return save(out, step, write, state)


def load_tensors(folder: Path | str) -> dict[str, object]:
    """What :func:`save_tensors` wrote, by name, on the CPU (the learner moves it to its device)."""
    import torch

    return {p.name.removesuffix(".pt"): torch.load(p, map_location="cpu") for p in sorted(Path(folder).glob("*.pt"))}


def save_steps(out: Path, step: int, write: Callable[[Path], None], state: dict) -> Iterator[str]:
    """:func:`save` one file-system operation at a time (it yields after each), so that a test can
    stop it anywhere, as a kill would."""
    name = f"checkpoint-{step:06d}-{uuid.uuid4().hex[:8]}"  # never the folder the link names now
    final, partial = out / name, out / f".{name}.partial"
    _adopt_plain_folder(out)
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    write(partial)
    (partial / STATE).write_text(json.dumps({**state, "step": step}))
    for f in sorted(partial.iterdir()):
        _fsync(f)
    yield "written"
    os.replace(partial, final)
    _fsync(out)
    yield "renamed"
    tmp_link = out / f".{LINK}.link"
    tmp_link.unlink(missing_ok=True)
    tmp_link.symlink_to(name)
    yield "linked"
    os.replace(tmp_link, out / LINK)  # the one rename that moves the checkpoint
    _fsync(out)
    yield "switched"
    for old in sorted(out.glob("checkpoint-*")) + sorted(out.glob(".checkpoint-*")):
        if old.name != name:  # older checkpoints, and leftovers of killed saves
            shutil.rmtree(old, ignore_errors=True)
            yield f"removed {old.name}"


def latest(out: Path) -> Path | None:
    """The complete checkpoint folder ``checkpoint`` names, or None when the run has none."""
    _adopt_plain_folder(out)
    ck = out / LINK
    return ck.resolve() if (ck / STATE).exists() else None


def read_state(folder: Path) -> dict:
    return json.loads((folder / STATE).read_text())


def _adopt_plain_folder(out: Path) -> None:
    """A run written before checkpoints were symlinks has a plain ``checkpoint`` folder: give it its
    step's name and point the link at it."""
    ck = out / LINK
    if ck.is_dir() and not ck.is_symlink() and (ck / STATE).exists():
        name = f"checkpoint-{read_state(ck)['step']:06d}-adopted"
        os.replace(ck, out / name)
        ck.symlink_to(name)


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
