"""compbook.twins: FER-recipe SGD twins (issue 11)."""

import pytest

from compbook import checkpoints, twins


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
