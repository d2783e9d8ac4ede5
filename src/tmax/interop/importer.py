"""Import Harbor and Terminal-Bench 1 task directories written by anyone into tmax tasks.

Each task goes one of two ways:

* ``native``: its environment becomes the default image plus an ``environment/setup.sh``, either
  because the Dockerfile is one ``tmax export`` rendered (restored as it was) or because it
  translates (see :mod:`tmax.interop.dockerfile`). It then runs in every tmax sandbox.
* ``container``: the Dockerfile (or compose file, or prebuilt image) is kept and ``task.toml``
  says ``backend = "podman"`` and ``environment = "dockerfile"|"image"|"compose"``; the environment
  is then built by a container engine (:func:`tmax.images.task_environment`).

The written task is loaded back with :func:`tmax.task.load_task` before it counts as imported.

A task directory is treated as written by an adversary: every file goes out through
:mod:`tmax.safe_files` (nothing outside ``out_root/<name>``, never through a symlink, no FIFOs or
device nodes, no setuid/setgid/sticky bits), and the directory and task names must be safe names.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from tmax.interop.dockerfile import Translation, render, tmax_image_of, translate
from tmax.interop.export import TB1_SIDECAR, unbundle_solution
from tmax.safe_files import UnsafeFile, check_name, check_rel, copy_file, copy_tree, write_file
from tmax.task import (DEFAULT_AGENT_TIMEOUT, DEFAULT_VERIFIER_TIMEOUT, DEFAULT_WORK_AREAS, TaskError, _toml_value,
                       check_tree, load_task)

TB1_TASK_FILES = {"task.yaml", "solution.sh", "solution.yaml", "run-tests.sh", "tests", "docker-compose.yaml",
                  "Dockerfile", TB1_SIDECAR}
TB1_TEST_SH = r"""#!/bin/bash
# Terminal-Bench 1 verifier: run-tests.sh decides; the reward is 1 iff it exits 0.
# What the tests ran (the agent's code, as root here) may have left processes that write reward
# files: after run-tests.sh, every other process is killed and any reward file is dropped first.
mkdir -p /logs/verifier
cd /app 2>/dev/null || true
TEST_DIR=/tests bash /tests/run-tests.sh </dev/null
status=$?
keep=" 1 "; pid=$$
while [ -n "$pid" ] && [ "$pid" != 0 ]; do  # this script and its ancestors stay
  keep="$keep$pid "; pid=$(sed 's/.*) [A-Za-z] \([0-9]*\).*/\1/' /proc/$pid/stat 2>/dev/null)
done
for round in 1 2 3; do
  for p in /proc/[0-9]*; do
    pid=${p#/proc/}
    case "$keep" in *" $pid "*) ;; *) kill -9 "$pid" 2>/dev/null ;; esac
  done
done
rm -rf /logs/verifier/reward.txt /logs/verifier/reward.json
if [ "$status" -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
"""


@dataclass
class ImportResult:
    source: str
    format: str = ""  # harbor | tb1
    way: str = "error"  # native | partial (features dropped: not gated) | container | error
    dest: str = ""
    notes: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)  # what the task's author wrote that tmax does not carry
    error: str = ""

    def to_json(self) -> dict:
        return dict(self.__dict__)


def detect_format(src: Path) -> str:
    if (src / "task.toml").is_file() or (src / "instruction.md").is_file():
        return "harbor"
    if (src / "task.yaml").is_file():
        return "tb1"
    raise TaskError(src, "no task.toml/instruction.md (Harbor) or task.yaml (Terminal-Bench 1) found")


def import_task(src: str | Path, out_root: str | Path, fmt: str | None = None) -> ImportResult:
    """Import one task directory into ``out_root/<name>``; never raises for a bad task."""
    src = Path(src)
    res = ImportResult(source=str(src))
    dest: Path | None = None
    try:
        if not src.is_dir():
            raise TaskError(src, "not a directory; expected a task directory")
        check_tree(src)
        check_name(src.name, src, "task directory name")  # it names the output directory
        res.format = fmt or detect_format(src)
        out = Path(out_root) / src.name
        if out.is_symlink():  # never replace (or write into) what a link points to
            raise UnsafeFile(out, "is a symlink; expected a directory the import may replace")
        if out.exists():
            shutil.rmtree(out)
        dest = out
        dest.mkdir(parents=True)
        (_import_harbor if res.format == "harbor" else _import_tb1)(src, dest, res)
        task = load_task(dest)  # what we wrote must be a valid tmax task
        check_name(task.name, dest / "task.toml", "task.name")  # job dirs are named after it
        res.dest = str(dest)
    except (TaskError, OSError, ValueError) as e:
        res.way, res.error = "error", str(e)
        if dest is not None:
            shutil.rmtree(dest, ignore_errors=True)
    return res


# -- shared -----------------------------------------------------------------------------------

def _write_toml(dest: Path, task_t: dict, meta: dict, agent_timeout: float, verifier_timeout: float,
                verifier_env: dict, env_t: dict) -> None:
    sections = [("task", task_t), ("metadata", meta), ("agent", {"timeout_sec": float(agent_timeout)}),
                ("verifier", {"timeout_sec": float(verifier_timeout)})]
    if verifier_env:
        sections.append(("verifier.env", verifier_env))
    sections.append(("environment", env_t))
    lines = ['schema_version = "1.1"']
    for name, table in sections:
        items = sorted(table.items()) if name == "metadata" else sorted(table.items(), key=lambda kv: kv[0] != "name")
        lines += ["", f"[{name}]"] + [f"{k} = {_toml_value(v)}" for k, v in items]
    write_file(dest, "task.toml", ("\n".join(lines) + "\n").encode())


def _environment(dockerfile: Path | None, context: Path, dest: Path, allow_internet: bool, res: ImportResult,
                 meta: dict, skip: set[str], rendered_context: str) -> Translation | None:
    """Fill ``dest/environment`` from a build context and decide native or container; returns the
    translation of a foreign Dockerfile. ``allow_internet``: the build has the network."""
    if dockerfile is None or not dockerfile.is_file():
        copy_tree(context, dest, "environment", skip=skip)
        res.way = "native"
        res.notes.append("no Dockerfile: runs on the default image")
        return
    text = dockerfile.read_text()
    profile = tmax_image_of(text)
    if profile is not None:
        try:
            ours = render(profile, rendered_context) == text
        except Exception:  # an unknown profile name: treat as foreign
            ours = False
        if ours and profile == "host":
            raise TaskError(dockerfile, "names the host image; expected an image profile (the host's own "
                            "directories are never an imported task's environment)")
        if ours:
            copy_tree(context, dest, "environment", skip=skip | {dockerfile.name})
            meta["image"] = profile
            res.way = "native"
            res.notes.append(f"tmax-rendered Dockerfile: image {profile!r} restored")
            return
    tr = translate(text, context, allow_internet)
    if tr.ok and os.path.lexists(context / "setup.sh"):  # lexists: a dangling link counts too
        tr.ok, tr.reasons = False, ["the build context already holds a setup.sh"]
    if tr.ok:
        copy_tree(context, dest, "environment", skip=skip | {dockerfile.name})
        write_file(dest, "environment/setup.sh", tr.setup.encode(), 0o755)
        meta.setdefault("image", "default")
        res.way = "native"
        res.notes += ["Dockerfile translated to environment/setup.sh"] + tr.notes
        return tr
    copy_tree(context, dest, "environment", skip=skip)
    if not os.path.lexists(dest / "environment" / "Dockerfile"):
        copy_file(dockerfile, dest, "environment/Dockerfile")
    meta.update(backend="podman", environment="dockerfile")
    res.way = "container"
    res.notes += ["keeps its Dockerfile: " + "; ".join(tr.reasons)]
    return tr


# -- Harbor -----------------------------------------------------------------------------------

def _mb(value, path: Path, field_name: str) -> int | None:
    """memory_mb/storage_mb, or the legacy strings '2G' / '512M'."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise TaskError(path, f"expected a number of MB or a size like '2G', got {value!r}", field_name)
    if isinstance(value, str):
        units = {"k": 1 / 1024, "m": 1, "g": 1024, "t": 1024 * 1024}
        s = value.strip().lower().rstrip("ib").rstrip("b")
        try:
            return int(float(s[:-1]) * units[s[-1]]) if s and s[-1] in units else int(float(s))
        except (ValueError, KeyError):
            raise TaskError(path, f"expected a size like '2G', got {value!r}", field_name) from None
    return int(value)


# Harbor fields tmax cannot carry: each one an import finds is a ``dropped`` line of the report, and
# the task is marked non-native (the gate refuses it), since its environment would differ.
_UNCARRIED_ENV = {"gpus": "GPUs", "gpu_types": "GPU types", "tpu": "TPUs", "mcp_servers": "MCP servers",
                  "skills_dir": "a skills directory"}
_PHASE_KEYS = {"network_mode", "allowed_hosts"}


def _network_table(table: dict, default: str | None) -> dict:
    """A phase's network keys as tmax writes them (Harbor 1.4 names)."""
    mode = table.get("network_mode", default)
    out = {} if mode is None else {"network_mode": mode}
    if table.get("allowed_hosts"):
        out["allowed_hosts"] = list(table["allowed_hosts"])
    return out


def _import_harbor(src: Path, dest: Path, res: ImportResult) -> None:
    toml_path = src / "task.toml"
    try:
        doc = tomllib.loads(toml_path.read_text()) if toml_path.is_file() else {}
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise TaskError(toml_path, f"invalid TOML: {e}") from None
    steps = doc.get("steps") or []
    if not steps and not (src / "instruction.md").is_file():
        raise TaskError(src / "instruction.md", "missing; expected the task prompt (or [[steps]] with steps/<name>/)")
    if not steps and not (src / "tests" / "test.sh").is_file():
        raise TaskError(src / "tests" / "test.sh", "missing; expected the verifier entry point")
    task_t = dict(doc.get("task") or {})
    meta = dict(doc.get("metadata") or {})
    # An author's [metadata] is data, not tmax's settings: what tmax reads from it to build or run the
    # task (how its environment is built, its services, ...) comes from the import alone; a task tmax
    # exported keeps its image profile and work areas.
    ours = tmax_image_of(_read(src / "environment" / "Dockerfile")) is not None
    for key in sorted((RESERVED_METADATA - (EXPORTED_METADATA if ours else set())) & set(meta)):
        res.notes.append(f"metadata.{key}: tmax's own setting, ignored in an imported task")
        del meta[key]
    name = str(task_t.get("name") or src.name)
    if "/" in name:
        name = name.split("/", 1)[1]
    name = str(meta.pop("tmax_name", name))
    task_t["name"] = name
    task_t = {k: v for k, v in task_t.items() if k in ("name", "description", "keywords", "version")}
    agent_t, ver_t, env_t = (dict(doc.get(k) or {}) for k in ("agent", "verifier", "environment"))
    # Harbor's default network is public; schema < 1.4 said allow_internet.
    legacy = env_t.get("allow_internet")
    base_mode = env_t.get("network_mode") or ("no-network" if legacy is False else "public")
    dropped: list[str] = []
    for key, what in _UNCARRIED_ENV.items():
        if env_t.get(key):
            dropped.append(f"environment.{key}: {what} are not provided by tmax's sandboxes")
    if str(env_t.get("os", "linux")).lower() != "linux":
        dropped.append(f"environment.os = {env_t['os']!r}: tmax runs Linux only")
    for phase, table in (("agent", agent_t), ("verifier", ver_t)):
        if table.get("user") not in (None, "root", 0):
            dropped.append(f"{phase}.user = {table['user']!r}: tmax runs the {phase} as root")
    if ver_t.get("collect"):
        dropped.append("verifier.collect: commands in compose services are not run")
    if (doc.get("solution") or {}).get("env"):
        meta["solution_env_dropped"] = True
        dropped.append("solution.env: the oracle runs without these variables")
    if meta.get("source_format") is None and tmax_image_of(_read(src / "environment" / "Dockerfile")) is None:
        meta["source_format"] = "harbor"
    env_dir = src / "environment"
    service_env: dict[str, str] = {}
    workdir = env_t.get("workdir")
    compose = next((env_dir / n for n in COMPOSE_FILES if (env_dir / n).is_file()), None)
    sidecars, compose_env = compose_services(compose, env_dir, dest, dropped) if compose else ([], {})
    if compose and (dropped or not (env_dir / "Dockerfile").is_file()):
        shutil.rmtree(dest / "services", ignore_errors=True)
        copy_tree(env_dir, dest, "environment")
        meta.update(backend="podman", environment="compose")
        res.way = "container"
        dropped.append(f"environment/{compose.name}: kept for a container engine")
    elif (env_dir / "Dockerfile").is_file() and env_t.get("docker_image"):
        dropped.append(f"environment.docker_image = {env_t['docker_image']!r}: Harbor runs that prebuilt image, "
                       "tmax would build environment/Dockerfile instead")
        copy_tree(env_dir, dest, "environment")
        meta.update(backend="podman", environment="image", docker_image=str(env_t["docker_image"]))
        res.way = "container"
    elif not (env_dir / "Dockerfile").is_file() and env_t.get("docker_image"):
        copy_tree(env_dir, dest, "environment")
        meta.update(backend="podman", environment="image", docker_image=str(env_t["docker_image"]))
        res.way = "container"
        res.notes.append(f"prebuilt image {env_t['docker_image']}: kept for a container engine")
    else:
        skip = {compose.name} | {sc["source"].split("/")[0] for sc in sidecars} if compose else set()
        tr = _environment(env_dir / "Dockerfile", env_dir, dest, True, res, meta, skip, ".")
        if sidecars:
            meta["sidecars"] = sidecars
            res.notes.append(f"compose: {len(sidecars)} sidecar(s) ({', '.join(sc['name'] for sc in sidecars)}), each "
                             "in its own sandbox on the task's private network")
        if tr is not None and tr.ok:
            service_env, workdir = tr.env, workdir or tr.workdir
            if tr.service:
                meta["service"] = tr.service
                res.notes.append(f"ENTRYPOINT runs as the task's service: {tr.service}")
            if tr.cmd:
                res.notes.append("CMD is not run (Harbor's environments replace it with sleep infinity)")
            if tr.fetches:
                meta["build_network"] = True
    # The verifier: Harbor's separate mode starts it on an environment of its own.
    mode = ver_t.get("environment_mode") or ("separate" if ver_t.get("environment") else "shared")
    ver_env_t = dict(ver_t.pop("environment", None) or {})
    artifacts = list(doc.get("artifacts") or [])
    if _tmax_export(src, meta, mode, ver_env_t, artifacts):
        mode, artifacts = "shared", []  # tmax's own verifier: the work areas on the pristine environment
    task_t.update(meta.pop("tmax_task_fields", None) or {})
    if mode == "separate":
        _verifier_environment(src, dest, ver_env_t, meta, res, dropped)
    if (src / "instruction.md").is_file():
        copy_file(src / "instruction.md", dest, "instruction.md")
    copy_tree(src / "solution", dest, "solution")
    copy_tree(src / "tests", dest, "tests")
    if steps:
        copy_tree(src / "steps", dest, "steps")
    env_out = {"cpus": float(env_t.get("cpus") or 1),
               "memory_mb": _mb(env_t.get("memory_mb", env_t.get("memory")), toml_path,
                                "environment.memory_mb") or 2048,
               "storage_mb": _mb(env_t.get("storage_mb", env_t.get("storage")), toml_path,
                                 "environment.storage_mb") or 10240,
               **_network_table(env_t, base_mode)}
    if workdir and workdir != "/app":
        env_out["workdir"] = workdir
    task_env = {**service_env, **compose_env, **{k: str(v) for k, v in (env_t.get("env") or {}).items()}}
    if task_env:
        env_out["env"] = task_env
    if env_t.get("healthcheck"):
        env_out["healthcheck"] = dict(env_t["healthcheck"])
    ver_out = {"timeout_sec": float(ver_t.get("timeout_sec") or DEFAULT_VERIFIER_TIMEOUT),
               **_network_table(ver_t, None)}
    ver_env = {k: str(v) for k, v in (ver_t.get("env") or {}).items()}
    if ver_env.get("TEST_DIR") == "/tests":
        del ver_env["TEST_DIR"]  # tmax's verifier sets it anyway
    if ver_env:
        ver_out["env"] = ver_env
    if mode == "separate":
        ver_out["environment_mode"] = "separate"
    agent_out = {"timeout_sec": float(agent_t.get("timeout_sec") or DEFAULT_AGENT_TIMEOUT),
                 **_network_table(agent_t, None)}
    if sidecars and any(m.get("network_mode", env_out["network_mode"]) != env_out["network_mode"]
                        for m in (ver_out, agent_out)) or sidecars and env_out["network_mode"] == "allowlist":
        dropped.append("network: a per-phase policy or an allowlist beside compose sidecars (one network is shared)")
    if any(m.get("network_mode") == "allowlist" for m in (env_out, ver_out, agent_out)):
        res.notes.append("network allowlist: enforced by address (hostnames resolved when a sandbox starts)")
    top: dict = {}
    if artifacts:
        top["artifacts"] = artifacts
    if steps:
        top["steps"] = [_step_table(st) for st in steps]
        top["multi_step_reward_strategy"] = doc.get("multi_step_reward_strategy") or "mean"
        res.notes.append(f"{len(steps)} steps ({top['multi_step_reward_strategy']} reward); the agent's files "
                         "carry from step to step, its processes do not")
    if dropped:
        meta["import_dropped"] = dropped
        if res.way == "native":
            res.way = "partial"
    res.dropped = dropped
    write_file(dest, "task.toml", _toml(top, [("task", task_t), ("metadata", meta), ("agent", agent_out),
                                              ("verifier", ver_out), ("environment", env_out)]).encode())


COMPOSE_FILES = ("docker-compose.yaml", "docker-compose.yml")
# [metadata] keys that tmax reads to build or run a task: set by the import, never by a foreign author.
RESERVED_METADATA = {"image", "work_areas", "sidecars", "service", "build_network", "environment", "backend",
                     "docker_image", "verifier_env_dir", "verifier_image", "import_dropped", "fixture", "tmax_name",
                     "tmax_task_fields"}
EXPORTED_METADATA = {"image", "work_areas", "fixture", "tmax_name", "tmax_task_fields"}  # what tmax export writes
# docker-compose keys: those a sidecar sandbox carries, and those that change nothing here (every
# service shares one loopback, so ports need no publishing). Any other key is dropped.
_COMPOSE_KEYS = {"build", "command", "entrypoint", "environment", "healthcheck", "working_dir"}
_COMPOSE_NEUTRAL = {"depends_on", "expose", "ports", "networks", "restart", "container_name", "hostname", "init",
                    "stop_grace_period", "labels"}


def compose_services(path: Path, env_dir: Path, dest: Path, dropped: list[str]) -> tuple[list[dict], dict[str, str]]:
    """Sidecars (as ``metadata.sidecars``) and the main service's environment from a compose file; each
    sidecar's Dockerfile is translated into ``services/<name>/setup.sh``."""
    import yaml

    try:
        doc = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as e:
        raise TaskError(path, f"invalid YAML: {e}") from None
    services = doc.get("services") if isinstance(doc, dict) else None
    if not isinstance(services, dict):
        raise TaskError(path, "expected a mapping of services", "services")
    for key in set(doc) - {"services", "version", "name", "networks"}:
        dropped.append(f"{path.name}: {key}: not carried")
    main = services.get("main") or {}
    for key in set(main) - {"build", "environment", "command"} - _COMPOSE_NEUTRAL:
        dropped.append(f"{path.name}: services.main.{key}: not carried")
    sidecars = []
    for name, svc in services.items():
        if name == "main":
            continue
        where = f"{path.name}: services.{name}"
        if not isinstance(svc, dict) or not re.fullmatch(r"[a-z0-9][a-z0-9_.-]*", str(name)):
            raise TaskError(path, "expected a service name in lower case and a mapping", f"services.{name}")
        for key in set(svc) - _COMPOSE_KEYS - _COMPOSE_NEUTRAL:
            dropped.append(f"{where}.{key}: not carried")
        sc = _sidecar(name, svc, env_dir, dest, where, dropped)
        if sc:
            sidecars.append(sc)
    order = {n: i for i, n in enumerate(_start_order(services))}
    return sorted(sidecars, key=lambda sc: order.get(sc["name"], 0)), _compose_env(main.get("environment"), path)


def _sidecar(name: str, svc: dict, env_dir: Path, dest: Path, where: str, dropped: list[str]) -> dict | None:
    build = svc.get("build")
    if build is None:
        dropped.append(f"{where}: image {svc.get('image')!r} without a build: needs a registry")
        return None
    ctx_rel, dockerfile = (build, "Dockerfile") if isinstance(build, str) else \
        (build.get("context", "."), build.get("dockerfile", "Dockerfile"))
    if not isinstance(build, str) and set(build) - {"context", "dockerfile"}:
        dropped.append(f"{where}.build: {', '.join(sorted(set(build) - {'context', 'dockerfile'}))}: not carried")
    ctx = (env_dir / str(ctx_rel)).resolve()
    docker = (ctx / str(dockerfile)).resolve()
    if not ctx.is_relative_to(env_dir.resolve()) or ctx == env_dir.resolve() or not docker.is_relative_to(ctx) \
            or not docker.is_file():
        dropped.append(f"{where}.build: expected a sub-directory of environment/ holding its Dockerfile")
        return None
    tr = translate(docker.read_text(errors="replace"), ctx, True)
    if not tr.ok:
        dropped.append(f"{where}: its Dockerfile: " + "; ".join(tr.reasons))
        return None
    entrypoint = _compose_argv(svc["entrypoint"]) if "entrypoint" in svc else tr.entrypoint
    cmd = _compose_argv(svc["command"]) if "command" in svc else (None if "entrypoint" in svc else tr.cmd)
    argv = (entrypoint or []) + (cmd or [])
    if not argv:
        dropped.append(f"{where}: no command to run")
        return None
    rel = ctx.relative_to(env_dir.resolve()).as_posix()
    copy_tree(ctx, dest, f"services/{name}", skip={dockerfile})
    write_file(dest, f"services/{name}/setup.sh", tr.setup.encode(), 0o755, replace=True)
    out = {"name": name, "env_dir": f"services/{name}", "command": shlex.join(argv), "source": rel,
           "env": {**tr.env, **_compose_env(svc.get("environment"), Path(where))},
           "ports": sorted({int(str(p).split(":")[-1].split("/")[0]) for p in (svc.get("expose") or []) +
                            (svc.get("ports") or []) if isinstance(p, (str, int)) and
                            str(p).split(":")[-1].split("/")[0].isdigit()}),
           "workdir": str(svc.get("working_dir") or tr.workdir)}
    hc = svc.get("healthcheck") or {}
    test = hc.get("test") if isinstance(hc, dict) else None
    if isinstance(test, list) and test[:1] == ["CMD"]:
        out["healthcheck"] = shlex.join(map(str, test[1:]))
    elif isinstance(test, list) and test[:1] == ["CMD-SHELL"]:
        out["healthcheck"] = str(test[1])
    elif isinstance(test, str):
        out["healthcheck"] = test
    return out


def _compose_argv(value) -> list[str]:
    return [str(a) for a in value] if isinstance(value, list) else ["/bin/sh", "-c", str(value)]


def _compose_env(value, path: Path) -> dict[str, str]:
    if value is None:
        return {}
    if isinstance(value, list):
        value = dict(str(v).partition("=")[::2] for v in value)
    if not isinstance(value, dict):
        raise TaskError(path, "expected a mapping or a list of KEY=VALUE", "environment")
    return {str(k): "" if v is None else str(v) for k, v in value.items()}


def _start_order(services: dict) -> list[str]:
    """Services in an order that starts each after what it depends on."""
    done: list[str] = []

    def visit(n: str, path: tuple = ()) -> None:
        if n in done or n in path or n not in services:
            return
        deps = (services[n] or {}).get("depends_on") or []
        for d in (deps if isinstance(deps, list) else list(deps)):
            visit(str(d), path + (n,))
        done.append(n)

    for n in services:
        visit(n)
    return done


def _tmax_export(src: Path, meta: dict, mode: str, ver_env_t: dict, artifacts: list) -> bool:
    """A task ``tmax export`` wrote: a tmax-rendered Dockerfile, and the separate verifier whose
    artifacts are the work areas, which is how Harbor says what tmax's verifier does."""
    from tmax.sandbox.container import outer_work_areas

    if mode != "separate" or ver_env_t or (src / "tests" / "Dockerfile").is_file() or "image" not in meta:
        return False
    if tmax_image_of(_read(src / "environment" / "Dockerfile")) is None:
        return False
    areas = meta.get("work_areas") or list(DEFAULT_WORK_AREAS)
    return sorted(outer_work_areas(areas)) == sorted(map(str, artifacts))


def _step_table(st: dict) -> dict:
    out = {"name": st.get("name")}
    for phase in ("agent", "verifier"):
        t = {k: v for k, v in (st.get(phase) or {}).items() if k in {"timeout_sec", *_PHASE_KEYS}}
        if t:
            out[phase] = t
    if st.get("min_reward") is not None:
        out["min_reward"] = st["min_reward"]
    return out


def _verifier_environment(src: Path, dest: Path, ver_env_t: dict, meta: dict, res: ImportResult,
                          dropped: list[str]) -> None:
    """A separate verifier's environment: ``tests/Dockerfile`` translated into ``verifier-environment/``,
    else (no Dockerfile of its own) a fresh copy of the task's environment."""
    tests = src / "tests"
    if ver_env_t.get("docker_image"):
        dropped.append(f"verifier.environment.docker_image = {ver_env_t['docker_image']!r}: a prebuilt verifier "
                       "image needs a container engine")
        return
    if (tests / "docker-compose.yaml").is_file():
        dropped.append("tests/docker-compose.yaml: a compose verifier environment needs a container engine")
        return
    if not (tests / "Dockerfile").is_file():
        res.notes.append("separate verifier: a fresh copy of the task's environment, with the artifacts only")
        return
    tr = translate((tests / "Dockerfile").read_text(), tests, True)
    if not tr.ok:
        dropped.append("tests/Dockerfile: " + "; ".join(tr.reasons))
        return
    copy_tree(tests, dest, "verifier-environment", skip={"Dockerfile"})
    write_file(dest, "verifier-environment/setup.sh", tr.setup.encode(), 0o755, replace=True)
    meta["verifier_env_dir"] = "verifier-environment"
    res.notes.append("separate verifier: tests/Dockerfile translated to verifier-environment/setup.sh")


def _toml(top: dict, sections: list[tuple[str, dict]]) -> str:
    """task.toml in schema 1.4: top-level keys first, then one table per section (nested tables
    inline)."""
    lines = ['schema_version = "1.4"'] + [f"{k} = {_toml_value(v)}" for k, v in top.items()]
    for name, table in sections:
        items = sorted(table.items()) if name == "metadata" else sorted(table.items(), key=lambda kv: kv[0] != "name")
        lines += ["", f"[{name}]"] + [f"{_key(k)} = {_toml_value(v)}" for k, v in items]
    return "\n".join(lines) + "\n"


def _key(k: str) -> str:
    return k if k.replace("_", "").replace("-", "").isalnum() else _toml_value(k)


def _read(p: Path) -> str:
    try:
        return p.read_text()
    except (OSError, UnicodeDecodeError):
        return ""


# -- Terminal-Bench 1 -------------------------------------------------------------------------

def _import_tb1(src: Path, dest: Path, res: ImportResult) -> None:
    import yaml

    yaml_path = src / "task.yaml"
    try:
        doc = yaml.safe_load(yaml_path.read_text())
    except yaml.YAMLError as e:
        raise TaskError(yaml_path, f"invalid YAML: {e}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("instruction"), str) or not doc["instruction"].strip():
        raise TaskError(yaml_path, "expected a non-empty string", "instruction")
    if not (src / "solution.sh").is_file():
        raise TaskError(src / "solution.sh", "missing; expected the oracle script (solution.yaml is not imported)")
    if not (src / "run-tests.sh").is_file():
        raise TaskError(src / "run-tests.sh", "missing; expected the Terminal-Bench 1 test runner")
    sidecar = src / TB1_SIDECAR
    bundle = unbundle_solution(_read(src / "solution.sh"))
    if sidecar.is_file() and bundle is not None:
        _restore_tb1(src, dest, doc, sidecar, bundle, res)
        return
    meta = {k: doc[k] for k in ("difficulty", "category", "tags") if k in doc}
    meta["source_format"] = "tb1"
    compose = src / "docker-compose.yaml"
    if compose.is_file():
        services = (yaml.safe_load(compose.read_text()) or {}).get("services") or {}
        if set(services) - {"client"}:
            copy_tree(src, dest, "environment", skip=TB1_TASK_FILES - {"Dockerfile", "docker-compose.yaml"})
            meta.update(backend="podman", environment="compose")
            res.way = "container"
            res.notes.append(f"docker-compose with services {sorted(services)} kept (tmax builds only one Dockerfile)")
    if res.way != "container":
        _environment(src / "Dockerfile", src, dest, False, res, meta, TB1_TASK_FILES, "environment")
    write_file(dest, "instruction.md", doc["instruction"].encode())
    copy_file(src / "solution.sh", dest, "solution/solve.sh")
    copy_tree(src / "tests", dest, "tests")
    if os.path.lexists(dest / "tests" / "test.sh"):
        raise TaskError(src / "tests" / "test.sh", "exists; expected tmax's verifier entry point name to be free")
    copy_file(src / "run-tests.sh", dest, "tests/run-tests.sh", replace=True)  # replace: never write through
    write_file(dest, "tests/test.sh", TB1_TEST_SH.encode(), 0o755)
    if "uv " in _read(src / "run-tests.sh") or "pip install" in _read(src / "run-tests.sh"):
        res.notes.append("run-tests.sh installs packages: the verifier needs the network")
    _write_toml(dest, {"name": src.name}, meta, doc.get("max_agent_timeout_sec") or DEFAULT_AGENT_TIMEOUT,
                doc.get("max_test_timeout_sec") or DEFAULT_VERIFIER_TIMEOUT, {},
                {"cpus": 1.0, "memory_mb": 2048, "storage_mb": 10240, "allow_internet": False})


def _restore_tb1(src: Path, dest: Path, doc: dict, sidecar: Path, bundle: dict, res: ImportResult) -> None:
    """A Terminal-Bench 1 task that tmax exported: put every file back where it was. The bundle in
    solution.sh is untrusted: each of its paths must stay inside solution/."""
    write_file(dest, "instruction.md", doc["instruction"].encode())
    copy_file(sidecar, dest, "task.toml")
    meta = tomllib.loads(sidecar.read_text()).get("metadata", {})
    _environment(src / "Dockerfile", src / "environment", dest, False, res, dict(meta), set(), "environment")
    if res.way != "native":
        raise TaskError(src / "Dockerfile", "was edited after export; expected the Dockerfile tmax rendered "
                        "(import it as a plain Terminal-Bench 1 task by removing " + TB1_SIDECAR + ")")
    copy_tree(src / "tests", dest, "tests")
    for rel, (data, mode) in bundle.items():
        parts = check_rel(rel, src / "solution.sh", "bundled file")  # '../' and '/abs' are a known attack
        write_file(dest, "/".join(("solution", *parts)), data, mode, where=f"{src / 'solution.sh'}: {rel}")
    res.notes.append("tmax export restored")
