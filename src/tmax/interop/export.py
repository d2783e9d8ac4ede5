"""Export tmax tasks so that they run outside tmax: Harbor task directories, or Terminal-Bench 1 tasks.

Both carry a Dockerfile that rebuilds the task's image profile from a public Debian base and runs
its ``environment/setup.sh`` the way the image builder does. Harbor tasks keep ``tests/test.sh``
(which writes ``/logs/verifier/reward.txt`` or ``reward.json``) and ``solution/``, and a schema 1.4
``task.toml`` that verifies as tmax does: in a separate container built from the same Dockerfile
(``verifier.environment_mode = "separate"``), into which Harbor restores the agent's work areas
(declared as ``artifacts``; a task whose verifier is already separate keeps its own), so nothing
else the agent changed counts. Terminal-Bench 1 has one ``solution.sh`` and scores a pytest-style
summary, so the solution directory is bundled into a self-extracting ``solution.sh`` and
``run-tests.sh`` turns the reward into that summary. The original ``task.toml`` rides along as
``tmax-task.toml`` so that an import restores the task exactly.

The task being exported may be anyone's: its files are copied through :mod:`tmax.safe_files` (only
into ``out_root/<name>``, never through a symlink, no special files, no setuid/setgid/sticky bits).
"""

from __future__ import annotations

import base64
import re
import shutil
import tomllib
from pathlib import Path, PurePosixPath

from tmax.interop.dockerfile import render
from tmax.safe_files import UnsafeFile, check_name, copy_file, copy_tree, make_dir, write_file
from tmax.sandbox.container import outer_work_areas
from tmax.task import Task, TaskError, _toml_value, load_task

HARBOR_ORG = "tmax"
HARBOR_SCHEMA = "1.4"
BUILD_TIMEOUT = 1800.0  # apt-get of the whole profile plus the task's setup
# [task] fields Harbor's PackageInfo knows; any other field would be an unknown-config-field finding.
HARBOR_TASK_FIELDS = ("name", "version", "description", "authors", "keywords")
HARBOR_LOGS = "/logs"  # Harbor's own agent/verifier/artifact directories: no work area may overlap them
TB1_SIDECAR = "tmax-task.toml"
BUNDLE_BEGIN = "# tmax-solution-file: "
HEREDOC_END = "TMAX_END_OF_FILE"
BUNDLE_PATH = re.compile(r"[^\s'\\]+")  # the path sits inside '...' in shell and \S+ in the bundle parser


def export_task(src: str | Path, out_root: str | Path, fmt: str = "harbor") -> Path:
    """Write ``src`` (a tmax task in Harbor layout) under ``out_root`` in ``fmt`` (harbor or tb1)."""
    task = load_task(src)
    if task.layout != "harbor":
        raise TaskError(task.path, "is a Terminal-Bench 1 task; expected a tmax task (run tmax import first)")
    if task.image == "host":
        raise TaskError(task.path / "task.toml", "image 'host' cannot be rebuilt elsewhere; expected an image "
                        "profile such as 'default'", "metadata.image")
    if fmt not in ("harbor", "tb1"):
        raise ValueError(f"unknown export format {fmt!r}; expected harbor or tb1")
    _check_one_environment(task)
    _check_reward_writer(task)
    check_name(task.path.name, task.path, "task directory name")  # it names the output directory
    check_name(task.name, task.path / "task.toml", "task.name")
    dest = Path(out_root) / task.path.name
    if dest.is_symlink():  # never replace (or write into) what a link points to
        raise UnsafeFile(dest, "is a symlink; expected a directory the export may replace")
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    try:
        (_write_harbor if fmt == "harbor" else _write_tb1)(task, dest)
    except BaseException:
        shutil.rmtree(dest, ignore_errors=True)  # a refused task leaves nothing half-written
        raise
    return dest


def _check_one_environment(task: Task) -> None:
    """The export renders one environment and one verifier run: refuse what it would silently drop."""
    toml = task.path / "task.toml"
    if task.steps:
        raise TaskError(toml, "is a multi-step task; expected a single-step task (only those export)", "steps")
    if task.verifier_env_dir:
        raise TaskError(toml, "the verifier's own environment is not exported; expected a verifier that runs on "
                        "the task's environment", "metadata.verifier_env_dir")


def _check_reward_writer(task: Task) -> None:
    """Harbor and our TB1 wrapper read /logs/verifier/reward.{txt,json}: some test file must write one."""
    tests = task.path / task.tests_dir
    for f in sorted(p for p in tests.rglob("*") if p.is_file()):
        try:
            text = f.read_text()
        except (UnicodeDecodeError, OSError):
            continue
        if "reward.txt" in text or "reward.json" in text:
            return
    raise TaskError(tests / "test.sh", "no test file writes /logs/verifier/reward.txt or reward.json; expected "
                    "the verifier to write the reward there")


def harbor_name(name: str) -> str:
    """Harbor wants ``org/name`` with [A-Za-z0-9._-], starting alphanumeric."""
    short = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.") or "task"
    if not short[0].isalnum():
        short = "t" + short
    return f"{HARBOR_ORG}/{short}"


def harbor_toml(task: Task) -> str:
    """The schema 1.4 task.toml of ``task``'s Harbor export."""
    doc = tomllib.loads((task.path / "task.toml").read_text())
    task_t = {k: v for k, v in doc.get("task", {}).items() if k in HARBOR_TASK_FIELDS}
    task_t["name"] = harbor_name(task.name)
    meta = dict(task.metadata)
    if task_t["name"] != f"{HARBOR_ORG}/{task.name}":
        meta["tmax_name"] = task.name  # the name did not survive Harbor's pattern: keep it for import
    extra = {k: v for k, v in doc.get("task", {}).items() if k not in HARBOR_TASK_FIELDS}
    if extra:
        meta["tmax_task_fields"] = extra  # Harbor has no place for them in [task]; kept for import
    env = {"TEST_DIR": "/tests", **task.verifier_env}  # tmax's verifier sets TEST_DIR; Harbor may not
    res = task.resources
    sections: list[tuple[str, dict]] = [
        ("task", task_t), ("metadata", meta), ("agent", {"timeout_sec": task.agent_timeout}),
        # As in tmax, the verifier starts from the pristine image with only the artifacts carried over.
        ("verifier", {"timeout_sec": task.verifier_timeout, "environment_mode": "separate"}),
        ("verifier.env", env),
        ("environment", {"build_timeout_sec": BUILD_TIMEOUT, "cpus": _whole(res.cpus), "memory_mb": res.memory_mb,
                         "storage_mb": res.storage_mb,
                         "network_mode": "public" if res.allow_internet else "no-network"}),
    ]
    lines = [f"schema_version = {_toml_value(HARBOR_SCHEMA)}",
             "# What Harbor collects from the agent's container and restores in the verifier's.",
             f"artifacts = {_toml_value(harbor_artifacts(task))}"]
    for name, table in sections:
        lines += ["", f"[{name}]"] + [f"{k} = {_toml_value(v)}" for k, v in sorted(table.items(), key=_order)]
    return "\n".join(lines) + "\n"


def harbor_artifacts(task: Task) -> list[str]:
    """What Harbor carries from the agent's container into the verifier's: the task's own artifacts
    when its verifier is already separate, else its work areas (all that tmax's verifier sees). Only
    the outermost paths (one inside another is carried with it, and Harbor reports the pair as
    overlapping), none holding ``..`` (Harbor refuses those) or overlapping Harbor's own /logs."""
    toml = task.path / "task.toml"
    separate = task.verifier_mode == "separate"
    paths, field = (task.artifacts, "artifacts") if separate else (task.work_areas, "metadata.work_areas")
    logs = PurePosixPath(HARBOR_LOGS)
    for path in paths:
        parts = [part for part in path.split("/") if part]
        if ".." in parts:
            raise TaskError(toml, f"{path!r} holds '..'; expected a plain absolute path", field)
        p = PurePosixPath("/", *parts)
        if p == logs or p in logs.parents or logs in p.parents:  # "/" too
            raise TaskError(toml, f"{path!r} overlaps Harbor's {HARBOR_LOGS}; expected paths outside it", field)
    return sorted(outer_work_areas(paths))


def _whole(x: float) -> int | float:
    return int(x) if float(x).is_integer() else x  # cpus = 1, as Harbor writes it


def _order(kv: tuple) -> tuple:
    return (kv[0] != "name", kv[0])  # [task] name first


def _write_harbor(task: Task, dest: Path) -> None:
    copy_file(task.path / "instruction.md", dest, "instruction.md")
    for sub in ("environment", "solution", "tests"):
        copy_tree(task.path / sub, dest, sub)
    write_file(dest, "environment/Dockerfile", render(task.image, ".").encode(), replace=True)
    write_file(dest, "task.toml", harbor_toml(task).encode())


# -- Terminal-Bench 1 ---------------------------------------------------------------------------

COMPOSE = """services:
  client:
    build:
      dockerfile: Dockerfile
    image: ${T_BENCH_TASK_DOCKER_CLIENT_IMAGE_NAME}
    container_name: ${T_BENCH_TASK_DOCKER_CLIENT_CONTAINER_NAME}
    command: [ "sh", "-c", "sleep infinity" ]
    environment:
      - TEST_DIR=${T_BENCH_TEST_DIR}
    volumes:
      - ${T_BENCH_TASK_LOGS_PATH}:${T_BENCH_CONTAINER_LOGS_PATH}
      - ${T_BENCH_TASK_AGENT_LOGS_PATH}:${T_BENCH_CONTAINER_AGENT_LOGS_PATH}
"""

RUN_TESTS = """#!/bin/bash
# Runs the task's verifier (test.sh writes /logs/verifier/reward.txt or reward.json), then reports the
# reward as a pytest summary line for Terminal-Bench 1's pytest parser. Exit 0 iff the reward is 1.
TEST_DIR="${TEST_DIR:-/tests}"
mkdir -p /logs/verifier
bash "$TEST_DIR/test.sh"
reward=$(python3 - <<'PY'
import json, pathlib
d = pathlib.Path("/logs/verifier")
try:
    if (d / "reward.txt").exists():
        print(float((d / "reward.txt").read_text().strip()))
    else:
        r = json.loads((d / "reward.json").read_text())
        print(float(r["reward"] if "reward" in r else next(iter(r.values()))))
except Exception:
    print(0.0)
PY
)
echo "reward: $reward"
echo "=========================== short test summary info ============================"
if python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) >= 1.0 else 1)" "$reward"; then
  echo "PASSED tests/test_outputs.py::test_reward"
  exit 0
fi
echo "FAILED tests/test_outputs.py::test_reward - reward $reward"
exit 1
"""


def _tb1_difficulty(value) -> str:
    if isinstance(value, str) and value in ("easy", "medium", "hard"):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return "easy" if value < 0.34 else "medium" if value < 0.67 else "hard"
    return "medium"


def _tb1_yaml(task: Task) -> str:
    import yaml

    doc = tomllib.loads((task.path / "task.toml").read_text())
    meta = task.metadata
    tags = doc.get("task", {}).get("keywords") or meta.get("primitive_skills") or []
    data = {
        "instruction": task.instruction,
        "author_name": "tmax",
        "author_email": "unknown",
        "difficulty": _tb1_difficulty(meta.get("difficulty")),
        "category": str(meta.get("domain", "software-engineering")).replace("_", "-"),
        "tags": [str(t) for t in tags],
        "parser_name": "pytest",
        "max_agent_timeout_sec": float(task.agent_timeout),
        "max_test_timeout_sec": float(task.verifier_timeout),
        "run_tests_in_same_shell": False,
    }
    class Dumper(yaml.SafeDumper):
        pass

    def text(dumper, value: str):  # multi-line strings as literal blocks, as Terminal-Bench 1 writes them
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if "\n" in value else None)

    Dumper.add_representer(str, text)
    return yaml.dump(data, Dumper=Dumper, sort_keys=False, allow_unicode=True, width=100)


def bundle_solution(sol_dir: Path) -> str:
    """A solution.sh that recreates ``sol_dir`` at /solution and runs its solve.sh there."""
    lines = ["#!/bin/bash", "# Recreates the reference solution's files under /solution, then runs solve.sh.",
             "set -e", "mkdir -p /solution"]
    for f in sorted(p for p in sol_dir.rglob("*") if p.is_file()):
        rel = f.relative_to(sol_dir).as_posix()
        if not BUNDLE_PATH.fullmatch(rel):
            raise TaskError(f, "file name holds whitespace, a quote or a backslash; expected a name that "
                               "solution.sh can carry")
        mode = f.stat().st_mode & 0o777
        b64 = base64.encodebytes(f.read_bytes()).decode()
        lines += [f"{BUNDLE_BEGIN}{rel} {mode:o}", f"mkdir -p \"$(dirname '/solution/{rel}')\"",
                  f"base64 -d > '/solution/{rel}' <<'{HEREDOC_END}'", b64.rstrip("\n"), HEREDOC_END,
                  f"chmod {mode:o} '/solution/{rel}'"]
    lines += ["cd /app", "bash /solution/solve.sh", ""]
    return "\n".join(lines)


def unbundle_solution(text: str) -> dict[str, tuple[bytes, int]] | None:
    """The files of a solution.sh written by :func:`bundle_solution`, or None if it is not one."""
    if BUNDLE_BEGIN not in text:
        return None
    files: dict[str, tuple[bytes, int]] = {}
    pat = re.compile(re.escape(BUNDLE_BEGIN) + r"(\S+) ([0-7]+)\n[^\n]*\n[^\n]*<<'" + HEREDOC_END + r"'\n(.*?)\n?"
                     + HEREDOC_END + r"\n", re.S)
    for m in pat.finditer(text):
        files[m.group(1)] = (base64.decodebytes(m.group(3).encode()), int(m.group(2), 8))
    return files


def _write_tb1(task: Task, dest: Path) -> None:
    write_file(dest, "task.yaml", _tb1_yaml(task).encode())
    copy_file(task.path / "task.toml", dest, TB1_SIDECAR)
    copy_tree(task.path / "environment", dest, "environment")
    make_dir(dest, "environment")
    write_file(dest, "Dockerfile", render(task.image, "environment").encode())
    write_file(dest, "docker-compose.yaml", COMPOSE.encode())
    copy_tree(task.path / "tests", dest, "tests")
    for name, text in (("solution.sh", bundle_solution(task.path / "solution")), ("run-tests.sh", RUN_TESTS)):
        write_file(dest, name, text.encode(), 0o755)
