"""S2AE vs vanilla TopK SAE steps, batched region clustering vs a per-image scikit-learn loop, and the SAE's
throughput against the matmul bound (chapter 15).

Rows, all measured in one run (timings on a shared 2-core machine vary up to 2x from run to run, so compare the
ratios; each timing is the fastest of ``--repeats``, the compared functions timed in turns):

1. one training step at an equal batch of images (all their tokens): vanilla (FVU only), S2AE with the regions
   computed once (our trainer: the VLM is frozen, so an image's regions never change), and S2AE with the regions
   clustered inside the step for every image, as the paper's trainer does. Goal: S2AE <= 1.5x vanilla.
2. region clustering of a batch of images: :func:`compbook.sae.regions.average_linkage` (all images at once, vectorised)
   vs one scikit-learn ``AgglomerativeClustering`` fit per image (the paper's trainer), same partitions.
3. vanilla SAE throughput (tokens/s) and GFLOP/s of its matmuls against one large float32 matmul here.

Inputs are random activations and attention maps of the tiny VLM's shape (``--d-in`` 64, 64 patches on an 8x8
grid, 81 tokens per image): timing does not depend on the values.

    python benchmarks/bench_sae.py [--batch 32] [--d-sae 512] [--k 16] [--repeats 5] [--threads 2]
"""

import argparse
import time

import numpy as np
import torch

from compbook.sae.regions import average_linkage, region_distance, sklearn_regions
from compbook.sae.s2ae import SAEData, SAETrainConfig, s2ae_loss
from compbook.sae.topk import TopKSAE


def best_of(fn, repeats: int) -> float:
    return interleaved({"f": fn}, repeats)["f"]


def interleaved(fns: dict, repeats: int) -> dict:
    """Fastest of ``repeats`` timings of each function, taken in turns (round robin), so that a change in the
    machine's load hits every function alike; one warm-up call each first."""
    for fn in fns.values():
        fn()
    best = {name: float("inf") for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            t = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - t)
    return best


def step_fn(sae, opt, data, cfg, idx, regions):
    def step():
        reg = None
        if cfg.lam > 0:
            reg = regions[idx] if regions is not None else average_linkage(
                region_distance(data.attn[idx], data.grid), 20)
        loss = s2ae_loss(sae, data.acts[idx], data.valid[idx], data.patch_idx, reg, cfg)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sae.normalize_decoder()
    return step


def matmul_gflops(n: int = 1024, repeats: int = 3) -> float:
    a, b = torch.randn(n, n), torch.randn(n, n)
    return 2 * n ** 3 / best_of(lambda: a @ b, repeats) / 1e9


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--d-in", type=int, default=64)
    ap.add_argument("--d-sae", type=int, default=512)
    ap.add_argument("--k", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    g = torch.Generator().manual_seed(0)
    n, p, n_tok = 4 * args.batch, 64, 81
    acts = torch.randn(n, n_tok, args.d_in, generator=g)
    attn = torch.softmax(3 * torch.randn(n, p, p, generator=g), -1)
    data = SAEData(acts, torch.ones(n, n_tok, dtype=torch.bool), torch.arange(p), (8, 8), attn)
    idx = torch.arange(args.batch)
    regions = data.regions(20)
    print(f"batch {args.batch} images x {n_tok} tokens, d_in {args.d_in}, d_sae {args.d_sae}, k {args.k}, "
          f"{args.threads} threads")

    steps = {}
    for name, lam, reg in [("vanilla", 0.0, None), ("S2AE, regions cached", 0.01, regions),
                           ("S2AE, regions per step", 0.01, None)]:
        sae = TopKSAE(args.d_in, args.d_sae, args.k)
        opt = torch.optim.Adam(sae.parameters(), 1e-3)
        cfg = SAETrainConfig(d_sae=args.d_sae, k=args.k, lam=lam)
        steps[name] = step_fn(sae, opt, data, cfg, idx, reg)
    rows = interleaved(steps, args.repeats)
    print("\n1. one training step (ms), ratio to vanilla")
    for name, sec in rows.items():
        print(f"   {name:<24} {1e3 * sec:8.2f} ms   x{sec / rows['vanilla']:.2f}")

    dist = region_distance(attn[idx], (8, 8))
    t = interleaved({"ours": lambda: average_linkage(dist, 20),
                     "sklearn": lambda: sklearn_regions(dist.numpy(), 20)}, args.repeats)
    ours, ref = t["ours"], t["sklearn"]
    same = np.array_equal(average_linkage(dist, 20).numpy(), sklearn_regions(dist.numpy(), 20))
    print(f"\n2. clustering {args.batch} images of {p} patches into 20 regions")
    print(f"   batched {1e3 * ours:8.2f} ms | scikit-learn loop {1e3 * ref:8.2f} ms | "
          f"x{ref / ours:.1f} faster | same partitions: {same}")

    tokens = args.batch * n_tok
    flops = 2 * tokens * args.d_in * args.d_sae * 3 + 2 * tokens * args.d_sae * args.d_in * 3
    peak = matmul_gflops()
    print("\n3. vanilla SAE step against the matmul bound")
    print(f"   {tokens / rows['vanilla']:,.0f} tokens/s; its matmuls "
          f"{flops / rows['vanilla'] / 1e9:.2f} GFLOP/s vs {peak:.1f} GFLOP/s for a 1024^2 matmul "
          f"({100 * flops / rows['vanilla'] / 1e9 / peak:.0f}% of the bound)")


if __name__ == "__main__":
    main()
