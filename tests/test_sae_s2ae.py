"""compbook.sae.s2ae: GS and ES against loop references, gradients through the STE, the trainer."""

import math

import pytest
import torch

from compbook.sae import binarize_ste, exclusive_sparsity, group_sparsity
from compbook.sae.s2ae import SAEData, SAETrainConfig, batch_penalties, fit_sae, s2ae_loss, train_sae
from compbook.sae.topk import TopKSAE


def loop_profiles(z_hat, regions):
    groups = sorted(set(regions.tolist()))
    s = [[math.sqrt(sum(float(z_hat[p, j]) ** 2 for p in range(len(regions)) if regions[p] == g)
                    / sum(1 for r in regions.tolist() if r == g) + 1e-8)
          for j in range(z_hat.shape[1])] for g in groups]
    return s


def loop_gs(z_hat, regions):
    s = loop_profiles(z_hat, regions)
    return sum(sum(row) for row in s) / (len(s) * len(s[0]))


def loop_es(z_hat, regions):
    s = loop_profiles(z_hat, regions)
    cols = [sum(s[g][j] for g in range(len(s))) / len(s) for j in range(len(s[0]))]
    return sum(c * c for c in cols) / len(cols)


def sample(p=12, d=9, seed=0):
    g = torch.Generator().manual_seed(seed)
    z = torch.relu(torch.randn(p, d, generator=g))
    regions = torch.randint(3, 8, (p,), generator=g)        # labels need not start at 0
    return z, regions


def test_gs_es_match_loop_reference():
    for seed in range(3):
        z, r = sample(seed=seed)
        zb = binarize_ste(z)
        assert float(group_sparsity(zb, r)) == pytest.approx(loop_gs(zb, r), rel=1e-5)
        assert float(exclusive_sparsity(zb, r)) == pytest.approx(loop_es(zb, r), rel=1e-5)


def test_binarisation_values_and_straight_through_gradient():
    z = torch.tensor([[0.0, 2.0, 0.5], [3.0, 0.0, 0.0]], requires_grad=True)
    zb = binarize_ste(z)
    assert zb.tolist() == [[0.0, 1.0, 1.0], [1.0, 0.0, 0.0]]
    (zb * torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])).sum().backward()
    assert z.grad.tolist() == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], "STE: gradient of the identity"


def test_penalty_gradients_reach_z_through_the_ste():
    z, r = sample(seed=4)
    z = z.clone().requires_grad_(True)
    gs = group_sparsity(binarize_ste(z), r)
    gs.backward()
    # analytic: d s^g_j / d zhat_pj = zhat_pj / (n_g s^g_j); d GS = that / (G d); STE passes it to z unchanged
    zb = (z > 0).float().detach()
    groups = sorted(set(r.tolist()))
    want = torch.zeros_like(z)
    for g in groups:
        m = r == g
        s = torch.sqrt((zb[m] ** 2).mean(0) + 1e-8)
        want[m] = zb[m] / (m.sum() * s) / (len(groups) * z.shape[1])
    assert torch.allclose(z.grad, want, atol=1e-6)
    z2 = z.detach().clone().requires_grad_(True)
    exclusive_sparsity(binarize_ste(z2), r).backward()
    assert z2.grad.abs().sum() > 0


def test_batch_penalties_equal_mean_of_per_image():
    zs, rs = zip(*(sample(p=16, seed=s) for s in range(4)))
    rs = [torch.unique(r, return_inverse=True)[1] for r in rs]
    z, r = torch.stack([binarize_ste(x) for x in zs]), torch.stack(rs)
    gs, es = batch_penalties(z, r)
    assert float(gs) == pytest.approx(sum(float(group_sparsity(a, b)) for a, b in zip(z, r)) / 4, rel=1e-5)
    assert float(es) == pytest.approx(sum(float(exclusive_sparsity(a, b)) for a, b in zip(z, r)) / 4, rel=1e-5)


def test_es_prefers_latents_confined_to_one_region():
    r = torch.tensor([0, 0, 1, 1])
    spread = torch.tensor([[1.0, 0], [1, 0], [1, 0], [1, 0]])      # latent 0 fires in both regions
    confined = torch.tensor([[1.0, 0], [1, 0], [0, 1], [0, 1]])    # one latent per region
    assert exclusive_sparsity(confined, r) < exclusive_sparsity(spread, r)


def test_bad_regions():
    z, r = sample()
    with pytest.raises(ValueError, match="regions"):
        group_sparsity(z, r[:-1])
    with pytest.raises(ValueError, match="regions"):
        exclusive_sparsity(z, r.float())


def toy_data(n=24, p=16, t=20, d=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    acts = torch.randn(n, t, d, generator=g)
    valid = torch.ones(n, t, dtype=torch.bool)
    valid[:, -2:] = False
    attn = torch.softmax(torch.randn(n, p, p, generator=g), -1)
    return SAEData(acts, valid, torch.arange(p), (4, 4), attn)


def test_trainer_deterministic_and_learns():
    data = toy_data()
    cfg = SAETrainConfig(d_sae=32, k=4, lam=0.01, n_regions=5, steps=30, batch_images=8, seed=3)
    with pytest.raises(ValueError, match="n_regions=17"):
        train_sae(data, SAETrainConfig(d_sae=32, k=4, lam=0.01, n_regions=17, steps=1), progress=False)
    a, b = train_sae(data, cfg, progress=False), train_sae(data, cfg, progress=False)
    assert torch.equal(a.sae.W_enc, b.sae.W_enc), "same seed and data must give the same SAE"
    assert a.losses[-1] < a.losses[0]
    assert torch.allclose(a.sae.W_dec.norm(dim=1), torch.ones(32), atol=1e-5)
    every = train_sae(data, SAETrainConfig(**{**cfg.__dict__, "regions_every_step": True}), progress=False)
    assert torch.allclose(every.sae.W_enc, a.sae.W_enc), "regions recomputed per step: same (frozen) attention"


def test_sae_data_rejects_nan():
    data = toy_data()
    acts = data.acts.clone()
    acts[0, 0, 0] = float("nan")
    with pytest.raises(ValueError, match="acts contains NaN"):
        SAEData(acts, data.valid, data.patch_idx, data.grid, data.attn)


def test_sparse_penalties_equal_dense_values_and_gradients():
    from compbook.sae import TopKSAE
    from compbook.sae.s2ae import sparse_penalties

    sae = TopKSAE(6, 24, 5, seed=0)
    with torch.no_grad():
        sae.b_enc.fill_(-0.3)                                  # some kept values are 0
    x = torch.randn(3 * 10, 6, generator=torch.Generator().manual_seed(1))
    regions = torch.randint(0, 4, (3, 10), generator=torch.Generator().manual_seed(2))
    vals, idx = sae.encode_topk(x)
    dense = sae.scatter(vals, idx).reshape(3, 10, 24)
    gs_d, es_d = batch_penalties(binarize_ste(dense), regions)
    gs_s, es_s = sparse_penalties(binarize_ste(vals.reshape(3, 10, 5)), idx.reshape(3, 10, 5), regions, 24)
    assert torch.allclose(gs_d, gs_s) and torch.allclose(es_d, es_s)
    g_dense = torch.autograd.grad(gs_d + 3 * es_d, sae.W_enc, retain_graph=True)[0]
    g_sparse = torch.autograd.grad(gs_s + 3 * es_s, sae.W_enc)[0]
    assert torch.allclose(g_dense, g_sparse, atol=1e-6)
    assert g_sparse.abs().sum() > 0


def _reference_fit(data, cfg, seed_sae):
    """fit_sae's loop as it was written before its step stopped checking (the naive reference): every step
    through the public, checked :func:`s2ae_loss` with the raw region labels of the batch."""
    from compbook.sae.regions import default_regions
    sae = TopKSAE(data.acts.shape[-1], cfg.d_sae, cfg.k, seed=seed_sae)
    n, p = data.acts.shape[0], len(data.patch_idx)
    regions = data.regions(default_regions(cfg.n_regions, p), cfg.exponent) if cfg.lam > 0 else None
    opt = torch.optim.Adam(sae.parameters(), lr=cfg.lr)
    g = torch.Generator().manual_seed(cfg.seed)
    losses = []
    for _ in range(cfg.steps):
        idx = torch.randint(0, n, (min(cfg.batch_images, n),), generator=g)
        loss = s2ae_loss(sae, data.acts[idx], data.valid[idx], data.patch_idx,
                         None if regions is None else regions[idx], cfg)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sae.normalize_decoder()
        losses.append(loss.item())
    return sae, losses


@pytest.mark.parametrize("lam", [0.0, 0.05])
def test_the_unchecked_training_step_trains_as_the_checked_one(lam):
    """Checks at the door: fit_sae checks its data once and its step calls the unchecked ``_s2ae_loss``. The
    likely bug is a step that now differs from the checked loss (regions renumbered differently, a dtype lost):
    every step's loss and the final weights must equal those of the reference loop through ``s2ae_loss``."""
    data = toy_data()
    cfg = SAETrainConfig(d_sae=32, k=4, steps=12, batch_images=6, lam=lam, n_regions=3, seed=1)
    sae = TopKSAE(data.acts.shape[-1], cfg.d_sae, cfg.k, seed=cfg.seed)
    got = fit_sae(sae, data, cfg, progress=False)
    ref, ref_losses = _reference_fit(data, cfg, cfg.seed)
    assert got.losses == ref_losses
    for a, b in zip(sae.state_dict().values(), ref.state_dict().values()):
        assert torch.equal(a, b)


def test_the_public_sae_methods_still_check_at_the_door():
    """The unchecked ``_`` methods are for the training loop only: the public ones refuse NaN and a wrong width
    (NaN in is refused, never NaN out)."""
    sae = TopKSAE(8, 16, 2)
    bad = torch.full((3, 8), float("nan"))
    for method in (sae.pre_acts, sae.encode_topk, sae.encode, sae.forward):
        with pytest.raises(ValueError, match="x"):
            method(bad)
        with pytest.raises(ValueError, match="d_in=8"):
            method(torch.zeros(3, 7))
    with pytest.raises(ValueError, match="z"):
        sae.decode(torch.full((3, 16), float("inf")))
    x = torch.randn(5, 8)
    vals, idx = sae._encode_topk(x)
    assert torch.equal(sae.forward(x), sae._decode(sae._scatter(vals, idx)))
