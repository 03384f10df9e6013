"""Checks at the door, not in the hot loop: the time of one SAE training step with the argument checks in the step
(the public :func:`compbook.sae.s2ae.s2ae_loss`, as every step ran before) against the unchecked step
:func:`compbook.sae.s2ae.fit_sae` runs now (``_s2ae_loss``, the data checked once at the door).

Each step is loss + backward + Adam on one batch of CPU mode's sizes (d_sae 512, k 16, 32 images of 81 tokens of
width 64; S2AE with its penalties over 64 patches in 8 regions). The two are timed in turns, ``--repeats`` times,
keeping the fastest (the least disturbed); the number that matters is the ratio in one run.

    python benchmarks/bench_hot_checks.py [--steps 50] [--repeats 3]
"""

import argparse
import time

import torch

from compbook.sae.regions import dense_labels
from compbook.sae.s2ae import SAEData, SAETrainConfig, _s2ae_loss, s2ae_loss
from compbook.sae.topk import TopKSAE


def batch(images: int = 32, tokens: int = 81, d_in: int = 64, patches: int = 64, regions: int = 8):
    g = torch.Generator().manual_seed(0)
    data = SAEData(torch.randn(images, tokens, d_in, generator=g), torch.ones(images, tokens, dtype=torch.bool),
                   torch.arange(1, patches + 1), (8, 8),
                   torch.softmax(torch.randn(images, patches, patches, generator=g), -1))
    return data, dense_labels(data.regions(regions, 1.0))


def timed(loss_fn, sae, data, labels, cfg, steps: int) -> float:
    opt = torch.optim.Adam(sae.parameters(), lr=cfg.lr)
    t0 = time.perf_counter()
    for _ in range(steps):
        loss = loss_fn(sae, data.acts, data.valid, data.patch_idx, labels if cfg.lam > 0 else None, cfg)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    data, labels = batch()
    print(f"{'step':<22}{'checked ms':>12}{'unchecked ms':>14}{'checked/unchecked':>19}")
    for name, lam in (("vanilla TopK SAE", 0.0), ("S2AE (lam 0.05)", 0.05)):
        cfg = SAETrainConfig(d_sae=512, k=16, batch_images=32, lam=lam, n_regions=8)
        best = {"checked": float("inf"), "unchecked": float("inf")}
        for fn in (s2ae_loss, _s2ae_loss):                        # warm-up
            timed(fn, TopKSAE(64, 512, 16), data, labels, cfg, 2)
        for _ in range(args.repeats):
            for key, fn in (("checked", s2ae_loss), ("unchecked", _s2ae_loss)):
                best[key] = min(best[key], timed(fn, TopKSAE(64, 512, 16), data, labels, cfg, args.steps))
        c, u = (1000 * best[k] / args.steps for k in ("checked", "unchecked"))
        print(f"{name:<22}{c:>12.2f}{u:>14.2f}{c / u:>19.2f}")


if __name__ == "__main__":
    main()
