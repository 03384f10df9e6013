"""Tests of compbook.binding.controlled and .sweep: batched training, selection on validation only, determinism."""

import dataclasses

import numpy as np
import pytest
import torch

from compbook.binding.controlled import (ControlledConfig, contrastive_loss, encode, init_params, object_tokens,
                                         query_embeddings, scene_encoder_parameters, scene_tokens, swaps,
                                         train_controlled)
from compbook.binding.runs.sweep import (
    SweepConfig, check_coverages, run_size, spearman_bootstrap, sweep_splits, transition
)
from compbook.binding.splits import coverage_split
from compbook.binding.symbolic import SymbolicTokens

TINY = ControlledConfig(n_concepts=2, n_values=3, d_model=8, n_layers=1, n_heads=2, d_out=8, steps=6, batch=4,
                        warmup=2, eval_every=3, eval_scenes=8, n_swaps=2)
SWEEP = SweepConfig(coverages=(0.4, 0.7), seeds=(0, 1), n_values=(3,), max_scenes=60, test_scenes=10,
                    probe_scenes=20)


class Poison:
    """Stands in for the test split: any use of it fails the test."""

    def __getattr__(self, name):
        raise AssertionError(f"the test split was read during training ({name})")

    def __len__(self):
        raise AssertionError("the test split was read during training (len)")

    def __getitem__(self, item):
        raise AssertionError("the test split was read during training (indexing)")

    def __array__(self, *args, **kwargs):
        raise AssertionError("the test split was read during training (np.asarray)")


def test_tokens_match_the_scene_module():
    scenes = np.array([[0, 5], [8, 8]])
    ref = SymbolicTokens(2, 3).encode_batch([tuple(s) for s in scenes])
    np.testing.assert_array_equal(scene_tokens(TINY, scenes).numpy(), ref)
    np.testing.assert_array_equal(object_tokens(TINY, np.array([5])).numpy()[0], ref[0][4:8])


def test_swaps_hold_both_objects_and_every_recombination():
    space = TINY.tokens.space
    a, b = space.object_id([0, 1]), space.object_id([2, 0])
    sw = swaps(TINY, np.array([a, b]))
    assert sw[0] == a and sw[-1] == b
    assert {tuple(space.object_values(int(o))) for o in sw} == {(0, 1), (0, 0), (2, 1), (2, 0)}


def test_query_embeddings_of_a_small_space_equal_encoding_each_query():
    """The shortcut (encode every object once, gather the rows) must give each query's own embedding."""
    params = init_params(TINY, 2, [0, 1])
    qids = np.random.default_rng(0).integers(0, 9, size=(2, 12))      # 12 queries >= 9 objects: shortcut
    direct = encode(params, "query", object_tokens(TINY, qids), TINY)
    torch.testing.assert_close(query_embeddings(params, TINY, qids), direct)
    assert not torch.allclose(direct[0], direct[1]), "each model must use its own weights"


def test_shared_encoder_has_no_query_weights_and_last_pooling_runs():
    cfg = dataclasses.replace(TINY, shared=True, pool="last")
    params = init_params(cfg, 1, [0])
    assert not any(k.startswith("query.") for k in params)
    assert torch.isfinite(contrastive_loss(params, cfg, np.array([[[0, 4], [8, 2]]]))).all()


def test_unknown_pooling_is_rejected():
    with pytest.raises(ValueError, match="pool"):
        dataclasses.replace(TINY, pool="max")


def test_model_selection_never_reads_the_test_split():
    splits = [dataclasses.replace(coverage_split(9, 0.6, seed=s), test=Poison()) for s in (0, 1)]
    res = train_controlled(TINY, splits, [0, 1], progress=False)
    assert res.val.shape == (2, 2), "validation is scored every eval_every steps and at the end"
    assert set(res.best_step) <= {3, 6}


def test_lr_schedule_is_stepped():
    res = train_controlled(TINY, [coverage_split(9, 0.6, seed=0)], [0], progress=False)
    assert res.lrs[0] < res.lrs.max() and res.lrs[-1] < res.lrs.max(), f"LR never changed: {res.lrs}"


def test_each_model_in_a_stack_trains_on_its_own():
    """One stack, one loss per model: a model's gradient must not depend on another model's loss."""
    params = init_params(TINY, 2, [0, 1])
    scenes = np.array([[[0, 4], [8, 2]], [[1, 3], [5, 7]]])
    contrastive_loss(params, TINY, scenes)[0].backward()
    for k, v in params.items():
        assert v.grad[1].abs().max() == 0, f"{k}: model 1 got a gradient from model 0's loss"
    assert not torch.equal(params["scene.embed"][0], params["scene.embed"][1]), "seeds must differ per model"


def test_loss_is_lower_for_the_right_objects():
    """A loss that ignores which objects are present would not move when the scene's objects are replaced."""
    params = init_params(TINY, 1, [0])
    scenes = np.array([[[0, 4], [8, 2]]])
    a = contrastive_loss(params, TINY, scenes)
    assert torch.isfinite(a).all() and a.item() > 0


def test_sweep_is_deterministic():
    a = run_size(SWEEP, TINY, progress=False)
    b = run_size(SWEEP, TINY, progress=False)
    assert a["test_recognition"] == b["test_recognition"]
    assert a["probe_r2"] == b["probe_r2"]
    for k in a["params"]:
        assert torch.equal(a["params"][k], b["params"][k]), k
    assert len(a["coverages"]) == 4 and len(a["test_recognition"]) == 4


def test_sweep_splits_keep_test_objects_out_of_train_and_val():
    splits, seeds, covs = sweep_splits(SWEEP, 3, 2)
    for s in splits:
        held = set(s.test_objects.tolist())
        assert not held & set(np.asarray(s.train).ravel().tolist())
        assert not held & set(np.asarray(s.val).ravel().tolist())
        assert set(np.asarray(s.test).ravel().tolist()) <= held


@pytest.mark.parametrize("bad", [(0.0, 0.5), (0.5, 1.0), (), (1.2,)])
def test_coverage_grid_outside_0_1_is_rejected(bad):
    with pytest.raises(ValueError, match="coverages"):
        check_coverages(bad)


def test_transition_interpolates_the_first_crossing():
    assert transition([0.1, 0.2, 0.3, 0.4], [0.0, 0.2, 0.8, 1.0]) == pytest.approx(0.25)
    assert np.isnan(transition([0.1, 0.2], [0.0, 0.1]))


def test_spearman_bootstrap_brackets_rho():
    rng = np.random.default_rng(0)
    x = rng.normal(size=60)
    rho, lo, hi = spearman_bootstrap(x, x + 0.5 * rng.normal(size=60), n_boot=300)
    assert lo <= rho <= hi and rho > 0.7
    rho0, lo0, hi0 = spearman_bootstrap(x, rng.normal(size=60), n_boot=300)
    assert lo0 < 0 < hi0, "independent samples: the interval should hold 0"


def test_swap_separation_fails_a_bag_of_concepts_and_passes_a_lookup():
    """A scene embedding that only counts which values are present scores every swap like the present objects
    (all their values are present): it must fail. One that reads each object whole must pass."""
    from compbook.binding.controlled import stacked_swap_logits, swap_recognition, swap_separation
    scenes = np.array([[[0, 4], [1, 5], [2, 6]]])                    # objects differ in both concepts
    sw = swaps(TINY, scenes)
    bag = np.ones(sw.shape)                                            # every swap's values are all present
    lookup = ((sw == scenes[..., :1]) | (sw == scenes[..., 1:])).astype(float)
    assert swap_separation(bag, sw, scenes)[0] == 0, "ties must fail"
    assert swap_separation(lookup, sw, scenes)[0] == 1
    params = init_params(TINY, 1, [0])
    assert stacked_swap_logits(params, TINY, scenes).shape == (1, 3, 4)
    assert 0 <= swap_recognition(params, TINY, scenes)[0] <= 1


def test_validation_binding_reads_saved_models_per_model(tmp_path):
    """One swap-only score per saved model, in [0, 1], the same on a second call (the splits are rebuilt
    from the record's sweep config, validation part only)."""
    from compbook.binding.runs.sweep import load_sweep, validation_binding
    run_size(SWEEP, TINY, out_dir=tmp_path, progress=False)
    rec = load_sweep(3, tmp_path)
    a, b = validation_binding(rec, n_scenes=8), validation_binding(rec, n_scenes=8)
    assert a.shape == (4,) and np.isfinite(a).any(), "some model must have scenes with swap negatives"
    assert ((0 <= a[np.isfinite(a)]) & (a[np.isfinite(a)] <= 1)).all()
    np.testing.assert_array_equal(a, b)


def test_needs_binding_keeps_only_pairs_with_a_third_swap():
    """Against a naive rule: a scene needs binding when some swap of its values is neither present object.
    The likely bug: keeping one object twice, or two objects that differ in one concept only."""
    from compbook.binding.runs.sweep import needs_binding
    cfg = ControlledConfig(n_concepts=3, n_values=3)
    space = cfg.tokens.space
    scenes = np.array([(a, b) for a in range(27) for b in range(27)])
    sw = swaps(cfg, scenes)
    naive = ((sw != scenes[:, :1]) & (sw != scenes[:, 1:])).any(1)
    np.testing.assert_array_equal(needs_binding(space, scenes), naive)
    assert not needs_binding(space, np.array([[5, 5]]))[0], "one object twice needs no binding"


def test_rescore_recognition_never_exceeds_binding_alone(tmp_path):
    """Full unseen-object recognition (every object a candidate) on scenes that need binding cannot beat the
    swaps-only score on the same scenes: its negatives include every swap. ``rescore`` rewrites the JSON from the
    stored weights, the weights untouched, the same numbers on a second call."""
    from compbook.binding.runs.sweep import load_sweep, rescore
    from safetensors.torch import load_file
    cfg = dataclasses.replace(TINY, n_concepts=3, n_values=3)
    sweep = dataclasses.replace(SWEEP, max_scenes=200, test_scenes=30)
    run_size(sweep, cfg, out_dir=tmp_path, progress=False)
    before = load_file(str(tmp_path / "controlled_V3.safetensors"))
    a = rescore(3, tmp_path)
    b = load_sweep(3, tmp_path)
    assert a["test_recognition"] == b["test_recognition"] and a["test_binding"] == b["test_binding"]
    assert np.all(np.array(a["test_recognition"]) <= np.array(a["test_binding"]) + 1e-12)
    after = load_file(str(tmp_path / "controlled_V3.safetensors"))
    assert all(torch.equal(before[k], after[k]) for k in before)


def test_scene_attention_matches_the_encoders_own_attention():
    """The weights ``scene_attention`` reports, applied to the values, must give what the encoder's fused
    attention computes (a bug would report a different scaling, layer or head order)."""
    import torch.nn.functional as F
    from compbook.binding.controlled import (_attention_inputs, _embed, _weights_of, scene_attention)
    cfg = dataclasses.replace(TINY, n_layers=2)
    params = init_params(cfg, 2, [0, 1])
    scenes = np.array([[[0, 4]], [[8, 2]]])
    p = _weights_of(params, "scene", cfg)
    with torch.no_grad():
        x = _embed(p, scene_tokens(cfg, scenes))
        q, k, v = _attention_inputs(p, x, 0, cfg)
        fused = F.scaled_dot_product_attention(q, k, v)[:, 0]          # (M, H, T, dh)
    w = torch.as_tensor(scene_attention(params, cfg, scenes, layer=0))
    torch.testing.assert_close(w @ v[:, 0], fused, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(w.sum(-1), 1, rtol=1e-6)
    assert scene_attention(params, cfg, scenes, layer=1).shape == w.shape
    with pytest.raises(ValueError, match="layer"):
        scene_attention(params, cfg, scenes, layer=2)


def test_own_object_attention_reads_planted_patterns():
    from compbook.binding.controlled import own_object_attention
    cfg = ControlledConfig(n_concepts=3, n_values=3)
    T = 2 * (3 + 2) + 1
    obj = np.full(T, -1)
    obj[1:4], obj[6:9] = 0, 1
    by_object = (obj[:, None] == obj[None, :]) & (obj[:, None] >= 0)
    uniform = np.ones((T, T)) / T
    planted = np.stack([by_object / np.maximum(by_object.sum(1, keepdims=True), 1), uniform])[None]
    out = own_object_attention(planted, cfg)
    np.testing.assert_allclose(out, [[1.0, 0.5]])


def test_recipe_check_reports_seen_and_unseen_binding_per_coverage():
    from compbook.binding.runs.sweep import recipe_check
    cfg = dataclasses.replace(TINY, n_concepts=3, n_values=3)
    out = recipe_check(cfg, (0.4, 0.7), max_scenes=200, n_scenes=20)
    assert out["coverages"] == [0.4, 0.7]
    for k in ("bind_seen", "bind_unseen", "recognition", "final_loss"):
        assert len(out[k]) == 2, k
    assert all(0 <= x <= 1 for k in ("bind_seen", "bind_unseen", "recognition") for x in out[k])
    assert out == recipe_check(cfg, (0.4, 0.7), max_scenes=200, n_scenes=20) | {"seconds": out["seconds"]}
    with pytest.raises(ValueError, match="coverages"):
        recipe_check(cfg, (0.0, 0.5))


def test_swap_chance_matches_random_logits():
    """Against a simulation: random logits per candidate (one per distinct object) pass swap separation at
    the rate ``swap_chance`` says (the likely bug: counting duplicate swaps as extra candidates)."""
    from compbook.binding.controlled import swap_chance, swap_separation
    cfg = ControlledConfig(n_concepts=3, n_values=4)
    rng = np.random.default_rng(0)
    scenes = rng.integers(0, 64, (400, 2))
    sw = swaps(cfg, scenes)
    hits = []
    for _ in range(200):
        per_object = rng.normal(size=64)
        hits.append(np.nanmean(swap_separation(per_object[sw][None], sw[None], scenes[None])))
    assert np.mean(hits) == pytest.approx(swap_chance(cfg, scenes), abs=0.01)
    with pytest.raises(ValueError, match="scenes"):
        swap_chance(cfg, np.array([[3, 3]]))


def test_config_modes(monkeypatch):
    """One size table: the CPU defaults and ``FULL``, the released models' shape; variants by replace."""
    import dataclasses
    from compbook.binding.controlled import ControlledConfig
    monkeypatch.delenv("COMPBOOK_MODE", raising=False)
    assert ControlledConfig.for_mode() == ControlledConfig()
    monkeypatch.setenv("COMPBOOK_MODE", "full")
    full = ControlledConfig.for_mode()
    assert full == ControlledConfig.full()
    assert (full.n_concepts, full.n_values, full.d_model, full.n_layers, full.n_heads, full.d_out) == (3, 50, 256, 6,
                                                                                                        8, 512)
    assert (full.steps, full.batch, full.lr, full.warmup, full.n_swaps) == (20000, 256, 5e-4, 1000, 6)
    assert dataclasses.replace(full, n_values=14).tokens.space.n_objects == 14 ** 3


def test_chapter_13_readers_of_a_stored_sweep(tmp_path):
    """What chapter 13 reads off a stored sweep: pooled intervals that hold their mean, one row per model, the
    probes' correlations, binding in [0, 1] beside its chance, one slider frame per coverage, attention shares."""
    from compbook.binding.runs import sweep as W
    cfg = dataclasses.replace(TINY, n_concepts=3, n_values=3)
    sweep = dataclasses.replace(SWEEP, max_scenes=200, test_scenes=30)
    records = W.load_sweeps(sweep, tmp_path, retrain=True)
    rec = records[3]
    assert rec["config"].n_values == 3 and W.load_sweeps(sweep, tmp_path)[3]["coverages"] == rec["coverages"]
    ci = W.coverage_intervals(rec)
    assert list(ci.index) == list(sweep.coverages) and (ci.models == len(sweep.seeds)).all()
    assert ((ci.low <= ci["mean"] + 1e-12) & (ci["mean"] <= ci.high + 1e-12)).all()
    n = W.scenes_read(rec)
    rec_mean = np.asarray(rec["test_recognition"])
    first = np.asarray(rec["coverages"]) == sweep.coverages[0]
    assert np.isclose(ci["mean"].iloc[0], (rec_mean[first] * n[first]).sum() / n[first].sum())
    models = W.model_table(records)
    assert len(models) == len(sweep.coverages) * len(sweep.seeds)
    corr = W.probe_correlations(models.assign(recognition=np.arange(len(models)) % 3))
    assert list(corr.index) == ["additive", "object_product", "global_product"]
    binds = W.binding_table(records, n_scenes=16)
    assert binds[["seen", "unseen", "chance"]].stack().between(0, 1).all()
    curves = W.binding_curves(records, n_scenes=16)
    assert list(curves.index) == list(binds.index) and np.allclose(curves.seen, binds.seen)
    assert ((curves.low <= curves.unseen + 1e-12) & (curves.unseen <= curves.high + 1e-12)).all()
    assert np.allclose(curves.loc[rec["n_objects"]].unseen, W.coverage_intervals(rec, "test_binding")["mean"])
    assert np.allclose(models.binding, [b for r in records.values() for b in r["test_binding"]])
    frames = W.slider_frames(rec, seed=0, n_scenes=3)
    assert sorted(frames) == sorted(sweep.coverages)
    assert all(f[0].shape == (3, 2 ** cfg.n_concepts) for f in frames.values())
    share = W.attention_share(records, n_scenes=20)
    assert share[["mean", "best head"]].stack().between(0, 1).all()
    assert (share["best head"] >= share["mean"] - 1e-12).all()
    with pytest.raises(ValueError, match="m"):
        W.model_params(rec, len(models))
    with pytest.raises(FileNotFoundError, match="compbook.binding sweep"):
        W.load_sweeps(sweep, tmp_path / "empty")


def test_the_step_loss_is_the_checked_loss_and_the_door_refuses_bad_scenes():
    """The training step calls the unchecked ``_contrastive_loss`` (its draws are in range by construction); it
    must compute exactly what the checked public ``contrastive_loss`` does. A bug here: a step that skips a swap
    pick or a token the public loss includes."""
    from compbook.binding.controlled import _contrastive_loss
    params = init_params(TINY, 2, [0, 1])
    scenes = np.array([[[0, 4], [8, 2]], [[1, 3], [5, 7]]])
    pick = np.array([[[1, 2], [3, 1]], [[2, 2], [1, 3]]])
    assert torch.equal(contrastive_loss(params, TINY, scenes, pick), _contrastive_loss(params, TINY, scenes, pick))
    assert torch.equal(contrastive_loss(params, TINY, scenes), _contrastive_loss(params, TINY, scenes))
    n_obj = TINY.tokens.space.n_objects
    with pytest.raises(ValueError, match="scenes"):
        contrastive_loss(params, TINY, np.array([[[0, n_obj]]]))
    with pytest.raises(ValueError, match=r"\(M, B, 2\)"):
        contrastive_loss(params, TINY, np.array([[0, 4], [8, 2]]))
    with pytest.raises(ValueError, match="swap_pick"):
        contrastive_loss(params, TINY, scenes, pick[:, :1])
    with pytest.raises(ValueError, match="qids"):
        query_embeddings(params, TINY, np.array([[0, -1]]))


def test_scene_encoder_parameters_counts_what_init_params_builds():
    for cfg in (TINY, dataclasses.replace(TINY, n_values=5, n_layers=2, d_model=16)):
        params = init_params(cfg, 1, [0])
        built = sum(v[0].numel() for k, v in params.items() if k.startswith("scene."))
        assert scene_encoder_parameters(cfg) == built
    bigger = dataclasses.replace(TINY, n_values=4)    # one more value per concept: one more row per concept
    assert scene_encoder_parameters(bigger) - scene_encoder_parameters(TINY) == TINY.n_concepts * TINY.d_model
    with pytest.raises(ValueError, match="cfg"):
        scene_encoder_parameters({"d_model": 8})
