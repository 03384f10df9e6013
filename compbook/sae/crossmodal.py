"""Across modalities: cross-modal coherence and monosemanticity per modality, with exact labels (chapter 16).

S2AE's second claim is that structure imposed on image patches only also cleans up the language side. The book's
scenes label every image patch (the object under it, so its colour and shape, or the background) and every
caption token (the concept value it names, or the function word it is). Definitions (**our choice**, all
parameters):

* a latent's **top activations in a modality**: its ``top_n`` largest nonzero activations over that modality's
  tokens (image patches, or caption tokens) of the evaluation scenes; a latent is *live in a modality* when it
  fires on at least ``min_fires`` of them;
* a label's **share**: the fraction of those top activations whose token carries the label (a patch of a red
  square carries "red" and "square"; a caption token carries the word it is);
* **monosemanticity** of a latent in a modality: its largest share (concept purity); per modality, the mean over
  the latents live in that modality;
* **cross-modal coherence**: the fraction of live latents (live in either modality) that are live in both and
  have a concept value (a colour or a shape) with a share above ``threshold`` on the image side *and* on the text
  side: they fire on the patches of a concept and on the words that name it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from .. import checks
from .s2ae import SAEData

TOP_N = 20
MIN_FIRES = 10
THRESHOLD = 0.5


@dataclass
class ConceptLabels:
    """Labels of every token of some scenes. ``names`` (C,): the first ``n_shared`` are concept values named in
    both modalities (colour and shape words), then "background" (patches) and the other caption words in quotes
    (tokens). ``patches`` (N, P, C) and ``tokens`` (N, L, C) bool (padding carries no label)."""
    names: list
    n_shared: int
    patches: torch.Tensor
    tokens: torch.Tensor


def concept_labels(scenes) -> ConceptLabels:
    """:class:`ConceptLabels` of a :class:`compbook.sae.data.SceneSet` (from its exact patch labels and tokens)."""
    space, vocab = scenes.vocab.space, scenes.vocab
    shared = [v for vs in space.values for v in vs]
    words = [w for w in vocab.tokens if w not in shared and w != vocab.tokens[vocab.pad_id]]
    names = shared + ["background"] + [f"'{w}'" for w in words]
    col = {n: i for i, n in enumerate(names)}
    n, p = scenes.labels.shape
    patches = np.zeros((n, p, len(names)), bool)
    for i, objs in enumerate(scenes.objects):
        lab = scenes.labels[i].numpy()
        patches[i, lab < 0, col["background"]] = True
        for o, obj in enumerate(objs):
            for k, v in enumerate(space.object_values(obj)):
                patches[i, lab == o, col[space.values[k][v]]] = True
    word_col = np.full(len(vocab), -1)
    for t, w in enumerate(vocab.tokens):
        word_col[t] = col.get(w, col.get(f"'{w}'", -1))
    ids = scenes.tokens.numpy()
    tokens = np.zeros(ids.shape + (len(names),), bool)
    hit = word_col[ids] >= 0
    tokens[np.nonzero(hit) + (word_col[ids][hit],)] = True
    return ConceptLabels(names, len(shared), torch.from_numpy(patches), torch.from_numpy(tokens))


@torch.no_grad()
def modality_codes(sae, data: SAEData) -> tuple[torch.Tensor, torch.Tensor]:
    """SAE codes of the image patches (N, P, d_sae) and of the caption tokens (N, L, d_sae), zero on padding.

    The caption tokens are the valid tokens after the patch block (the tiny VLM's layout: patches, then text).
    """
    if not callable(getattr(sae, "encode", None)):
        raise ValueError(f"sae must have an encode method (a TopKSAE), got {type(sae).__name__}")
    checks.instance(data, "data", SAEData)
    n, t, d = data.acts.shape
    z = sae.encode(data.acts.reshape(-1, d)).reshape(n, t, -1) * data.valid[..., None]
    first_text = int(data.patch_idx.max()) + 1 if len(data.patch_idx) else 0
    return z[:, data.patch_idx], z[:, first_text:]


def check_latents(latents, d_sae: int) -> torch.Tensor:
    """Latent indices (D,) long (None: all); ValueError on an empty set or an index outside ``0..d_sae-1``."""
    idx = torch.arange(d_sae) if latents is None else torch.as_tensor(checks.integers(latents, "latents")).reshape(-1)
    if idx.numel() == 0:
        raise ValueError("latents: the latent set is empty; give at least one latent index")
    if idx.min() < 0 or idx.max() >= d_sae:
        raise ValueError(f"latents: indices must lie in 0..{d_sae - 1}, got {idx.min().item()}..{idx.max().item()}")
    return idx


def top_shares(codes: torch.Tensor, labels: torch.Tensor, top_n: int = TOP_N,
               latents=None) -> tuple[torch.Tensor, torch.Tensor]:
    """Label shares of each latent's top activations in one modality.

    ``codes`` (..., d_sae) and ``labels`` (..., C) bool over the same tokens (e.g. (N, P, d) and (N, P, C)).
    Returns ``shares`` (D, C): for each latent of ``latents`` (default all), the fraction of its ``top_n`` largest
    *nonzero* activations whose token carries each label (0 where it never fires), and ``fires`` (D,) the number
    of tokens where it is nonzero.
    """
    codes = checks.tensor(codes, "codes")
    z = codes.reshape(-1, codes.shape[-1])
    lab = labels.reshape(-1, labels.shape[-1])
    if len(lab) != len(z):
        raise ValueError(f"labels: {len(lab)} tokens, codes have {len(z)}")
    try:
        top_n = checks.integer(top_n, "top_n", 1, len(z))
    except ValueError:
        raise ValueError(f"top_n={top_n!r}: must be an integer in 1..{len(z)} (the number of samples)") from None
    idx = check_latents(latents, z.shape[1])
    vals, where = z[:, idx].T.topk(top_n, dim=1)                   # (D, top_n)
    on = (vals > 0).float()
    hits = torch.einsum("dtc,dt->dc", lab[where].float(), on)           # (D, C)
    return hits / on.sum(1, keepdim=True).clamp_min(1), (z[:, idx] > 0).sum(0)


def crossmodal_scores(z_img: torch.Tensor, z_txt: torch.Tensor, labels: ConceptLabels, top_n: int = TOP_N,
                      min_fires: int = MIN_FIRES, threshold: float = THRESHOLD, latents=None) -> pd.DataFrame:
    """Per latent (rows): fires, purity (monosemanticity) and top label per modality, coherent or not.

    ``z_img`` (N, P, d_sae), ``z_txt`` (N, L, d_sae) from :func:`modality_codes`; see the module docstring.
    """
    checks.instance(labels, "labels", ConceptLabels)
    z_img = checks.tensor(z_img, "z_img", (None, None, None))
    checks.tensor(z_txt, "z_txt", (len(z_img), None, z_img.shape[-1]))
    n_names = len(checks.sequence(labels.names, "labels.names"))
    checks.integer(labels.n_shared, "labels.n_shared", 0, n_names)
    for name, z in (("patches", z_img), ("tokens", z_txt)):
        checks.tensor(getattr(labels, name), f"labels.{name}", tuple(z.shape[:2]) + (n_names,), floating=False)
    top_n = checks.integer(top_n, "top_n")
    checks.integer(min_fires, "min_fires", 0)
    checks.real(threshold, "threshold", 0, 1)
    idx = check_latents(latents, z_img.shape[-1])
    si, fi = top_shares(z_img, labels.patches, top_n, idx)
    st, ft = top_shares(z_txt, labels.tokens, top_n, idx)
    live_i, live_t = fi >= min_fires, ft >= min_fires
    s = labels.n_shared
    both = (si[:, :s] > threshold) & (st[:, :s] > threshold)
    names = np.asarray(labels.names)
    return pd.DataFrame({
        "latent": idx.numpy(), "fires image": fi.numpy(), "fires text": ft.numpy(),
        "purity image": torch.where(live_i, si.amax(1), torch.nan).numpy(),
        "purity text": torch.where(live_t, st.amax(1), torch.nan).numpy(),
        "top image": names[si.argmax(1).numpy()], "top text": names[st.argmax(1).numpy()],
        "live": (live_i | live_t).numpy(), "bimodal": (live_i & live_t).numpy(),
        "coherent": (both.any(1) & live_i & live_t).numpy()})


SHARE_WORDS = {"purity image": "share image", "purity text": "share text", "bimodal": "fires in both"}


def latent_shares(z_img: torch.Tensor, z_txt: torch.Tensor, labels: ConceptLabels, top_n: int = TOP_N,
                  **kwargs) -> pd.DataFrame:
    """Chapter 16's table of latents: :func:`crossmodal_scores` in the chapter's words (a latent's largest
    concept *share* among its ``top_n`` top patches / caption tokens; ``fires in both``: it fires on at least
    ``min_fires`` tokens of each modality). ``z_img`` (N, P, d_sae), ``z_txt`` (N, L, d_sae)."""
    return crossmodal_scores(z_img, z_txt, labels, top_n=top_n, **kwargs).rename(columns=SHARE_WORDS)


def most_coherent(shares: pd.DataFrame) -> pd.Series:
    """Chapter 16's worked latent: among the coherent latents of a :func:`latent_shares` table, the one whose
    share on its weaker side (the smaller of ``share image`` and ``share text``) is the highest. Returns its row."""
    need = {"coherent", "share image", "share text"}
    if not isinstance(shares, pd.DataFrame) or need - set(shares.columns):
        raise ValueError(f"shares must be a latent_shares table with columns {sorted(need)}, got "
                         f"{sorted(getattr(shares, 'columns', []))}")
    ok = shares[shares.coherent.astype(bool)]
    if ok.empty:
        raise ValueError("shares: no coherent latent")
    return ok.loc[ok[["share image", "share text"]].min(axis=1).idxmax()]


def crossmodal_summary(scores: pd.DataFrame) -> dict:
    """Coherence (over live latents), monosemanticity per modality (over latents live there), counts."""
    need = {"live", "coherent", "bimodal", "purity image", "purity text"}
    if not isinstance(scores, pd.DataFrame) or need - set(scores.columns):
        raise ValueError(f"scores must be a crossmodal_scores table with columns {sorted(need)}, got "
                         f"{sorted(getattr(scores, 'columns', []))}")
    live = scores[scores.live]
    if live.empty:
        raise ValueError("scores: no live latent; lower min_fires or use more scenes")
    return {"coherence": float(live.coherent.mean()), "mono image": float(scores["purity image"].mean()),
            "mono text": float(scores["purity text"].mean()), "bimodal": float(live.bimodal.mean()),
            "live": len(live), "live image": int(scores["purity image"].notna().sum()),
            "live text": int(scores["purity text"].notna().sum())}


def crossmodal_report(sae, data: SAEData, labels: ConceptLabels, **kwargs) -> dict:
    """:func:`crossmodal_summary` of ``sae`` on ``data`` (keyword arguments go to :func:`crossmodal_scores`)."""
    z_img, z_txt = modality_codes(sae, data)
    if z_txt.shape[:2] != labels.tokens.shape[:2] or z_img.shape[:2] != labels.patches.shape[:2]:
        raise ValueError(f"labels: patches {tuple(labels.patches.shape[:2])} / tokens "
                         f"{tuple(labels.tokens.shape[:2])} do not fit the data's {tuple(z_img.shape[:2])} / "
                         f"{tuple(z_txt.shape[:2])}")
    return crossmodal_summary(crossmodal_scores(z_img, z_txt, labels, **kwargs))


def compare_crossmodal(runs: list, data: SAEData, labels: ConceptLabels, **kwargs) -> pd.DataFrame:
    """One row per run of :func:`compbook.sae.experiment.train_runs`: method, seed and the cross-modal report."""
    return pd.DataFrame([{"method": r["method"], "seed": r["seed"],
                          **crossmodal_report(r["sae"], data, labels, **kwargs)} for r in runs])
