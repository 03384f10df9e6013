"""EMC2-Bench: the compositional score of a CPPN, and a fast engine that renders its perturbations (chapter 5).

Paper A's definition (fact): for every non-zero weight ``w`` of a network, render the image with ``w' = w + delta``
and ask a judge whether it still shows the same thing ("still a skull"); the compositional score is the fraction
of weights whose perturbed render the judge accepts.

Our choices, all parameters: ``delta`` (default 0.5), the resolution (default 64), the sign policy ("plus", the
paper's ``w + delta``, is the default; "both" and "noise" are opt-in, see :data:`POLICIES`), and every non-zero
*effective* weight counts, the output layer's included (so a layerized Picbreeder network's "cache" copy links
count too: they are weights of the layered network).

The fast engine (``engine="fast"``) gives the naive method's images (``perturbed`` copy, then ``render``) up to
float rounding (float32: ~1e-5 at worst, the naive render's own rounding; float64: ~1e-14), with these facts about
one perturbed weight ``(l, o, i)``:

1. it changes only neuron ``o``'s pre-activation in layer ``l``, by ``d * h_{l-1}[i]`` (layer ``l``'s input):
   layers before ``l`` are computed once for all perturbations (the *base pass*);
2. layer ``l + 1`` then sees a rank-1 change: ``z_{l+1} += W_{l+1}[:, o] * (a_new - a_old)``;
3. the later layers run for many perturbed networks at once, one matmul per layer on stacked activations
   ``(width, B, N)`` (neurons-major: ``W @ h``), B sized so that a step stays in cache;
4. in a sparse network only the neurons the change can reach through non-zero weights (and that reach the output)
   are computed; the part of their input that comes from unreached neurons is the same for every perturbation and
   computed once. Perturbations of the same source neuron share one such sub-network (a *group*); consecutive
   source neurons of a layer share one when that is cheaper (a dense layer is one group).

Weights are visited in lexicographic ``(layer, out, in)`` order and the judge is called ``batch_size`` renders at a
time in that order, by both engines alike.
"""

from __future__ import annotations

import copy
import math
import time
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import torch
from tqdm.auto import tqdm

from .. import checks
from .data.store import content_hash
from .verdicts import ask_judge, on_scoring_device, streamed_verdicts
from .network import ACTIVATIONS, CPPN, active_runs, coordinate_grid, grouped_layout, outputs_to_rgb

#: Sign policies (our choice; "plus" is the paper's definition):
#:
#: - "plus":  one render per weight with w + delta;
#: - "both":  two renders per weight, w + delta then w - delta, *counted separately* (each is one verdict; the
#:   score is the fraction of the 2 M perturbations kept, not "both kept");
#: - "noise": one render per weight with w + delta * N(0, 1), seeded (the same seed gives the same deltas).
POLICIES = ("plus", "both", "noise")
ENGINES = ("fast", "naive")


# -- what is perturbed ------------------------------------------------------------------------------------------
def nonzero_weights(model: CPPN) -> list[tuple[int, int, int]]:
    """Every non-zero effective weight ``(layer, out, in)``, in lexicographic order (output layer included)."""
    checks.instance(model, "model", CPPN, " (layerize a genome first)")
    out = []
    for l, w in enumerate(model.effective_weights()):
        out += [(l, int(o), int(i)) for o, i in (w.detach() != 0).nonzero().tolist()]
    return out


def perturbation_plan(model: CPPN, delta: float = 0.5, policy: str = "plus", seed: int = 0,
                      sample: int | None = None) -> tuple[list[tuple[int, int, int]], torch.Tensor]:
    """The perturbations a score evaluates: ``(weights, deltas)``, one entry per render.

    ``weights`` is a list of ``(layer, out, in)`` (a weight appears twice, +delta then -delta, under "both");
    ``deltas`` a float64 tensor of the same length (under "noise" ``delta * N(0, 1)`` drawn from ``seed``, one
    value per non-zero weight). ``sample`` (our choice for quick CPU runs; None, the paper's definition, takes
    them all) keeps a seeded uniform random sample of that many weights, in the same order and with the same
    deltas they have in the full plan, so their questions (and cached verdicts) are the full plan's.

    ``delta`` must be a finite non-zero number (``delta=0`` perturbs nothing: every judge would keep every
    image, a meaningless score of 1), and ``w + delta`` must stay finite in the model's dtype.
    """
    delta = checks.real(delta, "delta", nonzero=True)
    policy = checks.choice(policy, "policy", POLICIES)
    seed = checks.seed(seed)
    sample = checks.optional_integer(sample, "sample")
    weights = nonzero_weights(model)
    if policy == "noise":
        g = torch.Generator().manual_seed(int(seed))
        deltas = float(delta) * torch.randn(len(weights), generator=g, dtype=torch.float64)
    else:
        deltas = torch.full((len(weights),), float(delta), dtype=torch.float64)
    if sample is not None:
        if sample < len(weights):
            g = torch.Generator().manual_seed(int(seed) + 7919)  # its own stream, apart from the noise
            keep = torch.randperm(len(weights), generator=g)[:sample].sort().values
            weights, deltas = [weights[j] for j in keep.tolist()], deltas[keep]
    if policy == "both":
        weights = [w for w in weights for _ in (1, -1)]
        deltas = torch.stack([deltas, -deltas], 1).reshape(-1)
    return weights, deltas


def perturbed(model: CPPN, weight: tuple[int, int, int], delta: float) -> CPPN:
    """The naive method: a deep copy of ``model`` with ``weight = (layer, out, in)`` changed to ``w + delta``."""
    l, o, i = _check_weight(model, weight)
    _check_delta(delta)
    new = copy.deepcopy(model)
    with torch.no_grad():
        new.weights[l][o, i] = _new_value(model, (l, o, i), delta)
    return new


def _new_value(model: CPPN, weight, delta: float) -> torch.Tensor:
    """``w + delta`` as the float op both engines use (same rounding: a 0-dim tensor of the model's dtype);
    ``ValueError`` naming ``delta`` when the sum overflows that dtype."""
    l, o, i = weight
    new = model.weights[l].detach()[o, i] + float(delta)
    if not bool(torch.isfinite(new)):
        raise ValueError(f"delta={float(delta):g}: weight {tuple(weight)} + delta overflows {new.dtype} "
                         f"(got {float(new)}); use a smaller delta")
    return new


# -- the naive engine -------------------------------------------------------------------------------------------
@torch.no_grad()
def _render_naive(model: CPPN, weights, deltas, res: int) -> torch.Tensor:
    """One deep copy and one full render per perturbation: images ``(M, res, res, 3)``."""
    return torch.stack([perturbed(model, w, float(d)).render(res) for w, d in zip(weights, deltas)])


# -- the fast engine: base pass ---------------------------------------------------------------------------------
# Layout: the fast engine keeps activations neurons-major, (neurons, N) or (neurons, B, N) with N = res * res
# pixels, so a layer is ``W @ h`` (measured on CPU: ~10x faster than ``h @ W.T`` for these narrow layers, whose
# pixels-major matmuls have a tiny inner dimension), and a neuron's pixels are contiguous.
@dataclass
class _Base:
    """The unperturbed network on the pixel grid, everything the fast engine reuses."""
    res: int
    weights: list[torch.Tensor]   # effective weights W_l (out, in)
    inputs: list[torch.Tensor]    # inputs[l] = layer l's input (in_l, N): coordinates, then h_{l-1}
    pre: list[torch.Tensor]       # pre[l] = z_l (out_l, N); pre[depth] is the raw output
    nonzero: list[np.ndarray]     # nonzero[l]: bool (out_l, in_l), W_l != 0
    live: list[np.ndarray]        # live[l]: bool (out_l,), the neurons with a non-zero path to the output
    reach: dict = field(default_factory=dict)    # (l, o) -> reach of one source neuron (see _reach)
    groups: dict = field(default_factory=dict)   # (l, sources) -> _Group


@torch.no_grad()
def _base_pass(model: CPPN, res: int) -> _Base:
    ws = [w.detach() for w in model.effective_weights()]
    h = coordinate_grid(res, dtype=ws[0].dtype, device=ws[0].device).T.contiguous()   # (4, N)
    inputs, pre = [], []
    for l, w in enumerate(ws):
        inputs.append(h)
        z = w @ h
        pre.append(z)
        if l < model.depth:
            h = model.hidden[l](z.T).T.contiguous()   # the model's own activation module (last dim = neurons)
    nonzero = [(w != 0).cpu().numpy() for w in ws]
    live = [np.ones(ws[-1].shape[0], dtype=bool)]
    for nz in reversed(nonzero[1:]):  # a neuron is live when a non-zero weight links it to a live neuron
        live.insert(0, nz[live[0]].any(0))
    return _Base(res, ws, inputs, pre, nonzero, live)


def _reach(base: _Base, layer: int, sources: Sequence[int]) -> list[np.ndarray]:
    """Bool masks of the live neurons of layers ``layer+1 .. depth`` that a change of ``sources`` (neurons of
    ``layer``) reaches through non-zero weights. Reach is a union over sources, so single ones are cached."""
    if len(sources) > 1:
        return [np.logical_or.reduce(m) for m in zip(*(_reach(base, layer, (o,)) for o in sources))]
    key = (layer, sources[0])
    if key not in base.reach:
        cur = np.zeros(base.nonzero[layer].shape[0], dtype=bool)
        cur[sources[0]] = True
        rows = []
        for k in range(layer + 1, len(base.weights)):
            cur = base.nonzero[k][:, cur].any(1) & base.live[k]
            rows.append(cur)
        base.reach[key] = rows
    return base.reach[key]


# -- the fast engine: groups of perturbations sharing a downstream sub-network ----------------------------------
@dataclass
class _Group:
    """Perturbations of some source neurons of one layer, rendered together, on their reachable neurons only.

    For layer ``k = layer + 1 + j``: ``rows[j]`` its reached neurons, ordered so that equal activations are
    contiguous (``runs[j]``: ``(name, start, stop)``; empty for the output layer); ``w[j] = W_k[rows[j],
    rows[j-1]]`` (j >= 1); ``const[j]`` the part of ``z_k[rows[j]]`` that comes from neurons of layer ``k - 1``
    no perturbation of the group reaches (the same for every step, so computed once; None when there is none).
    The first reached layer gets a rank-1 change: ``pre0 = z_{layer+1}[rows[0]]``, ``w0 = W_{layer+1}[rows[0]]``.
    """
    layer: int
    rows: list[torch.Tensor]
    runs: list[list[tuple[str, int, int]]]
    pre0: torch.Tensor | None
    w0: torch.Tensor | None
    w: list[torch.Tensor | None]
    const: list[torch.Tensor | None]


def _ordered_rows(model: CPPN, k: int, mask: np.ndarray, device):
    """Neurons of layer ``k`` in ``mask``, sorted by activation, and their activation runs (none if output)."""
    idx = mask.nonzero()[0].tolist()
    if k == model.depth:
        return torch.tensor(idx, device=device), []
    order, runs = grouped_layout([model.activations[k][j] for j in idx])
    return torch.tensor([idx[o] for o in order], device=device), active_runs(runs)


def _make_group(model: CPPN, base: _Base, layer: int, sources: tuple[int, ...]) -> _Group:
    """Gather, once, what every step of this group needs (see :class:`_Group`)."""
    masks = _reach(base, layer, sources)
    if not masks or not masks[0].any():  # an output weight, or a dead source: nothing downstream changes
        return _Group(layer, [], [], None, None, [], [])
    device = base.weights[0].device
    rows, runs = zip(*(_ordered_rows(model, layer + 1 + j, m, device) for j, m in enumerate(masks)))
    w, const = [None], [None]
    for j in range(1, len(rows)):
        k = layer + 1 + j
        wk = base.weights[k][rows[j]]                                   # (|rows_j|, width_{k-1})
        w.append(wk[:, rows[j - 1]].contiguous())
        others = np.nonzero(~masks[j - 1] & base.nonzero[k][masks[j]].any(0))[0].tolist()
        const.append(wk[:, others] @ base.inputs[k][others] if others else None)
    return _Group(layer, list(rows), list(runs), base.pre[layer + 1][rows[0]], base.weights[layer + 1][rows[0]],
                  w, const)


def _macs(masks: list[np.ndarray]) -> int:
    """Multiply-adds per pixel for one perturbation: rank-1 at the first reached layer, then one small matmul
    and one activation per reached neuron (a cost model for grouping, not a measurement)."""
    n = [int(m.sum()) for m in masks]
    return (n[0] if n else 0) + sum(b * (a + 1) for a, b in zip(n, n[1:]))


#: Values (perturbations x neurons x pixels) one step holds per layer: small enough to stay in a CPU core's
#: cache (measured: much larger batches are slower, not faster). At 64x64 and width 22, 4 networks at once.
VALUES_PER_STEP = 2**18
#: The fixed cost of one layer step (Python, dispatch, small tensors) in multiply-add equivalents, tuned on CPU
#: runs here (Picbreeder skull and apple, a dense 12 x 22 network, 64x64): it decides when giving two source
#: neurons one shared group (computing the union of their reach) beats a group each. Only speed depends on it.
STEP_OVERHEAD_MACS = 3e6


def _step_size(masks, res: int) -> int:
    """How many perturbed networks one step of a group with these reach masks renders together."""
    width = max([int(m.sum()) for m in masks] + [1])
    return max(1, VALUES_PER_STEP // (width * res * res))


def _group_cost(masks, n_items: int, res: int) -> float:
    steps = math.ceil(n_items / _step_size(masks, res))
    return steps * STEP_OVERHEAD_MACS * (len(masks) + 1) + n_items * res * res * _macs(masks)


def _plan_groups(model: CPPN, base: _Base, weights) -> list[tuple[int, int, int, _Group]]:
    """Cut the perturbation list into runs ``(start, stop, step, group)`` of consecutive entries.

    Runs follow the list's order, so the judge always sees perturbations in ``weights`` order. Entries that
    perturb the same source neuron ``(l, o)`` share a run; within one layer the next source neuron joins the
    current run when the merged group (its reach is the union) costs less than two groups (:func:`_group_cost`).
    Dense layers become one group per layer; sparse ones one group per neuron or a few.
    """
    by_source, start = [], 0
    for j in range(1, len(weights) + 1):
        if j == len(weights) or weights[j][:2] != weights[start][:2]:
            by_source.append((start, j))
            start = j
    runs, cur = [], None  # cur = [start, stop, layer, sources, reach masks]
    for s, e in by_source:
        l, o = weights[s][:2]
        masks = _reach(base, l, (o,))
        if cur is not None and cur[2] == l and o not in cur[3]:
            merged = [a | b for a, b in zip(cur[4], masks)]
            apart = _group_cost(cur[4], cur[1] - cur[0], base.res) + _group_cost(masks, e - s, base.res)
            if _group_cost(merged, e - cur[0], base.res) <= apart:
                cur = [cur[0], e, l, cur[3] + (o,), merged]
                continue
        if cur is not None:
            runs.append(cur)
        cur = [s, e, l, (o,), masks]
    runs += [cur] if cur is not None else []
    for _, _, l, sources, _ in runs:
        if (l, sources) not in base.groups:
            base.groups[(l, sources)] = _make_group(model, base, l, sources)
    return [(s, e, _step_size(masks, base.res), base.groups[(l, sources)]) for s, e, l, sources, masks in runs]


def _activate_columns(z: torch.Tensor, names: Sequence[str]) -> torch.Tensor:
    """Apply activation ``names[b]`` to row ``z[b]`` of ``z`` ``(B, N)`` (one neuron per row)."""
    if len(set(names)) == 1:
        return ACTIVATIONS[names[0]](z)
    out = torch.empty_like(z)
    for name in set(names):
        idx = torch.tensor([b for b, n in enumerate(names) if n == name], device=z.device)
        out[idx] = ACTIVATIONS[name](z[idx])
    return out


@torch.no_grad()
def _render_step(model: CPPN, base: _Base, group: _Group, weights, new_values: torch.Tensor) -> torch.Tensor:
    """Images ``(B, res, res, 3)`` of B perturbations of ``group``'s sources: ``weights[b]`` set to
    ``new_values[b]``. Tensors below are ``(neurons, B, N)`` (so a layer is one matmul ``W @ h`` on a
    ``(neurons, B * N)`` view) or ``(B, N)``, N = res * res pixels."""
    l, depth, B = group.layer, model.depth, len(weights)
    o = torch.tensor([w[1] for w in weights], device=new_values.device)
    i = torch.tensor([w[2] for w in weights], device=new_values.device)
    d = new_values - base.weights[l][o, i]                                  # (B,) change of each weight
    z = base.pre[l][o] + d[:, None] * base.inputs[l][i]                     # (B, N) neuron o's new z_l
    out = base.pre[depth][:, None, :].expand(-1, B, -1).clone()             # (n_out, B, N), from the base
    if l == depth:                                                          # an output weight: done
        out[o, torch.arange(B, device=z.device)] = z
    elif group.rows:                                                        # (no rows: o is dead, out = base)
        a = _activate_columns(z, [model.activations[l][j] for j in o.tolist()])
        diff = a - base.inputs[l + 1][o]                                          # (B, N) change of neuron o
        # layer l+1: a rank-1 change per perturbation, column o of W_{l+1} (reached rows) times diff
        zk = group.pre0[:, None, :] + group.w0[:, o][:, :, None] * diff[None]
        for j in range(1, len(group.rows)):
            for name, a0, a1 in group.runs[j - 1]:   # activations of the previous layer, in place, by runs
                zk[a0:a1] = ACTIVATIONS[name](zk[a0:a1])
            # next layer: the reached neurons through one matmul, plus the part from neurons that no
            # perturbation of this group reaches (computed once per group, the same for every b)
            zk = (group.w[j] @ zk.reshape(zk.shape[0], -1)).reshape(-1, B, zk.shape[-1])
            if group.const[j] is not None:
                zk += group.const[j][:, None, :]
        out[group.rows[-1]] = zk
    if not bool(torch.isfinite(out).all()):
        bad = int((~torch.isfinite(out)).any(0).any(-1).nonzero()[0, 0])
        raise ValueError(f"delta: the render of weight {tuple(weights[bad])} set to {float(new_values[bad]):g} "
                         f"overflows to NaN or inf in {out.dtype}; use a smaller delta")
    return outputs_to_rgb(out.permute(1, 2, 0), model.color).reshape(B, base.res, base.res, 3)


# -- rendering perturbations, either engine ---------------------------------------------------------------------
def _iter_renders(model: CPPN, weights, deltas, res: int, batch_size: int, engine: str, progress: bool = False):
    """Yield ``(start, images)``: the perturbed renders in ``weights`` order, ``batch_size`` at a time."""
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {ENGINES}, got {engine!r}")
    chunks = range(0, len(weights), batch_size)
    if engine == "naive":
        for s in tqdm(chunks, desc="emc2 naive", disable=not progress, leave=False):
            yield s, _render_naive(model, weights[s:s + batch_size], deltas[s:s + batch_size], res)
        return
    base = _base_pass(model, res)
    new = torch.stack([_new_value(model, w, float(d)) for w, d in zip(weights, deltas)]) if weights else None
    runs = _plan_groups(model, base, weights)
    for s in tqdm(chunks, desc="emc2 fast", disable=not progress, leave=False):
        e = min(s + batch_size, len(weights))
        parts = []
        for a, b, step, group in runs:  # the runs that overlap this chunk, cut into steps
            for t in range(max(a, s), min(b, e), step):
                u = min(t + step, b, e)
                parts.append(_render_step(model, base, group, weights[t:u], new[t:u]))
        yield s, torch.cat(parts)


def render_perturbations(model: CPPN, weights: Sequence[tuple[int, int, int]], deltas, res: int = 64,
                         batch_size: int = 64, engine: str = "fast") -> torch.Tensor:
    """Renders ``(M, res, res, 3)`` in [0, 1] of ``model`` with ``weights[m]`` changed by ``deltas[m]``."""
    checks.instance(model, "model", CPPN)
    weights = checks.sequence(weights, "weights", 0)
    res = _check_res(res, model)
    _check_renders(model, len(weights), res, batch_size, "render_perturbations")
    weights = [_check_weight(model, w) for w in weights]
    deltas = checks.tensor(deltas, "deltas", floating=False).to(torch.float64).reshape(-1)
    if len(deltas) != len(weights):
        raise ValueError(f"deltas: {len(deltas)} values for {len(weights)} weights")
    res = _check_res(res, model)
    _check_batch_size(batch_size)
    checks.choice(engine, "engine", ENGINES)
    if not weights:
        return torch.zeros(0, res, res, 3)
    return torch.cat([imgs for _, imgs in _iter_renders(model, weights, deltas, res, batch_size, engine)])


def weight_sweep(model: CPPN, weight: tuple[int, int, int], values, res: int = 64) -> torch.Tensor:
    """FER's weight sweep: renders ``(len(values), res, res, 3)`` with ``weight`` set to each of ``values``."""
    l, o, i = _check_weight(model, weight)
    values = checks.tensor(values, "values", floating=False).to(torch.float64).reshape(-1)
    res = _check_res(res, model)
    _check_renders(model, len(values), res, 64, "weight_sweep")
    w = float(model.weights[l].detach()[o, i])
    return render_perturbations(model, [(l, o, i)] * len(values), values - w, res)


@torch.no_grad()
def important_weights(model: CPPN, k: int = 4, delta: float = 0.5, res: int = 32) -> list[tuple[int, int, int]]:
    """The ``k`` non-zero weights whose ``w + delta`` changes the render most (mean absolute pixel change)."""
    k = checks.integer(k, "k")
    delta = checks.real(delta, "delta", nonzero=True)
    res = _check_res(res, model)
    weights = nonzero_weights(model)
    if not weights:
        raise ValueError("model: has no non-zero weights")
    ref = model.render(res)
    change = torch.cat([(imgs - ref).abs().mean(dim=(1, 2, 3)) for _, imgs in _iter_renders(
        model, weights, torch.full((len(weights),), float(delta), dtype=torch.float64), res, 64, "fast")])
    return [weights[j] for j in change.argsort(descending=True)[:k].tolist()]


# -- the score --------------------------------------------------------------------------------------------------
@dataclass
class ScoreResult:
    """One EMC2-Bench evaluation. ``verdicts[m]`` is the judge's answer for ``weights[m]`` changed by
    ``deltas[m]``; ``score`` is their mean (the fraction of perturbations that keep the concept)."""
    score: float
    verdicts: torch.Tensor                    # (M,) bool
    weights: list[tuple[int, int, int]]       # (layer, out, in) per verdict
    deltas: torch.Tensor                      # (M,) float64
    source: str                               # where the verdicts came from (judge identity, cache counts)
    concept: str
    policy: str
    delta: float
    res: int
    engine: str
    model_hash: str
    n_nonzero: int                            # the model's non-zero weights (more than evaluated when sampled)
    seconds: float
    reference: torch.Tensor = field(repr=False)   # (res, res, 3) the unperturbed render

    @property
    def stderr(self) -> float:
        """Binomial standard error of ``score`` over its perturbations (its sampling error when sampled)."""
        n = len(self.verdicts)
        return math.sqrt(self.score * (1 - self.score) / n) if n > 1 else float("nan")

    def __repr__(self) -> str:
        of = f" of {self.n_nonzero} weights" if len(set(self.weights)) < self.n_nonzero else ""
        return (f"ScoreResult(score={self.score:.3f}, {len(self.weights)} perturbations{of}, "
                f"concept={self.concept!r}, policy={self.policy!r}, delta={self.delta}, res={self.res}, "
                f"source={self.source!r})")


def questions_for(model_hash: str, weights, deltas, policy: str, res: int) -> list[dict]:
    """The question dict of each perturbation (what a :class:`~compbook.cppn.judges.CachedJudge` keys verdicts by)."""
    return [{"model": model_hash, "weight": [int(l), int(o), int(i)], "delta": float(d), "policy": policy,
             "res": int(res)} for (l, o, i), d in zip(weights, deltas.tolist())]


def _describe_source(judge, before) -> str:
    """``judge.identity``, plus (for a cache) its file and the hit/miss counts of this score."""
    text = f"{type(judge).__name__}: {getattr(judge, 'identity', '?')}"
    if before is not None:
        where = f" in {judge.path}" if getattr(judge, "path", None) is not None else ""
        text += f" (this score: {judge.hits - before[0]} cache hits, {judge.misses - before[1]} misses{where})"
    return text


@torch.no_grad()
def compositional_score(model: CPPN, judge, concept: str, delta: float = 0.5, res: int = 64,
                        policy: str = "plus", seed: int = 0, batch_size: int = 64, progress: bool = True,
                        engine: str = "fast", sample: int | None = None) -> ScoreResult:
    """EMC2-Bench's compositional score of ``model`` for ``concept`` (see the module docstring).

    ``judge(images (B, res, res, 3), concept, reference=(res, res, 3), questions=[dict] * B) -> bool (B,)`` is
    called on ``batch_size`` renders at a time, in the order of ``.weights``; both engines call it identically.
    A judge with ``stream_batches`` (:class:`~compbook.cppn.judges.server.ServerJudge`, a
    :class:`~compbook.cppn.judges.cache.CachedJudge`) is handed every batch as it is rendered instead, and its
    verdicts are placed by index as they arrive (the same verdicts, without waiting at each batch's end).
    ``seed`` draws the "noise" deltas and the ``sample`` of weights (see :func:`perturbation_plan`).
    Each call gets its own copy of ``reference`` (a judge that edits it cannot change later batches), and
    renders that overflow to NaN or inf raise ``ValueError`` instead of reaching the judge.
    """
    concept = checks.non_empty_str(concept, "concept")
    res = _check_res(res, model)
    _check_batch_size(batch_size)
    engine = checks.choice(engine, "engine", ENGINES)
    if not callable(judge):
        raise ValueError(f"judge must be callable, got {type(judge).__name__}")
    t0 = time.perf_counter()
    weights, deltas = perturbation_plan(model, delta, policy, seed, sample)
    if not weights:
        raise ValueError("model: has no non-zero weights to perturb")
    model_hash = content_hash(model)
    questions = questions_for(model_hash, weights, deltas, policy, res)
    reference = model.render(res).detach().cpu()
    counts = (judge.hits, judge.misses) if hasattr(judge, "hits") and hasattr(judge, "misses") else None
    # rendered on the device, judged on the CPU (a judge reads numpy or PIL images)
    renders = ((s, images.cpu()) for s, images in _iter_renders(on_scoring_device(model), weights, deltas, res,
                                                                 batch_size, engine, progress))
    if hasattr(judge, "stream_batches"):      # a server judge: every batch streamed, no barrier between them
        verdicts = streamed_verdicts(judge, renders, concept, reference.clone(), copy.deepcopy(questions))
    else:
        verdicts = torch.cat([ask_judge(judge, images, concept, reference, questions[s:s + len(images)],
                                        f"renders {s}..{s + len(images) - 1} (weight {weights[s]} first)")
                              for s, images in renders])
    return ScoreResult(float(verdicts.float().mean()), verdicts, weights, deltas, _describe_source(judge, counts),
                       concept, policy, float(delta), int(res), engine, model_hash, model.n_weights(),
                       time.perf_counter() - t0, reference)


# -- chapter 5's plumbing: engine timing and example renders ----------------------------------------------------
def random_hidden_weights(model: CPPN, k: int = 4, seed: int = 0) -> list[tuple[int, int, int]]:
    """``k`` non-zero weights feeding hidden neurons (not the output layer), drawn at random with ``seed``: the
    weights chapter 1 sweeps (our choice)."""
    k, seed = checks.integer(k, "k"), checks.seed(seed)
    hidden = [w for w in nonzero_weights(model) if w[0] < model.depth]
    idx = torch.randperm(len(hidden), generator=torch.Generator().manual_seed(seed))[:k]
    return [hidden[i] for i in idx.tolist()]


def compare_engines(model: CPPN, delta: float = 0.5, res: int = 64, sample: int | None = None) -> dict:
    """Render the same perturbations with both engines (chapter 5).

    Returns ``{"renders": M, "naive_s": seconds, "fast_s": seconds, "max_diff": max |naive - fast|}``.
    """
    weights, deltas = perturbation_plan(model, delta, sample=sample)
    t0 = time.perf_counter()
    naive = render_perturbations(model, weights, deltas, res, engine="naive")
    t1 = time.perf_counter()
    fast = render_perturbations(model, weights, deltas, res, engine="fast")
    t2 = time.perf_counter()
    return {"renders": len(weights), "naive_s": t1 - t0, "fast_s": t2 - t1,
            "max_diff": float((naive - fast).abs().max())}


def verdict_examples(model: CPPN, result: ScoreResult, scorer, k: int = 4, seed: int = 0):
    """Up to ``k`` kept and ``k`` rejected perturbations of ``result`` (a seeded pick), rendered (chapter 5).

    ``scorer(images, reference) -> (B,)`` gives each render a number to show (e.g. ``SSIMJudge.scores``).
    Returns ``[(kept: bool, weights, images (n, res, res, 3), scores (n,))]``, kept first.
    """
    k, seed = checks.integer(k, "k"), checks.seed(seed)
    checks.instance(model, "model", CPPN)
    checks.instance(result, "result", ScoreResult, " (compositional_score(...))")
    if not callable(scorer):
        raise ValueError(f"scorer must be callable (images, reference) -> scores, got {type(scorer).__name__}")
    g = torch.Generator().manual_seed(seed)
    out = []
    for keep in (True, False):
        idx = (result.verdicts == keep).nonzero().flatten()
        idx = idx[torch.randperm(len(idx), generator=g)[:int(k)]].sort().values
        weights = [result.weights[j] for j in idx.tolist()]
        imgs = render_perturbations(model, weights, result.deltas[idx], result.res)
        scores = scorer(imgs, result.reference) if len(idx) else torch.zeros(0)
        out.append((keep, weights, imgs, torch.as_tensor(scores)))
    return out


# -- argument checks --------------------------------------------------------------------------------------------
def _check_delta(delta) -> float:
    return checks.real(delta, "delta")


def _check_res(res, model: CPPN) -> int:
    """``res`` a positive integer whose base pass (every layer's input and pre-activation kept, and a batch of
    renders) fits the render budget (:func:`compbook.checks.check_render_size`)."""
    per_pixel = 2 * sum(model.widths) + 4 + 3 * max(model.widths) + 12
    return checks.check_render_size(res, per_pixel, model.mask0.element_size(), "compositional_score")


def _check_renders(model: CPPN, n: int, res: int, batch_size, what: str) -> None:
    """The budget of ``n`` perturbed renders: the images (float32, 3 copies: the batches' parts, each batch's
    and the whole concatenation), the base pass (:func:`_check_res`'s values a pixel) and one batch's
    (neurons, B, pixels) tensors (4 a neuron of the widest layer, and the outputs)."""
    b, e, pixels = min(_check_batch_size(batch_size), max(n, 1)), model.mask0.element_size(), float(res) ** 2
    per_pixel = 2 * sum(model.widths) + 4 + 3 * max(model.widths) + 12
    checks.check_budget(pixels * (12.0 * 3 * n + e * per_pixel + e * b * (4 * max(model.widths) + 8)),
                        f"{what}: {n} perturbed renders at {res} px")


def _check_batch_size(batch_size) -> int:
    return checks.integer(batch_size, "batch_size")


def _check_weight(model: CPPN, weight) -> tuple[int, int, int]:
    if isinstance(weight, (str, bytes)) or not hasattr(weight, "__len__") or len(weight) != 3:
        raise ValueError(f"weight must be (layer, out, in), got {weight!r}")
    l, o, i = (checks.integer(x, f"weight {tuple(weight)!r}: each index", 0) for x in weight)
    if not 0 <= l < len(model.shapes) or not 0 <= o < model.shapes[l][0] or not 0 <= i < model.shapes[l][1]:
        raise ValueError(f"weight {weight!r} is outside the model's layers {model.shapes}")
    if model.masks[l][o, i] == 0:
        raise ValueError(f"weight {weight!r} is masked out: changing it would not change the network")
    return l, o, i
