"""The vLLM side of :class:`tmax.agent.vllm_engine.VLLMEngine`, run by the vLLM venv's python.

vLLM pins its own transformers, so it cannot share tmax's environment; this script imports only the
standard library, vLLM and safetensors (never tmax). It speaks JSON lines: one request per line on
stdin, one answer per line on the original stdout (vLLM's own logging is sent to stderr so it cannot
corrupt the protocol).

    argv[1]: JSON {"model", "dtype", "seed", "max_model_len", "kv_cache_gib"}
    -> {"ok": true, "max_model_len": N}                                  (once, when ready)
    {"op": "generate", "requests": [{"prompt", "max_tokens", "seed"}], "temperature", "top_p",
     "stop_ids"} -> {"ok": true, "results": [{"ids", "logprobs", "finish"}]}
    {"op": "load_weights", "path": FILE.safetensors} -> {"ok": true, "tensors": N}
    {"op": "quit"}
Failures answer {"ok": false, "error": "..."} and the worker keeps serving.
"""

from __future__ import annotations

import json
import os
import sys
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

    tensors = load_file(msg["path"])
    # reload_weights, not the model's load_weights: the CPU kernels repack weights after loading, and
    # reloading undoes and redoes that layer by layer.
    llm.collective_rpc("reload_weights", kwargs={"weights_iterator": iter(tensors.items())})
    llm.apply_model(_refresh_tied_head)
    llm.reset_prefix_cache()  # cached KV blocks were computed by the old weights
    return {"ok": True, "tensors": len(tensors)}


def main() -> None:
    out = _open_protocol_stream()
    cfg = json.loads(sys.argv[1])
    # The engine core runs in this process, so reload_weights gets the tensors without serialisation.
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    llm = _make_llm(cfg)
    out.write(json.dumps({"ok": True, "max_model_len": llm.llm_engine.model_config.max_model_len}) + "\n")
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            msg = json.loads(line)
            if msg["op"] == "quit":
                break
            answer = {"generate": _generate, "load_weights": _load_weights}[msg["op"]](llm, msg)
        except Exception as e:  # noqa: BLE001 - reported to the caller, the worker keeps serving
            traceback.print_exc()
            answer = {"ok": False, "error": f"{type(e).__name__}: {e}"}
        out.write(json.dumps(answer) + "\n")


if __name__ == "__main__":
    main()
