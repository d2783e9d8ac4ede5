#!/usr/bin/env python3
"""GPU check: the trainer's speed and the train/inference mismatch on a random-weight Qwen3-style model,
with nothing downloaded. On a GPU the model has ~0.6B parameters; on a CPU (or with ``--tiny``) it is
tiny, so the same code runs everywhere and cannot rot.

It reports, as one JSON object (``--out FILE``, and the last line of stdout):

- ``trainer``: the local learner's DPPO step in bf16 (fp32 master weights, body under autocast, fused
  FP32 head): tokens/s and MFU = tokens/s x 6 x params / peak FLOP/s. The peak is the datasheet's
  dense bf16 rate for an H100/H200, else a measured bf16 matmul rate (``peak_source`` says which);
- ``generation``: tokens/s of the HF engine's sampler (bf16), and of vLLM when its venv exists
  (``scripts/vllm_venv.sh``; it is not installed from here, and ``skipped`` says why when absent);
- ``weight_sync_s``: seconds from the trainer's weights to an engine that samples with them;
- ``logprob_gap``: max |engine - trainer| logprob of the engine's sampled tokens, with the trainer's
  FP32 head and with the model's own head in bf16 (the engine: vLLM if present, else HF in bf16).

Usage: python benchmarks/gpu_check.py [--tiny] [--no-vllm] [--out report.json]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from pathlib import Path

import torch

# Dense bf16 peak by the vendors' datasheets (FLOP/s), by a substring of torch.cuda.get_device_name().
PEAK_BF16 = {"H200": 989e12, "H100 NVL": 835e12, "H100 PCIe": 756e12, "H100": 989e12}

# Qwen3-0.6B's shape (vocabulary 151,936, tied embeddings: ~0.6B parameters), and a tiny one.
SHAPES = {
    "0.6b": dict(vocab_size=151_936, hidden_size=1024, intermediate_size=3072, num_hidden_layers=28,
                 num_attention_heads=16, num_key_value_heads=8, head_dim=128, tie_word_embeddings=True),
    # head_dim 64: vLLM's CPU attention has no kernel for smaller heads
    "tiny": dict(vocab_size=1024, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                 num_attention_heads=2, num_key_value_heads=1, head_dim=64, tie_word_embeddings=True),
}
# What each size runs: the training batch (sequences x tokens, model tokens after the prompt), timed
# steps, and generation (prompts x new tokens).
WORK = {
    "0.6b": dict(seqs=32, seq_len=2048, prompt_len=256, micro_batch=8, steps=3, gen_prompts=64, gen_tokens=256),
    "tiny": dict(seqs=4, seq_len=64, prompt_len=16, micro_batch=2, steps=2, gen_prompts=4, gen_tokens=16),
}


def sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def build_model(shape: dict, device: str):
    """A seeded random Qwen3 in fp32 (the trainer's master weights)."""
    from transformers import Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(0)
    cfg = Qwen3Config(max_position_embeddings=4096, use_cache=False, **shape)
    return Qwen3ForCausalLM(cfg).to(device)


def peak_flops(device: str) -> tuple[float, str]:
    """Dense bf16 FLOP/s: the datasheet's for a known GPU, else a measured matmul rate."""
    if device.startswith("cuda"):
        name = torch.cuda.get_device_name()
        for key, peak in PEAK_BF16.items():
            if key in name:
                return peak, f"datasheet ({name})"
    n = 8192 if device.startswith("cuda") else 512
    a = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    a @ b  # warm-up
    sync(device)
    reps, t0 = 5, time.perf_counter()
    for _ in range(reps):
        a @ b
    sync(device)
    return 2 * n**3 * reps / (time.perf_counter() - t0), f"measured bf16 matmul {n}^3 on {device}"


def training_batch(work: dict, vocab: int):
    from tmax.rl.trainer import Sample

    g = torch.Generator().manual_seed(1)
    out = []
    for i in range(work["seqs"]):
        n, p = work["seq_len"], work["prompt_len"]
        ids = torch.randint(0, vocab, (n,), generator=g).tolist()
        behaviour = (-math.log(vocab) - torch.rand(n - p, generator=g) * 0.1).tolist()
        out.append(Sample(ids, [0] * p + [1] * (n - p), [0.0] * p + behaviour, 1.0 if i % 2 else -1.0))
    return out


def trainer_speed(model, work: dict, device: str, params: int) -> dict:
    """Seconds per DPPO step of the local learner in bf16, and the MFU they make."""
    from tmax.rl.config import TrainConfig
    from tmax.rl.trainer import LocalLearner

    cfg = TrainConfig(tasks=["-"], device=device, dtype="bfloat16", micro_batch=work["micro_batch"], lr=1e-6)
    learner = LocalLearner(cfg)
    learner.build(model)
    batch = training_batch(work, model.config.vocab_size)
    learner.step(batch, 0)  # warm-up: kernels, the allocator, AdamW's state
    sync(device)
    t0 = time.perf_counter()
    for _ in range(work["steps"]):
        stats = learner.step(batch, 0)
    sync(device)
    step_s = (time.perf_counter() - t0) / work["steps"]
    tokens = sum(len(s.ids) for s in batch)
    peak, source = peak_flops(device)
    tps = tokens / step_s
    return {"step_s": step_s, "tokens_per_step": tokens, "tokens_per_s": tps, "mfu": tps * 6 * params / peak,
            "peak_tflops": peak / 1e12, "peak_source": source, "loss": stats["loss"]}


def hf_engine(model, device: str):
    """The HF engine's model: a bf16 copy, as HFPolicy holds it with dtype=bfloat16."""
    import copy

    return copy.deepcopy(model).to(torch.bfloat16).eval()


def prompts(work: dict, vocab: int) -> list[list[int]]:
    g = torch.Generator().manual_seed(2)
    return [torch.randint(0, vocab, (32,), generator=g).tolist() for _ in range(work["gen_prompts"])]


def hf_generation(engine, work: dict, device: str) -> tuple[dict, list[tuple[list[int], list[int], list[float]]]]:
    """Tokens/s of the HF engine's sampler (tmax.agent.sampling.decode, what HFPolicy runs), and the
    samples with their behaviour logprobs."""
    from tmax.agent.sampling import decode

    ps = prompts(work, engine.config.vocab_size)
    with torch.no_grad():
        decode(engine, ps[:2], 2, 0, set(), 1.0, device=device)  # warm-up
        sync(device)
        t0 = time.perf_counter()
        out = decode(engine, ps, work["gen_tokens"], 0, set(), 1.0, device=device)
        sync(device)
    seconds = time.perf_counter() - t0
    new = sum(len(gen) for gen, _ in out)
    return ({"tokens_per_s": new / seconds, "new_tokens": new, "prompts": len(ps), "seconds": seconds},
            [(p, gen, lps) for p, (gen, lps) in zip(ps, out)])


def hf_weight_sync(model, engine, device: str) -> float:
    """What the trainer's push costs an in-process HF engine: its load_weights, a cast copy of the
    local learner's weights (the model's state dict)."""
    sync(device)
    t0 = time.perf_counter()
    with torch.no_grad():
        engine.load_state_dict(model.state_dict())
    sync(device)
    return time.perf_counter() - t0


def vllm_part(model, folder: Path, work: dict, wanted: bool) -> tuple[dict, float | None, list | None]:
    """vLLM's generation tokens/s, weight push seconds and samples, or why it was skipped."""
    from tmax.agent.vllm_engine import VLLMEngine, vllm_python

    if not wanted:
        return {"skipped": "--no-vllm"}, None, None
    if vllm_python() is None:
        return {"skipped": "no vLLM venv (scripts/vllm_venv.sh makes one; this check installs nothing)"}, None, None
    try:
        from transformers import AutoTokenizer

        from tmax.agent.hf import embedded_model_dir

        model.save_pretrained(folder)
        AutoTokenizer.from_pretrained(embedded_model_dir()).save_pretrained(folder)  # vLLM needs a tokenizer
    except Exception as e:  # noqa: BLE001 - reported, the rest of the check goes on
        return {"skipped": f"no local tokenizer for vLLM: {type(e).__name__}: {e}"}, None, None
    engine = None
    try:
        engine = VLLMEngine(model_path=str(folder), dtype="bfloat16", seed=0, max_batch=work["gen_prompts"])
        ps = [[t % len(engine.tokenizer) for t in p] for p in prompts(work, model.config.vocab_size)]
        engine._run_batch([{"prompt": ps[0], "max_tokens": 2}])  # warm-up
        t0 = time.perf_counter()
        out = engine._run_batch([{"prompt": p, "max_tokens": work["gen_tokens"]} for p in ps])
        seconds = time.perf_counter() - t0
        new = sum(len(ids) for ids, _, _ in out)
        t1 = time.perf_counter()
        engine.push_weights(model.state_dict(), 1)
        push = time.perf_counter() - t1
        return ({"tokens_per_s": new / seconds, "new_tokens": new, "prompts": len(ps), "seconds": seconds,
                 "head_dtype": getattr(engine, "head_dtype", "")},  # the engine's own LM head
                push, [(p, ids, lps) for p, (ids, lps, _) in zip(ps, out)])
    except Exception as e:  # noqa: BLE001 - reported, the rest of the check goes on
        return {"error": f"{type(e).__name__}: {e}"}, None, None
    finally:
        if engine is not None:
            engine.close()


def logprob_gaps(model, samples: list, device: str) -> dict:
    """Max |engine - trainer| over the sampled tokens: the trainer with its FP32 head (body in bf16),
    and with the model's own head in bf16."""
    from tmax.rl.logprobs import body_autocast, sequence_logprobs

    fp32_head = bf16_head = 0.0
    model.eval()
    with torch.no_grad(), body_autocast(device, "bfloat16"):
        for prompt, gen, lps in samples:
            if not gen:
                continue
            ids = torch.tensor([prompt + gen], device=device)
            attn = torch.ones_like(ids)
            engine = torch.tensor(lps, device=device, dtype=torch.float32)
            ours = sequence_logprobs(model, ids, attn)[0, len(prompt) - 1:]
            logits = model(input_ids=ids, attention_mask=attn).logits[0, len(prompt) - 1:-1]  # bf16 head
            theirs = torch.log_softmax(logits.float(), -1).gather(-1, ids[0, len(prompt):, None])[:, 0]
            fp32_head = max(fp32_head, (ours - engine).abs().max().item())
            bf16_head = max(bf16_head, (theirs - engine).abs().max().item())
    return {"fp32_head_max": fp32_head, "bf16_head_max": bf16_head, "tokens": sum(len(g) for _, g, _ in samples)}


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tiny", action="store_true", help="the tiny model, even on a GPU")
    ap.add_argument("--out", type=Path, help="write the report (JSON) here too")
    ap.add_argument("--no-vllm", action="store_true", help="skip vLLM even where its venv exists (its start is slow)")
    args = ap.parse_args(argv)
    started = time.perf_counter()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    size = "tiny" if args.tiny or device == "cpu" else "0.6b"
    shape, work = SHAPES[size], WORK[size]
    report: dict = {"device": device, "gpu": torch.cuda.get_device_name() if device == "cuda" else None,
                    "size": size, "torch": torch.__version__}
    with tempfile.TemporaryDirectory(prefix="tmax-gpu-check-") as tmp:
        folder = Path(tmp) / "model"
        model = build_model(shape, device)
        params = sum(p.numel() for p in model.parameters())
        report["model"] = {"params": params, "layers": shape["num_hidden_layers"], "hidden": shape["hidden_size"],
                           "vocab": shape["vocab_size"]}
        log(f"model: random Qwen3-style, {params / 1e6:.1f}M parameters on {device}")

        engine = hf_engine(model, device)
        hf_gen, hf_samples = hf_generation(engine, work, device)
        log(f"HF engine (bf16): {hf_gen['tokens_per_s']:.0f} new tokens/s")
        sync_s = {"hf": hf_weight_sync(model, engine, device)}
        del engine
        vllm_gen, vllm_push, vllm_samples = vllm_part(model, folder, work, not args.no_vllm)
        log(f"vLLM: {vllm_gen}")
        report["generation"] = {"hf": hf_gen, "vllm": vllm_gen}
        if vllm_push is not None:
            sync_s["vllm"] = vllm_push
        report["weight_sync_s"] = sync_s
        report["logprob_gap"] = {"engine": "vllm-bf16" if vllm_samples else "hf-bf16",
                                 **logprob_gaps(model, vllm_samples or hf_samples, device)}
        log(f"logprob gap: {report['logprob_gap']}")
        report["trainer"] = trainer_speed(model, work, device, params)
        log(f"trainer: {report['trainer']['tokens_per_s']:.0f} tokens/s, MFU {report['trainer']['mfu']:.1%} "
            f"of {report['trainer']['peak_tflops']:.1f} TFLOP/s ({report['trainer']['peak_source']})")
    report["wall_s"] = time.perf_counter() - started
    text = json.dumps(report, sort_keys=True)
    if args.out:
        args.out.write_text(text + "\n")
    print(text, flush=True)
    return report


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
