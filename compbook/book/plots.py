"""Small matplotlib helpers the chapters share: image rows, feature-map grids, loss curves, slider twins."""

from __future__ import annotations

from typing import Callable, Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch

from .. import checks


def _np(img) -> np.ndarray:
    return img.detach().cpu().numpy() if isinstance(img, torch.Tensor) else np.asarray(img)


def show_images(images: Sequence, titles: Sequence[str] | None = None, ncols: int | None = None,
                size: float = 2.2, suptitle: str | None = None):
    """Show images ``(H, W, 3)`` in [0, 1] (or ``(H, W)`` maps in [-1, 1], shown with a diverging colour map) in
    a grid. 8-bit data, NaN and other shapes are refused (never clipped to white or black)."""
    images = checks.sequence(images, "images")
    n = len(images)
    if titles is not None:
        titles = checks.sequence(titles, "titles", n, n)
    ncols = n if ncols is None else checks.integer(ncols, "ncols")
    size = checks.real(size, "size", 0, 100, low_open=True)
    arrays = []
    for k, img in enumerate(images):
        a = _np(img)
        if a.ndim == 3 and a.shape[-1] == 3 and min(a.shape[:2]) >= 1:
            checks.unit_image(a, f"images[{k}]")
        elif a.ndim == 2 and min(a.shape) >= 1:
            checks.value_range(a, f"images[{k}] (a map)", -1, 1)
        else:
            raise ValueError(f"images[{k}] must be an image (H, W, 3) or a map (H, W), got shape {a.shape}")
        arrays.append(a)
    checks.check_render_size(1, 3 * sum(a.size for a in arrays), 8, f"show_images of {n} images")
    nrows = -(-n // ncols)
    # room for each row's titles (9 pt lines), so a title never eats into the image above or below it
    lines = max((str(t).count("\n") + 1 for t in titles), default=0) if titles is not None else 0
    fig, axes = plt.subplots(nrows, ncols, figsize=(size * ncols, nrows * (size + 0.2 * lines) +
                                                    (0.4 if suptitle else 0)), squeeze=False)
    for k, ax in enumerate(axes.flat):
        ax.axis("off")
        if k < n:
            img = arrays[k]
            if img.ndim == 2:
                ax.imshow(img, cmap="RdBu_r", vmin=-1, vmax=1)
            else:
                ax.imshow(img)
            if titles is not None:
                ax.set_title(titles[k], fontsize=9)
    if suptitle:
        fig.suptitle(suptitle)
    fig.tight_layout()
    return fig


def feature_map_grid(maps: Sequence[torch.Tensor], max_per_layer: int | None = None, size: float = 0.8,
                     title: str | None = None):
    """Hidden neurons' activation maps: one row per layer (``maps`` from ``CPPN.feature_maps``).

    Neurons whose map is constant over the grid (idle padding, unused copies, removed neurons) are drawn blank.
    ``max_per_layer``: at most that many maps a layer, the live (non-constant) ones first, each layer labelled
    with its count of live neurons (so the tiles can stay large enough to read on the page).
    """
    maps = checks.sequence(maps, "maps")
    for l, m in enumerate(maps):
        t = checks.instance(m, f"maps[{l}]", torch.Tensor, " (width, H, W)")
        if t.ndim != 3 or min(t.shape) < 1:
            raise ValueError(f"maps[{l}] must be a tensor (width, H, W), got shape {tuple(t.shape)}")
        checks.finite(t, f"maps[{l}]")
    width = max(m.shape[0] for m in maps) if max_per_layer is None else checks.integer(max_per_layer,
                                                                                         "max_per_layer", 1)
    checks.integer(width * len(maps), "feature_map_grid: panels (width x layers)", 1, 4096)
    size = checks.real(size, "size", 0, 100, low_open=True)
    label_in = 0.3 if max_per_layer is None else 0.75
    bar_in = 0.6                                          # room below for the colour bar
    fig_w = size * width + label_in
    height = size * len(maps) + 0.3 + bar_in
    fig, axes = plt.subplots(len(maps), width, figsize=(fig_w, height), squeeze=False)
    for l, layer in enumerate(maps):
        live = [i for i in range(layer.shape[0]) if float(layer[i].max() - layer[i].min()) > 1e-6]
        shown = live + [i for i in range(layer.shape[0]) if i not in live] if max_per_layer else \
            list(range(layer.shape[0]))
        for k, ax in enumerate(axes[l]):
            ax.set_xticks([]), ax.set_yticks([])
            for s in ax.spines.values():
                s.set_visible(False)
            if k < len(shown) and shown[k] in live:
                ax.imshow(_np(layer[shown[k]]), cmap="RdBu_r", vmin=-1, vmax=1)
        label = f"{l}" if max_per_layer is None else f"layer {l}\n{len(live)} live"
        axes[l][0].set_ylabel(label, rotation=0, fontsize=8, labelpad=8, ha="right", va="center")
    if title:
        fig.suptitle(title, fontsize=10)
    # the maps fill the figure (matplotlib's default margins would take a fifth of it): room for the layer
    # labels on the left, the title on top and the colour bar below only
    left = label_in / fig_w
    fig.subplots_adjust(left=left, right=0.99, bottom=bar_in / height, top=1 - 0.3 / height,
                        wspace=0.05, hspace=0.05)
    # one scale for every map: the colour bar the tiles share, centred under them
    bar_w = 0.4 * (0.99 - left)
    cax = fig.add_axes((left + (0.99 - left - bar_w) / 2, 0.4 / height, bar_w, 0.1 / height))
    bar = fig.colorbar(plt.cm.ScalarMappable(plt.Normalize(-1, 1), "RdBu_r"), cax=cax,
                       orientation="horizontal")
    bar.set_ticks([-1, 0, 1]), bar.ax.tick_params(labelsize=8)
    bar.set_label("activation", fontsize=8)
    return fig


def feature_map_sample(maps: Sequence[torch.Tensor], layers: Sequence[int], per_layer: int = 6,
                       size: float = 1.35, title: str | None = None, colorbar: bool = False,
                       label_rotation: float = 90):
    """A readable sample of ``maps`` (from ``CPPN.feature_maps``): for each layer in ``layers`` (0-based), the
    ``per_layer`` neurons whose maps vary most over the grid (constant maps left out), in neuron order, one row
    per layer labelled
    "layer l" (1-based, as the chapters count hidden layers). Tiles of ``size`` inches stay readable at the page's
    width, where a grid of every neuron would shrink each to a few pixels. ``colorbar``: a bar right of the tiles
    that reads a tile's colour as the neuron's value (-1 to 1). ``label_rotation``: the row labels' angle (0: level,
    written left of the row)."""
    maps = checks.sequence(maps, "maps")
    layers = [checks.integer(l, "layers[]", 0, len(maps) - 1) for l in checks.sequence(layers, "layers", 1)]
    per_layer = checks.integer(per_layer, "per_layer", 1, 12)
    size = checks.real(size, "size", 0, 100, low_open=True)
    width = size * per_layer + 0.5 + (0.6 if colorbar else 0)
    scale = max(1.0, width / 7.0)              # a figure wider than the column is shown shrunk: its text grows
    fig, axes = plt.subplots(len(layers), per_layer, figsize=(width, size * len(layers) +
                                                               (0.35 if title else 0)), squeeze=False)
    for row, l in zip(axes, layers):
        layer = checks.instance(maps[l], f"maps[{l}]", torch.Tensor, " (width, H, W)")
        spread = (layer.flatten(1).max(1).values - layer.flatten(1).min(1).values)
        keep = sorted(i for i in torch.argsort(spread, descending=True)[:per_layer].tolist()
                      if float(spread[i]) > 1e-6)          # constant maps (idle padding) are left out
        for ax in row:
            ax.set_xticks([]), ax.set_yticks([])
            for s in ax.spines.values():
                s.set_visible(False)
        for ax, i in zip(row, keep):
            ax.imshow(_np(layer[i]), cmap="RdBu_r", vmin=-1, vmax=1)
        if label_rotation:
            row[0].set_ylabel(f"layer {l + 1}", fontsize=9 * scale, rotation=label_rotation)
        else:
            row[0].set_ylabel(f"layer\n{l + 1}", fontsize=10 * scale, rotation=0, ha="right", va="center")
    if title:
        fig.suptitle(title, fontsize=10 * scale)
    fig.tight_layout(pad=0.3, w_pad=0.2, h_pad=0.2, rect=(0, 0, 1 - 0.6 / width, 1) if colorbar else None)
    if colorbar:
        top, bottom = axes[0][0].get_position().y1, axes[-1][0].get_position().y0
        cax = fig.add_axes((1 - 0.45 / width, bottom, 0.12 / width, top - bottom))
        bar = fig.colorbar(plt.cm.ScalarMappable(plt.Normalize(-1, 1), "RdBu_r"), cax=cax)
        bar.set_ticks([-1, 0, 1]), bar.ax.tick_params(labelsize=9 * scale)
    return fig


def colouring_figure(groups: Sequence[Sequence[int]], r: int, colour, F):
    """Chapter 2's construction in one picture: left, the co-occurrence graph of ``groups`` over ``r``
    primitives on a circle (a line joins two primitives some node reads together), each dot in its colour;
    right, the frame ``F (r, d)`` as a heat map, one row per primitive, its colour beside it: each colour's
    rows use only that colour's block of coordinates."""
    colour = np.asarray(colour)
    F = checks.reals(F, "F", ndim=2)
    palette = plt.cm.tab10.colors
    fig, axes = plt.subplots(1, 2, figsize=(6.8, 3.4), gridspec_kw={"width_ratios": [1, 1.1]})
    angle = 2 * np.pi * np.arange(r) / r
    xy = np.stack([np.sin(angle), np.cos(angle)], 1)
    ax = axes[0]
    for g in groups:
        for a in g:
            for b in g:
                if a < b:
                    ax.plot(*xy[[a, b]].T, color="0.6", lw=1, zorder=1)
    for i in range(r):
        ax.scatter(*xy[i], s=260, color=palette[colour[i] % 10], edgecolor="k", zorder=2)
        ax.annotate(str(i), xy[i], ha="center", va="center", fontsize=9, zorder=3)
    ax.set_aspect("equal"), ax.axis("off")
    ax.set_title("co-occurrence graph, coloured", fontsize=10)
    ax = axes[1]
    ax.imshow(np.abs(F), cmap="Greys", vmin=0, vmax=1, aspect="auto")
    for i in range(r):
        ax.add_patch(plt.Rectangle((-1.5, i - 0.5), 0.9, 1, color=palette[colour[i] % 10], clip_on=False))
    ax.set_xlim(-1.6, F.shape[1] - 0.5)
    ax.set_xticks(range(F.shape[1])), ax.set_yticks(range(r))
    ax.set_xlabel(r"coordinate of $\mathbb{R}^d$"), ax.set_ylabel("primitive")
    ax.set_title(r"$|F|$: each colour its own coordinates", fontsize=10)
    fig.tight_layout()
    return fig


def loss_curves(curves: dict, title: str = "training loss", ax=None):
    """Plot ``{label: losses (steps,)}`` on a log y axis (finite losses > 0: a log axis cannot show others)."""
    curves = checks.mapping(curves, "curves", 1)
    curves = {label: checks.reals(v, f"curves[{label!r}]", ndim=1) for label, v in curves.items()}
    for label, v in curves.items():
        checks.value_range(v, f"curves[{label!r}]", 0)
    if ax is None:
        _, ax = plt.subplots(figsize=(5, 3))
    for label, losses in curves.items():
        ax.plot(np.asarray(losses), label=label)
    ax.set_yscale("log"), ax.set_xlabel("step"), ax.set_ylabel("MSE"), ax.set_title(title)
    ax.legend(fontsize=8)
    return ax


def slider_twin(draw: Callable, values: Sequence, label: str, ncols: int | None = None, size: float = 2.0):
    """The static twin of a slider: ``draw(value, ax)`` for each value the slider can take, in one figure."""
    if not callable(draw):
        raise ValueError(f"draw must be a callable draw(value, ax), got {type(draw).__name__}")
    values = checks.sequence(values, "values", 1, 64)
    ncols = len(values) if ncols is None else checks.integer(ncols, "ncols")
    size = checks.real(size, "size", 0, 100, low_open=True)
    nrows = -(-len(values) // ncols)
    # room per row for a title above and a two-line label below each panel, so rows never crowd each other
    fig, axes = plt.subplots(nrows, ncols, figsize=(size * ncols, (size + 0.5) * nrows + 0.3), squeeze=False)
    for ax in axes.flat:
        ax.axis("off")
    for ax, v in zip(axes.flat, values):
        draw(v, ax)
        ax.set_title(f"{label} = {v:g}" if isinstance(v, (int, float)) else f"{label} = {v}", fontsize=9)
    fig.tight_layout(h_pad=1.2)
    return fig
