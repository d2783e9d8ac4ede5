"""Shared helpers for the file_operations families (no family is registered here).

A file tree is described as a list of entries and shipped as JSON; ``MKTREE`` (a standalone script)
materialises it at environment build time, and :func:`host_tree` materialises the very same spec in a
temporary directory on the host so that the truth is computed by running the reference on a real tree.

Entry forms (paths relative to the root, ``/`` separated):
    ["d", path, mode, mtime]          directory
    ["f", path, text, mode, mtime]    regular file (UTF-8 text)
    ["s", path, size, mode, mtime]    regular file of ``size`` filler bytes (the path, repeated)
    ["l", path, target]               symbolic link
    ["h", path, existing_path]        hard link to an earlier entry
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import tempfile
from collections.abc import Iterator

from tmax.families.programs import run_python
from tmax.families.unseen import distinct, key_cmd, key_of, unseen

MKTREE = r'''
import json
import os
import sys


def mktree(spec, root):
    dirs = []
    for e in spec:
        kind, rel = e[0], e[1]
        p = os.path.join(root, rel)
        parent = os.path.dirname(p)
        if parent:
            os.makedirs(parent, exist_ok=True)
        if kind == "d":
            os.makedirs(p, exist_ok=True)
            os.chmod(p, e[2])
            dirs.append((p, e[3]))
        elif kind == "f":
            with open(p, "wb") as f:
                f.write(e[2].encode("utf-8"))
            os.chmod(p, e[3])
            os.utime(p, (e[4], e[4]))
        elif kind == "s":
            fill = (rel + "\n").encode("utf-8")
            with open(p, "wb") as f:
                f.write((fill * (e[2] // len(fill) + 1))[:e[2]])
            os.chmod(p, e[3])
            os.utime(p, (e[4], e[4]))
        elif kind == "l":
            os.symlink(e[2], p)
        elif kind == "h":
            os.link(os.path.join(root, e[2]), p)
    for p, mtime in sorted(dirs, key=lambda d: -d[0].count(os.sep)):
        os.utime(p, (mtime, mtime))


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as f:
        mktree(json.load(f), sys.argv[2])
'''

_NS = run_python(MKTREE)  # our own helper, shared with the environment


def spec_json(spec: list) -> str:
    return json.dumps(spec, ensure_ascii=True, separators=(",", ":")) + "\n"


def ship_tree(t, spec: list, root: str, tag: str) -> None:
    """Add the spec and the builder as fixtures and a setup step that builds the tree under ``root``
    and removes the fixtures again (the agent sees only the tree)."""
    t.add_file(f"/tmp/fo-fixture/{tag}.json", spec_json(spec))
    t.add_file("/tmp/fo-fixture/mktree.py", MKTREE.lstrip("\n"))
    t.add_setup(f"mkdir -p {root} && python3 /tmp/fo-fixture/mktree.py /tmp/fo-fixture/{tag}.json {root} && "
                f"rm -f /tmp/fo-fixture/{tag}.json")


def finish_setup(t) -> None:
    t.add_setup("rm -rf /tmp/fo-fixture")


@contextlib.contextmanager
def host_tree(spec: list, rebase: str | None = None) -> Iterator[str]:
    """Materialise ``spec`` in a temporary directory on the host; yields the root. ``rebase``: the
    sandbox path the tree is built at; absolute symlink targets under it are pointed at the host copy."""
    with tempfile.TemporaryDirectory(prefix="tmax-fo-") as d:
        if rebase:
            pre = rebase.rstrip("/") + "/"
            spec = [["l", e[1], d + "/" + e[2][len(pre):]] if e[0] == "l" and e[2].startswith(pre) else e
                    for e in spec]
        _NS["mktree"](spec, d)
        yield d


def epoch(y: int, m: int, d: int, hh: int = 0, mm: int = 0, ss: int = 0) -> int:
    return int(_dt.datetime(y, m, d, hh, mm, ss, tzinfo=_dt.timezone.utc).timestamp())


WORDS = ("alpha bravo budget cargo delta draft ember final forest harbor index invoice ledger lunar march "
         "memo notes orbit order photo plan quarter report review river sales scan summary survey tally "
         "ticket travel update vendor winter").split()


def _reroot(e, key, cut):
    return [e[0], key + e[1][cut:], *e[2:]]


def keyed_sides(t, sides, prefix, reroot=_reroot):
    """Draw the delivered name clear of every side, and other names for the other sides; return the name, its
    key and side i's entries re-rooted (``reroot(entry, key, cut)``) from the placeholder folder ``prefix +
    str(i)`` to the key of its name, in key order so that creation order (inode numbers) does not single the
    target out."""
    name = unseen(t, lambda: t.code(2), *(spec_json(s) for s in sides))
    keys = [key_of(n) for n in [name, *distinct(lambda: t.code(2), len(sides) - 1, [name])]]
    cut = len(prefix) + 1
    return name, keys[0], [reroot(e, keys[i], cut) for i in sorted(range(len(keys)), key=keys.__getitem__)
                           for e in sides[i]]


def report_and_ship(t, spec, src, where, key):
    """The reference's report on the keyed folder of a host copy of the tree; the tree shipped to ``where``."""
    with host_tree(spec) as root:
        truth = run_python(src)["report"](f"{root}/{key}")
    ship_tree(t, spec, where, where.rsplit("/", 1)[1])
    finish_setup(t)
    return truth


def solve_keyed(t, who, root, script, src, out):
    """The oracle: find the keyed folder of the delivered name under ``root`` and run the reference on it."""
    t.add_solution_file(script, src)
    t.solve(f'test -n "{who}"\nmkdir -p /app/out\nkey={key_cmd(who)}\ntest -d "{root}/$key"\n'
            f'python3 /solution/{script} "{root}/$key" > {out}')
