import json

import pytest
import torch

from compbook.cppn.data import store as checkpoints
from compbook.cppn import picbreeder
from compbook.cppn.network import uniform_cppn


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
    assert (checkpoints.content_hash(uniform_cppn(2, 3, "sin", seed=0))
            != checkpoints.content_hash(uniform_cppn(2, 3, seed=0)))


def test_edited_weights_are_detected(tmp_path):
    from safetensors.torch import load_file, save_file
    checkpoints.save_cppn(uniform_cppn(2, 3, seed=0), tmp_path / "m")
    t = load_file(str(tmp_path / "m.safetensors"))
    t["weight0"][0, 0] += 1.0
    save_file(t, str(tmp_path / "m.safetensors"))
    with pytest.raises(ValueError, match="content hash|digest"):
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


# -- hardening -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("sidecar,match", [
    (lambda cfg: {k: v for k, v in cfg.items() if k != "activations"}, r"m\.json: missing fields \['activations'\]"),
    (lambda cfg: [cfg], r"m\.json: expected a JSON object .* got a JSON list"),
])
def test_malformed_sidecar_names_the_file(tmp_path, sidecar, match):
    """Used to raise KeyError / AttributeError."""
    checkpoints.save_cppn(uniform_cppn(1, 2), tmp_path / "m")
    cfg = json.loads((tmp_path / "m.json").read_text())
    (tmp_path / "m.json").write_text(json.dumps(sidecar(cfg)))
    with pytest.raises(ValueError, match=match):
        checkpoints.load_cppn(tmp_path / "m")


def test_truncated_safetensors_names_the_file(tmp_path):
    """Used to raise a bare SafetensorError naming no file."""
    checkpoints.save_cppn(uniform_cppn(2, 3), tmp_path / "m")
    raw = (tmp_path / "m.safetensors").read_bytes()
    (tmp_path / "m.safetensors").write_bytes(raw[: len(raw) // 2])
    with pytest.raises(ValueError, match=r"m\.safetensors: not a readable safetensors file"):
        checkpoints.load_cppn(tmp_path / "m")


def test_sidecar_of_another_width_names_both_files(tmp_path):
    checkpoints.save_cppn(uniform_cppn(2, 3), tmp_path / "m")
    checkpoints.save_cppn(uniform_cppn(2, 5), tmp_path / "wide")
    (tmp_path / "m.json").write_bytes((tmp_path / "wide.json").read_bytes())
    with pytest.raises(ValueError,
                       match=r"m\.json: sidecar field 'activations' gives \[5, 5\], but the tensors say \[3, 3\]"):
        checkpoints.load_cppn(tmp_path / "m")


@pytest.mark.parametrize("metadata", [{"when": object()}, {"loss": float("nan")}, ["not", "a", "dict"]])
def test_save_with_bad_metadata_writes_nothing(tmp_path, metadata):
    """Used to leave a half-written checkpoint (the safetensors file without its sidecar)."""
    with pytest.raises(ValueError, match="metadata"):
        checkpoints.save_cppn(uniform_cppn(1, 2), tmp_path / "m", metadata)
    assert list(tmp_path.iterdir()) == []


def test_save_replaces_a_checkpoint_atomically(tmp_path, monkeypatch):
    """A failure while writing keeps the previous checkpoint whole and leaves no temporary file."""
    old = uniform_cppn(1, 2, seed=0)
    checkpoints.save_cppn(old, tmp_path / "m")

    def broken(*args, **kwargs):
        raise OSError("disk full")
    import compbook.results.checkpoints as generic
    monkeypatch.setattr(generic, "save_file", broken)   # the writer every part shares
    with pytest.raises(OSError, match="disk full"):
        checkpoints.save_cppn(uniform_cppn(1, 2, seed=1), tmp_path / "m")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.json", "m.safetensors"]
    assert checkpoints.content_hash(checkpoints.load_cppn(tmp_path / "m")) == checkpoints.content_hash(old)
