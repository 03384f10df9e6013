"""Seconds per fit step for the skull shape: plain autograd vs the trainer's hand-written pass, one network vs 16
batched, at 64x64 and 256x256, side by side with FER's JAX trainer.

The skull shape is FER's SGD architecture for it: 12 hidden layers of 22 neurons,
"cache:15, gaussian:4, identity:2, sin:1" per layer. Reference (FER's JAX trainer on these 2-core machines):
about 7 ms per step at 64x64 and 0.16 s at 256x256.

Every row is one configuration (resolution, torch threads); every timing is a warm-up fit, then the fastest of
``--repeats`` fits of ``--steps`` steps (timings on a shared 2-core machine vary up to 2x from run to run; the
minimum is the least disturbed). A step is the whole of it: loss, gradient, normalisation, Adam, masks.
GFLOP/s counts only the step's matmuls (the arithmetic that cannot be avoided); the first line gives what one
large float32 matmul reaches here, per thread count, as the ceiling: how much a faster path could still gain, and
what batching can (at most the cores a single fit leaves idle).

    python benchmarks/bench_train.py [--steps N] [--repeats R] [--threads 1 2]
"""

import argparse
import time

import torch

from compbook.cppn import picbreeder, train
from compbook.cppn.network import uniform_cppn

SKULL_ARCH = {"cache": 15, "gaussian": 4, "identity": 2, "sin": 1}
FER_JAX_SECONDS = {64: 0.007, 256: 0.16}


def flops_per_step(model, res: int) -> int:
    """Multiply-adds x 2 of one step's matmuls: forward, weight gradient, input gradient (none for layer 0)."""
    n = res * res
    return sum(2 * o * i * n * (2 if l == 0 else 3) for l, (o, i) in enumerate(model.shapes))


def matmul_gflops(threads: int, n: int = 1024, repeats: int = 5) -> float:
    """GFLOP/s of one large float32 matmul (n x n) with ``threads`` threads: the machine's practical ceiling."""
    torch.set_num_threads(threads)
    a, b = torch.randn(n, n), torch.randn(n, n)
    a @ b
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - t0)
    return 2 * n ** 3 / best / 1e9


def seconds_per_step(kind: str, res: int, steps: int, repeats: int, batch: int) -> float:
    """Fastest seconds per step (per model, for ``kind="batched"``) over ``repeats`` fits, after a warm-up."""
    target = picbreeder.render(picbreeder.load_genome("skull"), res)
    models = [uniform_cppn(12, 22, SKULL_ARCH, color="hsv", seed=s) for s in range(batch)]
    fit = {"autograd": lambda n: train.fit(models[0], target, steps=n, progress=False, gradients="autograd"),
           "single": lambda n: train.fit(models[0], target, steps=n, progress=False),
           "batched": lambda n: train.fit_many(models, target, steps=n, progress=False)}[kind]
    fit(max(2, steps // 4))
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fit(steps)
        best = min(best, time.perf_counter() - t0)
    return best / steps / (batch if kind == "batched" else 1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40, help="steps per timed fit at 64x64 (1/8 at 256x256)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()
    print(f"torch {torch.__version__}; seconds per step, fastest of {args.repeats}; batched = "
          f"{args.batch} networks in one fit_many, per network")
    print("ceiling, one 1024x1024 float32 matmul: " +
          ", ".join(f"{matmul_gflops(t):.0f} GFLOP/s with {t} thread{'s' * (t > 1)}" for t in args.threads))
    head = ("res", "threads", "autograd", "engine", "engine/autograd", "JAX/engine", "GFLOP/s",
            "batched", "single/batched", "JAX/batched", "GFLOP/s")
    print(" ".join(f"{h:>15}" for h in head))
    flops = {res: flops_per_step(uniform_cppn(12, 22, SKULL_ARCH), res) for res in (64, 256)}
    for res in (64, 256):
        steps = args.steps if res == 64 else max(3, args.steps // 8)
        for threads in args.threads:
            torch.set_num_threads(threads)
            t = {kind: seconds_per_step(kind, res, steps, args.repeats, args.batch)
                 for kind in ("autograd", "single", "batched")}
            jax = FER_JAX_SECONDS[res]
            row = (res, threads, f"{t['autograd']:.4f}", f"{t['single']:.4f}", f"{t['autograd'] / t['single']:.2f}x",
                   f"{jax / t['single']:.2f}x", f"{flops[res] / t['single'] / 1e9:.0f}", f"{t['batched']:.4f}",
                   f"{t['single'] / t['batched']:.2f}x", f"{jax / t['batched']:.2f}x",
                   f"{flops[res] / t['batched'] / 1e9:.0f}")
            print(" ".join(f"{v:>15}" for v in row), flush=True)


if __name__ == "__main__":
    main()
