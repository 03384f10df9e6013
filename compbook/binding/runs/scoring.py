"""The coverage sweep's settings, splits and per-model scores (chapter 13): what one controlled model of the
sweep is trained on and how it is scored (unseen-object recognition on test scenes, the three probes); the
runner's tasks (:mod:`compbook.binding.runs.tasks`) and the stored sweep (:mod:`compbook.binding.runs.sweep`) share
them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ... import checks
from ...config import ModeConfig
from ..controlled import (ControlledConfig, object_recognition, scene_embeddings, subsample,
                          swap_recognition)
from ..probes import PROBE_KINDS, fit_probe
from ..splits import coverage_split

FORMAT = "compbook-controlled-sweep/1"


#: the most scenes one config may hold in memory at once (a sweep of 10^7 scenes is refused before allocating)
MAX_SCENES = 2_000_000


@dataclass(frozen=True)
class SweepConfig(ModeConfig):
    """What the sweep trains (CPU mode: 9 coverages x 3 seeds x 2 sizes = 54 models; our choice)."""

    # full mode: the paper's scale (|O| up to 125,000, 5 seeds: 135 models)
    FULL = dict(seeds=(0, 1, 2, 3, 4), n_values=(14, 50), max_scenes=200000, test_scenes=1024, probe_scenes=4000)
    SMOKE = dict(coverages=(0.2, 0.5, 0.8), seeds=(0,), max_scenes=2000, test_scenes=64, probe_scenes=100)
    SUBSET = dict(coverages=(0.2, 0.5, 0.8), seeds=(0,))   # a GPU session: 3 coverages x 1 seed per size

    coverages: tuple = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
    seeds: tuple = (0, 1, 2)
    n_values: tuple = (5, 14)          # C = 3 concepts: |O| = 125 and 2,744
    max_scenes: int = 20000            # train + validation scenes per split
    test_scenes: int = 256
    probe_scenes: int = 400            # train scenes the probes are fitted on

    def __post_init__(self):
        check_coverages(self.coverages)
        for name in ("max_scenes", "test_scenes", "probe_scenes"):     # scenes are held in memory at once
            checks.integer(getattr(self, name), name, 1, MAX_SCENES)
        for name in ("seeds", "n_values"):
            if not getattr(self, name):
                raise ValueError(f"{name} must be a non-empty tuple, got {getattr(self, name)!r}")
        for v in self.n_values:
            checks.integer(v, "n_values", 2)


def default_sweep() -> SweepConfig:
    """``by_mode``: the CPU sweep, or the paper's scale (|O| up to 125,000, 5 seeds: 135 models)."""
    return SweepConfig.for_mode()


def check_coverages(coverages) -> tuple:
    """Coverages (a list or tuple, not a string) as a tuple of floats, each strictly inside (0, 1)."""
    return tuple(checks.real(c, f"coverages[{i}]", 0, 1, low_open=True, high_open=True)
                 for i, c in enumerate(checks.sequence(coverages, "coverages")))


def sweep_splits(sweep: SweepConfig, n_values: int, n_concepts: int = 3):
    """The (splits, seeds, coverages) lists of one object-space size: model m = (coverage, seed) row-major.
    The object shuffle of a split is seeded by the model's seed (our choice: seeds vary objects and init)."""
    cov = check_coverages(sweep.coverages)
    rows = [(c, s) for c in cov for s in sweep.seeds]
    splits = [coverage_split(n_values ** n_concepts, c, seed=s, max_scenes=sweep.max_scenes) for c, s in rows]
    return splits, [s for _, s in rows], [c for c, _ in rows]


def needs_binding(space, scenes) -> np.ndarray:
    """Which two-object scenes (S, 2) test binding (S,) bools: the objects differ in at least two concepts, so
    some swap of their values is a third object. (One object twice, or two that differ in one concept only,
    have every swap equal to a present object: a bag-of-concepts model recognises them.)"""
    scenes = np.asarray(scenes)
    a, b = space.object_values(scenes[:, 0]), space.object_values(scenes[:, 1])
    return (a != b).sum(1) >= 2


def test_scenes(split, n_scenes: int, space=None) -> np.ndarray:
    """At most ``n_scenes`` test scenes (S, 2) of a split (held-out objects only; a seeded subsample). With the
    object ``space`` (our choice, what the sweep reads): only scenes that :func:`needs_binding`; without it,
    every test scene (the sweep's first number). At coverage 0.9 of |O| = 125, 13 held-out objects, 49 of
    the 169 ordered pairs need no binding."""
    n_scenes = checks.integer(n_scenes, "n_scenes")
    rows = np.asarray(split.test)
    if space is not None:
        rows = rows[needs_binding(space, rows)]
        if not len(rows):
            raise ValueError(f"split (coverage {split.coverage}): no test scene whose objects differ in two "
                             f"concepts")
    return subsample(rows, n_scenes, split.seed)


def _stack_ragged(rows) -> tuple[np.ndarray, list[int]]:
    n = [len(t) for t in rows]
    return np.stack([t[np.arange(max(n)) % len(t)] for t in rows]), n


def test_recognition(params, cfg: ControlledConfig, splits, n_scenes: int, binding_only: bool = True) -> np.ndarray:
    """Unseen-object recognition (M,): :func:`test_scenes` of held-out objects that need binding
    (``binding_only=False``: every test scene, as the sweep first stored), every object a candidate."""
    space = cfg.tokens.space if binding_only else None
    padded, n = _stack_ragged([test_scenes(s, n_scenes, space) for s in splits])
    cands = np.tile(np.arange(cfg.tokens.space.n_objects), (len(splits), 1))
    return object_recognition(params, cfg, padded, cands, n)


def test_binding(params, cfg: ControlledConfig, splits, n_scenes: int) -> np.ndarray:
    """Binding alone on unseen objects (M,): :func:`~compbook.binding.controlled.swap_recognition` on each
    model's :func:`test_scenes` (present objects against the swaps of their values only)."""
    return np.array([swap_recognition({k: v[m:m + 1] for k, v in params.items()}, cfg,
                                      test_scenes(s, n_scenes, cfg.tokens.space)[None])[0]
                     for m, s in enumerate(splits)])


def probe_fits(params, cfg: ControlledConfig, splits, sweep: SweepConfig) -> dict:
    """{kind: (M,) R^2 on test scenes} of each probe fitted to each model's train-scene embeddings."""
    space = cfg.tokens.space
    out = {k: [] for k in PROBE_KINDS}
    for m, s in enumerate(splits):
        tr = subsample(np.asarray(s.train), sweep.probe_scenes, s.seed)
        te = subsample(np.asarray(s.test), sweep.test_scenes, s.seed)
        one = {k: v[m:m + 1] for k, v in params.items()}
        z_tr, z_te = scene_embeddings(one, cfg, tr[None])[0], scene_embeddings(one, cfg, te[None])[0]
        v_tr, v_te = space.object_values(tr), space.object_values(te)
        for kind in PROBE_KINDS:
            p = fit_probe(kind, v_tr, z_tr, n_values=space.sizes)
            out[kind].append(p.r2(v_te, z_te))
    return {k: np.array(v) for k, v in out.items()}


def test_scores(params, cfg: ControlledConfig, splits, sweep: SweepConfig) -> dict:
    """What the sweep stores about unseen objects: ``test_recognition`` (scenes that need binding, the number
    the chapter reads), ``test_recognition_all`` (every test scene, the sweep's first number) and
    ``test_binding`` (swaps only), each (M,) as lists, and the rule named in ``test_scenes_rule``."""
    return {"test_recognition": test_recognition(params, cfg, splits, sweep.test_scenes).tolist(),
            "test_recognition_all": test_recognition(params, cfg, splits, sweep.test_scenes, False).tolist(),
            "test_binding": test_binding(params, cfg, splits, sweep.test_scenes).tolist(),
            "test_scenes_rule": "held-out objects differing in >= 2 concepts (_all: every held-out pair)"}
