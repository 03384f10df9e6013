"""Can a reader read this figure? Checks on a drawn matplotlib figure, at the size the book shows it.

The book's column is about :data:`COLUMN_IN` inches wide; a wider figure is shrunk to it (and its text with it).
:func:`problems` lists, for one figure:

* **overlapping text**: two visible text elements (titles, axis labels, tick labels, annotations, legend entries,
  a suptitle) whose boxes intersect;
* **text leaving the figure**: a text element or a legend whose box reaches outside the figure (cut off on the
  page);
* **a legend covering data**: a legend box over a plotted point, a bar or an error bar of its own axes;
* **small thumbnails**: an image grid whose images are under :data:`MIN_THUMB_IN` inches wide once the figure
  is shrunk to the column (colour-mapped maps, such as feature maps: :data:`MIN_MAP_IN`);
* **small plots**: a plot (a curve, bars, a 3-D cloud) under :data:`MIN_PLOT_IN` inches wide at the column;
* **small text**: text under :data:`MIN_FONT_PT` points once the figure is shrunk to the column.

:func:`watch` runs :func:`problems` on every figure a notebook draws (when it is rendered to a PNG: the inline
backend, ``savefig``, the sliders' frames) and appends what it finds to a JSON-lines log; a chapter run with
``COMPBOOK_FIGCHECK=<log path>`` in its environment starts it on ``import compbook``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

COLUMN_IN = 7.0          # the page's column, inches (CONTRIBUTING.md: figures about 7 inches wide)
MIN_THUMB_IN = 0.9       # an image narrower than this at the column width is a thumbnail nobody can read
MIN_MAP_IN = 0.25        # a colour-mapped map (a smooth feature map, attention) narrower than this shows no pattern
MIN_PLOT_IN = 1.2        # a plot narrower than this (or lower than 2/3 of it) at the column width is too small
MIN_FONT_PT = 5.0        # text smaller than this at the column width is unreadable on the page
TOLERANCE_PX = 1.0       # boxes touching within this many pixels do not count as overlapping
VARIABLE = "COMPBOOK_FIGCHECK"


def _scale(fig) -> float:
    """How much the page shrinks ``fig``: 1, or the column over the width it is shown at (the figure's width,
    or its tight box's where it is saved with ``bbox_inches="tight"``, as the inline backend does)."""
    return min(1.0, COLUMN_IN / float(getattr(fig, "_compbook_shown_width", None) or fig.get_figwidth()))


def _texts(fig) -> list:
    """Every text element ``fig`` draws, visible and non-empty: the figure's own texts and suptitle, each visible
    axes' titles, texts, axis labels and drawn tick labels (none where the axis is off), legend entries."""
    cands = list(fig.texts) + [getattr(fig, k, None) for k in ("_suptitle", "_supxlabel", "_supylabel")]
    for leg in _legends(fig):
        cands += list(leg.get_texts()) + [leg.get_title()]
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        cands += [ax.title, getattr(ax, "_left_title", None), getattr(ax, "_right_title", None)] + list(ax.texts)
        if ax.axison:
            for axis in (getattr(ax, n, None) for n in ("xaxis", "yaxis", "zaxis")):
                if axis is None or not axis.get_visible():
                    continue
                cands += [axis.label, axis.get_offset_text()]
                for tick in axis._update_ticks():
                    cands += [lab for lab, on in ((tick.label1, tick.label1.get_visible()),
                                                  (tick.label2, tick.label2.get_visible())) if on]
    seen, out = set(), []
    for t in cands:
        if t is not None and id(t) not in seen and t.get_visible() and str(t.get_text()).strip():
            seen.add(id(t))
            out.append(t)
    return out


def _label(t) -> str:
    s = " ".join(str(t.get_text()).split())
    return repr(s[:40])


def _shrink(bbox, px: float):
    from matplotlib.transforms import Bbox
    return Bbox.from_extents(bbox.x0 + px, bbox.y0 + px, bbox.x1 - px, bbox.y1 - px)


def overlapping_text(fig, renderer) -> list[str]:
    texts = _texts(fig)
    boxes = [_shrink(t.get_window_extent(renderer), TOLERANCE_PX) for t in texts]
    out = []
    for i in range(len(texts)):
        for j in range(i + 1, len(texts)):
            a, b = boxes[i], boxes[j]
            if a.width <= 0 or b.width <= 0:
                continue
            if a.overlaps(b):
                out.append(f"text {_label(texts[i])} overlaps text {_label(texts[j])}")
    return out


def leaving_the_figure(fig, renderer) -> list[str]:
    frame = fig.bbox
    out = []
    in_legends = {id(t) for leg in _legends(fig) for t in list(leg.get_texts()) + [leg.get_title()]}
    items = [(t, _label(t)) for t in _texts(fig) if id(t) not in in_legends]
    items += [(leg, "a legend") for leg in _legends(fig)]
    for artist, name in items:
        b = artist.get_window_extent(renderer)
        if (b.x0 < frame.x0 - TOLERANCE_PX or b.y0 < frame.y0 - TOLERANCE_PX or b.x1 > frame.x1 + TOLERANCE_PX
                or b.y1 > frame.y1 + TOLERANCE_PX):
            out.append(f"{name} leaves the figure")
    return out


def _legends(fig) -> list:
    legs = [ax.get_legend() for ax in fig.axes] + list(getattr(fig, "legends", []))
    return [leg for leg in legs if leg is not None and leg.get_visible()]


def _data_points(ax) -> np.ndarray:
    """Display coordinates of what ``ax`` plots: line vertices (each segment sampled), bar and error-bar
    rectangles' corners and centres, scatter offsets."""
    from matplotlib.collections import Collection, LineCollection
    from matplotlib.patches import Rectangle
    pts = []
    for line in ax.get_lines():
        if not line.get_visible() or _is_reference_line(line, ax):
            continue
        xy = np.asarray(line.get_xydata(), float)
        xy = xy[np.isfinite(xy).all(1)]
        if len(xy) > 1:     # sample along the segments, so a legend over a line between two points is seen
            t = np.linspace(0, 1, 8)[:, None, None]
            xy = (xy[:-1][None] * (1 - t) + xy[1:][None] * t).reshape(-1, 2)
        if len(xy):
            pts.append(line.get_transform().transform(xy))
    for patch in ax.patches:
        if isinstance(patch, Rectangle) and patch.get_visible() and patch.get_height() != 0:
            x, y, w, h = patch.get_x(), patch.get_y(), patch.get_width(), patch.get_height()
            xs, ys = np.linspace(x, x + w, 5), np.linspace(y, y + h, 9)
            grid = np.array([(a, b) for a in xs for b in ys])
            pts.append(patch.get_transform().transform(grid))
    for coll in ax.collections:
        if not coll.get_visible() or not isinstance(coll, Collection):
            continue
        if isinstance(coll, LineCollection):
            for seg in coll.get_segments():
                seg = np.asarray(seg, float)
                if len(seg):
                    pts.append(coll.get_transform().transform(seg))
            continue
        offsets = np.asarray(coll.get_offsets(), float)
        if offsets.size:
            pts.append(coll.get_offset_transform().transform(offsets))
    return np.concatenate(pts) if pts else np.zeros((0, 2))


def _is_reference_line(line, ax) -> bool:
    """A horizontal or vertical line across the axes (``axhline``: a reference, not data)."""
    xy = np.asarray(line.get_xydata(), float)
    if len(xy) != 2:
        return False
    return line.get_transform() is not ax.transData and (xy[0, 0] == xy[1, 0] or xy[0, 1] == xy[1, 1])


def legend_over_data(fig, renderer) -> list[str]:
    out = []
    for ax in fig.axes:
        leg = ax.get_legend()
        if leg is None or not leg.get_visible() or ax.name == "3d":
            continue
        box = _shrink(leg.get_window_extent(renderer), TOLERANCE_PX)
        pts = _data_points(ax)
        inside = ((pts[:, 0] > box.x0) & (pts[:, 0] < box.x1) & (pts[:, 1] > box.y0) & (pts[:, 1] < box.y1))
        if inside.any():
            title = ax.get_title() or ax.get_ylabel() or "an axes"
            out.append(f"the legend of {title[:40]!r} covers {int(inside.sum())} plotted point(s)")
    return out


def small_thumbnails(fig, renderer=None) -> list[str]:
    """Images (RGB renders) under MIN_THUMB_IN wide at the column width, and colour-mapped maps (a feature map,
    an attention or Gram matrix: a pattern to see, not a picture to recognise) under MIN_MAP_IN."""
    scale = _scale(fig)
    out = []
    for kind, least, rgb in (("image", MIN_THUMB_IN, True), ("map", MIN_MAP_IN, False)):
        widths = [ax.get_position().width * fig.get_figwidth() * scale for ax in fig.axes
                  if ax.get_visible() and ax.images and (np.ndim(ax.images[0].get_array()) == 3) == rgb]
        small = [w for w in widths if w < least]
        if small:
            out.append(f"{len(small)} {kind}(s) {min(small):.2f} in wide at the {COLUMN_IN:g} in column "
                       f"(at least {least} in)")
    return out


def small_axes(fig, renderer=None) -> list[str]:
    """Plots (axes without an image, colour bars aside) under MIN_PLOT_IN wide or MIN_PLOT_IN / 1.5 high at the
    column width: a curve or a 3-D cloud squeezed into a corner."""
    scale = _scale(fig)
    out = []
    for ax in fig.axes:
        if not ax.get_visible() or ax.images or not ax.axison and ax.name != "3d" or _is_colorbar(ax):
            continue
        if not (ax.lines or ax.patches or ax.collections):      # an empty panel (a blank map): nothing to read
            continue
        box = ax.get_position()
        w, h = box.width * fig.get_figwidth() * scale, box.height * fig.get_figheight() * scale
        if w < MIN_PLOT_IN or h < MIN_PLOT_IN / 1.5:
            out.append(f"the plot {(ax.get_title() or ax.get_xlabel() or ax.name)[:40]!r} is {w:.2f} x {h:.2f} in "
                       f"at the column width (at least {MIN_PLOT_IN} x {MIN_PLOT_IN / 1.5:.1f} in)")
    return out


def _is_colorbar(ax) -> bool:
    return hasattr(ax, "_colorbar") or ax.get_label() == "<colorbar>"


def small_text(fig, renderer=None) -> list[str]:
    scale = _scale(fig)
    small = [t for t in _texts(fig) if t.get_fontsize() * scale < MIN_FONT_PT]
    if not small:
        return []
    size = min(t.get_fontsize() for t in small) * scale
    return [f"{len(small)} text element(s) at {size:.1f} pt on the page (at least {MIN_FONT_PT:g}), e.g. "
            f"{_label(small[0])}"]


CHECKS = (overlapping_text, leaving_the_figure, legend_over_data, small_thumbnails, small_axes, small_text)


def problems(fig, tight: bool = False) -> list[str]:
    """What keeps a reader from reading ``fig`` (a drawn matplotlib Figure), one line each; [] when none.
    ``tight``: the figure is saved with ``bbox_inches="tight"`` (the inline backend's default), which grows the
    image to take in text outside the figure, so nothing is cut off and the page shrinks the grown width."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    checks = [c for c in CHECKS if not (tight and c is leaving_the_figure)]
    fig._compbook_shown_width = fig.get_tightbbox(renderer).width if tight else None
    try:
        return [p for check in checks for p in check(fig, renderer)]
    finally:
        fig._compbook_shown_width = None


def assert_legible(fig) -> None:
    found = problems(fig)
    if found:
        raise AssertionError("figure not legible:\n  " + "\n  ".join(found))


_WATCHING = {"on": False}


def watch(log=None) -> None:
    """Check every figure when it is rendered (inline display, ``savefig``, slider frames) and append
    ``{"where", "figure", "problems"}`` lines to ``log`` (default: ``$COMPBOOK_FIGCHECK``), after one
    ``{"where", "watching": true}`` line when it starts. A figure is checked
    once per drawing; the check never changes what is drawn nor stops the run."""
    from matplotlib.backend_bases import FigureCanvasBase
    path = Path(log or os.environ[VARIABLE])
    if _WATCHING["on"]:
        return
    _WATCHING["on"] = True
    original = FigureCanvasBase.print_figure
    where = os.environ.get("COMPBOOK_FIGCHECK_WHERE") or os.getcwd()
    with open(path, "a") as f:          # a run that checked nothing still says it was watched
        f.write(json.dumps({"where": where, "watching": True}) + "\n")

    def checked(self, *args, **kwargs):
        fig = self.figure
        key = (id(fig), len(fig.axes), fig.get_figwidth(), fig.get_figheight())
        if getattr(fig, "_compbook_checked", None) != key:
            fig._compbook_checked = key
            try:
                found = problems(fig, tight=kwargs.get("bbox_inches") == "tight")
            except Exception as err:          # a check that fails must not break the chapter
                found = [f"check failed: {type(err).__name__}: {err}"]
            if found:
                title = fig._suptitle.get_text() if fig._suptitle else next(
                    (ax.get_title() for ax in fig.axes if ax.get_title()), "")
                with open(path, "a") as f:
                    f.write(json.dumps({"where": where, "figure": title[:60], "size": [round(fig.get_figwidth(), 2),
                                        round(fig.get_figheight(), 2)], "problems": found}) + "\n")
        return original(self, *args, **kwargs)

    FigureCanvasBase.print_figure = checked
