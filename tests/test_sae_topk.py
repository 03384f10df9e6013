"""compbook.sae.topk: the TopK SAE against a naive reference (spec facts of S2AE's trainer)."""

import numpy as np
import pytest
import torch

from compbook.sae import TopKSAE, fvu
from compbook.sae.topk import dead_latents, l0, load_sae, save_sae


def naive_encode(sae, x):
    """Row by row: ReLU first, then keep the k largest of the ReLU'd values."""
    out = torch.zeros(len(x), sae.d_sae)
    x = x.detach()
    for n, row in enumerate(x):
        pre = torch.relu((row - sae.b_dec) @ sae.W_enc + sae.b_enc).detach()
        order = sorted(range(sae.d_sae), key=lambda j: -float(pre[j]))[:sae.k]
        for j in order:
            out[n, j] = pre[j]
    return out


def test_encode_matches_naive_reference_and_relu_comes_before_topk():
    sae = TopKSAE(6, 20, 5, seed=1)
    with torch.no_grad():
        sae.b_enc.fill_(-1.5)                 # most pre-activations negative: ReLU leaves < k positive
    x = torch.randn(30, 6, generator=torch.Generator().manual_seed(0))
    z = sae.encode(x)
    assert torch.allclose(z, naive_encode(sae, x), atol=1e-6)
    active = (z > 0).sum(1)
    assert (active <= 5).all() and (active < 5).any(), "ReLU must act before TopK: fewer than k can be active"
    assert (z >= 0).all(), "TopK before ReLU would let negative values through"


def test_shapes_decode_and_init_copy():
    sae = TopKSAE(8, 32, 4)
    assert sae.W_enc.shape == (8, 32) and sae.W_dec.shape == (32, 8)
    assert torch.equal(sae.W_dec, sae.W_enc.T), "W_dec must start as a copy of W_enc"
    x = torch.randn(5, 8)
    assert sae.encode(x).shape == (5, 32) and sae(x).shape == (5, 8)
    z = sae.encode(x)
    assert torch.allclose(sae.decode(z), z @ sae.W_dec + sae.b_dec)


def test_unit_decoder_rows_after_a_step():
    sae = TopKSAE(8, 32, 4)
    opt = torch.optim.SGD(sae.parameters(), lr=1.0)
    x = torch.randn(64, 8) * 3
    ((sae(x) - x) ** 2).sum().backward()
    opt.step()
    assert not torch.allclose(sae.W_dec.norm(dim=1), torch.ones(32)), "the step should have moved the norms"
    sae.normalize_decoder()
    assert torch.allclose(sae.W_dec.norm(dim=1), torch.ones(32), atol=1e-6)


def test_fvu_formula():
    g = torch.Generator().manual_seed(0)
    x, x_hat = torch.randn(50, 7, generator=g), torch.randn(50, 7, generator=g)
    xn, hn = x.numpy().astype(np.float64), x_hat.numpy().astype(np.float64)
    want = ((xn - hn) ** 2).sum() / ((xn - xn.mean(0)) ** 2).sum()
    assert fvu(x, x_hat) == pytest.approx(want, rel=1e-5)
    assert fvu(x, x) == 0.0
    assert fvu(x, x.mean(0).expand_as(x)) == pytest.approx(1.0, rel=1e-5), "mean prediction must give FVU 1"


def test_l0_and_dead():
    z = torch.tensor([[1.0, 0, 2, 0], [0, 0, 3, 0]])
    assert l0(z) == 1.5
    assert dead_latents(z).tolist() == [False, True, False, True]


def test_checkpoint_roundtrip(tmp_path):
    sae = TopKSAE(8, 16, 3, seed=2)
    with torch.no_grad():
        sae.b_dec.add_(1.0)
    save_sae(sae, tmp_path / "sae", {"note": "x"})
    back = load_sae(tmp_path / "sae")
    x = torch.randn(4, 8)
    assert torch.equal(back(x), sae(x)) and back.k == 3


def test_determinism():
    assert torch.equal(TopKSAE(8, 16, 3, seed=5).W_enc, TopKSAE(8, 16, 3, seed=5).W_enc)
    assert not torch.equal(TopKSAE(8, 16, 3, seed=5).W_enc, TopKSAE(8, 16, 3, seed=6).W_enc)


@pytest.mark.parametrize("k", [0, -1, 17])
def test_bad_k(k):
    with pytest.raises(ValueError, match="k must be an integer"):
        TopKSAE(8, 16, k)


def test_bad_inputs():
    sae = TopKSAE(8, 16, 3)
    with pytest.raises(ValueError, match="x: .*width d_in=8"):
        sae.encode(torch.randn(4, 9))
    x = torch.randn(4, 8)
    x[1, 2] = float("nan")
    with pytest.raises(ValueError, match="x contains NaN"):
        sae(x)
