"""Tests for compbook.cppn.theory: Welch bound and frames, local interference, the volume-ratio model rho(W, L)."""

import itertools
import math

import numpy as np
import pytest
import torch

from compbook.cppn import theory as T
from compbook.cppn.picbreeder import load_genome


# -- coherence and the Welch bound --------------------------------------------------------------------------------
def naive_coherence(F):
    F = [np.asarray(f, float) / np.linalg.norm(f) for f in F]
    return max(abs(float(F[i] @ F[j])) for i in range(len(F)) for j in range(len(F)) if i != j)


def test_coherence_matches_naive_loop_and_ignores_row_scale():
    F = np.random.default_rng(0).standard_normal((7, 3))
    assert T.mutual_coherence(F) == pytest.approx(naive_coherence(F), abs=1e-14)
    assert T.mutual_coherence(F * np.arange(1, 8)[:, None]) == pytest.approx(T.mutual_coherence(F), abs=1e-14)
    assert T.mutual_coherence(np.array([[1.0, 0.0], [-1.0, 0.0]])) == pytest.approx(1.0)


def test_welch_bound_formula_and_exact_zero_when_r_le_d():
    assert T.welch_bound(3, 2) == pytest.approx(0.5)
    assert T.welch_bound(6, 3) == pytest.approx(1 / math.sqrt(5))
    for d in range(1, 8):
        for r in range(1, d + 1):
            assert T.welch_bound(r, d) == 0.0
            assert T.mutual_coherence(T.orthonormal_frame(max(r, 2), max(d, 2), seed=r)) == pytest.approx(0.0, abs=1e-12)
    # the bound grows with r and tends to 1/sqrt(d)
    assert all(T.welch_bound(r, 4) < T.welch_bound(r + 1, 4) for r in range(5, 40))
    assert T.welch_bound(10**6, 4) == pytest.approx(0.5, rel=1e-5)


def known_etfs():
    frames = {f"simplex d={d}": T.simplex_etf(d) for d in (1, 2, 3, 5, 8)}
    frames.update({f"paley q={q}": T.paley_etf(q) for q in (5, 13, 17, 29)})
    frames["naimark(paley 13)"] = T.naimark_complement(T.paley_etf(13))
    frames["naimark(simplex 4)"] = T.naimark_complement(T.simplex_etf(4))   # 5 vectors in R^1
    return frames


@pytest.mark.parametrize("name", list(known_etfs()))
def test_known_etfs_meet_the_welch_bound(name):
    F = known_etfs()[name]
    r, d = F.shape
    U = T.normalise_rows(F)
    G = np.abs(U @ U.T)[~np.eye(r, dtype=bool)]
    assert np.allclose(np.linalg.norm(F, axis=1), 1.0)
    assert G.max() - G.min() < 1e-9, "not equiangular"
    assert np.allclose(U.T @ U, (r / d) * np.eye(d), atol=1e-9), "not tight"
    assert abs(T.mutual_coherence(F) - T.welch_bound(r, d)) < 1e-6


def test_paley_q5_is_the_icosahedron_six_lines():
    F = T.paley_etf(5)
    assert F.shape == (6, 3)
    assert T.mutual_coherence(F) == pytest.approx(1 / math.sqrt(5), abs=1e-12)


def test_surrogate_gradient_matches_torch_autograd():
    X = np.random.default_rng(1).standard_normal((3, 6, 3))
    for p in (4.0, 40.0):
        loss, grad = T.coherence_surrogate(X, p)
        Xt = torch.tensor(X, requires_grad=True)
        U = Xt / Xt.norm(dim=-1, keepdim=True)
        A = (U @ U.transpose(1, 2)).abs() * (1 - torch.eye(6, dtype=torch.float64))
        c = A.detach().amax(dim=(1, 2), keepdim=True)
        ref = (c[:, 0, 0] * ((A / c) ** p).sum(dim=(1, 2)).div(30) ** (1 / p))
        ref.sum().backward()
        assert np.allclose(loss, ref.detach().numpy(), atol=1e-12)
        assert np.allclose(grad, Xt.grad.numpy(), atol=1e-9)
        assert (loss <= c[:, 0, 0].numpy() + 1e-12).all(), "the p-norm surrogate must not exceed the max"


OPTIMISED = [(3, 2), (4, 2), (5, 2), (4, 3), (6, 3), (7, 3), (5, 4), (8, 4), (6, 5), (10, 5), (12, 6)]


@pytest.mark.parametrize("r,d", OPTIMISED)
def test_welch_bound_lower_bounds_every_optimised_frame(r, d):
    F = T.minimise_coherence(r, d, steps=600, seed=r * 10 + d)
    assert F.shape == (r, d)
    assert T.mutual_coherence(F) >= T.welch_bound(r, d) - 1e-12
    assert T.mutual_coherence(F) <= T.mutual_coherence(np.random.default_rng(0).standard_normal((r, d)))


@pytest.mark.parametrize("r,d", [(3, 2), (4, 3), (5, 4), (6, 3), (6, 5), (10, 5)])
def test_optimiser_reaches_the_bound_where_an_etf_exists(r, d):
    assert T.mutual_coherence(T.minimise_coherence(r, d, steps=1500)) - T.welch_bound(r, d) < 1e-6


@pytest.mark.parametrize("r", [4, 5, 6])
def test_optimiser_finds_the_known_plane_optimum_above_the_bound(r):
    """In R^2 the best r lines are equally spaced: coherence cos(pi/r) > Welch bound (no ETF for r >= 4)."""
    c = T.mutual_coherence(T.minimise_coherence(r, 2, steps=1500))
    assert c == pytest.approx(math.cos(math.pi / r), abs=1e-6)
    assert c > T.welch_bound(r, 2) + 0.05


def test_optimiser_is_deterministic():
    assert np.array_equal(T.minimise_coherence(7, 3, steps=200, seed=3), T.minimise_coherence(7, 3, steps=200, seed=3))


@pytest.mark.parametrize("call", [
    lambda: T.welch_bound(0, 3), lambda: T.welch_bound(3, 0), lambda: T.welch_bound(2.5, 2),
    lambda: T.welch_bound(True, 2), lambda: T.welch_bound(None, 2), lambda: T.welch_bound("3", 2),
    lambda: T.mutual_coherence(np.ones((1, 3))), lambda: T.mutual_coherence(np.zeros((3, 2))),
    lambda: T.mutual_coherence(np.ones(3)), lambda: T.mutual_coherence(np.array([[1.0, np.nan], [0.0, 1.0]])),
    lambda: T.simplex_etf(0), lambda: T.paley_etf(7), lambda: T.paley_etf(9), lambda: T.paley_etf(1),
    lambda: T.naimark_complement(np.random.default_rng(0).standard_normal((5, 2))),
    lambda: T.naimark_complement(np.eye(3)), lambda: T.orthonormal_frame(4, 3),
    lambda: T.minimise_coherence(1, 3), lambda: T.minimise_coherence(5, 2, steps=0),
])
def test_bad_frame_inputs_raise_value_error(call):
    with pytest.raises(ValueError):
        call()


# -- local interference -------------------------------------------------------------------------------------------
def ring_groups(r, k):
    return [tuple((i + j) % r for j in range(k)) for i in range(r)]


def test_local_sets_orthogonal_while_global_welch_bound_is_positive():
    r, d, k = 12, 6, 3
    groups = ring_groups(r, k)
    F = T.local_orthogonal_frame(groups, r, d)
    assert T.welch_bound(r, d) > 0.3                      # globally r > d: interference is unavoidable ...
    assert T.mutual_coherence(F) >= T.welch_bound(r, d) - 1e-12
    assert T.local_welch_bound(groups, d) == 0.0          # ... locally the bound is exactly zero
    assert T.local_coherence(F, groups) < 1e-12            # and attained: every node's inputs are orthogonal
    assert T.local_welch_bound(groups, 2) > 0              # arity 3 > d = 2: locally impossible too


def test_skull_primitives_are_locally_orthogonal_in_fewer_dimensions_than_primitives():
    g = load_genome("skull")
    keys, groups = T.genome_groups(g)
    index = {n.key: i for i, n in enumerate(g.nodes)}
    naive = [tuple(sorted({index[l.source] for l in g.links if l.target == n.key})) for n in g.nodes if n.kind != "in"]
    assert groups == naive and keys == [n.key for n in g.nodes]
    r, k = len(g.nodes), max(map(len, groups))
    colours = int(T.greedy_colouring(T.cooccurrence(groups, r)).max()) + 1
    assert colours == k < r                                # the widest node's inputs form a clique: optimal
    F = T.local_orthogonal_frame(groups, r, k)
    assert T.local_coherence(F, groups) < 1e-12 and T.welch_bound(r, k) > 0.2


def test_dag_layout_puts_each_depth_in_one_column():
    depths = load_genome("skull").depths()
    pos = T.dag_layout(depths)
    assert set(pos) == set(depths) and all(pos[k][0] == depths[k] for k in depths)
    for dep in set(depths.values()):
        ys = [pos[k][1] for k in depths if depths[k] == dep]
        assert len(set(ys)) == len(ys) and min(ys) >= -1 and max(ys) <= 1


def test_greedy_colouring_is_proper_and_local_frame_refuses_too_few_dimensions():
    groups = ring_groups(10, 4) + [(0, 5)]
    A = T.cooccurrence(groups, 10)
    colour = T.greedy_colouring(A)
    assert not any(colour[i] == colour[j] for i, j in zip(*np.nonzero(A)))
    with pytest.raises(ValueError, match="colours"):
        T.local_orthogonal_frame(groups, 10, 3)
    with pytest.raises(ValueError, match="groups"):
        T.local_coherence(np.eye(3), [(0, 3)])


# -- the volume ratio rho(W, L) ------------------------------------------------------------------------------------
def dag(*masks):
    return T.LayeredDAG(tuple(np.array(m, dtype=bool) for m in masks))


TINY = {                                             # n_in = 2 inputs, N <= 18 possible edges in every case below
    "one unit": dag([[1, 1]], [[1]]),
    "two units": dag([[1, 0], [1, 1]], [[1, 1]]),
    "chain": dag([[1, 0]], [[1]], [[1]]),
    "fan-in": dag([[1, 0], [0, 1]], [[1, 1]], [[1]]),
}
CASES = [(name, W, L) for name in TINY for W, L in itertools.product((1, 2, 3), (1, 2, 3))
         if sum(a * b for a, b in T.network_shapes(TINY[name], W, L)) <= 18]


@pytest.mark.parametrize("name,W,L", CASES)
def test_rho_enumeration_equals_closed_form(name, W, L):
    target = TINY[name]
    for p in (0.5, 0.3):
        assert T.rho_exact(target, W, L, p) == pytest.approx(T.rho(target, W, L, p), rel=1e-10, abs=1e-300)


@pytest.mark.parametrize("name,W,L", [("one unit", 2, 2), ("two units", 2, 1), ("fan-in", 2, 2), ("chain", 3, 2)])
def test_rho_monte_carlo_agrees_with_enumeration_within_three_standard_errors(name, W, L):
    target, n = TINY[name], 50_000
    exact = T.rho_exact(target, W, L)
    est, se = T.rho_monte_carlo(target, W, L, n=n, seed=7)
    assert exact > 20 / n, "case too rare for plain Monte Carlo"
    assert abs(est - exact) <= 3 * math.sqrt(exact * (1 - exact) / n)
    assert se == pytest.approx(math.sqrt(exact * (1 - exact) / n), rel=0.2)


def genome_targets():
    return {name: T.dag_from_genome(load_genome(name)) for name in ("skull", "butterfly", "apple")}


def test_genome_targets_have_the_layerized_shape():
    t = genome_targets()
    assert (t["skull"].depth, t["skull"].width, t["skull"].n_in, t["skull"].n_out) == (11, 16, 4, 1)
    assert (t["butterfly"].depth, t["apple"].depth) == (16, 33)


@pytest.mark.parametrize("name", ["skull", "butterfly", "apple", "fan-in", "two units"])
def test_rho_peaks_at_w_min_l_star_and_vanishes_below(name):
    target = {**genome_targets(), **TINY}[name]
    Ws = range(1, target.width + 6)
    Ls = range(1, target.depth + 6)
    grid = np.array([[T.log_rho(target, W, L) for L in Ls] for W in Ws])
    W_best, L_best = np.unravel_index(np.argmax(grid), grid.shape)
    assert (Ws[W_best], Ls[L_best]) == (target.width, target.depth)
    assert np.isneginf(grid[: target.width - 1]).all() and np.isneginf(grid[:, : target.depth - 1]).all()
    assert np.isfinite(grid[target.width - 1:, target.depth - 1:]).all()


@pytest.mark.parametrize("name", ["skull", "butterfly", "apple"])
@pytest.mark.parametrize("p", [0.5, 0.2])
def test_rho_decays_exponentially_at_the_derived_rates(name, p):
    target = genome_targets()[name]
    W0, L0 = target.width, target.depth
    for L in (L0, L0 + 3):
        steps = np.diff([T.log_rho(target, W, L, p) for W in range(W0, W0 + 6)])
        assert np.allclose(-steps, T.width_decay_rate(target, L, p), rtol=1e-10)   # constant: exponential in W
    for W in (W0, W0 + 4):
        steps = np.diff([T.log_rho(target, W, L, p) for L in range(L0, L0 + 6)])
        assert np.allclose(-steps, T.depth_decay_rate(target, W, p), rtol=1e-10)   # constant: exponential in L
    assert T.width_decay_rate(target, L0, p) > 0 and T.depth_decay_rate(target, W0, p) > 0


@pytest.mark.parametrize("name", ["skull", "butterfly", "apple"])
def test_peak_survives_counting_every_relabelling(name):
    target = genome_targets()[name]
    grid = {(W, L): T.log_rho(target, W, L) + T.log_relabelling_bound(target, W, L)
            for W in range(target.width, target.width + 8) for L in range(target.depth, target.depth + 8)}
    assert max(grid, key=grid.get) == (target.width, target.depth)
    assert T.log_relabelling_bound(target, target.width - 1, target.depth) == 0.0
    # a tiny case by hand: widths (1,) in W = 3, L = 2 slots: 3 choices per layer
    assert T.log_relabelling_bound(TINY["one unit"], 3, 2) == pytest.approx(2 * math.log(3))


def test_enumerated_decay_ratios_match_the_derived_rates():
    """Independent of the closed form: ratios of brute-force rho equal exp(-rate)."""
    target = TINY["one unit"]
    assert T.rho_exact(target, 3, 1) / T.rho_exact(target, 2, 1) == pytest.approx(
        math.exp(-T.width_decay_rate(target, 1)))
    assert T.rho_exact(target, 2, 3) / T.rho_exact(target, 2, 2) == pytest.approx(
        math.exp(-T.depth_decay_rate(target, 2)))
    target = TINY["fan-in"]
    assert T.rho_exact(target, 2, 3, 0.3) / T.rho_exact(target, 2, 2, 0.3) == pytest.approx(
        math.exp(-T.depth_decay_rate(target, 2, 0.3)))


def test_basin_definition_on_hand_made_masks():
    target, W, L = TINY["fan-in"], 3, 3
    e = [m[None].copy() for m in T.embed(target, W, L)]
    assert T.in_basin(e, target, W, L).all()
    extra_into_dead = [m.copy() for m in e]
    extra_into_dead[1][0, 2, :] = True                      # unit 2 of layer 2 is a surplus unit nobody reads
    assert T.in_basin(extra_into_dead, target, W, L).all()
    read_surplus = [m.copy() for m in extra_into_dead]
    read_surplus[2][0, 0, 2] = True                          # now the copy layer reads it: factorisation broken
    assert not T.in_basin(read_surplus, target, W, L).any()
    missing = [m.copy() for m in e]
    missing[0][0, 0, 0] = False
    assert not T.in_basin(missing, target, W, L).any()


@pytest.mark.parametrize("call", [
    lambda: T.LayeredDAG((np.ones((2, 2)),)),                                 # no output layer
    lambda: T.LayeredDAG((np.ones((2, 2)), np.ones((1, 3)))),                 # shape mismatch
    lambda: T.LayeredDAG((np.ones((2, 2)), np.array([[1, 0]]))),              # hidden unit 1 is dead
    lambda: T.log_rho(TINY["chain"], 0, 2), lambda: T.log_rho(TINY["chain"], 2, 1.5),
    lambda: T.log_rho(TINY["chain"], 2, 2, p=1.0), lambda: T.rho_monte_carlo(TINY["chain"], 2, 2, n=0),
    lambda: T.rho_exact(TINY["chain"], 4, 3), lambda: T.embed(TINY["fan-in"], 1, 2),
    lambda: T.in_basin([np.ones((1, 2, 2))], TINY["chain"], 2, 2),
])
def test_bad_rho_inputs_raise_value_error(call):
    with pytest.raises(ValueError):
        call()


def test_trimmed_drops_dead_units():
    t = T.LayeredDAG.trimmed((np.ones((2, 2)), np.array([[1, 0]])))
    assert t.widths == [1] and t.n_edges == 3


# -- hardening -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("r,d", [(math.inf, 2), (2, math.inf), (math.nan, 2), (2.5, 2), ("3", 2)])
def test_welch_bound_refuses_non_integers_with_value_error(r, d):
    """welch_bound(inf, 2) used to raise OverflowError."""
    with pytest.raises(ValueError, match="must be an integer >= 1"):
        T.welch_bound(r, d)


def test_coherence_of_complex_vectors_uses_the_hermitian_product():
    """Used to drop the imaginary parts (with a ComplexWarning) and return 1.0."""
    F = np.array([[1, 0], [1, 1j]])
    assert T.mutual_coherence(F) == pytest.approx(1 / math.sqrt(2))
    assert T.mutual_coherence(np.array([[1, 1j], [1, -1j]])) == pytest.approx(0.0, abs=1e-12)   # orthogonal in C^2
    with pytest.raises(ValueError, match="complex"):
        T.normalise_rows(F)                                   # the real-frame tools refuse complex input
