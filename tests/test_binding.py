"""Tests of compbook.binding: recognition on embeddings of known structure, planted additive structure,
batched training = one-at-a-time, determinism, checkpoints, bad input, the pretrained path on tiny models."""

import numpy as np
import pytest
import torch

import compbook.binding as B
from compbook import scenes as S
from compbook.binding import data as D
from compbook.binding import decomposition as dec
from compbook.binding.encoders import EncoderConfig
from compbook.binding.train import DualStack, DualTrainConfig, train_stack


def _toy(seed=0, d=512, multiplicative=False):
    """CLEVR-2D-shaped embeddings built by hand. Concept vectors orthonormal; an object query is the sum of its
    concept vectors (bag) or a random near-orthogonal code (multiplicative); a scene is the sum of its objects'
    concept vectors, plus (multiplicative) the objects' codes."""
    sp = S.clevr2d()
    rng = np.random.default_rng(seed)
    basis = np.linalg.qr(rng.normal(size=(d, d)))[0]
    concept = {"colour": basis[:8], "shape": basis[8:11]}
    vals = sp.object_values(np.arange(24))
    bag = concept["colour"][vals[:, 0]] + concept["shape"][vals[:, 1]]
    code = np.sign(rng.normal(size=(8, d)))[vals[:, 0]] * np.sign(rng.normal(size=(3, d)))[vals[:, 1]] / np.sqrt(d)
    objq = bag + 1.5 * code if multiplicative else bag
    pairs = S.all_pairs(range(24))
    scene = bag[pairs].sum(1) + (1.5 * code[pairs].sum(1) if multiplicative else 0)
    return sp, pairs, scene, objq, concept


@pytest.mark.parametrize("multiplicative", [False, True])
def test_recognition_bag_of_concepts_vs_multiplicative(multiplicative):
    sp, pairs, scene, objq, concept = _toy(multiplicative=multiplicative)
    vpos = {c: D.value_positives(sp, pairs, c) for c in concept}
    conc = B.concept_recognition(scene, concept, vpos)
    assert conc.all(), "concept recognition must pass when every scene holds its concept vectors"
    sq, _ = D.swap_only_positives(sp, pairs)
    keep = sq[:, 0] >= 0
    cand = np.zeros((len(pairs), 24), bool)
    for i in np.flatnonzero(keep):
        cand[i, sq[i]] = True
    pos = D.object_positives(sp, pairs)
    swap = B.recognise(scene[keep], objq, pos[keep], cand[keep])
    if multiplicative:
        assert swap.all() and B.recognise(scene, objq, pos).all()
    else:
        # a bag scores a present pair and its swapped pair with the same sum: binding must fail on every scene
        assert not swap.any(), "a bag-of-concepts embedding cannot separate present from swapped objects"


def test_recognition_against_a_naive_loop():
    rng = np.random.default_rng(1)
    z, q = rng.normal(size=(30, 8)), rng.normal(size=(7, 8))
    pos = rng.random((30, 7)) < 0.3
    pos[:, 0], pos[:, 1] = True, False
    got = B.recognise(z, q, pos)
    for s in range(30):
        cos = [z[s] @ q[j] / np.linalg.norm(z[s]) / np.linalg.norm(q[j]) for j in range(7)]
        want = min(cos[j] for j in range(7) if pos[s, j]) > max(cos[j] for j in range(7) if not pos[s, j])
        assert got[s] == want


@pytest.mark.parametrize("args, word", [
    ((np.ones((3, 4)), np.ones((2, 5)), np.ones((3, 2), bool)), "query_emb"),
    ((np.full((3, 4), np.nan), np.ones((2, 4)), np.ones((3, 2), bool)), "scene_emb"),
    ((np.ones((3, 4)), np.ones((2, 4)), np.ones((3, 3), bool)), "positives"),
    ((np.ones((3, 4)), np.ones((2, 4)), np.ones((3, 2), bool)), "positives"),
])
def test_recognition_bad_input(args, word):
    with pytest.raises(ValueError, match=word):
        B.recognise(*args)


def _planted(seed=0, d=32, interaction=0.0, noise=0.01):
    """Scenes = mu + per-slot object vectors; objects = sum of concept vectors (+ an interaction term)."""
    sp = S.clevr2d()
    rng = np.random.default_rng(seed)
    vals = sp.object_values(np.arange(24))
    w = [rng.normal(size=(2, 8, d)), rng.normal(size=(2, 3, d))]
    inter = interaction * rng.normal(size=(2, 24, d))
    obj = w[0][:, vals[:, 0]] + w[1][:, vals[:, 1]] + inter          # (2, 24, d)
    pairs = S.all_pairs(range(24))
    Z = 5 + obj[0, pairs[:, 0]] + obj[1, pairs[:, 1]] + noise * rng.normal(size=(len(pairs), d))
    return sp, pairs, vals, Z, obj


def test_decomposition_recovers_planted_additive_structure():
    sp, pairs, vals, Z, obj = _planted()
    u = dec.object_vectors(Z, pairs, 24, per_slot=True)
    rec = dec.level1(Z, pairs, u)
    assert dec.r2(Z, rec) > 0.99 and dec.retrieval(rec, Z) == 1.0
    rec2, W = dec.level2(u[0], vals)
    assert dec.r2(u[0], rec2) > 0.99, "objects planted as sums of concept vectors must be recovered"
    assert dec.edit_retrieval(Z, pairs, vals, u, sp.sizes) == 1.0
    # random object vectors have no concept structure: Level II must not fit them
    rnd = np.random.default_rng(5).normal(size=(24, 32))
    assert dec.r2(rnd, dec.level2(rnd, vals)[0]) < 0.4


def test_removal_ablation_on_planted_interactions():
    sp, pairs, vals, Z, obj = _planted(interaction=1.0, noise=0.05)
    table = dec.removal_ablation(Z, pairs, vals)
    assert table["none"]["concepts"] > 0.95 and table["none"]["objects"] > 0.95
    assert table["- concept part"]["concepts"] < 0.5, "removing the concept part must kill concept probes"
    assert table["- concept part"]["objects"] > 0.9, "the planted interaction keeps objects decodable"
    assert table["- object part"]["objects"] < 0.2
    assert table["- concept part (permuted ids)"]["concepts"] > 0.9, "the permuted control must stay high"


def test_mds3_keeps_cosine_geometry():
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.normal(size=(5, 10)) + 10 * np.eye(10)[0], rng.normal(size=(5, 10)) - 10 * np.eye(10)[0]])
    y = dec.mds3(x)
    assert y.shape == (10, 3)
    inside = np.linalg.norm(y[:5] - y[:5].mean(0), axis=1).mean()
    assert np.linalg.norm(y[:5].mean(0) - y[5:].mean(0)) > 3 * inside


def test_arrow_agreement_tells_a_sum_from_a_lookup():
    """A planted sum mu + a_left + b_right gives the same arrow beside every right object (cosine 1); one random
    vector per scene gives unrelated arrows (about 0); an interaction term sits between."""
    rng = np.random.default_rng(0)
    n, d = 6, 12
    a, b = rng.normal(size=(n, d)), rng.normal(size=(n, d))
    total = (3.0 + a[:, None] + b[None]).reshape(n * n, d)
    assert np.allclose(dec.arrow_agreement(total, n, 300), 1.0)
    assert abs(np.median(dec.arrow_agreement(rng.normal(size=(n * n, d)), n, 300))) < 0.2
    mixed = np.median(dec.arrow_agreement(total + 0.7 * rng.normal(size=(n * n, d)), n, 300))
    assert 0.2 < mixed < 0.95
    with pytest.raises(ValueError, match="ordered scenes"):
        dec.arrow_agreement(total[:-1], n)


def _tiny_setup():
    sp = S.clevr2d()
    pairs = S.all_pairs(range(24))[::9]
    data = D.build_pairs(sp, pairs, [0, 5], res=16 * 2, max_len=12)
    enc = EncoderConfig(res=32, channels=(4, 8, 8), d_out=16, vocab_size=len(S.vocabulary(sp)), max_len=12,
                        width=16, layers=1, heads=2)
    return sp, data, enc


def test_batched_loss_equals_each_model_alone():
    sp, data, enc = _tiny_setup()
    stack = DualStack(enc, 3, seed=1)
    x = data.images[:10].expand(3, -1, -1, -1, -1)
    ids = data.captions[:10, 0].expand(3, -1, -1)
    batched = stack.loss(x, ids, data.swap[:10].expand(3, -1, -1), data.swap_valid[:10].expand(3, -1))
    for m in range(3):
        alone = stack.model(m).loss(x[m], ids[m], data.swap[:10], data.swap_valid[:10])
        assert torch.allclose(batched[m], alone, atol=1e-5), f"model {m}: vmapped loss differs from its own"


def test_training_is_deterministic_lr_is_stepped_and_loss_falls(tmp_path):
    sp, data, enc = _tiny_setup()
    cfg = DualTrainConfig(steps=30, batch=16, warmup=5, eval_every=10)
    calls = []

    def val(stack):
        calls.append(1)
        return -np.array([float(stack.params["logit_scale"][m].detach()) for m in range(stack.n_models)])

    a = train_stack(enc, cfg, data, 2, val_score=val, progress=False)
    b = train_stack(enc, cfg, data, 2, val_score=val, progress=False)
    assert np.array_equal(a.losses, b.losses)
    assert all(torch.equal(a.stack.params[k], b.stack.params[k]) for k in a.stack.params)
    assert a.lrs[0] < a.lrs[4] and a.lrs[-1] < 0.1 * a.lrs[5], "the LR schedule was not stepped"
    assert a.losses[-5:].mean() < a.losses[:5].mean()
    assert len(calls) == 6 and a.val.shape == (3, 2)
    path = a.stack.save(tmp_path / "m", {"note": "test"})
    back = DualStack.load(path)
    imgs = data.images[:4]
    assert torch.allclose(back.encode_images(imgs), a.stack.encode_images(imgs))
    path.write_text(path.read_text().replace("compbook-dual-stack/1", "other"))
    with pytest.raises(ValueError, match="format"):
        DualStack.load(path)


def test_queries_and_swaps():
    sp = S.clevr2d()
    red, blue = sp.value_of("colour", "red"), sp.value_of("colour", "blue")
    a, b = sp.object_id((red, 0)), sp.object_id((blue, 2))
    sa, sb = D.swapped(sp, a, b, 0)
    assert sp.named(sa) == {"colour": "blue", "shape": "square"} and sp.named(sb)["colour"] == "red"
    assert D.scene_caption(sp, (a, D.EMPTY)) == "a red square"
    assert D.scene_caption(sp, (a, b), keep=("colour",)) == "a red and a blue"
    cq = D.concept_queries(sp)
    assert S.vocabulary(sp).decode(cq["shape"][1]) == "a triangle"
