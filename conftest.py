"""Root pytest configuration: chapters executed by nbmake get one retry.

A notebook run can fail for reasons outside the notebook (a Jupyter kernel that does not start or stops
answering, seen on loaded machines). One rerun per chapter absorbs that; a real error fails both runs, and
pytest reports every rerun in its summary line.
"""

import pytest


def pytest_collection_modifyitems(items):
    for item in items:
        if str(item.fspath).endswith(".ipynb"):
            item.add_marker(pytest.mark.flaky(reruns=1))
