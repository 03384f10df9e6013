"""Bad and hostile inputs across Parts B and C: each must raise a ``ValueError`` quickly.

As in ``tests/test_bad_inputs.py`` (Part A): each case is one call a careless or curious reader might make; it
must raise ``ValueError`` (never a torch ``RuntimeError``, ``IndexError``, ``KeyError``, ``MemoryError``...)
within a second, with a message that says what is wrong, and leave the files of the fixture folder
byte-identical (no half-written checkpoint). The ids name the input.
"""

import json
import shutil
import types

import numpy as np
import pytest
from refusal import assert_refused
import torch

from compbook.results import checkpoints
from compbook.binding import controlled, data as bdata, decomposition, probes, recognition
from compbook.binding.runs import sweep
from compbook.binding.encoders import EncoderConfig
from compbook.binding.train import DualStack
from compbook.sae import interpret, metrics, regions, s2ae, topk

SECONDS = 1.0


@pytest.fixture(scope="module")
def c(tmp_path_factory):
    """Stored checkpoints to break: a TopK SAE, a dual-encoder stack, and broken copies of them."""
    d = tmp_path_factory.mktemp("bad_bc")
    sae = topk.TopKSAE(8, 16, 2)
    topk.save_sae(sae, d / "sae")
    stack = DualStack(EncoderConfig(res=16, channels=(4, 4, 4), d_out=8, width=8, layers=1, heads=2), 1, 0)
    stack.save(d / "stack")
    for name in ("trunc", "edited", "other"):
        for suffix in (".json", ".safetensors"):
            shutil.copy(d / f"sae{suffix}", d / f"{name}{suffix}")
    st = (d / "trunc.safetensors").read_bytes()
    (d / "trunc.safetensors").write_bytes(st[: len(st) // 2])
    t, header = checkpoints.load(d / "sae", format=topk.FORMAT)
    t["W_dec"] = t["W_dec"] + 1.0                         # weights edited after saving, sidecar kept
    from safetensors.torch import save_file
    save_file({k: v.contiguous() for k, v in t.items()}, str(d / "edited.safetensors"))
    other = json.loads((d / "other.json").read_text())
    other["config"]["d_sae"] = 32                         # the sidecar of another config
    (d / "other.json").write_text(json.dumps(other))
    space = controlled.ControlledConfig(n_values=3).tokens.space
    return types.SimpleNamespace(dir=d, sae=sae, stack=stack, space=space, z=torch.randn(6, 8))


CASES = {
    # -- Part B: recognition and decomposition
    "recognition positives not bool": lambda c: recognition.recognise(
        np.ones((3, 4)), np.ones((5, 4)), np.ones((3, 5))),
    "recognition embeddings of different widths": lambda c: recognition.cosine_logits(
        np.ones((3, 4)), np.ones((5, 6))),
    "recognition NaN embedding": lambda c: recognition.cosine_logits(
        np.full((2, 3), np.nan), np.ones((2, 3))),
    "recognition empty scenes": lambda c: recognition.cosine_logits(np.ones((0, 4)), np.ones((2, 4))),
    "object_vectors n_objects 0": lambda c: decomposition.object_vectors(
        np.ones((4, 3)), np.zeros((4, 2), int), 0),
    "object_vectors scenes and Z of different lengths": lambda c: decomposition.object_vectors(
        np.ones((4, 3)), np.zeros((5, 2), int), 2),
    "object_vectors object index out of range": lambda c: decomposition.object_vectors(
        np.ones((4, 3)), np.full((4, 2), 7), 2),
    "probe_accuracy mismatched lengths": lambda c: decomposition.probe_accuracy(
        np.ones((4, 3)), np.zeros(3), np.ones((2, 3)), np.zeros(2)),
    "r2 shapes differ": lambda c: decomposition.r2(np.ones((4, 3)), np.ones((4, 2))),
    "fit_probe unknown kind": lambda c: probes.fit_probe("quadratic", np.zeros((4, 2, 2), int), np.ones((4, 3))),
    "fit_probe embeddings of other length": lambda c: probes.fit_probe(
        "additive", np.zeros((4, 2, 2), int), np.ones((5, 3))),
    "fit_probe NaN embeddings": lambda c: probes.fit_probe(
        "additive", np.zeros((4, 2, 2), int), np.full((4, 3), np.nan)),
    # -- Part B: controlled models and the sweep
    "ControlledConfig pool unknown": lambda c: controlled.ControlledConfig(pool="max"),
    "ControlledConfig n_values 0": lambda c: controlled.ControlledConfig(n_values=0),
    "ControlledConfig d_model not divisible by heads": lambda c: controlled.ControlledConfig(d_model=30, n_heads=4),
    "ControlledConfig negative lr": lambda c: controlled.ControlledConfig(lr=-1e-3),
    "ControlledConfig steps 0": lambda c: controlled.ControlledConfig(steps=0),
    "subsample negative n": lambda c: controlled.subsample(np.zeros((5, 2), int), -1, 0),
    "check_coverages above 1": lambda c: sweep.check_coverages([0.5, 1.5]),
    "check_coverages zero": lambda c: sweep.check_coverages([0.0]),
    "check_coverages empty": lambda c: sweep.check_coverages([]),
    "SweepConfig coverage NaN": lambda c: sweep.SweepConfig(coverages=(float("nan"),)),
    "SweepConfig 10^7 test scenes": lambda c: sweep.SweepConfig(test_scenes=10 ** 7),
    "load_sweep n_values a path": lambda c: sweep.load_sweep("../../etc/passwd", c.dir),
    "spearman_bootstrap mismatched lengths": lambda c: sweep.spearman_bootstrap([1, 2, 3], [1, 2]),
    "transition level outside (0, 1)": lambda c: sweep.transition([0.1, 0.5], [0.0, 1.0], level=2.0),
    # -- Part B: dual encoders
    "EncoderConfig res not a multiple of 16": lambda c: EncoderConfig(res=30),
    "EncoderConfig heads do not divide width": lambda c: EncoderConfig(width=30, heads=4),
    "DualStack n_models 0": lambda c: DualStack(EncoderConfig(res=16), 0, 0),
    "DualStack.load truncated file": lambda c: DualStack.load(c.dir / "trunc"),
    "DualStack.load an SAE checkpoint": lambda c: DualStack.load(c.dir / "sae"),
    "tokenize caption longer than max_len": lambda c: bdata.tokenize(
        c.space, ["a " * 40], 8) if hasattr(c.space, "values") else bdata.tokenize(c.space, [""], 0),
    # -- Part C: TopK SAE
    "TopKSAE k larger than d_sae": lambda c: topk.TopKSAE(8, 16, 17),
    "TopKSAE k 0": lambda c: topk.TopKSAE(8, 16, 0),
    "TopKSAE d_sae 10^9": lambda c: topk.TopKSAE(8, 10 ** 9, 4),
    "TopKSAE d_in negative": lambda c: topk.TopKSAE(-8, 16, 2),
    "encode wrong width": lambda c: c.sae.encode(torch.ones(3, 9)),
    "encode NaN activations": lambda c: c.sae.encode(torch.full((3, 8), float("nan"))),
    "fvu shapes differ": lambda c: topk.fvu(torch.ones(4, 8), torch.ones(4, 7)),
    "fvu constant data": lambda c: topk.fvu(torch.ones(4, 8), torch.zeros(4, 8)),
    "load_sae truncated file": lambda c: topk.load_sae(c.dir / "trunc"),
    "load_sae edited weights": lambda c: topk.load_sae(c.dir / "edited"),
    "load_sae sidecar of another config": lambda c: topk.load_sae(c.dir / "other"),
    "load_sae a dual-encoder checkpoint": lambda c: topk.load_sae(c.dir / "stack"),
    # -- Part C: regions, penalties, metrics, interpretation
    "group_sparsity regions of other length": lambda c: s2ae.group_sparsity(torch.ones(6, 4), torch.zeros(5)),
    "group_sparsity float regions": lambda c: s2ae.group_sparsity(torch.ones(6, 4), torch.full((6,), 0.5)),
    "exclusive_sparsity NaN codes": lambda c: s2ae.exclusive_sparsity(
        torch.full((6, 4), float("nan")), torch.zeros(6, dtype=torch.long)),
    "patch_regions more regions than patches": lambda c: regions.patch_regions(
        torch.rand(1, 4, 4), (2, 2), n_regions=5),
    "patch_regions grid does not match patches": lambda c: regions.patch_regions(
        torch.rand(1, 4, 4), (3, 3), n_regions=2),
    "patch_regions n_regions 0": lambda c: regions.patch_regions(torch.rand(1, 4, 4), (2, 2), n_regions=0),
    "miou masks of other images": lambda c: metrics.miou(torch.ones(2, 4, 3), torch.ones(3, 1, 4, dtype=bool)),
    "miou masks not bool": lambda c: metrics.miou(torch.ones(2, 4, 3), torch.ones(2, 1, 4)),
    "identification_rate different lengths": lambda c: interpret.identification_rate(["a", "b"], ["a"]),
    "identification_rate empty": lambda c: interpret.identification_rate([], []),
    "SAETrainConfig k above d_sae": lambda c: s2ae.SAETrainConfig(d_sae=8, k=9),
    "SAETrainConfig negative lambda": lambda c: s2ae.SAETrainConfig(lam=-0.01),
    "SAETrainConfig steps 0": lambda c: s2ae.SAETrainConfig(steps=0),
}


@pytest.mark.parametrize("call", list(CASES.values()), ids=list(CASES))
def test_bad_input_raises_value_error_quickly(c, call):
    assert_refused(lambda: call(c), [c.dir], SECONDS)


def test_good_checkpoints_still_load(c):
    """The other side: the intact checkpoints of the fixture load and give the saved weights back."""
    sae = topk.load_sae(c.dir / "sae")
    assert torch.equal(sae.W_enc, c.sae.W_enc)
    stack = DualStack.load(c.dir / "stack")
    assert all(torch.equal(stack.params[k], c.stack.params[k]) for k in c.stack.params)
