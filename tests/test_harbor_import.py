"""Harbor 0.26 tasks run in tmax as written: one fixture task per feature (tests/harbor_tasks, written
from Harbor's documented format) goes through ``tmax import`` and ``tmax check``: oracle 1, nop 0.
Features tmax cannot carry are report lines, and the gate refuses such a task."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tmax.gate import check_task
from tmax.interop.importer import import_task
from tmax.task import TaskError, load_task
from tmax.trial import OracleAgent, run_trial

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "harbor_tasks"
OFFLINE = ["plain", "multi-reward", "multi-step", "entrypoint", "separate-verifier", "compose-sidecar"]
ONLINE = ["net-verifier-online", "net-allowlist"]  # need deb.debian.org at build and run time


def _tmax(*args: str, timeout: float = 1200) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tmax", *args], capture_output=True, text=True, timeout=timeout,
                          cwd=ROOT)


def _online() -> bool:
    r = subprocess.run(["curl", "-s", "-m", "10", "-o", "/dev/null", "-w", "%{http_code}",
                        "http://deb.debian.org/debian/"], capture_output=True, text=True)
    return r.stdout.strip() not in ("", "000")


def _import_and_check(names: list[str], tmp_path: Path) -> dict[str, dict]:
    out = tmp_path / "imported"
    r = _tmax("import", "tasks", *(str(FIXTURES / n) for n in names), str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    report = [json.loads(line) for line in (out / "import-report.jsonl").read_text().splitlines()]
    assert {Path(x["source"]).name: x["way"] for x in report} == {n: "native" for n in names}
    gate = tmp_path / "gate.jsonl"
    r = _tmax("check", *(str(out / n) for n in names), "--no-adversarial", "--repeat", "1", "--out", str(gate))
    rows = {Path(json.loads(line)["task"]).name: json.loads(line) for line in gate.read_text().splitlines()}
    assert r.returncode == 0, (r.stdout[-3000:], rows)
    return rows


def test_fixture_tasks_score_oracle_1_nop_0(tmp_path, bwrap):
    rows = _import_and_check(OFFLINE, tmp_path)
    for name in OFFLINE:
        assert rows[name]["ok"] and rows[name]["oracle_rewards"] == [1.0] and rows[name]["nop_reward"] == 0.0, rows[name]


def test_network_fixture_tasks_score_oracle_1_nop_0(tmp_path, bwrap):
    if not _online():
        pytest.skip("deb.debian.org is unreachable from this host (the network fixtures fetch from it)")
    rows = _import_and_check(ONLINE, tmp_path)
    for name in ONLINE:
        assert rows[name]["ok"] and rows[name]["oracle_rewards"] == [1.0] and rows[name]["nop_reward"] == 0.0, rows[name]


def test_imported_fields(tmp_path):
    out = tmp_path / "out"
    tasks = {n: load_task(import_task(FIXTURES / n, out).dest) for n in OFFLINE + ONLINE}
    plain = tasks["plain"]  # no network_mode: Harbor's default, public
    assert plain.agent_network.mode == plain.verifier_network.mode == "public"
    online = tasks["net-verifier-online"]
    assert (online.agent_network.mode, online.verifier_network.mode) == ("no-network", "public")
    assert online.build_network  # its Dockerfile runs apt-get: the build has the network
    allow = tasks["net-allowlist"]
    assert allow.agent_network.allowed_hosts == ("deb.debian.org",) and allow.verifier_network.mode == "no-network"
    sep = tasks["separate-verifier"]
    assert sep.verifier_mode == "separate" and sep.verifier_env_dir and sep.artifacts == ("/app/report.txt",)
    steps = tasks["multi-step"]
    assert [s.name for s in steps.steps] == ["create", "extend"] and steps.steps[0].min_reward == 1.0
    assert steps.steps[1].verifier_timeout == 30
    kv, = tasks["compose-sidecar"].sidecars
    assert (kv.name, kv.command, kv.env, kv.ports) == ("kv", "python3 /srv/server.py", {"KV_SEED": "41"}, (7000,))
    svc = tasks["entrypoint"]
    assert svc.service == "/usr/local/bin/start.sh sh -c 'sleep infinity'"  # as Harbor's containers run it
    assert svc.healthcheck is not None and svc.healthcheck.retries == 20
    # tmax's own tasks keep no network.
    own = load_task(ROOT / "examples" / "tasks" / "log-5xx-summary")
    assert own.agent_network.mode == own.verifier_network.mode == "no-network"


def _task(tmp_path: Path, toml: str, dockerfile: str | None = "FROM debian:bookworm-slim\n", name: str = "t") -> Path:
    d = tmp_path / "src" / name
    (d / "tests").mkdir(parents=True)
    (d / "solution").mkdir()
    (d / "environment").mkdir()
    (d / "instruction.md").write_text("Do it.\n")
    (d / "tests" / "test.sh").write_text("#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n")
    (d / "solution" / "solve.sh").write_text("#!/bin/bash\ntrue\n")
    if dockerfile is not None:
        (d / "environment" / "Dockerfile").write_text(dockerfile)
    (d / "task.toml").write_text(toml)
    return d


@pytest.mark.parametrize("toml, dropped", [
    ('[environment]\ngpus = 1\n', "environment.gpus"),
    ('[environment]\nos = "windows"\n', "environment.os"),
    ('[agent]\nuser = "agent"\n', "agent.user"),
    ('[[environment.mcp_servers]]\nname = "m"\nurl = "http://x"\n', "environment.mcp_servers"),
])
def test_uncarried_features_are_report_lines_and_the_gate_refuses(tmp_path, toml, dropped):
    r = import_task(_task(tmp_path, toml), tmp_path / "out")
    assert r.way == "partial" and any(d.startswith(dropped) for d in r.dropped), r
    g = check_task(r.dest, repeat=1, adversarial=False)
    assert not g.ok and dropped in g.reason


def test_compose_with_what_tmax_cannot_build_is_kept_for_a_container_engine_and_reported(tmp_path):
    d = _task(tmp_path, "")
    (d / "environment" / "docker-compose.yaml").write_text("services:\n  main:\n    build: .\n  db:\n    image: x\n")
    r = import_task(d, tmp_path / "out")
    assert r.way == "container" and any("docker-compose" in x for x in r.dropped)


def test_host_variables_never_enter_a_sandbox(tmp_path):
    d = _task(tmp_path, '[environment.env]\nTOKEN = "${OPENAI_API_KEY}"\nMODE = "${MODE:-fast}"\n')
    r = import_task(d, tmp_path / "out")
    assert r.way == "error" and "environment.env.TOKEN" in r.error and "host variable" in r.error
    d = _task(tmp_path, '[environment.env]\nMODE = "${MODE:-fast}"\n', name="u")
    assert load_task(import_task(d, tmp_path / "out").dest).env == {"MODE": "fast"}


def test_runtime_env_workdir_and_shell_form_entrypoint(tmp_path):
    df = "FROM debian:bookworm-slim\nENV GREETING=hi\nWORKDIR /srv/app\nENTRYPOINT /start.sh --fast\n"
    t = load_task(import_task(_task(tmp_path, "", df), tmp_path / "out").dest)
    assert t.env == {"GREETING": "hi"} and t.workdir == "/srv/app"
    assert t.service == "/bin/sh -c '/start.sh --fast' sh -c 'sleep infinity'"  # the arguments go unused, as in Docker


@pytest.mark.parametrize("toml, field", [
    ('[environment]\nnetwork_mode = "open"\n', "environment.network_mode"),
    ('[environment]\nallowed_hosts = ["x.org"]\n', "environment.allowed_hosts"),
    ('[verifier]\nnetwork_mode = "public"\nallowed_hosts = ["x.org"]\n', "verifier.allowed_hosts"),
    ('multi_step_reward_strategy = "best"\n', "multi_step_reward_strategy"),
    ('artifacts = ["../etc/passwd"]\n', "artifacts[0]"),
])
def test_bad_fields_name_the_field(tmp_path, toml, field):
    d = _task(tmp_path, toml, None)
    (d / "task.toml").write_text('schema_version = "1.4"\n' + toml + '\n[metadata]\nimage = "default"\n')
    with pytest.raises(TaskError) as e:
        load_task(d)
    assert field in str(e.value) and "task.toml" in str(e.value)


def test_a_separate_verifier_never_reads_the_host_through_an_agents_symlink(tmp_path, bwrap):
    """The agent turns /app into a symlink to a host directory; the artifact /app/report.txt must not be
    read through it on the host."""
    probe = tmp_path / "host-dir"
    probe.mkdir()
    (probe / "report.txt").write_text("HOST-SECRET\n")
    toml = ('schema_version = "1.4"\nartifacts = ["/app/report.txt"]\n\n[verifier]\nenvironment_mode = "separate"\n\n'
            '[environment]\nnetwork_mode = "no-network"\n')
    d = _task(tmp_path, toml, None)
    (d / "tests" / "test.sh").write_text("#!/bin/bash\ngrep -q HOST-SECRET /app/report.txt && echo 1 > "
                                         "/logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n")
    (d / "solution" / "solve.sh").write_text(f"#!/bin/bash\ncd /\nrm -rf /app\nln -s {probe} /app\n")
    task = load_task(import_task(d, tmp_path / "out").dest)
    r = run_trial(task, OracleAgent(), backend=bwrap)
    assert r.outcome.value == "failed" and r.reward == 0.0, r


def test_apt_of_what_the_image_lacks_needs_the_builds_network(tmp_path):
    from tmax.interop.dockerfile import translate

    df = "FROM debian:bookworm-slim\nRUN apt-get update && apt-get install -y jq emacs-nox && rm -rf /var/lib/apt/lists/*\n"
    online = translate(df, tmp_path, allow_internet=True)
    assert online.ok and online.fetches and "install -y --no-install-recommends emacs-nox" in online.setup
    assert "jq" not in online.setup.split("emacs-nox")[0].split("install")[-1]  # what the image has is not fetched
    offline = translate(df, tmp_path, allow_internet=False)
    assert not offline.ok and "emacs-nox" in offline.reasons[0] and "no network" in offline.reasons[0]
    held = translate("FROM debian:bookworm-slim\nRUN apt-get update && apt-get install -y jq\n", tmp_path, True)
    assert held.ok and not held.fetches  # nothing to fetch: no network needed


@pytest.mark.parametrize("agent", [
    "ln -s /opt/checker/expected.txt /app/report.txt",  # the verifier's own answer, through a link
    "mkdir -p /app/d && ln -s ../../opt/checker/expected.txt /app/report.txt",
])
def test_a_separate_verifier_never_follows_an_artifact_link_out_of_it(tmp_path, bwrap, agent):
    task = load_task(import_task(FIXTURES / "separate-verifier", tmp_path / "out").dest)
    d = Path(task.path)
    (d / "solution" / "solve.sh").write_text(f"#!/bin/bash\n{agent}\n")
    r = run_trial(load_task(d), OracleAgent(), backend=bwrap)
    assert r.reward == 0.0, r


def test_artifacts_reach_the_verifier_without_a_copy(tmp_path, bwrap):
    """A sparse file of 2 GB (8 KB on disk) must not become 2 GB on the host on its way to the verifier."""
    from tmax.trial import _only

    layer = tmp_path / "layer" / "app"
    layer.mkdir(parents=True)
    with open(layer / "report.txt", "wb") as f:
        f.truncate(2 << 30)
    (layer / "inside").symlink_to("report.txt")
    dest = _only(tmp_path / "layer", ("/app",), tmp_path / "dest")
    st = (dest / "app" / "report.txt").stat()
    assert st.st_size == 2 << 30 and st.st_blocks * 512 < 1 << 20 and st.st_nlink == 2
    assert (dest / "app" / "inside").is_symlink()  # a link within the artifact stays


def test_an_authors_metadata_never_sets_how_tmax_builds_or_runs(tmp_path):
    toml = ('[metadata]\nimage = "host"\nwork_areas = ["/"]\nservice = "touch /tmp/x"\nbackend = "podman"\n'
            'environment = "dockerfile"\nbuild_network = true\ndifficulty = "easy"\n')
    r = import_task(_task(tmp_path, toml), tmp_path / "out")
    t = load_task(r.dest)
    assert r.way == "native" and t.image == "default" and t.service is None and "build_network" not in t.metadata
    assert "backend" not in t.metadata and t.work_areas != ("/",) and t.metadata["difficulty"] == "easy"
    assert any("metadata.image" in n for n in r.notes)


def test_a_sidecar_dockerfile_outside_its_context_is_never_read(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("HOSTSECRET-42\n")
    d = _task(tmp_path, "")
    (d / "environment" / "kv").mkdir()
    (d / "environment" / "kv" / "Dockerfile").write_text("FROM debian:bookworm-slim\nCMD [\"sleep\", \"1\"]\n")
    (d / "environment" / "docker-compose.yaml").write_text(
        f"services:\n  kv:\n    build: {{context: ./kv, dockerfile: {secret}}}\n"
        "  kw:\n    build: {context: ./kv, dockerfile: ../../../secret.txt}\n")
    r = import_task(d, tmp_path / "out")
    assert "HOSTSECRET" not in json.dumps(r.to_json()) and r.way == "container"


def test_a_prebuilt_image_beside_a_dockerfile_is_what_harbor_runs(tmp_path):
    r = import_task(_task(tmp_path, '[environment]\ndocker_image = "ghcr.io/x/y:1"\n'), tmp_path / "out")
    assert r.way == "container" and any("docker_image" in d for d in r.dropped)


def test_dockerfile_variables_expand_as_docker_does(tmp_path):
    df = "FROM debian:bookworm-slim\nENV PATH=/opt/tool/bin:$PATH\nARG NAME\nENV GREETING=hello-${NAME:-world}\n"
    t = load_task(import_task(_task(tmp_path, "", df), tmp_path / "out").dest)
    assert t.env["PATH"].startswith("/opt/tool/bin:/usr/local/sbin:") and t.env["GREETING"] == "hello-world"
