"""Benchmark: a depth sweep's training time, batched (``fit_many``, all seeds of a depth at once) vs one model at
a time (``fit`` in a loop). Prints both side by side with the ratio, and checks both give the same losses.

    python benchmarks/bench_depth_sweep.py                 # CPU-sized defaults
    python benchmarks/bench_depth_sweep.py --seeds 8 --steps 300 --depths 2 4 8 16
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from compbook.cppn import picbreeder, train
from compbook.cppn.network import uniform_cppn
from compbook.cppn.depth import mixed_layout


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--target", default="skull")
    p.add_argument("--res", type=int, default=32)
    p.add_argument("--width", type=int, default=8)
    p.add_argument("--depths", type=int, nargs="+", default=[2, 4, 8, 12, 16])
    p.add_argument("--seeds", type=int, default=4, help="models per depth")
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--threads", type=int, default=1, help="torch threads (0: torch's default; 1, the default, "
                   "is fastest for networks this small on a shared CPU)")
    args = p.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    target = picbreeder.render(picbreeder.load_genome(args.target), args.res)
    layout = mixed_layout(args.width)
    print(f"target {args.target} at {args.res}px, width {args.width}, {args.seeds} seeds x {args.steps} steps, "
          f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    print(f"{'depth':>5} {'one at a time (s)':>18} {'batched (s)':>12} {'speed-up':>9} {'max |loss diff|':>16}")
    train.fit(uniform_cppn(2, args.width, layout), target, 5, progress=False)        # warm-up (first-call costs)
    train.fit_many([uniform_cppn(2, args.width, layout)] * 2, target, 5, progress=False)
    total_seq = total_bat = 0.0
    for d in args.depths:
        models = [uniform_cppn(d, args.width, layout, seed=s) for s in range(args.seeds)]
        t0 = time.perf_counter()
        seq = [train.fit(m, target, args.steps, lr=1e-2, progress=False).final_loss for m in models]
        t_seq = time.perf_counter() - t0
        t0 = time.perf_counter()
        bat = train.fit_many(models, target, args.steps, lr=1e-2, progress=False).final_loss
        t_bat = time.perf_counter() - t0
        total_seq, total_bat = total_seq + t_seq, total_bat + t_bat
        diff = float(np.max(np.abs(np.asarray(seq) - np.asarray(bat))))
        print(f"{d:>5} {t_seq:>18.2f} {t_bat:>12.2f} {t_seq / t_bat:>8.1f}x {diff:>16.2e}")
    print(f"{'all':>5} {total_seq:>18.2f} {total_bat:>12.2f} {total_seq / total_bat:>8.1f}x")


if __name__ == "__main__":
    main()
