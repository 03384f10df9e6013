"""Cross-modal coherence defined so that it can move (chapter 16).

Chapter 16's first definition (:mod:`compbook.sae.crossmodal`) labels a caption token by **its own word** and
divides by **every live latent**. Two things keep that number near 0 in a next-token model:

* the image-derived concept need not sit on the word itself: in a causal model it is needed where the word is
  *predicted* (the position before it), and it may be spread over the noun phrase ("a red square");
* most live latents are unimodal, so a rate over all of them is small whatever the bimodal ones do. The paper
  reports a coherence rate *of multimodal features* (its layer-5 figure), judged by an LLM that reads a latent's
  *raw text references* beside its image descriptions.

So this module gives two more labellings of the caption tokens, all **our choice** and reported side by side:

* ``word``: each token carries the word it is (chapter 16's labels);
* ``phrase``: each token of an object's noun phrase ("a", its colour word, its shape word) also carries the
  concept values named anywhere in that phrase; "and", "<bos>", "<eos>" keep their word only;
* ``next token``: each token carries the labels of the *next* token (the word it predicts); the last carries none;

and two denominators: every live latent (``live``, chapter 16's) or the latents live in both modalities
(``bimodal``, the paper's "multimodal features"). A latent is coherent, under any labelling, when it is live in both
modalities and one shared concept (a colour or a shape) has a share above the threshold among its top image
activations and among its top text activations (:func:`compbook.sae.crossmodal.crossmodal_scores`).
"""

from __future__ import annotations

import pandas as pd
import torch

from .. import checks
from ..stats import reread
from . import crossmodal as cm

LABELLINGS = ("word", "phrase", "next token")
#: The definitions reported, in order: (labelling, denominator); ("word", "live") is chapter 16's.
DEFINITIONS = (("word", "live"), ("word", "bimodal"), ("phrase", "bimodal"), ("next token", "bimodal"))


def definition_name(labelling: str, denominator: str) -> str:
    checks.choice(labelling, "labelling", LABELLINGS)
    checks.choice(denominator, "denominator", ("live", "bimodal"))
    return f"{labelling} / {denominator}"


def phrase_labels(scenes, word: cm.ConceptLabels | None = None) -> cm.ConceptLabels:
    """:class:`~compbook.sae.crossmodal.ConceptLabels` with every token of a noun phrase also carrying the
    shared concepts named in that phrase (phrases are the runs of tokens between "<bos>", "and", "<eos>" and
    padding)."""
    word = word or cm.concept_labels(scenes)
    vocab = scenes.vocab
    breaks = torch.tensor([w in ("and", "<bos>", "<eos>", vocab.tokens[vocab.pad_id]) for w in vocab.tokens])
    ids = scenes.tokens
    is_break = breaks[ids]                                               # (N, L)
    phrase = torch.cumsum(is_break.long(), 1)                            # a phrase id per token (per row)
    phrase = torch.where(is_break, torch.full_like(phrase, -1), phrase)
    s = word.n_shared
    tokens = word.tokens.clone()
    shared = word.tokens[..., :s].float()                                # (N, L, s)
    n_ph = int(phrase.max()) + 2
    onehot = torch.nn.functional.one_hot(phrase + 1, n_ph).float()      # (N, L, n_ph): 0 = no phrase
    per_phrase = torch.einsum("nlp,nlc->npc", onehot, shared) > 0       # (N, n_ph, s)
    spread = torch.einsum("nlp,npc->nlc", onehot, per_phrase.float()) > 0
    spread &= ~is_break[..., None]
    tokens[..., :s] |= spread
    return cm.ConceptLabels(word.names, s, word.patches, tokens)


def next_token_labels(scenes, word: cm.ConceptLabels | None = None) -> cm.ConceptLabels:
    """:class:`~compbook.sae.crossmodal.ConceptLabels` with each caption token carrying the labels of the next
    token (the word it predicts); the last position carries none."""
    word = word or cm.concept_labels(scenes)
    tokens = torch.zeros_like(word.tokens)
    tokens[:, :-1] = word.tokens[:, 1:]
    return cm.ConceptLabels(word.names, word.n_shared, word.patches, tokens)


def labellings(scenes) -> dict:
    """``{"word", "phrase", "next token"}`` -> :class:`~compbook.sae.crossmodal.ConceptLabels` of ``scenes``."""
    word = cm.concept_labels(scenes)
    return {"word": word, "phrase": phrase_labels(scenes, word), "next token": next_token_labels(scenes, word)}


def concept_shares(z_img: torch.Tensor, z_txt: torch.Tensor, labels: dict, latent: int, concept: str,
                   top_n: int = cm.TOP_N) -> pd.Series:
    """One latent's share of one concept, on each side (chapter 16's worked example).

    ``z_img`` (N, P, d_sae) and ``z_txt`` (N, L, d_sae) from :func:`~compbook.sae.crossmodal.modality_codes`;
    ``labels``: :func:`labellings`. Returns the fraction of the latent's ``top_n`` largest activations on image
    patches that carry ``concept`` ("image patches"), then the same on caption tokens under each labelling
    ("caption tokens, word", ...).
    """
    if not isinstance(labels, dict) or not labels:
        raise ValueError("labels must be a non-empty dict: labelling -> ConceptLabels (see labellings)")
    first = next(iter(labels.values()))
    if concept not in first.names:
        raise ValueError(f"concept={concept!r}: not one of {first.names}")
    c = first.names.index(concept)
    latent = cm.check_latents([latent], z_img.shape[-1])
    out = {"image patches": float(cm.top_shares(z_img, first.patches, top_n, latent)[0][0, c])}
    for name, lab in labels.items():
        out[f"caption tokens, {name}"] = float(cm.top_shares(z_txt, lab.tokens, top_n, latent)[0][0, c])
    return pd.Series(out, name=f"share of {concept}")


def coherence(scores: pd.DataFrame, denominator: str) -> float:
    """Fraction of coherent latents among the ``"live"`` or ``"bimodal"`` ones of a
    :func:`~compbook.sae.crossmodal.crossmodal_scores` table (NaN when there is none)."""
    if denominator not in ("live", "bimodal"):
        raise ValueError(f"denominator={denominator!r}: expected 'live' or 'bimodal'")
    if not isinstance(scores, pd.DataFrame) or {denominator, "coherent"} - set(scores.columns):
        raise ValueError(f"scores must be a crossmodal_scores table with columns {denominator!r} and 'coherent', "
                         f"got {sorted(getattr(scores, 'columns', []))}")
    base = scores[scores[denominator]]
    return float(base.coherent.mean()) if len(base) else float("nan")


def coherence_report(sae, data, labels: dict, definitions=DEFINITIONS, **kwargs) -> dict:
    """Coherence of ``sae`` under each definition, the number of bimodal latents and the text-side
    monosemanticity under each labelling (keyword arguments go to ``crossmodal_scores``)."""
    z_img, z_txt = cm.modality_codes(sae, data)
    out, scores = {}, {}
    for lab, den in definitions:
        if lab not in labels:
            raise ValueError(f"definitions: labelling {lab!r} is not one of {sorted(labels)}")
        if lab not in scores:
            scores[lab] = cm.crossmodal_scores(z_img, z_txt, labels[lab], **kwargs)
        out[definition_name(lab, den)] = coherence(scores[lab], den)
    first = next(iter(scores.values()))
    out["bimodal latents"] = int(first.bimodal.sum())
    for lab, sc in scores.items():
        out[f"mono text ({lab})"] = float(sc["purity text"].mean())
    return out


def coherence_table(runs: list, data, scenes, definitions=DEFINITIONS, **kwargs) -> pd.DataFrame:
    """One row per run (``{"method", "seed", "sae"}``): :func:`coherence_report` on ``data`` / ``scenes``."""
    labels = labellings(scenes)
    return pd.DataFrame([{"method": r["method"], "seed": r["seed"],
                          **coherence_report(r["sae"], data, labels, definitions, **kwargs)} for r in runs])


def readings(df: pd.DataFrame, s2ae: str, measures=None) -> pd.DataFrame:
    """S2AE minus vanilla, paired by seed, for each of ``measures`` of a :func:`coherence_table` (merged with the
    per-modality monosemanticity of :func:`compbook.sae.crossmodal.compare_crossmodal`; default: the four
    definitions, "mono image", "mono text"), read with :func:`compbook.stats.reread` against the paper's gain
    (coherence: its layer-5 figure; monosemanticity: its average), both read as relative to vanilla's value (our
    reading; chapter 16). One row per measure: vanilla, "S2AE - vanilla", "±", reading."""
    from . import experiment as ex, paper

    defs = [definition_name(*d) for d in DEFINITIONS]
    measures = list(defs + ["mono image", "mono text"] if measures is None else measures)
    rows = []
    for c in measures:
        m, h = ex.paired_difference(df, c, "vanilla", s2ae)
        van = float(df[df.method == "vanilla"][c].mean())
        size = (paper.COHERENCE_GAIN if c in defs else paper.MONO_GAIN) * van
        rows.append({"measure": c, "vanilla": van, "S2AE - vanilla": m, "±": h,
                     "reading": reread(m, h, +1, size)})
    return pd.DataFrame(rows).set_index("measure")
