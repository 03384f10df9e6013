"""tests/xdist_groups.py reaches pytest-xdist: in a run with two workers, a file's tests share a worker and every
test of the served model shares one (a hook that ran after xdist's own would leave the tests ungrouped, and each
worker would start its own ``transformers serve``)."""

import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent

CONFTEST = f"""
import sys
sys.path.insert(0, {str(HERE)!r})
import pytest
from xdist_groups import pytest_collection_modifyitems  # noqa: F401

@pytest.fixture(scope="session")
def tiny_server():
    return "served"
"""

TEST = """
import json, os, time
import pytest

def record(name):
    time.sleep(0.2)
    with open(os.environ["RECORD"], "a") as f:
        f.write(json.dumps([__name__, name, os.environ["PYTEST_XDIST_WORKER"]]) + "\\n")

@pytest.mark.parametrize("i", range(4))
def test_plain(i):
    record("plain")

@pytest.mark.parametrize("i", range({served}))
def test_served(i, tiny_server):
    record("served")
"""


def test_two_workers_keep_a_file_and_the_served_models_tests_together(tmp_path):
    (tmp_path / "conftest.py").write_text(CONFTEST)
    for name, served in (("test_a", 0), ("test_b", 2), ("test_c", 2), ("test_d", 0)):
        (tmp_path / f"{name}.py").write_text(TEST.format(served=served))
    record = tmp_path / "record.jsonl"
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2",
                          "--dist", "loadgroup", str(tmp_path)], cwd=tmp_path, capture_output=True, text=True,
                         env={**os.environ, "RECORD": str(record)}, timeout=300)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    rows = [json.loads(line) for line in record.read_text().splitlines()]
    assert len(rows) == 4 * 4 + 2 * 2, rows
    workers = lambda keep: {w for m, n, w in rows if keep(m, n)}
    assert len(workers(lambda m, n: n == "served")) == 1, f"the served model's tests ran on several workers: {rows}"
    for module in ("test_a", "test_b", "test_c", "test_d"):
        assert len(workers(lambda m, n: m == module and n == "plain")) == 1, f"{module} split across workers"
    assert len(workers(lambda m, n: True)) == 2, f"one worker ran everything: the check above proves nothing: {rows}"
