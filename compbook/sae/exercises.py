"""Part C's exercises (chapters 14-16): each ``check_<what>(answer)`` runs the reader's answer against the reference
in ``compbook.sae`` on seeded inputs and returns a :class:`~compbook.book.exercises.Checked`."""

from __future__ import annotations

from collections import Counter

import numpy as np
import torch

from ..book.exercises import Checked, check_function, rng
from . import metrics, s2ae, topk


# -- chapter 14: the TopK code and FVU ---------------------------------------------------------------------------
def _topk_code(pre: torch.Tensor, k: int) -> torch.Tensor:
    """(N, d_sae) dense code: ReLU, then the k largest kept per row, the rest 0."""
    vals, idx = torch.relu(pre).topk(k, dim=-1)
    return torch.zeros_like(pre).scatter(-1, idx, vals)


def _pre_cases():
    g = torch.Generator().manual_seed(14)
    return [(torch.randn(n, d, generator=g, dtype=torch.float64), k) for n, d, k in ((4, 12, 3), (6, 20, 5))]


def check_topk_code(answer, seconds: float | None = None) -> Checked:
    """Chapter 14: ``answer(pre (N, d_sae), k)`` is the TopK SAE's code: ReLU, keep each row's k largest, zero the
    rest; a dense ``(N, d_sae)`` tensor, each call within ``seconds`` (default
    :data:`compbook.book.exercises.TIME_LIMIT`)."""
    def by_magnitude(pre, k):
        idx = pre.abs().topk(k, dim=-1).indices
        return torch.zeros_like(pre).scatter(-1, idx, torch.relu(pre.gather(-1, idx)))

    def no_relu(pre, k):
        vals, idx = pre.topk(k, dim=-1)
        return torch.zeros_like(pre).scatter(-1, idx, vals)

    def lowest(pre, k):
        vals, idx = torch.relu(pre).topk(k, dim=-1, largest=False)
        return torch.zeros_like(pre).scatter(-1, idx, vals)
    # planted: rows with fewer than k positive pre-activations, where no_relu keeps negatives
    g = torch.Generator().manual_seed(15)
    few = -torch.rand(3, 10, generator=g, dtype=torch.float64)
    few[:, 0] = 1.0
    mistakes = {"the k largest by magnitude |pre| (negatives picked, then zeroed)": by_magnitude,
                "no ReLU (negative pre-activations kept)": no_relu, "the k smallest instead of the largest": lowest}
    return check_function(answer, _topk_code, _pre_cases() + [(few, 3)], "the TopK code", mistakes,
                          seconds=seconds)


def _fvu_cases():
    g = torch.Generator().manual_seed(16)
    cases = []
    for n, d in ((30, 6), (50, 10)):
        x = torch.randn(n, d, generator=g, dtype=torch.float64) * torch.linspace(0.2, 3, d, dtype=torch.float64) + 1.5
        cases.append((x, x + 0.4 * torch.randn(n, d, generator=g, dtype=torch.float64)))
    return cases


def check_fvu(answer) -> Checked:
    """Chapter 14: ``answer(x (N, d), x_hat (N, d))`` is the fraction of variance unexplained:
    ``sum ||x - x_hat||^2 / sum ||x - mean(x)||^2`` (sums over every row and dimension)."""
    mistakes = {"the total around 0, not around the mean of x": lambda x, h: float((x - h).pow(2).sum() /
                                                                                   x.pow(2).sum()),
                "the mean of per-row FVUs": lambda x, h: float(((x - h).pow(2).sum(1) /
                                                                (x - x.mean(0)).pow(2).sum(1)).mean()),
                "explained variance (1 - FVU), not FVU": lambda x, h: 1 - topk.fvu(x, h)}
    return check_function(answer, topk.fvu, _fvu_cases(), "FVU", mistakes)


# -- chapter 15: structured sparsity ------------------------------------------------------------------------------
def _region_cases():
    g = torch.Generator().manual_seed(17)
    cases = []
    for p, d, n_regions in ((12, 5, 3), (20, 8, 4)):
        z = torch.relu(torch.randn(p, d, generator=g, dtype=torch.float64))
        regions = torch.arange(p) % n_regions
        cases.append((z, regions))
    return cases


def check_group_profiles(answer) -> Checked:
    """Chapter 15: ``answer(z (P, d_sae), regions (P,) ints)`` is ``s^g_j``, ``(G, d_sae)``: the root mean square of
    latent j's activation over the patches of region g."""
    def mean_abs(z, regions):
        return torch.stack([z[regions == g].abs().mean(0) for g in torch.unique(regions)])

    def root_sum(z, regions):
        return torch.stack([z[regions == g].pow(2).sum(0).sqrt() for g in torch.unique(regions)])
    mistakes = {"the mean |z| over the region (not the root mean square)": mean_abs,
                "the root of the sum over the region's patches (not the mean)": root_sum}
    return check_function(answer, s2ae.group_profiles, _region_cases(), "the group profiles", mistakes, rtol=1e-4,
                          atol=1e-5)


def check_exclusive_sparsity(answer) -> Checked:
    """Chapter 15: ``answer(z (P, d_sae), regions (P,))`` is the exclusive-sparsity penalty ES: the mean over latents
    of ``(mean over regions of s^g_j)^2``."""
    def square_inside(z, regions):
        return float(s2ae.group_profiles(z, regions).pow(2).mean())

    def group_instead(z, regions):
        return float(s2ae.group_sparsity(z, regions))
    mistakes = {"the square inside the mean over regions (mean_g (s^g_j)^2)": square_inside,
                "the group-sparsity penalty GS (no square)": group_instead}
    return check_function(answer, lambda z, r: float(s2ae.exclusive_sparsity(z, r)), _region_cases(),
                          "the exclusive-sparsity penalty", mistakes, rtol=1e-4, atol=1e-5)


# -- chapter 16: reading a latent --------------------------------------------------------------------------------
def _mask_iou(active, mask):
    a, m = torch.as_tensor(active, dtype=torch.bool), torch.as_tensor(mask, dtype=torch.bool)
    z = a.double()[None, :, None]                        # (1, P, 1): one image, one latent
    return float(metrics.mask_iou(z, m[None, None, :])[0, 0, 0])


def check_mask_iou(answer) -> Checked:
    """Chapter 16: ``answer(active (P,) bool, mask (P,) bool)`` is the IoU of a latent's active patches with a
    concept's mask: |both| / |either|, 0 when both are empty."""
    g = rng(18)
    cases = [(g.random(16) < 0.4, g.random(16) < 0.5) for _ in range(3)] + [(np.zeros(8, bool), np.zeros(8, bool))]

    def recall(a, m):
        return float((a & m).sum() / max(m.sum(), 1))

    def precision(a, m):
        return float((a & m).sum() / max(a.sum(), 1))
    mistakes = {"|both| / |mask| (recall, not IoU)": recall, "|both| / |active| (precision, not IoU)": precision}
    return check_function(answer, _mask_iou, cases, "the IoU", mistakes)


def _identify(acts, labels, top_n):
    order = np.argsort(-np.asarray(acts), kind="stable")[:top_n]
    counts = Counter(labels[i] for i in order)
    best = max(counts.values())
    return next(labels[i] for i in order if counts[labels[i]] == best)


def check_identification(answer) -> Checked:
    """Chapter 16: ``answer(acts (P,), labels (P,) str, top_n)`` names a latent by its top patches: the label most
    common among the ``top_n`` most active patches (on a tie, of the tied labels the one whose
    most active patch ranks highest)."""
    g = rng(19)
    words = np.array(["red", "blue", "square", "circle", "background"])
    cases = []
    for p, top_n in ((30, 5), (40, 8), (25, 3)):
        labels = list(words[g.integers(0, len(words), p)])
        acts = g.exponential(size=p)
        cases.append((acts, labels, top_n))
    reference = _identify

    def all_patches(acts, labels, top_n):
        return Counter(labels).most_common(1)[0][0]

    def lowest(acts, labels, top_n):
        return _identify(-np.asarray(acts), labels, top_n)
    mistakes = {"the most common label over all patches (not the top ones)": all_patches,
                "the least active patches (sorted the wrong way)": lowest}
    return _check_label(answer, reference, cases, mistakes)


def _check_label(answer, reference, cases, mistakes) -> Checked:
    """:func:`check_function` for answers that are labels (strings), compared exactly."""
    from ..book.exercises import correct, kind, not_an_answer, run_answer, wrong
    refused = not_an_answer(answer, "function")
    if refused is not None:
        return refused
    for n, args in enumerate(cases):
        got, failed = run_answer(answer, args, "the identification", f"case {n + 1} of {len(cases)}")
        if failed is not None:
            return failed
        want = reference(*args)
        if not isinstance(got, str):
            return wrong(f"the identification: your function returned {kind(got)}, expected a str (a label)")
        if got != want:
            named = [m for m, f in mistakes.items() if f(*args) == got and got != want]
            return wrong(f"the identification: case {n + 1} gives {got!r}, expected {want!r}"
                         + (f"; that is what {named[0]} gives" if named else ""))
    return correct(f"the identification: matches the reference on {len(cases)} random latents")
