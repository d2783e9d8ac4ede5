"""Policy-gradient losses as small pure functions, in one table.

All take per-token tensors of the same shape: ``logp`` (trainer log-probability of each sampled
token, with gradient), ``logp_old`` (the inference engine's behaviour log-probability mu), ``adv``
(the trajectory's advantage broadcast to its tokens) and ``mask`` (1 on model tokens, 0 on prompt and
tool output). They return (loss, stats); the loss is a token mean over the whole batch.

DPPO (binary divergence trust region): r = pi/mu; a token is masked iff its divergence D exceeds
delta AND the update would push it further away ((A > 0 and r > 1) or (A < 0 and r < 1)); moves back
toward mu are never masked. Per-token loss -M * A * r, no clipping.
"""

from __future__ import annotations

import torch


def _token_mean(per_token: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return (per_token * mask).sum() / mask.sum().clamp(min=1)


def _pushes_away(adv: torch.Tensor, ratio: torch.Tensor) -> torch.Tensor:
    return ((adv > 0) & (ratio > 1)) | ((adv < 0) & (ratio < 1))


def _dppo(logp, logp_old, adv, mask, divergence: torch.Tensor, delta: float):
    ratio = torch.exp(logp - logp_old)
    trust = ~((divergence > delta) & _pushes_away(adv, ratio.detach()))
    m = mask * trust.to(mask.dtype)
    loss = _token_mean(-m * adv * ratio, mask)
    masked = ((1 - trust.to(mask.dtype)) * mask).sum() / mask.sum().clamp(min=1)
    return loss, {"masked_fraction": masked.item()}


def dppo_binary_tv(logp, logp_old, adv, mask, delta: float = 0.1):
    """D = |pi - mu| on the sampled token's probability."""
    pi, mu = torch.exp(logp.detach()), torch.exp(logp_old)
    return _dppo(logp, logp_old, adv, mask, (pi - mu).abs(), delta)


def dppo_binary_kl(logp, logp_old, adv, mask, delta: float = 0.05):
    """D = mu log(mu/pi) + (1-mu) log((1-mu)/(1-pi)): KL between Bernoulli(mu) and Bernoulli(pi).

    Log-probabilities are clamped to [-30, 0] and D is computed in float64 with 1 - p = -expm1(log p):
    in fp32, 1 - 1e-9 rounds to 1, so a token the engine sampled with mu ~ 1 gave D = NaN and was
    never masked."""
    eps = 1e-12
    lp, lq = logp.detach().double().clamp(-30, 0), logp_old.double().clamp(-30, 0)
    mu = torch.exp(lq)
    not_pi, not_mu = (-torch.expm1(lp)).clamp(min=eps), (-torch.expm1(lq)).clamp(min=eps)
    d = mu * (lq - lp) + not_mu * (torch.log(not_mu) - torch.log(not_pi))
    return _dppo(logp, logp_old, adv, mask, d, delta)


def grpo_clip(logp, logp_old, adv, mask, eps_low: float = 0.2, eps_high: float = 0.272):
    """PPO-style clipped surrogate with asymmetric clipping, ratio against the engine's logprobs."""
    ratio = torch.exp(logp - logp_old)
    clipped = ratio.clamp(1 - eps_low, 1 + eps_high)
    per_token = -torch.minimum(ratio * adv, clipped * adv)
    loss = _token_mean(per_token, mask)
    was_clipped = ((ratio.detach() != clipped.detach()) & (mask > 0)).float().sum() / mask.sum().clamp(min=1)
    return loss, {"masked_fraction": was_clipped.item()}


LOSSES = {"dppo_tv": dppo_binary_tv, "dppo_kl": dppo_binary_kl, "grpo": grpo_clip}
DEFAULT_THRESHOLDS = {"dppo_tv": {"delta": 0.1}, "dppo_kl": {"delta": 0.05}, "grpo": {"eps_low": 0.2, "eps_high": 0.272}}
