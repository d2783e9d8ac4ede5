"""Where tmax keeps its state, and the file locks that serialise builds across processes."""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path


def tmax_home() -> Path:
    """Caches (images, layers, locks): $TMAX_HOME, else ~/.cache/tmax."""
    home = Path(os.environ.get("TMAX_HOME") or Path.home() / ".cache" / "tmax")
    home.mkdir(parents=True, exist_ok=True)
    return home


def run_dir() -> Path:
    """Where sandbox directories live; private to tmax (0700) when root."""
    base = Path(os.environ.get("TMAX_RUN_DIR") or (Path(tempfile.gettempdir()) / "tmax-sandboxes"))
    base.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0 and os.stat(base).st_mode & 0o077:
        os.chmod(base, 0o700)
    return base


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """An exclusive flock on ``path`` (created if needed) for the duration of the block."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def named_lock(name: str):
    """A lock under $TMAX_HOME/locks."""
    return file_lock(tmax_home() / "locks" / name)


def remove_tree(path: Path, tries: int = 50) -> None:
    """Remove a sandbox's directory, retrying while its last processes' mounts and files let go."""
    for _ in range(tries):
        shutil.rmtree(path, ignore_errors=True)
        if not path.exists():
            return
        time.sleep(0.02)
