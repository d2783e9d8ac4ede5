"""The trainer, top to bottom: collect groups of rollouts, filter, compute advantages, one optimiser
step on the DPPO loss with the FP32 head, push the weights to the engine, log, checkpoint.

The loop is written once. Where the weights live and how a step is taken is the learner's business:
:class:`LocalLearner` here (one process), ``tmax.rl.fsdp.FSDPLearner`` (sharded over ranks under
torchrun). Rank 0 alone holds the tasks, the engine and the run directory; the batch it collects is
shared with the other ranks, which only train.

Asynchrony: with ``async_rollouts``, rollout threads (as many groups at once as ``rollout_workers``
can run, up to the prompts of a step) keep filling a queue with groups while the learner trains; a
group whose oldest token is more than ``max_staleness`` versions behind is dropped. Weights are
pushed to the engine after every step. Without it, rollouts and training alternate, and every
rollout samples under seeds derived from (seed, step, group, rollout, turn), so a run is
deterministic however many rollout workers share the engine, and a resumed run redoes a step
exactly (the engine's own process history does not enter).
"""

from __future__ import annotations

import itertools
import json
import queue
import random
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Protocol

import torch

from tmax.agent import HarnessConfig
from tmax.rl import checkpoint
from tmax.rl.advantages import advantages, prepare_rewards
from tmax.rl.config import TrainConfig
from tmax.rl.losses import LOSSES
from tmax.rl.rollout import Rollout, collect_group

METRICS = "metrics.jsonl"


def expand_tasks(paths: list[str]):
    """The tasks under ``paths`` that load (tmax.discover's rule, as every verb uses it)."""
    from tmax.discover import load_tasks

    tasks, _ = load_tasks(paths)
    if not tasks:
        raise ValueError(f"no loadable task under {paths}")
    return tasks


class ProducerFailed(RuntimeError):
    """The asynchronous rollout producer stopped on an exception (its cause)."""


# -- the learner: what differs between one process and many -----------------------------------------
@dataclass
class Sample:
    """One trajectory as the learner sees it (what rank 0 shares with the other ranks)."""

    ids: list[int]
    mask: list[int]
    logprobs: list[float]
    advantage: float


def samples_of(groups: list[list[Rollout]]) -> list[Sample]:
    return [Sample(r.session.ids, r.session.mask, r.session.logprobs, r.traj.advantage) for g in groups for r in g]


class Learner(Protocol):
    """The model and its optimiser, wherever they live. ``model`` is the plain causal LM (under FSDP its
    parameters are shards); methods marked collective must be called on every rank."""

    rank: int
    world: int
    model: torch.nn.Module

    def build(self, model: torch.nn.Module) -> None:
        """Take the fp32 model (rank 0's weights win), wrap it, make the optimiser. Collective."""

    def step(self, samples: list[Sample], pad: int) -> dict:
        """One optimiser step on the whole batch ``samples`` (the same list on every rank). Collective."""

    def weights(self) -> dict:
        """The full state dict with the model's own names, for the engines (complete on rank 0). Collective."""

    def state_dict(self) -> dict[str, dict]:
        """What a checkpoint holds, one file per entry (complete on rank 0). Collective."""

    def load(self, files: dict[str, dict]) -> None:
        """Restore what :meth:`state_dict` gave (every rank reads the checkpoint's files)."""

    def share(self, obj):
        """Rank 0's ``obj`` on every rank. Collective."""


class PolicyLoss(torch.nn.Module):
    """The causal LM and the policy loss through the fused FP32 head, as one forward: every learner
    trains through this module (under FSDP it is the root unit, so the head weight is whole in it)."""

    def __init__(self, model: torch.nn.Module, cfg: TrainConfig):
        super().__init__()
        self.model = model
        self.loss_fn, self.loss_kwargs = LOSSES[cfg.loss], cfg.loss_kwargs
        self.chunk, self.temperature = cfg.logprob_chunk, cfg.temperature

    def forward(self, ids, attn, mask, old, adv, total_tokens: int):
        from tmax.rl.logprobs import masked_policy_loss

        return masked_policy_loss(self.model, ids, attn, mask, old, adv, self.loss_fn, self.loss_kwargs,
                                  total_tokens, self.chunk, self.temperature)


def batch_tensors(samples: list[Sample], pad: int, device) -> tuple[torch.Tensor, ...]:
    """ids, attention mask [B, L]; loss mask, behaviour logprobs, advantages [B, L-1] (right-padded)."""
    L = max(len(s.ids) for s in samples)

    def rows(xs, fill, dtype=None):
        return torch.tensor([x + [fill] * (L - len(x)) for x in xs], device=device, dtype=dtype)

    ids = rows([s.ids for s in samples], pad)
    attn = rows([[1] * len(s.ids) for s in samples], 0)
    mask = rows([s.mask for s in samples], 0, torch.float32)[:, 1:]
    old = rows([s.logprobs for s in samples], 0.0, torch.float32)[:, 1:]
    adv = torch.tensor([[s.advantage] * L for s in samples], device=device, dtype=torch.float32)[:, 1:]
    return ids, attn, mask, old, adv


def trained_tokens(samples: list[Sample]) -> int:
    return sum(sum(s.mask) for s in samples)


NO_UPDATE = {"loss": None, "masked_fraction": None, "logprob_gap_max": None, "logprob_gap_mean": None,
             "entropy": None}


class StepTotals:
    """Sums over a step's micro-batches (one rank's share under FSDP) of what the step reports."""

    def __init__(self):
        self.sums = torch.zeros(4, dtype=torch.float64)  # loss, masked fraction, |gap| sum, -logp sum
        self.gap_max = torch.zeros(1, dtype=torch.float64)

    def add(self, loss: torch.Tensor, logp: torch.Tensor, old: torch.Tensor, stats: dict, share: float) -> None:
        if not logp.numel():  # a filler micro-batch with no trained token
            return
        gap = (logp - old).abs()
        self.sums += torch.tensor([loss.item(), stats["masked_fraction"] * share, gap.sum().item(),
                                   (-logp).sum().item()], dtype=torch.float64)
        self.gap_max = torch.maximum(self.gap_max, gap.max().double().cpu().reshape(1))

    def report(self, total: int, trajectories: int, grad_norm: float) -> dict:
        loss, masked, gaps, neg_logp = self.sums.tolist()
        return {"loss": loss, "masked_fraction": masked, "logprob_gap_max": self.gap_max.item(),
                "logprob_gap_mean": gaps / total, "entropy": neg_logp / total, "grad_norm": grad_norm,
                "trained_tokens": total, "trajectories": trajectories}


def backward_micro_batches(policy: PolicyLoss, micro_batches: list[list[Sample]], total: int, pad: int,
                           cfg: TrainConfig, loss_scale: float = 1.0) -> StepTotals:
    """Forward and backward of each micro-batch; each loss is its share of the batch's token mean, so
    the gradients add up to the whole batch's. ``loss_scale`` undoes FSDP's mean over ranks."""
    from tmax.rl.logprobs import body_autocast

    totals = StepTotals()
    for mb in micro_batches:
        ids, attn, mask, old, adv = batch_tensors(mb, pad, cfg.device)
        with body_autocast(cfg.device, cfg.dtype):  # fp32 master weights, the body computing in cfg.dtype
            loss, logp, stats = policy(ids, attn, mask, old, adv, total)
        (loss * loss_scale if loss_scale != 1.0 else loss).backward()
        with torch.no_grad():
            totals.add(loss.detach(), logp.detach(), old[mask > 0], stats, mask.sum().item() / total)
    return totals


def micro_batches(samples: list[Sample], size: int) -> list[list[Sample]]:
    return [samples[s:s + size] for s in range(0, len(samples), size)]


def adamw(params, cfg: TrainConfig) -> torch.optim.Optimizer:
    return torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay)


class LocalLearner:
    """The learner in this process: the model on ``cfg.device``, AdamW over its fp32 parameters."""

    rank, world = 0, 1

    def __init__(self, cfg: TrainConfig):
        self.cfg = cfg

    def build(self, model: torch.nn.Module) -> None:
        self.model = model
        self.policy = PolicyLoss(model, self.cfg)
        self.optim = adamw(model.parameters(), self.cfg)

    def step(self, samples: list[Sample], pad: int) -> dict:
        total = trained_tokens(samples)
        if total == 0:
            return dict(NO_UPDATE)
        self.model.train()
        self.optim.zero_grad(set_to_none=True)
        totals = backward_micro_batches(self.policy, micro_batches(samples, self.cfg.micro_batch), total, pad,
                                        self.cfg)
        grad_norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.cfg.grad_clip).item()
        self.optim.step()
        return totals.report(total, len(samples), grad_norm)

    def weights(self) -> dict:
        return self.model.state_dict()

    def state_dict(self) -> dict[str, dict]:
        return {"model": self.model.state_dict(), "optim": self.optim.state_dict()}

    def load(self, files: dict[str, dict]) -> None:
        self.model.load_state_dict(files["model"])
        if "optim" in files:  # absent in a checkpoint an FSDP run wrote: its optimiser state is sharded by name
            self.optim.load_state_dict(files["optim"])

    def share(self, obj):
        return obj


def load_model(cfg: TrainConfig) -> torch.nn.Module:
    """The causal LM in fp32 whatever cfg.dtype: AdamW's updates at lr 1e-6 are far below a bf16 weight's
    resolution, so bf16 parameters would barely move. The body computes in cfg.dtype (autocast)."""
    from transformers import AutoModelForCausalLM

    from tmax.agent.hf import resolve_model

    model = AutoModelForCausalLM.from_pretrained(resolve_model(cfg.model), dtype=torch.float32).to(cfg.device)
    model.config.use_cache = False
    return model


# -- the trainer -------------------------------------------------------------------------------------
class Trainer:
    """The RL loop over a learner (:class:`LocalLearner` unless given one)."""

    def __init__(self, cfg: TrainConfig, log=print, learner: Learner | None = None):
        self.cfg = cfg
        self.learner = learner or LocalLearner(cfg)
        self.lead = self.learner.rank == 0  # the rank that rolls out, logs and writes the run directory
        self.log = log if self.lead else (lambda s: None)
        self.out = Path(cfg.out)
        self.tasks, self.engine, self.pool, self.harness = [], None, None, None
        if self.lead:
            self.out.mkdir(parents=True, exist_ok=True)
            (self.out / "config.json").write_text(json.dumps(asdict(cfg), indent=1) + "\n")
        torch.manual_seed(cfg.seed)
        if self.lead:
            self.tasks = expand_tasks(cfg.tasks)
        model = load_model(cfg)
        if self.lead:
            self._start_engines()
        self.pad = self.learner.share(self._pad_id() if self.lead else None)
        self.step = 0
        self.version = 0
        found = self.learner.share(self._latest() if self.lead else None)  # (folder, state) or None
        if found is None and cfg.warm_start_jobs and self.lead:
            self._warm_start(model)  # before build: the learner spreads rank 0's weights
        self.learner.build(model)
        if found is not None:
            self.learner.load(checkpoint.load_tensors(found[0]))
            self._restore(found[1])
        self._push_weights()

    @property
    def model(self) -> torch.nn.Module:
        return self.learner.model

    def _start_engines(self) -> None:
        from tmax.agent.hf import resolve_model
        from tmax.rl.engines import ChatTemplate, EngineSpec, build_engine

        cfg = self.cfg
        spec = EngineSpec.from_config(cfg, resolve_model(cfg.model))
        self.harness = HarnessConfig(max_steps=cfg.max_turns, max_tokens_per_turn=cfg.max_tokens_per_turn,
                                     command_timeout=cfg.command_timeout)
        if cfg.rollout_backend == "ray":  # each actor builds its own engine; here only the chat side
            from tmax.rl.ray_pool import RayRolloutPool

            self.engine = ChatTemplate(spec.model_path)
            self.pool = RayRolloutPool(cfg.ray_actors, spec, self.harness, cfg.backend, cfg.max_total_tokens)
        else:  # vLLM: its own venv and process; weights go by a process group
            self.engine = build_engine(spec)

    def _pad_id(self) -> int:
        return self.engine.tokenizer.pad_token_id or 0

    # -- checkpoints (crash-safe: tmax.rl.checkpoint) ------------------------------------------------
    def save(self) -> None:
        files = self.learner.state_dict()  # collective under FSDP
        if self.lead:
            checkpoint.save_tensors(self.out, self.step, files, {"version": self.version})

    def _latest(self) -> tuple[str, dict] | None:
        ck = checkpoint.latest(self.out)
        if ck is None:
            (self.out / METRICS).unlink(missing_ok=True)
            return None
        return str(ck), checkpoint.read_state(ck)

    def _restore(self, state: dict) -> None:
        """Step and version from a checkpoint; metrics of later steps are dropped (they will be redone)."""
        self.step, self.version = state["step"], state["version"]
        m = self.out / METRICS
        if self.lead and m.exists():
            keep = [ln for ln in m.read_text().splitlines() if ln and json.loads(ln)["step"] <= self.step]
            m.write_text("".join(ln + "\n" for ln in keep))
        self.log(f"resumed at step {self.step}")

    def _warm_start(self, model: torch.nn.Module) -> None:
        from tmax.rl.sft import successful_conversations, warm_start

        convs = successful_conversations(self.cfg.warm_start_jobs)
        self.log(f"warm start: {len(convs)} successful trajectories from {len(self.cfg.warm_start_jobs)} job(s)")
        summary = warm_start(model, self.engine, convs, epochs=self.cfg.warm_start_epochs,
                             lr=self.cfg.warm_start_lr, micro_batch=self.cfg.micro_batch,
                             max_tokens=self.cfg.max_total_tokens, seed=self.cfg.seed, log=self.log)
        (self.out / "warm_start.json").write_text(json.dumps(summary, indent=1) + "\n")

    def _push_weights(self) -> None:
        sd = self.learner.weights()  # collective under FSDP
        if not self.lead:
            return
        if self.pool is not None:
            self.pool.push_weights(sd, self.version)
        if hasattr(self.engine, "push_weights"):  # an engine in another process
            self.engine.push_weights(sd, self.version)
            return
        self.engine.load_weights(sd, self.version)

    # -- rollouts ---------------------------------------------------------------------------------
    def _group(self, rng: random.Random) -> tuple[list[Rollout], bool]:
        cfg = self.cfg
        task = self.tasks[rng.randrange(len(self.tasks))]
        seed = rng.randrange(2**31)  # the group's sampling seed: its tokens depend on (cfg.seed, step) only
        if self.pool is not None:
            group = self.pool.collect_group(task, cfg.group_size, cfg.rollout_workers,
                                            None if cfg.async_rollouts else seed, cfg.max_prompt_tokens)
        else:
            group = collect_group(task, self.engine, cfg.group_size, self.harness, cfg.backend, cfg.rollout_workers,
                                  cfg.max_total_tokens, seed=None if cfg.async_rollouts else seed,
                                  max_prompt_tokens=cfg.max_prompt_tokens)
        usable = prepare_rewards([r.traj for r in group], cfg.never_submitted, cfg.truncated)
        keep = advantages(usable, cfg.advantage)
        return [r for r in group if r.traj in usable], keep

    def _producer(self, q: queue.Queue, stop: threading.Event, indices) -> None:
        """Fill ``q`` with groups until ``stop``; ``indices`` (shared by all producer threads) numbers
        the groups. A full queue makes it wait with its group (no work is thrown away, and staleness
        stays bounded by the queue's length); an exception ends it by putting the exception on the
        queue, where the learner raises it."""
        while not stop.is_set():
            rng = random.Random(f"{self.cfg.seed}:async:{next(indices)}")
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
        """One optimiser step on the kept groups (on rank 0; the loop shares the batch with the others)."""
        return self.learner.step(samples_of(groups), self.pad)

    # -- the loop ---------------------------------------------------------------------------------
    def run(self) -> None:
        cfg = self.cfg
        q: queue.Queue | None = None
        stop = threading.Event()
        if cfg.async_rollouts and self.lead:
            q = queue.Queue(maxsize=cfg.prompts_per_step * 2)
            # enough groups in flight at once to keep every rollout worker busy: the engine batches
            # their turns, so a CPU or GPU decodes rollout_workers sequences per step, not group_size
            indices = itertools.count()
            for _ in range(max(1, min(cfg.prompts_per_step, cfg.rollout_workers // cfg.group_size))):
                threading.Thread(target=self._producer, args=(q, stop, indices), daemon=True).start()
        try:
            started = time.monotonic()
            while self.step < cfg.steps:
                t0 = time.monotonic()
                if not cfg.async_rollouts:  # sampling depends only on (seed, step): a resumed run redoes it exactly
                    torch.manual_seed(cfg.seed * 1_000_003 + self.step)
                # rank 0 samples and filters; every rank trains on the same batch
                batch = self.learner.share(self._collect(q) if self.lead else None)
                samples, stats = batch
                upd = self.learner.step(samples, self.pad)
                self.step += 1
                self.version += 1
                self._push_weights()
                row = {"step": self.step, "version": self.version, **stats, **upd,
                       "step_time": time.monotonic() - t0}
                if self.lead:
                    with open(self.out / METRICS, "a") as f:
                        f.write(json.dumps(row, sort_keys=True) + "\n")
                self.log(f"step {self.step}: reward {_fmt(stats['reward'])} pass {_fmt(stats['pass_rate'])} "
                         f"kept {stats['groups_kept']}/{stats['groups_seen']} loss {_fmt(upd['loss'])} "
                         f"masked {_fmt(upd['masked_fraction'])} gap {_fmt(upd['logprob_gap_max'])} "
                         f"{row['step_time']:.1f}s")
                # rank 0's clock decides, so that every rank stops after the same step
                out_of_time = self.learner.share(
                    out_of_budget(time.monotonic() - started, row["step_time"], cfg.max_minutes))
                if self.step % cfg.checkpoint_every == 0 or self.step == cfg.steps or out_of_time:
                    self.save()
                    if self.lead:
                        plot_metrics(self.out)
                if out_of_time:
                    self.log(f"stopping after step {self.step}: another step would end past the {cfg.max_minutes} "
                             "minute budget")
                    break
        finally:
            stop.set()

    def _collect(self, q: queue.Queue | None) -> tuple[list[Sample], dict]:
        groups, stats = self.collect_batch(q)
        return samples_of(groups), stats


def out_of_budget(elapsed_s: float, last_step_s: float, max_minutes: float | None) -> bool:
    """True when another step as long as the last would end past the wall-clock budget: a budget is a
    deadline for the last step's end, not for its start."""
    return max_minutes is not None and elapsed_s + last_step_s > max_minutes * 60


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
