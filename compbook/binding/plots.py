"""Figures of chapters 10-11: scenes with their masks, one scene's logits, recognition per split, the 3-D MDS."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from .. import scenes as S


def scene_figure(scene: S.Scene, title: str | None = None, width: float = 7.0):
    """The image, its masks (one colour per object) and the patch labels of a 8 px grid, side by side."""
    fig, ax = plt.subplots(1, 3, figsize=(width, width / 3 + 0.4))
    ax[0].imshow(scene.image)
    lab = np.full(scene.masks.shape[1:], -1)
    for i, m in enumerate(scene.masks):
        lab[m] = i
    ax[1].imshow(lab, cmap="tab10", vmin=-1, vmax=9, interpolation="nearest")
    p = max(scene.image.shape[0] // 8, 1)
    pg = scene.patches(p)
    ax[2].imshow(pg.labels.reshape(pg.grid), cmap="tab10", vmin=-1, vmax=9, interpolation="nearest")
    for a, t in zip(ax, ("image", "masks", f"patch labels ({p} px)")):
        a.set_title(t, fontsize=9)
        a.axis("off")
    fig.suptitle(title or scene.caption, fontsize=9)
    fig.tight_layout()
    return fig


def logit_grid(ax, logits, space, present=(), swapped=(), title=""):
    """One scene's cosine logits for every object query as a (colour x shape) grid; P = present, S = swapped."""
    k_col, k_shp = space.concept_index("colour"), space.concept_index("shape")
    grid = np.zeros((space.sizes[k_col], space.sizes[k_shp]))
    for o in range(space.n_objects):
        v = space.object_values(o)
        grid[v[k_col], v[k_shp]] = logits[o]
    im = ax.imshow(grid, cmap="viridis", aspect="auto")
    for o, mark in [(o, "P") for o in present] + [(o, "S") for o in swapped]:
        v = space.object_values(int(o))
        ax.text(v[k_shp], v[k_col], mark, ha="center", va="center", color="w", fontsize=9, weight="bold")
    ax.set_xticks(range(space.sizes[k_shp]), space.values[k_shp], fontsize=8)
    ax.set_yticks(range(space.sizes[k_col]), space.values[k_col], fontsize=8)
    ax.set_title(title, fontsize=9)
    return im


def mds_figure(points: dict, title: str = "", width: float = 7.0):
    """3-D MDS coordinates {group: (coords (n, 3), labels)} shown as two 2-D views (dims 1-2 and 1-3), each named,
    the labelled groups' points named on the plot, the legend under both views (off the points)."""
    fig, ax = plt.subplots(1, 2, figsize=(width, width * 0.56))
    markers = {0: "o", 1: "s", 2: "^", 3: "x"}
    for g, (name, (xyz, labels)) in enumerate(points.items()):
        for a, (i, j) in zip(ax, ((0, 1), (0, 2))):
            a.scatter(xyz[:, i], xyz[:, j], s=30 if g < 2 else 12, marker=markers.get(g, "o"),
                      label=f"{name} ({len(xyz)})", alpha=0.8)
            if labels is not None and g < 2:
                for p, lab in zip(xyz, labels):
                    a.annotate(lab, (p[i], p[j]), fontsize=8, xytext=(3, 3), textcoords="offset points")
            a.set_xlabel(f"MDS {i + 1}", fontsize=9)
            a.set_ylabel(f"MDS {j + 1}", fontsize=9)
    ax[0].set_title("seen from above: MDS 1 and 2", fontsize=9)
    ax[1].set_title("seen from the side: MDS 1 and 3", fontsize=9)
    handles, names = ax[0].get_legend_handles_labels()
    fig.legend(handles, names, loc="lower center", ncols=len(names), fontsize=8, frameon=False)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    for a in ax:
        _declutter(fig, a.texts)
    return fig


def _declutter(fig, texts, steps: int = 40):
    """Move point labels (annotations in offset points) apart until no two overlap: each step, a label that
    overlaps an earlier one moves down by 3 points (at most ``steps`` steps each)."""
    renderer = fig.canvas.get_renderer()
    for _ in range(steps):
        boxes = [t.get_window_extent(renderer) for t in texts]
        moved = False
        for k in range(1, len(texts)):
            if any(boxes[k].overlaps(boxes[m]) for m in range(k)):
                x, y = texts[k].xyann
                texts[k].xyann = (x, y - 3)
                boxes[k] = texts[k].get_window_extent(renderer)
                moved = True
        if not moved:
            return


def recognition_figure(table, measures: dict, chance: dict, width: float = 7.0):
    """Chapter 10's result: one panel per model kind, bars = the splits, grouped by measure.

    ``table``: a DataFrame with columns ``model``, ``scenes`` and one column per key of ``measures`` (column ->
    label on the axis); ``chance``: column -> a random order's score, drawn as a black dash over its group.
    """
    kinds = list(dict.fromkeys(table["model"]))
    splits = list(dict.fromkeys(table["scenes"]))
    fig, axes = plt.subplots(1, len(kinds), figsize=(width, 3.1), sharey=True, squeeze=False)
    w = 0.8 / len(splits)
    x = np.arange(len(measures))
    for ax, kind in zip(axes[0], kinds):
        rows = table[table["model"] == kind].set_index("scenes")
        for j, split in enumerate(splits):
            ax.bar(x + (j - (len(splits) - 1) / 2) * w, [rows.loc[split, m] for m in measures], w, label=split)
        for i, m in enumerate(measures):
            if m in chance:
                ax.hlines(chance[m], i - 0.45, i + 0.45, color="k", lw=1.5, label="chance" if i == 0 else None)
        ax.set_xticks(x, list(measures.values()), fontsize=8)
        ax.set_ylim(0, 1)
        ax.set_title(kind, fontsize=9)
    axes[0][0].set_ylabel("accuracy (mean of the models)")
    axes[0][-1].legend(fontsize=8, loc="upper right", ncol=2)
    fig.tight_layout()
    return fig
