"""benchmarks/busy_core.py: each chapter's busy time against its quiet time, flagged over the limit."""

import importlib.util
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "busy_core.py"


def _module():
    spec = importlib.util.spec_from_file_location("busy_core", BENCH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _report(path: Path, seconds: dict) -> Path:
    cases = "".join(f'<testcase classname="chapters/{n}.ipynb" name="{n}" time="{s}"/>' for n, s in seconds.items())
    path.write_text(f'<testsuite tests="{len(seconds)}">{cases}</testsuite>')
    return path


def test_a_chapter_over_the_limit_fails_and_is_named(tmp_path, capsys):
    mod = _module()
    quiet = _report(tmp_path / "quiet.xml", {"01_a": 10, "02_b": 20})
    busy = _report(tmp_path / "busy.xml", {"01_a": 29, "02_b": 61})
    assert mod.main([str(busy), "--quiet", str(quiet)]) == 1
    out = capsys.readouterr().out
    assert "over 3x: 02_b" in out and "01_a" not in out.split("over 3x:")[1]
    # the ratio is busy / quiet, not the reverse (a slower busy run gives a ratio above 1)
    assert [round(r[3], 2) for r in mod.ratios({"01_a": 29.0}, {"01_a": 10.0})] == [2.9]


def test_within_the_limit_passes(tmp_path):
    mod = _module()
    quiet = _report(tmp_path / "quiet.xml", {"01_a": 10})
    busy = _report(tmp_path / "busy.xml", {"01_a": 30})
    assert mod.main([str(busy), "--quiet", str(quiet)]) == 0


def test_a_chapter_missing_from_the_busy_run_is_refused(tmp_path):
    mod = _module()
    with pytest.raises(ValueError, match="02_b"):
        mod.ratios({"01_a": 1.0}, {"01_a": 1.0, "02_b": 2.0})
