"""Bad and hostile inputs to the shared modules ``compbook.scenes`` and ``compbook.book.sliders``.

As ``tests/test_bad_inputs.py``: each case is one call that must raise ``ValueError`` (never a ``TypeError``,
``IndexError``, ``MemoryError`` ..., never a silent wrong answer), within a second, before any work, leaving the
files the cases share byte-identical. Sizes that would exhaust memory are refused before anything is allocated
(:func:`compbook.checks.check_budget`). A hard alarm stops a case that hangs (a loop that never ends).
"""

import types

import numpy as np
import pytest
from refusal import assert_refused

from compbook import scenes as S
from compbook.book import sliders

SECONDS = 1.0
HANG = 5            # seconds after which a case counts as hung (the alarm)
_nan = float("nan")


@pytest.fixture(scope="module")
def c(tmp_path_factory):
    d = tmp_path_factory.mktemp("bad_scenes")
    ns = types.SimpleNamespace(dir=d)
    ns.space = S.clevr2d()
    ns.vocab = S.vocabulary(ns.space)
    ns.scene = S.render_scene(ns.space, (0, 1), res=32)
    (d / "keep.txt").write_text("a shared file the cases must not touch\n")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    ns.draw = lambda **kw: plt.figure(figsize=(1, 1))
    ns.frames = sliders.render_frames(ns.draw, {"a": [1, 2]}, dpi=10)
    return ns


CASES = {
    # -- pad_sequences ---------------------------------------------------------------------------------------
    "pad_sequences no sequences": lambda c: S.pad_sequences([], 0),
    "pad_sequences length=0": lambda c: S.pad_sequences([[1, 2]], 0, length=0),
    "pad_sequences length=-1": lambda c: S.pad_sequences([[1, 2]], 0, length=-1),
    "pad_sequences length=2.5": lambda c: S.pad_sequences([[1, 2]], 0, length=2.5),
    "pad_sequences pad_id='x'": lambda c: S.pad_sequences([[1, 2]], "x"),
    "pad_sequences ids 1.5": lambda c: S.pad_sequences([[1.5, 2]], 0),
    "pad_sequences a sequence a string": lambda c: S.pad_sequences(["ab"], 0),
    "pad_sequences length=10**9 (memory)": lambda c: S.pad_sequences([[1]] * 100, 0, length=10 ** 9),
    # -- ObjectSpace and spaces ------------------------------------------------------------------------------
    "ObjectSpace concepts a string": lambda c: S.ObjectSpace("ab", (("x",), ("y",))),
    "ObjectSpace values a string per concept": lambda c: S.ObjectSpace(("colour",), ("red",)),
    "object_values 2.5": lambda c: c.space.object_values(2.5),
    "object_values '3'": lambda c: c.space.object_values("3"),
    "object_values nan": lambda c: c.space.object_values(_nan),
    "object_values -1": lambda c: c.space.object_values(-1),
    "object_id a scalar": lambda c: c.space.object_id(5),
    "object_id fractional values": lambda c: c.space.object_id([0.5, 1]),
    "object_id three values for two concepts": lambda c: c.space.object_id([0, 1, 2]),
    "named 24 (outside 0..23)": lambda c: c.space.named(24),
    "value_of unknown concept": lambda c: c.space.value_of("texture", "red"),
    "value_of unknown value": lambda c: c.space.value_of("colour", "mauve"),
    "make_space colours a string": lambda c: S.make_space(colours="red"),
    "make_space no colours": lambda c: S.make_space(colours=()),
    "make_space shape 'blob'": lambda c: S.make_space(shapes=("square", "blob")),
    "make_space patterns without pattern_colours": lambda c: S.make_space(patterns=("core",)),
    "rich_space n_colours=2.5": lambda c: S.rich_space(n_colours=2.5),
    "rich_space n_shapes='3'": lambda c: S.rich_space(n_shapes="3"),
    "rich_space n_sizes=0": lambda c: S.rich_space(n_sizes=0),
    "rich_space n_patterns=99": lambda c: S.rich_space(n_patterns=99),
    # -- Vocabulary and captions -----------------------------------------------------------------------------
    "vocabulary not a space": lambda c: S.vocabulary("clevr2d"),
    "value_token value 99": lambda c: c.vocab.value_token("colour", 99),
    "value_token value -1": lambda c: c.vocab.value_token("colour", -1),
    "value_token value 1.5": lambda c: c.vocab.value_token("colour", 1.5),
    "concept_tokens unknown concept": lambda c: c.vocab.concept_tokens("size"),
    "encode not a string": lambda c: c.vocab.encode(5),
    "encode an empty caption": lambda c: c.vocab.encode(""),
    "encode unknown word": lambda c: c.vocab.encode("a mauve square"),
    "decode id 999": lambda c: c.vocab.decode([999]),
    "decode id -1": lambda c: c.vocab.decode([-1]),
    "decode id 1.5": lambda c: c.vocab.decode([1.5]),
    "Vocabulary.pad length=0": lambda c: c.vocab.pad([[1, 2, 3]], length=0),
    "object_phrase id 24": lambda c: S.object_phrase(c.space, 24),
    "object_phrase id 1.5": lambda c: S.object_phrase(c.space, 1.5),
    "caption no objects": lambda c: S.caption(c.space, []),
    "caption objects an int": lambda c: S.caption(c.space, 5),
    "caption_tokens objects an int": lambda c: S.caption_tokens(c.space, 5),
    "caption_tokens id 1.5": lambda c: S.caption_tokens(c.space, [1.5]),
    # -- patchify ----------------------------------------------------------------------------------------------
    "patchify image (8, 8)": lambda c: S.patchify(np.zeros((8, 8)), np.zeros((1, 8, 8), bool), 4),
    "patchify p=4.5": lambda c: S.patchify(np.zeros((8, 8, 3)), np.zeros((1, 8, 8), bool), 4.5),
    "patchify p=0": lambda c: S.patchify(np.zeros((8, 8, 3)), np.zeros((1, 8, 8), bool), 0),
    "patchify p=3 (8 px)": lambda c: S.patchify(np.zeros((8, 8, 3)), np.zeros((1, 8, 8), bool), 3),
    "patchify masks (1, 4, 4) for an 8 px image": lambda c: S.patchify(np.zeros((8, 8, 3)),
                                                                      np.zeros((1, 4, 4), bool), 4),
    "patchify NaN image": lambda c: S.patchify(np.full((8, 8, 3), _nan), np.zeros((1, 8, 8), bool), 4),
    "patchify image values 255": lambda c: S.patchify(np.full((8, 8, 3), 255.0), np.zeros((1, 8, 8), bool), 4),
    "patchify masks of floats 0.3": lambda c: S.patchify(np.zeros((8, 8, 3)), np.full((1, 8, 8), 0.3), 4),
    "Scene.patches p=5": lambda c: c.scene.patches(5),
    # -- rendering -----------------------------------------------------------------------------------------------
    "check_resolution res=64.5": lambda c: S.check_resolution(64.5, "pair"),
    "check_resolution res=True": lambda c: S.check_resolution(True, "pair"),
    "check_resolution layout='grid4'": lambda c: S.check_resolution(64, "grid4"),
    "check_resolution res=100000 (memory)": lambda c: S.check_resolution(100000, "pair"),
    "render_scene res=100000 (memory)": lambda c: S.render_scene(c.space, (0, 1), res=100000),
    "render_scene res=8 (objects too small)": lambda c: S.render_scene(c.space, (0, 1), res=8),
    "render_scene 3 objects, 2 slots": lambda c: S.render_scene(c.space, (0, 1, 2), res=32),
    "render_scene no objects": lambda c: S.render_scene(c.space, (), res=32),
    "render_scene object id 0.5": lambda c: S.render_scene(c.space, (0.5, 1), res=32),
    "render_scene object id 'a'": lambda c: S.render_scene(c.space, ("a", 1), res=32),
    "render_scene object id nan": lambda c: S.render_scene(c.space, (_nan, 1), res=32),
    "render_scene object id 24": lambda c: S.render_scene(c.space, (0, 24), res=32),
    "render_scene slots (0.7, 1)": lambda c: S.render_scene(c.space, (0, 1), res=32, slots=(0.7, 1)),
    "render_scene slots (1, 1)": lambda c: S.render_scene(c.space, (0, 1), res=32, slots=(1, 1)),
    "render_scene space a string": lambda c: S.render_scene("clevr2d", (0, 1), res=32),
    "render_images scenes (2,) not (N, k)": lambda c: S.render_images(c.space, [0, 1], res=32),
    "render_images no scenes": lambda c: S.render_images(c.space, np.zeros((0, 2), int), res=32),
    "render_images ids 0.5": lambda c: S.render_images(c.space, [[0.5, 1.0]], res=32),
    "render_images 10**7 scenes (memory)": lambda c: S.render_images(c.space, np.zeros((10 ** 7, 2), int), res=64),
    "render_images res=0": lambda c: S.render_images(c.space, [[0, 1]], res=0),
    "all_pairs no objects": lambda c: S.all_pairs([]),
    "all_pairs ids 0.5": lambda c: S.all_pairs([0.5, 1]),
    "all_pairs a (2, 2) array": lambda c: S.all_pairs([[0, 1], [2, 3]]),
    "all_pairs 10**5 objects (memory)": lambda c: S.all_pairs(np.arange(10 ** 5)),
    # -- sample_scenes -----------------------------------------------------------------------------------------
    "sample_scenes n_scenes=-1": lambda c: S.sample_scenes(range(24), -1, 2),
    "sample_scenes n_scenes=2.5": lambda c: S.sample_scenes(range(24), 2.5, 2),
    "sample_scenes n_scenes=10**7 (memory)": lambda c: S.sample_scenes(range(24), 10 ** 7, 2),
    "sample_scenes no objects": lambda c: S.sample_scenes([], 3, 2),
    "sample_scenes n_objects=(3,)": lambda c: S.sample_scenes(range(24), 3, (3,)),
    "sample_scenes n_objects=2.5": lambda c: S.sample_scenes(range(24), 3, 2.5),
    "sample_scenes n_objects=(3, 2)": lambda c: S.sample_scenes(range(24), 3, (3, 2)),
    "sample_scenes seed=0.5": lambda c: S.sample_scenes(range(24), 3, 2, seed=0.5),
    "sample_scenes object ids 0.5": lambda c: S.sample_scenes([0.5, 1.5], 3, 2),
    # -- sliders -------------------------------------------------------------------------------------------------
    "render_frames draw not callable": lambda c: sliders.render_frames("draw", {"a": [1]}),
    "render_frames no knobs": lambda c: sliders.render_frames(c.draw, {}),
    "render_frames knob values a string": lambda c: sliders.render_frames(c.draw, {"a": "123"}),
    "render_frames knob with repeated values": lambda c: sliders.render_frames(c.draw, {"a": [1, 1]}),
    "render_frames knob name 1": lambda c: sliders.render_frames(c.draw, {1: [1, 2]}),
    "render_frames knob name 'not an identifier'": lambda c: sliders.render_frames(c.draw, {"a b": [1]}),
    "render_frames knobs a list": lambda c: sliders.render_frames(c.draw, [("a", [1])]),
    "render_frames 65 frames": lambda c: sliders.render_frames(c.draw, {"a": list(range(65))}),
    "render_frames dpi=0": lambda c: sliders.render_frames(c.draw, {"a": [1]}, dpi=0),
    "render_frames dpi='80'": lambda c: sliders.render_frames(c.draw, {"a": [1]}, dpi="80"),
    "render_frames dpi=10**6 (memory)": lambda c: sliders.render_frames(c.draw, {"a": [1]}, dpi=10 ** 6),
    "render_frames draw returns None": lambda c: sliders.render_frames(lambda **k: None, {"a": [1]}),
    "frames_html 1 frame for 2 values": lambda c: sliders.frames_html(c.frames[:1], {"a": [1, 2]}),
    "frames_html frames a string": lambda c: sliders.frames_html("xy", {"a": [1, 2]}),
    "frames_html a frame that is not base64": lambda c: sliders.frames_html(['x"];alert(1);//', c.frames[1]],
                                                                           {"a": [1, 2]}),
    "frames_html frames of ints": lambda c: sliders.frames_html([1, 2], {"a": [1, 2]}),
    "frames_html start value 99": lambda c: sliders.frames_html(c.frames, {"a": [1, 2]}, start={"a": 99}),
    "frames_html start unknown knob": lambda c: sliders.frames_html(c.frames, {"a": [1, 2]}, start={"b": 1}),
    "frames_html start a string": lambda c: sliders.frames_html(c.frames, {"a": [1, 2]}, start="a"),
    "frame_slider start value 99": lambda c: sliders.frame_slider(c.draw, start={"a": 99}, a=[1, 2]),
    "frame_slider start a list": lambda c: sliders.frame_slider(c.draw, start=[1], a=[1, 2]),
    "frame_slider no knobs": lambda c: sliders.frame_slider(c.draw),
    "frame_slider dpi=-1": lambda c: sliders.frame_slider(c.draw, dpi=-1, a=[1, 2]),
    "frame_slider draw not callable": lambda c: sliders.frame_slider(5, a=[1, 2]),
}


@pytest.mark.parametrize("call", list(CASES.values()), ids=list(CASES))
def test_bad_input_raises_value_error_quickly(c, call, monkeypatch):
    monkeypatch.setenv("COMPBOOK_WIDGETS", "static")
    assert_refused(lambda: call(c), [c.dir], SECONDS, HANG)


def test_there_are_at_least_100_cases():
    assert len(CASES) >= 100


def test_good_inputs_still_work(c):
    """The other side: the calls the chapters make still give the same results."""
    assert S.pad_sequences([[1, 2], [3]], 0).tolist() == [[1, 2], [3, 0]]
    assert S.pad_sequences(np.array([[1, 2]]), 9, length=3).tolist() == [[1, 2, 9]]
    assert c.space.object_id(c.space.object_values(13)) == 13
    assert c.space.object_id(np.array([[0, 1], [7, 2]])).tolist() == [1, 23]
    assert c.space.object_values(np.int64(5)) == (1, 2)
    assert c.vocab.decode(c.vocab.encode("a red square")) == "a red square"
    img = S.render_images(c.space, np.array([[0, 1], [2, 3]]), res=32)
    assert img.shape == (2, 32, 32, 3) and np.array_equal(img[0], c.scene.image)
    assert S.all_pairs(np.arange(24)).shape == (576, 2)
    assert len(S.sample_scenes(np.arange(24), 4, (1, 3), seed=1)) == 4
    assert S.patchify(c.scene.image, c.scene.masks, 8).grid == (4, 4)
