"""Sandboxes: one small protocol (start, exec, close), several backends."""

from __future__ import annotations

from tmax.sandbox.base import BASE_ENV, Backend, Bind, ExecResult, Limits, Sandbox, SandboxError, SandboxLost, SandboxSpec

DEFAULT_BACKEND = "bwrap"
BACKENDS = ("bwrap", "unshare", "podman", "docker", "apptainer")


def get_backend(name: str = DEFAULT_BACKEND) -> Backend:
    """Backend by name: bwrap, unshare, podman, docker, apptainer."""
    if name in ("bwrap", "bubblewrap", "unshare"):
        from tmax.sandbox.native import NativeBackend

        return NativeBackend("bwrap" if name != "unshare" else "unshare")
    if name in ("podman", "docker"):
        from tmax.sandbox.container import ContainerBackend

        return ContainerBackend(name)
    if name == "apptainer":
        from tmax.sandbox.apptainer import ApptainerBackend

        return ApptainerBackend()
    raise ValueError(f"unknown sandbox backend {name!r}; expected one of {', '.join(BACKENDS)}")


__all__ = ["BASE_ENV", "BACKENDS", "Backend", "Bind", "DEFAULT_BACKEND", "ExecResult", "Limits", "Sandbox",
           "SandboxError", "SandboxLost", "SandboxSpec", "get_backend"]
