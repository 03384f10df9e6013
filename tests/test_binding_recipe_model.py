"""The recipe's model (compbook.binding.recipe.model): the loss against a naive loop, masked pads, the stored
model and where it goes."""

import dataclasses

import numpy as np
import pytest
import torch
from recipe_tiny import one_batch, tiny

from compbook.binding.recipe.data import query_tokens, recipe_scene_tokens
from compbook.binding.recipe.model import (
    RecipeEncoder, TokenEncoder, batch_loss, load_recipe, save_recipe, soft_ce, stem_for, store_dir
)
from compbook.results.paths import data_dir


def test_soft_ce_against_naive_loop():
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(7, 5, generator=g)
    labels = (torch.rand(7, 5, generator=g) < 0.3).float()
    labels[2] = 0
    ref, n = 0.0, 0
    for i in range(7):
        if labels[i].sum() == 0:
            continue
        p = torch.softmax(logits[i], 0)
        ref += -sum(labels[i, j] / labels[i].sum() * torch.log(p[j]) for j in range(5))
        n += 1
    assert torch.allclose(soft_ce(logits, labels), ref / n, atol=1e-6)


def test_encoder_pads_are_masked_and_shapes():
    cfg = tiny()
    torch.manual_seed(0)
    m = RecipeEncoder(cfg).eval()
    q = query_tokens(cfg, [3, 17])
    long = torch.full((2, cfg.scene_len), cfg.pad)
    long[:, : q.shape[1]] = q
    with torch.no_grad():
        assert torch.allclose(m.query(q), m.query(long), atol=1e-5)
        z = m.scene(recipe_scene_tokens(cfg, np.array([[1, -1], [2, 5]])))
    assert z.shape == (2, cfg.d_out)
    assert float(m.scale().detach()) == pytest.approx(np.exp(1.15), rel=1e-5)
    m.tau.data.fill_(5.0)
    assert float(m.scale().detach()) == 10.0


def test_stored_model_round_trip(tmp_path):
    cfg = tiny()
    torch.manual_seed(1)
    m = RecipeEncoder(cfg).eval()
    rec = {"config": dataclasses.asdict(cfg), "log": [{"step": 1}]}
    save_recipe(m, rec, tmp_path / "m")
    m2, rec2 = load_recipe(tmp_path / "m")
    assert rec2["config"] == rec["config"] and rec2["log"] == rec["log"]
    s, q = one_batch(cfg)
    with torch.no_grad():
        assert torch.equal(batch_loss(m, cfg, s, q), batch_loss(m2, cfg, s, q))
    assert sum(p.numel() for p in m.scene.parameters()) == sum(p.numel() for p in TokenEncoder(cfg).parameters())


def test_stems_and_store(monkeypatch, tmp_path):
    cfg = tiny(n_values=7, coverage=0.25, seed=3)
    assert stem_for(cfg, tmp_path).name == "recipe_C2V7_cov0.25_s3"
    assert stem_for(cfg, tmp_path, prefix="dense").name == "dense_C2V7_cov0.25_s3"
    monkeypatch.delenv("COMPBOOK_MODE", raising=False)
    cpu = store_dir()
    monkeypatch.setenv("COMPBOOK_MODE", "full")
    assert store_dir() == cpu / "full" and stem_for(cfg).parent == cpu / "full"
    assert cpu.name == "binding" and cpu.parent == data_dir()
    with pytest.raises(ValueError, match="prefix"):
        stem_for(cfg, tmp_path, prefix="../x")
