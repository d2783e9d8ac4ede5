"""Procedural task families, one per file, grouped by domain. Importing this package registers them."""

from __future__ import annotations

import importlib
import pkgutil

from tmax.families.base import REGISTRY, Family, TaskBuilder, build_task, register

_loaded = False


def load_all() -> dict[str, Family]:
    """Import every family module (once) and return the registry."""
    global _loaded
    if not _loaded:
        for sub in sorted(m.name for m in pkgutil.iter_modules(__path__) if m.ispkg):
            pkg = importlib.import_module(f"{__name__}.{sub}")
            for mod in sorted(m.name for m in pkgutil.iter_modules(pkg.__path__)):
                importlib.import_module(f"{pkg.__name__}.{mod}")
        _loaded = True
    return REGISTRY


__all__ = ["REGISTRY", "Family", "TaskBuilder", "build_task", "load_all", "register"]
