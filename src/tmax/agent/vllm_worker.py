"""The vLLM side of :class:`tmax.agent.vllm_engine.VLLMEngine`, run by the vLLM venv's python.

vLLM pins its own transformers, so it cannot share tmax's environment; this script imports only the
standard library, vLLM and safetensors (never tmax). It speaks JSON lines: one request per line on
stdin, one answer per line on the original stdout (vLLM's own logging is sent to stderr so it cannot
corrupt the protocol).

    argv[1]: JSON {"model", "dtype", "seed", "max_model_len", "kv_cache_gib", "fp32_head"}
    -> {"ok": true, "max_model_len": N, "head_dtype": D, "device": "cpu"|"cuda"}   (once, when ready)
    {"op": "generate", "requests": [{"prompt", "max_tokens", "seed"}], "temperature", "top_p",
     "stop_ids"} -> {"ok": true, "results": [{"ids", "logprobs", "finish"}]}
    {"op": "load_weights", "path": FILE.safetensors} -> {"ok": true, "tensors": N, "receive_s", "load_s"}
    {"op": "join_group", "host", "port", "backend", "timeout_s"} -> {"ok": true}
        join the engine's two-rank process group (the engine is rank 0, this worker rank 1)
    {"op": "receive_weights", "buckets": [[[name, dtype, shape, offset], ...], ...], "sizes": [bytes, ...]}
        -> {"ok": true, "tensors": N, "receive_s", "load_s"}: each bucket arrives as one broadcast of raw
        bytes from rank 0 (receive_s: reading the weights in, load_s: vLLM's reload)
    {"op": "quit"}
Failures answer {"ok": false, "error": "..."} and the worker keeps serving.

The FP32 head: with "fp32_head" the model's logits are made from fp32 hidden states and an fp32 copy
of the LM head weight (vLLM's ``head_dtype`` setting, applied in its LogitsProcessor for every model),
as the trainer's head does, so a bf16 engine rounds its logits no more than the trainer.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
import traceback


def _open_protocol_stream():
    """Keep the real stdout for answers; everything else written to fd 1 goes to stderr."""
    out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return out


def _make_llm(cfg: dict):
    from vllm import LLM

    overrides = {}
    try:
        with open(os.path.join(cfg["model"], "config.json")) as f:
            quant = json.load(f).get("quantization_config") or {}
    except OSError:
        quant = {}
    if quant.get("quant_method") == "gguf":  # a folder converted from GGUF keeps this key; its weights are plain
        overrides["quantization_config"] = None
    if cfg.get("fp32_head", True):
        overrides["head_dtype"] = "float32"
    return LLM(model=cfg["model"], dtype=cfg.get("dtype", "float32"), seed=cfg.get("seed") or 0,
               max_model_len=cfg.get("max_model_len"), hf_overrides=overrides or None,
               # logprobs after temperature and top-p: the behaviour probabilities the loss needs
               logprobs_mode="processed_logprobs", enforce_eager=True,
               # on CPU this fraction of host memory must be free at start; the KV cache size is set apart
               gpu_memory_utilization=cfg.get("memory_fraction", 0.1),
               kv_cache_memory_bytes=int(cfg.get("kv_cache_gib", 1) * 2**30))


def _generate(llm, msg: dict) -> dict:
    from vllm import SamplingParams
    from vllm.inputs import TokensPrompt

    prompts, params = [], []
    for r in msg["requests"]:
        prompts.append(TokensPrompt(prompt_token_ids=r["prompt"]))
        params.append(SamplingParams(max_tokens=r["max_tokens"], temperature=msg["temperature"], top_p=msg["top_p"],
                                     top_k=0, seed=r.get("seed"), logprobs=0, stop_token_ids=msg.get("stop_ids"),
                                     skip_special_tokens=False, detokenize=False))
    results = []
    for out in llm.generate(prompts, params, use_tqdm=False):
        o = out.outputs[0]
        ids = list(o.token_ids)
        lps = [float(step[tok].logprob) for step, tok in zip(o.logprobs or [], ids)]
        results.append({"ids": ids, "logprobs": lps, "finish": "stop" if o.finish_reason == "stop" else "length"})
    return {"ok": True, "results": results}


def _refresh_tied_head(model) -> None:
    """A head tied to the embeddings receives no weights of its own, so the reload skips it, but on CPU
    it keeps a prepacked copy of the old matrix for its GEMM: rebuild that from the new embeddings."""
    head = getattr(model, "lm_head", None)
    embed = getattr(getattr(model, "model", None), "embed_tokens", None)
    if head is not None and embed is not None and getattr(head, "weight", None) is getattr(embed, "weight", 0):
        head.quant_method.process_weights_after_loading(head)


def _load_weights(llm, msg: dict) -> dict:
    from safetensors.torch import load_file

    started = time.perf_counter()
    tensors = load_file(msg["path"])
    read = time.perf_counter()
    # reload_weights, not the model's load_weights: the CPU kernels repack weights after loading, and
    # reloading undoes and redoes that layer by layer.
    llm.collective_rpc("reload_weights", kwargs={"weights_iterator": iter(tensors.items())})
    llm.apply_model(_refresh_tied_head)
    llm.reset_prefix_cache()  # cached KV blocks were computed by the old weights
    return {"ok": True, "tensors": len(tensors), "receive_s": read - started, "load_s": time.perf_counter() - read}


# -- weights without files: a process group shared with the engine ---------------------------------
_GROUP: dict = {}  # "pg": the process group, "device": where received buckets land


def _join_group(llm, msg: dict) -> dict:
    """Rank 1 of a two-rank group outside torch.distributed's default group, which vLLM owns here."""
    import datetime

    import torch
    import torch.distributed as dist

    timeout = datetime.timedelta(seconds=msg.get("timeout_s", 60))
    store = dist.TCPStore(msg["host"], msg["port"], 2, is_master=False, timeout=timeout)
    prefixed = dist.PrefixStore("tmax-weights", store)
    if msg["backend"] == "nccl":
        opts = dist.ProcessGroupNCCL.Options()
        opts._timeout = timeout
        pg, device = dist.ProcessGroupNCCL(prefixed, 1, 2, opts), torch.device("cuda", torch.cuda.current_device())
    else:
        pg, device = dist.ProcessGroupGloo(prefixed, 1, 2, timeout), torch.device("cpu")
    probe = torch.ones(1, device=device)  # the engine's check_group: both ranks all-reduce once
    pg.allreduce([probe]).wait()
    if probe.item() != 2:
        raise RuntimeError(f"the group's probe all-reduce gave {probe.item()}, expected 2")
    _GROUP.update(pg=pg, device=device, store=store)
    return {"ok": True}


def _receive_buckets(sizes: list[int]) -> list:
    """Each bucket (raw bytes) from rank 0, in order: all of them before any is loaded, so the engine
    sends at the wire's pace and a failing load cannot leave it waiting on a broadcast."""
    import torch
    import torch.distributed as dist

    opts = dist.BroadcastOptions()
    opts.rootRank = 0
    bufs = [torch.empty(size, dtype=torch.uint8, device=_GROUP["device"]) for size in sizes]
    works = [_GROUP["pg"].broadcast([buf], opts) for buf in bufs]  # all posted at once, as the engine sends
    for work in works:
        work.wait()
    return bufs


def _receive_weights(llm, msg: dict) -> dict:
    import torch

    if "pg" not in _GROUP:
        raise RuntimeError("receive_weights before join_group: no process group to receive from")
    started = time.perf_counter()
    bufs = _receive_buckets(msg["sizes"])
    received = time.perf_counter()
    tensors = []
    for buf, layout in zip(bufs, msg["buckets"]):
        for name, dtype, shape, offset in layout:
            dt = getattr(torch, dtype)
            tensors.append((name, buf[offset:offset + dt.itemsize * math.prod(shape)].view(dt).view(shape)))
    llm.collective_rpc("reload_weights", kwargs={"weights_iterator": iter(tensors)})
    llm.apply_model(_refresh_tied_head)
    llm.reset_prefix_cache()
    return {"ok": True, "tensors": len(tensors), "receive_s": received - started,
            "load_s": time.perf_counter() - received}


def main() -> None:
    out = _open_protocol_stream()
    cfg = json.loads(sys.argv[1])
    # The engine core runs in this process, so reload_weights gets the tensors without serialisation.
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    llm = _make_llm(cfg)
    from vllm.platforms import current_platform

    model_config = llm.llm_engine.model_config
    out.write(json.dumps({"ok": True, "max_model_len": model_config.max_model_len,
                          "head_dtype": str(model_config.head_dtype).removeprefix("torch."),
                          "device": current_platform.device_type}) + "\n")
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            msg = json.loads(line)
            if msg["op"] == "quit":
                break
            answer = OPS[msg["op"]](llm, msg)
        except Exception as e:  # noqa: BLE001 - reported to the caller, the worker keeps serving
            traceback.print_exc()
            answer = {"ok": False, "error": f"{type(e).__name__}: {e}"}
        out.write(json.dumps(answer) + "\n")


OPS = {"generate": _generate, "load_weights": _load_weights, "join_group": _join_group,
       "receive_weights": _receive_weights}

if __name__ == "__main__":
    main()
