"""Parts B and C's exercise checks: each accepts a right answer written from scratch and names at least two
planted mistakes (the wrong answers here are written independently of the checks' own)."""

import time
from collections import Counter

import numpy as np
import pytest
import torch

from compbook.binding import exercises as bx
from compbook.sae import exercises as cx


# -- Part B ----------------------------------------------------------------------------------------------------
def recognised(L, P):
    return np.array([L[i][P[i]].min() > L[i][~P[i]].max() for i in range(len(L))])


def test_recognition():
    assert bx.check_recognition(recognised).passed
    r = bx.check_recognition(lambda L, P: np.array([L[i][P[i]].max() > L[i][~P[i]].max() for i in range(len(L))]))
    assert not r.passed and "max, not min" in r.message
    r = bx.check_recognition(lambda L, P: np.array([L[i][P[i]].min() >= L[i][~P[i]].max() for i in range(len(L))]))
    assert not r.passed and "ties" in r.message


def test_swap_queries():
    assert bx.check_swap_queries({"red circle", "Blue  square"}).passed
    r = bx.check_swap_queries({"red square", "blue circle"})
    assert not r.passed and "in the scene" in r.message
    assert not bx.check_swap_queries("red circle").passed


def r2(Z, H):
    return 1 - ((Z - H) ** 2).sum() / ((Z - Z.mean(0)) ** 2).sum()


def test_r2():
    assert bx.check_r2(r2).passed
    r = bx.check_r2(lambda Z, H: np.mean(1 - ((Z - H) ** 2).sum(0) / ((Z - Z.mean(0)) ** 2).sum(0)))
    assert not r.passed and "per-dimension" in r.message
    r = bx.check_r2(lambda Z, H: 1 - ((Z - H) ** 2).sum() / (Z ** 2).sum())
    assert not r.passed and "around 0" in r.message


def test_retrieval():
    def cos(H, Z):
        h = H / np.linalg.norm(H, axis=1, keepdims=True)
        z = Z / np.linalg.norm(Z, axis=1, keepdims=True)
        return ((h @ z.T).argmax(1) == np.arange(len(H))).mean()
    assert bx.check_retrieval(cos).passed
    r = bx.check_retrieval(lambda H, Z: (((H[:, None] - Z[None]) ** 2).sum(-1).argmin(1) == np.arange(len(H))).mean())
    assert not r.passed and "Euclidean" in r.message
    assert not bx.check_retrieval(lambda H, Z: 1 - cos(H, Z)).passed


def additive(values, emb, n_values):
    s, k, c = values.shape
    X = np.concatenate([np.eye(v)[values[:, slot, ci]] for slot in range(k) for ci, v in enumerate(n_values)]
                       + [np.ones((s, 1))], 1)
    return X @ np.linalg.lstsq(X, emb, rcond=None)[0]


def test_additive_probe():
    assert bx.check_additive_probe(additive).passed
    def shared(values, emb, n_values):
        s = len(values)
        X = sum(np.concatenate([np.eye(v)[values[:, slot, ci]] for ci, v in enumerate(n_values)], 1)
                for slot in range(values.shape[1]))
        X = np.concatenate([X, np.ones((s, 1))], 1)
        return X @ np.linalg.lstsq(X, emb, rcond=None)[0]
    r = bx.check_additive_probe(shared)
    assert not r.passed and "shared across slots" in r.message
    def raw(values, emb, n_values):
        X = np.concatenate([values.reshape(len(values), -1), np.ones((len(values), 1))], 1)
        return X @ np.linalg.lstsq(X, emb, rcond=None)[0]
    r = bx.check_additive_probe(raw)
    assert not r.passed and "raw value indices" in r.message


def test_global_product():
    def right(tables, bias, values):
        out = bias + np.prod([t[values[:, k, c]] for k, slot in enumerate(tables) for c, t in enumerate(slot)], 0)
        return out
    assert bx.check_global_product(right).passed
    def objects(tables, bias, values):
        return bias + sum(np.prod([t[values[:, k, c]] for c, t in enumerate(slot)], 0)
                          for k, slot in enumerate(tables))
    r = bx.check_global_product(objects)
    assert not r.passed and "object-product" in r.message
    r = bx.check_global_product(lambda t, b, v: b + sum(x[v[:, k, c]] for k, s in enumerate(t)
                                                        for c, x in enumerate(s)))
    assert not r.passed and "additive" in r.message


# -- Part C ----------------------------------------------------------------------------------------------------
def topk_code(pre, k):
    out = torch.zeros_like(pre)
    for i, row in enumerate(torch.relu(pre)):
        idx = torch.argsort(row, descending=True)[:k]
        out[i, idx] = row[idx]
    return out


def test_topk_code():
    assert cx.check_topk_code(topk_code).passed
    def no_relu(pre, k):
        vals, idx = pre.topk(k, dim=-1)
        return torch.zeros_like(pre).scatter(-1, idx, vals)
    r = cx.check_topk_code(no_relu)
    assert not r.passed and "no ReLU" in r.message
    r = cx.check_topk_code(lambda pre, k: -topk_code(-pre, k) * 0 + topk_code(pre, k).flip(-1))
    assert not r.passed


def test_fvu():
    def fvu(x, h):
        return float(((x - h) ** 2).sum() / ((x - x.mean(0)) ** 2).sum())
    assert cx.check_fvu(fvu).passed
    r = cx.check_fvu(lambda x, h: float(((x - h) ** 2).sum() / (x ** 2).sum()))
    assert not r.passed and "around 0" in r.message
    r = cx.check_fvu(lambda x, h: 1 - fvu(x, h))
    assert not r.passed and "explained variance" in r.message


def profiles(z, regions):
    return torch.stack([z[regions == g].pow(2).mean(0).sqrt() for g in torch.unique(regions)])


def test_group_profiles():
    assert cx.check_group_profiles(profiles).passed
    r = cx.check_group_profiles(lambda z, r: torch.stack([z[r == g].abs().mean(0) for g in torch.unique(r)]))
    assert not r.passed and "mean |z|" in r.message
    r = cx.check_group_profiles(lambda z, r: torch.stack([z[r == g].pow(2).sum(0).sqrt() for g in torch.unique(r)]))
    assert not r.passed and "sum over" in r.message


def test_exclusive_sparsity():
    assert cx.check_exclusive_sparsity(lambda z, r: float(profiles(z, r).mean(0).pow(2).mean())).passed
    r = cx.check_exclusive_sparsity(lambda z, r: float(profiles(z, r).pow(2).mean()))
    assert not r.passed and "square inside" in r.message
    r = cx.check_exclusive_sparsity(lambda z, r: float(profiles(z, r).mean()))
    assert not r.passed and "group-sparsity" in r.message


def test_mask_iou():
    def iou(a, m):
        a, m = np.asarray(a, bool), np.asarray(m, bool)
        u = (a | m).sum()
        return float((a & m).sum() / u) if u else 0.0
    assert cx.check_mask_iou(iou).passed
    r = cx.check_mask_iou(lambda a, m: float((np.asarray(a) & np.asarray(m)).sum() / max(np.asarray(m).sum(), 1)))
    assert not r.passed and "recall" in r.message
    r = cx.check_mask_iou(lambda a, m: float((np.asarray(a) & np.asarray(m)).sum() / max(np.asarray(a).sum(), 1)))
    assert not r.passed and "precision" in r.message


def test_identification():
    def name(acts, labels, top_n):
        top = sorted(range(len(acts)), key=lambda i: -acts[i])[:top_n]
        counts = Counter(labels[i] for i in top)
        best = max(counts.values())
        return next(labels[i] for i in top if counts[labels[i]] == best)
    assert cx.check_identification(name).passed
    r = cx.check_identification(lambda a, l, n: Counter(l).most_common(1)[0][0])
    assert not r.passed and "over all patches" in r.message
    r = cx.check_identification(lambda a, l, n: name([-x for x in a], l, n))
    assert not r.passed and "wrong way" in r.message


@pytest.mark.parametrize("check", [bx.check_recognition, bx.check_r2, bx.check_global_product, cx.check_topk_code,
                                   cx.check_fvu, cx.check_identification, bx.check_swap_queries,
                                   bx.check_split_sizes])
def test_the_placeholder_is_refused_politely(check):
    r = check(...)
    assert not r.passed and "placeholder" in r.message


def test_probe_parameters():
    assert bx.check_probe_parameters(lambda K, C, V, D: (K * C * V + 1) * D).passed
    assert "bias" in bx.check_probe_parameters(lambda K, C, V, D: K * C * V * D).message
    assert "every combination" in bx.check_probe_parameters(lambda K, C, V, D: (K * V ** C + 1) * D).message


def test_a_topk_code_that_never_returns_is_stopped():
    def endless(pre, k):
        while True:
            pass
    t0 = time.perf_counter()
    r = cx.check_topk_code(endless, seconds=0.3)
    assert time.perf_counter() - t0 < 30, "the check waited on a reader's endless loop"
    assert not r.passed and "still running after 0.3 s" in r.message


def test_a_topk_code_of_complex_values_or_raising_system_exit_is_refused():
    r = cx.check_topk_code(lambda pre, k: topk_code(pre, k).to(torch.complex128))
    assert not r.passed and "complex" in r.message, r.message
    r = cx.check_topk_code(lambda pre, k: exit())
    assert not r.passed and "SystemExit" in r.message


def test_an_identification_that_is_not_a_label_is_refused_by_its_type():
    r = cx.check_identification(lambda acts, labels, top_n: 3)
    assert not r.passed and "returned an int, expected a str" in r.message, r.message


def test_split_sizes():
    import math
    assert bx.check_split_sizes(lambda n, c: (math.floor(n * c), (n - math.floor(n * c)) ** 2)).passed
    r = bx.check_split_sizes(lambda n, c: (round(n * c), (n - round(n * c)) ** 2))
    assert not r.passed and "rounded" in r.message
    r = bx.check_split_sizes(lambda n, c: (math.floor(n * c), math.floor(n * c) ** 2))
    assert not r.passed and "training objects' scenes" in r.message
