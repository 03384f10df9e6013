"""compbook.stats: the book's one set of intervals, against naive references."""

import math

import numpy as np
import pytest

from compbook import stats


def test_wilson_matches_the_closed_form_and_contains_the_proportion():
    for k, n in [(0, 5), (3, 10), (7, 10), (10, 10), (150, 400)]:
        lo, hi = stats.wilson(k, n)
        p, z = k / n, 1.96
        centre = (p + z * z / (2 * n)) / (1 + z * z / n)
        half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
        assert (lo, hi) == pytest.approx((centre - half, centre + half))
        assert -1e-12 <= lo <= p <= hi <= 1 + 1e-12
    assert all(math.isnan(v) for v in stats.wilson(0, 0))


def test_wilson_covers_about_95_percent():
    """A coverage check by simulation: the likely bug is a wrong z or a Wald interval (which undercovers)."""
    rng = np.random.default_rng(0)
    n, p = 30, 0.2
    hits = [lo <= p <= hi for lo, hi in (stats.wilson(int(k), n) for k in rng.binomial(n, p, 4000))]
    assert 0.93 <= np.mean(hits) <= 0.98


def test_pooled_ci_is_seeded_and_widens_with_disagreeing_networks():
    same = stats.pooled_ci([0.5, 0.5, 0.5], [100, 100, 100], seed=1)
    apart = stats.pooled_ci([0.1, 0.5, 0.9], [100, 100, 100], seed=1)
    assert same == stats.pooled_ci([0.5, 0.5, 0.5], [100, 100, 100], seed=1)
    assert apart[1] - apart[0] > 2 * (same[1] - same[0])
    draws = stats.pooled_draws(np.array([0.2, 0.6]), np.array([50, 150]), 20000, np.random.default_rng(0))
    # naive reference: the two networks drawn uniformly with replacement (AA, AB, BA, BB), pooled by counts
    pairs = [(0.2, 50, 0.2, 50), (0.2, 50, 0.6, 150), (0.6, 150, 0.2, 50), (0.6, 150, 0.6, 150)]
    expected = np.mean([(pa * na + pb * nb) / (na + nb) for pa, na, pb, nb in pairs])
    assert draws.mean() == pytest.approx(expected, abs=0.005)


def test_t_interval_against_the_textbook_formula():
    v = np.array([0.50, 0.52, 0.49, 0.55])
    mean, half = stats.t_interval(v)
    assert mean == pytest.approx(v.mean())
    assert half == pytest.approx(3.182446 * v.std(ddof=1) / 2, rel=1e-5)    # t(0.975, 3) = 3.1824
    assert math.isnan(stats.t_interval([1.0])[1])
    assert stats.paired_t([1, 2, 3], [2, 3, 5])[0] == pytest.approx(4 / 3)


def test_mean_ci_and_formatting():
    row = stats.mean_ci([1.0, 2.0, 3.0, 4.0])
    assert row["ci95"][0] <= row["score"] == 2.5 <= row["ci95"][1]
    assert stats.fmt({"score": 0.834, "ci95": [0.771, 0.882]}) == "0.83 [0.77, 0.88]"
    assert stats.fmt(0.5) == "0.50" and stats.fmt_pm(0.5123, 0.0101) == "0.512 ± 0.010"


@pytest.mark.parametrize("call, what", [
    (lambda: stats.wilson(5, 3), "k must be at most n"),
    (lambda: stats.wilson(-1, 3), "k must be"),
    (lambda: stats.wilson(1.5, 3), "k must be"),
    (lambda: stats.pooled_ci([0.5], [3], n_boot=0), "n_boot"),
    (lambda: stats.mean_ci([1.0]), "values"),
    (lambda: stats.t_interval([]), "values"),
    (lambda: stats.paired_t([1, 2], [1, 2, 3]), "paired"),
])
def test_bad_input_names_the_argument(call, what):
    with pytest.raises(ValueError, match=what):
        call()


def _naive_verdict(lo_a, hi_a, lo_b, hi_b, greater):
    """The separated rule written out: the paper's side wins when the intervals are disjoint."""
    if not greater:
        lo_a, hi_a, lo_b, hi_b = -hi_a, -lo_a, -hi_b, -lo_b
    return "reproduced" if lo_a > hi_b else "not reproduced" if lo_b > hi_a else "inconclusive"


def test_verdict_of_a_difference_against_zero_matches_a_naive_reading():
    rng = np.random.default_rng(0)
    for _ in range(300):
        mean, half = rng.normal(), abs(rng.normal()) * rng.integers(0, 2)
        greater = bool(rng.integers(0, 2))
        got = stats.verdict(stats.difference_row(mean, half), 0, "greater" if greater else "less")
        assert got == _naive_verdict(mean - half, mean + half, 0, 0, greater)


def test_parts_share_one_verdict_rule():
    from compbook.cppn.audit import claims
    from compbook.sae.studies import claims as sae_claims
    assert claims.verdict is stats.verdict and claims.REPRODUCED == stats.REPRODUCED
    assert sae_claims.verdict is stats.verdict


@pytest.mark.parametrize("half", [float("nan"), -0.1, float("inf"), "0.1"])
def test_difference_row_refuses_a_bad_half_width(half):
    with pytest.raises(ValueError, match="half"):
        stats.difference_row(0.2, half)
