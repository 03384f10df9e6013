"""Figures for Part C: scenes with captions, where a latent fires, patch regions (chapters 14-15)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from .. import checks

WIDTH = 7.0


def _grid_axes(n: int, ncols: int, height: float):
    nrows = -(-n // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(WIDTH, height * nrows), squeeze=False)
    for ax in axes.flat:
        ax.axis("off")
    return fig, axes.flat


def show_scenes(scenes, idx, ncols: int = 4):
    """Images with their captions (wrapped), one panel per scene index in ``idx``."""
    idx = checks.index(checks.sequence(idx, "idx"), "idx", len(scenes), "the scene set").tolist()
    fig, axes = _grid_axes(len(idx), ncols, 2.2)
    for ax, i in zip(axes, idx):
        ax.imshow(scenes.images[i], interpolation="nearest")
        words = scenes.vocab.decode(scenes.tokens[i].tolist()).replace(" and ", "\nand ")
        ax.set_title(words, fontsize=7)
    fig.tight_layout()
    return fig


def overlay(image: np.ndarray, patch_values: np.ndarray, grid: tuple, colour=(1.0, 0.0, 0.0), alpha=0.6):
    """``image`` (H, W, 3) with patches tinted by ``patch_values`` (P,) in [0, 1] (row-major on ``grid``)."""
    image = np.asarray(checks.unit_image(checks.tensor(image, "image", (None, None, 3), floating=False), "image"))
    h, w, _ = image.shape
    rows, cols = (checks.integer(g, "grid") for g in checks.sequence(grid, "grid", 2, 2))
    v = checks.reals(patch_values, "patch_values")
    checks.value_range(v, "patch_values", 0, 1)
    if v.size != rows * cols or h % rows or w % cols:
        raise ValueError(f"patch_values: {v.size} values for a {rows} x {cols} grid on a {h} x {w} image "
                         f"(expected {rows * cols}, whole patches)")
    v = v.reshape(rows, cols)
    checks.real(alpha, "alpha", 0, 1)
    v = np.kron(v, np.ones((h // grid[0], w // grid[1])))[..., None]
    return image * (1 - alpha * v) + alpha * v * np.asarray(colour)


def show_latents(scenes, codes, latents, images_per_latent: int = 4, titles=None):
    """For each latent (a row), the first images where it fires with its active patches in red.

    ``codes`` (N, P, d_sae) patch codes of ``scenes``.
    """
    active = np.asarray(codes != 0)
    fig, axes = plt.subplots(len(latents), images_per_latent, squeeze=False,
                             figsize=(WIDTH, 1.9 * len(latents)))
    for r, j in enumerate(latents):
        where = np.flatnonzero(active[:, :, j].any(1))[:images_per_latent]
        for c in range(images_per_latent):
            ax = axes[r, c]
            ax.axis("off")
            if c < len(where):
                n = where[c]
                ax.imshow(overlay(scenes.images[n], active[n, :, j], scenes.grid), interpolation="nearest")
        axes[r, 0].set_title(titles[r] if titles else f"latent {j}", fontsize=8, loc="left")
    fig.tight_layout()
    return fig


def show_regions(scenes, idx, regions, ncols: int = 3, title: str = ""):
    """Images with their patch regions drawn as colours (``regions`` (N, P) labels)."""
    fig, axes = _grid_axes(len(idx), ncols, 2.4)
    cmap = plt.get_cmap("tab20")
    for ax, i in zip(axes, idx):
        lab = np.asarray(regions[i]).reshape(scenes.grid)
        colours = cmap(lab % 20)[..., :3]
        h = scenes.images[i].shape[0] // scenes.grid[0]
        big = np.kron(colours, np.ones((h, h, 1)))
        ax.imshow(0.45 * scenes.images[i] + 0.55 * big, interpolation="nearest")
        ax.set_title(f"scene {i}: {len(np.unique(lab))} regions", fontsize=8)
    if title:
        fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return fig


def show_references(scenes, refs, masks, descriptions, title: str = ""):
    """One latent's reference images (a row) with its region outlined in red and each region's description below.

    ``refs`` (K,) scene indices; ``masks`` (K, H, W) bool pixel masks; ``descriptions`` K strings (chapter 16).
    """
    fig, axes = plt.subplots(1, len(refs), figsize=(WIDTH, 2.1), squeeze=False)
    for ax, n, m, d in zip(axes[0], refs, masks, descriptions):
        ax.imshow(scenes.images[n], interpolation="nearest")
        if np.any(m):       # the region's outline, so that the colours under it stay true
            big = np.kron(np.asarray(m, float), np.ones((4, 4)))
            ax.contour((np.arange(big.shape[1]) + 0.5) / 4 - 0.5, (np.arange(big.shape[0]) + 0.5) / 4 - 0.5,
                       big, levels=[0.5], colors="red", linewidths=1.5)
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_xlabel(d.replace(" and ", "\nand "), fontsize=7)
    if title:
        fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return fig


def show_interpretation(scenes, z_img, row, hierarchical: bool = True):
    """One row of :func:`compbook.sae.interpret.interpret`: the references with the latent's region (none when
    ``hierarchical`` is False), the descriptions, and the synthesised and true concepts in the title."""
    import torch

    from .interpret import region_masks

    refs = torch.tensor([row["references"]])
    masks = region_masks(z_img, refs, [row["latent"]], scenes.grid, scenes.images.shape[1])[0]
    title = (f"latent {row['latent']} | image: {row['image concept']} | text: {row['text concept']} | "
             f"truth: {row['truth']}\ntop caption words: {', '.join(row['top words'][:8]) or '(none)'}")
    return show_references(scenes, row["references"], masks if hierarchical else 0 * masks,
                           row["descriptions"], title)
