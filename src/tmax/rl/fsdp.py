"""The learner sharded with FSDP2 (``fully_shard``) under torchrun: gloo on CPU, NCCL on GPUs.

    torchrun --nproc-per-node 2 -m tmax.rl.fsdp CONFIG.yaml [key=value ...]

Rank 0 runs the rollouts with its engine and writes the run directory; the kept trajectories are
broadcast; each rank computes the loss on its share of them and FSDP reduce-scatters the gradients,
so the update is the one a single process makes on the whole batch (the token mean is over the whole
batch, and the loss is scaled by the world size because FSDP averages gradients over ranks). After
each step the full weights are gathered and rank 0 pushes them to its engine.

The FP32 head stays: the chunked logprob function runs inside the root FSDP unit's forward, where the
embeddings and the LM head (kept in the root unit; the decoder layers are units of their own) are
unsharded, so ``fp32_head_logprobs`` sees the full head weight and its gradient is reduced with the rest.
"""

from __future__ import annotations

import dataclasses
import math
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.distributed as dist

from tmax.rl import checkpoint
from tmax.rl.logprobs import body_autocast, sequence_logprobs
from tmax.rl.losses import LOSSES
from tmax.rl.trainer import METRICS, Trainer


@dataclass
class Sample:
    """One trajectory as the learner sees it (what is broadcast from rank 0)."""

    ids: list[int]
    mask: list[int]
    logprobs: list[float]
    advantage: float


class LogprobModule(torch.nn.Module):
    """The causal LM plus the FP32-head logprob function as one forward, the root FSDP unit."""

    def __init__(self, model: torch.nn.Module, chunk: int = 1024, temperature: float = 1.0):
        super().__init__()
        self.model, self.chunk, self.temperature = model, chunk, temperature

    def forward(self, ids: torch.Tensor, attn: torch.Tensor) -> torch.Tensor:
        # a copy, not a view: FSDP hooks its backward on the output, and a view could lose the hook
        return sequence_logprobs(self.model, ids, attn, self.chunk, self.temperature).clone()


def shard(model: torch.nn.Module, chunk: int = 1024, temperature: float = 1.0) -> LogprobModule:
    """Each decoder layer (the model's ``_no_split_modules``) becomes an FSDP unit; the rest (embeddings,
    final norm, LM head) is the root unit. Every rank must start from the same weights."""
    from torch.distributed.fsdp import fully_shard

    layer_types = set(getattr(model, "_no_split_modules", None) or ())
    for m in model.modules():
        if type(m).__name__ in layer_types:
            fully_shard(m)
    root = LogprobModule(model, chunk, temperature)
    fully_shard(root)
    return root


def _tensors(mb: list[Sample], pad: int, device):
    L = max(len(s.ids) for s in mb)
    fill = lambda xs, v: xs + [v] * (L - len(xs))  # noqa: E731
    ids = torch.tensor([fill(s.ids, pad) for s in mb], device=device)
    attn = torch.tensor([fill([1] * len(s.ids), 0) for s in mb], device=device)
    mask = torch.tensor([fill(s.mask, 0) for s in mb], device=device, dtype=torch.float32)[:, 1:]
    old = torch.tensor([fill(s.logprobs, 0.0) for s in mb], device=device, dtype=torch.float32)[:, 1:]
    adv = torch.tensor([[s.advantage] * L for s in mb], device=device, dtype=torch.float32)[:, 1:]
    return ids, attn, mask, old, adv


def sharded_step(policy: LogprobModule, optim, samples: list[Sample], loss: str, loss_kwargs: dict,
                 micro_batch: int, grad_clip: float, pad: int = 0, device="cpu", dtype: str = "float32") -> dict:
    """One optimiser step on the whole batch ``samples`` (the same list on every rank)."""
    rank, world = dist.get_rank(), dist.get_world_size()
    total = sum(sum(s.mask) for s in samples)
    if total == 0:
        return {"loss": None, "masked_fraction": None, "logprob_gap_max": None, "logprob_gap_mean": None,
                "entropy": None}
    mine = samples[rank::world]
    # Every rank must run as many forward/backward passes as the others (each is a collective):
    # a rank whose share ran out runs a sample with no trained token.
    n_mb = math.ceil(math.ceil(len(samples) / world) / micro_batch)
    mine += [Sample([pad, pad], [0, 0], [0.0, 0.0], 0.0)] * (n_mb * micro_batch - len(mine))
    policy.train()
    optim.zero_grad(set_to_none=True)
    loss_fn = LOSSES[loss]
    acc = torch.zeros(5, dtype=torch.float64)  # loss, masked, gap sum, entropy sum, gap max
    for s in range(0, len(mine), micro_batch):
        ids, attn, mask, old, adv = _tensors(mine[s:s + micro_batch], pad, device)
        with body_autocast(device, dtype):  # fp32 sharded master weights, the body computing in dtype
            logp = policy(ids, attn)
        value, st = loss_fn(logp, old, adv, mask, **loss_kwargs)
        share = mask.sum().item() / total
        (value * (share * world)).backward()
        with torch.no_grad():
            gap = (logp.detach() - old).abs() * mask
            acc += torch.tensor([value.item() * share, st["masked_fraction"] * share, gap.sum().item(),
                                 (-logp.detach() * mask).sum().item(), gap.max().item()], dtype=torch.float64)
    grad_norm = torch.nn.utils.clip_grad_norm_(list(policy.parameters()), grad_clip)
    if hasattr(grad_norm, "full_tensor"):
        grad_norm = grad_norm.full_tensor()
    optim.step()
    sums, gap_max = acc[:4].clone(), acc[4:].clone()
    dist.all_reduce(sums)
    dist.all_reduce(gap_max, op=dist.ReduceOp.MAX)
    return {"loss": sums[0].item(), "masked_fraction": sums[1].item(), "logprob_gap_max": gap_max.item(),
            "logprob_gap_mean": sums[2].item() / total, "entropy": sums[3].item() / total,
            "grad_norm": grad_norm.item(), "trained_tokens": total, "trajectories": len(samples)}


def full_state_dict(policy: LogprobModule) -> dict:
    """The unsharded weights with the plain model's names (a collective: every rank must call it)."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

    sd = get_model_state_dict(policy, options=StateDictOptions(full_state_dict=True, cpu_offload=True))
    return {k.removeprefix("model."): v for k, v in sd.items()}


class DistributedTrainer(Trainer):
    """The trainer with a sharded learner. Rank 0 keeps the run directory; other ranks write their
    metrics under ``OUT/.rankN`` and read checkpoints from rank 0's."""

    def __init__(self, cfg, log=print):
        self.rank, self.world = dist.get_rank(), dist.get_world_size()
        self._policy = None
        self._root = Path(cfg.out)
        self._optim_state = None
        if self.rank:  # only rank 0 rolls out (and starts a Ray pool if asked to)
            cfg = dataclasses.replace(cfg, out=str(self._root / f".rank{self.rank}"), rollout_backend="thread")
        super().__init__(cfg, log if self.rank == 0 else (lambda s: None))
        with torch.no_grad():  # the same starting weights everywhere, whatever happened before
            for t in self.model.state_dict().values():
                dist.broadcast(t, src=0)
        self._policy = shard(self.model, cfg.logprob_chunk, cfg.temperature)
        self.optim = torch.optim.AdamW(self._policy.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
        if self._optim_state is not None:
            from torch.distributed.checkpoint.state_dict import StateDictOptions, set_optimizer_state_dict

            set_optimizer_state_dict(self._policy, self.optim, torch.load(self._optim_state),
                                     options=StateDictOptions(full_state_dict=True))

    # -- checkpoints: the full model (loadable by the single-process trainer) and the full optimizer state
    def save(self) -> None:
        from torch.distributed.checkpoint.state_dict import StateDictOptions, get_optimizer_state_dict

        model = full_state_dict(self._policy)
        optim = get_optimizer_state_dict(self._policy, self.optim,
                                         options=StateDictOptions(full_state_dict=True, cpu_offload=True))
        if self.rank == 0:
            def write(folder: Path) -> None:
                torch.save(model, folder / "model.pt")
                torch.save(optim, folder / "optim.fsdp.pt")

            checkpoint.save(self.out, self.step, write, {"version": self.version})
        dist.barrier()

    def _resume(self) -> bool:
        ck = checkpoint.latest(self._root) if self.rank == 0 else None
        found = [str(ck) if ck else None]
        dist.broadcast_object_list(found, src=0)  # every rank loads the folder rank 0 found
        if found[0] is None:
            if self.rank == 0:
                (self.out / METRICS).unlink(missing_ok=True)
            return False
        ck = Path(found[0])
        self.model.load_state_dict(torch.load(ck / "model.pt"))
        self._optim_state = ck / "optim.fsdp.pt" if (ck / "optim.fsdp.pt").exists() else None
        self._restore(checkpoint.read_state(ck))
        return True

    def _push_weights(self) -> None:
        if self._policy is None:  # still unsharded (from the base constructor)
            return super()._push_weights()
        sd = full_state_dict(self._policy)
        if self.rank == 0:
            if self.pool is not None:
                self.pool.push_weights(sd, self.version)
            if hasattr(self.engine, "push_weights"):
                self.engine.push_weights(sd, self.version)
            else:
                self.engine.load_weights(sd, self.version)

    # -- rollouts on rank 0, broadcast to all
    def _producer(self, q, stop) -> None:
        if self.rank == 0:
            super()._producer(q, stop)

    def collect_batch(self, q):
        payload = [None]
        if self.rank == 0:
            groups, stats = super().collect_batch(q)
            payload = [([[Sample(r.session.ids, r.session.mask, r.session.logprobs, r.traj.advantage) for r in g]
                         for g in groups], stats)]
        dist.broadcast_object_list(payload, src=0)
        return payload[0]

    def train_step(self, groups: list[list[Sample]]) -> dict:
        cfg = self.cfg
        return sharded_step(self._policy, self.optim, [s for g in groups for s in g], cfg.loss, cfg.loss_kwargs,
                            cfg.micro_batch, cfg.grad_clip, self.engine.tokenizer.pad_token_id or 0, cfg.device,
                            cfg.dtype)


def main(argv: list[str]) -> int:
    from tmax.rl.config import ConfigError, load_config

    if not argv or argv[0].startswith("-"):
        print("usage: torchrun --nproc-per-node N -m tmax.rl.fsdp CONFIG.yaml [key=value ...]", file=sys.stderr)
        return 2
    try:
        cfg = load_config(argv[0], argv[1:])
    except ConfigError as e:
        print(f"config: {e}", file=sys.stderr)
        return 2
    if cfg.device.startswith("cuda"):  # one device per rank
        cfg = dataclasses.replace(cfg, device=f"cuda:{os.environ.get('LOCAL_RANK', '0')}")
    dist.init_process_group("gloo" if cfg.device == "cpu" else "nccl")
    try:
        DistributedTrainer(cfg).run()
    finally:
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
