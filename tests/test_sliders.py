"""compbook.book.sliders: the static frame viewer holds one frame per knob combination; headless runs never go live."""

import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pytest

from compbook.book import sliders


def _draw(a, b=0):
    fig, ax = plt.subplots(figsize=(1, 1))
    ax.set_title(f"{a},{b}")
    return fig


def test_render_frames_draws_every_combination_in_row_major_order():
    seen = []
    open_before = set(plt.get_fignums())        # figures another test left open are not this one's

    def draw(a, b):
        seen.append((a, b))
        return _draw(a, b)

    frames = sliders.render_frames(draw, {"a": [1, 2], "b": ["x", "y", "z"]})
    assert len(frames) == 6 and len(set(frames)) == 6, "each combination must give its own frame"
    assert seen == [(1, "x"), (1, "y"), (1, "z"), (2, "x"), (2, "y"), (2, "z")], "last knob must vary fastest"
    assert set(plt.get_fignums()) <= open_before, "frames must close their figures (memory)"


def test_frames_html_starts_on_the_requested_frame_and_embeds_all_frames():
    knobs = {"a": [1, 2], "b": [10, 20, 30]}
    frames = [f"F{i}" for i in range(6)]
    page = sliders.frames_html(frames, knobs, start={"a": 2, "b": 20})
    assert 'data-frame="4"' in page, "start (a=2, b=20) is frame 1*3+1 = 4 in row-major order"
    assert all(f'"F{i}"' in page for i in range(6))
    assert len(re.findall(r'type="range"', page)) == 2
    assert "http" not in page, "the viewer must need no network"


def test_frames_show_at_their_figures_width_so_their_text_keeps_its_points():
    """A frame drawn at 80 dpi shown at its pixel width would show 8 pt text at 8 * 80 / 96 = 6.7 pt: given the
    dpi, the viewer shows each frame at its figure's width in inches (96 CSS px per inch), frame by frame."""
    wide = lambda a: plt.subplots(figsize=(2 + a, 1))[0]       # noqa: E731 (frames of different widths)
    for dpi in (80, 100):
        frames = sliders.render_frames(wide, {"a": [0, 1]}, dpi=dpi)
        page = sliders.frames_html(frames, {"a": [0, 1]}, start={"a": 1}, dpi=dpi)
        widths = [sliders._css_width(f, dpi) for f in frames]
        assert widths[1] > widths[0] + 48, "the wider figure's frame must show wider"
        assert abs(widths[1] - 3 * 96) < 0.1 * 96, "a 3 in figure (tight box about 3 in) shows about 3 x 96 px"
        assert f"width:{widths[1]:g}px" in page, "the start frame's width"
        assert str(widths).replace(", ", ",") in page.replace(", ", ","), "every frame's width, for the script's swaps"
    assert "px;max-width" not in sliders.frames_html(frames, {"a": [0, 1]}), "no dpi: shown at its pixel width"
    with pytest.raises(ValueError, match="not a PNG"):
        sliders.frames_html(["QUJD", "QUJD"], {"a": [0, 1]}, dpi=80)


def test_headless_default_is_static(monkeypatch):
    for v in ("JPY_SESSION_NAME", "VSCODE_PID", "VSCODE_CWD", sliders.WIDGETS_VARIABLE):
        monkeypatch.delenv(v, raising=False)
    assert sliders.widget_mode() == "static"
    monkeypatch.setenv("JPY_SESSION_NAME", "/tmp/x.ipynb")
    assert sliders.widget_mode() == "live"
    monkeypatch.setenv(sliders.WIDGETS_VARIABLE, "static")
    assert sliders.widget_mode() == "static", "the explicit setting must win over detection"
    monkeypatch.setenv(sliders.WIDGETS_VARIABLE, "sometimes")
    with pytest.raises(ValueError, match="COMPBOOK_WIDGETS"):
        sliders.widget_mode()


def test_static_frame_slider_never_imports_a_live_widget(monkeypatch):
    monkeypatch.setenv(sliders.WIDGETS_VARIABLE, "static")
    monkeypatch.setattr(sliders, "_live", lambda *a: pytest.fail("a live widget was started headless"))
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda obj: shown.append(obj.data))
    returned = sliders.frame_slider(_draw, a=[1, 2, 3], start={"a": 2})
    assert returned is None, "a returned page would be echoed as text when the slider is a cell's last line"
    (page,) = shown
    assert page.count("iVBORw0KGgo") == 3 + 1, "three PNG frames plus the one shown first"
    assert 'data-frame="1"' in page


@pytest.mark.parametrize("kwargs, match", [
    ({}, "at least one knob"),
    ({"a": []}, "knob 'a'"),
    ({"a": "abc"}, "knob 'a'"),
    ({"a": list(range(9)), "b": list(range(9))}, "81 frames"),
    ({"a": [1, 2], "start": {"a": 5}}, r"start\['a'\]"),
])
def test_bad_knobs_raise_value_error(kwargs, match, monkeypatch):
    monkeypatch.setenv(sliders.WIDGETS_VARIABLE, "static")
    with pytest.raises(ValueError, match=match):
        sliders.frame_slider(_draw, **kwargs)


def test_draw_must_return_a_figure():
    with pytest.raises(ValueError, match="expected a matplotlib Figure"):
        sliders.render_frames(lambda a: None, {"a": [1]})
