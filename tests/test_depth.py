import math

import numpy as np
import pytest
import torch

from compbook.cppn import depth, picbreeder
from compbook.cppn.depth import (DEFAULT_LINE, DepthSweep, depth_sweep, fit_depth_line, mixed_layout, png_bytes,
                            png_compression_ratio, predict_depth, resize)


def smooth_image(res=64):
    t = np.linspace(0, 1, res)
    y, x = np.meshgrid(t, t, indexing="ij")
    return np.stack([x, y, 0.5 * (x + y)], -1)


def test_constant_image_compresses_far_better_than_noise():
    const = np.full((64, 64, 3), 0.4)
    noise = np.random.default_rng(0).random((64, 64, 3))
    assert png_compression_ratio(const) > 50 * png_compression_ratio(noise)
    assert png_compression_ratio(noise) < 1.05          # PNG cannot compress uniform noise


def test_ratio_falls_as_noise_is_added():
    rng = np.random.default_rng(1)
    base, eps = smooth_image(), rng.standard_normal((64, 64, 3))
    ratios = [png_compression_ratio(np.clip(base + a * eps, 0, 1)) for a in (0.0, 0.01, 0.03, 0.1, 0.3)]
    assert all(r1 > r2 for r1, r2 in zip(ratios, ratios[1:])), ratios


def test_ratio_definition_and_level():
    img = smooth_image(32)
    assert png_compression_ratio(img) == pytest.approx(32 * 32 * 3 / png_bytes(img))
    assert png_bytes(img, level=0) > png_bytes(img, level=9)          # level 0 stores, 9 compresses
    with pytest.raises(ValueError, match="level"):
        png_bytes(img, level=10)


@pytest.mark.parametrize("bad", [np.zeros((8, 8)), np.zeros((8, 8, 4)), np.zeros((8, 8, 3), dtype=np.uint8),
                                 np.full((8, 8, 3), np.nan), np.full((8, 8, 3), 1.5), -np.ones((8, 8, 3))])
def test_ratio_validates_input(bad):
    with pytest.raises(ValueError, match="image"):
        png_compression_ratio(bad)


def test_ratio_accepts_torch_and_non_square():
    img = smooth_image(16)[:, :12]
    assert png_compression_ratio(torch.tensor(img)) == png_compression_ratio(img)   # same bytes from torch
    assert resize(img, 20).shape == (20, 20, 3)


def test_fit_recovers_a_known_line():
    r = np.array([2.0, 3.0, 4.5, 6.0])
    line = fit_depth_line(r, -4.0 * r + 30.0)
    assert line.slope == pytest.approx(-4.0) and line.intercept == pytest.approx(30.0)
    assert np.allclose(line.residuals, 0, atol=1e-9)
    noisy = -4.0 * r + 30.0 + np.array([0.5, -0.5, -0.5, 0.5])
    line = fit_depth_line(r, noisy)
    assert abs(line.slope + 4.0) < 0.5
    assert sum(line.residuals) == pytest.approx(0, abs=1e-9)     # least squares with an intercept
    np.testing.assert_allclose(np.asarray(line.depths) - line(r), line.residuals, atol=1e-12)


@pytest.mark.parametrize("ratios,depths", [([1.0], [3]), ([2.0, 2.0], [3, 4]), ([1.0, 2.0], [3])])
def test_fit_validates(ratios, depths):
    with pytest.raises(ValueError, match="ratios"):
        fit_depth_line(ratios, depths)


def test_predict_depth_is_the_line_at_the_ratio():
    line = fit_depth_line([2.0, 5.0], [20.0, 8.0], res=64)
    img = np.clip(smooth_image(64) + 0.05 * np.random.default_rng(2).standard_normal((64, 64, 3)), 0, 1)
    raw = predict_depth(img, line, rounded=False)
    assert raw == pytest.approx(line(png_compression_ratio(img)))
    assert predict_depth(img, line) == max(1, round(raw))
    small = smooth_image(40)                                     # resized to the line's 64 px first
    assert predict_depth(small, line, rounded=False) == pytest.approx(line(png_compression_ratio(resize(small, 64))))
    assert predict_depth(np.full((64, 64, 3), 0.5), line) == 1    # a very simple image: clipped at depth 1


def test_default_line_is_the_picbreeder_fit(genomes):
    fresh = depth.picbreeder_line(genomes)
    assert fresh.slope == pytest.approx(DEFAULT_LINE.slope, rel=1e-4)
    assert fresh.intercept == pytest.approx(DEFAULT_LINE.intercept, rel=1e-4)
    assert DEFAULT_LINE.slope < 0                                 # simpler (more compressible) -> shallower
    # the targets' own renders are predicted within the fit's residuals
    for name, d in depth.PICBREEDER_DEPTHS.items():
        pred = predict_depth(picbreeder.render(genomes[name], 256), rounded=False)
        assert abs(pred - d) < 6


def test_mixed_layout():
    assert mixed_layout(6) == {"gaussian": 2, "sin": 2, "tanh": 1, "identity": 1}
    assert sum(mixed_layout(13).values()) == 13
    with pytest.raises(ValueError, match="width"):
        mixed_layout(0)


class AcceptAll:
    identity = "accept-all (test)"

    def __call__(self, images, concept, *, reference=None, questions=None):
        return torch.ones(len(images), dtype=torch.bool)


@pytest.fixture(scope="module")
def target():
    return picbreeder.render(picbreeder.load_genome("skull", download=False), 12)


def test_depth_sweep_rows_models_and_scores(target):
    sw = depth_sweep(target, [1, 3], width=4, seeds=(0, 1), steps=15, judge=AcceptAll(), concept="skull",
                     score_kwargs=dict(res=8), progress=False)
    assert [(r["depth"], r["seed"]) for r in sw.rows] == [(1, 0), (1, 1), (3, 0), (3, 1)]
    assert sw.depths == [1, 3] and sw.column("loss").shape == (2, 2)
    for r in sw.rows:
        m = sw.models[(r["depth"], r["seed"])]
        assert m.depth == r["depth"] and m.widths == [4] * r["depth"]
        assert r["score"] == 1.0 and r["n_weights"] == m.n_weights()
        assert r["loss"] == pytest.approx(
            float(((m.render(12).detach() - torch.as_tensor(target).float()) ** 2).mean()), rel=1e-5)
    assert sw.peak() in (1, 3) and sw.best(3)[0] in (0, 1)
    with pytest.raises(ValueError, match="depth"):
        sw.best(2)


def test_depth_sweep_seeds_differ_and_no_judge_gives_nan(target):
    sw = depth_sweep(target, [2], width=4, seeds=(0, 1), steps=5, progress=False)
    assert all(math.isnan(r["score"]) for r in sw.rows)
    a, b = sw.models[(2, 0)], sw.models[(2, 1)]
    assert not torch.equal(a.weights[0], b.weights[0])


def test_depth_sweep_with_sp_prunes(target):
    # threshold 0 on |cos|: every pair of alive neurons is "redundant", so SP must remove neurons
    sw = depth_sweep(target, [2], width=4, seeds=(0,), steps=5, sp=dict(threshold=0.0, rounds=1, retrain_steps=3),
                     progress=False)
    m = sw.models[(2, 0)]
    assert m.n_weights() < sum(o * i for o, i in m.shapes)
    assert all(torch.all(w[mask == 0] == 0) for w, mask in zip(m.weights, m.masks))


@pytest.mark.parametrize("kw,match", [(dict(depths=[]), "depths"), (dict(depths=[0]), "depths"),
                                      (dict(depths=[2, 2]), "depths"), (dict(seeds=()), "seeds"),
                                      (dict(judge=AcceptAll()), "concept")])
def test_depth_sweep_validates(target, kw, match):
    args = dict(depths=[1], seeds=(0,), steps=1, progress=False) | kw
    with pytest.raises(ValueError, match=match):
        depth_sweep(target, **args)


def test_peak_breaks_ties_by_loss():
    rows = [dict(depth=d, seed=0, loss=l, score=s, n_weights=1) for d, l, s in
            [(2, 0.3, 0.5), (4, 0.1, 0.5), (6, 0.2, 0.4)]]
    assert DepthSweep(rows, {}).peak() == 4
    rows[2]["score"] = 0.9
    assert DepthSweep(rows, {}).peak() == 6


def test_peak_frequencies():
    rows = [dict(depth=d, seed=k, loss=0.1, score=s, n_weights=1)
            for d, scores in [(2, (0.1, 0.2, 0.15)), (4, (0.9, 0.8, 0.85)), (8, (0.5, 0.6, 0.4))]
            for k, s in enumerate(scores)]
    freq = DepthSweep(rows, {}).peak_frequencies(n_boot=500)
    assert freq == {2: 0.0, 4: 1.0, 8: 0.0}                      # depth 4 beats every resample of the others
    rows[4]["score"] = 0.3                                         # depth 4: (0.9, 0.3, 0.85): now uncertain
    freq = DepthSweep(rows, {}).peak_frequencies(n_boot=2000)
    assert sum(freq.values()) == pytest.approx(1.0)
    assert 0.5 < freq[4] < 1.0 and freq[8] > 0.0


# -- outside the fitted range -------------------------------------------------------------------------------------
def test_predict_depth_warns_or_refuses_outside_the_fitted_range(genomes):
    """A constant image (ratio ~350) used to read as depth -6251, or 1 when rounded, without a word."""
    import warnings
    from compbook.cppn import depth
    flat = np.full((256, 256, 3), 0.5)
    with pytest.warns(depth.DepthRangeWarning, match=r"outside the range \[4.13, 5.24\].* reads -\d+"):
        assert predict_depth(flat) == 1
    with pytest.raises(ValueError, match=r"outside the range \[4.13, 5.24\]"):
        predict_depth(flat, extrapolate=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")                 # inside the range, or opted in: silent
        assert predict_depth(flat, rounded=False, extrapolate=True) < -1000
        predict_depth(picbreeder.render(genomes["skull"], 256), extrapolate=False)
