"""Names to import paths, resolved once at the edge: a short name from a registry, or a user's own
``package.module:Attribute`` (so a class of one's own needs no registration)."""

from __future__ import annotations

import importlib


def load(registry: dict[str, str], name: str, what: str):
    """The object ``name`` stands for: ``registry[name]``, else ``name`` itself as ``pkg.mod:Attr``."""
    path = registry.get(name, name)
    module, sep, attr = path.partition(":")
    if not sep or not module or not attr:
        choices = f"one of {', '.join(sorted(registry))} or " if registry else ""
        raise ValueError(f"unknown {what} {name!r}; expected {choices}an import path package.module:Attribute")
    try:
        found = importlib.import_module(module)
    except ImportError as e:
        raise ValueError(f"{what} {name!r}: cannot import {module!r}: {e}") from None
    try:
        return getattr(found, attr)
    except AttributeError:
        raise ValueError(f"{what} {name!r}: module {module!r} has no attribute {attr!r}") from None
