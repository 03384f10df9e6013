import json

import pytest
import torch

from compbook import checkpoints, picbreeder
from compbook.cppn import CPPN, uniform_cppn


def test_roundtrip_keeps_weights_masks_and_hash(tmp_path):
    m = picbreeder.layerize(picbreeder.load_genome("butterfly", download=False))
    checkpoints.save_cppn(m, tmp_path / "b", {"target": "butterfly"})
    back = checkpoints.load_cppn(tmp_path / "b")
    assert back.activations == m.activations and back.color == m.color
    assert all(torch.equal(a, b) for a, b in zip(back.weights, m.weights))
    assert all(torch.equal(a, b) for a, b in zip(back.masks, m.masks))
    assert checkpoints.content_hash(back) == checkpoints.content_hash(m)
    assert checkpoints.load_metadata(tmp_path / "b") == {"target": "butterfly"}


def test_hash_changes_with_any_weight():
    m = uniform_cppn(2, 3, seed=0)
    h = checkpoints.content_hash(m)
    with torch.no_grad():
        m.weights[1][0, 0] += 1e-6
    assert checkpoints.content_hash(m) != h
    assert checkpoints.content_hash(uniform_cppn(2, 3, "sin", seed=0)) != checkpoints.content_hash(uniform_cppn(2, 3, seed=0))


def test_edited_weights_are_detected(tmp_path):
    from safetensors.torch import load_file, save_file
    checkpoints.save_cppn(uniform_cppn(2, 3, seed=0), tmp_path / "m")
    t = load_file(str(tmp_path / "m.safetensors"))
    t["weight0"][0, 0] += 1.0
    save_file(t, str(tmp_path / "m.safetensors"))
    with pytest.raises(ValueError, match="content hash"):
        checkpoints.load_cppn(tmp_path / "m")


def test_bad_checkpoint_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="x.json"):
        checkpoints.load_cppn(tmp_path / "x")
    checkpoints.save_cppn(uniform_cppn(1, 2), tmp_path / "m")
    cfg = json.loads((tmp_path / "m.json").read_text())
    (tmp_path / "m.json").write_text(json.dumps({**cfg, "format": "other/9"}))
    with pytest.raises(ValueError, match="format"):
        checkpoints.load_cppn(tmp_path / "m")
    (tmp_path / "m.json").write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        checkpoints.load_cppn(tmp_path / "m")


def test_sgd_twins_train_then_load_the_same_networks(tmp_path, monkeypatch):
    monkeypatch.setenv("COMPBOOK_DATA", str(tmp_path))
    template = CPPN([["sin", "gaussian"], ["tanh", "sigmoid"]], "hsv", seed=0)
    target = torch.rand(8, 8, 3)
    models, how = checkpoints.sgd_twins("t", template, target, seeds=[0, 1], steps=5, lr=1e-2)
    assert how.startswith("trained") and len(models) == 2
    assert checkpoints.find_checkpoint(checkpoints.twin_stem("t", 8, 5, 1)) is not None
    again, how = checkpoints.sgd_twins("t", template, target, seeds=[0, 1], steps=5, lr=1e-2)
    assert how.startswith("loaded")
    assert [checkpoints.content_hash(m) for m in again] == [checkpoints.content_hash(m) for m in models]
    assert models[0].activations == template.activations
    other, how = checkpoints.sgd_twins("t", template, target, seeds=[0, 1], steps=6, lr=1e-2)
    assert how.startswith("trained"), "a checkpoint of another step count must not be served"


def test_twin_stem_and_missing_checkpoint(tmp_path, monkeypatch):
    monkeypatch.setenv("COMPBOOK_DATA", str(tmp_path))
    assert checkpoints.twin_stem("skull", 48, 1000, 2) == "emc2/sgd_skull_48px_1000steps_seed2"
    assert checkpoints.find_checkpoint("emc2/nothing") is None
