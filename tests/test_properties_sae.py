"""Property tests (hypothesis) for three Part C entry points: the TopK SAE (``compbook.sae.topk``: build, encode,
decode, scatter), its metrics (``compbook.sae.metrics`` and ``topk``: FVU, L0, mIoU) and the S2AE penalties
(``compbook.sae.s2ae``: group / exclusive sparsity, batch and sparse penalties). Random shapes, dtypes, NaN / inf,
empty and huge sizes, at most one bad argument per call: with none, the call returns a valid result; with one, it
raises ``ValueError`` naming that argument, quickly. No other exception escapes."""

import math

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings, strategies as st
from properties import Arguments, each_bad, tensor_strategy, valid_or_value_error

from compbook.sae import metrics, s2ae, topk

pytestmark = pytest.mark.usefixtures("one_thread")

SETTINGS = settings(max_examples=10, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
specials = st.sampled_from([float("nan"), float("inf"), -float("inf")])
bad_sizes = st.sampled_from([0, -1, 2.5, True, "3", None, float("nan"), 10 ** 400])
SAE = topk.TopKSAE(6, 10, 3, seed=0)


tensors = tensor_strategy(specials)


def finite(t):
    return bool(torch.isfinite(torch.as_tensor(t)).all())


# -- the TopK SAE ---------------------------------------------------------------------------------------------------
@each_bad("d_in", "d_sae", "k", "seed")
@SETTINGS
@given(data=st.data())
def test_build_a_topk_sae(data, bad):
    arg = Arguments(data, bad)
    d_in, d_sae = arg("d_in", st.integers(1, 8), bad_sizes), arg("d_sae", st.integers(1, 12), bad_sizes)
    k = arg("k", st.integers(1, 12).map(lambda k: min(k, d_sae if isinstance(d_sae, int) and d_sae > 0 else 1)),
            st.one_of(bad_sizes, st.just(13)))
    seed = arg("seed", st.integers(0, 10), st.sampled_from([-1, 2 ** 64, 1.5, "0"]))

    def check(sae):
        assert (sae.d_in, sae.d_sae, sae.k) == (d_in, d_sae, k)
        assert tuple(sae.W_enc.shape) == (d_in, d_sae) and finite(sae.W_enc)
    valid_or_value_error(lambda: topk.TopKSAE(d_in, d_sae, k, seed), check, arg)


@each_bad("x")
@SETTINGS
@given(data=st.data())
def test_encode_and_decode(data, bad):
    arg = Arguments(data, bad)
    rows = data.draw(st.integers(0, 5))
    lead = data.draw(st.sampled_from([(rows,), (), (2, rows)]))
    x = arg("x", tensors(lead + (6,), ("float32", "float64", "numpy")), st.one_of(
        tensors((max(rows, 1), 6), ("int", "bool", "special")), tensors((rows, 5)), st.just("abc"),
        st.just([[1.0, 2.0], [3.0]]), st.just(torch.zeros(2, 6, dtype=torch.complex64))))

    def check(out):
        z, x_hat = out
        assert tuple(z.shape) == lead + (10,) and tuple(x_hat.shape) == lead + (6,)
        assert finite(z) and finite(x_hat) and bool((z >= 0).all())
        assert bool(((z != 0).sum(-1) <= 3).all()), "more than k latents active"

    def call():
        z = SAE.encode(x)
        return z, SAE.decode(z)
    valid_or_value_error(call, check, arg)


@each_bad("vals", "idx")
@SETTINGS
@given(data=st.data())
def test_scatter(data, bad):
    arg = Arguments(data, bad)
    rows = data.draw(st.integers(0, 4))
    vals = arg("vals", tensors((rows, 3)), st.one_of(tensors((max(rows, 1), 3), ("special", "int")),
                                                     st.just("abc")))
    g = np.random.default_rng(data.draw(st.integers(0, 99)))
    good_idx = torch.from_numpy(np.array([g.permutation(10)[:3] for _ in range(rows)], np.int64).reshape(rows, 3))
    idx = arg("idx", st.just(good_idx), st.sampled_from(["ten", "minus one", "float", "bool", "shape", "huge"]))
    if isinstance(idx, str):
        kind, idx = idx, good_idx.clone() if rows else torch.zeros(1, 3, dtype=torch.int64)
        if kind != "shape" and not rows:
            vals = torch.zeros(1, 3)
        if kind == "ten":
            idx[0, 0] = 10
        elif kind == "minus one":
            idx[0, 0] = -1
        elif kind == "float":
            idx = idx.float()
        elif kind == "bool":
            idx = idx > 4
        elif kind == "shape":
            idx = idx[:, :2]
        else:
            idx[0, 0] = 2 ** 62

    def check(z):
        assert tuple(z.shape) == (rows, 10)
        assert torch.equal(z.gather(1, good_idx), torch.as_tensor(vals).to(z.dtype))
        assert int((z != 0).sum()) <= int((torch.as_tensor(vals) != 0).sum())
    valid_or_value_error(lambda: SAE.scatter(vals, idx), check, arg)


# -- metrics ----------------------------------------------------------------------------------------------------------
@each_bad("x", "x_hat")
@SETTINGS
@given(data=st.data())
def test_fvu(data, bad):
    arg = Arguments(data, bad)
    rows, d = data.draw(st.integers(2, 6)), data.draw(st.integers(1, 4))
    x = arg("x", tensors((rows, d)), st.one_of(
        tensors((rows, d), ("special",)), st.just(torch.ones(3, 2)), st.just(torch.zeros(0, 3)),
        st.just(torch.tensor(1.5)), st.just(torch.tensor([[1.0, 2.0]])), st.just("abc")))
    x_hat = arg("x_hat", tensors(tuple(x.shape) if isinstance(x, torch.Tensor) else (rows, d)), st.one_of(
        tensors((rows, d), ("special",)), st.just(torch.zeros(rows + 1, d)), st.just("abc")))

    def check(f):
        assert isinstance(f, float) and math.isfinite(f) and f >= 0
        xx = torch.as_tensor(x, dtype=torch.float64)
        want = float(((xx - torch.as_tensor(x_hat, dtype=torch.float64)) ** 2).sum()
                     / ((xx - xx.mean(0)) ** 2).sum())
        assert math.isclose(f, want, rel_tol=1e-4, abs_tol=1e-6), (f, want)
    valid_or_value_error(lambda: topk.fvu(x, x_hat), check, arg)


@each_bad("z")
@SETTINGS
@given(data=st.data())
def test_l0_and_dead_latents(data, bad):
    arg = Arguments(data, bad)
    rows = data.draw(st.integers(1, 5))
    z = arg("z", tensors((rows, 7), ("float32", "float64", "int", "bool")).map(lambda t: t * (torch.rand(
        t.shape, generator=torch.Generator().manual_seed(0)) > 0.5)),
        st.one_of(tensors((rows, 7), ("special",)), st.just(torch.zeros(0, 7)), st.just(torch.tensor(1.0)),
                  st.just("abc")))

    def check(out):
        l0, dead = out
        assert 0 <= l0 <= 7 and math.isclose(l0, float((torch.as_tensor(z) != 0).float().sum(-1).mean()))
        assert dead.dtype == torch.bool and tuple(dead.shape) == (7,)
        assert torch.equal(dead, ~(torch.as_tensor(z) != 0).any(0))
    valid_or_value_error(lambda: (topk.l0(z), topk.dead_latents(z)), check, arg)


@each_bad("z_img", "masks")
@SETTINGS
@given(data=st.data())
def test_miou(data, bad):
    arg = Arguments(data, bad)
    n, p, c = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 6)), data.draw(st.integers(1, 3))
    g = torch.Generator().manual_seed(data.draw(st.integers(0, 99)))
    good_z = (torch.rand(n, p, 5, generator=g) > 0.5).float()
    good_z[0, 0, 0] = 1.0                                            # some latent fires: mIoU is defined
    z_img = arg("z_img", st.just(good_z), st.one_of(tensors((n, p, 5), ("special",)), st.just(torch.ones(n, p)),
                                                  st.just(torch.ones(n + 1, p, 5)), st.just("abc")))
    masks = arg("masks", st.just(torch.rand(n, c, p, generator=g) > 0.5), st.one_of(
        st.just(torch.ones(n, c, p)), st.just(torch.ones(n, c, p + 1, dtype=torch.bool)), st.just(None),
        st.just("abc"), st.just([["x"]])))

    def check(m):
        assert isinstance(m, float) and 0.0 <= m <= 1.0
    valid_or_value_error(lambda: metrics.miou(z_img, masks), check, arg)


# -- the S2AE penalties -----------------------------------------------------------------------------------------
@each_bad("z_hat", "regions")
@SETTINGS
@given(data=st.data())
def test_group_and_exclusive_sparsity_of_one_image(data, bad):
    arg = Arguments(data, bad)
    p = data.draw(st.integers(1, 6))
    z_hat = arg("z_hat", tensors((p, 5)), st.one_of(tensors((p, 5), ("special", "int")), st.just(torch.zeros(0, 5)),
                                                  st.just(torch.zeros(2, 2, 5)), st.just("abc")))
    n = z_hat.shape[0] if isinstance(z_hat, torch.Tensor) and z_hat.ndim >= 1 else p
    regions = arg("regions", st.lists(st.integers(-3, 5), min_size=n, max_size=n), st.one_of(
        st.just([0.5] * n), st.just([0] * (n + 1)), st.just(["a"] * n), st.just(None), st.just([True] * n)))

    def check(out):
        gs, es, prof = out
        groups = len(set(regions))
        assert tuple(prof.shape) == (groups, 5) and finite(prof) and bool((prof > 0).all())
        assert finite(gs) and finite(es) and float(gs) > 0 and float(es) > 0
        assert math.isclose(float(gs), float(prof.mean()), rel_tol=1e-5)
    valid_or_value_error(lambda: (s2ae.group_sparsity(z_hat, regions), s2ae.exclusive_sparsity(z_hat, regions),
                                  s2ae.group_profiles(z_hat, regions)), check, arg)


@each_bad("z_hat", "regions")
@SETTINGS
@given(data=st.data())
def test_batch_penalties_match_the_per_image_ones(data, bad):
    arg = Arguments(data, bad)
    b, p = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 5))
    z_hat = arg("z_hat", tensors((b, p, 4), ("float64",)), st.one_of(
        tensors((b, p, 4), ("special", "int")), st.just(torch.zeros(b, p)), st.just(torch.zeros(0, p, 4))))
    g = np.random.default_rng(data.draw(st.integers(0, 99)))
    # labels name regions only: any non-negative integers, 10^12 included (renumbered per image, no buffer sized
    # by them)
    scale = data.draw(st.sampled_from([1, 10 ** 11]))
    regions = arg("regions", st.just(torch.from_numpy(g.integers(0, 3, (b, p))) * scale), st.sampled_from([
        torch.full((b, p), -1), torch.full((b, p), 0.5), torch.zeros(b, p + 1, dtype=torch.int64),
        [["a"] * p] * b, torch.zeros(b, p, dtype=torch.bool)]))

    def check(out):
        gs, es = out
        assert finite(gs) and finite(es)
        per_image = [(s2ae.group_sparsity(z_hat[i], regions[i]), s2ae.exclusive_sparsity(z_hat[i], regions[i]))
                     for i in range(b)]
        assert math.isclose(float(gs), float(sum(a for a, _ in per_image)) / b, rel_tol=1e-6)
        assert math.isclose(float(es), float(sum(e for _, e in per_image)) / b, rel_tol=1e-6)
    valid_or_value_error(lambda: s2ae.batch_penalties(z_hat, regions), check, arg)


@each_bad("vals_hat", "idx", "regions", "d_sae")
@SETTINGS
@given(data=st.data())
def test_sparse_penalties_match_the_dense_ones(data, bad):
    arg = Arguments(data, bad)
    b, p, k = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 4)), data.draw(st.integers(1, 3))
    d_sae = arg("d_sae", st.integers(k, 8), st.one_of(bad_sizes, st.just(10 ** 12)))
    d = d_sae if isinstance(d_sae, int) and 0 < d_sae < 100 else 8
    g = np.random.default_rng(data.draw(st.integers(0, 99)))
    good_idx = torch.from_numpy(np.stack([g.permutation(max(d, k))[:k] for _ in range(b * p)]).reshape(b, p, k))
    vals_hat = arg("vals_hat", tensors((b, p, k), ("float64",)), st.one_of(
        tensors((b, p, k), ("special", "int")), st.just(torch.zeros(b, p)), st.just("abc")))
    idx = arg("idx", st.just(good_idx), st.sampled_from([good_idx + d, good_idx - good_idx.max() - 1,
                                                        good_idx.double(), good_idx[..., :0]]))
    scale = data.draw(st.sampled_from([1, 10 ** 11]))      # any non-negative labels (renumbered per image)
    regions = arg("regions", st.just(torch.from_numpy(g.integers(0, 3, (b, p))) * scale), st.sampled_from([
        torch.full((b, p), -1), torch.full((b, p), 0.5), torch.zeros(b, p + 1, dtype=torch.int64)]))
    names = {"d_sae": ("d_sae", "idx", "regions x d_sae")}

    def check(out):
        gs, es = out
        dense = torch.zeros(b, p, d, dtype=vals_hat.dtype).scatter(-1, idx, vals_hat)
        want_gs, want_es = s2ae.batch_penalties(dense, regions)
        assert math.isclose(float(gs), float(want_gs), rel_tol=1e-6, abs_tol=1e-9)
        assert math.isclose(float(es), float(want_es), rel_tol=1e-6, abs_tol=1e-9)
    valid_or_value_error(lambda: s2ae.sparse_penalties(vals_hat, idx, regions, d_sae), check, arg, names)
