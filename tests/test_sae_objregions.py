"""compbook.sae.studies.objregions: prefix / bidirectional tiny-VLM variants, attention correlations."""

import pytest
import torch

from compbook.sae.studies import objregions as orr
from compbook.sae.vlm import TinyVLM, TinyVLMConfig


def cfg():
    return TinyVLMConfig(vocab_size=11, patch_dim=6, grid=(2, 3), max_text=5, d_model=16, n_layers=2,
                         n_heads=2, d_mlp=32)


def inputs():
    g = torch.Generator().manual_seed(0)
    return torch.randn(3, 6, 6, generator=g), torch.randint(1, 11, (3, 5), generator=g)


def test_without_options_it_is_the_book_model():
    book = TinyVLM(cfg()).eval()
    ours = orr.ObjectVLM(cfg()).eval()
    ours.load_state_dict({**book.state_dict(), "prefix": ours.prefix.detach()})
    p, t = inputs()
    with torch.no_grad():
        assert torch.allclose(ours(p, t), book(p, t), atol=1e-5)
        a_book = book.run(p, t)[2][0]
        a_ours = ours.run(p, t)[2][0]
    assert torch.allclose(a_ours, a_book, atol=1e-6)


@pytest.mark.parametrize("n_prefix, bidi", [(0, False), (3, False), (2, True)])
def test_masks_and_weights(n_prefix, bidi):
    m = orr.ObjectVLM(cfg(), n_prefix, bidi).eval()
    p, t = inputs()
    with torch.no_grad():
        fused = m(p, t)
        logits, hidden, attns = m.run(p, t, need_weights=True)
    assert torch.allclose(fused, logits, atol=1e-5), "fused and explicit attention must agree"
    assert logits.shape == (3, 5, 11) and hidden[0].shape[1] == n_prefix + 6 + 5
    assert list(m.patch_idx) == list(range(n_prefix, n_prefix + 6))
    a = attns[0]                                              # (B, H, T, T)
    img = slice(0, n_prefix + 6)
    upper = torch.ones(n_prefix + 6, n_prefix + 6, dtype=torch.bool).triu(1)
    later = a[:, :, img, img][..., upper]
    assert (later.abs().sum() > 0) == bidi, "only the bidirectional block attends to later patches"
    text_to_future = a[:, :, n_prefix + 6:, n_prefix + 6:][..., torch.ones(5, 5, dtype=torch.bool).triu(1)]
    assert not text_to_future.any(), "the caption stays causal"


def test_bad_arguments():
    with pytest.raises(ValueError, match="n_prefix"):
        orr.ObjectVLM(cfg(), -1)
    with pytest.raises(ValueError, match="variant"):
        orr.stored_object_vlm("sideways", "grid2")
    with pytest.raises(ValueError, match="layout"):
        orr.stored_object_vlm("4 prefix tokens", "pair")


def test_attention_correlations_on_known_maps():
    labels = torch.tensor([[0, 0, 1, 1, -1, -1]])
    same = ((labels[0][:, None] == labels[0][None]) & (labels[0][:, None] >= 0)).float()
    got = orr.attention_correlations(same[None], labels)
    assert got["corr same object"] == pytest.approx(1.0)
    i = torch.arange(6)
    raster = 1.0 / (torch.maximum(i[:, None], i[None]) + 1).float()
    got = orr.attention_correlations(raster[None], labels)
    assert got["corr raster order"] == pytest.approx(1.0)
    assert got["corr same object"] < 1.0


def test_the_variants_layouts_are_scene_layouts_under_their_own_name():
    """The layouts the object VLMs are trained on are names of compbook.scenes.LAYOUTS (a dict of geometry);
    objregions keeps no second, different ``LAYOUTS``."""
    from compbook import scenes
    assert set(orr.OBJECT_VLM_LAYOUTS) <= set(scenes.LAYOUTS)
    assert not hasattr(orr, "LAYOUTS")
    with pytest.raises(ValueError, match="layout='pair'"):
        orr.stored_object_vlm("causal (the book's)", "pair")
