"""The persistent shell: one bash per sandbox, driven over a pipe, shared by every backend.

An outer loop restarts the inner shell if a command ends it (``exit``), so the sandbox and its
background services survive. Each command is sent as one line, ``eval $'...'; __tmax_mark $?``: the
command is ANSI-C quoted byte by byte, so unbalanced quotes or heredocs in it cannot desynchronise the
protocol, and ``eval`` turns syntax errors into an ordinary exit status. The ``eval`` runs at the top
level (not inside a function), so a ``return`` in the command cannot skip the marker. After the
command, the shell prints a line with a per-sandbox nonce and the exit status. Output is read with
bounded memory: the first and last halves of ``limit`` bytes are kept and the middle is counted and
elided.

The nonce reaches both shells on their standard input, never on a command line, in the environment
or in a file: no other process of the sandbox can read it from /proc. The agent's own commands run
inside the inner shell and can see (and forge) it; that only misreports their own exit status.
Whatever must not be forged, a verifier's result, comes through :meth:`ShellSession.run_last`: the
command replaces the inner shell, the outer loop exits with its exit status, and the status is read
from the sandbox's process by the host (``exit_status``), never from text the sandbox prints.
"""

from __future__ import annotations

import os
import re
import secrets
import select
import time
from collections.abc import Callable

from tmax.sandbox.base import ExecResult, SandboxError, SandboxLost

_SAFE = set(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 _-.,/:=+@%^*()[]{}<>|&;!?~#$\"`")


def ansi_c_quote(text: str) -> str:
    """Quote ``text`` as a bash $'...' string that survives any content (NUL bytes are dropped)."""
    out = []
    for b in text.encode("utf-8", "surrogateescape"):
        if b == 0:
            continue
        out.append(chr(b) if b in _SAFE else f"\\x{b:02x}")
    return "$'" + "".join(out) + "'"


def outer_loop() -> str:
    """The sandbox's main program. It reads the nonce from stdin, then runs the inner shell; each time
    that exits, it prints the restart marker and reads one line: ``FINAL`` ends the sandbox with the
    inner shell's exit status (see :meth:`ShellSession.run_last`), anything else restarts the shell.
    Bash reads a pipe byte by byte, so the inner shell never consumes the loop's lines. The loop's
    own stderr is dropped: its job notices ("Killed ...") could otherwise land in a later output."""
    return ("IFS= read -r n || exit 1; while :; do bash --noprofile --norc; c=$?; "
            "printf '\\n%s %d X\\n' \"$n\" \"$c\"; IFS= read -r l || exit \"$c\"; "
            "[ \"$l\" = FINAL ] && exit \"$c\"; done 2>/dev/null")


def inner_init(nonce: str) -> str:
    return (
        f"exec 2>&1; set +o history; __tmax_n={nonce}; "
        "__tmax_mark() { printf '\\n%s %d\\n' \"$__tmax_n\" \"$1\"; }; "
        "__tmax_sub() { ( eval \"$1\" ) </dev/null; printf '\\n%s %d\\n' \"$__tmax_n\" \"$?\"; }; "
        "printf '%s READY %d\\n' \"$__tmax_n\" \"$$\"\n"
    )


class ShellSession:
    """Drives the outer/inner shell over ``stdin_fd``/``stdout_fd``.

    ``kill_children(nspid)`` must kill every descendant of the inner shell that belongs to the running
    command (a backend may spare processes that were already running before it, such as services);
    ``kill_shell(nspid)`` must kill the inner shell itself (the outer loop then restarts it).
    """

    def __init__(self, stdin_fd: int, stdout_fd: int, nonce: str,
                 kill_children: Callable[[int], None], kill_shell: Callable[[int], None],
                 limit: int = 1 << 20, alive: Callable[[], bool] = lambda: True):
        self.stdin_fd, self.stdout_fd, self.nonce = stdin_fd, stdout_fd, nonce.encode()
        self.kill_children, self.kill_shell, self.alive = kill_children, kill_shell, alive
        self.limit = limit
        self.shell_pid: int | None = None
        self._marker = re.compile(rb"\n" + re.escape(self.nonce) + rb" (-?\d+)( X)?\n")
        self._ready = re.compile(re.escape(self.nonce) + rb" READY (\d+)\n")
        self._pending = b""  # bytes read past the last marker
        os.set_blocking(stdout_fd, False)
        self._poll = select.poll()
        self._poll.register(stdout_fd, select.POLLIN | select.POLLHUP | select.POLLERR)

    @staticmethod
    def new_nonce() -> str:
        return "__TMAX_" + secrets.token_hex(12)

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            try:
                n = os.write(self.stdin_fd, view)
            except BrokenPipeError:
                raise SandboxLost("sandbox shell is gone (broken pipe)") from None
            view = view[n:]

    def _read(self, deadline: float) -> bytes | None:
        """One chunk, b"" at EOF, None if the deadline passed first."""
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            # poll, not select: select refuses fds >= 1024 (about 500 live sandboxes in one process)
            if self._poll.poll(min(left, 0.5) * 1000):
                try:
                    return os.read(self.stdout_fd, 1 << 16)
                except BlockingIOError:
                    continue
            elif not self.alive():
                return b""

    def start(self, timeout: float = 20.0, restart: bool = False) -> None:
        """Start the inner shell: the first time, hand the outer loop its nonce; after the inner
        shell ended, tell the loop to go on."""
        first = b"GO\n" if restart else self.nonce + b"\n"
        self._write(first + inner_init(self.nonce.decode()).encode())
        buf = self._pending
        deadline = time.monotonic() + timeout
        while True:
            m = self._ready.search(buf)
            if m:
                self.shell_pid = int(m.group(1))
                self._pending = buf[m.end():]
                return
            chunk = self._read(deadline)
            if not chunk:
                tail = buf[-2000:].decode("utf-8", "replace")
                raise SandboxError(f"sandbox shell did not start ({'timeout' if chunk is None else 'exited'}): {tail}")
            buf += chunk

    def _await_restart(self, deadline: float) -> None:
        """Skip everything up to the outer loop's restart marker (after the inner shell was killed)."""
        restart = re.compile(rb"\n" + re.escape(self.nonce) + rb" -?\d+ X\n")
        buf = self._pending
        while True:
            m = restart.search(buf)
            if m:
                self._pending = buf[m.end():]
                return
            buf = buf[-(len(self.nonce) + 32):]
            chunk = self._read(deadline)
            if not chunk:
                raise SandboxLost("sandbox shell did not restart after it was killed")
            buf += chunk

    def _flush_notices(self, timeout: float = 5.0) -> None:
        """After a timeout killed the command's background jobs, bash reports them ("Killed ...")
        before the next command: run an empty one and drop what it prints, so no later command's
        output carries that notice."""
        self._write(b"sleep 0.02; __tmax_mark 0\n")
        buf = self._pending
        deadline = time.monotonic() + timeout
        while True:
            m = self._marker.search(buf)
            if m:
                self._pending = buf[m.end():]
                return
            chunk = self._read(deadline)
            if not chunk:
                raise SandboxLost("sandbox shell stopped answering after a timeout")
            buf += chunk

    def run(self, command: str, timeout: float | None, persistent: bool = True) -> ExecResult:
        t0 = time.monotonic()
        if persistent:
            self._write(f"eval {ansi_c_quote(command)} </dev/null; __tmax_mark $?\n".encode())
        else:
            self._write(f"__tmax_sub {ansi_c_quote(command)}\n".encode())
        half = self.limit // 2
        head = bytearray()
        tail = bytearray()
        total = 0
        dropped = 0
        window = b""
        timed_out = False
        shell_killed = False
        code: int | None = None
        restarted = False
        deadline = t0 + timeout if timeout else float("inf")
        hard_deadline = float("inf")
        data = self._pending
        self._pending = b""
        while True:
            if data:
                window = window + data
                m = self._marker.search(window)
                if m:
                    # The stream up to the marker's leading newline is the command's output.
                    used = len(data) - (len(window) - m.start())
                    self._pending = window[m.end():]
                    data = data[:used] if used > 0 else b""
                    strip = -used if used < 0 else 0
                    code = int(m.group(1))
                    restarted = m.group(2) is not None
                else:
                    strip = 0
                    window = window[-(len(self.nonce) + 32):]
                total += len(data)
                room = half - len(head)
                if room > 0:
                    head += data[:room]
                    data = data[room:]
                tail += data
                if len(tail) > half + 4096:
                    cut = len(tail) - half
                    dropped += cut
                    del tail[:cut]
                if strip:  # part of the marker's newline was already stored
                    total -= strip
                    if len(tail) >= strip:
                        del tail[-strip:]
                    else:
                        del head[len(head) - (strip - len(tail)):]
                        tail.clear()
                if code is not None:
                    break
            if time.monotonic() > hard_deadline:
                raise SandboxLost("sandbox shell stopped answering after a timeout")
            chunk = self._read(min(deadline, hard_deadline))
            if chunk is None:
                if not timed_out:
                    timed_out = True
                    self.kill_children(self.shell_pid or -1)
                    deadline = time.monotonic() + 2.0
                    hard_deadline = time.monotonic() + 6.0
                else:
                    # The shell itself is busy (a builtin loop): kill it; the outer loop restarts it.
                    self.kill_shell(self.shell_pid or -1)
                    shell_killed = True
                    deadline = hard_deadline
                data = b""
                continue
            if chunk == b"":
                raise SandboxLost("sandbox shell exited unexpectedly")
            data = chunk
        if shell_killed and not restarted:
            # The dying shell got its own marker out first; the restart marker is still to come.
            self._await_restart(hard_deadline + 6.0)
            restarted = True
        if restarted:  # the command ended the inner shell; the outer loop starts a new one
            self.start(restart=True)
        elif timed_out:
            self._flush_notices()
        if len(tail) > half:
            dropped += len(tail) - half
            del tail[: len(tail) - half]
        out = bytes(head)
        if dropped:
            out += f"\n[... {dropped} bytes elided ...]\n".encode()
        out += bytes(tail)
        return ExecResult(exit_code=124 if timed_out else code, output=out.decode("utf-8", "replace"),
                          timed_out=timed_out, duration=time.monotonic() - t0, output_bytes=total,
                          truncated=dropped > 0)

    def run_last(self, command: str, timeout: float | None,
                 exit_status: Callable[[float], int | None]) -> ExecResult:
        """Run ``command`` as the sandbox's last: it replaces the inner shell (stdin /dev/null, a
        fresh shell: no functions or variables of the session), the outer loop then exits with its
        status and the sandbox ends. ``exit_status(wait)`` is the backend's view of how the sandbox's
        process exited (None if it has not within ``wait`` seconds): no text printed inside can
        change it. The output is what the sandbox printed until then, bounded as in :meth:`run`."""
        t0 = time.monotonic()
        self._write(f"exec bash --noprofile --norc -c {ansi_c_quote(command)} </dev/null\nFINAL\n".encode())
        deadline = t0 + timeout if timeout else float("inf")
        out = _Bounded(self.limit)
        out.add(self._pending)
        self._pending = b""
        timed_out = False
        while True:
            chunk = self._read(deadline)
            if chunk is None:
                timed_out = True
                self.kill_shell(self.shell_pid or -1)  # the command has the inner shell's pid
                break
            if chunk == b"":
                break
            out.add(chunk)
        code = exit_status(5.0 if not timed_out else 10.0)
        text = out.text()
        # The outer loop's restart marker is the last thing printed: it is protocol, not output.
        m = re.search(r"\n" + re.escape(self.nonce.decode()) + r" -?\d+ X\n\Z", text)
        if m:
            text = text[:m.start()]
        elif not timed_out:  # only the outer loop knows the nonce: without its marker, it was killed
            raise SandboxLost(f"the sandbox's shell was killed before its last command ended (status {code})")
        if code is None and not timed_out:
            raise SandboxLost("sandbox did not exit after its last command")
        return ExecResult(exit_code=124 if timed_out else code, output=text, timed_out=timed_out,
                          duration=time.monotonic() - t0, output_bytes=out.total, truncated=out.dropped > 0)


class _Bounded:
    """The first and last halves of ``limit`` bytes of a stream; the middle is counted, not kept."""

    def __init__(self, limit: int):
        self.half = limit // 2
        self.head, self.tail = bytearray(), bytearray()
        self.total = self.dropped = 0

    def add(self, data: bytes) -> None:
        self.total += len(data)
        room = self.half - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        self.tail += data
        if len(self.tail) > self.half:
            cut = len(self.tail) - self.half
            self.dropped += cut
            del self.tail[:cut]

    def text(self) -> str:
        out = bytes(self.head)
        if self.dropped:
            out += f"\n[... {self.dropped} bytes elided ...]\n".encode()
        return (out + bytes(self.tail)).decode("utf-8", "replace")
