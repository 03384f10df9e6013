"""The volume ratio rho(W, L): how much of a width-W, depth-L network's connectivity space computes a target
compositionally (chapter 3).

:class:`LayeredDAG` is a target DAG in layers (:func:`dag_from_genome` for a Picbreeder genome); :func:`log_rho`
is the closed form of our model of rho(W, L), :func:`rho_exact` enumerates every mask, :func:`rho_monte_carlo`
samples them; :func:`log_relabelling_bound` counts the target's other placements. :class:`VolumeConfig`,
:func:`log10_rho_grid` and :func:`relabelling_peak` are the chapter's settings and sweeps. Pure functions on numpy
arrays. Frames and the Welch bound (chapters 2 and 4) are :mod:`compbook.cppn.frames`.

The rho model (our choice; chapter 3 states and derives it). A configuration of a width-W, depth-L network
(``n_in`` inputs, L hidden layers of W units, ``n_out`` outputs) is a connectivity mask with every possible edge
between consecutive layers present independently with probability ``p``. The target sits at a canonical place:
its layer-l units are units ``0..w_l-1`` of hidden layer l, and the L - L* surplus layers are identity copies of
its last hidden layer. A unit is *live* when a path of present edges leads from it to an output. The mask is in
the compositional basin when its live edges (present edges into live units) are exactly the embedded target's
edges: every target edge present, nothing else feeding the computation; surplus units may do anything as long as
nobody live reads them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .. import checks
from ..config import ModeConfig

_positive_int = checks.integer


# -- the volume ratio rho(W, L) (chapter 3) -----------------------------------------------------------------------
@dataclass(frozen=True, eq=False)                 # eq=False: arrays do not compare or hash as values
class LayeredDAG:
    """A target DAG in layers: ``masks[l] (out, in)`` bool for l = 0..L*, ``masks[0]`` reads the n_in inputs,
    ``masks[L*]`` is the output layer. Every unit must be live (have a path to an output): see :meth:`trimmed`."""
    masks: tuple[np.ndarray, ...]

    def __post_init__(self):
        masks = tuple(np.asarray(m).astype(bool) for m in self.masks)
        if len(masks) < 2:
            raise ValueError(f"LayeredDAG needs >= 1 hidden layer (>= 2 masks), got {len(masks)}")
        for l, m in enumerate(masks):
            if m.ndim != 2 or min(m.shape) < 1:
                raise ValueError(f"LayeredDAG: mask {l} must be a non-empty (out, in) matrix, got shape {m.shape}")
            if l and m.shape[1] != masks[l - 1].shape[0]:
                raise ValueError(f"LayeredDAG: mask {l} reads {m.shape[1]} units but layer {l} has "
                                 f"{masks[l - 1].shape[0]}")
        object.__setattr__(self, "masks", masks)
        dead = [(l + 1, i) for l, alive in enumerate(live_units(masks)[1:-1]) for i in np.flatnonzero(~alive)]
        if dead:
            raise ValueError(f"LayeredDAG: units {dead[:5]} (layer, index) reach no output; use .trimmed()")

    @classmethod
    def trimmed(cls, masks) -> "LayeredDAG":
        """Drop hidden units with no path to an output, then build the DAG."""
        masks = [np.asarray(m).astype(bool) for m in masks]
        keep = live_units(masks)
        out = [m[keep[l + 1]][:, keep[l]] for l, m in enumerate(masks)]
        return cls(tuple(out))

    @property
    def n_in(self) -> int:
        return self.masks[0].shape[1]

    @property
    def n_out(self) -> int:
        return self.masks[-1].shape[0]

    @property
    def widths(self) -> list[int]:
        """Hidden-layer widths w_1..w_{L*}."""
        return [m.shape[0] for m in self.masks[:-1]]

    @property
    def depth(self) -> int:
        """L*: the number of hidden layers."""
        return len(self.masks) - 1

    @property
    def width(self) -> int:
        """W_min: the widest hidden layer."""
        return max(self.widths)

    @property
    def n_edges(self) -> int:
        return int(sum(m.sum() for m in self.masks))


def live_units(masks) -> list[np.ndarray]:
    """Per layer (inputs first, outputs last), bool ``(..., width)``: units with a path of edges to an output.

    ``masks[l] (..., out, in)`` bool, with optional leading batch dimensions.
    """
    masks = [np.asarray(m, dtype=bool) for m in masks]
    live = [np.ones(masks[-1].shape[:-1], dtype=bool)]
    for m in masks[::-1]:
        live.insert(0, (m & live[0][..., :, None]).any(axis=-2))
    return live


def dag_from_genome(genome) -> LayeredDAG:
    """The layered target of a Picbreeder genome: :func:`compbook.cppn.picbreeder.layerize` (no padding), trimmed."""
    from .picbreeder import layerize
    model = layerize(genome, pad_to_width=False)
    return LayeredDAG.trimmed([m.numpy() != 0 for m in model.masks])


def network_shapes(target: LayeredDAG, W: int, L: int) -> list[tuple[int, int]]:
    """``(out, in)`` of every layer of the width-W, depth-L network with the target's inputs and outputs."""
    W, L = _positive_int(W, "W"), _positive_int(L, "L")
    checks.instance(target, "target", LayeredDAG)
    # a tuple of two ints and a list slot per layer (measured 88 bytes)
    checks.check_budget(96.0 * L, f"the layer list of a network of width W={W} and depth L={L}")
    sizes = [target.n_in] + [W] * L + [target.n_out]
    return list(zip(sizes[1:], sizes[:-1]))


def embed(target: LayeredDAG, W: int, L: int) -> list[np.ndarray]:
    """The target at its canonical place in a width-W, depth-L network: bool masks of :func:`network_shapes`.

    Target layer l -> units 0..w_l-1 of hidden layer l; layers L*+1..L copy units 0..w_{L*}-1 one to one; the
    output layer reads them as the target's output layer reads layer L*. ValueError if W < W_min or L < L*.
    """
    shapes = network_shapes(target, W, L)
    checks.check_budget(float(sum(a * b for a, b in shapes)), f"embed: the masks of width W={W}, depth L={L}")
    if W < target.width or L < target.depth:
        raise ValueError(f"embed: the target (W_min={target.width}, L*={target.depth}) does not fit in "
                         f"W={W}, L={L}")
    out = [np.zeros(s, dtype=bool) for s in shapes]
    for l, m in enumerate(target.masks[:-1]):
        out[l][: m.shape[0], : m.shape[1]] = m
    last = target.widths[-1]
    for l in range(target.depth, L):
        out[l][np.arange(last), np.arange(last)] = True
    out[-1][:, :last] = target.masks[-1]
    return out


def in_basin(masks, target: LayeredDAG, W: int, L: int) -> np.ndarray:
    """Bool ``(B,)``: which of B masks (``masks[l] (B, out, in)``) are in the compositional basin (module doc).

    Straight from the definition: the live edges (present edges into live units) equal the embedded target.
    """
    masks = [np.asarray(m, dtype=bool) for m in masks]
    shapes = network_shapes(target, W, L)
    if [m.shape[1:] for m in masks] != shapes:
        raise ValueError(f"in_basin: mask shapes {[m.shape for m in masks]} must be (B, out, in) with {shapes}")
    if W < target.width or L < target.depth:
        return np.zeros(masks[0].shape[0], dtype=bool)
    live = live_units(masks)
    ok = np.ones(masks[0].shape[0], dtype=bool)
    for l, (m, e) in enumerate(zip(masks, embed(target, W, L))):
        ok &= ((m & live[l + 1][:, :, None]) == e).all(axis=(1, 2))
    return ok


def log_rho(target: LayeredDAG, W: int, L: int, p: float = 0.5) -> float:
    """Closed form of ln rho(W, L) in our model (-inf when W < W_min or L < L*).

    rho = p^E(L) (1-p)^K(W, L): the E(L) = |E_T| + (L - L*) w_{L*} embedded edges present, and the
    K = n_in w_1 + W U(L) - E(L) other edges into live units absent, where U(L) = w_2 + ... + w_{L*}
    + (L - L*) w_{L*} + n_out counts the live units that read a hidden layer.
    """
    _check_p(p)
    W, L = _positive_int(W, "W"), _positive_int(L, "L")
    if W < target.width or L < target.depth:
        return -math.inf
    E, U = _edges_and_readers(target, L)
    K = target.n_in * target.widths[0] + W * U - E
    return E * math.log(p) + K * math.log1p(-p)


def _edges_and_readers(target: LayeredDAG, L: int) -> tuple[int, int]:
    extra = L - target.depth
    E = target.n_edges + extra * target.widths[-1]
    U = sum(target.widths[1:]) + extra * target.widths[-1] + target.n_out
    return E, U


def rho(target: LayeredDAG, W: int, L: int, p: float = 0.5) -> float:
    """rho(W, L) = exp(:func:`log_rho`) (underflows to 0 for large networks: plot :func:`log_rho` instead)."""
    return math.exp(log_rho(target, W, L, p))


def width_decay_rate(target: LayeredDAG, L: int, p: float = 0.5) -> float:
    """-d ln rho / dW at depth L (exact per unit of width, W >= W_min): U(L) ln(1/(1-p))."""
    _check_p(p)
    return _edges_and_readers(target, _positive_int(L, "L"))[1] * -math.log1p(-p)


def depth_decay_rate(target: LayeredDAG, W: int, p: float = 0.5) -> float:
    """-d ln rho / dL at width W (exact per extra layer, L >= L*): w_{L*} (ln(1/p) + (W - 1) ln(1/(1-p)))."""
    _check_p(p)
    W = _positive_int(W, "W")
    return target.widths[-1] * (-math.log(p) - (W - 1) * math.log1p(-p))


def log_relabelling_bound(target: LayeredDAG, W: int, L: int) -> float:
    """ln of an upper bound on how many placements of the target a width-W, depth-L network has (0 if none fits).

    Our rho fixes one canonical placement. Any injective map of each layer's w_l target units (and of the copy
    layers' w_{L*} units) to the W slots is equally compositional: sum_l ln(W! / (W - w_l)!) over the L hidden
    layers. Counting each as a separate basin over-counts (placements overlap), so ln rho + this is an upper bound
    on the log of a placement-free rho. It grows like (sum_l w_l) ln W: slower than the exponential decay.
    """
    W, L = _positive_int(W, "W"), _positive_int(L, "L")
    if W < target.width or L < target.depth:
        return 0.0
    widths = target.widths + [target.widths[-1]] * (L - target.depth)
    return float(sum(math.lgamma(W + 1) - math.lgamma(W - w + 1) for w in widths))


def _check_p(p) -> float:
    return checks.real(p, "p (edge probability)", 0, 1, low_open=True, high_open=True)


MAX_ENUMERATED_EDGES = 22


def rho_exact(target: LayeredDAG, W: int, L: int, p: float = 0.5, chunk: int = 2**16) -> float:
    """rho by brute force: the p-weighted sum over all 2^N masks of the network that :func:`in_basin` accepts.

    Independent of the closed form: only the basin's definition is used. N (possible edges) <= 22.
    """
    _check_p(p)
    chunk = _positive_int(chunk, "chunk")
    shapes = network_shapes(target, W, L)
    sizes = [a * b for a, b in shapes]
    N = sum(sizes)
    if N > MAX_ENUMERATED_EDGES:
        raise ValueError(f"rho_exact: {N} possible edges is too many to enumerate (max {MAX_ENUMERATED_EDGES})")
    total, bits = 0.0, np.arange(N)
    for start in range(0, 2**N, chunk):
        codes = np.arange(start, min(start + chunk, 2**N), dtype=np.int64)
        flat = (codes[:, None] >> bits) & 1 == 1                             # (B, N)
        splits = np.split(flat, np.cumsum(sizes)[:-1], axis=1)
        ok = in_basin([s.reshape(-1, *sh) for s, sh in zip(splits, shapes)], target, W, L)
        n_on = flat[ok].sum(axis=1)
        total += float(np.sum(p ** n_on * (1 - p) ** (N - n_on)))
    return total


def rho_monte_carlo(target: LayeredDAG, W: int, L: int, p: float = 0.5, n: int = 100_000,
                    seed: int = 0, chunk: int = 20_000) -> tuple[float, float]:
    """(estimate, standard error) of rho from n random masks (edges i.i.d. Bernoulli(p)).

    The standard error is sqrt(rho_hat (1 - rho_hat) / n); plain sampling, so only useful where rho >~ 10/n.
    """
    _check_p(p)
    n = _positive_int(n, "n")
    seed, chunk = checks.seed(seed), _positive_int(chunk, "chunk")
    shapes = network_shapes(target, W, L)
    checks.check_budget(9.0 * min(chunk, n) * sum(a * b for a, b in shapes),
                        f"rho_monte_carlo: chunk={chunk} masks at a time")
    rng, hits = np.random.default_rng(seed), 0
    for start in range(0, n, chunk):
        b = min(chunk, n - start)
        hits += int(in_basin([rng.random((b, *s)) < p for s in shapes], target, W, L).sum())
    est = hits / n
    return est, math.sqrt(est * (1 - est) / n)


# -- the chapter's settings and sweeps (chapter 3) ------------------------------------------------------------------
@dataclass
class VolumeConfig(ModeConfig):
    """Chapter 3's knobs (our choices): each edge present with probability ``p_edge``; ``n_mc`` Monte Carlo
    masks per case (full mode: 2,000,000)."""
    p_edge: float = 0.5
    n_mc: int = 200_000
    FULL = dict(n_mc=2_000_000)
    SMOKE = dict(n_mc=20_000)


def log10_rho_grid(target: LayeredDAG, Ws: Sequence[int], Ls: Sequence[int], p: float = 0.5) -> np.ndarray:
    """Chapter 3: ``(len(Ls), len(Ws))`` array of log10 rho(W, L) (:func:`log_rho`; -inf where the target does not
    fit), rows = depths, columns = widths."""
    return np.array([[log_rho(target, W, L, p) for W in Ws] for L in Ls]) / math.log(10)


def relabelling_peak(target: LayeredDAG, p: float = 0.5, span: int = 10) -> dict:
    """Chapter 3: where ln rho + :func:`log_relabelling_bound` peaks on the ``span`` x ``span`` grid from
    (W_min, L*), and what one unit of width above W_min gains in placements and loses in rho (nats)."""
    w0, l0 = target.width, target.depth
    bound = {(W, L): log_rho(target, W, L, p) + log_relabelling_bound(target, W, L)
             for W in range(w0, w0 + span) for L in range(l0, l0 + span)}
    return {"peak": max(bound, key=bound.get),
            "gain": log_relabelling_bound(target, w0 + 1, l0) - log_relabelling_bound(target, w0, l0),
            "loss": width_decay_rate(target, l0, p)}
