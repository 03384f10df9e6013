"""Full mode on a GPU: one step of every trainer and one EMC2 batch on ``config.device()`` (CUDA).

Skipped, with the reason printed, on a machine without CUDA (the book's CPU machines and CI); run it where there
is a GPU: ``COMPBOOK_MODE=full python -m pytest tests/test_gpu.py`` (the tests set full mode themselves).
Each test checks that the work ran on the GPU (the device the trainer used) and that what comes back for plots
and storage is on the CPU. ``tests/test_devices.py`` checks on any machine that every trainer and scorer asks
``config.device()``.
"""

import numpy as np
import pytest
import torch

from compbook import config

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(),
                                reason="no CUDA device here: the GPU tests run on a machine with a GPU")


@pytest.fixture(autouse=True)
def full_mode(monkeypatch):
    monkeypatch.setenv(config.MODE_VARIABLE, "full")
    monkeypatch.delenv(config.SMOKE_VARIABLE, raising=False)
    assert config.device().type == "cuda"


def _on_cpu(tensors):
    return all(t.device.type == "cpu" for t in tensors)


def test_cppn_training_step_and_gpu_groups():
    from compbook.cppn import backprop, train
    from compbook.cppn.network import uniform_cppn
    model = uniform_cppn(4, 8, "tanh", seed=0)
    target = torch.rand(64, 64, 3)
    fit = train.fit(model, target, steps=2, progress=False)
    assert _on_cpu(fit.model.effective_weights()), "trained CPPNs come back to the CPU"
    on_gpu = backprop.Backprop(model, target.cuda(), device="cuda")
    assert on_gpu.coords.device.type == "cuda"
    assert on_gpu.group_bytes > backprop.CPU_GROUP_BYTES, "GPU groups are sized from its memory, not a CPU cache"
    batch = train.fit_many([uniform_cppn(4, 8, "tanh", seed=s) for s in range(3)], target, 2, progress=False)
    assert batch.losses.shape == (2, 3)


def test_emc2_batch_renders_on_the_gpu_and_matches_the_cpu(monkeypatch):
    from compbook.cppn import emc2
    from compbook.cppn.judges import SSIMJudge
    from compbook.cppn.network import uniform_cppn
    model = uniform_cppn(3, 6, "tanh", seed=1)
    assert emc2.on_scoring_device(model).mask0.device.type == "cuda"
    gpu = emc2.compositional_score(model, SSIMJudge(), "skull", res=32, sample=16, progress=False)
    monkeypatch.setenv(config.MODE_VARIABLE, "cpu")
    cpu = emc2.compositional_score(model, SSIMJudge(), "skull", res=32, sample=16, progress=False)
    assert model.mask0.device.type == "cpu", "scoring must not move the caller's model"
    assert (gpu.verdicts == cpu.verdicts).float().mean() >= 0.9, "GPU renders judged unlike the CPU's"


def test_dual_encoder_step():
    from compbook import scenes as S
    from compbook.binding import data as D
    from compbook.binding.encoders import EncoderConfig
    from compbook.binding.train import DualTrainConfig, train_stack
    sp = S.clevr2d()
    data = D.build_pairs(sp, S.all_pairs(range(24))[::9], [0, 5], res=32, max_len=12)
    enc = EncoderConfig(res=32, channels=(4, 8, 8), d_out=16, vocab_size=len(S.vocabulary(sp)), max_len=12,
                        width=16, layers=1, heads=2)
    out = train_stack(enc, DualTrainConfig(steps=2, batch=8, warmup=1, eval_every=1), data, 2,
                      val_score=lambda st: np.zeros(st.n_models), progress=False)
    assert out.stack.device.type == "cuda" and out.losses.shape == (2, 2)
    z = out.stack.encode_images(data.images[:4])
    assert z.device.type == "cpu" and z.shape == (2, 4, 16)


def test_controlled_step_and_complexity_fit():
    from compbook.binding.complexity import ComplexityConfig, fit_binding_mlp
    from compbook.binding.controlled import ControlledConfig, train_controlled
    from compbook.binding.splits import coverage_split
    cfg = ControlledConfig(n_concepts=2, n_values=3, d_model=8, n_layers=1, n_heads=2, d_out=8, steps=2, batch=4,
                           warmup=1, eval_every=1, eval_scenes=8, n_swaps=2)
    res = train_controlled(cfg, [coverage_split(9, 0.6, seed=0)], [0], progress=False)
    assert _on_cpu(res.params.values())
    vals = np.stack(np.unravel_index(np.arange(27), (3, 3, 3)), -1)[None, :, None, :]
    params = fit_binding_mlp(vals, np.random.default_rng(0).normal(size=(1, 27, 4)), (3, 3, 3), 8,
                             ComplexityConfig(widths=(8,), table_dim=4, steps=2))
    assert _on_cpu(params.values())


def test_recipe_step():
    from compbook.binding.recipe.train import train_recipe
    from compbook.binding.recipe.config import RecipeConfig
    cfg = RecipeConfig(n_values=6, d_model=16, n_heads=2, n_layers=1, d_ff=32, d_out=8, steps=2, batch=16,
                       eval_every=2, eval_scenes=40, eval_batches=2, n_concept_queries=8, n_object_queries=8)
    model, record = train_recipe(cfg, progress=False)
    assert next(model.parameters()).device.type == "cuda" and record["steps"] == 2


def test_sae_and_tiny_vlm_steps():
    from compbook.sae.data import make_scenes
    from compbook.sae.s2ae import SAEData, SAETrainConfig, train_sae
    from compbook.sae.vlm import TinyVLMConfig, VLMTrainConfig, train_vlm
    scenes = make_scenes(16, seed=0)
    cfg = TinyVLMConfig(vocab_size=len(scenes.vocab), patch_dim=scenes.patches.shape[-1], grid=scenes.grid,
                        max_text=scenes.tokens.shape[1], d_model=16, n_layers=2, n_heads=2, d_mlp=32,
                        pad_id=scenes.vocab.pad_id)
    vlm, info = train_vlm(cfg, scenes, VLMTrainConfig(steps=2, batch=4), progress=False)
    assert _on_cpu(vlm.parameters()) and len(info["losses"]) == 2
    g = torch.Generator().manual_seed(0)
    data = SAEData(torch.randn(8, 20, 8, generator=g), torch.ones(8, 20, dtype=torch.bool), torch.arange(16),
                   (4, 4), torch.softmax(torch.randn(8, 16, 16, generator=g), -1))
    res = train_sae(data, SAETrainConfig(d_sae=32, k=4, lam=0.01, steps=2, batch_images=4), progress=False)
    assert _on_cpu(res.sae.parameters()) and len(res.losses) == 2


def test_stacked_sae_sweep_on_the_gpu():
    """Part C's sweep configs on CUDA: records come back on the CPU; a stack and the SAEs one by one agree within
    Adam's step (lr per step: on a GPU the batched matmuls may round differently, so not bit for bit)."""
    from compbook.sae.runs import tasks
    configs = [c | {"device": "cuda", "train": c["train"] | {"steps": 3}} for c in tasks.tiny_sweep().configs[:4]]
    stacked = tasks.fit_many(configs)
    for config, record in zip(configs, stacked):
        alone = tasks.fit_one(config)
        for name in ("W_enc", "W_dec", "b_enc", "b_dec"):
            assert record[name].device.type == "cpu" and torch.isfinite(record[name]).all()
            assert (record[name] - alone[name]).abs().max() <= 2 * config["train"]["lr"] * 3
        assert record["final loss"] == pytest.approx(alone["final loss"], rel=1e-3)


def test_semantic_classifier_step():
    from compbook.cppn.judges import semantic
    net, curve = semantic.train_classifier(steps=2, batch=4, progress=False)
    assert _on_cpu(net.parameters())


def test_memory_budget_of_device_tensors(monkeypatch):
    from compbook import checks
    monkeypatch.delenv(checks.MEMORY_BUDGET_VARIABLE, raising=False)
    free, _ = torch.cuda.mem_get_info()
    assert checks.memory_budget_mb("cuda") == pytest.approx(
        max(checks.MEMORY_BUDGET_MB, config.MEMORY_SHARE * free / 2 ** 20), rel=0.2)
