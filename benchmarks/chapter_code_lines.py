"""Visible code lines per result, per chapter: ``python benchmarks/chapter_code_lines.py chapters``.

A *visible code line* is a non-blank, non-comment line of a code cell the page shows (not tagged ``hide-input``,
``hide-cell``, ``remove-input`` or ``remove-cell``; the Colab setup cell excluded). A *result* is a code cell that
shows something: it prints, plots, displays or draws a slider, or ends in an expression (a table). The book's rule
(CONTRIBUTING.md): at most 10 visible lines per result on average in every chapter (``tests/test_book.py``).
"""

import argparse
import ast
import json
import re
from pathlib import Path

HIDDEN = {"hide-input", "hide-cell", "remove-input", "remove-cell"}
SHOWS = re.compile(r"\b(print|display|frame_slider|imshow|plt\.|plots\.|\.plot\(|show\(|HTML\()")


def shows_something(src: str) -> bool:
    """Whether a code cell's source prints, plots or displays, or ends in an expression."""
    if SHOWS.search(src):
        return True
    try:
        body = ast.parse(src.replace("%", "#")).body
    except SyntaxError:
        return False
    return bool(body) and isinstance(body[-1], ast.Expr) and not isinstance(body[-1].value, ast.Constant)


def count(nb_path) -> tuple[int, int]:
    """``(visible code lines, results)`` of one notebook."""
    lines = results = 0
    for i, c in enumerate(json.loads(Path(nb_path).read_text())["cells"]):
        if c["cell_type"] != "code" or i == 0:
            continue
        src = "".join(c["source"])
        results += shows_something(src)
        if not set(c.get("metadata", {}).get("tags", [])) & HIDDEN:
            lines += sum(1 for l in src.split("\n") if l.strip() and not l.strip().startswith("#"))
    return lines, results


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", nargs="?", default="chapters", help="a folder of chapter notebooks")
    for p in sorted(Path(ap.parse_args().folder).glob("*.ipynb")):
        n, r = count(p)
        print(f"{p.stem:28s} {n:4d} lines {r:3d} results {n / max(r, 1):5.1f} per result")
