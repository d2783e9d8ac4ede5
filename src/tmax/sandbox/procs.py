"""The host's process table, read from /proc: for finding and killing a sandbox's processes."""

from __future__ import annotations

import os
import subprocess


def proc_table() -> dict[int, tuple[int, int]]:
    """host pid -> (parent pid, innermost namespace pid)."""
    table: dict[int, tuple[int, int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as f:
                ppid = nspid = 0
                for line in f:
                    if line.startswith("PPid:"):
                        ppid = int(line.split()[1])
                    elif line.startswith("NSpid:"):
                        nspid = int(line.split()[-1])
                        break
            table[int(entry)] = (ppid, nspid)
        except (OSError, ValueError, IndexError):
            continue
    return table


def descendants(table: dict[int, tuple[int, int]], root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    out, stack = [], [root]
    while stack:
        for c in children.get(stack.pop(), []):
            out.append(c)
            stack.append(c)
    return out


def exit_status(proc: subprocess.Popen, wait: float) -> int | None:
    """How a sandbox's main process exited (its outer loop's status, as a shell reports it: 128+N
    when killed by signal N), or None if it still runs after ``wait`` seconds."""
    try:
        code = proc.wait(timeout=wait)
    except subprocess.TimeoutExpired:
        return None
    return 128 - code if code < 0 else code
