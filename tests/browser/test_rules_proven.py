"""Each browser rule of ``test_rules.py`` proven on a tiny page that breaks it and on one that obeys it.

The pages are written to a temporary folder and served like the book; they need Chromium (``make test``
installs it) but no built book, so these tests run wherever the browser test runs.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import http.server
import io
import threading

import pytest
from test_pages import _QuietHandler, browser  # noqa: F401
from test_rules import READ_SCRIPT, judge

PAGE = """<!doctype html><html><head><meta charset="utf-8"><style>
article {{ width: 700px; padding: 0 20px; font: 16px sans-serif; }}
td, th {{ padding: {pad}; text-align: right; }}
mjx-container {{ display: block; overflow: hidden; }} mjx-math {{ display: inline-block; white-space: nowrap; }}
</style></head><body><article>{body}</article></body></html>"""


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("pages")


@pytest.fixture(scope="module")
def site(folder):
    handler = functools.partial(_QuietHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.fixture
def read(browser, site, folder):  # noqa: F811
    def go(body, pad="0.3em 0.6em", figures=None):
        name = hashlib.sha256((body + pad).encode()).hexdigest()[:12]
        (folder / f"{name}.html").write_text(PAGE.format(body=body, pad=pad))
        browser.get(f"{site}/{name}.html")
        browser.execute_async_script("""const done = arguments[arguments.length - 1];
            Promise.all(Array.from(document.images).map(i => i.complete ? null :
                new Promise(r => { i.onload = i.onerror = r; }))).then(() => done(true));""")
        return judge(browser.execute_script(READ_SCRIPT), figures, folder)
    return go


def test_display_math_wider_than_the_column(read):
    wide = '<mjx-container display="true"><mjx-math style="width:900px">x + y</mjx-math></mjx-container>'
    narrow = '<mjx-container display="true"><mjx-math style="width:300px">x + y</mjx-math></mjx-container>'
    assert "900 px wide in a 700 px column" in read(wide)["wide_math"][0]
    assert read(narrow)["wide_math"] == []


TABLE = "<table><tr><th>n</th><th>W</th><th>ratio</th></tr><tr><td>2</td><td>10</td><td>{v}</td></tr></table>"


def test_table_columns_that_run_together(read):
    assert "em apart" in read(TABLE.format(v="0.016"), pad="0")["table_columns"][0]
    assert read(TABLE.format(v="0.016"))["table_columns"] == []
    pre = ("<div class='cell_output'><pre>  n   W     ratio\n  2  10  0.015620\n  2 101.562e-02\n"
           "  3  12  0.002000</pre></div>")
    assert "run together" in read(pre)["table_columns"][0]


def test_nan_and_long_numbers_in_table_cells(read):
    assert "NaN" in read(TABLE.format(v="NaN"))["table_values"][0]
    assert "6 significant digits" in read(TABLE.format(v="0.785078"))["table_values"][0]
    assert read(TABLE.format(v="n/a"))["table_values"] == read(TABLE.format(v="0.7851"))["table_values"] == []


def test_config_reprs_and_machine_paths_in_outputs(read):
    found = read("<div class='cell_output'><pre>VolumeConfig(width=3, depth=2)\n"
                 "saved to /root/.cache/compbook/x.pt</pre></div>")["machine_output"]
    assert len(found) >= 2 and "config repr" in found[0] and "/root/" in found[1]
    assert read("<div class='cell_output'><pre>width 3, depth 2</pre></div>")["machine_output"] == []


def test_glue_in_a_visible_code_cell(read):
    cell = "<div class='cell_input'><pre>x = 1\nglue('x', x)</pre></div>"
    assert "glue(...) in a visible cell" in read(cell)["visible_glue"][0]
    assert read("<div class='cell_input'><pre>x = 1</pre></div>")["visible_glue"] == []


def test_figure_text_and_tiles_at_the_displayed_width(read):
    """A 7 in figure of four maps with 10 pt labels, shown at 672 px (7 CSS inches) passes, at 336 px (3.5 in)
    its labels are 5 pt and its tiles (1.18 in axes) 0.59 in."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from compbook.book import legibility
    fig, axes = plt.subplots(1, 4, figsize=(7, 2))
    for ax in axes:
        ax.imshow(np.zeros((4, 4)))
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=50)
    plt.close(fig)
    png = buf.getvalue()
    fig.canvas.draw()
    record = {"figure": "four maps", "measure": legibility.measure(fig)}
    figures = {hashlib.sha256(png).hexdigest(): record}
    src = "data:image/png;base64," + base64.b64encode(png).decode()
    full = read(f'<img src="{src}" style="width:672px">', figures=figures)
    half = read(f'<img src="{src}" style="width:336px">', figures=figures)
    assert full["figure_text"] == full["figure_tiles"] == []
    assert "5.0 pt" in half["figure_text"][0] and "tile(s) 0.59 in" in half["figure_tiles"][0]
