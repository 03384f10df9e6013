"""Part B's full-mode time per chapter (chapters 10-13 and Part B's notes), as :class:`compbook.runs.estimate.Work`
items read from the ``FULL`` configs; :func:`say` is the line each chapter's first cell prints.

What is counted (our reading of the chapters' code; the constants are our choices): training is 3 x the forward
FLOPs per sample (forward and backward: 6 x parameters x tokens for a transformer); the dual encoders' forward is
the CNN's convolutions plus the caption transformer (:func:`dual_forward`); a controlled model or the recipe's is a
transformer of ``n_layers`` x ``d_model`` over short object sequences (:data:`SCENE_TOKENS`). A chapter that
reads an earlier chapter's models counts only its own work (book order: chapter 11 reads chapter 10's encoders).
"""

from __future__ import annotations

from ... import checks
from ...runs.estimate import Work, say as say_works, sized, training
from .. import clevr, complexity, controlled
from ..recipe import config as recipe_config
from . import sweep

#: kernels one training step launches (forward, backward, optimizer; our choice)
KERNELS = {"dual": 150, "transformer_layer": 40}
#: tokens of one object in a scene sequence: one per concept, plus a separator (our reading)
SCENE_TOKENS = 1


def dual_forward(enc) -> float:
    """Forward FLOPs of one (image, caption) pair through a dual encoder of
    :class:`~compbook.binding.encoders.EncoderConfig` ``enc``: stride-4 stem, two stride-2 3x3 convolutions, the
    caption transformer."""
    c1, c2, c3 = enc.channels
    r = enc.res
    image = 2 * (48 * c1 * (r // 4) ** 2 + 9 * c1 * c2 * (r // 8) ** 2 + 9 * c2 * c3 * (r // 16) ** 2)
    return image + 2 * enc.max_len * enc.layers * 12 * enc.width ** 2


def dual_training(setup) -> Work:
    """``setup.n_models`` dual encoders (one stack) trained for ``setup.steps`` steps of ``setup.batch`` pairs."""
    flops = 3 * dual_forward(clevr.encoder_config(setup)) * setup.batch * setup.steps * setup.n_models
    return Work(flops, setup.steps, KERNELS["dual"], "dual encoders")


def transformer(n_layers: int, d_model: int, d_ff: int, tokens: float, steps: int, n_models: int = 1) -> Work:
    """``n_models`` transformers (one stack) trained for ``steps`` steps of ``tokens`` tokens each."""
    params = n_layers * (4 * d_model ** 2 + 2 * d_model * d_ff)
    return training(params * n_models, tokens, steps, KERNELS["transformer_layer"] * n_layers, "transformer")


def ch10(subset: bool = False) -> list:
    """Chapter 10: the plain and the swap-negative encoders, ``n_models`` each, trained where not stored."""
    setup = sized(clevr.Setup, subset)
    return [dual_training(setup), dual_training(setup)]


def ch11(subset: bool = False) -> list:
    """Chapter 11: chapter 10's plain encoders on the 576 two-object scenes and their singles (no training)."""
    enc = clevr.encoder_config(sized(clevr.Setup, subset))
    return [Work(dual_forward(enc) * (576 + 2 * 24) * 2, 10, KERNELS["dual"], "embeddings")]


def ch12(subset: bool = False) -> list:
    """Chapter 12: the complexity probes on both encoders' embeddings, widths 64, 256, 1024, two probes each (our
    reading: concept and object), ``steps`` Adam steps of ``batch`` pairs; the toy section is CPU mode's."""
    cfg = sized(complexity.ComplexityConfig, subset)
    enc = clevr.encoder_config(sized(clevr.Setup, subset))
    out = []
    for width in (64, 256, 1024):
        params = width * (2 * enc.d_out + cfg.table_dim) + width * width
        out += [training(params, cfg.batch, cfg.steps, 10, f"probe {width}")] * 2 * 2
    return out


def controlled_models(cfg, n_models: int) -> Work:
    """``n_models`` controlled models of :class:`~compbook.binding.controlled.ControlledConfig` ``cfg`` (one
    stack): scenes of two objects, their swap negatives and the object queries per step."""
    seq = cfg.n_concepts * 2 + SCENE_TOKENS      # two objects of one token per concept
    tokens = cfg.batch * (2 + cfg.n_swaps) * seq   # scenes, their swap negatives and the object queries
    return transformer(cfg.n_layers, cfg.d_model, 4 * cfg.d_model, tokens, cfg.steps, n_models)


def ch13(subset: bool = False) -> list:
    """Chapter 13: the coverage sweep, ``coverages x seeds`` controlled models per object-space size
    (:func:`compbook.binding.runs.sweep.run_size`, stacks of same-size models), trained where not stored for these
    settings (counted here as one stack per size: the same work)."""
    sw, cfg = sized(sweep.SweepConfig, subset), sized(controlled.ControlledConfig, subset)
    return [controlled_models(cfg, len(sw.coverages) * len(sw.seeds)) for _ in sw.n_values]


def paper_sweep(sizes=(5, 14, 50), seeds: int = 19) -> list:
    """A sweep of the paper's size (about ``paper.figure("n_models")`` controlled models; README's command):
    chapter 13's full-mode models, its nine coverages x ``seeds`` seeds for each of ``sizes``."""
    sw, cfg = sized(sweep.SweepConfig), sized(controlled.ControlledConfig)
    checks.integer(seeds, "seeds")
    return [controlled_models(cfg, len(sw.coverages) * seeds) for _ in checks.sequence(sizes, "sizes")]


def recipe_run(cfg) -> Work:
    """One released-recipe model (:class:`~compbook.binding.recipe.config.RecipeConfig` ``cfg``): a scene and a
    query encoder; scenes, swap negatives and the concept and object queries per step."""
    seq = cfg.max_objects * cfg.n_concepts + SCENE_TOKENS
    tokens = cfg.batch * (1 + cfg.n_swaps) * seq + (cfg.n_concept_queries + cfg.n_object_queries) * cfg.n_concepts
    w = transformer(cfg.n_layers, cfg.d_model, cfg.d_ff, tokens, cfg.steps, n_models=2)
    return Work(w.flops, w.steps, w.kernels, "recipe model")


def notes(subset: bool = False) -> list:
    """Part B's notes: the go / no-go model, the overfit one (|O| = 125, 2000 steps), the dense-query one, |O| = 400
    and the learning-rate variant, each trained where not stored
    (:func:`compbook.binding.recipe.train.stored_or_trained`)."""
    import dataclasses
    go = dataclasses.replace(sized(recipe_config.RecipeConfig, subset), coverage=0.5)
    variants = [go, dataclasses.replace(go, n_values=5, coverage=0.8, steps=2000),
                dataclasses.replace(go, n_object_queries=1024, n_swaps=2),
                dataclasses.replace(go, coverage=0.8, n_values=20), dataclasses.replace(go, lr=1e-3)]
    return [recipe_run(v) for v in variants]


CHAPTERS = {"ch10": ch10, "ch11": ch11, "ch12": ch12, "ch13": ch13, "notes_part_b_coverage": notes}


def works(chapter: str, subset: bool = False) -> list:
    """``chapter``'s full-mode work (a key of :data:`CHAPTERS`), with its configs' ``SUBSET`` where ``subset``."""
    return CHAPTERS[checks.choice(chapter, "chapter", tuple(CHAPTERS))](subset)


def say(chapter: str) -> str:
    """The note ``chapter``'s first cell prints: its CPU run time, its full-mode time and how to run it."""
    return say_works(works(chapter), works(chapter, subset=True), page=chapter,
                     scale="at the paper's scale")          # Part B follows one paper
