"""Concept and object recognition by the paper's definition: set separation of cosine logits (chapter 10).

A scene passes when *every* present query scores above *every* absent one (min positive logit > max negative
logit). Concept recognition is :func:`recognise` on value queries ("a red", one concept at a time); object
recognition (binding) is :func:`recognise` on object queries ("a red square"), whose negatives include the
*swapped* objects that recombine the scene's own concepts.
"""

from __future__ import annotations

import numpy as np
import torch

from .. import checks

#: Scores closer than this count as a tie, and a tie is a failure (float64 rounding must not decide a pass).
TIE = 1e-9


def as_embeddings(name: str, x, dim: int | None = None) -> torch.Tensor:
    """Check an embedding matrix (N, D): 2-D, finite, width ``dim`` when given; returns float64 tensor."""
    t = torch.as_tensor(checks.reals(x, name, finite=False))
    if t.ndim != 2 or t.shape[0] == 0 or t.shape[1] == 0:
        raise ValueError(f"{name}: need a non-empty (N, D) matrix, got shape {tuple(t.shape)}")
    if dim is not None and t.shape[1] != dim:
        raise ValueError(f"{name}: width {t.shape[1]} does not match the other embeddings' {dim}")
    if not torch.isfinite(t).all():
        raise ValueError(f"{name}: contains NaN or infinite values")
    return t


def cosine_logits(scene_emb, query_emb) -> np.ndarray:
    """(S, D), (Q, D) -> (S, Q) cosine similarities (the logits up to the temperature, which orders nothing)."""
    z = as_embeddings("scene_emb", scene_emb)
    q = as_embeddings("query_emb", query_emb, z.shape[1])
    z = z / z.norm(dim=1, keepdim=True).clamp(min=1e-12)
    q = q / q.norm(dim=1, keepdim=True).clamp(min=1e-12)
    return (z @ q.T).numpy()


def recognise(scene_emb, query_emb, positives, candidates=None) -> np.ndarray:
    """For each scene, whether every positive query scores above every negative one.

    scene_emb (S, D), query_emb (Q, D), positives (S, Q) bool: which queries are present in each scene.
    ``candidates`` (S, Q) bool, optional: only these queries take part (e.g. the present and the swapped
    objects); default all. Returns (S,) bool; ties (within ``TIE``) fail. A scene with no positive or no negative query
    raises ValueError.
    """
    logits = cosine_logits(scene_emb, query_emb)
    pos = np.asarray(positives)
    if pos.shape != logits.shape or pos.dtype != bool:
        raise ValueError(f"positives: need a bool ({logits.shape[0]}, {logits.shape[1]}) matrix, "
                         f"got {pos.dtype} {pos.shape}")
    cand = np.ones_like(pos) if candidates is None else np.asarray(candidates, dtype=bool)
    if cand.shape != pos.shape:
        raise ValueError(f"candidates: shape {cand.shape} differs from positives' {pos.shape}")
    p, n = pos & cand, ~pos & cand
    if not p.any(1).all() or not n.any(1).all():
        bad = int(np.flatnonzero(~(p.any(1) & n.any(1)))[0])
        raise ValueError(f"positives: scene {bad} has no positive or no negative query")
    min_pos = np.where(p, logits, np.inf).min(1)
    max_neg = np.where(n, logits, -np.inf).max(1)
    return min_pos > max_neg + TIE


def concept_recognition(scene_emb, queries: dict, positives: dict) -> np.ndarray:
    """Concept recognition, one concept at a time (our choice: a colour is compared with colours, a shape with
    shapes), a scene passing when it passes for every concept. queries / positives: {concept: (V_k, D)} /
    {concept: (S, V_k) bool}. Returns (S,) bool."""
    if set(queries) != set(positives):
        raise ValueError(f"queries, positives: concepts differ ({sorted(queries)} vs {sorted(positives)})")
    return np.all([recognise(scene_emb, queries[c], positives[c]) for c in queries], axis=0)
