#!/usr/bin/env python3
"""Trainer cost, measured side by side in one run:

1. a DPPO step (the trainer's masked_policy_loss: FP32 head fused with the DPPO-TV loss, chunked,
   on the model tokens only; clip; AdamW) against a bare forward+backward+optimizer step (the
   model's own logits over every position, masked cross-entropy) on the same tokens; goal <= 1.15x;
2. peak memory of the chunked FP32-head loss (fused_head_loss) against naive full fp32 logits at a
   151k vocabulary; goal <= 0.5x (each variant in a fresh process, peak RSS above its baseline);
3. a whole RL step (sample G completions for each of B prompts, rewards, advantages, the DPPO update,
   the weight push to the engine) against TRL's GRPOTrainer step (its own generation and GRPO update)
   on the same tiny model, prompts, group size and completion length, when trl is installed
   (`pip install trl`); goal <= 1.0x. Neither side runs sandboxes here: this is the trainer's cost.

Usage: python benchmarks/trainer.py [--batch 8] [--seq 512] [--repeats 5] [--rl-steps 4]
The last line gives the ratios.
"""

from __future__ import annotations

import argparse
import json
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


def step_times(batch: int, seq: int, repeats: int, vocab: int) -> tuple[float, float, float]:
    """Median seconds of (bare step, DPPO step, DPPO step with the head on every position)."""
    import torch

    from tmax.rl.logprobs import masked_policy_loss
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

    def dppo(on=mask):
        opt.zero_grad(set_to_none=True)
        loss, _, _ = masked_policy_loss(model, ids, attn, on, old, adv, dppo_binary_tv, {}, int(on.sum()))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()

    def dppo_every_position():  # the fusion alone: the head on every position, as the bare step
        dppo(torch.ones_like(mask))

    variants = (("bare", bare), ("dppo", dppo), ("dppo_all", dppo_every_position))
    results = {}
    for name, fn in variants:
        fn()  # warm up
    for _ in range(repeats):  # interleave so machine noise hits all alike
        for name, fn in variants:
            t0 = time.perf_counter()
            fn()
            results.setdefault(name, []).append(time.perf_counter() - t0)
    return tuple(statistics.median(results[name]) for name, _ in variants)


def _tiny_chat_model(folder):
    """A small random Llama with SmolLM2's tokenizer and chat template, saved as a plain HF folder."""
    from transformers import AutoTokenizer

    from tmax.agent.hf import embedded_model_dir

    tok = AutoTokenizer.from_pretrained(embedded_model_dir())
    model = tiny_model(len(tok))
    model.config.eos_token_id = tok.eos_token_id
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


PROMPTS = [[{"role": "user", "content": f"Count the files in /app/data{i} and write the number to /app/answer.txt."}]
           for i in range(64)]


def tmax_rl_steps(folder, prompts: int, group: int, completion: int, steps: int) -> list[float]:
    """Per-step seconds of tmax's RL step on synthetic single-turn groups: the engine samples, a
    random reward per completion, centered advantages, Trainer.train_step (DPPO-TV, FP32 head), push."""
    import random

    import torch

    from tmax.agent.hf import HFPolicy
    from tmax.rl.advantages import Traj, advantages
    from tmax.rl.config import TrainConfig
    from tmax.rl.rollout import Rollout, RolloutSession
    from tmax.rl.trainer import Trainer

    cfg = TrainConfig(tasks=["-"], model=str(folder), group_size=group, prompts_per_step=prompts,
                      micro_batch=prompts * group, lr=1e-6)
    trainer = Trainer.__new__(Trainer)  # the real update and push, without tasks or sandboxes
    trainer.cfg = cfg
    trainer.engine = HFPolicy(model_path=str(folder), temperature=1.0, max_batch=prompts * group)
    from transformers import AutoModelForCausalLM

    from tmax.rl.trainer import LocalLearner

    trainer.learner = LocalLearner(cfg)
    trainer.learner.build(AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32))
    trainer.version, trainer.pool, trainer.lead = 0, None, True
    trainer.pad = trainer.engine.tokenizer.pad_token_id or 0
    rng = random.Random(0)
    times = []
    for step in range(steps + 1):
        t0 = time.perf_counter()
        batch = PROMPTS[(step * prompts) % len(PROMPTS):][:prompts]
        ids = [trainer.engine.prompt_ids(m, None) for m in batch for _ in range(group)]
        outs = trainer.engine._run_batch([{"prompt": p, "max_tokens": completion} for p in ids])
        groups = []
        for g in range(prompts):
            rollouts = []
            for j in range(group):
                p, (gen, lps, _) = ids[g * group + j], outs[g * group + j]
                sess = RolloutSession(trainer.engine, ids=p + gen, mask=[0] * len(p) + [1] * len(gen),
                                      logprobs=[0.0] * len(p) + lps, versions=[-1] * len(p) + [0] * len(gen))
                rollouts.append(Rollout(traj=Traj(reward=rng.random()), session=sess, task="t", turns=1, outcome="x"))
            advantages([r.traj for r in rollouts], "centered")
            groups.append(rollouts)
        trainer.train_step(groups)
        trainer.version += 1
        trainer._push_weights()
        if step:  # the first step warms up
            times.append(time.perf_counter() - t0)
    return times


def trl_grpo_steps(folder, prompts: int, group: int, completion: int, steps: int, out) -> list[float]:
    """Per-step seconds of TRL's GRPOTrainer (generation + update) on the same model and prompts."""
    import random

    from datasets import Dataset
    from transformers import AutoTokenizer, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    rng = random.Random(0)

    def reward(completions, **kw):
        return [rng.random() for _ in completions]

    times, marks = [], {}

    class Clock(TrainerCallback):
        def on_step_begin(self, args, state, control, **kw):
            marks["t0"] = time.perf_counter()

        def on_step_end(self, args, state, control, **kw):
            times.append(time.perf_counter() - marks["t0"])

    cfg = GRPOConfig(output_dir=str(out), per_device_train_batch_size=prompts * group, num_generations=group,
                     max_completion_length=completion, learning_rate=1e-6, max_steps=steps + 1, logging_steps=1,
                     use_cpu=True, report_to=[], bf16=False, beta=0.0, save_strategy="no", disable_tqdm=True,
                     temperature=1.0, top_k=0, shuffle_dataset=False)
    tok = AutoTokenizer.from_pretrained(folder)
    ds = Dataset.from_list([{"prompt": m} for m in PROMPTS])
    trainer = GRPOTrainer(model=str(folder), reward_funcs=[reward], args=cfg, train_dataset=ds, processing_class=tok,
                          callbacks=[Clock()])
    trainer.train()
    return times[1:]


def _status_mb(field: str) -> float:
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"/proc/self/status has no {field}")


def memory_child(variant: str, batch: int, seq: int, vocab: int) -> None:
    """Peak RSS growth (MB) of one loss forward+backward over the head, in this fresh process.

    The peak is this process's VmHWM, reset just before (ru_maxrss would not do: Linux carries it
    over from the parent through fork and exec)."""
    import torch

    from tmax.rl.logprobs import fused_head_loss

    torch.manual_seed(0)
    hidden = torch.randn(batch * seq, 576, requires_grad=True)
    head = torch.nn.Linear(576, vocab, bias=False, dtype=torch.bfloat16)
    targets = torch.randint(0, vocab, (batch * seq,))
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # resets VmHWM to the current RSS
    base = _status_mb("VmRSS")
    if variant == "chunked":
        loss, _ = fused_head_loss(hidden, head, targets, lambda lp, s, e: -lp.sum() / len(targets), chunk=1024)
    else:
        logits = hidden.float() @ head.weight.float().t()
        loss = -torch.log_softmax(logits, -1).gather(-1, targets[:, None]).sum() / len(targets)
    loss.backward()
    print(json.dumps({"mb": _status_mb("VmHWM") - base}))


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
    ap.add_argument("--rl-prompts", type=int, default=2)
    ap.add_argument("--rl-group", type=int, default=8)
    ap.add_argument("--rl-tokens", type=int, default=64, help="completion length of the RL-step comparison")
    ap.add_argument("--rl-steps", type=int, default=4)
    ap.add_argument("--memory-child")
    args = ap.parse_args()
    if args.memory_child:
        memory_child(args.memory_child, args.batch, args.seq, args.vocab)
        return
    bare, dppo, dppo_all = step_times(args.batch, args.seq, args.repeats, args.step_vocab)
    print(f"step: bare fwd+bwd+AdamW {bare * 1000:.0f} ms, DPPO step {dppo * 1000:.0f} ms (head on the 70% model "
          f"tokens), {dppo_all * 1000:.0f} ms = {dppo_all / bare:.2f}x with the head on every position "
          f"(batch {args.batch} x {args.seq}, vocab {args.step_vocab})")
    naive, chunked = memory(4, 1024, args.vocab)
    print(f"memory: naive fp32 logits {naive:.0f} MB, chunked fp32 head {chunked:.0f} MB "
          f"(4 x 1024 tokens, vocab {args.vocab})")
    trl_part = "TRL: not installed (pip install trl)"
    try:
        import trl  # noqa: F401
    except ImportError:
        print("trl not installed: the GRPOTrainer comparison is skipped")
    else:
        import tempfile
        from pathlib import Path

        with tempfile.TemporaryDirectory() as tmp:
            folder = _tiny_chat_model(Path(tmp) / "model")
            ours = statistics.median(tmax_rl_steps(folder, args.rl_prompts, args.rl_group, args.rl_tokens,
                                                   args.rl_steps))
            theirs = statistics.median(trl_grpo_steps(folder, args.rl_prompts, args.rl_group, args.rl_tokens,
                                                      args.rl_steps, Path(tmp) / "trl"))
        print(f"RL step ({args.rl_prompts} prompts x {args.rl_group}, {args.rl_tokens} new tokens, trl "
              f"{trl.__version__}): tmax {ours:.2f} s, TRL GRPOTrainer {theirs:.2f} s")
        trl_part = f"tmax RL step / TRL GRPOTrainer step = {ours / theirs:.2f}x (goal <= 1.0)"
    print(f"RESULT DPPO step / bare step = {dppo / bare:.2f}x (goal <= 1.15) | "
          f"chunked / naive peak memory = {chunked / naive:.2f}x (goal <= 0.5) | {trl_part}")

if __name__ == "__main__":
    main()
