"""Shared fixtures: a private TMAX_HOME and sandbox run dir per session, the host environment, a
helper that writes tiny tasks, a scripted agent, and process/mount inspection helpers."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tmax.images import host_environment
from tmax.sandbox import get_backend
from tmax.task import Resources, Task, load_task, write_task

NATIVE_BACKENDS = ("bwrap", "unshare")


def backend_skip_reason(name: str) -> str | None:
    """Why a native backend cannot run here (None if it can)."""
    ok, why = get_backend(name).available()
    if not ok:
        return why
    return None


def require_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root (cgroups for memory and pids limits)")


@pytest.fixture(scope="session", autouse=True)
def tmax_dirs(tmp_path_factory):
    """TMAX_HOME (image and layer caches) and TMAX_RUN_DIR (sandbox dirs) private to this session,
    so tests neither read nor pollute ~/.cache/tmax or the shared /tmp/tmax-sandboxes."""
    from tmax.images import images_root

    # Built images are big and slow to build: keep using the shared cache (scripts/test.sh builds it).
    os.environ.setdefault("TMAX_IMAGES", str(images_root()))
    home = tmp_path_factory.mktemp("tmax-home")
    run = tmp_path_factory.mktemp("tmax-run")
    saved = {k: os.environ.get(k) for k in ("TMAX_HOME", "TMAX_RUN_DIR")}
    os.environ["TMAX_HOME"] = str(home)
    os.environ["TMAX_RUN_DIR"] = str(run)
    yield {"home": home, "run": run}
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@pytest.fixture(scope="session")
def run_dir(tmax_dirs) -> Path:
    return tmax_dirs["run"]


@pytest.fixture(scope="session")
def host_env():
    return host_environment()


@pytest.fixture(params=NATIVE_BACKENDS)
def backend(request) -> str:
    why = backend_skip_reason(request.param)
    if why:
        pytest.skip(why)
    return request.param


@pytest.fixture
def bwrap() -> str:
    why = backend_skip_reason("bwrap")
    if why:
        pytest.skip(why)
    return "bwrap"


@pytest.fixture
def sandbox_factory(host_env):
    """start(backend, **spec_kw) -> a started sandbox on the host image; closed at teardown."""
    started = []

    def start(backend: str, **kw):
        kw.setdefault("workdir", "/app")
        kw.setdefault("work_areas", ("/app", "/root"))
        sb = get_backend(backend).start(host_env.spec(**kw))
        started.append(sb)
        return sb

    yield start
    for sb in started:
        sb.close()


@pytest.fixture
def sandbox(backend, sandbox_factory):
    return sandbox_factory(backend)


# -- tasks --------------------------------------------------------------------------------------

REWARD_IF_ANSWER = """#!/bin/bash
# Reward 1 only if the agent wrote the answer; 0 otherwise (always writes a reward).
mkdir -p /logs/verifier
if [ "$(cat /app/answer.txt 2>/dev/null)" = "42" ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt
"""
SOLVE_ANSWER = "#!/bin/bash\necho 42 > /app/answer.txt\n"


def make_task(dest: Path, *, name: str = "tiny", instruction: str = "Write 42 to /app/answer.txt.",
              setup: str | None = None, solve: str | None = SOLVE_ANSWER, test: str | None = REWARD_IF_ANSWER,
              files: dict[str, str | bytes] | None = None, metadata: dict | None = None,
              agent_timeout: float = 60.0, verifier_timeout: float = 60.0,
              resources: Resources | None = None) -> Path:
    """Write a tiny Harbor task on the host image and return its directory."""
    all_files: dict[str, str | bytes] = dict(files or {})
    if setup is not None:
        all_files["environment/setup.sh"] = setup
    if solve is not None:
        all_files["solution/solve.sh"] = solve
    if test is not None:
        all_files["tests/test.sh"] = test
    meta = {"image": "host", **(metadata or {})}
    return write_task(dest, name=name, instruction=instruction, files=all_files, metadata=meta,
                      agent_timeout=agent_timeout, verifier_timeout=verifier_timeout, resources=resources)


@pytest.fixture
def task_factory(tmp_path) -> Callable[..., Task]:
    """task_factory(**make_task kwargs) -> a loaded Task in a fresh directory."""
    counter = [0]

    def factory(**kw) -> Task:
        counter[0] += 1
        d = tmp_path / f"task{counter[0]}"
        return load_task(make_task(d, **kw))

    return factory


class ScriptAgent:
    """Execs a fixed list of steps in the agent's sandbox, as a real agent would. A step is a shell
    command (str) or a callable taking the sandbox. Records every ExecResult in ``results``."""

    def __init__(self, *steps, name: str = "scripted"):
        self.steps = steps
        self.name = name
        self.results = []  # ExecResults of the str steps, in order
        self.values = []  # return values of the callable steps

    def binds(self, task):
        return []

    def run(self, task, sandbox, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        for step in self.steps:
            left = deadline - time.monotonic()
            if left <= 0:
                return True
            if callable(step):
                self.values.append(step(sandbox))
                continue
            r = sandbox.exec(step, timeout=left)
            self.results.append(r)
            if r.timed_out and time.monotonic() >= deadline - 0.05:
                return True
        return False

    def output(self) -> str:
        return "\n".join(r.output for r in self.results)


# -- processes ----------------------------------------------------------------------------------

def proc_start_time(pid: int) -> int | None:
    """Start time (clock ticks since boot) of a pid, to tell a live process from a reused pid."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    return int(data[data.rindex(b")") + 2:].split()[19])


def identities(pids) -> set[tuple[int, int]]:
    out = set()
    for pid in pids:
        st = proc_start_time(pid)
        if st is not None:
            out.add((pid, st))
    return out


def still_alive(idents: set[tuple[int, int]]) -> list[tuple[int, int]]:
    return [(pid, st) for pid, st in idents if proc_start_time(pid) == st and not _zombie(pid)]


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
        return data[data.rindex(b")") + 2:].split()[0] in (b"Z", b"X")
    except OSError:
        return True


def cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


def all_pids() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def descendants_of(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for pid in all_pids():
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                data = f.read()
            ppid = int(data[data.rindex(b")") + 2:].split()[1])
        except (OSError, ValueError):
            continue
        children.setdefault(ppid, []).append(pid)
    out, stack = [], [root]
    while stack:
        for c in children.get(stack.pop(), []):
            if not _zombie(c):
                out.append(c)
            stack.append(c)
    return out


def wait_until(pred: Callable[[], bool], timeout: float = 5.0, step: float = 0.05) -> bool:
    end = time.monotonic() + timeout
    while True:
        if pred():
            return True
        if time.monotonic() > end:
            return False
        time.sleep(step)


def save_tiny_chat_model(folder: Path, layers: int = 1) -> Path:
    """A tiny random Llama (seeded) with the embedded model's tokenizer and chat template, saved as a
    plain Hugging Face folder: fast rollouts and training steps on real token streams."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    from tmax.agent.hf import embedded_model_dir

    tok = AutoTokenizer.from_pretrained(embedded_model_dir())
    torch.manual_seed(0)
    LlamaForCausalLM(LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=layers,
                                 num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=4096,
                                 eos_token_id=tok.eos_token_id)).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def default_image():
    """The default image, built once if missing (building needs root; elsewhere the test is skipped)."""
    from tmax.images import ImageError, get_environment

    try:
        return get_environment("default", build=False)
    except ImageError:
        if os.geteuid() != 0:
            pytest.skip("the default image is not built and building needs root")
        return get_environment("default", build=True)
