"""Every chapter within the book's teaching rules (tests/teaching.py reads them off the sources), every part with
its notes chapters, and the rules themselves able to fail."""

import json
from pathlib import Path

import pytest

import teaching

CHAPTERS = sorted(teaching.CHAPTERS.glob("*.ipynb"))


@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_chapter_keeps_the_teaching_rules(path):
    findings = teaching.report(path)
    assert not findings, (f"{path.name}: glue result numbers from the run, quote the paper's on a line that says "
                          "so, move the audit to the part's notes chapter:\n  " + "\n  ".join(findings))


def test_every_part_has_main_chapters_then_notes():
    parts = [p for p in teaching.toc_parts() if any(teaching.MAIN.match(f) for f in p)]
    assert len(parts) == 3, f"expected three parts with main chapters, got {len(parts)}"
    for letter, files in zip("abc", parts):
        main = [f for f in files if teaching.MAIN.match(f)]
        notes = [f for f in files if (m := teaching.NOTES.match(Path(f).stem)) and m.group(1) == letter]
        assert notes, f"part {letter.upper()} ({main[0]} ...) has no notes chapter notes_part_{letter}_*"
        assert files.index(notes[0]) > files.index(main[-1]), f"part {letter.upper()}: notes before main chapters"
        assert set(main) | set(notes) == set(files), f"part {letter.upper()}: other files {set(files) - set(main)}"


def test_every_main_chapter_ends_with_exercises():
    for path in CHAPTERS:
        if teaching.MAIN.match(path.name):
            heads = [s for s in teaching.markdown_cells(path) if s.lstrip().startswith("## ")]
            assert heads and heads[-1].lstrip().startswith("## Exercises"), f"{path.name}: no final ## Exercises"


def _notebook(tmp_path, name, markdown, code="x = 1"):
    cells = [{"cell_type": "markdown", "metadata": {}, "source": markdown},
             {"cell_type": "code", "metadata": {}, "source": code, "outputs": [], "execution_count": None}]
    path = tmp_path / name
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    return path


@pytest.mark.parametrize("markdown, finding", [
    ("The score is 0.82 here.", "typed decimal '0.82'"),
    ("Blind human verdicts agree.", "human"),
    ("Measured in issue 21.", "own making"),
    ("As the spec says.", "own making"),
])
def test_the_rules_catch_what_they_name(tmp_path, markdown, finding):
    assert any(finding in f for f in teaching.report(_notebook(tmp_path, "99_x.ipynb", markdown))), \
        f"{markdown!r} passed the rules"


@pytest.mark.parametrize("markdown", [
    "The paper reports 0.82.",                 # the paper's own figure, said so
    "The score is {glue:text}`score:.2f`.",    # glued from the run
    "Run `lr = 0.001` to see it.",             # code, not prose
])
def test_the_rules_accept_what_the_book_does(tmp_path, markdown):
    assert teaching.report(_notebook(tmp_path, "99_x.ipynb", markdown)) == []


def test_main_chapter_bounds_apply_before_the_exercises_only(tmp_path):
    long = " ".join(["word"] * (teaching.MAX_WORDS + 1))
    assert any("words of prose" in f for f in teaching.report(_notebook(tmp_path, "99_x.ipynb", long)))
    assert teaching.report(_notebook(tmp_path, "notes_part_a_x.ipynb", long)) == [], "notes may be long"
    code = "\n".join(f"x{i} = {i}" for i in range(teaching.MAX_CODE_LINES + 1))
    assert any("visible code lines" in f for f in teaching.report(_notebook(tmp_path, "98_x.ipynb", "t", code)))
