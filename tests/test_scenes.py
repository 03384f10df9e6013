"""Tests of compbook.scenes: exact masks, captions, splits, symbolic tokens, determinism, bad input."""

import numpy as np
import pytest

from compbook import scenes as S


def _naive_coverage(shape, half, cx, cy, res, s=S.SUPERSAMPLE):
    """Fraction of each pixel inside an axis-aligned square or a disc, counted sub-pixel by sub-pixel."""
    c = (np.arange(res * s) + 0.5) / s
    x, y = np.meshgrid(c - cx, c - cy)
    inside = np.maximum(abs(x), abs(y)) <= half if shape == "square" else x * x + y * y <= half * half
    return inside.reshape(res, s, res, s).mean(axis=(1, 3))


def test_clevr2d_is_the_papers_space():
    sp = S.clevr2d()
    assert sp.n_objects == 24 and sp.concepts == ("colour", "shape")
    assert S.all_pairs(range(24)).shape == (576, 2)
    assert S.COLOURS["purple"] == (129, 38, 192) and S.CANVAS == (245, 245, 245)
    assert S.rich_space().n_objects >= 10_000


@pytest.mark.parametrize("res", [224, 64, 48])
def test_masks_match_a_naive_rasterisation_and_carry_the_palette_colour(res):
    sp = S.clevr2d()
    objs = (sp.object_id((sp.value_of("colour", "red"), 0)), sp.object_id((sp.value_of("colour", "cyan"), 2)))
    sc = S.render_scene(sp, objs, res=res)
    assert sc.image.shape == (res, res, 3) and sc.image.dtype == np.float32
    assert sc.masks.shape == (2, res, res) and sc.masks.dtype == bool
    half = 32 / 224 * res
    for i, (shape, cx) in enumerate((("square", 70), ("circle", 154))):
        cov = _naive_coverage(shape, half, cx / 224 * res, 112 / 224 * res, res)
        assert np.array_equal(sc.masks[i], cov >= 0.5), f"mask {i} is not the half-covered pixels of the {shape}"
    assert not (sc.masks[0] & sc.masks[1]).any(), "masks overlap: they must partition the object pixels"
    # far from any object: exactly the canvas; deep inside an object: exactly its palette colour
    covered = sc.masks.any(0)
    far = ~np.asarray(S.ndimage.binary_dilation(covered, iterations=2))
    assert np.allclose(sc.image[far], np.array(S.CANVAS) / 255, atol=1e-6)
    for i, name in enumerate(("red", "cyan")):
        deep = S.ndimage.distance_transform_edt(sc.masks[i]) > S._outline_px(res) + 1.5
        assert deep.sum() > 20
        assert np.allclose(sc.image[deep], np.array(S.COLOURS[name]) / 255, atol=1e-6), \
            f"object {i}'s inner pixels are not its palette colour {name}"


def test_masks_partition_object_pixels_in_rich_grid_scenes():
    sp = S.rich_space()
    rng = np.random.default_rng(1)
    for n in (1, 2, 3, 4):
        sc = S.render_scene(sp, rng.integers(sp.n_objects, size=n), res=64, layout="grid2")
        assert sc.masks.shape[0] == n
        assert sc.masks.sum(0).max() <= 1, "masks overlap"
        # a pixel less than half covered differs from the canvas by less than half of (at most 0.96)
        differs = np.abs(sc.image - np.array(S.CANVAS) / 255).max(-1) > 0.49
        assert not (differs & ~sc.masks.any(0)).any(), "a mostly drawn pixel lies outside every mask"


def test_captions_and_tokens_match_the_objects():
    sp = S.rich_space()
    vocab = S.vocabulary(sp)
    rng = np.random.default_rng(2)
    objs = tuple(int(o) for o in rng.integers(sp.n_objects, size=3))
    sc = S.render_scene(sp, objs, res=64, layout="grid2")
    assert vocab.decode(sc.token_ids) == sc.caption
    assert np.array_equal(vocab.encode(sc.caption), sc.token_ids)
    for i, o in enumerate(objs):
        named = sp.named(o)
        ids = sc.token_ids[sc.token_object == i]
        for k, c in enumerate(sp.concepts):
            tok = sc.token_ids[(sc.token_object == i) & (sc.token_concept == k)]
            assert list(tok) == [vocab.value_token(c, sp.values[k].index(named[c]))], (i, c)
        assert len(ids) == len(sp.concepts)
    s2 = S.clevr2d()
    sc = S.render_scene(s2, (s2.object_id((1, 0)), s2.object_id((2, 2))), res=64)
    assert sc.caption == "a red square and a blue circle"


def test_patch_grid_labels_and_fractions():
    sp = S.clevr2d()
    sc = S.render_scene(sp, (0, 5), res=64)
    pg = sc.patches(8)
    assert pg.patches.shape == (64, 8 * 8 * 3) and pg.grid == (8, 8)
    assert np.array_equal(pg.patches[9].reshape(8, 8, 3), sc.image[8:16, 8:16])
    for j in range(64):
        r, c = divmod(j, 8)
        block = sc.masks[:, r * 8:(r + 1) * 8, c * 8:(c + 1) * 8].mean(axis=(1, 2))
        assert np.allclose(pg.fractions[j], block)
        full = np.append(block, 1 - block.sum())
        assert pg.labels[j] == (-1 if full.argmax() == 2 else full.argmax())
    assert set(pg.labels) == {-1, 0, 1}


def test_coverage_split_disjoint_and_deterministic():
    a = S.coverage_split(24, 0.5, seed=3)
    b = S.coverage_split(24, 0.5, seed=3)
    c = S.coverage_split(24, 0.5, seed=4)
    assert len(a.train_objects) == 12 and not set(a.train_objects) & set(a.test_objects)
    assert np.array_equal(a.train, b.train) and np.array_equal(a.test, b.test)
    assert not np.array_equal(a.train_objects, c.train_objects)
    assert np.isin(a.train, a.train_objects).all() and np.isin(a.val, a.train_objects).all()
    assert np.isin(a.test, a.test_objects).all(), "test scenes must use held-out objects only"
    assert not {tuple(s) for s in a.train} & {tuple(s) for s in a.val}, "validation scenes repeat train scenes"
    assert len(a.train) + len(a.val) == 144 and len(a.test) == 144
    big = S.coverage_split(12096, 0.3, seed=0, objects_per_scene=4, max_scenes=500)
    assert len(big.train_objects) == int(12096 * 0.3) and len({tuple(s) for s in big.test}) == 500
    assert np.isin(big.test, big.test_objects).all()


def test_symbolic_tokens():
    st = S.SymbolicTokens(3, 5)
    assert (st.soo, st.eoo, st.eos, st.pad, st.vocab_size) == (15, 16, 17, 18, 19)
    obj = st.space.object_id((1, 4, 0))
    assert list(st.encode([obj])) == [15, 1, 9, 10, 16, 17]
    batch = st.encode_batch([[obj], [obj, 0]])
    assert batch.shape == (2, 11) and (batch[0, 6:] == st.pad).all()
    scs = S.sample_scenes(range(10), 20, (1, 3), seed=0)
    assert scs == S.sample_scenes(range(10), 20, (1, 3), seed=0)
    assert all(1 <= len(s) <= 3 and set(s) <= set(range(10)) for s in scs)


def test_rendering_is_deterministic():
    sp = S.rich_space()
    a = S.render_images(sp, [[1, 2, 3, 4000]], res=64, layout="grid2")
    S._stamp.cache_clear()
    b = S.render_images(sp, [[1, 2, 3, 4000]], res=64, layout="grid2")
    assert np.array_equal(a, b)


@pytest.mark.parametrize("call, word", [
    (lambda: S.make_space(colours=("red", "mauve")), "colours"),
    (lambda: S.make_space(shapes=("square", "blob")), "shapes"),
    (lambda: S.coverage_split(24, 0.0), "coverage"),
    (lambda: S.coverage_split(24, 1.0), "coverage"),
    (lambda: S.render_scene(S.clevr2d(), (0, 1), res=16), "resolution"),
    (lambda: S.render_scene(S.clevr2d(), (0, 1, 2), res=64), "objects"),
    (lambda: S.render_scene(S.rich_space(), (0,) * 5, res=64, layout="grid2"), "objects"),
    (lambda: S.render_scene(S.clevr2d(), (0, 99), res=64), "objects"),
    (lambda: S.clevr2d().object_values(24), "object_id"),
    (lambda: S.vocabulary(S.clevr2d()).encode("a mauve square"), "text"),
])
def test_bad_input_names_the_argument(call, word):
    with pytest.raises(ValueError, match=word):
        call()
