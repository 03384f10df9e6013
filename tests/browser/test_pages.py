"""The built book as a reader sees it: every page opened in headless Chromium, with the network blocked.

`make test` executes the chapters once, builds the book from those outputs, and runs this file with
``COMPBOOK_BOOK_HTML`` pointing at the built HTML (then a missing build or browser fails the run). A plain
``pytest tests`` has no built book: it skips these tests and says why (pytest's ``-ra`` summary lists the skip).

Per page, at a 1280 px wide window: no error output or traceback; every image loads; no code block, output or
table wider than its column; math typeset (no TeX delimiter, command or ``_{`` left as text outside a math
element); every ``.compbook-slider`` changes its frame when a knob moves; the sidebar shows every part caption
of ``_toc.yml`` and links every chapter.
"""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import threading
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
import sys  # noqa: E402
sys.path.insert(0, str(ROOT / "tests"))
import page_rules  # noqa: E402  (the one list of pages that still break a rule)
TOC = yaml.safe_load((ROOT / "_toc.yml").read_text())
PARTS = [part["caption"] for part in TOC["parts"]]
PAGES = [TOC["root"]] + [f for part in TOC["parts"] for c in part["chapters"]
                         for f in [c["file"]] + [s["file"] for s in c.get("sections", [])]]
HTML_VARIABLE = "COMPBOOK_BOOK_HTML"
WIDTH, HEIGHT = 1280, 900
# a proxy that does not exist: any request off this machine fails (the local server is loopback, never proxied)
DEAD_PROXY = "http://127.0.0.1:9"


def _html_dir() -> Path:
    value = os.environ.get(HTML_VARIABLE)
    if not value:
        pytest.skip(f"browser test: no built book (${HTML_VARIABLE} unset); `make test` builds one and runs this")
    path = Path(value)
    if not (path / "index.html").is_file():
        pytest.fail(f"${HTML_VARIABLE}={value}: no index.html there (did the book build?)")
    return path


@pytest.fixture(scope="module")
def site():
    """The built HTML served on 127.0.0.1 (MathJax's fonts do not load from file:// URLs)."""
    html = _html_dir()
    handler = functools.partial(_QuietHandler, directory=str(html))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def browser(site):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    driver_path = shutil.which("chromedriver")
    if not binary or not driver_path:
        pytest.fail("chromium / chromedriver not found: `make test` installs them "
                    "(apt-get install -y chromium chromium-driver)")
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                f"--window-size={WIDTH},{HEIGHT}", f"--proxy-server={DEAD_PROXY}",
                "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    driver.set_page_load_timeout(120)
    driver.set_script_timeout(120)
    yield driver
    driver.quit()


def _open(browser, site, page):
    browser.get(f"{site}/{page}.html")
    # wait for every image to finish (or fail) loading, and for MathJax to finish typesetting
    browser.execute_async_script("""
        const done = arguments[arguments.length - 1];
        const imgs = Array.from(document.images).map(img => img.complete ? null :
            new Promise(r => { img.onload = img.onerror = r; }));
        const math = (window.MathJax && MathJax.startup && MathJax.startup.promise) || null;
        Promise.all(imgs.concat([math])).then(() => done(true), () => done(false));
    """)


# -- the checks: each returns a list of problems ----------------------------------------------------------------
def errors_shown(browser) -> list[str]:
    """Error outputs, tracebacks, and stderr (warnings) in cell outputs."""
    found = browser.execute_script("""
        const bad = document.querySelectorAll('.output.traceback, .output.error, .output.stderr');
        const out = Array.from(bad).map(e => e.className + ': ' + e.innerText.slice(0, 200));
        if (document.body.innerText.includes('Traceback (most recent call last)')) out.push('a traceback');
        return out;""")
    return [f"error output: {x}" for x in found]


def broken_images(browser) -> list[str]:
    found = browser.execute_script("""
        return Array.from(document.querySelectorAll('article img')).filter(
            img => !(img.complete && img.naturalWidth > 0)).map(img => img.src.slice(0, 80));""")
    return [f"image did not load: {x}" for x in found]


def overflowing(browser) -> list[str]:
    """Code blocks, outputs and tables wider than their column (they would scroll sideways), folded cells
    (``hide-input``) opened first: a reader who opens one must be able to read it too."""
    found = browser.execute_script("""
        document.querySelectorAll('article details').forEach(d => { d.open = true; });
        const sel = 'article div.highlight pre, article div.cell_output, article div.output, ' +
                    'article div.cell_output pre, article table, article .compbook-slider, article';
        return Array.from(document.querySelectorAll(sel)).filter(
            e => e.scrollWidth > e.clientWidth + 1).map(
            e => e.tagName + '.' + e.className + ' ' + e.scrollWidth + ' > ' + e.clientWidth + ': ' +
                 e.innerText.split('\\n').sort((a, b) => b.length - a.length)[0].slice(0, 90));""")
    return [f"wider than its column: {x}" for x in found]


def raw_math(browser) -> list[str]:
    r"""TeX left as text outside a math element and outside code: a dollar sign, a ``\(``, ``\[`` or ``$$``
    delimiter, a TeX command (``\rho``, ``\frac``, ...) or a sub/superscript group (``_{``, ``^{``). MathJax
    typesets only what MyST put in a math element; a display equation written inside a paragraph reaches the page
    as pieces of TeX with prose between them (each ``$$`` needs a blank line on either side)."""
    found = browser.execute_script(RAW_TEX_SCRIPT)
    return [f"raw TeX outside math: {x}" for x in found]


# the page's text with code, math elements (before and after MathJax) and the print-only header (the theme's
# plain-text copy of the title, never on screen) removed, searched for TeX
RAW_TEX_SCRIPT = r"""
    const body = document.body.cloneNode(true);
    body.querySelectorAll('pre, code, script, style, textarea, mjx-container, .math, .MathJax, math, .onlyprint')
        .forEach(e => e.remove());
    const text = body.textContent;
    const out = [];
    for (const pattern of [/\$/, /\\[()\[\]]/, /\\[A-Za-z]{2,}/, /[_^]\{/]) {
        const m = pattern.exec(text);
        if (m) out.push(JSON.stringify(m[0]) + ' in: ' +
                        text.slice(Math.max(0, m.index - 50), m.index + 50).replace(/\s+/g, ' '));
    }
    return out;"""


def dead_sliders(browser) -> list[str]:
    """Move every knob of every JS slider one step (with the keyboard) and check that the frame changes."""
    from selenium.webdriver.common.keys import Keys

    problems = []
    for s, slider in enumerate(browser.find_elements("css selector", ".compbook-slider")):
        img = slider.find_element("css selector", "img.cb-frame")
        for knob in slider.find_elements("css selector", "input.cb-knob"):
            before = (img.get_attribute("data-frame"), img.get_attribute("src"))
            at_max = knob.get_attribute("value") == knob.get_attribute("max")
            browser.execute_script("arguments[0].scrollIntoView({block: 'center'});", knob)
            knob.send_keys(Keys.ARROW_LEFT if at_max else Keys.ARROW_RIGHT)
            after = (img.get_attribute("data-frame"), img.get_attribute("src"))
            if after[0] == before[0] or after[1] == before[1]:
                problems.append(f"slider {s}: moving knob {knob.get_attribute('value')} did not change the frame")
            loaded = browser.execute_script("return arguments[0].complete && arguments[0].naturalWidth > 0;", img)
            if not loaded:
                problems.append(f"slider {s}: the new frame does not load")
    return problems


def missing_navigation(browser) -> list[str]:
    """Every part caption of _toc.yml in the sidebar, and a sidebar link to every chapter."""
    captions = browser.execute_script("""
        return Array.from(document.querySelectorAll('nav.bd-docs-nav p.caption, .bd-sidebar p.caption')).map(
            e => e.innerText.trim());""")
    links = browser.execute_script("""
        return Array.from(document.querySelectorAll('.bd-sidebar a.reference')).map(a => a.href);""")
    problems = [f"part caption not in the sidebar: {c!r}" for c in PARTS if c not in captions]
    for page in PAGES[1:]:
        if not any(link.split("#")[0].endswith(f"/{page}.html") for link in links):
            problems.append(f"no sidebar link to {page}")
    return problems


MAX_SCREENS, MAX_TABLES = 12, 4      # a main chapter's bounds (CONTRIBUTING.md, "A main chapter")


def measures(browser) -> dict:
    """The page as a reader meets it: screens of 900 px at 1280 px wide up to the exercises (``screens``; the
    exercises are room at the end, ``screens_total`` counts them too), tables, figures (images and sliders
    outside sliders' frames counted once per slider), and words of text in the article."""
    return browser.execute_script("""
        const art = document.querySelector('article') || document.body;
        const imgs = Array.from(art.querySelectorAll('img')).filter(i => !i.closest('.compbook-slider'));
        const total = document.documentElement.scrollHeight;
        const ex = document.querySelector('section#exercises');
        const body = ex ? ex.getBoundingClientRect().top + window.scrollY : total;
        return {screens: body / 900, screens_total: total / 900,
                tables: art.querySelectorAll('table').length,
                figures: imgs.length + art.querySelectorAll('.compbook-slider').length,
                words: art.innerText.split(/\\s+/).filter(w => /[A-Za-z0-9]/.test(w)).length};""")


def too_long(browser, page: str) -> list[str]:
    """A main chapter (``chapters/NN_...``) within the bounds: at most 12 screens, 4 tables, and at least as many
    figures as tables. Notes chapters and the landing page may be long."""
    if not Path(page).name[:2].isdigit():
        return []
    m = measures(browser)
    problems = []
    if m["screens"] > MAX_SCREENS:
        problems.append(f"{m['screens']:.1f} screens of 900 px at 1280 px before the exercises (at most "
                        f"{MAX_SCREENS}): move the audit "
                        "to the part's notes chapter")
    if m["tables"] > MAX_TABLES:
        problems.append(f"{m['tables']} tables (at most {MAX_TABLES})")
    if m["figures"] < m["tables"]:
        problems.append(f"{m['figures']} figures for {m['tables']} tables (figures over tables)")
    return problems


CHECKS = [errors_shown, broken_images, overflowing, raw_math, dead_sliders, missing_navigation]


@pytest.mark.parametrize("page", [p for p in PAGES if Path(p).name[:2].isdigit()])
def test_main_chapter_fits_its_bounds(browser, site, page):
    """A main chapter at 1280 px: at most MAX_SCREENS screens before its exercises, MAX_TABLES tables, figures
    at least as many as tables (the audit belongs in the part's notes chapter)."""
    if not (_html_dir() / f"{page}.html").is_file():
        pytest.fail(f"{page}.html was not built")
    _open(browser, site, page)
    problems = too_long(browser, page)
    listed = page_rules.expected(page, "page_length")
    if listed:                          # strict: a listed page that fits fails, so its entry goes
        assert problems, f"{page} fits its bounds now: remove its 'page_length' entry from tests/page_rules.py"
        pytest.xfail(f"{page}: {listed}: " + "; ".join(problems))
    assert not problems, f"{page}:\n  " + "\n  ".join(problems)


@pytest.mark.parametrize("page", PAGES)
def test_page_reads_well(browser, site, page):
    if not (_html_dir() / f"{page}.html").is_file():
        pytest.fail(f"{page}.html was not built")
    _open(browser, site, page)
    # the API appendix renders docstrings, whose formulas are plain ASCII notation (``h_{l-1}``), not TeX
    # written for MathJax: the raw-TeX check reads the book's own pages
    checks = [c for c in CHECKS if not (page.startswith("appendix/") and c is raw_math)]
    listed = page_rules.expected(page, "overflow")
    problems = [p for check in checks if not (listed and check is overflowing) for p in check(browser)]
    assert not problems, f"{page}:\n  " + "\n  ".join(problems)
    if listed:                          # strict: a listed page that no longer overflows fails, so its entry goes
        wide = overflowing(browser)
        assert wide, f"{page} no longer overflows: remove its 'overflow' entry from tests/page_rules.py"
        pytest.xfail(f"{page}: {listed}: " + "; ".join(wide[:3]))


def test_every_chapter_page_has_math_typeset_offline(browser, site):
    """MathJax ran from the book's own copy: typeset math exists on the landing page or a chapter, and the
    page asked nothing of the network (the dead proxy would have failed it)."""
    counts = {}
    for page in PAGES:
        _open(browser, site, page)
        counts[page] = browser.execute_script("return document.querySelectorAll('mjx-container').length;")
        src = browser.execute_script(
            "return Array.from(document.scripts).map(s => s.src).filter(s => s.includes('mathjax'));")
        assert src and all(s.startswith(site) for s in src), f"{page}: MathJax not served by the book: {src}"
    assert sum(counts.values()) > 0, f"no typeset math on any page: {counts}"
