"""Bad inputs to the training and evaluation entry points, and stored runs that must be refused.

Parts B and C's trainers (``binding.train.train_stack``, ``binding.controlled.train_controlled``,
``binding.runs.sweep.run_size``, ``binding.recipe.train.train_recipe``, ``sae.s2ae.fit_sae``, ``sae.vlm.train_vlm``) and
evaluators (``sae.vlm.extract``, ``sae.interpret.interpret``, ``sae.crossmodal.crossmodal_scores``), the stores that
decide between loading and training (``sae.experiment.stored_runs``, ``sae.studies.study.study_runs``,
``binding.clevr.load_or_train``, ``cppn.twins``' stored twins) and ``cppn.audit.counting``'s ``deltas_for`` /
``layer_scales``. Each case must raise ``ValueError`` quickly (no training starts: sizes that would exhaust memory are
refused by ``checks.check_budget`` before allocating), naming the argument, and leave every file under the fixture
folder (``$COMPBOOK_DATA`` during the call) byte-identical (``tests/refusal.py``).
"""

import dataclasses
import json
import shutil
import types

import numpy as np
import pytest
import torch
from refusal import assert_refused

from compbook.binding.splits import coverage_split
from compbook.binding import clevr, controlled
from compbook.binding.recipe import train as recipe
from compbook.binding.runs import sweep
from compbook.binding.recipe.config import RecipeConfig
from compbook.binding.recipe.model import RecipeEncoder
from compbook.binding.data import PairData
from compbook.binding.encoders import EncoderConfig
from compbook.binding.train import DualStack, DualTrainConfig, train_stack
from compbook.cppn.audit import counting
from compbook.cppn.data import store
from compbook.cppn import twins
from compbook.cppn.network import CPPN
from compbook.sae import crossmodal, data as sdata, experiment, interpret, s2ae, topk, vlm
from compbook.sae.studies import study

SECONDS = 1.0
NAN = float("nan")


def _never(*args, **kwargs):
    """A describer / synthesiser / trainer that must not be reached: the call should be refused before."""
    raise AssertionError("work started before the arguments were checked")


def _pairs(n=4, res=16, length=16):
    return PairData(torch.rand(n, res, res, 3), np.zeros((n, 2), int), torch.zeros(n, 2, length, dtype=torch.long),
                    torch.zeros(n, length, dtype=torch.long), torch.zeros(n, dtype=torch.bool))


def _sae_data(n=6, t=5, d=8, attn=True):
    g = torch.Generator().manual_seed(0)
    return s2ae.SAEData(torch.randn(n, t, d, generator=g), torch.ones(n, t, dtype=torch.bool), torch.arange(4),
                        (2, 2), torch.rand(n, 4, 4, generator=g) if attn else None)


def _stored_run(d, data, cfg, lam, seed, store_name, edit):
    """Store an SAE where ``stored_runs(data, cfg, ...)`` looks for it, then ``edit`` its JSON metadata."""
    c = dataclasses.replace(cfg, lam=lam, seed=seed)
    want = {"data": experiment.data_digest(data), "train": dataclasses.asdict(c)}
    tag = experiment.hashlib.sha256(json.dumps(want, sort_keys=True).encode()).hexdigest()[:8]
    path = d / f"{store_name}/lam{lam:g}_seed{seed}_{tag}".replace(".", "p")
    topk.save_sae(topk.TopKSAE(data.acts.shape[-1], cfg.d_sae, cfg.k), path, edit({**want, "seconds": 1.0}))
    return path


@pytest.fixture(scope="module")
def c(tmp_path_factory):
    d = tmp_path_factory.mktemp("bad_training")
    (d / "keep.txt").write_text("unchanged")
    ns = types.SimpleNamespace(dir=d)
    # Part B
    ns.enc = EncoderConfig(res=16, channels=(4, 4, 4), d_out=8, vocab_size=8, max_len=16, width=8, layers=1,
                           heads=2)
    ns.tcfg = DualTrainConfig(steps=2, batch=2)
    ns.pairs = _pairs()
    ns.ccfg = controlled.ControlledConfig(n_values=3, steps=2, batch=2, eval_every=1)
    ns.split = coverage_split(27, 0.5, seed=0)
    ns.rcfg = RecipeConfig(n_values=5, d_model=8, n_heads=2, n_layers=1, d_ff=8, d_out=8, steps=2, batch=4,
                                  eval_every=1, eval_scenes=4, eval_batches=1)
    recipe._save_state(d / "state_other", RecipeConfig(n_values=6, d_model=8, n_heads=2, n_layers=1, d_ff=8,
                                                              d_out=8, steps=2, batch=4),
                       *_recipe_parts(RecipeConfig(n_values=6, d_model=8, n_heads=2, n_layers=1, d_ff=8,
                                                          d_out=8, steps=2, batch=4)))
    # a stored CLEVR-2D stack whose JSON says another setup than its file name (edited)
    setup = clevr.Setup(res=32, n_models=1, steps=2, batch=2)
    ns.setup = setup
    stack = DualStack(clevr.encoder_config(setup), 1, 0)
    for swap in (True, False):
        name = clevr.checkpoint_name(swap, setup) if "setup" in clevr.checkpoint_name.__code__.co_varnames \
            else clevr.checkpoint_name(swap)
        stack.save(d / name, {"setup": dataclasses.asdict(dataclasses.replace(setup, steps=3))})
    # Part C
    ns.data = _sae_data()
    ns.scfg = s2ae.SAETrainConfig(d_sae=16, k=2, steps=2, batch_images=2, n_regions=2)
    ns.sae = topk.TopKSAE(8, 16, 2)
    _stored_run(d, ns.data, ns.scfg, 0.0, 0, "sae/runs", lambda m: {**m, "data": "0" * 64})
    _stored_run(d, ns.data, ns.scfg, 0.0, 1, "sae/edited", lambda m: {**m, "train": {**m["train"], "steps": 99}})
    ns.vcfg = vlm.TinyVLMConfig(vocab_size=17, patch_dim=48, grid=(8, 8), max_text=17, d_model=8, n_layers=1,
                                n_heads=2, d_mlp=16)
    ns.vlm = vlm.TinyVLM(ns.vcfg)
    ns.vtcfg = vlm.VLMTrainConfig(steps=2, batch=2)
    ns.scenes = sdata.make_scenes(3)
    ns.patches = ns.scenes.patches[:2]
    ns.tokens = ns.scenes.tokens[:2, :8]
    n, p = ns.scenes.labels.shape
    ns.z_img, ns.z_txt = torch.rand(n, p, 16), torch.rand(n, ns.scenes.tokens.shape[1], 16)
    ns.regions = torch.zeros(n, p, dtype=torch.long)
    ns.labels = crossmodal.concept_labels(ns.scenes)
    ns.zl_img = torch.rand(*ns.labels.patches.shape[:2], 16)
    ns.zl_txt = torch.rand(*ns.labels.tokens.shape[:2], 16)
    # Part A: stored twins whose JSON metadata was edited (the weights' content hash still matches)
    model = CPPN([["tanh"] * 2], seed=0)
    twin = {"target": "skull", "seed": 0, "recipe": {"target": "skull", "res": 64, "steps": 10, "seeds": [0]},
            "loss_every": 100, "loss_curve": [1.0], "final_mse_train_res": 1.0}
    for folder, edit in (("twin_target", {"target": "apple"}), ("twin_seed", {"seed": 7}),
                         ("twin_steps", {"recipe": {**twin["recipe"], "steps": 20}}),
                         ("twin_norecipe", {"recipe": None}), ("twin_curve", {"loss_curve": "edited"})):
        store.save_cppn(model, d / folder / twins.twin_stem("skull", 64, 10, 0), {**twin, **edit})
    ns.twin_model = model
    ns.net = counting.CountedNetwork("tiny", "twin", "skull", CPPN([["tanh"] * 3, ["sin"] * 3], seed=0))
    return ns


def _recipe_parts(cfg):
    model = RecipeEncoder(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr)
    return model, opt, 0, np.random.default_rng(0), [], 0.0


def _data_env(c, call):
    """Run ``call`` with ``$COMPBOOK_DATA`` at the fixture folder (stores read and write there)."""
    def run():
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("COMPBOOK_DATA", str(c.dir))
            return call()
    return run


CASES = {
    # -- binding.train.train_stack
    "train_stack enc not an EncoderConfig": lambda c: train_stack({"res": 16}, c.tcfg, c.pairs),
    "train_stack cfg not a DualTrainConfig": lambda c: train_stack(c.enc, {"steps": 2}, c.pairs),
    "train_stack data not PairData": lambda c: train_stack(c.enc, c.tcfg, {"images": c.pairs.images}),
    "train_stack n_models 1.5": lambda c: train_stack(c.enc, c.tcfg, c.pairs, n_models=1.5),
    "train_stack n_models 10^7": lambda c: train_stack(c.enc, c.tcfg, c.pairs, n_models=10 ** 7),
    "train_stack images of another res": lambda c: train_stack(c.enc, c.tcfg, _pairs(res=32)),
    "train_stack no images": lambda c: train_stack(c.enc, c.tcfg, _pairs(n=0)),
    "train_stack NaN images": lambda c: train_stack(c.enc, c.tcfg, dataclasses.replace(
        c.pairs, images=torch.full((4, 16, 16, 3), NAN))),
    "train_stack token id above vocab_size": lambda c: train_stack(c.enc, c.tcfg, dataclasses.replace(
        c.pairs, captions=torch.full((4, 2, 16), 99))),
    "train_stack captions longer than max_len": lambda c: train_stack(c.enc, c.tcfg, _pairs(length=20)),
    "train_stack captions of 3 scenes for 4 images": lambda c: train_stack(c.enc, c.tcfg, dataclasses.replace(
        c.pairs, captions=c.pairs.captions[:3])),
    "train_stack val_score not callable": lambda c: train_stack(c.enc, c.tcfg, c.pairs, val_score="accuracy"),
    # -- binding.controlled.train_controlled
    "train_controlled cfg not a ControlledConfig": lambda c: controlled.train_controlled({}, [c.split], [0]),
    "train_controlled one split, not a list": lambda c: controlled.train_controlled(c.ccfg, c.split, [0]),
    "train_controlled split not a CoverageSplit": lambda c: controlled.train_controlled(c.ccfg, [{}], [0]),
    "train_controlled seed -1": lambda c: controlled.train_controlled(c.ccfg, [c.split], [-1]),
    "train_controlled seed 0.5": lambda c: controlled.train_controlled(c.ccfg, [c.split], [0.5]),
    "train_controlled split without train scenes": lambda c: controlled.train_controlled(
        c.ccfg, [dataclasses.replace(c.split, train=np.zeros((0, 2), int))], [0]),
    "train_controlled 10^6 models": lambda c: controlled.train_controlled(c.ccfg, [c.split] * 10 ** 6,
                                                                          [0] * 10 ** 6),
    "train_controlled batch 10^9": lambda c: controlled.train_controlled(
        dataclasses.replace(c.ccfg, batch=10 ** 9), [c.split], [0]),
    # -- binding.sweep.run_size
    "run_size sweep not a SweepConfig": lambda c: sweep.run_size({}, c.ccfg),
    "run_size cfg not a ControlledConfig": lambda c: sweep.run_size(sweep.SweepConfig(), {}),
    "run_size out_dir is a file": lambda c: sweep.run_size(sweep.SweepConfig(coverages=(0.5,), seeds=(0,)), c.ccfg,
                                                           out_dir=c.dir / "keep.txt"),
    "run_size 10^5 seeds": lambda c: sweep.run_size(sweep.SweepConfig(seeds=tuple(range(10 ** 5))), c.ccfg),
    # -- binding.recipe.train_recipe
    "train_recipe cfg not a RecipeConfig": lambda c: recipe.train_recipe({"n_values": 5}),
    "train_recipe stop_after 0": lambda c: recipe.train_recipe(c.rcfg, stop_after=0),
    "train_recipe stop_after 1.5": lambda c: recipe.train_recipe(c.rcfg, stop_after=1.5),
    "train_recipe unknown device": lambda c: recipe.train_recipe(c.rcfg, device="tpu9"),
    "train_recipe sets missing keys": lambda c: recipe.train_recipe(c.rcfg, sets={"seen_binding": np.zeros((2, 2))}),
    "train_recipe d_model 2^16": lambda c: recipe.train_recipe(
        dataclasses.replace(c.rcfg, d_model=2 ** 16, d_ff=2 ** 16)),
    # -- binding.clevr.load_or_train
    "load_or_train swap_negatives 'yes'": lambda c: clevr.load_or_train("yes", setup=c.setup),
    "load_or_train setup a dict": lambda c: clevr.load_or_train(True, setup={"res": 16}),
    # -- sae.s2ae.fit_sae
    "fit_sae sae not a TopKSAE": lambda c: s2ae.fit_sae(object(), c.data, c.scfg),
    "fit_sae data not SAEData": lambda c: s2ae.fit_sae(c.sae, c.data.acts, c.scfg),
    "fit_sae cfg not an SAETrainConfig": lambda c: s2ae.fit_sae(c.sae, c.data, {"steps": 2}),
    "fit_sae sae of another d_sae": lambda c: s2ae.fit_sae(topk.TopKSAE(8, 32, 2), c.data, c.scfg),
    "fit_sae clip 0": lambda c: s2ae.fit_sae(c.sae, c.data, c.scfg, clip=0.0),
    "fit_sae clip NaN": lambda c: s2ae.fit_sae(c.sae, c.data, c.scfg, clip=NAN),
    "fit_sae schedule not callable": lambda c: s2ae.fit_sae(c.sae, c.data, c.scfg, schedule=0.5),
    "fit_sae patch index past the tokens": lambda c: s2ae.fit_sae(c.sae, dataclasses.replace(
        c.data, patch_idx=torch.arange(4) + 4), c.scfg),
    "fit_sae lambda > 0 without attention": lambda c: s2ae.fit_sae(
        c.sae, _sae_data(attn=False), dataclasses.replace(c.scfg, lam=0.01, regions_every_step=True)),
    # -- sae.vlm.train_vlm
    "train_vlm cfg not a TinyVLMConfig": lambda c: vlm.train_vlm({}, c.scenes, c.vtcfg),
    "train_vlm tcfg not a VLMTrainConfig": lambda c: vlm.train_vlm(c.vcfg, c.scenes, {"steps": 2}),
    "train_vlm scenes a list": lambda c: vlm.train_vlm(c.vcfg, [c.scenes], c.vtcfg),
    "train_vlm vocabulary larger than the model's": lambda c: vlm.train_vlm(
        dataclasses.replace(c.vcfg, vocab_size=4), c.scenes, c.vtcfg),
    "train_vlm model not a module": lambda c: vlm.train_vlm(c.vcfg, c.scenes, c.vtcfg, model="tiny"),
    "train_vlm batch 10^8": lambda c: vlm.train_vlm(c.vcfg, c.scenes, vlm.VLMTrainConfig(steps=1, batch=10 ** 8)),
    # -- sae.vlm.extract
    "extract layer 0.5": lambda c: vlm.extract(c.vlm, (c.patches, c.tokens), 0.5),
    "extract layer '1'": lambda c: vlm.extract(c.vlm, (c.patches, c.tokens), "1"),
    "extract inputs None": lambda c: vlm.extract(c.vlm, None, 1),
    "extract model not a VLM": lambda c: vlm.extract(object(), (c.patches, c.tokens), 1),
    "extract token id above vocab_size": lambda c: vlm.extract(c.vlm, (c.patches, torch.full((2, 8), 99)), 1),
    "extract NaN patches": lambda c: vlm.extract(c.vlm, (torch.full_like(c.patches, NAN), c.tokens), 1),
    "extract 2 images, 1 caption": lambda c: vlm.extract(c.vlm, (c.patches, c.tokens[:1]), 1),
    "extract 10^5 captions (attention maps)": lambda c: vlm.extract(
        c.vlm, (c.patches[:1].expand(10 ** 5, -1, -1), c.tokens[:1].expand(10 ** 5, -1)), 1),
    # -- sae.interpret.interpret
    "interpret describer not callable": lambda c: interpret.interpret(
        c.z_img, c.z_txt, c.scenes, c.regions, [0], "a describer", _never, top_k=2),
    "interpret synthesiser not callable": lambda c: interpret.interpret(
        c.z_img, c.z_txt, c.scenes, c.regions, [0], _never, None, top_k=2),
    "interpret z_txt of another d_sae": lambda c: interpret.interpret(
        c.z_img, c.z_txt[..., :8], c.scenes, c.regions, [0], _never, _never, top_k=2),
    "interpret top_n 0": lambda c: interpret.interpret(
        c.z_img, c.z_txt, c.scenes, c.regions, [0], _never, _never, top_k=2, top_n=0),
    "interpret scenes a list": lambda c: interpret.interpret(
        c.z_img, c.z_txt, [c.scenes], c.regions, [0], _never, _never, top_k=2),
    "interpret hierarchical 'no'": lambda c: interpret.interpret(
        c.z_img, c.z_txt, c.scenes, c.regions, [0], _never, _never, top_k=2, hierarchical="no"),
    # -- sae.crossmodal.crossmodal_scores
    "crossmodal_scores labels not ConceptLabels": lambda c: crossmodal.crossmodal_scores(c.zl_img, c.zl_txt, {}),
    "crossmodal_scores NaN codes": lambda c: crossmodal.crossmodal_scores(
        torch.full_like(c.zl_img, NAN), c.zl_txt, c.labels),
    "crossmodal_scores threshold 1.5": lambda c: crossmodal.crossmodal_scores(
        c.zl_img, c.zl_txt, c.labels, top_n=2, threshold=1.5),
    "crossmodal_scores threshold NaN": lambda c: crossmodal.crossmodal_scores(
        c.zl_img, c.zl_txt, c.labels, top_n=2, threshold=NAN),
    "crossmodal_scores min_fires -1": lambda c: crossmodal.crossmodal_scores(
        c.zl_img, c.zl_txt, c.labels, top_n=2, min_fires=-1),
    "crossmodal_scores top_n '5'": lambda c: crossmodal.crossmodal_scores(c.zl_img, c.zl_txt, c.labels, top_n="5"),
    # -- sae.experiment.stored_runs, sae.study.study_runs
    "stored_runs train not SAEData": lambda c: experiment.stored_runs(c.data.acts, c.scfg, trainer=_never),
    "stored_runs cfg not an SAETrainConfig": lambda c: experiment.stored_runs(c.data, {}, trainer=_never),
    "stored_runs no seeds": lambda c: experiment.stored_runs(c.data, c.scfg, seeds=(), trainer=_never),
    "stored_runs seed -1": lambda c: experiment.stored_runs(c.data, c.scfg, seeds=(-1,), trainer=_never),
    "stored_runs negative lambda after a good one": lambda c: experiment.stored_runs(
        c.data, c.scfg, seeds=(11,), lams=(0.0, -1.0), trainer=_never),
    "stored_runs lambda > 0 without attention": lambda c: experiment.stored_runs(
        _sae_data(attn=False), c.scfg, seeds=(12,), lams=(0.0, 0.01), trainer=_never),
    "stored_runs store leaves data": lambda c: experiment.stored_runs(c.data, c.scfg, store="../../escape",
                                                                      trainer=_never),
    "stored_runs trainer not callable": lambda c: experiment.stored_runs(c.data, c.scfg, seeds=(13,), trainer="sgd"),
    "stored_runs stored run of another data digest": lambda c: experiment.stored_runs(
        c.data, c.scfg, seeds=(0,), lams=(0.0,), trainer=_never),
    "stored_runs stored run whose config was edited": lambda c: experiment.stored_runs(
        c.data, c.scfg, seeds=(1,), lams=(0.0,), store="sae/edited", trainer=_never),
    "study_runs train not SAEData": lambda c: study.study_runs(c.data.acts, c.scfg, ks=(2,)),
    "study_runs no ks": lambda c: study.study_runs(c.data, c.scfg, ks=()),
    "study_runs k above d_sae after a good one": lambda c: study.study_runs(c.data, c.scfg, ks=(2, 99), seeds=(14,)),
    "study_runs negative lambda": lambda c: study.study_runs(c.data, c.scfg, ks=(2,), lams=(0.0, -1.0), seeds=(15,)),
    "study_runs seed 0.5": lambda c: study.study_runs(c.data, c.scfg, ks=(2,), lams=(0.0,), seeds=(0.5,)),
    "study_runs log not callable": lambda c: study.study_runs(c.data, c.scfg, ks=(2,), seeds=(16,), log="print"),
    # -- cppn.twins: stored twins whose JSON was edited
    "load_twins JSON says another target": lambda c: twins.load_twins("skull", c.dir / "twin_target"),
    "load_twins JSON says another seed": lambda c: twins.load_twins("skull", c.dir / "twin_seed"),
    "load_twins JSON says another step count": lambda c: twins.load_twins("skull", c.dir / "twin_steps"),
    "load_twins JSON without a recipe": lambda c: twins.load_twins("skull", c.dir / "twin_norecipe"),
    "stored_loss_curves JSON curve edited": lambda c: twins.stored_loss_curves("skull", c.dir / "twin_curve"),
    "report JSON says another target": lambda c: twins.report(c.dir / "twin_target"),
    "report JSON without a recipe": lambda c: twins.report(c.dir / "twin_norecipe"),
    # -- cppn.counting.deltas_for, layer_scales
    "layer_scales net not a Network": lambda c: counting.layer_scales(c.net.model, [(0, 0, 0)]),
    "layer_scales layer out of range": lambda c: counting.layer_scales(c.net, [(9, 0, 0)]),
    "layer_scales neuron out of range": lambda c: counting.layer_scales(c.net, [(0, 99, 0)]),
    "layer_scales negative index": lambda c: counting.layer_scales(c.net, [(0, -1, 0)]),
    "layer_scales weights of strings": lambda c: counting.layer_scales(c.net, [("0", "0", "0")]),
    "layer_scales no weights": lambda c: counting.layer_scales(c.net, []),
    "deltas_for net not a Network": lambda c: counting.deltas_for(None, [(0, 0, 0)], "fixed"),
    "deltas_for weight index out of range": lambda c: counting.deltas_for(c.net, [(0, 0, 99)], "relative"),
    "deltas_for fractional index": lambda c: counting.deltas_for(c.net, [(0, 0.5, 0)], "relative"),
    "deltas_for no weights": lambda c: counting.deltas_for(c.net, [], "layer"),
    "deltas_for scales missing a layer": lambda c: counting.deltas_for(c.net, [(1, 0, 0)], "layer",
                                                                       scales={0: 1.0}),
    "deltas_for NaN scale of a layer": lambda c: counting.deltas_for(c.net, [(0, 0, 0)], "layer", scales={0: NAN}),
    "deltas_for scales not a dict": lambda c: counting.deltas_for(c.net, [(0, 0, 0)], "noise", scales=[1.0]),
    "deltas_for seed -1": lambda c: counting.deltas_for(c.net, [(0, 0, 0)], "noise", seed=-1),
    "deltas_for seed None": lambda c: counting.deltas_for(c.net, [(0, 0, 0)], "noise", seed=None),
}
CASES["load_or_train stored stack of another Setup"] = lambda c: clevr.load_or_train(True, setup=c.setup)
DATA_ENV = ("load_or_train", "stored_runs", "study_runs")


@pytest.mark.parametrize("name", list(CASES))
def test_bad_input_raises_value_error_quickly(c, name):
    call = CASES[name]
    run = _data_env(c, lambda: call(c)) if name.startswith(DATA_ENV) else (lambda: call(c))
    assert_refused(run, [c.dir], SECONDS)


def test_good_calls_still_work(c, tmp_path, monkeypatch):
    """The other side: the stores still serve what they hold for the same question, and the checks accept what
    the chapters pass."""
    assert clevr.checkpoint_name(True) == clevr.checkpoint_name(True, clevr.Setup()) == "binding/clevr2d_swap"
    other = clevr.checkpoint_name(False, c.setup)
    assert other.startswith("binding/clevr2d_noswap_") and other != clevr.checkpoint_name(False, clevr.Setup.full())
    rows = twins.report()                                  # the book's stored twins pass the metadata checks
    assert rows and {r["target"] for r in rows} == set(twins.TARGETS)
    monkeypatch.setenv("COMPBOOK_DATA", str(tmp_path))
    stack = DualStack(clevr.encoder_config(c.setup), 1, 0)
    stack.save(tmp_path / other, {"setup": dataclasses.asdict(c.setup)})
    loaded, setup, info = clevr.load_or_train(False, setup=c.setup)
    assert setup == c.setup and all(torch.equal(loaded.params[k], v) for k, v in stack.params.items())
    runs = experiment.stored_runs(c.data, c.scfg, seeds=(3,), lams=(0.0,))      # trains once, then serves
    again = experiment.stored_runs(c.data, c.scfg, seeds=(3,), lams=(0.0,), trainer=_never)
    assert torch.equal(runs[0]["sae"].W_enc, again[0]["sae"].W_enc)
    w = counting.counted_weights(c.net, "nonzero")
    d = counting.deltas_for(c.net, w, "relative", scale=0.5)
    ws = [w.detach() for w in c.net.model.effective_weights()]
    assert torch.allclose(d, torch.tensor([0.5 * abs(float(ws[l][o, i])) for l, o, i in w], dtype=torch.float64))
    assert counting.layer_scales(c.net, np.array(w)) == counting.layer_scales(c.net, w)
