"""Bad inputs to Part B's public functions not in ``tests/test_bad_inputs_parts_bc.py``.

Each case must raise ``ValueError`` quickly, naming the argument, and leave the fixture folder byte-identical
(``tests/refusal.py``). The ids name the input.
"""

import types

import numpy as np
import pytest
import torch
from refusal import assert_refused

from compbook.binding import clevr, complexity, controlled, data as bdata, decomposition
from compbook.binding.recipe import train as recipe, data as recipe_data
from compbook.binding.recipe import evaluate as recipe_eval, model as recipe_model
from compbook.binding import recognition, splits, symbolic
from compbook.binding.runs import sweep
from compbook.binding.recipe.config import RecipeConfig
from compbook.binding.encoders import clip_loss
from compbook.binding.train import DualTrainConfig

SECONDS = 1.0
NAN = float("nan")


@pytest.fixture(scope="module")
def c(tmp_path_factory):
    d = tmp_path_factory.mktemp("bad_binding")
    (d / "keep.txt").write_text("unchanged")
    cfg = controlled.ControlledConfig(n_values=3)
    return types.SimpleNamespace(dir=d, cfg=cfg, space=cfg.tokens.space, rcfg=RecipeConfig(),
                                 tokens=symbolic.SymbolicTokens(2, 3))


CASES = {
    # -- data
    "object_positives object id out of range": lambda c: bdata.object_positives(c.space, [[0, 10 ** 6]]),
    "object_positives 1-D scenes": lambda c: bdata.object_positives(c.space, [0, 1]),
    "value_positives unknown concept": lambda c: bdata.value_positives(c.space, [[0, 1]], "flavour"),
    "swapped concept index out of range": lambda c: bdata.swapped(c.space, 0, 1, 9),
    "swapped object id negative": lambda c: bdata.swapped(c.space, -5, 1, 0),
    "tokenize max_len 0": lambda c: bdata.tokenize(c.space, ["a"], 0),
    "tokenize captions a string": lambda c: bdata.tokenize(c.space, "a red square", 16),
    "build_pairs res 0": lambda c: bdata.build_pairs(c.space, [[0, 1]], res=0),
    "build_pairs res 100000": lambda c: bdata.build_pairs(c.space, [[0, 1]], res=100_000),
    "build_pairs object id out of range": lambda c: bdata.build_pairs(c.space, [[0, 10 ** 6]], res=16),
    "build_pairs odd number of ids": lambda c: bdata.build_pairs(c.space, [0, 1, 2], res=16),
    "swap_only_positives three-object scenes": lambda c: bdata.swap_only_positives(c.space, [[0, 1, 2]]),
    # -- decomposition
    "level1 vectors of other width": lambda c: decomposition.level1(
        np.ones((4, 3)), np.zeros((4, 2), int), np.ones((2, 5))),
    "level2 values of other length": lambda c: decomposition.level2(np.ones((4, 3)), np.zeros((5, 2), int)),
    "level2 NaN vectors": lambda c: decomposition.level2(np.full((4, 3), NAN), np.zeros((4, 2), int)),
    "level2 negative values": lambda c: decomposition.level2(np.ones((4, 3)), -np.ones((4, 2), int)),
    "r2 constant Z": lambda c: decomposition.r2(np.ones((4, 3)), np.zeros((4, 3))),
    "r2 NaN": lambda c: decomposition.r2(np.full((4, 3), NAN), np.ones((4, 3))),
    "retrieval widths differ": lambda c: decomposition.retrieval(np.ones((4, 3)), np.ones((4, 2))),
    "retrieval target of other length": lambda c: decomposition.retrieval(
        np.eye(3), np.eye(3), target=[0, 1]),
    "retrieval empty": lambda c: decomposition.retrieval(np.ones((0, 3)), np.ones((2, 3))),
    "probe_accuracy C 0": lambda c: decomposition.probe_accuracy(
        np.eye(4), [0, 1, 0, 1], np.eye(4), [0, 1, 0, 1], C=0),
    "probe_suite train_frac 1.5": lambda c: decomposition.probe_suite(
        np.eye(4), np.eye(4), np.zeros((4, 2), int), np.zeros((1, 2), int), train_frac=1.5),
    "design unknown kind": lambda c: decomposition.design(np.zeros((4, 2), int), np.zeros((1, 2), int), "x", 1),
    "labels scene id beyond values": lambda c: decomposition.labels(np.full((4, 2), 5), np.zeros((2, 2), int)),
    "additive_part unknown kind": lambda c: decomposition.additive_part(
        np.ones((4, 3)), np.zeros((4, 2), int), np.zeros((1, 2), int), "x"),
    "edit_retrieval concept_sizes negative": lambda c: decomposition.edit_retrieval(
        np.eye(4), np.zeros((4, 2), int), np.zeros((1, 2), int), np.ones((1, 4)), [-1, 2]),
    "mds3 NaN vectors": lambda c: decomposition.mds3(np.full((4, 3), NAN)),
    # -- recognition
    "concept_recognition queries and positives differ": lambda c: recognition.concept_recognition(
        np.ones((2, 3)), {"colour": np.ones((2, 3))}, {"shape": np.ones((2, 2), bool)}),
    "recognition candidates of other shape": lambda c: recognition.recognise(
        np.ones((2, 3)), np.ones((4, 3)), np.ones((2, 4), bool), candidates=np.ones((3, 4), bool)),
    # -- controlled
    "scene_tokens object id out of range": lambda c: controlled.scene_tokens(c.cfg, np.full((2, 2), 10 ** 6)),
    "object_tokens negative id": lambda c: controlled.object_tokens(c.cfg, np.array([-3])),
    "swaps three-object scenes": lambda c: controlled.swaps(c.cfg, np.array([[0, 1, 2]])),
    "init_params n_models 0": lambda c: controlled.init_params(c.cfg, 0, []),
    "init_params seeds of other length": lambda c: controlled.init_params(c.cfg, 2, [0]),
    "swap_separation lengths differ": lambda c: controlled.swap_separation(
        np.ones((3, 4)), np.ones((2, 4), bool), np.zeros((3, 2), int)),
    "subsample n not an integer": lambda c: controlled.subsample(np.zeros((5, 2), int), 2.5, 0),
    # -- sweep
    "sweep_splits n_values 0": lambda c: sweep.sweep_splits(sweep.default_sweep(), 0),
    "test_scenes n_scenes 0": lambda c: sweep.test_scenes(np.zeros((4, 2), int), 0),
    "test_scenes n_scenes 2.5": lambda c: sweep.test_scenes(np.zeros((4, 2), int), 2.5),
    "transition lengths differ": lambda c: sweep.transition([0.1, 0.5, 0.9], [0.0, 1.0]),
    "transition NaN accuracy": lambda c: sweep.transition([0.1, 0.5], [NAN, 1.0]),
    "spearman_bootstrap n_boot 0": lambda c: sweep.spearman_bootstrap([1, 2, 3], [1, 2, 3], n_boot=0),
    "spearman_bootstrap level 1.5": lambda c: sweep.spearman_bootstrap([1, 2, 3], [1, 2, 3], level=1.5),
    "coverage_intervals unknown key": lambda c: sweep.coverage_intervals({"sizes": []}, key="nope"),
    "rescore n_values a path": lambda c: sweep.rescore("../../x", c.dir),
    "recipe_check coverages above 1": lambda c: sweep.recipe_check(c.cfg, [1.5]),
    # -- complexity
    "check_widths zero": lambda c: complexity.check_widths([0, 4]),
    "check_widths empty": lambda c: complexity.check_widths([]),
    "ComplexityConfig steps 0": lambda c: complexity.ComplexityConfig(steps=0),
    "fit_frozen_probes lengths differ": lambda c: complexity.fit_frozen_probes(
        np.zeros((4, 2, 3), int), np.ones((5, 8)), (3, 3, 3)),
    "fit_frozen_probes NaN embeddings": lambda c: complexity.fit_frozen_probes(
        np.zeros((4, 2, 3), int), np.full((4, 8), NAN), (3, 3, 3)),
    "mlp_predict params missing": lambda c: complexity.mlp_predict({}, torch.zeros(2, 3)),
    "load_complexity n_values a path": lambda c: complexity.load_complexity("../../x", c.dir),
    # -- recipe, train, encoders, clevr (batch 2)
    "object_values id out of range": lambda c: recipe_data.object_values(c.rcfg, [10 ** 6]),
    "object_ids value above n_values": lambda c: recipe_data.object_ids(c.rcfg, [[0, 99]]),
    "sample_recipe_scenes n 0": lambda c: recipe_data.sample_recipe_scenes(
        c.rcfg, np.arange(4), 0, np.random.default_rng(0)),
    "sample_recipe_scenes 10^9 scenes": lambda c: recipe_data.sample_recipe_scenes(
        c.rcfg, np.arange(4), 10 ** 9, np.random.default_rng(0)),
    "presence 1-D scenes": lambda c: recipe_data.presence(np.array([0, 1]), np.array([0])),
    "separation shapes differ": lambda c: recipe_eval.separation(np.ones((3, 4)), np.ones((3, 5))),
    "lr_factor negative step": lambda c: recipe.lr_factor(c.rcfg, -1),
    "sinusoid n 0": lambda c: recipe_model.sinusoid(0, 4),
    "stem_for prefix leaves its folder": lambda c: recipe_model.stem_for(c.rcfg, c.dir, prefix="../../x"),
    "load_records n_values a path": lambda c: recipe_eval.load_records(c.dir, n_values="../x"),
    "DualTrainConfig steps 0": lambda c: DualTrainConfig(steps=0),
    "DualTrainConfig p_full above 1": lambda c: DualTrainConfig(p_full=1.5),
    "DualTrainConfig warmup negative": lambda c: DualTrainConfig(warmup=-1),
    "clip_loss widths differ": lambda c: clip_loss(torch.ones(4, 8), torch.ones(4, 7), 1.0),
    "clip_loss batches differ": lambda c: clip_loss(torch.ones(4, 8), torch.ones(3, 8), 1.0),
    "clip_loss swap_valid missing": lambda c: clip_loss(torch.ones(4, 8), torch.ones(4, 8), 1.0, zs=torch.ones(4, 8)),
    "Setup coverage 1.5": lambda c: clevr.Setup(coverage=1.5),
    "Setup res 0": lambda c: clevr.Setup(res=0),
    "Setup n_models 0": lambda c: clevr.Setup(n_models=0),
    # -- symbolic tokens and coverage splits
    "SymbolicTokens n_concepts=2.5": lambda c: symbolic.SymbolicTokens(2.5, 3),
    "SymbolicTokens n_values='3'": lambda c: symbolic.SymbolicTokens(2, "3"),
    "SymbolicTokens n_values=0": lambda c: symbolic.SymbolicTokens(2, 0),
    "SymbolicTokens value_token concept 5 of 2": lambda c: c.tokens.value_token(5, 0),
    "SymbolicTokens value_token value 3 of 3": lambda c: c.tokens.value_token(0, 3),
    "SymbolicTokens encode no objects": lambda c: c.tokens.encode([]),
    "SymbolicTokens encode id 0.5": lambda c: c.tokens.encode([0.5]),
    "SymbolicTokens encode id 9 of 9": lambda c: c.tokens.encode([9]),
    "SymbolicTokens encode_batch length=0": lambda c: c.tokens.encode_batch([[0, 1]], length=0),
    "SymbolicTokens encode_batch no scenes": lambda c: c.tokens.encode_batch([]),
    "coverage_split coverage=1.0": lambda c: splits.coverage_split(24, 1.0),
    "coverage_split coverage=0": lambda c: splits.coverage_split(24, 0),
    "coverage_split coverage=1.5": lambda c: splits.coverage_split(24, 1.5),
    "coverage_split coverage=nan": lambda c: splits.coverage_split(24, NAN),
    "coverage_split coverage='0.5'": lambda c: splits.coverage_split(24, "0.5"),
    "coverage_split n_objects=1": lambda c: splits.coverage_split(1, 0.5),
    "coverage_split n_objects=24.0": lambda c: splits.coverage_split(24.5, 0.5),
    "coverage_split n_objects=10**9 (memory)": lambda c: splits.coverage_split(10 ** 9, 0.5),
    "coverage_split objects_per_scene=0": lambda c: splits.coverage_split(24, 0.5, objects_per_scene=0),
    "coverage_split objects_per_scene=-1": lambda c: splits.coverage_split(24, 0.5, objects_per_scene=-1),
    "coverage_split objects_per_scene=2.5": lambda c: splits.coverage_split(24, 0.5, objects_per_scene=2.5),
    "coverage_split max_scenes=0": lambda c: splits.coverage_split(24, 0.5, max_scenes=0),
    "coverage_split max_scenes=10**9 (memory)": lambda c: splits.coverage_split(12096, 0.5, max_scenes=10 ** 9),
    "coverage_split val_fraction=nan": lambda c: splits.coverage_split(24, 0.5, val_fraction=NAN),
    "coverage_split seed=0.5": lambda c: splits.coverage_split(24, 0.5, seed=0.5),
}


@pytest.mark.parametrize("call", list(CASES.values()), ids=list(CASES))
def test_bad_input_raises_value_error_quickly(c, call):
    assert_refused(lambda: call(c), [c.dir], SECONDS)
