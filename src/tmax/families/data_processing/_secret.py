"""Shared helpers for data_processing families whose delivered value is a secret (a key, salt or code
that never occurs in the data): the agent can only get it through the fixture channel. No family is
registered here."""

from __future__ import annotations

import hashlib

from tmax.families.base import TaskBuilder


def tag(text: str, n: int) -> str:
    """The first ``n`` hex digits of the SHA-256 of ``text`` (UTF-8)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:n]


def fresh_code(t: TaskBuilder, taken: list[str] | tuple[str, ...] = (), words: int = 2) -> str:
    """A code from ``t.code(words)`` that differs from every code in ``taken``."""
    while True:
        c = t.code(words)
        if c not in taken:
            return c


def unseen(code: str, texts) -> bool:
    """True when ``code`` occurs in none of ``texts`` (str or bytes), case-insensitively: not as a run of
    capitals, not as a word, not inside one."""
    for text in texts:
        if isinstance(text, bytes):
            text = text.decode("utf-8", "replace")
        if code in text.upper():
            return False
    return True
