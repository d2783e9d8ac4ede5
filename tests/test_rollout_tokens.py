"""The RL token stream of a tool-calling chat model stays exact over many turns: sampled tokens are
kept as sampled, each environment message is appended once, and no past turn is re-rendered into the
stream, even when the template serialises past replies differently from how they were sampled."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("transformers", reason="needs transformers (scripts/setup.sh installs it)")

from tmax.agent import HarnessConfig, run_episode  # noqa: E402
from tmax.agent.harness import SUBMIT  # noqa: E402
from tmax.agent.hf import HFPolicy, embedded_model_dir  # noqa: E402
from tmax.rl.rollout import RolloutSession  # noqa: E402
from tmax.sandbox import get_backend  # noqa: E402

# A Hermes/Qwen-style template written for these tests: tools in the system turn, calls re-serialised
# from their parsed form (so a reply sampled with other spacing renders differently), tool results
# as user turns wrapped in <tool_response>.
HERMES = (
    "{% if tools %}<|im_start|>system\nYou can call these tools:\n<tools>\n"
    "{% for t in tools %}{{ t | tojson }}\n{% endfor %}</tools><|im_end|>\n{% endif %}"
    "{% for m in messages %}"
    "{% if m.role == 'assistant' %}<|im_start|>assistant\n{{ m.content }}"
    "{% for c in m.tool_calls or [] %}{% if m.content %}\n{% endif %}<tool_call>\n"
    '{"name": "{{ c.function.name }}", "arguments": {{ c.function.arguments }}}\n</tool_call>'
    "{% endfor %}<|im_end|>\n"
    "{% elif m.role == 'tool' %}<|im_start|>user\n<tool_response>\n{{ m.content }}\n</tool_response><|im_end|>\n"
    "{% else %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endif %}"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


class ScriptedEngine:
    """The engine interface RolloutSession samples from, replying with scripted texts (tokenised with
    the real tokenizer) so the test knows exactly what was sampled."""

    def __init__(self, replies: list[str]):
        from transformers import AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(embedded_model_dir())
        self.tokenizer.chat_template = HERMES
        self.tool_calling, self.policy_version, self.model_name = True, 0, "scripted-hermes"
        self.replies, self.sampled, self.seeds = list(replies), [], []

    _messages = HFPolicy._messages

    def generate_ids(self, prompt: list[int], max_tokens: int, sampling=None):
        self.seeds.append(None if sampling is None else sampling.seed)
        text = self.replies.pop(0) + "<|im_end|>"
        ids = self.tokenizer(text, add_special_tokens=False)["input_ids"][:max_tokens]
        self.sampled.append(ids)
        return ids, [-0.5] * len(ids), "stop"


def _reply(i: int, canonical: bool) -> str:
    cmd = f"echo step {i}" if i < 9 else f"echo {SUBMIT}"
    if canonical:
        return f'<tool_call>\n{{"name": "bash", "arguments": {json.dumps({"command": cmd})}}}\n</tool_call>'
    return f'Let me look.  <tool_call>{{"name":"bash","arguments":{{"command":"{cmd}"}}}}</tool_call>\n'


@pytest.fixture
def sandbox(host_env, bwrap):
    sb = get_backend(bwrap).start(host_env.spec(work_areas=("/app",)))
    yield sb
    sb.close()


@pytest.mark.parametrize("canonical", [True, False], ids=["as-rendered", "rendered-differently"])
def test_ten_tool_calling_turns_keep_the_token_stream_exact(sandbox, canonical):
    engine = ScriptedEngine([_reply(i, canonical) for i in range(10)])
    session = RolloutSession(engine, max_total_tokens=20000)
    ep = run_episode("Say hello ten times.", sandbox, session, HarnessConfig(max_steps=12))
    assert ep.submitted and ep.steps == 10
    tok = engine.tokenizer
    stream = tok.decode(session.ids, skip_special_tokens=False)
    # every sampled token is in the stream as sampled, in order, with mask 1 and its logprob
    assert sum(session.mask) == sum(len(s) for s in engine.sampled)
    sampled_ids = [i for i, m in zip(session.ids, session.mask) if m]
    assert sampled_ids == [t for s in engine.sampled for t in s]
    # each turn once: ten replies, nine tool results, no re-rendered copy of a past reply
    assert stream.count("<|im_start|>assistant\n") == 10
    assert stream.count("<tool_response>") == 9
    for i in range(9):  # once in the call as sampled, once in its output
        assert stream.count(f'"echo step {i}"') == 1 and stream.count(f"step {i}") == 2
    if canonical:  # what was sampled is what the template renders: the stream is the rendering itself
        rendered = tok.apply_chat_template(ep.messages[:-1] if ep.messages[-1]["role"] != "assistant"
                                           else ep.messages, tools=_tools(ep), tokenize=False)
        last = rendered.rfind("<|im_end|>") + len("<|im_end|>")
        assert stream == rendered[:last]
        assert session.retokenize_mismatches == 0


def test_seeded_turns_and_a_prompt_over_the_limit(sandbox):
    """A seeded session gives every turn its own seed (the same for the same rollout seed, whoever else
    uses the engine); a first prompt over ``max_prompt_tokens`` is cut before anything is sampled."""
    runs = []
    for _ in range(2):
        engine = ScriptedEngine([_reply(i, True) for i in range(3)])
        session = RolloutSession(engine, max_total_tokens=20000, seed=11)
        run_episode("Say hello.", sandbox, session, HarnessConfig(max_steps=3))
        runs.append(engine.seeds)
    assert runs[0] == runs[1] and len(set(runs[0])) == 3 and None not in runs[0]
    engine = ScriptedEngine([_reply(0, True)])
    session = RolloutSession(engine, max_total_tokens=20000, max_prompt_tokens=20)
    ep = run_episode("Say hello. " * 50, sandbox, session, HarnessConfig(max_steps=3))
    assert session.truncated and engine.sampled == [] and sum(session.mask) == 0
    assert ep.steps <= 3 and not ep.submitted


def _tools(ep) -> list[dict]:
    from tmax.agent.harness import BASH_TOOL

    return [BASH_TOOL]
