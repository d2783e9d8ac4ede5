#!/usr/bin/env python3
"""Generation and gating throughput on this machine, against the goals for a 15,000-task corpus:
generated in under 5 minutes (50 tasks/s) and gated in under 4 hours (62.5 tasks/min) on 2 cores.
The same tasks are gated three times in one run: oracle and nop alone, with the adversarial leg (the
battery of generic hacks), and with the channel-skip leg too, so each leg's cost is a ratio of
measurements on the same machine and tasks.

Usage: python benchmarks/generate.py [--n 600] [--gate 40] [--jobs 2] [--kind rl_v2]
The last line gives the ratios (measured / goal; >= 1 meets the goal).
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from tmax.gate import check_many
from tmax.generate import generate_corpus

GOAL_GEN_PER_S = 15000 / (5 * 60)
GOAL_GATE_PER_MIN = 15000 / (4 * 60)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=600, help="tasks to generate")
    ap.add_argument("--gate", type=int, default=40, help="tasks to gate (a prefix of the corpus)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--kind", default="rl_v2")
    ap.add_argument("--repeat", type=int, default=2, help="oracle runs per task, as tmax check")
    args = ap.parse_args()
    out = Path(tempfile.mkdtemp(prefix="tmax-bench-gen-"))
    try:
        t0 = time.perf_counter()
        summary = generate_corpus(args.n, 0, args.kind, out / "corpus", jobs=args.jobs)
        gen_s = time.perf_counter() - t0
        gen_rate = summary["written"] / gen_s
        print(f"generate: {summary['written']} tasks in {gen_s:.1f}s = {gen_rate:.1f} tasks/s "
              f"(15,000 tasks: {15000 / gen_rate / 60:.1f} min; goal < 5 min)")
        dirs = sorted(p for p in (out / "corpus").iterdir() if p.is_dir())[: args.gate]
        rates = {}
        for legs, adversarial, channels in (("oracle+nop", False, False), ("+ adversarial", True, False),
                                            ("+ adversarial + channels", True, True)):
            t0 = time.perf_counter()
            results = list(check_many(dirs, repeat=args.repeat, jobs=args.jobs, adversarial=adversarial,
                                      channels=channels))
            gate_s = time.perf_counter() - t0
            ok = sum(r.ok for r in results)
            rates[legs] = rate = len(results) / gate_s * 60
            hacks = sum(len(r.hack_rewards) for r in results)
            print(f"gate {legs}: {len(results)} tasks ({ok} pass, {hacks} hack trials) in {gate_s:.1f}s = "
                  f"{rate:.1f} tasks/min, -j {args.jobs}, repeat {args.repeat} "
                  f"(15,000 tasks: {15000 / rate / 60:.1f} h; goal < 4 h)")
        gate_rate = rates["+ adversarial + channels"]
        print(f"RESULT generate {gen_rate:.1f} tasks/s vs goal {GOAL_GEN_PER_S:.1f} = {gen_rate / GOAL_GEN_PER_S:.2f}x | "
              f"gate (all legs) {gate_rate:.1f} tasks/min vs goal {GOAL_GATE_PER_MIN:.1f} = "
              f"{gate_rate / GOAL_GATE_PER_MIN:.2f}x | adversarial leg x{rates['+ adversarial'] / rates['oracle+nop']:.2f}, "
              f"all legs x{gate_rate / rates['oracle+nop']:.2f} of oracle+nop alone")
    finally:
        shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
