"""The recipe's settings (compbook.binding.recipe.config): the config idiom, the released sizes, bad fields."""

import dataclasses

import pytest

from compbook.binding.recipe.config import RecipeConfig


def test_cpu_and_full_mode(monkeypatch):
    monkeypatch.delenv("COMPBOOK_MODE", raising=False)
    cpu = RecipeConfig.for_mode()
    assert cpu == RecipeConfig() and (cpu.n_layers, cpu.d_model, cpu.batch) == (2, 64, 256)
    monkeypatch.setenv("COMPBOOK_MODE", "full")
    full = RecipeConfig.for_mode()
    assert full == RecipeConfig.full()
    assert (full.n_layers, full.d_model, full.d_ff, full.steps, full.batch, full.lr) == (6, 256, 2048, 50000,
                                                                                        512, 3e-5)
    assert full.weight_decay == cpu.weight_decay == 0.1 and full.n_swaps == 1 and full.scale_max == 10.0
    # only the sizes change: the object space and the evaluation are the CPU ones
    same = {f.name for f in dataclasses.fields(RecipeConfig)} - set(RecipeConfig.FULL)
    assert all(getattr(full, k) == getattr(cpu, k) for k in same)
    assert dataclasses.replace(full, coverage=0.3).coverage == 0.3
    monkeypatch.setenv("COMPBOOK_MODE", "gpu")
    with pytest.raises(ValueError, match="COMPBOOK_MODE"):
        RecipeConfig.for_mode()


def test_token_ids_follow_the_released_layout():
    c = RecipeConfig(n_values=7, n_concepts=3, max_objects=2)
    assert (c.soo, c.eoo, c.eos, c.pad, c.vocab) == (21, 22, 23, 24, 25)
    assert c.n_objects == 343 and c.scene_len == 11


@pytest.mark.parametrize("fields, word", [({"coverage": 1.0}, "coverage"), ({"d_model": 10, "n_heads": 4}, "n_heads"),
                                          ({"n_values": 1}, "n_values"), ({"warmup_frac": 1.0}, "warmup_frac")])
def test_bad_fields_name_themselves(fields, word):
    with pytest.raises(ValueError, match=word):
        RecipeConfig(**fields)
