"""ATIF (Agent Trajectory Interchange Format) trajectories, written during the episode.

The files are ATIF-v1.8, the version Harbor 0.26 writes by default, and validate under Harbor's own
``harbor.models.trajectories.Trajectory`` (tests/test_harbor_jobs.py checks that). ATIF objects admit no
unknown keys, so what is tmax's own goes in their ``extra``: the episode summary the harness keeps in
``Trajectory.final_metrics`` is written as ``final_metrics.extra``, beside the totals ATIF names, and a
tool call whose arguments are not a JSON object keeps its raw text in the call's ``extra``.
"""

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

SCHEMA_VERSION = "ATIF-v1.8"


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


@dataclass
class Trajectory:
    agent_name: str
    model_name: str
    session_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    steps: list[dict[str, Any]] = field(default_factory=list)
    final_metrics: dict[str, Any] = field(default_factory=dict)  # tmax's episode summary (see the module doc)
    _saved_at: float = field(default=float("-inf"), repr=False)

    def add_message(self, source: str, message: str) -> None:
        self.steps.append({"step_id": len(self.steps) + 1, "timestamp": _now(), "source": source, "message": message})

    def add_agent_step(self, reply, command: str | None, observation: str) -> None:
        calls = [_tool_call(c.id, c.name, c.arguments) for c in reply.tool_calls]
        if command is not None and not reply.tool_calls:  # text mode: record the parsed command as a call
            calls = [{"tool_call_id": f"text-{len(self.steps)}", "function_name": "bash",
                      "arguments": {"command": command}}]
        metrics: dict[str, Any] = {"prompt_tokens": reply.prompt_tokens, "completion_tokens": reply.completion_tokens}
        if reply.logprobs is not None:
            metrics["logprobs"] = reply.logprobs
        step: dict[str, Any] = {"step_id": len(self.steps) + 1, "timestamp": _now(), "source": "agent",
                                "message": reply.content or "", "llm_call_count": 1, "metrics": metrics}
        if reply.reasoning:
            step["reasoning_content"] = reply.reasoning
        if calls:
            step["tool_calls"] = calls
        result: dict[str, Any] = {"content": observation}
        if calls:  # the observation answers the first call (the harness runs one command per turn)
            result["source_call_id"] = calls[0]["tool_call_id"]
        step["observation"] = {"results": [result]}
        self.steps.append(step)

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "session_id": self.session_id,
                               "agent": {"name": self.agent_name, "version": tmax.__version__,
                                         "model_name": self.model_name},
                               "steps": self.steps}
        if self.final_metrics:
            doc["final_metrics"] = _final_metrics(self.final_metrics, len(self.steps))
        return doc

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


def _tool_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    """An ATIF tool call. ATIF's arguments are an object: other text (invalid JSON, a list) is kept
    verbatim in ``extra.raw_arguments`` with empty arguments, so the record stays what the model said."""
    call: dict[str, Any] = {"tool_call_id": call_id, "function_name": name, "arguments": {}}
    try:
        parsed = json.loads(arguments)
    except (json.JSONDecodeError, TypeError):
        parsed = None
    if isinstance(parsed, dict):
        call["arguments"] = parsed
    else:
        call["extra"] = {"raw_arguments": arguments}
    return call


def _final_metrics(summary: dict[str, Any], n_steps: int) -> dict[str, Any]:
    """ATIF's totals from the episode summary, and the whole summary under ``extra``."""
    out: dict[str, Any] = {"total_steps": n_steps, "extra": summary}
    for ours, atif in (("prompt_tokens", "total_prompt_tokens"), ("completion_tokens", "total_completion_tokens")):
        if isinstance(summary.get(ours), int):
            out[atif] = summary[ours]
    return out
