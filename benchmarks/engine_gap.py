#!/usr/bin/env python3
"""The train/inference logprob gap of the vLLM engine (CPU) in bf16, with its LM head in fp32 against
its head in the model dtype, side by side.

For each setting one engine samples completions of the same prompts (same seeds); the trainer then
scores the sampled tokens as it does in a bf16 run: fp32 master weights, the body under bf16 autocast,
the FP32 head (``tmax.rl.logprobs``). Reported: max and mean |engine - trainer| over all sampled
tokens. The model is the embedded SmolLM2-135M.

Usage: python benchmarks/engine_gap.py [--prompts 8] [--tokens 64]
The last line gives the ratios (bf16 head / FP32 head; above 1 means the FP32 head is closer).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

QUESTIONS = ["List three shell commands.", "How do I count lines in a file?", "Explain what grep -v does.",
             "Write a haiku about tar.", "What does chmod 755 mean?", "How do I find large files?",
             "Show a bash loop over files.", "What is a symbolic link?", "How do I compress a folder?",
             "Explain pipes in the shell.", "How do I see running processes?", "What does sed do?"]


def gaps(fp32_head: bool, model, prompts: int, tokens: int):
    """|engine - trainer| logprob of every token the engine sampled."""
    import torch

    from tmax.agent.vllm_engine import VLLMEngine
    from tmax.rl.logprobs import body_autocast, sequence_logprobs

    engine = VLLMEngine(seed=0, dtype="bfloat16", fp32_head=fp32_head, weight_sync="file")
    out = []
    try:
        for q in QUESTIONS[:prompts]:
            prompt = engine.prompt_ids([{"role": "user", "content": q}], None)
            gen, lps, _ = engine.generate_ids(prompt, tokens)
            ids = torch.tensor([prompt + gen])
            with torch.no_grad(), body_autocast("cpu", "bfloat16"):
                trainer = sequence_logprobs(model, ids, torch.ones_like(ids))[0, len(prompt) - 1:]
            out.append((trainer - torch.tensor(lps)).abs())
    finally:
        engine.close()
    return torch.cat(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--prompts", type=int, default=8, help=f"at most {len(QUESTIONS)}")
    ap.add_argument("--tokens", type=int, default=64, help="sampled tokens per prompt")
    args = ap.parse_args()

    import torch
    from transformers import AutoModelForCausalLM

    from tmax.agent.hf import embedded_model_dir

    model = AutoModelForCausalLM.from_pretrained(embedded_model_dir(), dtype=torch.float32).eval()
    fp32, bf16 = gaps(True, model, args.prompts, args.tokens), gaps(False, model, args.prompts, args.tokens)
    print(f"{'engine head':<12} {'tokens':>7} {'max |gap|':>10} {'mean |gap|':>11}")
    for name, g in (("fp32", fp32), ("bf16", bf16)):
        print(f"{name:<12} {len(g):>7} {g.max().item():>10.4f} {g.mean().item():>11.4f}")
    print(f"bf16 head / FP32 head gap: max {bf16.max().item() / fp32.max().item():.2f}x, "
          f"mean {bf16.mean().item() / fp32.mean().item():.2f}x")


if __name__ == "__main__":
    main()
