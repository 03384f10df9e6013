"""torch's intra-op threads for compbook's work: one thread against two, on a quiet machine and beside a busy
core, for one short fit of each part (why :func:`compbook.config.set_threads` chooses one thread).

Workloads (CPU mode's sizes, each a few seconds at one thread):

* Part A: ``train.fit`` of a 12 x 22 CPPN to the apple at 32 px (the trainer of chapters 1 and 5-9);
* Part B: ``train_controlled`` of 4 controlled models of chapter 13's sweep (a stack: one step trains all four);
* Part C: ``train_sae`` of a vanilla TopK SAE (chapter 14's size, d_sae 512, k 16) on random activations of
  the tiny VLM's shape (timing does not depend on the values).

Each is timed at 1 and 2 threads, in turns, ``--repeats`` times, keeping the fastest (the least disturbed); first
with the machine as found ("as found"), then with one more CPU-bound process beside it ("+1 busy": ``python -c
'while True: pass'``, started by this script and stopped after). The numbers that matter are the ratios in one
run: 2 threads / 1 thread in each condition, and each setting's slowdown when the core is taken.

Measured on the project's 2-core CPU machine on 6 December 2026, while it was shared with many other jobs
(load average 15 at the start: "as found" is itself a busy machine, nothing here was quiet; during the
"+1 busy" rows of C, two more CPU-bound processes ran beside), ``python benchmarks/bench_threads.py --repeats 1
--steps-a 15 --steps-b 8 --steps-c 15`` (seconds)::

    workload                   found 1 found 2   2/1  busy 1  busy 2   2/1 busy/found 1    2
    A: CPPN fit, apple 32 px      0.32    5.72  18.1    1.15   22.21  19.3          3.6  3.9
    B: 4 controlled models        1.40   25.90  18.5    4.62   71.60  15.5          3.3  2.8
    C: TopK SAE fit               5.01   42.36   8.4   32.97  186.74   5.7          6.6  4.4

Two threads were 6 to 19 times slower than one on every workload: each small op's two halves wait for each
other, and a busy machine seldom runs both at once. On a quiet machine the two settings were about equal (a
100-step fit of the apple at 32 px: 2.0-2.5 s either way, measured before this benchmark; rerun it on a quiet
machine for this table's first columns).

    python benchmarks/bench_threads.py [--repeats 2] [--steps-a 100] [--steps-b 40] [--steps-c 100]
"""

import argparse
import contextlib
import subprocess
import sys
import time
from dataclasses import replace

import torch

from compbook import config
from compbook.binding.controlled import ControlledConfig, train_controlled
from compbook.binding.splits import coverage_split
from compbook.cppn import picbreeder, train
from compbook.cppn.network import uniform_cppn
from compbook.sae.s2ae import SAEData, SAETrainConfig, train_sae


def part_a():
    target = picbreeder.render(picbreeder.load_genome("apple"), 32)
    model = uniform_cppn(12, 22, seed=0)
    return lambda steps: train.fit(model, target, steps=steps, progress=False)


def part_b(models: int = 4):
    cfg = replace(ControlledConfig(n_values=5), eval_every=10 ** 9)
    splits = [coverage_split(125, 0.2 + 0.2 * i, seed=i) for i in range(models)]
    return lambda steps: train_controlled(replace(cfg, steps=steps), splits, list(range(models)), progress=False)


def part_c(images: int = 256, tokens: int = 81, d_in: int = 64):
    g = torch.Generator().manual_seed(0)
    data = SAEData(torch.randn(images, tokens, d_in, generator=g), torch.ones(images, tokens, dtype=torch.bool),
                   torch.arange(1, 65), (8, 8))
    cfg = SAETrainConfig(d_sae=512, k=16, batch_images=32)
    return lambda steps: train_sae(data, replace(cfg, steps=steps), progress=False)


def fastest(fns: dict, steps: dict, threads: tuple, repeats: int, label: str) -> dict:
    """``{(name, threads): seconds}``: the fastest of ``repeats`` runs of ``steps[name]`` steps, every (name,
    threads) taken in turns after a short warm-up each; each timing printed as it is taken."""
    for name, fn in fns.items():
        for n in threads:
            with config.using_threads(n):
                fn(2)
    best = {(name, n): float("inf") for name in fns for n in threads}
    for _ in range(repeats):
        for name, fn in fns.items():
            for n in threads:
                with config.using_threads(n):
                    t0 = time.perf_counter()
                    fn(steps[name])
                    best[name, n] = min(best[name, n], time.perf_counter() - t0)
                print(f"  {label}: {name}, {n} thread(s): {time.perf_counter() - t0:.2f} s", flush=True)
    return best


@contextlib.contextmanager
def busy_core():
    """One CPU-bound process beside this one while the block runs (stopped after)."""
    proc = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        yield
    finally:
        proc.kill()
        proc.wait()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--steps-a", type=int, default=100)
    ap.add_argument("--steps-b", type=int, default=40)
    ap.add_argument("--steps-c", type=int, default=100)
    args = ap.parse_args()
    fns = {"A: CPPN fit, apple 32 px": part_a(), "B: 4 controlled models": part_b(), "C: TopK SAE fit": part_c()}
    steps = dict(zip(fns, (args.steps_a, args.steps_b, args.steps_c)))
    threads = (1, 2)
    with open("/proc/loadavg") as f:
        load = f.read().split()[0]
    found = fastest(fns, steps, threads, args.repeats, "as found")
    with busy_core():
        busy = fastest(fns, steps, threads, args.repeats, "+1 busy")
    print(f"torch {torch.__version__}, load average {load} at the start; fastest of {args.repeats}, seconds; "
          f"steps {', '.join(map(str, steps.values()))}")
    print(f"{'workload':<26}{'found 1':>8}{'found 2':>8}{'2/1':>6}{'busy 1':>8}{'busy 2':>8}{'2/1':>6}"
          f"{'busy/found 1':>13}{'2':>5}")
    for name in fns:
        f1, f2, b1, b2 = found[name, 1], found[name, 2], busy[name, 1], busy[name, 2]
        print(f"{name:<26}{f1:>8.2f}{f2:>8.2f}{f2 / f1:>6.1f}{b1:>8.2f}{b2:>8.2f}{b2 / b1:>6.1f}"
              f"{b1 / f1:>13.1f}{b2 / f2:>5.1f}")


if __name__ == "__main__":
    main()
