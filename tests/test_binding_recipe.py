"""Training by the scaled-down released recipe (compbook.binding.recipe.train): the schedule, deterministic and
resumable training that learns, the command in full mode."""

import numpy as np
import pytest
import torch
from recipe_tiny import one_batch, tiny

from compbook.binding.recipe.train import lr_factor, train_recipe
from compbook.binding.recipe.evaluate import binding_by_swap_split, eval_sets, evaluate_recipe
from compbook.binding.recipe.model import RecipeEncoder, batch_loss, load_recipe, save_recipe


def test_schedule():
    cfg = tiny(steps=100)
    f = [lr_factor(cfg, s) for s in range(100)]
    assert f[0] == 0.0 and f[10] == 1.0 and max(f) == 1.0 and f[5] == 0.5
    assert all(a >= b for a, b in zip(f[10:], f[11:])) and f[99] == pytest.approx(1 / 90)


def test_training_deterministic_resumable_and_learns(tmp_path):
    cfg = tiny()
    m1, r1 = train_recipe(cfg, progress=False)
    m2, _ = train_recipe(cfg, progress=False)
    for (k, a), b in zip(m1.state_dict().items(), m2.state_dict().values()):
        assert torch.equal(a, b), k
    ck = tmp_path / "c_state"
    train_recipe(cfg, ck, stop_after=3, progress=False)
    m3, r3 = train_recipe(cfg, ck, progress=False)
    for (k, a), b in zip(m1.state_dict().items(), m3.state_dict().values()):
        assert torch.allclose(a, b, atol=1e-6), k
    assert [e["step"] for e in r3["log"]] == [3, 6] and r3["steps"] == 6
    with pytest.raises(ValueError, match="checkpoint"):
        train_recipe(tiny(lr=1e-2), ck, progress=False)
    # the loss falls with enough steps (tiny model, few values)
    c = tiny(steps=80, eval_every=80, lr=3e-3)
    sets = eval_sets(c)
    m, rec = train_recipe(c, sets=sets, progress=False)
    start = batch_loss(RecipeEncoder(c), c, *one_batch(c)).item()
    assert rec["log"][-1]["loss"] < start - 0.5
    ev = evaluate_recipe(m, c, sets)
    assert set(ev) == {"seen_binding", "unseen_binding", "seen_paper", "unseen_paper", "unseen_concepts"}
    by = binding_by_swap_split(m, c, sets["unseen_binding"])
    assert by.scenes.sum() == len(sets["unseen_binding"]) and list(by.index) == [0, 1, 2]
    assert np.isclose((by.scenes * by.binding.fillna(0)).sum() / by.scenes.sum(), ev["unseen_binding"])
    save_recipe(m, rec, tmp_path / "m")
    m4, rec4 = load_recipe(tmp_path / "m")
    assert evaluate_recipe(m4, c, sets) == ev and rec4["log"] == rec["log"]


def test_full_mode_command_runs_tiny(tmp_path, monkeypatch):
    """The released recipe's command (COMPBOOK_MODE=full: 6 x 256, d_ff 2048) runs end to end, tiny."""
    monkeypatch.setenv("COMPBOOK_MODE", "full")
    from compbook.binding.__main__ import main
    main(["recipe", "--coverages", "0.5", "--values", "6", "--steps", "2", "--batch", "16", "--eval-scenes", "20",
            "--out", str(tmp_path), "--checkpoint-dir", str(tmp_path)])
    model, rec = load_recipe(tmp_path / "recipe_C2V6_cov0.5_s0")
    c = rec["config"]
    assert (c["n_layers"], c["d_model"], c["d_ff"], c["lr"]) == (6, 256, 2048, 3e-5) and rec["mode"] == "full"
    assert rec["steps"] == 2 and len(rec["log"]) == 1 and set(rec["floors"]) >= {"swap_chance_sim"}
    assert "--steps 2" in rec["made_by"]
    assert tmp_path.joinpath("recipe_C2V6_cov0.5_s0_state.json").exists()      # the resumable state
