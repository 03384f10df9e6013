"""Copied by ``make test`` to ``_executed/conftest.py``: tells the figure check which notebook nbmake is running.

Each chapter's kernel inherits the environment when nbmake starts it, so ``COMPBOOK_FIGCHECK_WHERE`` names the
notebook in every line :func:`compbook.legibility.watch` logs (``COMPBOOK_FIGCHECK`` points at the log).
"""

import os


def pytest_runtest_setup(item):
    os.environ["COMPBOOK_FIGCHECK_WHERE"] = item.path.stem
