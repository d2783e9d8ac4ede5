"""Rollouts on Ray actors (the ``scale`` extra): each actor holds its own HF engine and runs its
sandboxes on the node it lives on; a group's rollouts are split across the actors, so one group uses
them all. After each step the trainer puts the state dict in Ray's object store once and every actor
loads it (and takes the new policy version).

The actors reuse :func:`tmax.rl.rollout.collect_group` unchanged; what comes back is the rollouts with
their token ids, behaviour logprobs, versions and rewards, without the engine (which stays in the actor).
"""

from __future__ import annotations

import dataclasses
import os

from tmax.agent import HarnessConfig
from tmax.rl.rollout import Rollout, collect_group
from tmax.sandbox import DEFAULT_BACKEND
from tmax.task import Task, load_task

# Where sandboxes, images and caches live: the actors must use the trainer's.
_ENV = ("TMAX_HOME", "TMAX_RUN_DIR", "TMAX_IMAGES", "PATH")


class RolloutWorker:
    """One engine and its rollouts; a Ray actor (see :class:`RayRolloutPool`), or a plain object."""

    def __init__(self, model_path: str, harness: HarnessConfig, backend: str, max_total_tokens: int,
                 temperature: float = 1.0, top_p: float = 1.0, seed: int | None = None, device: str = "cpu"):
        from tmax.agent.hf import HFPolicy

        self.engine = HFPolicy(model_path=model_path, device=device, temperature=temperature, top_p=top_p, seed=seed)
        self.harness, self.backend, self.max_total_tokens = harness, backend, max_total_tokens

    def collect(self, task_path: str, size: int, workers: int = 1) -> list[Rollout]:
        group = collect_group(load_task(task_path), self.engine, size, self.harness, self.backend, workers,
                              self.max_total_tokens)
        for r in group:  # the engine stays here; the session's tokens travel
            r.session = dataclasses.replace(r.session, engine=None)
        return group

    def load_weights(self, state_dict: dict, version: int) -> int:
        self.engine.load_weights(state_dict, version)
        return version

    def policy_version(self) -> int:
        return self.engine.policy_version


class RayRolloutPool:
    """``actors`` rollout workers on a Ray cluster (a local one, started here, if none is running)."""

    def __init__(self, actors: int, model_path: str, harness: HarnessConfig, backend: str = DEFAULT_BACKEND,
                 max_total_tokens: int = 65536, temperature: float = 1.0, top_p: float = 1.0, seed: int | None = None,
                 device: str = "cpu", num_cpus: int | None = None):
        import ray

        env = {k: os.environ[k] for k in _ENV if k in os.environ}
        if not ray.is_initialized():
            os.environ.setdefault("RAY_AUTH_MODE", "disabled")  # otherwise Ray writes a token file
            ray.init(num_cpus=num_cpus or max(2, actors), include_dashboard=False, runtime_env={"env_vars": env},
                     log_to_driver=False)
        cls = ray.remote(num_cpus=1)(RolloutWorker)
        self.actors = [cls.options(runtime_env={"env_vars": env}).remote(
            model_path, harness, backend, max_total_tokens, temperature, top_p,
            None if seed is None else seed + i, device) for i in range(actors)]

    def collect_group(self, task: Task, size: int, workers: int = 1) -> list[Rollout]:
        import ray

        n = len(self.actors)
        sizes = [size // n + (i < size % n) for i in range(n)]
        refs = [a.collect.remote(str(task.path), k, workers) for a, k in zip(self.actors, sizes) if k]
        return [r for part in ray.get(refs) for r in part]

    def push_weights(self, state_dict: dict, version: int) -> None:
        import ray

        ref = ray.put({k: v.detach().to("cpu") for k, v in state_dict.items()})  # stored once, read by all
        ray.get([a.load_weights.remote(ref, version) for a in self.actors])

    def policy_versions(self) -> list[int]:
        import ray

        return ray.get([a.policy_version.remote() for a in self.actors])

    def close(self) -> None:
        import ray

        for a in self.actors:
            ray.kill(a)
        self.actors = []
