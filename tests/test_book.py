"""The book's own rules: table of contents, cleared notebooks, the Colab setup cell, one repository URL."""

import json
from pathlib import Path

import pytest
import yaml

from compbook import config
from compbook.results import paths

ROOT = Path(__file__).resolve().parents[1]
CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())
TOC = yaml.safe_load((ROOT / "_toc.yml").read_text())
TOC_FILES = [c["file"] for part in TOC["parts"] for c in part["chapters"] if c["file"].startswith("chapters/")]
NOTEBOOKS = sorted((ROOT / "chapters").glob("*.ipynb"))


def test_toc_lists_every_chapter_and_only_existing_ones():
    assert (ROOT / f"{TOC['root']}.md").is_file()
    listed = {ROOT / f"{f}.ipynb" for f in TOC_FILES}
    assert set(NOTEBOOKS) == listed, "chapters/ and _toc.yml disagree"


def test_repository_url_is_one_setting():
    assert CONFIG["repository"]["url"] == paths.REPOSITORY_URL
    assert CONFIG["repository"]["branch"] == paths.BRANCH == "main"


def test_build_fails_on_errors():
    assert CONFIG["execute"]["raise_on_error"] is True


@pytest.mark.parametrize("nb_path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_cleared_with_kernelspec_and_setup_cell(nb_path):
    nb = json.loads(nb_path.read_text())
    assert nb["metadata"]["kernelspec"]["name"] == "python3"
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert all(not c.get("outputs") and c.get("execution_count") is None for c in code), "commit without outputs"
    first = "".join(nb["cells"][0]["source"])
    assert '"google.colab" in sys.modules' in first
    assert f"git+{paths.REPOSITORY_URL}" in first
    assert "remove-cell" in nb["cells"][0]["metadata"].get("tags", []), \
        "the Colab setup cell runs first but stays off the page: tag it remove-cell"


@pytest.mark.parametrize("nb_path", NOTEBOOKS, ids=lambda p: p.name)
def test_cell_ids_are_unique(nb_path):
    """A cell copied by hand keeps its id: nbformat then renames one at every read (and warns), so the stored
    notebook and the executed one name the cell differently."""
    ids = [c.get("id") for c in json.loads(nb_path.read_text())["cells"]]
    assert len(ids) == len(set(ids)), f"cell ids used twice: {sorted({i for i in ids if ids.count(i) > 1})}"


@pytest.mark.parametrize("nb_path", NOTEBOOKS, ids=lambda p: p.name)
def test_exercise_solutions_are_folded(nb_path):
    """The book's own solution of an exercise (the cell that asserts its check passes) is folded on the page
    (``hide-cell``: its code and its "correct" line one click away, behind "Show the solution"), never printed
    under the reader's stub."""
    cells = json.loads(nb_path.read_text())["cells"]
    start = next((i for i, c in enumerate(cells) if c["cell_type"] == "markdown"
                  and "".join(c["source"]).lstrip().startswith("## Exercises")), len(cells))
    solutions = [c for c in cells[start:]
                 if c["cell_type"] == "code" and "assert result.passed" in "".join(c["source"])]
    shown = [i for i, c in enumerate(solutions) if "hide-cell" not in c["metadata"].get("tags", [])
             or c["metadata"].get("mystnb", {}).get("code_prompt_show") != "Show the solution"]
    assert not shown, f"{nb_path.name}: solution cells not folded under 'Show the solution' (hide-cell): {shown}"
    if start < len(cells) and nb_path.name[:2].isdigit():
        assert solutions, f"{nb_path.name}: exercises without a solution cell"


def test_mode_switch(monkeypatch):
    monkeypatch.delenv(config.MODE_VARIABLE, raising=False)
    assert config.mode() == "cpu" and config.by_mode(1, 2) == 1
    monkeypatch.setenv(config.MODE_VARIABLE, "full")
    assert config.is_full() and config.by_mode(1, 2) == 2
    monkeypatch.setenv(config.MODE_VARIABLE, "turbo")
    with pytest.raises(ValueError, match="COMPBOOK_MODE='turbo'"):
        config.mode()


@pytest.mark.parametrize("nb_path", NOTEBOOKS, ids=lambda p: p.name)
def test_code_fits_the_page_and_starts_no_live_widget(nb_path):
    """Code lines <= 80 characters (the page's column); no chapter starts an ipywidgets `interact` itself: sliders
    go through compbook.book.sliders.frame_slider, which never goes live headless (CONTRIBUTING.md). The setup cell,
    whose text CONTRIBUTING.md fixes, is exempt from the width rule."""
    nb = json.loads(nb_path.read_text())
    code = [("".join(c["source"]), k) for k, c in enumerate(nb["cells"]) if c["cell_type"] == "code"]
    wide = [f"cell {k}: {line}" for src, k in code[1:] for line in src.splitlines() if len(line) > 80]
    assert not wide, "code lines over 80 characters:\n" + "\n".join(wide)
    calls = [f"cell {k}" for src, k in code if "interact(" in src or "import ipywidgets" in src]
    assert not calls, f"ipywidgets used directly in {calls}: use compbook.book.sliders.frame_slider"


def _chapter_code_lines():
    import importlib.util
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "chapter_code_lines.py"
    spec = importlib.util.spec_from_file_location("chapter_code_lines", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("nb_path", NOTEBOOKS, ids=lambda p: p.name)
def test_chapter_shows_a_result_every_ten_visible_code_lines(nb_path):
    """Plumbing lives in compbook: at most 10 visible code lines per result, on average."""
    lines, results = _chapter_code_lines().count(nb_path)
    print(f"{nb_path.stem}: {lines} visible code lines, {results} results, {lines / max(results, 1):.1f} per result")
    assert results and lines / results <= 10, (f"{lines} visible code lines for {results} results: move plumbing "
                                               f"into compbook or fold formatting-only cells (hide-input)")
