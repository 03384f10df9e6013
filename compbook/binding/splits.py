"""Coverage splits of an object space (chapters 10-13): which objects a model trains on, which it never sees.

:func:`coverage_split` splits the object space by coverage (train objects = the first floor(|O| rho) of a seeded
shuffle) and returns train / validation scenes (train objects only, disjoint) and test scenes (held-out objects
only). Select models on validation, never on test. CLEVR-2D (chapters 10-12) and the symbolic track's controlled
models (chapter 13) are split by it.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from .. import checks


@dataclass(frozen=True)
class CoverageSplit:
    """Objects and scenes of one coverage split. ``train_objects`` / ``test_objects`` (sorted ids);
    ``train`` / ``val`` scenes (N, k) use train objects only and are disjoint; ``test`` (N, k) uses held-out
    objects only."""

    coverage: float
    seed: int
    train_objects: np.ndarray
    test_objects: np.ndarray
    train: np.ndarray
    val: np.ndarray
    test: np.ndarray


def _tuples(objs: np.ndarray, k: int, max_scenes: int, rng) -> np.ndarray:
    """All ordered k-tuples (repeats allowed) of objs, or ``max_scenes`` distinct ones sampled when more."""
    total = len(objs) ** k
    if total <= max_scenes:
        idx = np.array(list(itertools.product(range(len(objs)), repeat=k))).reshape(-1, k)
    else:
        idx = np.empty((0, k), dtype=np.int64)
        while len(idx) < max_scenes:      # rejection: distinct tuples, in the order first drawn
            more = np.concatenate([idx, rng.integers(len(objs), size=(max_scenes, k))])
            _, first = np.unique(more, axis=0, return_index=True)
            idx = more[np.sort(first)][:max_scenes]
    return objs[idx]


def split_bytes(n_objects: int, k: int, max_scenes: int) -> float:
    """Bytes :func:`coverage_split` needs: the objects, and per split its scenes: a Python tuple and list slot
    each, then arrays (8 int64 copies of k ids at most, in np.unique's rejection sampling)."""
    return 24.0 * n_objects + 2 * (96 + 64.0 * k) * min(float(n_objects) ** k, max_scenes)


def coverage_split(n_objects: int, coverage: float, seed: int = 0, objects_per_scene: int = 2,
                   val_fraction: float = 0.2, max_scenes: int = 20000) -> CoverageSplit:
    """Split an object space of ``n_objects`` by coverage rho (the paper's rho_train).

    Train objects: the first floor(n_objects * coverage) of a shuffle seeded by ``seed``; the rest are held out.
    Scenes are ordered ``objects_per_scene``-tuples (repeats allowed): all of them while at most ``max_scenes``
    (CLEVR-2D at rho 0.5: 144 train-object pairs), else ``max_scenes`` distinct ones sampled. A ``val_fraction``
    of the train-object scenes becomes the validation split (for model selection); test scenes use only held-out
    objects (for the final number, never for selection).
    """
    if not isinstance(n_objects, (int, np.integer)) or n_objects < 2:
        raise ValueError(f"n_objects={n_objects!r}: need an int >= 2")
    coverage = checks.real(coverage, "coverage", 0, 1, low_open=True, high_open=True)
    seed = checks.seed(seed)
    k = checks.integer(objects_per_scene, "objects_per_scene")
    max_scenes = checks.integer(max_scenes, "max_scenes")
    checks.real(val_fraction, "val_fraction", 0, 1, low_open=True, high_open=True)
    checks.check_budget(split_bytes(n_objects, k, max_scenes), f"coverage_split: {n_objects} objects, up to "
                        f"{min(float(n_objects) ** k, max_scenes):,.0f} scenes of {k} per split")
    n_train = int(math.floor(n_objects * coverage))
    if not 1 <= n_train < n_objects:
        raise ValueError(f"coverage={coverage!r}: gives {n_train} train objects of {n_objects}; need 1..n-1")
    if not 0 < val_fraction < 1:
        raise ValueError(f"val_fraction={val_fraction!r}: must lie strictly between 0 and 1")
    rng = np.random.default_rng(seed)
    order = rng.permutation(n_objects)
    train_obj, test_obj = np.sort(order[:n_train]), np.sort(order[n_train:])
    seen = rng.permutation(_tuples(train_obj, objects_per_scene, max_scenes, rng))
    n_val = max(1, int(round(len(seen) * val_fraction)))
    if n_val >= len(seen):
        raise ValueError(f"coverage={coverage!r}: {len(seen)} train-object scenes, too few for a validation split")
    test = _tuples(test_obj, objects_per_scene, max_scenes, rng)
    return CoverageSplit(coverage, seed, train_obj, test_obj, seen[n_val:], seen[:n_val], test)
