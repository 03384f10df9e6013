"""compbook.binding.clevr: chapter 10's chance levels and swappable scenes, against a naive simulation;
chapter 12's held-out embeddings, against encoding the scenes directly."""

import numpy as np
import pytest

from compbook import scenes as S
from compbook.binding import clevr
from compbook.binding import data as D


def _passes(logits, positives, candidates=None):
    """Naive set separation over random logits (draws, Q): every present query above every absent one."""
    cand = np.ones_like(positives) if candidates is None else candidates
    pos, neg = logits[:, positives & cand], logits[:, ~positives & cand]
    return pos.min(1) > neg.max(1)


def test_chance_matches_random_orders():
    sp = S.clevr2d()
    red_sq, blue_ci = (sp.object_id((sp.value_of("colour", c), sp.value_of("shape", s)))
                       for c, s in (("red", "square"), ("blue", "circle")))
    red_ci = sp.object_id((sp.value_of("colour", "red"), sp.value_of("shape", "circle")))
    # one object twice, a shared colour, nothing shared
    for pair in ([red_sq, red_sq], [red_sq, red_ci], [red_sq, blue_ci]):
        pairs = np.array([pair])
        g = np.random.default_rng(0)
        draws = 200_000
        concept = np.ones(draws, bool)
        for c in ("colour", "shape"):
            concept &= _passes(g.random((draws, sp.sizes[sp.concept_index(c)])),
                               D.value_positives(sp, pairs, c)[0])
        obj = _passes(g.random((draws, sp.n_objects)), D.object_positives(sp, pairs)[0])
        want = clevr.chance(pairs)
        for got, p in ((concept.mean(), want["concept"]), (obj.mean(), want["object"])):
            assert abs(got - p) < 4 * np.sqrt(p * (1 - p) / draws) + 1e-4, (pair, got, p)
    q, pos = D.swap_only_positives(sp, np.array([[red_sq, blue_ci]]))
    swap = _passes(np.random.default_rng(1).random((200_000, 4)), pos[0])
    assert abs(swap.mean() - clevr.chance(np.array([[red_sq, blue_ci]]))["swap"]) < 0.005
    # a mean over scenes is the mean of the scenes' chances
    both = clevr.chance(np.array([[red_sq, red_sq], [red_sq, blue_ci]]))["object"]
    assert both == pytest.approx((1 / sp.n_objects + 1 / (sp.n_objects * (sp.n_objects - 1) / 2)) / 2)


def test_swappable_counts_scenes_that_differ_in_every_concept():
    sp = S.clevr2d()
    pairs = S.all_pairs(range(sp.n_objects))
    vals = sp.object_values(pairs)
    naive = np.array([(v[0] != v[1]).all() for v in vals])
    assert (clevr.swappable(pairs) == naive).all()
    assert naive.sum() == sp.n_objects * (sp.sizes[0] - 1) * (sp.sizes[1] - 1)


@pytest.mark.parametrize("pairs", [[[0, 99]], np.zeros((0, 2), int), [[0, 1, 2]], [[0.5, 1]]])
def test_chance_bad_input(pairs):
    with pytest.raises(ValueError, match="pairs"):
        clevr.chance(pairs)


def test_scene_embeddings_match_encoding_directly():
    from compbook.binding.train import DualStack
    sp = S.clevr2d()
    pairs = np.array([[0, 5], [5, 0], [3, 3]])
    emb = clevr.scene_embeddings(pairs)
    stack, setup, _ = clevr.load_or_train(False)
    images = S.render_images(sp, pairs, res=setup.res)
    captions = D.tokenize(sp, [D.scene_caption(sp, p) for p in pairs], clevr.MAX_LEN)
    random = DualStack(clevr.encoder_config(setup), n_models=1, seed=7)
    want = {"image": stack.encode_images(images)[0], "text": stack.encode_texts(captions)[0],
            "image, untrained": random.encode_images(images)[0]}
    assert set(emb) == set(want)
    for k, z in want.items():
        np.testing.assert_allclose(emb[k], z.numpy(), rtol=1e-5, atol=1e-6, err_msg=k)
    assert not np.allclose(emb["image"][0], emb["image"][1]), "a swapped scene must embed differently"


def test_phrase_embeddings_are_the_one_object_captions_in_object_order():
    sp = S.clevr2d()
    emb = clevr.phrase_embeddings()
    stack, _, _ = clevr.load_or_train(False)
    assert emb.shape == (sp.n_objects, stack.encode_texts(D.object_queries(sp, clevr.MAX_LEN)[:1])[0].shape[1])
    o = sp.n_objects - 1                          # the last object, captioned on its own
    want = stack.encode_texts(D.tokenize(sp, [D.scene_caption(sp, (o,))], clevr.MAX_LEN))[0].numpy()
    np.testing.assert_allclose(emb[o], want[0], rtol=1e-5, atol=1e-6)
    assert not np.allclose(emb[0], emb[1]), "two objects' phrases must embed differently"


@pytest.mark.parametrize("pairs", [[[0, 24]], [[0, 1, 2]], []])
def test_scene_embeddings_bad_input(pairs):
    with pytest.raises(ValueError, match="pairs"):
        clevr.scene_embeddings(pairs)


def test_held_out_embeddings_match_encoding_the_scenes_directly():
    stack, setup, _ = clevr.load_or_train(False)
    sets = clevr.scene_sets(setup)
    (v_train, z_train), (v_test, z_test) = clevr.held_out_embeddings(False, sets)
    space = S.clevr2d()
    for part, values, z in (("train", v_train, z_train), ("test", v_test, z_test)):
        pairs = np.asarray(sets[part])
        assert values.shape == (len(pairs), 2, len(space.concepts)) and z.shape[0] == len(pairs)
        head = stack.encode_images(S.render_images(space, pairs[:4], res=setup.res))[0].numpy()
        np.testing.assert_allclose(z[:4], head, rtol=1e-5, atol=1e-6)
    held = set(np.asarray(sets["test_objects"]).tolist())
    assert held and not held & set(np.asarray(sets["train"]).ravel().tolist()), \
        "a held-out object appears in a training scene"


def test_held_out_embeddings_use_the_sets_as_given():
    stack, setup, _ = clevr.load_or_train(False)
    space = S.clevr2d()
    given = {"train": np.array([[0, 5], [3, 3]]), "test": np.array([[7, 1], [2, 9], [4, 4]])}
    (v_train, z_train), (v_test, z_test) = clevr.held_out_embeddings(False, given)
    for pairs, values, z in ((given["train"], v_train, z_train), (given["test"], v_test, z_test)):
        np.testing.assert_array_equal(values, space.object_values(pairs))
        head = stack.encode_images(S.render_images(space, pairs, res=setup.res))[0].numpy()
        np.testing.assert_allclose(z, head, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="sets"):
        clevr.held_out_embeddings(False, {"train": given["train"]})
    with pytest.raises(ValueError, match="pairs"):
        clevr.held_out_embeddings(False, {"train": given["train"], "test": np.array([[0, 99]])})
