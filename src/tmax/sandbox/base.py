"""The sandbox protocol shared by every backend, and its value types."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from tmax.sandbox.netns import SharedNetwork


DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
BASE_ENV = {"PATH": DEFAULT_PATH, "HOME": "/root", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
            "TERM": "dumb", "USER": "root", "SHELL": "/bin/bash", "DEBIAN_FRONTEND": "noninteractive"}


@dataclass
class Bind:
    source: str
    target: str  # absolute path inside the sandbox
    readonly: bool = True


class SandboxError(RuntimeError):
    """The sandbox itself failed (an infrastructure error, never the agent's fault)."""


class SandboxLost(SandboxError):
    """A started sandbox stopped answering: its shell was killed or exited, or a limit ended it.
    What runs inside can cause this, so it is the work's failure, never an infrastructure error."""


@dataclass
class Limits:
    memory_mb: int = 2048
    max_pids: int = 512
    cpu_seconds: int | None = None  # RLIMIT_CPU, per process
    file_size_mb: int = 2048  # RLIMIT_FSIZE, per file
    open_files: int = 4096
    output_bytes: int = 1 << 20  # bytes of output kept per exec (head + tail halves)
    # The writable layer (everything the sandbox writes, /tmp included) is a tmpfs of this size: its
    # pages are memory, so they count against memory_mb as well.
    storage_mb: int = 10240
    inodes: int = 262144


@dataclass
class SandboxSpec:
    """What to start: the environment's layers (top first), plus mounts, network and limits."""

    layers: list[Path]
    env_hash: str = ""
    workdir: str = "/app"
    work_areas: tuple[str, ...] = ("/app",)
    binds: list[Bind] = field(default_factory=list)
    network: bool = False
    # With ``network``: reach only these hosts (Harbor's allowlist; names, ``*.suffix``, IPs, CIDRs).
    allowed_hosts: tuple[str, ...] = ()
    # Join this network namespace instead of a fresh one (a SharedNetwork, or the path of one the
    # host's root made): sandboxes on one share loopback. Internet access is then the namespace's.
    netns: SharedNetwork | str | None = None
    hosts: dict[str, str] = field(default_factory=dict)  # extra /etc/hosts entries: name -> address
    limits: Limits = field(default_factory=Limits)
    env: dict[str, str] = field(default_factory=dict)
    hostname: str = "sandbox"
    keep_changes: bool = False  # keep the writable layer after close, for export_work_areas


@dataclass
class ExecResult:
    exit_code: int
    output: str  # stdout and stderr interleaved, decoded with replacement, bounded
    timed_out: bool
    duration: float
    output_bytes: int  # total bytes produced, including any elided middle
    truncated: bool

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


class Sandbox(Protocol):
    """A started sandbox. ``exec`` runs in the persistent shell (cwd and variables carry over) or,
    with ``persistent=False``, in a subshell that forgets them."""

    spec: SandboxSpec

    def exec(self, command: str, timeout: float | None = None, persistent: bool = True) -> ExecResult: ...

    def run_last(self, command: str, timeout: float | None = None) -> ExecResult:
        """Run ``command`` as the sandbox's last; its exit status is the sandbox process's own (no
        text printed inside can forge it). The sandbox has ended when this returns."""
        ...

    def export_work_areas(self, dest: Path) -> None:
        """After close: write the agent's changes under the work areas to ``dest`` as an overlay
        layer (deletions as whiteouts), for the verifier to run on."""
        ...

    def close(self) -> None: ...

    def __enter__(self) -> "Sandbox": ...

    def __exit__(self, *exc) -> None: ...


class Backend(Protocol):
    name: str

    def available(self) -> tuple[bool, str]:
        """(usable here, reason if not)."""
        ...

    def start(self, spec: SandboxSpec) -> Sandbox: ...
