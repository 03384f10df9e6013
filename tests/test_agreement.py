"""compbook.cppn.agreement: agreement metrics and the held-out split (issue 11)."""

import numpy as np
import pytest

from compbook.cppn import agreement


def test_metrics_against_hand_computed_values():
    h = [True, True, True, False, False, False, False, False]
    j = [True, True, False, False, False, False, True, True]
    m = agreement.metrics(h, j)
    assert m["agreement"] == pytest.approx(5 / 8)
    assert m["balanced_accuracy"] == pytest.approx((2 / 3 + 3 / 5) / 2)
    po, pe = 5 / 8, (3 / 8) * (4 / 8) + (5 / 8) * (4 / 8)
    assert m["kappa"] == pytest.approx((po - pe) / (1 - pe))


def test_a_constant_judge_has_balanced_accuracy_one_half_and_kappa_zero():
    h = np.random.default_rng(0).random(50) < 0.7
    m = agreement.metrics(h, np.ones(50, bool))
    assert m["balanced_accuracy"] == pytest.approx(0.5) and m["kappa"] == pytest.approx(0.0)


def test_split_is_stratified_and_seeded():
    items = [{"concept": c, "kind": k} for c in ("skull", "apple") for k in ("sgd", "picbreeder") for _ in range(10)]
    a, b = agreement.split(items, 0), agreement.split(items, 0)
    assert (a == b).all() and a.sum() == 20
    for j in range(0, 40, 10):
        assert a[j:j + 10].sum() == 5


def test_best_threshold_separates_separable_scores():
    s = np.array([0.1, 0.2, 0.3, 0.7, 0.8, 0.9])
    h = s > 0.5
    t = agreement.best_threshold(s, h, [0.05, 0.25, 0.5, 0.75])
    assert t == 0.5


def test_wilson_interval_contains_the_estimate():
    lo, hi = agreement.wilson(7, 10)
    assert lo < 0.7 < hi and 0 <= lo and hi <= 1


def test_self_agreement_counts_pairs_by_original_item():
    relabel = [{"item": 9001, "of": 5}, {"item": 9002, "of": 7}, {"item": 9003, "of": 9}]
    s = agreement.self_agreement(relabel, {5: "y", 7: "n", 9: "?"}, {9001: "y", 9002: "y", 9003: "?"})
    assert s["n"] == 3 and s["exact"] == pytest.approx(2 / 3) and s["n_yes_no_both"] == 2
    assert s["agreement_yes_no"] == pytest.approx(0.5)


def test_validate_reads_a_new_batch_at_fixed_thresholds():
    """A batch the choice never saw: the Picbreeder skull itself (labelled yes) and blank images (no). The
    reference judge at its fixed threshold and SSIM to the own render must both agree with every verdict;
    "can't tell" is left out and counted."""
    import torch

    from compbook.cppn import labelling, picbreeder
    from compbook.cppn.agreement import validate
    skull = picbreeder.render(picbreeder.load_genome("skull", download=False), labelling.RES)
    skull = torch.as_tensor(skull, dtype=torch.float32)
    blank = torch.zeros_like(skull)
    item = lambda kind: {"concept": "skull", "kind": kind, "source": "picbreeder:skull"}   # noqa: E731
    items = [item("picbreeder"), item("sgd"), item("sgd"), item("picbreeder")]
    out = validate(items, ["yes", "no", "no", "can't tell"], torch.stack([skull, blank, blank, blank]),
                   {"reference": 0.625})
    assert out["n_labelled"] == 3 and out["n_cant_tell"] == 1
    for name in ("reference", "ssim (own render, 0.5)"):
        rows = {r["network"]: r for r in out["tables"][name]}
        assert rows["all"]["n"] == 3 and rows["all"]["agreement"] == 1.0, name
        assert rows["sgd"]["n"] == 2 and rows["picbreeder"]["n"] == 1
