"""More bad inputs to Part A (``compbook.cppn``): the kinds that earlier files left out, found in every module.

Each case is ``(call, name)``: refused by ``tests/refusal.py`` (a ``ValueError`` within a second, no large
allocation, files unchanged) with a message naming ``name``. Kinds: whole numbers (2.7 is never truncated; 64.0
is 64), finite values and value ranges (an 8-bit target where [0, 1] is expected, NaN coordinates), index ranges
(a neuron or weight index equal to the size, a negative one), memory estimates (widths, depths, counts and
resolutions of 10^5-10^9 are refused before the allocation, naming the size and the budget), and the wrong
exception types (TypeError, IndexError, ZeroDivisionError, torch RuntimeError) that reached callers.
"""

import types

import numpy as np
import pytest
import torch
from refusal import assert_refused

from compbook.cppn.audit import counting
from compbook.cppn import depth, emc2, fer, frames, network as cppn, optim, panel, prune, volume_ratio
from compbook.cppn.runs import experiments
from compbook.cppn import train
from compbook.cppn.backprop import Backprop
from compbook.cppn.judges.base import SSIMJudge

SECONDS = 1.0
HANG = 5
NAN, INF = float("nan"), float("inf")
HUGE_TARGET = np.broadcast_to(np.zeros((1, 1, 3)), (100_000, 100_000, 3))


@pytest.fixture(scope="module")
def c(tmp_path_factory):
    d = tmp_path_factory.mktemp("bad_part_a_more")
    (d / "keep.txt").write_text("unchanged")
    ns = types.SimpleNamespace(dir=d, model=cppn.uniform_cppn(2, 4, seed=0))
    ns.target = np.random.default_rng(0).random((8, 8, 3))
    ns.target255 = ns.target * 255
    ns.sims = prune.neuron_similarity(ns.model, res=8)
    ns.dag = volume_ratio.LayeredDAG((np.ones((1, 2), bool), np.ones((1, 1), bool)))
    ns.net = counting.CountedNetwork("m", "twin", "skull", ns.model)
    ns.sweep = depth.DepthSweep([dict(depth=1, seed=0, loss=0.1, score=0.5, n_weights=3),
                                 dict(depth=2, seed=0, loss=0.1, score=0.4, n_weights=3)], {})
    return ns


CASES = {
    # -- network: sizes before allocation, whole numbers, finite inputs ------------------------------------------
    "uniform_cppn width 10^9 (memory)": (lambda c: cppn.uniform_cppn(2, 10 ** 9), "width"),
    "uniform_cppn depth 10^9 (memory)": (lambda c: cppn.uniform_cppn(10 ** 9, 4), "depth"),
    "uniform_cppn width 10^5 x depth 10 (memory)": (lambda c: cppn.uniform_cppn(10, 100_000), "weights"),
    "uniform_cppn width 2.7 (never truncated)": (lambda c: cppn.uniform_cppn(2, 2.7), "width"),
    "uniform_cppn seed 2.7": (lambda c: cppn.uniform_cppn(2, 3, seed=2.7), "seed"),
    "CPPN layers of width 10^5 (memory)": (lambda c: cppn.CPPN([["tanh"] * 100_000] * 30), "weights"),
    "layout_from_counts 10^9 neurons (memory)": (lambda c: cppn.layout_from_counts({"sin": 10 ** 9}), "sin"),
    "coordinate_grid res 100,000 (memory)": (lambda c: cppn.coordinate_grid(100_000), "res"),
    "forward coordinates of width 3": (lambda c: c.model(torch.zeros(10, 3)), "coords"),
    "forward NaN coordinates (no NaN out)": (lambda c: c.model(torch.full((10, 4), NAN)), "coords"),
    "forward coordinates a list": (lambda c: c.model([[0.0] * 4]), "coords"),
    "set_masks NaN": (lambda c: cppn.uniform_cppn(1, 2).set_masks([torch.full((2, 4), NAN), torch.ones(3, 2)]),
                      "masks[0]"),
    # -- emc2 ------------------------------------------------------------------------------------------------------
    "random_hidden_weights k NaN": (lambda c: emc2.random_hidden_weights(c.model, k=NAN), "k"),
    "random_hidden_weights k '2'": (lambda c: emc2.random_hidden_weights(c.model, k="2"), "k"),
    "random_hidden_weights seed 2.7 (never truncated)": (lambda c: emc2.random_hidden_weights(c.model, seed=2.7),
                                                         "seed"),
    "random_hidden_weights seed -1": (lambda c: emc2.random_hidden_weights(c.model, seed=-1), "seed"),
    "random_hidden_weights a string model": (lambda c: emc2.random_hidden_weights("m"), "model"),
    "verdict_examples k NaN": (lambda c: emc2.verdict_examples(c.model, None, None, k=NAN), "k"),
    "verdict_examples seed 2.7": (lambda c: emc2.verdict_examples(c.model, None, None, seed=2.7), "seed"),
    "verdict_examples result None": (lambda c: emc2.verdict_examples(c.model, None, None), "result"),
    "weight_sweep 10^6 values (memory)": (lambda c: emc2.weight_sweep(c.model, (0, 0, 0), np.zeros(10 ** 6)),
                                          "weight_sweep"),
    "render_perturbations 10^6 weights (memory)": (lambda c: emc2.render_perturbations(
        c.model, [(0, 0, 0)] * 10 ** 6, np.zeros(10 ** 6), res=64), "render_perturbations"),
    "render_perturbations weight index == size (no spill)": (lambda c: emc2.render_perturbations(
        c.model, [(0, 4, 0)], [0.5], res=8), "weight"),
    "render_perturbations weight index -1 (no wrap)": (lambda c: emc2.render_perturbations(
        c.model, [(0, -1, 0)], [0.5], res=8), "weight"),
    "important_weights k 2.7": (lambda c: emc2.important_weights(c.model, k=2.7), "k"),
    # -- prune -----------------------------------------------------------------------------------------------------
    "redundant_pairs a list": (lambda c: prune.redundant_pairs([[1.0, 0.0], [0.0, 1.0]], 0.5), "similarity"),
    "redundant_pairs NaN similarity (silently no pairs)": (lambda c: prune.redundant_pairs(
        torch.full((3, 3), NAN), 0.5), "similarity"),
    "redundant_pairs a (3, 2) similarity": (lambda c: prune.redundant_pairs(torch.zeros(3, 2), 0.5), "similarity"),
    "redundant_pairs alive of another length": (lambda c: prune.redundant_pairs(c.sims[0], 0.5,
                                                                                torch.ones(2, dtype=bool)), "alive"),
    "choose_removals max_pairs -1": (lambda c: prune.choose_removals([(0, 1)], torch.Generator(), -1), "max_pairs"),
    "choose_removals max_pairs 2.7": (lambda c: prune.choose_removals([(0, 1)], torch.Generator(), 2.7),
                                      "max_pairs"),
    "choose_removals generator a seed": (lambda c: prune.choose_removals([(0, 1)], 0), "generator"),
    "choose_removals pairs of strings": (lambda c: prune.choose_removals([("a", "b")], torch.Generator()),
                                         "pairs"),
    "choose_removals a pair (1, 1)": (lambda c: prune.choose_removals([(1, 1)], torch.Generator()), "pairs"),
    "alive_neurons masks that do not chain": (lambda c: prune.alive_neurons([torch.ones(2, 4), torch.ones(3, 5)]),
                                              "masks"),
    "sparsity no masks": (lambda c: prune.sparsity([]), "masks"),
    "sparsity NaN mask": (lambda c: prune.sparsity([torch.full((2, 2), NAN)]), "masks"),
    "remove_neurons neuron index == width (no spill)": (lambda c: prune.remove_neurons(c.model.masks, [(0, 4)]),
                                                        "neurons"),
    "taylor_importance res 100,000 (memory)": (lambda c: prune.taylor_importance(c.model, c.target,
                                                                                 res=100_000), "res"),
    "taylor_importance 8-bit target": (lambda c: prune.taylor_importance(c.model, c.target255), "target"),
    "input_norms res 100,000 (memory)": (lambda c: prune.input_norms(c.model, res=100_000), "res"),
    "wanda_prune res 100,000 (memory)": (lambda c: prune.wanda_prune(c.model, 0.5, res=100_000), "res"),
    "neuron_similarity res 100,000 (memory)": (lambda c: prune.neuron_similarity(c.model, res=100_000), "res"),
    "random_scores seed 2.7": (lambda c: prune.random_scores(c.model, seed=2.7), "seed"),
    "similarity_prune seed 2.7": (lambda c: prune.similarity_prune(c.model, c.target, seed=2.7), "seed"),
    # -- depth -----------------------------------------------------------------------------------------------------
    "fit_depth_line res 2.7 (never truncated)": (lambda c: depth.fit_depth_line([1, 2], [1, 2], res=2.7), "res"),
    "fit_depth_line ratios strings": (lambda c: depth.fit_depth_line(["a", "b"], [1, 2]), "ratios"),
    "fit_depth_line labels of another length": (lambda c: depth.fit_depth_line([1, 2], [1, 2], labels=["a"]),
                                                "labels"),
    "png_bytes level 2.5": (lambda c: depth.png_bytes(c.target, level=2.5), "level"),
    "png_compression_ratio 8-bit floats": (lambda c: depth.png_compression_ratio(c.target255), "image"),
    "mixed_layout no activation names": (lambda c: depth.mixed_layout(4, names=[]), "names"),
    "mixed_layout names a string": (lambda c: depth.mixed_layout(4, names="sin"), "names"),
    "mixed_layout width 10^9 (time, memory)": (lambda c: depth.mixed_layout(10 ** 9), "width"),
    "depth_sweep width 10^9 (memory)": (lambda c: depth.depth_sweep(c.target, [1], width=10 ** 9,
                                                                    progress=False), "width"),
    "depth_sweep steps 2.7": (lambda c: depth.depth_sweep(c.target, [1], steps=2.7, progress=False), "steps"),
    "peak_frequencies n_boot 10^9 (memory)": (lambda c: c.sweep.peak_frequencies(n_boot=10 ** 9), "n_boot"),
    "peak_frequencies n_boot 0": (lambda c: c.sweep.peak_frequencies(n_boot=0), "n_boot"),
    "peak_frequencies seed 2.7": (lambda c: c.sweep.peak_frequencies(seed=2.7), "seed"),
    "peak_frequencies key unknown": (lambda c: c.sweep.peak_frequencies(key="colour"), "key"),
    "DepthSweep.column key unknown": (lambda c: c.sweep.column("colour"), "key"),
    "DepthSweep.best depth 2.7": (lambda c: c.sweep.best(2.7), "depth"),
    # -- frames, volume_ratio ------------------------------------------------------------------------------------
    "minimise_coherence seed 2.7": (lambda c: frames.minimise_coherence(4, 2, steps=1, seed=2.7), "seed"),
    "minimise_coherence restarts 10^8 (memory)": (lambda c: frames.minimise_coherence(50, 10, steps=1,
                                                                                      restarts=10 ** 8), "restarts"),
    "orthonormal_frame seed 2.7": (lambda c: frames.orthonormal_frame(2, 3, seed=2.7), "seed"),
    "rho_monte_carlo chunk 0": (lambda c: volume_ratio.rho_monte_carlo(c.dag, 2, 2, n=10, chunk=0), "chunk"),
    "rho_monte_carlo chunk 2.7": (lambda c: volume_ratio.rho_monte_carlo(c.dag, 2, 2, n=10, chunk=2.7), "chunk"),
    "rho_monte_carlo seed 2.7": (lambda c: volume_ratio.rho_monte_carlo(c.dag, 2, 2, n=10, seed=2.7), "seed"),
    "rho_monte_carlo chunk 10^9 (memory)": (lambda c: volume_ratio.rho_monte_carlo(c.dag, 2, 2, n=10 ** 9,
                                                                             chunk=10 ** 9), "chunk"),
    "rho_exact chunk 0": (lambda c: volume_ratio.rho_exact(c.dag, 2, 2, chunk=0), "chunk"),
    "embed W 10^9 (memory)": (lambda c: volume_ratio.embed(c.dag, 10 ** 9, 2), "W"),
    "embed L 10^9 (memory)": (lambda c: volume_ratio.embed(c.dag, 2, 10 ** 9), "L"),
    "cooccurrence r 10^6 (memory)": (lambda c: frames.cooccurrence([[0, 1]], 10 ** 6), "r"),
    "local_orthogonal_frame seed 2.7": (lambda c: frames.local_orthogonal_frame([[0, 1]], 2, 2, seed=2.7), "seed"),
    "local_coherence group index == r (no spill)": (lambda c: frames.local_coherence(np.eye(2), [[0, 2]]),
                                                    "groups"),
    "local_coherence group index -1 (no wrap)": (lambda c: frames.local_coherence(np.eye(2), [[0, -1]]),
                                                 "groups"),
    "greedy_colouring a (2, 3) matrix": (lambda c: frames.greedy_colouring(np.zeros((2, 3), bool)), "A"),
    # -- panel -----------------------------------------------------------------------------------------------------
    "groups_from_counts k 2.7 (never truncated)": (lambda c: panel.groups_from_counts([[2.7, 5]]), "k_n[0]"),
    "groups_from_counts n NaN": (lambda c: panel.groups_from_counts([[1, NAN]]), "k_n[0]"),
    "groups_from_counts n 10^10 (memory)": (lambda c: panel.groups_from_counts([[1, 10 ** 10]]), "k_n"),
    "groups_from_counts a pair of strings": (lambda c: panel.groups_from_counts([["a", "b"]]), "k_n[0]"),
    "groups_from_counts an int": (lambda c: panel.groups_from_counts(5), "k_n"),
    "bootstrap_ci n_boot 10^9 (memory)": (lambda c: panel.bootstrap_ci([np.ones(3, bool)] * 3, n_boot=10 ** 9),
                                          "n_boot"),
    "summary n_boot 2.7": (lambda c: panel.summary([np.ones(3, bool)] * 2, n_boot=2.7), "n_boot"),
    # -- counting, fer ---------------------------------------------------------------------------------------------
    "sample_weights seed 2.7": (lambda c: counting.sample_weights([(0, 0, 0)] * 3, 1, seed=2.7), "seed"),
    "sample_weights seed -1": (lambda c: counting.sample_weights([(0, 0, 0)] * 3, 1, seed=-1), "seed"),
    "check_weights index == size (no spill)": (lambda c: counting.check_weights(c.net, [(0, 4, 0)]), "weights"),
    "parse_arch count 2.7": (lambda c: fer.parse_arch("2;sin:2.7"), "arch"),
    "parse_arch depth 10^9 (memory)": (lambda c: fer.parse_arch("1000000000;sin:2"), "arch"),
    # -- train, backprop, optim ------------------------------------------------------------------------------------
    "fit a 100,000 px target (memory)": (lambda c: train.fit(c.model, HUGE_TARGET, 1, progress=False), "target"),
    "fit steps 2.7": (lambda c: train.fit(c.model, c.target, 2.7, progress=False), "steps"),
    "fit_many check_every 0": (lambda c: train.fit_many([c.model], c.target, 1, progress=False, check_every=0,
                                                        stop=lambda l: False), "check_every"),
    "fit_many stop not callable": (lambda c: train.fit_many([c.model], c.target, 1, progress=False, stop=5), "stop"),
    "mse 8-bit target": (lambda c: train.mse(c.model, c.target255), "target"),
    "Backprop 8-bit target (silently trains on it)": (lambda c: Backprop(c.model, torch.full((8, 8, 3), 255.0)),
                                                      "target"),
    "Backprop NaN target": (lambda c: Backprop(c.model, torch.full((8, 8, 3), NAN)), "target"),
    "Backprop group_bytes 2.7": (lambda c: Backprop(c.model, torch.zeros(8, 8, 3), group_bytes=2.7), "group_bytes"),
    "Backprop group_bytes 0": (lambda c: Backprop(c.model, torch.zeros(8, 8, 3), group_bytes=0), "group_bytes"),
    "Backprop a 10^4 px target (memory)": (lambda c: Backprop(c.model, torch.zeros(1, 1, 3).expand(
        10_000, 10_000, 3)), "target"),
    "newton_schulz G a list": (lambda c: optim.newton_schulz([[1.0]]), "G"),
    "newton_schulz NaN": (lambda c: optim.newton_schulz(torch.full((2, 2), NAN)), "G"),
    "newton_schulz coefficients NaN": (lambda c: optim.newton_schulz(torch.eye(2), coefficients=(NAN, 1, 1)),
                                       "coefficients"),
    "singular_value_map steps -1": (lambda c: optim.singular_value_map(torch.ones(2), steps=-1), "steps"),
    "singular_value_map steps 2.7": (lambda c: optim.singular_value_map(torch.ones(2), steps=2.7), "steps"),
    "Muon eps NaN": (lambda c: optim.Muon([torch.nn.Parameter(torch.eye(2))], eps=NAN), "eps"),
    "Muon nesterov 'no'": (lambda c: optim.Muon([torch.nn.Parameter(torch.eye(2))], nesterov="no"), "nesterov"),
    "against_torch_muon steps -1": (lambda c: optim.against_torch_muon(steps=-1), "steps"),
    # -- experiments, judges ---------------------------------------------------------------------------------------
    "half_mse 8-bit target": (lambda c: experiments.half_mse(c.model, np.full((8, 8, 3), 255.0), 8), "target"),
    "selective_fraction res 2.7": (lambda c: experiments.selective_fraction(c.model, 2.7), "res"),
    "finite_mean a string": (lambda c: experiments.finite_mean("abc"), "x"),
    "SSIMJudge.scores images smaller than the window": (lambda c: SSIMJudge().scores(
        torch.zeros(1, 4, 4, 3), torch.zeros(4, 4, 3)), "SSIM needs"),
}


@pytest.mark.parametrize("case", list(CASES.values()), ids=list(CASES))
def test_bad_input_is_refused_naming_it(c, case):
    call, name = case
    err = assert_refused(lambda: call(c), [c.dir], SECONDS, HANG)
    assert name in str(err), f"the message does not name {name!r}: {err}"


def test_there_are_at_least_100_cases():
    assert len(CASES) >= 100


def test_good_inputs_next_to_the_cases_still_work(c):
    assert cppn.uniform_cppn(2.0, 3.0, seed=1.0).widths == [3, 3]
    assert c.model(torch.zeros(10, 4)).shape == (10, 3)
    assert len(emc2.random_hidden_weights(c.model, k=2.0, seed=3)) == 2
    assert prune.redundant_pairs(torch.eye(3), 0.5) == []
    assert prune.choose_removals([(0, 1)], torch.Generator().manual_seed(0), None) in ([0], [1])
    assert depth.fit_depth_line([1, 2], [1, 2], res=64.0).res == 64
    assert depth.png_bytes(c.target, level=9.0) > 0
    assert set(c.sweep.peak_frequencies(n_boot=20)) == {1, 2}
    assert [len(g) for g in panel.groups_from_counts([[2, 5], [3.0, 4.0]])] == [5, 4]
    assert len(counting.sample_weights([(0, 0, 0)] * 3, 2, seed=1.0)) == 2
    assert volume_ratio.rho_monte_carlo(c.dag, 2, 2, n=10, chunk=5.0)[0] >= 0
    assert optim.singular_value_map(torch.ones(2), steps=0).tolist() == [1.0, 1.0]
