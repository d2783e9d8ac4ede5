"""The fleet export that several security families share (no family is registered here).

An export holds one folder per machine (server, site, resolver) named by the first 16 hex digits of the
SHA-256 of the machine's name; the name of the machine to audit is the delivered value, so the other
folders are decoys without it. The helpers draw the machines until the target's answer is its own,
name them, write their files and give the oracle's commands.
"""

from __future__ import annotations

from collections.abc import Callable

from tmax.families.base import FamilyError, TaskBuilder
from tmax.families.unseen import distinct, key_cmd, key_of, unseen


def pick(t: TaskBuilder, draw: Callable[[], list], answer: Callable[[object], str], tries: int = 30):
    """``draw()`` gives the machines (target first) and ``answer`` one machine's truth: draw until the
    target's truth is non-empty and no decoy's equals it (so a decoy's answer never scores). Returns the
    machines and the target's truth."""
    for _ in range(tries):
        machines = draw()
        truths = [answer(m) for m in machines]
        if truths[0].strip() and all(x != truths[0] for x in truths[1:]):
            return machines, truths[0]
    raise FamilyError(f"family {t.axes.family}: no target with a non-empty answer of its own in {tries} draws")


def ship(t: TaskBuilder, root: str, machines: list[dict[str, str]], *extra: str) -> str:
    """Write each machine's files (relative path -> text) under ``root/<KEY>/`` and return the target's
    name, drawn so that nothing shown (the files, ``extra``) gives it away. Folders are written in key
    order, so creation order does not single out the target."""
    target = unseen(t, lambda: t.code(2), *(x for m in machines for x in m.values()), *extra)
    names = [target, *distinct(lambda: t.code(2), len(machines) - 1, [target])]
    for name, files in sorted(zip(names, machines), key=lambda x: key_of(x[0])):
        for rel, text in files.items():
            t.add_file(f"{root}/{key_of(name)}/{rel}", text)
    return target


def intro(t: TaskBuilder, root: str, what: str, noun: str, target: str) -> str:
    """The instruction's paragraph on the layout, then the delivered name; returns its shell variable."""
    t.say(f"`{root}/` holds {what} under `{root}/<KEY>/`, where KEY is the first 16 hex digits of the SHA-256 of "
          f"the {noun}'s name (`printf %s <name> | sha256sum`). Work on the {noun} named below.")
    return t.deliver(target, f"the {noun} name")


def solve(t: TaskBuilder, who: str, script: str, src: str, path: str, args: str, out: str) -> None:
    """The oracle: run the reference ``script`` on ``path`` (``{KEY}`` marks the folder) into ``out``."""
    t.add_solution_file(script, src)
    target = path.replace("{KEY}", key_cmd(who))
    t.solve(f'test -n "{who}"\nmkdir -p {out.rsplit("/", 1)[0]}\npython3 /solution/{script} "{target}" {args} '
            f"> {out}")


def rules(level: int, *steps: tuple[int, str]) -> str:
    """The instruction's rules in force at ``level`` (each step applies from its level up), joined."""
    return " ".join(text for lv, text in steps if level >= lv)
