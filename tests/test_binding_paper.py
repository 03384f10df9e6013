"""compbook.binding.paper: each figure of Part B's paper written once, read by code and chapters from there."""

import json
import re
from pathlib import Path

import pytest

from compbook.binding import paper
from compbook.binding.complexity import ComplexityConfig
from compbook.binding.recipe.config import RecipeConfig

ROOT = Path(__file__).resolve().parents[1]
REWRITTEN = ("10_bag_of_concepts", "11_scenes_are_sums", "12_binding_function", "13_coverage")
GLUE_ROLE = re.compile(r"\{glue(?::\w+)?\}`[^`]*`")


def _decimals(value):
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (tuple, list)):
        return [d for v in value for d in _decimals(v)]
    return [value] if isinstance(value, float) and value not in (0.0, 1.0) else []


def test_figures_have_a_source_and_a_value():
    for name, f in paper.FIGURES.items():
        assert f.source in ("paper", "released code") and f.what, name
        assert paper.figure(name) is f.value
    with pytest.raises(ValueError, match="figure"):
        paper.figure("clip_r2")


def test_the_code_reads_the_table():
    recipe = paper.figure("released_recipe")
    assert {k: RecipeConfig.FULL[k] for k in recipe} == recipe
    assert ComplexityConfig.FULL["widths"] == paper.figure("complexity_widths")


@pytest.mark.parametrize("stem", REWRITTEN)
def test_chapters_glue_the_papers_figures(stem):
    """The chapter's prose types none of the paper's decimals: it glues them from the table."""
    nb = json.loads((ROOT / "chapters" / f"{stem}.ipynb").read_text())
    prose = "\n".join(GLUE_ROLE.sub("", "".join(c["source"])) for c in nb["cells"] if c["cell_type"] == "markdown")
    code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    typed = sorted({d for f in paper.FIGURES.values() for d in _decimals(f.value)
                    if re.search(rf"(?<![\w.]){re.escape(str(d))}(?![\w.])", prose)})
    assert not typed, f"{stem} types the paper's {typed}: glue them from compbook.binding.paper"
    if "the paper says" in prose.lower():
        assert "paper.figure(" in code


def test_the_binding_package_types_each_figure_once():
    """The released recipe's learning rate and step count appear in binding's code only in paper.py."""
    for src in (ROOT / "compbook" / "binding").glob("*.py"):
        if src.name == "paper.py":
            continue
        code = "\n".join(l.split("#")[0] for l in src.read_text().splitlines()
                         if not l.strip().startswith(("#", '"', "'")))
        assert not re.search(r"\blr=3e-5\b|\bsteps=50_?000\b", code), src.name
