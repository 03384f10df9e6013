"""Controlled models (chapter 13) trained per minute: M models in one stack vs the same M one at a time.

Both paths run the same code (:func:`compbook.binding.train_controlled`): batched, one stack of M models whose
weights carry a leading model axis; one at a time, M runs of a stack of one. A short run of ``--steps`` steps
(the sweep's CPU-mode architecture and batch), timed after a warm-up; the throughput is models x steps per
minute, reported as "models per minute" at the sweep's steps per model. Timings on the shared 2-core machine
vary up to 2x from run to run: read the ratios, measured in one run.

A third row times the batched stack with ``--threads-alt`` intra-op threads (default 2): on a 2-core machine
that other processes share, OpenMP threads that wait for each other at every small op made the old sweep
several times slower than one thread (the sweep now trains with one thread).

    python benchmarks/bench_controlled.py [--models 8] [--steps 20] [--threads 1] [--threads-alt 2]
"""

import argparse
import time
from dataclasses import replace

import torch

from compbook.binding.controlled import ControlledConfig, train_controlled
from compbook.binding.splits import coverage_split


def timed(cfg, splits, seeds, threads: int) -> float:
    torch.set_num_threads(threads)
    t0 = time.perf_counter()
    train_controlled(cfg, splits, seeds, progress=False)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=int, default=8)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--threads-alt", type=int, default=2)
    args = ap.parse_args()
    sweep_cfg = ControlledConfig(n_values=5)
    cfg = replace(sweep_cfg, steps=args.steps, eval_every=10 ** 9)
    covs = [0.1 + 0.8 * i / max(args.models - 1, 1) for i in range(args.models)]
    splits = [coverage_split(125, c, seed=i) for i, c in enumerate(covs)]
    seeds = list(range(args.models))
    timed(cfg, splits[:1], seeds[:1], args.threads)                      # warm-up
    batched = timed(cfg, splits, seeds, args.threads)
    single = sum(timed(cfg, splits[m:m + 1], seeds[m:m + 1], args.threads) for m in range(args.models))
    alt = timed(cfg, splits, seeds, args.threads_alt)
    per_min = lambda s: 60.0 * args.models * args.steps / s / sweep_cfg.steps   # noqa: E731
    print(f"{args.models} controlled models x {args.steps} steps (CPU mode sizes; "
          f"models/min at {sweep_cfg.steps} steps each)")
    print(f"{'path':<28}{'seconds':>10}{'models/min':>12}")
    print(f"{f'one at a time, {args.threads} thr':<28}{single:>10.1f}{per_min(single):>12.2f}")
    print(f"{f'batched, {args.threads} thr':<28}{batched:>10.1f}{per_min(batched):>12.2f}")
    print(f"{f'batched, {args.threads_alt} thr':<28}{alt:>10.1f}{per_min(alt):>12.2f}")
    print(f"ratio batched / one at a time: {single / batched:.1f}x")
    print(f"ratio {args.threads} thr / {args.threads_alt} thr (batched): {alt / batched:.1f}x")


if __name__ == "__main__":
    main()
