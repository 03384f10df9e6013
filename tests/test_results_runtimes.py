"""compbook.results.runtimes: one record of the last CPU run, and every run time the book states read from it."""

import json
import re
from pathlib import Path

import pytest

from compbook.results import runtimes

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "chapters").glob("*.ipynb"))


def _report(tmp_path, cases: str) -> Path:
    path = tmp_path / "nbmake.xml"
    path.write_text(f'<?xml version="1.0"?><testsuites><testsuite name="pytest">{cases}</testsuite></testsuites>')
    return path


def test_from_junit_reads_each_notebooks_time(tmp_path):
    path = _report(tmp_path, '<testcase classname="_executed.chapters.07_depth.ipynb" name="07_depth.ipynb" '
                             'time="30.4"/><testcase classname="chapters.notes_part_a_claims.ipynb" '
                             'name="notes_part_a_claims.ipynb" time="21.0"/>')
    assert runtimes.from_junit(path) == {"07_depth": 30.4, "notes_part_a_claims": 21.0}


def test_from_junit_refuses_a_failed_run_and_a_report_without_notebooks(tmp_path):
    failed = _report(tmp_path, '<testcase classname="chapters.07_depth.ipynb" name="07_depth.ipynb" time="3">'
                               '<failure message="boom"/></testcase>')
    with pytest.raises(ValueError, match="07_depth did not pass"):
        runtimes.from_junit(failed)
    empty = _report(tmp_path, '<testcase classname="tests.test_x" name="test_y" time="1"/>')
    with pytest.raises(ValueError, match="no notebook"):
        runtimes.from_junit(empty)


def test_at_a_time_reads_the_reports_property_and_defaults_to_one(tmp_path):
    """The likely bug: chapters timed two at a time recorded as if each ran alone."""
    prop = '<properties><property name="chapters_at_a_time" value="{}"/></properties>'
    case = '<testcase classname="chapters.07_depth.ipynb" name="07_depth.ipynb" time="3"/>'
    assert runtimes.at_a_time(_report(tmp_path, prop.format(2) + case)) == 2
    assert runtimes.at_a_time(_report(tmp_path, case)) == 1                   # an nbmake report names none
    for bad in ("0", "two", "1.5"):
        with pytest.raises(ValueError, match="chapters_at_a_time"):
            runtimes.at_a_time(_report(tmp_path, prop.format(bad) + case))


def test_where_in_words_says_when_chapters_ran_beside_each_other():
    assert runtimes.where_in_words("a 2-core CPU", 1) == "a 2-core CPU"
    said = runtimes.where_in_words("a 2-core CPU", 2)
    assert said == "a 2-core CPU, two chapters at a time"
    assert runtimes.page_seconds("07_depth", {"where": said, "seconds": {"07_depth": 3}}) == ("a 2-core CPU", 3)
    with pytest.raises(ValueError, match="jobs"):
        runtimes.where_in_words("a 2-core CPU", 0)


def test_record_rounds_and_refuses_what_is_not_a_time():
    rec = runtimes.record({"07_depth": 30.4, "02_x": 0.2}, "today", "here")
    assert rec["seconds"] == {"07_depth": 30, "02_x": 1} and rec["format"] == runtimes.FORMAT
    for bad in (0, -1, float("nan")):
        with pytest.raises(ValueError):
            runtimes.record({"07_depth": bad}, "today", "here")


def test_every_notebook_of_the_book_is_in_the_record():
    rec = runtimes.load()
    titles = runtimes.toc_titles(ROOT)
    assert set(titles) == set(rec["seconds"]), set(titles) ^ set(rec["seconds"])
    with pytest.raises(ValueError, match="not in the run-time record"):
        runtimes.seconds("99_nowhere", rec)


def test_landing_page_table_is_the_record():
    """The landing page's run-time table is what the record gives, cell for cell (rewrite it with
    ``python -m compbook.results runtimes``, never by hand)."""
    text = (ROOT / "intro.md").read_text()
    shown = runtimes.intro_table(text)
    assert shown == runtimes.table_markdown(runtimes.toc_titles(ROOT)), "intro.md's table differs from the record"
    # and the check can fail: one edited cell is seen
    rec = runtimes.load()
    first = next(iter(rec["seconds"]))
    edited = dict(rec, seconds=dict(rec["seconds"], **{first: rec["seconds"][first] + 1}))
    assert shown != runtimes.table_markdown(runtimes.toc_titles(ROOT), edited)


def test_write_intro_replaces_only_the_table(tmp_path):
    intro = tmp_path / "intro.md"
    intro.write_text(f"before\n{runtimes.BEGIN}\nold\n{runtimes.END}\nafter\n")
    rec = runtimes.record({"07_depth": 30}, "5 December 2026", "a machine")
    assert runtimes.write_intro(intro, {"07_depth": "7. Depth"}, rec)
    text = intro.read_text()
    assert text.startswith("before\n") and text.endswith("after\n") and "| 7. Depth | 30 s |" in text
    assert not runtimes.write_intro(intro, {"07_depth": "7. Depth"}, rec)      # already current


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_a_chapters_run_time_comes_from_the_record(path):
    """A chapter that states its CPU run time glues it from the record under its own name; none types one
    (``about 30 s``, ``under a minute``)."""
    nb = json.loads(path.read_text())
    md = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    for m in re.finditer(r"[Rr]un time[^.]*", md):
        said = m.group(0).replace("{glue:text}`run_time` s", "")
        assert not re.search(r"about (\d|a minute)|under a minute|\d+ s\b", said), \
            f"{path.name}: a typed run time: {said[:100]!r}"
    if "{glue:text}`run_time`" in md:
        assert f'glue("run_time", runtimes.seconds("{path.stem}"))' in code, \
            f"{path.name}: states a run time but does not glue its own from the record"
