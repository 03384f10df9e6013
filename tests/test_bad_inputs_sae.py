"""Bad inputs to Part C's public functions not in ``tests/test_bad_inputs_parts_bc.py``.

Each case must raise ``ValueError`` quickly, naming the argument, and leave the fixture folder byte-identical
(``tests/refusal.py``). The ids name the input.
"""

import json
import shutil
import types

import numpy as np
import pandas as pd
import pytest
import torch
from refusal import assert_refused

from compbook.sae.studies import claims, objregions, objsae, refopt, study
from compbook.sae import (
    coherence, crossmodal, data as sdata, describe, experiment, interpret, metrics, regions, s2ae, sizes, topk, vlm
)

SECONDS = 1.0
NAN = float("nan")


@pytest.fixture(scope="module")
def c(tmp_path_factory):
    d = tmp_path_factory.mktemp("bad_sae")
    (d / "keep.txt").write_text("unchanged")
    sae = topk.TopKSAE(8, 16, 2)
    topk.save_sae(sae, d / "sae")
    model = vlm.TinyVLM(vlm.TinyVLMConfig(vocab_size=10, patch_dim=4, grid=(2, 2), max_text=4, d_model=8,
                                          n_layers=1, n_heads=2, d_mlp=16))
    vlm.save_vlm(model, d / "vlm")
    for name in ("vlm_trunc", "vlm_other"):
        for suffix in (".json", ".safetensors"):
            shutil.copy(d / f"vlm{suffix}", d / f"{name}{suffix}")
    st = (d / "vlm_trunc.safetensors").read_bytes()
    (d / "vlm_trunc.safetensors").write_bytes(st[: len(st) // 2])
    other = json.loads((d / "vlm_other.json").read_text())
    other["config"]["d_model"] = 16                       # the sidecar of another config
    (d / "vlm_other.json").write_text(json.dumps(other))
    return types.SimpleNamespace(dir=d, sae=sae, vlm=model)


CASES = {
    # -- topk
    "TopKSAEConfig k above d_sae": lambda c: topk.TopKSAEConfig(d_in=8, d_sae=4, k=5),
    "check_activations wrong width": lambda c: topk.check_activations(torch.ones(3, 9), 8),
    "check_activations complex values": lambda c: topk.check_activations(torch.ones(3, 8, dtype=torch.cfloat), 8),
    "l0 empty codes": lambda c: topk.l0(torch.ones(0, 4)),
    "l0 NaN codes": lambda c: topk.l0(torch.full((2, 4), NAN)),
    "dead_latents 0-D code": lambda c: topk.dead_latents(torch.tensor(1.0)),
    "fvu_loss shapes differ": lambda c: topk.fvu_loss(torch.ones(4, 8), torch.ones(4, 7)),
    "save_sae not an SAE": lambda c: topk.save_sae(object(), c.dir / "x"),
    # -- regions
    "grid_distance rows 0": lambda c: regions.grid_distance(0, 3),
    "grid_distance 10^5 x 10^5": lambda c: regions.grid_distance(10 ** 5, 10 ** 5),
    "image_attention patch index out of range": lambda c: regions.image_attention(
        torch.rand(1, 1, 4, 4), torch.tensor([0, 9])),
    "image_attention NaN": lambda c: regions.image_attention(torch.full((1, 1, 4, 4), NAN), torch.arange(4)),
    "region_distance grid with 0 rows": lambda c: regions.region_distance(torch.rand(1, 4, 4), (0, 4)),
    "check_n_regions 2.5": lambda c: regions.check_n_regions(2.5, 4),
    "average_linkage n_clusters 0": lambda c: regions.average_linkage(torch.rand(4, 4), 0),
    "average_linkage not square": lambda c: regions.average_linkage(torch.rand(4, 3), 2),
    "average_linkage NaN": lambda c: regions.average_linkage(torch.full((4, 4), NAN), 2),
    "sklearn_regions n_clusters above n": lambda c: regions.sklearn_regions(np.ones((4, 4)), 5),
    # -- s2ae
    "binarize_ste NaN": lambda c: s2ae.binarize_ste(torch.full((2, 3), NAN)),
    "group_profiles NaN codes": lambda c: s2ae.group_profiles(torch.full((6, 4), NAN), torch.zeros(6).long()),
    "batch_penalties regions of other batch": lambda c: s2ae.batch_penalties(
        torch.ones(2, 6, 4), torch.zeros(3, 6, dtype=torch.long)),
    "SAETrainConfig d_sae 10^9": lambda c: s2ae.SAETrainConfig(d_sae=10 ** 9),
    "SAETrainConfig lr NaN": lambda c: s2ae.SAETrainConfig(lr=NAN),
    "SAEData acts NaN": lambda c: s2ae.SAEData(
        torch.full((2, 3, 8), NAN), torch.ones(2, 3, dtype=torch.bool), torch.arange(2), (1, 2)),
    # -- metrics
    "latent_iou masks not bool": lambda c: metrics.latent_iou(torch.ones(2, 4, 3), torch.ones(2, 1, 4)),
    "mask_iou z_img 2-D": lambda c: metrics.mask_iou(torch.ones(4, 3), torch.ones(2, 1, 4, dtype=torch.bool)),
    "region_purity negative regions": lambda c: metrics.region_purity(-torch.ones(2, 4), torch.zeros(2, 4)),
    "region_purity empty": lambda c: metrics.region_purity(torch.ones(0, 4), torch.ones(0, 4)),
    "sae_report x of other width": lambda c: metrics.sae_report(c.sae, torch.ones(4, 9)),
    # -- data
    "make_scenes n 0": lambda c: sdata.make_scenes(0),
    "make_scenes res 100000": lambda c: sdata.make_scenes(2, res=100_000),
    "make_scenes 10^8 scenes": lambda c: sdata.make_scenes(10 ** 8),
    "make_scenes patch does not divide res": lambda c: sdata.make_scenes(2, res=32, patch=5),
    "make_scenes n_objects reversed": lambda c: sdata.make_scenes(2, n_objects=(3, 1)),
    "make_scenes more objects than slots": lambda c: sdata.make_scenes(2, n_objects=(1, 99)),
    "make_scenes unknown layout": lambda c: sdata.make_scenes(2, layout="spiral"),
    # -- crossmodal, coherence
    "check_latents index above d_sae": lambda c: crossmodal.check_latents([0, 16], 16),
    "check_latents fractional index": lambda c: crossmodal.check_latents([0.5], 16),
    "top_shares labels not bool": lambda c: crossmodal.top_shares(torch.rand(6, 4), torch.rand(6, 2)),
    "top_shares top_n 0": lambda c: crossmodal.top_shares(torch.rand(6, 4), torch.ones(6, 2, dtype=bool), 0),
    "crossmodal_summary empty table": lambda c: crossmodal.crossmodal_summary(pd.DataFrame()),
    "coherence unknown denominator": lambda c: coherence.coherence(pd.DataFrame(), "all"),
    "coherence table without columns": lambda c: coherence.coherence(pd.DataFrame({"x": [1]}), "live"),
    "definition_name unknown labelling": lambda c: coherence.definition_name("phonetic", "live"),
    # -- interpret, describe
    "reference_scores weight negative": lambda c: interpret.reference_scores(
        torch.ones(2, 4, 3), torch.zeros(2, 4, dtype=torch.long), [0], weight=-1.0),
    "collect_references top_k 0": lambda c: interpret.collect_references(
        torch.ones(2, 4, 3), torch.zeros(2, 4, dtype=torch.long), [0], top_k=0),
    "top_words latent out of range": lambda c: interpret.top_words(
        torch.ones(2, 3, 4), torch.zeros(2, 3, dtype=torch.long), ["a"], 99),
    "top_words top_n 0": lambda c: interpret.top_words(
        torch.ones(2, 3, 4), torch.zeros(2, 3, dtype=torch.long), ["a"], 0, top_n=0),
    "identification_table empty": lambda c: interpret.identification_table({}),
    "foreground image 2-D": lambda c: describe.foreground(np.ones((4, 4))),
    "foreground tol negative": lambda c: describe.foreground(np.ones((4, 4, 3)), tol=-1.0),
    "nearest_colour rgb of 2 channels": lambda c: describe.nearest_colour(np.ones(2)),
    "nearest_colour NaN": lambda c: describe.nearest_colour(np.full(3, NAN)),
    "silhouette size 0": lambda c: describe.silhouette(np.ones((4, 4), bool), size=0),
    "parse_description not a string": lambda c: describe.parse_description(3, ["red"], ["cube"]),
    "agree not strings": lambda c: describe.agree(None, "a red cube"),
    # -- experiment, study
    "method_name negative lambda": lambda c: experiment.method_name(-0.1),
    "method_name NaN lambda": lambda c: experiment.method_name(NAN),
    "verdict NaN": lambda c: experiment.difference_verdict(NAN, 0.1),
    "verdict negative half-width": lambda c: experiment.difference_verdict(0.1, -1.0),
    "paired_difference unknown column": lambda c: experiment.paired_difference(
        pd.DataFrame({"method": ["a", "b"], "seed": [0, 0], "EV": [1.0, 2.0]}), "nope", "a", "b"),
    "paired_difference unknown method": lambda c: experiment.paired_difference(
        pd.DataFrame({"method": ["a", "b"], "seed": [0, 0], "EV": [1.0, 2.0]}), "EV", "a", "zzz"),
    "summarise unknown column": lambda c: experiment.summarise(pd.DataFrame({"method": ["a"]}), ("EV",)),
    "load_setting n_train 0": lambda c: experiment.load_setting(0, 10, 1),
    "store_of k 0": lambda c: study.store_of(0),
    "store_of optimiser leaves its folder": lambda c: study.store_of(8, optimiser="../../etc"),
    "store_of store leaves data": lambda c: study.store_of(8, store="../../etc"),
    "choose_k ev_target above 1": lambda c: study.choose_k(
        pd.DataFrame({"lambda": [0.0], "k": [8], "EV": [0.5]}), ev_target=1.5),
    "reread paper_sign 0": lambda c: study.reread(0.1, 0.05, 0, 0.1),
    "reread NaN mean": lambda c: study.reread(NAN, 0.05, 1, 0.1),
    "read_table path leaves data": lambda c: study.read_table("../../etc/passwd"),
    "write_table path leaves data": lambda c: study.write_table(pd.DataFrame({"a": [1]}), "../../escape.json"),
    # -- refopt, objregions
    "linear_decay steps 0": lambda c: refopt.linear_decay(0, 0),
    "linear_decay negative step": lambda c: refopt.linear_decay(-1, 10),
    "attention_correlations labels of other shape": lambda c: objregions.attention_correlations(
        torch.rand(2, 4, 4), torch.zeros(3, 4, dtype=torch.long)),
    "attention_correlations not square": lambda c: objregions.attention_correlations(
        torch.rand(2, 4, 3), torch.zeros(2, 4, dtype=torch.long)),
    "proximity_purity n_regions 0": lambda c: objregions.proximity_purity(sdata.make_scenes(2), n_regions=0),
    "stored_object_vlm unknown variant": lambda c: objregions.stored_object_vlm("huge", "grid"),
    "region_table n_test 0": lambda c: objregions.region_table(n_test=0),
    # -- vlm (batch 2)
    "TinyVLMConfig vocab_size 0": lambda c: vlm.TinyVLMConfig(vocab_size=0),
    "TinyVLMConfig heads do not divide d_model": lambda c: vlm.TinyVLMConfig(vocab_size=10, d_model=30, n_heads=4),
    "TinyVLMConfig grid with 0 rows": lambda c: vlm.TinyVLMConfig(vocab_size=10, grid=(0, 8)),
    "TinyVLMConfig d_model 10^6": lambda c: vlm.TinyVLMConfig(vocab_size=10, d_model=10 ** 6, n_heads=1),
    "TinyVLMConfig pad_id outside the vocabulary": lambda c: vlm.TinyVLMConfig(vocab_size=10, pad_id=10),
    "VLMTrainConfig steps 0": lambda c: vlm.VLMTrainConfig(steps=0),
    "VLMTrainConfig negative lr": lambda c: vlm.VLMTrainConfig(lr=-1.0),
    "Recipe n_train 0": lambda c: vlm.Recipe(n_train=0),
    "Recipe heads do not divide d_model": lambda c: vlm.Recipe(d_model=30, n_heads=4),
    "load_vlm truncated file": lambda c: vlm.load_vlm(c.dir / "vlm_trunc"),
    "load_vlm sidecar of another config": lambda c: vlm.load_vlm(c.dir / "vlm_other"),
    "load_vlm an SAE checkpoint": lambda c: vlm.load_vlm(c.dir / "sae"),
    "caption_accuracy batch 0": lambda c: vlm.caption_accuracy(c.vlm, None, batch=0),
    # -- claims, objsae, full
    "claim_row unknown claim": lambda c: claims.claim_row("S2AE wins", "s", "m", 0.1, 0.1),
    "claim_row mean NaN": lambda c: claims.claim_row("mIoU higher", "s", "m", NAN, 0.1, vanilla=0.2),
    "claim_row relative size without vanilla": lambda c: claims.claim_row("mIoU higher", "s", "m", 0.1, 0.1),
    "claim_row L0 without k": lambda c: claims.claim_row("L0 lower", "s", "m", -1.0, 0.1),
    "claim_row negative half-width": lambda c: claims.claim_row("mIoU higher", "s", "m", 0.1, -0.1, vanilla=0.2),
    "claims table study without rows at k": lambda c: claims.table(pd.DataFrame(
        {"k": [8], "lambda": [0.0], "method": ["vanilla"], "seed": [0]}), k=32),
    "claims short without columns": lambda c: claims.short(pd.DataFrame({"claim": ["x"]})),
    "claims tally without verdicts": lambda c: claims.tally(pd.DataFrame({"claim": ["x"]})),
    "objsae store_of unknown variant": lambda c: objsae.store_of("huge", "grid2"),
    "objsae store_of unknown layout": lambda c: objsae.store_of("4 prefix tokens", "grid9"),
    "objsae store outside data": lambda c: objsae.store_of("4 prefix tokens", "grid2", store="../x"),
    "objsae setting unknown variant": lambda c: objsae.setting("huge"),
    "objsae reading without columns": lambda c: objsae.reading(pd.DataFrame({"layout": ["grid2"]})),
    "PartCRun n_train 0": lambda c: sizes.PartCRun(n_train=0),
    "PartCRun without the paper's lambda": lambda c: sizes.PartCRun(lams=(0.0, 0.003)),
    "PartCRun store outside data": lambda c: sizes.PartCRun(store="../../etc"),
}


@pytest.mark.parametrize("call", list(CASES.values()), ids=list(CASES))
def test_bad_input_raises_value_error_quickly(c, call):
    assert_refused(lambda: call(c), [c.dir], SECONDS)
