"""compbook.sae.studies.refopt: the reference trainer's optimisation as an option; with ours selected it is ours."""

import math

import pytest
import torch

from compbook.sae.studies import refopt as ro
from compbook.sae.s2ae import SAEData, SAETrainConfig, train_sae
from compbook.sae.topk import TopKSAE


def tiny_data():
    g = torch.Generator().manual_seed(0)
    acts = torch.randn(6, 5, 8, generator=g) * 3 + 1
    return SAEData(acts, torch.ones(6, 5, dtype=torch.bool), torch.arange(4), (2, 2),
                   torch.rand(6, 4, 4, generator=g))


def test_linear_init_is_nn_linear_like():
    sae = ro.linear_init(TopKSAE(64, 256, 4, seed=0), seed=3)
    bound = 1 / math.sqrt(64)
    assert sae.W_enc.abs().max() <= bound and sae.b_enc.abs().max() <= bound
    # uniform on +-bound: variance bound^2 / 3
    assert float(sae.W_enc.detach().var()) == pytest.approx(bound ** 2 / 3, rel=0.05)
    assert torch.equal(sae.W_dec, sae.W_enc.T) and not torch.any(sae.b_dec)
    assert not torch.allclose(sae.W_dec.norm(dim=1), torch.ones(256)), "rows are not normalised at init"
    ref = torch.nn.Linear(64, 256)
    assert float(ref.weight.detach().abs().max()) <= bound    # the same bound as PyTorch's own


def test_linear_decay():
    assert ro.linear_decay(0, 10) == 1.0
    assert ro.linear_decay(5, 10) == 0.5
    assert ro.linear_decay(10, 10) == 0.0 and ro.linear_decay(12, 10) == 0.0


def test_with_our_options_it_is_our_trainer():
    cfg = SAETrainConfig(d_sae=16, k=2, steps=5, batch_images=2, n_regions=2, lam=0.01, lr=1e-2)
    ours = train_sae(tiny_data(), cfg, progress=False)
    same = ro.train_sae_reference(tiny_data(), ro.ReferenceTrainConfig(
        **cfg.__dict__, schedule="constant", clip=None, init="ours", b_dec_init="mean"), progress=False)
    plain = ro.train_sae_reference(tiny_data(), cfg, progress=False)
    for a in (same, plain):
        assert a.losses == pytest.approx(ours.losses, rel=1e-6)
        assert torch.allclose(a.sae.W_enc, ours.sae.W_enc)


def test_reference_options_change_training():
    cfg = SAETrainConfig(d_sae=16, k=2, steps=6, batch_images=2, n_regions=2, lr=1e-2)
    ours = train_sae(tiny_data(), cfg, progress=False)
    ref = ro.train_sae_reference(tiny_data(), ro.ReferenceTrainConfig(**cfg.__dict__), progress=False)
    assert ref.losses != pytest.approx(ours.losses)
    assert torch.allclose(ref.sae.W_dec.norm(dim=1), torch.ones(16), atol=1e-5)
    # the reference's start is linear_init's (a vanishing rate leaves it in place)
    start = ro.linear_init(TopKSAE(8, 16, 2, seed=0), 0).W_enc.detach().clone()
    tight = ro.train_sae_reference(tiny_data(), ro.ReferenceTrainConfig(**{**cfg.__dict__, "lr": 1e-9}),
                                   progress=False)
    assert torch.allclose(tight.sae.W_enc, start, atol=1e-6)
    # clipping changes the updates (same schedule, init and seed)
    clipped = ro.train_sae_reference(tiny_data(), ro.ReferenceTrainConfig(**cfg.__dict__, clip=1e-3),
                                     progress=False)
    free = ro.train_sae_reference(tiny_data(), ro.ReferenceTrainConfig(**cfg.__dict__, clip=None),
                                  progress=False)
    assert not torch.allclose(clipped.sae.W_enc, free.sae.W_enc)
    assert ref.losses[-1] < ref.losses[0]


@pytest.mark.parametrize("field, value", [("schedule", "cosine"), ("init", "xavier"), ("b_dec_init", "median"),
                                          ("clip", 0.0), ("clip", float("nan"))])
def test_bad_options(field, value):
    with pytest.raises(ValueError, match=field):
        ro.ReferenceTrainConfig(**{field: value})
