"""Time EMC2-Bench's two engines side by side: the naive loop vs the fast engine (compbook.cppn.emc2).

    python benchmarks/bench_emc2.py [--res 64] [--threads 1] [--naive-renders 600] [--repeats 3] [--all]

What is timed: rendering every perturbation of the score (policy "plus": one per non-zero weight), *no judge*:
a judge costs the same for both engines, so leaving it out shows the engines' own ratio. The naive engine
(``perturbed`` deep copy + ``render``, one perturbation at a time) costs the same for every weight, so it is timed
on an evenly spaced sample of ``--naive-renders`` perturbations and scaled to all of them (printed as such);
the fast engine always renders all of them. Each engine runs ``--repeats`` times, alternating, and the median
is kept (the machine may be shared).

Lower bounds (counts, not measurements): a naive render costs every layer, ``N * out * (in + 1)`` per layer in
FLOPs (a multiply-add per weight, one activation per neuron, N pixels). A perturbed weight of layer l needs at
least the layers after l ("layers-after", the issue's estimate); in a sparse network only the neurons its change
reaches, with their non-zero inputs ("reach", FLOPs); and, counting each reached neuron as one unit of work
("neurons": in a sparse network a neuron has one or two inputs, so its activation and the memory traffic of its N
values dominate its multiply-adds, and the FLOP count is too optimistic). The bound ratio is naive cost / bound
cost; "reaches" is the measured ratio divided by it (the goal: >= 1 / 1.3 = 0.77). A naive render also pays a
deep copy and Python overhead the counts ignore, so the ratio against plain renders (the same renders without
the copies) is printed too. The fast engine can beat the layers-after bound: it also makes layer l+1 a rank-1
update, and its neurons-major layout (``W @ h``) runs these narrow matmuls faster than ``render``'s
pixels-major one. On sparse networks every layer step is a few small tensor ops whose fixed cost (Python,
dispatch, per-perturbation set-up and colour conversion) is comparable to their arithmetic.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch

from compbook.cppn import emc2
from compbook.cppn.network import CPPN, uniform_cppn
from compbook.cppn.picbreeder import layerize, load_genome


def layer_costs(model: CPPN, n_pixels: int) -> list[int]:
    """FLOP-model cost of each layer of a dense render: ``N * out * (in + 1)``."""
    return [n_pixels * o * (i + 1) for o, i in model.shapes]


def bounds(model: CPPN, weights, n_pixels: int) -> dict[str, float]:
    """Bound ratios (naive cost / least cost of the fast engine) for rendering ``weights``' perturbations.

    - "layers-after" (FLOPs): a perturbed weight of layer l needs at least every layer after l;
    - "reach" (FLOPs): only the neurons its change reaches, each with its non-zero inputs and one activation;
    - "neurons": the same reached neurons counted one unit each (what dominates when in-degrees are ~1-2:
      the activation and the memory traffic of each neuron's N values, not its few multiply-adds).
    """
    costs = layer_costs(model, n_pixels)
    base = emc2._base_pass(model, 1)  # only for the reach masks (resolution does not matter for them)
    naive = len(weights) * sum(costs)
    after = sum(sum(costs[l + 1:]) for l, _, _ in weights)
    reach = neurons = 0
    for l, o, _ in weights:
        for k, mask in zip(range(l + 1, len(model.shapes)), emc2._reach(base, l, (o,))):
            reach += n_pixels * int((base.nonzero[k][mask].sum(1) + 1).sum())
            neurons += int(mask.sum())
    all_neurons = len(weights) * (sum(model.widths) + model.shapes[-1][0])
    return {"layers-after": naive / after, "reach": naive / reach, "neurons": all_neurons / max(neurons, 1)}


def time_engine(model, weights, deltas, res, engine) -> float:
    t0 = time.perf_counter()
    for _ in emc2._iter_renders(model, weights, deltas, res, 64, engine):
        pass
    return time.perf_counter() - t0


def forward_seconds(model: CPPN, res: int, repeats: int = 20) -> float:
    """Median wall time of one plain render (no copy): what the naive loop pays beyond its deep copy."""
    with torch.no_grad():
        model.render(res)
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            model.render(res)
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def bench(name: str, model: CPPN, res: int, naive_renders: int, repeats: int) -> dict:
    weights, deltas = emc2.perturbation_plan(model, 0.5, "plus")
    every = max(1, int(np.ceil(len(weights) / naive_renders)))
    sample_w, sample_d = weights[::every], deltas[::every]
    fast, naive = [], []
    for _ in range(repeats):  # alternate, so a load change on a shared machine hits both
        fast.append(time_engine(model, weights, deltas, res, "fast"))
        naive.append(time_engine(model, sample_w, sample_d, res, "naive") * len(weights) / len(sample_w))
    t_fast, t_naive = statistics.median(fast), statistics.median(naive)
    t_plain = forward_seconds(model, res) * len(weights)
    return dict(name=name, arch=model.arch(), m=len(weights), sampled=len(sample_w), naive=t_naive, fast=t_fast,
                plain=t_plain, ratio=t_naive / t_fast, plain_ratio=t_plain / t_fast,
                bounds=bounds(model, weights, res * res))


def networks(everything: bool) -> dict[str, CPPN]:
    skull = layerize(load_genome("skull"))
    nets = {
        "Picbreeder skull (layerized, sparse)": skull,
        "dense, skull's shape and activations": CPPN(skull.activations, skull.color, seed=0),
        "dense FER skull arch 12 x 22 (cache 15, gaussian 4, identity 2, sin 1)":
            uniform_cppn(12, 22, {"cache": 15, "gaussian": 4, "identity": 2, "sin": 1}, color="hsv", seed=0),
    }
    if everything:
        for g in ("butterfly", "apple"):
            nets[f"Picbreeder {g} (layerized, sparse)"] = layerize(load_genome(g))
    return nets


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--res", type=int, default=64)
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1: comparable runs)")
    p.add_argument("--naive-renders", type=int, default=600, help="naive renders timed per network (scaled up)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--all", action="store_true", help="also the Picbreeder butterfly and apple")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    print(f"EMC2 engines at {args.res}x{args.res}, {args.threads} torch thread(s), rendering only (no judge), "
          f"median of {args.repeats}; naive timed on <= {args.naive_renders} perturbations and scaled up")
    for name, model in networks(args.all).items():
        r = bench(name, model, args.res, args.naive_renders, args.repeats)
        print(f"\n{r['name']}: {r['arch']}, {r['m']} perturbations (naive timed on {r['sampled']})")
        print(f"  naive loop    {r['naive']:8.2f} s  ({1e3 * r['naive'] / r['m']:.2f} ms each: deep copy + render)")
        print(f"  plain renders {r['plain']:8.2f} s  (the same renders without the copies: {r['m']} x one render)")
        print(f"  fast engine   {r['fast']:8.2f} s")
        print(f"  ratio: naive / fast {r['ratio']:.1f}x, plain / fast {r['plain_ratio']:.1f}x")
        for which, bound in r["bounds"].items():
            print(f"  bound ({which:12s}) {bound:6.2f}x: naive / fast reaches {r['ratio'] / bound:5.2f} of it, "
                  f"plain / fast {r['plain_ratio'] / bound:5.2f} (goal >= 0.77)")


if __name__ == "__main__":
    main()
