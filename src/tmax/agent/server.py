"""``tmax serve``: an OpenAI-compatible chat server over a local Hugging Face engine, so any client
(the official ``openai`` one, ours) can talk to a real local model over HTTP.

``POST /v1/chat/completions`` takes OpenAI's body: ``max_completion_tokens`` (or the older
``max_tokens``), ``temperature`` (0 is greedy), ``top_p`` and ``seed`` apply to that request alone;
``stop`` strings; ``logprobs`` with ``top_logprobs`` up to 20; ``stream`` (with
``stream_options.include_usage``); ``tools``. ``n`` must be 1, and any model name is taken to mean
the one served. ``finish_reason`` is ``length`` when the token limit ended the reply, ``stop`` on
the end-of-turn token or a stop string, ``tool_calls`` when tool calls were parsed. The engine
samples a whole completion per batch, so a stream's chunks (one per token) are sent once it is
sampled. Bad input gets a 400 with OpenAI's error body naming the field.

It binds loopback unless told otherwise. With an API key, every request must carry
``Authorization: Bearer KEY`` or gets a 401 with an OpenAI-style error body; a bind to anything but
a loopback address without a key is refused (ValueError), so a model is never handed to the network
unauthenticated."""

from __future__ import annotations

import hmac
import inspect
import ipaddress
import json
import socket
import time
import uuid
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING

from tmax.agent.harness import ToolCall
from tmax.agent.hf import Sampling, parse_tool_calls

if TYPE_CHECKING:
    from tmax.agent.hf import HFPolicy

MAX_UNAUTHENTICATED_BODY = 1 << 20  # read (and drop) at most this much of a refused request's body


def is_loopback(host: str) -> bool:
    """True iff every address ``host`` names is a loopback one ("" and 0.0.0.0 mean every interface)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        pass
    if not host:
        return False
    try:
        addrs = {a[4][0] for a in socket.getaddrinfo(host, None)}
    except OSError:
        return False
    return bool(addrs) and all(ipaddress.ip_address(a.split("%")[0]).is_loopback for a in addrs)


def check_bind(host: str, api_key: str | None) -> None:
    """Refuse (ValueError) to serve on a non-loopback address without an API key."""
    if not api_key and not is_loopback(host):
        raise ValueError(f"refusing to serve on {host or '0.0.0.0'!r} (not a loopback address) without an API "
                         "key: give --api-key KEY or set TMAX_API_KEY, or bind 127.0.0.1")


def _key_matches(header: str | None, api_key: str) -> bool:
    scheme, _, token = (header or "").strip().partition(" ")
    if scheme.lower() != "bearer":
        return False
    token = token.strip()
    # http.server decodes header bytes as latin-1: recover them, and accept the key in UTF-8 or latin-1
    try:
        got = token.encode("latin-1")
    except UnicodeEncodeError:
        got = token.encode("utf-8")
    ok = hmac.compare_digest(got, api_key.encode("utf-8"))
    try:
        ok = hmac.compare_digest(got, api_key.encode("latin-1")) or ok
    except UnicodeEncodeError:
        pass
    return ok


# -- requests ---------------------------------------------------------------------------------------

MAX_TOP_LOGPROBS = 20  # OpenAI's own limit
MAX_STOP_STRINGS = 4
DEFAULT_MAX_TOKENS = 512
ROLES = ("system", "developer", "user", "assistant", "tool")
CHAT_ROUTES = ("/v1/chat/completions", "/chat/completions")


def error_body(message: str, kind: str = "invalid_request_error", param: str | None = None,
               code: str | None = None) -> dict:
    """OpenAI's error JSON, which its clients turn into typed exceptions."""
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


class RequestError(ValueError):
    """The client's fault: answered (400 unless told) with OpenAI's error body naming the field."""

    def __init__(self, message: str, param: str | None = None, status: int = 400, code: str | None = None):
        super().__init__(message)
        self.param, self.status, self.code = param, status, code

    def body(self) -> dict:
        return error_body(str(self), "invalid_request_error", self.param, self.code)


@dataclass(frozen=True)
class ChatRequest:
    """A validated ``/v1/chat/completions`` body: only what the engine acts on."""

    messages: list[dict]
    tools: list[dict] | None = None
    parse_tools: bool = True  # False with tool_choice "none"
    max_tokens: int = DEFAULT_MAX_TOKENS
    sampling: Sampling = Sampling()
    stream: bool = False
    include_usage: bool = False
    logprobs: bool = False
    top_logprobs: int = 0
    stop: tuple[str, ...] = ()


def _given(req: dict, name: str) -> bool:
    return req.get(name) is not None  # clients send null for "not set"


def _integer(req: dict, name: str, lo: int, hi: int | None = None) -> int | None:
    v = req.get(name)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int) or v < lo or (hi is not None and v > hi):
        bounds = f"between {lo} and {hi}" if hi is not None else f"at least {lo}"
        raise RequestError(f"'{name}' must be an integer {bounds}, got {v!r}", name)
    return v


def _number(req: dict, name: str, lo: float, hi: float, lo_open: bool = False) -> float | None:
    v = req.get(name)
    if v is None:
        return None
    ok = isinstance(v, (int, float)) and not isinstance(v, bool) and (lo < v if lo_open else lo <= v) and v <= hi
    if not ok:
        raise RequestError(f"'{name}' must be a number in {'(' if lo_open else '['}{lo}, {hi}], got {v!r}", name)
    return float(v)


def _flag(req: dict, name: str, where: str | None = None) -> bool:
    v = req.get(name)
    if v is not None and not isinstance(v, bool):
        raise RequestError(f"'{where or name}' must be true or false, got {v!r}", where or name)
    return bool(v)


def _text_content(content: object, where: str) -> str:
    """A message's content as text: a string, or a list of text parts (OpenAI's newer shape)."""
    if content is None or isinstance(content, str):
        return content or ""
    if isinstance(content, list) and all(isinstance(p, dict) and p.get("type") == "text"
                                         and isinstance(p.get("text"), str) for p in content):
        return "".join(p["text"] for p in content)
    raise RequestError(f"'{where}' must be a string or a list of text parts ({{\"type\": \"text\", "
                       "\"text\": ...}); this model reads text only", where)


def _messages(req: dict) -> list[dict]:
    messages = req.get("messages")
    if not isinstance(messages, list) or not messages:
        raise RequestError("'messages' must be a non-empty list of {\"role\", \"content\"} objects", "messages")
    out = []
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or m.get("role") not in ROLES:
            got = m.get("role") if isinstance(m, dict) else m
            raise RequestError(f"'messages[{i}].role' must be one of {', '.join(ROLES)}, got {got!r}",
                               f"messages[{i}].role")
        out.append({**m, "content": _text_content(m.get("content"), f"messages[{i}].content")})
    return out


def _stop(req: dict) -> tuple[str, ...]:
    stop = req.get("stop")
    if stop is None:
        return ()
    stops = [stop] if isinstance(stop, str) else stop
    if (not isinstance(stops, list) or not 0 < len(stops) <= MAX_STOP_STRINGS
            or not all(isinstance(s, str) and s for s in stops)):
        raise RequestError(f"'stop' must be a non-empty string or a list of 1 to {MAX_STOP_STRINGS} of them, "
                           f"got {stop!r}", "stop")
    return tuple(stops)


def _include_usage(req: dict, stream: bool) -> bool:
    options = req.get("stream_options")
    if options is None:
        return False
    if not stream:
        raise RequestError("'stream_options' is only allowed with \"stream\": true", "stream_options")
    if not isinstance(options, dict):
        raise RequestError(f"'stream_options' must be an object, got {options!r}", "stream_options")
    return _flag(options, "include_usage", "stream_options.include_usage")


def parse_chat_request(req: object) -> ChatRequest:
    """Validate a chat completion body (RequestError names the first field that is wrong). Fields the
    engine has no use for (penalties, response_format, user, ...) are accepted and ignored."""
    if not isinstance(req, dict):
        raise RequestError("the request body must be a JSON object")
    if (_integer(req, "n", 1) or 1) != 1:
        raise RequestError("'n' must be 1: this server samples one choice per request (send n requests)", "n")
    tools = req.get("tools")
    if tools is not None and not (isinstance(tools, list) and all(isinstance(t, dict) for t in tools)):
        raise RequestError("'tools' must be a list of tool objects", "tools")
    logprobs = _flag(req, "logprobs")
    top = _integer(req, "top_logprobs", 0, MAX_TOP_LOGPROBS) or 0
    if _given(req, "top_logprobs") and not logprobs:
        raise RequestError("'top_logprobs' needs \"logprobs\": true", "top_logprobs")
    # newer clients send max_completion_tokens; max_tokens is its deprecated name
    limit = _integer(req, "max_completion_tokens", 1)
    limit = limit if limit is not None else _integer(req, "max_tokens", 1)
    seed = _integer(req, "seed", -(1 << 63), (1 << 63) - 1)
    sampling = Sampling(_number(req, "temperature", 0.0, 2.0), _number(req, "top_p", 0.0, 1.0, lo_open=True), seed)
    stream = _flag(req, "stream")
    return ChatRequest(messages=_messages(req), tools=tools or None, parse_tools=req.get("tool_choice") != "none",
                       max_tokens=limit or DEFAULT_MAX_TOKENS, sampling=sampling, stream=stream,
                       include_usage=_include_usage(req, stream), logprobs=logprobs, top_logprobs=top,
                       stop=_stop(req))


# -- completions ------------------------------------------------------------------------------------

@dataclass
class Completion:
    """One sampled choice, ready to be sent whole or as stream chunks."""

    content: str
    tool_calls: list[ToolCall]
    finish_reason: str  # stop | length | tool_calls
    prompt_tokens: int
    completion_tokens: int
    logprobs: list[dict] | None  # OpenAI's per-token entries; None when the engine records none
    steps: list[tuple[str, list[dict]]]  # stream chunks: (content piece, the logprob entries it carries)


def samples_per_request(policy: object) -> bool:
    """Whether ``policy`` is a token engine that takes sampling settings per call (HFPolicy). Others
    answer through ``act`` with their own settings, and without logprobs."""
    gen = getattr(policy, "generate_ids", None)
    return callable(gen) and "sampling" in inspect.signature(gen).parameters and hasattr(policy, "tokenizer")


def complete(policy: HFPolicy, req: ChatRequest) -> Completion:
    """Sample the request's one choice. Stop strings end the text after sampling (the engine stops
    only on its end-of-turn tokens): the text is cut before the first, and the tokens after the one
    that completed it are dropped from the usage and the logprobs."""
    if not samples_per_request(policy):
        return _complete_with_act(policy, req)
    if req.top_logprobs and not callable(getattr(policy, "top_logprobs", None)):
        raise RequestError(f"this server's engine ({type(policy).__name__}) gives no alternatives: send "
                           "\"top_logprobs\": 0", "top_logprobs")
    s = req.sampling
    temperature = policy.temperature if s.temperature is None else s.temperature
    settings = Sampling(temperature, policy.top_p if s.top_p is None else s.top_p, s.seed)
    tok = policy.tokenizer
    prompt = policy.prompt_ids(req.messages, req.tools)
    ids, lps, finish = policy.generate_ids(prompt, req.max_tokens, sampling=settings)
    text = tok.decode(ids, skip_special_tokens=True)
    ids, lps, text, stopped = cut_at_stop(tok, ids, lps, text, req.stop)
    finish = "stop" if stopped else finish
    use_tools = bool(req.tools) and req.parse_tools and bool(policy.tool_calling)
    content, calls = parse_tool_calls(text) if use_tools else (text, [])
    entries = None
    if req.logprobs:
        top = policy.top_logprobs(prompt, ids, req.top_logprobs, temperature) if req.top_logprobs else None
        entries = logprob_entries(tok, ids, lps, top)
    if calls:  # the call was parsed from the whole text: no per-token pieces to stream
        steps = [(content, entries or [])]
    else:
        steps = list(zip(text_pieces(tok, ids, text), [[e] for e in entries] if entries else [[]] * len(ids)))
    return Completion(content, calls, "tool_calls" if calls else finish, len(prompt), len(ids), entries, steps)


def _complete_with_act(policy, req: ChatRequest) -> Completion:
    if req.logprobs:
        raise RequestError(f"this server's engine ({type(policy).__name__}) records no logprobs", "logprobs")
    reply = policy.act(req.messages, req.tools, req.max_tokens)
    finish = "tool_calls" if reply.tool_calls else reply.finish_reason
    return Completion(reply.content, reply.tool_calls, finish, reply.prompt_tokens, reply.completion_tokens,
                      None, [(reply.content, [])])


def cut_at_stop(tok, ids: list[int], lps: list[float], text: str,
                stops: tuple[str, ...]) -> tuple[list[int], list[float], str, bool]:
    """(ids, logprobs, text) ended at the first stop string (not included), and whether one was hit."""
    starts = [text.find(s) for s in stops if s in text]
    if not starts:
        return ids, lps, text, False
    keep = len(ids)
    for k in range(1, len(ids) + 1):  # the fewest tokens whose text holds a stop string
        prefix = tok.decode(ids[:k], skip_special_tokens=True)
        if any(s in prefix for s in stops):
            keep = k
            break
    return ids[:keep], lps[:keep], text[:min(starts)], True


def text_pieces(tok, ids: list[int], text: str) -> list[str]:
    """``text`` split into one piece per token (some empty) that join to exactly ``text``: a piece
    waits while its token ends inside a multi-byte character."""
    pieces, sent = [], 0
    for k in range(1, len(ids) + 1):
        prefix = tok.decode(ids[:k], skip_special_tokens=True)
        end = sent
        if not prefix.endswith("\ufffd"):
            reach = min(len(prefix), len(text))
            if text[:reach] == prefix[:reach]:
                end = max(sent, reach)
        pieces.append(text[sent:end])
        sent = end
    if pieces:
        pieces[-1] += text[sent:]
    return pieces


def logprob_entries(tok, ids: list[int], lps: list[float], top: list[list[tuple[int, float]]] | None) -> list[dict]:
    """OpenAI's ``logprobs.content``: each completion token (the end-of-turn token included, as it is
    counted in the usage) with its behaviour logprob, and the likeliest alternatives if asked."""
    def token(i: int) -> dict:
        s = tok.decode([i])
        return {"token": s, "bytes": list(s.encode("utf-8"))}

    return [{**token(i), "logprob": lp,
             "top_logprobs": [{**token(t), "logprob": v} for t, v in top[k]] if top else []}
            for k, (i, lp) in enumerate(zip(ids, lps))]


def _tool_calls_json(calls: list[ToolCall], indexed: bool = False) -> list[dict]:
    return [{**({"index": j} if indexed else {}), "id": c.id, "type": "function",
             "function": {"name": c.name, "arguments": c.arguments}} for j, c in enumerate(calls)]


def _usage(c: Completion) -> dict:
    return {"prompt_tokens": c.prompt_tokens, "completion_tokens": c.completion_tokens,
            "total_tokens": c.prompt_tokens + c.completion_tokens}


def completion_json(c: Completion, model: str, ident: str, created: int) -> dict:
    msg = {"role": "assistant", "content": c.content if (c.content or not c.tool_calls) else None}
    if c.tool_calls:
        msg["tool_calls"] = _tool_calls_json(c.tool_calls)
    return {"id": ident, "object": "chat.completion", "created": created, "model": model,
            "choices": [{"index": 0, "message": msg, "finish_reason": c.finish_reason,
                         "logprobs": None if c.logprobs is None else {"content": c.logprobs}}],
            "usage": _usage(c)}


def stream_events(c: Completion, req: ChatRequest, model: str, ident: str, created: int) -> list[bytes]:
    """The completion as Server-Sent Events in OpenAI's chunk format: a role chunk, one chunk per
    token, the tool calls, a chunk with the finish reason, the usage if asked, then ``[DONE]``."""
    def chunk(delta: dict, finish: str | None = None, logprobs: list[dict] | None = None) -> dict:
        obj = {"id": ident, "object": "chat.completion.chunk", "created": created, "model": model,
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish,
                            "logprobs": {"content": logprobs} if req.logprobs and logprobs is not None else None}]}
        return {**obj, "usage": None} if req.include_usage else obj

    chunks = [chunk({"role": "assistant", "content": ""})]
    chunks += [chunk({"content": piece}, logprobs=entries) for piece, entries in c.steps]
    if c.tool_calls:
        chunks.append(chunk({"tool_calls": _tool_calls_json(c.tool_calls, indexed=True)}))
    chunks.append(chunk({}, c.finish_reason))
    if req.include_usage:
        chunks.append({"id": ident, "object": "chat.completion.chunk", "created": created, "model": model,
                       "choices": [], "usage": _usage(c)})
    return [b"data: " + json.dumps(o).encode() + b"\n\n" for o in chunks] + [b"data: [DONE]\n\n"]


# -- the server -------------------------------------------------------------------------------------

def make_server(policy: HFPolicy, host: str = "127.0.0.1", port: int = 8000,
                api_key: str | None = None) -> ThreadingHTTPServer:
    """The server, bound (not yet serving). ``api_key``: required as a bearer token on every request;
    without one, only a loopback ``host`` is allowed (ValueError otherwise)."""
    check_bind(host, api_key)

    class Handler(BaseHTTPRequestHandler):
        def _authorized(self) -> bool:
            if not api_key or _key_matches(self.headers.get("Authorization"), api_key):
                return True
            try:  # drop a small body unread by the handler, so the client gets the 401 and not a reset
                n = int(self.headers.get("Content-Length") or 0)
                if 0 < n <= MAX_UNAUTHENTICATED_BODY:
                    self.rfile.read(n)
            except (ValueError, OSError):
                pass
            self.close_connection = True
            self._send(401, error_body("missing or invalid API key: send the header 'Authorization: Bearer <key>' "
                                       "with the key tmax serve was given", code="invalid_api_key"),
                       {"WWW-Authenticate": 'Bearer realm="tmax"'})
            return False

        def _send(self, code: int, obj: dict, headers: dict | None = None) -> None:
            body = json.dumps(obj).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body)

        def _no_route(self) -> None:
            self._send(404, error_body(f"no route {self.path}", code="unknown_url"))

        def _read_json(self) -> object:
            try:
                n = int(self.headers.get("Content-Length") or 0)
                return json.loads(self.rfile.read(n)) if n > 0 else None
            except ValueError as e:
                raise RequestError(f"the request body is not valid JSON: {e}") from e

        def _stream(self, events: list[bytes]) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.end_headers()  # HTTP/1.0: the stream ends when the connection closes
            try:
                for e in events:
                    self.wfile.write(e)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client stopped reading

        def do_GET(self):
            if not self._authorized():
                return
            if self.path.rstrip("/") in ("/v1/models", "/models"):
                self._send(200, {"object": "list", "data": [{"id": policy.model_name, "object": "model",
                                                             "owned_by": "tmax"}]})
            elif self.path == "/health":
                self._send(200, {"status": "ok"})
            else:
                self._no_route()

        def do_POST(self):
            if not self._authorized():
                return
            if self.path.rstrip("/") not in CHAT_ROUTES:
                self._no_route()
                return
            try:
                req = parse_chat_request(self._read_json())
                result = complete(policy, req)
            except RequestError as e:
                self._send(e.status, e.body())
                return
            except Exception as e:  # noqa: BLE001 - the engine failing is the server's fault
                self._send(500, error_body(f"{type(e).__name__}: {e}", "server_error"))
                return
            ident, created = "chatcmpl-" + uuid.uuid4().hex[:12], int(time.time())
            if req.stream:
                self._stream(stream_events(result, req, policy.model_name, ident, created))
            else:
                self._send(200, completion_json(result, policy.model_name, ident, created))

        def log_message(self, *args):
            pass

    cls = ThreadingHTTPServer
    if ":" in host:  # an IPv6 literal
        cls = type("ThreadingHTTPServer6", (ThreadingHTTPServer,), {"address_family": socket.AF_INET6})
    return cls((host.strip("[]"), port), Handler)
