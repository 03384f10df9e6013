"""Pruning a CPPN: which connections remain, not how many (chapter 6, ``06_connectivity``).

Every method returns **masks**: a list of 0/1 tensors, one per layer, of shapes ``model.shapes`` (``(out, in)``).
Apply them with ``model.clone_with(masks=masks)`` (or ``model.set_masks``); :func:`compbook.cppn.train.fit` and
:func:`~compbook.cppn.train.fit_many` keep masked weights exactly zero while training.

Unstructured methods score every weight and keep the best (one shared :func:`masks_from_scores`):

- :func:`magnitude_prune`: score ``|W_ij|``;
- :func:`wanda_prune`: Wanda's ``|W_ij| * ||X_j||_2``, X_j layer l's input j over the image grid, compared within
  each output row (Sun et al. 2023);
- :func:`random_prune`: uniform random scores, the control at matched sparsity (our choice);
- :func:`lottery_ticket`: iterative magnitude pruning with rewinding to the initial (or an early) weights
  (Frankle & Carbin 2019; Frankle et al. 2020).

Structured methods remove whole hidden neurons, i.e. row ``k`` of ``W_l`` (incoming) and column ``k`` of
``W_{l+1}`` (outgoing) together (:func:`remove_neurons`):

- :func:`structured_prune`: LLM-Pruner-style (Ma et al. 2023) first-order Taylor importance of each neuron's group;
- :func:`similarity_prune` (**SP**, paper A): per hidden layer, cosine similarity of the neurons' feature maps;
  from each redundant pair one neuron is removed at random; retrain; repeat.

Sparsity is always the fraction of zero mask entries over all layers (:func:`sparsity`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import torch
import torch.nn.functional as F

from .. import checks
from .network import CPPN, coordinate_grid, outputs_to_rgb
from .train import OptimizerFactory, as_target, fit, fit_many, mse

SCOPES = ("global", "layer", "row")
TAYLOR_KINDS = ("weight", "group", "activation")
Neuron = tuple[int, int]          # (hidden layer, neuron index)


# -- checks ----------------------------------------------------------------------------------------------------
def _check_fraction(value, name: str) -> float:
    return checks.real(value, name, 0, 1, high_open=True)


_check_count = checks.integer


def _check_scope(scope: str, allowed: Sequence[str] = SCOPES) -> str:
    return checks.choice(scope, "scope", allowed)


def _current_masks(model: CPPN) -> list[torch.Tensor]:
    """Detached 0/1 float copies of the model's masks."""
    return [(m.detach() != 0).float() for m in model.masks]


def _target_at(target, res: int | None) -> torch.Tensor:
    """The target ``(H, W, 3)`` as a tensor, resized (area average) to ``res x res`` when ``res`` is given."""
    target = as_target(target)
    if target.ndim != 3:
        raise ValueError(f"target: expected one image (H, W, 3), got {tuple(target.shape)}")
    if res is None:
        return target
    res = checks.check_render_size(res, 12, 4, "the target's resize")
    if res == target.shape[0]:
        return target
    img = F.interpolate(target.permute(2, 0, 1)[None], size=(res, res), mode="area")
    return img[0].permute(1, 2, 0).clamp(0, 1)


# -- masks and sparsity ----------------------------------------------------------------------------------------
def sparsity(masks: Sequence[torch.Tensor]) -> float:
    """Fraction of zero entries over all layers' masks (0 = dense); works for weight lists too."""
    masks = _check_masks(masks)
    total = sum(m.numel() for m in masks)
    return 1.0 - float(sum((m != 0).sum() for m in masks)) / total


_sparsity = sparsity      # the functions below take an argument named ``sparsity``


def _check_masks(masks, chain: bool = False) -> list[torch.Tensor]:
    """``masks`` as a non-empty list of finite 2-D tensors (``chain``: layer l + 1 reads layer l's outputs)."""
    if isinstance(masks, torch.Tensor):
        raise ValueError(f"masks must be a list of (out, in) tensors, one per layer, got one tensor")
    masks = checks.sequence(masks, "masks")
    out = []
    for l, m in enumerate(masks):
        t = checks.tensor(m, f"masks[{l}]", (None, None), floating=False)
        if not t.numel():
            raise ValueError(f"masks[{l}] is empty, shape {tuple(t.shape)}")
        out.append(t)
    if chain:
        for l in range(len(out) - 1):
            if out[l + 1].shape[1] != out[l].shape[0]:
                raise ValueError(f"masks: layer {l + 1} reads {out[l + 1].shape[1]} inputs but layer {l} has "
                                 f"{out[l].shape[0]} outputs")
    return out


def layer_sparsity(masks: Sequence[torch.Tensor]) -> list[float]:
    """Fraction of zero entries in each layer's mask."""
    masks = _check_masks(masks)
    return [1.0 - float((m != 0).sum()) / m.numel() for m in masks]


def _round_half_up(x: torch.Tensor) -> torch.Tensor:
    return torch.floor(x + 0.5).long()


def _prune_lowest(scores: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """Boolean ``(G, n)``: in each group (row) of ``scores (G, n)``, the ``k[g]`` lowest entries (stable ties)."""
    order = torch.argsort(scores, dim=1, stable=True)
    ranks = torch.empty_like(order)
    ranks.scatter_(1, order, torch.arange(scores.shape[1]).expand_as(order).contiguous())
    return ranks < k[:, None]


def masks_from_scores(scores: Sequence[torch.Tensor], sparsity: float, scope: str = "global",
                      masks: Sequence[torch.Tensor] | None = None) -> list[torch.Tensor]:
    """Keep the highest-scoring weights: masks with ``round(sparsity * n)`` zeros per group.

    Args:
        scores: one ``(out, in)`` tensor per layer; higher means more worth keeping.
        sparsity: target fraction of zeros in [0, 1).
        scope: ``"global"`` (one ranking over all layers), ``"layer"`` (each layer to ``sparsity``) or ``"row"``
            (each output row to ``sparsity``, Wanda's comparison group; per-row counts are rounded cumulatively so
            every layer still gets ``round(sparsity * out * in)`` zeros).
        masks: current masks (default: all ones). Pruned entries stay pruned and count towards the zeros; a group
            already sparser than ``sparsity`` keeps its zeros (nothing is ever revived).
    Returns:
        new 0/1 float masks, the shapes of ``scores``.
    """
    sparsity = _check_fraction(sparsity, "sparsity")
    _check_scope(scope)
    if isinstance(scores, (str, bytes, torch.Tensor)) or not isinstance(scores, Sequence):
        raise ValueError(f"scores must be a list of (out, in) tensors, one per layer, got {type(scores).__name__}")
    scores = [checks.tensor(s, f"scores[{l}]", floating=False, finite=False).detach().to(torch.float64)
              for l, s in enumerate(checks.sequence(scores, "scores"))]
    if any(s.ndim != 2 for s in scores):
        raise ValueError("scores: expected one (out, in) tensor per layer")
    if any(torch.isnan(s).any() for s in scores):
        raise ValueError("scores: contain NaN")
    if masks is None:
        masks = [torch.ones_like(s) for s in scores]
    else:
        if isinstance(masks, torch.Tensor):
            raise ValueError("masks must be a list of (out, in) tensors, one per layer, got one tensor")
        masks = [checks.tensor(m, f"masks[{l}]", floating=False) != 0
                 for l, m in enumerate(checks.sequence(masks, "masks", 0))]
    if [tuple(m.shape) for m in masks] != [tuple(s.shape) for s in scores]:
        raise ValueError(f"masks: shapes {[tuple(m.shape) for m in masks]} must match the scores' "
                         f"{[tuple(s.shape) for s in scores]}")
    scores = [torch.where(m != 0, s, torch.tensor(-math.inf, dtype=s.dtype)) for s, m in zip(scores, masks)]
    if scope == "global":
        flat = torch.cat([s.reshape(-1) for s in scores])[None]
        groups = [(flat, _round_half_up(torch.tensor([sparsity * flat.numel()])))]
    elif scope == "layer":
        groups = [(s.reshape(1, -1), _round_half_up(torch.tensor([sparsity * s.numel()]))) for s in scores]
    else:
        groups = []
        for s in scores:
            cum = _round_half_up(sparsity * s.shape[1] * torch.arange(s.shape[0] + 1, dtype=torch.float64))
            groups.append((s, cum[1:] - cum[:-1]))
    pruned = []
    for s, k in groups:
        k = torch.maximum(k, torch.isinf(s).sum(dim=1))      # already-pruned entries (-inf) are the lowest
        pruned.append(_prune_lowest(s, k))
    if scope == "global":
        pruned = list(torch.split(pruned[0].reshape(-1), [s.numel() for s in scores]))
    return [(~p).reshape(s.shape).float() for p, s in zip(pruned, scores)]


# -- unstructured scores ---------------------------------------------------------------------------------------
def magnitude_scores(model: CPPN) -> list[torch.Tensor]:
    """``|W_l * mask_l|`` per layer."""
    return [w.detach().abs() for w in model.effective_weights()]


def input_norms(model: CPPN, res: int = 32) -> list[torch.Tensor]:
    """L2 norm over the ``res x res`` grid of each layer's inputs: ``(in_l,)`` per layer.

    Layer 0's inputs are (x, y, d, bias); layer ``l > 0``'s are hidden layer ``l-1``'s post-activations.
    """
    checks.instance(model, "model", CPPN)
    res = checks.check_render_size(res, 4 + 2 * sum(model.widths), model.mask0.element_size(), "input_norms")
    coords = coordinate_grid(res, dtype=model.mask0.dtype)
    with torch.no_grad():
        _, feats = model.forward(coords, return_features=True)
    return [x.norm(dim=0) for x in [coords] + feats]


def wanda_scores(model: CPPN, res: int = 32) -> list[torch.Tensor]:
    """Wanda's score ``|W_ij| * ||X_j||_2`` per layer ``(out, in)`` (X_j: input j over the image grid)."""
    return [s * n[None, :] for s, n in zip(magnitude_scores(model), input_norms(model, res))]


def random_scores(model: CPPN, seed: int = 0) -> list[torch.Tensor]:
    """Uniform random scores per layer (seeded): pruning by them is the control at matched sparsity."""
    g = torch.Generator().manual_seed(checks.seed(seed, "seed", -checks.SEED_MAX - 1))
    return [torch.rand(s, generator=g, dtype=torch.float64) for s in model.shapes]


def magnitude_prune(model: CPPN, sparsity: float, scope: str = "global") -> list[torch.Tensor]:
    """Masks keeping the largest ``|W|`` (scope ``"global"`` or ``"layer"``); already-masked weights stay off."""
    return masks_from_scores(magnitude_scores(model), sparsity, scope, model.masks)


def wanda_prune(model: CPPN, sparsity: float, res: int = 32, scope: str = "row") -> list[torch.Tensor]:
    """Wanda masks: the lowest ``|W_ij| * ||X_j||`` removed within each output row (Wanda's default scope)."""
    return masks_from_scores(wanda_scores(model, res), sparsity, scope, model.masks)


def random_prune(model: CPPN, sparsity: float, seed: int = 0, scope: str = "global") -> list[torch.Tensor]:
    """Random masks at ``sparsity`` (the same seed gives the same masks)."""
    return masks_from_scores(random_scores(model, seed), sparsity, scope, model.masks)


# -- results ---------------------------------------------------------------------------------------------------
@dataclass
class PruneResult:
    """What an iterative pruning method returns.

    ``sparsity[r]`` and ``losses[r]`` describe the state after round ``r`` (``r = 0``: the starting state);
    ``removed[r - 1]`` lists the ``(layer, neuron)`` pairs removed in round ``r`` (empty for unstructured
    methods); ``curve`` concatenates every training step's MSE.
    """
    model: CPPN
    masks: list[torch.Tensor]
    sparsity: list[float]
    losses: list[float]
    removed: list[list[Neuron]]
    curve: np.ndarray = field(default_factory=lambda: np.zeros(0))
    config: dict = field(default_factory=dict)

    @property
    def final_sparsity(self) -> float:
        return self.sparsity[-1]

    @property
    def final_loss(self) -> float:
        return self.losses[-1]


# -- Lottery Ticket ----------------------------------------------------------------------------------------------
def lottery_ticket(model: CPPN, target, sparsity: float, rounds: int = 3, steps_per_round: int = 500,
                   lr: float = 3e-3, rewind_step: int = 0, scope: str = "global",
                   optimizer: str | OptimizerFactory = "adam", progress: bool = False) -> PruneResult:
    """Iterative magnitude pruning with weight rewinding (Lottery Ticket).

    ``model`` is the network **at initialisation**. The rewind point is its weights (``rewind_step = 0``,
    Frankle & Carbin) or the weights after ``rewind_step`` dense training steps (Frankle et al. 2020). Each round
    trains from the rewind point with the current mask for ``steps_per_round`` steps, then removes the smallest
    trained weights so that sparsity follows ``1 - (1 - sparsity)^(r / rounds)``; after the last round the weights
    are rewound. Returns a :class:`PruneResult` whose ``model`` is that rewound **ticket** (untrained: train it with
    :func:`compbook.cppn.train.fit`); ``losses[r]`` is the trained loss of round ``r + 1`` before its pruning, and
    ``losses[-1]`` the ticket's own (untrained) loss. ``rounds=0`` prunes nothing and returns the model itself.
    """
    sparsity = _check_fraction(sparsity, "sparsity")
    rounds = _check_count(rounds, "rounds", 0)
    steps_per_round = _check_count(steps_per_round, "steps_per_round", 0)
    rewind_step = _check_count(rewind_step, "rewind_step", 0)
    _check_scope(scope, ("global", "layer"))
    target = _target_at(target, None)
    rewind = model
    curve = []
    if rewind_step:
        early = fit(model, target, rewind_step, lr, optimizer, progress=progress)
        rewind, curve = early.model, [early.losses]
    masks = _current_masks(model)
    hist_s, hist_l, removed = [], [], []
    for r in range(1, rounds + 1):
        trained = fit(rewind.clone_with(masks=masks), target, steps_per_round, lr, optimizer, progress=progress)
        curve.append(trained.losses)
        hist_s.append(_sparsity(masks))
        hist_l.append(trained.final_loss)
        level = 1.0 - (1.0 - sparsity) ** (r / rounds)
        masks = masks_from_scores(magnitude_scores(trained.model), level, scope, masks)
        removed.append([])
    ticket = rewind.clone_with(masks=masks)
    hist_s.append(_sparsity(masks))
    hist_l.append(mse(ticket, target))
    cfg = dict(method="lottery_ticket", sparsity=sparsity, rounds=rounds, steps_per_round=steps_per_round,
               lr=lr, rewind_step=rewind_step, scope=scope)
    return PruneResult(ticket, masks, hist_s, hist_l, removed,
                       np.concatenate(curve) if curve else np.zeros(0), cfg)


# -- structured: whole neurons -------------------------------------------------------------------------------------
def remove_neurons(masks: Sequence[torch.Tensor], neurons: Sequence[Neuron]) -> list[torch.Tensor]:
    """New masks with each hidden neuron ``(l, k)`` removed: row ``k`` of mask ``l`` and column ``k`` of ``l+1``."""
    out = [(torch.as_tensor(m) != 0).float().clone() for m in masks]
    depth = len(out) - 1
    for n in neurons:
        if isinstance(n, (str, bytes)) or not hasattr(n, "__len__") or len(n) != 2:
            raise ValueError(f"neurons: each must be a (layer, neuron) pair, got {n!r}")
        l, k = (checks.integer(x, f"neurons: {tuple(n)!r}: each index", None) for x in n)
        if not 0 <= l < depth or not 0 <= k < out[l].shape[0]:
            raise ValueError(f"neurons: ({l}, {k}) is not a hidden neuron (layers 0..{depth - 1})")
        out[l][k, :] = 0
        out[l + 1][:, k] = 0
    return out


def alive_neurons(masks: Sequence[torch.Tensor]) -> list[torch.Tensor]:
    """Per hidden layer, a bool ``(width_l,)``: the neuron still has an incoming or an outgoing connection."""
    masks = _check_masks(masks, chain=True)
    return [(masks[l] != 0).any(dim=1) | (masks[l + 1] != 0).any(dim=0) for l in range(len(masks) - 1)]


def taylor_importance(model: CPPN, target, kind: str = "weight", res: int | None = None) -> list[torch.Tensor]:
    """First-order Taylor importance of each hidden neuron, ``(width_l,)`` per hidden layer (LLM-Pruner style).

    The loss ``L`` is the MSE of the render at ``res`` (default: the target's size) to the target. Neuron ``k`` of
    hidden layer ``l`` is the group {row ``k`` of ``W_l``, column ``k`` of ``W_{l+1}``}. Kinds:

    - ``"weight"`` (default, LLM-Pruner's vector-wise importance with sum aggregation): each member's
      ``|sum w dL/dw|`` (the first-order loss change when that vector alone is zeroed), summed over the two members;
    - ``"group"``: ``|sum over the whole group of w dL/dw|``, the first-order loss change when the neuron goes;
    - ``"activation"``: ``|sum over pixels of a dL/da|`` for the neuron's post-activation ``a`` (zeroing its output).
    """
    if kind not in TAYLOR_KINDS:
        raise ValueError(f"kind must be one of {TAYLOR_KINDS}, got {kind!r}")
    target = _target_at(target, res).to(model.mask0.dtype)
    coords = coordinate_grid(target.shape[0], dtype=model.mask0.dtype)
    ws = [w.detach().clone().requires_grad_(True) for w in model.effective_weights()]
    out, feats = model.forward(coords, ws, model.masks, return_features=True)
    for f in feats:
        f.retain_grad()
    loss = ((outputs_to_rgb(out, model.color) - target.reshape(-1, 3)) ** 2).mean()
    loss.backward()
    if kind == "activation":
        return [(f * f.grad).sum(dim=0).abs().detach() for f in feats]
    wg = [(w * w.grad).detach() for w in ws]
    incoming = [wg[l].sum(dim=1) for l in range(model.depth)]
    outgoing = [wg[l + 1].sum(dim=0) for l in range(model.depth)]
    if kind == "group":
        return [(i + o).abs() for i, o in zip(incoming, outgoing)]
    return [i.abs() + o.abs() for i, o in zip(incoming, outgoing)]


def structured_prune(model: CPPN, target, n_neurons: int | None = None, sparsity: float | None = None,
                     res: int | None = None, kind: str = "weight") -> list[torch.Tensor]:
    """Remove whole hidden neurons of lowest Taylor importance (:func:`taylor_importance`), with their in/out weights.

    Give ``n_neurons`` (how many to remove) or ``sparsity`` (remove neurons, in importance order, until the mask
    sparsity is closest to it). Our choices: one global ranking over all hidden layers, one-shot (no re-scoring),
    already-removed neurons are skipped, and a layer's last remaining neuron is never removed (the image would
    become constant). ``kind`` picks the importance (``"weight"``, ``"group"`` or ``"activation"``, see
    :func:`taylor_importance`), computed on ``target`` ``(H, W, 3)`` at ``res``. Returns masks.
    """
    if (n_neurons is None) == (sparsity is None):
        raise ValueError("give exactly one of n_neurons or sparsity")
    if sparsity is not None:
        sparsity = _check_fraction(sparsity, "sparsity")
    else:
        n_neurons = _check_count(n_neurons, "n_neurons", 0)
    masks = _current_masks(model)
    importance = taylor_importance(model, target, kind, res)
    alive = alive_neurons(masks)
    order = sorted(((float(importance[l][k]), l, k) for l in range(model.depth)
                    for k in range(model.widths[l]) if alive[l][k]))
    left = [int(a.sum()) for a in alive]
    chosen, best = [], []
    best_gap = abs(_sparsity(masks) - sparsity) if sparsity is not None else None
    for _, l, k in order:
        if n_neurons is not None and len(chosen) == n_neurons:
            break
        if left[l] <= 1:
            continue
        chosen.append((l, k))
        left[l] -= 1
        if sparsity is not None:
            reached = _sparsity(remove_neurons(masks, chosen))
            if abs(reached - sparsity) < best_gap:
                best, best_gap = list(chosen), abs(reached - sparsity)
            if reached >= sparsity:
                break
    if n_neurons is not None:
        if len(chosen) < n_neurons:
            raise ValueError(f"n_neurons={n_neurons}: only {len(chosen)} neurons can be removed "
                             f"(each layer keeps at least one)")
        best = chosen
    return remove_neurons(masks, best)


# -- similarity-based pruning (SP) -------------------------------------------------------------------------------
def neuron_similarity(model: CPPN, res: int = 32, absolute: bool = True, eps: float = 1e-6) -> list[torch.Tensor]:
    """Cosine similarity of the hidden neurons' feature maps, one ``(width_l, width_l)`` matrix per hidden layer.

    Each neuron's map is its post-activation over the ``res x res`` grid (:meth:`CPPN.feature_maps`), flattened
    and **not** centred (our choice: a constant offset is information the next layer uses like a bias).
    ``absolute=True`` (our default) uses ``|cos|``: a map and its negation are equally redundant, since the next
    layer can flip the sign. A map whose RMS is below ``eps`` carries nothing to compare: its similarities are set
    to 0 (our choice), so SP never pairs it. Values are clamped to [-1, 1].
    """
    res = _check_count(res, "res", 1)
    eps = checks.real(eps, "eps", 0)
    sims = []
    for maps in model.feature_maps(res):
        f = maps.reshape(maps.shape[0], -1).double()
        norm = f.norm(dim=1)
        live = norm > eps * math.sqrt(f.shape[1])
        u = f / torch.where(live, norm, torch.ones_like(norm))[:, None]
        sim = (u @ u.T).clamp(-1, 1) * (live[:, None] & live[None, :])
        sims.append(sim.abs() if absolute else sim)
    return sims


def redundant_pairs(similarity: torch.Tensor, threshold: float,
                    alive: torch.Tensor | None = None) -> list[tuple[int, int]]:
    """Pairs ``(i, j)``, ``i < j``, both alive, with ``similarity[i, j] > threshold``, most similar first."""
    threshold = checks.real(threshold, "threshold")
    similarity = checks.tensor(checks.instance(similarity, "similarity", torch.Tensor, " (n, n)"), "similarity",
                               (None, None))
    n = similarity.shape[0]
    if similarity.shape[1] != n:
        raise ValueError(f"similarity must be a square (n, n) matrix, got shape {tuple(similarity.shape)}")
    alive = torch.ones(n, dtype=torch.bool) if alive is None else \
        torch.as_tensor(checks.bools(torch.as_tensor(alive).cpu().numpy(), "alive", n))
    i, j = torch.triu_indices(n, n, offset=1)
    keep = (similarity[i, j] > threshold) & alive[i] & alive[j]
    i, j, s = i[keep], j[keep], similarity[i[keep], j[keep]]
    order = torch.argsort(-s, stable=True)
    return [(int(i[o]), int(j[o])) for o in order]


def choose_removals(pairs: Sequence[tuple[int, int]], generator: torch.Generator,
                    max_pairs: int | None = None) -> list[int]:
    """One neuron removed at random from each redundant pair taken this round (our rule for overlapping pairs).

    Pairs are taken in the given order (most similar first). A pair is taken only while both its neurons are
    untouched this round: not removed, not kept as a partner, not redundant with a removed neuron. So the removed
    set never contains both neurons of any redundant pair, and every removed neuron has a kept twin whose map it
    resembles. At most ``max_pairs`` pairs are taken (``None``: no limit). Returns the removed indices.
    """
    checks.instance(generator, "generator", torch.Generator)
    max_pairs = checks.optional_integer(max_pairs, "max_pairs", 0)
    pairs = checks.sequence(pairs, "pairs", 0)
    if pairs:
        idx = checks.integers(pairs, "pairs", 0, ndim=2)
        if idx.shape[1] != 2 or (idx[:, 0] == idx[:, 1]).any():
            raise ValueError(f"pairs must be (i, j) pairs of two distinct neurons, got {pairs!r:.80}")
        pairs = [tuple(p) for p in idx.tolist()]
    neighbours: dict[int, set[int]] = {}
    for i, j in pairs:
        neighbours.setdefault(i, set()).add(j)
        neighbours.setdefault(j, set()).add(i)
    removed, touched = [], set()
    for i, j in pairs:
        if max_pairs is not None and len(removed) >= max_pairs:
            break
        if i in touched or j in touched:
            continue
        victim, twin = (i, j) if torch.rand((), generator=generator) < 0.5 else (j, i)
        removed.append(victim)
        touched |= {victim, twin} | neighbours[victim]
    return removed


def _check_sp_args(threshold, rounds, retrain_steps, pairs_per_layer, absolute=True):
    """SP's settings. With ``absolute`` similarities are ``|cos|`` in [0, 1], so a negative threshold would make
    every pair redundant: ``threshold`` must be in [0, 1] then, in [-1, 1] otherwise."""
    absolute = checks.boolean(absolute, "absolute")
    checks.real(threshold, "threshold" + (" (on |cos|, absolute=True)" if absolute else ""), 0 if absolute else -1, 1)
    _check_count(rounds, "rounds", 0)
    _check_count(retrain_steps, "retrain_steps", 0)
    if pairs_per_layer is not None:
        _check_count(pairs_per_layer, "pairs_per_layer", 1)


def _streams(seed, n: int) -> list[int]:
    """SP's random streams for ``n`` models: ``seed + b`` for an integer ``seed``, else the list ``seed`` itself
    (one seed per model)."""
    if isinstance(seed, (str, bytes)) or not isinstance(seed, Sequence):
        seed = checks.seed(seed, "seed", -checks.SEED_MAX - 1)
        return [int(seed) + b for b in range(n)]
    if len(seed) != n:
        raise ValueError(f"seed: {len(seed)} seeds for {n} models (give one per model, or one integer)")
    return [int(checks.seed(s, f"seed[{b}]", -checks.SEED_MAX - 1)) for b, s in enumerate(seed)]


def similarity_prune_many(models: Sequence[CPPN], target, threshold: float = 0.8, rounds: int = 6,
                          retrain_steps: int = 100, lr: float = 3e-3, seed: int | Sequence[int] = 0,
                          res: int | None = None,
                          absolute: bool = True, pairs_per_layer: int | None = None,
                          optimizer: str | OptimizerFactory = "adam", progress: bool = False) -> list[PruneResult]:
    """:func:`similarity_prune` for several models of one architecture at once (retrained with ``fit_many``).

    Model ``b`` uses the random stream ``seed + b``, so ``similarity_prune_many([m], ..., seed=s)[0]`` equals
    ``similarity_prune(m, ..., seed=s)``; ``seed`` a list gives one stream per model (``seed[b]``: any subset of
    a batch prunes as it does in the whole batch). A model stops on its own when a round finds no redundant pair.
    """
    _check_sp_args(threshold, rounds, retrain_steps, pairs_per_layer, absolute)
    if len(models) < 1:
        raise ValueError("models: need at least one model")
    streams = _streams(seed, len(models))
    target = _target_at(target, None)
    res = target.shape[0] if res is None else _check_count(res, "res", 1)
    gens = [torch.Generator().manual_seed(s) for s in streams]
    current = list(models)
    hist = [dict(s=[_sparsity(m.masks)], l=[mse(m, target)], removed=[], curve=[]) for m in models]
    active = list(range(len(models)))
    for _ in range(rounds):
        pruned = {}
        for b in active:
            masks = _current_masks(current[b])
            alive = alive_neurons(masks)
            sims = neuron_similarity(current[b], res, absolute)
            gone = [(l, k) for l, sim in enumerate(sims)
                    for k in choose_removals(redundant_pairs(sim, threshold, alive[l]), gens[b], pairs_per_layer)]
            if gone:
                pruned[b] = (current[b].clone_with(masks=remove_neurons(masks, gone)), gone)
        active = sorted(pruned)
        if not active:
            break
        batch = [pruned[b][0] for b in active]
        fitted = fit_many(batch, target, retrain_steps, lr, optimizer, progress=progress) if retrain_steps else None
        for n, b in enumerate(active):
            current[b] = fitted.models[n] if fitted else batch[n]
            h = hist[b]
            h["s"].append(_sparsity(current[b].masks))
            h["l"].append(float(fitted.final_loss[n]) if fitted else mse(current[b], target))
            h["removed"].append(pruned[b][1])
            if fitted:
                h["curve"].append(fitted.losses[:, n])
    cfg = dict(method="similarity_prune", threshold=threshold, rounds=rounds, retrain_steps=retrain_steps, lr=lr,
               res=res, absolute=absolute, pairs_per_layer=pairs_per_layer)
    return [PruneResult(current[b], [m.clone() for m in current[b].masks], h["s"], h["l"], h["removed"],
                        np.concatenate(h["curve"]) if h["curve"] else np.zeros(0), dict(cfg, seed=streams[b]))
            for b, h in enumerate(hist)]


def similarity_prune(model: CPPN, target, threshold: float = 0.8, rounds: int = 6, retrain_steps: int = 100,
                     lr: float = 3e-3, seed: int = 0, res: int | None = None, absolute: bool = True,
                     pairs_per_layer: int | None = None, optimizer: str | OptimizerFactory = "adam",
                     progress: bool = False) -> PruneResult:
    """Similarity-based pruning (SP, paper A): remove redundant neurons, retrain, repeat.

    Each round, per hidden layer: the cosine similarity of the alive neurons' feature maps over a ``res x res`` grid
    (:func:`neuron_similarity`; default ``res``: the target's size); pairs above ``threshold`` are redundant
    (:func:`redundant_pairs`); from each pair one neuron, chosen at random, is removed, i.e. its incoming row and
    outgoing column are zeroed (:func:`choose_removals`, :func:`remove_neurons`); then the network is retrained on
    ``target`` ``(H, W, 3)`` for ``retrain_steps`` steps (:func:`compbook.cppn.train.fit`'s recipe, masks respected).
    That much is the paper's. Our choices, all parameters: ``threshold=0.8`` on ``|cos|`` (``absolute=True``),
    uncentred maps, zero maps never paired, pairs taken most-similar-first without overlap (at most
    ``pairs_per_layer`` per layer a round), ``rounds=6`` of ``retrain_steps=100`` Adam steps at ``lr=3e-3``, and the
    stopping rule: stop after ``rounds`` rounds or as soon as a round finds no redundant pair (no retraining then).
    Why 0.8 (measured on a dense 6 x 16 CPPN fitted to the 32 x 32 skull for 800 steps, chapter 6): at 0.9 SP
    stops after 3 rounds with 17% of the weights removed; at 0.8 six rounds remove 72% (MSE 0.025 against the
    dense 0.014); at 0.7 eight rounds remove 96% and the loss doubles again.

    ``model`` is a trained network (SP prunes what training built); ``seed`` fixes the random choices.
    Returns a :class:`PruneResult`: the retrained pruned model, its masks, and per round the sparsity, the loss
    after retraining and the ``(layer, neuron)`` pairs removed. ``rounds=0`` returns the model unchanged.
    """
    return similarity_prune_many([model], target, threshold, rounds, retrain_steps, lr, seed, res, absolute,
                                 pairs_per_layer, optimizer, progress)[0]


def most_similar(model: CPPN, res: int = 32) -> float:
    """The largest :func:`neuron_similarity` between two alive neurons of one hidden layer (chapter 6: how much
    redundancy retraining leaves after each pruning method)."""
    alive = alive_neurons(model.masks)
    sims = neuron_similarity(model, res)
    return max(float((s * a[:, None] * a[None, :]).triu(1).max()) for s, a in zip(sims, alive))
