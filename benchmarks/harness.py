"""Harness overhead per step, side by side with mini-swe-agent, plus oracle solving throughput.

    python benchmarks/harness.py [--steps 200] [--repeats 3] [--skip-solve] [--jobs 2]

The same scripted episode runs through both loops: ``--steps`` turns of ``echo hi``, then the submit
command (``echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT``), so each side takes steps + 1 turns.

* tmax: ``run_episode`` with a ``ScriptedPolicy`` (tool calls) in a real bwrap sandbox on the
  ``default`` image, through the persistent shell, saving the ATIF trajectory as in solving: during
  the episode at most once a second (a killed run loses at most a second of steps), and at the end.
* mini-swe-agent (PyPI ``mini-swe-agent``, the reference): ``DefaultAgent`` with its deterministic
  test model (``DeterministicModel``) and its unsandboxed ``LocalEnvironment`` (one ``bash -c`` per
  command), configured from its packaged ``default.yaml``, saving its trajectory after every step.
  It lives in its own virtual environment, ``$TMAX_HOME/venvs/bench`` (made on first run by
  ``benchmarks/setup_bench_venv.sh``), and runs in a subprocess that times itself: the per-step figure
  is the loop alone; interpreter start and imports are reported separately.

Neither side can stop early (step limits above steps + 1, no cost limit); both must report exactly
steps + 1 turns ending in a submission, or the benchmark fails. Each repeat runs both sides, one after
the other; the figures are medians over ``--repeats``. Then ``tmax solve examples/tasks --policy oracle
-k 2 -j JOBS`` runs into a temporary job directory and its throughput is reported in trials per minute
(wall clock of the whole command, its start included).
The last line is the summary, starting with ``RESULT``. Timings move with the machine's load; the load
average is printed with them.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tmax.agent import HarnessConfig, run_episode
from tmax.agent.harness import SUBMIT
from tmax.agent.policies import ScriptedPolicy
from tmax.images import get_environment, tmax_home
from tmax.sandbox import get_backend

ROOT = Path(__file__).resolve().parents[1]
COMMAND = "echo hi"
SUBMIT_CMD = f"echo {SUBMIT}"

# Runs in the bench venv's python. argv[1]: JSON {"steps", "command", "submit", "workdir"}.
# Prints one JSON line: timings (seconds) measured inside the process, and what the agent did.
MINI_CHILD = r'''
import time
t_enter = time.perf_counter()
import json, sys
from pathlib import Path
args = json.loads(sys.argv[1])
import yaml
from minisweagent import package_dir
from minisweagent.agents.default import DefaultAgent
from minisweagent.environments.local import LocalEnvironment
from minisweagent.models.test_models import DeterministicModel, make_output
t_imported = time.perf_counter()

config = yaml.safe_load((package_dir / "config" / "default.yaml").read_text())
n = args["steps"]

def turn(cmd):
    return make_output(f"THOUGHT: next step.\n\n```mswea_bash_command\n{cmd}\n```", [{"command": cmd}], cost=0.0)

outputs = [turn(args["command"]) for _ in range(n)] + [turn(args["submit"])]
model = DeterministicModel(outputs=outputs, cost_per_call=0.0, **config["model"])
env = LocalEnvironment(**{**config["environment"], "cwd": args["workdir"]})
agent_cfg = {**config["agent"], "step_limit": n + 10, "cost_limit": 0.0, "wall_time_limit_seconds": 0,
             "output_path": Path(args["workdir"]) / "trajectory.json"}
agent = DefaultAgent(model, env, **agent_cfg)
t_ready = time.perf_counter()
info = agent.run("Run the scripted commands.")
t_done = time.perf_counter()

observations = [m for m in agent.messages if m.get("role") == "user"][1:]
print(json.dumps({
    "import_s": t_imported - t_enter, "setup_s": t_ready - t_imported, "run_s": t_done - t_ready,
    "in_process_s": t_done - t_enter, "steps": agent.n_calls, "exit_status": info.get("exit_status"),
    "observations": len(observations), "hi_outputs": sum("hi" in m.get("content", "") for m in observations),
    "trajectory_bytes": (Path(args["workdir"]) / "trajectory.json").stat().st_size,
    "version": __import__("minisweagent").__version__,
}))
'''


def loadavg() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def bench_python() -> str:
    """The bench venv's python, made (with mini-swe-agent) on first use."""
    py = tmax_home() / "venvs" / "bench" / "bin" / "python"
    if py.exists() and subprocess.run([str(py), "-c", "import minisweagent"], capture_output=True,
                                      env={**os.environ, "MSWEA_SILENT_STARTUP": "1"}).returncode == 0:
        return str(py)
    print(f"setting up {py.parent.parent} (mini-swe-agent) ...", flush=True)
    out = subprocess.run(["bash", str(ROOT / "benchmarks" / "setup_bench_venv.sh")], capture_output=True, text=True,
                         env={**os.environ, "MSWEA_SILENT_STARTUP": "1"})
    if out.returncode != 0:
        sys.exit(f"setup_bench_venv.sh failed:\n{out.stderr[-3000:]}")
    return out.stdout.strip().splitlines()[-1]


def fail(msg: str) -> None:
    print(f"FAILED: {msg}", flush=True)
    sys.exit(1)


def run_tmax(env, steps: int) -> dict:
    """One episode in a fresh bwrap sandbox; the trajectory is saved as in solving (at most once a second)."""
    be = get_backend("bwrap")
    with tempfile.TemporaryDirectory(prefix="tmax-bench-harness-") as tmp:
        t0 = time.perf_counter()
        sb = be.start(env.spec(work_areas=("/app",)))
        t1 = time.perf_counter()
        try:
            policy = ScriptedPolicy([COMMAND] * steps)
            traj = Path(tmp) / "trajectory.json"
            cfg = HarnessConfig(max_steps=steps + 10)
            t2 = time.perf_counter()
            ep = run_episode("Run the scripted commands.", sb, policy, cfg, trajectory_path=traj)
            t3 = time.perf_counter()
        finally:
            sb.close()
        doc = json.loads(traj.read_text())
        agent_steps = [s for s in doc["steps"] if s["source"] == "agent"]
        obs = [m["content"] for m in ep.messages if m["role"] == "tool"]
        return {"start_s": t1 - t0, "run_s": t3 - t2, "steps": ep.steps, "submitted": ep.submitted,
                "stop_reason": ep.stop_reason, "commands": len(ep.commands), "policy_calls": policy.calls,
                "observations": len(obs), "hi_outputs": sum("hi" in o for o in obs),
                "trajectory_steps": len(agent_steps), "trajectory_bytes": traj.stat().st_size}


def check_tmax(r: dict, steps: int) -> None:
    if not (r["steps"] == r["commands"] == r["policy_calls"] == r["trajectory_steps"] == steps + 1
            and r["submitted"] and r["stop_reason"] == "submitted" and r["hi_outputs"] == steps):
        fail(f"tmax did not take exactly {steps + 1} steps ending in a submission: {r}")


def run_mini(py: str, steps: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="mswea-bench-") as tmp:
        cfg_dir = Path(tmp) / "config"
        work = Path(tmp) / "work"
        work.mkdir()
        env = {**os.environ, "MSWEA_SILENT_STARTUP": "1", "MSWEA_GLOBAL_CONFIG_DIR": str(cfg_dir)}
        arg = json.dumps({"steps": steps, "command": COMMAND, "submit": SUBMIT_CMD, "workdir": str(work)})
        t0 = time.perf_counter()
        out = subprocess.run([py, "-c", MINI_CHILD, arg], capture_output=True, text=True, env=env)
        wall = time.perf_counter() - t0
    if out.returncode != 0:
        fail(f"mini-swe-agent run exited {out.returncode}:\n{out.stderr[-3000:]}")
    r = json.loads(out.stdout.strip().splitlines()[-1])
    r["wall_s"] = wall
    r["interpreter_s"] = wall - r["in_process_s"]  # interpreter start and exit
    return r


def check_mini(r: dict, steps: int) -> None:
    if not (r["steps"] == steps + 1 and r["exit_status"] == "Submitted" and r["observations"] == steps
            and r["hi_outputs"] == steps):
        fail(f"mini-swe-agent did not take exactly {steps + 1} steps ending in a submission: {r}")


def solve_throughput(jobs: int) -> tuple[float, dict, float]:
    """(trials per minute, job summary, wall seconds) of the oracle on examples/tasks, -k 2."""
    with tempfile.TemporaryDirectory(prefix="tmax-bench-solve-") as tmp:
        job = Path(tmp) / "job"
        argv = [sys.executable, "-m", "tmax", "solve", str(ROOT / "examples" / "tasks"), "--policy", "oracle",
                "-k", "2", "-j", str(jobs), "--job", str(job)]
        print("  $ " + " ".join(argv[2:]).replace(str(ROOT) + "/", ""), flush=True)
        t0 = time.perf_counter()
        out = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT)
        wall = time.perf_counter() - t0
        if out.returncode != 0:
            fail(f"tmax solve exited {out.returncode}:\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")
        summary = json.loads((job / "result.json").read_text())
    return summary["n_trials"] / wall * 60, summary, wall


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    ap.add_argument("--steps", type=int, default=200, help="echo turns before the submit turn (default 200)")
    ap.add_argument("--repeats", type=int, default=3, help="episodes per side; medians are reported (default 3)")
    ap.add_argument("--skip-solve", action="store_true", help="skip the oracle solving throughput")
    ap.add_argument("--jobs", type=int, default=2, help="trials in parallel for the oracle solve (default 2)")
    args = ap.parse_args()
    if args.steps < 1 or args.repeats < 1:
        ap.error("--steps and --repeats must be >= 1")
    n = args.steps + 1

    env = get_environment("default")
    py = bench_python()
    print(f"environment {env.name} ({env.hash}); python {sys.version.split()[0]}; {os.cpu_count()} cpus; "
          f"load average {loadavg()} (timings grow with the machine's load)", flush=True)
    ok, why = get_backend("bwrap").available()
    if not ok:
        fail(f"bwrap is not available: {why}")

    print(f"\nepisode: {args.steps} x `{COMMAND}` + submit = {n} steps, {args.repeats} repeats "
          f"(mini-swe-agent from {py})", flush=True)
    run_tmax(env, 3)  # warm-up: page caches, first sandbox on this image
    tm, mi = [], []
    for i in range(args.repeats):
        t = run_tmax(env, args.steps)
        check_tmax(t, args.steps)
        m = run_mini(py, args.steps)
        check_mini(m, args.steps)
        tm.append(t)
        mi.append(m)
        print(f"  repeat {i + 1}: tmax {t['steps']} steps, {t['run_s'] / n * 1000:.2f} ms/step "
              f"(sandbox start {t['start_s'] * 1000:.0f} ms, trajectory {t['trajectory_bytes'] // 1024} KiB) | "
              f"mini-swe-agent {m['version']} {m['steps']} steps ({m['exit_status']}), "
              f"{m['run_s'] / n * 1000:.2f} ms/step (trajectory {m['trajectory_bytes'] // 1024} KiB) | "
              f"load {loadavg()}", flush=True)

    tmax_ms = statistics.median(t["run_s"] for t in tm) / n * 1000
    mini_ms = statistics.median(m["run_s"] for m in mi) / n * 1000
    ratio = tmax_ms / mini_ms

    def med(rs: list[dict], key: str) -> float:
        return statistics.median(r[key] for r in rs) * 1000

    print(f"\nper step (medians over {args.repeats}; {n} steps each; trajectory saved at most once a second by tmax, "
          "every step by mini-swe-agent):")
    print(f"  tmax run_episode, bwrap persistent shell      {tmax_ms:8.2f} ms/step   "
          f"(+ sandbox start {med(tm, 'start_s'):.0f} ms, once per episode)")
    print(f"  mini-swe-agent DefaultAgent, LocalEnvironment {mini_ms:8.2f} ms/step   "
          f"(+ interpreter {med(mi, 'interpreter_s'):.0f} ms, imports {med(mi, 'import_s'):.0f} ms, "
          f"setup {med(mi, 'setup_s'):.0f} ms, once per run)")
    print(f"  ratio tmax / mini-swe-agent                   {ratio:8.2f} x   (goal <= 2x)")
    print(f"  load average {loadavg()}", flush=True)

    solve_part = "oracle solve skipped"
    if not args.skip_solve:
        print(f"\noracle solving throughput (-k 2 -j {args.jobs}):", flush=True)
        tpm, summary, wall = solve_throughput(args.jobs)
        print(f"  {summary['n_trials']} trials in {wall:.1f} s = {tpm:.1f} trials/min; outcomes {summary['outcomes']}; "
              f"pass@1 {summary.get('pass@1')}; load average {loadavg()}", flush=True)
        solve_part = f"oracle solve {tpm:.1f} trials/min (-j {args.jobs})"

    print(f"\nRESULT harness per-step tmax {tmax_ms:.2f} ms vs mini-swe-agent {mini_ms:.2f} ms = {ratio:.2f} x "
          f"(goal <= 2x) | {solve_part}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
