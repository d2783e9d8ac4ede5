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
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MAX_FILE_BYTES = 50 * 1024 * 1024  # a single task file larger than this is refused
MAX_TASK_BYTES = 200 * 1024 * 1024
DEFAULT_AGENT_TIMEOUT = 600.0
DEFAULT_VERIFIER_TIMEOUT = 600.0
DEFAULT_WORK_AREAS = ("/app", "/root", "/home", "/srv", "/data", "/output", "/workspace")


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

    @property
    def image(self) -> str:
        return str(self.metadata.get("image", "default"))

    @property
    def work_areas(self) -> tuple[str, ...]:
        return tuple(self.metadata.get("work_areas", DEFAULT_WORK_AREAS))

    @property
    def environment_dir(self) -> Path:
        return self.path / "environment" if self.layout == "harbor" else self.path

    def environment_digest(self) -> str:
        """Content hash of what the task's own setup depends on (its setup script and files)."""
        h = hashlib.sha256()
        if self.layout == "harbor":
            root = self.path / "environment"
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
    if not instr_path.is_file():
        raise TaskError(instr_path, "missing; expected the task prompt in instruction.md")
    instruction = _read_text(instr_path)
    if not instruction.strip():
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
    tests = path / "tests" / "test.sh"
    if not tests.is_file():
        raise TaskError(tests, "missing; expected the verifier entry point tests/test.sh")
    _read_text(tests)
    setup = path / "environment" / "setup.sh"
    if setup.exists():
        _read_text(setup)
    return Task(path=path, name=name, instruction=instruction, metadata=dict(meta),
                agent_timeout=agent_timeout, verifier_timeout=ver_timeout, verifier_env=dict(ver_env),
                resources=res, layout="harbor",
                setup_script="environment/setup.sh" if setup.exists() else None)


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
