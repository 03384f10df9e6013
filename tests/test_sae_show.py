"""compbook.sae.show's page helpers: mean ± half-width cells, the settings table, the reading rule's picture, a
caption's token labels, and legends that sit outside the data."""

import math

import matplotlib
import numpy as np
import pandas as pd
import pytest

from compbook.sae import coherence as co
from compbook.sae import show
from compbook.sae.studies import study as st
from compbook.sae.data import make_scenes
from compbook.sae.s2ae import SAETrainConfig

matplotlib.use("Agg")


def test_pm_keeps_four_significant_digits_and_the_half_widths_precision():
    assert show.pm(31.984, 0.013) == "31.98 ± 0.01"
    assert show.pm(-25.857, 0.88, signed=True) == "-25.86 ± 0.88"
    assert show.pm(0.0244, 0.0031, signed=True) == "+0.024 ± 0.003"
    assert show.pm(32, 0) == "32.00 ± 0.00"
    assert show.pm(0.5, float("nan")) == "0.5 (one seed)"
    with pytest.raises(ValueError, match="half"):
        show.pm(1.0, -0.1)
    df = pd.DataFrame({"method": ["a"] * 3 + ["b"] * 3, "x": [1.0, 1.1, 0.9, 2.0, 2.0, 2.0]})
    got = show.summary(df, ["x"])
    assert got.loc["b", "x"] == "2.000 ± 0.000" and got.loc["a", "seeds"] == 3
    reading = pd.DataFrame({"k": [8], "EV": [-0.0156], "EV ±": [0.0012]})
    assert show.differences(reading).columns.tolist() == ["k", "EV"]
    assert show.differences(reading).EV.iloc[0] == "-0.016 ± 0.001"


def test_top_words_said_counts_each_distinct_word_most_frequent_first():
    assert show.top_words_said(["red", "'a'", "red", "red", "'a'", "cube"]) == "red x3, 'a' x2, cube"
    assert show.top_words_said(["yellow"]) == "yellow"
    assert show.top_words_said([]) == "(none)"
    with pytest.raises(ValueError, match="words"):
        show.top_words_said("red")


def test_label_writes_the_weight_as_the_prose_does():
    assert show.label("S2AE (lambda=0.003)") == "S2AE (λ = 0.003)"
    assert show.label("vanilla") == "vanilla"
    with pytest.raises(ValueError, match="method"):
        show.label(0.003)


def test_config_table_shows_values_not_a_repr():
    cfg = SAETrainConfig(d_sae=64, k=4, steps=10)
    table = show.config_table(cfg, k=(8, 32), lam=(0.0, 0.01))
    values = dict(zip(table.index, table.value))
    assert values["TopK: latents kept per token"] == "8, 32"
    assert values["λ, the weight of the penalties (0: vanilla)"] == "0, 0.01"
    assert values["latents in the dictionary"] == "64" and values["training steps"] == "10"
    assert values["regions per image"] == "min(20, patches)"
    assert not any("SAETrainConfig" in v for v in table.value)
    with pytest.raises(ValueError, match="varied"):
        show.config_table(cfg, seed=(1, 2))
    with pytest.raises(ValueError, match="cfg"):
        show.config_table({"k": 4})


def test_reading_rule_picture_labels_each_case_with_reread():
    cases = [("a", 0.9, 0.3), ("b", 0.25, 0.1), ("c", -0.4, 0.2), ("d", 0.05, 0.2), ("e", 0.3, 0.5)]
    fig = show.plot_reading_rule(cases)
    texts = [t.get_text().replace("\n(", " (") for t in fig.axes[0].texts]
    want = [st.reread(m, h, 1, 1.0) for _, m, h in cases]
    assert texts == want
    assert {w.split()[0] for w in want} == {"reproduced", "direction", "not", "inconclusive"}
    # a drop (the paper's side below 0) reads the mirrored cases the same way
    fig = show.plot_reading_rule([(n, -m, h) for n, m, h in cases], paper_size=1.0, paper_sign=-1)
    assert [t.get_text().replace("\n(", " (") for t in fig.axes[0].texts] == want
    with pytest.raises(ValueError, match="paper_sign"):
        show.plot_reading_rule(cases, paper_sign=0)


def test_caption_labels_are_the_labellings_tokens():
    scenes = make_scenes(4, seed=3)
    labs = co.labellings(scenes)
    table = show.caption_labels(scenes, labs, 1)
    ids = [t for t in scenes.tokens[1].tolist() if t != scenes.vocab.pad_id]
    assert table.index.tolist() == [scenes.vocab.tokens[t] for t in ids]
    names = labs["word"].names
    for r, token in enumerate(table.index):
        if token in names:                        # a colour or shape word carries itself under "word"
            assert token in table["word"].iloc[r].split(", ")
    # next token: row r carries what row r + 1 carries under "word"
    assert table["next token"].iloc[:-1].tolist() == table["word"].iloc[1:].tolist()
    with pytest.raises(ValueError, match="labellings"):
        show.caption_labels(scenes, {}, 0)


def _inside(box, axes_boxes):
    return any(box.overlaps(a) for a in axes_boxes)


@pytest.mark.parametrize("which", ["study", "identification"])
def test_legends_sit_outside_the_panels(which):
    if which == "study":
        rows = [{"k": k, "lambda": lam, "method": "vanilla" if lam == 0 else f"S2AE (lambda={lam:g})", "seed": s,
                 "EV": 0.9 + 0.01 * s, "L0 patches": k - 10 * lam * s, "mIoU": 0.2 + lam}
                for k in (8, 32) for lam in (0.0, 0.01) for s in range(3)]
        fig = show.plot_study(pd.DataFrame(rows), chosen_k=32)
    else:
        ident = pd.DataFrame([{"method": f"{m}, {p}", "seed": s, "identified": 0.5, "identified (objects)": 0.4}
                              for m in ("vanilla", "S2AE (lambda=0.01)") for p in ("hierarchical", "direct")
                              for s in range(3)])
        fig = show.plot_identification(ident, paper={"hierarchical": 0.988, "direct": 0.664})
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    legends = fig.legends + [a.get_legend() for a in fig.axes if a.get_legend()]
    assert legends
    if which == "study":     # the legend writes the weight with the prose's symbol
        assert [t.get_text() for t in legends[0].get_texts()] == ["vanilla", "S2AE (λ = 0.01)"]
    panels = [a.get_window_extent(r) for a in fig.axes]
    for leg in legends:
        assert not _inside(leg.get_window_extent(r), panels)
        for t in leg.get_texts():
            assert t.get_fontsize() >= show.FONT
    for a in fig.axes:
        for t in a.get_xticklabels() + a.get_yticklabels():
            assert t.get_fontsize() >= show.FONT
    assert math.isclose(fig.get_figwidth(), show.WIDTH)
    assert np.isfinite(fig.get_figheight())


def test_crop_window_centres_on_the_region_and_stays_in_the_image():
    rng = np.random.default_rng(0)
    for _ in range(200):
        h, w = rng.integers(8, 40, size=2)
        mask = np.zeros((h, w), bool)
        r0, c0 = rng.integers(0, h), rng.integers(0, w)
        mask[r0:r0 + rng.integers(1, 12), c0:c0 + rng.integers(1, 12)] = True
        side = int(rng.integers(1, 30))
        top, left, size = show.crop_window(mask, side)
        rows, cols = np.nonzero(mask)
        # naive reference: the size, and the window's centre against the box's, one axis at a time
        want = min(max(side, rows.max() - rows.min() + 3, cols.max() - cols.min() + 3), h, w)
        assert size == want
        assert 0 <= top <= h - size and 0 <= left <= w - size          # inside the image
        for start, lo, hi, length in ((top, rows.min(), rows.max(), h), (left, cols.min(), cols.max(), w)):
            if 0 < start < length - size:                               # not clipped: centred to half a pixel
                assert abs((start + size / 2) - (lo + hi + 1) / 2) <= 0.5
            if size >= hi - lo + 3:                                     # the box fits: it is shown whole
                assert start <= lo and hi < start + size
    with pytest.raises(ValueError, match="mask"):
        show.crop_window(np.zeros((4, 4), bool), 2)
    with pytest.raises(ValueError, match="mask"):
        show.crop_window(np.ones((4, 4)), 2)
    with pytest.raises(ValueError, match="side"):
        show.crop_window(np.ones((4, 4), bool), 0)


def test_show_latents_writes_each_drawn_images_note_under_it():
    import torch

    scenes = make_scenes(4, seed=3)
    codes = torch.zeros(4, scenes.grid[0] * scenes.grid[1], 2)
    codes[[1, 3], 0, 0] = 1.0                      # latent 0 fires on images 1 and 3 only
    notes = [[f"image {n}" for n in range(4)]]
    fig = show.show_latents(scenes, codes, [0], images_per_latent=3, notes=notes)
    texts = [t.get_text() for ax in fig.axes for t in ax.texts]
    assert texts == ["image 1", "image 3"]
    with pytest.raises(ValueError, match="notes"):
        show.show_latents(scenes, codes, [0], notes=[["one"]])
    matplotlib.pyplot.close("all")


def test_show_latents_draws_the_images_asked_for_in_their_own_colours():
    import torch

    scenes = make_scenes(4, seed=3)
    codes = torch.zeros(4, scenes.grid[0] * scenes.grid[1], 2)
    codes[[1, 3], 0, 0] = 1.0
    notes = [[f"image {n}" for n in range(4)]]
    fig = show.show_latents(scenes, codes, [0], notes=notes, images=[[3, 1]])
    assert [t.get_text() for ax in fig.axes for t in ax.texts] == ["image 3", "image 1"]
    drawn = [ax.images[0].get_array() for ax in fig.axes if ax.images]
    assert len(drawn) == 2                         # two columns, not images_per_latent's four
    assert np.allclose(drawn[0], scenes.images[3])  # not dimmed: the image as it is
    with pytest.raises(ValueError, match="images"):
        show.show_latents(scenes, codes, [0], images=[[0], [1]])
    with pytest.raises(ValueError, match="images"):
        show.show_latents(scenes, codes, [0], images=[[4]])
    matplotlib.pyplot.close("all")


def test_study_points_of_one_k_stay_apart_with_their_own_markers():
    rows = [{"k": k, "lambda": lam, "method": "", "seed": s, "EV": 0.9, "L0 patches": k, "mIoU": 0.2}
            for k in (8, 64) for lam in (0.0, 0.003, 0.01) for s in range(3)]
    fig = show.plot_study(pd.DataFrame(rows))
    lines = [ln for ln in fig.axes[2].get_lines() if ln.get_linestyle() == "-"]   # a data line per lambda
    assert len({ln.get_marker() for ln in lines}) == 3
    for at in range(2):                   # equal values at one k: the points sit apart on the log axis
        xs = sorted(np.log2(ln.get_xdata()[at]) for ln in lines)
        assert 0.05 <= min(np.diff(xs)) and max(xs) - min(xs) <= 0.15   # apart, yet close to its k


def test_region_pieces_letters_each_piece_of_a_split_region_alike():
    lab = np.array([[0, 0, 1, 2],
                    [1, 1, 1, 2],
                    [3, 3, 1, 0],
                    [3, 3, 2, 2]])      # region 0 in two pieces, region 2 in two, 1 and 3 in one
    marks = show.region_pieces(lab)
    assert sorted(m[0] for m in marks) == ["A", "A", "B", "B"]
    for letter in "AB":
        spots = [rc for m, rc in marks if m == letter]
        assert len({lab[rc] for rc in spots}) == 1          # one region per letter, one spot per piece
    assert {lab[rc] for _, rc in marks} == {0, 2}
    assert show.region_pieces(np.zeros((3, 3), int)) == []
    with pytest.raises(ValueError, match="lab"):
        show.region_pieces(np.zeros(9, int))


def test_show_regions_colours_differ_and_split_regions_are_marked():
    from matplotlib.colors import to_rgb

    rgb = np.array([to_rgb(c) for c in show.REGION_COLOURS])
    assert len(rgb) == 20
    gaps = np.linalg.norm(rgb[:, None] - rgb[None], axis=-1)[np.triu_indices(20, 1)]
    assert gaps.min() > 0.15                        # no two colours alike
    scenes = make_scenes(2, seed=1)
    p = scenes.grid[0] * scenes.grid[1]
    regions = np.tile(np.arange(p) % 2, (2, 1))     # stripes: two regions, each in many pieces
    fig = show.show_regions(scenes, [0], regions)
    texts = {t.get_text() for t in fig.axes[1].texts}
    assert texts == {"A", "B"}
    matplotlib.pyplot.close("all")


def test_show_regions_width_sets_the_figure_width():
    from compbook.book import legibility

    scenes = make_scenes(2, seed=1)
    p = scenes.grid[0] * scenes.grid[1]
    regions = np.tile(np.arange(p) % 4, (2, 1))
    small = show.show_regions(scenes, [1], regions, title="t")
    fig = show.show_regions(scenes, [1], regions, title="t", width=show.WIDTH, row_height=4.05)
    assert fig.get_figwidth() == show.WIDTH != small.get_figwidth()
    assert fig.get_figheight() == pytest.approx(4.05 + 0.35)
    images = [ax for ax in fig.axes if ax.images]
    assert len(images) == 2, "one scene: its image and its regions"
    fig.canvas.draw(), small.canvas.draw()          # each image's box as drawn (equal aspect)
    side = [ax.get_window_extent().width / fig.dpi for ax in images]
    before = [ax.get_window_extent().width / small.dpi for ax in small.axes if ax.images]
    assert min(side) > 1.2 * max(before), "the panels grow"
    assert legibility.problems(fig) == []
    for bad in (0, -1.0, float("nan"), "7"):
        with pytest.raises(ValueError, match="width"):
            show.show_regions(scenes, [1], regions, width=bad)
    with pytest.raises(ValueError, match="row_height"):
        show.show_regions(scenes, [1], regions, row_height=0)
    with pytest.raises(ValueError, match="idx"):
        show.show_regions(scenes, [2], regions)
    matplotlib.pyplot.close("all")
