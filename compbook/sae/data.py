"""Scenes for Part C: patch tokens, captions and exact patch-level masks, from :mod:`compbook.scenes` (ch. 14-15).

Our choices (parameters of :func:`make_scenes`): CLEVR-2D's object space (8 colours x 3 shapes), 1 to 4 objects per
scene in random cells of the 2x2 ``"grid2"`` layout, 32x32 pixels cut into 4x4-pixel patches (an 8x8 grid, 64
patch tokens). Captions name the objects in reading order (slot order), so the caption is a function of the image.

The ground truth for the metrics (:mod:`compbook.sae.metrics`) is at patch level: a patch belongs to the object
covering most of it (``PatchGrid.labels``), and each image has candidate masks for every object, every colour and
shape value present (the union of the objects that have it) and the background.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .. import checks, scenes as sc

MAX_OBJECTS = 4


@dataclass
class SceneSet:
    """``patches`` (N, P, p*p*3) float; ``tokens`` (N, L) caption ids padded with ``vocab.pad_id``;
    ``token_concept`` (N, L) concept named by each token (-1: none); ``labels`` (N, P) object index per patch
    (-1: background); ``masks`` (N, C, P) bool candidate masks, ``mask_names`` their names per image;
    ``images`` (N, H, W, 3); ``objects`` / ``slots`` per scene; ``grid`` (rows, cols)."""
    patches: torch.Tensor
    tokens: torch.Tensor
    token_concept: torch.Tensor
    labels: torch.Tensor
    masks: torch.Tensor
    mask_names: list
    images: np.ndarray
    objects: list
    slots: list
    grid: tuple
    patch: int
    vocab: object

    def __len__(self) -> int:
        return len(self.tokens)

    def subset(self, idx) -> "SceneSet":
        """The scenes at indices ``idx`` (a slice or list of indices in ``0..N-1``: a negative one would wrap to
        the last scene, so it is refused, :func:`compbook.checks.index`)."""
        idx = list(range(len(self)))[idx] if isinstance(idx, slice) else \
            checks.index(checks.sequence(idx, "idx", 0), "idx", max(len(self), 1), "the scene set").tolist()
        if idx and len(self) == 0:
            raise ValueError("idx: the scene set is empty")
        t = torch.as_tensor(idx, dtype=torch.long)
        return SceneSet(self.patches[t], self.tokens[t], self.token_concept[t], self.labels[t], self.masks[t],
                        [self.mask_names[i] for i in idx], self.images[idx], [self.objects[i] for i in idx],
                        [self.slots[i] for i in idx], self.grid, self.patch, self.vocab)


def candidate_masks(labels: np.ndarray, values: np.ndarray, space) -> tuple[np.ndarray, list]:
    """Candidate masks (C, P) of one image: objects, each concept value present, background; with names."""
    masks, names = [], []
    for i in range(len(values)):
        masks.append(labels == i)
        names.append(f"object {i}")
    for k, concept in enumerate(space.concepts):
        for v in sorted(set(values[:, k].tolist())):
            masks.append(np.isin(labels, np.flatnonzero(values[:, k] == v)))
            names.append(f"{concept}={space.values[k][v]}")
    masks.append(labels == -1)
    names.append("background")
    return np.stack(masks), names


def make_scenes(n: int, seed: int = 0, res: int = 32, patch: int = 4, n_objects=(1, MAX_OBJECTS),
                space=None, layout: str = "grid2") -> SceneSet:
    """``n`` random scenes, deterministic in ``seed`` (see the module docstring for our choices)."""
    checks.choice(layout, "layout", sc.LAYOUTS)
    n, res, patch = checks.integer(n, "n"), checks.integer(res, "res"), checks.integer(patch, "patch")
    # every scene's image (float64, kept twice), patches, masks and per-object masks, before any is drawn
    checks.allocation((n, res, res, 3 * (2 * 8 + 4 + 2 * MAX_OBJECTS)), f"make_scenes: n={n} scenes at res={res}",
                      1)
    space = space or sc.clevr2d()
    vocab = sc.vocabulary(space)
    n_slots = len(sc.LAYOUTS[layout][0])
    rng = np.random.default_rng(seed)
    objs = sc.sample_scenes(np.arange(space.n_objects), n, n_objects, seed=seed,   # the slots, the masks' objects
                            most=min(n_slots, MAX_OBJECTS))
    rows = []
    for o in objs:
        slots = tuple(sorted(rng.choice(n_slots, size=len(o), replace=False).tolist()))
        s = sc.render_scene(space, o, res=res, layout=layout, slots=slots)
        rows.append((s, s.patches(patch), slots))
    n_cand = 2 * MAX_OBJECTS + len(space.concepts) * MAX_OBJECTS + 1
    masks = np.zeros((n, n_cand, rows[0][1].labels.size), bool)
    names = []
    for i, (s, pg, _) in enumerate(rows):
        m, nm = candidate_masks(pg.labels, s.values, space)
        masks[i, :len(m)] = m
        names.append(nm)
    length = max(len(s.token_ids) for s, _, _ in rows)
    concept = np.full((n, length), -1)
    for i, (s, _, _) in enumerate(rows):
        concept[i, :len(s.token_concept)] = s.token_concept
    return SceneSet(torch.tensor(np.stack([pg.patches for _, pg, _ in rows]), dtype=torch.float32),
                    torch.tensor(vocab.pad([s.token_ids for s, _, _ in rows], length)),
                    torch.tensor(concept), torch.tensor(np.stack([pg.labels for _, pg, _ in rows])),
                    torch.tensor(masks), names, np.stack([s.image for s, _, _ in rows]),
                    [s.objects for s, _, _ in rows], [sl for _, _, sl in rows], rows[0][1].grid, patch, vocab)
