"""compbook.cppn.twins: FER-recipe SGD twins."""

import json

import numpy as np
import pytest

from compbook.cppn.data import store as checkpoints
from compbook.cppn import twins


def test_recipe_defaults_are_fers():
    assert twins.TwinRecipe("skull").lr == 3e-3 and twins.TwinRecipe("apple").lr == 3e-4
    with pytest.raises(ValueError, match="target"):
        twins.TwinRecipe("cat")


def test_a_short_run_lowers_the_loss_and_stores_recipe_and_quality(tmp_path):
    recipe = twins.TwinRecipe("skull", res=16, steps=60, seeds=[0])
    models, losses, _ = twins.train_twins(recipe, progress=False)
    assert losses.shape == (60, 1) and losses[-1, 0] < losses[0, 0]
    [path] = twins.save_twins(recipe, models, losses, 1.0, tmp_path)
    meta = checkpoints.load_metadata(path)
    assert meta["recipe"]["lr"] == 3e-3 and meta["recipe"]["steps"] == 60
    assert meta["mse_64"] > 0 and meta["psnr_256"] < 40
    assert [m.arch() for m in twins.load_twins("skull", tmp_path)] == [models[0].arch()]


def test_stored_twins_exist_for_every_target():
    for t in twins.TARGETS:
        assert twins.load_twins(t), f"no stored twins of {t} in data/emc2/"


def test_plateau_rule_on_made_up_curves():
    steps = np.arange(1, 20001)
    flat = np.full(20000, 0.01) + 1e-6 * np.sin(steps)              # noise, no progress
    falling = 0.01 * np.exp(-steps / 20000)                           # 22% lower over the last 5k steps
    slow = 0.01 * (1 - 0.0005 * steps / 5000)                         # 0.05% per 5k steps: a plateau
    both = np.stack([flat, falling, slow], axis=1)
    assert twins.plateaued(both).tolist() == [True, False, True]
    assert twins.plateaued(both[:5000]).tolist() == [False] * 3      # too short to tell
    assert twins.plateau_steps(both)[:2] == [6000, None]


def test_a_stop_rule_ends_fit_many_early_and_says_why(monkeypatch):
    """A rule that never fires must not change the run; one that fires ends it at a check (the bug: the losses
    array still sized to ``steps``, or the stored step count the requested one)."""
    from compbook.cppn import picbreeder, train
    from compbook.cppn.network import CPPN
    pb = picbreeder.layerize(picbreeder.load_genome("skull"))
    models = [CPPN(pb.activations, pb.color, seed=s) for s in (0, 1)]
    target = picbreeder.render(picbreeder.load_genome("skull"), 8)
    full = train.fit_many(models, target, steps=30, progress=False, stop=lambda l: False, check_every=10)
    plain = train.fit_many(models, target, steps=30, progress=False)
    np.testing.assert_array_equal(full.losses, plain.losses)
    short = train.fit_many(models, target, steps=30, progress=False, stop=lambda l: len(l) >= 20, check_every=10)
    assert short.losses.shape == (20, 2) and short.config["steps"] == 20
    np.testing.assert_array_equal(short.losses, plain.losses[:20])
    monkeypatch.setattr(twins, "PLATEAU_WINDOW", 10)
    recipe = twins.TwinRecipe("skull", res=8, steps=40, seeds=[0], max_minutes=0.0)
    monkeypatch.setattr(twins, "CHECK_EVERY", 10)
    _, losses, _ = twins.train_twins(recipe, progress=False)
    assert len(losses) == 10 and recipe.steps == 10 and recipe.stopped_by == "time" and recipe.max_steps == 40


def test_the_fast_path_gives_the_plain_loss_trajectory():
    """The twins' trainer (hand-written pass, float32, 2 seeds batched) against plain autograd in float64 on the
    skull twin's architecture: the same losses step by step. A wrong gradient drifts within a few steps."""
    from compbook.cppn import picbreeder, train
    from compbook.cppn.network import CPPN
    g = picbreeder.load_genome("skull")
    pb = picbreeder.layerize(g)
    target = picbreeder.render(g, 16)
    fast = train.fit_many([CPPN(pb.activations, pb.color, seed=s) for s in (0, 1)], target, steps=25,
                          progress=False)
    plain = train.fit_many([CPPN(pb.activations, pb.color, seed=s).double() for s in (0, 1)], target,
                           steps=25, progress=False, gradients="autograd")
    np.testing.assert_allclose(fast.losses, plain.losses, rtol=2e-4)
    assert plain.losses[-1].max() < 0.9 * plain.losses[0].min()      # it did move


def test_load_twins_loads_the_longest_stored_run():
    """Older runs stay stored (the first labeller's verdicts were given on them); the chapters must get the longest."""
    for t in twins.TARGETS:
        raw = [json.loads(p.read_text()) for p in twins.stored_twins(t)]
        longest = max(r["metadata"]["recipe"]["steps"] for r in raw)
        want = sorted(r["content_hash"] for r in raw if r["metadata"]["recipe"]["steps"] == longest)
        assert sorted(checkpoints.content_hash(m) for m in twins.load_twins(t)) == want
