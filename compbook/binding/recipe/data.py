"""The recipe's data (chapter 13): object space, fresh scenes, tokens, per-batch queries, as released.

Facts kept from the released code (``oshapio/binding-concepts-complexity``, ``scenes.py``, ``train_clean.py``;
read, not copied; settings in :class:`~compbook.binding.recipe.config.RecipeConfig`):

* object space: C concepts x V values, object id ``o`` has values ``(o // V**k) % V`` (the first concept
  fastest: the released convention, not :class:`compbook.scenes.ObjectSpace`'s); the split shuffles the ids with
  ``np.random.RandomState(split_seed).permutation`` and keeps the first ``int(|O| coverage)`` (at least 1, at
  most ``|O| - 1``) as training objects;
* scenes: fresh every step, each with 1..``max_objects`` objects (uniform count), objects drawn uniformly with
  replacement from the allowed objects; tokens ``[soo, v_0, V + v_1, ..., eoo] * n + [eos]`` then pads;
* queries built per batch: the batch's distinct concept values (at most 64, a random subset) as ``[value, eos]``,
  and its distinct present objects (at most 64) plus 1 swap negative per multi-object scene (one concept of one
  object replaced by the other object's) as ``[soo, values, eoo, eos]``; labels = which queries each scene holds.

Our diagnostics' data: :func:`binding_scenes` (two-object scenes whose objects differ in every concept) and
:func:`swap_sets` (every recombination of their values).
"""

from __future__ import annotations

import numpy as np
import torch

from ... import checks
from .config import RecipeConfig


def object_values(cfg: RecipeConfig, ids) -> np.ndarray:
    """(N, C) concept values of object ids (released convention: value k = (id // V**k) % V)."""
    ids = checks.integers(ids, "ids", 0, cfg.n_objects - 1)
    base = cfg.n_values ** np.arange(cfg.n_concepts, dtype=np.int64)
    return (ids[..., None] // base) % cfg.n_values


def object_ids(cfg: RecipeConfig, values) -> np.ndarray:
    """Inverse of :func:`object_values`."""
    values = checks.integers(values, "values", 0, cfg.n_values - 1)
    return (values * cfg.n_values ** np.arange(cfg.n_concepts, dtype=np.int64)).sum(-1)


def split_objects(cfg: RecipeConfig) -> tuple[np.ndarray, np.ndarray]:
    """(train ids, test ids) as released: a RandomState(split_seed) permutation, first int(|O| rho) train."""
    total = cfg.n_objects
    perm = np.random.RandomState(cfg.split_seed).permutation(total)
    n_train = min(max(1, int(total * cfg.coverage)), total - 1)
    return perm[:n_train].astype(np.int64), perm[n_train:].astype(np.int64)


def sample_recipe_scenes(cfg: RecipeConfig, allowed: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """(n, max_objects) object ids, -1 for an empty slot: 1..max_objects objects (uniform count), each drawn
    uniformly with replacement from ``allowed`` (vectorised)."""
    n = checks.integer(n, "n")
    checks.check_budget(8.0 * 3 * n * cfg.max_objects, f"sample_recipe_scenes of {n} scenes")
    allowed = np.asarray(allowed, dtype=np.int64)
    if allowed.size == 0:
        raise ValueError("allowed must hold at least one object")
    count = rng.integers(1, cfg.max_objects + 1, size=n)
    ids = allowed[rng.integers(0, len(allowed), size=(n, cfg.max_objects))]
    ids[np.arange(cfg.max_objects)[None, :] >= count[:, None]] = -1
    return ids


def recipe_scene_tokens(cfg: RecipeConfig, scenes: np.ndarray) -> torch.Tensor:
    """(N, scene_len) tokens ``[soo, v_0, V + v_1, .., eoo] * n + [eos] + pads`` (vectorised)."""
    scenes = np.asarray(scenes, dtype=np.int64)
    n, m = scenes.shape
    block = cfg.n_concepts + 2
    tok = np.full((n, cfg.scene_len), cfg.pad, dtype=np.int64)
    present = scenes >= 0
    vals = object_values(cfg, np.where(present, scenes, 0)) + np.arange(cfg.n_concepts) * cfg.n_values
    blocks = np.concatenate([np.full((n, m, 1), cfg.soo), vals, np.full((n, m, 1), cfg.eoo)], axis=2)
    blocks[~present] = cfg.pad
    tok[:, :m * block] = blocks.reshape(n, m * block)
    tok[np.arange(n), present.sum(1) * block] = cfg.eos
    return torch.from_numpy(tok)


def query_tokens(cfg: RecipeConfig, ids) -> torch.Tensor:
    """(Q, C + 3) object queries ``[soo, values, eoo, eos]`` (the released pads after them are masked)."""
    vals = object_values(cfg, ids) + np.arange(cfg.n_concepts) * cfg.n_values
    q = len(vals)
    tok = np.concatenate([np.full((q, 1), cfg.soo), vals, np.full((q, 1), cfg.eoo), np.full((q, 1), cfg.eos)], 1)
    return torch.from_numpy(tok.astype(np.int64))


def concept_query_tokens(cfg: RecipeConfig, tokens) -> torch.Tensor:
    """(Q, 2) concept queries ``[value token, eos]``."""
    tokens = np.asarray(tokens, dtype=np.int64)
    return torch.from_numpy(np.stack([tokens, np.full_like(tokens, cfg.eos)], 1))


def swap_negatives(cfg: RecipeConfig, scenes: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Released swaps: for each scene with >= 2 objects, ``n_swaps`` times, an ordered pair of its objects
    (i1, i2) and a concept k at random; object i1 with concept k taken from i2. Returns object ids."""
    scenes = np.asarray(scenes, dtype=np.int64)
    multi = scenes[(scenes >= 0).sum(1) >= 2]
    if cfg.n_swaps == 0 or len(multi) == 0:
        return np.empty(0, dtype=np.int64)
    multi = np.repeat(multi, cfg.n_swaps, axis=0)
    count = (multi >= 0).sum(1)
    # a random ordered pair of distinct present slots (present slots come first)
    i1 = (rng.random(len(multi)) * count).astype(np.int64)
    i2 = (i1 + 1 + (rng.random(len(multi)) * (count - 1)).astype(np.int64)) % count
    k = rng.integers(0, cfg.n_concepts, size=len(multi))
    rows = np.arange(len(multi))
    v1 = object_values(cfg, multi[rows, i1])
    v2 = object_values(cfg, multi[rows, i2])
    v1[rows, k] = v2[rows, k]
    return object_ids(cfg, v1)


def presence(scenes: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """(N, Q) float labels: does scene n hold object query q."""
    scenes = np.asarray(scenes)
    if scenes.ndim != 2:
        raise ValueError(f"scenes must be (N, max_objects) object ids, got shape {scenes.shape}")
    return (scenes[:, :, None] == np.asarray(queries)[None, None, :]).any(1).astype(np.float32)


def concept_presence(cfg: RecipeConfig, scenes: np.ndarray, tokens: np.ndarray) -> np.ndarray:
    """(N, Q) float labels: does scene n hold concept-value token q."""
    scenes = np.asarray(scenes)
    vals = object_values(cfg, np.where(scenes >= 0, scenes, 0)) + np.arange(cfg.n_concepts) * cfg.n_values
    vals[scenes < 0] = -1
    vals = vals.reshape(len(scenes), -1)
    return (vals[:, :, None] == np.asarray(tokens)[None, None, :]).any(1).astype(np.float32)


def batch_queries(cfg: RecipeConfig, scenes: np.ndarray, rng: np.random.Generator,
                  allowed_queries: np.ndarray | None = None) -> dict:
    """The released per-batch query sets and labels for ``scenes`` (see the module docstring).
    ``allowed_queries``: object ids swaps may be (None = every object, as released in training)."""
    scenes = np.asarray(scenes, dtype=np.int64)
    vals = object_values(cfg, np.where(scenes >= 0, scenes, 0)) + np.arange(cfg.n_concepts) * cfg.n_values
    ctok = np.unique(vals[scenes >= 0])
    ctok = ctok[rng.permutation(len(ctok))[:cfg.n_concept_queries]]
    pos = np.unique(scenes[scenes >= 0])
    pos = pos[rng.permutation(len(pos))[:cfg.n_object_queries]]
    swaps = swap_negatives(cfg, scenes, rng)
    if allowed_queries is not None:
        swaps = swaps[np.isin(swaps, allowed_queries)]
    oq = np.unique(np.concatenate([pos, swaps]))
    return {"concept_tokens": ctok, "concept_labels": concept_presence(cfg, scenes, ctok),
            "object_queries": oq, "object_labels": presence(scenes, oq)}


def binding_scenes(cfg: RecipeConfig, pool: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """(n, 2) ordered two-object scenes from ``pool`` whose objects differ in every concept (rejection)."""
    pool = np.asarray(pool, dtype=np.int64)
    v = object_values(cfg, pool)
    if len(pool) == 0 or any(len(np.unique(v[:, k])) < 2 for k in range(cfg.n_concepts)):
        raise ValueError(f"pool: {len(pool)} objects hold no two that differ in every concept")
    out = np.empty((0, 2), dtype=np.int64)
    for _ in range(1000):
        if len(out) >= n:
            return out
        s = pool[rng.integers(0, len(pool), size=(4 * n, 2))]
        v = object_values(cfg, s)
        out = np.concatenate([out, s[(v[:, 0] != v[:, 1]).all(1)]])[:n]
    if len(out) < n:
        raise ValueError(f"pool: too few pairs of its {len(pool)} objects differ in every concept")
    return out


def swap_sets(cfg: RecipeConfig, scenes: np.ndarray) -> np.ndarray:
    """(N, 2**C - 2) all objects recombining the two objects' concept values, except the two themselves."""
    v = object_values(cfg, scenes)                       # (N, 2, C)
    masks = [m for m in np.ndindex(*(2,) * cfg.n_concepts) if len(set(m)) > 1]
    cols = [object_ids(cfg, v[:, list(m), np.arange(cfg.n_concepts)]) for m in masks]
    return np.stack(cols, 1)
