"""Part C's claims table (compbook.sae.studies.claims): the book's verdict rule, the paper's sizes, every claim read."""

import numpy as np
import pandas as pd
import pytest

from compbook import stats
from compbook.sae.studies import claims
from compbook.sae.studies import study as st

S2AE = "S2AE (lambda=0.01)"


def _old_reread(mean, half, sign, size):
    """study.reread as it was written before it used compbook.stats.verdict (the naive reference)."""
    lo, hi = sign * mean - half, sign * mean + half
    if lo > 0:
        return "reproduced" if hi >= abs(size) / 2 else "direction only (under half the paper's effect)"
    if hi < 0:
        return "not reproduced (opposite direction)"
    if hi < abs(size) / 2:
        return "not reproduced (half the paper's effect excluded)"
    return "inconclusive"


def test_reread_on_the_shared_rule_equals_the_old_rule():
    rng = np.random.default_rng(1)
    for _ in range(500):
        mean, half, size = rng.normal(), abs(rng.normal()), abs(rng.normal())
        sign = int(rng.choice([-1, 1]))
        assert st.reread(mean, half, sign, size) == _old_reread(mean, half, sign, size)


def test_claim_row_reads_sign_size_and_threshold():
    up = claims.claim_row("mIoU higher", "s", "mIoU", 0.024, 0.003, vanilla=0.19)
    assert (up["verdict"], up["reading"]) == ("reproduced", "reproduced")
    assert up["measured"] == "0.024 [0.021, 0.027]"
    small = claims.claim_row("mIoU higher", "s", "mIoU", 0.004, 0.001, vanilla=0.19)   # under half of 6.06% of 0.19
    assert small["verdict"] == "reproduced" and small["reading"].startswith("direction only")
    l0 = claims.claim_row("L0 lower", "s", "L0", -12.5, 0.7, k=32)                    # 24% of 32 = 7.6; half 3.8
    assert (l0["verdict"], l0["reading"]) == ("reproduced", "reproduced")
    assert claims.claim_row("L0 lower", "s", "L0", 1.0, 0.5, k=32)["verdict"] == "not reproduced"
    ev = claims.claim_row("EV above 99%", "s", "EV", 0.96, 0.002)
    assert ev["verdict"] == "not reproduced" and "0.960 [0.958, 0.962]" == ev["measured"]
    assert claims.claim_row("EV above 99%", "s", "EV", 0.995, 0.002)["verdict"] == "reproduced"
    assert claims.claim_row("EV above 99%", "s", "EV", 0.99, 0.002)["verdict"] == "inconclusive"
    one = claims.claim_row("mIoU higher", "s", "mIoU", 0.1, float("nan"), vanilla=0.2)
    assert one["verdict"] == "inconclusive"
    with pytest.raises(ValueError, match="claim"):
        claims.claim_row("S2AE is better", "s", "x", 0.1, 0.1)
    with pytest.raises(ValueError, match="vanilla"):
        claims.claim_row("mIoU higher", "s", "mIoU", 0.1, 0.01)


def _frames(seeds=(0, 1, 2, 3, 4)):
    rng = np.random.default_rng(0)
    study, coh, ident, reg = [], [], [], []
    for s in seeds:
        for method, lam, bump in (("vanilla", 0.0, 0.0), (S2AE, 0.01, 1.0)):
            study.append({"k": 32, "lambda": lam, "method": method, "seed": s, "EV": 0.99 - 0.03 * bump,
                          "L0 patches": 32 - 10 * bump + rng.normal(0, .1),
                          "mIoU": 0.2 + 0.03 * bump + rng.normal(0, .001)})
            coh.append({"method": method, "seed": s, "word / live": 0.01, "word / bimodal": 0.1 + rng.normal(0, .01),
                        "phrase / bimodal": 0.1, "next token / bimodal": 0.1 - 0.05 * bump,
                        "mono image": 0.5 + 0.1 * bump, "mono text": 0.6 + rng.normal(0, 0.01)})
            for pipe, rate in (("hierarchical", 0.6), ("direct", 0.2)):
                ident.append({"method": f"{method}, {pipe}", "seed": s, "identified": rate + rng.normal(0, .01),
                              "agree": 0.05 + rng.normal(0, .01)})
        reg.append({"method": "vanilla", "regions": 0, "seed": s, "EV": 0.99, "L0 patches": 32.0, "mIoU": 0.2})
        reg.append({"method": "S2AE, 4 regions", "regions": 4, "seed": s, "EV": 0.93 + 0.001 * s,
                    "L0 patches": 20.0 + 0.1 * s, "mIoU": 0.2 + 0.001 * s})
    return pd.DataFrame(study), pd.DataFrame(reg), pd.DataFrame(coh), pd.DataFrame(ident)


def test_table_reads_every_claim_from_the_frames():
    study, reg, coh, ident = _frames()
    t = claims.table(study, reg, None, coh, ident, k=32)
    assert list(t.columns) == list(claims.COLUMNS)
    assert set(t.claim) == set(claims.CLAIMS), "every claim of the paper has a row"
    assert set(t.verdict) <= {stats.REPRODUCED, stats.NOT_REPRODUCED, stats.INCONCLUSIVE}
    row = t[(t.claim == "mIoU higher") & t.setting.str.contains("20 regions")].iloc[0]
    d = study[study.method == S2AE].mIoU.to_numpy() - study[study.method == "vanilla"].mIoU.to_numpy()
    m, h = stats.t_interval(d)
    assert row.measured == stats.fmt(stats.difference_row(m, h), 3) and row.verdict == "reproduced"
    by = t.set_index("measure")
    assert by.loc["coherence, next token / bimodal", "verdict"] == "not reproduced"
    assert by.loc["coherence, word / live", "reading"].startswith("not reproduced (half")   # exactly 0
    assert by.loc["mono image", "verdict"] == "reproduced"
    assert by.loc["identified, hier. - direct, S2AE", "verdict"] == "reproduced"
    four = t[t.setting.str.contains("4 regions")].set_index("claim")
    assert four.loc["L0 lower", "verdict"] == "reproduced" and four.loc["EV above 99%", "verdict"] == "not reproduced"
    assert len(claims.table(study)) == 3, "frames left out leave their rows out"
    page = claims.short(t)
    assert page.index.name == "claim" and "paper" not in page.columns and len(page) == len(t)
    assert "book: next token / bimodal" in set(page.setting) and "book, 4 reg." in set(page.setting)
    assert set(page.reading) <= {"reproduced", "inconclusive", "direction only (< half)", "not reproduced (< half)",
                                 "not reproduced (opposite)", "not reproduced"}
    with pytest.raises(ValueError, match="study"):
        claims.table(study, k=64)
    counts = claims.tally(t)
    assert list(counts.columns) == ["settings", "reproduced", "not reproduced", "inconclusive"]
    assert counts.loc["mIoU higher", "settings"] == 2 and counts.settings.sum() == len(t)
    assert (counts.iloc[:, 1:].sum(axis=1) == counts.settings).all()
    assert counts.loc["EV > 0.99", "not reproduced"] == 2
