"""Sandboxes: one small protocol (start, exec, close), several backends."""

from __future__ import annotations

from tmax.sandbox.base import BASE_ENV, Backend, Bind, ExecResult, Limits, Sandbox, SandboxError, SandboxLost, SandboxSpec

DEFAULT_BACKEND = "bwrap"
BACKENDS = ("bwrap", "unshare", "podman", "docker", "apptainer")


def get_backend(backend: "str | Backend" = DEFAULT_BACKEND) -> Backend:
    """A backend object: one given is returned as is; a name is one of bwrap, unshare, podman,
    docker, apptainer, or an import path ``package.module:Class`` of one's own (built with no
    arguments)."""
    if not isinstance(backend, str):
        return backend
    name = backend
    if name in ("bwrap", "bubblewrap", "unshare"):
        from tmax.sandbox.native import NativeBackend

        return NativeBackend("bwrap" if name != "unshare" else "unshare")
    if name in ("podman", "docker"):
        from tmax.sandbox.container import ContainerBackend

        return ContainerBackend(name)
    if name == "apptainer":
        from tmax.sandbox.apptainer import ApptainerBackend

        return ApptainerBackend()
    from tmax.registry import load

    return load({n: n for n in BACKENDS}, name, "sandbox backend")()


__all__ = ["BASE_ENV", "BACKENDS", "Backend", "Bind", "DEFAULT_BACKEND", "ExecResult", "Limits", "Sandbox",
           "SandboxError", "SandboxLost", "SandboxSpec", "get_backend"]
