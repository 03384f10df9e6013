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
