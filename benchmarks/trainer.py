#!/usr/bin/env python3
"""Trainer cost, measured side by side in one run:

1. a DPPO step (FP32 chunked head + DPPO-TV loss + clip + AdamW) against a bare
   forward+backward+optimizer step (the model's own logits and cross-entropy) on the same tokens;
   goal <= 1.15x;
2. peak memory of the chunked FP32-head loss against naive full fp32 logits at a 151k vocabulary;
   goal <= 0.5x (each variant in a fresh process, peak RSS above the process's baseline);
3. TRL's GRPOTrainer step time on the same model and batch, when trl is installed (goal <= 1.0x).

Usage: python benchmarks/trainer.py [--batch 8] [--seq 512] [--repeats 5]
The last line gives the ratios.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time


def tiny_model(vocab: int, hidden: int = 256, layers: int = 4):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=vocab, hidden_size=hidden, intermediate_size=hidden * 3, num_hidden_layers=layers,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096, tie_word_embeddings=False)
    return LlamaForCausalLM(cfg)


def step_times(batch: int, seq: int, repeats: int, vocab: int) -> tuple[float, float]:
    import torch

    from tmax.rl.logprobs import sequence_logprobs
    from tmax.rl.losses import dppo_binary_tv

    model = tiny_model(vocab)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-6)
    ids = torch.randint(0, vocab, (batch, seq))
    attn = torch.ones_like(ids)
    mask = (torch.rand(batch, seq - 1) < 0.7).float()
    old = torch.full((batch, seq - 1), -3.0)
    adv = torch.randn(batch, 1).expand(batch, seq - 1)

    def bare():
        opt.zero_grad(set_to_none=True)
        logits = model(ids, attention_mask=attn).logits[:, :-1]
        ce = torch.nn.functional.cross_entropy(logits.reshape(-1, vocab), ids[:, 1:].reshape(-1), reduction="none")
        ((ce * mask.reshape(-1)).sum() / mask.sum()).backward()
        opt.step()

    def dppo():
        opt.zero_grad(set_to_none=True)
        logp = sequence_logprobs(model, ids, attn, chunk=1024)
        loss, _ = dppo_binary_tv(logp, old, adv, mask)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()

    results = {}
    for name, fn in (("bare", bare), ("dppo", dppo)):
        fn()  # warm up
    for _ in range(repeats):  # interleave so machine noise hits both alike
        for name, fn in (("bare", bare), ("dppo", dppo)):
            t0 = time.perf_counter()
            fn()
            results.setdefault(name, []).append(time.perf_counter() - t0)
    return statistics.median(results["bare"]), statistics.median(results["dppo"])


def memory_child(variant: str, batch: int, seq: int, vocab: int) -> None:
    """Peak RSS growth (MB) of one loss forward+backward over the head, in this fresh process."""
    import torch

    from tmax.rl.logprobs import fp32_head_logprobs

    torch.manual_seed(0)
    hidden = torch.randn(batch, seq, 576, requires_grad=True)
    head = torch.nn.Linear(576, vocab, bias=False).to(torch.bfloat16)
    targets = torch.randint(0, vocab, (batch, seq))
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if variant == "chunked":
        logp = fp32_head_logprobs(hidden, head, targets, chunk=1024)
    else:
        logits = hidden.float() @ head.weight.float().t()
        logp = torch.log_softmax(logits, -1).gather(-1, targets[..., None])[..., 0]
    logp.sum().backward()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"mb": (peak - base) / 1024}))


def memory(batch: int, seq: int, vocab: int) -> tuple[float, float]:
    out = {}
    for variant in ("naive", "chunked"):
        p = subprocess.run([sys.executable, __file__, "--memory-child", variant, "--batch", str(batch), "--seq", str(seq),
                            "--vocab", str(vocab)], capture_output=True, text=True, check=True)
        out[variant] = json.loads(p.stdout.strip().splitlines()[-1])["mb"]
    return out["naive"], out["chunked"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--vocab", type=int, default=151_936)
    ap.add_argument("--step-vocab", type=int, default=49_152, help="vocabulary of the step-time model (SmolLM2's)")
    ap.add_argument("--memory-child")
    args = ap.parse_args()
    if args.memory_child:
        memory_child(args.memory_child, args.batch, args.seq, args.vocab)
        return
    bare, dppo = step_times(args.batch, args.seq, args.repeats, args.step_vocab)
    print(f"step: bare fwd+bwd+AdamW {bare * 1000:.0f} ms, DPPO step {dppo * 1000:.0f} ms "
          f"(batch {args.batch} x {args.seq}, vocab {args.step_vocab})")
    naive, chunked = memory(4, 1024, args.vocab)
    print(f"memory: naive fp32 logits {naive:.0f} MB, chunked fp32 head {chunked:.0f} MB "
          f"(4 x 1024 tokens, vocab {args.vocab})")
    try:
        import trl  # noqa: F401

        trl_note = "trl installed but its GRPOTrainer step is not measured by this script yet"
    except ImportError:
        trl_note = "trl not installed: GRPOTrainer comparison skipped"
    print(trl_note)
    print(f"RESULT DPPO step / bare step = {dppo / bare:.2f}x (goal <= 1.15) | "
          f"chunked / naive peak memory = {chunked / naive:.2f}x (goal <= 0.5) | TRL: not measured")


if __name__ == "__main__":
    main()
