"""Part B's stored results read again with the current code: every number they record that the chapters show
comes back from the stored weights (chapters 10-13).

A stored CLEVR-2D stack must be of the scenes the code renders now (its validation scores are recomputed from
renders of this ``compbook.scenes``: a stack trained on another geometry, such as the earlier triangle, fails);
the symbolic-track models (the controlled sweep, the recipe models) read no image, and their stored scores must
come back exactly from their weights.
"""

import numpy as np
import pytest
import torch

from compbook.binding import clevr
from compbook.binding.runs import sweep
from compbook.binding.recipe.checks import stored_models
from compbook.binding.recipe.evaluate import evaluate_stored
from compbook.results.paths import data_dir

BINDING = data_dir() / "binding"


@pytest.fixture(autouse=True)
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.mark.parametrize("swap", [False, True])
def test_clevr2d_stacks_are_of_the_current_renders(swap):
    stack, setup, info = clevr.load_or_train(swap)
    assert setup == clevr.Setup() and stack.n_models == setup.n_models
    r = clevr.evaluate(stack, clevr.scene_sets(setup)["val"], setup.res)
    # each model's stored weights are those of its best validation step (selection), scored on today's renders
    best = np.max(np.asarray(info["val"]), axis=0)
    assert np.array_equal((r["concept"] + r["object"]) / 2, best), "stored models of another rendering"


def test_controlled_sweep_scores_come_back_from_the_weights():
    rec = sweep.load_sweep(5)
    cfg_sweep, splits = sweep.record_splits(rec)
    now = sweep.test_scores(rec["params"], rec["config"], splits, cfg_sweep)
    for key, value in now.items():
        assert value == rec[key] if isinstance(value, str) else np.array_equal(value, rec[key]), key


def test_every_stored_recipe_model_gives_its_final_readings():
    stems = stored_models(BINDING)
    assert {"recipe_C2V50_cov0.5_s0", "overfit_C2V5_cov0.8_s0"} <= set(stems)
    for stem in stems:
        ev = evaluate_stored(BINDING / stem)
        assert ev.final == ev.record["final"], stem
