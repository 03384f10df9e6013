"""compbook.cppn.panel: several judges on the same renders, scores with 95% intervals."""

import numpy as np
import pytest
import torch

from compbook.cppn import panel
from compbook.cppn.audit.agreement import wilson
from compbook.cppn.network import uniform_cppn


class _Const:
    def __init__(self, value, name):
        self.value, self.identity = value, name

    def __call__(self, images, concept, *, reference=None, questions=None):
        return torch.full((len(images),), self.value, dtype=torch.bool)


class _Bright:
    """Says yes when the image's mean is above 0.5 (a judge that depends on the render)."""
    identity = "bright"

    def __call__(self, images, concept, *, reference=None, questions=None):
        return images.mean(dim=(1, 2, 3)) > 0.5


def test_panel_asks_every_judge_and_answers_with_the_first():
    p = panel.Panel({"yes": _Const(True, "y"), "no": _Const(False, "n")})
    v = p(torch.zeros(3, 8, 8, 3), "skull")
    assert v.tolist() == [True] * 3
    assert p.results()["no"].tolist() == [False] * 3


def test_panel_verdicts_equal_one_score_per_judge():
    from compbook.cppn import emc2
    m = uniform_cppn(2, 4, "tanh", seed=0)
    got = panel.panel_verdicts(m, {"a": _Bright(), "b": _Const(True, "t")}, "skull", delta=1.0, res=16)
    alone = emc2.compositional_score(m, _Bright(), "skull", delta=1.0, res=16, progress=False)
    assert got["a"].tolist() == alone.verdicts.tolist(), "the panel saw other renders than one judge alone"
    assert got["b"].all() and len(got["b"]) == m.n_weights()


def test_score_row_is_the_wilson_interval():
    row = panel.score_row(np.array([True] * 7 + [False] * 3), concept="skull")
    assert row["concept"] == "skull" and (row["k"], row["n"]) == (7, 10)
    assert row["ci95"] == list(wilson(7, 10))


def test_summary_of_one_network_is_wilson_and_of_several_a_wider_bootstrap():
    a = np.array([True] * 50 + [False] * 50)
    one = panel.summary([a])
    assert one["interval"] == "Wilson" and one["ci95"] == list(wilson(50, 100))
    # two seeds that disagree: the pooled interval must be wider than Wilson on the pooled verdicts,
    # since the networks themselves differ (a bug that ignores seeds gives Wilson's width)
    far = [np.array([True] * 90 + [False] * 10), np.array([True] * 10 + [False] * 90)]
    s = panel.summary(far, n_boot=4000)
    lo, hi = wilson(100, 200)
    assert s["score"] == 0.5 and s["networks"] == 2 and s["per_network"] == [0.9, 0.1]
    assert s["ci95"][1] - s["ci95"][0] > 2 * (hi - lo)
    # identical seeds: close to the pooled binomial width
    same = panel.summary([a, a], n_boot=4000)
    lo, hi = wilson(100, 200)
    assert abs((same["ci95"][1] - same["ci95"][0]) - (hi - lo)) < 0.05


def test_bootstrap_is_seeded():
    g = [np.array([True, False, True]), np.array([False, False, True, True])]
    assert panel.bootstrap_ci(g, seed=3) == panel.bootstrap_ci(g, seed=3)


def test_overlap():
    assert panel.overlap({"ci95": [0.1, 0.3]}, {"ci95": [0.3, 0.5]})
    assert not panel.overlap({"ci95": [0.1, 0.29]}, {"ci95": [0.3, 0.5]})
    assert not panel.overlap({"ci95": [0.6, 0.9]}, {"ci95": [0.3, 0.5]})


@pytest.mark.parametrize("call, name", [
    (lambda: panel.score_row([0.5, 1.0]), "verdicts"),
    (lambda: panel.summary([]), "groups"),
    (lambda: panel.summary([np.array([], bool)]), r"groups\[0\]"),
    (lambda: panel.bootstrap_ci([np.array([True])], n_boot=0), "n_boot"),
    (lambda: panel.overlap({"ci95": [float("nan"), 1]}, {"ci95": [0, 1]}), "a"),
    (lambda: panel.overlap({"ci95": [0, 1]}, {}), "b"),
    (lambda: panel.Panel({}), "judge_map"),
])
def test_bad_inputs_name_the_argument(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_default_panel_on_an_unknown_target_compares_with_the_target():
    from compbook.cppn.judges import semantic
    g = torch.Generator().manual_seed(0)
    target = torch.rand(32, 32, 3, generator=g, dtype=torch.float64)
    j = panel.default_panel(target)
    assert isinstance(j[panel.DEFAULT], semantic.ImageReferenceJudge)
    assert j[panel.DEFAULT].threshold == semantic.default_judge().threshold
    other = torch.rand(1, 32, 32, 3, generator=g)
    s = j[panel.DEFAULT].scores(torch.cat([target[None].float(), other]), "cat")
    assert s[0] > 0.99 and s[1] < 0.3, "the target does not match itself, or noise matches it"
    assert panel.default_panel()[panel.DEFAULT].identity == semantic.default_judge().identity


def test_depth_sweep_under_several_judges_keeps_each_ones_counts():
    from compbook.cppn import depth
    target = torch.rand(8, 8, 3, generator=torch.Generator().manual_seed(0))
    kw = dict(steps=3, lr=1e-2, concept="skull", progress=False, score_kwargs=dict(res=8, delta=1.0, sample=5))
    both = depth.depth_sweep(target, [1, 2], 3, [0, 1], judge={"a": _Bright(), "b": _Const(True, "t")}, **kw)
    alone = depth.depth_sweep(target, [1, 2], 3, [0, 1], judge=_Bright(), **kw)
    assert np.allclose(both.column("a"), alone.column("score")), "panel scores differ from one judge's"
    assert (both.column("b") == 1).all()
    iv = both.intervals("a")
    assert [r["depth"] for r in iv] == [1, 2] and all(r["networks"] == 2 for r in iv)
    with pytest.raises(ValueError, match="judge"):
        alone.intervals("a")


def test_judge_labels_name_both_judges_of_the_panel():
    # the labels live with the judges (registry); the panel's names are their keys
    from compbook.cppn.judges import registry
    assert panel.JUDGE_LABELS is registry.JUDGE_LABELS
    assert set(panel.JUDGE_LABELS) == set(panel.JUDGE_NAMES)
