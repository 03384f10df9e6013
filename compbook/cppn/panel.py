"""Several judges on the same perturbed renders, each score with a 95% interval (chapters 5-9).

Part A's chapters score EMC2 (:mod:`compbook.cppn.emc2`) under two judges side by side: the book's default
semantic judge (``make_judge("default")``, "is this still a skull?", chosen on a model labeller's blind verdicts) and
SSIM to the network's own render (``make_judge("ssim")``, "is this the same picture?"; both from
:mod:`compbook.cppn.judges.registry`). :class:`Panel` asks every judge about the same renders (rendered once);
:func:`score_row` gives a score with its Wilson interval over the perturbations of one network, :func:`summary` a score
pooled over several networks (seeds) with a two-level bootstrap interval (networks, then perturbations within each), so
the spread between seeds counts.

Our choices, all parameters: renders are judged at :data:`SCORE_RES` = 64 px (the size the judges were
checked on against the labellers' verdicts, whatever size a network was trained at: a CPPN draws at any size), SSIM's
threshold is its documented one (:data:`compbook.cppn.judges.base.SSIM_THRESHOLD`), and two intervals "overlap"
when neither lies wholly above the other.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from .. import checks
from ..stats import pooled_ci, wilson
from .judges.registry import JUDGE_LABELS   # how pages name the judges  # noqa: F401

SCORE_RES = 64
#: Short names of the two judges of :func:`default_panel`, as tables show them (their names in
#: :data:`compbook.cppn.judges.registry.JUDGES`).
DEFAULT, SSIM = "default", "ssim"
JUDGE_NAMES = (DEFAULT, SSIM)


def score_row(verdicts, **labels) -> dict:
    """``labels`` plus ``score`` (the fraction of True), ``k``, ``n`` and ``ci95`` (Wilson, 95%) of
    ``verdicts`` (a bool array ``(n,)``). An empty array gives a NaN score and interval."""
    v = np.asarray(verdicts)
    if v.ndim != 1 or (v.size and v.dtype != bool):
        raise ValueError(f"verdicts must be a 1-D bool array, got {v.dtype} {v.shape}")
    k, n = int(v.sum()), len(v)
    lo, hi = wilson(k, n)
    return labels | {"score": k / n if n else float("nan"), "k": k, "n": n, "ci95": [lo, hi]}


class Panel:
    """A judge that asks every judge of ``judge_map`` (name -> judge) about the same renders, keeps each
    one's verdicts in ``verdicts[name]`` (a list of bool arrays, one per call) and answers with the first."""

    def __init__(self, judge_map: dict):
        if not isinstance(judge_map, dict) or not judge_map or not all(callable(j) for j in judge_map.values()):
            raise ValueError(f"judge_map must be a non-empty dict name -> judge, got {judge_map!r:.80}")
        self.judge_map, self.verdicts = judge_map, {k: [] for k in judge_map}
        self.identity = "panel:" + "|".join(getattr(j, "identity", "?") for j in judge_map.values())

    def __call__(self, images, concept, *, reference=None, questions=None):
        out = None
        for name, judge in self.judge_map.items():
            v = judge(images, concept, reference=reference)
            self.verdicts[name].append(v.numpy())
            out = v if out is None else out
        return out

    def results(self) -> dict[str, np.ndarray]:
        """Every judge's verdicts so far, concatenated: name -> bool ``(M,)``."""
        return {k: np.concatenate(v) if v else np.zeros(0, bool) for k, v in self.verdicts.items()}


def default_panel(target=None, threshold: float | None = None) -> dict:
    """``{"default": ..., "ssim": ...}``: the book's default CPU judge and SSIM to the own render
    (``make_judge("default")``, ``make_judge("ssim")``).

    With ``target`` (an image ``(H, W, 3)`` in [0, 1]) the first judge is instead the same multi-scale
    comparison against ``target`` itself (``make_judge("image-reference", ...)``, chapter 9's choice for targets
    that are none of the three concepts), at ``threshold`` (default: the default judge's).
    """
    from .judges.registry import make_judge
    first = make_judge(DEFAULT) if target is None else \
        make_judge("image-reference", target=target, threshold=threshold)
    return {DEFAULT: first, SSIM: make_judge(SSIM)}


def panel_verdicts(model, judge_map: dict, concept: str, delta: float = 0.5, res: int = SCORE_RES,
                   sample: int | None = None, seed: int = 0, progress: bool = False,
                   **score_kwargs) -> dict[str, np.ndarray]:
    """EMC2 verdicts of ``model`` under every judge of ``judge_map``: name -> bool ``(M,)``, the same M
    perturbations (:func:`compbook.cppn.emc2.compositional_score`'s plan: ``+delta``, a seeded ``sample`` of
    weights or all of them; ``score_kwargs`` go to it too)."""
    from . import emc2
    panel = Panel(judge_map)
    emc2.compositional_score(model, panel, concept, delta=delta, res=res, sample=sample, seed=seed,
                             progress=progress, **score_kwargs)
    return panel.results()


def groups_from_counts(k_n) -> list[np.ndarray]:
    """Bool arrays (k True then n - k False) from per-network counts ``[[k, n], ...]``: all that
    :func:`summary` and :func:`bootstrap_ci` need of stored verdicts."""
    pairs = []
    for j, kn in enumerate(checks.sequence(k_n, "k_n")):
        kn = checks.integers(kn, f"k_n[{j}] ([k, n])", 0, ndim=1)
        if len(kn) != 2 or not kn[0] <= kn[1] or kn[1] < 1:
            raise ValueError(f"k_n[{j}] must be [k, n] with 0 <= k <= n, n >= 1, got {kn.tolist()!r}")
        pairs.append((int(kn[0]), int(kn[1])))
    # a byte per verdict (and one for np.repeat's copy), and each array's header and list slot
    checks.check_budget(2.0 * sum(n for _, n in pairs) + 128.0 * len(pairs),
                        f"k_n: {sum(n for _, n in pairs):,} verdicts")
    return [np.repeat([True, False], [k, n - k]) for k, n in pairs]


@torch.no_grad()
def unperturbed_counts(models: Sequence, judge_map: dict, concept: str, res: int = SCORE_RES) -> dict[str, list[int]]:
    """Per judge ``[k, n]``: how many of the ``n`` models' own unperturbed renders it accepts as ``concept``,
    each render judged alone with itself as the reference (so SSIM to the own render accepts every one): a
    score means little when the network did not draw the concept in the first place."""
    imgs = torch.stack([m.render(res).float() for m in models]).clamp(0, 1)
    return {k: [sum(bool(j(img[None], concept, reference=img)[0]) for img in imgs), len(imgs)]
            for k, j in judge_map.items()}


def unperturbed(models: Sequence, judge_map: dict, concept: str, res: int = SCORE_RES) -> dict[str, float]:
    """The fraction of ``models`` each judge accepts unperturbed (:func:`unperturbed_counts`)."""
    return {k: kk / n for k, (kk, n) in unperturbed_counts(models, judge_map, concept, res).items()}


def bootstrap_ci(groups: Sequence, n_boot: int = 2000, seed: int = 0, level: float = 0.95) -> tuple[float, float]:
    """Percentile interval of the pooled score of ``groups`` (one bool array per network): each draw
    resamples the networks with replacement, then each drawn network's verdicts (:func:`compbook.stats.pooled_ci`)."""
    groups = _check_groups(groups)
    return pooled_ci([g.mean() for g in groups], [len(g) for g in groups], n_boot, seed, level)

def summary(groups: Sequence, n_boot: int = 2000, seed: int = 0, **labels) -> dict:
    """``labels`` plus the pooled ``score``, ``k``, ``n``, ``networks``, ``per_network`` scores and ``ci95``:
    Wilson for one network, :func:`bootstrap_ci` for several (``interval`` says which)."""
    groups = _check_groups(groups)
    row = score_row(np.concatenate(groups), **labels)
    row |= {"networks": len(groups), "per_network": [round(float(g.mean()), 4) for g in groups]}
    if len(groups) > 1:
        row |= {"ci95": list(bootstrap_ci(groups, n_boot, seed)), "interval": "bootstrap (networks, weights)"}
    else:
        row |= {"interval": "Wilson"}
    return row


def overlap(a: dict, b: dict) -> bool:
    """Do the ``ci95`` intervals of rows ``a`` and ``b`` overlap (touching counts as overlapping)?"""
    (a0, a1), (b0, b1) = _ci(a, "a"), _ci(b, "b")
    return not (a0 > b1 or b0 > a1)


def _ci(row, name: str) -> tuple[float, float]:
    ci = row.get("ci95") if isinstance(row, dict) else None
    if ci is None or len(ci) != 2 or not all(np.isfinite(ci)) or ci[0] > ci[1]:
        raise ValueError(f"{name} must be a row with a finite 'ci95' [lo, hi], got {row!r:.120}")
    return float(ci[0]), float(ci[1])


def _check_groups(groups) -> list[np.ndarray]:
    if isinstance(groups, np.ndarray) or not isinstance(groups, Sequence) or not groups:
        raise ValueError(f"groups must be a non-empty list of bool arrays (one per network), got {groups!r:.80}")
    out = [np.asarray(g) for g in groups]
    for j, g in enumerate(out):
        if g.ndim != 1 or not g.size or g.dtype != bool:
            raise ValueError(f"groups[{j}] must be a non-empty 1-D bool array, got {g.dtype} {g.shape}")
    return out
