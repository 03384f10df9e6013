"""Rules for what a reader of the built pages should never meet, as plain functions on text (the browser test
``tests/browser/test_rules.py`` feeds them what it reads off each page; ``tests/test_page_rules.py`` proves
each on a tiny page that breaks it).

Each rule has a name (:data:`RULES`); :data:`EXPECTED` lists the pages that still break a rule, each with the
reason, so that the test reports them as expected failures (never a silent skip) and fails once a listed page
obeys the rule (the entry must then go).
"""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

RULES = {
    "wide_math": "display math wider than the text column",
    "table_columns": "table columns that run together",
    "table_values": "NaN or more than four significant digits in a table cell (write n/a, round)",
    "machine_output": "a config repr or a path of the building machine in an output",
    "visible_glue": "bookkeeping (glue(...)) in a code cell the reader sees",
    "figure_text": "figure text below 8 pt at the width the page shows it",
    "figure_tiles": "image tiles under about an inch at the width the page shows them",
    "legend_over_data": "a legend over plotted data",
    "exercise_table": "the landing page's exercise table against the chapters' checks",
    "run_times": "a typed run time against the stored record (data/runtimes.json)",
    "page_length": "a main chapter longer than its bounds (screens before the exercises, tables)",
    "overflow": "an output wider than the text column",
}

# -- the pages that still break a rule: (page, rule) -> why it is listed -------------------------------------
# A page that breaks a rule while its fix is under way is listed here with the reason (``page -> {rule: why}``),
# so the run reports it as an expected failure; a listed page that obeys its rule fails the run, so a stale entry
# cannot stay. Every page obeys every rule now: nothing is listed.
STILL_BREAKING: dict[str, dict[str, str]] = {}


EXPECTED: dict[tuple[str, str], str] = {
    (page, rule): f"{why}; remove this entry with the fix"
    for page, rules in STILL_BREAKING.items() for rule, why in rules.items()}


def expected(page: str, rule: str) -> str | None:
    """The reason ``page`` is listed as still breaking ``rule``, or None."""
    if rule not in RULES:
        raise ValueError(f"rule {rule!r}: not one of {sorted(RULES)}")
    return EXPECTED.get((page, rule))


# -- table cells: NaN, more than four significant digits ------------------------------------------------------
MAX_DIGITS = 4
_NAN = re.compile(r"(?<![\w/])(nan|NaN|NAN|NaT|<NA>)(?![\w/])")
_NUMBER = re.compile(r"(?<![\w.])[-+\u2212]?(\d[\d,]*)?\.(\d+)(?:[eE][-+]?\d+)?(?![\w.])")


def significant_digits(token: str) -> int:
    """Significant digits of a decimal number written with a point (``0.785078`` -> 6, ``1.562e-02`` -> 4,
    ``100.0`` -> 4): every digit of its mantissa after the leading zeros."""
    mantissa = re.split(r"[eE]", token)[0]
    digits = re.sub(r"\D", "", mantissa).lstrip("0")
    return len(digits)


def cell_value_problems(text: str) -> list[str]:
    """A rendered table cell's text: NaN (a reader needs "n/a" and why), or a decimal number with more than
    :data:`MAX_DIGITS` significant digits (round it). Integers (counts, seeds, sizes) are exact and pass."""
    out = []
    if _NAN.search(text):
        out.append(f"NaN in a cell: {text.strip()[:40]!r} (write n/a)")
    for m in _NUMBER.finditer(text):
        if significant_digits(m.group(0)) > MAX_DIGITS:
            out.append(f"{m.group(0)!r} has {significant_digits(m.group(0))} significant digits "
                       f"(at most {MAX_DIGITS}: round it)")
    return out


# -- text tables in <pre> whose columns abut --------------------------------------------------------------------
def _fields(line: str) -> list[tuple[int, int]]:
    """Where a text table's cells lie on a line: runs of text separated by two or more spaces (one space is a
    space inside a cell)."""
    return [m.span() for m in re.finditer(r"\S+(?: \S+)*", line)]


def text_table_problems(text: str) -> list[str]:
    """Columns of a text table that run together. A text table: three or more consecutive non-empty lines whose
    cells (text separated by two or more spaces) mostly come in one number, two or more (the full rows); its
    columns are where the full rows' cells lie. Two columns run together where a cell of a row between the
    first and the last full row reaches from one column into the next: one space or none between them
    (``2 2 101.562e-02`` under ``n  k  W  ratio``, ``default the paper's ...`` where ``default`` is a column padded to
    its width)."""
    out = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        j = i
        while j < len(lines) and lines[j].strip():
            j += 1
        if j - i >= 3:
            out += _block_problems(lines[i:j])
        i = j + 1
    return out


def _block_problems(lines: list[str]) -> list[str]:
    rows = [_fields(x) for x in lines]
    counts = [len(r) for r in rows]
    m = max(set(counts), key=counts.count)
    full = [r for r in rows if len(r) == m]
    if m < 2 or len(full) < 3 or len(full) < 0.5 * len(rows):
        return []
    spans = [(min(r[k][0] for r in full), max(r[k][1] for r in full)) for k in range(m)]
    first = counts.index(m)
    last = len(counts) - 1 - counts[::-1].index(m)
    for row, line in list(zip(rows, lines))[first:last + 1]:     # a title or a note above or below is prose
        for start, end in row:
            hit = [k for k, (a, b) in enumerate(spans) if start < b and end > a]
            if len(hit) > 1:
                return [f"text table columns {hit[0] + 1} and {hit[1] + 1} run together: {line.strip()[:70]!r}"]
    return []


# -- config reprs and the building machine's paths in outputs ------------------------------------------------
_CONFIG = re.compile(r"\b[A-Z]\w*Config\(")
_MACHINE_PATHS = ("/root/", "/home/", "/tmp/", "~/.cache", "/.cache/")


def machine_output_problems(text: str, checkout: str | None = None) -> list[str]:
    """An output that shows a config repr (``SAETrainConfig(k=...)``: a reader needs the values it sets, in
    words) or a path of the machine that built the book (a home folder, ``/tmp``, a cache, the checkout)."""
    out = []
    for m in _CONFIG.finditer(text):
        out.append(f"a config repr: {text[m.start():m.start() + 60]!r}")
    paths = _MACHINE_PATHS + ((checkout.rstrip("/") + "/",) if checkout else ())
    for p in paths:
        at = text.find(p)
        if at >= 0:
            out.append(f"a path of the building machine ({p}): {text[max(0, at - 20):at + 50]!r}")
    return out


_GLUE = re.compile(r"(?<![\w.])(?:\w+\.)*glue\(")


def visible_glue_problems(code: str) -> list[str]:
    """A code cell the reader sees that calls ``glue(...)`` (bookkeeping: tag the cell ``remove-input``, or
    move the calls to a hidden cell)."""
    lines = [x.strip() for x in code.splitlines() if _GLUE.search(x) and not x.strip().startswith("#")]
    return [f"glue(...) in a visible cell ({len(lines)} line(s)): {lines[0][:70]!r}"] if lines else []


# -- the landing page's exercise table ------------------------------------------------------------------------
_ROW = re.compile(r"^\|\s*\[(\d+)\]\(chapters/([^)]+)\.ipynb\)\s*\|(.*)$", re.M)


def exercise_table(intro: str) -> dict[str, list[str]]:
    """``{chapter stem: [check names]}`` from the landing page's exercise table (rows ``| [N](chapters/x.ipynb)
    | ... `check_a` | ... `check_b` |``)."""
    table = {}
    for m in _ROW.finditer(intro):
        table[m.group(2)] = re.findall(r"`(check_\w+)`", m.group(3))
    if not table:
        raise ValueError("intro: no exercise table rows (| [N](chapters/....ipynb) | ... |) found")
    return table


def exercise_problems(named: list[str], code: str) -> list[str]:
    """The checks the table names for a chapter that its code never calls (``check_x(`` or ``.check_x(``)."""
    return [f"the landing page names {c} for this chapter, which never calls it"
            for c in named if not re.search(rf"\b{c}\(", code)]


# -- typed run times ------------------------------------------------------------------------------------------
_WORDS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
          "eight": 8, "nine": 9, "ten": 10, "twelve": 12, "fifteen": 15, "twenty": 20, "thirty": 30,
          "forty": 40, "fifty": 50, "sixty": 60, "half an": 0.5, "half a": 0.5, "a few": 3, "tens of": 30}
_NUM = r"(\d+(?:\.\d+)?|half an?|a few|tens of|an?|one|two|three|four|five|six|seven|eight|nine|ten|twelve" \
       r"|fifteen|twenty|thirty|forty|fifty|sixty)"
_UNIT = r"(seconds?|secs?|s|minutes?|mins?|hours?|h)"
_DURATION = re.compile(
    rf"(?i)(?<![\w$.])(?:(about|around|roughly|under|less than|up to|at most|over|within)\s+)?{_NUM}"
    rf"(?:\s*(?:or|to|-|\u2013)\s*{_NUM})?(?:\s+(?:\w+\s+)?of)?\s*(?:CPU\s+|cpu\s+)?{_UNIT}(?![\w$])"
    rf"(?:\s+or\s+(two|three|so))?")
_SECONDS = {"s": 1, "sec": 1, "secs": 1, "second": 1, "seconds": 1, "min": 60, "mins": 60, "minute": 60,
            "minutes": 60, "h": 3600, "hour": 3600, "hours": 3600}


def _value(word: str) -> float:
    w = word.lower()
    return float(w) if re.fullmatch(r"\d+(?:\.\d+)?", w) else float(_WORDS[w])


def typed_durations(markdown: str) -> list[tuple[str, float, float]]:
    """Every run time typed in ``markdown`` (glue roles, code spans and math removed first): ``(the phrase,
    lowest, highest seconds it allows)``. ``about N`` allows N/1.5 to 1.5 N, ``under N`` 0 to N, ``a minute
    or two`` 60 to 120 s; a bare ``N s`` allows N/1.5 to 1.5 N (a typed time is rounded)."""
    text = re.sub(r"\{glue:?\w*\}`[^`]*`|``[^`]*``|`[^`]*`|\$\$.*?\$\$|\$[^$\n]*\$", " ", markdown, flags=re.S)
    out = []
    for m in _DURATION.finditer(text):
        hedge, a, b, unit, more = m.group(1), m.group(2), m.group(3), m.group(4), m.group(5)
        if unit.lower() in ("s", "h") and not re.fullmatch(r"\d+(?:\.\d+)?", b or a):
            continue            # "a s", "one h": not a time
        if not re.fullmatch(r"\d+(?:\.\d+)?", a) and unit.lower() == "second":
            continue            # "a second labeller", "one second model": an ordinal
        if more:                # "a minute or two", "a minute or so"
            b = {"so": str(2 * _value(a))}.get(more.lower(), more)
        k = _SECONDS[unit.lower()]
        lo, hi = _value(a) * k, _value(b or a) * k
        if (hedge or "").lower() in ("under", "less than", "up to", "at most", "within"):
            lo = 0.0
        elif (hedge or "").lower() == "over":
            hi = math.inf
        elif not b:
            lo, hi = lo / 1.5, hi * 1.5
        if a.lower() == "tens of":
            lo, hi = 10 * k, 99 * k
        out.append((" ".join(m.group(0).split()), lo, hi))
    return out


def run_time_problems(markdown: str, recorded_s: float) -> list[str]:
    """The run times typed in a chapter's prose that disagree with its recorded run time (a run time of
    something else, a training command say, is typed from no record: glue it from the record that holds it)."""
    return [f"typed run time {phrase!r} ({_span(lo, hi)}) is not this page's recorded {recorded_s:g} s: glue "
            "the page's own from data/runtimes.json, another job's from the record that holds it"
            for phrase, lo, hi in typed_durations(markdown) if not lo <= recorded_s <= hi]


def _span(lo: float, hi: float) -> str:
    return f"{lo:g} s or more" if hi == math.inf else f"{lo:g}-{hi:g} s"


# -- the figure log the executed chapters wrote (compbook.book.legibility), read by the browser's figure checks --------
FIGURE_LOG_VARIABLE = "COMPBOOK_FIGCHECK_LOG"


def figure_log() -> list[dict]:
    """The records of ``$COMPBOOK_FIGCHECK_LOG`` (one JSON object a line); skipped with a message where it is unset
    (outside ``make test``), failed where it names no file."""
    value = os.environ.get(FIGURE_LOG_VARIABLE)
    if not value:
        pytest.skip(f"figure check: no log (${FIGURE_LOG_VARIABLE} unset); `make test` runs the chapters with one")
    path = Path(value)
    if not path.is_file():
        pytest.fail(f"${FIGURE_LOG_VARIABLE}={value}: no log there (were the chapters run with COMPBOOK_FIGCHECK "
                    f"set?)")
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
