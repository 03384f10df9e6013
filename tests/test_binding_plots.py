"""compbook.binding.plots: chapter 12's decoding figures draw what their tables hold, legibly at the column."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from compbook.book import legibility
from compbook.binding import plots


def _coverage_table():
    rng = np.random.default_rng(0)
    return pd.DataFrame([{"coverage": c, "width": w, "concept": rng.uniform(0.3, 0.9),
                          "object": rng.uniform(0.1, 0.9)}
                         for c in (0.1, 0.3, 0.5, 0.7, 0.9) for w in (0, 8, 64, 512)])


def test_decoding_figure_draws_the_widths_as_one_band_around_their_mean():
    table = _coverage_table()
    refs = {"concept": (0.8, "paper: concepts", (0.3, 1)), "object": (0.2, "paper: objects", (0, 1))}
    fig = plots.decoding_figure(table, refs)
    assert legibility.problems(fig, tight=True) == []
    mlp = table[table.width > 0].groupby("coverage")
    for ax, what in zip(fig.axes, ("concept", "object")):
        lines = {ln.get_label(): ln for ln in ax.get_lines()}
        assert set(lines) >= {"the encoder itself", "MLP, mean over widths"}, "one line per kind, not per width"
        np.testing.assert_allclose(lines["MLP, mean over widths"].get_ydata(), mlp[what].mean().values)
        np.testing.assert_allclose(lines["the encoder itself"].get_ydata(),
                                   table[table.width == 0][what].values)
        ref = [c for c in ax.collections if c.get_label().startswith("paper")]
        assert ref and ref[0].get_zorder() < lines["the encoder itself"].get_zorder(), "no reading hidden"
        band = ax.collections[0].get_paths()[0].vertices[:, 1]
        assert band.min() == pytest.approx(mlp[what].min().min()) and band.max() == pytest.approx(
            mlp[what].max().max()), "the band spans the lowest to the highest width's reading"
    plt.close(fig)


def test_encoders_decoding_figure_has_one_bar_per_recipe_and_width_at_its_reading():
    rng = np.random.default_rng(1)
    table = pd.DataFrame([{"trained": t, "width": w, "concept": rng.uniform(0.2, 0.9),
                           "object": rng.uniform(0.0, 0.9)}
                          for t in ("with swaps", "without swaps") for w in (0, 64, 256, 1024)])
    fig = plots.encoders_decoding_figure(table, 1 / 24)
    assert legibility.problems(fig, tight=True) == []
    for ax, what in zip(fig.axes, ("concept", "object")):
        heights = sorted(round(p.get_height(), 9) for p in ax.patches)
        assert heights == sorted(round(v, 9) for v in table[what]), "every (recipe, width) reading, once"
    chance = [ln for ln in fig.axes[1].get_lines() if ln.get_label() == "chance (objects)"]
    assert chance and chance[0].get_ydata()[0] == pytest.approx(1 / 24)
    plt.close(fig)


def test_carry_over_figure_draws_objects_only_the_ceiling_and_the_mlp_in_both_panels():
    table = _coverage_table()
    rng = np.random.default_rng(2)
    images = pd.DataFrame([{"trained": t, "width": w, "object": rng.uniform(0.0, 0.9)}
                           for t in ("with swaps", "without swaps") for w in (0, 64, 256, 1024)])
    fig = plots.carry_over_figure(table, images, 1 / 24, image_coverage=0.75)
    assert legibility.problems(fig, tight=True) == []
    left, right = fig.axes
    lines = {ln.get_label(): ln for ln in left.get_lines()}
    mlp = table[table.width > 0].groupby("coverage")["object"]
    mean = next(k for k in lines if k.startswith("the MLP's predictions"))
    np.testing.assert_allclose(lines[mean].get_ydata(), mlp.mean().values)
    assert lines["chapter 10's coverage"].get_xdata()[0] == 0.75 and "0.75" in right.get_title()
    np.testing.assert_allclose(lines["the encoder itself (the ceiling)"].get_ydata(),
                               table[table.width == 0]["object"].values)
    heights = sorted(round(p.get_height(), 9) for p in right.patches)
    assert heights == sorted(round(v, 9) for v in images["object"]), "every (recipe, width) reading, once"
    names = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "the encoder itself (bars)" in names, "the right panel's black bars (the ceiling) have no legend entry"
    plt.close(fig)


def test_carry_over_figure_draws_each_panels_own_chance():
    table = _coverage_table()
    images = pd.DataFrame([{"trained": t, "width": w, "object": 0.5}
                           for t in ("with swaps", "without swaps") for w in (0, 64)])
    fig = plots.carry_over_figure(table, images, 1 / 24, controlled_chance=1 / 125)
    assert legibility.problems(fig, tight=True) == []
    for ax, value in zip(fig.axes, (1 / 125, 1 / 24)):
        chance = [ln for ln in ax.get_lines() if ln.get_label() == "chance"]
        assert len(chance) == 1 and chance[0].get_ydata()[0] == pytest.approx(value), "each panel its own chance"
    plt.close(fig)
    without = plots.carry_over_figure(table, images, 1 / 24)
    assert not [ln for ln in without.axes[0].get_lines() if ln.get_label() == "chance"]
    plt.close(without)
    for bad in (0, 1.5, float("nan")):
        with pytest.raises(ValueError, match="controlled_chance"):
            plots.carry_over_figure(table, images, 1 / 24, controlled_chance=bad)


def test_recognition_figure_draws_a_zero_bar_at_zero_height():
    rows = [{"model": k, "scenes": s, "concept": 0.5, "object": 0.0 if s == "test" else 0.02}
            for k in ("plain", "swap") for s in ("train", "test")]
    chance = {"train": {"concept": 0.2, "object": 0.1}, "test": {"concept": 0.2, "object": 0.1}}
    fig = plots.recognition_figure(pd.DataFrame(rows), {"concept": "concepts", "object": "objects"}, chance)
    for ax in fig.axes:
        heights = sorted(round(p.get_height(), 6) for p in ax.patches)
        assert heights == [0.0, 0.0, 0.02, 0.02, 0.5, 0.5], "a short bar drawn at other than its true height"
        assert {t.get_text() for t in ax.texts} == {"0.00", "0.02"}, "a short bar's value is written"
    plt.close(fig)


def test_swap_test_figure_labels_its_inset_and_keeps_its_ticks_clear():
    coverages = [0.1, 0.3, 0.5, 0.7, 0.9]
    rows = [{"|O|": n, "coverage": c, "seen": 0.9 if c == 0.1 else 0.1 + 0.01 * k, "unseen": 0.05,
             "low": 0.03, "high": 0.07, "chance": 0.06}
            for n in (125, 2744) for k, c in enumerate(coverages)]
    curves = pd.DataFrame(rows).set_index(["|O|", "coverage"])
    fig = plots.swap_test_figure(curves, (0.3, 0.4, "the paper"))
    assert legibility.problems(fig) == []
    insets = [a for ax in fig.axes for a in ax.child_axes if a.get_title().endswith("magnified")]
    assert len(insets) == 2, "each panel whose lines stay low gets an inset"
    fig.canvas.draw()
    for ins in insets:
        assert ins.get_xlabel() == "coverage", "the inset's x axis is named"
        chance = [ln for ln in ins.get_lines() if ln.get_label().startswith("chance")]
        assert len(chance) == 1 and chance[0].get_linestyle() != "-", "the inset's chance line is dashed"
        assert chance[0].get_marker() in ("", "None", None), "ticks on the chance line would hide its dashes"
        key = ins.get_legend()
        assert key and [t.get_text() for t in key.get_texts()] == ["chance"], "the inset names its chance line"
        assert [t.get_text() for t in ins.get_xticklabels()] == ["0.4", "0.8"], "two ticks, far apart"
        assert ins.get_xlim()[0] < coverages[1] < coverages[-1] < ins.get_xlim()[1], "the low coverages magnified"
        top = ins.get_ylim()[1]
        assert all(max(ln.get_ydata()) < top for ln in ins.get_lines()), "no line enters the inset from above"
        box = ins.get_window_extent(fig.canvas.get_renderer())
        for label in ins.get_xticklabels():      # no tick label touches the inset's frame
            ext = label.get_window_extent(fig.canvas.get_renderer())
            assert box.x0 + 2 < ext.x0 and ext.x1 < box.x1 - 2, label.get_text()
        ends = sorted((t.get_window_extent(fig.canvas.get_renderer()).x0,
                       t.get_window_extent(fig.canvas.get_renderer()).x1) for t in ins.get_xticklabels())
        assert all(b[0] - a[1] > 10 for a, b in zip(ends, ends[1:])), "the inset's tick labels run together"
    from matplotlib.inset import InsetIndicator
    boxes = [c for ax in fig.axes for c in ax.get_children() if isinstance(c, InsetIndicator)]
    assert len(boxes) == 2 and all(b.rectangle.get_visible() for b in boxes), "the magnified box is marked"
    assert not [ln for b in boxes for ln in b.connectors if ln.get_visible()], "a connector crosses the ticks"
    renderer = fig.canvas.get_renderer()
    for ins in insets:
        title, panel = ins.title.get_window_extent(renderer), ins.axes.get_window_extent(renderer)
        parent = next(ax for ax in fig.axes if ins in ax.child_axes).get_window_extent(renderer)
        assert parent.x0 <= title.x0 and title.x1 <= parent.x1, "the inset's title crosses its panel's frame"
        assert panel.x0 <= title.x0 and title.x1 <= panel.x1, "the inset's title is wider than the inset"
    plt.close(fig)


def test_grouped_bar_positions_centre_each_group_and_fill_the_span():
    xs, w = plots.grouped_bar_positions(3, 2, 0.8)
    assert w == pytest.approx(0.4) and len(xs) == 2
    np.testing.assert_allclose(xs[0], [-0.2, 0.8, 1.8])
    np.testing.assert_allclose(xs[1], [0.2, 1.2, 2.2])
    np.testing.assert_allclose((xs[0] + xs[1]) / 2, [0, 1, 2])       # each group centred on its tick
    one, w1 = plots.grouped_bar_positions(2, 1, 0.5)
    np.testing.assert_allclose(one[0], [0, 1])
    assert w1 == 0.5
    for bad in ({"n_groups": 0}, {"n_bars": 0}, {"span": 0}, {"span": 1.5}):
        args = {"n_groups": 2, "n_bars": 2, "span": 0.8} | bad
        with pytest.raises(ValueError, match=next(iter(bad))):
            plots.grouped_bar_positions(**args)


def test_held_out_grid_draws_every_object_once_and_marks_the_held_out():
    from compbook import scenes as S
    space = S.clevr2d()
    fig = plots.held_out_grid(space, [1, 5, 9])
    assert legibility.problems(fig, tight=True) == []
    ax = fig.axes[0]
    assert len(ax.get_lines()) == space.n_objects
    assert [t.get_text() for t in ax.texts].count("held out") == 3 and len(ax.patches) == 3
    assert "21 seen in training, 3 held out" in ax.get_title()
    plt.close(fig)


def test_swap_test_sketch_is_legible_and_its_swaps_recombine_the_scenes_values():
    from matplotlib.patches import Circle, Rectangle
    fig = plots.swap_test_sketch()
    assert legibility.problems(fig, tight=True) == []
    ax = fig.axes[0]
    drawn = [(type(p).__name__, tuple(np.round(p.get_facecolor(), 3))) for p in ax.patches
             if isinstance(p, (Circle, Rectangle))]
    scene, objects, swaps = drawn[0:2], drawn[2:4], drawn[4:6]
    assert objects == scene, "the present objects must be the scene's own"
    # a swap keeps each colour but takes the other object's shape
    assert sorted(swaps) == sorted([(scene[1][0], scene[0][1]), (scene[0][0], scene[1][1])])
    plt.close(fig)


def test_recognition_figure_draws_each_splits_own_chance_across_its_bar():
    rows = [{"model": k, "scenes": s, "concept": 0.5, "object": 0.3}
            for k in ("plain", "swap") for s in ("train", "test")]
    chance = {"train": {"concept": 0.02, "object": 0.006}, "test": {"concept": 0.04, "object": 0.01}}
    fig = plots.recognition_figure(pd.DataFrame(rows), {"concept": "concepts", "object": "objects"}, chance)
    assert legibility.problems(fig) == []
    for ax in fig.axes:
        bars = [p for p in ax.patches if p.get_height() > 0.05]          # train bars first, then test
        ticks = [seg for col in ax.collections for seg in col.get_segments()]
        drawn = sorted((round(s[0][0], 6), round(s[0][1], 6), round(s[1][0], 6)) for s in ticks)
        want = sorted((round(b.get_x(), 6), chance[sp][m], round(b.get_x() + b.get_width(), 6))
                      for b, (sp, m) in zip(bars, [(sp, m) for sp in ("train", "test") for m in ("concept", "object")]))
        assert drawn == want, "a chance line not across its own bar at its own split's chance"
        marks = sorted((round(float(l.get_xdata()[0]), 6), float(l.get_ydata()[0])) for l in ax.lines)
        low = sorted((round(b.get_x() + b.get_width() / 2, 6), chance[sp][m] + 0.045)
                     for b, (sp, m) in zip(bars, [(sp, m) for sp in ("train", "test") for m in ("concept", "object")])
                     if chance[sp][m] < 0.05)
        assert marks == low, "a chance under 0.05 without its triangle above it"
        named = [l.get_label() for l in ax.lines if not l.get_label().startswith("_")]
        assert named == ["chance near 0"], "the triangle is named once per panel"
    with pytest.raises(ValueError, match="test"):
        plots.recognition_figure(pd.DataFrame(rows), {"concept": "concepts"}, {"train": chance["train"]})
    plt.close("all")


def test_arrows_figure_cuts_the_axis_so_that_both_clusters_are_readable():
    rng = np.random.default_rng(0)
    near1 = {"image": np.clip(rng.normal(0.97, 0.02, 500), -1, 1), "lookup": rng.normal(0, 0.12, 500)}
    fig = plots.arrows_figure(near1)
    assert legibility.problems(fig) == []
    left, right = fig.axes
    assert left.get_xlim()[0] < np.percentile(near1["lookup"], 5) and left.get_xlim()[1] < 0.5
    assert 0.8 < right.get_xlim()[0] < np.percentile(near1["image"], 5) and right.get_xlim()[1] >= 1
    assert "median 0.97" in left.get_yticklabels()[0].get_text()
    spread = {"a": rng.uniform(-0.5, 1, 500), "b": rng.normal(0.9, 0.03, 500)}
    assert len(plots.arrows_figure(spread).axes) == 1, "one axis where the rows do not form two clusters"
    plt.close("all")


def test_scene_figure_masks_in_grays_with_a_key():
    from compbook import scenes as S
    space = S.clevr2d()
    scene = S.render_scene(space, [0, 5], res=64)
    fig = plots.scene_figure(scene)
    assert legibility.problems(fig) == []
    shown = fig.axes[1].get_images()[0].get_array()
    for i, mask in enumerate(scene.masks[:2]):
        assert (np.asarray(shown)[mask] == i + 1).all()
    assert (np.asarray(shown)[~scene.masks[:2].any(0)] == 0).all()
    key = [t.get_text() for t in fig.axes[1].get_legend().get_texts()]
    assert key == ["left object", "right object"]
    plt.close("all")


def test_logit_grid_writes_every_cells_cosine_with_its_mark():
    from compbook import scenes
    space = scenes.clevr2d()
    logits = np.linspace(-0.5, 0.5, space.n_objects)
    fig, ax = plt.subplots()
    plots.logit_grid(ax, logits, space, present=[0], swapped=[1], values=True)
    texts = [t.get_text() for t in ax.texts]
    assert len(texts) == space.n_objects, "one number per cell"
    assert f"P {logits[0]:.2f}" in texts and f"S {logits[1]:.2f}" in texts
    assert f"{logits[5]:.2f}" in texts
    plt.close(fig)
    fig, ax = plt.subplots()
    plots.logit_grid(ax, logits, space, present=[0], swapped=[1])
    assert sorted(t.get_text() for t in ax.texts) == ["P", "S"], "marks only, by default"
    with pytest.raises(ValueError, match="values"):
        plots.logit_grid(ax, logits, space, values="yes")
    with pytest.raises(ValueError, match="clim"):
        plots.logit_grid(ax, logits, space, clim=(1, 0))
    plt.close(fig)


def test_logit_grid_writes_dark_on_bright_cells_and_light_on_dark_ones():
    from compbook import scenes
    space = scenes.clevr2d()
    logits = np.linspace(-0.5, 0.5, space.n_objects)
    fig, ax = plt.subplots()
    im = plots.logit_grid(ax, logits, space, values=True, clim=(-1, 1))
    assert tuple(im.get_clim()) == (-1, 1)
    colours = {t.get_text(): t.get_color() for t in ax.texts}
    assert colours[f"{logits[0]:.2f}"] == "w" and colours[f"{logits[-1]:.2f}"] == "k"
    plt.close(fig)


def test_recognition_figure_keeps_a_short_bars_value_off_its_chance_line():
    rows = [{"model": k, "scenes": s, "swap": 0.0 if s == "train" else 0.1, "caption": 0.5}
            for k in ("plain", "swap") for s in ("train", "test")]
    chance = {s: {"swap": 0.17, "caption": 0.5} for s in ("train", "test")}
    fig = plots.recognition_figure(pd.DataFrame(rows), ["swap", "caption"], chance)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        (label,) = ax.texts
        box = label.get_window_extent(renderer)
        line = ax.transData.transform((0, 0.17))[1]
        clear = 3 * fig.dpi / 72                             # 3 pt between the text and the line
        assert not box.y0 - clear < line < box.y1 + clear, "a value label touches its chance line"
    plt.close(fig)


def test_recognition_figure_labels_a_list_of_measures_itself():
    rows = [{"model": k, "scenes": s, "swap": 0.3, "caption": 0.5}
            for k in ("plain", "swap") for s in ("train", "test")]
    chance = {s: {"swap": 0.25, "caption": 0.5} for s in ("train", "test")}
    fig = plots.recognition_figure(pd.DataFrame(rows), ["swap", "caption"], chance)
    labels = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert labels == [plots.RECOGNITION_LABELS["swap"], plots.RECOGNITION_LABELS["caption"]]
    plt.close(fig)
