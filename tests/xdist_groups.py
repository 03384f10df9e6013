"""Groups for pytest-xdist's ``--dist loadgroup`` (``make test``: two workers), a hook that tests/conftest.py
imports: a test file's tests run on one worker (its module fixtures built once), and every test of the
``tiny_server`` fixture on one worker, so one ``transformers serve`` (and its spare) starts, not one per worker.
Without xdist the marks do nothing."""

import pytest


@pytest.hookimpl(tryfirst=True)      # before pytest-xdist's own hook, which reads the marks into the test ids
def pytest_collection_modifyitems(config, items):
    for item in items:
        shared = "tiny_server" in getattr(item, "fixturenames", ())
        item.add_marker(pytest.mark.xdist_group("tiny_server" if shared else item.nodeid.split("::")[0]))
