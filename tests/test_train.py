import numpy as np
import pytest
import torch

from compbook.cppn import picbreeder, train
from compbook.cppn.network import uniform_cppn

LAYOUT = {"cache": 3, "gaussian": 3, "sin": 2}


@pytest.fixture(scope="module")
def target():
    return picbreeder.render(picbreeder.load_genome("skull", download=False), 24)


def sparse_masks(model, p=0.5, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.bernoulli(torch.full(s, p), generator=g) for s in model.shapes]


def test_fit_lowers_loss_and_leaves_input_unchanged(target):
    m = uniform_cppn(3, 8, LAYOUT, seed=0)
    before = [w.detach().clone() for w in m.weights]
    r = train.fit(m, target, steps=150, lr=1e-2, progress=False)
    assert r.losses.shape == (150,)
    assert r.final_loss < 0.5 * r.losses[0]
    assert r.final_loss == pytest.approx(train.mse(r.model, target), rel=1e-5)
    assert all(torch.equal(a, b) for a, b in zip(before, m.weights))


def test_fit_is_deterministic(target):
    m = uniform_cppn(3, 8, LAYOUT, seed=5)
    a = train.fit(m, target, steps=40, progress=False)
    b = train.fit(m, target, steps=40, progress=False)
    assert np.array_equal(a.losses, b.losses)
    assert all(torch.equal(x, y) for x, y in zip(a.model.weights, b.model.weights))


@pytest.mark.parametrize("optimizer", ["adam", lambda p, lr: torch.optim.SGD(p, lr=lr, momentum=0.9)])
def test_masked_weights_stay_exactly_zero(target, optimizer):
    m = uniform_cppn(3, 8, LAYOUT, seed=1)
    m.set_masks(sparse_masks(m))
    r = train.fit(m, target, steps=60, lr=1e-2, optimizer=optimizer, progress=False)
    for w, mask in zip(r.model.weights, r.model.masks):
        assert torch.all(w[mask == 0] == 0)
        assert torch.count_nonzero(w[mask == 1]) == int(mask.sum())   # the kept weights did train


def test_gradient_is_unit_normalised():
    grads = [torch.randn(3, 4), torch.randn(2, 3)]
    train._normalise_grads_(grads, batched=False)
    assert float(sum((g ** 2).sum() for g in grads)) == pytest.approx(1.0, rel=1e-6)
    stacked = [torch.randn(5, 3, 4), torch.randn(5, 2, 3)]
    train._normalise_grads_(stacked, batched=True)
    per_model = sum((g ** 2).sum(dim=(1, 2)) for g in stacked)
    assert torch.allclose(per_model, torch.ones(5), rtol=1e-6)


def test_fit_many_matches_separate_fits(target):
    models = [uniform_cppn(3, 8, LAYOUT, seed=s) for s in range(3)]
    models[2].set_masks(sparse_masks(models[2], seed=2))
    batched = train.fit_many(models, target, steps=25, progress=False)
    assert batched.losses.shape == (25, 3)
    for b, m in enumerate(models):
        single = train.fit(m, target, steps=25, progress=False)
        np.testing.assert_allclose(batched.losses[:, b], single.losses, rtol=2e-3, atol=1e-6)
        assert torch.equal(batched.models[b].masks[0], m.masks[0])
    w = batched.models[2].weights
    assert all(torch.all(x[mk == 0] == 0) for x, mk in zip(w, batched.models[2].masks))


def test_fit_many_per_model_targets(target):
    models = [uniform_cppn(2, 6, "sin", seed=s) for s in range(2)]
    targets = np.stack([target, 1.0 - target])
    r = train.fit_many(models, targets, steps=5, progress=False)
    assert r.losses.shape == (5, 2)
    with pytest.raises(ValueError, match="3 images for 2 models"):
        train.fit_many(models, np.stack([target] * 3), steps=1, progress=False)
    with pytest.raises(ValueError, match="another architecture"):
        train.fit_many([models[0], uniform_cppn(3, 6, "sin")], target, steps=1, progress=False)


@pytest.mark.parametrize("bad,match", [
    (np.zeros((8, 8)), "not a square RGB image"),
    (np.zeros((8, 9, 3)), "not a square RGB image"),
    (np.zeros((8, 8, 4)), "not a square RGB image"),
    (np.zeros((8, 8, 3), dtype=np.uint8), "not floating point"),
    (np.full((8, 8, 3), 2.0), r"expected \[0, 1\]"),
    (np.full((8, 8, 3), np.nan), "NaN"),
])
def test_bad_targets_raise(bad, match):
    with pytest.raises(ValueError, match="target: .*" + match):
        train.fit(uniform_cppn(1, 2), bad, steps=1, progress=False)


def test_bad_steps_and_lr(target):
    with pytest.raises(ValueError, match="steps"):
        train.fit(uniform_cppn(1, 2), target, steps=-1)
    with pytest.raises(ValueError, match="lr"):
        train.fit(uniform_cppn(1, 2), target, lr=0)


def test_straight_through_clip_unsticks_a_saturated_network(target):
    """A network whose brightness starts above 1 everywhere (a white image) has zero gradient through the clip."""
    m = uniform_cppn(1, 2, "identity", color="gray", seed=0)
    with torch.no_grad():
        m.weights[0].zero_()
        m.weights[0][:, 3] = 2.0           # hidden = 2 * bias
        m.weights[1].fill_(0.375)          # v = 1.5 > 1: white
    stuck = train.fit(m, target, steps=60, lr=1e-2, straight_through=False, progress=False)
    moving = train.fit(m, target, steps=60, lr=1e-2, progress=False)
    assert stuck.final_loss == pytest.approx(stuck.losses[0])
    assert moving.final_loss < 0.9 * moving.losses[0]


def test_autograd_gradients_give_the_same_fit(target):
    m = uniform_cppn(3, 8, LAYOUT, seed=3)
    m.set_masks(sparse_masks(m, seed=3))
    by_hand = train.fit(m, target, steps=8, progress=False)
    by_autograd = train.fit(m, target, steps=8, progress=False, gradients="autograd")
    np.testing.assert_allclose(by_hand.losses, by_autograd.losses, rtol=1e-4)
    for a, b, mask in zip(by_hand.model.weights, by_autograd.model.weights, m.masks):
        torch.testing.assert_close(a, b, rtol=1e-3, atol=1e-4)
        assert torch.all(b[mask == 0] == 0)
    with pytest.raises(ValueError, match="gradients must be one of"):
        train.fit(m, target, steps=1, progress=False, gradients="finite differences")


# -- hardening -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("lr,match", [("0.01", "lr must be a finite number > 0, got '0.01'"),
                                      (float("inf"), "lr must be a finite number > 0, got inf"),
                                      (float("nan"), "lr must be a finite number"), (None, "lr must be")])
def test_lr_must_be_a_finite_positive_number(target, lr, match):
    """lr="0.01" used to raise TypeError; lr=inf trained, then blamed the weights."""
    with pytest.raises(ValueError, match=match):
        train.fit(uniform_cppn(1, 2), target, steps=1, lr=lr, progress=False)


def test_unknown_optimizer_lists_the_known_names(target):
    """optimizer="sgd" used to raise KeyError 'sgd'."""
    with pytest.raises(ValueError, match=r"optimizer must be one of \['adam', 'muon'\], got 'sgd'"):
        train.fit(uniform_cppn(1, 2), target, steps=1, optimizer="sgd", progress=False)
    with pytest.raises(ValueError, match="optimizer must be one of"):
        train.fit_many([uniform_cppn(1, 2)], target, steps=1, optimizer=3, progress=False)


def test_an_empty_target_is_reported_as_the_target(target):
    """A (0, 0, 3) target used to be reported as a bad "res"."""
    with pytest.raises(ValueError, match=r"target: shape \(0, 0, 3\) is not a square RGB image"):
        train.fit(uniform_cppn(1, 2), np.zeros((0, 0, 3)), steps=1, progress=False)


def test_fit_many_refuses_mixed_dtypes_before_training(target):
    """Mixed float32 / float64 models used to give a torch RuntimeError after 2.4 s of work."""
    import time
    m32 = uniform_cppn(2, 4, seed=0)
    m64 = m32.clone_with(weights=[w.detach().double() for w in m32.weights],
                         masks=[m.double() for m in m32.masks])
    t0 = time.process_time()          # this process's CPU: a busy neighbour does not count
    with pytest.raises(ValueError, match=r"models\[1\] is torch.float64 but models\[0\] is torch.float32"):
        train.fit_many([m32, m64], target, steps=500, progress=False)
    assert time.process_time() - t0 < 1.0


def test_divergence_is_reported_as_the_training_not_the_weights(target):
    with pytest.raises(ValueError, match="training diverged: .* use a smaller lr"):
        train.fit(uniform_cppn(2, 4, "identity"), target, steps=5, lr=1e38, progress=False)


def test_keep_best_returns_each_models_lowest_loss_weights(target):
    """An lr so large that the loss jumps about: ``keep_best`` must hand back, per model, the weights at that
    model's own lowest logged loss (a common bug: one model's best step applied to all, or the last weights)."""
    models = [uniform_cppn(3, 8, LAYOUT, seed=s) for s in range(3)]
    models[1].set_masks(sparse_masks(models[1], seed=1))
    last = train.fit_many(models, target, steps=40, lr=0.1, progress=False)
    best = train.fit_many(models, target, steps=40, lr=0.1, progress=False, keep_best=True)
    np.testing.assert_array_equal(last.losses, best.losses)           # the same training path
    for b in range(3):
        lowest = min(last.losses[:, b].min(), train.mse(last.models[b], target))
        assert train.mse(best.models[b], target) == pytest.approx(lowest, rel=1e-4)
        assert train.mse(best.models[b], target) <= train.mse(last.models[b], target) + 1e-7
        assert all(torch.all(w[mk == 0] == 0) for w, mk in zip(best.models[b].weights, best.models[b].masks))
    assert len({int(np.argmin(last.losses[:, b])) for b in range(3)}) > 1, "test needs different best steps"
    with pytest.raises(ValueError, match="keep_best"):
        train.fit_many(models, target, steps=1, progress=False, keep_best="yes")


def test_fit_budget_follows_the_mode(monkeypatch):
    from compbook.cppn import paper
    monkeypatch.delenv("COMPBOOK_MODE", raising=False)
    assert train.fit_budget() == (48, 1000)
    monkeypatch.setenv("COMPBOOK_MODE", "full")
    monkeypatch.delenv("COMPBOOK_SMOKE", raising=False)
    assert train.fit_budget() == (paper.figure("fer_res"), paper.figure("fer_steps"))
    monkeypatch.setenv("COMPBOOK_SMOKE", "1")
    assert train.fit_budget()[1] == 20
