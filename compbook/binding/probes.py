"""Multiplicative probes: how a binding function combines concepts (chapter 13, "Coverage and multiplicative binding").

A scene of ``K`` slots (objects) and ``C`` concepts is an int array of values ``(K, C)``; an encoder maps it to an
embedding ``(D,)``. Each probe has one learnable table ``u[k][c]`` of shape ``(V_c, D)`` per (slot, concept) and a
bias ``b (D,)``, and predicts (all products elementwise over ``D``):

* ``"additive"``:       ``b + sum_k sum_c u[k][c][v_kc]`` (a bag of concepts, slot-tagged);
* ``"object_product"``: ``b + sum_k prod_c u[k][c][v_kc]`` (each object a product of its concepts, objects summed);
* ``"global_product"``: ``b + prod_k prod_c u[k][c][v_kc]`` (one product across both objects and all concepts).

Fitting (our choice, deterministic): the additive probe is linear in one-hot features and is solved exactly by
least squares (``numpy.linalg.lstsq``, minimum norm). The product probes are multilinear: each table, with all the
others fixed, has a closed-form least-squares solution, so they are fitted by alternating least squares (ALS,
``sweeps`` passes over the tables, the bias refitted after each pass) from ``restarts`` seeded random starts,
the best kept per output dimension.

``fit_probe(kind, slot_concept_values, embeddings)`` returns a :class:`Probe` with ``.predict(values) -> (S', D)``
and ``.r2(values, embeddings)`` (the pooled coefficient of determination, ``1 - SSE / SST`` around each dimension's
mean). Fit on scenes of train objects, evaluate ``.r2`` on held-out ones.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import checks

PROBE_KINDS = ("additive", "object_product", "global_product")
#: the most values one concept may have (the book's largest space has 50)
MAX_VALUES = 100_000


def check_values(values, n_values=None, name="slot_concept_values") -> tuple[np.ndarray, tuple[int, ...]]:
    """``values (S, K, C)`` as int64 and the number of values per concept ``(V_1..V_C)`` (given or max + 1)."""
    arr = np.asarray(values)
    if arr.ndim != 3:
        raise ValueError(f"{name}: expected an int array (S, slots, C), got shape {arr.shape}")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"{name}: expected integer value indices, got dtype {arr.dtype}")
    arr = arr.astype(np.int64)
    if arr.size and arr.min() < 0:
        raise ValueError(f"{name}: value indices out of range (a negative index {arr.min()})")
    if n_values is None:
        n_values = tuple(int(m) + 1 for m in arr.max(axis=(0, 1)))
    n_values = tuple(checks.integer(v, f"n_values[{i}]", 1, MAX_VALUES)
                     for i, v in enumerate(checks.sequence(n_values, "n_values")))
    if len(n_values) != arr.shape[2]:
        raise ValueError(f"n_values: {len(n_values)} concepts given, {name} has {arr.shape[2]}")
    too_big = arr.max(axis=(0, 1)) >= np.array(n_values) if arr.size else np.zeros(0, bool)
    if too_big.any():
        c = int(np.argmax(too_big))
        raise ValueError(f"{name}: value indices out of range: concept {c} has a value "
                         f"{arr[:, :, c].max()} >= {n_values[c]} values")
    return arr, n_values


def _check_embeddings(embeddings, n_scenes: int, name="embeddings", values="slot_concept_values") -> np.ndarray:
    emb = checks.reals(embeddings, name, finite=False)
    if emb.ndim != 2:
        raise ValueError(f"{name}: expected (S, D), got shape {emb.shape}")
    if emb.shape[0] != n_scenes:
        raise ValueError(f"{name}: {emb.shape[0]} scenes, but {values} has {n_scenes} "
                         "(mismatched scene counts)")
    if not np.isfinite(emb).all():
        raise ValueError(f"{name}: contains NaN or infinite values")
    return emb


def _factors(tables, values: np.ndarray) -> list[list[np.ndarray]]:
    """``[k][c] -> (S, D)``: each scene's row of table (k, c)."""
    return [[tables[k][c][values[:, k, c]] for c in range(values.shape[2])] for k in range(values.shape[1])]


def _one_hot(values: np.ndarray, n_values: tuple[int, ...]) -> np.ndarray:
    """``(S, 1 + K * sum V)``: an intercept column and one block of one-hot columns per (slot, concept)."""
    S, K, C = values.shape
    offsets = np.concatenate([[0], np.cumsum(np.tile(n_values, K))])[:-1].reshape(K, C)
    X = np.zeros((S, 1 + offsets.max() + n_values[-1]))
    X[:, 0] = 1.0
    rows = np.arange(S)
    for k in range(K):
        for c in range(C):
            X[rows, 1 + offsets[k, c] + values[:, k, c]] = 1.0
    return X


@dataclass
class Probe:
    """A fitted probe: ``kind``, ``n_values (V_1..V_C)``, ``bias (D,)`` and ``tables[k][c] (V_c, D)``."""

    kind: str
    n_values: tuple[int, ...]
    n_slots: int
    bias: np.ndarray
    tables: list

    def predict(self, values) -> np.ndarray:
        """Predicted embeddings ``(S', D)`` for scene values ``(S', slots, C)``."""
        values, _ = check_values(values, self.n_values, "values")
        if values.shape[1] != self.n_slots:
            raise ValueError(f"values: {values.shape[1]} slots, the probe was fitted on {self.n_slots}")
        return _predict(self.kind, self.bias, self.tables, values)

    def r2(self, values, embeddings) -> float:
        """Pooled ``R^2 = 1 - SSE / SST`` of the prediction (SST around each dimension's mean)."""
        values, _ = check_values(values, self.n_values, "values")
        y = _check_embeddings(embeddings, values.shape[0], values="values")
        if len(y) == 0:
            raise ValueError("values: no scenes to score (R^2 of nothing)")
        pred = self.predict(values)
        sst = ((y - y.mean(axis=0)) ** 2).sum()
        return float(1.0 - ((y - pred) ** 2).sum() / max(sst, 1e-300))


def _predict(kind, bias, tables, values) -> np.ndarray:
    f = _factors(tables, values)
    if kind == "additive":
        return bias + sum(x for row in f for x in row)
    if kind == "object_product":
        return bias + sum(np.prod(row, axis=0) for row in f)
    return bias + np.prod([x for row in f for x in row], axis=0)


def _als_update(target, others, index, n_rows) -> np.ndarray:
    """Closed-form table ``(n_rows, D)`` minimising ``|target - table[index] * others|^2`` (rows without data: 1)."""
    one_hot = np.zeros((n_rows, len(index)))
    one_hot[index, np.arange(len(index))] = 1.0
    num = one_hot @ (target * others)
    den = one_hot @ (others * others)
    return np.where(den > 1e-12, num / np.maximum(den, 1e-12), 1.0)


def _normalise(tables, slot, skip) -> None:
    """Rescale every table of ``slot`` (all slots if None) but ``skip`` to unit RMS per dimension.

    A product is unchanged when one factor grows and another shrinks; without this the tables drift to huge and
    tiny scales and predictions for unseen combinations blow up. The skipped table (solved next) absorbs the scale.
    """
    for k, row in enumerate(tables):
        if slot is not None and k != slot:
            continue
        for c, t in enumerate(row):
            if (k, c) != skip:
                row[c] = t / np.maximum(np.sqrt((t * t).mean(axis=0)), 1e-12)


def _fit_products(kind, values, y, n_values, sweeps, seed, restarts):
    """ALS for the two product probes, ``restarts`` starts per dimension; returns ``(bias, tables)``.

    Each output dimension is its own multilinear problem, so the restarts are stacked as extra columns and the
    best start (lowest training error) is kept per dimension: ALS on products has spiky local optima.
    """
    D = y.shape[1]
    bias, tables = _als(kind, values, np.tile(y, (1, restarts)), n_values, sweeps, seed)
    sse = ((np.tile(y, (1, restarts)) - _predict(kind, bias, tables, values)) ** 2).sum(axis=0)
    best = sse.reshape(restarts, D).argmin(axis=0) * D + np.arange(D)
    return bias[best], [[t[:, best] for t in row] for row in tables]


def _als(kind, values, y, n_values, sweeps, seed):
    rng = np.random.default_rng(seed)
    S, K, C = values.shape
    D = y.shape[1]
    bias = y.mean(axis=0)
    # seeded random starts of unit scale: the first table solved absorbs the embedding's scale
    tables = [[1.0 + 0.5 * rng.standard_normal((n_values[c], D)) for c in range(C)] for k in range(K)]
    for _ in range(sweeps):
        for k in range(K):
            for c in range(C):
                _normalise(tables, k if kind == "object_product" else None, skip=(k, c))
                f = _factors(tables, values)
                if kind == "global_product":
                    rest = np.prod([x for kk, row in enumerate(f) for cc, x in enumerate(row)
                                    if (kk, cc) != (k, c)], axis=0)
                    target = y - bias
                else:
                    rest = np.prod([x for cc, x in enumerate(f[k]) if cc != c], axis=0) if C > 1 else 1.0
                    rest = np.broadcast_to(rest, y.shape)
                    target = y - bias - sum(np.prod(row, axis=0) for kk, row in enumerate(f) if kk != k)
                tables[k][c] = _als_update(target, rest, values[:, k, c], n_values[c])
        bias = (y - (_predict(kind, np.zeros(D), tables, values))).mean(axis=0)
    return bias, tables


def fit_probe(kind: str, slot_concept_values, embeddings, n_values=None, sweeps: int = 30,
              restarts: int = 8, seed: int = 0) -> Probe:
    """Fit a probe of ``kind`` to scene embeddings (chapter 13).

    ``slot_concept_values``: int ``(S, slots, C)``; ``embeddings``: ``(S, D)``. ``n_values``: values per concept
    (default: the largest index seen + 1; pass it when held-out scenes may use values absent from the fit).
    ``sweeps``, ``restarts`` and ``seed`` only matter for the product probes (ALS passes per start, random
    starts per dimension, their seed).
    """
    if kind not in PROBE_KINDS:
        raise ValueError(f"kind: unknown probe kind {kind!r}; expected one of {PROBE_KINDS}")
    sweeps = checks.integer(sweeps, "sweeps")
    restarts = checks.integer(restarts, "restarts")
    seed = checks.seed(seed)
    values, n_values = check_values(slot_concept_values, n_values)
    y = _check_embeddings(embeddings, values.shape[0])
    if values.shape[0] == 0:
        raise ValueError("slot_concept_values: no scenes to fit")
    K, C = values.shape[1:]
    width = 1 + K * sum(n_values)
    # additive: the design and lstsq's copies (4 of (S, width)); products: per scene and stacked output (D x
    # restarts) the K C factors, their stacked products, the targets and the residuals (3 K C + 8 float64)
    per_scene = 4 * width if kind == "additive" else (3 * K * C + 8) * y.shape[1] * restarts
    checks.check_budget(8.0 * values.shape[0] * per_scene + 8.0 * K * sum(n_values) * y.shape[1] * restarts,
                        f"fitting a {kind} probe of {K} slots, n_values={list(n_values)!r:.60}")
    K, C = values.shape[1:]
    if kind == "additive":
        X = _one_hot(values, n_values)
        W = np.linalg.lstsq(X, y, rcond=None)[0]
        bias, rows = W[0], W[1:]
        tables, i = [], 0
        for k in range(K):
            tables.append([])
            for c in range(C):
                tables[k].append(rows[i:i + n_values[c]])
                i += n_values[c]
    else:
        bias, tables = _fit_products(kind, values, y, n_values, sweeps, seed, restarts)
    return Probe(kind, n_values, K, bias, tables)
