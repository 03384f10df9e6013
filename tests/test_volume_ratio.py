"""compbook.cppn.volume_ratio: the volume-ratio model rho(W, L) (chapter 3), against enumeration and sampling."""

import itertools
import math

import numpy as np
import pytest

from compbook.cppn import volume_ratio
from compbook.cppn.picbreeder import load_genome


# -- the volume ratio rho(W, L) ------------------------------------------------------------------------------------
def dag(*masks):
    return volume_ratio.LayeredDAG(tuple(np.array(m, dtype=bool) for m in masks))


TINY = {                                             # n_in = 2 inputs, N <= 18 possible edges in every case below
    "one unit": dag([[1, 1]], [[1]]),
    "two units": dag([[1, 0], [1, 1]], [[1, 1]]),
    "chain": dag([[1, 0]], [[1]], [[1]]),
    "fan-in": dag([[1, 0], [0, 1]], [[1, 1]], [[1]]),
}
CASES = [(name, W, L) for name in TINY for W, L in itertools.product((1, 2, 3), (1, 2, 3))
         if sum(a * b for a, b in volume_ratio.network_shapes(TINY[name], W, L)) <= 18]


@pytest.mark.parametrize("name,W,L", CASES)
def test_rho_enumeration_equals_closed_form(name, W, L):
    target = TINY[name]
    for p in (0.5, 0.3):
        assert volume_ratio.rho_exact(target, W, L, p) == pytest.approx(volume_ratio.rho(target, W, L, p),
                                                                        rel=1e-10, abs=1e-300)


@pytest.mark.parametrize("name,W,L", [("one unit", 2, 2), ("two units", 2, 1), ("fan-in", 2, 2), ("chain", 3, 2)])
def test_rho_monte_carlo_agrees_with_enumeration_within_three_standard_errors(name, W, L):
    target, n = TINY[name], 50_000
    exact = volume_ratio.rho_exact(target, W, L)
    est, se = volume_ratio.rho_monte_carlo(target, W, L, n=n, seed=7)
    assert exact > 20 / n, "case too rare for plain Monte Carlo"
    assert abs(est - exact) <= 3 * math.sqrt(exact * (1 - exact) / n)
    assert se == pytest.approx(math.sqrt(exact * (1 - exact) / n), rel=0.2)


def genome_targets():
    return {name: volume_ratio.dag_from_genome(load_genome(name)) for name in ("skull", "butterfly", "apple")}


def test_genome_targets_have_the_layerized_shape():
    t = genome_targets()
    assert (t["skull"].depth, t["skull"].width, t["skull"].n_in, t["skull"].n_out) == (11, 16, 4, 1)
    assert (t["butterfly"].depth, t["apple"].depth) == (16, 33)


@pytest.mark.parametrize("name", ["skull", "butterfly", "apple", "fan-in", "two units"])
def test_rho_peaks_at_w_min_l_star_and_vanishes_below(name):
    target = {**genome_targets(), **TINY}[name]
    Ws = range(1, target.width + 6)
    Ls = range(1, target.depth + 6)
    grid = np.array([[volume_ratio.log_rho(target, W, L) for L in Ls] for W in Ws])
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
        steps = np.diff([volume_ratio.log_rho(target, W, L, p) for W in range(W0, W0 + 6)])
        # constant: exponential in W
        assert np.allclose(-steps, volume_ratio.width_decay_rate(target, L, p), rtol=1e-10)
    for W in (W0, W0 + 4):
        steps = np.diff([volume_ratio.log_rho(target, W, L, p) for L in range(L0, L0 + 6)])
        # constant: exponential in L
        assert np.allclose(-steps, volume_ratio.depth_decay_rate(target, W, p), rtol=1e-10)
    assert volume_ratio.width_decay_rate(target, L0, p) > 0 and volume_ratio.depth_decay_rate(target, W0, p) > 0


@pytest.mark.parametrize("name", ["skull", "butterfly", "apple"])
def test_peak_survives_counting_every_relabelling(name):
    target = genome_targets()[name]
    grid = {(W, L): volume_ratio.log_rho(target, W, L) + volume_ratio.log_relabelling_bound(target, W, L)
            for W in range(target.width, target.width + 8) for L in range(target.depth, target.depth + 8)}
    assert max(grid, key=grid.get) == (target.width, target.depth)
    assert volume_ratio.log_relabelling_bound(target, target.width - 1, target.depth) == 0.0
    # a tiny case by hand: widths (1,) in W = 3, L = 2 slots: 3 choices per layer
    assert volume_ratio.log_relabelling_bound(TINY["one unit"], 3, 2) == pytest.approx(2 * math.log(3))


def test_enumerated_decay_ratios_match_the_derived_rates():
    """Independent of the closed form: ratios of brute-force rho equal exp(-rate)."""
    target = TINY["one unit"]
    assert volume_ratio.rho_exact(target, 3, 1) / volume_ratio.rho_exact(target, 2, 1) == pytest.approx(
        math.exp(-volume_ratio.width_decay_rate(target, 1)))
    assert volume_ratio.rho_exact(target, 2, 3) / volume_ratio.rho_exact(target, 2, 2) == pytest.approx(
        math.exp(-volume_ratio.depth_decay_rate(target, 2)))
    target = TINY["fan-in"]
    assert volume_ratio.rho_exact(target, 2, 3, 0.3) / volume_ratio.rho_exact(target, 2, 2, 0.3) == pytest.approx(
        math.exp(-volume_ratio.depth_decay_rate(target, 2, 0.3)))


def test_basin_definition_on_hand_made_masks():
    target, W, L = TINY["fan-in"], 3, 3
    e = [m[None].copy() for m in volume_ratio.embed(target, W, L)]
    assert volume_ratio.in_basin(e, target, W, L).all()
    extra_into_dead = [m.copy() for m in e]
    extra_into_dead[1][0, 2, :] = True                      # unit 2 of layer 2 is a surplus unit nobody reads
    assert volume_ratio.in_basin(extra_into_dead, target, W, L).all()
    read_surplus = [m.copy() for m in extra_into_dead]
    read_surplus[2][0, 0, 2] = True                          # now the copy layer reads it: factorisation broken
    assert not volume_ratio.in_basin(read_surplus, target, W, L).any()
    missing = [m.copy() for m in e]
    missing[0][0, 0, 0] = False
    assert not volume_ratio.in_basin(missing, target, W, L).any()


@pytest.mark.parametrize("call", [
    lambda: volume_ratio.LayeredDAG((np.ones((2, 2)),)),                                 # no output layer
    lambda: volume_ratio.LayeredDAG((np.ones((2, 2)), np.ones((1, 3)))),                 # shape mismatch
    lambda: volume_ratio.LayeredDAG((np.ones((2, 2)), np.array([[1, 0]]))),              # hidden unit 1 is dead
    lambda: volume_ratio.log_rho(TINY["chain"], 0, 2), lambda: volume_ratio.log_rho(TINY["chain"], 2, 1.5),
    lambda: volume_ratio.log_rho(TINY["chain"], 2, 2, p=1.0),
    lambda: volume_ratio.rho_monte_carlo(TINY["chain"], 2, 2, n=0),
    lambda: volume_ratio.rho_exact(TINY["chain"], 4, 3), lambda: volume_ratio.embed(TINY["fan-in"], 1, 2),
    lambda: volume_ratio.in_basin([np.ones((1, 2, 2))], TINY["chain"], 2, 2),
])
def test_bad_rho_inputs_raise_value_error(call):
    with pytest.raises(ValueError):
        call()


def test_trimmed_drops_dead_units():
    t = volume_ratio.LayeredDAG.trimmed((np.ones((2, 2)), np.array([[1, 0]])))
    assert t.widths == [1] and t.n_edges == 3
