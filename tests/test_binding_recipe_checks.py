"""Checks of the recipe's evaluation and training signal (compbook.binding.recipe.checks): a model
that binds exactly scores 1, a bag of concepts 0 (ties) or near chance (noise), the swaps are the released ones,
the end-of-scene output sees every scene token and no pad, the probes run on a recipe model."""

import numpy as np
import pytest
import torch

from compbook.binding.recipe.train import train_recipe
from compbook.binding.recipe.config import RecipeConfig
from compbook.binding.recipe.data import (
    batch_queries, binding_scenes, object_values, query_tokens, recipe_scene_tokens, split_objects, swap_negatives,
    swap_sets
)
from compbook.binding.recipe.evaluate import eval_sets, evaluate_recipe, floors, paper_metric, swap_binding
from compbook.binding.recipe.model import RecipeEncoder, save_recipe, stem_for
from compbook.binding.recipe import checks as K


def cfg(**kw):
    base = dict(n_values=6, d_model=16, n_heads=2, n_layers=2, d_ff=32, d_out=8, steps=6, batch=16,
                eval_every=3, eval_scenes=300, eval_batches=2, n_concept_queries=8, n_object_queries=8)
    base.update(kw)
    return RecipeConfig(**base)


def test_oracle_binds_exactly_and_bag_of_concepts_does_not():
    c = cfg()
    sets = eval_sets(c)
    exact = K.TokenOracle(c, "objects")
    for name in ("seen_binding", "unseen_binding"):
        assert swap_binding(exact, c, sets[name]).mean() == 1.0
        it = K.interaction(exact, c, sets[name])
        assert it["d_positive"] == 1.0 and it["d_mean"] == pytest.approx(np.sqrt(2), abs=1e-5)
    # the paper's metric: the exact model separates every scene of both splits
    assert paper_metric(exact, c, sets["unseen_batches"]).mean() == 1.0
    assert paper_metric(exact, c, sets["seen_batches"], "objects").mean() == 1.0
    # bag of concepts: the four candidates tie (D = 0 up to rounding); with noise it passes about 1 in 6
    bag = K.TokenOracle(c, "concepts")
    it = K.interaction(bag, c, sets["seen_binding"])
    assert abs(it["d_mean"]) < 1e-6 and it["d_sd"] < 1e-6
    big = cfg(n_values=30, eval_scenes=3000)
    noisy = K.TokenOracle(big, "concepts", noise=1e-3)
    sc = binding_scenes(big, np.arange(big.n_objects), 3000, np.random.default_rng(1))
    b = swap_binding(noisy, big, sc).mean()
    assert abs(b - 1 / 6) < 0.03
    # noise on the scene side is one additive vector per scene: below a random order
    shared = K.TokenOracle(big, "concepts", noise=1e-3, noise_on="scene")
    assert swap_binding(shared, big, sc).mean() < 1 / 6 - 0.05
    # the simulated bag of concepts of recipe_eval.floors: 0 with exact ties
    assert floors(c, sets)["boc_seen_binding"] == 0.0


def test_oracle_refuses_other_token_layouts():
    c = cfg()
    o = K.TokenOracle(c)
    good = recipe_scene_tokens(c, np.array([[3, 20], [7, -1]]))
    assert len(o.parse(good)[0]) == 2 and len(o.parse(good)[1]) == 1
    for bad in (good.flip(1), good.clone().fill_(c.pad)):
        with pytest.raises(ValueError, match="tokens"):
            o.parse(bad)
    swapped = good.clone()
    swapped[0, [1, 2]] = swapped[0, [2, 1]]          # concept 1's token in concept 0's place
    with pytest.raises(ValueError, match="malformed"):
        o.parse(swapped)
    with pytest.raises(ValueError, match="kind"):
        K.TokenOracle(c, "scenes")


def test_swap_negatives_swap_one_concept_between_the_two_objects():
    """The released swap: one concept of one object replaced by the other object's; the query side gets
    ``[soo, values, eoo, eos]`` of that object (parsed back by the oracle)."""
    c = cfg(n_values=7)
    rng = np.random.default_rng(0)
    s = binding_scenes(c, np.arange(c.n_objects), 400, rng)
    sw = swap_negatives(c, s, rng)
    va, vb, vx = (object_values(c, x) for x in (s[:, 0], s[:, 1], sw))
    one = ((vx == va).sum(1) == 1) & ((vx == vb).sum(1) == 1)   # one concept from each object
    assert one.all()
    # each swap is one of the two cross objects of swap_sets, and both occur
    cross = swap_sets(c, s)
    assert ((cross == sw[:, None]).any(1)).all()
    assert 0.4 < (cross[:, 0] == sw).mean() < 0.6
    parsed = K.TokenOracle(c).parse(query_tokens(c, sw[:5]))
    for objs, x in zip(parsed, vx[:5]):
        assert len(objs) == 1 and np.array_equal(objs[0] - np.arange(2) * c.n_values, x)
    # in training batches every swap of a two-object scene is a query, labelled absent from its own scene
    q = batch_queries(c, s, np.random.default_rng(3))
    col = {o: j for j, o in enumerate(q["object_queries"])}
    sw3 = swap_negatives(c, s, np.random.default_rng(3))   # the same draws as inside batch_queries?
    assert len(sw3) == len(s)
    for i, x in enumerate(swap_sets(c, s)):
        for o in x:
            if o in col:
                assert q["object_labels"][i, col[o]] == 0.0


def test_pooling_sees_every_scene_token_and_no_pad():
    c = cfg()
    torch.manual_seed(0)
    m = RecipeEncoder(c)
    tok = recipe_scene_tokens(c, np.array([[3, -1], [3, 20], [20, 3]]))
    g = K.pooling_sensitivity(m.scene, tok, c.pad)
    n_real = (tok != c.pad).sum(1).numpy()
    assert n_real.tolist() == [5, 9, 9]
    for row, n in zip(g, n_real):
        assert (row[:n] > 1e-6).all() and (row[n:] == 0).all()
    # the pooled position holds eos for one- and two-object scenes
    last = (tok != c.pad).sum(1) - 1
    assert (tok[torch.arange(3), last] == c.eos).all()
    # order matters (the encoder can tell [a, b] from [b, a]), train and eval modes agree
    m.train()
    z_train = m.scene(tok).detach()
    m.eval()
    with torch.no_grad():
        z_eval = m.scene(tok)
    assert torch.allclose(z_train, z_eval, atol=1e-5)
    assert (z_eval[1] - z_eval[2]).abs().max() > 1e-4


def test_interaction_of_an_additive_model_is_zero():
    """A slot-weighted bag of concepts (unequal weights) has D = 0 and fails swap-only binding on every
    scene: one swap always beats one present object."""
    c = cfg()

    class Weighted(K.TokenOracle):
        def _encode(self, tokens, noisy=False):
            rows = []
            for objs in self.parse(tokens):
                w = [1.0, 0.3] if len(objs) == 2 else [1.0]
                z = sum(wi * (self.table[int(v[0])] + 2.0 * self.table[int(v[1])]) for wi, v in zip(w, objs))
                rows.append(z)
            return torch.stack(rows)

    m = Weighted(c, "concepts")
    sc = binding_scenes(c, np.arange(c.n_objects), 200, np.random.default_rng(0))
    it = K.interaction(m, c, sc)
    assert abs(it["d_mean"]) < 1e-5 and it["binding"] == 0.0


def test_probe_fits_on_a_recipe_model():
    c = cfg(n_values=8, coverage=0.5)
    torch.manual_seed(0)
    m = RecipeEncoder(c)
    fits = K.recipe_probe_fits(m, c, n_fit=200, n_test=50)
    assert set(fits) == {"additive", "object_product", "global_product"}
    assert all(np.isfinite(v) for v in fits.values())
    # an exactly additive embedding is fitted by the additive probe on held-out objects
    fits_bag = K.recipe_probe_fits(K.TokenOracle(c, "concepts"), c, n_fit=200, n_test=50)
    assert fits_bag["additive"] > 0.999
    with pytest.raises(ValueError, match="n_fit"):
        K.recipe_probe_fits(m, c, n_fit=1)


def test_binding_scenes_refuses_a_pool_without_a_binding_pair():
    c = cfg(n_values=5)
    with pytest.raises(ValueError, match="pool"):
        binding_scenes(c, np.array([3]), 10, np.random.default_rng(0))
    with pytest.raises(ValueError, match="pool"):
        binding_scenes(c, np.array([0, 5, 10]), 10, np.random.default_rng(0))   # one value of concept 0


def test_interaction_by_swap_split_against_interaction():
    c = cfg(n_values=8, coverage=0.5)
    torch.manual_seed(1)
    m = RecipeEncoder(c)
    sc = binding_scenes(c, split_objects(c)[0], 300, np.random.default_rng(2))
    t = K.interaction_by_swap_split(m, c, sc)
    it = K.interaction(m, c, sc)
    assert t.scenes.sum() == 300 and list(t.index) == [0, 1, 2]
    w = t.scenes / t.scenes.sum()
    assert np.isclose((w * t.D.fillna(0)).sum(), it["d_mean"], atol=1e-5)
    assert np.isclose((w * t.binding.fillna(0)).sum(), it["binding"])
    lg = K.recipe_swap_logits(m, c, sc)
    assert np.isclose((w * t.present.fillna(0)).sum(), lg[:, :2].mean(), atol=1e-5)


def test_stored_models_and_probe_records(tmp_path):
    c = cfg(n_values=8, coverage=0.5, eval_scenes=50)
    m, rec = train_recipe(c, progress=False)
    rec["final"] = evaluate_recipe(m, c, eval_sets(c))
    save_recipe(m, rec, stem_for(c, tmp_path, prefix="tiny"))
    (tmp_path / "other_C2V8_cov0.5_s0.json").write_text('{"format": "something else"}')
    assert K.stored_models(tmp_path) == ["tiny_C2V8_cov0.5_s0"]
    rows = K.probe_records(tmp_path, n_fit=100, n_test=30)
    assert len(rows) == 1 and rows[0]["n_objects"] == 64 and rows[0]["unseen_binding"] == rec["final"][
        "unseen_binding"]
    assert rows[0]["additive"] == pytest.approx(K.recipe_probe_fits(m, c, 100, 30)["additive"])
    assert K.probe_records(tmp_path, skip={"tiny_C2V8_cov0.5_s0"}) == []


def test_training_binds_a_tiny_object_space():
    """Check (d) as a test: the recipe's training (data, queries, swaps, loss, schedule) makes a small model
    bind every training object of |O| = 16 (12 seen); an untrained one does not. About 15 s on one core."""
    c = RecipeConfig(n_values=4, coverage=0.75, d_model=64, n_heads=4, n_layers=2, d_ff=256, d_out=32,
                       steps=1000, batch=64, lr=3e-3, eval_every=1000, eval_scenes=200, eval_batches=2)
    sets = eval_sets(c)
    torch.manual_seed(0)
    before = swap_binding(RecipeEncoder(c), c, sets["seen_binding"]).mean()
    m, _ = train_recipe(c, progress=False)
    after = K.interaction(m, c, sets["seen_binding"])
    assert before < 0.5 and after["binding"] == 1.0 and after["d_positive"] == 1.0


def test_the_notes_tables_of_one_model():
    """Part B's notes: the references line up with the model, the stacked split matches each split alone, the
    pooling table holds both scenes' tokens and gradients, and the floors table carries the model's readings."""
    from compbook.binding.recipe.evaluate import StoredEvaluation, floors_table, swap_split_table
    c = cfg(n_values=8, coverage=0.5)
    torch.manual_seed(1)
    m = RecipeEncoder(c)
    refs = K.reference_models(c, m)
    assert list(refs)[-1] == "go / no-go model" and len(K.reference_models(c)) == 3
    sets = eval_sets(c)
    t = K.interaction_table({"model": m}, c, sets["seen_binding"][:50])
    assert t.loc["model"].to_dict() == K.interaction(m, c, sets["seen_binding"][:50])
    both = K.interaction_by_scenes(m, c, sets)
    assert both.loc["unseen scenes"].equals(K.interaction_by_swap_split(m, c, sets["unseen_binding"]))
    table, swapped = K.pooling_table(m, c, sets["seen_binding"][0])
    assert list(table.index) == ["1 object", "gradient", "2 objects", "gradient"]
    assert table.loc["1 object"].iloc[0] == "soo" and len(swapped["swaps"]) == 2
    final, fl = evaluate_recipe(m, c, sets), floors(c, sets, n_sim=500)
    ev = StoredEvaluation(m, {}, c, sets, final, fl, False, "")
    ft = floors_table(ev)
    assert ft.loc["swap-only binding, seen", "model"] == final["seen_binding"]
    assert np.isnan(ft.loc["paper's metric, seen", "random order"])
    split = swap_split_table(ev)
    assert split["seen scenes", "scenes"].sum() == len(sets["seen_binding"])
