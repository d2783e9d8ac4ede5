"""ATIF (Agent Trajectory Interchange Format, v1.x) trajectories, written during the episode."""

from __future__ import annotations

import json
import os
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import tmax

SCHEMA_VERSION = "ATIF-v1.2"


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


@dataclass
class Trajectory:
    agent_name: str
    model_name: str
    session_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    steps: list[dict[str, Any]] = field(default_factory=list)
    final_metrics: dict[str, Any] = field(default_factory=dict)
    _saved_at: float = field(default=float("-inf"), repr=False)

    def add_message(self, source: str, message: str) -> None:
        self.steps.append({"step_id": len(self.steps) + 1, "timestamp": _now(), "source": source, "message": message})

    def add_agent_step(self, reply, command: str | None, observation: str) -> None:
        step: dict[str, Any] = {"step_id": len(self.steps) + 1, "timestamp": _now(), "source": "agent",
                                "message": reply.content or "", "reasoning_content": reply.reasoning or None,
                                "tool_calls": [{"tool_call_id": c.id, "function_name": c.name,
                                                "arguments": _args(c.arguments)} for c in reply.tool_calls],
                                "metrics": {"prompt_tokens": reply.prompt_tokens,
                                            "completion_tokens": reply.completion_tokens}}
        if reply.logprobs is not None:
            step["metrics"]["logprobs"] = reply.logprobs
        if command is not None and not reply.tool_calls:  # text mode: record the parsed command as a call
            step["tool_calls"] = [{"tool_call_id": f"text-{len(self.steps)}", "function_name": "bash",
                                   "arguments": {"command": command}}]
        source_id = step["tool_calls"][0]["tool_call_id"] if step["tool_calls"] else None
        step["observation"] = {"results": [{"source_call_id": source_id, "content": observation}]}
        self.steps.append(step)

    def to_json(self) -> dict[str, Any]:
        return {"schema_version": SCHEMA_VERSION, "session_id": self.session_id,
                "agent": {"name": self.agent_name, "version": tmax.__version__, "model_name": self.model_name},
                "steps": self.steps, "final_metrics": self.final_metrics}

    def save(self, path: Path, min_interval: float = 0.0) -> None:
        """Rewrite the file whole (atomically). With ``min_interval``, skip the write if the last one is
        more recent: a long episode then costs O(steps), not O(steps^2), and a kill loses at most that
        many seconds of steps."""
        if time.monotonic() - self._saved_at < min_interval:
            return
        self._saved_at = time.monotonic()
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(json.dumps(self.to_json(), indent=1))
        os.replace(tmp, path)


def _args(text: str) -> Any:
    try:
        return json.loads(text)
    except (json.JSONDecodeError, TypeError):
        return text
