"""compbook.sae.studies.study: the slack of a TopK code, the choice of k, the re-reading rule, stored study runs."""

import dataclasses
import json

import numpy as np
import pandas as pd
import pytest
import torch

from compbook.sae import experiment as ex
from compbook.sae.runs import stack
from compbook.sae.studies import study as st
from compbook.sae.s2ae import SAEData, SAETrainConfig
from compbook.sae.topk import TopKSAE


def tiny_data(n=6, t=5, d=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    acts = torch.randn(n, t, d, generator=g)
    attn = torch.rand(n, 4, 4, generator=g)
    return SAEData(acts, torch.ones(n, t, dtype=torch.bool), torch.arange(4), (2, 2), attn)


def test_slack_matches_a_naive_count():
    data = tiny_data()
    sae = TopKSAE(8, 16, 5, seed=1)
    with torch.no_grad():
        sae.b_enc.fill_(-0.6)                     # many pre-activations at 0, so some patches keep < k
    got = st.slack(sae, data)
    pos, zero, kth, nxt = [], [], [], []
    for row in data.acts[:, data.patch_idx].reshape(-1, 8):
        pre = sorted(sae.pre_acts(row[None])[0].tolist(), reverse=True)
        pos.append(sum(v > 0 for v in pre))
        zero.append(pre[4] == 0)
        kth.append(pre[4])
        nxt.append(pre[5])
    assert got["positive pre"] == pytest.approx(np.mean(pos))
    assert got["k-th kept = 0"] == pytest.approx(np.mean(zero))
    assert 0 < got["k-th kept = 0"] < 1, "the test must cover both cases"
    assert got["k-th value"] == pytest.approx(float(torch.tensor(kth).median()))
    assert got["(k+1)-th value"] == pytest.approx(float(torch.tensor(nxt).median()))


def frame(ev):
    """Rows for ks 8, 32, 64 with vanilla EVs ``ev`` (2 seeds each) and S2AE rows at EV 0.999."""
    rows = []
    for k, e in zip((8, 32, 64), ev):
        for seed in (0, 1):
            rows.append({"k": k, "lambda": 0.0, "method": "vanilla", "seed": seed, "EV": e + 0.001 * seed})
            rows.append({"k": k, "lambda": 0.01, "method": "S2AE (lambda=0.01)", "seed": seed, "EV": 0.999})
    return pd.DataFrame(rows)


def test_choose_k_reads_vanilla_rows_only():
    assert st.choose_k(frame((0.95, 0.991, 0.995))) == 32
    assert st.choose_k(frame((0.995, 0.991, 0.999))) == 8
    # no k reaches the target: the best vanilla EV, never the S2AE rows (all at 0.999 here)
    assert st.choose_k(frame((0.95, 0.97, 0.96))) == 32
    assert st.choose_k(frame((0.95, 0.97, 0.96)), ev_target=0.9) == 8
    df = frame((0.95, 0.991, 0.995))
    df.loc[df["lambda"] > 0, "EV"] = 0.0           # S2AE's numbers must not move the choice
    assert st.choose_k(df) == 32
    with pytest.raises(ValueError, match="df"):
        st.choose_k(df[df["lambda"] > 0])


@pytest.mark.parametrize("mean, half, sign, size, want", [
    (0.05, 0.01, 1, 0.06, "reproduced"),
    (-0.05, 0.01, 1, 0.06, "not reproduced (opposite direction)"),
    (0.005, 0.01, 1, 0.06, "not reproduced (half the paper's effect excluded)"),
    (0.01, 0.03, 1, 0.06, "inconclusive"),
    (-10.0, 2.0, -1, 15.0, "reproduced"),
    (-1.0, 0.5, -1, 15.0, "direction only (under half the paper's effect)"),
    (0.02, 0.005, 1, 0.06, "direction only (under half the paper's effect)"),
    (0.02, 0.011, 1, 0.06, "reproduced"),
    (0.5, 1.0, -1, 15.0, "not reproduced (half the paper's effect excluded)"),
    (0.5, float("nan"), 1, 0.06, "inconclusive (one seed)"),
])
def test_reread(mean, half, sign, size, want):
    assert st.reread(mean, half, sign, size) == want


def test_reread_refuses_a_bad_sign():
    with pytest.raises(ValueError, match="paper_sign"):
        st.reread(0.1, 0.01, 0, 0.06)


def test_reading_table_pairs_by_seed_and_reads_against_the_paper():
    rows = []
    for seed, (l0_drop, gain) in enumerate([(-10.0, 0.05), (-12.0, 0.07), (-11.0, 0.06)]):
        for lam, l0, miou in ((0.0, 32.0, 0.2), (0.01, 32.0 + l0_drop, 0.2 + gain)):
            rows.append({"k": 32, "lambda": lam, "method": ex.method_name(lam), "seed": seed,
                         "EV": 0.99 - lam, "L0 patches": l0, "mIoU": miou + 0.01 * seed})
    r = st.reading_table(pd.DataFrame(rows)).iloc[0]
    assert (r.k, r["lambda"]) == (32, 0.01)
    assert r["L0 patches"] == pytest.approx(-11.0) and r["mIoU"] == pytest.approx(0.06)
    assert r["EV"] == pytest.approx(-0.01) and r["EV ±"] == pytest.approx(0.0, abs=1e-9)
    assert r["L0 reading"] == "reproduced"          # 11 of 32 is more than half the paper's 23.8% of k
    assert r["mIoU reading"] == "reproduced"
    shown = st.shown(st.reading_table(pd.DataFrame(rows)))
    assert shown["mIoU"].iloc[0].startswith("+0.060 ± ") and "mIoU ±" not in shown.columns
    # with the paper's mIoU gain ten times our difference, the same numbers are only its direction
    far = st.reading_table(pd.DataFrame(rows), miou_rel=3.0).iloc[0]
    assert far["mIoU reading"] == "direction only (under half the paper's effect)"
    with pytest.raises(ValueError, match="columns"):
        st.reading_table(pd.DataFrame(rows).drop(columns="mIoU"))


def test_study_runs_store_per_k_and_resume(tmp_path, monkeypatch):
    monkeypatch.setenv("COMPBOOK_DATA", str(tmp_path))
    calls = []
    real = stack.fit_stack
    monkeypatch.setattr(stack, "fit_stack", lambda saes, *a, **k: calls.extend(s.k for s in saes) or
                        real(saes, *a, **k))
    base = SAETrainConfig(d_sae=16, k=2, steps=3, batch_images=2, n_regions=2)
    runs = st.study_runs(tiny_data(), base, ks=(2, 4), lams=(0.0, 0.01), seeds=(0,))
    assert sorted(calls) == [2, 2, 4, 4]
    assert [(r["k"], r["lam"]) for r in runs] == [(2, 0.0), (2, 0.01), (4, 0.0), (4, 0.01)]
    assert all(r["sae"].k == r["k"] for r in runs)
    assert len(list((tmp_path / "sae" / "study" / "sweep").glob("*.safetensors"))) == 4     # the runner's records
    st.study_runs(tiny_data(), base, ks=(2, 4), lams=(0.0, 0.01), seeds=(0,))
    assert len(calls) == 4, "a rerun must load the stored SAEs"
    df = st.study_table(runs, tiny_data(seed=1), torch.ones(6, 1, 4, dtype=torch.bool))
    assert set(st.COLUMNS) <= set(df.columns) and len(df) == 4
    assert (df["L0"] <= df["k"] + 1e-9).all()
    summ = st.study_summary(df, columns=("EV", "L0"))
    assert list(summ.index) == ["k=2, vanilla", "k=2, S2AE (lambda=0.01)", "k=4, vanilla",
                                "k=4, S2AE (lambda=0.01)"]


def test_reference_runs_never_served_as_ours(tmp_path, monkeypatch):
    monkeypatch.setenv("COMPBOOK_DATA", str(tmp_path))
    base = SAETrainConfig(d_sae=16, k=2, steps=3, batch_images=2, n_regions=2)
    ours = st.study_runs(tiny_data(), base, ks=(2,), lams=(0.0,), seeds=(0,))
    ref = st.reference_runs(tiny_data(), 2, seeds=(0,), lams=(0.0,), base=base)
    assert not torch.equal(ours[0]["sae"].W_enc, ref[0]["sae"].W_enc)
    records = [json.loads(p.read_text()) for p in (tmp_path / "sae" / "study" / "sweep").glob("*.json")]
    assert sorted(r["config"]["optimiser"] for r in records) == ["ours", "reference"]
    table = st.optimiser_table(ours, ref, 2, tiny_data(seed=1), torch.ones(6, 1, 4, dtype=torch.bool))
    assert list(table.optimiser) == ["ours", "reference"]
    assert dataclasses.is_dataclass(st.BASE) and st.BASE.steps >= 900


def test_region_runs_store_per_count_resume_and_read(tmp_path, monkeypatch):
    monkeypatch.setenv("COMPBOOK_DATA", str(tmp_path))
    seen = []
    real = stack.fit_stack
    monkeypatch.setattr(stack, "fit_stack", lambda saes, data, cfgs, *a, **k: seen.extend(
        (c.lam, c.n_regions) for c in cfgs) or real(saes, data, cfgs, *a, **k))
    base = SAETrainConfig(d_sae=16, k=2, steps=3, batch_images=2)
    runs = st.region_runs(tiny_data(), counts=(1, 2), k=2, lam=0.01, seeds=(0, 1), base=base)
    # vanilla and the paper's regions (min(20, 4 patches) = 4) once per seed, then each count per seed
    assert sorted(seen, key=str) == sorted([(0.0, None), (0.01, None)] * 2 + [(0.01, 1), (0.01, 2)] * 2, key=str)
    assert sorted({r["method"] for r in runs}) == ["S2AE, 1 regions", "S2AE, 2 regions", "S2AE, 4 regions",
                                                   "vanilla"]
    assert len(list((tmp_path / "sae" / "study" / "sweep").glob("*.safetensors"))) == 8
    st.region_runs(tiny_data(), counts=(1, 2), k=2, lam=0.01, seeds=(0, 1), base=base)
    assert len(seen) == 8, "a rerun must load the stored SAEs"
    test = tiny_data(seed=1)
    labels = torch.tensor([[0, 0, -1, -1], [0, 1, 1, -1]] * 3)
    df = st.region_table(runs, test, torch.ones(6, 1, 4, dtype=torch.bool), labels)
    assert df.loc[df.method == "vanilla", "purity (regions)"].isna().all()
    one = df[df.regions == 1].iloc[0]
    # one region per image: purity = the majority label's share, naive count per image
    naive = np.mean([max(np.bincount(row + 1)) / 4 for row in labels.numpy()])
    assert one["purity (regions)"] == pytest.approx(naive)
    assert one["purity (proximity only)"] == pytest.approx(naive)
    assert (df[df.regions == 4]["purity (regions)"] == 1).all(), "one patch a region is pure"
    read = st.region_reading(df, 60.81 / 256, 0.0606)
    assert list(read.index) == [1, 2, 4] and (read.seeds == 2).all()
    van = df[df.method == "vanilla"].set_index("seed")
    s2 = df[df.regions == 2].set_index("seed")
    diff = (s2.mIoU - van.mIoU).to_numpy()
    half = 12.706 * diff.std(ddof=1) / np.sqrt(2)          # t(0.975, 1 dof)
    assert read.loc[2, "mIoU S2AE - vanilla"] == f"{diff.mean():+.3f} ± {half:.3f}"
    assert read.loc[2, "mIoU reading"] == st.reread(diff.mean(), half, 1, 0.0606 * van.mIoU.mean())
    with pytest.raises(ValueError, match="df"):
        st.region_reading(df[df.method != "vanilla"], 0.2, 0.06)
    with pytest.raises(ValueError, match="counts"):
        st.region_runs(tiny_data(), counts=(), k=2, base=base)


def test_the_chapters_figures_draw_intervals_and_refuse_bad_columns():
    import matplotlib
    matplotlib.use("Agg")
    from compbook.sae import show
    rows = [{"k": k, "lambda": lam, "method": ex.method_name(lam), "seed": s, "EV": 0.9 + 0.01 * s,
             "L0 patches": k - 10 * lam * s, "mIoU": 0.2 + lam} for k in (8, 32) for lam in (0.0, 0.01)
            for s in range(3)]
    fig = show.plot_study(pd.DataFrame(rows), chosen_k=32)
    assert len(fig.axes) == 3 and [a.get_title() for a in fig.axes] == ["EV", "L0 (% of k)", "mIoU"]
    with pytest.raises(ValueError, match="columns"):
        show.plot_study(pd.DataFrame(rows), columns=("FVU",))
    ident = pd.DataFrame([{"method": f"{m}, {p}", "seed": s, "identified": 0.5, "identified (objects)": 0.4}
                          for m in ("vanilla", "S2AE (lambda=0.01)") for p in ("hierarchical", "direct")
                          for s in range(3)])
    fig = show.plot_identification(ident, paper={"hierarchical": 0.988, "direct": 0.664})
    assert len(fig.axes) == 2 and len(fig.axes[0].patches) == 4
    with pytest.raises(ValueError, match="pipelines"):
        show.plot_identification(ident.assign(method="vanilla, sideways"))
