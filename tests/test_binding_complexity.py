"""Tests of compbook.binding.complexity: a simple binding function generalises, a lookup table does not."""

import numpy as np
import pytest

from compbook.binding.complexity import ComplexityConfig, check_widths, complexity_table, fit_binding_mlp
from compbook.binding.splits import coverage_split

SIZES = (3, 3, 3)
CFG = ComplexityConfig(widths=(64,), table_dim=8, steps=300, batch=128, lr=1e-2)


def planted(kind, D=16, seed=0):
    """Embeddings of every object: 'additive' (sum of concept vectors) or 'lookup' (a random vector each)."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(SIZES))
    vals = np.stack(np.unravel_index(np.arange(n), SIZES), -1)
    if kind == "lookup":
        return rng.normal(size=(n, D)), rng.normal(size=(n, D))
    t = [[rng.normal(size=(v, D)) for v in SIZES] for _ in range(2)]
    return [sum(t[k][c][vals[:, c]] for c in range(3)) for k in range(2)]


def table(kind):
    split = coverage_split(27, 0.6, seed=0)
    left, right = planted(kind)
    emb = lambda s: left[s[:, 0]] + right[s[:, 1]]       # noqa: E731 (scene = left part + right part)
    vals = lambda s: np.stack(np.unravel_index(s, SIZES), -1)   # noqa: E731 (S, 2, C)
    tr, te = np.asarray(split.train), np.asarray(split.test)
    return complexity_table(vals(tr)[None], emb(tr)[None], vals(te)[None], emb(te)[None], SIZES, CFG)


def test_simple_binding_generalises_to_held_out_objects():
    rows = {r["width"]: r for r in table("additive")}
    assert rows[0]["object"] > 0.95, "frozen probes must read the real embeddings"
    assert rows[64]["object"] > 0.9 and rows[64]["concept"] > 0.9, rows


def test_lookup_binding_does_not_generalise():
    rows = {r["width"]: r for r in table("lookup")}
    assert rows[0]["object"] > 0.95, "frozen probes must read the real embeddings"
    assert rows[64]["object"] < 0.5, f"an MLP on concept tables cannot know unseen objects' random vectors: {rows}"


def test_bad_input():
    with pytest.raises(ValueError, match="widths"):
        check_widths([64, 0])
    with pytest.raises(ValueError, match="mismatched scene counts"):
        fit_binding_mlp(np.zeros((1, 5, 2, 3), int), np.zeros((1, 4, 8)), SIZES, 8, CFG)


def encoder_input(kind):
    """(train_values, train_emb, test_values, test_emb) of planted embeddings: one encoder, (S, 2, C) values."""
    split = coverage_split(27, 0.6, seed=0)
    left, right = planted(kind)
    tr, te = np.asarray(split.train), np.asarray(split.test)
    vals = lambda s: np.stack(np.unravel_index(s, SIZES), -1)   # noqa: E731 (S, 2, C)
    return vals(tr), left[tr[:, 0]] + right[tr[:, 1]], vals(te), left[te[:, 0]] + right[te[:, 1]]


def test_encoder_binding_reads_planted_additive_and_lookup():
    from compbook.binding.complexity import encoder_binding

    add = encoder_binding(*encoder_input("additive"), SIZES, widths=(64,), cfg=CFG)
    look = encoder_binding(*encoder_input("lookup"), SIZES, widths=(64,), cfg=CFG)
    assert [r["width"] for r in add["complexity"]] == [0, 64]
    assert add["complexity"][1]["object"] > 0.9, add
    assert look["complexity"][1]["object"] < 0.3, look
    assert add["probes"]["additive"] > 0.999, add["probes"]
    assert add["probes"]["global_product"] < 0.95, add["probes"]   # a sum is not one product
    assert look["probes"]["additive"] < 0.5, look["probes"]


def test_encoder_binding_rejects_mismatched_scene_counts():
    from compbook.binding.complexity import encoder_binding

    trv, trz, tev, tez = encoder_input("additive")
    with pytest.raises(ValueError, match="train_values"):
        encoder_binding(trv, trz[:-1], tev, tez, SIZES, widths=(64,), cfg=CFG)
