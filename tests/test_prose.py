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


# a setting read off a config object (`CFG.width`, `SIZES.top_k`, `len(CFG.seeds)`), not a call (`SIZES.setting()`)
CONFIG_NAME = re.compile(r"`[^`\n]*\b(?:CFG|SIZES|cfg|sizes)\.[a-z_]\w*\b(?!\s*\()[^`\n]*`")
# a module's constant (`depth.RATIO_RES`, `compbook.sae.interpret.WEIGHT`)
CONSTANT_NAME = re.compile(r"`((?:compbook\.)?(?:[a-z_][a-z0-9_]*\.)+[A-Z][A-Z0-9_]*)`")
GLUE = re.compile(r"\{glue:text\}`")
SENTENCE_END = re.compile(r"[.;!?](?=\s)|\n\n")
NEAR = 100          # characters: a glued value this close, in the same sentence, is the value the name points at


def _constant(name: str):
    """The value of a module constant named in a chapter (``depth.RATIO_RES``), or None where no compbook module
    has it."""
    import pkgutil
    module, _, attr = name.removeprefix("compbook.").rpartition(".")
    for part in ("", "cppn.", "binding.", "sae."):
        try:
            return pkgutil.resolve_name(f"compbook.{part}{module}:{attr}")
        except (ImportError, AttributeError, ValueError):
            continue
    return None


def identifier_faults(text: str) -> list[str]:
    """Code names standing where the reader needs a value: a config setting, or a module's numeric constant,
    named in a sentence with no glued value near it (within NEAR characters, same sentence) and no ``= value``
    right after it. A name beside its glued value (``[8, 8] (our choice, `CFG.depth_range`)``) is a pointer to
    the code and passes."""
    found = [(m, m.group(0)) for m in CONFIG_NAME.finditer(text)]
    for m in CONSTANT_NAME.finditer(text):
        value = _constant(m.group(1))
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            found.append((m, m.group(0)))
    faults = []
    for m, name in found:
        start = max([e.end() for e in SENTENCE_END.finditer(text, 0, m.start())] + [0])
        after = SENTENCE_END.search(text, m.end())
        end = after.start() if after else len(text)
        sentence = text[max(start, m.start() - NEAR):min(end, m.end() + NEAR)]
        if GLUE.search(sentence) or re.match(r"\s*=\s*[-\d{$]", text[m.end():]):
            continue
        faults.append(f"{name} in: {' '.join(text[start:end].split())[:100]!r}")
    return faults


def test_identifier_faults_are_found():
    assert identifier_faults("a `CFG.depth` x `CFG.width` CPPN, pruned.") != []
    assert len(identifier_faults("builds `len(CFG.seeds)` CPPNs of `CFG.width` neurons.")) == 2
    assert identifier_faults("a parameter (`compbook.sae.interpret.WEIGHT`, our choice).") != []
    assert identifier_faults("trained at [{glue:text}`d_lo`, {glue:text}`d_hi`] (our choice, "
                             "`CFG.depth_range`).") == []
    assert identifier_faults("measured at `depth.RATIO_RES` = 256 px.") == []
    assert identifier_faults("the table `SIZES.setting()` gives.") == []
    assert identifier_faults("Muon's coefficients (`optim.NS_COEFFICIENTS`).") == []    # a tuple, not one value
    # the glued value of another sentence does not excuse the name
    assert identifier_faults("It has {glue:text}`n` seeds. Each has `CFG.width` neurons.") != []


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.name)
def test_prose_shows_values_not_config_names(path):
    """Where the prose states a setting's value, the value is glued from the run (``{glue:text}`width```), not
    the name of the setting in the code (`CFG.width`), which a reader of the page cannot look up."""
    faults = [f"cell {k}: {f}" for k, text in markdown_cells(path) for f in identifier_faults(text)]
    assert not faults, f"{path.name}: a code name where the value belongs:\n  " + "\n  ".join(faults)
