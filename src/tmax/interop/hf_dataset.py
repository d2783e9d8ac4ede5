"""A corpus as a Hugging Face dataset: one parquet row per task, every file of the task inside it.

Columns: ``name``, ``instruction``, ``files`` (a list of ``{path, content: binary, mode}``: the whole
task tree, so writing the rows back gives byte-identical directories), then the nine axes and
``family``, ``seed``, ``level``, ``difficulty``, ``image`` from ``task.toml [metadata]`` (null when a
task has none). ``difficulty`` is a float when the task's is a number; ``difficulty_label`` keeps a
word such as ``medium``. Written with pyarrow in the layout the Hub expects (``data/train-*.parquet``),
so ``datasets.load_dataset("parquet", ...)`` or ``load_dataset(DIR)`` reads it.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path

from tmax.task import TaskError, load_task

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
            data = os.readlink(p).encode() if stat.S_ISLNK(st.st_mode) else p.read_bytes()
            mode = stat.S_IFLNK | 0o777 if stat.S_ISLNK(st.st_mode) else stat.S_IMODE(st.st_mode)
            out.append({"path": p.relative_to(root).as_posix(), "content": data, "mode": mode})
    return sorted(out, key=lambda f: f["path"])


def task_row(path: str | Path) -> dict:
    task = load_task(path)  # validates first: a bad task is one clear error, not a bad row
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


def write_task_tree(row: dict, out_root: str | Path) -> Path:
    """Write one row's files back as a task directory ``out_root/<name>``."""
    name = row["name"]
    if not name or "/" in name or name in (".", ".."):
        raise TaskError(out_root, f"row name {name!r} is not a directory name", "name")
    dest = Path(out_root) / name
    dest.mkdir(parents=True, exist_ok=True)
    root = dest.resolve()
    for f in row["files"]:
        p = dest / f["path"]
        parent = p.parent.resolve()
        if parent != root and root not in parent.parents:
            raise TaskError(dest, f"file path {f['path']!r} leaves the task directory", "files.path")
        p.parent.mkdir(parents=True, exist_ok=True)
        if stat.S_ISLNK(f["mode"]):
            if p.is_symlink():
                p.unlink()
            os.symlink(f["content"].decode(), p)
        else:
            p.write_bytes(f["content"])
            p.chmod(f["mode"] & 0o7777)
    return dest
