"""Shared pieces of the software_engineering families whose trees are keyed by a delivered name (no
family is registered here)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from tmax.families.base import TaskBuilder
from tmax.families.unseen import distinct, key_cmd, key_of, unseen


def ship_keyed(t: TaskBuilder, folder: str, trees: list[dict[str, str]]) -> str:
    """Each tree (relative path -> text) under `/app/<folder>/<KEY>/`, KEY the hash of a name of its own
    (so only the delivered name tells which is meant); returns the first tree's name, drawn unseen."""
    name = unseen(t, lambda: t.code(2), *(x for tree in trees for x in tree.values()))
    keys = [key_of(n) for n in [name, *distinct(lambda: t.code(2), len(trees) - 1, [name])]]
    for key, tree in zip(keys, trees):
        for p, text in tree.items():
            t.add_file(f"/app/{folder}/{key}/{p}", text)
    return name


def finish_keyed(t: TaskBuilder, folder: str, script: str, src: str, out: str, truth: str, what: str,
                 arg: str = '"$d"') -> None:
    """The oracle runs the reference on the delivered name's folder ($d); the answer is graded at ``out``."""
    t.add_solution_file(script, src)
    t.solve(f'mkdir -p /app/out\nd="/app/{folder}/{key_cmd("$V1")}"\ntest -d "$d"\n'
            f'python3 /solution/{script} {arg} > {out}')
    t.expect_output(out, truth, what)


def report_on_tree(report, tree: dict[str, str]) -> str:
    """``report`` run on ``tree`` (relative path -> text) written to a temporary host folder, as the
    oracle reads it."""
    with tempfile.TemporaryDirectory(prefix="tmax-ref-") as d:
        for p, text in tree.items():
            (Path(d) / p).parent.mkdir(parents=True, exist_ok=True)
            (Path(d) / p).write_bytes(text.encode())
        return report(d)
