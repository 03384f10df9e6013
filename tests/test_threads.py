"""torch's threads are chosen in one place (:func:`compbook.config.set_threads`, applied when compbook is
imported): one thread unless ``COMPBOOK_THREADS`` or ``OMP_NUM_THREADS`` / ``MKL_NUM_THREADS`` says otherwise;
no chapter and no other module sets them by hand."""

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from compbook import config

ROOT = Path(__file__).resolve().parents[1]
THE_ONE_PLACE = ROOT / "compbook" / "config.py"
SETTINGS = ("COMPBOOK_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def _calls_set_num_threads(source: str) -> list[int]:
    """Lines of ``source`` (Python) calling anything named ``set_num_threads``."""
    return [n.lineno for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Call)
            and getattr(n.func, "attr", getattr(n.func, "id", None)) == "set_num_threads"]


def test_no_module_but_config_sets_torchs_threads():
    found = {str(p.relative_to(ROOT)): lines for p in sorted((ROOT / "compbook").rglob("*.py"))
             if p != THE_ONE_PLACE and (lines := _calls_set_num_threads(p.read_text()))}
    assert not found, f"torch's threads set outside compbook/config.py (use config.set_threads): {found}"
    assert _calls_set_num_threads(THE_ONE_PLACE.read_text()), "the one place no longer sets them"


def test_no_chapter_sets_torchs_threads():
    found = {}
    for nb in sorted((ROOT / "chapters").glob("*.ipynb")):
        cells = json.loads(nb.read_text())["cells"]
        code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
        if re.search(r"set_num_threads|set_threads|OMP_NUM_THREADS|MKL_NUM_THREADS", code):
            found[nb.name] = [m.group(0) for m in re.finditer(r"\S*(set_num_threads|set_threads|NUM_THREADS)\S*",
                                                                 code)]
    assert not found, f"chapters setting threads by hand (compbook chooses them on import): {found}"


def _threads_after_import(**env) -> int:
    clean = {k: v for k, v in os.environ.items() if k not in SETTINGS} | {"PYTHONPATH": str(ROOT)} | env
    out = subprocess.run([sys.executable, "-c", "import compbook, torch; print(torch.get_num_threads())"],
                         env=clean, capture_output=True, text=True, check=True)
    return int(out.stdout.strip())


def test_importing_compbook_sets_one_thread_unless_the_user_chose():
    assert _threads_after_import() == config.DEFAULT_THREADS == 1
    assert _threads_after_import(COMPBOOK_THREADS="2") == 2
    assert _threads_after_import(OMP_NUM_THREADS="2") == 2, "torch's count read from OMP_NUM_THREADS was replaced"
    assert _threads_after_import(OMP_NUM_THREADS="2", COMPBOOK_THREADS="1") == 1


_BLAS_AFTER = ("import json, {first}; import numpy, scipy.linalg, sklearn.linear_model; "
               "from threadpoolctl import threadpool_info; "
               "print(json.dumps(sorted(i['num_threads'] for i in threadpool_info() if i['user_api'] == 'blas')))")


def _blas_threads(first: str = "compbook", **env) -> list[int]:
    """The thread count of every BLAS library loaded after importing ``first``, then NumPy, SciPy and
    scikit-learn (SciPy's OpenBLAS is loaded only then), in a fresh interpreter with ``env``."""
    clean = {k: v for k, v in os.environ.items() if k not in SETTINGS} | {"PYTHONPATH": str(ROOT)} | env
    out = subprocess.run([sys.executable, "-c", _BLAS_AFTER.format(first=first)], env=clean,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


@pytest.mark.skipif(os.cpu_count() < 2, reason="one CPU: BLAS's default is already one thread")
def test_importing_compbook_sets_blas_threads_too_even_for_libraries_loaded_later():
    untouched = _blas_threads("sys")
    assert untouched and max(untouched) >= 2, f"without compbook BLAS should use several threads: {untouched}"
    assert _blas_threads() == [1] * len(untouched), "BLAS left at its default (scikit-learn's probes and MDS " \
        "then fight a busy core): set it with torch's threads"
    assert _blas_threads(COMPBOOK_THREADS="2") == [2] * len(untouched)
    assert _blas_threads(OMP_NUM_THREADS="2") == untouched, "the user chose threads; BLAS was changed anyway"
    assert _blas_threads(OPENBLAS_NUM_THREADS="2") == [2] * len(untouched), "the user's BLAS setting replaced"


@pytest.mark.parametrize("value", ["0", "-1", "two", "1.5", " 2x"])
def test_a_bad_threads_setting_is_refused_by_name(monkeypatch, value):
    monkeypatch.setenv("COMPBOOK_THREADS", value)
    with pytest.raises(ValueError, match=r"\$COMPBOOK_THREADS=.*positive integer"):
        config.threads()


@pytest.mark.parametrize("n", [0, -2, 1.0, "2", True])
def test_set_threads_refuses_what_is_not_a_positive_integer(n):
    with pytest.raises(ValueError, match="threads must be a positive integer"):
        config.set_threads(n)


def test_using_threads_restores_the_count_before():
    before = torch.get_num_threads()
    with config.using_threads(2):
        assert torch.get_num_threads() == 2
    assert torch.get_num_threads() == before
    with pytest.raises(KeyError), config.using_threads(3):
        raise KeyError("inside")
    assert torch.get_num_threads() == before


def test_a_sweep_worker_takes_its_tasks_cpus():
    from compbook.runs.sweeps.spec import execute
    before = torch.get_num_threads()
    try:
        [record] = execute(lambda c: {"threads": torch.get_num_threads()}, None, [{}], threads=2)
        assert record["threads"] == 2
    finally:
        config.set_threads(before)
