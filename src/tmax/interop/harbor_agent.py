"""tmax's harness as a Harbor agent, for any Harbor dataset and any OpenAI-compatible model::

    harbor run -p TASKS --agent-import-path tmax.interop.harbor_agent:TmaxAgent \\
        -m openai/MODEL --base-url http://127.0.0.1:8000/v1 [--ak max_steps=64 --ak tool_calling=false]

The loop is :func:`tmax.agent.harness.run_episode` unchanged (prompts, parsing, truncation, format
errors, submit marker). Only the shell differs: Harbor's ``environment.exec`` runs each command in a
fresh process, so :class:`HarborShell` carries the working directory and exported variables from one
command to the next through a state directory in the environment, and bounds each command with
coreutils ``timeout``. Harbor is async and the harness is not: the episode runs in a worker thread and
each command is scheduled back onto Harbor's event loop.

Harbor needs Python >= 3.12 (``bash scripts/harbor_venv.sh``); this module imports without it.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import time
from pathlib import Path

from tmax.agent.harness import HarnessConfig, run_episode
from tmax.sandbox.base import ExecResult

STATE_DIR = "/tmp/.tmax-shell"
TIMEOUT_MARK = "__TMAX_COMMAND_TIMED_OUT__"
KILL_GRACE = 5  # seconds between TERM and KILL for a command past its time

try:  # Harbor is optional: without it the module still imports and says what is missing on use
    from harbor.agents.agent_auth_resolution import ModelConnectionSpec, ProviderAccess
    from harbor.agents.base import BaseAgent
    from harbor.agents.capabilities import AgentCapabilities
    from harbor.agents.options import AgentOptions
    from harbor.models.model_api_format import ModelApiFormat
    from pydantic import Field

    HARBOR = True
except ImportError as _e:
    HARBOR, _HARBOR_ERROR = False, _e

    class BaseAgent:  # type: ignore[no-redef]
        def __init__(self, *args, **kwargs):
            raise ImportError(f"TmaxAgent needs Harbor (PyPI `harbor`, Python >= 3.12; see scripts/harbor_venv.sh): "
                              f"{_HARBOR_ERROR}")


def wrap(command: str, timeout: float) -> str:
    """A bash program that restores the state, runs ``command`` with its output interleaved, saves the
    state, and prints TIMEOUT_MARK if ``timeout`` killed it (the state of a killed command is lost)."""
    inner = (f's={STATE_DIR}; if [ -f $s/env ]; then . $s/env 2>/dev/null; fi; '
             f'if [ -f $s/cwd ]; then cd "$(cat $s/cwd)" 2>/dev/null; fi\n'
             f'eval {shlex.quote(command)}\n'
             f'__rc=$?; pwd > $s/cwd; export -p > $s/env; : > $s/finished; exit $__rc')
    return (f'mkdir -p {STATE_DIR}; rm -f {STATE_DIR}/finished; '
            f'timeout -k {KILL_GRACE} {max(1, int(timeout))} bash -c {shlex.quote(inner)} </dev/null 2>&1; rc=$?; '
            f'if [ $rc -ge 124 ] && [ ! -e {STATE_DIR}/finished ]; then echo {TIMEOUT_MARK}; fi; exit $rc')


class HarborShell:
    """The harness's sandbox interface (``exec(command, timeout)``) over a Harbor environment."""

    def __init__(self, environment, loop: asyncio.AbstractEventLoop):
        self.environment = environment
        self.loop = loop

    def exec(self, command: str, timeout: float | None = None, persistent: bool = True) -> ExecResult:
        timeout = timeout or 120.0
        t0 = time.monotonic()
        fut = asyncio.run_coroutine_threadsafe(
            self.environment.exec(wrap(command, timeout), timeout_sec=int(timeout) + 2 * KILL_GRACE), self.loop)
        r = fut.result(timeout + 4 * KILL_GRACE)
        out = (r.stdout or "") + (r.stderr or "")
        timed_out = TIMEOUT_MARK in out
        out = out.replace(TIMEOUT_MARK + "\n", "").replace(TIMEOUT_MARK, "")
        return ExecResult(exit_code=r.return_code, output=out, timed_out=timed_out,
                          duration=time.monotonic() - t0, output_bytes=len(out.encode()), truncated=False)


def served_model_name(model_name: str | None) -> str:
    """The name an OpenAI-compatible server knows: Harbor's LiteLLM-style ``openai/`` prefix is dropped."""
    name = model_name or ""
    for prefix in ("openai/", "hosted_vllm/"):
        if name.startswith(prefix):
            return name[len(prefix):]
    return name


if HARBOR:
    class TmaxOptions(AgentOptions):
        """``--ak key=value`` options; defaults are the harness's."""

        max_steps: int = Field(default=64, description="Steps (model turns) per episode.")
        max_tokens: int = Field(default=16384, description="Tokens per model turn.")
        command_timeout: float = Field(default=120.0, description="Seconds per command.")
        temperature: float = Field(default=1.0, description="Sampling temperature.")
        tool_calling: bool = Field(default=True, description="Native tool calls; false: one ```bash block per turn.")
        served_model: str | None = Field(default=None, description="Model name sent to the server "
                                                                    "(default: -m without its openai/ prefix).")
        api_key_env: str = Field(default="OPENAI_API_KEY", description="Environment variable with the API key.")


class TmaxAgent(BaseAgent):
    """Harbor's BaseAgent running tmax's one harness."""

    if HARBOR:
        MODEL_CONNECTION = ModelConnectionSpec(
            base_url_destination_names={"default": None},
            agent_provider_access=ProviderAccess(api_key_candidate_names=["OPENAI_API_KEY"],
                                                 base_url_candidate_names=["OPENAI_BASE_URL", "OPENAI_API_BASE"]),
            supported_api_formats=[ModelApiFormat.OPENAI_CHAT_COMPLETIONS])
        capabilities = AgentCapabilities(base_url=True, atif=True)
        options_model = TmaxOptions

    @staticmethod
    def name() -> str:
        return "tmax"

    def version(self) -> str | None:
        import tmax

        return tmax.__version__

    async def setup(self, environment) -> None:
        pass  # nothing to install: the harness runs here, only commands run in the environment

    def _policy(self):
        from tmax.agent.policies import OpenAIPolicy

        opts = self.options
        base_url = self._base_url or opts.base_url or os.environ.get("OPENAI_BASE_URL") \
            or os.environ.get("OPENAI_API_BASE")
        if not base_url:
            raise ValueError("TmaxAgent needs an OpenAI-compatible endpoint: --base-url URL (or OPENAI_BASE_URL)")
        return OpenAIPolicy(base_url=base_url, model_name=opts.served_model or served_model_name(self.model_name),
                            api_key=self._get_env(opts.api_key_env), tool_calling=opts.tool_calling,
                            temperature=opts.temperature)

    async def run(self, instruction: str, environment, context) -> None:
        opts = self.options
        cfg = HarnessConfig(max_steps=opts.max_steps, max_tokens_per_turn=opts.max_tokens,
                            command_timeout=opts.command_timeout)
        shell = HarborShell(environment, asyncio.get_running_loop())
        traj = Path(self.logs_dir) / "trajectory.json"
        ep = await asyncio.to_thread(run_episode, instruction, shell, self._policy(), cfg, traj)
        context.n_input_tokens = ep.prompt_tokens
        context.n_output_tokens = ep.completion_tokens
        context.metadata = {**(context.metadata or {}), "tmax": ep.summary()}
        if ep.stop_reason == "policy_error":
            raise RuntimeError(f"model endpoint failed: {ep.error}")
