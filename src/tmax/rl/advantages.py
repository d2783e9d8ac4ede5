"""Group advantages and filtering.

A group is the G trajectories of one task. Infrastructure failures are masked out of the group's
statistics (never counted as zeros) and dropped; a group whose usable rewards all agree carries no
signal and is dropped (soft filtering, the batch is refilled by active sampling); options decide
what truncated and never-submitted trajectories score.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Traj:
    reward: float | None  # None: infrastructure failure
    submitted: bool = True
    truncated: bool = False  # hit the step, token or time limit
    advantage: float = 0.0


def prepare_rewards(group: list[Traj], never_submitted: str = "zero", truncated: str = "keep") -> list[Traj]:
    """Drop infra failures; apply the never-submitted ("zero" | "keep" | "drop") and truncated
    ("keep" | "zero" | "drop") options. Returns the usable trajectories."""
    out = []
    for t in group:
        if t.reward is None:
            continue
        if not t.submitted:
            if never_submitted == "drop":
                continue
            if never_submitted == "zero":
                t.reward = 0.0
        if t.truncated:
            if truncated == "drop":
                continue
            if truncated == "zero":
                t.reward = 0.0
        out.append(t)
    return out


def advantages(group: list[Traj], mode: str = "centered", eps: float = 1e-6) -> bool:
    """Set each trajectory's advantage in place. Returns False (drop the group) when the rewards have
    zero variance or fewer than two usable trajectories remain."""
    if len(group) < 2:
        return False
    rewards = [t.reward for t in group]
    mean = sum(rewards) / len(rewards)
    var = sum((r - mean) ** 2 for r in rewards) / len(rewards)
    if var <= eps * eps:
        return False
    std = var ** 0.5
    for t in group:
        t.advantage = (t.reward - mean) if mode == "centered" else (t.reward - mean) / (std + eps)
    return True
