"""Monosemanticity with exact masks: IoU of each latent's active patches against ground truth (chapters 14-15).

The paper scores a latent's active-patch mask against concept clusters of a big model; our synthetic scenes have
exact masks, so the book scores against those. Definitions (**our choice**, stated in the chapters):

* candidate masks of an image: each object's patches, each concept value's patches (the union of the objects that
  have it, e.g. "red"), and the background; a patch belongs to an object by the scene's patch labels;
* a latent's IoU in an image where it fires on at least one patch: the best IoU between its active-patch mask and
  any candidate mask of that image;
* a latent's IoU: the mean over the images where it fires; **mIoU**: the mean over live latents.
"""

from __future__ import annotations

import torch

from .. import checks

from .regions import dense_labels
from .topk import dead_latents, fvu, l0


def mask_iou(z_img: torch.Tensor, masks: torch.Tensor) -> torch.Tensor:
    """IoU (N, C, d_sae) of each latent's active-patch mask with each candidate mask, image by image.

    ``z_img`` (N, P, d_sae) codes (a latent is active where nonzero); ``masks`` (N, C, P) bool. An empty union
    (latent silent, mask empty) gives 0. Chapters 14 (mIoU) and 16 (ground truth, references).
    """
    z_img = checks.tensor(z_img, "z_img")
    if masks is None:
        raise ValueError("masks: expected a bool tensor (N, C, P) of candidate masks, got None")
    masks = checks.tensor(masks, "masks", floating=False)
    if masks.dtype != torch.bool:
        raise ValueError(f"masks: expected a bool tensor (N, C, P), got {masks.dtype}")
    if z_img.ndim != 3 or masks.ndim != 3 or masks.shape[0] != z_img.shape[0] or masks.shape[2] != z_img.shape[1]:
        raise ValueError(f"masks: shape {tuple(masks.shape)} does not fit z_img {tuple(z_img.shape)} "
                         "(expected (N, C, P) with z_img (N, P, d_sae))")
    act = (z_img != 0).float()                                        # (N, P, d)
    m = masks.float()                                                 # (N, C, P)
    inter = torch.bmm(m, act)                                         # (N, C, d)
    union = act.sum(1, keepdim=True) + m.sum(2, keepdim=True) - inter
    return inter / union.clamp_min(1)


def image_iou(z_img: torch.Tensor, masks: torch.Tensor) -> torch.Tensor:
    """Each latent's IoU with its best candidate mask, image by image: (N, d_sae), NaN where the latent does not
    fire on the image; :func:`latent_iou` is its mean over the images (chapter 14's slider shows it per image).

    ``z_img`` (N, P, d_sae) codes; ``masks`` (N, C, P) bool candidate masks (as :func:`latent_iou`)."""
    z_img = checks.tensor(z_img, "z_img")
    iou = mask_iou(z_img, masks).amax(1)                              # (N, d): best candidate per image
    return torch.where((z_img != 0).any(1), iou, torch.full_like(iou, float("nan")))


def best_and_worst_images(per_image: torch.Tensor, latent: int) -> list[int]:
    """The images where ``latent`` fits its best mask best and worst (chapter 14's slider draws these two).

    ``per_image`` (N, d_sae) is :func:`image_iou` (NaN where the latent is silent). Returns ``[best, worst]``
    image indices, or ``[best]`` when the latent fires on one image only; ``ValueError`` for a latent that
    fires on no image (naming ``latent``)."""
    per_image = checks.tensor(per_image, "per_image", (None, None), finite=False)   # NaN: silent
    latent = checks.integer(latent, "latent", 0)
    if latent >= per_image.shape[1]:
        raise ValueError(f"latent {latent} is not one of the {per_image.shape[1]} latents")
    col = per_image[:, latent]
    fires = (~col.isnan()).nonzero().flatten()
    if len(fires) == 0:
        raise ValueError(f"latent {latent} fires on no image")
    vals = col[fires]
    best, worst = int(fires[vals.argmax()]), int(fires[vals.argmin()])
    return [best] if best == worst else [best, worst]


def latent_iou(z_img: torch.Tensor, masks: torch.Tensor) -> torch.Tensor:
    """Per-latent IoU (d_sae,) (NaN for a latent that never fires).

    ``z_img`` (N, P, d_sae) codes of the image patches; ``masks`` (N, C, P) bool candidate masks per image
    (pad with all-False masks where images have fewer candidates).
    """
    z_img = checks.tensor(z_img, "z_img")
    iou = mask_iou(z_img, masks).amax(1)                              # (N, d): best candidate per image
    fires = (z_img != 0).any(1)                                       # (N, d)
    n_fire = fires.sum(0)
    total = (iou * fires).sum(0)
    return torch.where(n_fire > 0, total / n_fire.clamp_min(1), torch.full_like(total, float("nan")))


def miou(z_img: torch.Tensor, masks: torch.Tensor) -> float:
    """Mean :func:`latent_iou` over the latents that fire on some image patch."""
    iou = latent_iou(z_img, masks)
    return float(iou[~iou.isnan()].mean()) if (~iou.isnan()).any() else float("nan")


def chance_miou(z_img: torch.Tensor, masks: torch.Tensor, seed: int = 0) -> float:
    """Chance level of :func:`miou` (chapter 14): the same codes with each latent's active patches moved to
    random places in each image (as many as before, drawn anew per image and latent), scored the same way.

    ``z_img`` (N, P, d_sae) codes; ``masks`` (N, C, P) bool candidate masks (as :func:`latent_iou`)."""
    z_img = checks.tensor(z_img, "z_img")
    if z_img.ndim != 3:
        raise ValueError(f"z_img: expected a (N, P, d_sae) tensor, got shape {tuple(z_img.shape)}")
    g = torch.Generator().manual_seed(checks.seed(seed))
    order = torch.rand(z_img.shape, generator=g).argsort(1)          # a random patch order per image, latent
    return miou(torch.gather(z_img, 1, order), masks)


def sae_report(sae, x: torch.Tensor, z_img: torch.Tensor | None = None, masks: torch.Tensor | None = None) -> dict:
    """EV, L0 and dead-latent fraction of ``sae`` on tokens ``x`` (M, d_in), plus mIoU when patches are given
    (``z_img`` and ``masks`` together)."""
    from .topk import TopKSAE

    checks.instance(sae, "sae", TopKSAE)
    if (z_img is None) != (masks is None):
        raise ValueError(f"masks and z_img: give both (for mIoU) or neither, got z_img "
                         f"{'None' if z_img is None else 'a code'} and masks {'None' if masks is None else 'masks'}")
    with torch.no_grad():
        z = sae.encode(x)
        out = {"EV": 1 - fvu(x, sae.decode(z)), "L0": l0(z), "dead": float(dead_latents(z).float().mean())}
        if z_img is not None:
            out["mIoU"] = miou(z_img, masks)
    return out


def region_purity(regions: torch.Tensor, labels: torch.Tensor) -> float:
    """Fraction of patches whose ground-truth label (object or background, ``labels`` (N, P)) is the majority
    label of their region (``regions`` (N, P)): 1 when every region lies inside one object or the background.
    Both are renumbered per image (:func:`compbook.sae.regions.dense_labels`: the same partitions, so the same
    purity), so the counts are (N, G x O) with G, O <= P whatever the labels' values."""
    regions = torch.as_tensor(checks.integers(regions, "regions", 0, ndim=2, min_size=1))
    labels = torch.as_tensor(checks.integers(labels, "labels", -1, ndim=2, min_size=1)) + 1
    if regions.shape != labels.shape:
        raise ValueError(f"regions: shape {tuple(regions.shape)} differs from labels {tuple(labels.shape)}")
    n, p = regions.shape
    # the renumbering's sorts (about 6 int64 copies of each), the pair ids, and the (N, G x O) counts
    checks.check_budget(8.0 * 16 * n * p + 4.0 * n * p * p, f"region_purity's counts of {n} images x {p} "
                        f"patches (up to {p} regions x {p} labels each)")
    regions, labels = dense_labels(regions), dense_labels(labels)
    g, o = int(regions.max()) + 1, int(labels.max()) + 1
    counts = torch.zeros(n, g * o).scatter_add_(1, regions * o + labels, torch.ones(n, p))
    return float(counts.reshape(n, g, o).amax(2).sum() / (n * p))
