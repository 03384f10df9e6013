"""compbook.sae.experiment: intervals, paired differences, fragmentation counts."""

import pandas as pd
import pytest
import torch
from scipy import stats

from compbook.sae import experiment as ex
from compbook.sae.s2ae import SAEData


def test_summarise_and_paired_difference():
    df = pd.DataFrame({"method": ["vanilla", "S2AE"] * 3, "seed": [0, 0, 1, 1, 2, 2],
                       "mIoU": [0.1, 0.2, 0.2, 0.25, 0.3, 0.4]})
    table = ex.summarise(df, columns=("mIoU",))
    half = stats.t.ppf(0.975, 2) * 0.1 / 3 ** 0.5
    assert table.loc["vanilla", "mIoU"] == f"0.200 ± {half:.3f}"
    m, h = ex.paired_difference(df, "mIoU", "vanilla", "S2AE")
    assert m == pytest.approx((0.1 + 0.05 + 0.1) / 3)
    assert h > 0


class OneLatent:
    """A stand-in SAE whose single latent fires on the patches where x[..., 0] > 0."""
    def encode(self, x):
        return (x[:, :1] > 0).float()


def test_fragmented_latents_counts_objects_and_background():
    acts = torch.zeros(1, 4, 2)
    acts[0, [0, 2, 3], 0] = 1.0                        # fires on patches 0, 2, 3
    data = SAEData(acts, torch.ones(1, 4, dtype=torch.bool), torch.arange(4), (2, 2))
    labels = torch.tensor([[0, 0, 1, -1]])             # patch 0: object 0, 2: object 1, 3: background
    assert ex.fragmented_latents(OneLatent(), data, labels, top=1) == [(0, 3.0)]


def tiny_data(shift=0.0):
    g = torch.Generator().manual_seed(0)
    acts = torch.randn(6, 5, 8, generator=g) + shift
    attn = torch.rand(6, 4, 4, generator=g)
    return SAEData(acts, torch.ones(6, 5, dtype=torch.bool), torch.arange(4), (2, 2), attn)


def test_stored_runs_reload_only_the_same_question(tmp_path, monkeypatch):
    from compbook.sae.s2ae import SAETrainConfig

    monkeypatch.setenv("COMPBOOK_DATA", str(tmp_path))
    calls = []
    real = ex.train_sae
    monkeypatch.setattr(ex, "train_sae", lambda *a, **k: calls.append(1) or real(*a, **k))
    cfg = SAETrainConfig(d_sae=16, k=2, steps=3, batch_images=2, n_regions=2)
    first = ex.stored_runs(tiny_data(), cfg, seeds=(0,), lams=(0.0, 0.01))
    assert len(calls) == 2 and len(list((tmp_path / "sae" / "runs").glob("lam0p01_seed0_*.safetensors"))) == 1
    again = ex.stored_runs(tiny_data(), cfg, seeds=(0,), lams=(0.0, 0.01))
    assert len(calls) == 2, "the same data and config must be loaded, not trained again"
    for a, b in zip(first, again):
        assert a["method"] == b["method"] and torch.equal(a["sae"].W_enc, b["sae"].W_enc)
    ex.stored_runs(tiny_data(shift=0.1), cfg, seeds=(0,), lams=(0.0,))
    assert len(calls) == 3, "other training data: a stored SAE must never be served"
    ex.stored_runs(tiny_data(shift=0.1), ex.dataclasses.replace(cfg, steps=4), seeds=(0,), lams=(0.0,))
    assert len(calls) == 4, "another training config: a stored SAE must never be served"


# stored SAEs are keyed by the question that made their activations, never by the activations' float bytes


_QUESTION = """
import sys, torch
from compbook.sae import experiment as ex, vlm
from compbook.sae.data import make_scenes
import numpy as np
model = vlm.TinyVLM(vlm.TinyVLMConfig(vocab_size=17, patch_dim=48, grid=(8, 8), max_text=17, d_model=16,
                                      n_layers=2, n_heads=2, d_mlp=32))
# weights from numpy's generator, the same bits on every CPU (torch's own init follows the vector instructions,
# as a stored model's weights, read from their file, do not)
with torch.no_grad():
    for i, p in enumerate(model.parameters()):
        p.copy_(torch.from_numpy(0.2 * np.random.default_rng(i).standard_normal(tuple(p.shape)).astype("float32")))
data = ex.sae_inputs(model, make_scenes(24, seed=3), 1)
print(torch.backends.cpu.get_cpu_capability(), data.question, ex.data_digest(data),
      ex.data_digest(ex.SAEData(data.acts, data.valid, data.patch_idx, data.grid, data.attn)))
"""


def _question_in(capability):
    """(capability, question, data_digest, bytes digest) of one tiny extraction, run in a fresh process with
    torch's vector instructions set to ``capability`` (None: the CPU's best)."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "ATEN_CPU_CAPABILITY"}
    if capability:
        env["ATEN_CPU_CAPABILITY"] = capability
    out = subprocess.run([sys.executable, "-c", _QUESTION], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.split()


def test_stored_sae_key_is_the_same_on_every_cpu():
    """The likely bug: keying a stored SAE by the activations' bytes. A matrix product's last bits follow the
    CPU's vector instructions, so another machine would miss every stored SAE and train them all again."""
    best, plain = _question_in(None), _question_in("default")
    assert plain[0] == "DEFAULT"
    assert best[1] == plain[1], "the question digest depends on the CPU's vector instructions"
    assert best[2] == best[1] and plain[2] == plain[1], "data_digest must return the question when known"
    assert len(best[1]) == 64 and best[3] != best[1]


def test_question_digest_changes_with_every_part_of_the_question():
    from compbook.sae import vlm
    from compbook.sae.data import make_scenes

    torch.manual_seed(0)
    cfg = vlm.TinyVLMConfig(vocab_size=17, patch_dim=48, grid=(8, 8), max_text=17, d_model=16, n_layers=2,
                            n_heads=2, d_mlp=32)
    model, scenes = vlm.TinyVLM(cfg), make_scenes(6, seed=3)
    base = ex.question_digest(model, scenes, 1)
    assert ex.question_digest(model, scenes, 1) == base
    assert ex.question_digest(model, scenes, 0) != base, "the layer is part of the question"
    assert ex.question_digest(model, make_scenes(6, seed=4), 1) != base, "the scenes are part of the question"
    with torch.no_grad():
        next(model.parameters()).view(-1)[0] += 1e-6
    assert ex.question_digest(model, scenes, 1) != base, "the weights are part of the question"
    data = ex.sae_inputs(model, scenes, 1)
    assert data.question == ex.question_digest(model, scenes, 1)
    with pytest.raises(ValueError, match="question"):
        SAEData(data.acts, data.valid, data.patch_idx, data.grid, data.attn, question="not a digest")
