"""Values a fixture delivers, drawn so that the agent can get them only through the fixture's channel.

A delivered value must occur nowhere the agent can read without the channel: not in the instruction,
the environment's files, their names or the setup commands, not under the decodings a
shortcut-seeking agent would try (:func:`tmax.channels.collect`: XOR and shifts over binaries,
integer lists, hex and base64, Caesar shifts, upper-casing), and, for a number, not next to a number
the task shows (guessing a neighbour would win). :func:`unseen` draws such a value; :func:`key_of`
names a thing the value selects without the value showing on disk. No family is registered here.
"""

from __future__ import annotations

import bisect
import hashlib
import re
from collections.abc import Callable, Iterable

_DIGITS = re.compile(r"[0-9]+")


def shown(t, *extra: str | bytes) -> list[tuple[str, bytes]]:
    """What the agent of the task being built in ``t`` sees so far, as (name, bytes) sources; ``extra``
    is text still to be shown (worked examples, archives built on the host)."""
    instruction = "\n".join([t.persona.opening, t.persona.closing, *t.body, *t.requirements])
    sources = [("instruction", instruction.encode())]
    sources += [(p, c.encode() if isinstance(c, str) else c) for p, c in sorted(t.env_files.items())]
    sources.append(("file names", "\n".join(sorted(t.env_files)).encode()))
    sources.append(("setup", "\n".join(t.setup).encode()))
    sources += [(f"extra {i}", x if isinstance(x, bytes) else str(x).encode()) for i, x in enumerate(extra)]
    return sources


def candidates(sources: list[tuple[str, bytes]]) -> set[str]:
    """Every value of a delivered shape (a run of digits, a run of capitals) that ``sources`` show."""
    from tmax.channels import collect  # late: it pulls in the sandbox machinery

    return set(collect(sources, "0")) | set(collect(sources, "A"))


def visible(t, value: str, *extra: str | bytes) -> bool:
    """Can ``value`` be read off what the agent sees? Capital codes are also looked for inside the
    upper-cased text, so no word of the data spells them."""
    sources = shown(t, *extra)
    if value.isalpha():
        if any(value in data.decode("latin-1").upper() for _, data in sources):
            return True
    return value in candidates(sources)


def unseen(t, draw: Callable[[], str], *extra: str | bytes, near: float = 0, tries: int = 200) -> str:
    """``draw()`` (which must use ``t.rng``) until its value cannot be read off what the agent sees;
    a run of digits must also lie more than ``near`` from every number shown. A family whose draws
    all show gets a :class:`FamilyError` naming it (its case must change), never an endless loop."""
    from tmax.taxonomy import FamilyError

    sources = shown(t, *extra)
    found = candidates(sources)
    upper = "\n".join(data.decode("latin-1").upper() for _, data in sources)
    numbers = visible_numbers(*(data.decode("latin-1") for _, data in sources)) if near else []
    for _ in range(tries):
        v = draw()
        if v in found or (v.isalpha() and v in upper):
            continue
        if near and v.isdigit() and not clear_of(int(v), numbers, near):
            continue
        return v
    raise FamilyError(f"family {t.axes.family}: {tries} draws of the delivered value were all visible "
                      "in the task without its channel")


def hidden(t, value: int, gap: float, *extra: str | bytes) -> bool:
    """Is ``value``, a number the shown data were made with (so :func:`unseen` could not draw it
    before them), unreadable without the channel and more than ``gap`` from every number shown?
    Callers redraw a bounded number of times while it is not."""
    numbers = visible_numbers(*(data.decode("latin-1") for _, data in shown(t, *extra)))
    return clear_of(value, numbers, gap) and not visible(t, str(value), *extra)


def distinct(draw: Callable[[], str], n: int, taken: Iterable[str] = (), tries: int = 1000) -> list[str]:
    """``n`` different values of ``draw()``, none in ``taken``, in draw order (bounded: a draw whose
    space is too small is the family's error, not an endless loop)."""
    from tmax.taxonomy import FamilyError

    out: list[str] = []
    seen = set(taken)
    for _ in range(tries):
        if len(out) == n:
            break
        v = draw()
        if v not in seen:
            seen.add(v)
            out.append(v)
    if len(out) < n:
        raise FamilyError(f"distinct: only {len(out)} different values of {n} in {tries} draws")
    return out


def visible_numbers(*texts: str) -> list[int]:
    """Every digit run in ``texts`` as an integer, also with a repeated first or last digit stripped
    (how padded fields are read); sorted, without repeats."""
    found: set[int] = set()
    for text in texts:
        for run in _DIGITS.findall(text):
            for r in (run, run.rstrip(run[-1]), run.lstrip(run[0])):
                if r:
                    found.add(int(r))
    return sorted(found)


def clear_of(value: int, numbers: list[int], gap: float) -> bool:
    """No number in ``numbers`` (sorted) lies within ``gap`` of ``value`` (the value itself included)."""
    i = bisect.bisect_left(numbers, value - gap)
    return i == len(numbers) or numbers[i] > value + gap


def key_of(value: str, n: int = 16) -> str:
    """The first ``n`` hex digits of SHA-256 of ``value`` (what `printf %s VALUE | sha256sum` prints):
    the name under which an environment stores what a delivered value selects."""
    return hashlib.sha256(value.encode()).hexdigest()[:n]


def key_cmd(var: str, n: int = 16) -> str:
    """The shell expression with which the oracle computes :func:`key_of` of a delivered variable."""
    return f'$(printf %s "{var}" | sha256sum | cut -c1-{n})'
