"""Part A's full-mode time per chapter (chapters 1-9 and Part A's notes), as :class:`compbook.runs.estimate.Work` items
read from the chapters' ``FULL`` configs; :func:`say` is the line each chapter's first cell prints.

What is counted (our reading of each chapter's code cells; the constants below are our choices):

* training a CPPN: 6 x weights x pixels per step per network (networks trained together share their steps);
  a step launches :data:`KERNELS_PER_LAYER` kernels per layer;
* EMC2 scoring: one render per perturbed weight ("plus" sign policy: 2 x weights x pixels), in batches of
  :data:`RENDER_BATCH` renders, plus the judge's cost. Chapters 6-9 judge with the default judge and SSIM (both
  multi-scale SSIM, :data:`SSIM_FLOPS_PER_PIXEL`); chapter 5 asks the VLM when a GPU is there, and its generation
  dominates: :data:`VLM_FLOPS_PER_TOKEN` x up to :data:`VLM_TOKENS` tokens per render, one token per step of
  a batch of :data:`VLM_BATCH`. Scoring every weight (``sample=None``) counts a pruned network's weights as
  the dense ones (an upper bound); chapter 9 trains every target at the range's deepest (an upper bound).
"""

from __future__ import annotations

import math

from ... import checks
from ...runs.estimate import Work, parts as parts_of, say as say_works, sized, training
from . import experiments
from .. import fer, frames, panel, volume_ratio

#: kernels one training step launches per layer: forward, backward, optimizer (our choice)
KERNELS_PER_LAYER = 10
#: renders per batch when scoring (our choice; the GPU's memory allows more at 64 px, fewer at 256)
RENDER_BATCH = 64
#: the default judge and SSIM: multi-scale SSIM at 64, 32 and 16 px, about this many FLOPs per pixel each (ours)
SSIM_FLOPS_PER_PIXEL = 300
#: the VLM judge (paper A's Qwen3-VL-4B-Thinking): 2 x 4e9 FLOPs per generated token, up to 1024 tokens a render
VLM_FLOPS_PER_TOKEN, VLM_TOKENS = 2 * 4e9, 1024
#: renders per ``generate`` call (:class:`compbook.cppn.judges.vlm.VLMJudge`'s default) and kernels per token
VLM_BATCH, VLM_KERNELS = 8, 500
#: the layerized Picbreeder genomes: hidden layers, weights, nonzero (scored) weights (a test counts them again)
PICBREEDER = {"skull": (11, 2640, 144), "butterfly": (16, 4986, 281), "apple": (33, 27115, 918)}


def weights(depth: int, width: int) -> int:
    """Weights of a dense CPPN with ``depth`` hidden layers of ``width``: 4 inputs, 3 outputs."""
    return 4 * width + (depth - 1) * width * width + 3 * width


def fit(n_weights: float, depth: int, res: int, steps: int, nets: int = 1, what: str = "") -> Work:
    """``nets`` CPPNs of ``n_weights`` each trained together at ``res`` px for ``steps`` steps."""
    return training(n_weights * nets, res * res, steps, KERNELS_PER_LAYER * (depth + 1), what)


def scoring(n_weights: float, depth: int, renders: float, res: int = panel.SCORE_RES, judges: int = 2) -> list:
    """EMC2 scores of ``renders`` perturbed renders of a network of ``n_weights`` at ``res`` px by ``judges``
    SSIM judges."""
    pixels = res * res
    return [Work(2.0 * n_weights * pixels * renders, math.ceil(renders / RENDER_BATCH), 3 * (depth + 1), "renders"),
            Work(judges * SSIM_FLOPS_PER_PIXEL * pixels * renders, 0, 1, "judges")]


def vlm_judge(renders: float) -> Work:
    """The VLM judge's generation for ``renders`` renders (chapter 5 with a GPU)."""
    return Work(VLM_FLOPS_PER_TOKEN * VLM_TOKENS * renders, math.ceil(renders / VLM_BATCH) * VLM_TOKENS,
                VLM_KERNELS, "VLM judge")


def scored_network(depth: int, width: int, sample, res: int = panel.SCORE_RES) -> list:
    """Scoring one dense-shaped network of ``depth`` x ``width``: every weight (``sample=None``) or ``sample``."""
    n = weights(depth, width)
    return scoring(n, depth, n if sample is None else min(sample, n), res)


def fer_depth_width(name: str) -> tuple[int, int]:
    """FER's architecture for ``name``: (hidden layers, width) from :data:`compbook.cppn.fer.FER_ARCH`."""
    depth, layout = fer.FER_ARCH[name].split(";")
    return int(depth), sum(int(part.split(":")[1]) for part in layout.split(","))


def ch01(subset: bool = False) -> list:
    """Chapter 1: FER's three networks at FER's resolution and steps (:func:`compbook.cppn.paper.figure`)."""
    from ..paper import figure
    res, steps = figure("fer_res"), figure("fer_steps")
    return [fit(weights(d, w), d, res, steps, what=n) for n in ("skull", "butterfly", "apple")
            for d, w in [fer_depth_width(n)]]


def ch02(subset: bool = False) -> list:
    """Chapter 2: no size knobs (the same small frames as CPU mode)."""
    return [Work(0.0, 0, 1, "no full-mode knobs")]


def ch03(subset: bool = False) -> list:
    """Chapter 3: ``n_mc`` Monte Carlo masks of at most 18 edges for each of its cases (about 20, our count)."""
    cfg = sized(volume_ratio.VolumeConfig, subset)
    return [Work(20 * cfg.n_mc * 18 * 18 * 2.0, 20, 10, "Monte Carlo masks")]


def ch04(subset: bool = False) -> list:
    """Chapter 4: :func:`compbook.cppn.frames.coherence_sweep` (restarts batched), then the optimised frames."""
    cfg = sized(frames.WelchConfig, subset)
    frames_n = (cfg.r_max - 1) * len(cfg.d_values) * 2
    return [Work(0.0, frames_n * cfg.steps, 10, "frames")]


def ch05(subset: bool = False) -> list:
    """Chapter 5: every Picbreeder weight and ``sample`` weights of each SGD twin, rendered at ``res`` px and asked
    of the VLM (the judge full mode uses where a GPU is there: it dominates)."""
    cfg = sized(experiments.BenchConfig, subset)
    out = []
    for name in cfg.live:
        depth, n, scored = PICBREEDER[name]
        for renders in [scored if cfg.pb_sample is None else min(cfg.pb_sample, scored)] + \
                [min(cfg.sample, n)] * len(cfg.live_seeds):
            out += scoring(n, depth, renders, cfg.res, judges=0)[:1] + [vlm_judge(renders)]
    return out


def ch06(subset: bool = False) -> list:
    """Chapter 6: one seed's dense fit, SP's rounds, the Lottery Ticket's, the batched retraining of six networks,
    then seven networks scored."""
    c = sized(experiments.PruningConfig, subset)
    n = weights(c.depth, c.width)
    out = [fit(n, c.depth, c.res, c.dense_steps, what="dense"),
           fit(n, c.depth, c.res, c.budget, what="SP"),
           fit(n, c.depth, c.res, c.lt_rounds * (c.dense_steps // 2), what="lottery ticket"),
           fit(n, c.depth, c.res, c.budget, nets=6, what="retraining")]
    return out + 7 * scored_network(c.depth, c.width, c.sample)


def ch07(subset: bool = False) -> list:
    """Chapter 7: per target and depth, ``seeds`` networks trained together, similarity-pruned, every weight
    scored."""
    c = sized(experiments.DepthConfig, subset)
    sp_steps = c.sp["rounds"] * c.sp["retrain_steps"]
    out = []
    for _ in c.targets:
        for d in c.live_depths:
            out.append(fit(weights(d, c.width), d, c.res, c.steps + sp_steps, nets=len(c.seeds), what=f"depth {d}"))
            out += len(c.seeds) * scored_network(d, c.width, c.sample)
    return out


def ch08(subset: bool = False) -> list:
    """Chapter 8: the masks' dense fit and SP, each optimizer at each rate on every seed (trained together), the
    two best runs' networks scored."""
    c = sized(experiments.OptimizerConfig, subset)
    n, runs = weights(c.depth, c.width), sum(len(v) for v in c.grid.values())
    out = [fit(n, c.depth, c.res, c.steps + c.sp["rounds"] * c.sp["retrain_steps"], what="masks"),
           *[fit(n, c.depth, c.res, c.steps, nets=len(c.seeds), what="grid") for _ in range(runs)]]
    return out + 2 * len(c.seeds) * scored_network(c.depth, c.width, c.sample)


def ch09(subset: bool = False) -> list:
    """Chapter 9: six targets, each at the deepest of ``depth_range`` (an upper bound): dense networks per seed
    trained together, then SP, both scored."""
    c = sized(experiments.UnknownConfig, subset)
    d, targets = c.depth_range[1], 6
    n = weights(d, c.width)
    out = []
    for _ in range(targets):
        out.append(fit(n, d, c.res, c.steps + c.sp["rounds"] * c.sp["retrain_steps"], nets=len(c.seeds)))
        out += 2 * len(c.seeds) * scored_network(d, c.width, c.sample)
    return out


def notes_claims(subset: bool = False) -> list:
    """Part A's claims notes: a few fits at 32 px (stored results otherwise; the same in both modes)."""
    d, _, _ = PICBREEDER["apple"]
    return [fit(PICBREEDER["apple"][1], d, 32, 1000, what="gradient checks")]


def notes_judges(subset: bool = False) -> list:
    """Part A's judges notes: stored verdicts and chapter 5's twelve reader items (no training)."""
    return [Work(0.0, 0, 1, "stored verdicts")]


CHAPTERS = {"ch01": ch01, "ch02": ch02, "ch03": ch03, "ch04": ch04, "ch05": ch05, "ch06": ch06, "ch07": ch07,
            "ch08": ch08, "ch09": ch09, "notes_part_a_claims": notes_claims, "notes_part_a_judges": notes_judges}


def works(chapter: str, subset: bool = False) -> list:
    """``chapter``'s full-mode work (a key of :data:`CHAPTERS`), with its ``SUBSET`` where ``subset``."""
    return CHAPTERS[checks.choice(chapter, "chapter", tuple(CHAPTERS))](subset)


def say(chapter: str) -> str:
    """The note ``chapter``'s first cell prints: its CPU run time, its full-mode time and how to run it."""
    return say_works(works(chapter), works(chapter, subset=True), page=chapter)


def say_parts(chapter: str) -> dict:
    """:func:`say`'s note for ``chapter`` as data (:func:`compbook.runs.estimate.parts`): ``cpu``, ``cpu_time``,
    ``full_time`` (the time at the paper's scale, ``"about 5.9 h on one A100 GPU (12 h on a T4)"``) and ``command``
    (the sentence saying how to run it). Chapter 5 words its note from these."""
    return parts_of(works(chapter), works(chapter, subset=True), page=chapter)
