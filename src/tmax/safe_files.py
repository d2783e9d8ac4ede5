"""Reading and writing files that someone else made: imported tasks, dataset rows, what a sandbox wrote.

Writes go below a destination root that the caller trusts. Everything under it is opened one
component at a time from directory file descriptors with O_NOFOLLOW, so no write goes through a
symlink (not even one that an earlier file of the same import made), and a new file is created with
O_EXCL, so it never lands on something already there. Reads open with O_NOFOLLOW | O_NONBLOCK and
check ``fstat`` on the opened descriptor, so a planted symlink is never followed and a FIFO never
blocks. Files are written without setuid, setgid or sticky bits. A refusal raises :class:`UnsafeFile`,
which names the file (or row), the rule it broke and what was expected.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath

from tmax.task import MAX_FILE_BYTES, TaskError

NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
MAX_DEPTH = 64  # path components below a root; deeper trees are refused, not recursed into
REWARD_MAX_BYTES = 4096
LOG_MAX_BYTES = 1 << 20
LOG_MAX_FILES = 64
_CHUNK = 1 << 20
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class UnsafeFile(TaskError):
    """A file, path or name was refused; ``str()`` names it, the rule it broke and what was expected."""


def kind(mode: int) -> str:
    """What a mode's file type is, in words."""
    for test, name in ((stat.S_ISREG, "regular file"), (stat.S_ISDIR, "directory"), (stat.S_ISLNK, "symlink"),
                       (stat.S_ISFIFO, "FIFO"), (stat.S_ISSOCK, "socket"), (stat.S_ISCHR, "character device"),
                       (stat.S_ISBLK, "block device")):
        if test(mode):
            return name
    return "special file"


# -- names and paths ----------------------------------------------------------------------------

def check_name(name, where, field: str = "name") -> str:
    """A task name becomes a directory name: one safe path component, never '..'."""
    if not isinstance(name, str) or not NAME_RE.fullmatch(name) or ".." in name:
        raise UnsafeFile(where, f"{name!r} is not a safe task name; expected 1-128 characters of [A-Za-z0-9._-], "
                                "starting with a letter or digit, without '..'", field)
    return name


def _path_rule(rel) -> str | None:
    if not isinstance(rel, str) or not rel:
        return "is empty or not text"
    if "\0" in rel:
        return "holds a NUL byte"
    if rel.startswith("/"):
        return "is absolute"
    parts = PurePosixPath(rel).parts
    if ".." in parts:
        return "has a '..' component"
    if not parts:
        return "names the root itself"
    if len(parts) > MAX_DEPTH:
        return f"is {len(parts)} levels deep (at most {MAX_DEPTH})"
    return None


def check_rel(rel, where, field: str | None = None) -> tuple[str, ...]:
    """The components of ``rel``, a path that must stay below its root."""
    rule = _path_rule(rel)
    if rule:
        raise UnsafeFile(where, f"path {rel!r} {rule}; expected a relative path inside the task", field)
    return PurePosixPath(rel).parts


def check_link(parts: tuple[str, ...], target, where, field: str | None = None) -> str:
    """A symlink at ``parts`` may point only inside its root: relative, with '..' only as a leading
    prefix no longer than the link's depth. Links are only ever made in real directories, so with
    this rule a link never resolves (through any chain of such links) outside the root."""
    rule = None
    if not isinstance(target, str) or not target or "\0" in target:
        rule = "is empty or not text"
    elif target.startswith("/"):
        rule = "is absolute"
    else:
        comps = [c for c in target.split("/") if c not in ("", ".")]
        ups = next((i for i, c in enumerate(comps) if c != ".."), len(comps))
        if ".." in comps[ups:]:
            rule = "has a '..' after a name"
        elif ups > len(parts) - 1:
            rule = "climbs out of the task"
    if rule:
        raise UnsafeFile(where, f"symlink {'/'.join(parts)!r} -> {target!r}: the target {rule}; expected a "
                                "relative link that stays inside the task", field)
    return target


# -- reading ------------------------------------------------------------------------------------

def _refusal(st: os.stat_result, max_bytes: int | None, single_link: bool) -> str | None:
    if not stat.S_ISREG(st.st_mode):
        hint = " (symlinks are never followed)" if stat.S_ISLNK(st.st_mode) else ""
        return f"is a {kind(st.st_mode)}; expected a regular file{hint}"
    if max_bytes is not None and st.st_size > max_bytes:
        return f"is {st.st_size} bytes; expected at most {max_bytes}"
    if single_link and st.st_nlink != 1:
        return f"has {st.st_nlink} hard links; expected 1 (a hard link may be another file of the host)"
    return None


def _open_regular(path: Path, max_bytes: int | None, single_link: bool = False) -> tuple[int, os.stat_result] | None:
    """A descriptor on ``path`` if it is a regular file, None if there is nothing there."""
    try:
        st = os.lstat(path)  # before opening: opening a device node can have side effects
    except FileNotFoundError:
        return None
    why = _refusal(st, max_bytes, single_link)
    if why:
        raise UnsafeFile(path, why)
    try:
        fd = os.open(path, _READ)
    except FileNotFoundError:
        return None
    except OSError as e:
        if e.errno != errno.ELOOP:
            raise
        raise UnsafeFile(path, "became a symlink while opened; expected a regular file") from None
    st = os.fstat(fd)  # the file itself, not whatever the name pointed to a moment ago
    why = _refusal(st, max_bytes, single_link)
    if why:
        os.close(fd)
        raise UnsafeFile(path, why)
    return fd, st


def _read_upto(fd: int, n: int) -> bytes:
    chunks = []
    while n > 0 and (b := os.read(fd, min(n, _CHUNK))):
        chunks.append(b)
        n -= len(b)
    return b"".join(chunks)


def read_regular(path: str | Path, max_bytes: int, *, single_link: bool = False) -> bytes | None:
    """The bytes of a regular file of at most ``max_bytes`` (None if absent); anything else is refused."""
    opened = _open_regular(Path(path), max_bytes, single_link)
    if opened is None:
        return None
    fd, _ = opened
    try:
        data = _read_upto(fd, max_bytes + 1)
    finally:
        os.close(fd)
    if len(data) > max_bytes:
        raise UnsafeFile(path, f"grew past {max_bytes} bytes while read; expected at most {max_bytes}")
    return data


# -- writing ------------------------------------------------------------------------------------

def _subdir(dfd: int, name: str) -> int:
    try:
        os.mkdir(name, 0o755, dir_fd=dfd)
    except FileExistsError:
        pass
    return os.open(name, _DIR, dir_fd=dfd)  # ELOOP/ENOTDIR: a symlink or a file stands there


@contextmanager
def _dir_fd(root: Path, parts: tuple[str, ...], where) -> Iterator[int]:
    """A descriptor on root/parts, made as needed, with no symlink among the parts."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)  # the root is the caller's: trusted
    try:
        for i, part in enumerate(parts):
            try:
                nfd = _subdir(fd, part)
            except OSError as e:
                if e.errno not in (errno.ELOOP, errno.ENOTDIR):
                    raise
                raise UnsafeFile(where, f"path goes through {'/'.join(parts[:i + 1])!r}, which is a symlink or a "
                                        "file; expected real directories only") from None
            os.close(fd)
            fd = nfd
        yield fd
    finally:
        os.close(fd)


def _unlink(dfd: int, name: str, where) -> None:
    try:
        os.unlink(name, dir_fd=dfd)  # a symlink goes, not what it points to
    except FileNotFoundError:
        pass
    except IsADirectoryError:
        raise UnsafeFile(where, "is a directory; expected a file to replace") from None


@contextmanager
def _new_file(root: Path, rel: str, mode: int, replace: bool, where) -> Iterator[int]:
    """A write descriptor on a new file root/rel, which ends with ``mode`` minus any special bits."""
    parts = check_rel(rel, where)
    with _dir_fd(Path(root), parts[:-1], where) as dfd:
        if replace:
            _unlink(dfd, parts[-1], where)
        try:
            fd = os.open(parts[-1], _CREATE, 0o600, dir_fd=dfd)
        except FileExistsError:
            raise UnsafeFile(where, f"{rel!r} already exists (a symlink, or a file written earlier); expected "
                                    "each path once") from None
        try:
            yield fd
            os.fchmod(fd, mode & 0o777)  # never setuid, setgid or sticky
        finally:
            os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _copy_fd(src: int, dst: int, limit: int) -> bool:
    """Copy at most ``limit`` bytes; True if the source held more."""
    left = limit
    while left > 0 and (b := os.read(src, min(left, _CHUNK))):
        _write_all(dst, b)
        left -= len(b)
    return bool(os.read(src, 1))


def write_file(root: str | Path, rel: str, data: bytes, mode: int = 0o644, *, replace: bool = False,
               where=None) -> None:
    """Write ``data`` to root/rel; with ``replace``, whatever file (or symlink) is there goes first."""
    with _new_file(Path(root), rel, mode, replace, where or f"{root}/{rel}") as fd:
        _write_all(fd, data)


def make_dir(root: str | Path, rel: str, *, where=None) -> None:
    where = where or f"{root}/{rel}"
    with _dir_fd(Path(root), check_rel(rel, where), where):
        pass


def make_symlink(root: str | Path, rel: str, target, *, where=None) -> None:
    """A symlink root/rel -> target, where the target stays inside root (see :func:`check_link`)."""
    where = where or f"{root}/{rel}"
    parts = check_rel(rel, where)
    check_link(parts, target, where)
    with _dir_fd(Path(root), parts[:-1], where) as dfd:
        try:
            os.symlink(target, parts[-1], dir_fd=dfd)
        except FileExistsError:
            raise UnsafeFile(where, f"{rel!r} already exists; expected each path once") from None


def copy_file(src: str | Path, root: str | Path, rel: str, *, replace: bool = False,
              max_bytes: int = MAX_FILE_BYTES) -> None:
    """Copy the regular file ``src`` (not a symlink) to root/rel: bytes, permission bits, mtime."""
    src = Path(src)
    opened = _open_regular(src, max_bytes)
    if opened is None:
        raise UnsafeFile(src, "missing; expected a regular file")
    sfd, st = opened
    try:
        with _new_file(Path(root), rel, st.st_mode, replace, f"{root}/{rel}") as dfd:
            if _copy_fd(sfd, dfd, max_bytes):
                raise UnsafeFile(src, f"grew past {max_bytes} bytes while copied; expected at most {max_bytes}")
            os.utime(dfd, ns=(st.st_atime_ns, st.st_mtime_ns))
    finally:
        os.close(sfd)


def copy_tree(src: str | Path, root: str | Path, rel: str = "", *, skip: frozenset[str] | set[str] = frozenset()
              ) -> None:
    """Copy the directory ``src`` to root/rel ('' is root itself): regular files, directories and
    symlinks that stay inside root; a FIFO, socket or device node is refused. ``skip`` names top-level
    entries to leave out. A missing (or non-directory) ``src`` copies nothing."""
    src = Path(src)
    try:
        st = os.lstat(src)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(st.st_mode):
        raise UnsafeFile(src, "is a symlink; expected a directory (symlinks are not followed)")
    if stat.S_ISDIR(st.st_mode):
        _copy_dir(src, Path(root), rel, st, skip)


def _copy_dir(src: Path, root: Path, rel: str, st: os.stat_result, skip) -> None:
    if rel:
        make_dir(root, rel)
    for entry in sorted(os.scandir(src), key=lambda e: e.name):
        if entry.name in skip:
            continue
        child = f"{rel}/{entry.name}" if rel else entry.name
        est = entry.stat(follow_symlinks=False)
        if stat.S_ISLNK(est.st_mode):
            make_symlink(root, child, os.readlink(entry.path), where=entry.path)
        elif stat.S_ISDIR(est.st_mode):
            _copy_dir(Path(entry.path), root, child, est, frozenset())
        elif stat.S_ISREG(est.st_mode):
            copy_file(entry.path, root, child)
        else:
            raise UnsafeFile(entry.path, f"is a {kind(est.st_mode)}; expected a regular file, directory or symlink")
    if rel:
        with _dir_fd(root, check_rel(rel, src), src) as fd:
            os.fchmod(fd, st.st_mode & 0o777)


def copy_flat(src_dir: str | Path, root: str | Path, rel: str, max_bytes: int = LOG_MAX_BYTES,
              max_files: int = LOG_MAX_FILES) -> list[str]:
    """Copy the regular files directly in ``src_dir`` (written by someone untrusted) to root/rel: at
    most ``max_files``, each cut after ``max_bytes``. Returns one line per entry left out or cut."""
    try:
        names = sorted(os.listdir(src_dir))
    except FileNotFoundError:
        return []
    notes, copied = [], 0
    for i, name in enumerate(names):
        if copied == max_files:
            notes.append(f"{len(names) - i} more entries not copied: at most {max_files} files are")
            break
        try:
            if _copy_capped(Path(src_dir) / name, Path(root), f"{rel}/{name}", max_bytes, notes):
                copied += 1
        except (UnsafeFile, OSError) as e:
            notes.append(f"{name}: {e.message if isinstance(e, UnsafeFile) else e}")
    return notes


def _copy_capped(src: Path, root: Path, rel: str, max_bytes: int, notes: list[str]) -> bool:
    opened = _open_regular(src, None, single_link=True)
    if opened is None:
        return False
    fd, st = opened
    try:
        with _new_file(root, rel, 0o644, True, f"{root}/{rel}") as dfd:
            if _copy_fd(fd, dfd, max_bytes):
                notes.append(f"{src.name}: {st.st_size} bytes; cut to the first {max_bytes}")
    finally:
        os.close(fd)
    return True
