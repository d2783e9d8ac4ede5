"""The seccomp filter every native sandbox runs under: deny what a terminal task never needs.

A classic BPF program (no libseccomp): calls from another ABI (i386, x32) kill the process; the
denied calls fail with EPERM; everything else is allowed. Denied: kernel keyrings (add_key,
request_key, keyctl), bpf, perf_event_open, userfaultfd, kernel modules, kexec, reboot, swap, acct,
quotactl, syslog, setting the clock, open_by_handle_at, io_uring, the new mount API, pidfd_getfd
(no taking another process's descriptors, such as the shell's own pipes), new user
namespaces (clone/unshare with CLONE_NEWUSER; clone3 answers ENOSYS so libc falls back to clone),
and the terminal ioctls that inject input or drive the console (TIOCSTI, TIOCLINUX).
"""

from __future__ import annotations

import errno
import os
import struct

AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
DENIED = {
    "x86_64": {"add_key": 248, "request_key": 249, "keyctl": 250, "bpf": 321, "perf_event_open": 298,
               "userfaultfd": 323, "init_module": 175, "finit_module": 313, "delete_module": 176,
               "kexec_load": 246, "kexec_file_load": 320, "reboot": 169, "swapon": 167, "swapoff": 168,
               "acct": 163, "quotactl": 179, "syslog": 103, "settimeofday": 164, "clock_settime": 227,
               "clock_adjtime": 305, "open_by_handle_at": 304, "iopl": 172, "ioperm": 173,
               "lookup_dcookie": 212},
    "aarch64": {"add_key": 217, "request_key": 218, "keyctl": 219, "bpf": 280, "perf_event_open": 241,
                "userfaultfd": 282, "init_module": 105, "finit_module": 273, "delete_module": 106,
                "kexec_load": 104, "kexec_file_load": 294, "reboot": 142, "swapon": 224, "swapoff": 225,
                "acct": 89, "quotactl": 60, "syslog": 116, "settimeofday": 170, "clock_settime": 112,
                "clock_adjtime": 266, "open_by_handle_at": 265, "lookup_dcookie": 18},
}
COMMON_DENIED = {"io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427, "open_tree": 428,
                 "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433,
                 "mount_setattr": 442, "pidfd_getfd": 438}
CALLS = {"x86_64": {"ioctl": 16, "clone": 56, "unshare": 272, "clone3": 435},
         "aarch64": {"ioctl": 29, "clone": 220, "unshare": 97, "clone3": 435}}
TIOCSTI, TIOCLINUX = 0x5412, 0x541C
CLONE_NEWUSER = 0x10000000

RET_ALLOW, RET_ERRNO, RET_KILL_PROCESS = 0x7FFF0000, 0x00050000, 0x80000000
LD_W_ABS, JEQ_K, JSET_K, JGE_K, RET_K = 0x20, 0x15, 0x45, 0x35, 0x06
OFF_NR, OFF_ARCH, OFF_ARG0, OFF_ARG1 = 0, 4, 16, 24  # struct seccomp_data; low words (little-endian)


def _ins(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("HBBI", code, jt, jf, k)


def program(machine: str | None = None) -> bytes:
    """The filter for this machine, as the raw sock_filter array bwrap's --seccomp reads."""
    machine = machine or os.uname().machine
    if machine not in AUDIT_ARCH:
        raise OSError(f"seccomp: no filter for machine {machine!r}")
    calls = CALLS[machine]
    eperm = RET_ERRNO | errno.EPERM
    out = [_ins(LD_W_ABS, OFF_ARCH), _ins(JEQ_K, AUDIT_ARCH[machine], 1, 0), _ins(RET_K, RET_KILL_PROCESS),
           _ins(LD_W_ABS, OFF_NR)]
    if machine == "x86_64":  # the x32 ABI reuses the same arch value with bit 30 set
        out += [_ins(JGE_K, 0x40000000, 0, 1), _ins(RET_K, RET_KILL_PROCESS)]
    for nr in sorted({**DENIED[machine], **COMMON_DENIED}.values()):
        out += [_ins(JEQ_K, nr, 0, 1), _ins(RET_K, eperm)]
    out += [_ins(JEQ_K, calls["clone3"], 0, 1), _ins(RET_K, RET_ERRNO | errno.ENOSYS)]
    # ioctl(fd, cmd): the kernel truncates cmd to 32 bits, so the low word is the whole command.
    out += [_ins(JEQ_K, calls["ioctl"], 0, 5), _ins(LD_W_ABS, OFF_ARG1),
            _ins(JEQ_K, TIOCSTI, 0, 1), _ins(RET_K, eperm),
            _ins(JEQ_K, TIOCLINUX, 0, 1), _ins(RET_K, eperm),
            _ins(LD_W_ABS, OFF_NR)]
    for call in ("clone", "unshare"):  # flags are the first argument of both
        out += [_ins(JEQ_K, calls[call], 0, 3), _ins(LD_W_ABS, OFF_ARG0),
                _ins(JSET_K, CLONE_NEWUSER, 0, 1), _ins(RET_K, eperm),
                _ins(LD_W_ABS, OFF_NR)]
    out.append(_ins(RET_K, RET_ALLOW))
    return b"".join(out)
