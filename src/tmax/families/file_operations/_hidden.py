"""Helpers for values that must reach the agent only through a fixture channel (no family here).

:func:`unseen` draws a value until it occurs nowhere the agent can read without the channel (the
fixture files and their paths so far, the instruction so far, and any extra text the caller passes,
such as archives built on the host). :func:`key_of` is the one-way name under which an environment
stores the thing a delivered value selects, so that the value itself never shows on disk.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable


def _seen(t, extra) -> str:
    parts = [*t.body, *t.env_files, *t.env_files.values(), *t.setup]
    for x in extra:
        parts.append(x.decode("latin-1") if isinstance(x, bytes) else str(x))
    return "\n".join(parts)


def visible(t, value: str, *extra) -> bool:
    """Does ``value`` occur in what the agent sees so far (and in ``extra``)? Capital codes are compared
    against the upper-cased text, so a word of the data cannot spell them either."""
    text = _seen(t, extra)
    return value in (text.upper() if value.isalpha() else text)


def unseen(t, draw: Callable[[], str], *extra, tries: int = 1000) -> str:
    """``draw()`` (which must use ``t.rng``) until the value is not :func:`visible`."""
    text = _seen(t, extra)
    upper = text.upper()
    for _ in range(tries):
        v = draw()
        if v not in (upper if v.isalpha() else text):
            return v
    raise ValueError("could not draw a value that the environment does not show")


def key_of(value: str, n: int = 16) -> str:
    """The first ``n`` hex digits of SHA-256 of ``value`` (as `printf %s VALUE | sha256sum` prints)."""
    return hashlib.sha256(value.encode()).hexdigest()[:n]


def key_cmd(var: str, n: int = 16) -> str:
    """The shell expression the oracle uses for :func:`key_of` of a delivered variable."""
    return f'$(printf %s "{var}" | sha256sum | cut -c1-{n})'
