"""Multi-turn rollouts through the shared harness, token in, token out.

A :class:`RolloutSession` is a Policy for one episode. The conversation's token ids only ever grow:
generated tokens are kept exactly as sampled (never re-tokenised), and each new environment message
is appended as the tokens of the chat template's text *after* what is already there. Every generated
token carries its behaviour logprob and the policy version that produced it; the loss mask covers
generated tokens only.
"""

from __future__ import annotations

import os
import random
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from tmax.agent import HarnessAgent, HarnessConfig, Reply
from tmax.agent.hf import HFPolicy, parse_tool_calls
from tmax.rl.advantages import Traj
from tmax.task import Task
from tmax.trial import Outcome, run_trial


@dataclass
class RolloutSession:
    engine: HFPolicy
    max_total_tokens: int = 65536
    ids: list[int] = field(default_factory=list)
    mask: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    versions: list[int] = field(default_factory=list)
    prompt_len: int = 0
    retokenize_mismatches: int = 0
    truncated: bool = False
    name: str = "rollout"

    @property
    def model_name(self) -> str:
        return self.engine.model_name

    @property
    def tool_calling(self) -> bool:
        return bool(self.engine.tool_calling)

    def _append_context(self, messages: list[dict], tools: list[dict] | None) -> None:
        tok = self.engine.tokenizer
        kwargs = {"tools": tools} if (tools and self.engine.tool_calling) else {}
        text = tok.apply_chat_template(self.engine._messages(messages), add_generation_prompt=True, tokenize=False,
                                       **kwargs)
        if not self.ids:
            new = tok(text, add_special_tokens=False)["input_ids"]
            self.prompt_len = len(new)
        else:
            prefix = tok.decode(self.ids, skip_special_tokens=False)
            if text.startswith(prefix):
                suffix = text[len(prefix):]
            else:  # the template renders the past differently: keep our tokens, append from the divergence
                self.retokenize_mismatches += 1
                common = os.path.commonprefix([text, prefix])
                suffix = text[len(common):]
            new = tok(suffix, add_special_tokens=False)["input_ids"]
        self.ids += new
        self.mask += [0] * len(new)
        self.logprobs += [0.0] * len(new)
        self.versions += [-1] * len(new)

    def act(self, messages: list[dict], tools: list[dict] | None, max_tokens: int) -> Reply:
        self._append_context(messages, tools)
        budget = min(max_tokens, self.max_total_tokens - len(self.ids))
        if budget <= 0:
            self.truncated = True
            return Reply(content="", finish_reason="length")
        version = self.engine.policy_version
        gen, lps, finish = self.engine.generate_ids(self.ids, budget)
        self.ids += gen
        self.mask += [1] * len(gen)
        self.logprobs += lps
        self.versions += [version] * len(gen)
        if finish == "length":
            self.truncated = self.truncated or len(self.ids) >= self.max_total_tokens
        text = self.engine.tokenizer.decode(gen, skip_special_tokens=True)
        content, calls = parse_tool_calls(text) if self.engine.tool_calling else (text, [])
        return Reply(content=content, tool_calls=calls, prompt_tokens=len(self.ids) - len(gen),
                     completion_tokens=len(gen), finish_reason=finish, completion_ids=gen, logprobs=lps,
                     policy_version=version)


@dataclass
class Rollout:
    traj: Traj
    session: RolloutSession
    task: str
    turns: int
    outcome: str

    @property
    def min_version(self) -> int:
        gen = [v for v in self.session.versions if v >= 0]
        return min(gen) if gen else -1


def run_rollout(task: Task, engine: HFPolicy, harness: HarnessConfig, backend: str, max_total_tokens: int) -> Rollout:
    session = RolloutSession(engine, max_total_tokens=max_total_tokens)
    agent = HarnessAgent(session, harness)
    res = run_trial(task, agent, backend=backend)
    info = agent.info()
    infra = res.outcome == Outcome.INFRA_ERROR or res.reward is None
    traj = Traj(reward=None if infra else float(res.reward), submitted=bool(info.get("submitted")),
                truncated=session.truncated or info.get("stop_reason") in ("step_limit", "wall_clock"))
    return Rollout(traj=traj, session=session, task=task.name, turns=int(info.get("steps", 0)),
                   outcome=res.outcome.value)


def collect_group(task: Task, engine: HFPolicy, size: int, harness: HarnessConfig, backend: str = "bwrap",
                  workers: int = 1, max_total_tokens: int = 65536) -> list[Rollout]:
    """``size`` rollouts of one task. Sandboxes overlap across workers; generation is serialised by the engine."""
    if workers <= 1:
        return [run_rollout(task, engine, harness, backend, max_total_tokens) for _ in range(size)]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(lambda _: run_rollout(task, engine, harness, backend, max_total_tokens), range(size)))


def pick_tasks(tasks: list[Task], n: int, rng: random.Random) -> list[Task]:
    return [tasks[rng.randrange(len(tasks))] for _ in range(n)]
