"""Seconds per fit step for the skull shape, one network vs 16 batched, at 64x64 and 256x256.

The skull shape is FER's SGD architecture for it: 12 hidden layers of 22 neurons,
"cache:15, gaussian:4, identity:2, sin:1" per layer. Reference (FER's JAX trainer on these 2-core machines):
about 7 ms per step at 64x64 and 0.16 s at 256x256.

    python benchmarks/bench_train.py [--steps N]
"""

import argparse
import time

import torch

from compbook import picbreeder, train
from compbook.cppn import uniform_cppn

SKULL_ARCH = {"cache": 15, "gaussian": 4, "identity": 2, "sin": 1}
FER_JAX_SECONDS = {64: 0.007, 256: 0.16}


def seconds_per_step(n_models: int, res: int, steps: int) -> float:
    target = picbreeder.render(picbreeder.load_genome("skull"), res)
    models = [uniform_cppn(12, 22, SKULL_ARCH, color="hsv", seed=s) for s in range(n_models)]
    fit = (lambda: train.fit(models[0], target, steps=steps, progress=False)) if n_models == 1 else \
        (lambda: train.fit_many(models, target, steps=steps, progress=False))
    train.fit(models[0], target, steps=2, progress=False)       # warm-up
    t0 = time.perf_counter()
    fit()
    return (time.perf_counter() - t0) / steps


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {args.steps} steps per timing")
    print(f"{'res':>5} {'single s/step':>14} {'FER JAX':>8} {'vs JAX':>7} {'batched s/step/model':>21} {'throughput x':>13}")
    for res in (64, 256):
        steps = args.steps if res == 64 else max(3, args.steps // 6)
        single = seconds_per_step(1, res, steps)
        batched = seconds_per_step(args.batch, res, steps) / args.batch
        print(f"{res:>5} {single:14.4f} {FER_JAX_SECONDS[res]:8.3f} {FER_JAX_SECONDS[res] / single:7.2f} "
              f"{batched:21.4f} {single / batched:13.2f}")


if __name__ == "__main__":
    main()
