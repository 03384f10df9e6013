"""The figures Part B quotes from its paper, each written once (chapters 10-13 and their notes).

Uselis, Koishigarina and Oh, *How can embedding models bind concepts?* (ICML 2026). ``source`` says where a
figure comes from: ``"paper"`` (its text and figures, CLIP ViT-B/32 where it names a model) or ``"released
code"`` (its public code, ``oshapio/binding-concepts-complexity``: the released training recipe). Chapters glue
each figure from :data:`FIGURES` (``paper.figure("level1_r2")["text"]``) and code reads it from here
(:class:`compbook.binding.recipe.config.RecipeConfig`'s ``FULL``, the complexity probe's full widths), never
typing it again.
"""

from __future__ import annotations

from ..papers import Figure, lookup

FIGURES = {
    # the data
    "clevr2d": Figure({"colours": 8, "shapes": 3, "objects": 24, "scenes": 576}, "paper",
                      "CLEVR-2D: colours x shapes = objects; ordered two-object scenes"),
    # chapter 11: scenes are sums (CLIP ViT-B/32)
    "level1_r2": Figure({"text": (0.90, 0.92), "CLEVR images": (0.78, 0.83), "random-init CLIP, images": (0.47, 0.69)},
                        "paper", "Level I R^2 (scene = sum of object vectors), (averaged, per slot)"),
    "removal": Figure({"concepts before": 1.00, "concepts after": 0.06, "objects after": 0.99}, "paper",
                      "probe accuracy after subtracting the additive concept part (CLEVR)"),
    "edit_top1": Figure({"averaged": 1.00, "single object": 0.97}, "paper",
                        "counterfactual edits on CLEVR: top-1 retrieval of the edited scene, by object vectors"),
    # chapter 12: the binding function's complexity (CLIP)
    "complexity_concepts": Figure((0.8, 0.3), "paper",
                                  "(concept decoding of the MLP's predictions at least, once coverage exceeds)"),
    "complexity_objects": Figure((0.2, 4096, 0.9), "paper",
                                 "(object decoding at most about, even at width, and coverage)"),
    "complexity_widths": Figure((64, 128, 256, 512, 1024, 2048, 4096), "paper", "hidden widths of the MLP probe"),
    # chapter 13: controlled models
    "transition": Figure((0.3, 0.4), "paper",
                         "coverage between which unseen-object recognition jumps from chance to near perfect, "
                         "|O| = 125,000"),
    "transition_objects": Figure(125_000, "paper", "|O| of the transition figure"),
    "coverage_enough": Figure((0.3, 2500), "paper", "(about this coverage suffices, once |O| is at least)"),
    "n_models": Figure(500, "paper", "controlled models (about) behind the global-product correlation"),
    "params_per_encoder": Figure(20_000_000, "paper", "parameters per encoder of the controlled models (about)"),
    "d_out": Figure(512, "paper", "output dimension of the controlled encoders"),
    "released_recipe": Figure({"n_layers": 6, "d_model": 256, "d_ff": 2048, "steps": 50_000, "batch": 512,
                               "lr": 3e-5}, "released code", "the released controlled-model training recipe"),
}


def figure(name: str):
    """The value of :data:`FIGURES` ``[name]``; ``ValueError`` naming the known figures otherwise."""
    return lookup(FIGURES, name)
