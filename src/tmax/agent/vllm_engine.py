"""A vLLM engine with the interface the rollout code uses from :class:`HFPolicy`: ``generate_ids``
(token ids in, token ids and behaviour logprobs out), ``tokenizer``, ``tool_calling``, ``model_name``,
``policy_version``, plus ``push_weights`` for the trainer.

vLLM pins its own transformers, so it lives in its own venv (``scripts/vllm_venv.sh``) and runs in a
subprocess (:mod:`tmax.agent.vllm_worker`) spoken to in JSON lines over a pipe. The tokenizer and the
chat template stay on this side (the same files), so the token stream is built exactly as for HF.

Weights travel without files: at start the engine and the worker form a two-rank process group of
their own (gloo on CPU, NCCL when the worker is on a GPU; TCP rendezvous on 127.0.0.1, free port) and
``push_weights`` broadcasts the parameters as raw bytes in buckets of ``bucket_mb``. Where the group
cannot be formed (``weight_sync="auto"``), a safetensors file (in /dev/shm where there is one) read by
vLLM's weight loader carries them instead. ``fp32_head`` (default on, as the recipe) makes vLLM's
logits from fp32 hidden states and an fp32 head weight, the trainer's head computation.
"""

from __future__ import annotations

import datetime
import json
import math
import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from tmax.agent.batching import Batcher
from tmax.agent.harness import PolicyError
from tmax.agent.hf import HFPolicy, Sampling, resolve_model

WORKER = Path(__file__).with_name("vllm_worker.py")
WEIGHT_SYNCS = ("auto", "collective", "file")
ALIGN = 64  # byte alignment of each tensor inside a bucket, so every dtype can be viewed in place


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
    fp32_head: bool = True  # the LM head in fp32 (hidden states and weight), as the trainer's
    weight_sync: str = "auto"  # auto (a process group, else a file) | collective | file
    bucket_mb: int = 64  # parameters per broadcast
    group_timeout_s: float = 60.0
    weight_transport: str = ""  # what push_weights uses: "collective" or "file" (set at start)
    head_dtype: str = ""  # the worker's head dtype, as vLLM reports it
    last_push: dict = field(default_factory=dict)  # transport, seconds, and the worker's load_s (vLLM's reload)
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
        if self.weight_sync not in WEIGHT_SYNCS:
            raise PolicyError(f"weight_sync: expected one of {WEIGHT_SYNCS}, got {self.weight_sync!r}")
        python = self.python or vllm_python()
        if python is None:
            raise PolicyError("the vLLM engine needs its venv: run scripts/vllm_venv.sh (or set TMAX_VLLM_PYTHON)")
        self._log = tempfile.NamedTemporaryFile("w+", prefix="tmax-vllm-", suffix=".log", delete=False)
        cfg = {"model": str(path), "dtype": self.dtype, "seed": self.seed, "max_model_len": self.max_model_len,
               "kv_cache_gib": self.kv_cache_gib, "fp32_head": self.fp32_head}
        self._proc = subprocess.Popen([str(python), str(WORKER), json.dumps(cfg)], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=self._log, text=True, bufsize=1)
        self._pipe = threading.Lock()  # one request on the pipe at a time
        self._requests = 0
        hello = self._read()
        self.max_model_len = hello["max_model_len"]
        self.head_dtype = hello["head_dtype"]
        self._group, self._send_bufs = None, None
        self.weight_transport = "file"
        if self.weight_sync != "file":
            self._start_group(_group_backend(hello.get("device", "cpu")))
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

    def _call(self, msg: dict, meanwhile=None) -> dict:
        """Send one request and read its answer; ``meanwhile()`` runs in between (the engine's side of
        a collective the request starts in the worker)."""
        with self._pipe:
            if self._proc.poll() is not None:
                raise PolicyError(f"the vLLM worker exited ({self._proc.returncode}): {self._log_tail()}")
            self._proc.stdin.write(json.dumps(msg) + "\n")
            self._proc.stdin.flush()
            if meanwhile is not None:
                try:
                    meanwhile()
                except Exception:
                    self._read()  # the worker's own account, if it has one, says more
                    raise
            return self._read()

    def _log_tail(self, n: int = 3000) -> str:
        self._log.flush()
        return Path(self._log.name).read_text(errors="replace")[-n:]

    # -- generation -------------------------------------------------------------------------------
    def generate_ids(self, prompt: list[int], max_tokens: int,
                     sampling: Sampling | None = None) -> tuple[list[int], list[float], str]:
        """Sample a completion: (token ids, behaviour logprobs under the sampling temperature, finish
        reason). Concurrent callers are sent to vLLM together, which batches them (seeded requests
        too: vLLM seeds each request on its own). Only ``sampling.seed`` is honoured per request; the
        temperature and top-p are the engine's, as the trainer's logprobs assume."""
        max_tokens = min(max_tokens, self.max_model_len - len(prompt))
        if max_tokens <= 0:
            return [], [], "length"
        seed = sampling.seed if sampling is not None else None
        return self._batcher.submit({"prompt": list(prompt), "max_tokens": max_tokens, "seed": seed})

    def _run_batch(self, batch: list[dict]) -> list[tuple[list[int], list[float], str]]:
        reqs = []
        for r in batch:
            # A request's own seed wins (it depends on the rollout, not on this process's history);
            # else a seeded engine numbers its requests, reproducible within one process.
            self._requests += 1
            seed = r.get("seed")
            if seed is None and self.seed is not None:
                seed = (self.seed * 1_000_003 + self._requests) % 2**31
            reqs.append({"prompt": r["prompt"], "max_tokens": r["max_tokens"], "seed": seed})
        answer = self._call({"op": "generate", "requests": reqs, "temperature": self.temperature,
                             "top_p": self.top_p, "stop_ids": self._eos})
        return [(res["ids"], res["logprobs"], res["finish"]) for res in answer["results"]]

    # -- weights ----------------------------------------------------------------------------------
    def push_weights(self, state_dict: dict, version: int | None = None) -> None:
        """Load new weights into the engine (between generation batches, never within one). Floating
        tensors travel in the engine's dtype: the rounding vLLM's loader would do on arrival."""
        started = time.perf_counter()
        tensors = _unique_tensors(state_dict)
        push = self._push_collective if self.weight_transport == "collective" else self._push_file
        answer = push(tensors)
        self.last_push = {"transport": self.weight_transport, "seconds": time.perf_counter() - started,
                          "load_s": answer.get("load_s")}
        if version is not None:
            self.policy_version = version

    def _wire_dtype(self, t):
        import torch

        return getattr(torch, self.dtype) if t.is_floating_point() else t.dtype

    def _push_file(self, tensors: dict) -> dict:
        from safetensors.torch import save_file

        shm = "/dev/shm" if os.path.isdir("/dev/shm") else None
        fd, path = tempfile.mkstemp(prefix="tmax-weights-", suffix=".safetensors", dir=shm)
        os.close(fd)
        try:
            save_file({k: v.to("cpu", self._wire_dtype(v)).contiguous() for k, v in tensors.items()}, path)
            return self._call({"op": "load_weights", "path": path})
        finally:
            os.unlink(path)

    # -- the process group with the worker ----------------------------------------------------------
    def _start_group(self, backend: str) -> None:
        """Form the two-rank group (this process rank 0) and push through it; if it cannot form, push
        by file, unless weight_sync says collective."""
        try:
            self._group = _open_group(self, backend)
            self.weight_transport = "collective"
        except Exception as e:  # noqa: BLE001 - whatever stops the group, the file path still works
            if self.weight_sync == "collective":
                raise PolicyError(f"weight_sync=collective: the {backend} group with the vLLM worker did not "
                                  f"form: {e}") from e
            self.weight_transport = "file"
            print(f"tmax: vLLM weights go by file: the {backend} group with the worker did not form ({e})",
                  file=sys.stderr)

    def _push_collective(self, tensors: dict) -> dict:
        import torch
        import torch.distributed as dist

        wire = {name: self._wire_dtype(t) for name, t in tensors.items()}
        buckets, sizes = _bucket_layout([(n, wire[n], t.shape) for n, t in tensors.items()], self.bucket_mb * 2**20)
        pg, device, _ = self._group
        opts = dist.BroadcastOptions()
        opts.rootRank = 0
        if self._send_bufs is None or self._send_bufs[0].numel() < max(sizes):
            # two buffers kept between pushes: one packs while the other goes, and no fresh pages
            self._send_bufs = [torch.empty(max(sizes), dtype=torch.uint8, device=device) for _ in range(2)]

        def send_buckets():
            in_flight = [None, None]
            for i, (layout, size) in enumerate(zip(buckets, sizes)):
                buf = self._send_bufs[i % 2]
                if in_flight[i % 2] is not None:
                    in_flight[i % 2].wait()
                for name, _, shape, offset in layout:  # cast and pack in one copy
                    n = wire[name].itemsize * tensors[name].numel()
                    buf[offset:offset + n].view(wire[name]).view(shape).copy_(tensors[name])
                in_flight[i % 2] = pg.broadcast([buf[:size]], opts)
            for work in in_flight:
                if work is not None:
                    work.wait()

        return self._call({"op": "receive_weights", "buckets": buckets, "sizes": sizes}, meanwhile=send_buckets)

    def close(self) -> None:
        self._group, self._send_bufs = None, None
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


def _group_backend(worker_device: str) -> str:
    """NCCL between GPUs, gloo otherwise."""
    import torch

    return "nccl" if worker_device == "cuda" and torch.cuda.is_available() else "gloo"


def _open_group(engine: VLLMEngine, backend: str) -> tuple:
    """Rank 0 of the engine's group: a store on a free loopback port, the worker told to join it.
    Returns (process group, device of its buffers, store). Its own group, never torch.distributed's
    default one, which a trainer may hold for itself (FSDP)."""
    import torch
    import torch.distributed as dist

    timeout = datetime.timedelta(seconds=engine.group_timeout_s)
    store = dist.TCPStore("127.0.0.1", 0, 2, is_master=True, timeout=timeout, wait_for_workers=False)
    formed: list = []

    def form():
        prefixed = dist.PrefixStore("tmax-weights", store)
        if backend == "nccl":
            opts = dist.ProcessGroupNCCL.Options()
            opts._timeout = timeout
            pg, device = dist.ProcessGroupNCCL(prefixed, 0, 2, opts), torch.device("cuda", torch.cuda.current_device())
        else:
            pg, device = dist.ProcessGroupGloo(prefixed, 0, 2, timeout), torch.device("cpu")
        check_group(pg, device)
        formed.extend((pg, device, store))

    engine._call({"op": "join_group", "host": "127.0.0.1", "port": store.port, "backend": backend,
                  "timeout_s": engine.group_timeout_s}, meanwhile=form)
    return tuple(formed)


def check_group(pg, device) -> None:
    """One all-reduce both ranks take part in: a group that formed but cannot carry tensors between
    the two torch builds fails here, before any weights depend on it. (The worker runs the same.)"""
    import torch

    probe = torch.ones(1, device=device)
    pg.allreduce([probe]).wait()
    if probe.item() != 2:
        raise RuntimeError(f"the group's probe all-reduce gave {probe.item()}, expected 2")


def _unique_tensors(state_dict: dict) -> dict:
    """Each tensor once, detached: tied weights (embeddings = LM head) are loaded once by vLLM."""
    seen, tensors = set(), {}
    for name, t in state_dict.items():
        if t.data_ptr() not in seen:
            seen.add(t.data_ptr())
            tensors[name] = t.detach()
    return tensors


def _bucket_layout(entries: list, bucket_bytes: int) -> tuple[list, list[int]]:
    """Group (name, dtype, shape) entries, in order, into buckets of about ``bucket_bytes`` (a bigger
    tensor goes alone): per bucket [name, dtype, shape, byte offset], and each bucket's size in bytes."""
    buckets, sizes, current, size = [], [], [], 0
    for name, dtype, shape in entries:
        nbytes = math.prod(shape) * dtype.itemsize
        if current and size + nbytes > bucket_bytes:
            buckets.append(current)
            sizes.append(size)
            current, size = [], 0
        current.append([name, str(dtype).removeprefix("torch."), list(shape), size])
        size += -(-nbytes // ALIGN) * ALIGN
    if current:
        buckets.append(current)
        sizes.append(size)
    return buckets, sizes


if __name__ == "__main__" and len(sys.argv) > 1:  # quick check: python -m tmax.agent.vllm_engine "prompt"
    eng = VLLMEngine(seed=0)
    ids = eng.prompt_ids([{"role": "user", "content": sys.argv[1]}], None)
    gen, lps, finish = eng.generate_ids(ids, 64)
    print(eng.tokenizer.decode(gen), finish, sum(lps))
    eng.close()
