"""One typed training config. Defaults are the paper's recipe; a YAML file and dotted ``key=value``
overrides change them; everything is checked up front with errors that say why."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tmax.rl.losses import LOSSES
from tmax.sandbox import DEFAULT_BACKEND


class ConfigError(ValueError):
    pass


@dataclass
class TrainConfig:
    """Outcome-only asynchronous RL with DPPO (paper Table 13 defaults)."""

    tasks: list[str] = field(default_factory=list)  # task dirs or corpora (a dir of task dirs)
    model: str = "embedded"  # "embedded" (SmolLM2-135M) or a Hugging Face model folder
    out: str = "runs/train"
    steps: int = 500
    prompts_per_step: int = 8
    group_size: int = 32
    loss: str = "dppo_tv"  # dppo_tv | dppo_kl | grpo
    delta: float | None = None  # DPPO threshold (default 0.1 for TV, 0.05 for KL)
    eps_low: float = 0.2  # GRPO clip
    eps_high: float = 0.272
    advantage: str = "centered"  # centered | std
    never_submitted: str = "zero"  # zero | keep | drop
    truncated: str = "keep"  # keep | zero | drop
    lr: float = 1e-6
    weight_decay: float = 0.0
    grad_clip: float = 1.0
    temperature: float = 1.0
    top_p: float = 1.0
    max_prompt_tokens: int = 2048  # a first prompt (system + instruction) longer than this is cut as truncated
    max_tokens_per_turn: int = 16384
    max_total_tokens: int = 65536
    max_turns: int = 64
    command_timeout: float = 120.0
    async_rollouts: bool = True
    max_staleness: int = 4
    rollout_workers: int = 2
    max_refill_factor: int = 4  # active sampling tries at most this many times the prompts per step
    micro_batch: int = 8  # trajectories per forward/backward
    logprob_chunk: int = 1024
    dtype: str = "float32"  # body dtype: float32 on CPU, bfloat16 on accelerators (the head is always fp32)
    device: str = "cpu"
    engine: str = "hf"  # hf | vllm
    fp32_head: bool = True  # the engine's LM head in fp32 too (vLLM; the trainer's head is always fp32)
    rollout_backend: str = "thread"  # thread (in this process) | ray (an engine of `engine`'s kind per Ray actor)
    ray_actors: int = 2
    backend: str = DEFAULT_BACKEND
    seed: int = 0
    checkpoint_every: int = 10
    # wall-clock budget: stop (with a checkpoint) when the next step, as long as the last, would cross it
    max_minutes: float | None = None
    # optional SFT warm start on the successful trajectories of solve jobs (the recipe needs none)
    warm_start_jobs: list[str] = field(default_factory=list)
    warm_start_epochs: int = 1
    warm_start_lr: float = 1e-5

    @property
    def loss_kwargs(self) -> dict[str, float]:
        if self.loss == "grpo":
            return {"eps_low": self.eps_low, "eps_high": self.eps_high}
        default = 0.1 if self.loss == "dppo_tv" else 0.05
        return {"delta": self.delta if self.delta is not None else default}

    def validate(self) -> None:
        def need(ok: bool, field_: str, why: str) -> None:
            if not ok:
                raise ConfigError(f"{field_}: {why}")

        need(bool(self.tasks), "tasks", "expected at least one task directory or corpus")
        need(self.loss in LOSSES, "loss", f"expected one of {sorted(LOSSES)}, got {self.loss!r}")
        need(self.advantage in ("centered", "std"), "advantage", "expected centered or std")
        need(self.never_submitted in ("zero", "keep", "drop"), "never_submitted", "expected zero, keep or drop")
        need(self.truncated in ("keep", "zero", "drop"), "truncated", "expected keep, zero or drop")
        need(self.group_size >= 2, "group_size", "a group needs at least 2 trajectories for an advantage")
        need(self.prompts_per_step >= 1 and self.steps >= 1, "steps/prompts_per_step", "must be positive")
        need((self.prompts_per_step * self.group_size) % self.micro_batch == 0, "micro_batch",
             f"the batch of {self.prompts_per_step} x {self.group_size} = {self.prompts_per_step * self.group_size} "
             f"trajectories must divide into micro-batches of {self.micro_batch}")
        need(self.max_prompt_tokens < self.max_total_tokens, "max_prompt_tokens",
             f"must be below max_total_tokens ({self.max_total_tokens})")
        need(self.max_tokens_per_turn <= self.max_total_tokens, "max_tokens_per_turn",
             f"must not exceed max_total_tokens ({self.max_total_tokens})")
        need(self.max_minutes is None or self.max_minutes > 0, "max_minutes", "must be positive (or null)")
        need(self.max_staleness >= 0, "max_staleness", "must be >= 0")
        need(self.dtype in ("float32", "bfloat16", "float16"), "dtype", "expected float32, bfloat16 or float16")
        need(self.temperature > 0, "temperature",
             "must be > 0: at temperature 0 the sampled tokens have no logprob to train on (greedy is for eval)")
        need(self.top_p == 1.0, "top_p",
             "must be 1.0 for training: the trainer's logprobs are of the full tempered softmax, and a nucleus-"
             "truncated behaviour policy (which engines record differently) breaks the DPPO/GRPO ratio")
        need(self.engine in ("hf", "vllm"), "engine", "expected hf or vllm")
        need(self.rollout_backend in ("thread", "ray"), "rollout_backend", "expected thread or ray")
        need(self.ray_actors >= 1, "ray_actors", "must be >= 1")
        need(self.lr > 0 and self.grad_clip > 0, "lr/grad_clip", "must be positive")
        need(self.warm_start_epochs >= 1 and self.warm_start_lr > 0, "warm_start_epochs/warm_start_lr",
             "must be positive")
        for job in self.warm_start_jobs:
            need(Path(job).is_dir(), "warm_start_jobs", f"{job}: no such job directory (a tmax solve --job DIR)")


def _coerce(value: str, typ: Any) -> Any:
    text = str(typ)
    if "bool" in text:
        if value.lower() in ("1", "true", "yes", "on"):
            return True
        if value.lower() in ("0", "false", "no", "off"):
            return False
        raise ValueError(f"expected true/false, got {value!r}")
    if "list" in text:
        return [v for v in value.split(",") if v]
    if value.lower() in ("none", "null") and "None" in text:
        return None
    if "int" in text and "float" not in text:
        return int(value)
    if "float" in text:
        return float(value)
    return value


def load_config(path: str | Path | None, overrides: list[str] = ()) -> TrainConfig:
    data: dict[str, Any] = {}
    if path:
        p = Path(path)
        try:
            data = yaml.safe_load(p.read_text()) or {}
        except (OSError, yaml.YAMLError) as e:
            raise ConfigError(f"{p}: {e}") from None
        if not isinstance(data, dict):
            raise ConfigError(f"{p}: expected a mapping of settings")
    fields = {f.name: f for f in dataclasses.fields(TrainConfig)}
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise ConfigError(f"{path}: unknown settings {unknown}; known: {sorted(fields)}")
    for item in overrides:
        key, sep, value = item.partition("=")
        if not sep or key not in fields:
            raise ConfigError(f"override {item!r}: expected key=value with key one of {sorted(fields)}")
        try:
            data[key] = _coerce(value, fields[key].type)
        except ValueError as e:
            raise ConfigError(f"override {key}: {e}") from None
    cfg = TrainConfig(**data)
    cfg.validate()
    return cfg
