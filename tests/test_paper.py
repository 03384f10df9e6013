"""compbook.cppn.paper: each figure written once, and the code that quotes it reads it from there."""

import pytest

from compbook.cppn.audit import claims
from compbook.cppn import depth, paper, twins
from compbook.cppn.judges import vlm


def test_figures_have_a_source_and_a_value():
    for name, f in paper.FIGURES.items():
        assert f.source in ("paper A", "FER") and f.what, name
        assert paper.figure(name) is f.value
    with pytest.raises(ValueError, match="figure"):
        paper.figure("skull_psnr")


def test_the_quoting_code_reads_the_table():
    assert vlm.DEFAULT_MODEL == paper.figure("judge_model")
    assert depth.PICBREEDER_DEPTHS == paper.figure("layerized_depths")
    assert list(paper.figure("fer_lr")) == list(twins.TARGETS) == list(paper.figure("fer_psnr_256"))
    recipe = twins.TwinRecipe("apple", 64, 10, None, (0,))
    assert recipe.lr == paper.figure("fer_lr")["apple"]


def test_the_baseline_claim_reads_the_papers_score():
    """"The baselines score 0": an interval at most the paper's 0 + tolerance reproduces it."""
    zero = paper.figure("baseline_score")
    assert claims.verdict_zero({"score": zero, "ci95": [zero, zero + 0.01]}) == claims.REPRODUCED
    assert claims.verdict_zero({"score": 0.2, "ci95": [0.1, 0.3]}) == claims.NOT_REPRODUCED
    assert claims.verdict_zero({"score": 0.02, "ci95": [0.0, 0.05]}) == claims.INCONCLUSIVE
