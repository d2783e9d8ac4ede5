"""The one agent harness (mini-SWE-agent style), used unchanged by solving, evaluation and RL.

One bash command per turn, through native tool calling or (for models without it) one fenced block;
a persistent shell; a submit marker; corrective messages on format errors, with a cap on consecutive
ones; long outputs cut to their first and last 5,000 characters; limits on steps, tokens per turn,
command time and wall clock. The linear message history is the trajectory; it is saved in ATIF after
every step.
"""

from __future__ import annotations

import json
import re
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from tmax.agent.atif import Trajectory
from tmax.errors import InfraError
from tmax.sandbox import Sandbox, SandboxLost

SUBMIT = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
PROMPTS = tomllib.loads((Path(__file__).parent / "prompts.toml").read_text())
BASH_TOOL = {
    "type": "function",
    "function": {
        "name": "bash",
        "description": "Run one shell command in the persistent terminal and get its output and exit code.",
        "parameters": {"type": "object", "properties": {"command": {"type": "string", "description": "The command."}},
                       "required": ["command"]},
    },
}
FENCE = re.compile(r"```(?:bash|sh|shell)?[ \t]*\n(.*?)```", re.DOTALL)


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: str  # JSON text, as the model produced it


@dataclass
class Reply:
    """One policy turn."""

    content: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    reasoning: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: str = "stop"
    # Token-level data for RL (engines that have it).
    prompt_ids: list[int] | None = None
    completion_ids: list[int] | None = None
    logprobs: list[float] | None = None
    policy_version: int | None = None


class Policy(Protocol):
    name: str
    model_name: str
    tool_calling: bool  # native tool calls (else text mode)

    def act(self, messages: list[dict], tools: list[dict] | None, max_tokens: int) -> Reply: ...


class PolicyError(InfraError):
    """The model backend failed (after retries): an infrastructure error, not the agent's."""


@dataclass
class HarnessConfig:
    max_steps: int = 64
    max_tokens_per_turn: int = 16384
    command_timeout: float = 120.0
    wall_clock: float | None = None  # seconds for the whole episode; the trial's agent timeout if None
    max_format_errors: int = 3  # consecutive
    output_limit: int = 10_000
    tool_calling: bool | None = None  # None: use what the policy supports


@dataclass
class Episode:
    submitted: bool = False
    stop_reason: str = ""  # submitted | step_limit | wall_clock | format_errors | policy_error | sandbox_lost | sandbox_error
    steps: int = 0
    messages: list[dict] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    format_errors: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    replies: list[Reply] = field(default_factory=list)
    error: str = ""

    def summary(self) -> dict[str, Any]:
        return {"submitted": self.submitted, "stop_reason": self.stop_reason, "steps": self.steps,
                "format_errors": self.format_errors, "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens, "commands": self.commands, "error": self.error}


def truncate(text: str, limit: int = 10_000) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    note = PROMPTS["truncated_note"].format(elided=len(text) - 2 * half)
    return text[:half] + "\n" + note + "\n" + text[-half:]


def observation(exit_code: int, output: str, timed_out: bool, timeout: float, limit: int) -> str:
    out = truncate(output, limit) if output else "(no output)"
    if timed_out:
        return PROMPTS["timeout_observation"].format(timeout=f"{timeout:g}", output=out)
    return PROMPTS["observation"].format(returncode=exit_code, output=out)


def parse_command(reply: Reply, tool_mode: bool) -> tuple[str | None, str]:
    """(command, error reason). Exactly one bash call (tool mode) or one fenced block (text mode)."""
    if tool_mode:
        calls = reply.tool_calls
        if not calls:
            return None, "no tool call; call the `bash` tool"
        if len(calls) > 1:
            return None, f"{len(calls)} tool calls; make exactly one"
        call = calls[0]
        if call.name != "bash":
            return None, f"unknown tool {call.name!r}; the only tool is `bash`"
        try:
            args = json.loads(call.arguments) if call.arguments.strip() else {}
        except json.JSONDecodeError as e:
            return None, f"the tool arguments are not valid JSON ({e.msg})"
        if not isinstance(args, dict) or not isinstance(args.get("command"), str) or not args["command"].strip():
            return None, "the `bash` tool needs a non-empty string argument `command`"
        return args["command"], ""
    blocks = FENCE.findall(reply.content or "")
    if len(blocks) != 1:
        return None, f"found {len(blocks)} ```bash blocks; give exactly one"
    if not blocks[0].strip():
        return None, "the ```bash block is empty"
    return blocks[0].strip("\n"), ""


def is_submission(command: str, output: str, exit_code: int) -> bool:
    lines = output.lstrip().splitlines()
    return exit_code == 0 and bool(lines) and lines[0].strip() == SUBMIT


def run_episode(instruction: str, sandbox: Sandbox, policy: Policy, config: HarnessConfig | None = None,
                trajectory_path: Path | None = None, deadline: float | None = None) -> Episode:
    cfg = config or HarnessConfig()
    tool_mode = policy.tool_calling if cfg.tool_calling is None else cfg.tool_calling
    how = PROMPTS["how_tools"] if tool_mode else PROMPTS["how_text"]
    system = PROMPTS["system"] if tool_mode else PROMPTS["system_text_mode"]
    ep = Episode(messages=[{"role": "system", "content": system},
                           {"role": "user", "content": PROMPTS["instance"].format(instruction=instruction.strip(),
                                                                               submit=SUBMIT)}])
    traj = Trajectory(agent_name="tmax-harness", model_name=policy.model_name)
    traj.add_message("system", system)
    traj.add_message("user", ep.messages[1]["content"])
    start = time.monotonic()
    if cfg.wall_clock is not None:
        deadline = min(deadline or float("inf"), start + cfg.wall_clock)
    tools = [BASH_TOOL] if tool_mode else None
    consecutive_errors = 0

    def save(min_interval: float = 1.0) -> None:  # during the episode at most once a second; at the end always
        if trajectory_path is not None:
            traj.final_metrics = ep.summary()
            traj.save(trajectory_path, min_interval)

    while True:
        if ep.steps >= cfg.max_steps:
            ep.stop_reason = "step_limit"
            break
        if deadline is not None and time.monotonic() >= deadline:
            ep.stop_reason = "wall_clock"
            break
        try:
            reply = policy.act(ep.messages, tools, cfg.max_tokens_per_turn)
        except PolicyError as e:
            ep.stop_reason, ep.error = "policy_error", str(e)
            break
        ep.steps += 1
        ep.replies.append(reply)
        ep.prompt_tokens += reply.prompt_tokens
        ep.completion_tokens += reply.completion_tokens
        assistant: dict[str, Any] = {"role": "assistant", "content": reply.content or ""}
        if reply.tool_calls:
            assistant["tool_calls"] = [{"id": c.id, "type": "function",
                                        "function": {"name": c.name, "arguments": c.arguments}}
                                       for c in reply.tool_calls]
        ep.messages.append(assistant)
        command, reason = parse_command(reply, tool_mode)
        if command is None and reply.finish_reason == "length":
            reason = f"the response was cut off at {cfg.max_tokens_per_turn} tokens; be shorter"
        if command is None:
            ep.format_errors += 1
            consecutive_errors += 1
            msg = PROMPTS["format_error"].format(reason=reason, how=how, submit=SUBMIT)
            _answer(ep, reply, msg, tool_mode)
            traj.add_agent_step(reply, None, msg)
            save()
            if consecutive_errors >= cfg.max_format_errors:
                ep.stop_reason = "format_errors"
                break
            continue
        consecutive_errors = 0
        ep.commands.append(command)
        timeout = cfg.command_timeout
        if deadline is not None:
            timeout = max(1.0, min(timeout, deadline - time.monotonic()))
        try:
            r = sandbox.exec(command, timeout=timeout)
        except SandboxLost as e:  # the agent's command ended its own sandbox: the agent's failure
            ep.stop_reason, ep.error = "sandbox_lost", str(e)
            traj.add_agent_step(reply, command, f"[sandbox lost: {e}]")
            save()
            break
        except Exception as e:  # the sandbox itself failed: infrastructure
            ep.stop_reason, ep.error = "sandbox_error", f"{type(e).__name__}: {e}"
            traj.add_agent_step(reply, command, f"[sandbox error: {e}]")
            save()
            break
        if is_submission(command, r.output, r.exit_code):
            ep.submitted, ep.stop_reason = True, "submitted"
            traj.add_agent_step(reply, command, r.output)
            save()
            break
        obs = observation(r.exit_code, r.output, r.timed_out, timeout, cfg.output_limit)
        _answer(ep, reply, obs, tool_mode)
        traj.add_agent_step(reply, command, obs)
        save()
    save(min_interval=0.0)
    return ep


def _answer(ep: Episode, reply: Reply, text: str, tool_mode: bool) -> None:
    """The environment's answer: a tool message for the one tool call, else a user message."""
    if tool_mode and len(reply.tool_calls) == 1:
        ep.messages.append({"role": "tool", "tool_call_id": reply.tool_calls[0].id, "content": text})
        return
    if tool_mode and reply.tool_calls:  # several calls: each needs an answer for the chat to stay valid
        for c in reply.tool_calls:
            ep.messages.append({"role": "tool", "tool_call_id": c.id, "content": text})
        return
    ep.messages.append({"role": "user", "content": text})
