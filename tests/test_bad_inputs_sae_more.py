"""More bad inputs to Part C's public functions: silent wrong answers, stray exception types, unchecked sizes.

Beside ``tests/test_bad_inputs_sae.py`` and ``tests/test_bad_inputs_parts_bc.py``. Each case is one call a careless
or curious reader might make; it must raise ``ValueError`` quickly (``tests/refusal.py``), leave the fixture
folder byte-identical, and its message must name the input (the second item of each case: a word the message
holds). The kinds, in the order of the ids:

* silent wrong answers (images in [0, 255] where [0, 1] is expected, NaN in and NaN out, an index equal to the
  size or negative, a fraction truncated to an integer, a string read as true, no valid token);
* other exception types (TypeError, KeyError, IndexError, AttributeError, ZeroDivisionError, torch's
  RuntimeError) or a ValueError that does not name the input;
* sizes that would reach the allocator;
* stored files whose sidecar does not describe their tensors (the message names the field that differs).
"""

import json
import shutil
import types

import numpy as np
import pandas as pd
import pytest
import torch
from refusal import assert_refused

from compbook.results import checkpoints
from compbook.sae import data as sdata, describe, experiment, interpret, metrics, regions, s2ae, show, topk, vlm
from compbook.sae.servers import hf_interpret
from compbook.sae.studies import objregions, objsae, refopt, study

SECONDS = 1.0
NAN = float("nan")


def _vlm_cfg(**kw):
    return vlm.TinyVLMConfig(**{"vocab_size": 10, "patch_dim": 4, "grid": (2, 2), "max_text": 4, "d_model": 8,
                                "n_layers": 1, "n_heads": 2, "d_mlp": 16, **kw})


def _data(valid=None, patch_idx=None, n=3, t=6, d=8):
    g = torch.Generator().manual_seed(0)
    acts = torch.randn(n, t, d, generator=g)
    valid = torch.ones(n, t, dtype=torch.bool) if valid is None else valid
    pidx = torch.arange(4) if patch_idx is None else patch_idx
    attn = torch.rand(n, 4, 4, generator=g).softmax(-1)
    return s2ae.SAEData(acts, valid, pidx, (2, 2), attn)


@pytest.fixture(scope="module")
def c(tmp_path_factory):
    d = tmp_path_factory.mktemp("bad_sae_more")
    (d / "keep.txt").write_text("unchanged")
    sae = topk.TopKSAE(8, 16, 2)
    topk.save_sae(sae, d / "sae")
    model = vlm.TinyVLM(_vlm_cfg())
    vlm.save_vlm(model, d / "vlm")

    def edited(src, name, change):
        for suffix in (".json", ".safetensors"):
            shutil.copy(d / f"{src}{suffix}", d / f"{name}{suffix}")
        side = json.loads((d / f"{name}.json").read_text())
        change(side)
        (d / f"{name}.json").write_text(json.dumps(side))

    edited("sae", "sae_noconfig", lambda s: s.pop("config"))
    edited("sae", "sae_nodsae", lambda s: s["config"].pop("d_sae"))
    edited("sae", "sae_unknown", lambda s: s["config"].update(width=3))
    edited("sae", "sae_strk", lambda s: s["config"].update(k="2"))
    edited("sae", "sae_fracdin", lambda s: s["config"].update(d_in=8.5))
    edited("sae", "sae_config_list", lambda s: s.update(config=[8, 16, 2]))
    edited("vlm", "vlm_unknown", lambda s: s["config"].update(colour_depth=3))
    edited("vlm", "vlm_nometa", lambda s: s.pop("metadata"))
    edited("vlm", "vlm_noconfig", lambda s: s.pop("config"))
    edited("vlm", "vlm_nogrid", lambda s: s["config"].pop("grid"))
    # an object VLM of another width under its sidecar (digest kept: the tensors are its own)
    ov = objregions.ObjectVLM(_vlm_cfg(), 2, False)
    checkpoints.save(d / "ovlm", ov.state_dict(), {"config": {**vars(ov.cfg)}, "metadata": {}},
                     format=objregions.FORMAT)
    edited("ovlm", "ovlm_other", lambda s: s["config"].update(d_model=16))
    scenes = sdata.make_scenes(3, seed=0)
    return types.SimpleNamespace(dir=d, sae=sae, vlm=model, data=_data(), scenes=scenes,
                                 cfg=s2ae.SAETrainConfig(d_sae=16, k=2, steps=1, batch_images=2),
                                 ovlm=objregions.ObjectVLM(_vlm_cfg(), 1, False))


def _no_valid_batch():
    valid = torch.ones(3, 6, dtype=torch.bool)
    valid[1] = False                     # an image with no valid token: a batch of it trains on nothing
    return _data(valid)


CASES = {
    # ---- silent wrong answers ------------------------------------------------------------------------------
    # images in [0, 255] where [0, 1] is expected
    "foreground image in [0, 255]": (lambda c: describe.foreground(np.full((4, 4, 3), 200.0)), "image"),
    "nearest_colour rgb in [0, 255]": (lambda c: describe.nearest_colour(np.array([200.0, 10.0, 10.0])), "rgb"),
    "PixelDescriber images in [0, 255]": (lambda c: describe.PixelDescriber()(
        np.full((1, 8, 8, 3), 200.0), np.ones((1, 8, 8), bool)), "images"),
    "describe_checked images in [0, 255]": (lambda c: interpret.describe_checked(
        lambda im, m: ["x"] * len(im), np.full((1, 8, 8, 3), 200.0), np.ones((1, 8, 8), bool)), "images"),
    "masked_image image in [0, 255]": (lambda c: hf_interpret.masked_image(
        np.full((8, 8, 3), 200.0), np.ones((8, 8), bool)), "image"),
    "overlay image in [0, 255]": (lambda c: show.overlay(np.full((8, 8, 3), 200.0), np.ones(4), (2, 2)), "image"),
    "overlay patch values above 1": (lambda c: show.overlay(np.ones((8, 8, 3)), np.full(4, 9.0), (2, 2)),
                                     "patch_values"),
    # NaN in, NaN out
    "decode NaN code": (lambda c: c.sae.decode(torch.full((2, 16), NAN)), "z"),
    "decode inf code": (lambda c: c.sae.decode(torch.full((2, 16), float("inf"))), "z"),
    "fvu NaN x_hat": (lambda c: topk.fvu(torch.randn(4, 8), torch.full((4, 8), NAN)), "x_hat"),
    "fvu_loss NaN x": (lambda c: topk.fvu_loss(torch.full((4, 8), NAN), torch.ones(4, 8)), "x"),
    "fvu_loss empty": (lambda c: topk.fvu_loss(torch.ones(0, 8), torch.ones(0, 8)), "x"),
    "batch_penalties NaN codes": (lambda c: s2ae.batch_penalties(
        torch.full((2, 4, 3), NAN), torch.zeros(2, 4, dtype=torch.long)), "z_hat"),
    "sparse_penalties NaN values": (lambda c: s2ae.sparse_penalties(
        torch.full((2, 4, 2), NAN), torch.zeros(2, 4, 2, dtype=torch.long), torch.zeros(2, 4, dtype=torch.long),
        16), "vals_hat"),
    "region_distance exponent NaN": (lambda c: regions.region_distance(torch.rand(1, 4, 4), (2, 2), NAN),
                                     "exponent"),
    "region_distance exponent negative": (lambda c: regions.region_distance(torch.rand(1, 4, 4), (2, 2), -1.0),
                                          "exponent"),
    "caption_loss NaN patches": (lambda c: vlm.caption_loss(
        c.vlm, torch.full((1, 4, 4), NAN), torch.ones(1, 3, dtype=torch.long), 0), "patches"),
    "TinyVLM forward NaN patches": (lambda c: c.vlm(torch.full((1, 4, 4), NAN), torch.ones(1, 3, dtype=torch.long)),
                                    "patches"),
    "attention_correlations no images": (lambda c: objregions.attention_correlations(
        torch.rand(0, 4, 4), torch.zeros(0, 4, dtype=torch.long)), "attn"),
    # a batch with no valid token: loss 0 and NaN biases
    "SAEData image without a valid token, trained": (lambda c: s2ae.train_sae(
        _no_valid_batch(), c.cfg, progress=False), "valid"),
    "SAEData no valid token at all, trained": (lambda c: s2ae.train_sae(
        _data(torch.zeros(3, 6, dtype=torch.bool)), c.cfg, progress=False), "valid"),
    "train_sae_reference no valid token": (lambda c: refopt.train_sae_reference(
        _data(torch.zeros(3, 6, dtype=torch.bool)), c.cfg, progress=False), "valid"),
    # an index equal to the size spills over, a negative one wraps
    "sparse_penalties latent id equal to d_sae": (lambda c: s2ae.sparse_penalties(
        torch.ones(1, 4, 2), torch.full((1, 4, 2), 16), torch.zeros(1, 4, dtype=torch.long), 16), "idx"),
    "sparse_penalties negative latent id": (lambda c: s2ae.sparse_penalties(
        torch.ones(1, 4, 2), torch.full((1, 4, 2), -1), torch.zeros(1, 4, dtype=torch.long), 16), "idx"),
    "sparse_penalties negative region": (lambda c: s2ae.sparse_penalties(
        torch.ones(1, 4, 2), torch.zeros(1, 4, 2, dtype=torch.long), torch.full((1, 4), -1), 16), "regions"),
    "batch_penalties negative region": (lambda c: s2ae.batch_penalties(
        torch.ones(1, 4, 3), torch.full((1, 4), -1)), "regions"),
    "batch_penalties float regions": (lambda c: s2ae.batch_penalties(
        torch.ones(1, 4, 3), torch.full((1, 4), 0.5)), "regions"),
    "scatter latent id equal to d_sae": (lambda c: c.sae.scatter(torch.ones(2, 2), torch.full((2, 2), 16)), "idx"),
    "scatter negative latent id": (lambda c: c.sae.scatter(torch.ones(2, 2), torch.full((2, 2), -1)), "idx"),
    "modality_codes negative patch index": (lambda c: __import__("compbook.sae.crossmodal").sae.crossmodal
                                            .modality_codes(c.sae, _data(patch_idx=torch.tensor([-1, 0, 1, 2]))),
                                            "patch_idx"),
    "patch_codes patch index equal to T": (lambda c: experiment.patch_codes(
        c.sae, _data(patch_idx=torch.tensor([0, 1, 2, 6]))), "patch_idx"),
    "slack negative patch index": (lambda c: study.slack(c.sae, _data(patch_idx=torch.tensor([-1, 0, 1, 2]))),
                                   "patch_idx"),
    "SceneSet.subset negative index": (lambda c: c.scenes.subset([-1]), "idx"),
    "SceneSet.subset index equal to length": (lambda c: c.scenes.subset([3]), "idx"),
    "region_masks reference equal to N": (lambda c: interpret.region_masks(
        torch.ones(3, 4, 16), torch.tensor([[3]]), [0], (2, 2), 8), "refs"),
    "region_masks reference below -1": (lambda c: interpret.region_masks(
        torch.ones(3, 4, 16), torch.tensor([[-2]]), [0], (2, 2), 8), "refs"),
    "fragmented_latents label below -1": (lambda c: experiment.fragmented_latents(
        c.sae, c.data, torch.full((3, 4), -2)), "labels"),
    # fractions truncated, strings and other values read as true
    "TopKSAE d_in 8.7": (lambda c: topk.TopKSAE(8.7, 16, 2), "d_in"),
    "TopKSAE k 2.5": (lambda c: topk.TopKSAE(8, 16, 2.5), "k"),
    "TopKSAE k string": (lambda c: topk.TopKSAE(8, 16, "2"), "k"),
    "TopKSAE seed 1.5": (lambda c: topk.TopKSAE(8, 16, 2, seed=1.5), "seed"),
    "TopKSAE seed negative": (lambda c: topk.TopKSAE(8, 16, 2, seed=-1), "seed"),
    "SAETrainConfig seed 2.7": (lambda c: s2ae.SAETrainConfig(d_sae=16, k=2, seed=2.7), "seed"),
    "SAETrainConfig regions_every_step string": (lambda c: s2ae.SAETrainConfig(regions_every_step="no"),
                                                 "regions_every_step"),
    "ObjectVLM n_prefix 2.7": (lambda c: objregions.ObjectVLM(_vlm_cfg(), 2.7), "n_prefix"),
    "ObjectVLM bidirectional string": (lambda c: objregions.ObjectVLM(_vlm_cfg(), 0, "no"), "bidirectional"),
    "TinyVLMConfig text_only string": (lambda c: _vlm_cfg(text_only="no"), "text_only"),
    "collect_references top_k 2.5": (lambda c: interpret.collect_references(
        torch.ones(3, 4, 5), torch.zeros(3, 4, dtype=torch.long), [0], top_k=2.5), "top_k"),
    "top_shares top_n 2.5": (lambda c: __import__("compbook.sae.crossmodal").sae.crossmodal.top_shares(
        torch.rand(6, 4), torch.ones(6, 2, dtype=bool), 2.5), "top_n"),
    "linear_init seed 2.7": (lambda c: refopt.linear_init(topk.TopKSAE(8, 16, 2), 2.7), "seed"),
    "ReferenceTrainConfig clip True": (lambda c: refopt.ReferenceTrainConfig(d_sae=16, k=2, clip=True), "clip"),
    "fragmented_latents top 0": (lambda c: experiment.fragmented_latents(c.sae, c.data, torch.zeros(3, 4).long(),
                                                                         top=0), "top"),
    "fragmented_latents top negative": (lambda c: experiment.fragmented_latents(
        c.sae, c.data, torch.zeros(3, 4).long(), top=-1), "top"),
    "reference_scores weight string": (lambda c: interpret.reference_scores(
        torch.ones(2, 4, 3), torch.zeros(2, 4, dtype=torch.long), [0], weight="0.5"), "weight"),
    "MajoritySynthesiser threshold string": (lambda c: describe.MajoritySynthesiser(threshold="0.5"), "threshold"),
    "PixelDescriber min_part NaN": (lambda c: describe.PixelDescriber(min_part=NAN), "min_part"),
    "masked_image dim 2": (lambda c: hf_interpret.masked_image(np.ones((8, 8, 3)), np.ones((8, 8), bool), dim=2.0),
                           "dim"),
    "masked_image size 2.5": (lambda c: hf_interpret.masked_image(np.ones((8, 8, 3)), np.ones((8, 8), bool),
                                                                  size=2.5), "size"),
    "reread half NaN accepted as one seed but not a string": (lambda c: study.reread(0.1, "0.05", 1, 0.1), "half"),
    # ---- other exception types, or a ValueError that does not name the input ------------------------------
    "TopKSAE k NaN": (lambda c: topk.TopKSAE(8, 16, NAN), "k"),
    "TopKSAE d_sae None": (lambda c: topk.TopKSAE(8, None, 2), "d_sae"),
    "decode integer code": (lambda c: c.sae.decode(torch.ones(2, 16, dtype=torch.long)), "z"),
    "decode a string": (lambda c: c.sae.decode("z"), "z"),
    "fvu_loss strings": (lambda c: topk.fvu_loss("x", "x_hat"), "x"),
    "batch_penalties 2-D codes": (lambda c: s2ae.batch_penalties(torch.ones(4, 3), torch.zeros(4).long()), "z_hat"),
    "batch_penalties regions a list of strings": (lambda c: s2ae.batch_penalties(
        torch.ones(1, 4, 3), [["a", "b", "c", "d"]]), "regions"),
    "sparse_penalties d_sae 2.5": (lambda c: s2ae.sparse_penalties(
        torch.ones(1, 4, 2), torch.zeros(1, 4, 2, dtype=torch.long), torch.zeros(1, 4, dtype=torch.long), 2.5),
        "d_sae"),
    "sparse_penalties idx of other shape": (lambda c: s2ae.sparse_penalties(
        torch.ones(1, 4, 2), torch.zeros(1, 4, 3, dtype=torch.long), torch.zeros(1, 4, dtype=torch.long), 16),
        "idx"),
    "s2ae_loss lam > 0 without regions": (lambda c: s2ae.s2ae_loss(
        c.sae, c.data.acts, c.data.valid, c.data.patch_idx, None, s2ae.SAETrainConfig(d_sae=16, k=2, lam=0.01)),
        "regions"),
    "s2ae_loss valid not bool": (lambda c: s2ae.s2ae_loss(
        c.sae, c.data.acts, torch.ones(3, 6), c.data.patch_idx, None, c.cfg), "valid"),
    "train_sae data None": (lambda c: s2ae.train_sae(None, c.cfg, progress=False), "data"),
    "train_sae cfg None": (lambda c: s2ae.train_sae(c.data, None, progress=False), "cfg"),
    "train_sae_reference data None": (lambda c: refopt.train_sae_reference(None, c.cfg, progress=False), "data"),
    "train_sae_reference cfg a dict": (lambda c: refopt.train_sae_reference(c.data, {"d_sae": 16}, progress=False),
                                       "cfg"),
    "linear_init not an SAE": (lambda c: refopt.linear_init(None, 0), "sae"),
    "SAEData patch_idx float": (lambda c: s2ae.SAEData(c.data.acts, c.data.valid, torch.tensor([0.5, 1.0]), (1, 2)),
                                "patch_idx"),
    "SAEData grid does not fit the patches": (lambda c: s2ae.SAEData(
        c.data.acts, c.data.valid, torch.arange(4), (3, 3), c.data.attn), "grid"),
    "SAEData attn of other images": (lambda c: s2ae.SAEData(
        c.data.acts, c.data.valid, torch.arange(4), (2, 2), torch.rand(2, 4, 4)), "attn"),
    "sae_report z_img without masks": (lambda c: metrics.sae_report(c.sae, torch.randn(4, 8), torch.ones(2, 4, 16)),
                                       "masks"),
    "sae_report not an SAE": (lambda c: metrics.sae_report(None, torch.randn(4, 8)), "sae"),
    "caption_loss token out of vocabulary": (lambda c: vlm.caption_loss(
        c.vlm, torch.rand(1, 4, 4), torch.full((1, 3), 99), 0), "tokens"),
    "caption_loss negative token": (lambda c: vlm.caption_loss(
        c.vlm, torch.rand(1, 4, 4), torch.full((1, 3), -1), 0), "tokens"),
    "caption_loss pad_id 2.5": (lambda c: vlm.caption_loss(
        c.vlm, torch.rand(1, 4, 4), torch.ones(1, 3, dtype=torch.long), 2.5), "pad_id"),
    "TinyVLM forward token out of vocabulary": (lambda c: c.vlm(torch.rand(1, 4, 4), torch.full((1, 3), 99)),
                                                "tokens"),
    "TinyVLM forward float tokens": (lambda c: c.vlm(torch.rand(1, 4, 4), torch.ones(1, 3)), "tokens"),
    "TinyVLM(None)": (lambda c: vlm.TinyVLM(None), "cfg"),
    "caption_accuracy scenes None": (lambda c: vlm.caption_accuracy(c.vlm, None), "scenes"),
    "caption_accuracy no scenes": (lambda c: vlm.caption_accuracy(c.vlm, c.scenes.subset([])), "scenes"),
    "caption_accuracy scenes of another vocabulary": (lambda c: vlm.caption_accuracy(
        vlm.TinyVLM(_vlm_cfg(vocab_size=3, max_text=c.scenes.tokens.shape[1], grid=(8, 8), patch_dim=48)),
        c.scenes), "scenes"),
    "caption_accuracy model None": (lambda c: vlm.caption_accuracy(None, c.scenes), "model"),
    "save_vlm not a TinyVLM": (lambda c: vlm.save_vlm(None, c.dir / "x"), "model"),
    "vlm_config scenes None": (lambda c: vlm.vlm_config(None, vlm.Recipe()), "scenes"),
    "ObjectVLM cfg None": (lambda c: objregions.ObjectVLM(None), "cfg"),
    "ObjectVLM n_prefix 10^9": (lambda c: objregions.ObjectVLM(_vlm_cfg(), 10 ** 9), "n_prefix"),
    "patch_attention batch 0": (lambda c: objregions.patch_attention(c.ovlm, c.scenes, batch=0), "batch"),
    "patch_attention batch 2.5": (lambda c: objregions.patch_attention(c.ovlm, c.scenes, batch=2.5), "batch"),
    "patch_attention scenes None": (lambda c: objregions.patch_attention(c.ovlm, None), "scenes"),
    "attention_correlations labels a list of strings": (lambda c: objregions.attention_correlations(
        torch.rand(1, 4, 4), [["a", "a", "b", "b"]]), "labels"),
    "proximity_purity scenes None": (lambda c: objregions.proximity_purity(None), "scenes"),
    "sae_inputs batch 0": (lambda c: experiment.sae_inputs(c.vlm, c.scenes, 1, batch=0), "batch"),
    "sae_inputs no scenes": (lambda c: experiment.sae_inputs(c.vlm, c.scenes.subset([]), 1), "scenes"),
    "sae_inputs scenes None": (lambda c: experiment.sae_inputs(c.vlm, None, 1), "scenes"),
    "patch_codes data None": (lambda c: experiment.patch_codes(c.sae, None), "data"),
    "score sae None": (lambda c: experiment.score(None, c.data, torch.ones(3, 1, 4, dtype=bool)), "sae"),
    "train_runs seeds 2.7": (lambda c: experiment.train_runs(c.data, c.cfg, seeds=(2.7,)), "seeds"),
    "train_runs lams a string": (lambda c: experiment.train_runs(c.data, c.cfg, lams="0.01"), "lams"),
    "summarise not a table": (lambda c: experiment.summarise(None), "df"),
    "summarise without method": (lambda c: experiment.summarise(pd.DataFrame({"EV": [1.0]}), ("EV",)), "method"),
    "paired_difference without method": (lambda c: experiment.paired_difference(
        pd.DataFrame({"EV": [1.0]}), "EV", "a", "b"), "method"),
    "paired_difference without seed": (lambda c: experiment.paired_difference(
        pd.DataFrame({"method": ["a", "b"], "EV": [1.0, 2.0]}), "EV", "a", "b"), "seed"),
    "fragmented_latents top 2.5": (lambda c: experiment.fragmented_latents(c.sae, c.data, torch.zeros(3, 4).long(),
                                                                           top=2.5), "top"),
    "fragmented_latents labels of other shape": (lambda c: experiment.fragmented_latents(
        c.sae, c.data, torch.zeros(2, 5).long()), "labels"),
    "objsae reading not a table": (lambda c: objsae.reading(None), "df"),
    "objsae paired_rows without columns": (lambda c: objsae.paired_rows(pd.DataFrame({"x": [1]}), "EV"), "df"),
    "study_summary without k": (lambda c: study.study_summary(pd.DataFrame({"EV": [1.0]})), "k"),
    "choose_k without lambda": (lambda c: study.choose_k(pd.DataFrame({"k": [8], "EV": [0.5]})), "lambda"),
    "region_reading without method": (lambda c: study.region_reading(pd.DataFrame({"x": [1]}), 0.1, 0.1), "method"),
    "study_table runs not a list": (lambda c: study.study_table(None, c.data, torch.ones(3, 1, 4, dtype=bool)),
                                    "runs"),
    "region_store 2.5": (lambda c: study.region_store(2.5), "n_regions"),
    "region_runs counts 0": (lambda c: study.region_runs(c.data, counts=(0,)), "counts"),
    "top_words tokens of another shape": (lambda c: interpret.top_words(
        torch.ones(2, 3, 4), torch.zeros(5, dtype=torch.long), ["a"], 0), "tokens"),
    "top_words token out of vocabulary": (lambda c: interpret.top_words(
        torch.ones(2, 3, 4), torch.full((2, 3), 7), types.SimpleNamespace(tokens=["a"]), 0), "tokens"),
    "ground_truth scenes None": (lambda c: interpret.ground_truth(torch.ones(3, 64, 16), None, [0]), "scenes"),
    "collect_references top_k string": (lambda c: interpret.collect_references(
        torch.ones(3, 4, 5), torch.zeros(3, 4, dtype=torch.long), [0], top_k="2"), "top_k"),
    "region_masks grid does not divide res": (lambda c: interpret.region_masks(
        torch.ones(3, 4, 16), torch.tensor([[0]]), [0], (2, 2), 7), "res"),
    "region_masks refs a ragged list": (lambda c: interpret.region_masks(
        torch.ones(3, 4, 16), [[0], [0, 1]], [0, 1], (2, 2), 8), "refs"),
    "identification_rate strings": (lambda c: interpret.identification_rate("ab", "ab"), "predicted"),
    "concept_masks scenes None": (lambda c: interpret.concept_masks(None), "scenes"),
    "PixelDescriber masks of other shape": (lambda c: describe.PixelDescriber()(
        np.ones((1, 8, 8, 3)), np.ones((1, 4, 4), bool)), "masks"),
    "PixelDescriber images 3-D": (lambda c: describe.PixelDescriber()(np.ones((8, 8, 3)), np.ones((8, 8), bool)),
                                  "images"),
    "nearest_colour palette empty": (lambda c: describe.nearest_colour(np.ones(3) / 2, {}), "palette"),
    "supports descriptions a string": (lambda c: describe.supports("a red square", ["red"], ["square"]),
                                       "descriptions"),
    "masked_image mask of other shape": (lambda c: hf_interpret.masked_image(np.ones((8, 8, 3)),
                                                                             np.ones((4, 4), bool)), "mask"),
    "synthesis_prompt descriptions a string": (lambda c: hf_interpret.synthesis_prompt("abc", ["a"]),
                                               "descriptions"),
    "parse_synthesis not a string": (lambda c: hf_interpret.parse_synthesis(None), "text"),
    "first_line not a string": (lambda c: hf_interpret.first_line(None), "text"),
    "normalise_concept not a string": (lambda c: hf_interpret.normalise_concept(3), "text"),
    "show_scenes idx out of range": (lambda c: show.show_scenes(c.scenes, [5]), "idx"),
    "overlay grid does not fit the values": (lambda c: show.overlay(np.ones((8, 8, 3)), np.ones(5), (2, 2)),
                                             "patch_values"),
    # ---- sizes that would reach the allocator --------------------------------------------------------------
    "average_linkage 10^5 patches": (lambda c: regions.average_linkage(torch.zeros(1, 1, 1).expand(
        1, 10 ** 5, 10 ** 5), 2), "dist"),
    "make_scenes 10^6 scenes": (lambda c: sdata.make_scenes(10 ** 6), "n"),
    "TinyVLMConfig n_layers 10^6": (lambda c: _vlm_cfg(n_layers=10 ** 6), "n_layers"),
    # ---- stored files whose sidecar does not describe the tensors -----------------------------------------
    "load_sae sidecar without config": (lambda c: topk.load_sae(c.dir / "sae_noconfig"), "config"),
    "load_sae config without d_sae": (lambda c: topk.load_sae(c.dir / "sae_nodsae"), "d_sae"),
    "load_sae config with an unknown key": (lambda c: topk.load_sae(c.dir / "sae_unknown"), "width"),
    "load_sae config k a string": (lambda c: topk.load_sae(c.dir / "sae_strk"), "k"),
    "load_sae config d_in 8.5": (lambda c: topk.load_sae(c.dir / "sae_fracdin"), "d_in"),
    "load_sae config a list": (lambda c: topk.load_sae(c.dir / "sae_config_list"), "config"),
    "load_vlm config with an unknown key": (lambda c: vlm.load_vlm(c.dir / "vlm_unknown"), "colour_depth"),
    "load_vlm sidecar without metadata": (lambda c: vlm.load_vlm(c.dir / "vlm_nometa"), "metadata"),
    "load_vlm sidecar without config": (lambda c: vlm.load_vlm(c.dir / "vlm_noconfig"), "config"),
    "load_vlm config without grid": (lambda c: vlm.load_vlm(c.dir / "vlm_nogrid"), "grid"),
    "load_object_vlm sidecar of another width": (lambda c: objregions.load_object_vlm(c.dir / "ovlm_other", 2, False),
                                                 "d_model"),
    "load_object_vlm other prefix count": (lambda c: objregions.load_object_vlm(c.dir / "ovlm", 3, False),
                                           "n_prefix"),
    # -- topk, metrics and s2ae
    "fvu a 0-d x": (lambda c: topk.fvu(torch.tensor(1.5), torch.tensor(0.5)), "x"),
    "fvu one row (no variance, no silent 1e38)": (lambda c: topk.fvu(torch.tensor([[1.0, 2.0]]),
                                                                    torch.zeros(1, 2)), "x"),
    "TopKSAE seed 2**64": (lambda c: topk.TopKSAE(4, 8, 2, seed=2 ** 64), "seed"),
    "miou masks a string": (lambda c: metrics.miou(torch.ones(1, 2, 3), "abc"), "masks"),
    "group_sparsity no patches": (lambda c: s2ae.group_sparsity(torch.zeros(0, 5), []), "z_hat"),
    "group_sparsity regions None": (lambda c: s2ae.group_sparsity(torch.ones(2, 5), None), "regions"),
    "group_sparsity regions of strings": (lambda c: s2ae.group_sparsity(torch.ones(2, 5), ["a", "b"]), "regions"),
    "group_sparsity int z_hat": (lambda c: s2ae.group_sparsity(torch.ones(2, 5, dtype=torch.int64), [0, 1]),
                                 "z_hat"),
    "batch_penalties no images": (lambda c: s2ae.batch_penalties(torch.zeros(0, 2, 4),
                                                                 torch.zeros(1, 2, dtype=torch.int64)), "z_hat"),
}


@pytest.mark.parametrize("case", list(CASES.values()), ids=list(CASES))
def test_bad_input_raises_a_clear_value_error_quickly(c, case):
    call, name = case
    e = assert_refused(lambda: call(c), [c.dir], SECONDS)
    assert name.lower() in str(e).lower(), f"the message does not name {name!r}: {e}"


def test_stored_sae_sidecar_without_seconds(c, tmp_path, monkeypatch):
    """A stored SAE whose sidecar lacks a field the loader reads is refused, naming the field and the file."""
    monkeypatch.setenv("COMPBOOK_DATA", str(tmp_path))
    cfg = s2ae.SAETrainConfig(d_sae=16, k=2, steps=1, batch_images=2)
    experiment.stored_runs(c.data, cfg, seeds=(0,), lams=(0.0,), store="sae/x")
    side = next((tmp_path / "sae" / "x").glob("*.json"))
    meta = json.loads(side.read_text())
    del meta["metadata"]["seconds"]
    side.write_text(json.dumps(meta))
    from compbook import results
    results.record(side.with_suffix(".safetensors"), side)        # registered as is: only the field is missing
    e = assert_refused(lambda: experiment.stored_runs(c.data, cfg, seeds=(0,), lams=(0.0,), store="sae/x"),
                       [tmp_path], SECONDS)
    assert "seconds" in str(e)


def test_good_inputs_still_work(c):
    """The other side: the intact checkpoints load, a valid batch trains, images in [0, 1] are described."""
    assert torch.equal(topk.load_sae(c.dir / "sae").W_enc, c.sae.W_enc)
    assert vlm.load_vlm(c.dir / "vlm")[0].cfg == c.vlm.cfg
    res = s2ae.train_sae(c.data, c.cfg, progress=False)
    assert np.isfinite(res.losses).all() and torch.isfinite(res.sae.b_dec).all()
    assert describe.nearest_colour(np.array([0.9, 0.1, 0.1])) == "red"
    assert torch.isfinite(c.sae.decode(torch.zeros(2, 16))).all()
    ov, _ = objregions.load_object_vlm(c.dir / "ovlm", 2, False)
    assert ov.n_prefix == 2
