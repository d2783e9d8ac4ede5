"""Export a sandbox's writable layer (its tmpfs) to disk, as an overlay layer for a later sandbox.

What a sandbox wrote is hostile: only directories, regular files, symlinks (copied as links, never
followed) and overlayfs whiteouts are exported; FIFOs, sockets and device nodes are dropped; file
capabilities and other extended attributes are dropped (overlayfs' opaque-directory marks are kept);
owners are shifted back from the sandbox's host range to their plain values (see ``identity``).
Modes are kept exactly, setuid bits included (a task may build or grade them; inside, no_new_privs
makes them inert), so a layer is stored the way an image is: only under directories that are
private to root (``private_dir``), where no host user can reach, let alone run, a file of it. By the time this runs every process
of the sandbox is dead and the tmpfs is reachable only through our fd, so nothing changes under us.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from tmax.sandbox import identity

OPAQUE_XATTRS = ("trusted.overlay.opaque", "user.overlay.opaque")


MAX_DEPTH = 200  # deeper directories are not exported (a deep chain would break recursive host tools)


def private_dir(path: Path) -> Path:
    """``path`` made (if needed) and kept 0700: where exported layers may live."""
    path.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0 and os.stat(path).st_mode & 0o077:
        os.chmod(path, 0o700)
    return path


def export(src: str, dest: Path) -> int:
    """Copy the entry ``src`` (a directory, file, link or whiteout) to ``dest``; returns bytes of data
    written (holes of sparse files stay holes, so the disk never holds more than the tmpfs did)."""
    shift = identity.shifted()
    links: dict[tuple[int, int], str] = {}  # (device, inode) -> first copy: hard links stay links
    total = 0
    dirs: list[tuple[str, str, os.stat_result]] = []  # finished after their contents (mode, times)
    stack = [(src, str(dest), 0)]
    while stack:
        s, d, depth = stack.pop()
        st = os.lstat(s)
        if stat.S_ISDIR(st.st_mode):
            if depth > MAX_DEPTH:
                continue
            os.mkdir(d, 0o700)
            dirs.append((s, d, st))
            with os.scandir(s) as it:
                stack.extend((e.path, os.path.join(d, e.name), depth + 1) for e in it)
        else:
            total += _copy_entry(s, d, st, shift, links)
    for s, d, st in reversed(dirs):  # children before parents: a parent's mtime is set last
        for name in OPAQUE_XATTRS:
            try:
                os.setxattr(d, name, os.getxattr(s, name, follow_symlinks=False), follow_symlinks=False)
            except OSError:
                pass
        _finish(d, st, shift)
    return total


def _finish(path: str, st: os.stat_result, shift: bool, link: bool = False) -> None:
    if shift:
        os.lchown(path, identity.to_stored(st.st_uid), identity.to_stored(st.st_gid))
    if not link:
        os.chmod(path, stat.S_IMODE(st.st_mode))  # after chown, which clears setuid bits
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns), follow_symlinks=not link)


def _copy_entry(src: str, dst: str, st: os.stat_result, shift: bool, links: dict) -> int:
    mode = st.st_mode
    if stat.S_ISREG(mode):
        if st.st_nlink > 1:
            first = links.setdefault((st.st_dev, st.st_ino), dst)
            if first != dst:
                os.link(first, dst)
                return 0
        written = _copy_data(src, dst, st.st_size)
        _finish(dst, st, shift)
        return written
    if stat.S_ISLNK(mode):
        os.symlink(os.readlink(src), dst)
        _finish(dst, st, shift, link=True)
        return 0
    if stat.S_ISCHR(mode) and st.st_rdev == 0 and os.geteuid() == 0:  # an overlayfs whiteout
        os.mknod(dst, stat.S_IFCHR | 0o600, 0)
    return 0  # FIFOs, sockets, devices: never exported


def _copy_data(src: str, dst: str, size: int) -> int:
    """Copy only the data extents (SEEK_DATA/SEEK_HOLE): a sparse file stays sparse."""
    fi = os.open(src, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        fo = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            written, pos = 0, 0
            while pos < size:
                try:
                    start = os.lseek(fi, pos, os.SEEK_DATA)
                except OSError:  # ENXIO: only a hole is left
                    break
                end = os.lseek(fi, start, os.SEEK_HOLE)
                os.lseek(fi, start, os.SEEK_SET)
                os.lseek(fo, start, os.SEEK_SET)
                left = end - start
                while left > 0:
                    chunk = os.read(fi, min(left, 1 << 20))
                    if not chunk:
                        break
                    os.write(fo, chunk)
                    left -= len(chunk)
                    written += len(chunk)
                pos = end
            os.ftruncate(fo, size)
            return written
        finally:
            os.close(fo)
    finally:
        os.close(fi)
