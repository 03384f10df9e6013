"""What the recipe's tests share: a tiny config, a naive token encoding and one batch."""

import numpy as np

from compbook.binding.recipe.config import RecipeConfig
from compbook.binding.recipe.data import batch_queries, sample_recipe_scenes, split_objects


def tiny(**kw) -> RecipeConfig:
    """A recipe config small enough to train in a second (fields in ``kw`` replace the tiny ones)."""
    base = dict(n_values=6, d_model=16, n_heads=2, n_layers=1, d_ff=32, d_out=8, steps=6, batch=16,
                eval_every=3, eval_scenes=40, eval_batches=2, n_concept_queries=8, n_object_queries=8)
    base.update(kw)
    return RecipeConfig(**base)


def naive_tokens(cfg, scene) -> list:
    """A scene's tokens by a plain loop (the released layout: objects, eos, pads)."""
    tok = []
    for o in scene:
        if o < 0:
            continue
        vals = [(o // cfg.n_values ** k) % cfg.n_values for k in range(cfg.n_concepts)]
        tok += [cfg.soo] + [v + k * cfg.n_values for k, v in enumerate(vals)] + [cfg.eoo]
    tok += [cfg.eos]
    return tok + [cfg.pad] * (cfg.scene_len - len(tok))


def one_batch(cfg, seed: int = 9):
    """(scenes, queries) of one training batch."""
    rng = np.random.default_rng(seed)
    s = sample_recipe_scenes(cfg, split_objects(cfg)[0], cfg.batch, rng)
    return s, batch_queries(cfg, s, rng)
