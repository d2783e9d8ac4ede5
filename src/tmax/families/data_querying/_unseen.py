"""Drawing a value that a task hands over through its fixture channel so that it cannot be read anywhere
else: not in the instruction, the environment files or their names, nor under the simple decodings a
shortcut-seeking agent would try (tmax.channels lists them)."""

from __future__ import annotations


def seen(t, *extra: str) -> set[str]:
    """Every candidate, digits or capitals, visible in what ``t`` holds so far and in ``extra`` (text
    still to be shown, e.g. worked examples)."""
    from tmax.channels import collect  # imported late: it pulls in the sandbox machinery

    instruction = "\n".join([t.persona.opening, t.persona.closing, *t.body, *t.requirements, *extra])
    sources = [("instruction", instruction.encode())]
    sources += [(p, c.encode()) for p, c in sorted(t.env_files.items())]
    sources.append(("file names", "\n".join(sorted(t.env_files)).encode()))
    return set(collect(sources, "0")) | set(collect(sources, "A"))


def draw(t, make, *extra: str, tries: int = 200) -> str:
    """``make()`` (drawing from ``t.rng``) until its value is not among the visible candidates."""
    visible = seen(t, *extra)
    for _ in range(tries):
        v = make()
        if v not in visible:
            return v
    raise ValueError("no value left that the task does not already show")
