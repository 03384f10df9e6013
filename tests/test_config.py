"""compbook.config: the run mode, the full-mode smoke, the device and the machine's memory budget."""

import dataclasses
import os

import pytest
import torch

from compbook import checks, config
from compbook.binding.clevr import Setup
from compbook.binding.complexity import ComplexityConfig
from compbook.binding.controlled import ControlledConfig
from compbook.binding.recipe.config import RecipeConfig
from compbook.binding.runs.sweep import SweepConfig
from compbook.cppn.runs import experiments
from compbook.cppn.frames import WelchConfig
from compbook.cppn.volume_ratio import VolumeConfig
from compbook.sae.sizes import PartCRun

#: every ModeConfig of the book (a new one must be listed here: see test_every_mode_config_is_listed)
CONFIGS = [Setup, ComplexityConfig, ControlledConfig, RecipeConfig, SweepConfig, experiments.BenchConfig,
           experiments.PruningConfig, experiments.OptimizerConfig, experiments.UnknownConfig,
           experiments.DepthConfig, experiments.FerOptimizerConfig, WelchConfig, VolumeConfig, PartCRun]

#: the fields a smoke may shrink: counts of steps, seeds, samples, scenes and sweep points (never a code path,
#: a store or an object space)
COUNT_WORDS = ("steps", "seeds", "sample", "scenes", "models", "batch", "rounds", "n_mc", "restarts", "coverages",
               "live", "eval", "warmup", "n_train", "n_test", "depths", "sp")


def documented_exceptions() -> set:
    """(config class name, field) pairs of CONTRIBUTING.md's smoke table: sizes the smoke shrinks, with why."""
    import re
    from pathlib import Path
    text = (Path(__file__).resolve().parents[1] / "CONTRIBUTING.md").read_text()
    section = text.split("## Full-mode smoke", 1)[1].split("\n## ", 1)[0]
    return {(m[0].rsplit(".", 1)[-1], m[1]) for m in re.findall(r"^\| `([\w.]+)`[^|]*\| `(\w+)` \|", section, re.M)}


def _set(monkeypatch, mode=None, smoke=None):
    for var, value in ((config.MODE_VARIABLE, mode), (config.SMOKE_VARIABLE, smoke)):
        if value is None:
            monkeypatch.delenv(var, raising=False)
        else:
            monkeypatch.setenv(var, value)


def test_every_mode_config_is_listed():
    """A ModeConfig missing from CONFIGS would escape the smoke's checks below."""
    import compbook.binding.clevr, compbook.binding.complexity, compbook.binding.controlled  # noqa: F401
    seen = set()
    todo = list(config.ModeConfig.__subclasses__())
    while todo:
        c = todo.pop()
        seen.add(c)
        todo += c.__subclasses__()
    assert seen <= set(CONFIGS), f"ModeConfigs not listed in tests/test_config.py: {seen - set(CONFIGS)}"


@pytest.mark.parametrize("cls", CONFIGS, ids=lambda c: c.__name__)
def test_smoke_shrinks_counts_and_keeps_the_rest(cls, monkeypatch):
    """The smoke changes only count fields, each to at most its full value; stores, resolutions, widths and
    object spaces stay as in full mode (the smoke runs full mode's code paths)."""
    _set(monkeypatch, "full")
    full = cls.for_mode()
    _set(monkeypatch, "full", "1")
    smoke = cls.for_mode()
    assert cls.SMOKE, f"{cls.__name__} has no SMOKE sizes: the full-mode smoke would run it at the papers' scale"
    for f in dataclasses.fields(cls):
        a, b = getattr(full, f.name), getattr(smoke, f.name)
        if f.name not in cls.SMOKE:
            assert a == b, f"{cls.__name__}.{f.name} differs in the smoke though SMOKE does not name it"
            continue
        assert any(w in f.name for w in COUNT_WORDS) or (cls.__name__, f.name) in documented_exceptions(), \
            (f"{cls.__name__}.SMOKE shrinks {f.name!r}, which is not a count (the smoke keeps code paths and "
             f"sizes): list it, with why, in CONTRIBUTING.md's smoke table")
        if isinstance(a, (int, float)) and not isinstance(a, bool) and b is not None:
            assert a is None or b <= a, f"{cls.__name__}.{f.name}: the smoke's {b} exceeds full mode's {a}"
        if isinstance(a, tuple) and (cls.__name__, f.name) not in documented_exceptions():
            assert len(b) <= len(a) and set(b) <= set(a), f"{cls.__name__}.{f.name}: {b} is not a subset of {a}"


def test_the_smoke_table_names_real_fields():
    """Every row of CONTRIBUTING.md's smoke table is a field its config's SMOKE really shrinks."""
    by_name = {c.__name__: c for c in CONFIGS}
    rows = documented_exceptions()
    assert rows, "CONTRIBUTING.md has no smoke table"
    for name, field in rows:
        assert name in by_name and field in by_name[name].SMOKE, f"smoke table row {name}.{field}: not in SMOKE"


def test_smoke_changes_nothing_in_cpu_mode(monkeypatch):
    _set(monkeypatch, "cpu", "1")
    for cls in CONFIGS:
        assert cls.for_mode() == cls(), f"{cls.__name__}: COMPBOOK_SMOKE=1 changed CPU mode"


def test_by_mode_smoke(monkeypatch):
    _set(monkeypatch, None)
    assert config.by_mode(1, 2, smoke=3) == 1
    _set(monkeypatch, "full")
    assert config.by_mode(1, 2, smoke=3) == 2
    _set(monkeypatch, "full", "1")
    assert config.by_mode(1, 2, smoke=3) == 3
    assert config.by_mode(1, 2) == 2, "without a smoke value the smoke takes the full one"
    assert config.by_mode(1, 2, smoke=None) is None, "smoke=None is a value, not 'unset'"
    assert config.is_smoke()


@pytest.mark.parametrize("value", ["yes", "2", "true"])
def test_bad_smoke_value_is_refused(value, monkeypatch):
    _set(monkeypatch, "full", value)
    with pytest.raises(ValueError, match=r"\$COMPBOOK_SMOKE='.*': expected 1"):
        config.smoke()


def test_cpu_mode_never_uses_a_gpu(monkeypatch):
    _set(monkeypatch, "cpu")
    assert config.device() == torch.device("cpu")


def test_memory_budget_is_the_machines(monkeypatch):
    """Unset, the budget is a share of the machine's available memory (never under the old fixed 1,024 MiB);
    the variable still overrides it."""
    monkeypatch.delenv(checks.MEMORY_BUDGET_VARIABLE, raising=False)
    free = config.available_memory_mb()
    with open("/proc/meminfo") as f:
        avail = next(int(line.split()[1]) / 1024 for line in f if line.startswith("MemAvailable:"))
    assert abs(free - avail) < 0.2 * avail + 64, "available_memory_mb does not read MemAvailable"
    budget = checks.memory_budget_mb()
    assert budget >= checks.MEMORY_BUDGET_MB
    assert budget == pytest.approx(max(checks.MEMORY_BUDGET_MB, config.MEMORY_SHARE * free), rel=0.2)
    monkeypatch.setenv(checks.MEMORY_BUDGET_VARIABLE, "5")
    assert checks.memory_budget_mb() == 5
    with pytest.raises(ValueError, match="over the memory budget of 5 MiB"):
        checks.check_budget(6 * 2 ** 20, "a test buffer")


def test_a_run_that_does_not_fit_the_machine_is_refused_up_front(monkeypatch):
    """Larger than the machine's memory: refused, naming the size and the setting, before anything is
    allocated."""
    monkeypatch.delenv(checks.MEMORY_BUDGET_VARIABLE, raising=False)
    too_big = 4 * config.available_memory_mb() * 2 ** 20
    with pytest.raises(ValueError, match=r"a test buffer would need about .* MiB.*COMPBOOK_MEMORY_BUDGET_MB"):
        checks.check_budget(too_big, "a test buffer")


def test_the_tests_pin_the_budget():
    """conftest.py pins the budget, so the suite's expected refusals are the same on every machine."""
    assert os.environ.get(checks.MEMORY_BUDGET_VARIABLE) == "1024"
