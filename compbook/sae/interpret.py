"""The hierarchical interpretation pipeline, measured against exact ground truth (chapter 16).

S2AE interprets a latent in three steps (the paper): (1) **reference collection**, the top samples by a
composite score Psi of activation strength and IoU with the model's concept clusters; (2) **localised
identification**, a describer turns each masked region into a short description; (3) **semantic synthesis**, a
synthesiser turns the descriptions and the latent's top text tokens into one concept per modality and judges
whether they agree. The **direct baseline** describes the unmasked top images at once. Our scenes know the concept
each latent fires on (:func:`ground_truth`), so the **identification rate** is measured, not judged.

Our choices (parameters): ``Psi = weight * a / max a + (1 - weight) * IoU`` per image, ``a`` the latent's largest
activation on the image's patches, IoU the best IoU of its active patches with one of the image's S2AE regions
(:func:`reference_scores`); the region shown to the describer is the latent's active patches; the concepts are the
colour and shape values, the object types ("red square") and "background". The CPU describer and synthesiser are
:mod:`compbook.sae.describe`; the transformers ones (Qwen3-VL, Qwen3) are :mod:`compbook.sae.servers.hf_interpret`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from .. import checks
from ..stats import wilson
from .crossmodal import check_latents
from .data import SceneSet
from .metrics import mask_iou

WEIGHT = 0.5
TOP_K = 5
UNCLEAR = "unclear"


def concept_vocabulary(space) -> list:
    """Concept names: colour values, shape values, object types ("red square"), "background"."""
    colours, shapes = space.values[space.concept_index("colour")], space.values[space.concept_index("shape")]
    return list(colours) + list(shapes) + [f"{c} {s}" for c in colours for s in shapes] + ["background"]


def concept_masks(scenes) -> tuple[torch.Tensor, list]:
    """Ground-truth masks (N, C, P) of every concept of :func:`concept_vocabulary` in every scene (empty where the
    concept is absent), from the exact patch labels; and the names."""
    checks.instance(scenes, "scenes", SceneSet)
    space = scenes.vocab.space
    names = concept_vocabulary(space)
    col = {n: i for i, n in enumerate(names)}
    n, p = scenes.labels.shape
    out = np.zeros((n, len(names), p), bool)
    for i, objs in enumerate(scenes.objects):
        lab = scenes.labels[i].numpy()
        out[i, col["background"]] = lab < 0
        for o, obj in enumerate(objs):
            named = space.named(obj)
            for name in (named["colour"], named["shape"], f"{named['colour']} {named['shape']}"):
                out[i, col[name]] |= lab == o
    return torch.from_numpy(out), names


def ground_truth(z_img: torch.Tensor, scenes, latents) -> pd.DataFrame:
    """The concept each latent fires on: the concept whose mask has the highest mean IoU with the latent's active
    patches over the images where it fires (an absent concept scores 0 there). ``z_img`` (N, P, d_sae)."""
    checks.instance(scenes, "scenes", SceneSet)
    z_img = checks.tensor(z_img, "z_img", tuple(scenes.labels.shape) + (None,))
    idx = check_latents(latents, z_img.shape[-1])
    masks, names = concept_masks(scenes)
    iou = mask_iou(z_img[..., idx], masks)                     # (N, C, D)
    fires = (z_img[..., idx] != 0).any(1)                      # (N, D)
    mean = (iou * fires[:, None]).sum(0) / fires.sum(0).clamp_min(1)    # (C, D)
    best = mean.argmax(0)
    return pd.DataFrame({"latent": idx.numpy(), "truth": [names[int(b)] for b in best],
                         "truth IoU": mean.amax(0).numpy(), "images": fires.sum(0).numpy()})


# -- (1) reference collection --------------------------------------------------------------------------------------
def reference_scores(z_img: torch.Tensor, regions: torch.Tensor, latents, weight: float = WEIGHT) -> torch.Tensor:
    """Psi (N, D) of every image for each latent (NaN where the latent is silent on the image's patches).

    ``z_img`` (N, P, d_sae); ``regions`` (N, P) int region labels (the S2AE clusters); ``weight`` in [0, 1] on the
    normalised activation strength, ``1 - weight`` on the IoU with the best-matching region.
    """
    weight = checks.real(weight, "weight", 0, 1)
    z_img = checks.tensor(z_img, "z_img", (None, None, None))
    regions = torch.as_tensor(checks.integers(regions, "regions", 0, ndim=2))
    idx = check_latents(latents, z_img.shape[-1])
    z = z_img[..., idx]
    regions = torch.as_tensor(regions).long()
    if regions.shape != z.shape[:2]:
        raise ValueError(f"regions: shape {tuple(regions.shape)}, expected {tuple(z.shape[:2])}")
    onehot = torch.nn.functional.one_hot(regions).transpose(1, 2).bool()    # (N, G, P)
    iou = mask_iou(z, onehot).amax(1)                                       # (N, D)
    strength = z.amax(1)                                                    # (N, D)
    psi = weight * strength / strength.amax(0).clamp_min(1e-12) + (1 - weight) * iou
    return torch.where(strength > 0, psi, torch.nan)


def collect_references(z_img: torch.Tensor, regions: torch.Tensor, latents, top_k: int = TOP_K,
                       weight: float = WEIGHT) -> torch.Tensor:
    """The ``top_k`` images (D, top_k) of each latent by Psi, best first; -1 where it fires on fewer images."""
    n = checks.tensor(z_img, "z_img", (None, None, None)).shape[0]
    try:
        top_k = checks.integer(top_k, "top_k", 1, n)
    except ValueError:
        raise ValueError(f"top_k={top_k!r}: must be an integer in 1..{n} (the number of samples)") from None
    psi = reference_scores(z_img, regions, latents, weight)
    vals, order = psi.nan_to_num(-1.0).T.topk(top_k, dim=1)
    return torch.where(vals >= 0, order, -1)


def region_masks(z_img: torch.Tensor, refs: torch.Tensor, latents, grid: tuple, res: int) -> np.ndarray:
    """Pixel masks (D, top_k, res, res) of each latent's active patches on its reference images (all False for a
    missing reference)."""
    z_img = checks.tensor(z_img, "z_img", (None, None, None))
    idx = check_latents(latents, z_img.shape[-1])
    n, p = z_img.shape[:2]
    refs = torch.as_tensor(checks.integers(refs, "refs", -1, n - 1, ndim=2))   # -1: no reference; >= N: none
    if refs.shape[0] != len(idx):
        raise ValueError(f"refs: {refs.shape[0]} rows for {len(idx)} latents")
    rows, cols = (checks.integer(g, "grid") for g in checks.sequence(grid, "grid", 2, 2))
    if rows * cols != p or rows != cols:
        raise ValueError(f"grid={tuple(grid)!r}: expected a square grid of the {p} patches")
    res = checks.integer(res, "res")
    if res % rows:
        raise ValueError(f"res={res}: must be a multiple of the grid's {rows} rows (whole patches)")
    # the masks (bool), z_img's chosen latents (float32, then bool), and one patch mask's upscaling at a time
    # (np.kron's products, up to 8 bytes a pixel, and its result)
    checks.check_budget(refs.numel() * res * res + 5.0 * n * p * len(idx) + 17.0 * res * res,
                        f"region_masks {tuple(refs.shape) + (res, res)} (D, top_k, res, res)")
    act = (z_img[..., idx] != 0).numpy()                                    # (N, P, D)
    cell = res // grid[0]
    out = np.zeros(tuple(refs.shape) + (res, res), bool)
    for d in range(len(idx)):
        for r, n in enumerate(refs[d].tolist()):
            if n >= 0:
                out[d, r] = np.kron(act[n, :, d].reshape(grid), np.ones((cell, cell), bool))
    return out


# -- (2)-(3) describe and synthesise ------------------------------------------------------------------------------
@dataclass
class Synthesis:
    """One latent's synthesised concepts: ``image`` and ``text`` (a concept name or "unclear"), ``agree``."""
    image: str
    text: str
    agree: bool


def _regions(images, masks) -> tuple[np.ndarray, np.ndarray]:
    checks.unit_image(checks.tensor(images, "images", (None, None, None, 3), floating=False), "images")
    images, masks = np.asarray(images), np.asarray(masks, bool)
    if masks.shape != images.shape[:3]:
        raise ValueError(f"masks: shape {masks.shape} does not match the images' {images.shape[:3]} (K, H, W)")
    return images, masks


def _descriptions(out, k: int) -> list:
    out = list(out)
    if len(out) != k or not all(isinstance(t, str) for t in out):
        raise ValueError(f"describer: returned {len(out)} descriptions for {k} regions "
                         "(expected one string per region)")
    return out


def describe_checked(describer, images: np.ndarray, masks: np.ndarray) -> list:
    """``describer(images (K, H, W, 3), masks (K, H, W)) -> K strings``, with the shapes and the answer checked."""
    images, masks = _regions(images, masks)
    return _descriptions(describer(images, masks), len(images))


def describe_all(describer, regions: list) -> list:
    """:func:`describe_checked` for every ``(images, masks)`` of ``regions`` (one latent's references each): a
    describer with ``describe_many`` (a server's, :mod:`compbook.sae.servers.server_interpret`) is asked about all of
    them at once, any other one latent at a time."""
    if not hasattr(describer, "describe_many"):
        return [describe_checked(describer, im, m) for im, m in regions]
    regions = [_regions(im, m) for im, m in regions]
    out = list(describer.describe_many(regions))
    if len(out) != len(regions):
        raise ValueError(f"describer: describe_many returned {len(out)} lists for {len(regions)} latents")
    return [_descriptions(o, len(im)) for o, (im, _) in zip(out, regions)]


def synthesise_all(synthesiser, asks: list) -> list:
    """``synthesiser(descriptions, words)`` for every pair of ``asks``; all at once through ``synthesise_many``
    where the synthesiser has it (a server's)."""
    if hasattr(synthesiser, "synthesise_many"):
        out = list(synthesiser.synthesise_many(asks))
        if len(out) != len(asks):
            raise ValueError(f"synthesiser: synthesise_many returned {len(out)} answers for {len(asks)} latents")
        return out
    return [synthesiser(desc, words) for desc, words in asks]


def top_words(z_txt: torch.Tensor, tokens: torch.Tensor, vocab, latent: int, top_n: int = 10) -> list:
    """The caption words at the latent's ``top_n`` largest nonzero activations (``z_txt`` (N, L, d_sae))."""
    z_txt = checks.tensor(z_txt, "z_txt", (None, None, None))
    latent = checks.integer(latent, "latent", 0, z_txt.shape[-1] - 1)
    top_n = checks.integer(top_n, "top_n")
    n_vocab = len(checks.sequence(getattr(vocab, "tokens", vocab), "vocab (its tokens)"))
    tokens = torch.as_tensor(checks.integers(tokens, "tokens", 0, n_vocab - 1))
    if tuple(tokens.shape) != tuple(z_txt.shape[:2]):
        raise ValueError(f"tokens: shape {tuple(tokens.shape)}, expected z_txt's (N, L) = {tuple(z_txt.shape[:2])}")
    z = z_txt[..., latent].reshape(-1)
    if not 1 <= top_n <= len(z):
        raise ValueError(f"top_n={top_n}: must be in 1..{len(z)} (the number of samples)")
    vals, where = z.topk(top_n)
    ids = tokens.reshape(-1)[where[vals > 0]]
    words = getattr(vocab, "tokens", vocab)
    return [words[int(t)] for t in ids]


def interpret(z_img, z_txt, scenes, regions, latents, describer, synthesiser, hierarchical: bool = True,
              top_k: int = TOP_K, weight: float = WEIGHT, top_n: int = 10) -> pd.DataFrame:
    """Run the pipeline on ``latents``: one row per latent with its references, descriptions, synthesised
    concepts and the ground truth. ``hierarchical=False`` is the direct baseline: the same references, described
    unmasked (whole image), all at once."""
    for name, f in (("describer", describer), ("synthesiser", synthesiser)):
        if not callable(f):
            raise ValueError(f"{name} must be a function (see compbook.sae.describe), got {f!r:.60}")
    checks.boolean(hierarchical, "hierarchical")
    checks.instance(scenes, "scenes", SceneSet)
    n, length = scenes.tokens.shape
    z_img = checks.tensor(z_img, "z_img", (n, None, None))
    checks.tensor(z_txt, "z_txt", (n, length, z_img.shape[-1]))
    top_n = checks.integer(top_n, "top_n", 1, n * length)
    idx = check_latents(latents, z_img.shape[-1])
    refs = collect_references(z_img, regions, idx, top_k, weight)
    res = scenes.images.shape[1]
    masks = region_masks(z_img, refs, idx, scenes.grid, res)
    truth = ground_truth(z_img, scenes, idx)
    rows, regions = [], []
    for d, j in enumerate(idx.tolist()):
        keep = refs[d] >= 0
        if not keep.any():
            continue
        imgs = scenes.images[refs[d][keep].numpy()]
        regions.append((imgs, masks[d][keep.numpy()] if hierarchical else np.ones(imgs.shape[:3], bool)))
        rows.append({"latent": j, "references": refs[d][keep].tolist(),
                     "top words": top_words(z_txt, scenes.tokens, scenes.vocab, j, top_n)})
    descriptions = describe_all(describer, regions)
    syntheses = synthesise_all(synthesiser, [(desc, r["top words"]) for desc, r in zip(descriptions, rows)])
    for r, desc, syn in zip(rows, descriptions, syntheses):
        r |= {"descriptions": desc, "image concept": syn.image, "text concept": syn.text, "agree": syn.agree}
    out = pd.DataFrame(rows, columns=["latent", "references", "descriptions", "top words", "image concept",
                                      "text concept", "agree"])
    if out.empty:
        raise ValueError("latents: none of them fires on an image patch of these scenes")
    out = out.merge(truth, on="latent")
    out["correct"] = out["image concept"] == out["truth"]
    return out


def identification_rate(predicted, truth) -> dict:
    """Fraction of latents whose synthesised concept equals the ground truth, with a 95% Wilson interval.

    "unclear" never matches. ValueError when the lists are empty or of different lengths.
    """
    for name, v in (("predicted", predicted), ("truth", truth)):
        if isinstance(v, (str, bytes)) or not hasattr(v, "__iter__"):
            raise ValueError(f"{name} must be a list of concept names, got {type(v).__name__} {v!r:.60}")
    predicted, truth = list(predicted), list(truth)
    if not truth:
        raise ValueError("truth: empty; the identification rate needs at least one latent")
    if len(predicted) != len(truth):
        raise ValueError(f"predicted: {len(predicted)} concepts for {len(truth)} latents")
    k = sum(p == t and p != UNCLEAR for p, t in zip(predicted, truth))
    lo, hi = wilson(k, len(truth))
    return {"rate": k / len(truth), "low": lo, "high": hi, "identified": k, "latents": len(truth)}


def interpret_runs(runs: list, data, scenes, describer, synthesiser, min_images: int = TOP_K, **kwargs) -> dict:
    """:func:`interpret`, hierarchical and direct, for every run of :func:`compbook.sae.experiment.train_runs`
    on the latents that fire on at least ``min_images`` images of ``data`` (the S2AE regions of ``data`` are the
    clusters of Psi): {(method, seed, "hierarchical" | "direct"): table}."""
    from .crossmodal import modality_codes

    regions = data.regions()
    out = {}
    for r in runs:
        z_img, z_txt = modality_codes(r["sae"], data)
        latents = torch.nonzero((z_img != 0).any(1).sum(0) >= min_images).flatten()
        for name, hier in (("hierarchical", True), ("direct", False)):
            out[r["method"], r["seed"], name] = interpret(z_img, z_txt, scenes, regions, latents, describer,
                                                          synthesiser, hierarchical=hier, **kwargs)
    return out


def identification_table(tables: dict) -> pd.DataFrame:
    """One row per (method, seed, pipeline) of :func:`interpret_runs`: the identification rate over all latents
    and over the latents whose ground truth is an object concept (not the background), and the counts."""
    checks.mapping(tables, "tables", 1)
    rows = []
    for (method, seed, pipeline), t in tables.items():
        obj = t[t.truth != "background"]
        rows.append({"method": f"{method}, {pipeline}", "seed": seed,
                     "identified": identification_rate(t["image concept"], t.truth)["rate"],
                     "identified (objects)": identification_rate(obj["image concept"], obj.truth)["rate"],
                     "latents": len(t), "object latents": len(obj), "agree": float(t.agree.mean())})
    return pd.DataFrame(rows)


def pooled_identification(tables: dict) -> pd.DataFrame:
    """Identification rate per (method, pipeline) over the latents of all seeds pooled, with a 95% Wilson
    (binomial) interval: each latent one trial (the seeds' SAEs are independent; latents within one are not
    exactly so)."""
    groups: dict = {}
    for (method, _, pipeline), t in tables.items():
        groups.setdefault(f"{method}, {pipeline}", []).append(t)
    rows = {}
    for name, ts in groups.items():
        t = pd.concat(ts)
        r = identification_rate(t["image concept"], t.truth)
        rows[name] = {"identified": f"{r['rate']:.3f} [{r['low']:.3f}, {r['high']:.3f}]",
                      "latents": r["latents"]}
    return pd.DataFrame(rows).T
