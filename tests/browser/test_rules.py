"""The rules of ``tests/page_rules.py`` on every built page, as a reader at 1280 px meets it.

One test per page and rule. A page that still breaks a rule and is listed in ``page_rules.EXPECTED`` is an
expected failure (reported with its reason in pytest's ``-ra`` summary); a listed page that obeys the rule fails
the run (strict), so its entry goes with the fix. Each page is opened once: what it shows is measured in the
browser (:func:`read_page`) and judged in Python.
"""

from __future__ import annotations

import base64
import hashlib
import sys
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import page_rules  # noqa: E402
from page_rules import RULES, figure_log  # noqa: E402
from test_pages import PAGES, _html_dir, _open, browser, site  # noqa: E402,F401

from compbook.book import legibility  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
BROWSER_RULES = ("wide_math", "table_columns", "table_values", "machine_output", "visible_glue",
                 "figure_text", "figure_tiles")

# What a page shows, read in the browser after MathJax and the images are done: display math against the
# column, table cells' text boxes (the gap between neighbours in a row), output text and <pre> blocks, the
# code a reader sees (folded cells included: a reader may open them), and every image's displayed width.
READ_SCRIPT = r"""
const art = document.querySelector('article') || document.body;
const cs = getComputedStyle(art);
const column = art.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
const math = [];
art.querySelectorAll('mjx-container[display="true"]').forEach(c => {
  const inner = c.querySelector('mjx-math') || c;
  const w = Math.max(inner.getBoundingClientRect().width, c.scrollWidth);
  const room = Math.min(column, c.clientWidth || column);
  if (w > room + 1) {
    const tex = (c.getAttribute('aria-label') || c.textContent || '').replace(/\s+/g, ' ');
    math.push({width: Math.round(w), room: Math.round(room), text: tex.slice(0, 80)});
  }
});
function textBox(cell) {
  const r = document.createRange(); r.selectNodeContents(cell);
  const rects = Array.from(r.getClientRects()).filter(x => x.width > 0);
  if (!rects.length) return null;
  return {left: Math.min(...rects.map(x => x.left)), right: Math.max(...rects.map(x => x.right))};
}
const tables = [];
art.querySelectorAll('table').forEach((t, ti) => {
  const cells = [];
  let minGap = null, where = '';
  t.querySelectorAll('tr').forEach(tr => {
    const row = Array.from(tr.children).filter(c => c.tagName === 'TD' || c.tagName === 'TH');
    row.forEach(c => cells.push(c.innerText.trim()));
    const boxes = row.map(c => [c, textBox(c)]).filter(x => x[1]).sort((a, b) => a[1].left - b[1].left);
    for (let i = 1; i < boxes.length; i++) {
      const em = parseFloat(getComputedStyle(boxes[i][0]).fontSize);
      const gap = (boxes[i][1].left - boxes[i - 1][1].right) / em;
      if (minGap === null || gap < minGap) {
        minGap = gap;
        where = boxes[i - 1][0].innerText.trim().slice(0, 30) + ' | ' + boxes[i][0].innerText.trim().slice(0, 30);
      }
    }
  });
  tables.push({index: ti, min_gap_em: minGap, where: where, cells: cells});
});
const outputs = Array.from(art.querySelectorAll('div.cell_output, .pasted-text, .pasted-inline'))
  .map(e => e.innerText);
const pres = Array.from(art.querySelectorAll('div.cell_output pre')).map(e => e.innerText);
const code = Array.from(art.querySelectorAll('div.cell_input')).map(e => e.textContent);
const images = Array.from(art.querySelectorAll('img')).filter(i => i.naturalWidth > 0).map(i => ({
  src: i.currentSrc || i.src, shown: i.getBoundingClientRect().width, natural: i.naturalWidth,
  alt: (i.alt || '').slice(0, 40)}));
return {column: column, math: math, tables: tables, outputs: outputs, pres: pres, code: code, images: images};
"""

MIN_GAP_EM = 0.5        # neighbouring cells' text closer than half an em reads as one value


def judge(seen: dict, figures: dict[str, dict] | None = None, html_dir: Path | None = None) -> dict:
    """``{rule: [problem, ...]}`` for one page's :data:`READ_SCRIPT` result; ``figures``: the figure log's
    records by PNG hash (for the text and tile checks at the width the page shows each image)."""
    found = {rule: [] for rule in BROWSER_RULES}
    for m in seen["math"]:
        found["wide_math"].append(f"display math {m['width']} px wide in a {m['room']} px column: {m['text']!r}")
    for t in seen["tables"]:
        if t["min_gap_em"] is not None and t["min_gap_em"] < MIN_GAP_EM:
            found["table_columns"].append(f"table {t['index']}: neighbouring cells {t['min_gap_em']:.2f} em apart "
                                          f"(at least {MIN_GAP_EM}): {t['where']!r}")
        values = [p for c in t["cells"] for p in page_rules.cell_value_problems(c)]
        if values:
            found["table_values"].append(f"table {t['index']}: {len(values)} cell(s), e.g. {values[0]}")
    for text in seen["pres"]:
        found["table_columns"] += page_rules.text_table_problems(text)
    for text in seen["outputs"]:
        found["machine_output"] += page_rules.machine_output_problems(text, str(ROOT))
    for code in seen["code"]:
        found["visible_glue"] += page_rules.visible_glue_problems(code)
    for img in seen["images"]:
        record = (figures or {}).get(_digest(img["src"], html_dir))
        if record is None or not img["shown"]:
            continue
        shown_in = img["shown"] / legibility.CSS_PX_PER_IN
        name = record.get("figure") or img["alt"] or "a figure"
        for rule, what in (("figure_text", "fonts"), ("figure_tiles", "tiles")):
            found[rule] += [f"{name[:40]!r} shown {shown_in:.2f} in wide: {p}"
                            for p in legibility.at_display(record["measure"], shown_in, what=(what,))]
    return found


def _digest(src: str, html_dir: Path | None) -> str | None:
    """SHA-256 of an image's bytes: a data: URI's, or the built file's a URL points at."""
    if src.startswith("data:image/png;base64,"):
        return hashlib.sha256(base64.b64decode(src.split(",", 1)[1])).hexdigest()
    if html_dir is None:
        return None
    path = html_dir / unquote(urlparse(src).path).lstrip("/")
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None


@pytest.fixture(scope="module")
def figures():
    return {x["png"]: x for x in figure_log() if x.get("png")}


@pytest.fixture(scope="module")
def pages(browser, site, figures):
    """Each page read and judged once, on first use: ``pages(page) -> {rule: [problem, ...]}``."""
    cache = {}

    def read(page):
        if page not in cache:
            html = _html_dir()
            if not (html / f"{page}.html").is_file():
                pytest.fail(f"{page}.html was not built")
            _open(browser, site, page)
            seen = browser.execute_script(READ_SCRIPT)
            cache[page] = judge(seen, figures, html)
        return cache[page]
    return read


def _cases(rules, pages):
    for rule in rules:
        for page in pages:
            reason = page_rules.expected(page, rule)
            marks = [pytest.mark.xfail(strict=True, reason=f"{RULES[rule]}: {reason}")] if reason else []
            yield pytest.param(page, rule, marks=marks, id=f"{rule}-{page}")


@pytest.mark.parametrize("page,rule", list(_cases(BROWSER_RULES, PAGES)))
def test_page_obeys(pages, page, rule):
    problems = pages(page)[rule]
    assert not problems, f"{page} breaks {rule!r} ({RULES[rule]}):\n  " + "\n  ".join(problems)


CHAPTER_PAGES = [p for p in PAGES if p.startswith("chapters/")]


@pytest.mark.parametrize("page,rule", list(_cases(["legend_over_data"], CHAPTER_PAGES)))
def test_no_legend_over_data(page, rule):
    """The figure log's legend check (compbook.book.legibility.legend_over_data) for the chapter's figures."""
    stem = Path(page).name
    problems = sorted({f"{x['figure']!r}: {p}" for x in figure_log() if Path(x.get("where", "")).name == stem
                       for p in x.get("problems", []) if p.startswith("the legend of")})
    assert not problems, f"{page} breaks {rule!r}:\n  " + "\n  ".join(problems)


def test_every_figure_on_a_page_was_found_in_the_log(browser, site, figures):
    """The figure rules see the images: the chapters' PNG images on the pages are (nearly all) in the log."""
    html = _html_dir()
    shown = found = 0
    for page in CHAPTER_PAGES[:4]:
        _open(browser, site, page)
        for img in browser.execute_script(READ_SCRIPT)["images"]:
            if img["src"].startswith("data:image/png") or "/_images/" in img["src"]:
                shown += 1
                found += _digest(img["src"], html) in figures
    assert shown and found >= 0.8 * shown, f"{found} of {shown} images on the first chapters found in the log"
