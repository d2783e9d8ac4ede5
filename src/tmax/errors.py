"""The error class that says a failure was the infrastructure's: not the agent's, not the task's,
and not a bug. Only these become ``infra_error`` trials (retried, kept out of pass@k); any other
exception is a bug and is reported as one, with its traceback."""


class InfraError(RuntimeError):
    """The infrastructure failed (a model server, an engine process, the host's resources)."""
