"""Figures and small tables for Part C: scenes with captions, where a latent fires, patch regions (chapters
14-15), the training settings, the reading rule and the k / lambda study against k (chapter 15), the labels of a
caption's tokens and identification rates (chapter 16). A table of numbers for the page:
:func:`compbook.book.glue.readable`.

Text in the figures is at least 8 pt at the page's width (:data:`WIDTH` inches) and legends sit outside the data."""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from .. import checks
from ..stats import reread

WIDTH = 7.0
FONT = 8          # the smallest text in a figure (tick labels of a busy panel), in points at WIDTH
LABEL = 9         # axis labels, tick labels, legends, a panel's small title
TITLE = 10        # titles, captions and descriptions under images: text that is read
RULE = 11         # every text of the reading-rule figure (short and wide, so shown smaller on the page)


def pm(mean: float, half: float, signed: bool = False) -> str:
    """``mean ± half`` for the page: decimals from the half-width (two significant digits of it, at most 3
    decimals), and never more than 4 significant digits of the mean; "(one seed)" where ``half`` is not finite."""
    mean, half = float(checks.real(mean, "mean")), float(half)
    sign = "+" if signed else ""
    if not math.isfinite(half):
        return f"{mean:{sign}.4g} (one seed)"
    if half < 0:
        raise ValueError(f"half must be a half-width >= 0, got {half!r}")
    decimals = 3 if half == 0 else min(3, max(0, 1 - math.floor(math.log10(half))))
    if mean:
        decimals = min(decimals, max(0, 3 - math.floor(math.log10(abs(mean)))))
    return f"{mean:{sign}.{decimals}f} ± {half:.{decimals}f}"


def label(method: str) -> str:
    """A run's method name (:func:`compbook.sae.experiment.method_name`) as the page writes it, with the symbol
    the prose uses: "S2AE (lambda=0.01)" -> "S2AE (λ = 0.01)"; "vanilla" unchanged."""
    return checks.instance(method, "method", str).replace("lambda=", "λ = ")


def summary(df: pd.DataFrame, columns) -> pd.DataFrame:
    """Mean ± 95% t-interval half-width over the rows of each ``method`` of ``df`` (one row per seed), as
    :func:`pm` writes them, and the number of seeds; one row per method (chapter 15's table at its k)."""
    from ..stats import t_interval

    checks.instance(df, "df", pd.DataFrame)
    missing = ({"method"} | set(columns)) - set(df.columns)
    if missing:
        raise ValueError(f"columns: {sorted(missing)} not in df ({sorted(df.columns)})")
    rows = {m: {**{c: pm(*t_interval(g[c].to_numpy(float))) for c in columns}, "seeds": len(g)}
            for m, g in df.groupby("method", sort=False)}
    return pd.DataFrame(rows).T


def differences(reading: pd.DataFrame) -> pd.DataFrame:
    """A table with ``"<c>"`` and ``"<c> ±"`` column pairs (a :func:`compbook.sae.studies.study.reading_table`) with
    each pair written as one signed :func:`pm` column."""
    out = reading.copy()
    for c in [c for c in reading.columns if f"{c} ±" in reading.columns]:
        out[c] = [pm(m, h, signed=True) for m, h in zip(reading[c], reading[f"{c} ±"])]
        out = out.drop(columns=f"{c} ±")
    return out


_SETTINGS = {   # SAETrainConfig field -> what it means on the page (chapter 15)
    "d_sae": "latents in the dictionary",
    "k": "TopK: latents kept per token",
    "lam": "λ, the weight of the penalties (0: vanilla)",
    "gs_weight": "weight of group sparsity GS",
    "es_weight": "weight of exclusive sparsity ES",
    "n_regions": "regions per image",
    "exponent": "power of the grid distance",
    "steps": "training steps",
    "batch_images": "images per batch",
    "lr": "learning rate (Adam)",
}


def config_table(cfg, **varied) -> pd.DataFrame:
    """The settings of an :class:`compbook.sae.s2ae.SAETrainConfig` that matter, one row each with its meaning;
    ``varied`` (field -> values) shows the values a study varies instead of ``cfg``'s one value."""
    from .s2ae import SAETrainConfig

    checks.instance(cfg, "cfg", SAETrainConfig)
    unknown = set(varied) - set(_SETTINGS)
    if unknown:
        raise ValueError(f"varied: {sorted(unknown)} are not shown settings ({sorted(_SETTINGS)})")
    rows = {}
    for name, meaning in _SETTINGS.items():
        value = varied.get(name, getattr(cfg, name))
        if name == "n_regions" and value is None:
            value = "min(20, patches)"
        elif isinstance(value, (tuple, list)):
            value = ", ".join(f"{v:g}" for v in value)
        elif isinstance(value, float):
            value = f"{value:g}"
        rows[meaning] = str(value)
    return pd.DataFrame({"value": rows})      # no index name: no empty header row on the page


def _grid_axes(n: int, ncols: int, height: float):
    nrows = -(-n // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(WIDTH, height * nrows), squeeze=False)
    for ax in axes.flat:
        ax.axis("off")
    return fig, axes.flat


def show_scenes(scenes, idx, ncols: int = 4):
    """Images with their captions (wrapped), one panel per scene index in ``idx``."""
    idx = checks.index(checks.sequence(idx, "idx"), "idx", len(scenes), "the scene set").tolist()
    captions = [scenes.vocab.decode(scenes.tokens[i].tolist()).replace(" and ", "\nand ") for i in idx]
    lines = max(c.count("\n") + 1 for c in captions)      # the tallest caption sets every row's room
    side, text = (WIDTH - 0.3) / ncols * 0.92, 0.19 * lines + 0.1    # an image's side, its caption's room (in)
    fig, axes = _grid_axes(len(idx), ncols, side + text)
    for ax, i, words in zip(axes, idx, captions):
        ax.imshow(scenes.images[i], interpolation="nearest")
        ax.set_title(words, fontsize=TITLE)     # captions are read: larger than tick labels
    height = fig.get_figheight()
    fig.subplots_adjust(left=0.02, right=0.98, bottom=0.01, top=1 - text / height, wspace=0.08,
                        hspace=text / side)       # the captions never run into the row above
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


#: the outline of a latent's active patches: magenta, a colour no scene object has (objects have black edges)
ACTIVE = "#ff00ff"


def _outline(ax, patch_mask: np.ndarray, grid: tuple, size: int, colour: str = ACTIVE):
    """Outline the patches where ``patch_mask`` (P,) is true on an image of ``size`` pixels drawn in ``ax``."""
    h = size // grid[0]
    big = np.kron(np.asarray(patch_mask, float).reshape(grid), np.ones((h, h)))
    big = np.pad(big, 1)      # closed outlines at the image's edge too
    at = np.arange(big.shape[0]) - 1.0      # pixel centres (the pad sits at -1 and size)
    # a white halo keeps the outline visible on grey and on colour
    for c, lw in (("white", 2.4), (colour, 1.4)):   # thin: the object shows
        ax.contour(at, at, big, levels=[0.5], colors=c, linewidths=lw)
    # a dot at each active patch's centre says which side of the outline is inside, without recolouring it
    rows, cols = np.nonzero(np.asarray(patch_mask).reshape(grid))
    ax.scatter((cols + 0.5) * h - 0.5, (rows + 0.5) * h - 0.5, s=14, c=colour, edgecolors="white",
               linewidths=0.8, zorder=3)


def show_latents(scenes, codes, latents, images_per_latent: int = 4, titles=None, notes=None, images=None):
    """For each latent (a row), images where it fires, drawn as they are, with the latent's active patches
    outlined in magenta (:data:`ACTIVE`, a colour no object has), a magenta dot at each one's centre.

    ``codes`` (N, P, d_sae) patch codes of ``scenes``. ``images``: per latent, the image indices to draw
    (default: the first ``images_per_latent`` images where it fires). ``notes``: per latent, N texts (one per
    image), each drawn under its image where the image is shown (chapter 14: the latent's IoU in that image).
    """
    if notes is not None and (len(notes) != len(latents) or any(len(n) != len(scenes) for n in notes)):
        raise ValueError(f"notes: expected {len(latents)} rows of {len(scenes)} texts (one per latent, one per "
                         "image)")
    if images is not None:
        if len(images) != len(latents):
            raise ValueError(f"images: expected {len(latents)} lists of image indices (one per latent), "
                             f"got {len(images)}")
        images = [checks.index(checks.sequence(ims, "images"), "images", len(scenes), "the scene set").tolist()
                  for ims in images]
        images_per_latent = max([1, *(len(ims) for ims in images)])
    active = np.asarray(codes != 0, dtype=np.float64)      # 1 where the latent fires on a patch, else 0
    fig, axes = plt.subplots(len(latents), images_per_latent, squeeze=False,
                             figsize=(WIDTH, (WIDTH / images_per_latent + 0.35 + 0.25 * (notes is not None)) * len(latents)))
    for r, j in enumerate(latents):
        where = (images[r] if images is not None
                 else np.flatnonzero(active[:, :, j].any(1))[:images_per_latent])
        for c in range(images_per_latent):
            ax = axes[r, c]
            ax.axis("off")
            if c < len(where):
                n = where[c]
                ax.imshow(scenes.images[n], interpolation="nearest")
                _outline(ax, active[n, :, j], scenes.grid, scenes.images[n].shape[0])
                ax.set_xlim(-0.5, scenes.images[n].shape[1] - 0.5)
                ax.set_ylim(scenes.images[n].shape[0] - 0.5, -0.5)
                if notes is not None:
                    ax.text(0.5, -0.03, notes[r][n], transform=ax.transAxes, ha="center", va="top",
                            fontsize=TITLE)
        axes[r, 0].set_title(titles[r] if titles else f"latent {j}", fontsize=TITLE, loc="left")
    fig.tight_layout()
    return fig


def _region_edges(lab: np.ndarray, h: int) -> list:
    """The line segments, in pixel coordinates, between neighbouring patches of different regions (``lab`` a
    (rows, cols) grid of region labels, ``h`` pixels a patch side)."""
    segs = []
    rows, cols = lab.shape
    for r in range(rows):
        for c in range(cols):
            if c + 1 < cols and lab[r, c] != lab[r, c + 1]:
                x = (c + 1) * h - 0.5
                segs.append([(x, r * h - 0.5), (x, (r + 1) * h - 0.5)])
            if r + 1 < rows and lab[r, c] != lab[r + 1, c]:
                y = (r + 1) * h - 0.5
                segs.append([(c * h - 0.5, y), ((c + 1) * h - 0.5, y)])
    return segs


#: show_regions: 20 colours chosen to be told apart (Trubetskoy's list), none black like the objects' boxes
REGION_COLOURS = ("#e6194b", "#3cb44b", "#ffe119", "#4363d8", "#f58231", "#911eb4", "#42d4f4", "#f032e6",
                  "#bfef45", "#fabed4", "#469990", "#dcbeff", "#9a6324", "#fffac8", "#800000", "#aaffc3",
                  "#808000", "#ffd8b1", "#000075", "#a9a9a9")


def region_pieces(lab: np.ndarray) -> list:
    """Chapter 15: where to mark the regions in more than one piece. ``lab`` (rows, cols) region labels; returns
    ``(letter, (row, col))`` per piece of each such region, the same letter (A, B, ...) for one region's pieces,
    at a patch of that piece (the patch nearest the piece's centre)."""
    from skimage.measure import label as pieces

    lab = np.asarray(lab)
    if lab.ndim != 2:
        raise ValueError(f"lab: expected a (rows, cols) grid of region labels, got shape {lab.shape}")
    out, letter = [], 0
    for region in np.unique(lab):
        parts, n = pieces(lab == region, connectivity=1, return_num=True)
        if n < 2:
            continue
        for part in range(1, n + 1):
            rc = np.argwhere(parts == part)
            centre = rc[np.abs(rc - rc.mean(0)).sum(1).argmin()]
            out.append((chr(ord("A") + letter % 26), (int(centre[0]), int(centre[1]))))
        letter += 1
    return out


def show_regions(scenes, idx, regions, title: str = "", width: float = WIDTH * 0.9, row_height: float = 3.0):
    """One row per scene index in ``idx`` (``regions`` (N, P) labels): left, the image in its true colours with
    the regions' borders (the image's edge included); right, each region filled with its own colour and the
    objects' patches outlined in black, so that one can see whether a region's border follows an object's. Each
    piece of a region in two or more pieces carries that region's letter (A, B, ...) on the right. ``width``,
    ``row_height``: the figure's width and each row's height in inches (chapter 15: one scene at the column's
    full width; the text keeps its size)."""
    from matplotlib import patheffects
    from matplotlib.collections import LineCollection
    from matplotlib.colors import ListedColormap

    idx = checks.index(checks.sequence(idx, "idx"), "idx", len(scenes), "the scene set").tolist()
    width = checks.real(width, "width", 0, low_open=True)
    row_height = checks.real(row_height, "row_height", 0, low_open=True)
    cmap = ListedColormap(REGION_COLOURS)
    fig, axes = plt.subplots(len(idx), 2, figsize=(width, row_height * len(idx) + 0.35 * bool(title)),
                             squeeze=False)
    for (left, right), i in zip(axes, idx):
        lab = np.unique(np.asarray(regions[i]), return_inverse=True)[1].reshape(scenes.grid)
        obj = np.asarray(scenes.labels[i]).reshape(scenes.grid)
        h = scenes.images[i].shape[0] // scenes.grid[0]
        size = h * scenes.grid[1]
        frame = [[(-0.5, -0.5), (size - 0.5, -0.5), (size - 0.5, size - 0.5), (-0.5, size - 0.5), (-0.5, -0.5)]]
        segs = _region_edges(lab, h)
        left.imshow(scenes.images[i], interpolation="nearest")
        right.imshow(np.kron(lab, np.ones((h, h))), cmap=cmap, vmin=-0.5, vmax=19.5, interpolation="nearest")
        for colour, lw in (("black", 3.2), ("white", 1.6)):   # white edged in black: shows on grey and colour
            left.add_collection(LineCollection(segs + frame, colors=colour, linewidths=lw))
        right.add_collection(LineCollection(segs, colors="white", linewidths=1.0))
        right.add_collection(LineCollection(_region_edges(obj, h) + frame, colors="black", linewidths=2.2))
        for letter, (r, c) in region_pieces(lab):      # the pieces of a split region share a letter
            right.text(c * h + h / 2 - 0.5, r * h + h / 2 - 0.5, letter, ha="center", va="center",
                       fontsize=TITLE + 3, fontweight="bold", color="black",
                       path_effects=[patheffects.withStroke(linewidth=2.5, foreground="white")])
        n = len(np.unique(lab))
        left.set_title(f"scene {i}: {n} regions, borders over the image", fontsize=LABEL)
        right.set_title(f"scene {i}: one colour per region;\nblack: the objects' patches", fontsize=LABEL)
        for ax in (left, right):
            ax.set_xlim(-1.5, size + 0.5)
            ax.set_ylim(size + 0.5, -1.5)
            ax.axis("off")
    if title:
        fig.suptitle(title, fontsize=TITLE)
    fig.tight_layout()
    return fig


def crop_window(mask: np.ndarray, side: int) -> tuple[int, int, int]:
    """The square window a zoomed reference tile shows (chapter 16): ``(top, left, size)`` in pixels, centred on
    the box around ``mask``'s True pixels, ``side`` pixels wide or wider where the box needs it (with a pixel's
    margin), and inside the image. ``mask`` (H, W) bool, not empty."""
    mask = np.asarray(mask)
    if mask.ndim != 2 or mask.dtype != bool or not mask.any():
        raise ValueError(f"mask: expected a (H, W) bool array with a True pixel, got {mask.dtype} {mask.shape}")
    rows, cols = np.nonzero(mask)
    side = checks.integer(side, "side", 1)
    size = min(max(side, np.ptp(rows) + 3, np.ptp(cols) + 3), *mask.shape)

    def start(lo, hi, length):      # centre on the box, then keep the window inside the image
        return int(min(max((lo + hi + 1 - size) // 2, 0), length - size))

    return start(rows.min(), rows.max(), mask.shape[0]), start(cols.min(), cols.max(), mask.shape[1]), int(size)


def show_references(scenes, refs, masks, descriptions, title: str = "", crop: int | None = None):
    """One latent's reference images (a row) with its region outlined in red and each region's description below.

    ``refs`` (K,) scene indices; ``masks`` (K, H, W) bool pixel masks; ``descriptions`` K strings (chapter 16).
    At most three tiles a row, so that each tile is over an inch and a half wide at the page's width. ``crop``: each
    tile with a region shows only the :func:`crop_window` of that many pixels around it (a zoom), None the whole
    image.
    """
    if crop is not None:
        crop = checks.integer(crop, "crop", 1)
    ncols = min(len(refs), 3)
    nrows = -(-len(refs) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(WIDTH, 2.3 * nrows + 0.2 * (title.count("\n") + 1)),
                             squeeze=False)
    for ax in axes.flat[len(refs):]:
        ax.axis("off")
    for ax, n, m, d in zip(axes.flat, refs, masks, descriptions):
        ax.imshow(scenes.images[n], interpolation="nearest")
        height, width = scenes.images[n].shape[:2]
        if np.any(m):       # the region's outline, so that the colours under it stay true
            # padded, so that the outline closes along the image's edge where the region reaches it
            big = np.pad(np.kron(np.asarray(m, float), np.ones((4, 4))), 1)
            xs, ys = ((np.arange(size) - 0.5) / 4 - 0.5 for size in (big.shape[1], big.shape[0]))
            for colour, lw in (("white", 4.5), ("red", 2.5)):   # red with a white edge: it shows on red too
                ax.contour(xs, ys, big, levels=[0.5], colors=colour, linewidths=lw)
        ax.set_xlim(-1.5, width + 0.5)      # a pixel's margin: an outline along the edge shows whole
        ax.set_ylim(height + 0.5, -1.5)
        if crop is not None and np.any(m):
            top, left, size = crop_window(np.asarray(m, bool), crop)
            ax.set_xlim(left - 1.5, left + size + 0.5)     # the same pixel's margin
            ax.set_ylim(top + size + 0.5, top - 1.5)
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_xlabel(d.replace(" and ", "\nand "), fontsize=TITLE)
    if title:
        fig.suptitle(title, fontsize=TITLE)
    fig.tight_layout()
    return fig


def top_words_said(words) -> str:
    """A latent's top caption words (:func:`compbook.sae.interpret.top_words`) in a few words, each distinct word
    with its count, most frequent first: ["red", "red", "'a'"] -> "red x2, 'a'"."""
    from collections import Counter

    counts = Counter(checks.sequence(words, "words", min_len=0))
    return ", ".join(w if c == 1 else f"{w} x{c}" for w, c in counts.most_common()) or "(none)"


def show_interpretation(scenes, z_img, row, hierarchical: bool = True, crop: int | None = None):
    """One row of :func:`compbook.sae.interpret.interpret`: the references with the latent's region (none when
    ``hierarchical`` is False), the descriptions, and in the title the truth, the summarised concepts and the
    words of the caption tokens where the latent fires hardest (the text concept is read from them). ``crop``:
    zoom each tile on its region (:func:`show_references`)."""
    import torch

    from .interpret import region_masks

    refs = torch.tensor([row["references"]])
    masks = region_masks(z_img, refs, [row["latent"]], scenes.grid, scenes.images.shape[1])[0]
    reading = "hierarchical reading" if hierarchical else "direct reading (whole images, no region)"
    words = list(row["top words"])
    title = (f"{reading} of latent {row['latent']}; truth: {row['truth']}\n"
             f"summarised: image concept {row['image concept']} | text concept {row['text concept']}\n"
             f"words of the {len(words)} caption token{'' if len(words) == 1 else 's'} where it fires most: "
             f"{top_words_said(words)}")
    return show_references(scenes, row["references"], masks if hierarchical else 0 * masks,
                           row["descriptions"], title, crop=crop)


def _mean_half(values) -> tuple[float, float]:
    from ..stats import t_interval
    return t_interval(np.asarray(values, dtype=float))


_MARKERS = ("o", "s", "^", "D")   # plot_study: one marker shape per lambda


def plot_study(study, columns=("EV", "L0 (% of k)", "mIoU"), chosen_k: int | None = None,
               ev_target: float | None = None):
    """Chapter 15's figure: each of ``columns`` against k, one line per lambda (mean over seeds with its 95%
    t-interval as error bars; each lambda has its own marker shape and its points are shifted sideways so
    that they do not overlap). ``study``: :func:`compbook.sae.studies.study.study_table` rows; the column
    ``"L0 (% of k)"`` is L0 on image patches as a percentage of k (as the chapter's prose gives it). ``chosen_k``
    is marked by a vertical line, ``ev_target`` (the paper's EV regime) by a dashed one."""
    from .experiment import method_name

    df = study.assign(**{"L0 (% of k)": 100 * study["L0 patches"] / study.k})
    missing = set(columns) - set(df.columns)
    if missing:
        raise ValueError(f"columns: {sorted(missing)} not in the study table")
    ks = sorted(df.k.unique())
    rows = math.ceil(len(columns) / 2)      # two panels a row, the legend in a free slot (or below them)
    fig, grid = plt.subplots(rows, 2, figsize=(WIDTH, 2.6 * rows + 0.3), squeeze=False)
    for ax in grid.flat[len(columns):]:
        fig.delaxes(ax)
    axes = grid.flat[:len(columns)]
    n_lams = df["lambda"].nunique()
    for ax, c in zip(axes, columns):
        for i, (lam, g) in enumerate(df.groupby("lambda")):
            stats = [_mean_half(g[g.k == k][c]) for k in ks]
            # a sideways offset and a marker shape per lambda: equal points stay apart and tell apart
            x = np.array(ks) * 2 ** (0.06 * (i - (n_lams - 1) / 2))   # a marker wide: slopes stay true
            ax.errorbar(x, [m for m, _ in stats], yerr=[h for _, h in stats], fmt=_MARKERS[i % len(_MARKERS)] + "-",
                        ms=5.5, mec="white", mew=0.8, lw=1.0, capsize=3, capthick=1.2, elinewidth=1.4,
                        zorder=3 + i, label=label(method_name(lam)))   # white edges: a marker stands out on a line
        if chosen_k is not None:
            ax.axvline(chosen_k, color="grey", lw=0.8, ls=":")
        if ev_target is not None and c == "EV":
            ax.axhline(ev_target, color="grey", lw=0.8, ls="--")
        ax.set_xscale("log", base=2)
        ax.set_xticks(ks, [str(k) for k in ks])
        ax.minorticks_off()
        ax.set_title(c, fontsize=TITLE)
        ax.set_xlabel("k (log scale)", fontsize=TITLE)
        ax.tick_params(labelsize=TITLE)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.tight_layout(w_pad=2.5, h_pad=1.5)
    if len(columns) % 2:          # the legend in the free slot beside the last panel, over no data
        box = axes[-1].get_position()
        fig.legend(handles, labels, fontsize=TITLE, loc="center", frameon=False,
                   bbox_to_anchor=(0.75, (box.y0 + box.y1) / 2))
    else:                         # no free slot: a row of its own under the panels
        fig.subplots_adjust(bottom=0.18)
        fig.legend(handles, labels, fontsize=TITLE, loc="lower center", ncol=len(labels), frameon=False)
    return fig


_PANELS = {   # identification_table column -> its panel's title (chapter 16)
    "identified": "all latents read",
    "identified (objects)": "latents whose truth is not the background\n(a colour, a shape or an object type)",
}


def plot_identification(ident, paper: dict | None = None, columns=("identified", "identified (objects)")):
    """Chapter 16's figure: identification rates per SAE (vanilla, S2AE) and pipeline (hierarchical, direct), mean
    over seeds with its 95% t-interval, one panel per column of ``ident``
    (:func:`compbook.sae.interpret.identification_table`). ``paper``: {"hierarchical": rate, "direct": rate},
    drawn as dashed lines in the first panel and labelled as the paper's."""
    split = ident.method.str.rsplit(", ", n=1, expand=True)
    df = ident.assign(sae=split[0], pipeline=split[1])
    saes, pipelines = list(dict.fromkeys(df.sae)), ["hierarchical", "direct"]
    if set(df.pipeline) - set(pipelines):
        raise ValueError(f"ident: pipelines {sorted(set(df.pipeline))}, expected {pipelines}")
    fig, axes = plt.subplots(1, len(columns), figsize=(WIDTH, 3.0), squeeze=False, sharey=True)
    colours = {"hierarchical": "tab:blue", "direct": "tab:orange"}
    for ax, c in zip(axes.flat, columns):
        for j, p in enumerate(pipelines):
            stats = [_mean_half(df[(df.sae == s) & (df.pipeline == p)][c]) for s in saes]
            x = np.arange(len(saes)) + (j - 0.5) * 0.38
            ax.bar(x, [m for m, _ in stats], 0.36, yerr=[h for _, h in stats], capsize=3, color=colours[p],
                   label=p)
        ax.set_xticks(np.arange(len(saes)), [s.split(" (")[0] for s in saes], fontsize=LABEL)
        ax.set_title(_PANELS.get(c, c), fontsize=TITLE)
        ax.set_ylim(0, 1.1)                       # room above 1: the paper's 0.988 stays visible
        ax.set_yticks([0, 0.25, 0.5, 0.75, 1])
        ax.tick_params(labelsize=FONT, labelleft=True)   # every panel labels the shared axis
    if paper:
        for p, rate in paper.items():
            axes.flat[0].axhline(rate, color=colours.get(p, "grey"), ls="--", lw=1.5, label=f"the paper, {p}")
    axes.flat[0].set_ylabel("share identified", fontsize=LABEL)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=LABEL, loc="upper center", ncol=len(labels), frameon=False)
    fig.tight_layout(rect=(0, 0, 1, 0.88))       # the legend above the panels, over no data
    return fig


def plot_reading_rule(cases, paper_size: float = 1.0, paper_sign: int = 1,
                      xlabel: str = "S2AE minus vanilla\n(dotted: half the paper's effect; dashed: all of it)"):
    """Chapter 15's reading rule as a picture: each case ``(label, mean, half)`` (a difference and its 95%
    half-width) drawn as an interval against 0, half the paper's effect and the paper's effect, with the reading
    that :func:`compbook.stats.reread` gives it on the right. ``paper_size`` > 0, ``paper_sign`` the side of 0
    the paper's effect lies on (+1 a gain, -1 a drop)."""

    cases = list(checks.sequence(cases, "cases", 1))
    checks.real(paper_size, "paper_size", 0, low_open=True)
    if paper_sign not in (-1, 1):
        raise ValueError(f"paper_sign={paper_sign!r}: expected -1 or +1")
    fig, ax = plt.subplots(figsize=(WIDTH, 0.6 * len(cases) + 1.3))
    colours = {"reproduced": "#1a7f1a", "direction": "#8a5a00", "not": "#c00000", "inconclusive": "#555555"}
    for i, case in enumerate(cases):
        label, mean, half = case
        verdict = reread(mean, half, paper_sign, paper_size)
        y = len(cases) - 1 - i
        colour = colours[verdict.split()[0]]
        ax.errorbar(mean, y, xerr=half, fmt="o", capsize=4, color=colour, ms=5)
        ax.text(1.02, y, verdict.replace(" (", "\n("), transform=ax.get_yaxis_transform(), va="center",
                fontsize=RULE, color=colour)
    p = paper_sign * paper_size
    ax.axvline(0, color="black", lw=0.8)
    ax.axvline(p / 2, color="grey", lw=0.8, ls=":")
    ax.axvline(p, color="grey", lw=0.8, ls="--")
    ax.set_yticks(range(len(cases)), [c[0].replace(": ", ":\n", 1) for c in reversed(cases)], fontsize=RULE)
    ax.set_ylim(-0.6, len(cases) - 0.4)
    ax.set_xlabel(xlabel, fontsize=RULE)
    low, high = ax.get_xlim()                     # 0, half and the whole paper's effect spread out
    low = min(low, -0.6 * paper_size if p > 0 else 1.6 * p)
    high = max(high, 1.6 * p if p > 0 else 0.6 * paper_size)
    ax.set_xlim(low, high)
    ticks, labels = _rule_ticks(low, high, p)
    ax.set_xticks(ticks, labels)
    ax.tick_params(axis="x", labelsize=RULE)
    fig.subplots_adjust(left=0.21, right=0.66, bottom=1.0 / fig.get_figheight(), top=1 - 0.15 / fig.get_figheight())
    # room on the left for the cases' names and on the right for the readings
    return fig


def _rule_ticks(low: float, high: float, p: float) -> tuple[list, list]:
    """The reading rule's x ticks: every multiple of half the paper's effect ``p`` in [low, high] (at most 7 of
    them, else every whole one), with 0, "half" and "paper" named under their numbers."""
    step = abs(p) / 2
    if (high - low) / step > 7:
        step = abs(p)
    ticks = [step * n for n in range(math.ceil(low / step), math.floor(high / step) + 1)]
    names = {0.0: "0", p / 2: "half", p: "paper"}
    labels = [f"{t:g}" + next((f"\n{n}" for v, n in names.items() if n != "0" and math.isclose(t, v)), "")
              for t in ticks]
    return ticks, labels


def caption_labels(scenes, labellings: dict, i: int = 0) -> pd.DataFrame:
    """The labels each labelling gives the caption tokens of scene ``i`` (chapter 16): one row per token (padding
    left out), one column per labelling of ``labellings`` (name -> :class:`compbook.sae.crossmodal.ConceptLabels`),
    the labels joined by ", " ("-" for none)."""
    checks.index(i, "i", len(scenes), "the scene set")
    if not isinstance(labellings, dict) or not labellings:
        raise ValueError("labellings must be a non-empty dict: name -> ConceptLabels")
    vocab = scenes.vocab
    ids = scenes.tokens[i].tolist()
    keep = [t for t, w in enumerate(ids) if w != vocab.pad_id]
    out = {}
    for name, lab in labellings.items():
        names = np.asarray(lab.names)
        out[name] = [", ".join(names[np.flatnonzero(lab.tokens[i, t].numpy())]) or "-" for t in keep]
    return pd.DataFrame(out, index=pd.Index([vocab.tokens[ids[t]] for t in keep], name="token"))
