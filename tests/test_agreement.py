"""compbook.cppn.audit.agreement: agreement metrics and the held-out split."""

import numpy as np
import pytest

from compbook.cppn.audit import agreement


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

    from compbook.cppn.audit import labelling
    from compbook.cppn import picbreeder
    from compbook.cppn.audit.agreement import validate
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


# -- a second labeller --------------------------------------------------------------------------------------------
def _synthetic(n, cut, seed, kinds=("picbreeder", "fer", "fertwin")):
    """Items with a known judge score ``s`` (every candidate the same) and a labeller who says yes iff
    s >= cut; every 10th item is "can't tell"."""
    import torch
    rng = np.random.default_rng(seed)
    s = rng.random(n)
    items = [{"concept": ("skull", "apple")[j % 2], "kind": kinds[j % len(kinds)], "source": "x", "s": float(s[j]),
              "question": {"delta": (0.5, 1.0, 2.0)[j % 3], "weight": [0, 0, j]}} for j in range(n)]
    answers = ["can't tell" if j % 10 == 9 else ("yes" if s[j] >= cut else "no") for j in range(n)]
    return items, answers, torch.zeros(n, 1, 1, 3)


@pytest.fixture
def fake_scores(monkeypatch):
    monkeypatch.setattr(agreement, "judge_scores", lambda kind, images, items: np.array([it["s"] for it in items]))


def test_with_intervals_wilson_and_bootstrap():
    from compbook.stats import wilson
    h = np.array([1, 1, 1, 1, 0, 0, 0, 0, 0, 0], bool)
    j = np.array([1, 1, 1, 0, 0, 0, 0, 0, 1, 1], bool)
    m = agreement.with_intervals(h, j, n_boot=300, seed=1)
    assert m["agreement_ci"] == list(wilson(7, 10))
    assert m["recall_yes"] == 0.75 and m["recall_yes_ci"] == list(wilson(3, 4))
    assert m["recall_no"] == pytest.approx(4 / 6) and m["recall_no_ci"] == list(wilson(4, 6))
    assert m["balanced_accuracy"] == pytest.approx((0.75 + 4 / 6) / 2)
    assert m["balanced_ci"][0] <= m["balanced_accuracy"] <= m["balanced_ci"][1]
    assert m["kappa_ci"][0] <= m["kappa"] <= m["kappa_ci"][1]
    assert m == agreement.with_intervals(h, j, n_boot=300, seed=1), "not seeded"
    one = agreement.with_intervals(np.ones(4, bool), np.ones(4, bool))
    assert np.isnan(one["balanced_ci"]).all() and np.isnan(one["recall_no"])


def test_labeller_rows_count_answers_per_kind_against_a_naive_loop():
    items, answers, _ = _synthetic(60, 0.5, 0)
    verdicts = np.array([it["s"] >= 0.3 for it in items])
    rows = {r["network"]: r for r in agreement.labeller_rows(items, answers, verdicts)}
    assert list(rows) == ["all", "picbreeder", "fer", "fertwin"]
    for kind, r in rows.items():
        idx = [j for j, it in enumerate(items) if kind in ("all", it["kind"])]
        assert r["items"] == len(idx) and r["yes"] + r["no"] + r["cant_tell"] == len(idx) == r["n"] + r["cant_tell"]
        assert r["judge_yes_on_cant_tell"] == sum(verdicts[j] for j in idx if answers[j] == "can't tell")
        yn = [j for j in idx if answers[j] != "can't tell"]
        assert r["agreement"] == pytest.approx(np.mean([verdicts[j] == (answers[j] == "yes") for j in yn]))


def test_cross_labeller_recovers_each_labellers_threshold(fake_scores):
    """Labeller 1 says yes from s >= 0.4, labeller 2 only from s >= 0.7: chosen on 1 the threshold sits near
    0.4 and, validated on 2, the judge says yes too often (recall on 2's no items drops); chosen on 2 it sits
    near 0.7, and on 1 it says no too often. Both labellers' best thresholds on all items are recovered."""
    first, second = _synthetic(400, 0.4, 1), _synthetic(300, 0.7, 2)
    out = agreement.cross_labeller(first, second, kinds=("reference", "reference-min"), seed=0)
    d12, d21 = out["directions"]
    assert (d12["chosen_on"], d21["chosen_on"]) == ("labeller 1", "labeller 2")
    assert abs(d12["thresholds"]["reference"] - 0.4) <= 0.05 and abs(d21["thresholds"]["reference"] - 0.7) <= 0.05
    v12 = d12["validation"]["reference"][0]
    v21 = d21["validation"]["reference"][0]
    assert v12["recall_yes"] == 1.0 and v12["recall_no"] < 0.7
    assert v21["recall_no"] == 1.0 and v21["recall_yes"] < 0.6
    assert abs(out["curves"]["labeller 1"]["best_all"] - 0.4) <= 0.025
    assert abs(out["curves"]["labeller 2"]["best_all"] - 0.7) <= 0.025
    assert v12["items"] == 300 and v21["items"] == 400


def test_threshold_curve_matches_metrics_per_kind():
    items, answers, _ = _synthetic(40, 0.5, 3)
    yn = [j for j, a in enumerate(answers) if a != "can't tell"]
    s = np.array([items[j]["s"] for j in yn])
    h = np.array([answers[j] == "yes" for j in yn])
    kinds = [items[j]["kind"] for j in yn]
    c = agreement.threshold_curve(s, h, kinds, [0.25, 0.5, 0.75])
    assert c["all"][1] == 1.0
    m = np.array(kinds) == "fer"
    assert c["fer"][0] == agreement.metrics(h[m], s[m] >= 0.25)["balanced_accuracy"]


def test_answer_rows_count_per_kind_and_delta():
    from compbook.stats import wilson
    items, answers, _ = _synthetic(90, 0.5, 4)
    rows = agreement.answer_rows(items, answers)
    assert sum(r["n"] for r in rows) == 90 and [r["kind"] for r in rows][0] == "picbreeder"
    r = next(r for r in rows if r["kind"] == "fer" and r["delta"] == 1.0)
    g = [a for it, a in zip(items, answers) if it["kind"] == "fer" and it["question"]["delta"] == 1.0]
    assert (r["yes"], r["no"], r["cant_tell"]) == (g.count("yes"), g.count("no"), g.count("can't tell"))
    assert r["ci95"] == list(wilson(g.count("yes"), len(g)))
    with pytest.raises(ValueError, match="answers"):
        agreement.answer_rows(items, answers[:-1])


def test_pairwise_against_a_naive_count():
    rng = np.random.default_rng(5)
    pool = ["yes", "no", "can't tell", None]
    a = [pool[i] for i in rng.choice(4, 200, p=[0.5, 0.25, 0.15, 0.1])]
    b = [pool[i] for i in rng.choice(4, 200, p=[0.7, 0.2, 0.05, 0.05])]
    got = agreement.pairwise(a, b)
    shared = [(x, y) for x, y in zip(a, b) if x is not None and y is not None]
    assert got["n"] == len(shared) and sum(map(sum, got["table"])) == len(shared)
    assert got["exact"] == pytest.approx(np.mean([x == y for x, y in shared]))
    yn = [(x == "yes", y == "yes") for x, y in shared if "can't tell" not in (x, y)]
    assert got["n_yes_no"] == len(yn)
    po = np.mean([x == y for x, y in yn])
    pa, pb = np.mean([x for x, _ in yn]), np.mean([y for _, y in yn])
    pe = pa * pb + (1 - pa) * (1 - pb)
    assert got["agreement_yes_no"] == pytest.approx(po)
    assert got["kappa_yes_no"] == pytest.approx((po - pe) / (1 - pe))
    assert got["first"]["yes_rate"] == pytest.approx(np.mean([x == "yes" for x, _ in shared]))
    assert got["second"]["yes"] == sum(y == "yes" for _, y in shared)
    lo, hi = got["second"]["yes_rate_ci"]
    assert lo < got["second"]["yes_rate"] < hi
    assert got["first"]["yes_rate"] < got["second"]["yes_rate"]      # b was drawn more lenient
    assert got["table"][2][2] == sum(x == y == "can't tell" for x, y in shared)


def test_pairwise_identical_labellers_and_bad_input():
    a = ["yes", "no", "can't tell", "yes"]
    got = agreement.pairwise(a, a)
    assert got["exact"] == 1 and got["agreement_yes_no"] == 1 and got["kappa_yes_no"] == pytest.approx(1)
    assert got["n_yes_no"] == 3 and got["exact_ci"][1] == pytest.approx(1)
    with pytest.raises(ValueError, match="second"):
        agreement.pairwise(a, ["yes", "maybe", "no", "no"])
    with pytest.raises(ValueError, match="first|second"):
        agreement.pairwise(a, a[:3])


def test_reweighted_yes_weights_the_sample_by_the_batch():
    original = ["yes"] * 4 + ["no"] * 4
    other = ["yes", "yes", "yes", "no", "no", "no", "yes", None]
    # other says yes to 3/4 of the yes items and 1/3 of the answered no items; a batch of 90 yes, 10 no
    assert agreement.reweighted_yes(original, other, {"yes": 90, "no": 10}) == pytest.approx(
        0.9 * 0.75 + 0.1 / 3)
    naive = np.mean([o == "yes" for o in other if o is not None])
    assert agreement.reweighted_yes(original, other, {"yes": 4, "no": 3}) == pytest.approx(naive)
    assert np.isnan(agreement.reweighted_yes(original, other, {"yes": 1, "can't tell": 5}))
    with pytest.raises(ValueError, match="batch_counts"):
        agreement.reweighted_yes(original, other, {"yes": -1})
