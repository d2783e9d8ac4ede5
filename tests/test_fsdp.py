"""The FSDP learner: one step under ``torchrun --nproc-per-node 2`` (gloo, CPU) on a tiny random Qwen3
equals one single-process step on the whole batch with the same DPPO loss and FP32 head."""

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

# Shared by the torchrun ranks and the reference: the model, the batch, the settings.
COMMON = textwrap.dedent("""
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM
    from tmax.rl.fsdp import Sample

    # SGD, not AdamW: its first step is about lr * sign(grad), blind to a wrongly scaled gradient.
    # The clip (below the gradient norm of ~0.027) is active.
    LR, CLIP, MICRO, LOSS, KW = 10.0, 0.01, 2, "dppo_tv", {"delta": 0.1}

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
    from tmax.rl.fsdp import full_state_dict, shard, sharded_step

    dist.init_process_group("gloo")
    policy = shard(model())
    optim = torch.optim.SGD(policy.parameters(), lr=LR)
    stats = sharded_step(policy, optim, batch(), LOSS, KW, MICRO, CLIP)
    sd = full_state_dict(policy)
    if dist.get_rank() == 0:
        torch.save({"state": sd, "stats": stats}, sys.argv[1])
    dist.destroy_process_group()
""")


def _reference(ns: dict) -> tuple[dict, float, float]:
    """The single-process step: the whole batch in one forward, the same loss, clip and optimiser."""
    from tmax.rl.fsdp import _tensors
    from tmax.rl.logprobs import sequence_logprobs
    from tmax.rl.losses import LOSSES

    m = ns["model"]()
    optim = torch.optim.SGD(m.parameters(), lr=ns["LR"])
    ids, attn, mask, old, adv = _tensors(ns["batch"](), 0, "cpu")
    loss, _ = LOSSES[ns["LOSS"]](sequence_logprobs(m, ids, attn), old, adv, mask, **ns["KW"])
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(m.parameters(), ns["CLIP"]).item()
    optim.step()
    return m.state_dict(), loss.item(), norm


def test_two_rank_fsdp_step_equals_a_single_process_step(tmp_path, record_property):
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
    ref, ref_loss, ref_norm = _reference(ns)
    initial = ns["model"]().state_dict()
    assert set(got["state"]) == set(ref)
    diff = max((got["state"][k] - ref[k]).abs().max().item() for k in ref)
    moved = max((ref[k] - initial[k]).abs().max().item() for k in ref)
    record_property("fsdp_vs_single_max_abs_diff", diff)
    print(f"FSDP (2 ranks) vs single process after one step: max |diff| {diff:.2e}; "
          f"largest parameter move {moved:.2e}; loss {got['stats']['loss']:.6f} vs {ref_loss:.6f}; "
          f"grad norm {got['stats']['grad_norm']:.6f} vs {ref_norm:.6f}")
    assert moved > 1e-3  # a real step...
    assert diff < 1e-6  # ...and the same one
    assert got["stats"]["loss"] == pytest.approx(ref_loss, abs=1e-5)
    assert got["stats"]["grad_norm"] == pytest.approx(ref_norm, rel=1e-4)  # the gradients' scale, before clipping


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
