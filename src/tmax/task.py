"""The unit of work: one task directory in Harbor layout (or Terminal-Bench 1 layout, read only).

Harbor layout::

    instruction.md  task.toml  environment/  solution/solve.sh  tests/test.sh

tmax's own metadata (image profile, axes, family, seed, ...) lives in ``task.toml [metadata]``.
Loading validates everything up front and raises :class:`TaskError` naming the file, the field
and what was expected, so a batch can report one clear line per bad task and go on.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MAX_FILE_BYTES = 50 * 1024 * 1024  # a single task file larger than this is refused
MAX_TASK_BYTES = 200 * 1024 * 1024
DEFAULT_AGENT_TIMEOUT = 600.0
DEFAULT_VERIFIER_TIMEOUT = 600.0
DEFAULT_WORK_AREAS = ("/app", "/root", "/home", "/srv", "/data", "/output", "/workspace")
NETWORK_MODES = ("no-network", "public", "allowlist")
REWARD_STRATEGIES = ("mean", "final")


class TaskError(ValueError):
    """A task directory is malformed. ``str()`` names the file, the field and what was expected."""

    def __init__(self, path: Path | str, message: str, field: str | None = None):
        self.path = str(path)
        self.field = field
        self.message = message
        where = f"{self.path}: {field}: " if field else f"{self.path}: "
        super().__init__(where + message)


@dataclass
class Resources:
    cpus: float = 1.0
    memory_mb: int = 2048
    storage_mb: int = 10240
    allow_internet: bool = False


@dataclass(frozen=True)
class Network:
    """One phase's network policy, as Harbor's ``network_mode``. tmax's own tasks have none."""

    mode: str = "no-network"
    allowed_hosts: tuple[str, ...] = ()

    @property
    def online(self) -> bool:
        return self.mode != "no-network"


@dataclass(frozen=True)
class Healthcheck:
    """Harbor's ``[environment.healthcheck]``: run after the service starts until it exits 0."""

    command: str
    interval_sec: float = 5.0
    timeout_sec: float = 30.0
    start_period_sec: float = 0.0
    retries: int = 3


@dataclass(frozen=True)
class Sidecar:
    """A compose service beside the main one: its own sandbox (environment from its own setup under
    ``env_dir``) on the task's private network, reachable by ``name``."""

    name: str
    env_dir: str
    command: str
    env: dict[str, str] = field(default_factory=dict)
    ports: tuple[int, ...] = ()  # waited for before the agent starts
    healthcheck: str | None = None
    workdir: str = "/"


@dataclass(frozen=True)
class Step:
    """One step of a multi-step task: ``steps/<name>/{instruction.md,tests/,solution/,workdir/}``."""

    name: str
    instruction: str
    agent_timeout: float
    verifier_timeout: float
    min_reward: float | dict[str, float] | None = None


@dataclass
class Task:
    """A loaded, validated task. ``path`` is the task directory."""

    path: Path
    name: str
    instruction: str
    metadata: dict[str, Any] = field(default_factory=dict)
    agent_timeout: float = DEFAULT_AGENT_TIMEOUT
    verifier_timeout: float = DEFAULT_VERIFIER_TIMEOUT
    verifier_env: dict[str, str] = field(default_factory=dict)
    resources: Resources = field(default_factory=Resources)
    layout: str = "harbor"  # or "tb1"
    # Paths relative to the task dir; for tb1 they differ from Harbor's.
    setup_script: str | None = "environment/setup.sh"
    solution_script: str = "solution/solve.sh"
    tests_dir: str = "tests"
    test_script: str = "test.sh"  # inside tests_dir (tb1: run-tests.sh is staged into it)
    workdir: str = "/app"
    env_dir: str = "environment"  # the build context of its setup (a separate verifier's has its own)
    agent_network: Network = field(default_factory=Network)
    verifier_network: Network = field(default_factory=Network)
    # Separate verifier (Harbor's environment_mode = "separate"): the verifier starts on a fresh
    # environment (its own setup under ``verifier_env_dir``, or the task's) and sees only ``artifacts``.
    verifier_mode: str = "shared"
    verifier_env_dir: str | None = None
    artifacts: tuple[str, ...] = ()
    service: str | None = None  # the image's ENTRYPOINT/CMD: started before the agent and the verifier
    healthcheck: Healthcheck | None = None
    env: dict[str, str] = field(default_factory=dict)  # [environment.env]: set for agent and verifier
    reward_key: str | None = None  # which named reward is the scalar (default: "reward", else the mean)
    steps: tuple[Step, ...] = ()
    reward_strategy: str = "mean"
    sidecars: tuple[Sidecar, ...] = ()

    @property
    def image(self) -> str:
        return str(self.metadata.get("image", "default"))

    @property
    def work_areas(self) -> tuple[str, ...]:
        return tuple(self.metadata.get("work_areas", DEFAULT_WORK_AREAS))

    @property
    def environment_dir(self) -> Path:
        return self.path / self.env_dir if self.layout == "harbor" else self.path

    @property
    def build_network(self) -> bool:
        """Setup may fetch (apt, pip) when the author said so, or when the agent is online anyway."""
        return bool(self.metadata.get("build_network", self.agent_network.online))

    def environment_digest(self) -> str:
        """Content hash of what the task's own setup depends on (its setup script and files)."""
        h = hashlib.sha256()
        if self.layout == "harbor":
            root = self.environment_dir
            for f in sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else []:
                h.update(str(f.relative_to(root)).encode() + b"\0" + f.read_bytes() + b"\0")
        return h.hexdigest()


def _read_text(path: Path, field: str | None = None) -> str:
    try:
        size = path.stat().st_size
    except OSError as e:
        raise TaskError(path, f"cannot read: {e.strerror}", field) from None
    if size > MAX_FILE_BYTES:
        raise TaskError(path, f"file is {size} bytes; expected at most {MAX_FILE_BYTES}", field)
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as e:
        raise TaskError(path, f"not valid UTF-8 (byte {e.start}); expected UTF-8 text", field) from None


def check_tree(root: Path) -> None:
    """Refuse symlinks that leave the task, oversized files and oversized tasks."""
    root_real = root.resolve()
    total = 0
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            if p.is_symlink():
                target = (p.parent / os.readlink(p)).resolve()
                if target != root_real and root_real not in target.parents:
                    raise TaskError(p, f"symlink points outside the task ({os.readlink(p)}); "
                                       "expected links to stay inside the task directory")
            elif p.is_file():
                size = p.stat().st_size
                if size > MAX_FILE_BYTES:
                    raise TaskError(p, f"file is {size} bytes; expected at most {MAX_FILE_BYTES}")
                total += size
            elif not p.is_dir():  # a FIFO would block the loader; a device node has no place here
                raise TaskError(p, "not a regular file or directory; expected plain files")
    if total > MAX_TASK_BYTES:
        raise TaskError(root, f"task holds {total} bytes; expected at most {MAX_TASK_BYTES}")


def _expect(table: dict, key: str, types: type | tuple, path: Path, prefix: str, default: Any = None) -> Any:
    if key not in table:
        return default
    value = table[key]
    if isinstance(value, bool) and bool not in (types if isinstance(types, tuple) else (types,)):
        ok = False
    else:
        ok = isinstance(value, types)
    if not ok:
        names = "/".join(t.__name__ for t in (types if isinstance(types, tuple) else (types,)))
        raise TaskError(path, f"expected {names}, got {type(value).__name__} {value!r}", f"{prefix}{key}")
    return value


def _positive(value: float, path: Path, field: str) -> float:
    if not math.isfinite(value) or value <= 0:
        raise TaskError(path, f"expected a positive number, got {value}", field)
    return float(value)


def load_task(path: str | Path) -> Task:
    """Load and validate a task directory in Harbor or Terminal-Bench 1 layout."""
    path = Path(path)
    if not path.is_dir():
        raise TaskError(path, "not a directory; expected a task directory")
    if (path / "task.toml").exists() or (path / "instruction.md").exists():
        loader = _load_harbor
    elif (path / "task.yaml").exists():
        loader = _load_tb1
    else:
        raise TaskError(path, "no task.toml/instruction.md (Harbor) or task.yaml (Terminal-Bench 1) found")
    check_tree(path)  # first: no file is read before links, sizes and file types are checked
    return loader(path)


def _load_harbor(path: Path) -> Task:
    instr_path = path / "instruction.md"
    multi_step = not instr_path.is_file() and (path / "steps").is_dir()
    if not instr_path.is_file() and not multi_step:
        raise TaskError(instr_path, "missing; expected the task prompt in instruction.md")
    instruction = "" if multi_step else _read_text(instr_path)
    if not instruction.strip() and not multi_step:
        raise TaskError(instr_path, "is empty; expected the task prompt")
    toml_path = path / "task.toml"
    if not toml_path.is_file():
        raise TaskError(toml_path, "missing; expected task.toml with [task], [agent], [verifier]")
    try:
        doc = tomllib.loads(_read_text(toml_path))
    except tomllib.TOMLDecodeError as e:
        raise TaskError(toml_path, f"invalid TOML: {e}") from None
    for section in ("task", "metadata", "agent", "verifier", "environment"):
        _expect(doc, section, dict, toml_path, "")
    task_t = doc.get("task", {})
    meta = doc.get("metadata", {})
    agent_t = doc.get("agent", {})
    ver_t = doc.get("verifier", {})
    env_t = doc.get("environment", {})
    name = _expect(task_t, "name", str, toml_path, "task.", default=path.name)
    if not name.strip():
        raise TaskError(toml_path, "expected a non-empty name", "task.name")
    _expect(meta, "image", str, toml_path, "metadata.")
    wa = _expect(meta, "work_areas", list, toml_path, "metadata.")
    if wa is not None and not all(isinstance(w, str) and w.startswith("/") for w in wa):
        raise TaskError(toml_path, "expected a list of absolute paths", "metadata.work_areas")
    agent_timeout = _positive(_expect(agent_t, "timeout_sec", (int, float), toml_path, "agent.",
                                      DEFAULT_AGENT_TIMEOUT), toml_path, "agent.timeout_sec")
    ver_timeout = _positive(_expect(ver_t, "timeout_sec", (int, float), toml_path, "verifier.",
                                    DEFAULT_VERIFIER_TIMEOUT), toml_path, "verifier.timeout_sec")
    ver_env = _expect(ver_t, "env", dict, toml_path, "verifier.", {})
    for k, v in ver_env.items():
        if not isinstance(v, str):
            raise TaskError(toml_path, f"expected string, got {type(v).__name__}", f"verifier.env.{k}")
    res = Resources(
        cpus=_positive(_expect(env_t, "cpus", (int, float), toml_path, "environment.", 1), toml_path, "environment.cpus"),
        memory_mb=int(_positive(_expect(env_t, "memory_mb", int, toml_path, "environment.", 2048), toml_path,
                                "environment.memory_mb")),
        storage_mb=int(_positive(_expect(env_t, "storage_mb", int, toml_path, "environment.", 10240), toml_path,
                                 "environment.storage_mb")),
        allow_internet=_expect(env_t, "allow_internet", bool, toml_path, "environment.", False),
    )
    steps = _steps(path, doc, toml_path, agent_timeout, ver_timeout)
    if multi_step and not steps:
        raise TaskError(toml_path, "expected [[steps]] (the task has steps/ and no instruction.md)", "steps")
    instruction = instruction or steps[0].instruction if steps else instruction
    tests = path / "tests" / "test.sh"
    if not steps and not tests.is_file():
        raise TaskError(tests, "missing; expected the verifier entry point tests/test.sh")
    if tests.is_file():
        _read_text(tests)
    setup = path / "environment" / "setup.sh"
    if setup.exists():
        _read_text(setup)
    env_base = _network(env_t, toml_path, "environment.", _legacy_network(env_t, toml_path))
    mode, ver_env_dir = _verifier_mode(path, ver_t, meta, toml_path)
    res.allow_internet = _network(agent_t, toml_path, "agent.", env_base).online
    workdir = _expect(env_t, "workdir", str, toml_path, "environment.", "/app")
    if not workdir.startswith("/"):
        raise TaskError(toml_path, f"expected an absolute path, got {workdir!r}", "environment.workdir")
    strategy = _expect(doc, "multi_step_reward_strategy", str, toml_path, "", "mean")
    if strategy not in REWARD_STRATEGIES:
        raise TaskError(toml_path, f"expected one of {', '.join(REWARD_STRATEGIES)}, got {strategy!r}",
                        "multi_step_reward_strategy")
    service = _expect(meta, "service", str, toml_path, "metadata.")
    return Task(path=path, name=name, instruction=instruction, metadata=dict(meta),
                agent_timeout=agent_timeout, verifier_timeout=ver_timeout, verifier_env=dict(ver_env),
                resources=res, layout="harbor",
                setup_script="environment/setup.sh" if setup.exists() else None, workdir=workdir,
                agent_network=_network(agent_t, toml_path, "agent.", env_base),
                verifier_network=_network(ver_t, toml_path, "verifier.", env_base),
                verifier_mode=mode, verifier_env_dir=ver_env_dir, artifacts=_artifacts(doc, toml_path),
                service=service or None, healthcheck=_healthcheck(env_t, toml_path),
                env=_task_env(env_t, toml_path), reward_key=_expect(meta, "reward_key", str, toml_path, "metadata."),
                steps=steps, reward_strategy=strategy, sidecars=_sidecars(path, meta, toml_path))


def _sidecars(path: Path, meta: dict, toml_path: Path) -> tuple["Sidecar", ...]:
    out, seen = [], set()
    for i, sc in enumerate(_expect(meta, "sidecars", list, toml_path, "metadata.", [])):
        where = f"metadata.sidecars[{i}]."
        if not isinstance(sc, dict):
            raise TaskError(toml_path, "expected a table", f"metadata.sidecars[{i}]")
        name = _expect(sc, "name", str, toml_path, where, "")
        if not re.fullmatch(r"[a-z0-9][a-z0-9_.-]*", name) or name in seen or name == "main":
            raise TaskError(toml_path, f"expected a unique service name (lower case), got {name!r}", where + "name")
        seen.add(name)
        env_dir = _expect(sc, "env_dir", str, toml_path, where, "")
        if env_dir.startswith("/") or ".." in env_dir.split("/") or not (path / env_dir / "setup.sh").is_file():
            raise TaskError(toml_path, f"expected a directory of the task holding setup.sh, got {env_dir!r}",
                            where + "env_dir")
        command = _expect(sc, "command", str, toml_path, where, "")
        if not command:
            raise TaskError(toml_path, "expected the service's command", where + "command")
        env = _expect(sc, "env", dict, toml_path, where, {})
        ports = _expect(sc, "ports", list, toml_path, where, [])
        if not all(isinstance(v, str) for v in env.values()) or not all(
                isinstance(p, int) and not isinstance(p, bool) and 0 < p < 65536 for p in ports):
            raise TaskError(toml_path, "expected string variables and port numbers", where + "env/ports")
        out.append(Sidecar(name=name, env_dir=env_dir, command=command, env=dict(env), ports=tuple(ports),
                           healthcheck=_expect(sc, "healthcheck", str, toml_path, where),
                           workdir=_expect(sc, "workdir", str, toml_path, where, "/")))
    return tuple(out)


def _legacy_network(env_t: dict, path: Path) -> "Network":
    """``allow_internet`` (schema < 1.4) when no ``network_mode`` is set; tmax's default is none."""
    allow = _expect(env_t, "allow_internet", bool, path, "environment.", False)
    return Network("public" if allow else "no-network")


def _network(table: dict, path: Path, prefix: str, default: "Network") -> "Network":
    mode = _expect(table, "network_mode", str, path, prefix)
    hosts = _expect(table, "allowed_hosts", list, path, prefix)
    if mode is None:
        if hosts:
            raise TaskError(path, "allowed_hosts needs network_mode = \"allowlist\"", f"{prefix}allowed_hosts")
        return default
    if mode not in NETWORK_MODES:
        raise TaskError(path, f"expected one of {', '.join(NETWORK_MODES)}, got {mode!r}", f"{prefix}network_mode")
    if hosts and mode != "allowlist":
        raise TaskError(path, "allowed_hosts is only valid with network_mode = \"allowlist\"", f"{prefix}allowed_hosts")
    if not all(isinstance(h, str) and h.strip() and "://" not in h and " " not in h for h in hosts or []):
        raise TaskError(path, "expected hostnames, IP addresses or CIDR ranges", f"{prefix}allowed_hosts")
    return Network(mode, tuple(hosts or ()))


def _verifier_mode(path: Path, ver_t: dict, meta: dict, toml_path: Path) -> tuple[str, str | None]:
    mode = _expect(ver_t, "environment_mode", str, toml_path, "verifier.")
    own = _expect(meta, "verifier_env_dir", str, toml_path, "metadata.")
    if mode is None:
        mode = "separate" if ("environment" in ver_t or own) else "shared"
    if mode not in ("shared", "separate"):
        raise TaskError(toml_path, f"expected shared or separate, got {mode!r}", "verifier.environment_mode")
    if mode == "shared" and own:
        raise TaskError(toml_path, "a verifier environment of its own needs environment_mode = \"separate\"",
                        "metadata.verifier_env_dir")
    if own is not None and (own.startswith("/") or ".." in own.split("/") or not (path / own / "setup.sh").is_file()):
        raise TaskError(toml_path, f"expected a directory of the task holding setup.sh, got {own!r}",
                        "metadata.verifier_env_dir")
    return mode, own


def _artifacts(doc: dict, path: Path) -> tuple[str, ...]:
    out = []
    for i, a in enumerate(_expect(doc, "artifacts", list, path, "", [])):
        src = a.get("source") if isinstance(a, dict) else a
        if not isinstance(src, str) or not src.startswith("/") or ".." in src.split("/"):
            raise TaskError(path, f"expected an absolute path without '..', got {src!r}", f"artifacts[{i}]")
        out.append(src.rstrip("/") or "/")
    return tuple(out)


def _healthcheck(env_t: dict, path: Path) -> "Healthcheck | None":
    hc = _expect(env_t, "healthcheck", dict, path, "environment.")
    if hc is None:
        return None
    cmd = _expect(hc, "command", str, path, "environment.healthcheck.")
    if not cmd:
        raise TaskError(path, "expected a shell command", "environment.healthcheck.command")
    num = {k: _expect(hc, k, (int, float), path, "environment.healthcheck.", d) for k, d in
           (("interval_sec", 5.0), ("timeout_sec", 30.0), ("start_period_sec", 0.0), ("retries", 3))}
    return Healthcheck(cmd, float(num["interval_sec"]), float(num["timeout_sec"]), float(num["start_period_sec"]),
                       int(num["retries"]))


def _task_env(env_t: dict, path: Path) -> dict[str, str]:
    """``[environment.env]``. Harbor fills ``${VAR}`` from the host; tmax never passes host variables into
    a sandbox (they hold keys and tokens), so only ``${VAR:-default}`` is accepted, as its default."""
    out = {}
    for k, v in _expect(env_t, "env", dict, path, "environment.", {}).items():
        if not isinstance(v, str):
            raise TaskError(path, f"expected string, got {type(v).__name__}", f"environment.env.{k}")

        def default(m, k=k):
            if m.group(2) is None:
                raise TaskError(path, f"${{{m.group(1)}}} would copy a host variable into the sandbox; expected a "
                                "literal or ${VAR:-default}", f"environment.env.{k}")
            return m.group(2)
        out[k] = re.sub(r"\$\{(\w+)(?::-([^}]*))?\}", default, v)
    return out


def _steps(path: Path, doc: dict, toml_path: Path, agent_timeout: float, ver_timeout: float) -> tuple["Step", ...]:
    steps = _expect(doc, "steps", list, toml_path, "", [])
    out, seen = [], set()
    for i, st in enumerate(steps):
        where = f"steps[{i}]."
        if not isinstance(st, dict):
            raise TaskError(toml_path, "expected a table", f"steps[{i}]")
        name = _expect(st, "name", str, toml_path, where)
        if not name or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name) or name.lower() in seen:
            raise TaskError(toml_path, f"expected a unique portable directory name, got {name!r}", where + "name")
        seen.add(name.lower())
        step_dir = path / "steps" / name
        instr = step_dir / "instruction.md"
        if not instr.is_file():
            raise TaskError(instr, "missing; expected the step's prompt")
        if not (step_dir / "tests" / "test.sh").is_file() and not (path / "tests" / "test.sh").is_file():
            raise TaskError(step_dir / "tests" / "test.sh", "missing; expected the step's verifier (or tests/test.sh)")
        a_t, v_t = (_expect(st, k, dict, toml_path, where, {}) for k in ("agent", "verifier"))
        min_reward = st.get("min_reward")
        if min_reward is not None and not (
                isinstance(min_reward, (int, float)) and not isinstance(min_reward, bool) or isinstance(min_reward, dict)
                and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in min_reward.values())):
            raise TaskError(toml_path, f"expected a number or a table of numbers, got {min_reward!r}", where + "min_reward")
        out.append(Step(name=name, instruction=_read_text(instr),
                        agent_timeout=_positive(_expect(a_t, "timeout_sec", (int, float), toml_path, where + "agent.",
                                                        agent_timeout), toml_path, where + "agent.timeout_sec"),
                        verifier_timeout=_positive(_expect(v_t, "timeout_sec", (int, float), toml_path,
                                                           where + "verifier.", ver_timeout), toml_path,
                                                   where + "verifier.timeout_sec"),
                        min_reward=float(min_reward) if isinstance(min_reward, (int, float)) else
                        ({k: float(x) for k, x in min_reward.items()} if min_reward else None)))
    return tuple(out)


def _load_tb1(path: Path) -> Task:
    import yaml  # only TB1 needs YAML

    yaml_path = path / "task.yaml"
    try:
        doc = yaml.safe_load(_read_text(yaml_path))
    except yaml.YAMLError as e:
        raise TaskError(yaml_path, f"invalid YAML: {e}") from None
    if not isinstance(doc, dict):
        raise TaskError(yaml_path, "expected a mapping at the top level")
    instruction = doc.get("instruction")
    if not isinstance(instruction, str) or not instruction.strip():
        raise TaskError(yaml_path, "expected a non-empty string", "instruction")
    for script in ("run-tests.sh", "solution.sh"):
        if not (path / script).is_file():
            raise TaskError(path / script, f"missing; expected {script} in a Terminal-Bench 1 task")
    meta = {k: doc[k] for k in ("difficulty", "category", "tags") if k in doc}
    meta["image"] = "default"
    agent_timeout = _positive(_expect(doc, "max_agent_timeout_sec", (int, float), yaml_path, "",
                                      DEFAULT_AGENT_TIMEOUT), yaml_path, "max_agent_timeout_sec")
    ver_timeout = _positive(_expect(doc, "max_test_timeout_sec", (int, float), yaml_path, "",
                                    DEFAULT_VERIFIER_TIMEOUT), yaml_path, "max_test_timeout_sec")
    return Task(path=path, name=path.name, instruction=instruction, metadata=meta,
                agent_timeout=agent_timeout, verifier_timeout=ver_timeout, layout="tb1",
                setup_script=None, solution_script="solution.sh", tests_dir="tests",
                test_script="run-tests.sh")


def write_task(dest: Path, *, name: str, instruction: str, files: dict[str, str | bytes],
               metadata: dict[str, Any] | None = None, agent_timeout: float = DEFAULT_AGENT_TIMEOUT,
               verifier_timeout: float = DEFAULT_VERIFIER_TIMEOUT, resources: Resources | None = None) -> Path:
    """Write a Harbor task directory. ``files`` maps relative paths (environment/..., tests/...,
    solution/...) to contents. Output is byte-stable for the same inputs."""
    res = resources or Resources()
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "instruction.md").write_text(instruction if instruction.endswith("\n") else instruction + "\n")
    lines = ['schema_version = "1.1"', "", "[task]", f"name = {_toml_value(name)}", "",
             "[metadata]"]
    for k, v in sorted((metadata or {}).items()):
        lines.append(f"{k} = {_toml_value(v)}")
    lines += ["", "[agent]", f"timeout_sec = {float(agent_timeout)}", "",
              "[verifier]", f"timeout_sec = {float(verifier_timeout)}", "",
              "[environment]", f"cpus = {res.cpus}", f"memory_mb = {res.memory_mb}",
              f"storage_mb = {res.storage_mb}", f"allow_internet = {str(res.allow_internet).lower()}", ""]
    (dest / "task.toml").write_text("\n".join(lines))
    for rel, content in sorted(files.items()):
        p = dest / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            p.write_bytes(content)
        else:
            p.write_text(content)
        if p.suffix == ".sh":
            p.chmod(0o755)
    return dest


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {_toml_value(x)}" for k, x in sorted(v.items())) + " }"
    raise TypeError(f"cannot write {type(v).__name__} to TOML")
