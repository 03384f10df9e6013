import math

import pytest
import torch

from compbook.cppn import network as cppn
from compbook.cppn.network import CPPN, coordinate_grid, hsv_to_rgb, outputs_to_rgb, uniform_cppn


def test_coordinate_grid_conventions():
    g = coordinate_grid(5).reshape(5, 5, 4)
    x, y, d, b = g.unbind(-1)
    assert torch.allclose(x[0], torch.linspace(-1, 1, 5))            # x varies along columns
    assert torch.allclose(y[:, 0], torch.linspace(-1, 1, 5))         # y along rows
    assert torch.allclose(d, 1.4 * torch.sqrt(x ** 2 + y ** 2))
    assert torch.all(b == 1)
    with pytest.raises(ValueError, match="res"):
        coordinate_grid(0)


def test_activations_match_picbreeder_definitions():
    z = torch.linspace(-3, 3, 13)
    assert torch.allclose(cppn.ACTIVATIONS["gaussian"](z), 2 * torch.exp(-z ** 2) - 1)
    assert torch.allclose(cppn.ACTIVATIONS["sigmoid"](z), 2 / (1 + torch.exp(-z)) - 1)
    assert torch.equal(cppn.ACTIVATIONS["cache"](z), z)


def test_hsv_to_rgb_against_colorsys():
    import colorsys
    g = torch.Generator().manual_seed(0)
    hsv = torch.rand(200, 3, generator=g, dtype=torch.float64)
    ours = hsv_to_rgb(hsv)
    ref = torch.tensor([colorsys.hsv_to_rgb(*row.tolist()) for row in hsv], dtype=torch.float64)
    assert torch.allclose(ours, ref, atol=1e-12)


def test_outputs_to_rgb_picbreeder_convention():
    out = torch.tensor([[-0.75, 2.0, -0.5]])        # h wraps: (h + 1) mod 1 = 0.25; s clipped to 1; v = |v|
    assert torch.allclose(outputs_to_rgb(out, "hsv"), hsv_to_rgb(torch.tensor([[0.25, 1.0, 0.5]])))
    grey = outputs_to_rgb(torch.tensor([[-0.3], [1.7]]), "gray")
    assert torch.allclose(grey, torch.tensor([[0.3] * 3, [1.0] * 3]))


@pytest.mark.parametrize("names", [["cache"] * 3 + ["gaussian"] * 2 + ["sin"],
                                   ["gaussian", "sin", "identity", "sigmoid", "cos", "tanh", "relu"] * 2])
def test_activation_layer_matches_per_neuron_definition(names):
    layer = cppn.ActivationLayer(names).double()
    z = torch.randn(4, 7, len(names), dtype=torch.float64, requires_grad=True)
    expected = torch.stack([cppn.ACTIVATIONS[n](z[..., i]) for i, n in enumerate(names)], -1)
    assert torch.allclose(layer(z), expected)
    assert torch.autograd.gradcheck(layer, (z[:1, :2].detach().requires_grad_(),))


def test_unknown_activation_and_bad_shapes_raise():
    with pytest.raises(ValueError, match="unknown activation 'swish'"):
        CPPN([["swish"]])
    with pytest.raises(ValueError, match="depth"):
        uniform_cppn(0, 4)
    with pytest.raises(ValueError, match="width"):
        uniform_cppn(2, 0)
    with pytest.raises(ValueError, match="sum to 3"):
        uniform_cppn(2, 4, {"tanh": 3})
    with pytest.raises(ValueError, match="layer 0"):
        CPPN([["tanh"] * 3], weights=[torch.zeros(2, 4), torch.zeros(3, 3)])
    with pytest.raises(ValueError, match="NaN"):
        CPPN([["tanh"] * 2], weights=[torch.full((2, 4), math.nan), torch.zeros(3, 2)])


def test_render_shape_range_and_any_resolution():
    m = uniform_cppn(3, 8, {"sin": 4, "gaussian": 4}, seed=1)
    for res in (1, 17, 64):
        img = m.render(res).detach()
        assert img.shape == (res, res, 3)
        assert float(img.min()) >= 0 and float(img.max()) <= 1
    assert uniform_cppn(2, 3, color="gray").render(8).shape == (8, 8, 3)


def test_seed_determines_weights():
    a, b, c = uniform_cppn(2, 5, seed=3), uniform_cppn(2, 5, seed=3), uniform_cppn(2, 5, seed=4)
    assert all(torch.equal(x, y) for x, y in zip(a.weights, b.weights))
    assert not torch.equal(a.weights[0], c.weights[0])


def test_feature_maps_are_hidden_activations():
    m = uniform_cppn(3, 6, "tanh", seed=0)
    maps = m.feature_maps(9)
    assert [tuple(f.shape) for f in maps] == [(6, 9, 9)] * 3
    _, feats = m(coordinate_grid(9), return_features=True)
    assert torch.allclose(maps[1][4], feats[1][:, 4].reshape(9, 9))


def test_masks_zero_weights_and_batched_forward():
    m = uniform_cppn(2, 4, "sin", seed=0)
    masks = [torch.bernoulli(torch.full(s, 0.5), generator=torch.Generator().manual_seed(l))
             for l, s in enumerate(m.shapes)]
    m.set_masks(masks)
    assert all(torch.all(w[mk == 0] == 0) for w, mk in zip(m.weights, m.masks))
    # a batch of two weight sets renders like two separate networks
    other = [torch.randn(s) for s in m.shapes]
    batch = [torch.stack([w.detach(), o]) for w, o in zip(m.weights, other)]
    imgs = m.render(8, weights=batch)
    assert torch.allclose(imgs[0], m.render(8), atol=1e-6)
    assert torch.allclose(imgs[1], m.clone_with(weights=other).render(8), atol=1e-6)


def test_layout_from_counts():
    assert cppn.layout_from_counts({"cache": 2, "sin": 1}) == ["cache", "cache", "sin"]
    with pytest.raises(ValueError, match="negative"):
        cppn.layout_from_counts({"sin": -1})


# -- hardening -------------------------------------------------------------------------------------------------
def test_render_over_the_budget_is_refused_before_allocating(monkeypatch):
    """A 20000 px render used to run 12 s and take 6 GB; now it is refused at once, with the budget named."""
    import time
    from compbook import checks
    m = cppn.uniform_cppn(12, 22)
    t0 = time.process_time()          # this process's CPU: a busy neighbour does not count
    with pytest.raises(ValueError, match=r"res=20000: .* over the render budget of 2,048 MiB"):
        m.render(20000)
    with pytest.raises(ValueError, match="render budget"):
        m.feature_maps(20000)
    assert time.process_time() - t0 < 1.0
    with pytest.raises(ValueError, match="render budget of 1 MiB"):       # the parameter
        m.render(256, budget_mb=1)
    monkeypatch.setenv(checks.RENDER_BUDGET_VARIABLE, "1")                 # the setting
    with pytest.raises(ValueError, match="render budget of 1 MiB"):
        m.render(256)
    assert m.render(16).shape == (16, 16, 3)                               # small renders still work
    batch = [torch.stack([w.detach()] * 64) for w in m.weights]            # a batch counts 64 images
    with pytest.raises(ValueError, match="render budget"):
        m.render(64, weights=batch)


def test_render_whose_outputs_overflow_raises_instead_of_drawing_nan():
    m = cppn.uniform_cppn(3, 8, "identity", seed=0)
    huge = m.clone_with(weights=[w.detach() * 1e30 for w in m.weights])   # finite, but products overflow
    with pytest.raises(ValueError, match="overflow to NaN or inf"):
        huge.render(16)


def test_batched_weights_of_the_wrong_shape_name_the_layer():
    m = cppn.uniform_cppn(2, 5)
    bad = [torch.randn(3, *s) for s in m.shapes]
    bad[1] = torch.randn(3, 4, 5)                                          # layer 1 is (5, 5)
    with pytest.raises(ValueError, match=r"weights\[1\] must have shape \(\.\.\., 5, 5\), got \(3, 4, 5\)"):
        m.render(8, weights=bad)
    with pytest.raises(ValueError, match="expected 3 tensors"):
        m.forward(cppn.coordinate_grid(4), weights=bad[:2])


def test_set_masks_needs_one_mask_per_layer_and_changes_nothing_on_error():
    m = cppn.uniform_cppn(3, 4)
    before = [mk.clone() for mk in m.masks]
    zeros = [torch.zeros(s) for s in m.shapes]
    with pytest.raises(ValueError, match="expected 4 masks .* got 2"):
        m.set_masks(zeros[:2])                                 # used to keep the old masks of layers 2, 3
    with pytest.raises(ValueError, match="expected 4 masks .* got 5"):
        m.set_masks(zeros + [torch.zeros(1, 1)])               # used to raise IndexError
    bad = zeros[:3] + [torch.zeros(2, 2)]
    with pytest.raises(ValueError, match=r"masks\[3\] must have shape \(3, 4\)"):
        m.set_masks(bad)
    assert all(torch.equal(a, b) for a, b in zip(before, m.masks))


def test_a_layer_given_as_one_string_is_refused():
    with pytest.raises(ValueError, match=r"activations\[0\] must be a list of activation names"):
        cppn.CPPN(["tanh"])                                     # used to make 4 neurons 't', 'a', 'n', 'h'
    with pytest.raises(ValueError, match="activations must be a list of hidden layers"):
        cppn.CPPN("tanh")
