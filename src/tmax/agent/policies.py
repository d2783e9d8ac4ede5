"""Policies behind one interface (``act(messages, tools, max_tokens) -> Reply``): an OpenAI-compatible
chat client (vLLM, SGLang, llama.cpp servers, hosted APIs, ``tmax serve``), and a scripted policy for
tests. The local Hugging Face engine lives in ``tmax.agent.hf``."""

from __future__ import annotations

import json
import os
import random
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field

from tmax.agent.harness import PolicyError, Reply, ToolCall


@dataclass
class ScriptedPolicy:
    """Replays a list of turns: a string is a command (a tool call, or a fenced block in text mode),
    a Reply is returned as is. After the script ends it submits."""

    script: list = field(default_factory=list)
    tool_calling: bool = True
    name: str = "scripted"
    model_name: str = "scripted"
    calls: int = 0

    def act(self, messages: list[dict], tools: list[dict] | None, max_tokens: int) -> Reply:
        item = self.script[self.calls] if self.calls < len(self.script) else "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
        self.calls += 1
        if isinstance(item, Reply):
            return item
        if self.tool_calling:
            return Reply(content="", tool_calls=[ToolCall(f"call_{self.calls}", "bash", json.dumps({"command": item}))])
        return Reply(content=f"Next step.\n```bash\n{item}\n```")


@dataclass
class OpenAIPolicy:
    """Chat completions over HTTP with retries (exponential backoff with jitter) and timeouts."""

    base_url: str
    model_name: str
    api_key: str | None = None
    tool_calling: bool = True
    temperature: float = 1.0
    top_p: float = 1.0
    timeout: float = 600.0
    retries: int = 5
    backoff: float = 1.0
    extra_body: dict = field(default_factory=dict)
    name: str = "openai"

    def _post(self, body: dict) -> dict:
        url = self.base_url.rstrip("/") + "/chat/completions"
        key = self.api_key or os.environ.get("OPENAI_API_KEY") or "none"
        data = json.dumps(body).encode()
        last = ""
        for attempt in range(self.retries + 1):
            req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json",
                                                                  "Authorization": f"Bearer {key}"})
            try:
                with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                    return json.loads(resp.read())
            except urllib.error.HTTPError as e:
                detail = e.read()[:500].decode("utf-8", "replace")
                last = f"HTTP {e.code} from {url}: {detail}"
                if e.code not in (408, 409, 425, 429) and e.code < 500:
                    raise PolicyError(last) from None  # a request error will not heal by retrying
            except (urllib.error.URLError, TimeoutError, ConnectionError, json.JSONDecodeError) as e:
                last = f"{type(e).__name__} talking to {url}: {e}"
            if attempt < self.retries:
                time.sleep(self.backoff * (2 ** attempt) * (0.5 + random.random()))
        raise PolicyError(f"gave up after {self.retries + 1} attempts: {last}")

    def act(self, messages: list[dict], tools: list[dict] | None, max_tokens: int) -> Reply:
        body = {"model": self.model_name, "messages": messages, "max_tokens": max_tokens,
                "temperature": self.temperature, "top_p": self.top_p, **self.extra_body}
        if tools and self.tool_calling:
            body["tools"] = tools
        out = self._post(body)
        try:
            choice = out["choices"][0]
            msg = choice["message"]
        except (KeyError, IndexError, TypeError):
            raise PolicyError(f"malformed response: {str(out)[:300]}") from None
        calls = [ToolCall(c.get("id") or f"call_{i}", c["function"]["name"], c["function"].get("arguments") or "")
                 for i, c in enumerate(msg.get("tool_calls") or [])]
        usage = out.get("usage") or {}
        return Reply(content=msg.get("content") or "", tool_calls=calls,
                     reasoning=msg.get("reasoning_content") or msg.get("reasoning") or "",
                     prompt_tokens=usage.get("prompt_tokens", 0), completion_tokens=usage.get("completion_tokens", 0),
                     finish_reason=choice.get("finish_reason") or "stop")
