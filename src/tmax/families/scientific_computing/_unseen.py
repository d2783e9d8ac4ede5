"""Numbers an agent can read off a task's visible text, so that a delivered number can be drawn clear of
them: a value that also occurs in the data (or next to one that does) could be had by guessing."""

from __future__ import annotations

import bisect
import re

_DIGITS = re.compile(r"[0-9]+")


def visible_numbers(*texts: str) -> list[int]:
    """Every digit run in ``texts`` as an integer, with the run also stripped of a repeated first or
    last digit (how padded fields are commonly read); sorted, without repeats."""
    found: dict[int, None] = {}
    for text in texts:
        for run in _DIGITS.findall(text):
            for r in (run, run.rstrip(run[-1]), run.lstrip(run[0])):
                if r:
                    found[int(r)] = None
    return sorted(found)


def clear_of(value: int, numbers: list[int], gap: float) -> bool:
    """True when no number in ``numbers`` (sorted) lies within ``gap`` of ``value`` (the value itself
    included)."""
    i = bisect.bisect_left(numbers, value - gap)
    return i == len(numbers) or numbers[i] > value + gap
