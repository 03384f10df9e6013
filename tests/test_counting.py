"""What the score counts: counting rules, delta policies, judges, checked against naive references."""

import numpy as np
import pytest
import torch

from compbook.cppn.audit import counting
from compbook.cppn import emc2, picbreeder
from compbook.cppn.network import CPPN, uniform_cppn


@pytest.fixture(scope="module")
def skull():
    return counting.picbreeder_network("skull")


def _naive_copies(model):
    """Copy weights by a naive rule checked on values *and* structure: a weight equal to 1 that is the only
    non-zero weight of a "cache" row, or any non-zero weight of the output layer."""
    out = set()
    for l, w in enumerate(model.effective_weights()):
        w = w.detach()
        for o in range(w.shape[0]):
            nz = (w[o] != 0).nonzero().flatten().tolist()
            if l == model.depth:
                out |= {(l, o, i) for i in nz}
            elif model.activations[l][o] == "cache" and len(nz) == 1 and float(w[o, nz[0]]) == 1.0:
                out.add((l, o, nz[0]))
    return out


@pytest.mark.parametrize("name", ["skull", "butterfly"])
def test_copy_weights_found_from_structure(name):
    net = counting.picbreeder_network(name)
    copies = {(l, o, i) for l, m in enumerate(net.copies) for o, i in m.nonzero().tolist()}
    assert copies == _naive_copies(net.model)
    links = counting.counted_weights(net, "links")
    allw = counting.counted_weights(net, "nonzero")
    assert set(links) | copies == set(allw) and not set(links) & copies
    assert len(allw) == net.model.n_weights()


def test_skull_counts(skull):
    assert len(counting.counted_weights(skull, "nonzero")) == 144
    assert len(counting.counted_weights(skull, "links")) == 57


def test_genome_link_check_refuses_another_model():
    g = picbreeder.load_genome("skull")
    m = picbreeder.layerize(g)
    with torch.no_grad():
        m.weights[-1][0, m.weights[-1][0].nonzero()[0, 0]] = 2.0   # a copy weight that is not 1
    with pytest.raises(ValueError, match="copy weights"):
        picbreeder.genome_link_weights(g, m)
    with pytest.raises(ValueError, match="non-copy weights"):
        picbreeder.genome_link_weights(picbreeder.load_genome("butterfly"), picbreeder.layerize(g))


def test_dense_network_rules_coincide():
    net = counting.CountedNetwork("dense", "twin", "skull", uniform_cppn(3, 5, {"cache": 3, "sin": 2}))
    assert counting.counted_weights(net, "links") == counting.counted_weights(net, "nonzero")
    assert len(counting.counted_weights(net, "nonzero")) == 4 * 5 + 2 * 25 + 5 * 3


def test_policies_against_naive(skull):
    ws = counting.counted_weights(skull, "links")
    eff = [w.detach() for w in skull.model.effective_weights()]
    w = np.array([float(eff[l][o, i]) for l, o, i in ws])
    assert torch.allclose(counting.deltas_for(skull, ws, "fixed"), torch.full((len(ws),), 0.5, dtype=torch.float64))
    assert np.allclose(counting.deltas_for(skull, ws, "relative").numpy(), 0.5 * np.abs(w))
    layer = np.array([l for l, _, _ in ws])
    rms = {l: np.sqrt(np.mean(w[layer == l] ** 2)) for l in set(layer)}
    assert np.allclose(counting.deltas_for(skull, ws, "layer").numpy(), [0.5 * rms[l] for l in layer])
    a = counting.deltas_for(skull, ws, "noise", seed=3)
    assert torch.equal(a, counting.deltas_for(skull, ws, "noise", seed=3))
    assert not torch.equal(a, counting.deltas_for(skull, ws, "noise", seed=4))
    z = a.numpy() / np.array([0.5 * rms[l] for l in layer])
    assert 0.6 < z.std() < 1.4


def test_sample_is_shared_and_seeded():
    ws = [(0, i, 0) for i in range(100)]
    s = counting.sample_weights(ws, 10, seed=1)
    assert s == sorted(s) and len(set(s)) == 10 and set(s) <= set(ws)
    assert s == counting.sample_weights(ws, 10, seed=1) != counting.sample_weights(ws, 10, seed=2)
    assert counting.sample_weights(ws, 500) == ws


class _Tolerance:
    """A judge: kept when the mean absolute pixel change from the reference is below ``tol``."""
    identity = "tolerance"

    def __init__(self, tol):
        self.tol = tol

    def __call__(self, images, concept, reference=None, questions=None):
        return (images - reference).abs().mean(dim=(1, 2, 3)) < self.tol


def test_score_against_naive_renders(skull):
    judges = {"tol": _Tolerance(0.05)}
    rows = counting.score_network(skull, judges, rules=["links"], policies=["relative"], res=24, sample=12)
    (row,) = rows
    ws = counting.sample_weights(counting.counted_weights(skull, "links"), 12, 0)
    ref = skull.model.render(24).detach()
    d = counting.deltas_for(skull, ws, "relative", scales=counting.layer_scales(
        skull, counting.counted_weights(skull, "links")))
    kept = 0
    for wt, dd in zip(ws, d.tolist()):
        img = emc2.perturbed(skull.model, wt, dd).render(24).detach()
        kept += int((img - ref).abs().mean() < 0.05)
    assert (row["k"], row["n"], row["n_counted"]) == (kept, 12, 57)
    assert row["unperturbed_kept"] is True


def test_table_intervals_and_pooling():
    rows = [{"network": f"n{j}", "kind": "fer", "target": "skull", "rule": "nonzero", "policy": "fixed",
             "judge": "ssim", "k": k, "n": 10, "n_counted": 10} for j, k in enumerate([3, 7])]
    t = counting.table({"rows": rows})
    assert ((t.lo <= t.score) & (t.score <= t.hi)).all()
    kind = counting.table({"rows": rows}, "kind")
    assert kind.score.iloc[0] == pytest.approx(0.5) and kind.networks.iloc[0] == 2
    assert "fer" in counting.wide({"rows": rows}).columns


@pytest.mark.parametrize("call", [lambda n: counting.counted_weights(n, "genome"),
                                  lambda n: counting.deltas_for(n, [], "double"),
                                  lambda n: counting.deltas_for(n, [], "fixed", scale=0),
                                  lambda n: counting.run([n], judges=["oracle"])])
def test_bad_arguments(skull, call):
    with pytest.raises(ValueError):
        call(skull)


def test_merge_checks_settings():
    a = {"rows": [1], "weight_stats": [1], "res": 64, "scale": 0.5, "seed": 0, "made_by": "a", "seconds": 1}
    b = dict(a, rows=[2], made_by="b")
    m = counting.merge(a, b)
    assert m["rows"] == [1, 2] and m["made_by"] == "a ; b" and m["seconds"] == 2
    with pytest.raises(ValueError, match="res differs"):
        counting.merge(a, dict(b, res=32))
