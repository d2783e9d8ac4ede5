"""The learner sharded with FSDP2 (``fully_shard``) under torchrun: gloo on CPU, NCCL on GPUs.

    torchrun --nproc-per-node 2 -m tmax.rl.fsdp CONFIG.yaml [key=value ...]

The loop is the Trainer's; only the learner differs. Rank 0 runs the rollouts with its engine and
writes the run directory; the kept trajectories are shared with every rank; each rank computes the
loss on its share of them and FSDP reduce-scatters the gradients, so the update is the one a single
process makes on the whole batch (the token mean is over the whole batch, and the loss is scaled by
the world size because FSDP averages gradients over ranks). After each step the full weights are
gathered and rank 0 pushes them to its engine.

The FP32 head is the local learner's: :class:`tmax.rl.trainer.PolicyLoss` (the body, then the fused
head and loss) is the root FSDP unit, whose own parameters are the embeddings, the final norm and the
LM head (the decoder layers are units of their own), so the head weight is whole while the fused head
runs, and its gradient is reduced with the rest.
"""

from __future__ import annotations

import dataclasses
import math
import os
import sys

import torch
import torch.distributed as dist

from tmax.rl.config import TrainConfig
from tmax.rl.trainer import (NO_UPDATE, PolicyLoss, Sample, Trainer, adamw, backward_micro_batches, micro_batches,
                             trained_tokens)

OPTIM = "optim.fsdp"  # the full optimiser state, keyed by parameter name (not the local learner's indices)


def shard(policy: torch.nn.Module) -> torch.nn.Module:
    """Each decoder layer (the model's ``_no_split_modules``) becomes an FSDP unit; the rest (embeddings,
    final norm, LM head) is the root unit. Every rank must start from the same weights."""
    from torch.distributed.fsdp import fully_shard

    layer_types = set(getattr(policy.model, "_no_split_modules", None) or ())
    for m in policy.model.modules():
        if type(m).__name__ in layer_types:
            fully_shard(m)
    fully_shard(policy)
    return policy


def full_state_dict(policy: torch.nn.Module) -> dict:
    """The unsharded weights with the plain model's names, on rank 0 (a collective)."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

    sd = get_model_state_dict(policy, options=StateDictOptions(full_state_dict=True, cpu_offload=True))
    return {k.removeprefix("model."): v for k, v in sd.items()}


class FSDPLearner:
    """The learner over all ranks of the default process group, AdamW over the fp32 shards."""

    def __init__(self, cfg: TrainConfig):
        self.cfg = cfg
        self.rank, self.world = dist.get_rank(), dist.get_world_size()

    def build(self, model: torch.nn.Module) -> None:
        with torch.no_grad():  # rank 0's weights everywhere (it may have warm-started them)
            for t in model.state_dict().values():
                dist.broadcast(t, src=0)
        self.model = model
        self.policy = shard(PolicyLoss(model, self.cfg))
        self.optim = adamw(self.policy.parameters(), self.cfg)

    def step(self, samples: list[Sample], pad: int) -> dict:
        cfg = self.cfg
        total = trained_tokens(samples)
        if total == 0:
            return dict(NO_UPDATE)
        self.policy.train()
        self.optim.zero_grad(set_to_none=True)
        totals = backward_micro_batches(self.policy, micro_batches(self._my_share(samples, pad), cfg.micro_batch),
                                        total, pad, cfg, loss_scale=float(self.world))
        grad_norm = torch.nn.utils.clip_grad_norm_(list(self.policy.parameters()), cfg.grad_clip)
        if hasattr(grad_norm, "full_tensor"):
            grad_norm = grad_norm.full_tensor()
        self.optim.step()
        totals.sums, totals.gap_max = self._reduced(totals.sums), self._reduced(totals.gap_max, dist.ReduceOp.MAX)
        return totals.report(total, len(samples), grad_norm.item())

    def _reduced(self, t: torch.Tensor, op=dist.ReduceOp.SUM) -> torch.Tensor:
        on_device = t.to(self.cfg.device)  # NCCL reduces device tensors only
        dist.all_reduce(on_device, op=op)
        return on_device.cpu()

    def _my_share(self, samples: list[Sample], pad: int) -> list[Sample]:
        """Every ``world``-th sample; every rank must run as many forward/backward passes as the others
        (each is a collective), so a rank whose share ran out runs samples with no trained token."""
        mine = samples[self.rank::self.world]
        per_rank = math.ceil(math.ceil(len(samples) / self.world) / self.cfg.micro_batch) * self.cfg.micro_batch
        return mine + [Sample([pad, pad], [0, 0], [0.0, 0.0], 0.0)] * (per_rank - len(mine))

    def weights(self) -> dict:
        return full_state_dict(self.policy)

    def state_dict(self) -> dict[str, dict]:
        from torch.distributed.checkpoint.state_dict import StateDictOptions, get_optimizer_state_dict

        optim = get_optimizer_state_dict(self.policy, self.optim,
                                         options=StateDictOptions(full_state_dict=True, cpu_offload=True))
        # the model under its plain names: a checkpoint the single-process trainer loads too
        return {"model": full_state_dict(self.policy), OPTIM: optim}

    def load(self, files: dict[str, dict]) -> None:
        from torch.distributed.checkpoint.state_dict import (StateDictOptions, set_model_state_dict,
                                                             set_optimizer_state_dict)

        full = StateDictOptions(full_state_dict=True)
        set_model_state_dict(self.policy, {f"model.{k}": v for k, v in files["model"].items()}, options=full)
        if OPTIM in files:  # absent in a single-process checkpoint: its optimiser state is by index
            set_optimizer_state_dict(self.policy, self.optim, files[OPTIM], options=full)

    def share(self, obj):
        box = [obj]
        dist.broadcast_object_list(box, src=0)
        return box[0]


def DistributedTrainer(cfg: TrainConfig, log=print) -> Trainer:  # noqa: N802 - the name callers know
    """The trainer with the sharded learner (the process group must be up)."""
    return Trainer(cfg, log, learner=FSDPLearner(cfg))


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
        torch.cuda.set_device(cfg.device)  # NCCL's collectives (and object broadcasts) use the current device
    dist.init_process_group("gloo" if cfg.device == "cpu" else "nccl")
    try:
        DistributedTrainer(cfg).run()
    finally:
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
