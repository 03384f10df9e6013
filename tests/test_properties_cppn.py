"""Property tests (hypothesis) for three Part A entry points: building and rendering a CPPN
(``compbook.cppn.network``), EMC2-Bench perturbation renders (``compbook.cppn.emc2``) and pruning masks
(``compbook.cppn.prune``). Random shapes, dtypes, NaN / inf, empty and huge sizes, at most one bad argument per
call: with none, the call returns a valid result (finite, in range, of the right shape); with one, it raises
``ValueError`` naming that argument, quickly. No other exception escapes."""

import math

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings, strategies as st
from properties import Arguments, each_bad, tensor_strategy, valid_or_value_error

from compbook.cppn import emc2, network, prune

pytestmark = pytest.mark.usefixtures("one_thread")

SETTINGS = settings(max_examples=10, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
specials = st.sampled_from([float("nan"), float("inf"), -float("inf"), 1e300])
bad_sizes = st.sampled_from([0, -1, 2.5, True, "3", None, float("nan"), 10 ** 7, 10 ** 400])
SMALL = network.uniform_cppn(2, 3, "tanh", seed=1)


def is_image_batch(imgs, shape):
    assert tuple(imgs.shape) == shape, f"shape {tuple(imgs.shape)}, expected {shape}"
    assert imgs.is_floating_point() and bool(torch.isfinite(imgs).all())
    assert imgs.numel() == 0 or 0.0 <= float(imgs.min()) and float(imgs.max()) <= 1.0


tensors = tensor_strategy(specials)


@each_bad("depth", "width", "activation", "color", "seed", "init_scale", "res", "budget_mb")
@SETTINGS
@given(data=st.data())
def test_build_and_render(data, bad):
    arg = Arguments(data, bad)
    depth, width = arg("depth", st.integers(1, 4), bad_sizes), arg("width", st.integers(1, 5), bad_sizes)
    activation = arg("activation", st.sampled_from(["tanh", "sin", "gaussian", "identity", "cos"]), st.one_of(
        st.sampled_from(["nope", "", None, 3, ["tanh"]]),
        st.dictionaries(st.sampled_from(["tanh", "bogus"]), st.one_of(st.integers(-1, 3), st.just(1.5)),
                        min_size=1, max_size=2)))
    if arg.bad == "width" and isinstance(activation, dict):
        activation = "tanh"
    color = arg("color", st.sampled_from(["hsv", "gray"]), st.sampled_from(["rgb", None, ""]))
    seed = arg("seed", st.integers(0, 3), st.sampled_from([-1, 2 ** 64, 2 ** 70, 1.5, "0"]))
    init_scale = arg("init_scale", st.floats(0.1, 3), st.one_of(specials, st.sampled_from([0.0, -1.0, 1e200])))
    res = arg("res", st.integers(1, 12), bad_sizes)
    budget = arg("budget_mb", st.sampled_from([None, 1.0, 100.0]), st.sampled_from([1e-9, 0.0, -1.0, float("nan")]))
    names = {"activation": ("activation", "layout_from_counts"), "budget_mb": ("budget", "res="),
             "init_scale": ("init_scale", "render")}

    def call():
        model = network.uniform_cppn(depth, width, activation, color, seed, init_scale)
        return model, model.render(res, budget_mb=budget)

    def check(out):
        model, img = out
        assert model.widths == [int(width)] * int(depth) and model.color == color
        is_image_batch(img, (int(res), int(res), 3))
    valid_or_value_error(call, check, arg, names)


@each_bad("coords", "weights")
@SETTINGS
@given(data=st.data())
def test_forward_on_random_coordinates(data, bad):
    arg = Arguments(data, bad)
    rows = data.draw(st.integers(0, 6))
    coords = arg("coords", tensors((rows, 4)), st.one_of(
        tensors((max(rows, 1), 4), ("int", "bool", "special")),
        st.integers(0, 3).filter(lambda c: c != 4).flatmap(lambda c: tensors((rows, c))),
        tensors((rows, 4)).map(lambda t: t.numpy()), st.just([[0.0, 0.0, 0.0, 1.0]])))
    batch = data.draw(st.sampled_from([None, (), (2,), (0,), (2, 1)]))
    shapes = SMALL.shapes

    def stack(kinds):
        return st.tuples(*(tensors((batch or ()) + s, kinds) for s in shapes)).map(list)
    weights = arg("weights", st.just(None) if batch is None else stack(("float32",)), st.one_of(
        stack(("special",)), st.just(torch.zeros(2, 3, 4)), st.just([torch.zeros(3, 4)]),
        st.just([torch.zeros(3, 4), torch.zeros(3, 3), torch.zeros(4, 3)]),
        st.just([torch.zeros(2, 3, 4), torch.zeros(3, 3, 3), torch.zeros(3, 3)])))

    def check(out):
        lead = () if weights is None else tuple(torch.broadcast_shapes(*(w.shape[:-2] for w in weights)))
        assert tuple(out.shape) == lead + (rows, 3)
        assert bool(torch.isfinite(out).all())
    valid_or_value_error(lambda: SMALL.forward(coords, weights), check, arg,
                         {"weights": ("weights", "NaN or inf")})


@each_bad("delta", "policy", "seed", "sample", "res", "batch_size", "engine")
@SETTINGS
@given(data=st.data())
def test_perturbation_plan_and_renders(data, bad):
    arg = Arguments(data, bad)
    delta = arg("delta", st.sampled_from([0.5, -2.0, 1e-3]), st.one_of(specials, st.sampled_from(
        [0.0, "0.5", True, 10 ** 400, None])))
    policy = arg("policy", st.sampled_from(emc2.POLICIES), st.sampled_from(["minus", None, 0]))
    seed = arg("seed", st.integers(0, 5), st.sampled_from([-1, 2 ** 64, 1.5]))
    sample = arg("sample", st.one_of(st.none(), st.integers(1, 40), st.just(10 ** 7)),
                 st.sampled_from([0, -1, 2.5, True, "3", float("nan")]))
    res = arg("res", st.integers(1, 6), bad_sizes)
    engine = arg("engine", st.sampled_from(emc2.ENGINES), st.sampled_from(["slow", None]))
    batch_size = arg("batch_size", st.sampled_from([1, 3, 64]), st.sampled_from([0, 2.5, -1, None]))
    names = {"res": ("res",), "sample": ("sample",)}

    def call():
        weights, deltas = emc2.perturbation_plan(SMALL, delta, policy, seed, sample)
        return weights, deltas, emc2.render_perturbations(SMALL, weights, deltas, res, batch_size, engine)

    def check(out):
        weights, deltas, imgs = out
        n = len(emc2.nonzero_weights(SMALL))
        kept = n if sample is None else min(n, sample)
        assert len(weights) == len(deltas) == (2 if policy == "both" else 1) * kept
        assert bool(torch.isfinite(deltas).all()) and (policy == "noise" or bool((deltas.abs() == abs(delta)).all()))
        is_image_batch(imgs, (len(weights), int(res), int(res), 3))
    valid_or_value_error(call, check, arg, names)


@each_bad("weights", "deltas")
@SETTINGS
@given(data=st.data())
def test_render_perturbations_of_random_weights(data, bad):
    arg = Arguments(data, bad)
    valid_weight = st.sampled_from(emc2.nonzero_weights(SMALL))
    bad_weight = st.one_of(st.tuples(st.integers(-1, 3), st.integers(-1, 4), st.integers(5, 9)),
                           st.sampled_from([(0, 0), (0, 0, 0, 0), "abc", (0.5, 0, 0), (True, 0, 0), None,
                                            (-1, 0, 0), (0, 3, 0), (2, 0, 3)]))
    weights = arg("weights", st.lists(valid_weight, max_size=4),
                  st.lists(valid_weight, max_size=3).flatmap(lambda w: bad_weight.map(lambda b: w + [b])))
    deltas = arg("deltas", st.one_of(tensors((len(weights),)),
                                     st.lists(st.floats(-3, 3), min_size=len(weights), max_size=len(weights))),
                 st.one_of(tensors((len(weights),), ("special",)), st.just([0.5] * (len(weights) + 1)),
                           st.just("abc")))

    def check(imgs):
        is_image_batch(imgs, (len(weights), 4, 4, 3))
    valid_or_value_error(lambda: emc2.render_perturbations(SMALL, weights, deltas, 4), check, arg,
                         {"weights": "weight"})


@each_bad("scores", "sparsity", "scope", "masks")
@SETTINGS
@given(data=st.data())
def test_masks_from_scores(data, bad):
    arg = Arguments(data, bad)
    shapes = data.draw(st.lists(st.tuples(st.integers(1, 4), st.integers(1, 4)), min_size=1, max_size=3))
    scores = arg("scores", st.tuples(*(tensors(s, ("float32", "float64", "int", "bool")) for s in shapes)).map(list),
                 st.sampled_from([[], "abc", torch.zeros(2, 2), [torch.zeros(3)], [[["a"]]],
                                  [torch.tensor([[float("nan")]])]]))
    sparsity = arg("sparsity", st.floats(0, 0.999), st.one_of(specials, st.sampled_from([-0.1, "0.5", 1, None])))
    scope = arg("scope", st.sampled_from(prune.SCOPES), st.sampled_from(["neuron", None]))
    g = np.random.default_rng(data.draw(st.integers(0, 99)))
    kind = arg("masks", st.sampled_from([None, "ones", "random", "values"]),
               st.sampled_from(["nan", "wrong shape", "strings", "one tensor", "too few"]))
    masks = None
    if arg.bad == "scores":
        kind = None
    if kind == "ones":
        masks = [torch.ones(s) for s in shapes]
    elif kind == "random":
        masks = [torch.from_numpy(g.random(s) > 0.5) for s in shapes]
    elif kind == "values":
        masks = [torch.full(s, 0.5) for s in shapes]            # non-zero: kept, as the CPPN reads masks
    elif kind == "nan":
        masks = [torch.full(s, float("nan")) for s in shapes]
    elif kind == "wrong shape":
        masks = [torch.ones(s[0] + 1, s[1]) for s in shapes]
    elif kind == "strings":
        masks = ["ab" for s in shapes]
    elif kind == "one tensor":
        masks = torch.ones(len(shapes), *shapes[0])
    elif kind == "too few":
        masks = [torch.ones(s) for s in shapes[1:]]

    def check(new):
        assert [tuple(m.shape) for m in new] == shapes
        assert all(bool(((m == 0) | (m == 1)).all()) for m in new)
        old = masks if masks is not None else [torch.ones(s) for s in shapes]
        assert all(bool((m[o == 0] == 0).all()) for m, o in zip(new, old)), "a pruned weight was revived"
        if masks is None and scope != "row":
            groups = [new] if scope == "global" else [[m] for m in new]
            for group in groups:
                n = sum(m.numel() for m in group)
                assert sum(int((m == 0).sum()) for m in group) == math.floor(sparsity * n + 0.5)
    valid_or_value_error(lambda: prune.masks_from_scores(scores, sparsity, scope, masks), check, arg,
                         {"scores": ("scores",)})


@each_bad("sparsity", "scope", "seed")
@SETTINGS
@given(data=st.data())
def test_magnitude_and_random_prune(data, bad):
    arg = Arguments(data, bad)
    sparsity = arg("sparsity", st.floats(0, 0.999), st.one_of(specials, st.sampled_from([-0.1, "0.5", 1, None])))
    scope = arg("scope", st.sampled_from(prune.SCOPES), st.just("x"))
    seed = arg("seed", st.integers(-3, 3), st.sampled_from([2 ** 63, 2 ** 70, -2 ** 64, 2.5]))

    def check(masks):
        assert [tuple(m.shape) for m in masks] == [tuple(s) for s in SMALL.shapes]
        assert all(bool(((m == 0) | (m == 1)).all()) for m in masks)
        assert abs(prune.sparsity(masks) - sparsity) <= 0.5 / min(m.numel() for m in masks) + 1e-9
    if arg.bad != "seed":
        valid_or_value_error(lambda: prune.magnitude_prune(SMALL, sparsity, scope), check, arg)
    valid_or_value_error(lambda: prune.random_prune(SMALL, sparsity, seed, scope), check, arg)
