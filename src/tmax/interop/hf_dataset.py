"""A corpus as a Hugging Face dataset: one parquet row per task, every file of the task inside it.

Columns: ``name``, ``instruction``, ``files`` (a list of ``{path, content: binary, mode}``: the whole
task tree, so writing the rows back gives byte-identical directories), then the nine axes and
``family``, ``seed``, ``level``, ``difficulty``, ``image`` from ``task.toml [metadata]`` (null when a
task has none). ``difficulty`` is a float when the task's is a number; ``difficulty_label`` keeps a
word such as ``medium``. Written with pyarrow in the layout the Hub expects (``data/train-*.parquet``),
so ``datasets.load_dataset("parquet", ...)`` or ``load_dataset(DIR)`` reads it.

A row is untrusted: its name must be a safe task name, each file path must stay inside the task,
only regular files and symlinks that stay inside the task are written (through :mod:`tmax.safe_files`:
never through a symlink, not even one an earlier file of the row made), and no setuid/setgid/sticky
bit survives. A bad row is refused whole, naming the row, the file and the rule.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path

from tmax.safe_files import (UnsafeFile, check_link, check_name, check_rel, kind, make_symlink, read_regular,
                             write_file)
from tmax.task import MAX_FILE_BYTES, MAX_TASK_BYTES, TaskError, load_task

AXES = ("domain", "skill_type", "primitive_skills", "persona", "language", "task_complexity",
        "command_complexity", "fixture", "verifier")
SHARD = "data/train-00000-of-00001.parquet"


def _schema():
    import pyarrow as pa

    file_t = pa.struct([("path", pa.string()), ("content", pa.binary()), ("mode", pa.int32())])
    cols = [("name", pa.string()), ("instruction", pa.string()), ("files", pa.list_(file_t))]
    cols += [(a, pa.list_(pa.string()) if a == "primitive_skills" else pa.string()) for a in AXES]
    cols += [("family", pa.string()), ("seed", pa.int64()), ("level", pa.int64()), ("difficulty", pa.float64()),
             ("difficulty_label", pa.string()), ("image", pa.string())]
    return pa.schema(cols)


def task_files(root: Path) -> list[dict]:
    """Every file (and symlink) under ``root``, sorted, with its bytes and permission bits."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]):
            p = Path(dirpath) / name
            st = p.lstat()
            link = stat.S_ISLNK(st.st_mode)
            data = os.readlink(p).encode() if link else read_regular(p, MAX_FILE_BYTES)
            if data is None:
                raise UnsafeFile(p, "vanished while read; expected the task to stay put during export")
            mode = stat.S_IFLNK | 0o777 if link else st.st_mode & 0o777  # no setuid/setgid/sticky in a row
            out.append({"path": p.relative_to(root).as_posix(), "content": data, "mode": mode})
    return sorted(out, key=lambda f: f["path"])


def task_row(path: str | Path) -> dict:
    task = load_task(path)  # validates first: a bad task is one clear error, not a bad row
    check_name(task.name, task.path / "task.toml", "task.name")  # the import names a directory after it
    meta = task.metadata
    row = {"name": task.name, "instruction": task.instruction, "files": task_files(task.path)}
    for a in AXES:
        v = meta.get(a)
        row[a] = ([str(x) for x in v] if isinstance(v, list) else [str(v)] if v is not None else None) \
            if a == "primitive_skills" else (None if v is None else str(v))
    diff = meta.get("difficulty")
    num = isinstance(diff, (int, float)) and not isinstance(diff, bool)
    row.update(family=_str(meta.get("family")), seed=_int(meta.get("seed")), level=_int(meta.get("level")),
               difficulty=float(diff) if num else None, difficulty_label=None if num or diff is None else str(diff),
               image=task.image)
    return row


def _str(v) -> str | None:
    return None if v is None else str(v)


def _int(v) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def write_dataset(rows: Iterable[dict], out: str | Path) -> Path:
    """Write rows (from :func:`task_row`) as ``OUT/data/train-00000-of-00001.parquet``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = Path(out)
    shard = out / SHARD
    shard.parent.mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_pylist(list(rows), schema=_schema())
    pq.write_table(table, shard, compression="zstd")
    return shard


def read_rows(src: str | Path) -> Iterator[dict]:
    """Rows of a parquet file, or of every ``*.parquet`` under a directory."""
    import pyarrow.parquet as pq

    src = Path(src)
    files = sorted(src.rglob("*.parquet")) if src.is_dir() else [src]
    if not files:
        raise FileNotFoundError(f"{src}: no .parquet files; expected a file or a directory holding data/*.parquet")
    for f in files:
        table = pq.read_table(f)
        for col in ("name", "files"):
            if col not in table.column_names:
                raise TaskError(f, f"no column {col!r}; expected a dataset written by tmax export hf", col)
        yield from table.to_pylist()


def _row_file(f, i: int, where: str) -> tuple[str, bytes, int]:
    """(path, content, mode) of ``files[i]``, refused unless it is a regular file or a symlink that
    stays inside the task."""
    field = f"files[{i}]"
    if not isinstance(f, dict) or not isinstance(f.get("content"), bytes) or not isinstance(f.get("mode"), int):
        raise UnsafeFile(where, "expected {path: string, content: binary, mode: int}", field)
    path, data, mode = f.get("path"), f["content"], f["mode"]
    parts = check_rel(path, where, f"{field}.path")
    if stat.S_ISLNK(mode):
        try:
            check_link(parts, data.decode(), where, f"{field}.content")
        except UnicodeDecodeError:
            raise UnsafeFile(where, f"symlink {path!r}: target is not UTF-8; expected a relative path",
                             f"{field}.content") from None
    elif stat.S_IFMT(mode) not in (0, stat.S_IFREG):
        raise UnsafeFile(where, f"{path!r} is a {kind(mode)}; expected a regular file or a symlink", f"{field}.mode")
    if len(data) > MAX_FILE_BYTES:
        raise UnsafeFile(where, f"{path!r} is {len(data)} bytes; expected at most {MAX_FILE_BYTES}", f"{field}.content")
    return "/".join(parts), data, mode


def _row_files(row: dict, where: str) -> list[tuple[str, bytes, int]]:
    files = row.get("files")
    if not isinstance(files, list):
        raise UnsafeFile(where, "expected a list of {path, content, mode}", "files")
    out = [_row_file(f, i, where) for i, f in enumerate(files)]
    seen: set[str] = set()
    for i, (path, _, _) in enumerate(out):
        if path in seen:
            raise UnsafeFile(where, f"path {path!r} appears twice; expected each path once", f"files[{i}].path")
        seen.add(path)
    total = sum(len(d) for _, d, _ in out)
    if total > MAX_TASK_BYTES:
        raise UnsafeFile(where, f"the row holds {total} bytes; expected at most {MAX_TASK_BYTES}", "files")
    return out


def write_task_tree(row: dict, out_root: str | Path) -> Path:
    """Write one row's files back as a task directory ``out_root/<name>`` (replacing one there).
    The whole row is checked first; a refused row leaves no directory behind."""
    name = row.get("name") if isinstance(row, dict) else None
    where = f"{out_root}: row {name!r}"
    check_name(name, where)
    files = _row_files(row, where)
    dest = Path(out_root) / name
    if dest.is_symlink():
        raise UnsafeFile(dest, "is a symlink; expected a directory the import may replace")
    if dest.exists():
        shutil.rmtree(dest)  # a fresh tree: nothing of an earlier row stays to be written through
    dest.mkdir(parents=True)
    try:
        for path, data, mode in files:
            if stat.S_ISLNK(mode):
                make_symlink(dest, path, data.decode(), where=f"{where}: {path}")
            else:
                write_file(dest, path, data, mode, where=f"{where}: {path}")
    except BaseException:
        shutil.rmtree(dest, ignore_errors=True)
        raise
    return dest
