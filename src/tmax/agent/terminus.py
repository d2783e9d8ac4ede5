"""A second harness for cross-harness evaluation, in the style of Terminus-2: a tmux session inside the
sandbox driven with keystrokes; the model answers JSON with analysis, plan, commands
([{keystrokes, duration}]) and a completion flag, and sees the terminal screen after each turn.

The main harness (``tmax.agent.harness``) stays the one used for RL; this one lets a model trained
there be measured on another, as the paper does.
"""

from __future__ import annotations

import json
import re
import shlex
import time
from dataclasses import dataclass, field
from pathlib import Path

from tmax.agent.atif import Trajectory
from tmax.agent.harness import Episode, HarnessConfig, Policy, PolicyError, Reply


SYSTEM = """You operate a Linux terminal through a tmux session to complete a task.
Every reply is ONE JSON object, nothing else:
{"analysis": "what the screen shows", "plan": "what you will do next",
 "commands": [{"keystrokes": "ls -la\\n", "duration": 0.5}],
 "task_complete": false}
keystrokes are typed literally; end a command with \\n to run it. duration is how many seconds to
wait before the next screen (0.1 to 60). Set "task_complete": true only when the task is done."""
INSTANCE = "Task:\n{instruction}\n\nCurrent terminal screen:\n{screen}"
JSON_BLOCK = re.compile(r"\{.*\}", re.DOTALL)
SESSION = "tmax"


@dataclass
class TerminusAgent:
    policy: Policy
    config: HarnessConfig = field(default_factory=HarnessConfig)
    trajectory_path: Path | None = None
    name: str = "terminus"
    episode: Episode | None = None

    def binds(self, task) -> list:
        return []

    def info(self) -> dict:
        return self.episode.summary() if self.episode else {}

    def _screen(self, sandbox) -> str:
        return sandbox.exec(f"tmux capture-pane -p -t {SESSION}", timeout=10).output.rstrip()

    def run(self, task, sandbox, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        cfg = self.config
        r = sandbox.exec(f"tmux new-session -d -s {SESSION} -x 160 -y 48 -c /app", timeout=20)
        if r.exit_code != 0:
            raise PolicyError(f"tmux could not start in the sandbox: {r.output[-300:]}")
        ep = Episode(messages=[{"role": "system", "content": SYSTEM},
                               {"role": "user", "content": INSTANCE.format(instruction=task.instruction.strip(),
                                                                         screen=self._screen(sandbox))}])
        traj = Trajectory(agent_name="tmax-terminus", model_name=self.policy.model_name)
        traj.add_message("system", SYSTEM)
        traj.add_message("user", ep.messages[1]["content"])
        errors = 0
        self.episode = ep
        while ep.steps < cfg.max_steps:
            if time.monotonic() >= deadline:
                ep.stop_reason = "wall_clock"
                break
            reply: Reply = self.policy.act(ep.messages, None, cfg.max_tokens_per_turn)
            ep.steps += 1
            ep.prompt_tokens += reply.prompt_tokens
            ep.completion_tokens += reply.completion_tokens
            ep.messages.append({"role": "assistant", "content": reply.content})
            parsed, why = parse_reply(reply.content)
            if parsed is None:
                errors += 1
                ep.format_errors += 1
                msg = f"Your reply was not valid: {why}. Reply with exactly one JSON object as specified."
                ep.messages.append({"role": "user", "content": msg})
                traj.add_agent_step(reply, None, msg)
                if errors >= cfg.max_format_errors:
                    ep.stop_reason = "format_errors"
                    break
                continue
            errors = 0
            for cmd in parsed["commands"]:
                keys = cmd["keystrokes"]
                ep.commands.append(keys.rstrip("\n"))
                sandbox.exec(f"tmux send-keys -t {SESSION} -l {shlex.quote(keys)}", timeout=10)
                time.sleep(min(max(float(cmd.get("duration", 1.0)), 0.1), 60.0, max(0.0, deadline - time.monotonic())))
            screen = self._screen(sandbox)
            if parsed.get("task_complete"):
                ep.submitted, ep.stop_reason = True, "submitted"
                traj.add_agent_step(reply, None, screen)
                break
            ep.messages.append({"role": "user", "content": f"Current terminal screen:\n{screen}"})
            traj.add_agent_step(reply, None, screen)
            if self.trajectory_path:
                traj.final_metrics = ep.summary()
                traj.save(self.trajectory_path, min_interval=1.0)
        else:
            ep.stop_reason = "step_limit"
        if self.trajectory_path:
            traj.final_metrics = ep.summary()
            traj.save(self.trajectory_path)
        return ep.stop_reason == "wall_clock"


def parse_reply(text: str) -> tuple[dict | None, str]:
    m = JSON_BLOCK.search(text or "")
    if not m:
        return None, "no JSON object found"
    try:
        obj = json.loads(m.group(0))
    except json.JSONDecodeError as e:
        return None, f"invalid JSON ({e.msg})"
    if not isinstance(obj, dict):
        return None, "expected a JSON object"
    cmds = obj.get("commands", [])
    if not isinstance(cmds, list) or not all(isinstance(c, dict) and isinstance(c.get("keystrokes"), str)
                                             for c in cmds):
        return None, "commands must be a list of {keystrokes, duration}"
    obj["commands"] = cmds
    return obj, ""
