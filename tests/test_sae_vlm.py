"""compbook.sae.vlm: extraction shapes on the tiny VLM and on a tiny *random* Qwen2.5-VL (answers mean nothing)."""

import dataclasses

import pytest
import torch

from compbook.sae.data import make_scenes
from compbook.sae.vlm import (IMAGE, PAD, TEXT, TinyVLM, TinyVLMConfig, VLMTrainConfig, caption_accuracy,
                              extract, load_vlm, save_vlm, train_vlm)


@pytest.fixture(scope="module")
def scenes():
    return make_scenes(24, seed=0)


def tiny_cfg(scenes, **kw):
    return TinyVLMConfig(vocab_size=len(scenes.vocab), patch_dim=scenes.patches.shape[-1], grid=scenes.grid,
                         max_text=scenes.tokens.shape[1], d_model=16, n_layers=2, n_heads=2, d_mlp=32,
                         pad_id=scenes.vocab.pad_id, **kw)


def test_extract_tiny_vlm_shapes_and_types(scenes):
    model = TinyVLM(tiny_cfg(scenes))
    ex = extract(model, (scenes.patches[:3], scenes.tokens[:3]), layer=1)
    p, l = 64, scenes.tokens.shape[1]
    assert ex.resid.shape == (3, p + l, 16) and ex.attentions.shape == (3, 2, 2, p + l, p + l)
    assert (ex.token_type[:, :p] == IMAGE).all()
    assert ((ex.token_type[:, p:] == PAD) == (scenes.tokens[:3] == scenes.vocab.pad_id)).all()
    assert (ex.token_type[:, p:] != IMAGE).all() and (ex.token_type == TEXT).any()
    assert ex.patch_rc[0, 9].tolist() == [1, 1] and ex.patch_rc[0, p].tolist() == [-1, -1]
    assert torch.allclose(ex.attentions.sum(-1), torch.ones(3, 2, 2, p + l), atol=1e-5)
    assert (ex.attentions[0, 0, 0].triu(1) == 0).all(), "attention must be causal"
    _, hidden, _ = model.run(scenes.patches[:3], scenes.tokens[:3])
    assert torch.equal(ex.resid, hidden[1])
    with pytest.raises(ValueError, match="layer=3"):
        extract(model, (scenes.patches[:3], scenes.tokens[:3]), layer=3)


def test_text_only_model_sees_no_image(scenes):
    model = TinyVLM(tiny_cfg(scenes, text_only=True))
    a = model(scenes.patches[:2], scenes.tokens[:2])
    b = model(torch.zeros_like(scenes.patches[:2]), scenes.tokens[:2])
    assert torch.equal(a, b)


def test_vlm_checkpoint_and_determinism(scenes, tmp_path):
    cfg = tiny_cfg(scenes)
    m1, _ = train_vlm(cfg, scenes, VLMTrainConfig(steps=5, batch=8), progress=False)
    m2, _ = train_vlm(cfg, scenes, VLMTrainConfig(steps=5, batch=8), progress=False)
    assert all(torch.equal(a, b) for a, b in zip(m1.state_dict().values(), m2.state_dict().values()))
    save_vlm(m1, tmp_path / "vlm", {"acc": 1})
    back, meta = load_vlm(tmp_path / "vlm")
    assert meta == {"acc": 1}
    assert torch.equal(back(scenes.patches[:2], scenes.tokens[:2]), m1(scenes.patches[:2], scenes.tokens[:2]))
    acc = caption_accuracy(m1, scenes)
    assert 0 <= acc["concept words"] <= acc["all"] + 1 and 0 <= acc["all"] <= 1


# -- a tiny random Qwen2.5-VL: the real-model path, offline. Its answers mean nothing. ---------------------------
def tiny_qwen(attn="eager"):
    from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration

    cfg = Qwen2_5_VLConfig(
        text_config=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=3, num_attention_heads=4,
                         num_key_value_heads=2, vocab_size=200, max_position_embeddings=512,
                         bos_token_id=1, eos_token_id=2, pad_token_id=0,
                         rope_scaling={"type": "mrope", "mrope_section": [1, 1, 2]}),
        vision_config=dict(depth=1, hidden_size=32, intermediate_size=64, num_heads=4, out_hidden_size=32,
                           patch_size=14, spatial_merge_size=2, temporal_patch_size=2, window_size=112,
                           fullatt_block_indexes=[0]),
        image_token_id=150, video_token_id=151, vision_start_token_id=152, vision_end_token_id=153,
        bos_token_id=1, eos_token_id=2, pad_token_id=0)
    cfg._attn_implementation = attn
    torch.manual_seed(0)
    return Qwen2_5_VLForConditionalGeneration(cfg).eval()


def qwen_inputs(b=2, h=4, w=6):
    """What Qwen2.5-VL's processor returns for one h x w (14 px patches) image per sample."""
    n_img = h * w // 4
    ids = torch.tensor([[1, 152] + [150] * n_img + [153, 5, 6, 7, 0]] * b)
    mask = torch.ones_like(ids)
    mask[:, -1] = 0
    return {"input_ids": ids, "attention_mask": mask, "pixel_values": torch.randn(b * h * w, 3 * 2 * 14 * 14),
            "image_grid_thw": torch.tensor([[1, h, w]] * b)}


def test_extract_tiny_random_qwen25vl():
    model = tiny_qwen()
    inputs = qwen_inputs()
    ex = extract(model, inputs, layer=2)
    t = inputs["input_ids"].shape[1]
    assert ex.grid == (2, 3) and ex.patch_idx.tolist() == list(range(2, 8))
    assert ex.resid.shape == (2, t, 32) and ex.attentions.shape == (2, 3, 4, t, t)
    assert (ex.token_type[:, 2:8] == IMAGE).all() and (ex.token_type[:, -1] == PAD).all()
    assert ex.patch_rc[0, 2:8].tolist() == [[0, 0], [0, 1], [0, 2], [1, 0], [1, 1], [1, 2]]
    ref = model(**inputs, output_hidden_states=True).hidden_states[2]
    assert torch.allclose(ex.resid, ref, atol=1e-5)


def test_qwen_without_attentions_says_how_to_enable_them():
    model = tiny_qwen(attn="sdpa")
    with pytest.raises(ValueError, match="model: .*attn_implementation='eager'"):
        extract(model, qwen_inputs(), layer=1)
