"""The trainer, top to bottom: collect groups of rollouts, filter, compute advantages, one optimiser
step on the DPPO loss with the FP32 head, push the weights to the engine, log, checkpoint.

Asynchrony: with ``async_rollouts``, a rollout thread keeps filling a queue with groups produced by
the engine while the learner trains; a group whose oldest token is more than ``max_staleness``
versions behind is dropped. Weights are pushed to the engine after every step. Without it, rollouts
and training alternate, which with one rollout worker is fully deterministic (exact resume).
"""

from __future__ import annotations

import json
import queue
import random
import threading
import time
from dataclasses import asdict
from pathlib import Path

from tmax.agent import HarnessConfig
from tmax.rl import checkpoint
from tmax.rl.advantages import advantages, prepare_rewards
from tmax.rl.config import TrainConfig
from tmax.rl.losses import LOSSES
from tmax.rl.rollout import Rollout, collect_group
from tmax.task import load_task

METRICS = "metrics.jsonl"


def expand_tasks(paths: list[str]):
    from tmax.task import TaskError

    tasks = []
    for p in map(Path, paths):
        dirs = [p] if (p / "task.toml").exists() or (p / "task.yaml").exists() else sorted(
            d for d in p.iterdir() if d.is_dir())
        for d in dirs:
            try:
                tasks.append(load_task(d))
            except TaskError:
                continue
    if not tasks:
        raise ValueError(f"no loadable task under {paths}")
    return tasks


class ProducerFailed(RuntimeError):
    """The asynchronous rollout producer stopped on an exception (its cause)."""


class Trainer:
    def __init__(self, cfg: TrainConfig, log=print):
        import torch
        from transformers import AutoModelForCausalLM

        from tmax.agent.hf import HFPolicy, resolve_model

        self.cfg, self.log = cfg, log
        self.out = Path(cfg.out)
        self.out.mkdir(parents=True, exist_ok=True)
        (self.out / "config.json").write_text(json.dumps(asdict(cfg), indent=1) + "\n")
        torch.manual_seed(cfg.seed)
        self.tasks = expand_tasks(cfg.tasks)
        path = resolve_model(cfg.model)
        # fp32 master weights whatever cfg.dtype: AdamW's updates at lr 1e-6 are far below a bf16 weight's
        # resolution, so bf16 parameters would barely move. The body computes in cfg.dtype (autocast).
        self.model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).to(cfg.device)
        self.model.config.use_cache = False
        self.optim = torch.optim.AdamW(self.model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
        if cfg.engine == "vllm":  # vLLM runs in its own venv, in a subprocess; weights reach it as a file
            from tmax.agent.vllm_engine import VLLMEngine

            self.engine = VLLMEngine(model_path=str(path), temperature=cfg.temperature, top_p=cfg.top_p,
                                     seed=cfg.seed, dtype=cfg.dtype)
        else:
            self.engine = HFPolicy(model_path=str(path), device=cfg.device, temperature=cfg.temperature,
                                   top_p=cfg.top_p, seed=cfg.seed, dtype=cfg.dtype)
        self.harness = HarnessConfig(max_steps=cfg.max_turns, max_tokens_per_turn=cfg.max_tokens_per_turn,
                                     command_timeout=cfg.command_timeout)
        self.pool = None
        if cfg.rollout_backend == "ray":  # rollouts on Ray actors, each with its own engine copy
            from tmax.rl.ray_pool import RayRolloutPool

            self.pool = RayRolloutPool(cfg.ray_actors, str(path), self.harness, cfg.backend, cfg.max_total_tokens,
                                       cfg.temperature, cfg.top_p, cfg.seed, cfg.device)
        self.step = 0
        self.version = 0
        if not self._resume() and cfg.warm_start_jobs:
            self._warm_start()
        self._push_weights()

    # -- checkpoints (crash-safe: tmax.rl.checkpoint) ------------------------------------------------
    def save(self) -> None:
        import torch

        def write(folder: Path) -> None:
            torch.save(self.model.state_dict(), folder / "model.pt")
            torch.save(self.optim.state_dict(), folder / "optim.pt")

        checkpoint.save(self.out, self.step, write, {"version": self.version})

    def _resume(self) -> bool:
        import torch

        ck = checkpoint.latest(self.out)
        if ck is None:
            (self.out / METRICS).unlink(missing_ok=True)
            return False
        self.model.load_state_dict(torch.load(ck / "model.pt"))
        self.optim.load_state_dict(torch.load(ck / "optim.pt"))
        self._restore(checkpoint.read_state(ck))
        return True

    def _restore(self, state: dict) -> None:
        """Step and version from a checkpoint; metrics of later steps are dropped (they will be redone)."""
        self.step, self.version = state["step"], state["version"]
        m = self.out / METRICS
        if m.exists():
            keep = [ln for ln in m.read_text().splitlines() if ln and json.loads(ln)["step"] <= self.step]
            m.write_text("".join(ln + "\n" for ln in keep))
        self.log(f"resumed at step {self.step}")

    def _warm_start(self) -> None:
        from tmax.rl.sft import successful_conversations, warm_start

        convs = successful_conversations(self.cfg.warm_start_jobs)
        self.log(f"warm start: {len(convs)} successful trajectories from {len(self.cfg.warm_start_jobs)} job(s)")
        summary = warm_start(self.model, self.engine, convs, epochs=self.cfg.warm_start_epochs,
                             lr=self.cfg.warm_start_lr, micro_batch=self.cfg.micro_batch,
                             max_tokens=self.cfg.max_total_tokens, seed=self.cfg.seed, log=self.log)
        (self.out / "warm_start.json").write_text(json.dumps(summary, indent=1) + "\n")

    def _push_weights(self) -> None:
        if self.pool is not None:
            self.pool.push_weights(self.model.state_dict(), self.version)
        if hasattr(self.engine, "push_weights"):  # an engine in another process
            self.engine.push_weights(self.model.state_dict(), self.version)
            return
        self.engine.load_weights(self.model.state_dict(), self.version)

    # -- rollouts ---------------------------------------------------------------------------------
    def _group(self, rng: random.Random) -> tuple[list[Rollout], bool]:
        cfg = self.cfg
        task = self.tasks[rng.randrange(len(self.tasks))]
        if self.pool is not None:
            group = self.pool.collect_group(task, cfg.group_size, cfg.rollout_workers)
        else:
            group = collect_group(task, self.engine, cfg.group_size, self.harness, cfg.backend, cfg.rollout_workers,
                                  cfg.max_total_tokens)
        usable = prepare_rewards([r.traj for r in group], cfg.never_submitted, cfg.truncated)
        keep = advantages(usable, cfg.advantage)
        return [r for r in group if r.traj in usable], keep

    def _producer(self, q: queue.Queue, stop: threading.Event) -> None:
        """Fill ``q`` with groups until ``stop``. A full queue makes it wait with its group (no work is
        thrown away, and staleness stays bounded by the queue's length); an exception ends it by
        putting the exception on the queue, where the learner raises it."""
        i = 0
        while not stop.is_set():
            rng = random.Random(f"{self.cfg.seed}:async:{i}")
            i += 1
            try:
                item = self._group(rng)
            except BaseException as e:  # noqa: BLE001 - handed to the learner, which raises it
                item = ProducerFailed(f"the rollout producer failed: {type(e).__name__}: {e}")
                item.__cause__ = e
            while not stop.is_set():
                try:
                    q.put(item, timeout=1)
                    break
                except queue.Full:
                    continue
            if isinstance(item, ProducerFailed):
                return

    def _next_group(self, q: queue.Queue) -> tuple[list[Rollout], bool]:
        item = q.get()
        if isinstance(item, ProducerFailed):
            raise item
        return item

    def collect_batch(self, q: queue.Queue | None) -> tuple[list[list[Rollout]], dict]:
        cfg = self.cfg
        kept, seen, stale, all_rollouts = [], 0, 0, []
        rng = random.Random(f"{cfg.seed}:step:{self.step}")
        while len(kept) < cfg.prompts_per_step and seen < cfg.prompts_per_step * cfg.max_refill_factor:
            group, keep = self._next_group(q) if q is not None else self._group(rng)
            seen += 1
            all_rollouts += group
            versions = [r.min_version for r in group if r.min_version >= 0]  # -1: no generated token
            if versions and self.version - min(versions) > cfg.max_staleness:
                stale += 1
                continue
            if keep:
                kept.append(group)
        rewards = [r.traj.reward for r in all_rollouts if r.traj.reward is not None]
        stats = {"groups_seen": seen, "groups_kept": len(kept), "kept_fraction": len(kept) / max(1, seen),
                 "stale_groups": stale, "reward": _mean(rewards),
                 "pass_rate": _mean([1.0 if x >= 1.0 else 0.0 for x in rewards]),
                 "turns": _mean([r.turns for r in all_rollouts]),
                 "tokens": _mean([len(r.session.ids) for r in all_rollouts]),
                 "staleness": _mean([self.version - r.min_version for g in kept for r in g if r.min_version >= 0]),
                 "infra_errors": sum(1 for r in all_rollouts if r.traj.reward is None)}
        return kept, stats

    # -- the update -------------------------------------------------------------------------------
    def train_step(self, groups: list[list[Rollout]]) -> dict:
        import torch

        from tmax.rl.logprobs import body_autocast, masked_policy_loss

        cfg = self.cfg
        rollouts = [r for g in groups for r in g]
        total_tokens = sum(sum(r.session.mask) for r in rollouts)
        if not rollouts or total_tokens == 0:
            return {"loss": None, "masked_fraction": None, "logprob_gap_max": None, "logprob_gap_mean": None,
                    "entropy": None}
        self.model.train()
        self.optim.zero_grad(set_to_none=True)
        loss_fn, kw = LOSSES[cfg.loss], cfg.loss_kwargs
        losses, masked, gaps, gap_max, ent = 0.0, 0.0, 0.0, 0.0, 0.0
        for s in range(0, len(rollouts), cfg.micro_batch):
            mb = rollouts[s:s + cfg.micro_batch]
            L = max(len(r.session.ids) for r in mb)
            pad = self.engine.tokenizer.pad_token_id or 0
            ids = torch.tensor([r.session.ids + [pad] * (L - len(r.session.ids)) for r in mb], device=cfg.device)
            attn = torch.tensor([[1] * len(r.session.ids) + [0] * (L - len(r.session.ids)) for r in mb],
                                device=cfg.device)
            mask = torch.tensor([r.session.mask + [0] * (L - len(r.session.ids)) for r in mb], device=cfg.device,
                                dtype=torch.float32)[:, 1:]
            old = torch.tensor([r.session.logprobs + [0.0] * (L - len(r.session.ids)) for r in mb], device=cfg.device,
                               dtype=torch.float32)[:, 1:]
            adv = torch.tensor([[r.traj.advantage] * L for r in mb], device=cfg.device, dtype=torch.float32)[:, 1:]
            if not mask.any():
                continue
            with body_autocast(cfg.device, cfg.dtype):
                loss, logp, st = masked_policy_loss(self.model, ids, attn, mask, old, adv, loss_fn, kw, total_tokens,
                                                    cfg.logprob_chunk, cfg.temperature)
            loss.backward()
            share = mask.sum().item() / total_tokens
            losses += loss.item()
            masked += st["masked_fraction"] * share
            with torch.no_grad():
                gap = (logp - old[mask > 0]).abs()
                gaps += gap.sum().item()
                gap_max = max(gap_max, gap.max().item())
                ent += (-logp).sum().item()
        grad_norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), cfg.grad_clip).item()
        self.optim.step()
        return {"loss": losses, "masked_fraction": masked, "logprob_gap_max": gap_max,
                "logprob_gap_mean": gaps / total_tokens, "entropy": ent / total_tokens, "grad_norm": grad_norm,
                "trained_tokens": total_tokens, "trajectories": len(rollouts)}

    # -- the loop ---------------------------------------------------------------------------------
    def run(self) -> None:
        cfg = self.cfg
        q: queue.Queue | None = None
        stop = threading.Event()
        producer = None
        if cfg.async_rollouts:
            q = queue.Queue(maxsize=cfg.prompts_per_step * 2)
            producer = threading.Thread(target=self._producer, args=(q, stop), daemon=True)
            producer.start()
        try:
            started = time.monotonic()
            while self.step < cfg.steps:
                t0 = time.monotonic()
                if not cfg.async_rollouts:  # sampling depends only on (seed, step): a resumed run redoes it exactly
                    import torch

                    torch.manual_seed(cfg.seed * 1_000_003 + self.step)
                groups, stats = self.collect_batch(q)
                upd = self.train_step(groups)
                self.step += 1
                self.version += 1
                self._push_weights()
                row = {"step": self.step, "version": self.version, **stats, **upd,
                       "step_time": time.monotonic() - t0}
                with open(self.out / METRICS, "a") as f:
                    f.write(json.dumps(row, sort_keys=True) + "\n")
                self.log(f"step {self.step}: reward {_fmt(stats['reward'])} pass {_fmt(stats['pass_rate'])} "
                         f"kept {stats['groups_kept']}/{stats['groups_seen']} loss {_fmt(upd['loss'])} "
                         f"masked {_fmt(upd['masked_fraction'])} gap {_fmt(upd['logprob_gap_max'])} "
                         f"{row['step_time']:.1f}s")
                out_of_time = cfg.max_minutes is not None and time.monotonic() - started > cfg.max_minutes * 60
                if self.step % cfg.checkpoint_every == 0 or self.step == cfg.steps or out_of_time:
                    self.save()
                    plot_metrics(self.out)
                if out_of_time:
                    self.log(f"stopping after step {self.step}: the {cfg.max_minutes} minute budget is spent")
                    break
        finally:
            stop.set()


def _mean(xs):
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else None


def _fmt(x) -> str:
    return "-" if x is None else f"{x:.3f}"


def plot_metrics(out: Path) -> Path | None:
    path = out / METRICS
    if not path.exists():
        return None
    rows = [json.loads(ln) for ln in path.read_text().splitlines() if ln]
    if not rows:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = ["reward", "pass_rate", "kept_fraction", "masked_fraction", "logprob_gap_max", "entropy", "loss",
            "step_time"]
    fig, axes = plt.subplots(2, 4, figsize=(16, 6.5))
    for ax, key in zip(axes.flat, keys):
        pts = [(r["step"], r[key]) for r in rows if r.get(key) is not None]
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=".")
        ax.set_title(key)
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
    fig.tight_layout()
    png = out / "curves.png"
    fig.savefig(png, dpi=80)
    plt.close(fig)
    return png
