#!/usr/bin/env python3
"""Weight push to the vLLM engine, measured side by side: a safetensors file (in /dev/shm) read by
vLLM's loader against a broadcast over the engine's own process group (gloo on CPU), for

1. the embedded model (SmolLM2-135M), and
2. a ~0.5B random-weight model from a Qwen2.5-0.5B-style config (``from_config``: nothing downloaded,
   the embedded tokenizer beside it).

Each push is the whole call the trainer makes (``VLLMEngine.push_weights``: the fp32 master weights
cast to the engine's dtype, carried over, loaded and repacked by vLLM, prefix cache reset); the two
transports alternate on one engine and the median of ``--repeats`` pushes is reported.

Usage: python benchmarks/weight_sync.py [--repeats 3] [--dtype bfloat16] [--skip-large]
The last line gives the ratios (file time / collective time).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

# Qwen2.5-0.5B's shape: 494M parameters, the embeddings tied to the LM head.
QWEN_HALF_B = dict(hidden_size=896, intermediate_size=4864, num_hidden_layers=24, num_attention_heads=14,
                   num_key_value_heads=2, vocab_size=151936, max_position_embeddings=4096, tie_word_embeddings=True,
                   rope_theta=1_000_000.0, rms_norm_eps=1e-6)


def random_qwen_folder(out: Path, dtype: str) -> Path:
    """A Qwen-style model with random weights saved to ``out`` with the embedded tokenizer."""
    import torch
    from transformers import AutoTokenizer, Qwen2Config, Qwen2ForCausalLM

    from tmax.agent.hf import embedded_model_dir

    torch.manual_seed(0)
    model = Qwen2ForCausalLM(Qwen2Config(**QWEN_HALF_B)).to(getattr(torch, dtype))
    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(embedded_model_dir()).save_pretrained(out)
    return out


def push_times(folder: Path, dtype: str, repeats: int) -> dict:
    """Median push seconds per transport on one engine, and the parameter count."""
    import torch
    from transformers import AutoModelForCausalLM

    from tmax.agent.vllm_engine import VLLMEngine

    master = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)  # the trainer's fp32 weights
    state = master.state_dict()
    engine = VLLMEngine(model_path=str(folder), dtype=dtype, seed=0, max_model_len=1024)
    if engine.weight_transport != "collective":
        raise SystemExit("the process group with the vLLM worker did not form: nothing to compare")
    times: dict[str, list[float]] = {"file": [], "collective": []}
    moves: dict[str, list[float]] = {"file": [], "collective": []}  # the push less vLLM's own reload
    try:
        for _ in range(repeats):
            for transport in times:
                engine.weight_transport = transport
                engine.push_weights(state)
                times[transport].append(engine.last_push["seconds"])
                moves[transport].append(engine.last_push["seconds"] - engine.last_push["load_s"])
    finally:
        engine.close()
    params = sum(p.numel() for p in master.parameters())
    return {"params": params, **{k: statistics.median(v) for k, v in times.items()},
            **{f"{k}_move": statistics.median(v) for k, v in moves.items()}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float32"])
    ap.add_argument("--skip-large", action="store_true", help="only the embedded model")
    args = ap.parse_args()

    from tmax.agent.hf import embedded_model_dir

    rows = {"embedded": push_times(embedded_model_dir(), args.dtype, args.repeats)}
    if not args.skip_large:
        with tempfile.TemporaryDirectory(prefix="tmax-qwen-0.5b-") as tmp:
            rows["qwen-0.5b"] = push_times(random_qwen_folder(Path(tmp), args.dtype), args.dtype, args.repeats)
    print("push: the whole push_weights call; move: the same less vLLM's reload (cast, carry, read in)")
    print(f"{'model':<12} {'params':>8} {'file push':>10} {'coll. push':>11} {'file move':>10} {'coll. move':>11}")
    for name, r in rows.items():
        print(f"{name:<12} {r['params'] / 1e6:>7.0f}M {r['file']:>9.2f}s {r['collective']:>10.2f}s "
              f"{r['file_move']:>9.2f}s {r['collective_move']:>10.2f}s")
    print("file/collective time: " + ", ".join(
        f"{name} push {r['file'] / r['collective']:.2f}x move {r['file_move'] / r['collective_move']:.2f}x"
        for name, r in rows.items()))


if __name__ == "__main__":
    main()
