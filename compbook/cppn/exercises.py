"""Part A's exercises (chapters 1-9): each ``check_<what>(answer)`` runs the reader's answer against the reference
in ``compbook.cppn`` on fresh seeded inputs and returns a :class:`~compbook.book.exercises.Checked`.

The planted mistakes are the ones a reader is likely to make; where an answer matches one, the message names it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch

from ..book.exercises import (
    Checked, as_array, check_function, check_value, correct, kind, not_an_answer, rng, run_answer, wrong, wrong_kind
)
from .. import checks
from . import depth, emc2, frames, optim, volume_ratio
from .network import CPPN, coordinate_grid


# -- chapter 1: the CPPN's inputs ---------------------------------------------------------------------------------
def _grid_mistakes():
    def transposed(res):
        g = coordinate_grid(res).reshape(res, res, 4)
        return g.transpose(0, 1).reshape(res * res, 4)[:, [1, 0, 2, 3]]

    def plain_radius(res):
        g = coordinate_grid(res).clone()
        g[:, 2] /= 1.4
        return g

    def no_bias(res):
        g = coordinate_grid(res).clone()
        g[:, 3] = 0
        return g
    return {"x varying along rows (y and x swapped)": transposed,
            "d without the factor 1.4": plain_radius, "a bias of 0 instead of 1": no_bias}


def check_coordinate_grid(answer) -> Checked:
    """Chapter 1: ``answer(res)`` returns the CPPN's ``(res*res, 4)`` inputs (x, y, d, bias), row-major."""
    cases = [(res,) for res in (2, 3, 5, 8)]
    return check_function(answer, coordinate_grid, cases, "the coordinate grid", _grid_mistakes())


# -- chapter 2: local coherence ------------------------------------------------------------------------------------
def _local_coherence_global(F, groups):
    return frames.mutual_coherence(F)


def _local_coherence_self(F, groups):
    return 1.0


def check_local_coherence(answer) -> Checked:
    """Chapter 2: ``answer(F (r, d), groups)`` is the largest ``|<f_i, f_j>|`` (unit rows, i != j) over pairs that
    share a group (a node's inputs)."""
    g = rng(2)
    cases = []
    for r, d in ((6, 3), (8, 4), (10, 5)):
        groups = [tuple(sorted(g.choice(r, size=3, replace=False))) for _ in range(4)]
        cases.append((g.normal(size=(r, d)), groups))
    mistakes = {"the global coherence (every pair, not only pairs in a group)": _local_coherence_global,
                "pairs of a vector with itself (i = j)": _local_coherence_self}
    return check_function(answer, frames.local_coherence, cases, "the local coherence", mistakes)


# -- chapter 3: the volume ratio -----------------------------------------------------------------------------------
def check_volume_ratio(answer, target: str = "one unit", W: int = 2, L: int = 1, p: float = 0.5) -> Checked:
    """Chapter 3: ``answer`` is rho, the fraction of random masks (each edge kept with probability ``p``) of a
    ``W x L`` network that contain the target (one of chapter 3's tiny targets), worked out by hand."""
    from .audit.tables import tiny_targets
    dag = tiny_targets()[target]
    want = volume_ratio.rho_exact(dag, W, L, p)
    n_target = sum(int(m.sum()) for m in dag.masks)
    n_edges = sum(a * b for a, b in volume_ratio.network_shapes(dag, W, L))
    mistakes = {f"p^{n_target}, the target's edges present, with no word on where it sits or on the other "
                "edges": p ** n_target,
                "one mask out of all 2^N": 0.5 ** n_edges, "1 - rho (the masks outside the basin)": 1 - want}
    return check_value(answer, want, f"rho for {target!r} at W = {W}, L = {L}, p = {p}", mistakes, rtol=1e-6)


# -- chapter 4: the Welch bound ------------------------------------------------------------------------------------
def check_welch_bound(answer, seconds: float | None = None) -> Checked:
    """Chapter 4: ``answer(r, d)`` is the Welch bound on the coherence of r unit vectors in R^d (0 when r <= d); a
    float, each call within ``seconds`` (default :data:`compbook.book.exercises.TIME_LIMIT`)."""
    cases = [(r, d) for r, d in ((3, 2), (4, 2), (7, 3), (10, 4), (16, 6), (5, 5), (3, 4))]
    mistakes = {"an off-by-one: d r instead of d (r - 1) below": lambda r, d: math.sqrt(max(r - d, 0) / (d * r)),
                "no square root": lambda r, d: max(r - d, 0) / (d * (r - 1)),
                "r and d swapped": lambda r, d: frames.welch_bound(d, r) if d > r else 0.0}
    return check_function(answer, frames.welch_bound, cases, "the Welch bound", mistakes, seconds=seconds)


def check_frame_meets_bound(F, r: int = 4, d: int = 3, tol: float = 1e-3) -> Checked:
    """Chapter 4: ``F`` is a real ``(r, d)`` frame whose coherence meets the Welch bound (within ``tol``)."""
    refused = not_an_answer(F, "array")
    if refused is not None:
        return refused
    if as_array(F) is None:
        return wrong(f"expected a real (r, d) = ({r}, {d}) array for the frame, got {kind(F)}")
    F = as_array(F)
    if F.shape != (r, d):
        return wrong(f"the frame has shape {F.shape}; r = {r} vectors in R^{d} make shape {(r, d)}")
    if not np.all(np.isfinite(F)) or np.any(np.linalg.norm(F, axis=1) == 0):
        return wrong("the frame has a zero or non-finite row: every vector needs a direction")
    mu, bound = frames.mutual_coherence(F), frames.welch_bound(r, d)
    if mu <= bound + tol:
        return correct(f"coherence {mu:.4f} meets the Welch bound {bound:.4f} for r = {r}, d = {d}")
    return wrong(f"coherence {mu:.4f} is above the Welch bound {bound:.4f}: the worst pair interferes too much"
                 + (" (for r = d + 1 the simplex meets it)" if r == d + 1 else ""))


# -- chapter 5: the EMC2 score -------------------------------------------------------------------------------------
def _small_cppn(seed: int) -> CPPN:
    """A random dense 2 x 3 CPPN: small enough to judge every perturbation in a second."""
    return CPPN([["sin", "gaussian", "tanh"], ["tanh", "sin", "gaussian"]], color="hsv", seed=seed)


def check_emc2_score(answer, delta: float = 0.5, res: int = 16, seconds: float | None = None) -> Checked:
    """Chapter 5: ``answer(model, judge, concept, delta, res)`` perturbs each non-zero weight by ``+delta`` in turn,
    asks ``judge`` whether each render is still ``concept``, and returns the fraction of yes (a float), within
    ``seconds`` per model (default :data:`compbook.book.exercises.TIME_LIMIT`)."""
    from .judges.registry import make_judge
    refused = not_an_answer(answer, "function")
    if refused is not None:
        return refused
    judge = make_judge("ssim")
    for seed in (0, 1):
        model = _small_cppn(seed)
        want = emc2.compositional_score(model, judge, "shape", delta, res, policy="plus", progress=False).score
        got, failed = run_answer(answer, (model, judge, "shape", delta, res), "the EMC2 score",
                                 f"a random 2 x 3 CPPN, seed {seed}", seconds)
        if failed is not None:
            return failed
        if wrong_kind(got, want) is not None:
            return wrong(f"the EMC2 score: your function {wrong_kind(got, want)}")
        n_all = sum(w.numel() for w in model.weights)
        mistakes = {"the fraction of 'no' (perturbations that lose the object)": 1 - want,
                    "dividing by every weight, zeros included": want * model.n_weights() / n_all}
        r = check_value(got, want, f"the EMC2 score of a random 2 x 3 CPPN (seed {seed})", mistakes)
        if not r.passed:
            return r
    return correct(f"the EMC2 score matches compositional_score on two random CPPNs (delta {delta}, {res} px)")


# -- chapter 6: SP's similarity ------------------------------------------------------------------------------------
def check_map_similarity(answer) -> Checked:
    """Chapter 6: ``answer(maps (n, P))`` is SP's similarity of n neurons' flattened feature maps: ``|cos|`` of
    every pair, ``(n, n)``, maps not centred."""
    g = rng(6)
    cases = [(torch.tensor(g.normal(size=(n, P)) + g.normal(size=(n, 1))),) for n, P in ((3, 16), (5, 64))]
    mistakes = {"cosine without the absolute value (a map and its negation are equally redundant)":
                lambda m: _cos(m, absolute=False),
                "centred maps (a correlation, not SP's cosine)": lambda m: _cos(m - m.mean(1, keepdim=True)),
                "plain dot products, not normalised": lambda m: (m @ m.T).abs()}
    return check_function(answer, _cos, cases, "SP's similarity", mistakes)


def _cos(maps: torch.Tensor, absolute: bool = True) -> torch.Tensor:
    u = maps / maps.norm(dim=1, keepdim=True)
    sim = (u @ u.T).clamp(-1, 1)
    return sim.abs() if absolute else sim


# -- chapter 7: the PNG ratio --------------------------------------------------------------------------------------
def check_png_ratio(answer) -> Checked:
    """Chapter 7: ``answer(image (H, W, 3) in [0, 1])`` is raw RGB bytes over PNG bytes (higher = simpler)."""
    g = rng(7)
    flat = np.full((24, 24, 3), 0.4)
    stripes = np.tile((np.arange(32) % 8 < 4)[None, :, None], (32, 1, 3)).astype(float)
    cases = [(flat,), (stripes,), (g.uniform(size=(16, 16, 3)),)]
    mistakes = {"PNG bytes over raw bytes (the ratio upside down)": lambda im: 1 / depth.png_compression_ratio(im),
                "raw bytes counted as H * W (the 3 channels forgotten)":
                    lambda im: depth.png_compression_ratio(im) / 3}
    return check_function(answer, depth.png_compression_ratio, cases, "the PNG ratio", mistakes, rtol=1e-6)


# -- chapter 8: Newton-Schulz --------------------------------------------------------------------------------------
def check_newton_schulz(answer, steps: int = 5) -> Checked:
    """Chapter 8: ``answer(G (m, n), steps)`` runs Muon's quintic Newton-Schulz iteration (Frobenius-normalised
    first, on the transpose when m > n) and returns the approximately orthogonal ``(m, n)`` matrix."""
    g = torch.Generator().manual_seed(8)
    cases = [(torch.randn(m, n, generator=g, dtype=torch.float64), steps) for m, n in ((4, 6), (6, 4), (5, 5))]

    def unnormalised(G, steps):
        a, b, c = optim.NS_COEFFICIENTS
        X = G.clone()
        for _ in range(steps):
            A = X @ X.T
            X = a * X + (b * A + c * A @ A) @ X
        return X

    def one_step_short(G, steps):
        return optim.newton_schulz(G, steps - 1)
    mistakes = {"no Frobenius normalisation first (singular values start above 1 and blow up)": unnormalised,
                "one step short (an off-by-one in the loop)": one_step_short}
    return check_function(answer, optim.newton_schulz, cases, "Newton-Schulz", mistakes, rtol=1e-6)


# -- chapter 9: the depth a target gets ----------------------------------------------------------------------------
def check_trained_depth(answer, depth_range: tuple[int, int] = (2, 8)) -> Checked:
    """Chapter 7: ``answer(image)`` is the depth to train for a target: the depth line's prediction, rounded to
    a whole layer and clipped to ``depth_range``."""
    lo, hi = depth_range

    def reference(image):
        return int(np.clip(round(depth.predict_depth(image, rounded=False, extrapolate=True)), lo, hi))
    g = rng(9)
    stripes = np.tile((np.arange(32) % 6 < 3)[None, :, None], (32, 1, 3)).astype(float)
    cases = [(np.full((32, 32, 3), 0.5),), (stripes,), (g.uniform(size=(32, 32, 3)),)]
    mistakes = {"the prediction unclipped": lambda im: round(depth.predict_depth(im, rounded=False,
                                                                               extrapolate=True)),
                "truncated instead of rounded": lambda im: int(np.clip(int(depth.predict_depth(
                    im, rounded=False, extrapolate=True)), lo, hi))}
    return check_function(answer, reference, cases, "the trained depth", mistakes)


# -- second exercises per chapter: predict, then check ------------------------------------------------------------
def check_corner_radius(answer) -> Checked:
    """Chapter 1: the ``d`` input a CPPN reads at the image's corner (x = y = 1)."""
    want = float(coordinate_grid(2)[-1, 2])
    return check_value(answer, want, "d at the corner", {"sqrt(2), the factor 1.4 forgotten": math.sqrt(2),
                                                         "1, the clipped value the figure shows": 1.0})


def check_colours_needed(answer, r: int = 12, k: int = 3) -> Checked:
    """Chapter 2: the fewest directions (colours) a ring of ``r`` primitives read ``k`` at a time needs, so that
    primitives read by one node never share a direction (``r`` divisible by ``k``: exactly ``k``; otherwise more)."""
    ring = [tuple((i + j) % r for j in range(k)) for i in range(r)]
    want = int(frames.greedy_colouring(frames.cooccurrence(ring, r)).max()) + 1
    mistakes = {"one direction per primitive": r, "two (a ring alternates colours)": 2}
    if r % k:
        mistakes[f"colouring i by i mod {k} (right only when the ring's length is a multiple of {k}: here "
                 f"primitives {r - 1} and 0 share a colour, and one node reads both)"] = k
    return check_value(answer, want, f"colours for a ring of {r} read {k} at a time", mistakes)


def check_width_decay(answer, p: float = 0.5) -> Checked:
    """Chapter 3: how fast rho falls per extra unit of width for the one-unit target at L = 1 (in nats:
    ``-d ln rho / dW``)."""
    from .audit.tables import tiny_targets
    want = volume_ratio.width_decay_rate(tiny_targets()["one unit"], 1, p)
    return check_value(answer, want, "the width decay rate", {"the rate in bits (log base 2)": want / math.log(2),
                                                              "the factor rho shrinks by, not its log":
                                                                  math.exp(-want)}, rtol=1e-6)


def check_score_stderr(answer) -> Checked:
    """Chapter 5: ``answer(score, n)`` is the binomial standard error of an EMC2 score over ``n`` perturbations."""
    cases = [(0.5, 40), (0.9, 120), (0.25, 8)]
    mistakes = {"the variance (no square root)": lambda s, n: s * (1 - s) / n,
                "sqrt(n) missing (the spread of one verdict)": lambda s, n: math.sqrt(s * (1 - s))}
    return check_function(answer, lambda s, n: math.sqrt(s * (1 - s) / n), cases, "the standard error", mistakes)


def check_redundant_pairs(answer) -> Checked:
    """Chapter 6: ``answer(similarity (n, n), threshold)`` lists SP's redundant pairs ``(i, j)``, ``i < j``, with
    similarity above ``threshold``, most similar first (as a list of pairs)."""
    from .prune import redundant_pairs
    g = torch.Generator().manual_seed(61)
    cases = []
    for n in (5, 7):
        s = torch.rand(n, n, generator=g, dtype=torch.float64)
        s = (s + s.T) / 2
        s.fill_diagonal_(1.0)
        cases.append((s, 0.6))

    def with_diagonal(s, t):
        n = s.shape[0]
        pairs = [(i, j) for i in range(n) for j in range(i, n) if s[i, j] > t]
        return sorted(pairs, key=lambda p: -float(s[p]))

    def unordered(s, t):
        return sorted(redundant_pairs(s, t))
    mistakes = {"pairs of a neuron with itself (the diagonal, similarity 1)": with_diagonal,
                "pairs in index order, not most similar first": unordered}
    return check_function(answer, redundant_pairs, cases, "the redundant pairs", mistakes)


def check_phi_at_one(answer) -> Checked:
    """Chapter 8: where one quintic Newton-Schulz step sends a singular value of exactly 1: ``phi(1)``."""
    a, b, c = optim.NS_COEFFICIENTS
    return check_value(answer, a + b + c, "phi(1)", {"1, a fixed point (it is not: the quintic oscillates)": 1.0,
                                                    "a alone (the linear term)": a})


def check_deepest_target(answer) -> Checked:
    """Chapter 9: the name of the unknown target the depth line gives the deepest network."""
    from .runs.experiments import unknown_targets
    if not isinstance(answer, str):
        refused = not_an_answer(answer, "target name")      # a Checked that did not pass is falsy: no `or`
        return refused if refused is not None else wrong(f"expected a target's name, got {type(answer).__name__}")
    full_size, _ = unknown_targets()
    predicted = {n: depth.predict_depth(img, rounded=False, extrapolate=True) for n, img in full_size.items()}
    want = max(predicted, key=predicted.get)
    if answer == want:
        return correct(f"{want!r}: predicted depth {predicted[want]:.1f}, the lowest PNG ratio")
    if answer not in predicted:
        return wrong(f"{answer!r} is not one of chapter 9's targets: {sorted(predicted)}")
    shallow = min(predicted, key=predicted.get)
    hint = " (that is the shallowest: a high ratio means a simple image)" if answer == shallow else ""
    return wrong(f"{answer!r} gets depth {predicted[answer]:.1f}, not the deepest{hint}")


SKIMAGE_PICTURES = ("camera", "coins", "moon")


def skimage_pictures(names: Sequence[str] = SKIMAGE_PICTURES) -> dict:
    """Chapter 9's exercise pictures from ``skimage.data`` (bundled, no download): name -> ``(H, W, 3)`` in [0, 1]
    (grey pictures repeated over three channels)."""
    import skimage.data
    out = {}
    for name in checks.sequence(names, "names", 1):
        if not isinstance(name, str) or name not in SKIMAGE_PICTURES:
            raise ValueError(f"names: {name!r} is not one of {SKIMAGE_PICTURES}")
        im = np.asarray(getattr(skimage.data, name)(), dtype=np.float64)
        im = im / im.max()
        out[name] = np.repeat(im[..., None], 3, -1) if im.ndim == 2 else im
    return out


def check_deepest_picture(answer) -> Checked:
    """Chapter 9: which of three ``skimage.data`` pictures not shown in the chapter (``SKIMAGE_PICTURES``) the
    depth line gives the deepest network."""
    if not isinstance(answer, str):
        refused = not_an_answer(answer, "picture name")     # a Checked that did not pass is falsy: no `or`
        return refused if refused is not None else wrong(f"expected a picture's name, got {type(answer).__name__}")
    predicted = {n: depth.predict_depth(im, rounded=False, extrapolate=True) for n, im in skimage_pictures().items()}
    ratios = {n: depth.png_compression_ratio(im) for n, im in skimage_pictures().items()}
    want = max(predicted, key=predicted.get)
    if answer == want:
        return correct(f"{want!r}: PNG ratio {ratios[want]:.2f}, the lowest, so the line asks for the most layers")
    if answer not in predicted:
        return wrong(f"{answer!r} is not one of the three pictures: {sorted(predicted)}")
    return wrong(f"{answer!r} compresses by {ratios[answer]:.2f}, more than {want!r}; the line gives the most "
                 "layers to the picture that compresses least (the busiest)")


def check_half_selectivity(answer) -> Checked:
    """Chapter 9: ``answer(fmap)`` is a feature map's half-selectivity (a float): ``|var_left - var_right| /
    (var_left + var_right)``, the left half the first ``W // 2`` columns of an ``(H, W)`` map."""
    from .runs.experiments import half_selectivity

    def reference(fmap):
        return float(half_selectivity(torch.as_tensor(fmap)))

    def halves(fmap, rows: bool, stat):
        f = torch.as_tensor(fmap)
        if rows:
            return stat(f[: f.shape[0] // 2]), stat(f[f.shape[0] // 2:])
        return stat(f[:, : f.shape[1] // 2]), stat(f[:, f.shape[1] // 2:])

    def mistake(rows=False, stat=torch.var, signed=False, whole=False):
        def f(fmap):
            a, b = halves(fmap, rows, stat)
            top = (a - b) if signed else (a - b).abs()
            return float(top / (torch.as_tensor(fmap).var() if whole else a + b))
        return f
    g = rng(19)
    left = np.zeros((8, 8))
    left[:, :4] = g.normal(size=(8, 4))
    cases = [(torch.as_tensor(left),), (torch.as_tensor(g.normal(size=(8, 8))),),
             (torch.as_tensor(g.normal(size=(6, 10)) * np.linspace(0, 2, 10)),),
             (torch.as_tensor(-g.normal(size=(8, 8)) * (np.arange(8) >= 3)),)]
    mistakes = {"the halves taken as top and bottom rows": mistake(rows=True),
                "the signed difference (no absolute value)": mistake(signed=True),
                "standard deviations instead of variances": mistake(stat=torch.std),
                "the whole map's variance as the denominator": mistake(whole=True)}
    return check_function(answer, reference, cases, "the half-selectivity", mistakes)
