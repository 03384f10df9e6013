"""Milliseconds per training step of the scaled-down released recipe (chapter 13's go/no-go model), split into
data (fresh scenes and the batch's queries, vectorised numpy) and model (forward, backward, AdamW step).

Each row is the fastest of ``--repeats`` runs of ``--steps`` steps (timings on the shared 2-core machine vary up
to 2x; compare rows of one run).

    python benchmarks/bench_binding_recipe.py [--steps N] [--repeats R] [--threads T] [--batch B]
"""

import argparse
import time
from dataclasses import replace

import numpy as np
import torch

from compbook.binding.recipe.config import RecipeConfig
from compbook.binding.recipe.data import batch_queries, sample_recipe_scenes, split_objects
from compbook.binding.recipe.model import RecipeEncoder, batch_loss


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batch", type=int, default=256)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    cfg = replace(RecipeConfig(), batch=a.batch)     # the CPU miniature
    train_ids, _ = split_objects(cfg)
    rng = np.random.default_rng(0)
    model = RecipeEncoder(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    data_ms, model_ms = [], []
    for _ in range(a.repeats):
        t = time.perf_counter()
        batches = []
        for _ in range(a.steps):
            s = sample_recipe_scenes(cfg, train_ids, cfg.batch, rng)
            batches.append((s, batch_queries(cfg, s, rng)))
        data_ms.append((time.perf_counter() - t) / a.steps * 1000)
        t = time.perf_counter()
        for s, q in batches:
            loss = batch_loss(model, cfg, s, q)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        model_ms.append((time.perf_counter() - t) / a.steps * 1000)
    print(f"batch {cfg.batch}, {cfg.n_layers} x {cfg.d_model}, {a.threads} thread(s)")
    print(f"data  {min(data_ms):7.1f} ms/step")
    print(f"model {min(model_ms):7.1f} ms/step")
    print(f"8,000 steps: about {8000 * (min(data_ms) + min(model_ms)) / 1000 / 60:.0f} min")


if __name__ == "__main__":
    main()
