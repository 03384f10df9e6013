"""What a main chapter may hold, read off its source: the checks behind ``test_teaching.py``.

Run on chapters while rewriting them: ``python tests/teaching.py chapters/13_coverage.ipynb`` prints each
chapter's prose words, visible code lines and every finding (typed decimals, misleading names, words about how
the project was made).

Rules (the book's conventions, CONTRIBUTING.md):
* a number in the prose is glued from the run (``{glue:text}`name:.3f```) or is the paper's, on a line that says
  so ("the paper", "the paper's"); a decimal typed anywhere else is a finding;
* a main chapter's main line (the cells before its ``## Exercises``) holds at most ``MAX_WORDS`` words of prose
  and ``MAX_CODE_LINES`` visible code lines (cells tagged ``hide-input``, ``hide-cell``, ``remove-input`` or
  ``remove-cell`` are not visible);
* stored verdicts by an AI model are never called human;
* the book speaks of its subject, not of its own making (no issue numbers, sessions, "the spec").
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = ROOT / "chapters"
MAX_WORDS = 2500
MAX_CODE_LINES = 120
HIDDEN_TAGS = {"hide-input", "hide-cell", "remove-input", "remove-cell"}
MAIN = re.compile(r"^\d\d_")                   # main chapters: 01_... 16_...
NOTES = re.compile(r"^notes_part_([abc])_\w+$")  # notes chapters: notes_part_a_judges, ...

DECIMAL = re.compile(r"(?<![\w.])[-+]?\d+\.\d+(?![\w.])")
GLUE_ROLE = re.compile(r"\{glue(?::\w+)?\}`[^`]*`")
INLINE_CODE = re.compile(r"`[^`]*`")
LINK_TARGET = re.compile(r"\]\([^)]*\)")
CITES_PAPER = re.compile(r"\bpapers?\b|\bpaper's\b", re.I)
HUMAN = re.compile(r"\bhuman[- ](?:verdict|label|eye|judg|labell?er|rater|annotat)\w*|\bhuman\s*\(labell?er",
                   re.I)
SELF = re.compile(r"\bissues? #?\d+|\bsessions?\b|\bthe spec\b|\bseed summar|\bthis session", re.I)


def main_line(path: Path) -> list[dict]:
    """The chapter's cells before its ``## Exercises`` section (the exercises are room at the end, not counted in
    the main line's bounds; their markdown is still read for typed decimals and names by :func:`_all_text`)."""
    cells = json.loads(Path(path).read_text())["cells"]
    end = next((i for i, c in enumerate(cells) if c["cell_type"] == "markdown"
                and "".join(c["source"]).startswith("## Exercises")), len(cells))
    return cells[:end]


def markdown_cells(path: Path) -> list[str]:
    nb = json.loads(Path(path).read_text())
    return ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown"]


def code_cells(path: Path) -> list[tuple[str, set]]:
    return [("".join(c["source"]), set(c.get("metadata", {}).get("tags", [])))
            for c in main_line(path) if c["cell_type"] == "code"]


def _strip_fences(text: str) -> str:
    """Markdown without fenced blocks (``` or :::) that hold code or directives' options."""
    out, fence = [], None
    for line in text.splitlines():
        s = line.strip()
        if fence is None and s.startswith("```") and not s.startswith("```{"):
            fence = "```"
            continue
        if fence and s.startswith(fence):
            fence = None
            continue
        if fence is None and not s.startswith(":") and not re.match(r"^```\{", s):
            out.append(line)
    return "\n".join(out)


def typed_decimals(path: Path) -> list[str]:
    """Decimals in markdown that are neither glued nor on a line citing the paper."""
    found = []
    for cell in markdown_cells(path):
        for line in _strip_fences(cell).splitlines():
            if CITES_PAPER.search(line):
                continue
            bare = LINK_TARGET.sub("]", INLINE_CODE.sub("", GLUE_ROLE.sub("", line)))
            found += [f"{m.group()!r} in: {line.strip()[:90]}" for m in DECIMAL.finditer(bare)]
    return found


def prose_words(path: Path) -> int:
    text = "\n".join(_strip_fences("".join(c["source"])) for c in main_line(path) if c["cell_type"] == "markdown")
    text = GLUE_ROLE.sub("N", text)
    return len(re.findall(r"[A-Za-z0-9][\w'’\-.]*", text))


def visible_code_lines(path: Path) -> int:
    return sum(len([l for l in src.splitlines() if l.strip()])
               for src, tags in code_cells(path) if not tags & HIDDEN_TAGS)


def _all_text(path: Path) -> str:
    nb = json.loads(Path(path).read_text())
    return "\n".join("".join(c["source"]) for c in nb["cells"])


def human_names(path: Path) -> list[str]:
    return [m.group() for m in HUMAN.finditer(_all_text(path))]


def self_references(path: Path) -> list[str]:
    return [m.group() for m in SELF.finditer(_all_text(path))]


def toc_files() -> list[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    return [Path(ch["file"]).name for part in toc["parts"] for ch in part["chapters"]]


def toc_parts() -> list[list[str]]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    return [[Path(ch["file"]).name for ch in part["chapters"]] for part in toc["parts"]]


def report(path: Path) -> list[str]:
    path = Path(path)
    findings = [f"typed decimal {d}" for d in typed_decimals(path)]
    findings += [f"names a model's verdicts human: {h!r}" for h in human_names(path)]
    findings += [f"speaks of its own making: {s!r}" for s in self_references(path)]
    if MAIN.match(path.name):
        words, code = prose_words(path), visible_code_lines(path)
        if words > MAX_WORDS:
            findings.append(f"{words} words of prose (at most {MAX_WORDS})")
        if code > MAX_CODE_LINES:
            findings.append(f"{code} visible code lines (at most {MAX_CODE_LINES})")
    return findings


def main(argv: list[str]) -> int:
    paths = [Path(a) for a in argv] or sorted(CHAPTERS.glob("*.ipynb"))
    bad = 0
    for p in paths:
        findings = report(p)
        bad += bool(findings)
        print(f"{p.name}: {prose_words(p)} words, {visible_code_lines(p)} visible code lines, "
              f"{len(findings)} findings")
        for f in findings:
            print("   ", f)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
