"""compbook.cppn.audit.tables (the chapters' tables) and the chapter helpers of compbook.cppn.frames and
compbook.cppn.volume_ratio, against naive references (plain loops) and against the stored JSON itself."""

import json
import math
from types import SimpleNamespace

import numpy as np
import pytest

from compbook.cppn.audit import claims, tables
from compbook.cppn import frames, panel, picbreeder, volume_ratio
from compbook.stats import fmt, mean_ci


# -- stored runs -----------------------------------------------------------------------------------------------
def test_stored_and_pick():
    ch6 = tables.stored("chapter6")
    assert {"rows", "mse", "seeds"} <= set(ch6)
    row = tables.pick(ch6["rows"], name="SP", judge=panel.SSIM)
    assert row["name"] == "SP" and row["judge"] == panel.SSIM
    with pytest.raises(ValueError, match="chapter"):
        tables.stored("chapter99")
    with pytest.raises(ValueError, match="found 0"):
        tables.pick(ch6["rows"], name="nobody")
    with pytest.raises(ValueError, match="found 2"):       # both judges' rows: ambiguous
        tables.pick(ch6["rows"], name="SP")


def test_score_table_against_a_naive_loop():
    rows = tables.stored("chapter6")["rows"]
    t = tables.score_table(rows)
    names = list(dict.fromkeys(r["name"] for r in rows))
    assert list(t.index) == names
    for r in rows:
        assert t.loc[r["name"], r["judge"]] == f"{r['score']:.2f} [{r['ci95'][0]:.2f}, {r['ci95'][1]:.2f}]"
        if r["judge"] == panel.DEFAULT:
            assert t.loc[r["name"], "own render ok"] == r["unperturbed"]
    assert "own render ok" not in tables.score_table(rows, unperturbed=False)


def test_chapter6_rows_equal_the_json():
    ch6 = tables.stored("chapter6")
    t = tables.chapter6(ch6)
    assert set(t.index) == set(ch6["mse"]) == {r["name"] for r in ch6["rows"]}
    for n, v in ch6["mse"].items():
        assert t.loc[n, "MSE (mean)"] == round(sum(v) / len(v), 4)
    assert t.index.name == f"method ({len(ch6['seeds'])} seeds)"


def test_chapter8_rows_equal_the_json():
    ch8 = tables.stored("chapter8")
    t = tables.chapter8(ch8)
    assert set(t.index) == set(ch8["mse"])
    for o, v in ch8["mse"].items():
        assert t.loc[o, "MSE"] == fmt(mean_ci(v), 4)
    for r in ch8["rows"]:
        assert t.loc[r["name"], r["judge"]] == fmt(r)


def test_chapter9_rows_equal_the_json():
    ch9 = tables.stored("chapter9")
    t = tables.chapter9(ch9)
    pairs = {(n, r["name"]) for n, v in ch9["targets"].items() for r in v["rows"]}
    assert set(t.index) == pairs and len(t) == len(pairs)
    for (n, kind) in pairs:
        assert t.loc[(n, kind), "MSE"] == round(float(np.mean(ch9["targets"][n]["mse"][kind])), 4)
        r = tables.pick(ch9["targets"][n]["rows"], name=kind, judge=panel.SSIM)
        assert t.loc[(n, kind), panel.SSIM] == fmt(r)


def test_unknown_summary_picks_each_score():
    ch9 = tables.stored("chapter9")
    rows = {n: v["rows"] for n, v in ch9["targets"].items()}
    ratios = {n: v["ratio"] for n, v in ch9["targets"].items()}
    t = tables.unknown_summary(ratios, ratios, {n: 8 for n in rows}, rows)
    for n, rs in rows.items():
        for r in rs:
            assert t.loc[n, f"{r['judge']} {r['name']}"] == round(r["score"], 3)


def _sweep(depths, scores, losses):
    return SimpleNamespace(depths=list(depths), peak=lambda: depths[int(np.argmax(scores))],
                           mean=lambda key="score": np.array(scores if key == "score" else losses))


def test_depth_tables_on_fake_sweeps():
    sweeps = {"a": _sweep([1, 2, 4], [0.1, 0.5, 0.2], [0.3, 0.2, 0.1]),
              "b": _sweep([1, 2, 4], [0.0, 0.1, 0.9], [0.5, 0.4, 0.3])}
    iv = {n: {j: [{"score": s, "ci95": [s - 0.1, s + 0.1]} for s in sw.mean()] for j in panel.JUDGE_NAMES}
          for n, sw in sweeps.items()}
    t = tables.depth_table(sweeps, iv)
    assert t.shape == (6, 3)
    assert t.loc[("b", 4), panel.DEFAULT] == "0.90 [0.80, 1.00]"
    assert t.loc[("a", 2), "MSE"] == 0.2
    s = tables.depth_summary(sweeps, {"a": 4.5, "b": 5.0})
    assert list(s["peak"]) == [2, 4] and list(s["depth 4"]) == [0.2, 0.9]


def test_lr_table_marks_the_best():
    runs = {("adam", 0.1): SimpleNamespace(final_loss=np.array([0.2, 0.4]), seconds=1.0),
            ("adam", 0.01): SimpleNamespace(final_loss=np.array([0.1, 0.1]), seconds=2.0)}
    t = tables.lr_table(runs, {"adam": 0.01})
    assert t.loc[("adam", 0.01), "best"] == "<-" and t.loc[("adam", 0.1), "best"] == ""
    assert math.isclose(t.loc[("adam", 0.1), "mean MSE"], 0.3)


# -- chapters 3 and 4 ------------------------------------------------------------------------------------------
def test_rho_check_view_shows_ratios_that_agree():
    tiny = tables.tiny_targets()
    t = tables.rho_checks(tiny, 0.5, n_mc=2000)
    v = tables.rho_check_view(t)
    assert list(v.columns[:4]) == ["target", "W", "L", "edges N"] and len(v) == len(t)
    assert (v["enumerated / closed form"] == 1.0).all()       # a last-digit split of two roundings cannot show
    assert [float(x) for x in v["rho, closed form"]] == pytest.approx(list(t.closed_form), rel=1e-3)
    assert np.allclose(v["Monte Carlo / closed form"], t.monte_carlo / t.closed_form, atol=5e-4)
    with pytest.raises(ValueError, match="table"):
        tables.rho_check_view(t.to_dict())


def test_rho_checks_equal_the_chapters_loop():
    tiny = tables.tiny_targets()
    t = tables.rho_checks(tiny, 0.5, n_mc=2000)
    expected = []
    for name, target in tiny.items():           # the loop chapter 3 held before
        for W in range(1, 4):
            for L in range(1, 4):
                N = sum(a * b for a, b in volume_ratio.network_shapes(target, W, L))
                if N <= 18 and W >= target.width and L >= target.depth:
                    expected.append((name, W, L, N))
    assert list(zip(t.target, t.W, t.L, t.N)) == expected
    assert np.allclose(t.enumerated, t.closed_form, rtol=1e-10)
    est, se = volume_ratio.rho_monte_carlo(tiny[expected[3][0]], *expected[3][1:3], 0.5, n=2000, seed=3)
    assert (t.monte_carlo[3], t.mc_stderr[3]) == (est, se)


def test_target_summary_against_the_closed_form():
    t = tables.target_summary(("skull",), 0.5)
    skull = volume_ratio.dag_from_genome(picbreeder.load_genome("skull"))
    row = t.loc["skull"]
    assert (row["W_min"], row["L*"], row["edges"]) == (skull.width, skull.depth, skull.n_edges)
    assert math.isclose(row["log10 rho peak"], volume_ratio.log_rho(skull, skull.width, skull.depth) / math.log(10))


def test_edge_budget_adds_up_and_matches_the_closed_form():
    b = tables.edge_budget("skull", 0.5)
    genome = picbreeder.load_genome("skull")
    skull = volume_ratio.dag_from_genome(genome)
    parts = ("genome links", "carry edges", "read-out edges")
    assert b["target edges"] == sum(b[f"of them: {k}"] for k in parts)
    # every carry and read-out edge is a layerizing copy weight
    copies = picbreeder.copy_weight_masks(picbreeder.layerize(genome, False))
    assert b["of them: carry edges"] + b["of them: read-out edges"] == sum(int(c.sum()) for c in copies)
    # U(L*) is the width decay rate in halvings; at p = 1/2 every pinned edge is one halving
    rate = volume_ratio.width_decay_rate(skull, skull.depth, 0.5) / math.log(2)
    assert math.isclose(b["units reading a hidden layer U(L*)"], rate)
    N, E = b["possible edges at (Wₘᵢₙ, L*)"], b["target edges"]
    assert N > E and -b["log₁₀ ρ at (Wₘᵢₙ, L*)"] * math.log2(10) <= N
    with pytest.raises(ValueError, match="name"):
        tables.edge_budget(3)


def test_etf_table_flags_a_frame_that_is_not_an_etf():
    t = tables.etf_table()
    assert len(t) == 11 and (t["|difference|"] < 1e-9).all()
    assert (t.angle_spread < 1e-9).all() and (t.tightness < 1e-9).all()
    rng = np.random.default_rng(0)
    bad = tables.etf_table({"random": frames.normalise_rows(rng.standard_normal((7, 3)))})
    assert bad.angle_spread.iloc[0] > 1e-3 and bad.tightness.iloc[0] > 1e-3
    assert bad["|difference|"].iloc[0] > 1e-3


def test_coherence_sweep_is_minimise_coherence():
    got = frames.coherence_sweep([3, 4], [2], steps=50, restarts=2)
    assert list(got) == [(3, 2), (4, 2)]
    assert got[4, 2] == frames.mutual_coherence(frames.minimise_coherence(4, 2, steps=50, seed=402, restarts=2))


def test_log10_rho_grid_and_relabelling_peak():
    skull = volume_ratio.dag_from_genome(picbreeder.load_genome("skull"))
    Ws, Ls = [skull.width - 1, skull.width, skull.width + 1], [skull.depth, skull.depth + 2]
    g = volume_ratio.log10_rho_grid(skull, Ws, Ls)
    assert g.shape == (2, 3) and np.isneginf(g[:, 0]).all()
    assert math.isclose(g[1, 2], volume_ratio.log_rho(skull, Ws[2], Ls[1]) / math.log(10))
    peak = volume_ratio.relabelling_peak(skull, 0.5, span=4)
    naive = max(((W, L) for W in range(skull.width, skull.width + 4) for L in range(skull.depth, skull.depth + 4)),
                key=lambda k: volume_ratio.log_rho(skull, *k) + volume_ratio.log_relabelling_bound(skull, *k))
    assert peak["peak"] == naive
    assert peak["loss"] == volume_ratio.width_decay_rate(skull, skull.depth)


def test_dimension_sweep_local_is_exact():
    keys, groups = frames.genome_groups(picbreeder.load_genome("skull"))
    r = len(keys)
    out = frames.dimension_sweep(groups, r, [12, r], steps=50)
    assert out["d"] == [12, r] and max(out["local"]) < 1e-12
    assert out["best_global"][0] >= out["welch"][0] > 0 and out["welch"][1] == 0


def test_configs_for_mode(monkeypatch):
    assert volume_ratio.VolumeConfig.for_mode().n_mc == 200_000
    monkeypatch.setenv("COMPBOOK_MODE", "full")
    assert volume_ratio.VolumeConfig.for_mode().n_mc == 2_000_000
    full = frames.WelchConfig.for_mode()
    assert (full.steps, full.r_max, full.restarts) == (5000, 24, 8)


# -- chapters 6-9's helpers outside tables ---------------------------------------------------------------------
def test_mode_config_prints_within_80_columns(monkeypatch):
    import dataclasses
    from compbook.cppn.runs import experiments
    for cls in (experiments.PruningConfig, experiments.OptimizerConfig, experiments.UnknownConfig,
                experiments.DepthConfig, frames.WelchConfig):
        for mode in ("cpu", "full"):
            monkeypatch.setenv("COMPBOOK_MODE", mode)
            cfg = cls.for_mode()
            text = str(cfg)
            assert max(len(line) for line in text.splitlines()) <= 80, text
            assert text.startswith(cls.__name__ + "(") and text.endswith(")")
            for f in dataclasses.fields(cfg):    # every field shown, nothing lost in the wrapping
                assert f"{f.name}=" in text


def test_chapter_configs_keep_the_chapters_numbers(monkeypatch):
    from compbook.cppn.runs import experiments as e
    assert (e.PruningConfig().sample, e.PruningConfig().delta) == (150, 0.5)
    assert (len(e.OptimizerConfig().seeds), e.OptimizerConfig().sample) == (5, 100)
    assert (e.UnknownConfig().depth_range, len(e.UnknownConfig().seeds)) == ((8, 8), 3)
    assert e.DepthConfig().live_depths == (1, 2, 4, 8, 16) and set(e.DepthConfig().live_depths) <= set(
        e.DepthConfig().depths)
    monkeypatch.setenv("COMPBOOK_MODE", "full")
    assert e.PruningConfig.for_mode().sample is None and e.PruningConfig.for_mode().res == 128
    assert len(e.OptimizerConfig.for_mode().seeds) == 16
    assert e.UnknownConfig.for_mode().depth_range == (2, 32)
    assert e.DepthConfig.for_mode().sp["retrain_steps"] == 1000


def test_singular_value_map_is_the_polynomial():
    import torch
    from compbook.cppn import optim
    s = torch.tensor([0.0, 0.1, 0.5, 1.0], dtype=torch.float64)
    a, b, c = optim.NS_COEFFICIENTS
    once = a * s + b * s**3 + c * s**5
    assert torch.allclose(optim.singular_value_map(s, 1), once)
    assert torch.allclose(optim.singular_value_map(s, 2), a * once + b * once**3 + c * once**5)
    cubic = optim.singular_value_map(torch.tensor([1.0], dtype=torch.float64), 7, optim.CUBIC_COEFFICIENTS)
    assert float(cubic) == 1.0                   # 1 is the cubic's fixed point


def test_against_torch_muon():
    import torch
    from compbook.cppn import optim
    out = optim.against_torch_muon(steps=3, shape=(6, 4))
    if not hasattr(torch.optim, "Muon"):
        assert out is None
        return
    # torch iterates in bfloat16: ours in bfloat16 is the same trajectory, ours in float32 close but not equal
    assert out["moved"] > 1e-2 and out["bfloat16"] < 1e-6 < out["float32"] < 0.1 * out["moved"]


def test_most_similar_against_a_naive_loop():
    from compbook.cppn import prune
    from compbook.cppn.network import uniform_cppn
    m = uniform_cppn(2, 4, "tanh", seed=0)
    sims = prune.neuron_similarity(m, 16)
    naive = max(float(s[i, j]) for s in sims for i in range(len(s)) for j in range(i + 1, len(s)))
    assert math.isclose(prune.most_similar(m, 16), naive, rel_tol=1e-6)


def test_half_mse_and_selective_fraction():
    import torch
    from compbook.cppn.runs import experiments
    from compbook.cppn.network import uniform_cppn
    m = uniform_cppn(2, 4, "tanh", seed=0)
    img = m.render(8).detach().numpy().copy()
    right = img[:, 4:]                           # wrong by 0.5 on the right half only, still in [0, 1]
    img[:, 4:] = np.where(right < 0.5, right + 0.5, right - 0.5)
    left, right = experiments.half_mse(m, img, 8)
    assert left < 1e-12 and math.isclose(right, 0.25, rel_tol=1e-5)
    share, alive = experiments.selective_fraction(m, 16)
    assert 0 <= share <= 1 and alive == 8
    with torch.no_grad():                        # every map constant on the left half: all selective
        maps = [torch.cat([torch.zeros(4, 16, 8), torch.randn(4, 16, 8)], dim=2) for _ in range(2)]
        m.feature_maps = lambda res: maps
        assert experiments.selective_fraction(m, 16) == (1.0, 8)


# -- chapter 5 ------------------------------------------------------------------------------------------------------
def test_pooled_row_pools_the_seeds_with_wilson():
    import types

    import torch

    from compbook.stats import wilson
    v = {0: torch.tensor([True, False, True, True]), 1: torch.tensor([False, False, True])}
    results = {("skull", "SGD", s, 0.5): types.SimpleNamespace(verdicts=v[s]) for s in v}
    row = tables.pooled_row(results, "skull", "SGD", [0, 1], 0.5)
    assert (row["k"], row["n"]) == (4, 7) and row["score"] == 4 / 7
    assert row["ci95"] == list(wilson(4, 7))
    assert tables.ci_cell(row) == f"{4 / 7:.2f} [{row['ci95'][0]:.2f}, {row['ci95'][1]:.2f}] n=7"


def test_reread_table_has_one_row_per_picbreeder_row_and_marks_earlier_twins():
    from compbook.cppn.audit import claims
    from compbook.results.paths import data_file
    reread = json.loads(data_file("emc2/reread.json").read_text())
    steps = {"skull": 63000, "butterfly": 49000, "apple": 23000}
    table = claims.reread_table(reread, steps)
    assert len(table) == sum(r["network"] == "picbreeder" for r in reread["rows"])
    assert set(table.reading.str.split(":").str[0]) <= {"reproduced", "not reproduced", "inconclusive"}
    # a twin run that none of the rows was made with: every judge with sources is marked
    other = claims.reread_table(reread, {t: 1 for t in steps})
    marked = other.judge.str.endswith(" *")
    assert marked.sum() >= table.judge.str.endswith(" *").sum() and marked.any()


def test_reading_follows_verdict_and_refuses_networks_that_never_drew():
    from compbook.cppn.audit import claims
    hi, lo = {"score": 0.9, "ci95": [0.85, 0.95]}, {"score": 0.3, "ci95": [0.2, 0.4]}
    assert claims.reading(hi, lo).startswith("reproduced")
    assert claims.reading(lo, hi).startswith("not reproduced")
    assert claims.reading(hi, dict(hi)).startswith("inconclusive")
    never = dict(lo, unperturbed=[0, 3])
    assert claims.reading(hi, never) == "inconclusive: fails unperturbed"


def test_bench_config_full_mode(monkeypatch):
    from compbook.cppn.runs import experiments
    monkeypatch.setenv("COMPBOOK_MODE", "full")
    full = experiments.BenchConfig.for_mode()
    assert full.res == 256 and full.live == ("skull", "butterfly", "apple") and full.pb_sample is None
    monkeypatch.setenv("COMPBOOK_MODE", "cpu")
    assert experiments.BenchConfig.for_mode().live == ("skull",)


# -- chapters 6-8 with FER's networks ----------------------------------------------------------------------------
def _fer_row(kind, target, name, judge, kn):
    return panel.summary(panel.groups_from_counts(kn), name=name, judge=judge) | {
        "kind": kind, "target": target, "k_n": kn, "unperturbed": 1.0}


def test_fer_tables_read_planted_sections():
    rows = [_fer_row("fer", t, n, j, kn) for t, kn in (("skull", [[3, 4]]), ("all", [[3, 4], [1, 4]]))
            for n in ("published", "SP") for j in (panel.DEFAULT, panel.SSIM)]
    ch6 = {"rows": rows, "levels": {"fer skull": [0.5, 0.7]},
           "mse": {"fer skull": {"published": [0.001], "SP": [0.01, 0.03]}}}
    per = tables.chapter6_fer(ch6)
    assert list(per.index) == [("fer", "skull", "published"), ("fer", "skull", "SP")]
    assert per.loc[("fer", "skull", "SP"), "MSE"] == 0.02 and per.loc[("fer", "skull", "SP"), "SP sparsity"] == 0.6
    assert per.loc[("fer", "skull", "SP"), panel.SSIM] == fmt(rows[3])
    pooled = tables.chapter6_fer(ch6, pooled=True)
    assert list(pooled.index.get_level_values("target")) == ["all", "all"] and "MSE" not in pooled
    ch7 = {"targets": {"skull": {"depth": 12, "width": 22, "ratio": 5.2367, "line": 9.73, "predicted": 10,
                                 "rows": rows[:2]}}}
    t7 = tables.chapter7_fer(ch7)
    assert t7.loc["skull", "FER depth"] == 12 and t7.loc["skull", "predicted"] == 10
    assert t7.loc["skull", f"published {panel.DEFAULT}"] == fmt(rows[0])
    ch8 = {"rows": [_fer_row("x", "skull", o, j, [[2, 4], [3, 4]]) for o in ("adam", "muon")
                    for j in (panel.DEFAULT, panel.SSIM)],
           "mse": {"adam": [0.02, 0.03], "muon": [0.01, 0.02]}, "best_lr": {"adam": 3e-3, "muon": 3e-2}}
    t8 = tables.chapter8_fer(ch8)
    assert list(t8["best lr"]) == [3e-3, 3e-2] and t8.loc["muon", "MSE"] == fmt(mean_ci([0.01, 0.02]), 4)


def test_second_labeller_tables_from_synthetic_rows():
    """The chapter-5 tables of a second labeller, built from agreement's rows on synthetic answers: one row per
    judge and kind, the always-yes column is the labeller's yes rate, counts survive."""
    import numpy as np
    from compbook.cppn.audit import agreement
    kinds = ["picbreeder", "fer", "fertwin"] * 10
    items = [{"kind": k, "question": {"delta": (0.5, 2.0)[j % 2], "weight": [0, 0, j]}} for j, k in enumerate(kinds)]
    answers = ["no" if j % 7 == 0 else "yes" for j in range(30)]
    verdicts = np.array([j % 5 != 0 for j in range(30)])
    result = {"fixed": {"reference": {"threshold": 0.625, "rows": agreement.labeller_rows(items, answers, verdicts)}},
              "verdicts": {"kind_delta": agreement.answer_rows(items, answers),
                        "first_kind_delta": agreement.answer_rows(items[:12], answers[:12])}}
    t = tables.labeller_agreement_table(result)
    assert list(t.index.get_level_values("network")) == ["all", "Picbreeder", "FER's SGD", "FER-arch twins"]
    assert t.loc[("reference 0.625", "all"), "always yes"] == round(answers.count("yes") / 30, 2)
    assert t.loc[("reference 0.625", "all"), "labeller no"] == answers.count("no")
    h = tables.labeller_kind_table(result)
    assert h.loc[("labeller 2", "FER's SGD", 2.0), "n"] == sum(k == "fer" and j % 2 for j, k in enumerate(kinds))
    assert set(h.loc["labeller 1"].index.get_level_values("network")) == {"Picbreeder"}


def test_overlap_table_shows_each_groups_rates_and_agreement():
    from compbook.cppn.audit import agreement
    a, b = ["yes"] * 6 + ["no"] * 4, ["yes"] * 3 + ["no"] * 5 + ["can't tell"] * 2
    judge = ["yes"] * 5 + ["no"] * 5
    group = {"labeller": "labeller 2", "n": 10, "labellers": agreement.pairwise(a, b),
             "judge_vs_third": agreement.pairwise(judge, b), "original_yes_batch": 0.94,
             "third_yes_reweighted": 0.41}
    t = tables.overlap_table({"groups": [group]})
    col = t["labeller 2's items"]
    assert col["items"] == "10" and col["batch yes: labeller 3 (est.)"] == "0.41"
    assert col["yes: their labeller"].startswith("0.60 [") and col["yes: labeller 3"].startswith("0.30 [")
    assert col["yes: default judge"].startswith("0.50 [")
    assert col["both yes/no"] == "8" and col["same answer (of 3)"].startswith("0.50 [")    # 5 of 10
    assert col["judge vs 3: yes/no items"] == "8" and col["judge vs 3: agreement"].startswith("0.75 [")
    assert max(len(str(i)) + len(v) for i, v in col.items()) < 60


# -- chapter 5: per-network scores and readings ------------------------------------------------------------------
def _reread():
    pb = {"concept": "skull", "network": "picbreeder", "judge": "reference (default)", "delta": 0.5, "score": 0.5,
          "k": 50, "n": 100, "ci95": [0.40, 0.60], "unperturbed": [1, 1]}
    sg = {"concept": "skull", "network": "sgd", "judge": "reference (default)", "delta": 0.5, "score": 0.9,
          "k": 270, "n": 300, "ci95": [0.86, 0.93], "per_seed": [0.8, 0.9, 1.0], "unperturbed": [3, 3]}
    other = pb | {"judge": "ssim (own render, 0.5)", "k": 99}
    return {"chosen": "reference", "rows": [pb, sg, other]}


def test_per_network_scores_split_the_twins_and_add_fer():
    counted = {"scale": 0.5, "rows": [
        {"target": "skull", "kind": "fer", "rule": "nonzero", "policy": "fixed", "judge": "default", "k": 30, "n": 40},
        {"target": "skull", "kind": "fer", "rule": "links", "policy": "fixed", "judge": "default", "k": 1, "n": 40}]}
    df = tables.per_network_scores(_reread(), counted)
    assert list(df.network) == ["Picbreeder", "SGD twin 0", "SGD twin 1", "SGD twin 2", "FER's SGD"]
    assert list(df.k) == [50, 80, 90, 100, 30] and list(df.n) == [100, 100, 100, 100, 40]
    assert df.score.iloc[-1] == pytest.approx(0.75) and (df.lo <= df.score + 1e-12).all()
    with pytest.raises(ValueError, match="judge"):
        tables.per_network_scores(_reread(), judge="vlm")


def test_readings_follow_the_intervals():
    assert claims.readings(_reread()).loc["skull", 0.5] == "not reproduced"


def test_reading_table_shows_the_intervals_it_reads():
    row = claims.reading_table(_reread()).loc[("skull", "0.5")]
    assert row["reading"] == "not reproduced"
    assert row["Picbreeder"] == "0.50 [0.40, 0.60]" and row["SGD twins pooled"] == "0.90 [0.86, 0.93]"
    with pytest.raises(ValueError, match="judge"):
        claims.reading_table(_reread(), judge="vlm")
