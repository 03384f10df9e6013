"""Bad inputs to Part A's twins, experiments, counting, fer and tables modules.

Each case must raise ``ValueError`` quickly, naming the argument, and leave the fixture folder byte-identical
(``tests/refusal.py``). The ids name the input.
"""

import types

import numpy as np
import pytest
import torch
from refusal import assert_refused

from compbook.cppn.audit import counting, tables
from compbook.cppn import emc2, fer, network, prune, twins
from compbook.cppn.runs import experiments
from compbook.cppn.network import CPPN

SECONDS = 1.0
NAN = float("nan")


@pytest.fixture(scope="module")
def c(tmp_path_factory):
    d = tmp_path_factory.mktemp("bad_cppn_more")
    (d / "keep.txt").write_text("unchanged")
    return types.SimpleNamespace(dir=d, model=CPPN([["tanh"] * 3, ["sin"] * 3], seed=0))


CASES = {
    # -- twins
    "TwinRecipe res 0": lambda c: twins.TwinRecipe("skull", res=0),
    "TwinRecipe res 100000": lambda c: twins.TwinRecipe("skull", res=100_000),
    "TwinRecipe steps 0": lambda c: twins.TwinRecipe("skull", steps=0),
    "TwinRecipe lr negative": lambda c: twins.TwinRecipe("skull", lr=-1.0),
    "TwinRecipe no seeds": lambda c: twins.TwinRecipe("skull", seeds=[]),
    "TwinRecipe unknown optimizer": lambda c: twins.TwinRecipe("skull", optimizer="lbfgs"),
    "plateaued window 0": lambda c: twins.plateaued(np.ones((10, 2)), window=0),
    "plateaued NaN losses": lambda c: twins.plateaued(np.full((10, 2), NAN), window=3),
    "plateaued tol above 1": lambda c: twins.plateaued(np.ones((10, 2)), window=3, tol=2.0),
    "plateau_steps every 0": lambda c: twins.plateau_steps(np.ones((10, 2)), window=3, every=0),
    "twin_stem unknown target": lambda c: twins.twin_stem("../../etc", 64, 10, 0),
    "twin_stem res 0": lambda c: twins.twin_stem("skull", 0, 10, 0),
    "stored_twins unknown target": lambda c: twins.stored_twins("../x", c.dir),
    "FerTwinRecipe batch_pixels 0": lambda c: twins.FerTwinRecipe("skull", batch_pixels=0),
    "FerTwinRecipe res 100000": lambda c: twins.FerTwinRecipe("skull", res=100_000),
    "FerTwinRecipe negative steps": lambda c: twins.FerTwinRecipe("skull", minibatch_steps=-1),
    "FerTwinRecipe seed negative": lambda c: twins.FerTwinRecipe("skull", seed=-1),
    "check_resume other arch": lambda c: twins.check_resume(
        twins.FerTwinRecipe("skull"), {**twins.asdict(twins.FerTwinRecipe("skull")), "arch": "2;sin:3"}),
    "load_fer_twins unknown target": lambda c: twins.load_fer_twins("../x", c.dir),
    "stored_loss_curves unknown target": lambda c: twins.stored_loss_curves("../x", c.dir),
    # -- experiments
    "finite_mean empty": lambda c: experiments.finite_mean([]),
    "half_mse target of other shape": lambda c: experiments.half_mse(c.model, np.zeros((8, 8, 3)), 16),
    "half_mse res 1": lambda c: experiments.half_mse(c.model, np.zeros((1, 1, 3)), 1),
    "half_mse res 100000": lambda c: experiments.half_mse(c.model, np.zeros((2, 2, 3)), 100_000),
    "selective_fraction threshold above 1": lambda c: experiments.selective_fraction(c.model, 16, threshold=2.0),
    "selective_fraction res 0": lambda c: experiments.selective_fraction(c.model, 0),
    "target_panel target of other shape": lambda c: experiments.target_panel("x", np.zeros((4, 4))),
    "dense_and_sp depth 0": lambda c: experiments.dense_and_sp(np.zeros((16, 16, 3)), 0, [0]),
    "dense_and_sp no seeds": lambda c: experiments.dense_and_sp(np.zeros((16, 16, 3)), 2, []),
    "optimizer_comparison no seeds": lambda c: experiments.optimizer_comparison(np.zeros((16, 16, 3)), []),
    "pruning_methods NaN target": lambda c: experiments.pruning_methods(np.full((16, 16, 3), NAN)),
    # -- counting
    "picbreeder_network unknown target": lambda c: counting.picbreeder_network("../x"),
    "default_networks unknown kind": lambda c: counting.default_networks(kinds=("giant",)),
    "sample_weights sample 0": lambda c: counting.sample_weights([(0, 0, 0)], 0),
    "run an unknown judge": lambda c: counting.run([], judges=("oracle",)),
    "run judges a string": lambda c: counting.run([], judges="ssim"),
    "run res 0": lambda c: counting.run([], res=0),
    "run res 100000": lambda c: counting.run([], res=100_000),
    "table unknown by": lambda c: counting.table({"rows": []}, by="colour"),
    "merge nothing": lambda c: counting.merge(),
    "load path a folder": lambda c: counting.load(c.dir),
    "cross_batch unknown key": lambda c: counting.cross_batch(("nobody",)),
    # -- fer
    "parse_arch width 0": lambda c: fer.parse_arch("3;sin:0"),
    "parse_arch huge width": lambda c: fer.parse_arch("3;sin:100000000"),
    "arch_string depth 0": lambda c: fer.arch_string(0, {"sin": 2}),
    "arch_string unknown activation": lambda c: fer.arch_string(2, {"relu6": 2}),
    "params_to_weights too few params": lambda c: fer.params_to_weights(np.zeros(3), "2;sin:2"),
    "params_to_weights NaN params": lambda c: fer.params_to_weights(
        np.full(sum(a * b + b for a, b in fer.kernel_shapes("2;sin:2")), NAN), "2;sin:2"),
    "fer_cppn bad arch": lambda c: fer.fer_cppn(np.zeros(3), "two layers"),
    "find_fer name leaves its folder": lambda c: fer.find_fer("../../etc/passwd"),
    "load_fer a folder": lambda c: fer.load_fer(c.dir),
    "fer_info a folder": lambda c: fer.fer_info(c.dir),
    # -- tables
    "stored unknown chapter": lambda c: tables.stored("chapter99"),
    "pick no match": lambda c: tables.pick([{"name": "a"}], name="b"),
    "score_table digits negative": lambda c: tables.score_table([{"name": "a", "score": 0.5}], digits=-1),
    "score_table no rows": lambda c: tables.score_table([]),
    "rho_checks p above 1": lambda c: tables.rho_checks({}, p=1.5),
    "rho_checks n_mc 0": lambda c: tables.rho_checks({}, n_mc=0),
    "rho_checks n_mc 10^12": lambda c: tables.rho_checks({}, n_mc=10 ** 12),
    "target_summary unknown target": lambda c: tables.target_summary(("dragon",)),
    "target_summary p 0": lambda c: tables.target_summary(p=0.0),
    "pooled_row no seeds": lambda c: tables.pooled_row({}, "a", "b", [], 0.1),
    "ci_cell row without n": lambda c: tables.ci_cell({"score": 0.5}),
    # -- network, emc2, prune
    "uniform_cppn width 10**400 (no OverflowError)": lambda c: network.uniform_cppn(1, 10 ** 400),
    "uniform_cppn depth 10**6 (minutes of layers)": lambda c: network.uniform_cppn(10 ** 6, 1),
    "CPPN 2000 hidden layers": lambda c: CPPN([["tanh"]] * 2000),
    "uniform_cppn seed 2**64": lambda c: network.uniform_cppn(2, 3, seed=2 ** 64),
    "uniform_cppn activation None": lambda c: network.uniform_cppn(2, 3, None),
    "uniform_cppn init_scale 1e200 (inf weights)": lambda c: network.uniform_cppn(2, 3, init_scale=1e200),
    "forward NaN weights (no NaN out)": lambda c: c.model.forward(
        torch.zeros(2, 4), [torch.full(s, NAN) for s in c.model.shapes]),
    "forward int weights": lambda c: c.model.forward(
        torch.zeros(2, 4), [torch.zeros(s, dtype=torch.int64) for s in c.model.shapes]),
    "perturbation_plan seed 2**64": lambda c: emc2.perturbation_plan(c.model, 0.5, "noise", 2 ** 64),
    "random_prune seed 2**70": lambda c: prune.random_prune(c.model, 0.5, 2 ** 70),
    "masks_from_scores no layers": lambda c: prune.masks_from_scores([], 0.5),
    "masks_from_scores NaN masks (no silent keep)": lambda c: prune.masks_from_scores(
        [torch.rand(2, 2)], 0.5, masks=[torch.full((2, 2), NAN)]),
    "masks_from_scores masks of strings": lambda c: prune.masks_from_scores([torch.rand(2, 2)], 0.5, masks=["ab"]),
    "masks_from_scores masks one tensor": lambda c: prune.masks_from_scores([torch.rand(2, 2)], 0.5,
                                                                            masks=torch.ones(1, 2, 2)),
}


@pytest.mark.parametrize("call", list(CASES.values()), ids=list(CASES))
def test_bad_input_raises_value_error_quickly(c, call):
    assert_refused(lambda: call(c), [c.dir], SECONDS)
