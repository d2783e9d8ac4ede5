"""Rollouts on Ray actors (the ``scale`` extra): each actor builds its own engine (HF or vLLM, from one
:class:`tmax.rl.engines.EngineSpec`) and runs its sandboxes on the node it lives on; a group's rollouts
are split across the actors, so one group uses them all. After each step the trainer puts the state
dict in Ray's object store once and every actor hands it to its engine (a vLLM engine sends it on to
its worker through its own process group, or a file) and takes the new policy version.

The actors reuse :func:`tmax.rl.rollout.collect_group` unchanged; what comes back is the rollouts with
their token ids, behaviour logprobs, versions and rewards, without the engine (which stays in the actor).
A failed or dead actor raises :class:`RolloutActorError` as soon as Ray reports it, without waiting
for the other actors' work.
"""

from __future__ import annotations

import dataclasses
import os
import re
import time

from tmax.agent import HarnessConfig
from tmax.rl.engines import EngineSpec, build_engine, push_to_engine
from tmax.rl.rollout import Rollout, collect_group
from tmax.sandbox import DEFAULT_BACKEND
from tmax.task import Task, load_task

# Where sandboxes, images, caches and the vLLM venv live: the actors must use the trainer's.
_ENV = ("TMAX_HOME", "TMAX_RUN_DIR", "TMAX_IMAGES", "TMAX_VLLM_PYTHON", "PATH")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")  # Ray colours the names in its error messages


class RolloutActorError(RuntimeError):
    """A rollout actor failed a call or died."""


class RolloutWorker:
    """One engine and its rollouts; a Ray actor (see :class:`RayRolloutPool`), or a plain object."""

    def __init__(self, engine: EngineSpec, harness: HarnessConfig, backend: str, max_total_tokens: int):
        self.spec = engine
        self.engine = build_engine(engine)
        self.harness, self.backend, self.max_total_tokens = harness, backend, max_total_tokens

    def collect(self, task_path: str, size: int, workers: int = 1, seed: int | None = None, first: int = 0,
                max_prompt_tokens: int | None = None) -> list[Rollout]:
        group = collect_group(load_task(task_path), self.engine, size, self.harness, self.backend, workers,
                              self.max_total_tokens, seed, max_prompt_tokens, first)
        for r in group:  # the engine stays here; the session's tokens travel
            r.session = dataclasses.replace(r.session, engine=None)
        return group

    def push_weights(self, state_dict: dict, version: int) -> int:
        push_to_engine(self.engine, state_dict, version)
        return self.engine.policy_version

    def policy_version(self) -> int:
        return self.engine.policy_version

    def generate(self, prompt: list[int], max_tokens: int) -> tuple[list[int], list[float], str]:
        """One completion straight from the engine: (token ids, behaviour logprobs, finish reason)."""
        return self.engine.generate_ids(prompt, max_tokens)

    def describe(self) -> dict:
        """What this actor runs: engine kind, model, version, and for vLLM its weight transport, last
        push and worker process."""
        proc = getattr(self.engine, "_proc", None)
        return {"engine": self.spec.kind, "model": self.engine.model_name, "policy_version": self.engine.policy_version,
                "pid": os.getpid(), "weight_transport": getattr(self.engine, "weight_transport", "in-place"),
                "last_push": dict(getattr(self.engine, "last_push", {})),
                "worker_pid": proc.pid if proc is not None else None}

    def close(self) -> None:
        if hasattr(self.engine, "close"):
            self.engine.close()


class RayRolloutPool:
    """``actors`` rollout workers on a Ray cluster (a local one, started here, if none is running).
    Actor i's engine is seeded ``seed + i``. Each actor takes one CPU, and one GPU when the spec's
    device is not the CPU. The pool returns once every engine is up (or raises, naming the actor)."""

    def __init__(self, actors: int, engine: EngineSpec, harness: HarnessConfig, backend: str = DEFAULT_BACKEND,
                 max_total_tokens: int = 65536, num_cpus: int | None = None, start_timeout_s: float = 900.0):
        import ray

        env = {k: os.environ[k] for k in _ENV if k in os.environ}
        if not ray.is_initialized():
            os.environ.setdefault("RAY_AUTH_MODE", "disabled")  # otherwise Ray writes a token file
            ray.init(num_cpus=num_cpus or max(2, actors), include_dashboard=False, runtime_env={"env_vars": env},
                     log_to_driver=False)
        self.kind = engine.kind
        cls = ray.remote(num_cpus=1, num_gpus=0 if engine.device == "cpu" else 1)(RolloutWorker)
        self.actors = [cls.options(runtime_env={"env_vars": env}).remote(
            dataclasses.replace(engine, seed=None if engine.seed is None else engine.seed + i), harness, backend,
            max_total_tokens) for i in range(actors)]
        self._gather("start", [a.describe.remote() for a in self.actors], timeout_s=start_timeout_s)

    def collect_group(self, task: Task, size: int, workers: int = 1, seed: int | None = None,
                      max_prompt_tokens: int | None = None) -> list[Rollout]:
        """``size`` rollouts split over the actors; with a ``seed``, rollout i of the group samples under
        the seeds the thread path would give it, whichever actor runs it."""
        n = len(self.actors)
        sizes = [size // n + (i < size % n) for i in range(n)]
        firsts = [sum(sizes[:i]) for i in range(n)]
        refs = [a.collect.remote(str(task.path), k, workers, seed, first, max_prompt_tokens) if k else None
                for a, k, first in zip(self.actors, sizes, firsts)]
        return [r for part in self._gather(f"collect {task.name}", refs) if part for r in part]

    def push_weights(self, state_dict: dict, version: int) -> None:
        import ray

        ref = ray.put({k: v.detach().to("cpu") for k, v in state_dict.items()})  # stored once, read by all
        self._gather(f"push weights v{version}", [a.push_weights.remote(ref, version) for a in self.actors])

    def policy_versions(self) -> list[int]:
        return self._gather("policy version", [a.policy_version.remote() for a in self.actors])

    def describe(self) -> list[dict]:
        return self._gather("describe", [a.describe.remote() for a in self.actors])

    def generate(self, prompt: list[int], max_tokens: int) -> list[tuple[list[int], list[float], str]]:
        """The same prompt to every actor's engine: one (ids, logprobs, finish) per actor."""
        return self._gather("generate", [a.generate.remote(prompt, max_tokens) for a in self.actors])

    def _gather(self, what: str, refs: list, timeout_s: float | None = None) -> list:
        """The results of one call per actor (None where an actor had none), in actor order. The first
        failure raises at once: a dead actor is not waited for behind a live one's long call."""
        import ray
        from ray.exceptions import RayActorError, RayTaskError

        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        actor_of = {ref: i for i, ref in enumerate(refs) if ref is not None}
        results: dict = {}
        pending = list(actor_of)
        while pending:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready, pending = ray.wait(pending, num_returns=1, timeout=left)
            if not ready:
                idle = ", ".join(str(actor_of[r]) for r in pending)
                raise RolloutActorError(f"{what}: Ray rollout actor(s) {idle} of {len(refs)} ({self.kind} engine) "
                                        f"gave no answer within {timeout_s:.0f}s")
            ref = ready[0]
            who = f"{what}: Ray rollout actor {actor_of[ref]} of {len(refs)} ({self.kind} engine)"
            try:
                results[ref] = ray.get(ref)
            except RayActorError as e:
                raise RolloutActorError(f"{who} died: {_gist(e)}") from e
            except RayTaskError as e:
                cause = getattr(e, "cause", None) or e
                raise RolloutActorError(f"{who} failed: {type(cause).__name__}: {_gist(cause)}") from e
        return [results.get(ref) for ref in refs]

    def close(self) -> None:
        """Stop the actors. A vLLM worker sees its pipe close with its actor and exits on its own."""
        import ray

        for a in self.actors:
            ray.kill(a)
        self.actors = []


def _gist(e: BaseException) -> str:
    """The first line of an error, and its last (Ray puts the actor's own exception at the end)."""
    lines = [ln.strip() for ln in _ANSI.sub("", str(e)).splitlines() if ln.strip()]
    if not lines:
        return type(e).__name__
    return lines[0] if len(lines) == 1 else f"{lines[0]} ... {lines[-1]}"
