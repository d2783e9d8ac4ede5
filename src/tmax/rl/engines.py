"""The rollout engine a training config asks for, described once (:class:`EngineSpec`, small and
picklable) and built by :func:`build_engine` wherever it runs: in the trainer's process or inside a
Ray actor, with the same settings either way.

A trainer whose engines live on Ray actors keeps only the chat side in its own process
(:class:`ChatTemplate`: tokenizer, template, tool format), for the pad id and warm-start tokenization.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from tmax.agent.hf import HFPolicy, resolve_model

ENGINES = ("hf", "vllm")


@dataclass(frozen=True)
class EngineSpec:
    kind: str = "hf"  # hf | vllm
    model_path: str = "embedded"
    device: str = "cpu"  # HF's device (vLLM places itself)
    dtype: str = "float32"  # the sampling dtype
    fp32_head: bool = True  # vLLM's LM head in fp32 (HF samples with the model's own head)
    max_model_len: int | None = None  # vLLM's context (None: the model's own)
    seed: int | None = None
    temperature: float = 1.0
    top_p: float = 1.0
    python: str | None = None  # the vLLM venv's python (None: vllm_python() where the engine starts)

    @classmethod
    def from_config(cls, cfg, model_path: str | Path) -> EngineSpec:
        """The engine of a :class:`tmax.rl.config.TrainConfig`, on an already resolved model folder."""
        python = None
        if cfg.engine == "vllm":  # found here, so that engines elsewhere (Ray actors) use this process's venv
            from tmax.agent.vllm_engine import vllm_python

            python = vllm_python()
        return cls(kind=cfg.engine, model_path=str(model_path), device=cfg.device, dtype=cfg.dtype,
                   fp32_head=cfg.fp32_head, seed=cfg.seed, temperature=cfg.temperature, top_p=cfg.top_p,
                   python=None if python is None else str(python))


def build_engine(spec: EngineSpec):
    """A started engine: :class:`HFPolicy`, or :class:`tmax.agent.vllm_engine.VLLMEngine` (its own venv
    and process; weights pushed through a process group of its own, or a file)."""
    if spec.kind not in ENGINES:
        raise ValueError(f"engine: expected one of {ENGINES}, got {spec.kind!r}")
    if spec.kind == "vllm":
        from tmax.agent.vllm_engine import VLLMEngine

        return VLLMEngine(model_path=spec.model_path, temperature=spec.temperature, top_p=spec.top_p, seed=spec.seed,
                          dtype=spec.dtype, fp32_head=spec.fp32_head, max_model_len=spec.max_model_len,
                          python=spec.python)
    return HFPolicy(model_path=spec.model_path, device=spec.device, temperature=spec.temperature, top_p=spec.top_p,
                    seed=spec.seed, dtype=spec.dtype)


def push_to_engine(engine, state_dict: dict, version: int) -> None:
    """New weights into an engine: its own transport where it has one (another process), else in place."""
    if hasattr(engine, "push_weights"):
        engine.push_weights(state_dict, version)
    else:
        engine.load_weights(state_dict, version)


@dataclass
class ChatTemplate:
    """An engine's chat side without a model. ``load_weights`` only takes the version: the weights go
    to the engines wherever they run."""

    model_path: str
    tool_calling: bool | None = None  # None: on if the chat template knows tools
    name: str = "chat"
    model_name: str = ""
    policy_version: int = 0
    _tok: object = field(default=None, repr=False)

    _messages = HFPolicy._messages
    prompt_ids = HFPolicy.prompt_ids

    def __post_init__(self) -> None:
        from transformers import AutoTokenizer

        path = resolve_model(self.model_path)
        self.model_name = self.model_name or path.name
        self._tok = AutoTokenizer.from_pretrained(path)
        if self.tool_calling is None:
            self.tool_calling = "tools" in (self._tok.chat_template or "")

    @property
    def tokenizer(self):
        return self._tok

    def load_weights(self, state_dict: dict, version: int) -> None:
        self.policy_version = version
