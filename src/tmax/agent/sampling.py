"""Batched sampling with a KV cache for any Hugging Face causal LM: token ids and the behaviour
logprob of each sampled token, nothing else.

Why not ``model.generate``: RL needs only the logprob of the sampled token, and on a CPU two costs of
``generate`` dominate a small model's decode step: ``torch.multinomial`` over the vocabulary (~16 ms
for 16 x 49k) and keeping every step's full logits to take log-softmaxes afterwards. Here a token is
drawn by inverting the CDF (one uniform per row, a cumulative sum, a binary search: ~0.7 ms), its
logprob is read off the same scaled logits, and decoding stops as soon as every row has ended.
Sampling uses torch's global RNG, so ``torch.manual_seed`` makes it reproducible.
"""

from __future__ import annotations

import inspect

import torch


def sample_tokens(logits: torch.Tensor, temperature: float, top_p: float = 1.0) -> tuple[torch.Tensor, torch.Tensor]:
    """logits [B, V] -> (tokens [B], logprob of each token under softmax(logits / T)) in fp32.

    The logprob is that of the full tempered distribution (what the trainer recomputes), also when
    top-p narrows what may be drawn. Temperature 0 is greedy, with the T = 1 logprob.
    """
    logits = logits.float()
    scaled = logits / temperature if temperature > 0 else logits
    logp = torch.log_softmax(scaled, dim=-1)
    if temperature <= 0:
        tok = logp.argmax(-1)
    elif top_p < 1.0:
        probs, order = logp.exp().sort(dim=-1, descending=True)
        keep = probs.cumsum(-1) - probs < top_p  # the smallest prefix whose mass reaches top_p
        tok = order.gather(-1, _inverse_cdf(probs * keep)[:, None])[:, 0]
    else:
        tok = _inverse_cdf(logp.exp())
    return tok, logp.gather(-1, tok[:, None])[:, 0]


def _inverse_cdf(weights: torch.Tensor) -> torch.Tensor:
    """One draw per row from unnormalised non-negative weights [B, V]."""
    cdf = weights.cumsum(-1)
    u = torch.rand(weights.shape[0], 1, device=weights.device).clamp_min(1e-12) * cdf[:, -1:]
    return torch.searchsorted(cdf, u)[:, 0].clamp_max(weights.shape[-1] - 1)


@torch.no_grad()
def decode(model, prompts: list[list[int]], max_tokens: int, pad: int, stop_ids: set[int], temperature: float,
           top_p: float = 1.0, device: str = "cpu") -> list[tuple[list[int], list[float]]]:
    """Sample up to ``max_tokens`` for each prompt (left-padded into one batch); each result ends at
    its first stop token (included). Returns (token ids, behaviour logprobs) per prompt."""
    from transformers import DynamicCache

    if max_tokens <= 0:
        return [([], []) for _ in prompts]
    width = max(len(p) for p in prompts)
    ids = torch.tensor([[pad] * (width - len(p)) + p for p in prompts], device=device)
    attn = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts], device=device)
    pos = (attn.cumsum(-1) - 1).clamp_min(0)
    stops = torch.tensor(sorted(stop_ids), dtype=torch.long, device=device)
    done = torch.zeros(len(prompts), dtype=torch.bool, device=device)
    toks, lps = [], []
    # the cache is filled in place; its keyword was renamed in transformers 5.x
    params = inspect.signature(model.forward).parameters
    kw = {"cache" if "cache" in params else "past_key_values": DynamicCache(), "use_cache": True}
    if "logits_to_keep" in params:  # only the last position's logits are needed
        kw["logits_to_keep"] = 1
    out = model(input_ids=ids, attention_mask=attn, position_ids=pos, **kw)
    for i in range(max_tokens):
        tok, lp = sample_tokens(out.logits[:, -1], temperature, top_p)
        tok = torch.where(done, torch.full_like(tok, pad), tok)
        toks.append(tok)
        lps.append(lp)
        done |= torch.isin(tok, stops)
        if bool(done.all()) or i == max_tokens - 1:
            break
        attn = torch.cat([attn, torch.ones_like(attn[:, :1])], dim=1)
        pos = pos[:, -1:] + 1
        out = model(input_ids=tok[:, None], attention_mask=attn, position_ids=pos, **kw)
    gen, logp = torch.stack(toks, 1).tolist(), torch.stack(lps, 1).tolist()
    results = []
    for row, lrow in zip(gen, logp):
        cut = next((i + 1 for i, t in enumerate(row) if t in stop_ids), len(row))
        results.append((row[:cut], lrow[:cut]))
    return results
