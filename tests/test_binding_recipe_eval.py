"""The recipe's readings (compbook.binding.recipe.evaluate): separation against a naive loop, the floors, the go
rule, a stored model read again."""

import dataclasses
import json

import numpy as np
import pytest
import torch
from recipe_tiny import tiny

from compbook.binding.recipe.data import binding_scenes, swap_sets
from compbook.binding.recipe.evaluate import (
    bag_of_concepts, coverage_table, eval_sets, evaluate_recipe, evaluate_stored, floors, go_no_go, is_stored,
    load_records, separation
)
from compbook.binding.recipe.model import RecipeEncoder, save_recipe, stem_for


def test_separation_against_naive_loop():
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(7, 5, generator=g)
    labels = (torch.rand(7, 5, generator=g) < 0.3).float()
    labels[2] = 0
    sep = separation(logits.numpy(), labels.numpy())
    ref_sep = [min(logits[i, j] for j in range(5) if labels[i, j]) > max(
        [logits[i, j] for j in range(5) if not labels[i, j]] or [-np.inf])
               for i in range(7) if labels[i].sum() > 0]
    assert sep.tolist() == [bool(x) for x in ref_sep]


def test_chance_and_bag_of_concepts_floor():
    cfg = tiny(n_values=6)
    sets = eval_sets(cfg)
    f = floors(cfg, sets, n_sim=40000)
    assert abs(f["swap_chance_sim"] - 1 / 6) < 0.01 and f["swap_chance_exact"] == pytest.approx(1 / 6)
    # a bag-of-concepts model can never separate two objects from their swaps; the paper's metric lets it
    # pass one-object scenes
    assert f["boc_unseen_binding"] == 0.0 == f["boc_seen_binding"]
    assert 0.3 < f["boc_unseen_paper"] < 0.9 and f["boc_unseen_concepts"] == 1.0
    assert f["boc_unseen_paper_strict"] <= f["boc_unseen_paper"]
    sc = binding_scenes(cfg, np.arange(36), 20, np.random.default_rng(5))
    cand = np.concatenate([sc, swap_sets(cfg, sc)], 1)
    exact = np.stack([bag_of_concepts(cfg, sc[i:i + 1], cand[i])[0] for i in range(20)])
    assert np.allclose(exact[:, :2].sum(1), exact[:, 2:].sum(1))


def test_go_no_go_rule():
    rec = {"config": {"eval_scenes": 2000}, "floors": {"swap_chance_sim": 1 / 6},
           "final": {"seen_binding": 0.95, "unseen_binding": 0.20}}
    assert go_no_go(rec)[0]                      # 0.20 of 2000: Wilson low 0.18 > 1/6
    rec["final"]["unseen_binding"] = 0.17
    assert not go_no_go(rec)[0]
    rec["final"].update(seen_binding=0.89, unseen_binding=0.9)
    assert not go_no_go(rec)[0]


def _stored(tmp_path, cfg, **record):
    torch.manual_seed(0)
    model = RecipeEncoder(cfg).eval()
    sets = eval_sets(cfg)
    rec = {"config": dataclasses.asdict(cfg), "log": [{"step": cfg.steps, "loss": 1.0}], "steps": cfg.steps,
           "seconds": 1.0, "final": evaluate_recipe(model, cfg, sets), "floors": floors(cfg, sets, n_sim=2000)}
    stem = stem_for(cfg, tmp_path)
    save_recipe(model, rec | record, stem)
    return stem, model, sets


def test_a_stored_model_is_read_again_and_judged(tmp_path):
    cfg = tiny()
    stem, model, sets = _stored(tmp_path, cfg)
    assert is_stored(stem) and not is_stored(tmp_path / "other")
    ev = evaluate_stored(stem, cfg)
    assert ev.final == evaluate_recipe(model, cfg, sets) and ev.floors == ev.record["floors"]
    assert (ev.go, ev.why) == go_no_go(ev.record)
    assert ev.verdict_line().startswith("GO: " if ev.go else "NO-GO: ")
    assert list(ev.log_table(["loss"]).columns) == [cfg.steps]
    here = evaluate_stored(stem, floors_here=True)        # the stored config; floors simulated here
    assert here.cfg == cfg and here.floors == floors(cfg, sets)
    with pytest.raises(ValueError, match="another config"):
        evaluate_stored(stem, dataclasses.replace(cfg, lr=1e-2))


def test_records_and_coverage_table(tmp_path):
    for cov in (0.5, 0.25):
        _stored(tmp_path, tiny(coverage=cov))
    recs = load_records(tmp_path, n_values=6)
    assert [r["config"]["coverage"] for r in recs] == [0.25, 0.5]
    table = coverage_table(recs)
    assert list(table.index) == [0.25, 0.5]
    for _, row in table.iterrows():
        assert row.unseen_binding_lo <= row.unseen_binding <= row.unseen_binding_hi
    stem = stem_for(tiny(coverage=0.5), tmp_path)
    assert json.loads(stem.with_name(stem.name + ".json").read_text())["steps"] == 6
