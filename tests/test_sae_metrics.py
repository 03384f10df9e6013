"""compbook.sae.metrics: per-latent IoU against exact masks, by a loop reference."""

import math

import pytest
import torch

from compbook.sae.metrics import best_and_worst_images, chance_miou, image_iou, latent_iou, miou


def loop_iou(z, masks):
    out = []
    for j in range(z.shape[2]):
        vals = []
        for n in range(z.shape[0]):
            a = set((z[n, :, j] != 0).nonzero().flatten().tolist())
            if not a:
                continue
            best = 0.0
            for m in masks[n]:
                s = set(m.nonzero().flatten().tolist())
                if s or a:
                    best = max(best, len(a & s) / len(a | s))
            vals.append(best)
        out.append(sum(vals) / len(vals) if vals else float("nan"))
    return out


def test_latent_iou_matches_loop():
    g = torch.Generator().manual_seed(0)
    z = torch.relu(torch.randn(5, 12, 7, generator=g) - 0.8)
    z[:, :, 3] = 0                                       # a dead latent
    masks = torch.rand(5, 4, 12, generator=g) > 0.6
    masks[:, 3] = False                                  # padding mask
    ours = latent_iou(z, masks).tolist()
    ref = loop_iou(z, masks)
    for a, b in zip(ours, ref):
        assert (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b, abs=1e-6)
    assert math.isnan(ours[3])
    assert miou(z, masks) == pytest.approx(sum(v for v in ref if not math.isnan(v)) / 6, abs=1e-6)


def test_image_iou_is_per_image_and_averages_to_latent_iou():
    g = torch.Generator().manual_seed(1)
    z = torch.relu(torch.randn(6, 10, 5, generator=g) - 0.9)
    z[2, :, 1] = 0                                       # latent 1 silent on image 2
    masks = torch.rand(6, 3, 10, generator=g) > 0.5
    per = image_iou(z, masks)
    assert per.shape == (6, 5) and math.isnan(per[2, 1])
    assert torch.allclose(per.nanmean(0), latent_iou(z, masks), equal_nan=True)
    one = torch.zeros(1, 4, 1)
    one[0, :2] = 1.0                                     # fires on patches 0, 1; the mask holds 1, 2, 3
    assert image_iou(one, torch.tensor([[[False, True, True, True]]])).item() == pytest.approx(0.25)


def test_perfect_latent_scores_one():
    masks = torch.zeros(2, 2, 6, dtype=torch.bool)
    masks[0, 0, :3] = True
    masks[1, 1, 2:5] = True
    z = masks.any(1).float()[..., None] * 0 + torch.stack([masks[0, 0], masks[1, 1]]).float()[..., None]
    assert miou(z, masks) == 1.0


def test_bad_masks():
    with pytest.raises(ValueError, match="masks"):
        latent_iou(torch.zeros(2, 6, 3), torch.zeros(2, 4, 5, dtype=torch.bool))


def test_region_purity():
    from compbook.sae.metrics import region_purity

    labels = torch.tensor([[0, 0, 1, 1, -1, -1]])
    assert region_purity(torch.tensor([[0, 0, 1, 1, 2, 2]]), labels) == 1.0
    assert region_purity(torch.tensor([[0, 0, 0, 1, 1, 1]]), labels) == pytest.approx(4 / 6)
    assert region_purity(torch.zeros(1, 6, dtype=torch.long), labels) == pytest.approx(2 / 6)


def test_chance_miou_keeps_counts_and_falls_below_aligned_latents():
    masks = torch.zeros(40, 2, 16, dtype=torch.bool)
    masks[:, 0, :4] = True                               # an object on the first 4 patches
    masks[:, 1, 4:] = True                               # the background
    z = torch.zeros(40, 16, 2)
    z[:, :4, 0] = 1.0                                    # latent 0 fits the object exactly
    z[:, :, 1] = 1.0                                     # latent 1 fires everywhere: moving it changes nothing
    assert miou(z, masks) == pytest.approx((1 + 12 / 16) / 2)
    chance = chance_miou(z, masks, seed=1)
    assert chance < miou(z, masks) - 0.1
    assert chance == chance_miou(z, masks, seed=1)       # the seed fixes the draw
    full = chance_miou(z[:, :, 1:], masks)
    assert full == pytest.approx(12 / 16)


def test_chance_miou_bad_input():
    with pytest.raises(ValueError, match="z_img"):
        chance_miou(torch.zeros(3, 4), torch.zeros(3, 1, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match="seed"):
        chance_miou(torch.zeros(1, 4, 2), torch.zeros(1, 1, 4, dtype=torch.bool), seed=-1)


def test_best_and_worst_images_pick_the_extremes_where_the_latent_fires():
    nan = float("nan")
    per = torch.tensor([[0.5, nan], [nan, 0.3], [0.9, nan], [0.1, nan]])
    assert best_and_worst_images(per, 0) == [2, 3]      # NaN (silent) images are skipped
    assert best_and_worst_images(per, 1) == [1]         # one image: best and worst at once
    with pytest.raises(ValueError, match="latent"):
        best_and_worst_images(torch.full((3, 2), nan), 1)
    with pytest.raises(ValueError, match="latent"):
        best_and_worst_images(per, 2)
    with pytest.raises(ValueError, match="per_image"):
        best_and_worst_images(torch.zeros(3), 0)
