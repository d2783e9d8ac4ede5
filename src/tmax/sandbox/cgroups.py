"""Per-sandbox cgroups for memory and process limits, and for killing every process on close.

Works with cgroup v2 (memory + pids controllers in the unified tree) and with the v1 hierarchies
that hybrid hosts still use (``/sys/fs/cgroup/memory``, ``/sys/fs/cgroup/pids``). Where neither is
writable (no root), :func:`create` returns None and sandboxes fall back to rlimits.
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")
PARENT = "tmax"


def _writable(p: Path) -> bool:
    return p.is_dir() and os.access(p, os.W_OK)


def _mode() -> str | None:
    ctrl = ROOT / "cgroup.controllers"
    if ctrl.exists():
        have = ctrl.read_text().split()
        if {"memory", "pids"} <= set(have) and _writable(ROOT):
            return "v2"
    if _writable(ROOT / "memory") and _writable(ROOT / "pids"):
        return "v1"
    return None


MODE = _mode()


@dataclass
class Cgroup:
    dirs: list[Path]  # one per hierarchy (v2: one)

    @property
    def procs_files(self) -> list[str]:
        return [str(d / "cgroup.procs") for d in self.dirs]

    def pids(self) -> set[int]:
        out: set[int] = set()
        for d in self.dirs:
            try:
                out.update(int(x) for x in (d / "cgroup.procs").read_text().split())
            except OSError:
                pass
        return out

    def memory_failcnt(self) -> int:
        """How often the memory limit was hit (OOM pressure), for reporting. Some kernels leave v1's
        memory.failcnt at 0 even when the limit OOM-kills, so the OOM-kill count is read too."""
        hits = 0
        for d in self.dirs:
            for name in ("memory.failcnt", "memory.events", "memory.oom_control"):
                f = d / name
                if f.exists():
                    text = f.read_text()
                    if name == "memory.failcnt":
                        hits = max(hits, int(text.strip() or 0))
                    for line in text.splitlines():
                        if line.startswith(("max ", "oom_kill ")):
                            hits = max(hits, int(line.split()[1]))
        return hits

    def kill_all(self, deadline_s: float = 5.0) -> bool:
        """SIGKILL every process until the group is empty (a fork bomb races us; the pids limit
        bounds it). Returns True when empty."""
        kill_file = self.dirs[0] / "cgroup.kill"
        if MODE == "v2" and kill_file.exists():
            try:
                kill_file.write_text("1")
            except OSError:
                pass
        end = time.monotonic() + deadline_s
        while time.monotonic() < end:
            pids = self.pids()
            if not pids:
                return True
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.0005)
        return not self.pids()

    def remove(self) -> None:
        for d in self.dirs:
            for _ in range(200):
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.0005)


def create(name: str, memory_bytes: int | None, max_pids: int | None) -> Cgroup | None:
    if MODE is None:
        return None
    try:
        if MODE == "v2":
            parent = ROOT / PARENT
            if not parent.exists():
                parent.mkdir()
                (ROOT / "cgroup.subtree_control").write_text("+memory +pids")
                (parent / "cgroup.subtree_control").write_text("+memory +pids")
            d = parent / name
            d.mkdir()
            if memory_bytes:
                (d / "memory.max").write_text(str(memory_bytes))
                swap = d / "memory.swap.max"
                if swap.exists():
                    swap.write_text("0")
            if max_pids:
                (d / "pids.max").write_text(str(max_pids))
            return Cgroup([d])
        mem = ROOT / "memory" / PARENT / name
        pids = ROOT / "pids" / PARENT / name
        mem.mkdir(parents=True)
        pids.mkdir(parents=True)
        if memory_bytes:
            (mem / "memory.limit_in_bytes").write_text(str(memory_bytes))
            memsw = mem / "memory.memsw.limit_in_bytes"
            if memsw.exists():
                try:
                    memsw.write_text(str(memory_bytes))
                except OSError:
                    pass
        if max_pids:
            (pids / "pids.max").write_text(str(max_pids))
        return Cgroup([mem, pids])
    except OSError:
        return None


def leftovers() -> list[Path]:
    """Sandbox cgroups that still exist (a clean host has none)."""
    out: list[Path] = []
    for base in ([ROOT / PARENT] if MODE == "v2" else [ROOT / "memory" / PARENT, ROOT / "pids" / PARENT]):
        if base.is_dir():
            out.extend(p for p in base.iterdir() if p.is_dir())
    return out
