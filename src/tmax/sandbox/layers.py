"""Export a sandbox's writable layer (its tmpfs) to disk, as an overlay layer for a later sandbox.

What a sandbox wrote is hostile: only directories, regular files, symlinks (copied as links, never
followed) and overlayfs whiteouts are exported; FIFOs, sockets and device nodes are dropped; setuid
and setgid bits and file capabilities are stripped; owners are shifted back from the sandbox's host
range to their plain values (see ``identity``), so a layer on disk holds nothing that is privileged
for any host user. Overlayfs' opaque-directory marks are kept. By the time this runs every process
of the sandbox is dead and the tmpfs is reachable only through our fd, so nothing changes under us.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

from tmax.sandbox import identity

OPAQUE_XATTRS = ("trusted.overlay.opaque", "user.overlay.opaque")


def export(src: str, dest: Path) -> int:
    """Copy the entry ``src`` (a directory, file, link or whiteout) to ``dest``; returns bytes copied."""
    return _copy(src, str(dest), identity.shifted(), {})


def _owner(path: str, st: os.stat_result, shift: bool) -> None:
    if shift:
        os.lchown(path, identity.to_stored(st.st_uid), identity.to_stored(st.st_gid))


def _copy(src: str, dst: str, shift: bool, links: dict[tuple[int, int], str]) -> int:
    """``links``: (device, inode) -> first copy, so hard links stay hard links."""
    st = os.lstat(src)
    mode = st.st_mode
    if stat.S_ISDIR(mode):
        os.mkdir(dst, 0o700)
        total = 0
        with os.scandir(src) as it:
            for e in it:
                total += _copy(e.path, os.path.join(dst, e.name), shift, links)
        for name in OPAQUE_XATTRS:
            try:
                value = os.getxattr(src, name, follow_symlinks=False)
            except OSError:
                continue
            try:
                os.setxattr(dst, name, value, follow_symlinks=False)
            except OSError:
                pass
        _owner(dst, st, shift)
        os.chmod(dst, stat.S_IMODE(mode) & ~0o6000)
        os.utime(dst, ns=(st.st_atime_ns, st.st_mtime_ns))
        return total
    if stat.S_ISREG(mode):
        if st.st_nlink > 1:
            first = links.setdefault((st.st_dev, st.st_ino), dst)
            if first != dst:
                os.link(first, dst)
                return 0
        fd = os.open(src, os.O_RDONLY | os.O_NOFOLLOW)
        try:
            out = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            try:
                with os.fdopen(fd, "rb", closefd=False) as fi, os.fdopen(out, "wb", closefd=False) as fo:
                    shutil.copyfileobj(fi, fo, 1 << 20)
            finally:
                os.close(out)
        finally:
            os.close(fd)
        _owner(dst, st, shift)
        os.chmod(dst, stat.S_IMODE(mode) & ~0o6000)  # after chown, which may keep the bits
        os.utime(dst, ns=(st.st_atime_ns, st.st_mtime_ns))
        return st.st_size
    if stat.S_ISLNK(mode):
        os.symlink(os.readlink(src), dst)
        _owner(dst, st, shift)
        os.utime(dst, ns=(st.st_atime_ns, st.st_mtime_ns), follow_symlinks=False)
        return 0
    if stat.S_ISCHR(mode) and st.st_rdev == 0 and os.geteuid() == 0:  # an overlayfs whiteout
        os.mknod(dst, stat.S_IFCHR | 0o600, 0)
        return 0
    return 0  # FIFOs, sockets, devices: never exported
