"""Harbor trials through tmax's sandbox against Harbor's own podman environment, side by side: the
wall time per trial of ``harbor run -a oracle`` on the same task with
``-e tmax.interop.harbor_env:TmaxEnvironment`` and with ``-e podman``.

    python benchmarks/harbor_env.py [--trials 5] [--skip-podman]

The task is written here so that both environments can build it without a registry: its Dockerfile
starts ``FROM localhost/debian:bookworm-tmax``, tmax's default image imported into podman once under
that name (tmax translates the same Dockerfile onto the same image). Its network is public: Harbor's
podman environment enforces ``no-network`` only with an egress sidecar image pulled from a registry.

Each environment gets one untimed warm-up run (which builds and caches the environment), then one
``harbor run -k TRIALS -n 1`` whose trials run one after another. A trial's time is Harbor's own
(``started_at`` to ``finished_at`` in the trial's result.json: environment start, agent, verifier,
stop). Harbor's podman environment needs a compose frontend (podman-compose on PATH or in Harbor's
venv); without one, or without podman, only tmax's figure is printed and the reason why. The last
line is the summary, starting with ``RESULT``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TMAX_ENV = "tmax.interop.harbor_env:TmaxEnvironment"
BASE = "localhost/debian:bookworm-tmax"

TASK = {
    "task.toml": 'schema_version = "1.1"\n\n[task]\nname = "bench/sorted-words"\n\n[agent]\ntimeout_sec = 120.0\n\n'
                 '[verifier]\ntimeout_sec = 120.0\n\n[environment]\nnetwork_mode = "public"\nmemory_mb = 1024\n'
                 'storage_mb = 2048\n',
    "instruction.md": "Write the words of /app/words.txt, sorted, to /app/answer.txt.\n",
    "environment/Dockerfile": f"FROM {BASE}\nWORKDIR /app\nCOPY words.txt /app/words.txt\n"
                              "RUN sort words.txt > /app/.expected\n",
    "environment/words.txt": "pear\napple\nfig\n",
    "solution/solve.sh": "#!/bin/bash\nsort /app/words.txt > /app/answer.txt\n",
    "tests/test.sh": "#!/bin/bash\nif cmp -s /app/answer.txt /app/.expected; then echo 1; else echo 0; fi "
                     "> /logs/verifier/reward.txt\n",
}


def write_task(dest: Path) -> Path:
    for rel, text in TASK.items():
        path = dest / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        if rel.endswith(".sh"):
            path.chmod(0o755)
    return dest


def harbor_python() -> Path:
    r = subprocess.run(["bash", str(ROOT / "scripts" / "harbor_venv.sh")], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"harbor_env benchmark: Harbor's venv is not available: {r.stderr.strip()[-500:]}")
    return Path(r.stdout.strip().splitlines()[-1])


def podman_missing(harbor_bin: Path) -> str | None:
    """Why Harbor's podman environment cannot run here (None if it can)."""
    if shutil.which("podman") is None:
        return "podman is not installed"
    path = f"{harbor_bin}:{os.environ.get('PATH', '')}"
    if shutil.which("podman-compose", path=path) is None:
        return ("Harbor's podman environment needs a compose frontend and none is installed (install one with: "
                f"{harbor_bin / 'pip'} install podman-compose)")
    return None


def ensure_base_image() -> str | None:
    """Import tmax's default image into podman under BASE (once); the reason on failure."""
    from tmax.images import get_environment
    from tmax.sandbox import SandboxError
    from tmax.sandbox.container import Engine

    engine = Engine("podman")
    if engine.image_exists(BASE):
        return None
    try:
        tag = engine.ensure_image(get_environment("default", build=False).spec())
        engine.run("tag", tag, BASE)
    except (SandboxError, Exception) as e:  # noqa: BLE001 - any failure here only means no podman figure
        return f"could not make {BASE} from tmax's default image: {e}"
    return None


def harbor_env(harbor_bin: Path) -> dict[str, str]:
    from tmax.sandbox.container import containers_conf

    pythonpath = os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": pythonpath, "HARBOR_TELEMETRY": "0",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True", "PATH": f"{harbor_bin}:{os.environ.get('PATH', '')}",
            "CONTAINERS_CONF": str(containers_conf())}  # podman here needs tmax's runtime settings


def run_job(harbor_bin: Path, tasks: Path, environment: str, jobs: Path, name: str, trials: int) -> list[float]:
    """Per-trial seconds of one `harbor run`; raises with Harbor's output if a trial failed."""
    argv = [str(harbor_bin / "harbor"), "run", "-p", str(tasks), "-a", "oracle", "-e", environment, "-o", str(jobs),
            "--job-name", name, "-k", str(trials), "-n", "1", "-y", "-q"]
    r = subprocess.run(argv, capture_output=True, text=True, env=harbor_env(harbor_bin))
    results = [json.loads(p.read_text()) for p in sorted((jobs / name).glob("*/result.json"))]
    failed = [res.get("exception_info") for res in results if res.get("exception_info")]
    rewards = [((res.get("verifier_result") or {}).get("rewards") or {}).get("reward") for res in results]
    if r.returncode != 0 or failed or len(results) != trials or any(x != 1 for x in rewards):
        detail = json.dumps(failed[0])[:1500] if failed else (r.stdout + r.stderr)[-1500:]
        raise RuntimeError(f"{environment}: harbor run failed (rewards {rewards}): {detail}")
    return [_seconds(res["started_at"], res["finished_at"]) for res in results]


def _seconds(start: str, end: str) -> float:
    return (datetime.fromisoformat(end.replace("Z", "+00:00")) - datetime.fromisoformat(start.replace("Z", "+00:00"))
            ).total_seconds()


def measure(harbor_bin: Path, tasks: Path, environment: str, label: str, trials: int, work: Path) -> list[float]:
    t0 = time.perf_counter()
    run_job(harbor_bin, tasks, environment, work, f"{label}-warmup", 1)
    print(f"  {label:<8} warm-up (builds the environment) {time.perf_counter() - t0:7.1f} s", flush=True)
    times = run_job(harbor_bin, tasks, environment, work, label, trials)
    print(f"  {label:<8} per trial median {statistics.median(times):6.2f} s   min {min(times):6.2f} s   "
          f"max {max(times):6.2f} s   (n={len(times)})", flush=True)
    return times


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=5, help="timed trials per environment")
    ap.add_argument("--skip-podman", action="store_true", help="measure tmax only")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT / "src"))
    python = harbor_python()
    harbor_bin = python.parent
    with tempfile.TemporaryDirectory(prefix="bench-harbor-env-") as tmp:
        work = Path(tmp)
        tasks = work / "tasks"
        write_task(tasks / "sorted-words")
        why_not = "skipped (--skip-podman)" if args.skip_podman else podman_missing(harbor_bin) or ensure_base_image()
        print(f"harbor run -a oracle, one task, {args.trials} trials per environment, one at a time:", flush=True)
        tmax_times = measure(harbor_bin, tasks, TMAX_ENV, "tmax", args.trials, work)
        podman_times = None
        if why_not is None:
            try:
                podman_times = measure(harbor_bin, tasks, "podman", "podman", args.trials, work)
            except RuntimeError as e:
                why_not = str(e)
    tmax_median = statistics.median(tmax_times)
    parts = [f"tmax per trial median {tmax_median:.2f} s"]
    if podman_times:
        podman_median = statistics.median(podman_times)
        parts += [f"podman per trial median {podman_median:.2f} s",
                  f"podman / tmax = {podman_median / tmax_median:.1f}x"]
    else:
        parts.append(f"podman n/a: {why_not}")
    print("\nRESULT " + " | ".join(parts), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
