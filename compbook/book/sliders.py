"""Sliders that work everywhere: live in Jupyter/Colab, kernel-free on the static page (every chapter).

``frame_slider(draw, depth=[2, 4, 8])`` is the one call a chapter makes. ``draw(**knobs)`` returns a matplotlib
Figure for one combination of knob values.

* In a live front end (Colab, Jupyter Lab/Notebook, VS Code) it starts an ipywidgets ``interact``: Python redraws
  the figure as the reader moves the slider.
* When nobody can see a widget (the book build, nbmake, CI) it never creates one. Executing a cell that
  displays an ``interact`` can block a headless client at random (nbclient #312, nbconvert #2029): the stall
  CONTRIBUTING.md describes. Instead every combination is drawn once, saved as a PNG, and shown in a small
  HTML/JS frame viewer: ``<input type=range>`` per knob that swaps the image, no kernel and no network needed.

``$COMPBOOK_WIDGETS`` chooses: ``live``, ``static`` or ``auto`` (the default: live only where a front end is
detected). The Makefile sets ``static`` for its headless runs.
"""

from __future__ import annotations

import base64
import html
import io
import itertools
import json
import os
import re
import sys
import uuid
from typing import Callable, Sequence

from .. import checks

WIDGETS_VARIABLE = "COMPBOOK_WIDGETS"
WIDGET_MODES = ("auto", "live", "static")
MAX_FRAMES = 64
#: The largest dpi a frame may be drawn at (our choice: a 7 in figure at 300 dpi is 2100 px wide).
MAX_DPI = 300
CSS_PX_PER_IN = 96.0     # a browser's inch
_BASE64 = re.compile(r"[A-Za-z0-9+/]+={0,2}")
# environment variables that only a live front end sets for its kernels (nbclient/nbmake set none of them)
_FRONT_END_VARIABLES = ("JPY_SESSION_NAME", "VSCODE_PID", "VSCODE_CWD")


def widget_mode() -> str:
    """``"live"`` or ``"static"``: what :func:`frame_slider` shows here (``$COMPBOOK_WIDGETS``, default auto)."""
    value = os.environ.get(WIDGETS_VARIABLE, "auto").strip().lower() or "auto"
    if value not in WIDGET_MODES:
        raise ValueError(f"${WIDGETS_VARIABLE}={value!r}: expected one of {WIDGET_MODES}")
    if value != "auto":
        return value
    front_end = "google.colab" in sys.modules or any(v in os.environ for v in _FRONT_END_VARIABLES)
    return "live" if front_end else "static"


def _check_knobs(knobs: dict) -> dict[str, list]:
    if not isinstance(knobs, dict):
        raise ValueError(f"knobs must be a dict {{name: [values]}}, got {type(knobs).__name__}")
    if not knobs:
        raise ValueError("frame_slider needs at least one knob, e.g. frame_slider(draw, depth=[2, 4, 8])")
    out = {}
    for name, values in knobs.items():
        if isinstance(values, (str, bytes)) or not isinstance(values, Sequence) or len(values) == 0:
            raise ValueError(f"knob {name!r}: expected a non-empty list of values, got {values!r}")
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"knob names must be Python identifiers (draw's keyword arguments), got {name!r}")
        out[name] = list(values)
        try:
            distinct = len(set(out[name])) == len(out[name])
        except TypeError:          # unhashable values: compare what the slider shows
            distinct = len({_label(v) for v in out[name]}) == len(out[name])
        if not distinct:
            raise ValueError(f"knob {name!r}: values must be distinct, got {out[name]!r:.100}")
    n = 1
    for values in out.values():
        n *= len(values)
    if n > MAX_FRAMES:
        raise ValueError(f"knobs {list(out)}: {n} frames, more than {MAX_FRAMES}; use fewer values per knob")
    return out


def _check_draw(draw, dpi):
    if not callable(draw):
        raise ValueError(f"draw must be a callable returning a matplotlib Figure, got {type(draw).__name__}")
    return checks.integer(dpi, "dpi", 1, MAX_DPI)


def _check_start(start, knobs: dict) -> dict:
    if start is None:
        return {}
    start = checks.mapping(start, "start")
    for name, value in start.items():
        if name not in knobs or value not in knobs[name]:
            raise ValueError(f"start[{name!r}]={value!r}: not one of the knob's values {knobs.get(name)}")
    return dict(start)


def _png(fig, dpi: int) -> str:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _label(value) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def render_frames(draw: Callable, knobs: dict, dpi: int = 80) -> list[str]:
    """Every combination of ``knobs`` drawn once: base64 PNGs in row-major order (the last knob varies fastest)."""
    knobs = _check_knobs(knobs)
    dpi = _check_draw(draw, dpi)
    names = list(knobs)
    frames = []
    for combo in itertools.product(*knobs.values()):
        fig = draw(**dict(zip(names, combo)))
        if fig is None or not hasattr(fig, "savefig"):
            raise ValueError(f"draw({dict(zip(names, combo))}) returned {type(fig).__name__}; "
                             "expected a matplotlib Figure")
        frames.append(_png(fig, dpi))
    return frames


def _css_width(frame: str, dpi: int) -> float:
    """The CSS width (px) that shows a PNG drawn at ``dpi`` at its figure's size: its pixels / dpi inches, at a
    browser's 96 px per inch (so its text shows at the points it was drawn at, not at dpi / 96 of them)."""
    head = base64.b64decode(frame[:44] + "=" * (-len(frame[:44]) % 4))
    if head[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"frame {frame[:20]!r}...: not a PNG (render_frames draws PNGs)")
    return round(int.from_bytes(head[16:20], "big") * CSS_PX_PER_IN / dpi, 1)


def frames_html(frames: Sequence[str], knobs: dict, start: dict | None = None, dpi: int | None = None) -> str:
    """A kernel-free viewer: one range input per knob, swapping the shown PNG (``frames`` as from
    :func:`render_frames`). The page needs no kernel and no network. ``dpi``: the dpi the frames were drawn at;
    given, each frame is shown at its figure's width in inches (never wider than the column), as the book
    shows a figure, so its text keeps its size; None: at the PNG's pixel width."""
    knobs = _check_knobs(knobs)
    frames = checks.sequence(frames, "frames")
    sizes = [len(v) for v in knobs.values()]
    if len(frames) != _product(sizes):
        raise ValueError(f"frames: expected {_product(sizes)} frames for knobs {list(knobs)}, got {len(frames)}")
    for i, f in enumerate(frames):
        if not isinstance(f, str) or not _BASE64.fullmatch(f):
            raise ValueError(f"frames[{i}] must be a base64 PNG string (render_frames), got {f!r:.40}")
    start = _check_start(start, knobs)
    widths = None if dpi is None else [_css_width(f, checks.integer(dpi, "dpi", 1, MAX_DPI)) for f in frames]
    uid = "cbs" + uuid.uuid4().hex[:10]
    rows, init = [], []
    for k, (name, values) in enumerate(knobs.items()):
        i0 = values.index(start[name]) if name in start else 0
        init.append(i0)
        labels = html.escape(json.dumps([_label(v) for v in values]), quote=True)   # JSON.parse reads it back
        rows.append(
            f'<label style="font-family:sans-serif;font-size:14px;margin-right:1em">{html.escape(name)} '
            f'<input type="range" class="cb-knob" min="0" max="{len(values) - 1}" step="1" value="{i0}" '
            f'data-labels="{labels}" style="vertical-align:middle;width:12em"> '
            f'<output>{html.escape(_label(values[i0]))}</output></label>')
    frame0 = _index(init, sizes)
    data = ",".join(f'"{f}"' for f in frames)
    width = "" if widths is None else f"width:{widths[frame0]:g}px;"
    resize = "" if widths is None else f'img.style.width={json.dumps(widths)}[i]+"px";'
    return (
        f'<div id="{uid}" class="compbook-slider" data-frames="{len(frames)}">'
        f'<div>{"".join(rows)}</div>'
        f'<img class="cb-frame" data-frame="{frame0}" style="{width}max-width:100%;height:auto" '
        f'src="data:image/png;base64,{frames[frame0]}">'
        f'<script>(function(){{var root=document.getElementById("{uid}");'
        f'var frames=[{data}];var sizes={sizes};'
        'var knobs=root.querySelectorAll("input.cb-knob");var img=root.querySelector("img.cb-frame");'
        'function show(){var i=0;knobs.forEach(function(k,j){i=i*sizes[j]+parseInt(k.value);'
        'k.nextElementSibling.textContent=JSON.parse(k.dataset.labels)[parseInt(k.value)];});'
        'img.src="data:image/png;base64,"+frames[i];img.dataset.frame=i;' + resize + '}'
        'knobs.forEach(function(k){k.addEventListener("input",show);});})();</script></div>')


def _product(sizes) -> int:
    n = 1
    for s in sizes:
        n *= s
    return n


def _index(positions, sizes) -> int:
    i = 0
    for p, s in zip(positions, sizes):
        i = i * s + p
    return i


def frame_slider(draw: Callable, *, start: dict | None = None, dpi: int = 100, **knobs):
    """A slider over one or more knobs (``name=[values]``): live ipywidgets in a front end, else a JS viewer.

    ``draw(**knobs)`` returns a matplotlib Figure. ``start`` gives each knob's initial value (default: the
    first). Static mode draws every combination (at most ``MAX_FRAMES``) and displays the viewer; live mode
    displays the ipywidgets ``interact``. Returns None, so a slider as a cell's last line prints nothing more
    (a returned HTML string would be echoed as a page-wide text output). The frames are drawn at ``dpi`` and
    shown at their figures' widths in inches (a frame's text shows at the points it was drawn at).
    """
    knobs = _check_knobs(knobs)
    dpi = _check_draw(draw, dpi)
    start = _check_start(start, knobs)
    from IPython.display import HTML, display

    if widget_mode() == "live":
        _live(draw, knobs, start)
        return None
    display(HTML(frames_html(render_frames(draw, knobs, dpi=dpi), knobs, start, dpi=dpi)))
    return None


def _live(draw: Callable, knobs: dict, start: dict):
    import ipywidgets as widgets
    import matplotlib.pyplot as plt

    from IPython.display import display

    def show(**kw):
        fig = draw(**kw)
        display(fig)
        plt.close(fig)

    sliders = {name: widgets.SelectionSlider(options=values, value=start.get(name, values[0]), description=name,
                                             continuous_update=False)
               for name, values in knobs.items()}
    return widgets.interact(show, **sliders)
