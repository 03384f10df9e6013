"""Can a reader read this figure? Checks on a drawn matplotlib figure, at the size the book shows it.

The book's column is about :data:`COLUMN_IN` inches wide; a wider figure is shrunk to it (and its text with it).
:func:`problems` lists, for one figure:

* **overlapping text**: two visible text elements (titles, axis labels, tick labels, annotations, legend entries,
  a suptitle) whose boxes intersect;
* **text leaving the figure**: a text element or a legend whose box reaches outside the figure (cut off on the
  page);
* **a legend covering data**: a legend box over a plotted point, a bar or an error bar of its own axes;
* **small plots**: a plot (a curve, bars, a 3-D cloud) under :data:`MIN_PLOT_IN` inches wide at the column.

Two checks depend on the width the page shows the figure at, which only the built page knows (the browser test
measures it; :func:`at_display` applies them to a figure's :func:`measure` at that width):

* **small text**: text under :data:`MIN_FONT_PT` points once the figure is scaled to its displayed width (its
  font sizes times displayed width / figure width);
* **small tiles**: an image (``imshow``: a render, a feature map, an attention map) under :data:`MIN_TILE_IN`
  inches wide at the displayed width.

:func:`problems` applies them at the column width (a figure shown no wider than it drew, never wider than the
column); the browser test applies them again at the width the page really shows.

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
MIN_TILE_IN = 0.9        # an image (a render or a map) narrower than this on the page is a tile nobody can read
MIN_PLOT_IN = 1.2        # a plot narrower than this (or lower than 2/3 of it) at the column width is too small
MIN_FONT_PT = 8.0        # text smaller than this at the width the page shows it is too small to read
CSS_PX_PER_IN = 96.0     # a browser's inch: 96 CSS pixels
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


def _tiles(fig) -> list[tuple[float, str]]:
    """(width in figure inches, kind) of every visible axes showing an image: ``render`` (RGB) or ``map``."""
    return [(ax.get_position().width * fig.get_figwidth(), "render" if np.ndim(ax.images[0].get_array()) == 3
             else "map") for ax in fig.axes if ax.get_visible() and ax.images]


def small_thumbnails(fig, renderer=None) -> list[str]:
    """Images (``imshow`` axes) under MIN_TILE_IN wide at the column width."""
    return at_display(measure(fig), min(_shown_in(fig), COLUMN_IN), what=("tiles",))


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
    """Text under MIN_FONT_PT at the column width."""
    return at_display(measure(fig), min(_shown_in(fig), COLUMN_IN), what=("fonts",))


def _shown_in(fig) -> float:
    """The width of the image the figure is saved as, inches (its tight box where saved tight)."""
    return float(getattr(fig, "_compbook_shown_width", None) or fig.get_figwidth())


def measure(fig) -> dict:
    """What the page-width checks need of a drawn figure: ``shown_in`` (the saved image's width, inches),
    ``fonts`` ([size pt, count, an example] per font size of its visible text, smallest first) and ``tiles``
    ([width in, kind, count] per image width, smallest first; widths in the saved image's inches)."""
    fonts: dict[float, list] = {}
    for t in _texts(fig):
        entry = fonts.setdefault(round(float(t.get_fontsize()), 2), [0, _label(t)])
        entry[0] += 1
    tiles: dict[tuple, int] = {}
    for w, kind in _tiles(fig):
        tiles[(round(w, 3), kind)] = tiles.get((round(w, 3), kind), 0) + 1
    return {"shown_in": round(_shown_in(fig), 3),
            "fonts": [[size, n, ex] for size, (n, ex) in sorted(fonts.items())],
            "tiles": [[w, kind, n] for (w, kind), n in sorted(tiles.items())]}


def at_display(record: dict, displayed_in: float, what=("fonts", "tiles")) -> list[str]:
    """The small-text and small-tile problems of a figure (``record``: :func:`measure`) shown
    ``displayed_in`` inches wide (CSS inches: displayed pixels / :data:`CSS_PX_PER_IN`)."""
    if not displayed_in > 0 or not record.get("shown_in", 0) > 0:
        raise ValueError(f"displayed_in={displayed_in!r}, shown_in={record.get('shown_in')!r}: "
                         "widths must be positive")
    scale = displayed_in / record["shown_in"]
    out = []
    small = [(size, n, ex) for size, n, ex in record.get("fonts", []) if "fonts" in what
             and size * scale < MIN_FONT_PT - 0.05]
    if small:
        out.append(f"{sum(n for _, n, _ in small)} text element(s) at {small[0][0] * scale:.1f} pt on the page "
                   f"(at least {MIN_FONT_PT:g} pt), e.g. {small[0][2]}")
    tiny = [(w, kind, n) for w, kind, n in record.get("tiles", [])
            if "tiles" in what and w * scale < MIN_TILE_IN - 0.005]
    if tiny:
        out.append(f"{sum(n for *_, n in tiny)} image tile(s) {tiny[0][0] * scale:.2f} in wide on the page "
                   f"(at least {MIN_TILE_IN:g} in), e.g. a {tiny[0][1]}")
    return out


# checks that do not depend on the width the page shows the figure at (the log's ``problems``)
CHECKS = (overlapping_text, leaving_the_figure, legend_over_data, small_axes)
# checks at the width the page shows it (:func:`problems` applies them at the column width)
WIDTH_CHECKS = (small_thumbnails, small_text)


def problems(fig, tight: bool = False, width_checks: bool = True) -> list[str]:
    """What keeps a reader from reading ``fig`` (a drawn matplotlib Figure), one line each; [] when none.
    ``tight``: the figure is saved with ``bbox_inches="tight"`` (the inline backend's default), which grows the
    image to take in text outside the figure, so nothing is cut off and the page shrinks the grown width.
    ``width_checks``: also the small-text and small-tile checks, at the column width."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    checks = [c for c in CHECKS if not (tight and c is leaving_the_figure)]
    checks += list(WIDTH_CHECKS) if width_checks else []
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
    """Check every figure when it is rendered (inline display, ``savefig``, slider frames) and append one line
    per rendering to ``log`` (default: ``$COMPBOOK_FIGCHECK``): ``{"where", "figure", "size", "problems",
    "measure", "png"}`` (``problems``: the checks that do not depend on the displayed width; ``measure``: what
    the browser test needs to check text and tiles at the width the page shows the image; ``png``: the
    SHA-256 of the PNG written to an in-memory buffer, as the inline backend does, which finds the image on
    the built page), after one ``{"where", "watching": true}`` line when it starts. The checks run once per
    drawing; they never change what is drawn nor stop the run."""
    import matplotlib
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
        tight = kwargs.get("bbox_inches") == "tight"
        if getattr(fig, "_compbook_checked", (None,))[0] != key:
            try:
                found = problems(fig, tight=tight, width_checks=False)
            except Exception as err:          # a check that fails must not break the chapter
                found = [f"check failed: {type(err).__name__}: {err}"]
            fig._compbook_checked = (key, found)
        result = original(self, *args, **kwargs)
        try:
            dpi = kwargs.get("dpi") or matplotlib.rcParams["savefig.dpi"]
            dpi = fig.dpi if dpi == "figure" else float(dpi)
            _log_rendering(path, where, fig, fig._compbook_checked[1], tight, args[0] if args else None, dpi)
        except Exception as err:              # nor may the log
            with open(path, "a") as f:
                f.write(json.dumps({"where": where, "figure": "", "problems": [f"log failed: {err}"]}) + "\n")
        return result

    FigureCanvasBase.print_figure = checked


def _log_rendering(path: Path, where: str, fig, found: list, tight: bool, target, dpi: float) -> None:
    """One rendering's line: its PNG's hash and, where it is a PNG, the width it was saved at (its pixels over
    the dpi it was saved with, so the saving padding counts)."""
    import hashlib
    fig._compbook_shown_width = fig.get_tightbbox(fig.canvas.get_renderer()).width if tight else None
    try:
        record = measure(fig)
    finally:
        fig._compbook_shown_width = None
    data = target.getvalue() if hasattr(target, "getvalue") else None
    if isinstance(data, bytes) and data[:8] == b"\x89PNG\r\n\x1a\n" and dpi > 0:
        record["shown_in"] = round(int.from_bytes(data[16:20], "big") / dpi, 3)
    title = fig._suptitle.get_text() if fig._suptitle else next(
        (ax.get_title() for ax in fig.axes if ax.get_title()), "")
    with open(path, "a") as f:
        f.write(json.dumps({"where": where, "figure": title[:60], "size": [round(fig.get_figwidth(), 2),
                            round(fig.get_figheight(), 2)], "problems": found, "measure": record,
                            "png": hashlib.sha256(data).hexdigest() if isinstance(data, bytes) else None}) + "\n")
