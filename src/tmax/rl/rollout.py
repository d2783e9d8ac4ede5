"""Multi-turn rollouts through the shared harness, token in, token out.

A :class:`RolloutSession` is a Policy for one episode. The conversation's token ids only ever grow:
generated tokens are kept exactly as sampled (never re-tokenised), and each new environment message
is appended as the tokens of the chat template's text *after* what is already there. Every generated
token carries its behaviour logprob and the policy version that produced it; the loss mask covers
generated tokens only.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from tmax.agent import HarnessAgent, HarnessConfig, Reply
from tmax.agent.hf import HFPolicy, Sampling, parse_tool_calls
from tmax.rl.advantages import Traj
from tmax.sandbox import DEFAULT_BACKEND
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
    # With a seed, turn k samples under its own seed (seed, k): the tokens depend on the rollout alone,
    # not on which other rollouts share the engine or in which order they reach it (exact resume).
    seed: int | None = None
    turn: int = 0
    max_prompt_tokens: int | None = None  # a task whose first prompt is longer is cut before any sampling

    @property
    def model_name(self) -> str:
        return self.engine.model_name

    @property
    def tool_calling(self) -> bool:
        return bool(self.engine.tool_calling)

    def _render(self, messages: list[dict], tools: list[dict] | None, generation_prompt: bool) -> str:
        kwargs = {"tools": tools} if (tools and self.engine.tool_calling) else {}
        return self.engine.tokenizer.apply_chat_template(self.engine._messages(messages), tokenize=False,
                                                         add_generation_prompt=generation_prompt, **kwargs)

    def _append_context(self, messages: list[dict], tools: list[dict] | None) -> None:
        """Append what the environment said since our last reply, as the template renders it.

        The template may render our past replies differently from how they were sampled (tool calls
        re-serialised, reasoning stripped), so we never diff against our own tokens: the new text is
        the rendering of the whole conversation minus the rendering of it up to our last reply. What
        the template closes a reply with (e.g. ``<|im_end|>`` and a newline) is appended after our
        sampled tokens where they lack it."""
        tok = self.engine.tokenizer
        full = self._render(messages, tools, True)
        if not self.ids:
            new = tok(full, add_special_tokens=False)["input_ids"]
            self.prompt_len = len(new)
        else:
            last = max(i for i, m in enumerate(messages) if m["role"] == "assistant")
            upto = self._render(messages[:last + 1], tools, False)
            if full.startswith(upto):
                suffix = self._reply_closing(upto) + full[len(upto):]
            else:  # a template whose past depends on the future: append from where the renderings part
                self.retokenize_mismatches += 1
                suffix = self._reply_closing(upto) + full[len(os.path.commonprefix([full, upto])):]
            new = tok(suffix, add_special_tokens=False)["input_ids"]
        self.ids += new
        self.mask += [0] * len(new)
        self.logprobs += [0.0] * len(new)
        self.versions += [-1] * len(new)

    def _reply_closing(self, upto: str) -> str:
        """The text the template puts after a reply's end-of-turn token (``upto`` ends with a rendered
        reply), minus what our sampled reply already ends with: the whole closing when sampling
        stopped at the length limit, only what follows the end-of-turn token when it stopped there."""
        tok = self.engine.tokenizer
        ends = [t for t in dict.fromkeys([tok.eos_token, "<|im_end|>", "<|eot_id|>", "<|end|>"]) if t and t in upto]
        if not ends:
            return ""
        end = max(ends, key=upto.rfind)
        closing = upto[upto.rfind(end):]
        ours = tok.decode(self.ids[-8:], skip_special_tokens=False)
        return closing[len(end):] if ours.endswith(end) else closing

    def act(self, messages: list[dict], tools: list[dict] | None, max_tokens: int) -> Reply:
        self._append_context(messages, tools)
        if self.max_prompt_tokens is not None and self.prompt_len > self.max_prompt_tokens:
            self.truncated = True  # the trainer's `truncated` rule decides what such an episode counts as
            return Reply(content="", finish_reason="length")
        budget = min(max_tokens, self.max_total_tokens - len(self.ids))
        if budget <= 0:
            self.truncated = True
            return Reply(content="", finish_reason="length")
        version = self.engine.policy_version
        self.turn += 1
        seed = None if self.seed is None else derive_seed(self.seed, self.turn)
        gen, lps, finish = self.engine.generate_ids(self.ids, budget, Sampling(seed=seed))
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


def derive_seed(seed: int, k: int) -> int:
    """A seed for the k-th child of ``seed`` (stable across processes, unlike hash())."""
    return (seed * 1_000_003 + k * 7_919 + 1) % 2**31


def run_rollout(task: Task, engine: HFPolicy, harness: HarnessConfig, backend: str, max_total_tokens: int,
                seed: int | None = None, max_prompt_tokens: int | None = None) -> Rollout:
    session = RolloutSession(engine, max_total_tokens=max_total_tokens, seed=seed, max_prompt_tokens=max_prompt_tokens)
    agent = HarnessAgent(session, harness)
    res = run_trial(task, agent, backend=backend)
    info = agent.info()
    infra = res.outcome == Outcome.INFRA_ERROR or res.reward is None
    traj = Traj(reward=None if infra else float(res.reward), submitted=bool(info.get("submitted")),
                truncated=session.truncated or info.get("stop_reason") in ("step_limit", "wall_clock"))
    return Rollout(traj=traj, session=session, task=task.name, turns=int(info.get("steps", 0)),
                   outcome=res.outcome.value)


def collect_group(task: Task, engine: HFPolicy, size: int, harness: HarnessConfig, backend: str = DEFAULT_BACKEND,
                  workers: int = 1, max_total_tokens: int = 65536, seed: int | None = None,
                  max_prompt_tokens: int | None = None, first: int = 0) -> list[Rollout]:
    """``size`` rollouts of one task. Sandboxes overlap across workers; the engine batches their turns.
    With a ``seed``, rollout i samples under seeds derived from (seed, first + i), so the group is the
    same however many workers (or Ray actors, each given its share's ``first``) run it."""
    def one(i: int) -> Rollout:
        return run_rollout(task, engine, harness, backend, max_total_tokens,
                           None if seed is None else derive_seed(seed, first + i), max_prompt_tokens)

    if workers <= 1:
        return [one(i) for i in range(size)]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(one, range(size)))

