"""Tests of compbook.binding.probes: each probe recovers the structure it is made for, and only that."""

import numpy as np
import pytest

from compbook.binding.probes import PROBE_KINDS, fit_probe

N_VALUES = (3, 2, 4)  # 24 objects, 576 ordered two-object scenes


def all_scenes(n_values=N_VALUES, slots=2):
    """Every ordered scene of `slots` objects: (S, slots, C)."""
    objs = np.stack(np.meshgrid(*[np.arange(v) for v in n_values], indexing="ij"), -1).reshape(-1, len(n_values))
    idx = np.stack(np.meshgrid(*[np.arange(len(objs))] * slots, indexing="ij"), -1).reshape(-1, slots)
    return objs[idx]


def planted(kind, values, D=8, seed=0):
    rng = np.random.default_rng(seed)
    K, C = values.shape[1:]
    tables = [[rng.normal(size=(N_VALUES[c], D)) for c in range(C)] for k in range(K)]
    f = [[tables[k][c][values[:, k, c]] for c in range(C)] for k in range(K)]
    if kind == "additive":
        return 0.3 + sum(x for row in f for x in row)
    if kind == "object_product":
        return 0.3 + sum(np.prod(row, axis=0) for row in f)
    return 0.3 + np.prod([x for row in f for x in row], axis=0)


def split(values, frac=0.6, seed=1):
    rng = np.random.default_rng(seed)
    perm = rng.permutation(len(values))
    n = int(frac * len(values))
    return perm[:n], perm[n:]


def test_additive_embedding_is_fit_exactly_by_the_additive_probe():
    v = all_scenes()
    y = planted("additive", v)
    tr, te = split(v)
    p = fit_probe("additive", v[tr], y[tr])
    assert p.r2(v[te], y[te]) > 1 - 1e-9, "least squares on one-hot features should be exact here"
    np.testing.assert_allclose(p.predict(v[te]), y[te], atol=1e-8)


@pytest.mark.parametrize("kind", ["object_product", "global_product"])
def test_product_embedding_is_fit_by_its_probe_but_not_by_the_additive_one(kind):
    v = all_scenes()
    y = planted(kind, v, seed=3)
    tr, te = split(v)
    fitted = fit_probe(kind, v[tr], y[tr]).r2(v[te], y[te])
    additive = fit_probe("additive", v[tr], y[tr]).r2(v[te], y[te])
    assert fitted > 0.99, f"{kind} probe should recover a planted {kind} embedding (R^2 {fitted:.3f}): check ALS"
    assert additive < 0.6, f"the additive probe should not fit a {kind} embedding (R^2 {additive:.3f})"


def test_global_product_nests_the_additive_probe_only_approximately():
    """A product of factors near 1 is 1 + their sum to first order, so an additive embedding is fit well but
    not exactly by the global product (why the chapter compares the probes' fits, not a pass/fail)."""
    v = all_scenes()
    y = planted("additive", v, seed=4)
    tr, te = split(v)
    r2 = fit_probe("global_product", v[tr], y[tr]).r2(v[te], y[te])
    assert r2 < 0.999


@pytest.mark.parametrize("kind", PROBE_KINDS)
def test_probes_are_deterministic(kind):
    v = all_scenes()
    y = planted("global_product", v, seed=5)
    a = fit_probe(kind, v, y, seed=7).predict(v)
    b = fit_probe(kind, v, y, seed=7).predict(v)
    np.testing.assert_array_equal(a, b)


def test_bad_input_names_the_argument():
    v = all_scenes()[:50]
    y = np.zeros((50, 4))
    with pytest.raises(ValueError, match="kind"):
        fit_probe("multiplicative", v, y)
    with pytest.raises(ValueError, match="out of range"):
        fit_probe("additive", v - 1, y)
    with pytest.raises(ValueError, match="out of range"):
        fit_probe("additive", v, y, n_values=(2, 2, 2))
    with pytest.raises(ValueError, match="mismatched scene counts"):
        fit_probe("additive", v, y[:49])
    with pytest.raises(ValueError, match="embeddings"):
        fit_probe("additive", v, np.full((50, 4), np.nan))
    p = fit_probe("additive", v, y, n_values=N_VALUES)
    with pytest.raises(ValueError, match="out of range"):
        p.predict(v + 10)


def test_fit_probe_is_exported_by_the_package():
    import compbook.binding

    assert compbook.binding.fit_probe is fit_probe
