"""Part A's exercise checks: each accepts a right answer written from scratch and names at least two planted
mistakes (the wrong answers are written here independently of the checks' own)."""

import math
import sys
import time

import numpy as np
import pytest
import torch

from compbook.cppn import depth, emc2, exercises as ex, frames, optim, volume_ratio
from compbook.cppn.network import coordinate_grid


def grid(res):
    t = torch.linspace(-1, 1, res)
    y, x = torch.meshgrid(t, t, indexing="ij")
    return torch.stack([x, y, 1.4 * torch.sqrt(x**2 + y**2), torch.ones_like(x)], -1).reshape(-1, 4)


def test_coordinate_grid():
    assert ex.check_coordinate_grid(grid).passed
    r = ex.check_coordinate_grid(lambda res: grid(res) * torch.tensor([1, 1, 1 / 1.4, 1]))
    assert not r.passed and "1.4" in r.message
    r = ex.check_coordinate_grid(lambda res: grid(res) * torch.tensor([1, 1, 1, 0]))
    assert not r.passed and "bias" in r.message


def local(F, groups):
    U = F / np.linalg.norm(F, axis=1, keepdims=True)
    return max(abs(U[i] @ U[j]) for g in groups for i in g for j in g if i != j)


def test_local_coherence():
    assert ex.check_local_coherence(local).passed
    r = ex.check_local_coherence(lambda F, groups: frames.mutual_coherence(F))
    assert not r.passed and "global" in r.message
    r = ex.check_local_coherence(lambda F, groups: 1.0)
    assert not r.passed and "itself" in r.message


def test_volume_ratio():
    from compbook.cppn.audit.tables import tiny_targets
    right = volume_ratio.rho_exact(tiny_targets()["one unit"], 2, 1, 0.5)
    assert ex.check_volume_ratio(right).passed
    r = ex.check_volume_ratio(1 - right)
    assert not r.passed and "1 - rho" in r.message
    r = ex.check_volume_ratio(0.5 ** 3)
    assert not r.passed and "p^3" in r.message


def welch(r, d):
    return math.sqrt((r - d) / (d * (r - 1))) if r > d else 0.0


def test_welch_bound():
    assert ex.check_welch_bound(welch).passed
    r = ex.check_welch_bound(lambda r, d: math.sqrt(max(r - d, 0) / (d * r)))
    assert not r.passed and "off-by-one" in r.message
    r = ex.check_welch_bound(lambda r, d: max(r - d, 0) / (d * (r - 1)))
    assert not r.passed and "square root" in r.message


def test_frame_meets_bound():
    assert ex.check_frame_meets_bound(frames.simplex_etf(3), r=4, d=3).passed
    r = ex.check_frame_meets_bound(np.random.default_rng(0).normal(size=(4, 3)), r=4, d=3)
    assert not r.passed and "above the Welch bound" in r.message
    r = ex.check_frame_meets_bound(np.eye(3), r=4, d=3)
    assert not r.passed and "shape" in r.message


def score(model, judge, concept, delta, res):
    reference = model.render(res)
    weights = emc2.nonzero_weights(model)
    images = torch.stack([emc2.perturbed(model, w, delta).render(res) for w in weights])
    yes = judge(images, concept, reference=reference, questions=[{}] * len(weights))
    return float(yes.float().mean())


def test_emc2_score():
    assert ex.check_emc2_score(score).passed
    r = ex.check_emc2_score(lambda *a: 1 - score(*a))
    assert not r.passed and "'no'" in r.message


def cos(maps):
    u = maps / maps.norm(dim=1, keepdim=True)
    return (u @ u.T).abs()


def test_map_similarity():
    assert ex.check_map_similarity(cos).passed
    r = ex.check_map_similarity(lambda m: cos(m) * torch.sign(m @ m.T))
    assert not r.passed and "absolute value" in r.message
    r = ex.check_map_similarity(lambda m: cos(m - m.mean(1, keepdim=True)))
    assert not r.passed and "centred" in r.message


def test_png_ratio():
    def ratio(im):
        return im.shape[0] * im.shape[1] * 3 / depth.png_bytes(im)
    assert ex.check_png_ratio(ratio).passed
    r = ex.check_png_ratio(lambda im: 1 / ratio(im))
    assert not r.passed and "upside down" in r.message
    r = ex.check_png_ratio(lambda im: ratio(im) / 3)
    assert not r.passed and "channels" in r.message


def ns(G, steps):
    a, b, c = optim.NS_COEFFICIENTS
    X = G.T if G.shape[0] > G.shape[1] else G
    X = X / X.norm()
    for _ in range(steps):
        A = X @ X.T
        X = a * X + (b * A + c * A @ A) @ X
    return X.T if G.shape[0] > G.shape[1] else X


def test_newton_schulz():
    assert ex.check_newton_schulz(ns).passed
    r = ex.check_newton_schulz(lambda G, s: ns(G, s - 1))
    assert not r.passed and "one step short" in r.message


def test_trained_depth():
    def right(im):
        return int(np.clip(round(depth.predict_depth(im, rounded=False, extrapolate=True)), 2, 8))
    assert ex.check_trained_depth(right).passed
    r = ex.check_trained_depth(lambda im: round(depth.predict_depth(im, rounded=False, extrapolate=True)))
    assert not r.passed and "unclipped" in r.message


def test_half_selectivity():
    def right(fmap):
        f = torch.as_tensor(fmap)
        vl, vr = f[:, : f.shape[1] // 2].var(), f[:, f.shape[1] // 2:].var()
        return float((vl - vr).abs() / (vl + vr))
    assert ex.check_half_selectivity(right).passed

    def top_bottom(fmap):
        f = torch.as_tensor(fmap)
        vl, vr = f[: f.shape[0] // 2].var(), f[f.shape[0] // 2:].var()
        return float((vl - vr).abs() / (vl + vr))
    r = ex.check_half_selectivity(top_bottom)
    assert not r.passed and "top and bottom" in r.message
    r = ex.check_half_selectivity(lambda f: float((f[:, :f.shape[1] // 2].var() - f[:, f.shape[1] // 2:].var())
                                                 / (f[:, :f.shape[1] // 2].var() + f[:, f.shape[1] // 2:].var())))
    assert not r.passed and "signed" in r.message
    # the chapter's measure uses the same function
    from compbook.cppn.runs.experiments import half_selectivity
    maps = torch.zeros(2, 8, 8)
    maps[0, :, :4] = torch.randn(8, 4)
    maps[1] = torch.randn(8, 8)
    sel = half_selectivity(maps)
    assert sel[0] == pytest.approx(1.0) and sel[1] < 0.9


@pytest.mark.parametrize("check", [ex.check_coordinate_grid, ex.check_welch_bound, ex.check_png_ratio,
                                   ex.check_newton_schulz, ex.check_emc2_score, ex.check_half_selectivity,
                                   ex.check_deepest_target, ex.check_deepest_picture])
def test_the_placeholder_is_refused_politely(check):
    r = check(...)
    assert not r.passed and "placeholder" in r.message


def test_second_exercises():
    assert ex.check_corner_radius(1.4 * math.sqrt(2)).passed
    assert "1.4" in ex.check_corner_radius(math.sqrt(2)).message
    assert "clipped" in ex.check_corner_radius(1.0).message
    assert ex.check_colours_needed(3).passed
    assert "one direction per primitive" in ex.check_colours_needed(12).message
    assert "alternates" in ex.check_colours_needed(2).message
    assert ex.check_colours_needed(4, r=13).passed      # 13 is not a multiple of 3: one more colour
    assert "multiple of 3" in ex.check_colours_needed(3, r=13).message
    assert ex.check_width_decay(math.log(2)).passed
    assert "bits" in ex.check_width_decay(1.0).message
    assert "not its log" in ex.check_width_decay(0.5).message
    assert ex.check_score_stderr(lambda s, n: math.sqrt(s * (1 - s) / n)).passed
    assert "square root" in ex.check_score_stderr(lambda s, n: s * (1 - s) / n).message
    assert "sqrt(n)" in ex.check_score_stderr(lambda s, n: math.sqrt(s * (1 - s))).message
    assert ex.check_phi_at_one(sum(optim.NS_COEFFICIENTS)).passed
    assert "fixed point" in ex.check_phi_at_one(1.0).message
    assert "linear term" in ex.check_phi_at_one(optim.NS_COEFFICIENTS[0]).message


def test_redundant_pairs():
    def pairs(s, t):
        n = s.shape[0]
        found = [(i, j) for i in range(n) for j in range(i + 1, n) if s[i, j] > t]
        return sorted(found, key=lambda p: -float(s[p]))
    assert ex.check_redundant_pairs(pairs).passed
    def diag(s, t):
        n = s.shape[0]
        return sorted([(i, j) for i in range(n) for j in range(i, n) if s[i, j] > t], key=lambda p: -float(s[p]))
    assert "diagonal" in ex.check_redundant_pairs(diag).message
    def index_order(s, t):
        n = s.shape[0]
        return [(i, j) for i in range(n) for j in range(i + 1, n) if s[i, j] > t]
    assert "index order" in ex.check_redundant_pairs(index_order).message


def test_deepest_target():
    from compbook.cppn.runs.experiments import unknown_targets
    imgs, _ = unknown_targets()
    pred = {n: depth.predict_depth(im, rounded=False, extrapolate=True) for n, im in imgs.items()}
    assert ex.check_deepest_target(max(pred, key=pred.get)).passed
    r = ex.check_deepest_target(min(pred, key=pred.get))
    assert not r.passed and "shallowest" in r.message
    assert "not one of" in ex.check_deepest_target("a zebra").message
    assert not ex.check_deepest_target(...).passed


def never_returns(*args):
    while True:
        pass


@pytest.mark.parametrize("check", [ex.check_welch_bound, ex.check_emc2_score], ids=["welch", "emc2"])
def test_a_function_that_never_returns_is_stopped(check):
    t0 = time.perf_counter()
    r = check(never_returns, seconds=0.3)
    assert time.perf_counter() - t0 < 30, "the check waited on a reader's endless loop"
    assert not r.passed and "still running after 0.3 s" in r.message


def test_a_string_bound_is_refused_by_its_type_not_blamed_on_an_off_by_one():
    r = ex.check_welch_bound(lambda r, d: str(welch(r, d)))
    assert not r.passed and "returned a str, expected a float" in r.message and "off-by-one" not in r.message


def test_a_function_calling_sys_exit_is_reported():
    r = ex.check_welch_bound(lambda r, d: sys.exit(1))
    assert not r.passed and "SystemExit" in r.message
    r = ex.check_emc2_score(lambda *a: exec("raise KeyboardInterrupt"))
    assert not r.passed and "KeyboardInterrupt" in r.message


def test_a_complex_frame_is_refused_not_read_by_its_real_parts():
    F = frames.simplex_etf(3).astype(complex) * 1j      # real parts all 0: coherence 1.0 if the imaginary is dropped
    r = ex.check_frame_meets_bound(F, r=4, d=3)
    assert not r.passed and "complex" in r.message and "coherence" not in r.message, r.message


def test_deepest_picture():
    """Chapter 9's exercise asks about three pictures the chapter does not show; the busiest gets the most layers."""
    pics = ex.skimage_pictures()
    pred = {n: depth.predict_depth(im, rounded=False, extrapolate=True) for n, im in pics.items()}
    ratio = {n: depth.png_compression_ratio(im) for n, im in pics.items()}
    deepest = max(pred, key=pred.get)
    assert deepest == min(ratio, key=ratio.get)          # the line's slope is negative: least compressible, deepest
    assert ex.check_deepest_picture(deepest).passed
    other = min(pred, key=pred.get)
    r = ex.check_deepest_picture(other)
    assert not r.passed and "compresses least" in r.message
    assert "not one of" in ex.check_deepest_picture("astronaut").message
    assert not ex.check_deepest_picture(...).passed
    with pytest.raises(ValueError, match="names"):
        ex.skimage_pictures(("astronaut",))
