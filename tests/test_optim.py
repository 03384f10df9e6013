import pytest
import torch

from compbook.cppn import optim, picbreeder, train
from compbook.cppn.network import uniform_cppn
from compbook.cppn.optim import NS_COEFFICIENTS, Muon, muon, newton_schulz, shape_scale

# After 5 steps the reference quintic maps every singular value s of the normalised matrix with
# s >= 2e-3 into this band (computed from the scalar map; the reference's "roughly [0.7, 1.2]").
BAND = (0.68, 1.21)


def _phi(s, steps=5):
    a, b, c = NS_COEFFICIENTS
    for _ in range(steps):
        s = a * s + b * s ** 3 + c * s ** 5
    return s


@pytest.mark.parametrize("shape", [(3, 8), (8, 3), (16, 22), (22, 4), (64, 16)])
def test_newton_schulz_is_near_orthogonal(shape):
    G = torch.randn(50, *shape, generator=torch.Generator().manual_seed(0))
    sv = torch.linalg.svdvals(newton_schulz(G))
    assert sv.min() >= BAND[0] and sv.max() <= BAND[1], (sv.min(), sv.max())
    assert (sv - 1).abs().mean() < 0.25          # spread over the band, not all near one end


def test_newton_schulz_matches_polynomial_on_singular_values():
    """Naive reference: X = U phi^5(S / ||G||_F) V^T (the iteration only moves singular values)."""
    G = torch.randn(6, 9, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    U, S, Vh = torch.linalg.svd(G, full_matrices=False)
    expected = U @ torch.diag(_phi(S / G.norm())) @ Vh
    torch.testing.assert_close(newton_schulz(G), expected, atol=1e-10, rtol=0)
    torch.testing.assert_close(newton_schulz(G.T), expected.T, atol=1e-10, rtol=0)   # the tall case


def test_square_matrix_band_holds_above_the_cutoff():
    G = torch.randn(200, 22, 22, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    s_in = torch.linalg.svdvals(G) / G.norm(dim=(-2, -1))[:, None]
    s_out = torch.linalg.svdvals(newton_schulz(G))        # both descending: matched by rank
    ok = s_in >= 2e-3
    assert ok.float().mean() > 0.95
    assert s_out[ok].min() >= BAND[0] and s_out[ok].max() <= BAND[1]


def test_newton_schulz_batched_equals_loop_and_leaves_input():
    G = torch.randn(4, 7, 5, generator=torch.Generator().manual_seed(3))
    before = G.clone()
    out = newton_schulz(G)
    assert torch.equal(G, before)
    torch.testing.assert_close(out, torch.stack([newton_schulz(g) for g in G]), atol=1e-6, rtol=0)
    assert torch.equal(newton_schulz(torch.zeros(3, 4)), torch.zeros(3, 4))


def test_newton_schulz_validates():
    with pytest.raises(ValueError, match="G"):
        newton_schulz(torch.ones(5))
    with pytest.raises(ValueError, match="steps"):
        newton_schulz(torch.ones(2, 2), steps=-1)


def _torch_muon():
    if not hasattr(torch.optim, "Muon"):
        pytest.skip(f"torch {torch.__version__} has no torch.optim.Muon (added in 2.9)")
    return torch.optim.Muon


def test_bfloat16_newton_schulz_equals_torch_reference():
    from torch.optim import _muon
    G = torch.randn(12, 5, generator=torch.Generator().manual_seed(4))
    for M in (G, G.T):
        ref = _muon._zeropower_via_newtonschulz(M, NS_COEFFICIENTS, 5, 1e-7)
        assert torch.equal(newton_schulz(M, dtype=torch.bfloat16), ref.float())


@pytest.mark.parametrize("shape", [(8, 8), (22, 4), (3, 22)])
@pytest.mark.parametrize("nesterov", [True, False])
def test_muon_step_matches_torch_optim_muon(shape, nesterov):
    """Same settings (bfloat16 Newton-Schulz as torch does, torch's weight decay): the same trajectory."""
    TorchMuon = _torch_muon()
    g = torch.Generator().manual_seed(5)
    w0 = torch.randn(*shape, generator=g)
    grads = [torch.randn(*shape, generator=g) for _ in range(6)]
    a, b = torch.nn.Parameter(w0.clone()), torch.nn.Parameter(w0.clone())
    ours = Muon([a], lr=0.02, momentum=0.9, nesterov=nesterov, weight_decay=0.1, dtype=torch.bfloat16)
    ref = TorchMuon([b], lr=0.02, momentum=0.9, nesterov=nesterov, weight_decay=0.1)
    for gr in grads:
        a.grad, b.grad = gr.clone(), gr.clone()
        ours.step(), ref.step()
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-6)


def test_float32_muon_differs_from_torch_only_by_bfloat16_rounding():
    TorchMuon = _torch_muon()
    g = torch.Generator().manual_seed(6)
    w0, gr = torch.randn(16, 8, generator=g), torch.randn(16, 8, generator=g)
    a, b = torch.nn.Parameter(w0.clone()), torch.nn.Parameter(w0.clone())
    a.grad, b.grad = gr.clone(), gr.clone()
    Muon([a], lr=0.1, weight_decay=0.1).step()               # float32 Newton-Schulz (our default)
    TorchMuon([b], lr=0.1, weight_decay=0.1).step()          # bfloat16 Newton-Schulz
    diff = (a - b).abs().max() / (0.1 * shape_scale(a.shape))   # in units of one update's entries
    assert 0 < diff < 0.05


def test_stacked_muon_equals_separate_runs():
    g = torch.Generator().manual_seed(7)
    w0 = torch.randn(3, 6, 4, generator=g)
    grads = [torch.randn(3, 6, 4, generator=g) for _ in range(4)]
    stacked = torch.nn.Parameter(w0.clone())
    singles = [torch.nn.Parameter(w0[k].clone()) for k in range(3)]
    opt_s, opts = Muon([stacked], lr=0.05), [Muon([p], lr=0.05) for p in singles]
    for gr in grads:
        stacked.grad = gr.clone()
        opt_s.step()
        for k, (p, o) in enumerate(zip(singles, opts)):
            p.grad = gr[k].clone()
            o.step()
    torch.testing.assert_close(stacked.detach(), torch.stack([p.detach() for p in singles]), atol=1e-6, rtol=0)


def test_muon_validates_and_is_registered():
    with pytest.raises(ValueError, match="params"):
        Muon([torch.nn.Parameter(torch.ones(4))])
    with pytest.raises(ValueError, match="lr"):
        Muon([torch.nn.Parameter(torch.ones(2, 2))], lr=0)
    assert train.OPTIMIZERS["muon"] is muon
    assert isinstance(muon([torch.nn.Parameter(torch.ones(2, 2))], 0.01), Muon)


@pytest.fixture(scope="module")
def target():
    return picbreeder.render(picbreeder.load_genome("skull", download=False), 16)


def _masks(model, seed):
    g = torch.Generator().manual_seed(seed)
    return [torch.bernoulli(torch.full(s, 0.5), generator=g) for s in model.shapes]


def test_masked_weights_stay_zero_under_muon_fit(target):
    m = uniform_cppn(3, 6, {"gaussian": 3, "sin": 3}, seed=0)
    m.set_masks(_masks(m, 0))
    r = train.fit(m, target, steps=40, lr=0.02, optimizer="muon", progress=False)
    for w, mask, w0 in zip(r.model.weights, r.model.masks, m.weights):
        assert torch.all(w[mask == 0] == 0)
        assert not torch.equal(w[mask == 1], w0[mask == 1])    # the kept weights did move
    assert r.final_loss < r.losses[0]


def test_masked_weights_stay_zero_under_muon_fit_many(target):
    models = [uniform_cppn(3, 6, {"gaussian": 3, "sin": 3}, seed=s) for s in range(3)]
    for k, m in enumerate(models):
        m.set_masks(_masks(m, 10 + k))                          # different masks per model
    r = train.fit_many(models, target, steps=40, lr=0.02, optimizer="muon", progress=False)
    for trained, m in zip(r.models, models):
        for w, mask, m0 in zip(trained.weights, trained.masks, m.masks):
            assert torch.equal(mask, m0)
            assert torch.all(w[mask == 0] == 0)
    assert (r.final_loss < r.losses[0]).all()


def test_largest_rise_finds_the_step_and_the_seeds_that_rose():
    import numpy as np
    L = np.ones((10, 3))
    L[6, 2] = 2.0        # one seed jumps at step 6
    L[3] = 1.2           # every seed rises a little at step 3
    r = optim.largest_rise(L)
    assert r["step"] == 6 and r["low"] == 5 and r["rose"] == [2]
    assert r["mean_ratio"] == pytest.approx(4 / 3)
    r = optim.largest_rise(L[:6])
    assert r["step"] == 3 and r["rose"] == [0, 1, 2]
    assert optim.largest_rise(L, start=7)["rose"] == []


def test_largest_rise_validates():
    import numpy as np
    with pytest.raises(ValueError, match="losses"):
        optim.largest_rise(np.ones(5))
    with pytest.raises(ValueError, match="losses"):
        optim.largest_rise(np.zeros((5, 2)))
    with pytest.raises(ValueError, match="start"):
        optim.largest_rise(np.ones((5, 2)), start=4)
    with pytest.raises(ValueError, match="window"):
        optim.largest_rise(np.ones((5, 2)), window=0)


def test_largest_rise_over_a_window_catches_a_rise_that_builds():
    import numpy as np
    L = np.ones((12, 2))
    L[3] = 1.3                            # one sharp step up, at step 3, then back
    L[6:11] = [[1.1, 1.0], [1.2, 1.0], [1.4, 1.0], [1.6, 1.0], [1.8, 1.0]]
    assert optim.largest_rise(L)["step"] == 3     # one step: the sharp one
    r = optim.largest_rise(L, window=5)           # five: the slow climb
    assert (r["low"], r["step"]) == (5, 10)
    assert r["mean_ratio"] == pytest.approx(1.4)
    assert r["ratios"] == pytest.approx([1.8, 1.0]) and r["rose"] == [0]
    r = optim.largest_rise(L, window=2)            # two steps of the climb
    assert r["step"] - r["low"] <= 2 and r["mean_ratio"] < 1.4
