"""Every figure the executed chapters drew is legible: ``make test`` runs the chapters with ``COMPBOOK_FIGCHECK``
set, so :func:`compbook.book.legibility.watch` checks each figure as it is rendered (inline, ``savefig``, the sliders'
frames) and logs what it finds; this test reads that log (``$COMPBOOK_FIGCHECK_LOG``) and fails on any finding.
Without the variable (a plain ``pytest tests``) it skips and says why.

Two kinds of finding are judged elsewhere, page by page with the list of pages still breaking them
(``tests/page_rules.py``): a legend over data (``test_rules.py::test_no_legend_over_data``), and text and image
tiles too small at the width the page shows the figure (``test_rules.py``, from each record's ``measure``).
"""

import sys
from pathlib import Path


sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from page_rules import figure_log  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = sorted(p.stem for p in (ROOT / "chapters").glob("*.ipynb"))


def test_every_chapter_was_watched():
    watched = {Path(x["where"]).stem for x in figure_log() if x.get("watching")}
    missing = [c for c in CHAPTERS if not any(c in w for w in watched)]
    assert not missing, f"chapters run without the figure check: {missing} (watched: {sorted(watched)})"


def test_every_figure_is_legible():
    found = [f"{x['where']}: {x['figure']!r} ({x['size'][0]} x {x['size'][1]} in): {p}"
             for x in figure_log() if not x.get("watching") for p in x["problems"]
             if not p.startswith("the legend of")]
    assert not found, f"{len(found)} problems in the chapters' figures:\n  " + "\n  ".join(sorted(set(found)))
