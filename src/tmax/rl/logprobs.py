"""Token log-probabilities with an FP32 LM head, chunked over time.

The body of any Hugging Face causal LM runs in its own dtype (bf16 on accelerators); the final
projection uses fp32 hidden states and fp32 weights, as in the recipe, to cut the train/inference
mismatch. Logits are made one chunk of positions at a time inside activation checkpointing, so the
full [batch, time, vocab] tensor never exists: its memory is one chunk's, in forward and backward.
"""

from __future__ import annotations

import torch
from torch.utils.checkpoint import checkpoint


def _chunk_logprobs(hidden: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, targets: torch.Tensor,
                    temperature: float) -> torch.Tensor:
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


def sequence_logprobs(model, input_ids: torch.Tensor, attention_mask: torch.Tensor, chunk: int = 1024,
                      temperature: float = 1.0) -> torch.Tensor:
    """log p(input_ids[:, 1:]) under ``model`` with the FP32 head: [B, T-1]."""
    out = model.model(input_ids=input_ids, attention_mask=attention_mask) if hasattr(model, "model") else None
    hidden = out.last_hidden_state if out is not None else model(input_ids, attention_mask=attention_mask,
                                                                  output_hidden_states=True).hidden_states[-1]
    return fp32_head_logprobs(hidden[:, :-1], model.get_output_embeddings(), input_ids[:, 1:], chunk, temperature)
