"""Each built page as a reader meets it, in headless Chromium at 1280 px: screens of 900 px, tables, figures, words.

``python benchmarks/page_metrics.py _build/html`` (a book built by ``make book``, or ``_executed/_build/html``
after ``make test``). The same measures back the browser test's bound on main chapters (``too_long`` in
``tests/browser/test_pages.py``).
"""

import argparse
import functools
import http.server
import os
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "browser"))


def main(html: str) -> None:
    os.environ["COMPBOOK_BOOK_HTML"] = html
    import test_pages as tp

    handler = functools.partial(tp._QuietHandler, directory=html)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    site = f"http://127.0.0.1:{server.server_address[1]}"
    driver = tp.browser.__wrapped__(site)
    browser = next(driver)
    print(f"{'page':40s} {'screens':>7s} {'total':>6s} {'tables':>6s} {'figures':>7s} {'words':>6s}")
    for page in tp.PAGES:
        if not (Path(html) / f"{page}.html").is_file():
            continue
        tp._open(browser, site, page)
        m = tp.measures(browser)
        print(f"{page:40s} {m['screens']:7.1f} {m['screens_total']:6.1f} {m['tables']:6d} {m['figures']:7d} "
              f"{m['words']:6d}")
    server.shutdown()


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("html", help="a built book's HTML folder (_build/html)")
    main(ap.parse_args().html)
