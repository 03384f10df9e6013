"""Depth: where compositionality peaks, and how a PNG file predicts it (chapter 7, ``07_depth``).

Paper A (fact): the compositional score of a trained CPPN is non-monotone in depth, with a target-specific peak,
and the PNG compression ratio of the target (a proxy for its complexity) depends linearly on that optimal depth.

* :func:`png_compression_ratio`: raw 8-bit RGB bytes / PNG bytes (our definition, below);
* :func:`depth_sweep`: train several seeds at each depth with the batched trainer (optionally similarity-prune
  them, :func:`compbook.cppn.prune.similarity_prune_many`), score each with EMC2
  (:func:`compbook.cppn.emc2.compositional_score`);
* :func:`fit_depth_line` / :func:`predict_depth`: the least-squares line ``depth = slope * ratio + intercept``.

Our choices, all parameters: the ratio is measured at :data:`RATIO_RES` = 256 px (the FER resolution; at 32 px the
PNG's fixed overhead and the lack of smooth areas change even the order of the three targets), pixels are rounded
to 8 bits, and PIL writes the PNG with zlib ``compress_level=9`` and no other options.
"""

from __future__ import annotations

import io
import math
import time
import warnings
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
from PIL import Image

from .. import checks
from .network import CPPN, uniform_cppn
from .paper import figure
from ..book.images import check_image as _as_image, resize, to_uint8
from .train import OptimizerFactory, as_target, fit_many, mse

RATIO_RES = 256
PNG_LEVEL = 9


# -- the PNG proxy -----------------------------------------------------------------------------------------------
def png_bytes(image, level: int = PNG_LEVEL) -> int:
    """Size in bytes of ``image`` ``(H, W, 3)`` in [0, 1] written as an 8-bit RGB PNG by PIL at zlib ``level``."""
    level = checks.integer(level, "level (zlib)", 0, 9)
    buf = io.BytesIO()
    Image.fromarray(to_uint8(image)).save(buf, format="PNG", compress_level=level)
    return buf.tell()


def png_compression_ratio(image, level: int = PNG_LEVEL) -> float:
    """Raw 8-bit RGB bytes (``H * W * 3``) divided by the PNG's bytes (:func:`png_bytes`): higher = simpler.

    ``image`` is ``(H, W, 3)`` floats in [0, 1], measured at its own size: compare images at one size
    (:data:`RATIO_RES`; :func:`predict_depth` resizes for you). A constant 256 px image gives ~350, uniform noise
    slightly under 1 (PNG cannot shrink noise and adds its headers).
    """
    a = _as_image(image)
    return a.shape[0] * a.shape[1] * 3 / png_bytes(a, level)


# -- the depth line ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class DepthLine:
    """``depth = slope * ratio + intercept``, fitted by least squares on ``(ratios, depths)``.

    ``res`` is the size the ratios were measured at; ``residuals[k] = depths[k] - fitted[k]``; ``source`` says
    what the depths were (e.g. "layerized Picbreeder depths" or "empirical optimal depths of a sweep").
    """
    slope: float
    intercept: float
    ratios: tuple[float, ...]
    depths: tuple[float, ...]
    residuals: tuple[float, ...]
    res: int = RATIO_RES
    source: str = ""
    labels: tuple[str, ...] = ()

    def __call__(self, ratio) -> np.ndarray | float:
        """The line's depth at ``ratio`` (a float or an array of them)."""
        return self.slope * np.asarray(ratio, dtype=np.float64) + self.intercept

    @property
    def rmse(self) -> float:
        return float(np.sqrt(np.mean(np.square(self.residuals))))


def fit_depth_line(ratios: Sequence[float], depths: Sequence[float], res: int = RATIO_RES, source: str = "",
                   labels: Sequence[str] = ()) -> DepthLine:
    """Least-squares line through ``(ratio_k, depth_k)``: needs >= 2 points with at least two distinct ratios."""
    r, d = checks.reals(ratios, "ratios", finite=False), checks.reals(depths, "depths", finite=False)
    res = checks.integer(res, "res")
    labels = tuple(checks.sequence(labels, "labels", 0))
    if labels and len(labels) != len(r):
        raise ValueError(f"labels: {len(labels)} labels for {len(r)} ratios (give one per point, or none)")
    if r.ndim != 1 or d.shape != r.shape:
        raise ValueError(f"ratios and depths must be 1-D of one length, got {r.shape} and {d.shape}")
    if len(r) < 2 or np.ptp(r) == 0:
        raise ValueError(f"ratios: need at least two distinct values to fit a line, got {r.tolist()}")
    if not (np.isfinite(r).all() and np.isfinite(d).all()):
        raise ValueError("ratios and depths must be finite")
    slope, intercept = np.polyfit(r, d, 1)
    residuals = d - (slope * r + intercept)
    return DepthLine(float(slope), float(intercept), tuple(r.tolist()), tuple(d.tolist()),
                     tuple(residuals.tolist()), res, source, labels)


#: The book's default line: our ratios (this module's definition, 256 px renders by
#: :func:`compbook.cppn.picbreeder.render`) of the three FER targets against their *layerized Picbreeder depths* (FER's,
#: ``paper.figure("layerized_depths")``), i.e. the depth evolution found, not an optimal depth measured by a sweep
#: (FER's numbers; our own :func:`compbook.cppn.picbreeder.layerize` gives the skull 11 layers, see chapter 1). Refit
#: with :func:`picbreeder_line`; a test checks these numbers against a fresh computation. (The ratios 5.49 / 5.23 / 4.57
#: come from another definition: raw RGBA bytes over the reference PNG files' size; it orders the targets the same way.)
#: Layerized depths of the FER targets as FER reports them (our layerizer: skull 11).
PICBREEDER_DEPTHS = figure("layerized_depths")

DEFAULT_LINE = fit_depth_line((5.236736, 4.601601, 4.127212), tuple(PICBREEDER_DEPTHS.values()), RATIO_RES,
                              "layerized Picbreeder depths as FER reports them ("
                              + ", ".join(f"{k} {v}" for k, v in PICBREEDER_DEPTHS.items()) + ")",
                              tuple(PICBREEDER_DEPTHS))


def picbreeder_line(genomes: dict | None = None, depths: dict | None = None, res: int = RATIO_RES,
                    level: int = PNG_LEVEL) -> DepthLine:
    """Refit :data:`DEFAULT_LINE`: each genome's render at ``res`` px, its ratio, against ``depths[name]``
    (default :data:`PICBREEDER_DEPTHS`; pass ``{n: layerize(g).depth}`` for our layerizer's depths)."""
    from . import picbreeder
    depths = PICBREEDER_DEPTHS if depths is None else depths
    genomes = genomes or {n: picbreeder.load_genome(n) for n in depths}
    names = list(genomes)
    ratios = [png_compression_ratio(picbreeder.render(genomes[n], res), level) for n in names]
    return fit_depth_line(ratios, [depths[n] for n in names], res, "layerized Picbreeder depths", names)


#: How far (relative) a ratio may lie outside the fitted range and still count as inside: the stored ratios are
#: rounded to 6 decimals, and another zlib may write a PNG a few bytes longer or shorter (our choice).
RANGE_TOLERANCE = 1e-3


class DepthRangeWarning(UserWarning):
    """:func:`predict_depth` read its line outside the range of ratios the line was fitted on."""


def predict_depth(image, line: DepthLine | None = None, rounded: bool = True,
                  extrapolate: bool | None = None) -> int | float:
    """The depth ``line`` (default :data:`DEFAULT_LINE`) predicts for ``image`` ``(H, W, 3)`` in [0, 1].

    The image is resized to ``line.res`` first when its size differs (ratios depend on size). With ``rounded``
    the prediction is rounded to an integer depth of at least 1; else the line's raw value.

    Outside the fitted range. The line is only evidence between the smallest and largest ratio it was fitted
    on (:data:`DEFAULT_LINE`: 4.13 to 5.24, give or take :data:`RANGE_TOLERANCE`); a constant image (ratio ~350)
    would read as depth -6251. We **warn** by default: ``extrapolate=None`` returns the line's value with a
    :class:`DepthRangeWarning` that gives the ratio, the range and the raw value; ``extrapolate=False`` raises
    ``ValueError`` instead; ``extrapolate=True`` reads the line silently (for a chapter that marks such targets
    itself).
    """
    line = DEFAULT_LINE if line is None else line
    if not isinstance(line, DepthLine):
        raise ValueError(f"line must be a DepthLine (fit_depth_line(...)) or None, got {type(line).__name__}")
    rounded = checks.boolean(rounded, "rounded")
    if extrapolate is not None:
        extrapolate = checks.boolean(extrapolate, "extrapolate")
    a = _as_image(image)
    if a.shape[:2] != (line.res, line.res):
        a = resize(a, line.res)
    ratio = png_compression_ratio(a)
    value = float(line(ratio))
    lo, hi = min(line.ratios), max(line.ratios)
    inside = lo * (1 - RANGE_TOLERANCE) <= ratio <= hi * (1 + RANGE_TOLERANCE)
    if not inside and extrapolate is not True:
        text = (f"image: PNG compression ratio {ratio:.2f} is outside the range [{lo:.2f}, {hi:.2f}] the depth "
                f"line was fitted on; the line reads {value:.1f} layers there, an extrapolation")
        if extrapolate is False:
            raise ValueError(text)
        warnings.warn(text + " (extrapolate=True silences this, False refuses)", DepthRangeWarning, stacklevel=2)
    return max(1, int(round(value))) if rounded else value


# -- the depth sweep ---------------------------------------------------------------------------------------------
DEFAULT_ACTIVATIONS = ("gaussian", "sin", "tanh", "identity")


def mixed_layout(width: int, names: Sequence[str] = DEFAULT_ACTIVATIONS) -> dict[str, int]:
    """Activation counts for one layer of ``width`` neurons, dealt round-robin over ``names`` (our choice)."""
    width = checks.integer(width, "width")
    # a network with a width x width layer: 16 bytes a weight (network.check_size), its inputs and outputs too
    checks.check_budget(16.0 * width * (width + 8) + 8.0 * width,
                        f"mixed_layout(width={width}): a layer of {width:,} neurons")
    names = checks.sequence(names, "names (activations)")
    for n in names:
        from .network import check_activation
        check_activation(n, "names (activations)")
    counts = dict.fromkeys(names, 0)
    for k in range(width):
        counts[names[k % len(names)]] += 1
    return {n: c for n, c in counts.items() if c}


@dataclass
class DepthSweep:
    """A depth sweep's results. ``rows`` is tidy: one dict per (depth, seed) with ``depth, seed, loss, score,
    n_weights`` (``score`` is NaN when no judge was given); ``models[(depth, seed)]`` the trained networks;
    ``scores[(depth, seed)]`` the :class:`compbook.cppn.emc2.ScoreResult` objects."""
    rows: list[dict]
    models: dict[tuple[int, int], CPPN]
    scores: dict[tuple[int, int], object] = field(default_factory=dict)
    seconds: float = 0.0
    config: dict = field(default_factory=dict)

    @property
    def depths(self) -> list[int]:
        return sorted({r["depth"] for r in self.rows})

    def column(self, key: str) -> np.ndarray:
        """``(n_depths, n_seeds)`` array of ``key`` ("loss", "score", "n_weights", or a judge's name when the
        sweep was scored by several judges), depths in order."""
        known = {"loss", "score", "n_weights", "depth", "seed"} | (set(self.rows[0].get("scores", {}))
                                                                   if self.rows else set())
        if not isinstance(key, str) or key not in known:
            raise ValueError(f"key must be one of {sorted(known)}, got {key!r}")
        return np.array([[r[key] if key in r else r["scores"][key] for r in self.rows if r["depth"] == d]
                         for d in self.depths], dtype=np.float64)

    def intervals(self, judge: str, n_boot: int = 2000, seed: int = 0) -> list[dict]:
        """Per depth, ``judge``'s score pooled over seeds with its 95% interval (a sweep scored by several
        judges; :func:`compbook.cppn.panel.summary`: a bootstrap over seeds, then weights)."""
        from .panel import groups_from_counts, summary
        if not self.rows or "k_n" not in self.rows[0] or judge not in self.rows[0]["k_n"]:
            raise ValueError(f"judge {judge!r}: this sweep holds no verdicts of it (pass judge=a dict of judges)")
        return [summary(groups_from_counts([r["k_n"][judge] for r in self.rows if r["depth"] == d]), n_boot,
                        seed, depth=d, judge=judge) for d in self.depths]

    def mean(self, key: str = "score") -> np.ndarray:
        """Mean of ``key`` over seeds, one value per depth."""
        return self.column(key).mean(axis=1)

    def peak(self, key: str = "score") -> int:
        """The depth with the highest mean ``key`` over seeds; ties go to the lower mean loss, then the smaller
        depth. (With all scores equal, e.g. all 0, the "peak" only reflects the loss: check :meth:`mean`.)"""
        means, losses = self.mean(key), self.mean("loss")
        best = max(range(len(means)), key=lambda k: (means[k], -losses[k], -self.depths[k]))
        return self.depths[best]

    def peak_frequencies(self, n_boot: int = 2000, seed: int = 0, key: str = "score") -> dict[int, float]:
        """How sure is the peak? Resample the seeds of every depth with replacement (``n_boot`` bootstrap draws,
        independently per depth) and return how often each depth has the highest mean ``key``."""
        col = self.column(key)                                        # (depths, seeds)
        n_d, n_s = col.shape
        n_boot, seed = checks.integer(n_boot, "n_boot"), checks.seed(seed)
        checks.allocation((n_boot, n_d, n_s), f"peak_frequencies: n_boot={n_boot} draws", 8 * 3)
        idx = np.random.default_rng(seed).integers(0, n_s, size=(n_boot, n_d, n_s))
        means = col[np.arange(n_d)[None, :, None], idx].mean(axis=-1)  # (n_boot, depths)
        counts = np.bincount(means.argmax(axis=1), minlength=n_d) / n_boot
        return {d: float(c) for d, c in zip(self.depths, counts)}

    def best(self, depth: int) -> tuple[int, CPPN]:
        """``(seed, model)`` of the best run at ``depth``: highest score, then lowest loss."""
        depth = checks.integer(depth, "depth")
        rows = [r for r in self.rows if r["depth"] == depth]
        if not rows:
            raise ValueError(f"depth {depth!r} is not in this sweep ({self.depths})")
        r = max(rows, key=lambda r: (np.nan_to_num(r["score"], nan=-1.0), -r["loss"]))
        return r["seed"], self.models[(depth, r["seed"])]


def _check_depths(depths) -> list[int]:
    if isinstance(depths, (str, bytes)) or not isinstance(depths, Sequence) or not depths:
        raise ValueError(f"depths must be a non-empty list of integers >= 1, got {depths!r}")
    depths = [checks.integer(d, "depths: each depth") for d in depths]
    if len(set(depths)) != len(depths):
        raise ValueError(f"depths: duplicates in {depths!r}")
    return depths


def _check_keywords(kwargs, name: str, function: str, taken: set) -> None:
    """``kwargs`` is None or a dict of keyword arguments that ``function`` (in prune or emc2) accepts and that
    the sweep does not set itself (``taken``)."""
    if kwargs is None:
        return
    if not isinstance(kwargs, dict):
        raise ValueError(f"{name} must be a dict of keyword arguments of {function}, or None, got {kwargs!r}")
    import inspect
    from . import emc2, prune
    fn = getattr(prune, function, None) or getattr(emc2, function)
    allowed = set(inspect.signature(fn).parameters) - taken
    unknown = sorted(set(kwargs) - allowed)
    if unknown:
        raise ValueError(f"{name}: {unknown} are not keyword arguments {function} takes here; "
                         f"allowed: {sorted(allowed)}")


def depth_sweep(target, depths: Sequence[int], width: int = 8, seeds: Sequence[int] = (0, 1, 2), *,
                activation=None, color: str = "hsv", steps: int = 1000, lr: float = 3e-3,
                optimizer: str | OptimizerFactory = "adam", sp: dict | None = None, judge=None,
                concept: str | None = None, score_kwargs: dict | None = None, progress: bool = True) -> DepthSweep:
    """Train ``len(seeds)`` CPPNs of ``depth`` hidden layers x ``width`` at every depth and score them.

    Per depth: ``uniform_cppn(depth, width, activation, color, seed)`` for each seed (``activation`` default
    :func:`mixed_layout`), all seeds trained together by :func:`compbook.cppn.train.fit_many` on ``target``
    ``(H, W, 3)`` for ``steps`` steps; then, when ``sp`` is a dict, similarity-pruned by
    :func:`compbook.cppn.prune.similarity_prune_many` with those keyword arguments (its random stream for the b-th seed
    is ``seeds[0] + b``, unless ``sp`` sets ``seed``); then, when ``judge`` is given, scored by
    ``compositional_score(model, judge, concept, seed=seed, progress=False, **score_kwargs)``; when ``judge``
    is a dict of judges, every one judges the same renders (:func:`compbook.cppn.panel.panel_verdicts`): ``score``
    is the first's, ``scores`` and ``k_n`` hold each one's (see :meth:`DepthSweep.intervals`).
    ``loss`` in the rows is the final MSE on ``target``.
    """
    depths = _check_depths(depths)
    if isinstance(seeds, (str, bytes)) or not isinstance(seeds, Sequence):
        raise ValueError(f"seeds must be a non-empty list of distinct integers, got {seeds!r}")
    seeds = [checks.seed(s, "seeds: each seed") for s in seeds]
    _check_keywords(sp, "sp", "similarity_prune_many", {"models", "target"})
    _check_keywords(score_kwargs, "score_kwargs", "compositional_score",
                    {"model", "judge", "concept", "seed", "progress"})
    if not seeds or len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds must be a non-empty list of distinct integers, got {seeds!r}")
    width, steps = checks.integer(width, "width"), checks.integer(steps, "steps", 0)
    lr = checks.real(lr, "lr", 0, low_open=True)
    target = as_target(target)
    if target.ndim != 3:
        raise ValueError(f"target: one image (H, W, 3), got {tuple(target.shape)}")
    # every network kept (16 bytes a weight, network.check_size), and the training of one depth's seeds at once:
    # per pixel and neuron its value, activation, gradients and Adam's state (float32, 8 of them)
    pixels = float(target.shape[0] * target.shape[1])
    checks.check_budget(16.0 * (width + 8) * width * sum(depths) * len(seeds)
                        + 4.0 * 8 * pixels * len(seeds) * (width * max(depths) + 8),
                        f"depth_sweep: {len(seeds)} networks of depth {max(depths)} x width {width}")
    if judge is not None and not concept:
        raise ValueError("concept: a judge needs the concept it checks (e.g. 'skull')")
    layout = activation if activation is not None else mixed_layout(width)
    t0 = time.perf_counter()
    models = {}
    for depth in depths:
        _, nets = train_depth(target, depth, width, seeds, layout, color, steps, lr, optimizer, sp, progress=progress)
        models |= {(depth, s): net for s, net in zip(seeds, nets)}
    rows, scores = score_models(models, target, judge, concept, score_kwargs)
    cfg = dict(depths=depths, width=width, seeds=seeds, activation=layout, color=color, steps=steps, lr=lr,
               optimizer=optimizer if isinstance(optimizer, str) else getattr(optimizer, "__name__", "custom"),
               sp=dict(sp) if sp is not None else None, concept=concept,
               judge=({k: getattr(j, "identity", None) for k, j in judge.items()} if isinstance(judge, dict)
                      else getattr(judge, "identity", None)), score_kwargs=dict(score_kwargs or {}))
    return DepthSweep(rows, models, scores, time.perf_counter() - t0, cfg)


def train_depth(target, depth: int, width: int, seeds: Sequence[int], layout, color: str = "hsv", steps: int = 1000,
                lr: float = 3e-3, optimizer: str | OptimizerFactory = "adam", sp: dict | None = None,
                sp_seeds: Sequence[int] | None = None, progress: bool = False) -> tuple[list[CPPN], list[CPPN]]:
    """Chapter 7 at one depth (:func:`depth_sweep`'s training, unchecked): ``uniform_cppn(depth, width, layout,
    color, seed)`` per seed, trained together on ``target`` ``(H, W, 3)``, then similarity-pruned together when
    ``sp`` is a dict (model ``b``'s random stream ``sp_seeds[b]``, default ``seeds[0] + b``, unless ``sp`` sets
    ``seed``). Returns ``(dense models, final models)`` in seed order (the same list twice without ``sp``)."""
    nets = [uniform_cppn(depth, width, layout, color, seed=s) for s in seeds]
    dense = fit_many(nets, target, steps, lr, optimizer, progress=progress).models
    if sp is None:
        return dense, dense
    from .prune import similarity_prune_many
    stream = seeds[0] if sp_seeds is None else list(sp_seeds)
    kw = dict(lr=lr, optimizer=optimizer, seed=stream) | dict(sp)
    return dense, [p.model for p in similarity_prune_many(dense, target, **kw)]


def score_models(models: dict, target, judge=None, concept: str | None = None,
                 score_kwargs: dict | None = None) -> tuple[list[dict], dict]:
    """Chapter 7: one :class:`DepthSweep` row per trained network of ``models`` (``(depth, seed) -> CPPN``, in
    the rows' order) with its loss on ``target`` ``(H, W, 3)``, its weights and, when ``judge`` is given, its
    score (as :func:`depth_sweep` scores). Returns ``(rows, scores)``: ``scores`` holds the
    :class:`compbook.cppn.emc2.ScoreResult` of a single judge."""
    target = as_target(target)
    rows, scores = [], {}
    for (depth, s), net in models.items():
        row = dict(depth=depth, seed=s, loss=mse(net, target), score=math.nan, n_weights=net.n_weights())
        if isinstance(judge, dict):   # several judges on the same renders (chapter 7's re-read)
            from .panel import panel_verdicts
            v = panel_verdicts(net, judge, concept, seed=s, **(score_kwargs or {}))
            row["scores"] = {k: float(x.mean()) for k, x in v.items()}
            row["k_n"] = {k: [int(x.sum()), len(x)] for k, x in v.items()}
            row["score"] = next(iter(row["scores"].values()))
        elif judge is not None:
            from .emc2 import compositional_score
            scores[(depth, s)] = compositional_score(net, judge, concept, seed=s, progress=False,
                                                     **(score_kwargs or {}))
            row["score"] = scores[(depth, s)].score
        rows.append(row)
    return rows, scores


def sweep_line(sweeps: dict[str, DepthSweep], ratios: dict[str, float], res: int = RATIO_RES) -> DepthLine:
    """Fit the depth line on the sweeps' empirical optimal depths (:meth:`DepthSweep.peak`) vs ``ratios``."""
    names = [n for n in sweeps if n in ratios]
    if len(names) < 2:
        raise ValueError(f"sweeps/ratios: need at least two targets in both, got {sorted(sweeps)} / {sorted(ratios)}")
    return fit_depth_line([ratios[n] for n in names], [sweeps[n].peak() for n in names], res,
                          "empirical optimal depths of depth sweeps", names)
