"""The chapters' prose as the reader gets it: display math MyST can typeset, values (not code names) in sentences.

The browser test sees the same faults on a built book (raw TeX on the page); these read the notebooks' markdown,
so a plain ``pytest tests`` catches them before any build.
"""

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "chapters").glob("*.ipynb"))
PAGES = NOTEBOOKS + [ROOT / "intro.md"]


def markdown_cells(path: Path) -> list[tuple[int, str]]:
    """``(cell index, source)`` of every markdown cell (the landing page is one cell)."""
    if path.suffix == ".md":
        return [(0, path.read_text())]
    nb = json.loads(path.read_text())
    return [(k, "".join(c["source"])) for k, c in enumerate(nb["cells"]) if c["cell_type"] == "markdown"]


def display_math_faults(text: str) -> list[str]:
    """Display equations not standing in their own block: a ``$$`` must open a line, with a blank line (or the
    cell's edge) before the opening ``$$`` and after the closing one. Inside a paragraph, MyST reads the ``$$``
    pairs as inline math around the prose between them, and the page shows raw TeX."""
    lines = text.split("\n")
    blank = lambda i: i < 0 or i >= len(lines) or not lines[i].strip()       # noqa: E731
    faults, opened = [], None
    for i, line in enumerate(lines):
        n = line.count("$$")
        if not n:
            continue
        stripped = line.strip()
        if opened is None:
            if not stripped.startswith("$$"):
                faults.append(f"line {i + 1}: $$ after text on its line: {line[:60]!r}")
            if not blank(i - 1):
                faults.append(f"line {i + 1}: no blank line before the opening $$")
            if n >= 2 and stripped.endswith("$$") and len(stripped) > 2:
                if not blank(i + 1):
                    faults.append(f"line {i + 1}: no blank line after the closing $$")
            else:
                opened = i
        else:
            if not stripped.endswith("$$"):
                faults.append(f"line {i + 1}: text after the closing $$: {line[:60]!r}")
            if not blank(i + 1):
                faults.append(f"line {i + 1}: no blank line after the closing $$")
            opened = None
    if opened is not None:
        faults.append(f"line {opened + 1}: a $$ never closed")
    return faults


def test_display_math_faults_are_found():
    good = "Then\n\n$$\nx = 1\n$$\n\nand\n\n$$y = 2$$\n"
    assert display_math_faults(good) == []
    assert display_math_faults("Then\n$$\nx = 1\n$$\n\nand") == ["line 2: no blank line before the opening $$"]
    assert display_math_faults("Then\n\n$$\nx = 1\n$$\nand") == ["line 5: no blank line after the closing $$"]
    assert display_math_faults("so $$x$$ here") != []
    assert display_math_faults("\n$$\nx\n") == ["line 2: a $$ never closed"]


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.name)
def test_display_math_stands_in_its_own_block(path):
    faults = [f"cell {k}, {f}" for k, text in markdown_cells(path) for f in display_math_faults(text)]
    assert not faults, f"{path.name}: display math inside a paragraph:\n  " + "\n  ".join(faults)
