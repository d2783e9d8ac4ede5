"""The agent side: one harness, policies behind one interface, and the agent that trials run."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from tmax.agent.harness import Episode, HarnessConfig, Policy, PolicyError, Reply, ToolCall, run_episode
from tmax.sandbox import SandboxError, SandboxLost


def make_policy(spec: str, base_url: str | None = None, temperature: float = 1.0, tool_calling: bool | None = None,
                seed: int | None = None) -> Policy:
    """``openai:MODEL`` (with base_url), ``hf:PATH`` or ``hf:embedded`` (the packaged SmolLM2), ``embedded``,
    or ``package.module:Class`` (a Policy of one's own)."""
    kind, _, arg = spec.partition(":")
    if kind == "openai":
        if not base_url:
            raise ValueError("policy openai:MODEL needs --base-url (e.g. http://127.0.0.1:8000/v1)")
        return _openai(base_url, arg, temperature, tool_calling)
    if kind in ("hf", "embedded"):
        from tmax.agent.hf import HFPolicy

        return HFPolicy(model_path=arg or "embedded", temperature=temperature, tool_calling=tool_calling, seed=seed)
    if ":" in spec:  # a policy class of one's own: package.module:Class, built with no arguments
        from tmax.registry import load

        return load({}, spec, "policy")()
    raise ValueError(f"unknown policy {spec!r}; expected oracle, nop, openai:MODEL, hf:PATH, embedded or an "
                     "import path package.module:Class")


def _openai(base_url: str, model: str, temperature: float, tool_calling: bool | None) -> Policy:
    from tmax.agent.policies import OpenAIPolicy

    return OpenAIPolicy(base_url=base_url, model_name=model, temperature=temperature,
                        tool_calling=True if tool_calling is None else tool_calling)


@dataclass
class HarnessAgent:
    """Runs the harness in a trial's sandbox (implements the trial Agent protocol)."""

    policy: Policy
    config: HarnessConfig = field(default_factory=HarnessConfig)
    trajectory_path: Path | None = None
    name: str = "tmax-harness"
    episode: Episode | None = None

    def binds(self, task) -> list:
        return []

    def run(self, task, sandbox, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        self.episode = run_episode(task.instruction, sandbox, self.policy, self.config, self.trajectory_path,
                                   deadline=deadline)
        if self.episode.stop_reason == "policy_error":
            raise PolicyError(self.episode.error)
        if self.episode.stop_reason == "sandbox_lost":  # the agent brought its sandbox down
            raise SandboxLost(self.episode.error)
        if self.episode.stop_reason == "sandbox_error":
            raise SandboxError(self.episode.error)
        return self.episode.stop_reason == "wall_clock"

    def info(self) -> dict:
        return self.episode.summary() if self.episode else {}


__all__ = ["Episode", "HarnessAgent", "HarnessConfig", "Policy", "PolicyError", "Reply", "ToolCall", "make_policy",
           "run_episode"]
