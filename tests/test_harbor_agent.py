"""tmax's harness as a Harbor agent: loaded by Harbor's own import-path loader, and one episode driven
through Harbor's BaseEnvironment interface (a thin adapter over a real tmax sandbox, since Harbor's own
environments need a container engine). Runs in Harbor's venv (Python >= 3.12, scripts/harbor_venv.sh)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Runs inside Harbor's venv. argv: base_url, logs dir.
DRIVER = r'''
import asyncio, json, sys
from pathlib import Path
sys.path.insert(0, sys.argv[3])
from harbor.agents.base import BaseAgent
from harbor.agents.factory import AgentFactory
from harbor.environments.base import BaseEnvironment, ExecResult
from harbor.models.agent.context import AgentContext
from harbor.models.task.config import EnvironmentConfig
from harbor.models.trial.config import AgentConfig
from harbor.models.trial.paths import TrialPaths

from tmax.images import host_environment
from tmax.sandbox import get_backend


class TmaxSandboxEnvironment(BaseEnvironment):
    """Harbor's environment interface over a started tmax sandbox: each exec is a fresh subshell,
    as in Harbor's own environments (the agent must carry its own state)."""

    @staticmethod
    def type():
        return "tmax-sandbox"

    def _validate_definition(self):
        pass

    async def start(self, force_build):
        self.sb = get_backend("bwrap").start(host_environment().spec(workdir="/app", work_areas=("/app",)))

    async def stop(self, delete):
        self.sb.close()

    async def exec(self, command, cwd=None, env=None, timeout_sec=None, user=None):
        r = await asyncio.to_thread(self.sb.exec, f"cd {cwd or '/app'} && {command}", timeout_sec, False)
        return ExecResult(stdout=r.output, stderr="", return_code=r.exit_code)

    async def upload_file(self, source_path, target_path): raise NotImplementedError
    async def upload_dir(self, source_dir, target_dir): raise NotImplementedError
    async def download_file(self, source_path, target_path): raise NotImplementedError
    async def download_dir(self, source_dir, target_dir): raise NotImplementedError


async def main():
    logs = Path(sys.argv[2])
    cfg = AgentConfig(import_path="tmax.interop.harbor_agent:TmaxAgent", model_name="openai/replay",
                      base_url=sys.argv[1], kwargs={"max_steps": 8, "command_timeout": 2})
    cls = AgentFactory.get_agent_class_from_config(cfg)
    AgentFactory.run_preflight(cfg)
    agent = AgentFactory.create_agent_from_config(cfg, logs_dir=logs)
    env = TmaxSandboxEnvironment(environment_dir=logs, environment_name="t", session_id="t__env",
                                 trial_paths=TrialPaths(logs.parent), task_env_config=EnvironmentConfig())
    await env.start(False)
    try:
        await agent.setup(env)
        ctx = AgentContext()
        await agent.run("Write 42 to /app/answer.txt.", env, ctx)
        answer = (await env.exec("cat /app/answer.txt")).stdout
        leftover = (await env.exec("ls -A /app")).stdout
    finally:
        await env.stop(True)
    print(json.dumps({"subclass": issubclass(cls, BaseAgent), "name": agent.name(), "version": agent.version(),
                      "import_path": cls.import_path(), "answer": answer, "app": leftover,
                      "context": ctx.model_dump(mode="json")}))

asyncio.run(main())
'''


def harbor_python() -> Path | None:
    env = {k: v for k, v in os.environ.items() if k != "TMAX_HOME"}  # the venv lives in the real cache
    try:
        out = subprocess.run(["bash", str(ROOT / "scripts" / "harbor_venv.sh")], capture_output=True, text=True,
                             timeout=600, env=env)
    except subprocess.TimeoutExpired:
        return None
    return Path(out.stdout.strip()) if out.returncode == 0 and out.stdout.strip() else None


@pytest.fixture(scope="module")
def harbor_py() -> Path:
    py = harbor_python()
    if py is None:
        pytest.skip("Harbor's venv is not available (needs Python >= 3.12; scripts/harbor_venv.sh)")
    missing = subprocess.run([str(py), "-c", "import click, rich, yaml"], capture_output=True).returncode
    if missing:  # tmax's core dependencies, for importing tmax from its source tree
        subprocess.run([str(py), "-m", "pip", "install", "-q", "click>=8.1", "rich>=13", "pyyaml>=6"], check=True)
    return py


def test_module_imports_without_harbor():
    code = "import tmax.interop.harbor_agent as m; print(m.HARBOR); m.TmaxAgent()"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if r.stdout.startswith("True"):
        pytest.skip("harbor is installed in this Python")
    assert r.stdout.startswith("False") and "needs Harbor" in r.stderr


SCRIPT = [  # tool calls, in order: state carries over, a timeout is reported, then submit
    "cd /app && export ANSWER=42 && mkdir -p sub && cd sub",
    "pwd; echo $ANSWER > /app/answer.txt",
    "sleep 30",
    "echo still here $ANSWER",
    "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT",
]


@contextlib.contextmanager
def serve_script(script: list[str]):
    """An OpenAI-compatible endpoint whose replies are one bash tool call each, in ``script``'s order
    (the last repeats); yields (base URL, the request bodies seen)."""
    seen: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            seen.append(body)
            cmd = script[min(len(seen), len(script)) - 1]
            msg = {"role": "assistant", "content": "", "tool_calls": [
                {"id": f"c{len(seen)}", "type": "function",
                 "function": {"name": "bash", "arguments": json.dumps({"command": cmd})}}]}
            data = json.dumps({"choices": [{"index": 0, "message": msg, "finish_reason": "tool_calls"}],
                               "usage": {"prompt_tokens": 100, "completion_tokens": 10}}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *a):
            pass

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}/v1", seen
    finally:
        srv.shutdown()


@pytest.fixture
def scripted_model():
    with serve_script(SCRIPT) as served:
        yield served


def test_harbor_loads_the_agent_and_it_runs_an_episode(harbor_py, scripted_model, tmp_path, bwrap):
    url, seen = scripted_model
    logs = tmp_path / "trial" / "agent"
    logs.mkdir(parents=True)
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}  # no network fetch at Harbor import
    r = subprocess.run([str(harbor_py), "-c", DRIVER, url, str(logs), str(ROOT / "src")], capture_output=True,
                       text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["subclass"] and out["name"] == "tmax" and out["import_path"] == "tmax.interop.harbor_agent:TmaxAgent"
    assert out["answer"].strip() == "42" and "sub" in out["app"].split()
    meta = out["context"]["metadata"]["tmax"]
    assert meta["submitted"] and meta["steps"] == 5 and meta["commands"] == SCRIPT
    assert out["context"]["n_input_tokens"] == 500 and out["context"]["n_output_tokens"] == 50
    # what the model saw: the working directory and the exported variable carried over between
    # Harbor's one-process-per-command execs; the timeout was reported and the shell went on
    tool_msgs = [m["content"] for m in seen[-1]["messages"] if m["role"] == "tool"]
    assert "/app/sub" in tool_msgs[1] and "timed out after 2 seconds" in tool_msgs[2]
    assert "still here 42" in tool_msgs[3]
    assert seen[0]["model"] == "replay" and seen[0]["tools"][0]["function"]["name"] == "bash"
    traj = json.loads((logs / "trajectory.json").read_text())
    assert traj["final_metrics"]["extra"]["submitted"] is True


def test_full_harbor_run_of_the_agent_in_tmax_sandboxes(harbor_py, bwrap, tmp_path):
    """Harbor's own `harbor run` with tmax's agent and tmax's environment (no container engine), a
    scripted model behind an OpenAI-compatible endpoint: the Harbor-format fixture task scores 1."""
    script = ["wc -l < /app/data.txt | tr -d ' ' > /app/count.txt", "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"]
    with serve_script(script) as (url, calls):
        tasks = tmp_path / "tasks"
        shutil.copytree(ROOT / "tests" / "harbor_tasks" / "plain", tasks / "plain")
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "HARBOR_TELEMETRY": "0",
               "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
        r = subprocess.run([str(Path(harbor_py).parent / "harbor"), "run", "-p", str(tasks), "--agent-import-path",
                            "tmax.interop.harbor_agent:TmaxAgent", "-m", "openai/replay", "--ak", f"base_url={url}",
                            "-e", "tmax.interop.harbor_env:TmaxEnvironment", "-o", str(tmp_path / "jobs"),
                            "--job-name", "j", "-y", "-q"], capture_output=True, text=True, timeout=600, env=env)
    assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
    (result,) = (tmp_path / "jobs" / "j").glob("plain__*/result.json")
    data = json.loads(result.read_text())
    assert data.get("exception_info") is None, data["exception_info"]
    assert data["verifier_result"]["rewards"]["reward"] == 1.0 and len(calls) >= 2
