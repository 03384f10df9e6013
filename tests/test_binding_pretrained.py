"""The pretrained path (transformers CLIPModel / Dinov2Model) on tiny RANDOM models built from configs.

These models are untrained: their answers mean nothing. The test checks only that embeddings of the book's
scenes and queries flow through the same analysis functions (shapes, finiteness, no errors)."""

import numpy as np
import torch
from transformers import CLIPConfig, CLIPModel, Dinov2Config, Dinov2Model

import compbook.binding as B
from compbook import scenes as S
from compbook.binding import data as D
from compbook.binding import decomposition as dec
from compbook.binding import pretrained as P


def _scenes():
    sp = S.clevr2d()
    pairs = S.all_pairs(range(24))[::12]
    return sp, pairs, S.render_images(sp, pairs, res=32)


def test_tiny_random_clip_through_recognition_and_decomposition():
    torch.manual_seed(0)
    cfg = CLIPConfig(text_config=dict(vocab_size=40, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                      num_attention_heads=2, max_position_embeddings=16),
                     vision_config=dict(image_size=32, patch_size=8, hidden_size=16, intermediate_size=32,
                                        num_hidden_layers=1, num_attention_heads=2),
                     projection_dim=12)
    model = CLIPModel(cfg).eval()
    sp, pairs, imgs = _scenes()
    zi = P.clip_image_embeddings(model, imgs, batch=16)
    assert zi.shape == (len(pairs), 12) and np.isfinite(zi).all()
    # our vocabulary's ids stand in for a real tokenizer's (the tiny model has no tokenizer)
    ids = D.object_queries(sp, 12)
    zq = P.clip_text_embeddings(model, ids, (ids != 0).long())
    assert zq.shape == (24, 12)
    ok = B.recognise(zi, zq, D.object_positives(sp, pairs))
    assert ok.shape == (len(pairs),) and ok.dtype == bool
    u = dec.object_vectors(zi, pairs, 24, per_slot=True)
    rec = dec.level1(zi, np.asarray(pairs), np.nan_to_num(u))
    assert np.isfinite(dec.r2(zi, rec))


def test_tiny_random_dinov2_embeddings():
    torch.manual_seed(0)
    cfg = Dinov2Config(image_size=32, patch_size=8, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                       num_attention_heads=2)
    model = Dinov2Model(cfg).eval()
    sp, pairs, imgs = _scenes()
    z = P.dinov2_embeddings(model, imgs, size=32)
    assert z.shape == (len(pairs), 16) and np.isfinite(z).all()
    pos = np.zeros((len(pairs), 3), bool)
    pos[:, 0] = True
    assert B.recognise(z, z[:3], pos).shape == (len(pairs),)
