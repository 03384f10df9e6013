"""Part A's chapter experiments as functions, so a chapter and ``python -m compbook.cppn experiments`` run the same
code (chapters 6, 8 and 9; chapter 7's sweep is :func:`compbook.cppn.depth.depth_sweep`).

Each runner trains and prunes exactly as its chapter explains; :func:`judged` scores the resulting networks
under the two judges of :func:`compbook.cppn.panel.default_panel` with 95% intervals.
``python -m compbook.cppn experiments --write`` runs every chapter's experiment in CPU mode with more seeds than a
chapter can afford live, and writes ``data/emc2/partA_reread.json``, which the chapters and the Part A claims table
(``notes_part_a_claims``) load.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ... import checks, results
from ...config import ModeConfig
from .. import panel, prune, train
from ..network import CPPN, uniform_cppn
from ..paper import figure
from ...results import door


# -- chapter 5: EMC2-Bench on Picbreeder and the SGD twins --------------------------------------------------------
@dataclass
class BenchConfig(ModeConfig):
    """Chapter 5's settings (our choices): the judged resolution, the main delta and the re-read's deltas, and
    what is scored live in the chapter (the stored re-read scores all of it)."""
    FULL = dict(res=256, live=("skull", "butterfly", "apple"), pb_sample=None, live_seeds=(0, 1, 2), sample=1000)
    SMOKE = dict(pb_sample=8, live_seeds=(0,), sample=8)
    SUBSET = dict(live=("skull",), live_seeds=(0,), sample=300)   # one target, one twin: the VLM's hours cut
    res: int = 64                       # resolution of judged renders
    delta: float = 0.5                  # the main delta
    deltas: tuple = (0.5, 1.0, 2.0)     # the re-read's deltas
    live: tuple = ("skull",)            # targets scored live
    pb_sample: int | None = 48          # Picbreeder weights scored live (None: all)
    live_seeds: tuple = (0,)            # SGD twins scored live
    sample: int = 100                   # weights per SGD twin


# -- chapter 6: pruning methods at matched sparsity -------------------------------------------------------------
@dataclass
class PruningConfig(ModeConfig):
    """Chapter 6's CPU-mode settings (our choices; ``full()`` for a GPU)."""
    res: int = 32
    depth: int = 6
    width: int = 16
    layout: dict = field(default_factory=lambda: {"sin": 4, "gaussian": 4, "tanh": 4, "sigmoid": 4})
    dense_steps: int = 800
    sp: dict = field(default_factory=lambda: dict(threshold=0.8, rounds=6, retrain_steps=100))
    lt_rounds: int = 3
    delta: float = 0.5           # EMC2's default perturbation (chapter 5)
    sample: int | None = 150     # weights scored per network (None: all)
    FULL = dict(res=128, dense_steps=8000, sp=dict(threshold=0.8, rounds=6, retrain_steps=1000), sample=None)
    SMOKE = dict(dense_steps=40, sp=dict(threshold=0.8, rounds=2, retrain_steps=10), lt_rounds=1, sample=8)

    @property
    def budget(self) -> int:
        """Training steps every method gets after pruning (SP spends its own inside its rounds)."""
        return self.sp["rounds"] * self.sp["retrain_steps"]


@dataclass
class PruningRun:
    """One seed of chapter 6: the dense network, SP's and the Lottery Ticket's results, every method's
    masks (``masks``, before retraining), the retrained networks ``final`` (name -> model, dense first) and
    their training curves after pruning."""
    init: CPPN
    dense: train.FitResult
    sp: prune.PruneResult
    lottery: prune.PruneResult
    masks: dict
    final: dict
    curves: dict
    retrain_seconds: float


def pruning_methods(target, seed: int = 0, cfg: PruningConfig | None = None) -> PruningRun:
    """Chapter 6 for one seed: dense fit, SP (its sparsity is the level for every method), magnitude, Wanda,
    Taylor-structured, random and Lottery Ticket at that level, then the same retraining budget for all."""
    cfg = cfg or PruningConfig()
    seed = checks.seed(seed)
    init = uniform_cppn(cfg.depth, cfg.width, cfg.layout, seed=seed)
    dense = train.fit(init, target, cfg.dense_steps, progress=False)
    sp = prune.similarity_prune(dense.model, target, seed=seed, **cfg.sp)
    level = sp.final_sparsity
    masks = matched_masks(dense.model, target, level, seed, cfg.res)
    lt = prune.lottery_ticket(init, target, level, rounds=cfg.lt_rounds, steps_per_round=cfg.dense_steps // 2)
    names = ["dense"] + list(masks) + ["lottery ticket"]
    start = [dense.model] + [dense.model.clone_with(masks=m) for m in masks.values()] + [lt.model]
    batch = train.fit_many(start, target, cfg.budget, progress=False)
    rest = train.fit(sp.model, target, cfg.budget - len(sp.curve), progress=False)
    final = dict(zip(names, batch.models)) | {"SP": rest.model}
    curves = {n: batch.losses[:, k] for k, n in enumerate(names)}
    curves["SP"] = np.concatenate([sp.curve, rest.losses])
    return PruningRun(init, dense, sp, lt, masks | {"lottery ticket": lt.masks, "SP": sp.masks}, final,
                      curves, batch.seconds)


def matched_masks(dense: CPPN, target, level: float, seed: int, res: int) -> dict:
    """Chapter 6's four baselines at sparsity ``level``: name -> masks (magnitude, Wanda, Taylor-structured,
    random with ``seed``), Wanda's input norms over a ``res x res`` grid."""
    return {"magnitude": prune.magnitude_prune(dense, level),
            "wanda": prune.wanda_prune(dense, level, res=res),
            "structured (Taylor)": prune.structured_prune(dense, target, sparsity=level),
            "random": prune.random_prune(dense, level, seed=seed)}


def pruning_from(dense: CPPN, target, seed: int = 0, cfg: PruningConfig | None = None) -> tuple[dict, float]:
    """Chapter 6's protocol from an already trained dense network (e.g. FER's, :func:`compbook.cppn.fer.load_fer`):
    SP with ``seed``, the four baselines of :func:`matched_masks` at SP's sparsity, the same retraining budget for
    all (the dense network too). No Lottery Ticket: it rewinds to the initial weights, which FER does not
    publish. Returns ``(method -> retrained model, SP's sparsity)``."""
    cfg = cfg or PruningConfig()
    seed = checks.seed(seed)
    checks.instance(dense, "dense", CPPN)
    sp = prune.similarity_prune(dense, target, seed=seed, **cfg.sp)
    masks = matched_masks(dense, target, sp.final_sparsity, seed, cfg.res)
    names = ["dense"] + list(masks)
    start = [dense] + [dense.clone_with(masks=m) for m in masks.values()]
    batch = train.fit_many(start, target, cfg.budget, progress=False)
    rest = train.fit(sp.model, target, max(0, cfg.budget - len(sp.curve)), progress=False)
    return dict(zip(names, batch.models)) | {"SP": rest.model}, sp.final_sparsity


# -- chapter 8: Adam against Muon on one masked architecture ----------------------------------------------------
@dataclass
class OptimizerConfig(ModeConfig):
    """Chapter 8's CPU-mode settings (our choices)."""
    res: int = 32
    depth: int = 6
    width: int = 8
    steps: int = 600
    grid: dict = field(default_factory=lambda: {"adam": [1e-2, 3e-2, 1e-1], "muon": [1e-2, 3e-2, 1e-1]})
    sp: dict = field(default_factory=lambda: dict(threshold=0.9, rounds=2, seed=0, retrain_steps=100))
    mask_seed: int = 100
    seeds: tuple = (0, 1, 2, 3, 4)   # trained together, same seed = same start for both optimizers
    delta: float = 1.0               # EMC2 perturbation (as in chapter 7)
    sample: int | None = 100         # weights scored per network (None: all)
    FULL = dict(res=128, depth=12, width=22, steps=10_000, sp=dict(threshold=0.9, rounds=2, seed=0, retrain_steps=1000),
                seeds=tuple(range(16)), sample=None)
    SMOKE = dict(steps=30, sp=dict(threshold=0.9, rounds=2, seed=0, retrain_steps=10), seeds=(0, 1), sample=8)


def finite_mean(x) -> float:
    """Mean that counts a diverged run (NaN) as infinitely bad."""
    if not np.size(x):
        raise ValueError("x: finite_mean needs at least one value, got none")
    if np.asarray(x).dtype.kind not in "fiuO":    # (object: a list with None for a run without a loss)
        raise ValueError(f"x must be numbers, got dtype {np.asarray(x).dtype} {x!r:.60}")
    return float(np.mean(np.nan_to_num(np.asarray(x, dtype=float), nan=np.inf)))


@dataclass
class OptimizerRun:
    """Chapter 8: the shared SP ``masks``, every ``(optimizer, lr)`` run, each optimizer's ``best`` rate (by
    mean final loss) and ``final`` (optimizer -> the FitResult at that rate)."""
    masks: list
    runs: dict
    best: dict
    final: dict


def optimizer_comparison(target, seeds, cfg: OptimizerConfig | None = None) -> OptimizerRun:
    """SP masks from one dense Adam fit (seed ``cfg.mask_seed``), then fresh weights per seed with those masks,
    trained by each optimizer at each rate of its grid (all seeds at once)."""
    from ..depth import mixed_layout
    checks.sequence(seeds, "seeds")
    cfg = cfg or OptimizerConfig()
    layout = mixed_layout(cfg.width)
    masks = optimizer_masks(target, cfg)

    def starts():
        return [uniform_cppn(cfg.depth, cfg.width, layout, seed=s).clone_with(masks=masks) for s in seeds]

    runs = {(opt, lr): train.fit_many(starts(), target, cfg.steps, lr=lr, optimizer=opt, progress=False)
            for opt, lrs in cfg.grid.items() for lr in lrs}
    return optimizer_run(masks, runs, cfg.grid)


def optimizer_run(masks, runs: dict, grid: dict) -> OptimizerRun:
    """Chapter 8: each optimizer's best rate of ``grid`` (optimizer -> rates) by mean final loss
    (:func:`finite_mean`) among ``runs`` ((optimizer, lr) -> FitResult), with ``masks``, as an :class:`OptimizerRun`."""
    best = {opt: min(lrs, key=lambda lr: finite_mean(runs[(opt, lr)].final_loss)) for opt, lrs in grid.items()}
    return OptimizerRun(masks, runs, best, {opt: runs[(opt, best[opt])] for opt in grid})


def optimizer_masks(target, cfg: OptimizerConfig | None = None) -> list:
    """Chapter 8's shared masks: a dense network (seed ``cfg.mask_seed``) fitted by Adam at lr 1e-2 to ``target``
    ``(res, res, 3)``, then similarity-pruned with ``cfg.sp``; one 0/1 ``(out, in)`` tensor per layer."""
    from ..depth import mixed_layout
    cfg = cfg or OptimizerConfig()
    dense = train.fit(uniform_cppn(cfg.depth, cfg.width, mixed_layout(cfg.width), seed=cfg.mask_seed), target,
                      cfg.steps, lr=1e-2, progress=False).model
    return prune.similarity_prune(dense, target, **cfg.sp).masks


# -- chapter 9: unknown targets, dense then SP ------------------------------------------------------------------
@dataclass
class UnknownConfig(ModeConfig):
    """Chapter 9's CPU-mode settings (our choices)."""
    res: int = 32
    width: int = 8
    steps: int = 600
    lr: float = 1e-2
    sp: dict = field(default_factory=lambda: dict(threshold=0.9, rounds=2, retrain_steps=100))
    depth_range: tuple = (8, 8)      # trained depth = the line's prediction clipped to this range
    seeds: tuple = (0, 1, 2)
    delta: float = 1.0               # EMC2 perturbation (as in chapters 7 and 8)
    sample: int | None = 20          # weights scored per network (None: all)
    FULL = dict(res=128, width=22, steps=5000, depth_range=(2, 32), seeds=tuple(range(8)), sample=None)
    # the smoke also renders at 64 px and caps depth at 8: a depth-32 network's 15,000 weights, each perturbed
    # and rendered at 128 px to find the important ones, take minutes on a CPU (CONTRIBUTING.md's smoke table)
    SMOKE = dict(steps=30, sp=dict(threshold=0.9, rounds=2, retrain_steps=10), seeds=(0,), sample=8, res=64,
                 depth_range=(2, 8))


def dense_and_sp(target, depth: int, seeds, cfg: UnknownConfig | None = None) -> tuple[list, list]:
    """Chapter 9 for one target: ``len(seeds)`` dense networks trained together, then each similarity-pruned.
    Returns ``(dense models, pruned models)``; ``seeds`` a non-empty list of seeds."""
    from ..depth import mixed_layout, train_depth
    seeds = [checks.seed(s, f"seeds[{i}]") for i, s in enumerate(checks.sequence(seeds, "seeds"))]
    cfg = cfg or UnknownConfig()
    return train_depth(target, depth, cfg.width, seeds, mixed_layout(cfg.width), steps=cfg.steps, lr=cfg.lr,
                       sp=cfg.sp)


def half_mse(model: CPPN, target, res: int) -> tuple[float, float]:
    """Chapter 9's composite: the MSE of ``model``'s ``res x res`` render to ``target`` ``(res, res, 3)`` on the
    left half (the butterfly) and on the right half (the apple)."""
    res = checks.check_render_size(res, 64, 4, "half_mse's render")
    if res < 2:
        raise ValueError(f"res must be >= 2 (two halves), got {res}")
    checks.tensor(target, "target", (res, res, 3))
    checks.unit_image(np.asarray(target), "target")
    err = (model.render(res).detach().numpy() - np.asarray(target)) ** 2
    return float(err[:, : res // 2].mean()), float(err[:, res // 2:].mean())


def half_selectivity(maps: torch.Tensor) -> torch.Tensor:
    """Chapter 9: how much of each map's variance sits on one half of the image: ``|var_left - var_right| /
    (var_left + var_right)`` for maps ``(..., H, W)`` (left: the first ``W // 2`` columns), in [0, 1], NaN for a
    constant map. 1: the map varies on one half only; 0: equally on both."""
    w = maps.shape[-1]
    vl = maps[..., : w // 2].flatten(-2).var(-1)
    vr = maps[..., w // 2:].flatten(-2).var(-1)
    return (vl - vr).abs() / (vl + vr)


def selective_fraction(model: CPPN, res: int, threshold: float = 0.8) -> tuple[float, int]:
    """Chapter 9: the share of alive hidden neurons whose feature map varies mostly on one half of the image
    (:func:`half_selectivity` above ``threshold``, our choice), and how many neurons are alive (total variance
    > 1e-8). Returns ``(share, n_alive)``."""
    res = checks.check_render_size(res, 64, 4, "selective_fraction's feature maps")
    checks.real(threshold, "threshold", 0, 1)
    sel = []
    for layer in model.feature_maps(res):
        vl = layer[:, :, : res // 2].flatten(1).var(1)
        vr = layer[:, :, res // 2:].flatten(1).var(1)
        alive = (vl + vr) > 1e-8
        sel += half_selectivity(layer)[alive].tolist()
    return float(np.mean(np.array(sel) > threshold)), len(sel)


# -- scoring under both judges ----------------------------------------------------------------------------------
def judged(groups: dict, concept: str, delta: float, judge_map: dict | None = None, sample: int | None = None,
           seed: int = 0, res: int = panel.SCORE_RES, **labels) -> list[dict]:
    """Score every network of ``groups`` (name -> list of models, e.g. the seeds of one method) under every
    judge of ``judge_map`` (default :func:`compbook.cppn.panel.default_panel`): one :func:`compbook.cppn.panel.summary`
    row per (name, judge), with ``labels``, ``delta``, ``sample``, the per-network counts ``k_n`` and the
    fraction of networks whose own render the judge accepts (``unperturbed``)."""
    judge_map = judge_map or panel.default_panel()
    rows = []
    for name, models in groups.items():
        verdicts = [panel.panel_verdicts(m, judge_map, concept, delta, res, sample, seed) for m in models]
        base = panel.unperturbed(models, judge_map, concept, res)
        for j in judge_map:
            g = [v[j] for v in verdicts]
            rows.append(panel.summary(g, **labels, name=name, judge=j) | {
                "delta": delta, "sample": sample, "k_n": [[int(x.sum()), len(x)] for x in g],
                "unperturbed": base[j]})
    return rows


# -- chapter 7 and 9's settings and targets ---------------------------------------------------------------------
@dataclass
class DepthConfig(ModeConfig):
    """Chapter 7's CPU-mode settings (our choices)."""
    targets: tuple = ("skull", "butterfly")
    res: int = 32
    width: int = 8
    depths: tuple = (1, 2, 3, 4, 6, 8, 12, 16)
    steps: int = 600
    lr: float = 1e-2
    sp: dict = field(default_factory=lambda: dict(threshold=0.9, rounds=2, retrain_steps=100))
    delta: float = 1.0
    # the live sweep: a subset of the stored one (``depths``, 5 seeds), to fit a CPU in minutes
    live_depths: tuple = (1, 2, 4, 8, 16)
    seeds: tuple = (0, 1)            # seeds per depth, trained together (fit_many)
    sample: int | None = 20          # weights scored per network (None: all)
    FULL = dict(targets=("skull", "butterfly", "apple"), res=128, width=22, steps=5000,
                sp=dict(threshold=0.9, rounds=2, retrain_steps=1000),
                live_depths=(2, 4, 6, 8, 10, 12, 14, 16, 20, 24, 32), seeds=tuple(range(8)), sample=None)
    SMOKE = dict(steps=30, sp=dict(threshold=0.9, rounds=2, retrain_steps=10), live_depths=(2, 8), seeds=(0,), sample=8)


def unknown_targets() -> tuple[dict, dict]:
    """Chapter 9's targets at 256 px: three ``skimage.data`` photographs centre-cropped, the Picbreeder
    butterfly and apple side by side at half size on a white canvas, and the two objects alone. Returns
    ``(images name -> (256, 256, 3) in [0, 1], concept name -> what it shows)``."""
    import skimage.data
    from ...book import images
    from .. import picbreeder
    genomes = {n: picbreeder.load_genome(n) for n in ("butterfly", "apple")}
    half = {n: picbreeder.render(g, 128) for n, g in genomes.items()}
    composite = np.ones((256, 256, 3))
    composite[64:192, :128] = half["butterfly"]
    composite[64:192, 128:] = half["apple"]
    full = {"astronaut": images.to_square(skimage.data.astronaut(), 256),
            "coffee": images.to_square(skimage.data.coffee(), 256),
            "chelsea (cat)": images.to_square(skimage.data.chelsea(), 256),
            "butterfly + apple": composite,
            "butterfly": picbreeder.render(genomes["butterfly"], 256),
            "apple": picbreeder.render(genomes["apple"], 256)}
    concepts = {"astronaut": "astronaut", "coffee": "cup of coffee", "chelsea (cat)": "cat",
                "butterfly + apple": "butterfly and apple", "butterfly": "butterfly", "apple": "apple"}
    return full, concepts


def target_panel(concept: str, target) -> dict:
    """The two judges for one of chapter 9's targets: the default judge where ``concept`` is one of the
    three Picbreeder concepts, else the same comparison against the ``target`` image itself (our choice)."""
    from ..judges.semantic import CONCEPTS
    return panel.default_panel() if concept in CONCEPTS else panel.default_panel(target)


# -- the command line: every chapter's experiment, more seeds, one file -----------------------------------------
#: Seeds and weights per network of the stored run (our choice: about 25 min on a 2-core CPU).
STORED = {"6": dict(seeds=list(range(8)), sample=300), "7": dict(seeds=[0, 1, 2, 3, 4], sample=100),
          "8": dict(seeds=list(range(12)), sample=200), "9": dict(seeds=[0, 1, 2, 3, 4], sample=100),
          "theory": dict(seeds=[], sample=None)}


#: the stored run of chapters 6-9 under ``data/``
STORED_FILE = "emc2/partA_reread.json"


def stored_path():
    """Where the stored run of chapters 6-9 is written (:func:`compbook.results.door.made_path`); readers fetch it by
    :func:`compbook.results.door.stored_path` of :data:`STORED_FILE`."""
    return door.made_path(STORED_FILE)


def run_chapter6(seeds, sample: int | None, runs: list | None = None, cfg: PruningConfig | None = None) -> dict:
    """Chapter 6's section of the stored run: ``runs``, one :class:`PruningRun` per seed (default: trained here;
    :func:`compbook.cppn.runs.tasks.run_chapter6` trains them on the runner), scored under both judges."""
    from .. import picbreeder
    cfg = cfg or PruningConfig()
    target = picbreeder.render(picbreeder.load_genome("skull"), cfg.res)
    runs = runs if runs is not None else [pruning_methods(target, s, cfg) for s in seeds]
    names = list(runs[0].final)
    groups = {n: [r.final[n] for r in runs] for n in names}
    return {"seeds": list(seeds), "config": cfg.__dict__, "levels": [r.sp.final_sparsity for r in runs],
            "mse": {n: [train.mse(m, target) for m in g] for n, g in groups.items()},
            "rows": judged(groups, "skull", 0.5, sample=sample)}


def run_chapter7(seeds, sample: int | None, sweeps: dict | None = None, cfg: DepthConfig | None = None) -> dict:
    """Chapter 7's section of the stored run: ``sweeps``, target -> its scored :class:`compbook.cppn.depth.DepthSweep`
    (default: trained and scored here; :func:`compbook.cppn.runs.tasks.run_chapter7` trains on the runner)."""
    from .. import depth, picbreeder
    cfg = cfg or DepthConfig()
    out = {"seeds": list(seeds), "config": cfg.__dict__, "targets": {}}
    for n in cfg.targets:
        g = picbreeder.load_genome(n)
        sw = sweeps[n] if sweeps is not None else depth.depth_sweep(
            picbreeder.render(g, cfg.res), list(cfg.depths), cfg.width, list(seeds), steps=cfg.steps, lr=cfg.lr,
            sp=cfg.sp, judge=panel.default_panel(), concept=n, score_kwargs=dict(delta=cfg.delta, sample=sample),
            progress=False)
        out["targets"][n] = {
            "ratio": depth.png_compression_ratio(picbreeder.render(g, depth.RATIO_RES)),
            "rows": sw.rows, "intervals": {j: sw.intervals(j) for j in (panel.DEFAULT, panel.SSIM)},
            "peak": {j: sw.peak(j) for j in (panel.DEFAULT, panel.SSIM)},
            "peak_frequencies": {j: sw.peak_frequencies(key=j) for j in (panel.DEFAULT, panel.SSIM)}}
    return out


def run_chapter8(seeds, sample: int | None, run: OptimizerRun | None = None,
                 cfg: OptimizerConfig | None = None) -> dict:
    """Chapter 8's section of the stored run: ``run`` (default: :func:`optimizer_comparison` here;
    :func:`compbook.cppn.runs.tasks.run_chapter8` trains on the runner), scored under both judges."""
    from .. import picbreeder
    cfg = cfg or OptimizerConfig()
    target = picbreeder.render(picbreeder.load_genome("skull"), cfg.res)
    run = run if run is not None else optimizer_comparison(target, list(seeds), cfg)
    return {"seeds": list(seeds), "config": cfg.__dict__, "best_lr": run.best,
            "mse": {o: [float(x) for x in r.final_loss] for o, r in run.final.items()},
            "rows": judged({o: r.models for o, r in run.final.items()}, "skull", 1.0, sample=sample)}


#: the depth every target of chapter 9's stored run trains at
STORED_DEPTH_9 = 8


def run_chapter9(seeds, sample: int | None, trained: dict | None = None, cfg: UnknownConfig | None = None) -> dict:
    """Chapter 9's section of the stored run: ``trained``, target -> ``(dense models, pruned models)`` (default:
    :func:`dense_and_sp` here; :func:`compbook.cppn.runs.tasks.run_chapter9` trains on the runner), scored."""
    from .. import depth
    from ...book import images
    cfg = cfg or UnknownConfig()
    full, concepts = unknown_targets()
    out = {"seeds": list(seeds), "config": cfg.__dict__, "depth": STORED_DEPTH_9, "targets": {}}
    for n, img in full.items():
        tgt = images.to_square(img, cfg.res)
        dense, pruned = trained[n] if trained is not None else dense_and_sp(tgt, out["depth"], list(seeds), cfg)
        out["targets"][n] = {
            "concept": concepts[n], "ratio": depth.png_compression_ratio(img),
            "mse": {"dense": [train.mse(m, tgt) for m in dense], "SP": [train.mse(m, tgt) for m in pruned]},
            "rows": judged({"dense": dense, "SP": pruned}, concepts[n], 1.0, target_panel(concepts[n], tgt),
                           sample=sample, target=n)}
    return out


def run_theory(seeds=(), sample=None) -> dict:
    """Chapters 3 and 4's checks in a few seconds: the Welch bound on optimised frames and ETFs; the book's
    rho model of the skull on a grid around its sweet spot."""
    from .. import frames, picbreeder, volume_ratio
    del seeds, sample   # the runners' common signature; these checks take neither
    gaps, etf = [], []
    for d in (2, 3, 4):
        for r in range(2, 9):
            c = frames.mutual_coherence(frames.minimise_coherence(r, d, steps=300, seed=r * 100 + d))
            gaps.append(c - frames.welch_bound(r, d))
        f = frames.simplex_etf(d)
        etf.append(abs(frames.mutual_coherence(f) - frames.welch_bound(len(f), d)))
    skull = volume_ratio.dag_from_genome(picbreeder.load_genome("skull"))
    w0, l0 = skull.width, skull.depth
    grid = {(w, l): volume_ratio.log_rho(skull, w, l) for w in range(1, w0 + 6) for l in range(1, l0 + 6)}
    finite = {k: v for k, v in grid.items() if math.isfinite(v)}
    best = max(finite, key=finite.get)
    steps_w = np.diff([grid[(w, l0)] for w in range(w0, w0 + 6)]) / math.log(10)
    steps_l = np.diff([grid[(w0, l)] for l in range(l0, l0 + 6)]) / math.log(10)
    return {"welch": {"frames": len(gaps), "min_gap": float(min(gaps)), "etf_gap": float(max(etf))},
            "volume": {"argmax": list(best), "sweet_spot": [w0, l0], "step_W": float(steps_w.mean()),
                       "step_L": float(steps_l.mean()),
                       "constant_steps": bool(np.ptp(steps_w) < 1e-6 * (1 + abs(steps_w).max())
                                              and np.ptp(steps_l) < 1e-6 * (1 + abs(steps_l).max()))}}


RUNNERS = {"theory": run_theory, "6": run_chapter6, "7": run_chapter7, "8": run_chapter8, "9": run_chapter9}


# -- FER's own SGD networks in chapters 6-8 (the paper's SGD side) -------------------------------------
FER_TARGETS = ("skull", "butterfly", "apple")
FER_KINDS = ("fer", "fertwin")   # FER's published networks; our twins of FER's architecture (data/emc2/fertwin_*)


def fer_networks(kind: str) -> dict[str, list[CPPN]]:
    """target -> trained dense networks of FER's architecture: ``"fer"``, FER's published SGD network (one per
    target, :func:`compbook.cppn.fer.load_fer`); ``"fertwin"``, the stored twins (targets without one are left
    out)."""
    from .. import fer, twins
    kind = checks.choice(kind, "kind", FER_KINDS)
    if kind == "fer":
        return {t: [fer.load_fer(t)] for t in FER_TARGETS}
    return {t: nets for t in FER_TARGETS if (nets := twins.load_fer_twins(t))}


def pooled_rows(rows: list[dict], **labels) -> list[dict]:
    """One :func:`compbook.cppn.panel.summary` row per (name, judge) over every network of ``rows`` (e.g. the
    three targets' rows of one method pooled: each network one group, its stored counts ``k_n``)."""
    out = []
    for key in dict.fromkeys((r["name"], r["judge"]) for r in rows):
        k_n = [kn for r in rows if (r["name"], r["judge"]) == key for kn in r["k_n"]]
        out.append(panel.summary(panel.groups_from_counts(k_n), name=key[0], judge=key[1], **labels)
                   | {"k_n": k_n})
    return out


def run_chapter6_fer(seeds, sample: int | None) -> dict:
    """Chapter 6's protocol (:func:`pruning_from`) on FER's networks (SP seeds ``seeds`` each) and on the FER
    twins (one SP seed per twin, its index), scored at chapter 6's delta; rows per target, and pooled over the
    targets (``target="all"``). ``published``: the dense network as trained, before any pruning or retraining."""
    from .. import picbreeder
    cfg = PruningConfig()
    out = {"seeds": list(seeds), "config": cfg.__dict__, "delta": cfg.delta, "rows": [], "levels": {}, "mse": {}}
    for kind in FER_KINDS:
        for t, nets in fer_networks(kind).items():
            target = picbreeder.render(picbreeder.load_genome(t), cfg.res)
            jobs = [(nets[0], s) for s in seeds] if kind == "fer" else list(zip(nets, range(len(nets))))
            runs = [pruning_from(m, target, s, cfg) for m, s in jobs]
            groups = {"published": nets} | {n: [r[0][n] for r in runs] for n in runs[0][0]}
            out["levels"][f"{kind} {t}"] = [r[1] for r in runs]
            out["mse"][f"{kind} {t}"] = {n: [train.mse(m, target) for m in g] for n, g in groups.items()}
            out["rows"] += judged(groups, t, cfg.delta, sample=sample, kind=kind, target=t)
        out["rows"] += pooled_rows([r for r in out["rows"] if r["kind"] == kind], kind=kind, target="all",
                                   delta=cfg.delta, sample=sample)
    return out


def run_chapter7_fer(seeds, sample: int | None) -> dict:
    """FER's networks at their known depths, beside chapter 7's sweep: per target the depth, width, PNG ratio
    (256 px) and the depth the default line predicts; the scores at chapter 7's delta of FER's network as
    published, of it pruned by chapter 7's SP (one per seed in ``seeds``), and of the stored FER twins."""
    from .. import depth, fer, picbreeder, twins
    cfg = DepthConfig()
    out = {"seeds": list(seeds), "config": cfg.__dict__, "line": [depth.DEFAULT_LINE.slope,
                                                                    depth.DEFAULT_LINE.intercept], "targets": {}}
    for t in FER_TARGETS:
        model, g = fer.load_fer(t), picbreeder.load_genome(t)
        img, target = picbreeder.render(g, depth.RATIO_RES), picbreeder.render(g, cfg.res)
        pruned = [prune.similarity_prune(model, target, lr=cfg.lr, seed=s, **cfg.sp).model for s in seeds]
        groups = {"FER": [model], "FER + SP": pruned} | ({"FER twins": tw} if (tw := twins.load_fer_twins(t))
                                                          else {})
        ratio = depth.png_compression_ratio(img)
        out["targets"][t] = {"depth": model.depth, "width": len(model.activations[0]), "ratio": ratio,
                             "line": float(depth.DEFAULT_LINE(ratio)), "predicted": depth.predict_depth(img),
                             "sparsity": [prune.sparsity(m.masks) for m in pruned],
                             "rows": judged(groups, t, cfg.delta, sample=sample, target=t)}
    return out


@dataclass
class FerOptimizerConfig(ModeConfig):
    """Chapter 8 on FER's architecture (our choices): dense networks of ``arch`` (None: FER's for ``target``),
    FER's trainer (unit-normalised gradient, no straight-through clip, last weights) at ``res`` for ``steps``
    full-batch steps, each optimizer at its best rate of ``grid`` (by mean final loss)."""
    target: str = "skull"
    arch: str | None = None
    res: int = 64
    steps: int = 3000
    grid: dict = field(default_factory=lambda: {"adam": [1e-3, 3e-3, 1e-2], "muon": [1e-2, 3e-2, 1e-1]})
    delta: float = 1.0               # chapter 8's
    FULL = dict(res=figure("fer_res"), steps=figure("fer_steps"))   # FER's
    SMOKE = dict(steps=20)


def fer_optimizers(seeds, cfg: FerOptimizerConfig | None = None) -> OptimizerRun:
    """Adam against Muon on dense networks of FER's architecture, seeds ``seeds`` (same seed, same start), every
    rate of ``cfg.grid``; ``masks`` is None (dense)."""
    from .. import fer, picbreeder
    cfg = cfg or FerOptimizerConfig()
    checks.sequence(seeds, "seeds")
    arch = cfg.arch or fer.FER_ARCH[checks.choice(cfg.target, "cfg.target", FER_TARGETS)]
    target = picbreeder.render(picbreeder.load_genome(cfg.target), cfg.res)
    runs = {(opt, lr): train.fit_many([CPPN(fer.arch_layout(arch), "hsv", seed=s) for s in seeds], target,
                                      cfg.steps, lr=lr, optimizer=opt, progress=False, straight_through=False)
            for opt, lrs in cfg.grid.items() for lr in lrs}
    return optimizer_run(None, runs, cfg.grid)


def run_chapter8_fer(seeds, sample: int | None, run: OptimizerRun | None = None,
                     cfg: FerOptimizerConfig | None = None) -> dict:
    """Chapter 8 on FER's architecture for the stored run: ``run`` (default: :func:`fer_optimizers` here;
    :func:`compbook.cppn.runs.tasks.run_chapter8_fer` trains on the runner), scored under both judges."""
    cfg = cfg or FerOptimizerConfig()
    run = run if run is not None else fer_optimizers(list(seeds), cfg)
    return {"seeds": list(seeds), "config": cfg.__dict__, "best_lr": run.best,
            "grid_mse": [[o, lr, [float(x) for x in r.final_loss]] for (o, lr), r in run.runs.items()],
            "train_seconds": {f"{o} {lr:g}": round(r.seconds, 1) for (o, lr), r in run.runs.items()},
            "mse": {o: [float(x) for x in r.final_loss] for o, r in run.final.items()},
            "rows": judged({o: r.models for o, r in run.final.items()}, cfg.target, cfg.delta, sample=sample)}


STORED |= {"6fer": dict(seeds=[0, 1, 2], sample=200), "7fer": dict(seeds=[0, 1, 2], sample=100),
           "8fer": dict(seeds=[0, 1, 2], sample=200)}
RUNNERS |= {"6fer": run_chapter6_fer, "7fer": run_chapter7_fer, "8fer": run_chapter8_fer}


def run_stored(chapters, write: bool = False, command: str = "python -m compbook.cppn experiments",
               log=None, runners: dict | None = None) -> dict:
    """Run each of ``chapters`` (keys of :data:`RUNNERS`) with its :data:`STORED` settings, each section with
    ``made_by``, ``sample`` and ``seconds``, into the stored file's content (:func:`stored_path`, its other
    sections kept); with ``write``, the file is rewritten after each chapter (a long run keeps what it has; its
    ``made_by``: ``command --write``, recorded in the registry).
    ``log``: called with a line per chapter done. ``runners``: chapter -> runner (default :data:`RUNNERS`, all in
    this process; :func:`compbook.cppn.runs.tasks.stored_runners` trains on the sweep runner)."""
    import time

    from ... import results
    runners = RUNNERS if runners is None else checks.instance(runners, "runners", dict)
    for ch in checks.sequence(chapters, "chapters"):
        checks.choice(ch, "chapters", runners)
    path = stored_path()
    data = results.json_file(path, "stored Part A results") if path.is_file() else {}
    for ch in chapters:
        t0 = time.perf_counter()
        out = runners[ch](**STORED[ch])
        out |= {"made_by": f"{command} --write --chapters {ch}", "sample": STORED[ch]["sample"],
                "seconds": round(time.perf_counter() - t0, 1)}
        data[ch if ch == "theory" else f"chapter{ch}"] = out
        if log:
            log(f"chapter {ch}: {out['seconds']} s")
        if write:
            results.write_json(path, data, f"{command} --write", indent=0, default=float)
    return data

