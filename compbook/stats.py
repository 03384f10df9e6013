"""Intervals and their formatting, one set for the whole book (every part reports its numbers with these).

* :func:`wilson`: a binomial proportion (a judge's score over perturbations, an identification rate);
* :func:`pooled_draws` / :func:`pooled_ci`: a score pooled over several networks, resampling networks, then
  verdicts within each (Part A's panel and claims);
* :func:`mean_ci`: a percentile bootstrap of a mean (e.g. one final loss per seed);
* :func:`t_interval`: mean and Student-t half-width over seeds (Part C's runs), :func:`paired_t` of a
  difference paired by seed;
* :func:`fmt` / :func:`fmt_pm`: ``0.83 [0.77, 0.88]`` and ``0.512 ± 0.010``, the two ways the book prints them;
* :func:`verdict`: the book's rule for a claim (reproduced / not reproduced / inconclusive) from two intervals,
  or from one interval of a difference against 0 (:func:`difference_row`); Parts A and C's claims tables.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from . import checks


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval (95% by default) of a binomial proportion ``k / n``; ``(nan, nan)`` for ``n = 0``."""
    k, n = checks.integer(k, "k", 0), checks.integer(n, "n", 0)
    z = checks.real(z, "z", 0, low_open=True)
    if k > n:
        raise ValueError(f"k must be at most n, got k = {k} > n = {n}")
    if n == 0:
        return float("nan"), float("nan")
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return c - h, c + h


def pooled_draws(p: np.ndarray, n: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """``(n_boot,)`` bootstrap draws of a pooled proportion over networks with per-network rates ``p`` ``(G,)``
    and counts ``n`` ``(G,)``: each draw resamples the networks with replacement, then the verdicts of each drawn
    network (a binomial with its own rate)."""
    p, n = _rates_and_counts(p, n)
    n_boot = checks.integer(n_boot, "n_boot")
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng must be a numpy Generator (np.random.default_rng(seed)), got {type(rng).__name__}")
    checks.allocation((n_boot, len(p)), f"pooled_draws: n_boot={n_boot} draws of {len(p)} networks", 8 * 5)
    pick = rng.integers(0, len(p), size=(n_boot, len(p)))
    return rng.binomial(n[pick], p[pick]).sum(1) / n[pick].sum(1)


def _rates_and_counts(p, n) -> tuple[np.ndarray, np.ndarray]:
    """Per-network rates ``p`` in [0, 1] and whole counts ``n`` >= 1, one of each per network."""
    p = checks.reals(p, "p (per-network rates)", ndim=1)
    checks.value_range(p, "p (per-network rates)", 0, 1)
    n = checks.integers(n, "n (per-network counts)", 1, ndim=1)
    if len(p) < 1 or len(p) != len(n):
        raise ValueError(f"p and n must hold one rate and one count per network (at least one), got {len(p)} "
                         f"rates and {len(n)} counts")
    return p, n


def pooled_ci(p, n, n_boot: int = 2000, seed: int = 0, level: float = 0.95) -> tuple[float, float]:
    """Percentile interval of :func:`pooled_draws` at ``level``."""
    n_boot = checks.integer(n_boot, "n_boot")
    level = checks.real(level, "level", 0, 1, low_open=True, high_open=True)
    seed = checks.seed(seed)
    draws = pooled_draws(p, n, n_boot, np.random.default_rng(seed))
    a = (1 - level) / 2
    return float(np.quantile(draws, a)), float(np.quantile(draws, 1 - a))


def mean_ci(values: Sequence[float], n_boot: int = 2000, seed: int = 0) -> dict:
    """``{"score": mean, "ci95"}`` of ``values`` (e.g. one final loss per seed): a percentile bootstrap."""
    v = checks.reals(values, "values")
    if v.ndim != 1 or len(v) < 2:
        raise ValueError(f"values must be at least two finite numbers, got {values!r:.80}")
    n_boot, seed = checks.integer(n_boot, "n_boot"), checks.seed(seed)
    checks.allocation((n_boot, len(v)), f"mean_ci: n_boot={n_boot} draws of {len(v)} values", 8 * 3)
    means = v[np.random.default_rng(seed).integers(0, len(v), (n_boot, len(v)))].mean(1)
    return {"score": float(v.mean()), "ci95": [float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975))]}


def t_interval(values, level: float = 0.95) -> tuple[float, float]:
    """``(mean, half-width)`` of the Student-t interval of ``values`` ``(n,)``; the half-width is NaN for n < 2."""
    v = checks.reals(values, "values")
    level = checks.real(level, "level", 0, 1, low_open=True, high_open=True)
    if v.ndim != 1 or len(v) == 0:
        raise ValueError(f"values must be a non-empty 1-D sequence, got shape {v.shape}")
    from scipy import stats as st
    if len(v) < 2:
        return float(v.mean()), float("nan")
    return float(v.mean()), float(st.t.ppf(0.5 + level / 2, len(v) - 1) * v.std(ddof=1) / np.sqrt(len(v)))


def paired_t(a, b, level: float = 0.95) -> tuple[float, float]:
    """:func:`t_interval` of ``b - a`` (two arrays paired element by element)."""
    a, b = checks.reals(a, "values a"), checks.reals(b, "values b")
    if a.shape != b.shape:
        raise ValueError(f"a and b must be paired (same shape), got {a.shape} and {b.shape}")
    return t_interval(b - a, level)


SIGNIFICANT = 4     # a printed number shows at most this many significant digits (the page rules)


def _decimals(digits: int, *values: float) -> int:
    """``digits`` decimals, fewer where the largest of ``values`` would then show more than :data:`SIGNIFICANT`
    significant digits (``12.507`` at 3 decimals -> 2)."""
    largest = max((abs(float(v)) for v in values if np.isfinite(v)), default=0.0)
    whole = int(math.floor(math.log10(largest))) + 1 if largest >= 1 else 0     # 0.0298: no whole digits
    d = min(digits, max(0, SIGNIFICANT - whole))
    carries = d == SIGNIFICANT - whole and round(largest, d) >= 10 ** whole    # 0.99996 -> 1.000, not 1.0000
    return d - 1 if d > 0 and carries else d


def fmt(row, digits: int = 2) -> str:
    """``0.83 [0.77, 0.88]`` of a row ``{"score", "ci95"}`` (a number alone when there is no interval);
    ``digits`` decimals, fewer where a number would show more than :data:`SIGNIFICANT` significant digits."""
    digits = checks.integer(digits, "digits", 0, 20)
    if isinstance(row, (int, float, np.integer, np.floating)) and not isinstance(row, bool):
        return f"{row:.{_decimals(digits, row)}f}"
    s, lo, hi = interval_of(row, "row")
    d = _decimals(digits, s, lo, hi)
    return f"{s:.{d}f} [{lo:.{d}f}, {hi:.{d}f}]"


def fmt_pm(mean: float, half: float, digits: int = 3, signed: bool = False) -> str:
    """``0.512 ± 0.010`` (``signed``: ``+0.512 ± 0.010``); the mean alone, ``0.512 (n=1)``, when ``half`` is NaN
    (:func:`t_interval` of one value has no width). ``digits`` decimals, fewer where a number would show more
    than :data:`SIGNIFICANT` significant digits (``32.00 ± 0.00``)."""
    mean, digits = checks.real(mean, "mean"), checks.integer(digits, "digits", 0, 20)
    sign = "+" if signed else ""
    if isinstance(half, (float, np.floating)) and np.isnan(half):
        return f"{mean:{sign}.{_decimals(digits, mean)}f} (n=1)"
    half = checks.real(half, "half", 0)
    d = _decimals(digits, mean, half)
    return f"{mean:{sign}.{d}f} ± {half:.{d}f}"


REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE = "reproduced", "not reproduced", "inconclusive"
RULES = ("separated", "point")
DIRECTIONS = ("greater", "less")


def interval_of(x, name: str) -> tuple[float, float, float]:
    """``(score, lo, hi)`` of a row ``{"score", "ci95"}`` or of a plain number (an exact value)."""
    if isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, (bool, np.bool_)):
        x = checks.real(x, name)
        return x, x, x
    if not isinstance(x, dict) or "score" not in x or "ci95" not in x:
        raise ValueError(f"{name} must be a number or a row with 'score' and 'ci95', got {x!r:.100}")
    ci = x["ci95"]
    if isinstance(ci, (str, bytes, dict)) or not isinstance(ci, (Sequence, np.ndarray)) or len(ci) != 2:
        raise ValueError(f"{name}: ci95 must be two numbers [lo, hi], got {ci!r:.80}")
    s = checks.real(x["score"], f"{name}: score")
    lo, hi = (checks.real(v, f"{name}: ci95") for v in ci)
    if not all(math.isfinite(v) for v in (s, lo, hi)) or not lo - 1e-9 <= s <= hi + 1e-9:   # rounding
        raise ValueError(f"{name}: need finite lo <= score <= hi, got score {s} and ci95 [{lo}, {hi}]")
    return s, lo, hi


def verdict(a, b, paper: str = "greater", rule: str = "separated") -> str:
    """Does ``a`` relate to ``b`` as the paper says (``paper="greater"``: a > b; ``"less"``: a < b)?

    ``a`` and ``b`` are rows ``{"score", "ci95": [lo, hi]}`` or numbers. ``rule="separated"`` (the book's):
    reproduced when the paper's direction holds and the two 95% intervals do not overlap, not reproduced when the
    opposite holds with non-overlapping intervals, inconclusive when they overlap. ``"point"``: the point
    estimates only. Equal point estimates are inconclusive under either rule. A paired difference is read
    against 0: ``verdict(difference_row(mean, half), 0, paper)``.
    """
    paper = checks.choice(paper, "paper", DIRECTIONS)
    rule = checks.choice(rule, "rule", RULES)
    (sa, la, ha), (sb, lb, hb) = interval_of(a, "a"), interval_of(b, "b")
    if paper == "less":
        (sa, la, ha), (sb, lb, hb) = (-sa, -ha, -la), (-sb, -hb, -lb)
    if rule == "point":
        return REPRODUCED if sa > sb else NOT_REPRODUCED if sa < sb else INCONCLUSIVE
    if la > hb:
        return REPRODUCED
    if lb > ha:
        return NOT_REPRODUCED
    return INCONCLUSIVE


def difference_row(mean: float, half: float) -> dict:
    """``{"score": mean, "ci95": [mean - half, mean + half]}`` of a difference and its 95% half-width
    (e.g. :func:`paired_t`), for :func:`verdict` against 0; ValueError for a NaN or negative half-width."""
    mean = checks.real(mean, "mean")
    if not (isinstance(half, (int, float, np.floating)) and math.isfinite(half) and half >= 0):
        raise ValueError(f"half must be a finite half-width >= 0, got {half!r}")
    return {"score": float(mean), "ci95": [float(mean - half), float(mean + half)]}


def reread(mean: float, half: float, paper_sign: int, paper_size: float) -> str:
    """Our rule for a paired difference against a paper's effect of sign ``paper_sign`` and size ``paper_size``:
    the book's rule (:func:`compbook.stats.verdict` of the difference's interval against 0, as Part A's claims
    read theirs), refined by the paper's size:

    * **reproduced**: the 95% interval excludes 0 on the paper's side (and reaches half the paper's size);
    * **direction only**: it excludes 0 on the paper's side but also half the paper's size (a smaller effect);
    * **not reproduced**: it excludes 0 on the other side, or it holds 0 and excludes half the paper's size;
    * **inconclusive**: otherwise (the interval holds 0 and half the paper's effect).
    """
    if paper_sign not in (-1, 1):
        raise ValueError(f"paper_sign={paper_sign!r}: expected -1 or +1")
    checks.real(mean, "mean")
    checks.real(paper_size, "paper_size")
    half = float(checks.reals(half, "half", 0, finite=False))          # NaN or inf: one seed, no interval
    if half < 0:
        raise ValueError(f"half must be a half-width >= 0 (NaN or inf for one seed), got {half!r}")
    if not np.isfinite(half):
        return "inconclusive (one seed)"
    base = verdict(difference_row(mean, half), 0, "greater" if paper_sign > 0 else "less")
    hi = paper_sign * mean + half                                     # on the paper's side: positive is its way
    if base == REPRODUCED:
        return "reproduced" if hi >= abs(paper_size) / 2 else "direction only (under half the paper's effect)"
    if base == NOT_REPRODUCED:
        return "not reproduced (opposite direction)"
    if hi < abs(paper_size) / 2:
        return "not reproduced (half the paper's effect excluded)"
    return "inconclusive"
