"""Bad inputs whose refusal must say which input is wrong, across the parts: each case is refused with a
``ValueError`` (``tests/refusal.py``: quickly, no large allocation, the fixture folder untouched) whose message
names the input, never a library's own words ("too many dimensions 'str'", "cannot reshape array of size 3",
"All-NaN slice encountered", "array is too big"), and never a silent answer: 0-255 images normalised to values in
the hundreds, value index -1 read as a table's last row, NaN in and NaN out. The ids name the input; the second
element of each case lists words the message must hold.
"""

import dataclasses
import time
import types

import numpy as np
import pytest
import torch
from refusal import assert_refused

from compbook.results import checkpoints
from compbook.binding import complexity, data as bdata, pretrained, probes, symbolic
from compbook.binding.runs import sweep
from compbook.binding.controlled import ControlledConfig
from compbook.cppn.audit import agreement
from compbook.cppn import emc2, frames, network, optim, twins
from compbook.cppn.runs import experiments
from compbook.cppn.network import CPPN
from compbook.sae import data as sdata

NAN = float("nan")


def _judge(answer):
    def judge(images, concept, *, reference=None, questions=None):
        return answer(len(images))
    return judge


def _raises(n):
    raise RuntimeError("out of memory on the judge's device")


@pytest.fixture(scope="module")
def c(tmp_path_factory):
    d = tmp_path_factory.mktemp("bad_named")
    values = np.zeros((6, 2, 2), int)
    values[:3, 0, 0], values[::2, 1, 1] = 1, 1
    cfg = ControlledConfig(n_values=3)
    record = {"config": dataclasses.asdict(cfg) | {"learning_rate": 1e-3}, "sweep": {}}
    checkpoints.save(d / "controlled_V3", {"w": torch.zeros(2)}, record, format=sweep.FORMAT)
    return types.SimpleNamespace(dir=d, values=values, model=CPPN([["sin", "tanh"]], color="hsv", seed=0),
                                 probe=probes.fit_probe("additive", values, np.random.default_rng(0).random((6, 3))),
                                 space=cfg.tokens.space, cfg=complexity.ComplexityConfig.for_mode())


CASES = {
    # -- silent answers
    "pixel_values of 8-bit images": (lambda c: pretrained.pixel_values(
        np.full((1, 8, 8, 3), 255, np.uint8), 8, pretrained.CLIP_MEAN, pretrained.CLIP_STD), ["images", "255"]),
    "pixel_values of floats in 0-255": (lambda c: pretrained.pixel_values(
        np.full((1, 8, 8, 3), 200.0), 8, pretrained.CLIP_MEAN, pretrained.CLIP_STD), ["images", "[0, 1]"]),
    "fit_binding_mlp value index -1": (lambda c: complexity.fit_binding_mlp(
        np.where(np.arange(4)[None, :, None, None] == 0, -1, 0) * np.ones((1, 4, 2, 2), int),
        np.zeros((1, 4, 3)), (3, 3), 4, c.cfg), ["values", "negative"]),
    "fit_binding_mlp value index past n_values": (lambda c: complexity.fit_binding_mlp(
        np.full((1, 4, 2, 2), 3), np.zeros((1, 4, 3)), (3, 3), 4, c.cfg), ["values", ">= 3"]),
    "fit_binding_mlp 3-D values": (lambda c: complexity.fit_binding_mlp(
        np.zeros((4, 2, 2), int), np.zeros((1, 4, 3)), (3, 3), 4, c.cfg), ["values", "(M, S, K, C)"]),
    "hsv_to_rgb all NaN": (lambda c: network.hsv_to_rgb(torch.full((4, 3), NAN)), ["hsv", "NaN"]),
    # -- the blow-up
    "SymbolicTokens 10**7 values": (lambda c: symbolic.SymbolicTokens(3, 10 ** 7).encode([0]), ["n_values"]),
    "SymbolicTokens ids past int64": (lambda c: symbolic.SymbolicTokens(40, 3), ["n_values", "int64"]),
    # -- unclear errors
    "compositional_score judge returning strings": (lambda c: emc2.compositional_score(
        c.model, _judge(lambda n: ["yes"] * n), "shape", res=8, progress=False), ["judge", "returned", "renders"]),
    "compositional_score judge returning floats": (lambda c: emc2.compositional_score(
        c.model, _judge(lambda n: np.ones(n)), "shape", res=8, progress=False), ["judge", "float64", "bool"]),
    "compositional_score judge raising": (lambda c: emc2.compositional_score(
        c.model, _judge(_raises), "shape", res=8, progress=False), ["judge", "RuntimeError", "renders 0.."]),
    "probe r2 of 2-D values": (lambda c: c.probe.r2(c.values[:, :, 0], np.zeros((6, 3))), ["values", "shape"]),
    "build_pairs odd count": (lambda c: bdata.build_pairs(c.space, [0, 1, 2], res=16), ["pairs", "(N, 2)"]),
    "build_pairs three per row": (lambda c: bdata.build_pairs(c.space, [[0, 1, 2]], res=16), ["pairs", "(N, 2)"]),
    "check_coverages a string": (lambda c: sweep.check_coverages("..."), ["coverages", "list"]),
    "check_coverages a string item": (lambda c: sweep.check_coverages(["0.5"]), ["coverages[0]"]),
    "load_sweep unknown config key": (lambda c: sweep.load_sweep(3, c.dir), ["config", "learning_rate"]),
    "make_scenes more objects than slots": (lambda c: sdata.make_scenes(2, n_objects=(50, 60)), ["n_objects"]),
    "make_scenes more objects than masks": (lambda c: sdata.make_scenes(2, n_objects=5, layout="grid3"),
                                            ["n_objects", "<= 4"]),
    "best_threshold one class": (lambda c: agreement.best_threshold(np.random.rand(5), np.ones(5, bool), [0.5]),
                                 ["labels", "both classes"]),
    "best_threshold no labels": (lambda c: agreement.best_threshold(np.zeros(0), np.zeros(0, bool), [0.5]),
                                 ["labels"]),
    "plateau_steps every 0": (lambda c: twins.plateau_steps(np.ones((10, 2)), every=0), ["every"]),
    "plateau_steps string losses": (lambda c: twins.plateau_steps(["a", "b"]), ["losses"]),
    "dense_and_sp no seeds": (lambda c: experiments.dense_and_sp("skull", 2, []), ["seeds"]),
    "dense_and_sp negative seed": (lambda c: experiments.dense_and_sp("skull", 2, [-1]), ["seeds[0]"]),
    "simplex_etf d 10**12": (lambda c: frames.simplex_etf(10 ** 12), ["d=1000000000000"]),
    "newton_schulz int64": (lambda c: optim.newton_schulz(torch.ones(3, 3, dtype=torch.int64)), ["G", "int64"]),
    "newton_schulz complex": (lambda c: optim.newton_schulz(torch.ones(3, 3, dtype=torch.complex64)), ["G"]),
    "hsv_to_rgb (N, 2)": (lambda c: network.hsv_to_rgb(torch.rand(4, 2)), ["hsv", "(..., 3)"]),
    "hsv_to_rgb int tensor": (lambda c: network.hsv_to_rgb(torch.ones(4, 3, dtype=torch.int64)), ["hsv"]),
    "hsv_to_rgb a list": (lambda c: network.hsv_to_rgb([[0.1, 0.2, 0.3]]), ["hsv", "list"]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_bad_input_is_refused_naming_it(c, name):
    call, words = CASES[name]
    e = assert_refused(lambda: call(c), [c.dir])
    missing = [w for w in words if w not in str(e)]
    assert not missing, f"the message does not say {missing}: {e}"


# -- the correct answers where a refusal is not the answer -------------------------------------------------------------
def test_newton_schulz_of_an_empty_matrix_is_empty():
    for shape in ((0, 3), (3, 0), (2, 0, 4)):
        out = optim.newton_schulz(torch.zeros(shape))
        assert out.shape == shape and out.dtype == torch.float32


def test_a_large_token_space_encodes_quickly():
    """The likely bug: the object space's 2 x 10^5 value names built for every scene encoded."""
    tokens = symbolic.SymbolicTokens(2, 10 ** 5)
    t0 = time.process_time()          # this process's CPU: a busy neighbour does not count
    ids = tokens.encode([10 ** 10 - 1])
    assert time.process_time() - t0 < 1.0
    assert ids.tolist() == [tokens.soo, 10 ** 5 - 1, 2 * 10 ** 5 - 1, tokens.eoo, tokens.eos]


def test_a_symbolic_scene_encodes_as_the_object_space_reads_it():
    tokens = symbolic.SymbolicTokens(3, 4)
    objects = [0, 17, 63]
    body = tokens.encode(objects)[:-1].reshape(3, 5)[:, 1:-1]
    assert (body - np.arange(3) * 4 == tokens.space.object_values(np.array(objects))).all()


def test_the_emc2_score_keeps_a_judges_own_refusal_with_a_note():
    """A cache's miss (a fallback depends on it) and a judge's ValueError keep their type, named."""
    from compbook.cppn.judges import CacheMiss

    def misses(images, concept, *, reference=None, questions=None):
        raise CacheMiss("no stored verdict")
    model = CPPN([["sin", "tanh"]], color="hsv", seed=0)
    with pytest.raises(CacheMiss) as e:
        emc2.compositional_score(model, misses, "shape", res=8, progress=False)
    assert any("renders 0.." in note for note in e.value.__notes__)
