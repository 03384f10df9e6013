"""Training pairs and queries for the dual encoders (chapters 10-11), built from ``compbook.scenes``.

* :func:`build_pairs` renders scenes (two objects, or one object in either slot) and tokenises their captions in
  several variants: the full caption, and (our choice) *partial* captions that name only one concept of each
  object ("a red and a blue"), so that single-concept queries ("a red") are in the text encoder's training
  distribution. It also builds one *swap negative* per two-object scene: one concept exchanged between the two
  objects ("a blue square and a red circle" for "a red square and a blue circle").
* :func:`object_queries` ("a red square", one per object) and :func:`concept_queries` ("a red", one per value)
  are the query captions of object and concept recognition; :func:`object_positives` and
  :func:`value_positives` say which queries are present in each scene.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .. import checks, scenes as S

EMPTY = -1   # an empty slot in a scene row


@dataclass
class PairData:
    """Rendered training scenes. images (N, H, W, 3) float32; scenes (N, 2) object ids (-1: empty slot);
    captions (N, V, L) token ids of V caption variants (variant 0 is the full caption; rows of all-pad mark a
    missing variant); swap (N, L) the swap-negative caption; swap_valid (N,) whether it differs from the scene."""

    images: torch.Tensor
    scenes: np.ndarray
    captions: torch.Tensor
    swap: torch.Tensor
    swap_valid: torch.Tensor


def phrase_words(space, object_id, keep=None) -> list:
    """Words of one object, keeping only the concepts in ``keep`` (all when None); always starts with "a"."""
    words = S.object_phrase(space, object_id)
    if keep is None:
        return [w for w, _ in words]
    return ["a"] + [w for w, c in words if c in keep]


def scene_caption(space, scene, keep=None) -> str:
    """Caption of a scene row (empty slots skipped), optionally naming only the concepts in ``keep``."""
    return " and ".join(" ".join(phrase_words(space, o, keep)) for o in scene if o != EMPTY)


def swapped(space, a: int, b: int, concept: int) -> tuple:
    """The two objects after exchanging the values of ``concept`` (index) between them."""
    concept = checks.integer(concept, "concept", 0, len(space.sizes) - 1)
    va, vb = list(space.object_values(a)), list(space.object_values(b))
    va[concept], vb[concept] = vb[concept], va[concept]
    return space.object_id(va), space.object_id(vb)


def tokenize(space, captions, max_len: int) -> torch.Tensor:
    """Captions -> (N, max_len) int64 ids with <bos>/<eos>, padded with 0; too long raises ValueError."""
    vocab = S.vocabulary(space)
    return torch.as_tensor(vocab.pad([vocab.encode(c) for c in captions], max_len))


def build_pairs(space, pairs, singles=(), res: int = 64, max_len: int = 16, partial: bool = True,
                seed: int = 0) -> PairData:
    """Render ``pairs`` (N, 2) object ids in the "pair" layout, plus each object of ``singles`` alone in the
    left and in the right slot. Swap negatives exchange one concept, chosen at random (seeded) among those in
    which the two objects differ."""
    pairs = checks.integers(pairs, "pairs", 0, space.n_objects - 1)
    if pairs.ndim > 2 or pairs.size % 2 or pairs.ndim == 2 and pairs.shape[1] != 2:
        raise ValueError(f"pairs must be (N, 2) object ids (two per scene), got shape {pairs.shape}")
    pairs = pairs.reshape(-1, 2)
    singles = checks.integers(singles, "singles", 0, space.n_objects - 1, ndim=1)
    res = checks.integer(res, "res")
    # the float32 images, one scene's render buffers, and the rows (tuples) and their captions
    n = len(pairs) + 2 * len(singles)
    per_row = 12.0 * res * res + 8.0 * (len(space.concepts) + 2) * checks.integer(max_len, "max_len") + 256
    checks.check_budget(per_row * n + S.scene_bytes(res, "pair"),
                        f"build_pairs' images at res={res}")
    rows = [tuple(p) for p in pairs] + [(o, EMPTY) for o in singles] + [(EMPTY, o) for o in singles]
    images = np.empty((len(rows), res, res, 3), np.float32)
    for i, r in enumerate(rows):
        objs = [o for o in r if o != EMPTY]
        slots = [s for s, o in enumerate(r) if o != EMPTY]
        images[i] = S.render_scene(space, objs, res=res, layout="pair", slots=slots).image
    variants = [None] + ([(c,) for c in space.concepts] if partial and len(space.concepts) > 1 else [])
    caps = torch.stack([tokenize(space, [scene_caption(space, r, keep) for r in rows], max_len)
                        for keep in variants], dim=1)
    rng = np.random.default_rng(seed)
    swap_rows, valid = [], []
    for r in rows:
        if EMPTY in r:
            swap_rows.append(r); valid.append(False); continue
        differ = np.flatnonzero(space.object_values(r[0]) != np.asarray(space.object_values(r[1])))
        if len(differ) == 0:
            swap_rows.append(r); valid.append(False); continue
        swap_rows.append(swapped(space, r[0], r[1], int(rng.choice(differ)))); valid.append(True)
    swap = tokenize(space, [scene_caption(space, r) for r in swap_rows], max_len)
    return PairData(torch.from_numpy(images), np.array(rows), caps, swap, torch.tensor(valid))


def object_queries(space, max_len: int = 16) -> torch.Tensor:
    """(|O|, L) ids of "a {colour} {shape}" (the full one-object caption) for every object id."""
    return tokenize(space, [scene_caption(space, (o,)) for o in range(space.n_objects)], max_len)


def concept_queries(space, max_len: int = 16) -> dict:
    """{concept: (V_k, L) ids} of one-concept captions ("a red", "a square"), in value order."""
    out = {}
    for k, c in enumerate(space.concepts):
        ids = []
        for v in range(space.sizes[k]):
            values = [0] * len(space.sizes)
            values[k] = v
            ids.append(scene_caption(space, (space.object_id(values),), keep=(c,)))
        out[c] = tokenize(space, ids, max_len)
    return out


def object_positives(space, scenes) -> np.ndarray:
    """(S, |O|) bool: which objects are present in each scene row (empty slots ignored)."""
    scenes = checks.integers(scenes, "scenes", EMPTY, space.n_objects - 1, ndim=2)
    pos = np.zeros((len(scenes), space.n_objects), bool)
    for i, r in enumerate(scenes):
        pos[i, r[r != EMPTY]] = True
    return pos


def value_positives(space, scenes, concept: str) -> np.ndarray:
    """(S, V_k) bool: which values of ``concept`` are present in each scene row."""
    k = space.concept_index(concept)
    scenes = np.asarray(scenes)
    pos = np.zeros((len(scenes), space.sizes[k]), bool)
    for i, r in enumerate(scenes):
        for o in r[r != EMPTY]:
            pos[i, space.object_values(int(o))[k]] = True
    return pos


def swap_only_positives(space, scenes):
    """For two-object scenes: (query object ids (S, 4), positives (S, 4)): the two present objects and the two
    objects that one colour/first-concept swap creates. Scenes whose swap changes nothing get -1 queries."""
    scenes = np.asarray(scenes)
    q = np.full((len(scenes), 4), -1, np.int64)
    for i, (a, b) in enumerate(scenes):
        sa, sb = swapped(space, int(a), int(b), 0)
        if {sa, sb} != {int(a), int(b)}:
            q[i] = (a, b, sa, sb)
    return q, np.tile([True, True, False, False], (len(scenes), 1))
