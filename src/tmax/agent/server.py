"""``tmax serve``: an OpenAI-compatible chat server over a local Hugging Face engine, so any client
(ours included) can talk to a real local model over HTTP.

It binds loopback unless told otherwise. With an API key, every request must carry
``Authorization: Bearer KEY`` or gets a 401 with an OpenAI-style error body; a bind to anything but
a loopback address without a key is refused (ValueError), so a model is never handed to the network
unauthenticated."""

from __future__ import annotations

import hmac
import ipaddress
import json
import socket
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING

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
            self._send(401, {"error": {"message": "missing or invalid API key: send the header "
                                                  "'Authorization: Bearer <key>' with the key tmax serve was given",
                                       "type": "invalid_request_error", "param": None, "code": "invalid_api_key"}},
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

        def do_GET(self):
            if not self._authorized():
                return
            if self.path.rstrip("/") in ("/v1/models", "/models"):
                self._send(200, {"object": "list", "data": [{"id": policy.model_name, "object": "model"}]})
            elif self.path == "/health":
                self._send(200, {"status": "ok"})
            else:
                self._send(404, {"error": {"message": f"no route {self.path}"}})

        def do_POST(self):
            if not self._authorized():
                return
            if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
                self._send(404, {"error": {"message": f"no route {self.path}"}})
                return
            try:
                req = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                messages = req["messages"]
            except (ValueError, KeyError) as e:
                self._send(400, {"error": {"message": f"bad request: {e}"}})
                return
            old = (policy.temperature, policy.top_p)
            policy.temperature = float(req.get("temperature", policy.temperature))
            policy.top_p = float(req.get("top_p", policy.top_p))
            try:
                reply = policy.act(messages, req.get("tools"), int(req.get("max_tokens") or 512))
            except Exception as e:  # noqa: BLE001
                self._send(500, {"error": {"message": str(e)}})
                return
            finally:
                policy.temperature, policy.top_p = old
            msg = {"role": "assistant", "content": reply.content}
            if reply.tool_calls:
                msg["tool_calls"] = [{"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                                     for c in reply.tool_calls]
            self._send(200, {"id": "chatcmpl-" + uuid.uuid4().hex[:12], "object": "chat.completion",
                             "created": int(time.time()), "model": policy.model_name,
                             "choices": [{"index": 0, "message": msg,
                                          "finish_reason": "tool_calls" if reply.tool_calls else reply.finish_reason}],
                             "usage": {"prompt_tokens": reply.prompt_tokens, "completion_tokens": reply.completion_tokens,
                                       "total_tokens": reply.prompt_tokens + reply.completion_tokens}})

        def log_message(self, *args):
            pass

    cls = ThreadingHTTPServer
    if ":" in host:  # an IPv6 literal
        cls = type("ThreadingHTTPServer6", (ThreadingHTTPServer,), {"address_family": socket.AF_INET6})
    return cls((host.strip("[]"), port), Handler)
