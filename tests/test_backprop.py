import pytest
import torch

from compbook.cppn import network as cppn, picbreeder
from compbook.cppn.backprop import Backprop, autograd_loss_and_grads
from compbook.cppn.network import CPPN, uniform_cppn

ALL = sorted(cppn.ACTIVATIONS)


def random_layers(depth, width, seed):
    """Hidden layers with every activation, interleaved at random (so the engine has to permute them)."""
    g = torch.Generator().manual_seed(seed)
    return [[ALL[int(i)] for i in torch.randint(0, len(ALL), (width,), generator=g)] for _ in range(depth)]


def random_weights(model, batch=(), seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(*batch, *s, generator=g, dtype=dtype) for s in model.shapes]


def engine_grads(model, target, weights, straight_through=True):
    bp = Backprop(model, target, straight_through)
    loss, grads = bp.loss_and_grads(bp.to_engine_order(weights))
    return loss, bp.to_model_order(grads)


def assert_close_to_autograd(model, target, weights, straight_through=True, rtol=1e-10):
    loss, grads = engine_grads(model, target, weights, straight_through)
    ref_loss, ref_grads = autograd_loss_and_grads(model, target, weights, straight_through)
    torch.testing.assert_close(loss, ref_loss, rtol=rtol, atol=0)
    for l, (g, r) in enumerate(zip(grads, ref_grads)):
        torch.testing.assert_close(g, r, rtol=rtol, atol=rtol * float(r.abs().max()), msg=f"layer {l}")


def test_every_activation_has_a_hand_written_pass():
    """Adding an activation to cppn.ACTIVATIONS without teaching the engine its derivative fails here."""
    model = CPPN([ALL], color="hsv", seed=0).double()
    target = torch.rand(8, 8, 3, dtype=torch.float64)
    assert_close_to_autograd(model, target, random_weights(model))


@pytest.mark.parametrize("color", ["hsv", "gray"])
@pytest.mark.parametrize("straight_through", [True, False])
def test_gradients_equal_autograd(color, straight_through):
    model = CPPN(random_layers(4, 9, seed=1), color=color, seed=3).double()
    target = torch.rand(2, 12, 12, 3, dtype=torch.float64)          # one target per network
    weights = random_weights(model, batch=(2,), seed=4)
    assert_close_to_autograd(model, target, weights, straight_through)


def test_gradients_equal_autograd_for_a_layerized_picbreeder_network():
    model = picbreeder.layerize(picbreeder.load_genome("skull", download=False)).double()
    target = torch.rand(16, 16, 3, dtype=torch.float64)
    assert_close_to_autograd(model, target, [w.detach() for w in model.weights])


def test_float32_is_close_to_autograd():
    model = uniform_cppn(5, 12, {"cache": 6, "gaussian": 4, "sin": 2}, seed=2)
    target = torch.rand(16, 16, 3)
    weights = random_weights(model, batch=(3,), seed=5, dtype=torch.float32)
    assert_close_to_autograd(model, target, weights, rtol=2e-4)


def test_engine_order_is_the_same_network():
    model = CPPN(random_layers(3, 7, seed=6), seed=1)
    bp = Backprop(model, torch.rand(10, 10, 3))
    assert any(o is not None for o in bp.orders)                    # the layout does get permuted
    permuted = bp.to_engine_order(list(model.weights))
    for a, b in zip(bp.to_model_order(permuted), model.weights):
        assert torch.equal(a, b)
    engine_net = CPPN([sorted(layer, key=lambda n: (n not in ("identity", "cache"), n)) for layer in
                       model.activations], model.color, permuted)
    with torch.no_grad():
        torch.testing.assert_close(engine_net.render(10), model.render(10), rtol=1e-6, atol=1e-6)


def test_buffers_are_reused_safely_across_batch_shapes():
    """The engine keeps work buffers per batch shape; switching shapes must not mix them up."""
    model = CPPN(random_layers(3, 6, seed=7), seed=0).double()
    target = torch.rand(8, 8, 3, dtype=torch.float64)
    bp = Backprop(model, target)
    single = bp.to_engine_order(random_weights(model, seed=1))
    stack = bp.to_engine_order(random_weights(model, batch=(3,), seed=2))
    first_single, first_stack = bp.loss_and_grads(single), bp.loss_and_grads(stack)
    again_single, again_stack = bp.loss_and_grads(single), bp.loss_and_grads(stack)
    for a, b in ((first_single, again_single), (first_stack, again_stack)):
        assert torch.equal(a[0], b[0]) and all(torch.equal(x, y) for x, y in zip(a[1], b[1]))
    no_grad_loss, none = bp.loss_and_grads(stack, grads=False)
    assert none is None and torch.equal(no_grad_loss, first_stack[0])
    ref, _ = autograd_loss_and_grads(model, target, bp.to_model_order(stack))
    torch.testing.assert_close(first_stack[0], ref, rtol=1e-12, atol=0)


def test_gradient_error_is_rounding_for_the_engine_and_large_for_a_wrong_one(monkeypatch):
    from compbook.cppn import backprop
    model = CPPN(random_layers(3, 8, seed=8), seed=2)
    target = torch.rand(10, 10, 3)
    assert backprop.gradient_error(model, target) < 1e-12
    real = backprop._derivative_
    monkeypatch.setattr(backprop, "_derivative_", lambda z, a, name: real(z, a, name).mul_(1.01))
    assert backprop.gradient_error(model, target) > 1e-3


def test_grouped_passes_equal_one_pass():
    """A stack passed in groups (small group_bytes) gives the one-pass result, per-model targets included."""
    model = CPPN(random_layers(3, 6, seed=9), seed=0).double()
    target = torch.rand(5, 8, 8, 3, dtype=torch.float64)
    weights = random_weights(model, batch=(5,), seed=3)
    whole = Backprop(model, target, group_bytes=None)
    grouped = Backprop(model, target, group_bytes=2 * 64 * 6 * 8)    # two networks per group: 2, 2, 1
    a = whole.loss_and_grads(whole.to_engine_order(weights))
    b = grouped.loss_and_grads(grouped.to_engine_order(weights))
    torch.testing.assert_close(a[0], b[0], rtol=1e-12, atol=0)
    for x, y in zip(a[1], b[1]):
        torch.testing.assert_close(x, y, rtol=1e-12, atol=1e-15)
    assert set(grouped._buffers) == {((2,), torch.float64), ((1,), torch.float64)}
