"""The recipe's data (compbook.binding.recipe.data) against naive references: split, scenes, tokens, queries."""

import numpy as np
import pytest
from recipe_tiny import naive_tokens, tiny

from compbook.binding.recipe.data import (
    batch_queries, binding_scenes, object_ids, object_values, query_tokens, recipe_scene_tokens,
    sample_recipe_scenes, split_objects, swap_negatives, swap_sets
)


def test_split_matches_released_convention():
    cfg = tiny(n_values=7, coverage=0.3, split_seed=4)
    train, test = split_objects(cfg)
    perm = np.random.RandomState(4).permutation(49)
    assert len(train) == int(49 * 0.3) and np.array_equal(train, perm[:14]) and np.array_equal(test, perm[14:])
    assert set(train) | set(test) == set(range(49)) and not set(train) & set(test)
    v = object_values(cfg, np.arange(49))
    assert np.array_equal(object_ids(cfg, v), np.arange(49))
    assert np.array_equal(v[10], [3, 1])            # 10 = 3 + 7 * 1


def test_scenes_only_train_objects_and_counts():
    cfg = tiny()
    train, test = split_objects(cfg)
    s = sample_recipe_scenes(cfg, train, 5000, np.random.default_rng(1))
    present = s >= 0
    assert s.shape == (5000, 2) and present[:, 0].all()
    assert set(np.unique(s[present])) <= set(train) and not set(s[present].tolist()) & set(test)
    count = present.sum(1)
    assert abs((count == 1).mean() - 0.5) < 0.03 and set(count) == {1, 2}
    # objects uniform over the train split (chi-square-ish bound)
    freq = np.bincount(np.searchsorted(np.sort(train), s[present]), minlength=len(train))
    assert freq.min() > 0.6 * freq.mean()


def test_tokens_against_naive_loop():
    cfg = tiny(n_values=5, n_concepts=3, max_objects=3)
    s = sample_recipe_scenes(cfg, np.arange(cfg.n_objects), 200, np.random.default_rng(2))
    tok = recipe_scene_tokens(cfg, s).numpy()
    assert tok.shape == (200, cfg.scene_len)
    for row, scene in zip(tok, s):
        assert row.tolist() == naive_tokens(cfg, scene)
    q = query_tokens(cfg, [0, 124]).numpy()
    assert q.tolist() == [[cfg.soo, 0, 5, 10, cfg.eoo, cfg.eos], [cfg.soo, 4, 9, 14, cfg.eoo, cfg.eos]]


def test_swaps_and_labels_against_naive():
    cfg = tiny(n_values=8)
    rng = np.random.default_rng(3)
    s = sample_recipe_scenes(cfg, np.arange(cfg.n_objects), 300, rng)
    sw = swap_negatives(cfg, s, np.random.default_rng(4))
    multi = s[(s >= 0).sum(1) == 2]
    assert len(sw) == len(multi)
    for (a, b), x in zip(multi, sw):
        va, vb, vx = (object_values(cfg, [o])[0] for o in (a, b, x))
        ok = any((vx == np.where(np.arange(2) == k, vb, va)).all() or
                 (vx == np.where(np.arange(2) == k, va, vb)).all() for k in range(2))
        assert ok
    q = batch_queries(cfg, s, rng)
    assert len(q["concept_tokens"]) <= 8 and len(np.unique(q["object_queries"])) == len(q["object_queries"])
    for i, scene in enumerate(s):
        for j, o in enumerate(q["object_queries"]):
            assert q["object_labels"][i, j] == float(o in scene[scene >= 0])
        toks = set(naive_tokens(cfg, scene)) - {cfg.soo, cfg.eoo, cfg.eos, cfg.pad}
        for j, t in enumerate(q["concept_tokens"]):
            assert q["concept_labels"][i, j] == float(t in toks)
    # at most n_object_queries positives are kept, and every swap is a query
    pos = np.unique(s[s >= 0])
    assert np.isin(q["object_queries"], pos).sum() <= 8 + np.isin(sw, pos).sum()


def test_binding_scenes_and_swap_sets_against_naive():
    cfg = tiny(n_values=6)
    sc = binding_scenes(cfg, np.arange(36), 300, np.random.default_rng(5))
    v = object_values(cfg, sc)
    assert (v[:, 0] != v[:, 1]).all()
    sw = swap_sets(cfg, sc)
    assert sw.shape == (300, 2)
    for (a, b), row in zip(v, sw):     # naive: the two cross objects
        ref = {object_ids(cfg, [a[0], b[1]]).item(), object_ids(cfg, [b[0], a[1]]).item()}
        assert set(row.tolist()) == ref
    c3 = tiny(n_values=4, n_concepts=3)
    assert swap_sets(c3, binding_scenes(c3, np.arange(64), 5, np.random.default_rng(0))).shape == (5, 6)
    with pytest.raises(ValueError, match="pool"):
        binding_scenes(cfg, np.array([3]), 5, np.random.default_rng(0))


def test_no_allowed_objects_is_refused():
    with pytest.raises(ValueError, match="allowed"):
        sample_recipe_scenes(tiny(), np.array([], dtype=int), 3, np.random.default_rng(0))
