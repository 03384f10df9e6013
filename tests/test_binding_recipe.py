"""The scaled-down released recipe (compbook.binding.recipe): data, loss, metric, training, against naive
references."""

import itertools

import numpy as np
import pytest
import torch

from compbook.binding import recipe as R


def tiny(**kw):
    base = dict(n_values=6, d_model=16, n_heads=2, n_layers=1, d_ff=32, d_out=8, steps=6, batch=16,
                eval_every=3, eval_scenes=40, eval_batches=2, n_concept_queries=8, n_object_queries=8)
    base.update(kw)
    return R.RecipeConfig(**base)


def naive_tokens(cfg, scene):
    tok = []
    for o in scene:
        if o < 0:
            continue
        vals = [(o // cfg.n_values ** k) % cfg.n_values for k in range(cfg.n_concepts)]
        tok += [cfg.soo] + [v + k * cfg.n_values for k, v in enumerate(vals)] + [cfg.eoo]
    tok += [cfg.eos]
    return tok + [cfg.pad] * (cfg.scene_len - len(tok))


def test_config_modes_and_bad_inputs():
    cpu = R.RecipeConfig.for_mode("cpu")
    full = R.RecipeConfig.for_mode("full")
    assert (cpu.n_layers, cpu.d_model, cpu.batch) == (2, 64, 256)
    assert (full.n_layers, full.d_model, full.d_ff, full.steps, full.batch, full.lr) == (6, 256, 2048, 50000,
                                                                                        512, 3e-5)
    assert full.weight_decay == cpu.weight_decay == 0.1 and full.n_swaps == 1 and full.scale_max == 10.0
    assert R.RecipeConfig.for_mode("cpu", coverage=0.3).coverage == 0.3
    with pytest.raises(ValueError, match="coverage"):
        R.RecipeConfig(coverage=1.0)
    with pytest.raises(ValueError, match="n_heads"):
        R.RecipeConfig(d_model=10, n_heads=4)
    with pytest.raises(ValueError, match="mode"):
        R.RecipeConfig.for_mode("gpu")
    with pytest.raises(ValueError, match="allowed"):
        R.sample_scenes(tiny(), np.array([], dtype=int), 3, np.random.default_rng(0))


def test_split_matches_released_convention():
    cfg = tiny(n_values=7, coverage=0.3, split_seed=4)
    train, test = R.split_objects(cfg)
    perm = np.random.RandomState(4).permutation(49)
    assert len(train) == int(49 * 0.3) and np.array_equal(train, perm[:14]) and np.array_equal(test, perm[14:])
    assert set(train) | set(test) == set(range(49)) and not set(train) & set(test)
    v = R.object_values(cfg, np.arange(49))
    assert np.array_equal(R.object_ids(cfg, v), np.arange(49))
    assert np.array_equal(v[10], [3, 1])            # 10 = 3 + 7 * 1


def test_scenes_only_train_objects_and_counts():
    cfg = tiny()
    train, test = R.split_objects(cfg)
    s = R.sample_scenes(cfg, train, 5000, np.random.default_rng(1))
    present = s >= 0
    assert s.shape == (5000, 2) and present[:, 0].all()
    assert set(np.unique(s[present])) <= set(train) and not set(s[present].tolist()) & set(test)
    count = present.sum(1)
    assert abs((count == 1).mean() - 0.5) < 0.03 and set(count) == {1, 2}
    # objects uniform over the train split (chi-square-ish bound)
    freq = np.bincount(np.searchsorted(np.sort(train), s[present]), minlength=len(train))
    assert freq.min() > 0.6 * freq.mean()


def test_tokens_against_naive_loop():
    cfg = tiny(n_values=5, n_concepts=3, max_objects=3)
    s = R.sample_scenes(cfg, np.arange(cfg.n_objects), 200, np.random.default_rng(2))
    tok = R.scene_tokens(cfg, s).numpy()
    assert tok.shape == (200, cfg.scene_len)
    for row, scene in zip(tok, s):
        assert row.tolist() == naive_tokens(cfg, scene)
    q = R.query_tokens(cfg, [0, 124]).numpy()
    assert q.tolist() == [[cfg.soo, 0, 5, 10, cfg.eoo, cfg.eos], [cfg.soo, 4, 9, 14, cfg.eoo, cfg.eos]]


def test_swaps_and_labels_against_naive():
    cfg = tiny(n_values=8)
    rng = np.random.default_rng(3)
    s = R.sample_scenes(cfg, np.arange(cfg.n_objects), 300, rng)
    sw = R.swap_negatives(cfg, s, np.random.default_rng(4))
    multi = s[(s >= 0).sum(1) == 2]
    assert len(sw) == len(multi)
    for (a, b), x in zip(multi, sw):
        va, vb, vx = (R.object_values(cfg, [o])[0] for o in (a, b, x))
        ok = any((vx == np.where(np.arange(2) == k, vb, va)).all() or
                 (vx == np.where(np.arange(2) == k, va, vb)).all() for k in range(2))
        assert ok
    q = R.batch_queries(cfg, s, rng)
    assert len(q["concept_tokens"]) <= 8 and len(np.unique(q["object_queries"])) == len(q["object_queries"])
    for i, scene in enumerate(s):
        for j, o in enumerate(q["object_queries"]):
            assert q["object_labels"][i, j] == float(o in scene[scene >= 0])
        toks = set(naive_tokens(cfg, scene)) - {cfg.soo, cfg.eoo, cfg.eos, cfg.pad}
        for j, t in enumerate(q["concept_tokens"]):
            assert q["concept_labels"][i, j] == float(t in toks)
    # at most n_object_queries positives are kept, and every swap is a query
    pos = np.unique(s[s >= 0])
    assert np.isin(q["object_queries"], pos).sum() <= 8 + np.isin(sw, pos).sum()


def test_soft_ce_and_separation_against_naive_loop():
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(7, 5, generator=g)
    labels = (torch.rand(7, 5, generator=g) < 0.3).float()
    labels[2] = 0
    ref, n = 0.0, 0
    for i in range(7):
        if labels[i].sum() == 0:
            continue
        p = torch.softmax(logits[i], 0)
        ref += -sum(labels[i, j] / labels[i].sum() * torch.log(p[j]) for j in range(5))
        n += 1
    assert torch.allclose(R.soft_ce(logits, labels), ref / n, atol=1e-6)
    sep = R.separation(logits.numpy(), labels.numpy())
    ref_sep = [min(logits[i, j] for j in range(5) if labels[i, j]) > max(
        [logits[i, j] for j in range(5) if not labels[i, j]] or [-np.inf])
               for i in range(7) if labels[i].sum() > 0]
    assert sep.tolist() == [bool(x) for x in ref_sep]


def test_swap_sets_chance_and_bag_of_concepts_floor():
    cfg = tiny(n_values=6)
    sc = R.binding_scenes(cfg, np.arange(36), 300, np.random.default_rng(5))
    v = R.object_values(cfg, sc)
    assert (v[:, 0] != v[:, 1]).all()
    sw = R.swap_sets(cfg, sc)
    assert sw.shape == (300, 2)
    for (a, b), row in zip(v, sw):     # naive: the two cross objects
        ref = {R.object_ids(cfg, [a[0], b[1]]).item(), R.object_ids(cfg, [b[0], a[1]]).item()}
        assert set(row.tolist()) == ref
    c3 = tiny(n_values=4, n_concepts=3)
    assert R.swap_sets(c3, R.binding_scenes(c3, np.arange(64), 5, np.random.default_rng(0))).shape == (5, 6)
    sets = R.eval_sets(cfg)
    f = R.floors(cfg, sets, n_sim=40000)
    assert abs(f["swap_chance_sim"] - 1 / 6) < 0.01 and f["swap_chance_exact"] == pytest.approx(1 / 6)
    # a bag-of-concepts model can never separate two objects from their swaps; the paper's metric lets it
    # pass one-object scenes
    assert f["boc_unseen_binding"] == 0.0 == f["boc_seen_binding"]
    assert 0.3 < f["boc_unseen_paper"] < 0.9 and f["boc_unseen_concepts"] == 1.0
    assert f["boc_unseen_paper_strict"] <= f["boc_unseen_paper"]
    cand = np.concatenate([sc, sw], 1)
    exact = np.stack([R.bag_of_concepts(cfg, sc[i:i + 1], cand[i])[0] for i in range(20)])
    assert np.allclose(exact[:, :2].sum(1), exact[:, 2:].sum(1))


def test_encoder_pads_are_masked_and_shapes():
    cfg = tiny()
    torch.manual_seed(0)
    m = R.DualEncoder(cfg).eval()
    q = R.query_tokens(cfg, [3, 17])
    long = torch.full((2, cfg.scene_len), cfg.pad)
    long[:, : q.shape[1]] = q
    with torch.no_grad():
        assert torch.allclose(m.query(q), m.query(long), atol=1e-5)
        z = m.scene(R.scene_tokens(cfg, np.array([[1, -1], [2, 5]])))
    assert z.shape == (2, cfg.d_out)
    assert float(m.scale().detach()) == pytest.approx(np.exp(1.15), rel=1e-5)
    m.tau.data.fill_(5.0)
    assert float(m.scale().detach()) == 10.0


def test_schedule():
    cfg = tiny(steps=100)
    f = [R.lr_factor(cfg, s) for s in range(100)]
    assert f[0] == 0.0 and f[10] == 1.0 and max(f) == 1.0 and f[5] == 0.5
    assert all(a >= b for a, b in zip(f[10:], f[11:])) and f[99] == pytest.approx(1 / 90)


def test_training_deterministic_resumable_and_learns(tmp_path):
    cfg = tiny()
    m1, r1 = R.train(cfg, progress=False)
    m2, _ = R.train(cfg, progress=False)
    for (k, a), b in zip(m1.state_dict().items(), m2.state_dict().values()):
        assert torch.equal(a, b), k
    ck = tmp_path / "c_state"
    R.train(cfg, ck, stop_after=3, progress=False)
    m3, r3 = R.train(cfg, ck, progress=False)
    for (k, a), b in zip(m1.state_dict().items(), m3.state_dict().values()):
        assert torch.allclose(a, b, atol=1e-6), k
    assert [e["step"] for e in r3["log"]] == [3, 6] and r3["steps"] == 6
    with pytest.raises(ValueError, match="checkpoint"):
        R.train(tiny(lr=1e-2), ck, progress=False)
    # the loss falls with enough steps (tiny model, few values)
    c = tiny(steps=80, eval_every=80, lr=3e-3)
    sets = R.eval_sets(c)
    m, rec = R.train(c, sets=sets, progress=False)
    start = R.batch_loss(R.DualEncoder(c), c, *_batch(c)).item()
    assert rec["log"][-1]["loss"] < start - 0.5
    ev = R.evaluate(m, c, sets)
    assert set(ev) == {"seen_binding", "unseen_binding", "seen_paper", "unseen_paper", "unseen_concepts"}
    by = R.binding_by_swap_split(m, c, sets["unseen_binding"])
    assert by.scenes.sum() == len(sets["unseen_binding"]) and list(by.index) == [0, 1, 2]
    assert np.isclose((by.scenes * by.binding.fillna(0)).sum() / by.scenes.sum(), ev["unseen_binding"])
    R.save(m, rec, tmp_path / "m")
    m4, rec4 = R.load(tmp_path / "m")
    assert R.evaluate(m4, c, sets) == ev and rec4["log"] == rec["log"]


def _batch(c):
    rng = np.random.default_rng(9)
    s = R.sample_scenes(c, R.split_objects(c)[0], c.batch, rng)
    return s, R.batch_queries(c, s, rng)


def test_full_mode_command_runs_tiny(tmp_path, monkeypatch):
    """The released recipe's command (COMPBOOK_MODE=full: 6 x 256, d_ff 2048) runs end to end, tiny."""
    monkeypatch.setenv("COMPBOOK_MODE", "full")
    from compbook.binding.__main__ import main
    main(["recipe", "--coverages", "0.5", "--values", "6", "--steps", "2", "--batch", "16", "--eval-scenes", "20",
            "--out", str(tmp_path), "--checkpoint-dir", str(tmp_path)])
    model, rec = R.load(tmp_path / "recipe_C2V6_cov0.5_s0")
    c = rec["config"]
    assert (c["n_layers"], c["d_model"], c["d_ff"], c["lr"]) == (6, 256, 2048, 3e-5) and rec["mode"] == "full"
    assert rec["steps"] == 2 and len(rec["log"]) == 1 and set(rec["floors"]) >= {"swap_chance_sim"}
    assert "--steps 2" in rec["made_by"]
    recs = R.load_records(tmp_path, n_values=6)
    table = R.coverage_table(recs)
    assert list(table.index) == [0.5]
    row = table.iloc[0]
    assert row.unseen_binding_lo <= row.unseen_binding <= row.unseen_binding_hi


def test_verdict_rule():
    rec = {"config": {"eval_scenes": 2000}, "floors": {"swap_chance_sim": 1 / 6},
           "final": {"seen_binding": 0.95, "unseen_binding": 0.20}}
    assert R.go_no_go(rec)[0]                      # 0.20 of 2000: Wilson low 0.18 > 1/6
    rec["final"]["unseen_binding"] = 0.17
    assert not R.go_no_go(rec)[0]
    rec["final"].update(seen_binding=0.89, unseen_binding=0.9)
    assert not R.go_no_go(rec)[0]
