"""compbook.sae.data: scenes for Part C, their patch labels and candidate masks."""

import numpy as np
import torch

from compbook import scenes as sc
from compbook.sae.data import candidate_masks, make_scenes


def test_make_scenes_shapes_determinism_and_captions():
    a, b = make_scenes(12, seed=3), make_scenes(12, seed=3)
    assert torch.equal(a.patches, b.patches) and torch.equal(a.tokens, b.tokens)
    assert a.patches.shape == (12, 64, 48) and a.grid == (8, 8)
    for i in range(12):
        n = len(a.objects[i])
        assert 1 <= n <= 4 and list(a.slots[i]) == sorted(a.slots[i])
        assert a.vocab.decode(a.tokens[i].tolist()).count(" and ") == n - 1
        assert set(a.labels[i].tolist()) <= set(range(-1, n))
        # every object covers some patch: exact masks survive the patch grid
        assert set(range(n)) <= set(a.labels[i].tolist())


def test_candidate_masks():
    space = sc.clevr2d()
    values = np.array([[0, 1], [0, 2]])            # two objects of the same colour
    labels = np.array([0, 0, 1, -1])
    m, names = candidate_masks(labels, values, space)
    assert names[:2] == ["object 0", "object 1"] and names[-1] == "background"
    colour = names.index(f"colour={space.values[0][0]}")
    assert m[colour].tolist() == [True, True, True, False], "a colour's mask is the union of its objects"
    assert m[-1].tolist() == [False, False, False, True]
