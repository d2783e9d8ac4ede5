"""Task directories: Harbor and Terminal-Bench 1 loading, write_task, and malformed input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import tmax.task as task_mod
from conftest import make_task
from tmax.task import (DEFAULT_AGENT_TIMEOUT, DEFAULT_VERIFIER_TIMEOUT, DEFAULT_WORK_AREAS, Resources, TaskError,
                       load_task, write_task)

TEST_SH = "#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n"


def _minimal(d: Path, toml: str, instruction: str | bytes = "Do the thing.\n", test: str | None = TEST_SH) -> Path:
    d.mkdir(parents=True)
    if isinstance(instruction, bytes):
        (d / "instruction.md").write_bytes(instruction)
    elif instruction is not None:
        (d / "instruction.md").write_text(instruction)
    (d / "task.toml").write_text(toml)
    if test is not None:
        (d / "tests").mkdir()
        (d / "tests" / "test.sh").write_text(test)
    return d


# -- Harbor ---------------------------------------------------------------------------------------

def test_harbor_fields(tmp_path):
    toml = """schema_version = "1.1"

[task]
name = "sum-numbers"
description = "Add numbers."
keywords = ["math"]

[metadata]
image = "minimal"
family = "arith"
seed = 7
work_areas = ["/app", "/data"]

[agent]
timeout_sec = 120

[verifier]
timeout_sec = 30.5
env = { MODE = "strict" }

[environment]
cpus = 2
memory_mb = 512
storage_mb = 1024
allow_internet = true
"""
    d = _minimal(tmp_path / "t", toml, instruction="Add the numbers in /app/in.txt.\n")
    (d / "environment").mkdir()
    (d / "environment" / "setup.sh").write_text("echo 1 2 > /app/in.txt\n")
    (d / "solution").mkdir()
    (d / "solution" / "solve.sh").write_text("echo 3 > /app/out.txt\n")
    t = load_task(d)
    assert t.layout == "harbor"
    assert t.name == "sum-numbers"
    assert t.instruction == "Add the numbers in /app/in.txt.\n"
    assert t.metadata == {"image": "minimal", "family": "arith", "seed": 7, "work_areas": ["/app", "/data"]}
    assert t.image == "minimal"
    assert t.work_areas == ("/app", "/data")
    assert t.agent_timeout == 120.0 and isinstance(t.agent_timeout, float)
    assert t.verifier_timeout == 30.5
    assert t.verifier_env == {"MODE": "strict"}
    assert t.resources == Resources(cpus=2.0, memory_mb=512, storage_mb=1024, allow_internet=True)
    assert t.setup_script == "environment/setup.sh"
    assert t.solution_script == "solution/solve.sh"
    assert (t.path / t.tests_dir / t.test_script).is_file()
    assert t.environment_dir == d / "environment"


def test_harbor_defaults(tmp_path):
    d = _minimal(tmp_path / "my-task", "")  # an empty task.toml is valid: everything has a default
    t = load_task(d)
    assert t.name == "my-task"  # the directory name
    assert t.metadata == {}
    assert t.image == "default"
    assert t.work_areas == DEFAULT_WORK_AREAS
    assert t.agent_timeout == DEFAULT_AGENT_TIMEOUT
    assert t.verifier_timeout == DEFAULT_VERIFIER_TIMEOUT == 600.0
    assert t.verifier_env == {}
    assert t.resources == Resources(cpus=1.0, memory_mb=2048, storage_mb=10240, allow_internet=False)
    assert t.setup_script is None  # no environment/setup.sh


def test_environment_digest_tracks_environment_only(tmp_path):
    a = load_task(make_task(tmp_path / "a", setup="echo a\n"))
    b = load_task(make_task(tmp_path / "b", setup="echo a\n", instruction="Another prompt."))
    c = load_task(make_task(tmp_path / "c", setup="echo c\n"))
    assert a.environment_digest() == b.environment_digest()
    assert a.environment_digest() != c.environment_digest()
    (a.path / "environment" / "data.txt").write_text("x")
    assert a.environment_digest() != b.environment_digest()


# -- Terminal-Bench 1 -----------------------------------------------------------------------------

def _tb1(d: Path, yaml_text: str, solution: bool = True, run_tests: bool = True) -> Path:
    d.mkdir(parents=True)
    (d / "task.yaml").write_text(yaml_text)
    (d / "Dockerfile").write_text("FROM debian:bookworm\n")
    if solution:
        (d / "solution.sh").write_text("echo done > /app/out\n")
    if run_tests:
        (d / "run-tests.sh").write_text("#!/bin/bash\npytest $TEST_DIR/test_outputs.py\n")
    (d / "tests").mkdir()
    (d / "tests" / "test_outputs.py").write_text("def test_out():\n    assert open('/app/out').read()\n")
    return d


def test_tb1_fields(tmp_path):
    d = _tb1(tmp_path / "hello-tb1", """instruction: |
  Write "done" to /app/out.
difficulty: easy
category: file-operations
tags: [files, shell]
author_email: someone@example.com
max_agent_timeout_sec: 360
max_test_timeout_sec: 60
""")
    t = load_task(d)
    assert t.layout == "tb1"
    assert t.name == "hello-tb1"
    assert t.instruction == 'Write "done" to /app/out.\n'
    assert t.metadata == {"difficulty": "easy", "category": "file-operations", "tags": ["files", "shell"],
                          "image": "default"}
    assert t.agent_timeout == 360.0 and t.verifier_timeout == 60.0
    assert t.solution_script == "solution.sh"
    assert t.test_script == "run-tests.sh" and t.tests_dir == "tests"
    assert t.setup_script is None
    assert t.environment_dir == d


def test_tb1_defaults(tmp_path):
    t = load_task(_tb1(tmp_path / "t", "instruction: do it\n"))
    assert t.agent_timeout == DEFAULT_AGENT_TIMEOUT and t.verifier_timeout == DEFAULT_VERIFIER_TIMEOUT


@pytest.mark.parametrize("yaml_text, needle", [
    ("difficulty: easy\n", "instruction"),
    ("instruction: ''\n", "instruction"),
    ("- a list\n", "mapping"),
    ("instruction: [unclosed\n", "invalid YAML"),
    ("instruction: x\nmax_agent_timeout_sec: ten\n", "max_agent_timeout_sec"),
    ("instruction: x\nmax_test_timeout_sec: -5\n", "max_test_timeout_sec"),
])
def test_tb1_bad_yaml(tmp_path, yaml_text, needle):
    d = _tb1(tmp_path / "t", yaml_text)
    with pytest.raises(TaskError) as ei:
        load_task(d)
    msg = str(ei.value)
    assert "task.yaml" in msg and needle in msg


@pytest.mark.parametrize("missing", ["solution.sh", "run-tests.sh"])
def test_tb1_missing_script(tmp_path, missing):
    d = _tb1(tmp_path / "t", "instruction: x\n", solution=missing != "solution.sh",
             run_tests=missing != "run-tests.sh")
    with pytest.raises(TaskError) as ei:
        load_task(d)
    assert ei.value.path.endswith(missing)


# -- write_task -----------------------------------------------------------------------------------

def _write(dest: Path) -> Path:
    return write_task(
        dest, name='quote " and \\ back', instruction="Line one\nline two",
        files={"environment/setup.sh": "echo setup\n", "environment/data.bin": b"\x00\xff\x01",
               "solution/solve.sh": "echo solve\n", "tests/test.sh": TEST_SH, "tests/check.py": "print(1)\n"},
        metadata={"image": "host", "family": "arith", "seed": 3, "ratio": 0.25, "tags": ["a", "b"],
                  "axes": {"depth": 2, "noise": "low"}, "flag": True, "multi": "x\ny"},
        agent_timeout=42, verifier_timeout=7.5,
        resources=Resources(cpus=0.5, memory_mb=256, storage_mb=512, allow_internet=True))


def _snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    return {str(p.relative_to(root)): (p.read_bytes(), p.stat().st_mode & 0o777)
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_write_task_round_trip(tmp_path):
    t = load_task(_write(tmp_path / "t"))
    assert t.name == 'quote " and \\ back'
    assert t.instruction == "Line one\nline two\n"  # a final newline is added
    assert t.metadata == {"image": "host", "family": "arith", "seed": 3, "ratio": 0.25, "tags": ["a", "b"],
                          "axes": {"depth": 2, "noise": "low"}, "flag": True, "multi": "x\ny"}
    assert t.agent_timeout == 42.0 and t.verifier_timeout == 7.5
    assert t.resources == Resources(cpus=0.5, memory_mb=256, storage_mb=512, allow_internet=True)
    assert t.setup_script == "environment/setup.sh"
    assert (t.path / "environment" / "data.bin").read_bytes() == b"\x00\xff\x01"
    assert os.access(t.path / "tests" / "test.sh", os.X_OK)
    assert os.access(t.path / "solution" / "solve.sh", os.X_OK)


def test_write_task_byte_stable(tmp_path):
    a = _snapshot(_write(tmp_path / "a"))
    b = _snapshot(_write(tmp_path / "b"))
    assert a == b
    again = _snapshot(_write(tmp_path / "a"))  # rewriting in place changes nothing either
    assert again == a
    assert set(a) == {"instruction.md", "task.toml", "environment/setup.sh", "environment/data.bin",
                      "solution/solve.sh", "tests/test.sh", "tests/check.py"}
    # metadata order must not matter
    write_task(tmp_path / "c", name="n", instruction="i", files={"tests/test.sh": TEST_SH},
               metadata={"b": 1, "a": 2})
    write_task(tmp_path / "d", name="n", instruction="i", files={"tests/test.sh": TEST_SH},
               metadata={"a": 2, "b": 1})
    assert _snapshot(tmp_path / "c") == _snapshot(tmp_path / "d")


def test_write_task_refuses_unwritable_metadata(tmp_path):
    with pytest.raises(TypeError):
        write_task(tmp_path / "t", name="n", instruction="i", files={}, metadata={"x": object()})


# -- malformed tasks ------------------------------------------------------------------------------

GOOD_TOML = '[task]\nname = "t"\n'


def bad_no_instruction(d: Path) -> None:
    _minimal(d, GOOD_TOML, instruction=None)


def bad_empty_instruction(d: Path) -> None:
    _minimal(d, GOOD_TOML, instruction="  \n")


def bad_toml(d: Path) -> None:
    _minimal(d, '[task]\nname = "t\n[agent\n')


def bad_agent_timeout_type(d: Path) -> None:
    _minimal(d, GOOD_TOML + '[agent]\ntimeout_sec = "ten"\n')


def bad_agent_timeout_negative(d: Path) -> None:
    _minimal(d, GOOD_TOML + "[agent]\ntimeout_sec = -1\n")


def bad_verifier_timeout_nan(d: Path) -> None:
    _minimal(d, GOOD_TOML + "[verifier]\ntimeout_sec = nan\n")


def bad_memory_type(d: Path) -> None:
    _minimal(d, GOOD_TOML + "[environment]\nmemory_mb = 1.5\n")


def bad_internet_type(d: Path) -> None:
    _minimal(d, GOOD_TOML + '[environment]\nallow_internet = "yes"\n')


def bad_cpus_bool(d: Path) -> None:
    _minimal(d, GOOD_TOML + "[environment]\ncpus = true\n")


def bad_verifier_env(d: Path) -> None:
    _minimal(d, GOOD_TOML + "[verifier]\nenv = { DEBUG = 1 }\n")


def bad_section_type(d: Path) -> None:
    _minimal(d, 'agent = "fast"\n')


def bad_work_areas(d: Path) -> None:
    _minimal(d, GOOD_TOML + '[metadata]\nwork_areas = ["app"]\n')


def bad_no_test_sh(d: Path) -> None:
    _minimal(d, GOOD_TOML, test=None)


def bad_no_task_toml(d: Path) -> None:
    _minimal(d, "")
    (d / "task.toml").unlink()


def bad_non_utf8_instruction(d: Path) -> None:
    _minimal(d, GOOD_TOML, instruction=b"caf\xe9 \xff\xfe\n")


def bad_non_utf8_test(d: Path) -> None:
    _minimal(d, GOOD_TOML, test="#!/bin/bash\n")
    (d / "tests" / "test.sh").write_bytes(b"echo \xff\n")


def bad_oversized_file(d: Path) -> None:
    _minimal(d, GOOD_TOML)
    (d / "environment").mkdir()
    with open(d / "environment" / "big.bin", "wb") as f:  # sparse: no disk, no time
        f.truncate(task_mod.MAX_FILE_BYTES + 1)


def bad_oversized_instruction(d: Path) -> None:
    _minimal(d, GOOD_TOML)
    with open(d / "instruction.md", "r+b") as f:
        f.truncate(task_mod.MAX_FILE_BYTES + 1)


def bad_symlink_out(d: Path) -> None:
    _minimal(d, GOOD_TOML)
    (d / "tests" / "secret.txt").symlink_to("/etc/passwd")


def bad_relative_symlink_out(d: Path) -> None:
    _minimal(d, GOOD_TOML)
    (d.parent / f"{d.name}-outside.txt").write_text("secret")
    (d / "tests" / "data.txt").symlink_to(f"../../{d.name}-outside.txt")


def bad_symlinked_instruction(d: Path) -> None:
    _minimal(d, GOOD_TOML)
    (d / "instruction.md").unlink()
    (d / "instruction.md").symlink_to("/etc/hostname")


def bad_fifo(d: Path) -> None:
    _minimal(d, GOOD_TOML)
    (d / "environment").mkdir()
    os.mkfifo(d / "environment" / "setup.sh")  # reading it would block forever


# (builder, file the message must name, field the message must name or None, what else it says)
BAD = [
    (bad_no_instruction, "instruction.md", None, "missing"),
    (bad_empty_instruction, "instruction.md", None, "empty"),
    (bad_toml, "task.toml", None, "invalid TOML"),
    (bad_agent_timeout_type, "task.toml", "agent.timeout_sec", "expected int/float, got str 'ten'"),
    (bad_agent_timeout_negative, "task.toml", "agent.timeout_sec", "positive"),
    (bad_verifier_timeout_nan, "task.toml", "verifier.timeout_sec", "positive"),
    (bad_memory_type, "task.toml", "environment.memory_mb", "expected int"),
    (bad_internet_type, "task.toml", "environment.allow_internet", "expected bool"),
    (bad_cpus_bool, "task.toml", "environment.cpus", "expected int/float, got bool"),
    (bad_verifier_env, "task.toml", "verifier.env.DEBUG", "expected string"),
    (bad_section_type, "task.toml", "agent", "expected dict"),
    (bad_work_areas, "task.toml", "metadata.work_areas", "absolute"),
    (bad_no_test_sh, "tests/test.sh", None, "missing"),
    (bad_no_task_toml, "task.toml", None, "missing"),
    (bad_non_utf8_instruction, "instruction.md", None, "UTF-8"),
    (bad_non_utf8_test, "tests/test.sh", None, "UTF-8"),
    (bad_oversized_file, "environment/big.bin", None, f"expected at most {task_mod.MAX_FILE_BYTES}"),
    (bad_oversized_instruction, "instruction.md", None, f"expected at most {task_mod.MAX_FILE_BYTES}"),
    (bad_symlink_out, "tests/secret.txt", None, "outside the task"),
    (bad_relative_symlink_out, "tests/data.txt", None, "outside the task"),
    (bad_symlinked_instruction, "instruction.md", None, "outside the task"),
    (bad_fifo, "environment/setup.sh", None, "not a regular file"),
]


@pytest.mark.parametrize("builder, file, field, says", BAD, ids=[b[0].__name__ for b in BAD])
def test_bad_task_refused_with_clear_message(tmp_path, builder, file, field, says):
    d = tmp_path / "task"
    builder(d)
    with pytest.raises(TaskError) as ei:
        load_task(d)
    err = ei.value
    msg = str(err)
    assert err.path.endswith(file), msg
    assert str(d / file) in msg
    if field:
        assert err.field == field
        assert f": {field}: " in msg
    assert says in msg


def test_max_file_bytes_is_the_limit(tmp_path, monkeypatch):
    monkeypatch.setattr(task_mod, "MAX_FILE_BYTES", 1000)
    d = make_task(tmp_path / "t")
    (d / "tests" / "data.txt").write_bytes(b"x" * 1000)
    load_task(d)  # exactly the limit is fine
    (d / "tests" / "data.txt").write_bytes(b"x" * 1001)
    with pytest.raises(TaskError, match="data.txt: file is 1001 bytes"):
        load_task(d)


def test_task_size_limit(tmp_path, monkeypatch):
    monkeypatch.setattr(task_mod, "MAX_TASK_BYTES", 3000)
    d = make_task(tmp_path / "t")
    load_task(d)
    for i in range(3):
        (d / "tests" / f"data{i}.txt").write_bytes(b"x" * 1000)
    with pytest.raises(TaskError, match="task holds .* bytes; expected at most 3000"):
        load_task(d)


def test_symlink_inside_task_is_fine(tmp_path):
    d = make_task(tmp_path / "t")
    (d / "tests" / "alias.sh").symlink_to("test.sh")
    (d / "tests" / "sol").symlink_to("../solution")
    load_task(d)


def test_not_a_task(tmp_path):
    with pytest.raises(TaskError, match="not a directory"):
        load_task(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(TaskError, match="no task.toml"):
        load_task(tmp_path / "empty")


# -- a batch through the CLI ----------------------------------------------------------------------

BATCH = [bad_no_instruction, bad_toml, bad_agent_timeout_type, bad_no_test_sh, bad_non_utf8_instruction,
         bad_oversized_file, bad_symlink_out, bad_fifo]


def test_check_batch_reports_each_bad_task(tmp_path, bwrap):
    batch = tmp_path / "batch"
    batch.mkdir()
    expect = {}
    for builder, file, field, says in BAD:
        if builder in BATCH:
            builder(batch / builder.__name__)
            expect[builder.__name__] = (file, field, says)
    # a TB1 task with a wrong field type (must be a TaskError line, not a crash)
    _tb1(batch / "bad_tb1_timeout", "instruction: x\nmax_agent_timeout_sec: ten\n")
    make_task(batch / "good", agent_timeout=30, verifier_timeout=30)
    out = tmp_path / "gate.jsonl"
    proc = subprocess.run([sys.executable, "-m", "tmax.cli", "check", str(batch), "--image", "host",
                           "--backend", bwrap, "--repeat", "1", "-j", "2", "--out", str(out)],
                          capture_output=True, text=True, timeout=300, env={**os.environ, "COLUMNS": "2000"})
    assert proc.returncode == 1, proc.stderr[-3000:]
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    by_name = {Path(r["task"]).name: r for r in lines}
    assert set(by_name) == set(expect) | {"good", "bad_tb1_timeout"}
    good = by_name.pop("good")
    assert good["ok"] is True, good
    assert good["oracle_rewards"] == [1.0] and good["nop_reward"] == 0.0
    tb1 = by_name.pop("bad_tb1_timeout")
    assert tb1["ok"] is False and "task.yaml" in tb1["reason"] and "max_agent_timeout_sec" in tb1["reason"]
    for name, r in by_name.items():
        file, field, says = expect[name]
        assert r["ok"] is False, name
        assert r["oracle_rewards"] == [] and r["nop_reward"] is None, name  # never scored
        assert str(batch / name / file) in r["reason"], (name, r["reason"])
        if field:
            assert field in r["reason"], (name, r["reason"])
        assert says in r["reason"], (name, r["reason"])
    # every bad task also gets a line on stderr naming it (rich wraps at COLUMNS when not a tty)
    for name in expect:
        assert f"FAIL {batch / name}: " in proc.stderr
