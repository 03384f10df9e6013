"""Links that resolve: every internal link, image, script and stylesheet of the built book points at a file of the
build, and every ``#anchor`` at an element of its page (an ``id``, or an ``<a name>``). Offline: links off the site
(Colab, Binder, the repository) are not followed. Read with Python's HTML parser, no browser.

`make test` runs it on the built book (``COMPBOOK_BOOK_HTML``); a plain ``pytest tests`` skips the site test and
says why, and still runs the checker's own test.
"""

from __future__ import annotations

import functools
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from test_pages import _html_dir   # the built book, or a skip saying why

LINKING = {"a": "href", "link": "href", "img": "src", "script": "src", "iframe": "src", "source": "src"}


class _Page(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.links: list[str] = []
        self.anchors: set[str] = set()

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if attrs.get("id"):
            self.anchors.add(attrs["id"])
        if tag == "a" and attrs.get("name"):
            self.anchors.add(attrs["name"])
        url = attrs.get(LINKING.get(tag, ""))
        if url:
            self.links.append(url)


@functools.lru_cache(maxsize=None)
def parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(errors="replace"))
    return page


def pages(site: Path) -> list[Path]:
    """The site's pages: its HTML files outside ``_static/`` and the like (the theme's templates live there)."""
    return sorted(p for p in site.resolve().rglob("*.html")
                  if not any(part.startswith("_") for part in p.relative_to(site.resolve()).parts[:-1]))


def broken_links(site: Path, checked: list | None = None) -> list[str]:
    """Every internal link of every page under ``site`` that reaches no file, or no anchor on its page; the links
    looked at are appended to ``checked``."""
    site = site.resolve()
    problems = []
    for page_path in pages(site):
        for url in parse(page_path).links:
            parts = urlsplit(url)
            if parts.scheme or parts.netloc or url.startswith(("mailto:", "javascript:", "data:")):
                continue          # off the site (or not a place): not checked offline
            target = (page_path.parent / unquote(parts.path)).resolve() if parts.path else page_path
            if target.is_dir():
                target = target / "index.html"
            where = f"{page_path.relative_to(site)}: {url}"
            if checked is not None:
                checked.append(url)
            if site not in target.parents and target != site:
                problems.append(f"{where} leaves the site")
            elif not target.is_file():
                problems.append(f"{where} -> no file {target.relative_to(site)}")
            elif parts.fragment and target.suffix == ".html" and unquote(parts.fragment) not in parse(target).anchors:
                problems.append(f"{where} -> no anchor #{parts.fragment} in {target.relative_to(site)}")
    return problems


def test_checker_finds_missing_files_and_anchors(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "index.html").write_text(
        '<a href="sub/page.html#here">ok</a><a href="sub/page.html#gone">no anchor</a>'
        '<img src="missing.png"><a href="https://example.org/x">off site</a><a href="#top" id="top">self</a>'
        '<link href="sub/">')
    (tmp_path / "sub" / "page.html").write_text('<h1 id="here">x</h1><a href="../index.html#top">back</a>')
    problems = broken_links(tmp_path)
    assert len(problems) == 3, problems
    assert any("#gone" in p for p in problems) and any("missing.png" in p for p in problems)
    assert any("sub/index.html" in p for p in problems)


def test_every_internal_link_and_anchor_of_the_built_book_resolves():
    site = _html_dir()
    assert (site / "appendix" / "api_part_a.html").resolve() in pages(site), "the API appendix was not built"
    checked = []
    problems = broken_links(site, checked)
    assert not problems, f"{len(problems)} broken links:\n  " + "\n  ".join(problems[:60])
    # the check looked at the book's own links: chapter pages, the API's anchors, the chapters linked from it
    assert sum("#" in u and not u.startswith("#") for u in checked) > 100, len(checked)
    assert any(u.startswith("../chapters/") for u in checked), "no link from the appendix to a chapter"


def test_launch_buttons_open_this_repository():
    """Each chapter page's Colab and Binder buttons open that chapter of the repository and branch set in
    ``_config.yml`` (the one setting, tests/test_publishing.py)."""
    import yaml

    site = _html_dir()
    root = Path(__file__).resolve().parents[2]
    config = yaml.safe_load((root / "_config.yml").read_text())
    repo = urlsplit(config["repository"]["url"]).path.strip("/")
    branch = config["repository"]["branch"]
    chapters = sorted((site / "chapters").glob("*.html"))
    assert chapters
    for page in chapters:
        notebook = f"chapters/{page.stem}.ipynb"
        links = parse(page).links
        assert f"https://colab.research.google.com/github/{repo}/blob/{branch}/{notebook}" in links, page.name
        assert f"https://mybinder.org/v2/gh/{repo}/{branch}?urlpath=tree/{notebook}" in links, page.name
