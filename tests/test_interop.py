"""Interop: Harbor / Terminal-Bench 1 export and import, the Hugging Face dataset, Harbor's own loader.

Round trips go through the real gate (oracle 1, nop 0) in real sandboxes; Harbor's own task model
loads the exported directories in its own Python >= 3.12 venv (scripts/harbor_venv.sh).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tmax.gate import check_many
from tmax.interop.dockerfile import render, translate
from tmax.interop.export import bundle_solution, export_task, unbundle_solution
from tmax.interop.importer import import_task
from tmax.task import TaskError, load_task

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "tasks"


def tree(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under root: relative path -> (bytes, permission bits)."""
    return {p.relative_to(root).as_posix(): (p.read_bytes(), stat.S_IMODE(p.stat().st_mode))
            for p in sorted(root.rglob("*")) if p.is_file()}


def harbor_venv() -> subprocess.CompletedProcess:
    """scripts/harbor_venv.sh under the user's own cache (the tests' private TMAX_HOME would make a new
    venv, downloading Harbor again)."""
    env = {k: v for k, v in os.environ.items() if k != "TMAX_HOME"}
    return subprocess.run(["bash", str(ROOT / "scripts" / "harbor_venv.sh")], capture_output=True, text=True,
                          timeout=600, env=env)


def need_gate() -> None:
    from tmax.images import get_environment
    from tmax.sandbox import get_backend

    if os.geteuid() != 0:
        pytest.skip("the gate needs root (cgroups)")
    ok, why = get_backend("bwrap").available()
    if not ok:
        pytest.skip(why)
    try:
        get_environment("default", build=False)
    except Exception as e:
        pytest.skip(f"default image not built ({e}); run: tmax image build")


def gate(dirs: list[Path]) -> dict[str, str]:
    """Task dir name -> '' if it passes the gate (one oracle run, one nop run), else the reason."""
    return {Path(r.task).name: ("" if r.ok else r.reason) for r in check_many(dirs, repeat=1, jobs=2)}


@pytest.fixture(scope="module")
def sources(tmp_path_factory) -> list[Path]:
    """The hand-written examples and six generated tasks."""
    gen = tmp_path_factory.mktemp("gen") / "c"
    subprocess.run([sys.executable, "-m", "tmax", "generate", "--n", "6", "--seed", "3", "--out", str(gen)],
                   check=True, capture_output=True)
    return sorted(EXAMPLES.iterdir()) + sorted(p for p in gen.iterdir() if p.is_dir())


@pytest.fixture(scope="module")
def harbor_export(sources, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("harbor")
    for s in sources:
        export_task(s, out, "harbor")
    return out


# -- export -----------------------------------------------------------------------------------

def test_harbor_export_layout(harbor_export, sources):
    assert len(sources) == 16
    for s in sources:
        d = harbor_export / s.name
        for rel in ("instruction.md", "task.toml", "environment/Dockerfile", "solution/solve.sh", "tests/test.sh"):
            assert (d / rel).is_file(), f"{d}: {rel}"
        docker = (d / "environment" / "Dockerfile").read_text()
        assert docker.startswith("# ") and "FROM debian:bookworm-slim" in docker
        assert "tesseract-ocr" in docker and "WORKDIR /app" in docker and "bash /environment/setup.sh" in docker
        doc = tomllib.loads((d / "task.toml").read_text())
        src = load_task(s)
        assert doc["schema_version"] == "1.4"
        assert doc["task"]["name"] == f"tmax/{src.name}"
        assert doc["agent"]["timeout_sec"] == src.agent_timeout
        assert doc["verifier"]["timeout_sec"] == src.verifier_timeout
        # Verified as tmax does: a fresh container from the same image, the work areas carried over.
        assert doc["verifier"]["environment_mode"] == "separate"
        assert doc["artifacts"] == sorted(src.work_areas)
        assert doc["environment"]["memory_mb"] == src.resources.memory_mb
        assert doc["environment"]["network_mode"] == "no-network" and "allow_internet" not in doc["environment"]
        assert doc["metadata"] == src.metadata
        # The verifier writes the reward where Harbor reads it.
        text = "".join(p.read_text() for p in (d / "tests").rglob("*") if p.suffix in (".sh", ".py"))
        assert "reward.txt" in text or "reward.json" in text


def test_export_refuses_host_image_with_a_clear_error(tmp_path):
    src = tmp_path / "src" / "t"
    shutil.copytree(EXAMPLES / "fix-word-tally", src)
    toml = src / "task.toml"
    toml.write_text(toml.read_text().replace('image = "default"', 'image = "host"'))
    with pytest.raises(TaskError) as e:
        export_task(src, tmp_path / "out")
    assert "metadata.image" in str(e.value) and "task.toml" in str(e.value)


def test_harbor_loads_exported_tasks(harbor_export):
    """Harbor's own Task/TaskConfig (in its own venv) parse every exported directory."""
    r = harbor_venv()
    if r.returncode != 0:
        pytest.skip(f"no Harbor venv (needs Python >= 3.12 and network once): {r.stderr.strip()[-300:]}")
    python = r.stdout.strip().splitlines()[-1]
    script = """
import json, sys
from harbor.models.task.task import Task
from harbor.models.task.verifier_mode import resolve_task_verifier_mode
out = []
for d in sys.argv[1:]:
    t = Task(d)
    c = t.config
    out.append(dict(dir=d, name=t.name, agent=c.agent.timeout_sec, verifier=c.verifier.timeout_sec,
                    cpus=c.environment.cpus, memory=c.environment.memory_mb, storage=c.environment.storage_mb,
                    build=c.environment.build_timeout_sec, network=c.environment.network_mode.value,
                    meta=c.metadata, instruction=t.instruction, valid=Task.is_valid_dir(d),
                    test=str(t.paths.discovered_test_path_for(c.environment.os)), schema=c.schema_version,
                    mode=resolve_task_verifier_mode(c).value,
                    artifacts=[a if isinstance(a, str) else a.source for a in c.artifacts]))
print(json.dumps(out))
"""
    dirs = sorted(str(p) for p in harbor_export.iterdir())
    r = subprocess.run([python, "-c", script, *dirs], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    loaded = json.loads(r.stdout.splitlines()[-1])
    assert len(loaded) == 16
    for got in loaded:
        task = load_task(got["dir"])
        assert got["valid"], got["dir"]
        assert got["name"] == f"tmax/{Path(got['dir']).name}"
        assert got["agent"] == task.agent_timeout and got["verifier"] == task.verifier_timeout
        assert got["cpus"] == task.resources.cpus and got["memory"] == task.resources.memory_mb
        assert got["storage"] == task.resources.storage_mb and got["network"] == "no-network"
        assert got["build"] >= 600 and got["meta"]["image"] == "default"
        assert got["instruction"] == task.instruction
        assert got["test"].endswith("/tests/test.sh")
        assert got["schema"] == "1.4" and got["mode"] == "separate"
        assert got["artifacts"] == sorted(task.work_areas)


@pytest.mark.slow
def test_exported_dockerfile_builds_with_podman(harbor_export):
    """podman builds an exported Dockerfile; in the image the oracle scores 1 and doing nothing 0.
    Without a registry, TMAX_BUILD_BASE names a local stand-in for the base (podman build --from)."""
    from tmax.sandbox.container import Engine

    if shutil.which("podman") is None:
        pytest.skip("podman not installed")
    env = Engine("podman").env()  # tmax's containers.conf: this host's runtime and ulimits
    base = os.environ.get("TMAX_BUILD_BASE", "debian:bookworm-slim")
    if subprocess.run(["podman", "image", "exists", base], env=env).returncode != 0:
        pytest.skip(f"{base} is not in podman's store and no registry is reachable here (set TMAX_BUILD_BASE)")
    task = harbor_export / "fix-word-tally"
    tag = "localhost/tmax-export-check:fix-word-tally"
    r = subprocess.run(["podman", "build", "--from", base, "-t", tag, str(task / "environment")],
                       capture_output=True, text=True, timeout=3000, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    try:
        for agent, want in (("bash /solution/solve.sh", "1"), ("true", "0")):
            script = f"{agent} >/dev/null 2>&1; mkdir -p /logs/verifier; bash /tests/test.sh >/dev/null 2>&1; " \
                     "cat /logs/verifier/reward.txt"
            r = subprocess.run(["podman", "run", "--rm", "-v", f"{task / 'solution'}:/solution:ro",
                                "-v", f"{task / 'tests'}:/tests:ro", tag, "bash", "-c", script],
                               capture_output=True, text=True, timeout=600, env=env)
            assert r.stdout.strip() == want, (agent, r.stdout, r.stderr[-1000:])
    finally:
        subprocess.run(["podman", "rmi", "-f", tag], capture_output=True, env=env)


# -- round trips through the gate ---------------------------------------------------------------

def test_harbor_round_trip_passes_the_gate(harbor_export, sources, tmp_path):
    need_gate()
    results = [import_task(d, tmp_path) for d in sorted(harbor_export.iterdir())]
    assert [r.way for r in results] == ["native"] * 16, [r.to_json() for r in results if r.way != "native"]
    for s in sources:  # the task comes back as it was, task.toml aside (rewritten in the same schema)
        a, b = tree(s), tree(tmp_path / s.name)
        a.pop("task.toml"), b.pop("task.toml")
        assert a == b, s.name
        back, orig = load_task(tmp_path / s.name), load_task(s)
        assert back.metadata == orig.metadata
        for f in ("name", "instruction", "agent_timeout", "verifier_timeout", "verifier_env", "resources", "workdir",
                  "agent_network", "verifier_network", "verifier_mode", "artifacts", "env", "service", "steps"):
            assert getattr(back, f) == getattr(orig, f), (s.name, f)
    failed = {k: v for k, v in gate([tmp_path / s.name for s in sources]).items() if v}
    assert not failed


def test_tb1_round_trip_is_byte_identical_and_passes(sources, tmp_path):
    tb1, back = tmp_path / "tb1", tmp_path / "back"
    for s in sources:
        d = export_task(s, tb1, "tb1")
        for rel in ("task.yaml", "solution.sh", "run-tests.sh", "Dockerfile", "docker-compose.yaml", "tests"):
            assert (d / rel).exists(), f"{d}: {rel}"
        assert load_task(d).layout == "tb1"  # tmax's own TB1 loader accepts it
        r = import_task(d, back)
        assert r.way == "native", r.to_json()
        assert tree(back / s.name) == tree(s), s.name
    need_gate()
    picked = [back / s.name for s in sources if s.name in ("fix-word-tally", "csv-cleanup-partial")
              or s.name.startswith(("00000", "00003"))]
    assert not {k: v for k, v in gate(picked).items() if v}


def test_solution_bundle_round_trips(tmp_path):
    sol = tmp_path / "solution"
    (sol / "lib").mkdir(parents=True)
    (sol / "solve.sh").write_text("#!/bin/bash\npython3 /solution/lib/x.py\n")
    (sol / "solve.sh").chmod(0o755)
    (sol / "lib" / "x.py").write_bytes(b"print('\\x00')\n\xff\xfe")
    files = unbundle_solution(bundle_solution(sol))
    assert files == {"lib/x.py": ((sol / "lib" / "x.py").read_bytes(), 0o644),
                     "solve.sh": ((sol / "solve.sh").read_bytes(), 0o755)}


# -- foreign tasks ----------------------------------------------------------------------------

def write_foreign_harbor(root: Path, dockerfile: str, name: str = "sum-numbers") -> Path:
    d = root / name
    (d / "environment" / "data").mkdir(parents=True)
    (d / "environment" / "data" / "nums.txt").write_text("3\n4\n5\n")
    (d / "environment" / "greet.txt").write_text("hello\n")
    (d / "environment" / "Dockerfile").write_text(dockerfile)
    (d / "instruction.md").write_text("Write the sum of the numbers in /app/data/nums.txt to /app/sum.txt.\n")
    (d / "task.toml").write_text('version = "1.0"\n\n[task]\nname = "acme/sum-numbers"\n\n[metadata]\n'
                                 'difficulty = "easy"\n\n[agent]\ntimeout_sec = 120.0\n\n[verifier]\n'
                                 'timeout_sec = 60.0\n\n[environment]\ncpus = 1\nmemory = "1G"\nstorage_mb = 4096\n')
    (d / "solution").mkdir()
    (d / "solution" / "solve.sh").write_text("#!/bin/bash\nawk '{s+=$1} END {print s}' /app/data/nums.txt > /app/sum.txt\n")
    (d / "tests").mkdir()
    (d / "tests" / "test.sh").write_text(
        "#!/bin/bash\nmkdir -p /logs/verifier\n"
        "if [ \"$(cat /app/sum.txt 2>/dev/null)\" = 12 ] && [ \"$(cat /app/status.txt)\" = ready ] "
        "&& [ -f /app/greet.txt ] && jq --version >/dev/null; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n")
    return d


TRANSLATABLE = """FROM python:3.11-slim-bookworm
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update && apt-get install -y --no-install-recommends \\
        jq sqlite3 \\
    && rm -rf /var/lib/apt/lists/*
RUN pip install --no-cache-dir numpy pytest
WORKDIR /app
COPY data/ /app/data/
COPY greet.txt .
RUN echo ready > /app/status.txt
"""


def test_foreign_harbor_task_translates_and_passes(tmp_path):
    src = write_foreign_harbor(tmp_path / "src", TRANSLATABLE)
    r = import_task(src, tmp_path / "out")
    assert r.way == "native", r.to_json()
    task = load_task(r.dest)
    assert task.name == "sum-numbers" and task.image == "default" and task.resources.memory_mb == 1024
    assert task.metadata["source_format"] == "harbor" and "backend" not in task.metadata
    setup = (Path(r.dest) / "environment" / "setup.sh").read_text()
    assert "apt-get" not in setup and "pip install" not in setup and "/environment/data" in setup
    assert not (Path(r.dest) / "environment" / "Dockerfile").exists()
    need_gate()
    assert gate([Path(r.dest)]) == {"sum-numbers": ""}


@pytest.mark.parametrize("dockerfile, why", [
    ("FROM alpine:3.19\nRUN apk add jq\n", "not Debian"),
    ("FROM debian:bookworm AS b\nRUN true\nFROM debian:bookworm-slim\nCOPY --from=b /x /x\n", "multi-stage"),
    ("FROM ubuntu:24.04\nUSER app\n", "USER app"),
    ("FROM debian:bookworm-slim\nSHELL [\"/bin/zsh\", \"-c\"]\n", "SHELL"),
    ("FROM debian:bookworm-slim\nRUN --mount=type=cache,target=/x true\n", "build mounts"),
])
def test_untranslatable_dockerfiles_keep_a_container_environment(tmp_path, dockerfile, why):
    src = write_foreign_harbor(tmp_path / "src", dockerfile)
    r = import_task(src, tmp_path / "out")
    assert r.way == "container", r.to_json()
    assert why in " ".join(r.notes)
    task = load_task(r.dest)
    assert task.metadata["backend"] == "podman" and task.metadata["environment"] == "dockerfile"
    assert (Path(r.dest) / "environment" / "Dockerfile").read_text() == dockerfile
    assert task.setup_script is None


def test_container_task_without_a_buildable_image_fails_with_one_clear_line(tmp_path):
    """No registry here: podman cannot pull alpine, so the gate names the Dockerfile and the failure."""
    src = write_foreign_harbor(tmp_path / "src", "FROM alpine:3.19\nRUN apk add jq\n")
    r = import_task(src, tmp_path / "out")
    need_gate()
    from tmax.gate import check_task

    res = check_task(r.dest, repeat=1)
    assert not res.ok and "Dockerfile" in res.reason
    assert "build failed" in res.reason or "neither answers" in res.reason


def test_foreign_tb1_task_translates_and_passes(tmp_path):
    d = tmp_path / "src" / "count-lines"
    (d / "tests").mkdir(parents=True)
    (d / "task.yaml").write_text(
        "instruction: |-\n  Count the lines of /app/input.txt and write the number to /app/count.txt.\n"
        "author_name: someone\ndifficulty: easy\ncategory: file-operations\ntags: [wc]\nparser_name: pytest\n"
        "max_agent_timeout_sec: 180.0\nmax_test_timeout_sec: 60.0\n")
    (d / "Dockerfile").write_text("FROM ghcr.io/laude-institute/t-bench/python-3-13:20250620\n"
                                  "WORKDIR /app\nCOPY input.txt /app/input.txt\n")
    (d / "docker-compose.yaml").write_text("services:\n  client:\n    build:\n      dockerfile: Dockerfile\n")
    (d / "input.txt").write_text("a\nb\nc\n")
    (d / "solution.sh").write_text("#!/bin/bash\nwc -l < /app/input.txt > /app/count.txt\n")
    (d / "run-tests.sh").write_text("#!/bin/bash\ncd \"$TEST_DIR\"\npython3 -m pytest -q -p no:cacheprovider "
                                    "test_outputs.py -rA\n")
    (d / "tests" / "test_outputs.py").write_text(
        "from pathlib import Path\n\ndef test_count():\n    assert Path('/app/count.txt').read_text().strip() == '3'\n")
    r = import_task(d, tmp_path / "out")
    assert r.way == "native" and r.format == "tb1", r.to_json()
    task = load_task(r.dest)
    assert task.agent_timeout == 180.0 and task.metadata["category"] == "file-operations"
    assert (Path(r.dest) / "environment" / "input.txt").is_file()
    need_gate()
    assert gate([Path(r.dest)]) == {"count-lines": ""}


def test_translation_of_a_dockerfile_line_by_line(tmp_path):
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "main.py").write_text("print(1)\n")
    tr = translate("FROM debian:bookworm\nARG V=2\nWORKDIR /app\nCOPY app/*.py ./src/\nRUN echo $V > v.txt\n",
                   tmp_path)
    assert tr.ok, tr.reasons
    assert "export V=2" in tr.setup and "mkdir -p /app/src && cp --preserve=mode,timestamps /environment/app/main.py" \
        in tr.setup and "(cd /app && sh -c 'echo $V > v.txt')" in tr.setup
    assert render("default").count("FROM ") == 1


# -- Hugging Face dataset ---------------------------------------------------------------------

def test_hf_export_loads_with_datasets_and_round_trips(sources, tmp_path):
    datasets = pytest.importorskip("datasets", reason="pip install 'tmax[hf]'")
    from tmax.interop.hf_dataset import AXES, read_rows, task_row, write_dataset, write_task_tree

    shard = write_dataset([task_row(s) for s in sources], tmp_path / "hf")
    ds = datasets.load_dataset("parquet", data_files=str(shard), split="train",
                               cache_dir=str(tmp_path / "hf-cache"))
    assert ds.num_rows == 16
    for col in ("name", "instruction", "files", "family", "seed", "difficulty", *AXES):
        assert col in ds.column_names
    gen = next(r for r in ds if r["name"].startswith("00000"))
    assert gen["family"] and gen["seed"] == 3 and gen["domain"] and gen["primitive_skills"]
    assert isinstance(gen["files"][0]["content"], bytes)
    for row in read_rows(tmp_path / "hf"):
        write_task_tree(row, tmp_path / "back")
    for s in sources:
        assert tree(tmp_path / "back" / s.name) == tree(s), s.name


def test_cli_export_and_import(sources, tmp_path):
    """The verbs: a bad task is one error line and the batch goes on; import reports each task's way."""
    bad = tmp_path / "corpus" / "broken"
    bad.mkdir(parents=True)
    (bad / "instruction.md").write_text("x\n")
    shutil.copytree(EXAMPLES / "fix-word-tally", tmp_path / "corpus" / "fix-word-tally")
    tmax = [sys.executable, "-m", "tmax"]
    r = subprocess.run(tmax + ["export", "harbor", str(tmp_path / "corpus"), str(tmp_path / "h")],
                       capture_output=True, text=True)
    assert r.returncode == 1 and "broken/task.toml" in r.stderr and "wrote 1/2" in r.stderr
    r = subprocess.run(tmax + ["import", str(tmp_path / "h"), str(tmp_path / "i")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "native" in r.stderr and (tmp_path / "i" / "fix-word-tally" / "task.toml").is_file()
    report = [json.loads(x) for x in (tmp_path / "i" / "import-report.jsonl").read_text().splitlines()]
    assert [x["way"] for x in report] == ["native"]
    for verb in (["export", "harbor"], ["export", "hf"], ["import"], ["import", "harbor"], ["import", "tb1"],
                 ["import", "hf"]):
        h = subprocess.run(tmax + verb + ["--help"], capture_output=True, text=True)
        assert h.returncode == 0 and "Examples" in h.stdout, verb
