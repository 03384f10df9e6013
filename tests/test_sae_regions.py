"""compbook.sae.regions: the batched average linkage agrees with scikit-learn; planted blocks are found."""

import numpy as np
import pytest
import torch

from compbook.sae.regions import (average_linkage, grid_distance, image_attention, patch_regions,
                                  region_distance, sklearn_regions, split_regions)


def random_distances(b, p, seed):
    x = torch.rand(b, p, p, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    d = (x + x.transpose(1, 2)) / 2
    d.diagonal(dim1=1, dim2=2).zero_()
    return d


@pytest.mark.parametrize("p,k", [(12, 3), (40, 20), (25, 24), (9, 1), (64, 20)])
def test_matches_sklearn_on_random_matrices(p, k):
    d = random_distances(6, p, seed=p + k)
    ours = average_linkage(d, k).numpy()
    ref = sklearn_regions(d.numpy(), k)
    bad = [i for i in range(len(d)) if not np.array_equal(ours[i], ref[i])]
    assert not bad, f"images {bad}: a wrong Lance-Williams update (weights by cluster size?) or merge order"


def block_attention(sizes, seed, noise=0.05):
    """Block-diagonal attention: high within planted blocks, low across, plus noise."""
    g = np.random.default_rng(seed)
    p = sum(sizes)
    truth = np.repeat(np.arange(len(sizes)), sizes)
    perm = g.permutation(p)
    truth = truth[perm]
    a = np.where(truth[:, None] == truth[None, :], 0.8, 0.1) + noise * g.random((p, p))
    return torch.tensor(a / a.sum(1, keepdims=True)), truth


def test_planted_blocks_are_recovered():
    attn, truth = zip(*(block_attention([10, 6, 12, 8], seed=s) for s in range(4)))
    attn = torch.stack(attn)
    labels = patch_regions(attn, (6, 6), n_regions=4).numpy()
    for lab, t in zip(labels, truth):
        # same partition: each planted block maps to exactly one region and vice versa
        pairs = set(zip(lab.tolist(), t.tolist()))
        assert len(pairs) == 4, "planted blocks were split or merged"
    ref = sklearn_regions(region_distance(attn, (6, 6)).numpy(), 4)
    assert np.array_equal(labels, ref)


def test_region_distance_properties():
    attn, _ = block_attention([8, 8], seed=0)
    d = region_distance(attn, (4, 4))
    assert torch.allclose(d, d.T) and (d.diagonal() == 0).all()
    assert d.min() >= 0 and d.max() <= 1
    g = grid_distance(4, 4)
    assert g.max() == 1 and g[0, 1] == pytest.approx(1 / 6) and g[0, 15] == 1
    # spatial factor only mildly reorders: exponent 0 reproduces the plain normalised distance off the diagonal
    plain = region_distance(attn, (4, 4), exponent=0.0)
    off = ~torch.eye(16, dtype=torch.bool)
    assert torch.all(d[off] <= plain[off] + 1e-12)


def test_image_attention_mean_and_block():
    a = torch.rand(2, 3, 4, 10, 10)
    idx = torch.tensor([1, 2, 3, 4])
    m = image_attention(a, idx)
    assert m.shape == (2, 4, 4)
    assert torch.allclose(m[1, 2, 3], a[1, :, :, 3, 4].mean())


def test_deterministic():
    d = random_distances(3, 30, 1)
    assert torch.equal(average_linkage(d, 7), average_linkage(d, 7))


def test_bad_inputs():
    with pytest.raises(ValueError, match="n_regions=17"):
        average_linkage(random_distances(1, 16, 0), 17)
    with pytest.raises(ValueError, match="attn"):
        region_distance(torch.rand(2, 10, 10), (3, 3))


def test_more_regions_than_patches_raises_and_default_is_min_20_p():
    attn = torch.softmax(torch.randn(2, 9, 9), -1)
    with pytest.raises(ValueError, match="n_regions=10"):
        patch_regions(attn, (3, 3), n_regions=10)
    assert patch_regions(attn, (3, 3)).max() == 8, "default: min(20, P) = 9 regions of 9 patches"
    assert len(torch.unique(patch_regions(torch.softmax(torch.randn(1, 36, 36), -1), (6, 6)))) == 20


def test_split_regions_counts_regions_in_more_than_one_piece():
    joined = [0, 0, 1,
              2, 0, 1,
              2, 2, 1]                      # every region one piece
    apart = [0, 1, 0,
             1, 1, 1,
             2, 1, 2]                       # 0 and 2 in two pieces each (corners do not join)
    diagonal = [0, 1, 1,
                1, 0, 1,
                1, 1, 1]                    # 0 touches itself only at a corner: two pieces
    np.testing.assert_array_equal(split_regions(np.array([joined, apart, diagonal]), (3, 3)), [0, 2, 1])


@pytest.mark.parametrize("labels,grid", [(np.zeros((1, 8)), (3, 3)), (np.zeros(9), (3, 3)),
                                         (np.zeros((1, 9)), (0, 9))])
def test_split_regions_bad_input(labels, grid):
    with pytest.raises(ValueError, match="labels|grid"):
        split_regions(labels, grid)
