"""Harbor exports pass ``harbor lint`` with its default rules, as they are.

The examples, a small generated corpus and a few edge-case variants are exported and linted by the real
Harbor CLI (in its own venv, scripts/harbor_venv.sh); Harbor's own task model reads the fields back.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tmax.interop.export import export_task
from tmax.task import TaskError, load_task

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "tasks"
BASE = EXAMPLES / "fix-word-tally"  # the variants below are this task with one thing changed


def harbor_python() -> str:
    """Harbor's venv python; the user's own cache (the tests' private TMAX_HOME would build a new venv)."""
    from test_interop import harbor_venv

    r = harbor_venv()
    if r.returncode != 0:
        pytest.skip(f"no Harbor venv (needs Python >= 3.12 and network once): {r.stderr.strip()[-300:]}")
    return r.stdout.strip().splitlines()[-1]


def lint(dirs: list[Path]) -> tuple[int, list[dict]]:
    """``harbor lint --json`` with its default rules: (exit status, findings)."""
    harbor = Path(harbor_python()).parent / "harbor"
    r = subprocess.run([str(harbor), "lint", "--json", *map(str, dirs)], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode in (0, 1), r.stderr[-2000:]  # 2: lint itself failed
    return r.returncode, json.loads(r.stdout or "[]")


def variant(root: Path, name: str, edit) -> Path:
    """A copy of BASE named ``name`` whose task.toml text went through ``edit``."""
    d = root / name
    shutil.copytree(BASE, d)
    toml = d / "task.toml"
    toml.write_text(edit(toml.read_text().replace('name = "fix-word-tally"', f'name = "{name}"')))
    return d


def _after_schema(line: str):
    return lambda t: t.replace('schema_version = "1.1"\n', f'schema_version = "1.1"\n{line}\n', 1)


VARIANTS = {
    "online": lambda t: t.replace("allow_internet = false", "allow_internet = true"),
    "minimal-image": lambda t: t.replace('image = "default"', 'image = "minimal"'),
    "nested-work-areas": lambda t: t.replace('image = "default"',
                                             'image = "default"\nwork_areas = ["/app/build", "/app/", "/srv"]'),
    "extra-task-field": lambda t: t.replace("[task]\n", '[task]\ncategory = "debugging"\n'),
    "separate-verifier": lambda t: _after_schema('artifacts = ["/app/tally.c", "/app/"]')(t).replace(
        "[verifier]\n", '[verifier]\nenvironment_mode = "separate"\n'),
}


@pytest.fixture(scope="module")
def sources(tmp_path_factory) -> list[Path]:
    """The examples, six generated tasks (no gate) and the variants."""
    gen = tmp_path_factory.mktemp("gen") / "c"
    subprocess.run([sys.executable, "-m", "tmax", "generate", "--n", "6", "--seed", "11", "--out", str(gen)],
                   check=True, capture_output=True, timeout=300)
    var = tmp_path_factory.mktemp("variants")
    variants = [variant(var, name, edit) for name, edit in VARIANTS.items()]
    return sorted(EXAMPLES.iterdir()) + sorted(p for p in gen.iterdir() if p.is_dir()) + variants


@pytest.fixture(scope="module")
def exported(sources, tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("harbor")
    return {s.name: export_task(s, out, "harbor") for s in sources}


def toml_of(d: Path) -> dict:
    return tomllib.loads((d / "task.toml").read_text())


def test_every_export_has_no_findings_under_the_default_rules(exported):
    assert len(exported) == 10 + 6 + len(VARIANTS)
    for d in exported.values():  # the defaults hold: no task turns a rule off for itself
        assert "harbor" not in toml_of(d).get("metadata", {}), d
    status, findings = lint(list(exported.values()))
    assert findings == [] and status == 0, json.dumps(findings, indent=1)[:3000]


def test_lint_reports_the_shared_verifier_an_old_style_export_had(exported, tmp_path):
    """The control: with environment_mode dropped, the same export gets exactly the finding it used to."""
    d = tmp_path / "shared"
    shutil.copytree(exported["fix-word-tally"], d)
    toml = d / "task.toml"
    toml.write_text(toml.read_text().replace('environment_mode = "separate"\n', ""))
    status, findings = lint([d])
    assert status == 1 and [(f["rule"], Path(f["path"]).name) for f in findings] == [("shared-verifier", "task.toml")]


def test_exports_write_schema_1_4_fields_that_tmax_and_harbor_read_back(exported):
    docs = {name: toml_of(d) for name, d in exported.items()}
    for name, doc in docs.items():
        assert doc["schema_version"] == "1.4" and doc["verifier"]["environment_mode"] == "separate", name
        assert "allow_internet" not in doc["environment"], name
    assert docs["online"]["environment"]["network_mode"] == "public"
    assert docs["fix-word-tally"]["environment"]["network_mode"] == "no-network"
    assert docs["fix-word-tally"]["environment"]["cpus"] == 1 and docs["fix-word-tally"]["environment"][
        "build_timeout_sec"] >= 600
    assert docs["nested-work-areas"]["artifacts"] == ["/app", "/srv"]  # /app/build goes with /app
    assert docs["separate-verifier"]["artifacts"] == ["/app"]  # the task's own artifacts, not its work areas
    assert "category" not in docs["extra-task-field"]["task"]
    assert docs["extra-task-field"]["metadata"]["tmax_task_fields"] == {"category": "debugging"}
    for name, d in exported.items():
        task = load_task(d)
        assert task.name == f"tmax/{name}" and task.verifier_mode == "separate", name
    script = """
import json, sys
from harbor.models.task.task import Task
from harbor.models.task.verifier_mode import resolve_task_verifier_mode
print(json.dumps({d: dict(network=(c := Task(d).config).environment.network_mode.value,
                          mode=resolve_task_verifier_mode(c).value, schema=c.schema_version,
                          artifacts=[a if isinstance(a, str) else a.source for a in c.artifacts])
                  for d in sys.argv[1:]}))
"""
    picked = {name: exported[name] for name in ("fix-word-tally", *VARIANTS)}
    r = subprocess.run([harbor_python(), "-c", script, *map(str, picked.values())], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    got = {Path(d).name: v for d, v in json.loads(r.stdout.splitlines()[-1]).items()}
    for name in picked:
        assert got[name]["mode"] == "separate" and got[name]["schema"] == "1.4", name
        assert got[name]["artifacts"] == docs[name]["artifacts"], name
        assert got[name]["network"] == ("public" if name == "online" else "no-network"), name


@pytest.mark.parametrize("areas, why", [
    ('["/app", "/logs/run"]', "overlaps Harbor's /logs"),
    ('["/"]', "overlaps Harbor's /logs"),
    ('["/app/../etc"]', "holds '..'"),
])
def test_work_areas_harbor_cannot_carry_are_refused(tmp_path, areas, why):
    src = variant(tmp_path / "src", "odd-areas", lambda t: t.replace(
        'image = "default"', f'image = "default"\nwork_areas = {areas}'))
    with pytest.raises(TaskError) as e:
        export_task(src, tmp_path / "out")
    assert why in str(e.value) and "metadata.work_areas" in str(e.value) and "task.toml" in str(e.value)
    assert not (tmp_path / "out" / "odd-areas").exists()  # nothing half-written


def test_exports_pass_the_gate_with_their_separate_verifier(exported):
    """Run as tmax reads the export (separate verifier, the artifacts carried), the oracle still scores 1
    and doing nothing 0: the service task's verifier starts the agent's server from /app, the other
    checks that nothing else in /app changed."""
    from test_interop import need_gate

    from tmax.gate import check_many

    need_gate()
    picked = [exported[name] for name in ("http-kv-service", "find-leaked-secrets")]
    results = check_many(picked, repeat=1, jobs=2)
    assert {Path(r.task).name: (r.ok, r.reason) for r in results} == {d.name: (True, "") for d in picked}


def test_what_one_environment_cannot_hold_is_refused(tmp_path):
    """A multi-step task and a verifier with its own environment would lose a part in the export."""
    steps = variant(tmp_path / "src", "two-steps", lambda t: t + '\n[[steps]]\nname = "one"\n')
    (steps / "steps" / "one").mkdir(parents=True)
    (steps / "steps" / "one" / "instruction.md").write_text("Fix the build.\n")
    own = variant(tmp_path / "src", "own-verifier-env", lambda t: t.replace(
        'image = "default"', 'image = "default"\nverifier_env_dir = "verifier_env"'))
    (own / "verifier_env").mkdir()
    (own / "verifier_env" / "setup.sh").write_text("#!/bin/bash\n")
    for src, field in ((steps, "steps"), (own, "metadata.verifier_env_dir")):
        with pytest.raises(TaskError) as e:
            export_task(src, tmp_path / "out")
        assert f"task.toml: {field}: " in str(e.value), str(e.value)
        assert not (tmp_path / "out" / src.name).exists()
