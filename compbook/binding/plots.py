"""Figures of chapters 10-13: scenes with their masks, one scene's logits, recognition per split, scenes as
sums (arrows that agree), decoding through the probe's MLP (controlled and image encoders), the swap test against
coverage."""

from __future__ import annotations

import matplotlib.pyplot as plt
from matplotlib import patheffects
import numpy as np

from .. import checks, scenes as S


def scene_figure(scene: S.Scene, title: str | None = None, width: float = 4.8):
    """The image and its masks side by side, ``width`` inches for both; the masks in grays (the left object dark,
    the right one light, the canvas white), with a key under them."""
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch
    fig, ax = plt.subplots(1, 2, figsize=(width, width / 2 + 0.7), layout="constrained")
    ax[0].imshow(scene.image)
    lab = np.zeros(scene.masks.shape[1:], int)
    for i, m in enumerate(scene.masks[:2]):
        lab[m] = i + 1
    grays = ["white", "0.2", "0.65"]
    ax[1].imshow(lab, cmap=ListedColormap(grays), vmin=0, vmax=2, interpolation="nearest")
    for a, t in zip(ax, ("image", "masks")):
        a.set_title(t, fontsize=9)
        a.set_xticks([])
        a.set_yticks([])
    ax[1].legend([Patch(fc=g, ec="0.5") for g in grays[1:]], ["left object", "right object"], fontsize=9,
                 loc="upper center", bbox_to_anchor=(0.5, 0), ncols=2, frameon=False, handlelength=1)
    fig.suptitle(title or scene.caption, fontsize=9)
    return fig


def logit_grid(ax, logits, space, present=(), swapped=(), title="", values: bool = False, clim=None):
    """One scene's cosine logits for every object query as a (colour x shape) grid; P = present, S = swapped.
    ``values``: write each cell's cosine in it (chapter 10), after its P or S mark, dark on bright cells and
    light on dark ones. ``clim``: the colour scale's (low, high), default the grid's own range."""
    values = checks.boolean(values, "values")
    k_col, k_shp = space.concept_index("colour"), space.concept_index("shape")
    grid = np.zeros((space.sizes[k_col], space.sizes[k_shp]))
    for o in range(space.n_objects):
        v = space.object_values(o)
        grid[v[k_col], v[k_shp]] = logits[o]
    im = ax.imshow(grid, cmap="viridis", aspect="auto")
    if clim is not None:
        low, high = checks.reals(clim, "clim", ndim=1)
        if not low < high:
            raise ValueError(f"clim must be (low, high) with low < high, got {clim!r:.80}")
        im.set_clim(low, high)
    marks = {int(o): "P" for o in present} | {int(o): "S" for o in swapped}
    for o in range(space.n_objects) if values else marks:
        v = space.object_values(o)
        r, c = v[k_col], v[k_shp]
        text = " ".join(filter(None, (marks.get(o, ""), f"{grid[r, c]:.2f}" if values else "")))
        style = (dict(weight="bold" if o in marks else "normal",   # plain text, its colour against the cell's
                      color="k" if im.norm(grid[r, c]) > 0.55 else "w") if values
                 else dict(weight="bold", color="w",                 # a stroke: legible on yellow too
                           path_effects=[patheffects.withStroke(linewidth=2, foreground="k")]))
        ax.text(c, r, text, ha="center", va="center", fontsize=9, **style)
    ax.set_xticks(range(space.sizes[k_shp]), space.values[k_shp], fontsize=8)
    ax.set_yticks(range(space.sizes[k_col]), space.values[k_col], fontsize=8)
    ax.set_title(title, fontsize=9)
    return im


def grouped_bar_positions(n_groups: int, n_bars: int, span: float) -> tuple[list[np.ndarray], float]:
    """Where grouped bars go (chapters 10 and 12): ``n_groups`` groups centred on 0, 1, ..., each of ``n_bars``
    bars side by side filling ``span`` (in (0, 1]) of the unit between groups. Returns ``(xs, width)``: ``xs[j]``
    the (n_groups,) centres of bar j in every group, ``width`` one bar's width."""
    checks.integer(n_groups, "n_groups", 1)
    checks.integer(n_bars, "n_bars", 1)
    checks.real(span, "span", 0, 1, low_open=True)
    width = span / n_bars
    return [np.arange(n_groups) + (j - (n_bars - 1) / 2) * width for j in range(n_bars)], width


RECOGNITION_LABELS = {"concept": "concepts", "object": "objects", "swap": "swapped\nonly",
                      "caption": "own vs\nswapped\ncaption"}   # chapter 10's measures, as the axis names them


def recognition_figure(table, measures, chance: dict, width: float = 7.0):
    """Chapter 10's result: one panel per model kind, bars = the splits, grouped by measure.

    ``table``: a DataFrame with columns ``model``, ``scenes`` and one column per measure; ``measures``: the
    columns, as a list (labelled by ``RECOGNITION_LABELS``) or a dict column -> label on the axis; ``chance``: split (a value of ``scenes``) -> {column: a random order's score on that
    split's scenes}, drawn as a thin dashed black line across each bar (with a black triangle above it when under 0.05,
    where the line would hide on the axis). A bar too short to see is outlined at its true height (a bar at 0 is a
    line on the axis) and its value written above it (above its chance line too, where the two would meet); the
    legend sits below the panels, off the data.
    """
    if not isinstance(measures, dict):
        measures = {m: RECOGNITION_LABELS.get(m, m) for m in measures}
    kinds = list(dict.fromkeys(table["model"]))
    splits = list(dict.fromkeys(table["scenes"]))
    missing = [sp for sp in splits if sp not in chance]
    if missing:
        raise ValueError(f"chance: need a dict per split, missing {missing}")
    fig, axes = plt.subplots(1, len(kinds), figsize=(width, 3.4), sharey=True, squeeze=False,
                             layout="constrained")
    positions, w = grouped_bar_positions(len(measures), len(splits), 0.7)
    for ax, kind in zip(axes[0], kinds):
        rows = table[table["model"] == kind].set_index("scenes")
        marked = False                       # the "chance near 0" triangle is labelled once per panel
        for j, (split, xs) in enumerate(zip(splits, positions)):
            heights = [rows.loc[split, m] for m in measures]
            ax.bar(xs, heights, w, color=f"C{j}", label=split)
            for xi, h, m in zip(xs, heights, measures):
                if h < 0.05:     # outlined at its true height (at 0: a line on the axis), its value on top
                    ax.bar(xi, h, w, fill=False, edgecolor="k", lw=0.6)
                    above = 0.09 if chance[split].get(m, 1) < 0.05 else 0.03   # over the triangle
                    above += 0.06 * j              # staggered: two stubs side by side stay apart
                    c = chance[split].get(m)
                    if c is not None and above - 0.02 < c < above + 0.2:   # the upright value would cross
                        above = c + 0.03                                   # its chance line: sit above it
                    ax.text(xi, above, f"{h:.2f}", ha="center", va="bottom", fontsize=9, color="k",
                            rotation=90)           # upright: as narrow as its bar, clear of the next
            for i, (xi, m) in enumerate(zip(xs, measures)):
                if m in chance[split]:
                    ax.hlines(chance[split][m], xi - w / 2, xi + w / 2, color="k", lw=1.2, ls=(0, (2, 1.5)),
                              zorder=3, label="chance" if i == 0 and j == 0 else None)   # thin: a bar's top shows
                    if chance[split][m] < 0.05:          # a line on the axis hides: point to it
                        ax.plot(xi, chance[split][m] + 0.045, "kv", ms=6, zorder=4,
                                label=None if marked else "chance near 0")
                        marked = True
        ax.set_xticks(range(len(measures)), list(measures.values()), fontsize=10)
        ax.tick_params(axis="y", labelsize=10)
        ax.set_ylim(0, 1)
        ax.set_title(kind, fontsize=10)
    axes[0][0].set_ylabel("share of scenes passing\n(mean of the models)", fontsize=10)
    fig.legend(*axes[0][0].get_legend_handles_labels(), loc="outside lower center", ncols=len(splits) + 2,
               fontsize=9)
    return fig


# -- chapter 11: scenes as sums, seen as arrows that agree ---------------------------------------------------------
def arrows_figure(cosines: dict, width: float = 7.0):
    """Chapter 11's opening figure: per embedding (a row), the spread of
    :func:`~compbook.binding.decomposition.arrow_agreement` (``cosines`` ``{name: (n,) cosines}``): a box from the
    first to the third quartile, whiskers from the 5th to the 95th percentile, the median in the row's label.
    Where the rows fall in two clusters (unrelated near 0, agreeing near 1), the x axis is broken in two so that
    both sets of boxes are wide enough to read."""
    names = list(cosines)
    data = [np.asarray(cosines[k], float) for k in names]
    lo5 = [float(np.percentile(c, 5)) for c in data]
    hi95 = [float(np.percentile(c, 95)) for c in data]
    near1 = [lo > 0.5 for lo in lo5]
    ranges = [(min(lo5) - 0.05, 1.02)]
    if any(near1) and not all(near1):
        low_hi = max(h for h, n in zip(hi95, near1) if not n)
        high_lo = min(lo for lo, n in zip(lo5, near1) if n)
        if low_hi < high_lo - 0.2:                   # two clusters: two axes, each zoomed on one
            ranges = [(min(lo5) - 0.05, low_hi + 0.05), (high_lo - 0.03, 1.01)]
    fig, axes = plt.subplots(1, len(ranges), figsize=(width, 0.55 * len(names) + 1.1), sharey=True,
                             squeeze=False, layout="constrained",
                             gridspec_kw={"width_ratios": [1] * len(ranges)})
    import inspect                      # matplotlib >= 3.10 names it orientation; `vert` is deprecated there
    horizontal = ({"orientation": "horizontal"} if "orientation" in inspect.signature(plt.Axes.boxplot).parameters
                  else {"vert": False})
    for ax, (a, b) in zip(axes[0], ranges):
        ax.boxplot(data, **horizontal, whis=(5, 95), showfliers=False, widths=0.6,
                   medianprops=dict(color="tab:red", lw=2))
        ax.set_xlim(a, b)
        if a < 0 < b:
            ax.axvline(0, color="0.7", lw=0.8, zorder=0)
        ax.tick_params(axis="x", labelsize=9)
    medians = [round(float(np.median(c)), 2) + 0.0 for c in data]            # + 0.0: no "-0.00"
    axes[0][0].set_yticks(range(1, len(names) + 1), [f"{k}\nmedian {m:.2f}" for k, m in zip(names, medians)],
                          fontsize=9)
    axes[0][0].invert_yaxis()
    if len(ranges) == 2:
        axes[0][0].spines["right"].set_linestyle((0, (4, 3)))
        axes[0][1].spines["left"].set_linestyle((0, (4, 3)))
        axes[0][1].tick_params(axis="y", left=False)
    fig.supxlabel("cosine between the two arrows (1: the same arrow, 0: unrelated)"
                  + ("; the axis is cut between the panels" if len(ranges) == 2 else ""), fontsize=9)
    return fig


def level1_figure(level1, embeddings, n_scenes: int, width: float = 7.0):
    """Chapter 11: Level I R^2 and retrieval per embedding, bars = how the object vectors were estimated;
    ``level1`` a DataFrame with columns embedding, object vectors, R2, retrieval. Both axes run 0..1; the legend
    sits under the panels."""
    fig, axes = plt.subplots(1, 2, figsize=(width, 3.8), sharey=True, layout="constrained")
    for ax, (what, label) in zip(axes, (("R2", "R²"), ("retrieval", f"retrieval (top-1 of {n_scenes})"))):
        wide = level1.pivot(index="embedding", columns="object vectors", values=what).loc[list(embeddings)]
        wide.plot.bar(ax=ax, rot=0, legend=False, width=0.8)
        ax.set_title(f"Level I: {label}", fontsize=11)
        ax.set_xticks(range(len(wide)), [e.replace(", ", ",\n") for e in wide.index])
        ax.set_xlabel("")
        ax.set_ylim(0, 1)
        ax.tick_params(labelsize=11)
    handles, names = axes[0].get_legend_handles_labels()
    fig.legend(handles, names, title="object vectors", loc="outside lower center", ncols=len(names),
               fontsize=11, title_fontsize=11, frameon=False)
    return fig


# -- chapter 12: decoding held-out objects through the probe's MLP --------------------------------------------------
def _shared_legend(axes) -> tuple[list, list]:
    """The legend entries of all ``axes``, each label once (for one figure legend over panels that share them)."""
    handles, names = [], []
    for ax in axes:
        for h, n in zip(*ax.get_legend_handles_labels()):
            if n not in names:
                handles.append(h), names.append(n)
    return handles, names


def decoding_figure(table, references: dict, width: float = 7.0):
    """Chapter 12's figure: concept and object decoding of held-out-object scenes against coverage: the encoder
    itself (width 0, black) and the MLP's predictions (width > 0) as one line, their mean over the widths, in a
    band from the lowest to the highest width's reading (the widths hardly differ: one line each would hide one
    another); ``table`` columns coverage, width, concept, object; ``references`` ``{"concept": (value, label,
    (x0, x1)), "object": ...}``: a reference level drawn only over the coverages ``x0..x1`` it applies to,
    concept and object in distinct colours and dashes, drawn under the encoder's points (a reference level must
    not hide a reading) and the MLP's white-edged markers. The legend sits below the
    panels; the coverage ticks read 0 to 1 without trailing zeros (neighbouring panels' end labels stay apart)."""
    fig, axes = plt.subplots(1, 2, figsize=(width, 5.0), sharey=True, layout="constrained")
    real, mlp = table[table["width"] == 0], table[table["width"] > 0]
    widths = sorted(mlp["width"].unique())
    for ax, what in zip(axes, ("concept", "object")):
        ax.plot(real.coverage, real[what], marker="o", ms=4, lw=2, color="k", label="the encoder itself",
                zorder=2)
        g = mlp.groupby("coverage")[what]
        if len(widths):
            ax.fill_between(g.min().index, g.min(), g.max(), color="tab:green", alpha=0.25, lw=0,
                            label=f"MLP, lowest to highest of\nwidths {widths[0]:,} to {widths[-1]:,}")
            ax.plot(g.mean().index, g.mean(), marker="o", ms=5, mec="white", mew=0.8, lw=1.5,
                    color="tab:green", label="MLP, mean over widths", zorder=4)
        value, label, (x0, x1) = references[what]
        color, ls = ("tab:red", ":") if what == "concept" else ("tab:purple", "-.")
        ax.hlines(value, x0, x1, color=color, ls=ls, lw=2, alpha=0.9, zorder=1, label=label)
        ax.set_xlabel("coverage", fontsize=11)
        ax.set_title(f"{what} decoding", fontsize=11)
        ax.set_xlim(0, 1)
        ax.set_xticks([0, 0.25, 0.5, 0.75, 1], ["0", "0.25", "0.5", "0.75", "1"])
        ax.set_ylim(0, 1)
        ax.tick_params(labelsize=11)
    axes[0].set_ylabel("accuracy on held-out objects", fontsize=11)
    handles, names = _shared_legend(axes)
    fig.legend(handles, names, loc="outside lower center", ncols=2, fontsize=11, frameon=False)
    return fig


def encoders_decoding_figure(table, chance: float, width: float = 7.0):
    """Chapter 12's image encoders: concept and object decoding of held-out-object scenes, one group of bars per
    training recipe: the encoder itself (width 0, black) and the MLP's predictions at each width (greens).
    ``table`` columns trained, width, concept, object; ``chance``: the object probes' chance (a dashed line)."""
    fig, axes = plt.subplots(1, 2, figsize=(width, 2.9), sharey=True)
    recipes = list(dict.fromkeys(table["trained"]))
    widths = sorted(table["width"].unique())
    step = 0.8 / len(widths)
    for ax, what in zip(axes, ("concept", "object")):
        for k, w in enumerate(widths):
            rows = table[table["width"] == w].groupby("trained")[what].mean()
            shade = plt.cm.Greens(0.4 + 0.5 * k / max(len(widths) - 1, 1))
            ax.bar(np.arange(len(recipes)) + (k - (len(widths) - 1) / 2) * step, [rows[r] for r in recipes],
                   step, color="k" if w == 0 else shade, label="the encoder itself" if w == 0 else f"MLP, width {w:,}",
                   zorder=2)
        if what == "object":   # over the bars, so that it shows where a bar is below chance
            ax.axhline(chance, color="tab:red", ls="--", lw=1.4, label="chance (objects)", zorder=3)
        ax.set_xticks(range(len(recipes)), [f"trained\n{r}" for r in recipes], fontsize=9)
        ax.set_title(f"{what} decoding", fontsize=9)
        ax.set_ylim(0, 1)
        ax.tick_params(labelsize=9)
    axes[0].set_ylabel("accuracy on held-out objects", fontsize=9)
    handles, names = _shared_legend(axes)
    fig.legend(handles, names, loc="center left", bbox_to_anchor=(0.74, 0.5), fontsize=9, frameon=False)
    fig.tight_layout(rect=(0, 0, 0.74, 1))
    return fig


def held_out_grid(space: S.ObjectSpace, test_objects, width: float = 7.0):
    """Chapter 12's question in a picture: every object of a two-concept ``space`` (colour x shape), one tile
    each, its shape drawn in its colour; the ``test_objects`` (held out of training) on a grey tile marked
    "held out". Each held-out object's colour and shape also appear among the seen objects."""
    colours, shapes = space.values
    markers = {"square": "s", "triangle": "^", "circle": "o"}
    held = set(np.asarray(test_objects).tolist())
    fig, ax = plt.subplots(figsize=(width, 0.62 * len(shapes) + 0.9), layout="constrained")
    for i in range(space.n_objects):
        c, k = space.object_values(i)
        x, y = c, len(shapes) - 1 - k
        if i in held:
            ax.add_patch(plt.Rectangle((x - 0.46, y - 0.46), 0.92, 0.92, color="0.82", zorder=0))
            ax.text(x, y - 0.36, "held out", ha="center", va="center", fontsize=9)
        ax.plot(x, y + 0.06, markers.get(shapes[k], "D"), ms=17, color=colours[c], mec="k", mew=0.6)
    ax.set_xticks(range(len(colours)), colours, fontsize=9)
    ax.set_yticks(range(len(shapes)), shapes[::-1], fontsize=9)
    ax.set_xlim(-0.5, len(colours) - 0.5), ax.set_ylim(-0.5, len(shapes) - 0.5)
    ax.tick_params(length=0)
    for side in ax.spines.values():
        side.set_visible(False)
    n = len(held)
    ax.set_title(f"chapter 10's {space.n_objects} objects: {space.n_objects - n} seen in training, {n} held out",
                 fontsize=10)
    return fig


def carry_over_figure(controlled, images, chance: float, image_coverage: float | None = None,
                      width: float = 7.0, controlled_chance: float | None = None):
    """Chapter 12's main figure: object decoding of held-out-object scenes, the encoder itself (black: the
    ceiling) against the probe's MLP (green; blue bars on the right).
    Left, the controlled models against coverage: the MLP's mean over
    its widths as a line in a band from the lowest to the highest width's reading (``controlled`` columns
    coverage, width, object; width 0 = the encoder itself). Right, chapter 10's image encoders: one group of bars
    per training recipe (``images`` columns trained, width, object), with ``chance`` dashed.
    ``image_coverage``: the image encoders' coverage, marked on the left panel (a grey dotted line) and named in
    the right panel's title, so that the two can be compared at the same coverage. ``controlled_chance``: the
    controlled models' chance (1 / their number of objects), dashed on the left panel; a share in (0, 1)."""
    checks.real(chance, "chance", 0, 1, low_open=True, high_open=True)
    if controlled_chance is not None:
        checks.real(controlled_chance, "controlled_chance", 0, 1, low_open=True, high_open=True)
    fig, (left, right) = plt.subplots(1, 2, figsize=(width, 3.9), sharey=True, layout="constrained",
                                      gridspec_kw={"width_ratios": (1.35, 1)})
    real, mlp = controlled[controlled["width"] == 0], controlled[controlled["width"] > 0]
    left.plot(real.coverage, real["object"], marker="o", ms=5, lw=2, color="k",
              label="the encoder itself (the ceiling)", zorder=3)
    g = mlp.groupby("coverage")["object"]
    left.fill_between(g.min().index, g.min(), g.max(), color="tab:green", alpha=0.25, lw=0, zorder=2)
    left.plot(g.mean().index, g.mean(), marker="o", ms=5, mec="white", mew=0.8, lw=1.5, color="tab:green",
              label="the MLP's predictions (mean\nover widths; band: their range)", zorder=4)
    if image_coverage is not None:
        left.axvline(image_coverage, color="0.5", ls=":", lw=1.4, zorder=1, label="chapter 10's coverage")
    if controlled_chance is not None:
        left.axhline(controlled_chance, color="tab:red", ls="--", lw=1.4, label="chance", zorder=3)
    left.set_xlabel("coverage (share of objects seen in training)", fontsize=11)
    left.set_xlim(0, 1)
    left.set_xticks([0, 0.25, 0.5, 0.75, 1], ["0", "0.25", "0.5", "0.75", "1"])
    left.set_title("controlled models (tokens)" + ("" if image_coverage is None else "\n"), fontsize=11)
    recipes = list(dict.fromkeys(images["trained"]))
    widths = sorted(images["width"].unique())
    positions, step = grouped_bar_positions(len(recipes), len(widths), 0.8)
    for k, (w, xs) in enumerate(zip(widths, positions)):
        rows = images[images["width"] == w].groupby("trained")["object"].mean()
        # blue shades, darker with width: unlike the left panel's green line and band
        shade = plt.cm.GnBu(0.55 + 0.4 * k / max(len(widths) - 1, 1))
        right.bar(xs, [rows[r] for r in recipes], step, color="k" if w == 0 else shade, zorder=2,
                  label="the encoder itself (bars)" if w == 0 else f"MLP, width {w:,}")
    right.axhline(chance, color="tab:red", ls="--", lw=1.4, label="chance", zorder=1)   # behind the bars
    right.set_xticks(range(len(recipes)), [f"trained\n{r}" for r in recipes], fontsize=11)
    right.set_title("chapter 10's image encoders" + ("" if image_coverage is None else
                    f"\n(coverage {image_coverage:g})"), fontsize=11)
    for ax in (left, right):
        ax.set_ylim(-0.04, 1)    # room under 0: a chance line near 0 stays off the axis
        ax.tick_params(labelsize=11)
    left.set_ylabel("object decoding,\nheld-out objects", fontsize=11)
    handles, names = _shared_legend((left, right))
    fig.legend(handles, names, loc="outside lower center", ncols=3, fontsize=11, frameon=False)
    return fig


# -- chapter 13: the swap test against coverage --------------------------------------------------------------------
def swap_test_sketch(width: float = 7.0):
    """Chapter 13's opening picture: a scene of two objects (a red square, a blue circle), its two present objects
    and its two swaps (a red circle, a blue square: the scene's own values, recombined). A model passes the scene
    when both present objects score above both swaps."""
    from matplotlib.patches import Circle, FancyBboxPatch, Rectangle

    fig, ax = plt.subplots(figsize=(width, 1.9))
    ax.set_xlim(0, 10)
    ax.set_ylim(0, 2.6)
    ax.set_aspect("equal")
    ax.axis("off")

    def shape(kind, colour, x, y=1.05, r=0.36):
        if kind == "square":
            ax.add_patch(Rectangle((x - r, y - r), 2 * r, 2 * r, color=colour))
        else:
            ax.add_patch(Circle((x, y), r, color=colour))

    groups = [(0.25, 2.45, "the scene", [("square", "tab:red", 0.85), ("circle", "tab:blue", 1.85)]),
              (3.55, 2.45, "its objects", [("square", "tab:red", 4.15), ("circle", "tab:blue", 5.15)]),
              (7.3, 2.45, "its swaps", [("circle", "tab:red", 7.9), ("square", "tab:blue", 8.9)])]
    for x0, w, title, shapes in groups:
        ax.add_patch(FancyBboxPatch((x0, 0.45), w, 1.2, boxstyle="round,pad=0.05", fc="none", ec="0.4"))
        ax.text(x0 + w / 2, 1.95, title, ha="center", fontsize=10)
        for kind, colour, x in shapes:
            shape(kind, colour, x)
    ax.annotate("", (3.45, 1.05), (2.8, 1.05), arrowprops=dict(arrowstyle="->", color="0.3"))
    ax.text(6.42, 1.05, "must\nscore\nabove", ha="center", va="center", fontsize=9)
    ax.text(5, 0.12, "score = cosine between the scene's embedding and an object's embedding",
            ha="center", fontsize=9)
    fig.tight_layout(pad=0.2)
    return fig


def _swap_curves(ax, g, bars: bool = True):
    """The swap test's lines of one panel: seen, unseen with its 95% interval (a band, and error bars when
    ``bars``: visible when narrow), and chance, long dashes (with a tick at each coverage when ``bars``: without
    them, as in an inset, the dashes stay clear); ``g`` indexed by coverage."""
    ax.plot(g.index, g["seen"], marker="o", ms=7, mfc="none", mew=1.3, color="tab:blue",
            label="seen objects")                  # hollow and larger: visible over the other lines
    ax.plot(g.index, g["unseen"], marker="s", ms=4, color="tab:orange", label="unseen objects (95% interval)")
    ax.fill_between(g.index, g["low"], g["high"], color="tab:orange", alpha=0.35, lw=0)
    if bars:
        ax.errorbar(g.index, g["unseen"], yerr=[g["unseen"] - g["low"], g["high"] - g["unseen"]], fmt="none",
                    ecolor="tab:orange", elinewidth=1.2, capsize=3)
    ax.plot(g.index, g["chance"], color="k", ls=(0, (6, 4)), lw=1.3, marker="_" if bars else "", ms=9,
            label="chance (a random order)", zorder=3)     # over the band: its dashes stay whole


def _zoom_bottom(ax, g, below: float = 0.3):
    """When every line of panel ``ax`` stays under ``below`` from its second coverage on, an inset in the panel's
    empty upper right magnifies the bottom of the coverages from the second on (no line enters it from above), so
    that lines a few hundredths apart can be told apart."""
    rest = g.iloc[1:]
    top = float(rest[["seen", "high", "chance"]].to_numpy().max())
    if len(rest) < 2 or top >= below:
        return
    ins = ax.inset_axes([0.44, 0.5, 0.54, 0.38])   # its tick labels clear of the lines falling from the first point
    _swap_curves(ins, rest, bars=False)
    ins.set_ylim(0, 1.6 * top)                  # headroom: the key sits above every line
    chance = [ln for ln in ins.get_lines() if ln.get_label().startswith("chance")]
    ins.legend(chance, ["chance"], loc="upper right", fontsize=11, frameon=False,
               handlelength=1.2, handletextpad=0.3, borderaxespad=0.1, borderpad=0.1)
    ins.set_title("magnified", fontsize=11, pad=2)   # short: it stays over the inset, inside the panel
    for spine in ins.spines.values():
        spine.set_edgecolor("0.5")               # grey, as the box it magnifies
    ins.tick_params(labelsize=11)
    ins.locator_params(axis="y", nbins=3)        # few, readable ticks
    lo, hi = float(rest.index[0]), float(rest.index[-1])
    ticks = [t for t in (0.4, 0.8) if lo < t < hi] or [lo, hi]
    ins.set_xticks(ticks, [f"{t:g}" for t in ticks])   # two, far apart, clear of the frame
    pad = 0.08 * (hi - lo)                       # whole end markers
    ins.set_xlim(lo - pad, hi + pad)
    ins.set_xlabel("coverage", fontsize=11, labelpad=1)
    box = ax.indicate_inset_zoom(ins, edgecolor="0.5")
    for line in getattr(box, "connectors", None) or box[1]:   # matplotlib >= 3.10, or older
        # no connectors: they would cross the inset's tick labels; the box and the title say what is magnified
        line.set_visible(False)


def swap_test_figure(curves, paper_jump=None, width: float = 7.0):
    """Chapter 13's figure: one panel per object-space size, the swap test on seen objects, on unseen objects
    (with its 95% interval) and a random order of the candidates (chance), against coverage. ``curves``: a
    DataFrame indexed by (|O|, coverage) with columns seen, unseen, low, high, chance
    (:func:`compbook.binding.runs.sweep.binding_curves`); ``paper_jump`` ``(lo, hi, title)``: the paper's jump in its
    own test (unseen-object recognition) from near 0 to near 1 between coverages lo and hi, sketched in a panel of
    its own, titled ``title``. The legend sits under the panels."""
    sizes = list(dict.fromkeys(curves.index.get_level_values(0)))
    ratios = [1] * len(sizes) + ([0.75] if paper_jump is not None else [])
    fig, axes = plt.subplots(1, len(ratios), figsize=(width, 3.9), squeeze=False,
                             gridspec_kw={"width_ratios": ratios})
    if paper_jump is not None:
        lo, hi, title = paper_jump
        ax = axes[0][-1]
        ax.plot([0, lo, hi, 1], [0, 0, 1, 1], color="0.45", ls=":", lw=2)
        ax.set_title(title, fontsize=10)
        ax.yaxis.tick_right()
        ax.yaxis.set_label_position("right")
        ax.set_ylabel("the paper's test: unseen-object\nrecognition (sketch)", fontsize=10)
        ax.set_xlabel("coverage", fontsize=10)
        ax.set_xlim(0, 1)
        ax.set_ylim(-0.02, 1.02)
        ax.tick_params(labelsize=10)
    for ax, n in zip(axes[0], sizes):
        g = curves.loc[n]
        _swap_curves(ax, g)
        ax.set_title(f"|O| = {n:,} objects", fontsize=10)
        ax.set_xlabel("coverage", fontsize=10)
        ax.set_xlim(0, 1)
        ax.set_ylim(-0.02, 1.02)
        ax.tick_params(labelsize=10)
        if ax is not axes[0][0]:
            ax.tick_params(labelleft=False)
        _zoom_bottom(ax, g)
    axes[0][0].set_ylabel("scenes passing the swap test", fontsize=10)
    handles, names = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, names, loc="lower center", ncols=2, fontsize=10, frameon=False)
    fig.tight_layout(rect=(0, 0.12, 1, 1))
    return fig
