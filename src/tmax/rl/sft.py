"""An optional SFT warm start from the successful trajectories of solve jobs.

The recipe needs no SFT; this is for models that cannot yet produce the harness' format at all.
Trajectories are read back from a job's ATIF files and turned into the same chat messages the
harness sent, so the warm start trains on exactly what RL will later see. The loss covers the
assistant's tokens only.
"""

from __future__ import annotations

import json
import random
from pathlib import Path


def reference_command(task_dir: Path) -> str:
    """A task's reference solution as one shell command: its lines without the shebang, comments and
    ``set`` options (which would end the harness' persistent shell at the first failing test). Refused
    when it uses helper files under /solution, which an agent does not have."""
    lines = [ln for ln in (Path(task_dir) / "solution" / "solve.sh").read_text().splitlines()
             if ln.strip() and not ln.lstrip().startswith(("#", "set "))]
    command = "\n".join(lines)
    if "/solution/" in command:
        raise ValueError(f"{task_dir}/solution/solve.sh: uses helper files under /solution, so it cannot be "
                         "replayed as an agent's command")
    return command


def replay_references(task_dirs: list[Path], job: Path, max_steps: int = 2) -> Path:
    """A solve job of reference trajectories for a warm start: on each task, the harness runs its
    reference command (:func:`reference_command`) as the agent's one command, then submits. Tasks
    already in ``job`` are kept; a reference that does not score 1.0 is an error naming its task."""
    from tmax.agent.policies import ScriptedPolicy
    from tmax.jobs import JobSpec, run_one
    from tmax.task import load_task

    spec = JobSpec(corpus=list(task_dirs), policy="scripted", max_steps=max_steps)
    for d in map(Path, task_dirs):
        if (job / f"{d.name}__0" / "result.json").exists():
            continue
        policy = ScriptedPolicy(script=[reference_command(d)], tool_calling=False)
        res = run_one(spec, load_task(d), 0, job, {"policy": policy})
        if res.get("reward") != 1.0:
            raise RuntimeError(f"{d}: the replayed reference solution scored {res.get('reward')}, expected 1.0")
    return job


def successful_conversations(job_dirs: list[str | Path], min_reward: float = 1.0) -> list[list[dict]]:
    """Chat messages of every trial in ``job_dirs`` whose reward reached ``min_reward``."""
    out = []
    for job in map(Path, job_dirs):
        if not job.is_dir():
            raise FileNotFoundError(f"{job}: no such job directory (expected the --job DIR of a tmax solve run)")
        for result in sorted(job.glob("*/result.json")):
            try:
                res = json.loads(result.read_text())
            except (OSError, json.JSONDecodeError):
                continue
            reward = res.get("reward")
            traj = result.parent / "agent" / "trajectory.json"
            if reward is None or reward < min_reward or not traj.exists():
                continue
            out.append(atif_to_messages(json.loads(traj.read_text())))
    return [m for m in out if any(x["role"] == "assistant" for x in m)]


def atif_to_messages(traj: dict) -> list[dict]:
    """The linear message history the harness sent, rebuilt from an ATIF trajectory."""
    messages: list[dict] = []
    for step in traj.get("steps", []):
        if step["source"] in ("system", "user"):
            messages.append({"role": step["source"], "content": step.get("message") or ""})
            continue
        calls = [c for c in step.get("tool_calls") or [] if not str(c.get("tool_call_id", "")).startswith("text-")]
        msg: dict = {"role": "assistant", "content": step.get("message") or ""}
        if calls:
            msg["tool_calls"] = [{"id": c["tool_call_id"], "type": "function",
                                  "function": {"name": c["function_name"],
                                               "arguments": _arguments(c)}} for c in calls]
        messages.append(msg)
        results = (step.get("observation") or {}).get("results") or []
        if step is traj["steps"][-1] or not results:
            continue
        text = results[0].get("content") or ""
        if calls:
            messages += [{"role": "tool", "tool_call_id": c["tool_call_id"], "content": text} for c in calls]
        else:
            messages.append({"role": "user", "content": text})
    return messages


def tokenize_conversation(engine, messages: list[dict], tools: list[dict] | None = None) -> tuple[list[int], list[int]]:
    """(token ids, loss mask) of a conversation: the mask is 1 on the assistant's tokens.

    Each assistant span is found by rendering the conversation up to it with and without the reply, so
    the template's own markup decides what the assistant 'said' (end-of-turn tokens included)."""
    tok = engine.tokenizer
    msgs = engine._messages(messages)
    kwargs = {"tools": tools} if (tools and engine.tool_calling) else {}
    ids: list[int] = []
    mask: list[int] = []
    done = ""
    for i, m in enumerate(msgs):
        if m["role"] != "assistant":
            continue
        before = tok.apply_chat_template(msgs[:i], add_generation_prompt=True, tokenize=False, **kwargs)
        after = tok.apply_chat_template(msgs[:i + 1], tokenize=False, **kwargs)
        if not before.startswith(done) or not after.startswith(before):
            continue  # a template that rewrites the past: skip this reply rather than train on misaligned text
        context = tok(before[len(done):], add_special_tokens=False)["input_ids"]
        reply = tok(after[len(before):], add_special_tokens=False)["input_ids"]
        ids += context + reply
        mask += [0] * len(context) + [1] * len(reply)
        done = after
    return ids, mask


def warm_start(model, engine, conversations: list[list[dict]], epochs: int = 1, lr: float = 1e-5,
               micro_batch: int = 4, max_tokens: int = 4096, seed: int = 0, log=print) -> dict:
    """Supervised steps on the assistant tokens of ``conversations``; returns summary figures."""
    import torch

    examples = [tokenize_conversation(engine, c) for c in conversations]
    examples = [(i[:max_tokens], m[:max_tokens]) for i, m in examples if sum(m[:max_tokens])]
    if not examples:
        raise ValueError("warm start: no successful trajectory with assistant tokens in the given jobs")
    optim = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    rng = random.Random(seed)
    pad = engine.tokenizer.pad_token_id or 0
    device = next(model.parameters()).device
    model.train()
    losses = []
    for epoch in range(epochs):
        order = list(range(len(examples)))
        rng.shuffle(order)
        first = len(losses)
        for s in range(0, len(order), micro_batch):
            batch = [examples[j] for j in order[s:s + micro_batch]]
            L = max(len(i) for i, _ in batch)
            ids = torch.tensor([i + [pad] * (L - len(i)) for i, _ in batch], device=device)
            attn = torch.tensor([[1] * len(i) + [0] * (L - len(i)) for i, _ in batch], device=device)
            labels = torch.tensor([[t if k else -100 for t, k in zip(i, m)] + [-100] * (L - len(i))
                                   for i, m in batch], device=device)
            loss = model(input_ids=ids, attention_mask=attn, labels=labels).loss
            optim.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optim.step()
            losses.append(loss.item())
        epoch_losses = losses[first:]
        log(f"warm start epoch {epoch + 1}/{epochs}: loss {sum(epoch_losses) / len(epoch_losses):.3f}")
    return {"examples": len(examples), "tokens": sum(sum(m) for _, m in examples), "first_loss": losses[0],
            "last_loss": losses[-1], "sft_steps": len(losses)}


def _arguments(call: dict) -> str:
    """What the model wrote: ATIF keeps arguments that were no JSON object in ``extra.raw_arguments``."""
    raw = (call.get("extra") or {}).get("raw_arguments")
    if isinstance(raw, str):
        return raw
    return call["arguments"] if isinstance(call["arguments"], str) else json.dumps(call["arguments"])
