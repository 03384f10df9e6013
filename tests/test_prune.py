import math

import pytest
import torch

from compbook.cppn import picbreeder, prune, train
from compbook.cppn.network import CPPN, uniform_cppn

LAYOUT = {"sin": 2, "gaussian": 2, "tanh": 2, "sigmoid": 2}
RES = 16


pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def target():
    return picbreeder.render(picbreeder.load_genome("skull", download=False), RES)


@pytest.fixture(scope="module")
def trained(target):
    return train.fit(uniform_cppn(3, 8, LAYOUT, seed=1), target, steps=60, lr=1e-2, progress=False).model


def total(model):
    return sum(o * i for o, i in model.shapes)


def removed_neurons(masks):
    """(layer, k) of hidden neurons whose whole incoming row and outgoing column are zero."""
    return {(l, k) for l in range(len(masks) - 1) for k in range(masks[l].shape[0])
            if not masks[l][k].any() and not masks[l + 1][:, k].any()}


# -- masks_from_scores and the unstructured methods ---------------------------------------------------------------
def test_sparsity_helpers():
    masks = [torch.tensor([[1.0, 0.0], [0.0, 0.0]]), torch.ones(1, 2)]
    assert prune.sparsity(masks) == pytest.approx(3 / 6)
    assert prune.layer_sparsity(masks) == pytest.approx([0.75, 0.0])


@pytest.mark.parametrize("scope", ["global", "layer", "row"])
@pytest.mark.parametrize("s", [0.0, 0.3, 0.77])
def test_masks_from_scores_matches_naive_sort(scope, s):
    g = torch.Generator().manual_seed(0)
    scores = [torch.rand(5, 4, generator=g), torch.rand(3, 5, generator=g)]
    masks = prune.masks_from_scores(scores, s, scope)
    if scope == "global":
        flat = sorted((float(v), l, idx) for l, sc in enumerate(scores) for idx, v in enumerate(sc.flatten()))
        k = math.floor(s * 35 + 0.5)
        cut = {(l, idx) for _, l, idx in flat[:k]}
        for l, m in enumerate(masks):
            assert [int(v) for v in m.flatten()] == [0 if (l, i) in cut else 1 for i in range(m.numel())]
    elif scope == "layer":
        for sc, m in zip(scores, masks):
            k = math.floor(s * sc.numel() + 0.5)
            assert int((m == 0).sum()) == k
            if 0 < k < sc.numel():       # every pruned score is below every kept one
                assert sc[m == 0].max() < sc[m == 1].min()
    else:
        for sc, m in zip(scores, masks):
            assert int((m == 0).sum()) == math.floor(s * sc.numel() + 0.5)     # cumulative rounding per layer
            per_row = (m == 0).sum(dim=1)
            assert per_row.max() - per_row.min() <= 1
            for row_s, row_m in zip(sc, m):
                if 0 < int((row_m == 0).sum()) < len(row_m):
                    assert row_s[row_m == 0].max() < row_s[row_m == 1].min()


def test_masks_from_scores_never_revives_a_pruned_weight():
    scores = [torch.arange(12.0).reshape(3, 4)]
    old = [torch.ones(3, 4)]
    old[0][2, 3] = 0                                   # the best-scoring weight is already pruned
    new = prune.masks_from_scores(scores, 0.25, "global", old)
    assert new[0][2, 3] == 0 and int((new[0] == 0).sum()) == 3
    denser = prune.masks_from_scores(scores, 0.0, "global", old)   # a lower target never revives it
    assert denser[0][2, 3] == 0


@pytest.mark.parametrize("s", [0.3, 0.6])
def test_unstructured_methods_reach_sparsity(trained, s):
    n = total(trained)
    for masks in (prune.magnitude_prune(trained, s), prune.magnitude_prune(trained, s, "layer"),
                  prune.random_prune(trained, s, seed=3), prune.wanda_prune(trained, s, res=RES)):
        assert [tuple(m.shape) for m in masks] == trained.shapes
        assert set(torch.cat([m.flatten() for m in masks]).tolist()) <= {0.0, 1.0}
        assert abs(prune.sparsity(masks) - s) <= len(masks) / n      # rounding: at most one weight per layer


def test_magnitude_keeps_the_largest_weights(trained):
    masks = prune.magnitude_prune(trained, 0.5)
    w = torch.cat([x.detach().abs().flatten() for x in trained.weights])
    m = torch.cat([x.flatten() for x in masks])
    assert w[m == 0].max() <= w[m == 1].min()


def test_wanda_scores_against_naive_loops(trained):
    from compbook.cppn.network import coordinate_grid
    coords = coordinate_grid(RES)
    inputs = [coords]
    h = coords
    for l in range(trained.depth):
        h = trained.hidden[l](h @ trained.effective_weights()[l].detach().T).detach()
        inputs.append(h)
    scores = prune.wanda_scores(trained, RES)
    for l, (w, x) in enumerate(zip([w.detach() for w in trained.effective_weights()], inputs)):
        o, i = 1, 2
        naive = abs(float(w[o, i])) * math.sqrt(sum(float(v) ** 2 for v in x[:, i]))
        assert scores[l][o, i].item() == pytest.approx(naive, rel=1e-4)


def test_random_prune_is_deterministic(trained):
    a, b = prune.random_prune(trained, 0.5, seed=7), prune.random_prune(trained, 0.5, seed=7)
    c = prune.random_prune(trained, 0.5, seed=8)
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    assert not all(torch.equal(x, y) for x, y in zip(a, c))


# -- masks are respected by training -------------------------------------------------------------------------------
def test_masked_weights_stay_exactly_zero_through_fit(trained, target):
    lt = prune.lottery_ticket(trained, target, 0.5, rounds=1, steps_per_round=5)
    sp = prune.similarity_prune(trained, target, threshold=0.5, rounds=1, retrain_steps=5)
    all_masks = {"magnitude": prune.magnitude_prune(trained, 0.5), "wanda": prune.wanda_prune(trained, 0.5, RES),
                 "random": prune.random_prune(trained, 0.5), "lottery": lt.masks, "sp": sp.masks,
                 "structured": prune.structured_prune(trained, target, n_neurons=4)}
    for name, masks in all_masks.items():
        assert prune.sparsity(masks) > 0.05, name
        model = trained.clone_with(masks=masks)
        out = train.fit(model, target, steps=15, lr=1e-2, progress=False).model
        changed = False
        for w0, w, m, m_out in zip(model.weights, out.weights, masks, out.masks):
            assert torch.equal(m_out, m), name
            assert torch.all(w.detach()[m == 0] == 0), name
            changed |= not torch.equal(w0[m == 1], w[m == 1])
        assert changed, f"{name}: training changed nothing"


# -- Lottery Ticket ------------------------------------------------------------------------------------------------
def test_lottery_ticket_rewinds_and_reaches_sparsity(target):
    init = uniform_cppn(3, 8, LAYOUT, seed=2)
    r = prune.lottery_ticket(init, target, 0.6, rounds=2, steps_per_round=10)
    assert abs(r.final_sparsity - 0.6) <= 1 / total(init)
    assert r.sparsity[0] == 0 and r.sparsity[1] == pytest.approx(1 - 0.4 ** 0.5, abs=1 / total(init))
    assert len(r.losses) == len(r.sparsity) == 3
    for w0, w, m in zip(init.weights, r.model.weights, r.masks):   # the ticket is the initial weights, masked
        assert torch.equal(w.detach(), w0.detach() * m)
    early = train.fit(init, target, 4, progress=False).model
    r4 = prune.lottery_ticket(init, target, 0.6, rounds=1, steps_per_round=3, rewind_step=4)
    for w0, w, m in zip(early.weights, r4.model.weights, r4.masks):
        assert torch.equal(w.detach(), w0.detach() * m)


# -- structured pruning ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", prune.TAYLOR_KINDS)
def test_structured_prune_removes_whole_neurons(trained, target, kind):
    masks = prune.structured_prune(trained, target, n_neurons=5, kind=kind)
    gone = removed_neurons(masks)
    assert len(gone) == 5
    rebuilt = prune.remove_neurons(trained.masks, sorted(gone))       # nothing but those rows and columns
    assert all(torch.equal(a, b) for a, b in zip(masks, rebuilt))
    by_sparsity = prune.structured_prune(trained, target, sparsity=0.4, kind=kind)
    per_neuron = 2 * max(trained.widths) + 4
    assert abs(prune.sparsity(by_sparsity) - 0.4) <= per_neuron / total(trained)
    assert all(a.any() for a in prune.alive_neurons(by_sparsity))


def test_taylor_importance_is_a_directional_derivative(target):
    m32 = uniform_cppn(2, 6, {"sin": 3, "tanh": 3}, seed=4)
    model = CPPN(m32.activations, weights=[w.detach().double() for w in m32.weights])
    t = torch.as_tensor(target, dtype=torch.float64)

    def loss(ws):
        with torch.no_grad():
            return float(((model.clone_with(weights=ws).render(RES) - t) ** 2).mean())

    l, k, eps = 0, 2, 1e-6
    base = [w.detach().clone() for w in model.weights]
    def scaled(layer, rows=None, cols=None, f=1.0):
        ws = [w.clone() for w in base]
        if rows is not None:
            ws[layer][rows] *= f
        else:
            ws[layer][:, cols] *= f
        return ws
    d_in = (loss(scaled(l, rows=k, f=1 + eps)) - loss(scaled(l, rows=k, f=1 - eps))) / (2 * eps)
    d_out = (loss(scaled(l + 1, cols=k, f=1 + eps)) - loss(scaled(l + 1, cols=k, f=1 - eps))) / (2 * eps)
    weight = prune.taylor_importance(model, t, "weight")[l][k].item()
    group = prune.taylor_importance(model, t, "group")[l][k].item()
    act = prune.taylor_importance(model, t, "activation")[l][k].item()
    assert weight == pytest.approx(abs(d_in) + abs(d_out), rel=1e-4, abs=1e-10)
    assert group == pytest.approx(abs(d_in + d_out), rel=1e-4, abs=1e-10)
    assert act == pytest.approx(abs(d_out), rel=1e-4, abs=1e-10)     # scaling the outputs = scaling a


# -- similarity-based pruning ---------------------------------------------------------------------------------------
def test_choose_removals_never_takes_both_of_a_pair():
    g = torch.Generator().manual_seed(0)
    for trial in range(200):
        n = 7
        sim = torch.rand(n, n, generator=g)
        sim = (sim + sim.T) / 2
        pairs = prune.redundant_pairs(sim, 0.6)
        removed = prune.choose_removals(pairs, g)
        gone = set(removed)
        assert len(gone) == len(removed)
        for i, j in pairs:
            assert not (i in gone and j in gone)
        for v in gone:                                    # each removed neuron keeps a redundant twin
            assert any((v in p) and (set(p) - {v}) - gone for p in pairs)
        assert bool(pairs) == bool(removed)


def test_redundant_pairs_order_and_alive():
    sim = torch.tensor([[1.0, 0.9, 0.2], [0.9, 1.0, 0.97], [0.2, 0.97, 1.0]])
    assert prune.redundant_pairs(sim, 0.5) == [(1, 2), (0, 1)]
    assert prune.redundant_pairs(sim, 0.5, torch.tensor([True, True, False])) == [(0, 1)]
    assert prune.redundant_pairs(sim, 0.97) == []                     # strictly above the threshold


def duplicated_model():
    """3 x 6 tanh CPPN whose layer-0 neurons 0 and 1 are exact copies (and 3 the negation of 2)."""
    m = uniform_cppn(3, 6, "tanh", seed=3)
    ws = [w.detach().clone() for w in m.weights]
    ws[0][1] = ws[0][0]
    ws[0][3] = -ws[0][2]
    return CPPN(m.activations, weights=ws)


def test_similarity_prune_removes_one_of_each_duplicate(target):
    model = duplicated_model()
    sims = prune.neuron_similarity(model, RES)
    assert sims[0][0, 1] == pytest.approx(1.0) and sims[0][2, 3] == pytest.approx(1.0)   # |cos|
    assert prune.neuron_similarity(model, RES, absolute=False)[0][2, 3] == pytest.approx(-1.0)
    for seed in range(6):
        r = prune.similarity_prune(model, target, threshold=0.999, rounds=1, retrain_steps=0, seed=seed)
        assert len(r.removed) == 1
        gone = set(r.removed[0])
        assert len(gone & {(0, 0), (0, 1)}) == 1 and len(gone & {(0, 2), (0, 3)}) == 1
        pairs = {(l, i, j) for l, s in enumerate(sims) for i, j in prune.redundant_pairs(s, 0.999)}
        assert not any((l, i) in gone and (l, j) in gone for l, i, j in pairs)
        assert removed_neurons(r.masks) == gone
        assert r.sparsity[1] == pytest.approx(prune.sparsity(r.masks))


def test_similarity_prune_removes_nothing_above_every_similarity(trained, target):
    top = max(float(s.triu(1).max()) for s in prune.neuron_similarity(trained, RES))
    r = prune.similarity_prune(trained, target, threshold=min(1.0, top + 1e-6), rounds=3, retrain_steps=5)
    assert r.removed == [] and r.sparsity == [0.0]
    assert all(torch.equal(a, b) for a, b in zip(r.model.weights, trained.weights))


def test_similarity_prune_rounds_retrain_and_determinism(trained, target):
    a = prune.similarity_prune(trained, target, threshold=0.6, rounds=3, retrain_steps=8, seed=1)
    b = prune.similarity_prune(trained, target, threshold=0.6, rounds=3, retrain_steps=8, seed=1)
    assert a.removed and all(a.removed)
    assert all(torch.equal(x, y) for x, y in zip(a.masks, b.masks)) and a.removed == b.removed
    assert a.sparsity == sorted(a.sparsity) and len(a.losses) == len(a.sparsity) == len(a.removed) + 1
    assert a.final_loss == pytest.approx(train.mse(a.model, target), rel=1e-4)
    assert removed_neurons(a.masks) == {n for r in a.removed for n in r}
    many = prune.similarity_prune_many([trained, trained], target, threshold=0.6, rounds=3, retrain_steps=8, seed=1)
    assert many[0].removed == a.removed
    assert all(torch.allclose(x, y, atol=1e-5) for x, y in zip(many[0].model.weights, a.model.weights))
    # one stream per model: seed=[1, 2] is seed=1's streams 1 and 2; the second model alone keeps its choices
    listed = prune.similarity_prune_many([trained, trained], target, threshold=0.6, rounds=3, retrain_steps=8,
                                         seed=[1, 2])
    assert [r.removed for r in listed] == [r.removed for r in many] and listed[1].config["seed"] == 2
    alone = prune.similarity_prune_many([trained], target, threshold=0.6, rounds=3, retrain_steps=8, seed=[2])
    assert alone[0].removed == listed[1].removed
    with pytest.raises(ValueError, match="seed"):
        prune.similarity_prune_many([trained, trained], target, seed=[1])
    with pytest.raises(ValueError, match=r"seed\[1\]"):
        prune.similarity_prune_many([trained, trained], target, seed=[1, 0.5])
    capped = prune.similarity_prune(trained, target, threshold=0.6, rounds=1, retrain_steps=0, pairs_per_layer=1)
    assert all(sum(1 for l, _ in capped.removed[0] if l == layer) <= 1 for layer in range(trained.depth))
    assert prune.similarity_prune(trained, target, rounds=0).sparsity == [0.0]


# -- bad inputs ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("bad", [-0.1, 1.0, 1.5, True, float("nan")])
def test_bad_sparsity_raises(trained, target, bad):
    for call in (lambda: prune.magnitude_prune(trained, bad), lambda: prune.wanda_prune(trained, bad),
                 lambda: prune.random_prune(trained, bad),
                 lambda: prune.structured_prune(trained, target, sparsity=bad),
                 lambda: prune.lottery_ticket(trained, target, bad, rounds=1, steps_per_round=1),
                 lambda: prune.masks_from_scores([torch.rand(2, 2)], bad)):
        with pytest.raises(ValueError, match="sparsity"):
            call()


def test_bad_arguments_raise(trained, target):
    for bad in (1.5, -1.01, float("nan")):
        with pytest.raises(ValueError, match="threshold"):
            prune.similarity_prune(trained, target, threshold=bad)
    with pytest.raises(ValueError, match="rounds"):
        prune.similarity_prune(trained, target, rounds=-1)
    with pytest.raises(ValueError, match="rounds"):
        prune.lottery_ticket(trained, target, 0.5, rounds=-1)
    with pytest.raises(ValueError, match="retrain_steps"):
        prune.similarity_prune(trained, target, retrain_steps=-5)
    with pytest.raises(ValueError, match="scope"):
        prune.magnitude_prune(trained, 0.5, scope="neuron")
    with pytest.raises(ValueError, match="kind"):
        prune.structured_prune(trained, target, n_neurons=1, kind="hessian")
    for bad in (None, "3", 2.5, float("nan")):
        with pytest.raises(ValueError, match="rounds"):
            prune.similarity_prune(trained, target, rounds=bad)
    with pytest.raises(ValueError, match="exactly one"):
        prune.structured_prune(trained, target)
    with pytest.raises(ValueError, match="n_neurons"):
        prune.structured_prune(trained, target, n_neurons=100)
    with pytest.raises(ValueError, match="neurons"):
        prune.remove_neurons(trained.masks, [(trained.depth, 0)])
    with pytest.raises(ValueError, match="target"):
        prune.similarity_prune(trained, target * 2)


# -- hardening -------------------------------------------------------------------------------------------------
def test_negative_threshold_on_absolute_similarity_is_refused(trained, target):
    """|cos| >= 0 > threshold made every pair "redundant"; it used to be accepted with absolute=True."""
    with pytest.raises(ValueError, match=r"threshold \(on \|cos\|, absolute=True\) must be a finite number >= 0"):
        prune.similarity_prune(trained, target, threshold=-0.5, rounds=1, retrain_steps=0)
    with pytest.raises(ValueError, match="threshold"):
        prune.similarity_prune_many([trained], target, threshold=-0.01, rounds=1, retrain_steps=0)
    r = prune.similarity_prune(trained, target, threshold=-0.5, rounds=1, retrain_steps=0, absolute=False)
    assert r.final_sparsity >= 0                       # signed cosine: a negative threshold is meaningful
