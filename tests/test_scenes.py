"""Tests of compbook.scenes: exact masks, the released triangle, captions, determinism, bad input."""

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


def test_sample_scenes_is_deterministic_within_bounds():
    scs = S.sample_scenes(range(10), 20, (1, 3), seed=0)
    assert scs == S.sample_scenes(range(10), 20, (1, 3), seed=0)
    assert all(1 <= len(s) <= 3 and set(s) <= set(range(10)) for s in scs)
    assert scs != S.sample_scenes(range(10), 20, (1, 3), seed=1)


def test_rendering_is_deterministic():
    sp = S.rich_space()
    a = S.render_images(sp, [[1, 2, 3, 4000]], res=64, layout="grid2")
    S._stamp.cache_clear()
    b = S.render_images(sp, [[1, 2, 3, 4000]], res=64, layout="grid2")
    assert np.array_equal(a, b)


@pytest.mark.parametrize("call, word", [
    (lambda: S.make_space(colours=("red", "mauve")), "colours"),
    (lambda: S.make_space(shapes=("square", "blob")), "shapes"),
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


def _released_triangle(res=224, cx=70, cy=112):
    """The released CLEVR-2D triangle's pixels (fill and outline) at 224 px, rasterised from its measured
    geometry alone (a test on pixel centres, not the renderer's polygon): rows from 33 px above the object's
    centre to 33 px below it, each centred on the centre column boundary, 74 px wide (x -37 .. +36) at the base
    row, the width growing linearly from 2 px at the apex row (what 2,548 px in 67 such rows imply)."""
    rows, cols = np.mgrid[0:res, 0:res]
    width = 2 + 72 * (rows - (cy - 33)) / 66
    return (rows >= cy - 33) & (rows <= cy + 33) & (np.abs(cols + 0.5 - cx) <= width / 2)


def _iou(a, b):
    return (a & b).sum() / (a | b).sum()


def test_clevr2d_triangle_is_the_released_one():
    sp = S.clevr2d()
    ref = _released_triangle()
    assert 2530 <= ref.sum() <= 2560, ref.sum()                # the released renders: 2,548 px
    ys, xs = np.nonzero(ref)
    assert (ys.min(), ys.max(), xs.min(), xs.max()) == (112 - 33, 112 + 33, 70 - 37, 70 + 36)
    for colour in range(8):
        tri = sp.object_id((colour, sp.value_of("shape", "triangle")))
        mask = S.render_scene(sp, (tri,), res=224).masks[0]
        assert _iou(mask, ref) >= 0.9, _iou(mask, ref)
        assert abs(int(mask.sum()) - 2548) <= 0.02 * 2548, mask.sum()
        right = S.render_scene(sp, (0, tri), res=224).masks[1]    # the right slot: the same shape, 84 px on
        assert np.array_equal(right[:, 84:], mask[:, :-84])


def test_clevr2d_triangle_scales_with_the_resolution():
    sp = S.clevr2d()
    tri = sp.object_id((1, sp.value_of("shape", "triangle")))
    for res in (32, 56, 112):
        mask = S.render_scene(sp, (tri,), res=res).masks[0]
        # the released mask downsampled by majority over blocks of 224 / res pixels (224 = 7 * 32)
        f = 224 // res
        ref = _released_triangle().reshape(res, f, res, f).mean(axis=(1, 3)) >= 0.5
        assert _iou(mask, ref) >= 0.9, (res, _iou(mask, ref))


def test_squares_and_circles_span_about_65_px():
    sp = S.clevr2d()
    for shape in ("square", "circle"):
        mask = S.render_scene(sp, (sp.object_id((2, sp.value_of("shape", shape))),), res=224).masks[0]
        ys, xs = np.nonzero(mask)
        assert 63 <= xs.max() - xs.min() + 1 <= 66 and 63 <= ys.max() - ys.min() + 1 <= 66


def test_grid_layouts_keep_our_triangle():
    """Part C's scenes (grid layouts) draw the book's own triangle: apex at -r, base at 0.8 r, half-width r."""
    assert set(S.LAYOUT_TRIANGLE) == set(S.LAYOUTS) and set(S.LAYOUT_TRIANGLE.values()) <= set(S.TRIANGLES)
    sp = S.clevr2d()
    tri = sp.object_id((0, sp.value_of("shape", "triangle")))
    res, (cx, cy), half = 224, S.LAYOUTS["grid2"][0][0], S.LAYOUTS["grid2"][1] / 2
    cx, cy, r = cx * res, cy * res, half * res
    rows, cols = np.mgrid[0:res, 0:res]
    x, y = cols + 0.5 - cx, rows + 0.5 - cy
    t = (y + r) / (1.8 * r)
    ref = (t >= 0) & (t <= 1) & (np.abs(x) <= r * t)
    mask = S.render_scene(sp, (tri,), res=res, layout="grid2").masks[0]
    assert _iou(mask, ref) >= 0.97


def test_object_id_takes_value_names_one_per_concept():
    sp = S.clevr2d()
    red_square = sp.object_id(("red", "square"))
    assert sp.named(red_square) == {"colour": "red", "shape": "square"}
    assert red_square == sp.object_id((sp.value_of("colour", "red"), sp.value_of("shape", "square")))
    assert sp.object_id(("blue", "circle")) != red_square
    # a name too few or too many is refused by count, before any name is looked up
    with pytest.raises(ValueError, match="values=.*need 2 names, one per concept"):
        sp.object_id(("red",))
    with pytest.raises(ValueError, match="values=.*need 2 names, one per concept"):
        sp.object_id(("red", "square", "big"))
    with pytest.raises(ValueError, match="colour"):
        sp.object_id(("square", "red"))
