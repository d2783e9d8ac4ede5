"""The FSDP learner: one step under ``torchrun --nproc-per-node 2`` (gloo, CPU) on a tiny random Qwen3
equals the local learner's step on the whole batch in one process (same DPPO loss, same fused FP32
head, same optimiser), and the distributed training run checkpoints and resumes."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap

import pytest

torch = pytest.importorskip("torch", reason="needs torch (scripts/setup.sh installs it)")

from conftest import save_tiny_chat_model  # noqa: E402
pytest.importorskip("transformers", reason="needs transformers (scripts/setup.sh installs it)")

# Shared by the torchrun ranks and the single process: the model, the batch, the settings.
COMMON = textwrap.dedent("""
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM
    from tmax.rl.config import TrainConfig
    from tmax.rl.trainer import Sample

    # micro-batches of 2 over 7 trajectories: 4 on one rank, 3 (and a filler) on the other; the clip
    # (below the gradient norm of ~0.03) is active; fp32 throughout.
    CFG = TrainConfig(tasks=["-"], lr=1e-3, grad_clip=0.01, micro_batch=2, loss="dppo_tv", logprob_chunk=16)

    def model():
        torch.manual_seed(0)
        cfg = Qwen3Config(vocab_size=300, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                          num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=128,
                          tie_word_embeddings=False)
        m = Qwen3ForCausalLM(cfg)
        m.config.use_cache = False
        return m

    def batch():
        g = torch.Generator().manual_seed(1)
        out = []
        for i in range(7):  # odd: the ranks get unequal shares
            n = 12 + 3 * i
            ids = torch.randint(1, 300, (n,), generator=g).tolist()
            mask = [0] * 5 + [1] * (n - 5)
            lps = [0.0] * 5 + (-torch.rand(n - 5, generator=g) * 3).tolist()
            out.append(Sample(ids, mask, lps, [0.5, -0.5, 1.0, -1.0, 0.25, -0.25, 0.5][i]))
        return out
""")

RANK = COMMON + textwrap.dedent("""
    import sys
    import torch.distributed as dist
    from tmax.rl.fsdp import FSDPLearner

    dist.init_process_group("gloo")
    learner = FSDPLearner(CFG)
    learner.build(model())
    stats = learner.step(batch(), 0)
    sd = learner.weights()
    if dist.get_rank() == 0:
        torch.save({"state": sd, "stats": stats}, sys.argv[1])
    dist.destroy_process_group()
""")


def test_the_fsdp_learner_on_two_ranks_makes_the_local_learners_step(tmp_path, record_property):
    from tmax.rl.logprobs import sequence_logprobs
    from tmax.rl.losses import LOSSES
    from tmax.rl.trainer import LocalLearner, batch_tensors

    torchrun = shutil.which("torchrun") or ""
    if not torchrun:
        pytest.skip("torchrun not on PATH")
    script = tmp_path / "rank.py"
    script.write_text(RANK)
    out = tmp_path / "fsdp.pt"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.run([torchrun, "--standalone", "--nproc-per-node", "2", str(script), str(out)],
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-6000:]
    got = torch.load(out)

    ns: dict = {}
    exec(COMMON, ns)  # noqa: S102 - the same definitions the ranks ran
    initial = ns["model"]()
    with torch.no_grad():  # the batch's loss in one forward, without the fused head: what both must report
        ids, attn, mask, old, adv = batch_tensors(ns["batch"](), 0, "cpu")
        one_pass, _ = LOSSES["dppo_tv"](sequence_logprobs(initial, ids, attn), old, adv, mask, delta=0.1)
    local = LocalLearner(ns["CFG"])
    local.build(ns["model"]())
    ref = local.step(ns["batch"](), 0)
    ref_state = local.weights()

    assert set(got["state"]) == set(ref_state)
    diff = max((got["state"][k] - ref_state[k]).abs().max().item() for k in ref_state)
    moved = max((ref_state[k] - v).abs().max().item() for k, v in initial.state_dict().items())
    record_property("fsdp_vs_local_max_abs_diff", diff)
    print(f"FSDP learner (2 ranks) vs local learner after one step: max |diff| {diff:.2e}; largest parameter "
          f"move {moved:.2e}; loss {got['stats']['loss']:.6f} vs {ref['loss']:.6f} (one pass {one_pass.item():.6f});"
          f" grad norm {got['stats']['grad_norm']:.6f} vs {ref['grad_norm']:.6f}")
    assert ref["loss"] == pytest.approx(one_pass.item(), abs=1e-5)  # micro-batches add up to the whole batch
    assert moved > 1e-4  # a real step...
    # ...and the same one: AdamW's first step is lr * g / (|g| + eps), which turns the rounding of a gradient
    # near eps (1e-8) into ~1e-7 of weight; a wrong share or scale moves weights by ~lr (1e-3)
    assert diff < 5e-6
    assert got["stats"]["loss"] == pytest.approx(ref["loss"], abs=1e-5)
    assert got["stats"]["grad_norm"] == pytest.approx(ref["grad_norm"], rel=1e-4)  # the gradients' scale
    assert ref["grad_norm"] > ns["CFG"].grad_clip  # so the clip acted on both
    for key in ("masked_fraction", "logprob_gap_max", "logprob_gap_mean", "entropy"):
        assert got["stats"][key] == pytest.approx(ref[key], abs=1e-5), key
    assert got["stats"]["trained_tokens"] == ref["trained_tokens"] == int(mask.sum())


@pytest.mark.slow  # ~1 min: two torchrun launches with real rollouts
def test_distributed_training_run_checkpoints_and_resumes(tmp_path, bwrap):
    """``torchrun -m tmax.rl.fsdp CONFIG``: rank 0 rolls out in real sandboxes (a coin-flip verifier, so
    groups have variance), both ranks train; the checkpoint is a plain state dict; a rerun resumes with
    the optimizer state."""
    import json

    from transformers import LlamaForCausalLM

    from tmax.task import write_task

    model = tmp_path / "tiny"
    save_tiny_chat_model(model, layers=2)
    task = write_task(tmp_path / "coin", name="coin", instruction="Do anything.",
                      files={"solution/solve.sh": "true\n",
                             "tests/test.sh": "#!/bin/bash\necho $(( $(od -An -N1 -tu1 /dev/urandom) % 2 )) "
                                              "> /logs/verifier/reward.txt\n"}, metadata={"image": "host"})
    out = tmp_path / "run"
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(json.dumps({"tasks": [str(task)], "model": str(model), "out": str(out), "steps": 2,
                               "prompts_per_step": 1, "group_size": 4, "micro_batch": 2, "max_turns": 1,
                               "max_tokens_per_turn": 16, "max_total_tokens": 4096, "async_rollouts": False,
                               "max_refill_factor": 8, "never_submitted": "keep", "lr": 0.01, "checkpoint_every": 1,
                               "backend": bwrap}))
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    cmd = [shutil.which("torchrun") or "torchrun", "--standalone", "--nproc-per-node", "2", "-m", "tmax.rl.fsdp",
           str(cfg)]
    for extra in ([], ["steps=3"]):
        proc = subprocess.run(cmd + extra, env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    assert "resumed at step 2" in proc.stdout + proc.stderr
    assert sorted(p.name for p in out.iterdir() if p.name.startswith(".")) == []  # rank 1 wrote nothing
    rows = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2, 3]
    trained = [r for r in rows if r.get("trained_tokens")]
    assert trained and all(r["logprob_gap_max"] < 1e-4 for r in trained)  # the engine got every update
    state = torch.load(out / "checkpoint" / "optim.fsdp.pt")["state"]
    assert {int(s["step"]) for s in state.values()} == {len(trained)}
    sd = torch.load(out / "checkpoint" / "model.pt")
    fresh = LlamaForCausalLM.from_pretrained(model)
    fresh.load_state_dict(sd)  # a plain state dict, every key
    initial = LlamaForCausalLM.from_pretrained(model).state_dict()
    assert max((sd[k] - v).abs().max().item() for k, v in initial.items()) > 1e-3
