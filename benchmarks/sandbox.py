"""Sandbox latency, side by side: start+close of every available backend on the host environment,
``podman run --rm IMAGE true`` as the baseline, the persistent shell's per-command overhead, and
many sandboxes alive at once.

    python benchmarks/sandbox.py [--n 50] [--shell-n 500] [--backends bwrap,unshare,podman,docker]
                                 [--concurrent 256] [--commands 10] [--threads 8] [--skip-concurrency]

Each backend gets one untimed warm-up start (which imports the container image on first use), then
``--n`` timed start+close cycles. The concurrency section (native backends in ``--backends``) starts
``--concurrent`` sandboxes one after another, all alive at once, runs ``--commands`` commands in each
from a pool of ``--threads`` threads (one sandbox's commands in order: a shell runs one at a time),
measures the memory of every sandbox process (summed Pss) and the host's MemAvailable drop, then
closes them all. The last line is the summary, starting with ``RESULT``.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

from tmax.images import host_environment
from tmax.sandbox import get_backend

ALL = ("bwrap", "unshare", "podman", "docker")


def pct(xs: list[float], p: float) -> float:
    """Nearest-rank percentile."""
    s = sorted(xs)
    return s[max(0, math.ceil(p / 100 * len(s)) - 1)]


def ms(x: float) -> str:
    return f"{x * 1000:.1f}"


def row(name: str, xs: list[float], note: str = "") -> None:
    print(f"  {name:<34} median {ms(statistics.median(xs)):>8} ms   p90 {ms(pct(xs, 90)):>8} ms"
          f"   min {ms(min(xs)):>8} ms   (n={len(xs)}){note}", flush=True)


def time_start_close(be, spec, n: int) -> tuple[list[float], list[float], list[float]]:
    """(start+close, start, close) times."""
    total, start, close = [], [], []
    for _ in range(n):
        t0 = time.perf_counter()
        sb = be.start(spec)
        t1 = time.perf_counter()
        sb.close()
        t2 = time.perf_counter()
        total.append(t2 - t0)
        start.append(t1 - t0)
        close.append(t2 - t1)
    return total, start, close


def time_cli(argv: list[str], n: int, env: dict) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        out.append(time.perf_counter() - t0)
    return out


def pss_kb(pids: list[int]) -> int:
    """Summed Pss of ``pids`` (kB): shared pages are split between their users, so sums add up."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/smaps_rollup") as f:
                total += next(int(line.split()[1]) for line in f if line.startswith("Pss:"))
        except (OSError, StopIteration):
            pass  # exited meanwhile
    return total


def mem_available_kb() -> int:
    with open("/proc/meminfo") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("MemAvailable:"))


CMD = "cat /etc/os-release | wc -l"  # cheap but real: two forks and a pipe in the sandbox


def concurrency(be, spec, n: int, commands: int, threads: int) -> dict:
    """Start ``n`` sandboxes (all alive), run ``commands`` in each from ``threads`` threads, close them.
    Starts are sequential: a start forks with a preexec_fn, which is not safe alongside other threads."""
    want = subprocess.run(["bash", "-c", CMD], capture_output=True, text=True).stdout
    avail0 = mem_available_kb()
    sbs = []
    t0 = time.perf_counter()
    try:
        for _ in range(n):
            sbs.append(be.start(spec))
    except Exception as e:
        print(f"  {be.name:<34} FAILED starting sandbox {len(sbs) + 1} of {n} "
              f"({len(sbs)} alive): {type(e).__name__}: {e}", flush=True)
        for sb in sbs:
            sb.close()
        return {"failed_at": len(sbs) + 1}
    started = time.perf_counter() - t0

    def drive(sb) -> int:
        bad = 0
        for _ in range(commands):
            r = sb.exec(CMD)
            bad += not (r.ok and r.output == want)
        return bad

    t0 = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        bad = sum(pool.map(drive, sbs))
    ran = time.perf_counter() - t0
    pids = [pid for sb in sbs for pid in sb.alive_pids()]
    pss, drop = pss_kb(pids) / 1024, (avail0 - mem_available_kb()) / 1024
    t0 = time.perf_counter()
    for sb in sbs:
        sb.close()
    closed = time.perf_counter() - t0
    rate = n * commands / ran
    print(f"  {be.name:<34} start all {started:.2f} s ({ms(started / n)} ms each) | {rate:.0f} cmd/s "
          f"({n * commands} cmds in {ran:.2f} s, {bad} wrong) | Pss {pss:.1f} MB over {len(pids)} processes "
          f"({pss / n:.2f} MB/sandbox), MemAvailable drop {drop:.1f} MB (noisy) | close all {closed:.2f} s "
          f"({ms(closed / n)} ms each)", flush=True)
    return {"rate": rate, "pss": pss, "drop": drop, "bad": bad}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=50, help="start+close cycles per backend (default 50)")
    ap.add_argument("--shell-n", type=int, default=500, help="exec('true') calls for the shell overhead (default 500)")
    ap.add_argument("--backends", default=",".join(ALL), help="comma-separated subset of " + ",".join(ALL))
    ap.add_argument("--concurrent", type=int, default=256, help="sandboxes alive at once (default 256)")
    ap.add_argument("--commands", type=int, default=10, help="commands run in each of them (default 10)")
    # 8: a command mostly waits on the sandbox (bash forks cat and wc), so a few threads per core hide
    # that; on 2 cores, 1-2 threads ran 30-60% slower and 16-64 no faster (the GIL, context switches).
    ap.add_argument("--threads", type=int, default=8, help="threads driving the commands (default 8)")
    ap.add_argument("--skip-concurrency", action="store_true", help="skip the concurrency section")
    args = ap.parse_args()
    env = host_environment()
    spec = env.spec()
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"environment {env.name} ({env.hash}); python {sys.version.split()[0]}; {os.cpu_count()} cpus; "
          f"load average {load} (latencies grow with the machine's load)", flush=True)

    medians: dict[str, float] = {}
    images: dict[str, str] = {}
    engines = {}
    print(f"\nstart+close (one sandbox started, shell ready, then closed), n={args.n}:")
    for name in args.backends.split(","):
        be = get_backend(name)
        ok, why = be.available()
        if not ok:
            print(f"  {name:<34} skipped: {why}", flush=True)
            continue
        t0 = time.perf_counter()
        be.start(spec).close()  # warm-up: imports the image on first use, fills page caches
        warm = time.perf_counter() - t0
        xs, starts, closes = time_start_close(be, spec, args.n)
        medians[name] = statistics.median(xs)
        row(name, xs, f"   start {ms(statistics.median(starts))} + close {ms(statistics.median(closes))} ms"
                      f" (medians); warm-up {warm:.2f} s")
        if name in ("podman", "docker"):
            engines[name] = be.engine
            images[name] = be.engine.ensure_image(spec)

    print(f"\nbaseline: ENGINE run --rm IMAGE true (the same tmax image), n={args.n}:")
    baseline: dict[str, float] = {}
    baseline_nonet: dict[str, float] = {}
    for name in ("podman", "docker"):
        if name not in engines:
            print(f"  {name + ' run':<34} skipped: {name} not available")
            continue
        eng, image = engines[name], images[name]
        cli_env = eng.env()
        subprocess.run([name, "run", "--rm", image, "true"], env=cli_env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        xs = time_cli([name, "run", "--rm", image, "true"], args.n, cli_env)
        baseline[name] = statistics.median(xs)
        row(f"{name} run --rm IMAGE true", xs)
        xs = time_cli([name, "run", "--rm", "--network", "none", image, "true"], args.n, cli_env)
        baseline_nonet[name] = statistics.median(xs)
        row(f"{name} run --rm --network none", xs)

    print(f"\nper-command overhead, n={args.shell_n}:")
    shell_ms = host_ms = float("nan")
    be = get_backend("bwrap")
    ok, why = be.available()
    if ok:
        with be.start(spec) as sb:
            for _ in range(20):
                sb.exec("true")
            xs = []
            for _ in range(args.shell_n):
                t0 = time.perf_counter()
                r = sb.exec("true")
                xs.append(time.perf_counter() - t0)
                assert r.exit_code == 0
        shell_ms = statistics.median(xs) * 1000
        row("bwrap persistent shell exec('true')", xs)
    else:
        print(f"  bwrap persistent shell             skipped: {why}")
    xs = []
    for _ in range(args.shell_n):
        t0 = time.perf_counter()
        subprocess.run(["true"])
        xs.append(time.perf_counter() - t0)
    host_ms = statistics.median(xs) * 1000
    row("host subprocess.run(['true'])", xs)

    conc: dict[str, dict] = {}
    if not args.skip_concurrency:
        threads = min(args.threads, args.concurrent)
        print(f"\nconcurrency: {args.concurrent} sandboxes alive at once, {args.commands} x '{CMD}' in each, "
              f"{threads} threads:")
        for name in args.backends.split(","):
            if name in ("bwrap", "unshare") and name in medians:
                conc[name] = concurrency(get_backend(name), spec, args.concurrent, args.commands, threads)

    parts = []
    if "bwrap" in medians:
        parts.append(f"bwrap start+close median {medians['bwrap'] * 1000:.1f} ms (goal <= 15)")
    else:
        parts.append("bwrap start+close n/a")
    if "bwrap" in medians and "podman" in baseline:
        parts.append(f"podman run / bwrap = {baseline['podman'] / medians['bwrap']:.1f}x (goal >= 10; "
                     f"{baseline_nonet['podman'] / medians['bwrap']:.1f}x against podman run --network none)")
    else:
        parts.append("podman run / bwrap n/a (podman not available)")
    parts.append(f"shell overhead {shell_ms:.2f} ms/cmd (goal <= 3) vs subprocess.run {host_ms:.2f} ms")
    for name in ("unshare", "podman", "docker"):
        if name in medians:
            parts.append(f"{name} start+close {medians[name] * 1000:.1f} ms")
    for name, c in conc.items():
        parts.append(f"{name} x{args.concurrent} failed at sandbox {c['failed_at']}" if "failed_at" in c else
                     f"{name} x{args.concurrent} {c['rate']:.0f} cmd/s, {c['pss']:.0f} MB Pss")
    print("\nRESULT " + " | ".join(parts), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
