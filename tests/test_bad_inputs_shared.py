"""Bad inputs to the shared modules (``compbook.checks``, ``images``, ``stats``, ``checkpoints``, ``scenes``,
``plots``, ``sliders``), one rule per kind of input (:mod:`compbook.checks`).

Each case is ``(call, name)``: the call must be refused by ``tests/refusal.py`` (a ``ValueError`` within a second,
no large allocation, files unchanged) and the message must name ``name``, the input at fault. The kinds: whole
numbers (2.7 is never truncated; 64.0 is 64), finite values (NaN in is refused, never NaN out), value ranges
(8-bit images where [0, 1] is expected), index ranges (no negative wrap, no index == size), sidecars against
their tensors (the differing field named), and memory estimates before an allocation (size and budget named).
The last tests check the other side: the good inputs next to each case still work.
"""

import json
import re
import types

import numpy as np
import pytest
import torch
from refusal import assert_refused

from compbook.results import checkpoints
from compbook import checks, scenes as S, stats
from compbook.book import images, plots, sliders
from compbook.cppn.data import store
from compbook.cppn.network import uniform_cppn

SECONDS = 1.0
HANG = 5
NAN, INF = float("nan"), float("inf")
#: An image 100,000 px on a side that takes no memory until something copies it.
HUGE_IMAGE = np.broadcast_to(np.zeros((1, 1, 3)), (100_000, 100_000, 3))


@pytest.fixture(scope="module")
def c(tmp_path_factory):
    d = tmp_path_factory.mktemp("bad_shared")
    ns = types.SimpleNamespace(dir=d, space=S.clevr2d())
    ns.img = np.random.default_rng(0).random((16, 16, 3))
    ns.img255 = ns.img * 255.0
    ns.png = d / "img.png"
    from PIL import Image
    Image.fromarray(np.uint8(ns.img255)).save(ns.png)
    # checkpoints: one CPPN, one of another width, one of another colour, a plain checkpoint, edited copies
    store.save_cppn(uniform_cppn(2, 3), d / "m")
    store.save_cppn(uniform_cppn(2, 5), d / "wide")
    store.save_cppn(uniform_cppn(2, 3, color="gray"), d / "grey")
    store.save_cppn(uniform_cppn(3, 3), d / "deep")
    for name, other in (("m_wide", "wide"), ("m_grey", "grey"), ("m_deep", "deep")):
        (d / f"{name}.json").write_bytes((d / "m.json").read_bytes())
        (d / f"{name}.safetensors").write_bytes((d / f"{other}.safetensors").read_bytes())
    checkpoints.save(d / "p", {"w": torch.zeros(2, 3), "b": torch.zeros(3)}, {"config": {"width": 3}},
                     format="test/1")
    checkpoints.save(d / "q", {"w": torch.zeros(2, 4), "b": torch.zeros(4)}, {"config": {"width": 4}},
                     format="test/1")
    checkpoints.save(d / "r", {"weight": torch.zeros(2, 3), "b": torch.zeros(3)}, {"config": {"width": 3}},
                     format="test/1")
    for name, other in (("p_q", "q"), ("p_r", "r")):
        (d / f"{name}.json").write_bytes((d / "p.json").read_bytes())
        (d / f"{name}.safetensors").write_bytes((d / f"{other}.safetensors").read_bytes())
    side = json.loads((d / "p.json").read_text())
    side["config"]["width"] = 7
    (d / "p_edit.json").write_text(json.dumps(side))
    (d / "p_edit.safetensors").write_bytes((d / "p.safetensors").read_bytes())
    ns.frames = sliders.render_frames(lambda a: _fig(), {"a": [1, 2]}, dpi=10)
    ns.scene = S.render_scene(ns.space, (0, 1), res=32)
    return ns


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    import matplotlib.pyplot as plt
    plt.close("all")


def _fig():
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(1, 1))
    return fig


def _width(t):
    return {"config.width": int(t["w"].shape[1])}


CASES = {
    # -- compbook.checks: the rules themselves ---------------------------------------------------------------
    "integer 2.7 (never truncated)": (lambda c: checks.integer(2.7, "n_layers"), "n_layers"),
    "integer True": (lambda c: checks.integer(True, "width"), "width"),
    "integer nan": (lambda c: checks.integer(NAN, "res"), "res"),
    "integer '64'": (lambda c: checks.integer("64", "res"), "res"),
    "integer a 0-d float array 2.5": (lambda c: checks.integer(np.array(2.5), "steps"), "steps"),
    "finite NaN in a tensor": (lambda c: checks.finite(torch.tensor([1.0, NAN]), "acts"), "acts"),
    "finite inf in an array": (lambda c: checks.finite(np.array([INF]), "x"), "x"),
    "value_range above high": (lambda c: checks.value_range(np.array([0.5, 2.0]), "p", 0, 1), "p"),
    "unit_image 8-bit floats": (lambda c: checks.unit_image(c.img255, "target"), "target"),
    "unit_image uint8": (lambda c: checks.unit_image(np.uint8(c.img255), "target"), "target"),
    "index -1 (no wrap)": (lambda c: checks.index(-1, "latent", 8, "latents"), "latent"),
    "index == size (no spill)": (lambda c: checks.index(8, "latent", 8, "latents"), "latent"),
    "index 2.5": (lambda c: checks.index(2.5, "row", 8), "row"),
    "index array with 8 of 8": (lambda c: checks.index([0, 8], "ids", 8), "ids"),
    "index into nothing": (lambda c: checks.index(0, "row", 0), "row"),
    "fields unknown key": (lambda c: checks.fields({"lr": 1, "lrr": 2}, "config", ["lr"]), "lrr"),
    "fields missing key": (lambda c: checks.fields({}, "record", ["lr"], ["lr"]), "lr"),
    "sidecar_agrees another width": (lambda c: checks.sidecar_agrees({"config": {"d": 4}}, {"config.d": 8},
                                                                     "x.json"), "config.d"),
    "sidecar_agrees missing field": (lambda c: checks.sidecar_agrees({}, {"n_models": 3}, "x.json"), "n_models"),
    "allocation over the budget": (lambda c: checks.allocation((10 ** 6, 10 ** 6), "buffer"), "budget of 1,024 MiB"),
    "allocation of a fractional size": (lambda c: checks.allocation((2.7, 3), "buffer"), "buffer"),
    "allocation 10**400 (no OverflowError)": (lambda c: checks.allocation((10 ** 400,), "buffer"), "buffer"),
    "check_render_size res 10**400": (lambda c: checks.check_render_size(10 ** 400, 3, 4, "a render"), "res"),
    "check_budget 10**400 bytes": (lambda c: checks.check_budget(10 ** 400, "the buffers"), "the buffers"),
    "real 10**400 (no OverflowError)": (lambda c: checks.real(10 ** 400, "lr"), "lr"),
    "integers 1e19 (no int64 wrap-around)": (lambda c: checks.integers([1e19], "ids"), "ids"),
    "integers uint64 2**63 (no wrap-around)": (lambda c: checks.integers(np.array([2 ** 63], np.uint64), "ids"),
                                               "ids"),
    "finite NaN in an object array": (lambda c: checks.finite(np.array([1.0, NAN], dtype=object), "acts"), "acts"),
    "value_range an array of strings": (lambda c: checks.value_range(np.array(["a"]), "p", 0, 1), "p"),
    "bools a ragged list": (lambda c: checks.bools([[1], [1, 0]], "mask"), "mask"),
    "sequence a 0-d array": (lambda c: checks.sequence(np.array(3), "layers"), "layers"),
    "same_length an int": (lambda c: checks.same_length(5, [1], "scores", "labels"), "scores"),
    "torch_device 2**63": (lambda c: checks.torch_device(2 ** 63, "device"), "device"),
    "seed 2**64 (beyond torch's generators)": (lambda c: checks.seed(2 ** 64), "seed"),
    # -- compbook.book.images ---------------------------------------------------------------------------------------
    "to_square floats in [0, 255] (no silent / 255)": (lambda c: images.to_square(c.img255, 8), "image"),
    "to_square floats slightly above 1": (lambda c: images.to_square(c.img * 1.01, 8), "image"),
    "to_square a 100,000 px image (memory)": (lambda c: images.to_square(HUGE_IMAGE, 8), "100000"),
    "to_square res 100,000 (memory)": (lambda c: images.to_square(c.img, 100_000), "res"),
    "to_square bool image": (lambda c: images.to_square(np.zeros((4, 4, 3), bool), 4), "image"),
    "to_square res 2.7": (lambda c: images.to_square(c.img, 2.7), "res"),
    "resize res 100,000 (memory)": (lambda c: images.resize(c.img, 100_000), "res"),
    "resize 8-bit floats": (lambda c: images.resize(c.img255, 8), "image"),
    "load_image res 0 (no silent full size)": (lambda c: images.load_image(c.png, 0), "res"),
    "load_image res 2.7": (lambda c: images.load_image(c.png, 2.7), "res"),
    "load_image res 100,000 (memory)": (lambda c: images.load_image(c.png, 100_000), "res"),
    "psnr NaN": (lambda c: images.psnr(np.full((2, 2, 3), NAN), np.zeros((2, 2, 3))), "psnr"),
    "psnr 8-bit floats": (lambda c: images.psnr(c.img255, c.img255), "psnr"),
    "as_target 8-bit floats": (lambda c: images.as_target(c.img255), "target"),
    # -- compbook.stats ----------------------------------------------------------------------------------------
    "pooled_ci n 2.7 (never truncated)": (lambda c: stats.pooled_ci([0.5, 0.5], [2.7, 3]), "n"),
    "pooled_ci rate NaN (no NaN out)": (lambda c: stats.pooled_ci([NAN, 0.5], [3, 3]), "p"),
    "pooled_ci rate 1.5": (lambda c: stats.pooled_ci([1.5, 0.5], [3, 3]), "p"),
    "pooled_ci rates and counts of other lengths": (lambda c: stats.pooled_ci([0.5, 0.5], [3]), "n"),
    "pooled_ci count 0": (lambda c: stats.pooled_ci([0.5], [0]), "n"),
    "pooled_ci no networks": (lambda c: stats.pooled_ci([], []), "p"),
    "pooled_ci n_boot 10^9 (memory)": (lambda c: stats.pooled_ci([0.5] * 4, [3] * 4, n_boot=10 ** 9), "n_boot"),
    "pooled_ci seed 2.7": (lambda c: stats.pooled_ci([0.5], [3], seed=2.7), "seed"),
    "pooled_ci level 1 (no interval)": (lambda c: stats.pooled_ci([0.5], [3], level=1), "level"),
    "pooled_draws n_boot -1": (lambda c: stats.pooled_draws(np.array([0.5]), np.array([3]), -1,
                                                            np.random.default_rng(0)), "n_boot"),
    "mean_ci n_boot 0": (lambda c: stats.mean_ci([1.0, 2.0], n_boot=0), "n_boot"),
    "mean_ci n_boot 2.7": (lambda c: stats.mean_ci([1.0, 2.0], n_boot=2.7), "n_boot"),
    "mean_ci n_boot 10^9 (memory)": (lambda c: stats.mean_ci([1.0, 2.0], n_boot=10 ** 9), "n_boot"),
    "mean_ci seed -1": (lambda c: stats.mean_ci([1.0, 2.0], seed=-1), "seed"),
    "mean_ci strings": (lambda c: stats.mean_ci(["a", "b"]), "values"),
    "t_interval NaN (no NaN out)": (lambda c: stats.t_interval([1.0, NAN]), "values"),
    "t_interval level 1.5": (lambda c: stats.t_interval([1.0, 2.0], level=1.5), "level"),
    "t_interval strings": (lambda c: stats.t_interval(["a", "b"]), "values"),
    "paired_t NaN": (lambda c: stats.paired_t([1.0, 2.0], [NAN, 1.0]), "values"),
    "fmt a row without ci95": (lambda c: stats.fmt({"score": 0.5}), "row"),
    "fmt a string": (lambda c: stats.fmt("0.5"), "row"),
    "fmt digits -1": (lambda c: stats.fmt(0.5, digits=-1), "digits"),
    "fmt digits 2.7": (lambda c: stats.fmt(0.5, digits=2.7), "digits"),
    "fmt_pm NaN": (lambda c: stats.fmt_pm(NAN, 0.1), "mean"),
    "interval_of score 'a'": (lambda c: stats.interval_of({"score": "a", "ci95": [0, 1]}, "a"), "a"),
    "interval_of ci95 of three numbers": (lambda c: stats.interval_of({"score": 0.5, "ci95": [0, 1, 2]}, "b"),
                                          "ci95"),
    "interval_of ci95 None": (lambda c: stats.interval_of({"score": 0.5, "ci95": None}, "b"), "ci95"),
    "verdict a bool": (lambda c: stats.verdict(True, 0.5), "a"),
    "wilson z NaN": (lambda c: stats.wilson(3, 10, z=NAN), "z"),
    # -- compbook.results.checkpoints (say which field differs) --------------------------------------------------------
    "load_cppn tensors of another width": (lambda c: store.load_cppn(c.dir / "m_wide"), "activations"),
    "load_cppn tensors of another depth": (lambda c: store.load_cppn(c.dir / "m_deep"), "activations"),
    "load_cppn tensors of another output width": (lambda c: store.load_cppn(c.dir / "m_grey"), "color"),
    "load tensors of another width (recorded shapes)": (lambda c: checkpoints.load(c.dir / "p_q", format="test/1"),
                                                        "tensor 'b' is float32 of shape (4,)"),
    "load tensors of another width (facts)": (lambda c: checkpoints.load(c.dir / "p_q", format="test/1",
                                                                         facts=_width), "config.width"),
    "load a renamed tensor": (lambda c: checkpoints.load(c.dir / "p_r", format="test/1"), "weight"),
    "load an edited sidecar field": (lambda c: checkpoints.load(c.dir / "p_edit", format="test/1", facts=_width),
                                     "config.width"),
    "load a model of another shape (names)": (lambda c: checkpoints.load(
        c.dir / "p_q", format="test/1", names={"w": torch.zeros(2, 3), "b": torch.zeros(3)}), "tensor 'b'"),
    # -- compbook.scenes ---------------------------------------------------------------------------------------
    "caption id == n_objects (no spill)": (lambda c: S.caption(c.space, [0, 24]), "objects[1]"),
    "caption id -1 (no wrap)": (lambda c: S.caption(c.space, [-1]), "objects[0]"),
    "caption 10^6 objects": (lambda c: S.caption(c.space, [0] * 10 ** 6), "objects"),
    "caption_tokens 10^6 objects": (lambda c: S.caption_tokens(c.space, [0] * 10 ** 6), "objects"),
    "caption_tokens id 24": (lambda c: S.caption_tokens(c.space, [24]), "objects[0]"),
    "caption space a string": (lambda c: S.caption("clevr2d", [0]), "space"),
    "render_images 10^7 scenes (memory, before any copy)": (
        lambda c: S.render_images(c.space, np.zeros((10 ** 7, 2), int), res=64), "render_images"),
    "render_images 10^9 scenes (memory)": (
        lambda c: S.render_images(c.space, np.broadcast_to(np.zeros((1, 2), int), (10 ** 9, 2)), res=32),
        "render_images"),
    "render_images id 24 (no spill)": (lambda c: S.render_images(c.space, [[0, 24]], res=32), "scenes"),
    "render_scene res 64.5": (lambda c: S.render_scene(c.space, (0, 1), res=64.5), "resolution"),
    "render_scene res nan": (lambda c: S.render_scene(c.space, (0, 1), res=NAN), "resolution"),
    "sample_scenes 10^9 objects per scene (memory)": (lambda c: S.sample_scenes(range(24), 1, 10 ** 9),
                                                      "sample_scenes"),
    "sample_scenes 10^9 scenes (memory)": (lambda c: S.sample_scenes(range(24), 10 ** 9, 2), "sample_scenes"),
    "pad_sequences length 10^9 (memory)": (
        lambda c: S.pad_sequences([[1]] * 10, 0, length=10 ** 9), "length"),
    "pad_sequences pad_id 2.7": (lambda c: S.pad_sequences([[1]], 2.7), "pad_id"),
    "ObjectSpace.object_values id == n_objects": (lambda c: c.space.object_values(24), "object_id"),
    "ObjectSpace.named id -1": (lambda c: c.space.named(-1), "object_id"),
    "patchify p 4.5": (lambda c: c.scene.patches(4.5), "p"),
    # -- compbook.book.plots ----------------------------------------------------------------------------------------
    "show_images 8-bit floats (no silent clip to white)": (lambda c: plots.show_images([c.img255]), "images[0]"),
    "show_images NaN image": (lambda c: plots.show_images([np.full((4, 4, 3), NAN)]), "images[0]"),
    "show_images no images": (lambda c: plots.show_images([]), "images"),
    "show_images a 0-d array": (lambda c: plots.show_images(np.float64(0.5)), "images"),
    "show_images ncols 0": (lambda c: plots.show_images([c.img], ncols=0), "ncols"),
    "show_images ncols 2.7": (lambda c: plots.show_images([c.img, c.img], ncols=2.7), "ncols"),
    "show_images size NaN": (lambda c: plots.show_images([c.img], size=NAN), "size"),
    "show_images a (4, 4, 2) image": (lambda c: plots.show_images([np.zeros((4, 4, 2))]), "images[0]"),
    "show_images titles a string": (lambda c: plots.show_images([c.img], titles="a"), "titles"),
    "feature_map_grid no maps": (lambda c: plots.feature_map_grid([]), "maps"),
    "feature_map_grid max_per_layer 2.7": (lambda c: plots.feature_map_grid([torch.zeros(2, 4, 4)],
                                                                            max_per_layer=2.7), "max_per_layer"),
    "feature_map_grid a map of the wrong rank": (lambda c: plots.feature_map_grid([torch.zeros(4, 4)]), "maps[0]"),
    "feature_map_sample no layers": (lambda c: plots.feature_map_sample([torch.zeros(2, 4, 4)], []), "layers"),
    "feature_map_sample a layer past the last": (lambda c: plots.feature_map_sample([torch.zeros(2, 4, 4)], [1]),
                                                 "layers"),
    "feature_map_sample per_layer 0": (lambda c: plots.feature_map_sample([torch.zeros(2, 4, 4)], [0],
                                                                          per_layer=0), "per_layer"),
    "colouring_figure F of rank 1": (lambda c: plots.colouring_figure([(0, 1)], 2, [0, 1], np.ones(2)), "F"),
    "loss_curves a list": (lambda c: plots.loss_curves([1.0, 2.0]), "curves"),
    "loss_curves NaN losses": (lambda c: plots.loss_curves({"a": [1.0, NAN]}), "curves"),
    "slider_twin no values": (lambda c: plots.slider_twin(lambda v, ax: None, [], "a"), "values"),
    "slider_twin ncols 0": (lambda c: plots.slider_twin(lambda v, ax: None, [1], "a", ncols=0), "ncols"),
    "slider_twin draw not callable": (lambda c: plots.slider_twin("draw", [1], "a"), "draw"),
    # -- compbook.book.sliders --------------------------------------------------------------------------------------
    "render_frames dpi 80.5": (lambda c: sliders.render_frames(lambda a: _fig(), {"a": [1]}, dpi=80.5), "dpi"),
}


@pytest.mark.parametrize("case", list(CASES.values()), ids=list(CASES))
def test_bad_input_is_refused_naming_it(c, case, monkeypatch):
    monkeypatch.setenv("COMPBOOK_WIDGETS", "static")
    call, name = case
    err = assert_refused(lambda: call(c), [c.dir], SECONDS, HANG)
    assert name in str(err), f"the message does not name {name!r}: {err}"


def test_there_are_at_least_100_cases():
    assert len(CASES) >= 100


def test_a_slider_label_with_quotes_reads_back(c):
    """A '"' in a label no longer breaks the viewer's JSON (each label is JSON, HTML-escaped)."""
    import html
    labels = ['say "hi"', "it's", "a\\b", "</script>"]
    page = sliders.frames_html(c.frames[:1] * 4, {"a": labels})
    found = re.search(r'data-labels="([^"]*)"', page).group(1)
    assert json.loads(html.unescape(found)) == labels


def test_good_inputs_next_to_the_cases_still_work(c):
    assert checks.integer(64.0, "res") == 64 and checks.integer(np.int64(3), "n") == 3
    assert checks.integer(np.array(5), "n") == 5 and checks.integer(torch.tensor(5), "n") == 5
    assert checks.index(7, "latent", 8) == 7 and checks.index([0, 7], "ids", 8).tolist() == [0, 7]
    assert checks.unit_image(c.img, "image") is c.img
    assert checks.allocation((4, 5.0), "buffer") == (4, 5)
    assert S.check_resolution(64.0, "pair") == 64
    assert S.render_scene(c.space, (0, 1), res=32.0).image.shape == (32, 32, 3)
    assert images.to_square(np.uint8(c.img255), 8).shape == (8, 8, 3)
    assert images.to_square(c.img, 8.0).max() <= 1
    assert images.load_image(c.png, 8).shape == (8, 8, 3)
    assert images.load_image(c.png).shape == (16, 16, 3)
    assert 0 <= stats.pooled_ci([0.5, 0.7], [4, 6], n_boot=50)[0] <= 1
    assert stats.mean_ci([1.0, 2.0, 3.0], n_boot=50)["score"] == 2.0
    assert stats.fmt({"score": 0.5, "ci95": [0.4, 0.6]}) == "0.50 [0.40, 0.60]"
    assert store.load_cppn(c.dir / "m").widths == [3, 3]
    tensors, header = checkpoints.load(c.dir / "p", format="test/1", facts=_width)
    assert header["tensor_shapes"] == {"b": ["float32", [3]], "w": ["float32", [2, 3]]}
    assert S.caption(c.space, [0, 23]).startswith("a ")
    plots.show_images([c.img, c.img], ncols=2.0)
    plots.show_images(torch.as_tensor(np.stack([c.img, c.img])))     # a stacked (N, H, W, 3) tensor
    assert checks.sequence(np.zeros((3, 2)), "rows") and len(checks.sequence(torch.zeros(4, 2), "rows")) == 4
    plots.slider_twin(lambda v, ax: None, [1, 2], "a")
