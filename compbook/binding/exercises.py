"""Part B's exercises (chapters 10-13): each ``check_<what>(answer)`` runs the reader's answer against the reference
in ``compbook.binding`` on planted, seeded inputs and returns a :class:`~compbook.book.exercises.Checked`."""

from __future__ import annotations

import numpy as np

from ..book.exercises import Checked, check_function, correct, not_an_answer, rng, wrong
from . import decomposition
from .probes import fit_probe


# -- chapter 10: recognition -------------------------------------------------------------------------------------
def _recognised(logits, positives):
    """(S,) bool: every positive query's logit above every negative one's (ties fail)."""
    pos = np.asarray(positives, bool)
    return np.where(pos, logits, np.inf).min(1) > np.where(~pos, logits, -np.inf).max(1)


def _logit_cases():
    g = rng(10)
    cases = []
    for s, q in ((6, 5), (10, 8)):
        logits = np.round(g.normal(size=(s, q)), 1)            # rounded: ties happen
        pos = np.zeros((s, q), bool)
        for i in range(s):
            pos[i, g.choice(q, size=2, replace=False)] = True
        logits[0, np.flatnonzero(pos[0])[0]] = logits[0].max() + 1    # scene 0: one positive on top, not both
        logits[1, pos[1]] = 2.0                                        # scene 1: a tie between a present
        logits[1, np.flatnonzero(~pos[1])[0]] = 2.0                    # query and an absent one
        cases.append((logits, pos))
    return cases


def check_recognition(answer) -> Checked:
    """Chapter 10: ``answer(logits (S, Q), positives (S, Q) bool)`` says per scene whether the scene is recognised:
    every present query scores above every absent one."""
    mistakes = {"the best positive above the best negative (max, not min, over the present queries)":
                lambda L, P: np.where(P, L, -np.inf).max(1) > np.where(~P, L, -np.inf).max(1),
                "ties counted as recognised (>= instead of >)":
                lambda L, P: np.where(P, L, np.inf).min(1) >= np.where(~P, L, -np.inf).max(1)}
    return check_function(answer, _recognised, _logit_cases(), "recognition", mistakes)


def check_swap_queries(answer, scene=(("red", "square"), ("blue", "circle"))) -> Checked:
    """Chapter 10: the objects a bag of concepts cannot tell from ``scene``'s own objects: the swapped objects
    (each object's colour with the other's shape). ``answer`` is a set of object names like ``"red circle"``."""
    refused = not_an_answer(answer, "set of object names")
    if refused is not None:
        return refused
    if isinstance(answer, str) or not hasattr(answer, "__iter__"):
        return wrong(f"expected a set of object names such as {{'red circle'}}, got {type(answer).__name__}")
    got = {" ".join(str(a).lower().split()) for a in answer}
    (c1, s1), (c2, s2) = scene
    want, present = {f"{c1} {s2}", f"{c2} {s1}"}, {f"{c1} {s1}", f"{c2} {s2}"}
    if got == want:
        return correct(f"{sorted(want)}: same bag of concepts as the scene, different objects")
    if got & present:
        return wrong(f"{sorted(got & present)} are in the scene: a bag of concepts gets those right")
    return wrong(f"{sorted(got)}: not the swaps; combine one object's colour with the other's shape")


# -- chapter 11: the additive decomposition -----------------------------------------------------------------------
def check_r2(answer) -> Checked:
    """Chapter 11: ``answer(Z (S, D), Zhat (S, D))`` is the pooled R^2: ``1 - sum ||z - zhat||^2 / sum ||z - mean||^2``
    over all rows and dimensions."""
    g = rng(11)
    cases = []
    for s, d in ((20, 4), (50, 8)):
        Z = g.normal(size=(s, d)) * g.uniform(0.2, 3, size=d) + 2.0
        cases.append((Z, Z + 0.5 * g.normal(size=(s, d))))
    mistakes = {"the mean of per-dimension R^2 (not pooled over dimensions)":
                lambda Z, H: float(np.mean(1 - ((Z - H) ** 2).sum(0) / ((Z - Z.mean(0)) ** 2).sum(0))),
                "the total sum of squares around 0, not around the mean":
                lambda Z, H: float(1 - ((Z - H) ** 2).sum() / (Z ** 2).sum())}
    return check_function(answer, decomposition.r2, cases, "R^2", mistakes)


def check_retrieval(answer) -> Checked:
    """Chapter 11: ``answer(Zhat (S, D), Z (S, D))`` is the fraction of rows of Zhat whose nearest row of Z by cosine
    similarity is the same scene (the same row index)."""
    g = rng(12)
    cases = []
    for s, d in ((12, 5), (30, 6)):
        Z = g.normal(size=(s, d)) * g.uniform(0.3, 4, size=(s, 1))
        cases.append((Z + 0.8 * g.normal(size=(s, d)) * np.abs(Z).mean(), Z))

    def euclid(H, Z):
        dist = ((H[:, None] - Z[None]) ** 2).sum(-1)
        return float((dist.argmin(1) == np.arange(len(H))).mean())
    mistakes = {"the nearest row by Euclidean distance, not cosine": euclid}
    return check_function(answer, decomposition.retrieval, cases, "retrieval", mistakes)


# -- chapter 12: the additive probe -------------------------------------------------------------------------------
def _probe_cases(kind: str = "additive"):
    g = rng(13)
    cases = []
    for s, k, c, v, d in ((60, 2, 2, 3, 4), (90, 2, 3, 3, 3)):
        values = g.integers(0, v, size=(s, k, c))
        emb = g.normal(size=(s, d))
        cases.append((values, emb, (v,) * c))
    return cases


def _additive(values, emb, n_values):
    return fit_probe("additive", values, emb, n_values).predict(values)


def _one_hot(values, n_values, per_slot=True):
    s, k, c = values.shape
    cols = []
    for slot in range(k):
        for ci, v in enumerate(n_values):
            oh = np.eye(v)[values[:, slot, ci]]
            cols.append(oh)
    X = np.concatenate(cols, 1)
    if not per_slot:
        width = sum(n_values)
        X = X.reshape(s, k, width).sum(1)
    return np.concatenate([X, np.ones((s, 1))], 1)


def _lstsq(X, emb):
    return X @ np.linalg.lstsq(X, emb, rcond=None)[0]


def check_additive_probe(answer) -> Checked:
    """Chapter 12: ``answer(values (S, K, C) ints, emb (S, D), n_values)`` fits the additive probe by least squares
    (one table per slot and concept, one-hot features, a bias) and returns its predictions ``(S, D)``."""
    mistakes = {"tables shared across slots (a bag with no slot tags)":
                lambda v, e, n: _lstsq(_one_hot(v, n, per_slot=False), e),
                "a linear fit on the raw value indices, not one-hot":
                lambda v, e, n: _lstsq(np.concatenate([v.reshape(len(v), -1), np.ones((len(v), 1))], 1), e)}
    return check_function(answer, _additive, _probe_cases(), "the additive probe", mistakes, rtol=1e-5,
                          atol=1e-6)


# -- chapter 13: the global-product probe -------------------------------------------------------------------------
def _global_product(tables, bias, values):
    out = np.ones((len(values), len(bias)))
    for k, slot in enumerate(tables):
        for c, table in enumerate(slot):
            out = out * np.asarray(table)[values[:, k, c]]
    return bias + out


def _product_cases():
    g = rng(14)
    cases = []
    for s, k, c, v, d in ((8, 2, 2, 3, 4), (12, 2, 3, 4, 5)):
        tables = [[g.normal(size=(v, d)) for _ in range(c)] for _ in range(k)]
        cases.append((tables, g.normal(size=d), g.integers(0, v, size=(s, k, c))))
    return cases


def check_global_product(answer) -> Checked:
    """Chapter 13: ``answer(tables, bias (D,), values (S, K, C))`` is the global-product probe's prediction
    ``b + prod_k prod_c u[k][c][v_kc]`` (``tables[k][c]`` is ``(V_c, D)``; products elementwise over D)."""
    def object_product(tables, bias, values):
        out = np.zeros((len(values), len(bias)))
        for k, slot in enumerate(tables):
            obj = np.ones_like(out)
            for c, table in enumerate(slot):
                obj = obj * table[values[:, k, c]]
            out = out + obj
        return bias + out

    def additive(tables, bias, values):
        return bias + sum(t[values[:, k, c]] for k, slot in enumerate(tables) for c, t in enumerate(slot))
    mistakes = {"the object-product probe (objects summed, not multiplied)": object_product,
                "the additive probe (a sum of every table)": additive}
    return check_function(answer, _global_product, _product_cases(), "the global-product probe", mistakes)


# -- how big a probe is ------------------------------------------------------------------------------------------
def check_probe_parameters(answer) -> Checked:
    """Chapter 12: ``answer(K, C, V, D)`` is the number of parameters of a probe over K slots and C concepts of
    V values each, into D dimensions: one ``(V, D)`` table per (slot, concept) and a bias (the same for the
    additive and both product probes: they differ in form, not in size)."""
    cases = [(2, 3, 5, 16), (3, 2, 4, 8), (1, 1, 2, 3)]
    mistakes = {"the bias forgotten": lambda K, C, V, D: K * C * V * D,
                "tables shared across slots": lambda K, C, V, D: (C * V + 1) * D,
                "a table of every combination (V^C per slot)": lambda K, C, V, D: (K * V ** C + 1) * D}
    return check_function(answer, lambda K, C, V, D: (K * C * V + 1) * D, cases, "the probe's size", mistakes)


# -- what coverage leaves for the test ---------------------------------------------------------------------------
def check_split_sizes(answer) -> Checked:
    """Chapter 13: ``answer(n_objects, coverage)`` is ``(training objects, test scenes)`` of the coverage split
    (:func:`compbook.binding.splits.coverage_split`): the first ``floor(n_objects * coverage)`` objects of a seeded
    shuffle train; test scenes are the ordered two-object scenes of the held-out objects, an object may repeat."""
    from .splits import coverage_split

    def reference(n, c):
        s = coverage_split(n, c, seed=0)
        return np.array([len(s.train_objects), len(s.test)])

    def held(n, c):
        return n - int(np.floor(n * c))
    cases = [(24, 0.75), (10, 0.55), (125, 0.3), (125, 0.5)]
    mistakes = {"the train count rounded, not floored": lambda n, c: np.array([round(n * c), (n - round(n * c)) ** 2]),
                "unordered scenes without repeats": lambda n, c: np.array([n - held(n, c),
                                                                           held(n, c) * (held(n, c) - 1) // 2]),
                "ordered scenes without repeats": lambda n, c: np.array([n - held(n, c),
                                                                         held(n, c) * (held(n, c) - 1)]),
                "the training objects' scenes counted": lambda n, c: np.array([n - held(n, c),
                                                                               (n - held(n, c)) ** 2])}
    return check_function(answer, reference, cases, "the split's sizes", mistakes)
