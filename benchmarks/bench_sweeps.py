"""Benchmark: the sweep runner (compbook.runs.sweeps) on this machine. Three ratios, each measured in one run:

1. 16 tiny models, ``local`` sequential against ``ray`` on a local cluster of 2 CPUs (one model per task): the
   speed-up from a second core (near 2 on 2 idle cores);
2. the per-task overhead: tasks that do almost nothing, ``local`` against ``ray`` (milliseconds per task);
3. stacked models per task (``run_many``, one batched fit of 16) against one model per task, on each backend.

Models are the runner's toy (:mod:`compbook.runs.sweeps.toys`: least squares by gradient descent, float64): for 1,
models whose fit takes a fraction of a second on one thread; for 3, tiny ones (a step is a few small kernels), the
regime of the papers' many small networks, where a stack of 16 makes one step of bigger kernels. Each timing is the best
of ``--repeats`` runs into a fresh store; the Ray cluster is started once, before the timings (its start is printed
apart).

    python benchmarks/bench_sweeps.py                  # needs Ray: pip install 'compbook[sweeps]'
    python benchmarks/bench_sweeps.py --models 32 --steps 400
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import torch

from compbook.runs import sweeps
from compbook.runs.sweeps import toys


def timed(sweep, repeats: int, **options) -> float:
    """Best wall time of ``repeats`` runs of ``sweep`` into fresh stores (nothing stored beforehand)."""
    best = float("inf")
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as store:
            t0 = time.perf_counter()
            report = sweeps.run(sweep, Path(store), progress=False, **options).check()
            best = min(best, time.perf_counter() - t0)
            assert len(report.ran) == len(sweep.configs)
    return best


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", type=int, default=16)
    p.add_argument("--d", type=int, default=64, help="features of a toy model")
    p.add_argument("--n", type=int, default=4096, help="samples of a toy model")
    p.add_argument("--steps", type=int, default=3000)
    p.add_argument("--tiny", type=int, nargs=3, default=[8, 64, 300], metavar=("D", "N", "STEPS"),
                   help="the tiny models of the stacking comparison")
    p.add_argument("--cpus", type=int, default=2, help="the local Ray cluster's CPUs")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--json", default=None, help="also write the numbers to this file")
    args = p.parse_args(argv)
    import ray
    torch.set_num_threads(1)
    t0 = time.perf_counter()
    ray.init(address="local", num_cpus=args.cpus, include_dashboard=False, log_to_driver=False)
    start = time.perf_counter() - t0
    one = dict(d=args.d, n=args.n, steps=args.steps)
    single = toys.toy_sweep(args.models, stacked=False, **one)
    tiny = dict(zip(("d", "n", "steps"), args.tiny))
    tiny_single = toys.toy_sweep(args.models, stacked=False, **tiny)
    stacked = toys.toy_sweep(args.models, **tiny)
    empty = toys.toy_sweep(args.models * 4, stacked=False, d=1, n=1, steps=0)
    timed(toys.toy_sweep(args.cpus, stacked=False, **one), 1, backend="ray")        # warm the cluster's workers
    out = {
        "local sequential, one model per task": timed(single, args.repeats, per_task=1),
        "ray, one model per task": timed(single, args.repeats, backend="ray", per_task=1),
        "local sequential, tiny, one model per task": timed(tiny_single, args.repeats, per_task=1),
        "local sequential, tiny, stacked": timed(stacked, args.repeats, per_task=args.models),
        "ray, tiny, one model per task": timed(tiny_single, args.repeats, backend="ray", per_task=1),
        "ray, tiny, stacked": timed(stacked, args.repeats, backend="ray", per_task=args.models // args.cpus),
        "local, empty tasks": timed(empty, args.repeats, per_task=1),
        "ray, empty tasks": timed(empty, args.repeats, backend="ray", per_task=1),
    }
    ray.shutdown()
    n_empty = len(empty.configs)
    ratios = {
        "ray / local speed-up (one model per task)":
            out["local sequential, one model per task"] / out["ray, one model per task"],
        "stacked / one-per-task speed-up, tiny (local)":
            out["local sequential, tiny, one model per task"] / out["local sequential, tiny, stacked"],
        "stacked / one-per-task speed-up, tiny (ray)": out["ray, tiny, one model per task"] / out["ray, tiny, stacked"],
        "per-task overhead, local (ms)": 1000 * out["local, empty tasks"] / n_empty,
        "per-task overhead, ray (ms)": 1000 * out["ray, empty tasks"] / n_empty,
    }
    print(f"{args.models} toy models (d {args.d}, n {args.n}, {args.steps} steps; tiny: d, n, steps {args.tiny}; "
          "float64, 1 thread each); "
          f"a local Ray cluster of {args.cpus} CPUs started in {start:.1f} s; best of {args.repeats}")
    for k, v in out.items():
        print(f"  {k:<45} {v:8.3f} s")
    for k, v in ratios.items():
        print(f"  {k:<45} {v:8.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps({"seconds": out, "ratios": ratios, "args": vars(args)}, indent=1))


if __name__ == "__main__":
    main()
