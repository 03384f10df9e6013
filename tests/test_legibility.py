"""compbook.book.legibility: each check finds the fault it names on a planted figure, and passes a clean one."""

import json
import subprocess
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from compbook.book import legibility  # noqa: E402


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def clean():
    fig, ax = plt.subplots(figsize=(6, 3))
    ax.plot(np.arange(10), np.arange(10) ** 0.5, label="sqrt")
    ax.set_title("a clean figure"), ax.set_xlabel("x"), ax.set_ylabel("y")
    ax.legend(loc="lower right")
    fig.tight_layout()
    return fig


def test_a_clean_figure_passes():
    assert legibility.problems(clean()) == []


def test_overlapping_titles_are_found():
    fig, axes = plt.subplots(1, 3, figsize=(6, 2))
    for ax in axes:
        ax.imshow(np.zeros((4, 4)))
        ax.set_title("a title much too long for a narrow panel", fontsize=9)
    found = legibility.overlapping_text(fig, fig.canvas.get_renderer())
    assert found and "overlaps" in found[0]


def test_text_leaving_the_figure_is_found():
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.plot([0, 1], [0, 1])
    ax.text(1.5, 0.5, "far to the right", transform=ax.transAxes)
    assert any("far to the right" in p and "leaves" in p for p in legibility.problems(fig))


def test_a_legend_over_the_curve_is_found_and_one_beside_it_is_not():
    fig, ax = plt.subplots(figsize=(6, 3))
    x = np.linspace(0, 1, 50)
    ax.plot(x, np.full_like(x, 0.9), label="high line")
    ax.plot(x, np.full_like(x, 0.1), label="low line")
    ax.set_ylim(0, 1)
    ax.legend(loc="upper center")
    fig.canvas.draw()
    assert legibility.legend_over_data(fig, fig.canvas.get_renderer())
    ax.legend(loc="center")
    fig.canvas.draw()
    assert legibility.legend_over_data(fig, fig.canvas.get_renderer()) == []


def test_a_legend_over_bars_is_found():
    fig, ax = plt.subplots(figsize=(6, 3))
    ax.bar(np.arange(5), [1, 1, 1, 1, 1], label="bars")
    ax.legend(loc="upper left")
    fig.canvas.draw()
    assert legibility.legend_over_data(fig, fig.canvas.get_renderer())


def test_small_tiles_are_found_at_the_column_width():
    fig, axes = plt.subplots(1, 10, figsize=(14, 1.6))    # shrunk to 7 in: 0.7 in a tile at most
    for ax in axes:
        ax.imshow(np.zeros((4, 4, 3))), ax.axis("off")
    assert legibility.small_thumbnails(fig)
    fig2, axes2 = plt.subplots(1, 4, figsize=(7, 2))
    for ax in axes2:
        ax.imshow(np.zeros((4, 4, 3))), ax.axis("off")
    assert legibility.small_thumbnails(fig2) == []
    # colour-mapped maps (feature maps) are tiles too: 12 in a row of 7 in are 0.5 in each
    fig3, axes3 = plt.subplots(2, 12, figsize=(7, 1.4))
    for ax in axes3.flat:
        ax.imshow(np.zeros((4, 4))), ax.axis("off")
    assert "24 image tile(s)" in " ".join(legibility.small_thumbnails(fig3))


def test_text_and_tiles_are_checked_at_the_displayed_width():
    """A figure that passes at its own width fails when the page shows it at half that width (its 10 pt tick
    labels become 5 pt, its 1.4 in tiles 0.7 in), and passes again shown at full width."""
    fig, axes = plt.subplots(1, 4, figsize=(7, 2))
    for ax in axes:
        ax.imshow(np.zeros((4, 4)))
    fig.canvas.draw()
    record = legibility.measure(fig)
    assert record["shown_in"] == 7.0 and record["fonts"][0][0] == 10.0 and record["tiles"][0][2] == 4
    assert legibility.at_display(record, 7.0) == []
    half = legibility.at_display(record, 3.5)
    assert len(half) == 2 and "5.0 pt" in half[0] and "tile" in half[1]
    assert legibility.at_display(record, 3.5, what=("fonts",)) == half[:1]
    with pytest.raises(ValueError, match="displayed_in"):
        legibility.at_display(record, 0)


def test_small_plots_and_small_text_are_found():
    fig = plt.figure(figsize=(7, 3))
    ax = fig.add_axes([0.05, 0.1, 0.15, 0.3])
    ax.plot([0, 1], [0, 1])
    ax.set_title("tiny", fontsize=4)
    assert legibility.small_axes(fig) and legibility.small_text(fig)


def test_watch_logs_every_rendered_figure_with_its_faults_and_png(tmp_path):
    """In a fresh interpreter (watch patches matplotlib for the process): every saved figure is logged, with
    its faults ([] for a clean one), its measure and the hash of the PNG it wrote to a buffer."""
    log = tmp_path / "figs.jsonl"
    code = f"""
import matplotlib; matplotlib.use("Agg")
import matplotlib.pyplot as plt, numpy as np, io, hashlib
from compbook.book import legibility
legibility.watch({str(log)!r})
fig, ax = plt.subplots(figsize=(4, 3)); ax.plot([0, 1], [0, 1]); ax.set_title("fine")
buf = io.BytesIO(); fig.savefig(buf, dpi=50, bbox_inches="tight"); print(hashlib.sha256(buf.getvalue()).hexdigest())
fig, ax = plt.subplots(figsize=(4, 3)); ax.plot([0, 1], [0, 1]); ax.set_title("faulty")
ax.text(1.6, 0.5, "outside", transform=ax.transAxes); fig.savefig(io.BytesIO())
"""
    digest = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout.strip()
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    assert lines[0]["watching"] and "problems" not in lines[0]
    fine, faulty = lines[1:]
    assert fine["figure"] == "fine" and fine["problems"] == [] and fine["png"] == digest
    assert 3.0 < fine["measure"]["shown_in"] < 4.2 and fine["measure"]["fonts"]     # its tight box, at 50 dpi
    assert faulty["figure"] == "faulty" and "leaves the figure" in " ".join(faulty["problems"])


def test_the_shared_plotting_functions_draw_legible_figures():
    """compbook.book.plots as the chapters call it: a row of six renders with two-line titles at the column width, a
    slider's static twin of Gram matrices with two-line labels, a loss curve."""
    from compbook.book import plots
    rgb = [np.random.default_rng(k).random((16, 16, 3)) for k in range(6)]
    fig = plots.show_images(rgb, [f"skull\nPicbreeder {k}" for k in range(6)], ncols=6, size=1.15)
    assert legibility.problems(fig, tight=True) == []
    fig = plots.show_images(rgb[:4], [f"Picbreeder\nw(8, 0, {k})" for k in range(4)], ncols=4, size=1.75)
    assert legibility.problems(fig, tight=True) == []

    def gram(v, ax):
        ax.imshow(np.eye(v), vmin=0, vmax=1)
        ax.set_xlabel(f"coherence 0.{v}000\nbound 0.6124", fontsize=8)
        ax.axis("on"), ax.set_xticks([]), ax.set_yticks([])
    fig = plots.slider_twin(gram, [3, 4, 5, 6, 7, 8], "(r, d)", ncols=3, size=2.3)
    assert legibility.problems(fig, tight=True) == []
    _, ax = plt.subplots(figsize=(6, 3))
    plots.loss_curves({"SGD": np.linspace(1, 0.01, 100)}, ax=ax)
    assert legibility.problems(ax.figure, tight=True) == []


def test_part_a_samples_and_the_colouring_figure_are_legible():
    """compbook.book.plots' feature-map sample (readable tiles, constant maps left out) and chapter 2's colouring
    figure, as the chapters call them."""
    import torch
    from compbook.book import plots
    from compbook.cppn import frames
    g = torch.Generator().manual_seed(0)
    maps = [torch.rand(8, 24, 24, generator=g) * 2 - 1 for _ in range(4)]
    maps[0][:5] = 0.25                                # five idle neurons: constant maps
    fig = plots.feature_map_sample(maps, [0, 2, 3], title="feature maps")
    assert legibility.problems(fig, tight=True) == []
    assert sum(len(ax.images) for ax in fig.axes[:6]) == 3       # layer 1 shows only its 3 varying neurons
    assert fig.get_size_inches()[0] / 6 >= 1.3                     # tiles of at least ~1.3 inches
    r, d = 12, 6
    ring = [tuple((i + j) % r for j in range(3)) for i in range(r)]
    colour = frames.greedy_colouring(frames.cooccurrence(ring, r))
    fig = plots.colouring_figure(ring, r, colour, frames.local_orthogonal_frame(ring, r, d, seed=0))
    assert legibility.problems(fig, tight=True) == []
