"""tests/page_rules.py: each rule proven on a tiny input that breaks it and one that obeys it; the two rules
read off the sources (the landing page's exercise table, typed run times) applied to every chapter; the list of
pages still breaking a rule well-formed.

The rules read off the built pages run in ``tests/browser/test_rules.py``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

import page_rules
from page_rules import EXPECTED, RULES

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "chapters").glob("*.ipynb"))
TOC = yaml.safe_load((ROOT / "_toc.yml").read_text())
PAGES = [TOC["root"]] + [f for part in TOC["parts"] for c in part["chapters"]
                         for f in [c["file"]] + [s["file"] for s in c.get("sections", [])]]


def _sources(path: Path) -> tuple[str, str]:
    cells = json.loads(path.read_text())["cells"]
    return ("\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown"),
            "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code"))


# -- the rules on tiny inputs ---------------------------------------------------------------------------------
@pytest.mark.parametrize("cell,bad", [
    ("NaN", True), ("nan", True), ("<NA>", True), ("0.785078", True), ("0.666667", True), ("1234.5", True),
    ("-12.3456", True), ("0.62 ± 0.031255", True),
    ("n/a", False), ("0.7851", False), ("1.562e-02", False), ("100.0", False), ("7,933,504", False),
    ("12345", False), ("2026-12-05", False), ("finance", False), ("0.0001234", False), ("skull 12", False)])
def test_table_cell_values(cell, bad):
    assert bool(page_rules.cell_value_problems(cell)) == bad


def test_significant_digits():
    assert [page_rules.significant_digits(x) for x in ("0.785078", "1.562e-02", "100.0", "0.0012")] == [6, 4, 4, 2]


def test_text_tables_whose_columns_run_together():
    merged = "  n   W     ratio\n  2  10  0.015620\n  2 101.562e-02\n  3  12  0.002000"
    abut = "n  k      ratio\n1  2   0.500000\n2  3 12.5000000\n3  4   0.250000\n4  5   0.125000"
    fine = "        a    bb\nx 1  1.50    10\n  2  2.25   200\ny 1  3.00  3000"
    assert "run together" in page_rules.text_table_problems(merged)[0]
    assert "columns 2 and 3" in page_rules.text_table_problems(abut)[0]
    assert page_rules.text_table_problems(fine) == []
    titled = ("pairs per layer: [15, 14, 9]\n  magnitude            sparsity 0.613\n"
              "  wanda                sparsity 0.613\n  SP                   sparsity 0.613")
    assert page_rules.text_table_problems(titled) == []
    assert page_rules.text_table_problems("step 100 loss 0.5\nstep 200 loss 0.25\nstep 1000 loss 0.125") == []


def test_config_reprs_and_machine_paths():
    assert "config repr" in page_rules.machine_output_problems("SAETrainConfig(k=8, lam=0.1)")[0]
    for path in ("/root/.cache/x", "/home/ann/data", "/tmp/tmpab/x.pt", "~/.cache/compbook"):
        assert page_rules.machine_output_problems(f"saved to {path}"), path
    assert page_rules.machine_output_problems("at /work/ck/data/x.json", checkout="/work/ck")
    assert page_rules.machine_output_problems("k = 8, lambda = 0.1 (data/sae/x.json)", checkout="/work/ck") == []


def test_glue_in_visible_code():
    assert page_rules.visible_glue_problems("x = 1\nglue('x', x)")
    assert page_rules.visible_glue_problems("cb.glue('x', x)")
    assert page_rules.visible_glue_problems("x = 1\n# glue('x', x) below") == []
    assert page_rules.visible_glue_problems("from compbook import glue\nx = 1") == []


def test_exercise_table_against_the_chapters_code():
    intro = ("| chapter | 1 | 2 |\n|---|---|---|\n"
             "| [7](chapters/07_depth.ipynb) | write: `check_png_ratio` | write: `check_trained_depth` |\n")
    table = page_rules.exercise_table(intro)
    assert table == {"07_depth": ["check_png_ratio", "check_trained_depth"]}
    code = "exercises.check_png_ratio(png_ratio)\n"
    assert page_rules.exercise_problems(table["07_depth"], code) == [
        "the landing page names check_trained_depth for this chapter, which never calls it"]
    assert page_rules.exercise_problems(["check_png_ratio"], code) == []
    with pytest.raises(ValueError, match="no exercise table"):
        page_rules.exercise_table("# no table here")


@pytest.mark.parametrize("text,lo,hi", [
    ("takes a minute or two", 60, 120), ("about 30 s", 20, 45), ("under a minute", 0, 60),
    ("one to two minutes of compute", 60, 120), ("about ten minutes", 400, 900),
    ("about half an hour", 1200, 2700), ("15-40 minutes", 900, 2400), ("tens of CPU minutes", 600, 5940)])
def test_typed_durations(text, lo, hi):
    (phrase, a, b), = page_rules.typed_durations(text)
    assert (a, b) == (lo, hi)


def test_what_is_not_a_typed_run_time():
    for text in ("a second labeller", "as the paper says", "{glue:text}`run_time` s", "`30 s`", "$t = 5 s$",
                 "chapter 5 shows", "k = 8 slots"):
        assert page_rules.typed_durations(text) == [], text


def test_run_times_against_the_record():
    assert page_rules.run_time_problems("In CPU mode this takes a minute or two.", 20)
    assert page_rules.run_time_problems("In CPU mode this takes under a minute.", 20) == []
    assert page_rules.run_time_problems("Run time: {glue:text}`run_time` s.", 20) == []


# -- the list of pages still breaking a rule -----------------------------------------------------------------
def test_expected_failures_name_a_page_and_a_rule_with_a_reason():
    for (page, rule), reason in EXPECTED.items():
        assert page in PAGES, f"EXPECTED names {page!r}, not a page of _toc.yml"
        assert rule in RULES, f"EXPECTED names rule {rule!r}, not one of {sorted(RULES)}"
        assert reason.strip(), (page, rule)
    with pytest.raises(ValueError, match="not one of"):
        page_rules.expected("intro", "no_such_rule")


def _cases(rule):
    for path in CHAPTERS:
        page = f"chapters/{path.stem}"
        reason = page_rules.expected(page, rule)
        marks = [pytest.mark.xfail(strict=True, reason=f"{RULES[rule]}: {reason}")] if reason else []
        yield pytest.param(path, marks=marks, id=path.stem)


# -- the source rules on the book ------------------------------------------------------------------------------
INTRO_TABLE = page_rules.exercise_table((ROOT / "intro.md").read_text())


def test_the_exercise_table_has_a_row_per_main_chapter():
    main = [p.stem for p in CHAPTERS if p.stem[:2].isdigit()]
    assert sorted(INTRO_TABLE) == main and all(len(v) == 2 for v in INTRO_TABLE.values())


@pytest.mark.parametrize("path", list(_cases("exercise_table")))
def test_exercise_table_names_the_chapters_checks(path):
    named = INTRO_TABLE.get(path.stem, [])
    problems = page_rules.exercise_problems(named, _sources(path)[1])
    assert not problems, f"{path.stem}: " + "; ".join(problems)


@pytest.mark.parametrize("path", list(_cases("run_times")))
def test_typed_run_times_agree_with_the_record(path):
    recorded = json.loads((ROOT / "data" / "runtimes.json").read_text())["seconds"][path.stem]
    problems = page_rules.run_time_problems(_sources(path)[0], recorded)
    assert not problems, f"{path.stem}:\n  " + "\n  ".join(problems)
