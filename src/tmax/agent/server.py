"""``tmax serve``: an OpenAI-compatible chat server over a local Hugging Face engine, so any client
(ours included) can talk to a real local model over HTTP."""

from __future__ import annotations

import json
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tmax.agent.hf import HFPolicy


def make_server(policy: HFPolicy, host: str = "127.0.0.1", port: int = 8000) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def _send(self, code: int, obj: dict) -> None:
            body = json.dumps(obj).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            if self.path.rstrip("/") in ("/v1/models", "/models"):
                self._send(200, {"object": "list", "data": [{"id": policy.model_name, "object": "model"}]})
            elif self.path == "/health":
                self._send(200, {"status": "ok"})
            else:
                self._send(404, {"error": {"message": f"no route {self.path}"}})

        def do_POST(self):
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

    return ThreadingHTTPServer((host, port), Handler)
