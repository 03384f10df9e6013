"""compbook.cppn.frames: the Welch bound and frames (chapter 4), local interference (chapter 2)."""

import math

import numpy as np
import pytest
import torch

from compbook.cppn import frames
from compbook.cppn.picbreeder import load_genome


# -- coherence and the Welch bound --------------------------------------------------------------------------------
def naive_coherence(F):
    F = [np.asarray(f, float) / np.linalg.norm(f) for f in F]
    return max(abs(float(F[i] @ F[j])) for i in range(len(F)) for j in range(len(F)) if i != j)


def test_coherence_matches_naive_loop_and_ignores_row_scale():
    F = np.random.default_rng(0).standard_normal((7, 3))
    assert frames.mutual_coherence(F) == pytest.approx(naive_coherence(F), abs=1e-14)
    assert frames.mutual_coherence(F * np.arange(1, 8)[:, None]) == pytest.approx(frames.mutual_coherence(F), abs=1e-14)
    assert frames.mutual_coherence(np.array([[1.0, 0.0], [-1.0, 0.0]])) == pytest.approx(1.0)


def test_welch_bound_formula_and_exact_zero_when_r_le_d():
    assert frames.welch_bound(3, 2) == pytest.approx(0.5)
    assert frames.welch_bound(6, 3) == pytest.approx(1 / math.sqrt(5))
    for d in range(1, 8):
        for r in range(1, d + 1):
            assert frames.welch_bound(r, d) == 0.0
            F = frames.orthonormal_frame(max(r, 2), max(d, 2), seed=r)
            assert frames.mutual_coherence(F) == pytest.approx(0.0, abs=1e-12)
    # the bound grows with r and tends to 1/sqrt(d)
    assert all(frames.welch_bound(r, 4) < frames.welch_bound(r + 1, 4) for r in range(5, 40))
    assert frames.welch_bound(10**6, 4) == pytest.approx(0.5, rel=1e-5)


def known_etfs():
    etfs = {f"simplex d={d}": frames.simplex_etf(d) for d in (1, 2, 3, 5, 8)}
    etfs.update({f"paley q={q}": frames.paley_etf(q) for q in (5, 13, 17, 29)})
    etfs["naimark(paley 13)"] = frames.naimark_complement(frames.paley_etf(13))
    etfs["naimark(simplex 4)"] = frames.naimark_complement(frames.simplex_etf(4))   # 5 vectors in R^1
    return etfs


@pytest.mark.parametrize("name", list(known_etfs()))
def test_known_etfs_meet_the_welch_bound(name):
    F = known_etfs()[name]
    r, d = F.shape
    U = frames.normalise_rows(F)
    G = np.abs(U @ U.T)[~np.eye(r, dtype=bool)]
    assert np.allclose(np.linalg.norm(F, axis=1), 1.0)
    assert G.max() - G.min() < 1e-9, "not equiangular"
    assert np.allclose(U.T @ U, (r / d) * np.eye(d), atol=1e-9), "not tight"
    assert abs(frames.mutual_coherence(F) - frames.welch_bound(r, d)) < 1e-6


def test_paley_q5_is_the_icosahedron_six_lines():
    F = frames.paley_etf(5)
    assert F.shape == (6, 3)
    assert frames.mutual_coherence(F) == pytest.approx(1 / math.sqrt(5), abs=1e-12)


def test_surrogate_gradient_matches_torch_autograd():
    X = np.random.default_rng(1).standard_normal((3, 6, 3))
    for p in (4.0, 40.0):
        loss, grad = frames.coherence_surrogate(X, p)
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
    F = frames.minimise_coherence(r, d, steps=600, seed=r * 10 + d)
    assert F.shape == (r, d)
    assert frames.mutual_coherence(F) >= frames.welch_bound(r, d) - 1e-12
    assert frames.mutual_coherence(F) <= frames.mutual_coherence(np.random.default_rng(0).standard_normal((r, d)))


@pytest.mark.parametrize("r,d", [(3, 2), (4, 3), (5, 4), (6, 3), (6, 5), (10, 5)])
def test_optimiser_reaches_the_bound_where_an_etf_exists(r, d):
    assert frames.mutual_coherence(frames.minimise_coherence(r, d, steps=1500)) - frames.welch_bound(r, d) < 1e-6


@pytest.mark.parametrize("r", [4, 5, 6])
def test_optimiser_finds_the_known_plane_optimum_above_the_bound(r):
    """In R^2 the best r lines are equally spaced: coherence cos(pi/r) > Welch bound (no ETF for r >= 4)."""
    c = frames.mutual_coherence(frames.minimise_coherence(r, 2, steps=1500))
    assert c == pytest.approx(math.cos(math.pi / r), abs=1e-6)
    assert c > frames.welch_bound(r, 2) + 0.05


def test_optimiser_is_deterministic():
    assert np.array_equal(frames.minimise_coherence(7, 3, steps=200, seed=3),
                          frames.minimise_coherence(7, 3, steps=200, seed=3))


@pytest.mark.parametrize("call", [
    lambda: frames.welch_bound(0, 3), lambda: frames.welch_bound(3, 0), lambda: frames.welch_bound(2.5, 2),
    lambda: frames.welch_bound(True, 2), lambda: frames.welch_bound(None, 2), lambda: frames.welch_bound("3", 2),
    lambda: frames.mutual_coherence(np.ones((1, 3))), lambda: frames.mutual_coherence(np.zeros((3, 2))),
    lambda: frames.mutual_coherence(np.ones(3)), lambda: frames.mutual_coherence(np.array([[1.0, np.nan], [0.0, 1.0]])),
    lambda: frames.simplex_etf(0), lambda: frames.paley_etf(7), lambda: frames.paley_etf(9),
    lambda: frames.paley_etf(1),
    lambda: frames.naimark_complement(np.random.default_rng(0).standard_normal((5, 2))),
    lambda: frames.naimark_complement(np.eye(3)), lambda: frames.orthonormal_frame(4, 3),
    lambda: frames.minimise_coherence(1, 3), lambda: frames.minimise_coherence(5, 2, steps=0),
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
    F = frames.local_orthogonal_frame(groups, r, d)
    assert frames.welch_bound(r, d) > 0.3                      # globally r > d: interference is unavoidable ...
    assert frames.mutual_coherence(F) >= frames.welch_bound(r, d) - 1e-12
    assert frames.local_welch_bound(groups, d) == 0.0          # ... locally the bound is exactly zero
    assert frames.local_coherence(F, groups) < 1e-12            # and attained: every node's inputs are orthogonal
    assert frames.local_welch_bound(groups, 2) > 0              # arity 3 > d = 2: locally impossible too


def test_skull_primitives_are_locally_orthogonal_in_fewer_dimensions_than_primitives():
    g = load_genome("skull")
    keys, groups = frames.genome_groups(g)
    index = {n.key: i for i, n in enumerate(g.nodes)}
    naive = [tuple(sorted({index[l.source] for l in g.links if l.target == n.key})) for n in g.nodes if n.kind != "in"]
    assert groups == naive and keys == [n.key for n in g.nodes]
    r, k = len(g.nodes), max(map(len, groups))
    colours = int(frames.greedy_colouring(frames.cooccurrence(groups, r)).max()) + 1
    assert colours == k < r                                # the widest node's inputs form a clique: optimal
    F = frames.local_orthogonal_frame(groups, r, k)
    assert frames.local_coherence(F, groups) < 1e-12 and frames.welch_bound(r, k) > 0.2


def test_dag_layout_puts_each_depth_in_one_column():
    depths = load_genome("skull").depths()
    pos = frames.dag_layout(depths)
    assert set(pos) == set(depths) and all(pos[k][0] == depths[k] for k in depths)
    for dep in set(depths.values()):
        ys = [pos[k][1] for k in depths if depths[k] == dep]
        assert len(set(ys)) == len(ys) and min(ys) >= -1 and max(ys) <= 1


def test_dag_layout_with_edges_uncrosses_a_crossed_pair_and_cuts_the_skulls_crossings():
    depths, edges = {"a": 0, "b": 0, "c": 1, "d": 1}, [("a", "d"), ("b", "c")]
    assert frames.dag_crossings(frames.dag_layout(depths), edges) == 1      # sorted order: the links cross
    pos = frames.dag_layout(depths, edges)
    assert frames.dag_crossings(pos, edges) == 0
    assert sorted(pos.values()) == sorted(frames.dag_layout(depths).values())   # the same slots, reordered
    g = load_genome("skull")
    links = [(l.source, l.target) for l in g.links]
    plain, ordered = frames.dag_layout(g.depths()), frames.dag_layout(g.depths(), links)
    assert all(ordered[k][0] == plain[k][0] for k in plain)                 # each node keeps its column
    assert frames.dag_crossings(ordered, links) < 0.8 * frames.dag_crossings(plain, links)
    with pytest.raises(ValueError, match="edges"):
        frames.dag_layout(depths, [("a", "z")])
    with pytest.raises(ValueError, match="sweeps"):
        frames.dag_layout(depths, edges, sweeps=-1)
    with pytest.raises(ValueError, match="edges"):
        frames.dag_crossings(pos, [("a",)])


def test_dag_crossings_counts_crossing_links_not_shared_ends():
    pos = {"a": (0, 0), "b": (0, 1), "c": (1, 0), "d": (1, 1)}
    assert frames.dag_crossings(pos, [("a", "d"), ("b", "c")]) == 1
    assert frames.dag_crossings(pos, [("a", "c"), ("b", "d")]) == 0         # parallel
    assert frames.dag_crossings(pos, [("a", "d"), ("a", "c")]) == 0         # meet at a shared end


def test_greedy_colouring_is_proper_and_local_frame_refuses_too_few_dimensions():
    groups = ring_groups(10, 4) + [(0, 5)]
    A = frames.cooccurrence(groups, 10)
    colour = frames.greedy_colouring(A)
    assert not any(colour[i] == colour[j] for i, j in zip(*np.nonzero(A)))
    with pytest.raises(ValueError, match="colours"):
        frames.local_orthogonal_frame(groups, 10, 3)
    with pytest.raises(ValueError, match="groups"):
        frames.local_coherence(np.eye(3), [(0, 3)])


# -- hardening -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("r,d", [(math.inf, 2), (2, math.inf), (math.nan, 2), (2.5, 2), ("3", 2)])
def test_welch_bound_refuses_non_integers_with_value_error(r, d):
    """welch_bound(inf, 2) used to raise OverflowError."""
    with pytest.raises(ValueError, match="must be an integer >= 1"):
        frames.welch_bound(r, d)


def test_coherence_of_complex_vectors_uses_the_hermitian_product():
    """Used to drop the imaginary parts (with a ComplexWarning) and return 1.0."""
    F = np.array([[1, 0], [1, 1j]])
    assert frames.mutual_coherence(F) == pytest.approx(1 / math.sqrt(2))
    assert frames.mutual_coherence(np.array([[1, 1j], [1, -1j]])) == pytest.approx(0.0, abs=1e-12)   # orthogonal in C^2
    with pytest.raises(ValueError, match="complex"):
        frames.normalise_rows(F)                                   # the real-frame tools refuse complex input


def test_coherence_of_huge_or_tiny_rows_is_read_not_overflowed():
    # a row norm of 1e300 * sqrt(2) overflows to inf unless the rows are scaled first (then 0.0 came back)
    assert frames.mutual_coherence([[1e300, 1e300], [0.0, 1.0]]) == pytest.approx(2 ** -0.5)
    assert frames.mutual_coherence([[1e-320, 0.0], [1.0, 1.0]]) == pytest.approx(2 ** -0.5)
