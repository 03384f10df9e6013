"""Training throughput of 16 small dual encoders (chapter 10's CLEVR-2D models): batched vs one at a time.

Three ways to train the same 16 models for ``--steps`` steps (batch 64, 32 px, swap negatives on):

* ``loop, plain modules``: 16 ordinary ``DualEncoder`` s, one after the other (the naive reference);
* ``loop, stack of 1``: ``train_stack(..., n_models=1)`` sixteen times (the batched code with one model);
* ``batched, stack of 16``: one ``train_stack(..., n_models=16)`` (stacked weights under ``torch.func.vmap``).

Each row is the fastest of ``--repeats`` runs (timings on the shared 2-core machine vary up to 2x); throughput is
model-steps per second, and the ratio is against the plain loop. The issue's goal is >= 3x.

    python benchmarks/bench_binding.py [--steps N] [--repeats R] [--threads T]
"""

import argparse
import time

import torch

from compbook import scenes as S
from compbook.binding import clevr, data as D
from compbook.binding.encoders import DualEncoder
from compbook.binding.train import DualTrainConfig, train_stack

N_MODELS = 16


def plain_loop(enc, cfg, pairs, steps):
    """16 ordinary modules trained one after the other with the same loss, optimiser and schedule."""
    gen = torch.Generator().manual_seed(0)
    for m in range(N_MODELS):
        torch.manual_seed(m)
        net = DualEncoder(enc)
        opt = torch.optim.AdamW(net.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
        for _ in range(steps):
            idx = torch.randint(0, len(pairs.images), (cfg.batch,), generator=gen)
            loss = net.loss(pairs.images[idx], pairs.captions[idx, 0], pairs.swap[idx], pairs.swap_valid[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()


def best_of(f, repeats):
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return min(times)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--threads", type=int, default=1)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    setup = clevr.Setup()
    enc = clevr.encoder_config(setup)
    sets = clevr.scene_sets(setup)
    pairs = D.build_pairs(S.clevr2d(), sets["train"], sets["train_objects"], res=setup.res, max_len=clevr.MAX_LEN)
    cfg = DualTrainConfig(steps=a.steps, batch=setup.batch, warmup=5)
    runs = {
        "loop, plain modules": lambda: plain_loop(enc, cfg, pairs, a.steps),
        "loop, stack of 1": lambda: [train_stack(enc, cfg, pairs, 1, progress=False) for _ in range(N_MODELS)],
        "batched, stack of 16": lambda: train_stack(enc, cfg, pairs, N_MODELS, progress=False),
    }
    print(f"{N_MODELS} models x {a.steps} steps, batch {setup.batch}, {setup.res} px, {a.threads} thread(s)")
    base = None
    for name, f in runs.items():
        f() if base is None else None        # warm-up once
        sec = best_of(f, a.repeats)
        thr = N_MODELS * a.steps / sec
        base = base or thr
        print(f"{name:22s} {sec:7.2f} s  {thr:7.1f} model-steps/s  x{thr / base:.2f}")


if __name__ == "__main__":
    main()
