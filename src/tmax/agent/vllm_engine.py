"""A vLLM engine with the interface the rollout code uses from :class:`HFPolicy`: ``generate_ids``
(token ids in, token ids and behaviour logprobs out), ``tokenizer``, ``tool_calling``, ``model_name``,
``policy_version``, plus ``push_weights`` for the trainer.

vLLM pins its own transformers, so it lives in its own venv (``scripts/vllm_venv.sh``) and runs in a
subprocess (:mod:`tmax.agent.vllm_worker`) spoken to in JSON lines over a pipe. The tokenizer and the
chat template stay on this side (the same files), so the token stream is built exactly as for HF.
Weights travel as a safetensors file (in /dev/shm where there is one) read by vLLM's ``load_weights``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

from tmax.agent.batching import Batcher
from tmax.agent.harness import PolicyError
from tmax.agent.hf import HFPolicy, resolve_model

WORKER = Path(__file__).with_name("vllm_worker.py")


def vllm_python() -> Path | None:
    """The vLLM venv's python: $TMAX_VLLM_PYTHON, else $TMAX_HOME/venvs/vllm, else ~/.cache/tmax/venvs/vllm."""
    from tmax.images import tmax_home

    cands = [os.environ.get("TMAX_VLLM_PYTHON"), tmax_home() / "venvs/vllm/bin/python",
             Path.home() / ".cache/tmax/venvs/vllm/bin/python"]
    return next((Path(c) for c in cands if c and Path(c).exists()), None)


@dataclass
class VLLMEngine:
    model_path: str = "embedded"
    temperature: float = 1.0
    top_p: float = 1.0
    seed: int | None = None
    tool_calling: bool | None = None  # None: on if the chat template knows tools
    name: str = "vllm"
    model_name: str = ""
    policy_version: int = 0
    dtype: str = "float32"
    max_model_len: int | None = None  # None: the model's own
    kv_cache_gib: float = 1.0
    python: str | None = None  # the vLLM venv's python (default: vllm_python())
    max_batch: int = 64
    _tok: object = field(default=None, repr=False)

    # The chat plumbing (message roles, prompt ids, a whole turn as a Policy) is HFPolicy's.
    _messages = HFPolicy._messages
    prompt_ids = HFPolicy.prompt_ids
    act = HFPolicy.act

    def __post_init__(self) -> None:
        from transformers import AutoTokenizer

        path = resolve_model(self.model_path)
        self.model_name = self.model_name or path.name
        self._tok = AutoTokenizer.from_pretrained(path)
        if self.tool_calling is None:
            self.tool_calling = "tools" in (self._tok.chat_template or "")
        vocab = self._tok.get_vocab()
        self._eos = sorted({self._tok.eos_token_id, *(vocab[t] for t in ("<|im_end|>",) if t in vocab)} - {None})
        python = self.python or vllm_python()
        if python is None:
            raise PolicyError("the vLLM engine needs its venv: run scripts/vllm_venv.sh (or set TMAX_VLLM_PYTHON)")
        self._log = tempfile.NamedTemporaryFile("w+", prefix="tmax-vllm-", suffix=".log", delete=False)
        cfg = {"model": str(path), "dtype": self.dtype, "seed": self.seed, "max_model_len": self.max_model_len,
               "kv_cache_gib": self.kv_cache_gib}
        self._proc = subprocess.Popen([str(python), str(WORKER), json.dumps(cfg)], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=self._log, text=True, bufsize=1)
        self._pipe = threading.Lock()  # one request on the pipe at a time
        self._requests = 0
        hello = self._read()
        self.max_model_len = hello["max_model_len"]
        self._batcher = Batcher(self._run_batch, self.max_batch)

    @property
    def tokenizer(self):
        return self._tok

    # -- the pipe ---------------------------------------------------------------------------------
    def _read(self) -> dict:
        line = self._proc.stdout.readline()
        if not line:
            raise PolicyError(f"the vLLM worker exited ({self._proc.poll()}): {self._log_tail()}")
        msg = json.loads(line)
        if not msg.get("ok"):
            raise PolicyError(f"vLLM worker: {msg.get('error')}")
        return msg

    def _call(self, msg: dict) -> dict:
        with self._pipe:
            if self._proc.poll() is not None:
                raise PolicyError(f"the vLLM worker exited ({self._proc.returncode}): {self._log_tail()}")
            self._proc.stdin.write(json.dumps(msg) + "\n")
            self._proc.stdin.flush()
            return self._read()

    def _log_tail(self, n: int = 3000) -> str:
        self._log.flush()
        return Path(self._log.name).read_text(errors="replace")[-n:]

    # -- generation -------------------------------------------------------------------------------
    def generate_ids(self, prompt: list[int], max_tokens: int) -> tuple[list[int], list[float], str]:
        """Sample a completion: (token ids, behaviour logprobs under the sampling temperature, finish
        reason). Concurrent callers are sent to vLLM together, which batches them."""
        max_tokens = min(max_tokens, self.max_model_len - len(prompt))
        if max_tokens <= 0:
            return [], [], "length"
        return self._batcher.submit({"prompt": list(prompt), "max_tokens": max_tokens})

    def _run_batch(self, batch: list[dict]) -> list[tuple[list[int], list[float], str]]:
        reqs = []
        for r in batch:
            self._requests += 1  # a seeded engine gives every request its own reproducible seed
            seed = None if self.seed is None else (self.seed * 1_000_003 + self._requests) % 2**31
            reqs.append({"prompt": r["prompt"], "max_tokens": r["max_tokens"], "seed": seed})
        answer = self._call({"op": "generate", "requests": reqs, "temperature": self.temperature,
                             "top_p": self.top_p, "stop_ids": self._eos})
        return [(res["ids"], res["logprobs"], res["finish"]) for res in answer["results"]]

    # -- weights ----------------------------------------------------------------------------------
    def push_weights(self, state_dict: dict, version: int | None = None) -> None:
        """Load new weights into the engine (between generation batches, never within one)."""
        from safetensors.torch import save_file

        seen, tensors = set(), {}
        for name, t in state_dict.items():
            if t.data_ptr() in seen:  # tied weights (embeddings = LM head): vLLM loads them once
                continue
            seen.add(t.data_ptr())
            tensors[name] = t.detach().to("cpu").contiguous()
        shm = "/dev/shm" if os.path.isdir("/dev/shm") else None
        fd, path = tempfile.mkstemp(prefix="tmax-weights-", suffix=".safetensors", dir=shm)
        os.close(fd)
        try:
            save_file(tensors, path)
            self._call({"op": "load_weights", "path": path})
        finally:
            os.unlink(path)
        if version is not None:
            self.policy_version = version

    def close(self) -> None:
        if self._proc.poll() is None:
            try:
                with self._pipe:
                    self._proc.stdin.write(json.dumps({"op": "quit"}) + "\n")
                    self._proc.stdin.flush()
                self._proc.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                self._proc.kill()
                self._proc.wait()
        self._log.close()
        os.unlink(self._log.name)

    def __del__(self) -> None:
        proc = getattr(self, "_proc", None)
        if proc is not None and proc.poll() is None:
            proc.kill()


if __name__ == "__main__" and len(sys.argv) > 1:  # quick check: python -m tmax.agent.vllm_engine "prompt"
    eng = VLLMEngine(seed=0)
    ids = eng.prompt_ids([{"role": "user", "content": sys.argv[1]}], None)
    gen, lps, finish = eng.generate_ids(ids, 64)
    print(eng.tokenizer.decode(gen), finish, sum(lps))
    eng.close()
