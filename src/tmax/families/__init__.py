"""Procedural task families, one per file, grouped by domain. Importing this package registers them."""

from __future__ import annotations

import importlib
import pkgutil

from tmax.families.base import REGISTRY, Family, TaskBuilder, build_task, register

_loaded = False
LOAD_ERRORS: dict[str, str] = {}  # module -> error, for modules that failed to import or validate


def load_all() -> dict[str, Family]:
    """Import every family module (once) and return the registry. A module that fails to import is
    recorded in LOAD_ERRORS and skipped, so one broken family never takes the others down."""
    global _loaded
    if not _loaded:
        for sub in sorted(m.name for m in pkgutil.iter_modules(__path__) if m.ispkg):
            try:
                pkg = importlib.import_module(f"{__name__}.{sub}")
            except Exception as e:  # noqa: BLE001
                LOAD_ERRORS[f"{__name__}.{sub}"] = f"{type(e).__name__}: {e}"
                continue
            for mod in sorted(m.name for m in pkgutil.iter_modules(pkg.__path__)):
                try:
                    importlib.import_module(f"{pkg.__name__}.{mod}")
                except Exception as e:  # noqa: BLE001
                    LOAD_ERRORS[f"{pkg.__name__}.{mod}"] = f"{type(e).__name__}: {e}"
        _loaded = True
    return REGISTRY


__all__ = ["LOAD_ERRORS", "REGISTRY", "Family", "TaskBuilder", "build_task", "load_all", "register"]
