"""OpenMP's wait policy on a shared CPU: the embedded model's decode speed with spinning (ACTIVE, libgomp's
default) against sleeping (PASSIVE, what tmax sets) waiting threads, while a second torch process keeps
the cores busy, as a learner or a rollout engine does beside the sampler.

  python3 benchmarks/omp_wait.py            # about 5 minutes on 2 cores
  python3 benchmarks/omp_wait.py --tokens 50 --rows 1
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

DECODE = r"""
import sys, time
sys.path.insert(0, sys.argv[1])
from tmax.agent.hf import HFPolicy, Sampling
p = HFPolicy(model_path="embedded")
t0 = time.perf_counter()
out = p._decode([list(range(1000, 1400))] * int(sys.argv[2]), int(sys.argv[3]), Sampling(1.0, 1.0, None))
print(sum(len(o[0]) for o in out) / (time.perf_counter() - t0))
"""

BUSY = r"""
import torch
a = torch.randn(512, 512)
while True:
    a = torch.tanh(a @ a / 512)
"""


def tokens_per_second(policy: str, rows: int, tokens: int) -> float:
    env = {**os.environ, "OMP_WAIT_POLICY": policy}
    busy = subprocess.Popen([sys.executable, "-c", BUSY], env=env)
    try:
        time.sleep(2)
        out = subprocess.run([sys.executable, "-c", DECODE, str(ROOT / "src"), str(rows), str(tokens)], env=env,
                             capture_output=True, text=True, check=True)
        return float(out.stdout.strip().splitlines()[-1])
    finally:
        busy.kill()
        busy.wait()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=4, help="sequences decoded together")
    ap.add_argument("--tokens", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    rates = {p: [] for p in ("ACTIVE", "PASSIVE")}
    for _ in range(args.repeats):
        for policy in rates:
            rates[policy].append(tokens_per_second(policy, args.rows, args.tokens))
            print(f"{policy:8s} {rates[policy][-1]:7.1f} tokens/s", flush=True)
    best = {p: max(v) for p, v in rates.items()}
    print(f"RESULT decode beside a busy torch process, {args.rows} rows x {args.tokens} tokens: ACTIVE "
          f"{best['ACTIVE']:.1f} tokens/s, PASSIVE {best['PASSIVE']:.1f} tokens/s, ratio PASSIVE/ACTIVE "
          f"{best['PASSIVE'] / best['ACTIVE']:.2f}")


if __name__ == "__main__":
    main()
