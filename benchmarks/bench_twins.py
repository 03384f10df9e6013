"""Seconds per training step of the SGD twins (``compbook.cppn.twins``), per target: plain autograd against the
trainer's hand-written pass (the fast path), 3 seeds batched, at 64x64 and 1 thread, with each step's FLOPs.

Why the apple's step is slower than the skull's: its dense twin (33 hidden layers, up to 29 neurons) does about
ten times the skull's multiply-adds (11 layers, up to 16 neurons). The columns say how much of a step is that
arithmetic: GFLOP/s against one large float32 matmul on the same thread (the ceiling a faster path could reach).

Every timing is a warm-up fit, then the fastest of ``--repeats`` fits of ``--steps`` steps; ratios are taken
within one run (the shared 2-core machine varies up to 2x between runs).

    python benchmarks/bench_twins.py [--steps N] [--repeats R] [--seeds 3]
"""

import argparse
import time

import torch

from compbook.cppn import picbreeder, train
from compbook.cppn.network import CPPN

TARGETS = ("skull", "butterfly", "apple")


def flops_per_step(model: CPPN, res: int, batch: int) -> int:
    """Multiply-adds x 2 of one step's matmuls: forward, weight gradient, input gradient (none for layer 0)."""
    n = res * res
    return batch * sum(2 * o * i * n * (2 if l == 0 else 3) for l, (o, i) in enumerate(model.shapes))


def ceiling_gflops(n: int = 1024, repeats: int = 5) -> float:
    a, b = torch.randn(n, n), torch.randn(n, n)
    a @ b
    best = min(_time(lambda: a @ b) for _ in range(repeats))
    return 2 * n ** 3 / best / 1e9


def _time(f) -> float:
    t0 = time.perf_counter()
    f()
    return time.perf_counter() - t0


def seconds_per_step(target: str, gradients: str, steps: int, repeats: int, seeds: int, res: int) -> float:
    g = picbreeder.load_genome(target)
    pb = picbreeder.layerize(g)
    models = [CPPN(pb.activations, pb.color, seed=s) for s in range(seeds)]
    image = picbreeder.render(g, res)
    fit = lambda n: train.fit_many(models, image, steps=n, lr=3e-4, progress=False, gradients=gradients)
    fit(2)
    return min(_time(lambda: fit(steps)) for _ in range(repeats)) / steps


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--res", type=int, default=64)
    args = parser.parse_args()
    torch.set_num_threads(1)
    ceiling = ceiling_gflops()
    print(f"torch {torch.__version__}, 1 thread, {args.res}x{args.res}, {args.seeds} seeds batched; "
          f"ceiling {ceiling:.0f} GFLOP/s")
    head = ("target", "GFLOP/step", "autograd s", "engine s", "autograd/eng", "eng GFLOP/s", "of ceiling")
    print(" ".join(f"{h:>12}" for h in head))
    base = None
    for t in TARGETS:
        pb = picbreeder.layerize(picbreeder.load_genome(t))
        fl = flops_per_step(pb, args.res, args.seeds)
        a = seconds_per_step(t, "autograd", args.steps, args.repeats, args.seeds, args.res)
        e = seconds_per_step(t, "backprop", args.steps, args.repeats, args.seeds, args.res)
        base = base or (fl, e)
        row = (t, f"{fl / 1e9:.2f}", f"{a:.4f}", f"{e:.4f}", f"{a / e:.2f}x", f"{fl / e / 1e9:.0f}",
               f"{fl / e / 1e9 / ceiling:.0%}")
        print(" ".join(f"{v:>12}" for v in row), flush=True)
        if t != TARGETS[0]:
            print(f"{'':>12} {t} / {TARGETS[0]}: {fl / base[0]:.1f}x the FLOPs, {e / base[1]:.1f}x the time")


if __name__ == "__main__":
    main()
