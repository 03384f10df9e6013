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
