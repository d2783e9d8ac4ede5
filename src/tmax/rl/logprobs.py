"""Token log-probabilities with an FP32 LM head, chunked over time.

The trainer keeps fp32 parameters (the master weights, which AdamW updates: at the recipe's lr of
1e-6 a bf16 parameter would round most updates away) and runs the body of any Hugging Face causal
LM under autocast in the compute dtype (bf16 on accelerators, see :func:`body_autocast`); the final
projection uses fp32 hidden states and fp32 weights with autocast off, as in the recipe, to cut the
train/inference mismatch. Logits are made one chunk of positions at a time inside activation checkpointing, so the
full [batch, time, vocab] tensor never exists: its memory is one chunk's, in forward and backward.
"""

from __future__ import annotations

import contextlib

import torch
from torch.utils.checkpoint import checkpoint


def body_autocast(device: str | torch.device, dtype: str):
    """The context the model's body runs in: autocast to ``dtype`` ("bfloat16", "float16") over fp32
    parameters, or nothing for "float32". The head below always turns autocast off."""
    if dtype == "float32":
        return contextlib.nullcontext()
    return torch.autocast(device_type=torch.device(device).type, dtype=getattr(torch, dtype))


def _no_autocast(t: torch.Tensor):
    return torch.autocast(device_type=t.device.type, enabled=False)


def _chunk_logprobs(hidden: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, targets: torch.Tensor,
                    temperature: float) -> torch.Tensor:
    with _no_autocast(hidden):
        logits = hidden.float() @ weight.float().t()
        if bias is not None:
            logits = logits + bias.float()
        if temperature != 1.0:
            logits = logits / temperature
        return torch.log_softmax(logits, dim=-1).gather(-1, targets.unsqueeze(-1)).squeeze(-1)


def fp32_head_logprobs(hidden: torch.Tensor, lm_head: torch.nn.Module, targets: torch.Tensor, chunk: int = 1024,
                       temperature: float = 1.0) -> torch.Tensor:
    """hidden [B, T, H] (any dtype), targets [B, T] -> log p(target) [B, T] in fp32."""
    weight, bias = lm_head.weight, getattr(lm_head, "bias", None)
    b, t, h = hidden.shape
    flat_h, flat_t = hidden.reshape(b * t, h), targets.reshape(b * t)
    parts = []
    for s in range(0, b * t, chunk):
        hs, ts = flat_h[s:s + chunk], flat_t[s:s + chunk]
        if torch.is_grad_enabled() and (hs.requires_grad or weight.requires_grad):
            parts.append(checkpoint(_chunk_logprobs, hs, weight, bias, ts, temperature, use_reentrant=False))
        else:
            parts.append(_chunk_logprobs(hs, weight, bias, ts, temperature))
    return torch.cat(parts).reshape(b, t)


def last_hidden(model, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """The body's final hidden states [B, T, H], without the model's own head."""
    if hasattr(model, "model"):
        return model.model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
    return model(input_ids, attention_mask=attention_mask, output_hidden_states=True).hidden_states[-1]


def sequence_logprobs(model, input_ids: torch.Tensor, attention_mask: torch.Tensor, chunk: int = 1024,
                      temperature: float = 1.0) -> torch.Tensor:
    """log p(input_ids[:, 1:]) under ``model`` with the FP32 head: [B, T-1]."""
    hidden = last_hidden(model, input_ids, attention_mask)
    return fp32_head_logprobs(hidden[:, :-1], model.get_output_embeddings(), input_ids[:, 1:], chunk, temperature)


class _FusedHeadLoss(torch.autograd.Function):
    """The FP32 head and a per-token loss in one chunked pass, with the gradient made in the forward.

    A token-mean policy loss decomposes over tokens: each chunk's share of the loss, and so dL/dlogp
    for its tokens, is known as soon as that chunk's log-probabilities are. So one pass computes each
    chunk's logits (1 matmul), its loss share and dL/dlogits = g (onehot - softmax) / T, and from those
    the gradients of the hidden states and of the head (2 matmuls). Backward only scales them. That is
    3 matmuls over the vocabulary, as a plain forward+backward, instead of the 4 that activation
    checkpointing costs, and the chunk's logits are the only [chunk, vocab] buffer.
    """

    @staticmethod
    def forward(ctx, hidden, weight, bias, targets, token_loss, chunk, temperature):
        with _no_autocast(hidden):
            return _FusedHeadLoss._forward(ctx, hidden, weight, bias, targets, token_loss, chunk, temperature)

    @staticmethod
    def _forward(ctx, hidden, weight, bias, targets, token_loss, chunk, temperature):
        w = weight.float()
        b = bias.float() if bias is not None else None
        grad_h = torch.empty(hidden.shape, dtype=torch.float32, device=hidden.device)
        grad_w = torch.zeros_like(w)
        grad_b = torch.zeros_like(b) if b is not None else None
        total = torch.zeros((), dtype=torch.float32, device=hidden.device)
        logps = []
        for s in range(0, hidden.shape[0], chunk):
            h, t = hidden[s:s + chunk].float(), targets[s:s + chunk]
            logits = h @ w.t()
            if b is not None:
                logits += b
            if temperature != 1.0:
                logits /= temperature
            lse = torch.logsumexp(logits, dim=-1)
            logp = logits.gather(-1, t[:, None])[:, 0] - lse
            with torch.enable_grad():
                leaf = logp.detach().requires_grad_(True)
                loss = token_loss(leaf, s, s + len(t))
                g = torch.autograd.grad(loss, leaf, allow_unused=True)[0] if loss.requires_grad else None
            total += loss.detach()
            logps.append(logp)
            if g is None:
                grad_h[s:s + chunk] = 0
                continue
            dlogits = logits.sub_(lse[:, None]).exp_().mul_(-g[:, None])  # in place: -g * softmax
            dlogits.scatter_add_(1, t[:, None], g[:, None])
            if temperature != 1.0:
                dlogits /= temperature
            grad_h[s:s + chunk] = dlogits @ w
            grad_w.addmm_(dlogits.t(), h)
            if grad_b is not None:
                grad_b += dlogits.sum(0)
        ctx.save_for_backward(grad_h, grad_w, *(() if grad_b is None else (grad_b,)))
        ctx.dtypes = (hidden.dtype, weight.dtype)
        logp = torch.cat(logps) if logps else hidden.new_zeros(0, dtype=torch.float32)
        ctx.mark_non_differentiable(logp)
        return total, logp

    @staticmethod
    def backward(ctx, g_total, _g_logp):
        grad_h, grad_w, *rest = ctx.saved_tensors
        grad_b = (rest[0] * g_total).to(ctx.dtypes[1]) if rest else None
        return ((grad_h * g_total).to(ctx.dtypes[0]), (grad_w * g_total).to(ctx.dtypes[1]), grad_b,
                None, None, None, None)


def fused_head_loss(hidden: torch.Tensor, lm_head: torch.nn.Module, targets: torch.Tensor, token_loss,
                    chunk: int = 1024, temperature: float = 1.0) -> tuple[torch.Tensor, torch.Tensor]:
    """hidden [N, H] (any dtype), targets [N] -> (loss, log p(targets) [N] in fp32, detached).

    ``token_loss(logp, start, end)`` is the loss share of tokens ``start:end`` given their logprobs
    (differentiable in ``logp``); the shares must add up to the loss, as a token mean does when each
    chunk's mean is weighted by its token count over the total. ``loss.backward()`` reaches the hidden
    states (and the body behind them) and the head weight.
    """
    return _FusedHeadLoss.apply(hidden, lm_head.weight, getattr(lm_head, "bias", None), targets, token_loss, chunk,
                                temperature)


def masked_policy_loss(model, input_ids: torch.Tensor, attention_mask: torch.Tensor, mask: torch.Tensor,
                       logp_old: torch.Tensor, adv: torch.Tensor, loss_fn, loss_kwargs: dict, total_tokens: int,
                       chunk: int = 1024, temperature: float = 1.0) -> tuple[torch.Tensor, torch.Tensor, dict]:
    """The policy loss of one micro-batch as its share of a batch of ``total_tokens`` model tokens.

    ``mask``, ``logp_old`` and ``adv`` are [B, T-1], aligned with ``input_ids[:, 1:]``. The head runs
    only on the positions whose next token the model generated (mask 1): prompt and tool-output
    positions carry no gradient, and in multi-turn rollouts they are most of the sequence. Returns
    (loss share, trainer logprobs of the masked tokens, the loss's stats over them).
    """
    hidden = last_hidden(model, input_ids, attention_mask)
    sel = mask > 0
    h, targets = hidden[:, :-1][sel], input_ids[:, 1:][sel]
    old, a = logp_old[sel], adv[sel]
    ones = torch.ones_like(old)

    def token_loss(logp, s, e):
        return loss_fn(logp, old[s:e], a[s:e], ones[s:e], **loss_kwargs)[0] * ((e - s) / total_tokens)

    loss, logp = fused_head_loss(h, model.get_output_embeddings(), targets, token_loss, chunk, temperature)
    _, stats = loss_fn(logp, old, a, ones, **loss_kwargs)
    return loss, logp, stats
