"""Tests of compbook.binding.splits: coverage splits of an object space."""

import numpy as np
import pytest

from compbook.binding.splits import coverage_split


def test_coverage_split_disjoint_and_deterministic():
    a = coverage_split(24, 0.5, seed=3)
    b = coverage_split(24, 0.5, seed=3)
    c = coverage_split(24, 0.5, seed=4)
    assert len(a.train_objects) == 12 and not set(a.train_objects) & set(a.test_objects)
    assert np.array_equal(a.train, b.train) and np.array_equal(a.test, b.test)
    assert not np.array_equal(a.train_objects, c.train_objects)
    assert np.isin(a.train, a.train_objects).all() and np.isin(a.val, a.train_objects).all()
    assert np.isin(a.test, a.test_objects).all(), "test scenes must use held-out objects only"
    assert not {tuple(s) for s in a.train} & {tuple(s) for s in a.val}, "validation scenes repeat train scenes"
    assert len(a.train) + len(a.val) == 144 and len(a.test) == 144
    big = coverage_split(12096, 0.3, seed=0, objects_per_scene=4, max_scenes=500)
    assert len(big.train_objects) == int(12096 * 0.3) and len({tuple(s) for s in big.test}) == 500
    assert np.isin(big.test, big.test_objects).all()


@pytest.mark.parametrize("coverage", [0.0, 1.0])
def test_bad_coverage_names_the_argument(coverage):
    with pytest.raises(ValueError, match="coverage"):
        coverage_split(24, coverage)
