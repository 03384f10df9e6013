"""Scenes as sums (chapter 11): Level I / II additive fits, retrieval, probes, removal ablation, edits, MDS.

Notation: Z (N, D) scene embeddings; ``scenes`` (N, k) object ids per slot; ``values`` (n_objects, C) the
concept values of each object. All fits work on centred embeddings (mu = the mean scene).

* Level I, scene ~ sum of object vectors: :func:`object_vectors` (averaged over scenes holding the object in
  either slot, ``per_slot=False``, or per slot) and :func:`level1` (reconstruction mu + sum_i u_{o_i}).
* Level II, object ~ sum of concept vectors: :func:`level2` (main effects of each concept value over objects).
* :func:`r2`, :func:`retrieval` (nearest real scene by cosine), :func:`probe_accuracy` (logistic probes).
* :func:`additive_part` fits a per-(slot, concept) or per-(slot, object) one-hot model by least squares;
  :func:`removal_ablation` subtracts it (or the same fit with scene labels permuted, the control) and probes.
* :func:`edit_retrieval`: z' = z_s - u_o + u_o' (o' = o with one concept changed), top-1 retrieval.
* :func:`mds3`: 3-D metric MDS on cosine distances (scikit-learn).
* :func:`arrow_agreement`: the parallelogram test (does changing the left object move a scene by the same arrow
  whatever the right object is?).
"""

from __future__ import annotations

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.manifold import MDS
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.metrics.pairwise import cosine_distances

from .. import checks
from .recognition import as_embeddings


def _z(Z) -> np.ndarray:
    return as_embeddings("Z", Z).numpy()


def _check_rows(Z, scenes):
    scenes = np.asarray(scenes)
    if scenes.ndim != 2 or len(scenes) != len(Z):
        raise ValueError(f"scenes: need ({len(Z)}, k) object ids, got shape {scenes.shape}")
    return scenes


def object_vectors(Z, scenes, n_objects: int, per_slot: bool = False) -> np.ndarray:
    """Averaged object vectors of centred embeddings: (n_objects, D), or (k, n_objects, D) per slot.

    u_o = mean of (z_s - mu) over scenes s holding o (in any slot, or in that slot); NaN where never seen.
    """
    Z = _z(Z)
    scenes = _check_rows(Z, scenes)
    n_objects = checks.integer(n_objects, "n_objects")
    # Z as float64 (torch's copy, NumPy's, the centred one and np.add.at's), per slot the sums, counts, averages
    checks.check_budget(8.0 * (5 * Z.size + (3 * scenes.shape[1] + 2) * n_objects * Z.shape[1]),
                        f"object_vectors of {n_objects} objects")
    if scenes.size and (not np.issubdtype(scenes.dtype, np.integer) or scenes.min() < 0 or scenes.max() >= n_objects):
        raise ValueError(f"scenes: object ids must be integers in [0, {n_objects}), got {scenes.dtype} in "
                         f"[{scenes.min()}, {scenes.max()}]")
    Zc = Z - Z.mean(0)
    k = scenes.shape[1]
    out = np.full((k, n_objects, Z.shape[1]), np.nan)
    cnt = np.zeros((k, n_objects))
    sums = np.zeros((k, n_objects, Z.shape[1]))
    for s in range(k):
        np.add.at(sums[s], scenes[:, s], Zc)
        np.add.at(cnt[s], scenes[:, s], 1)
    if per_slot:
        seen = cnt > 0
        out[seen] = sums[seen] / cnt[seen][:, None]
        return out
    tot, n = sums.sum(0), cnt.sum(0)
    u = np.full((n_objects, Z.shape[1]), np.nan)
    u[n > 0] = tot[n > 0] / n[n > 0][:, None]
    return u


def level1(Z, scenes, vectors) -> np.ndarray:
    """Reconstruct scenes (N, D) as mu + sum over slots of the object vectors.

    ``vectors`` (n_objects, D) shared by the slots, or (k, n_objects, D) per slot (e.g. from single-object images
    centred on their own mean, or from :func:`object_vectors`)."""
    Z = _z(Z)
    scenes = _check_rows(Z, scenes)
    v = checks.reals(vectors, "vectors")
    if v.ndim not in (2, 3) or v.shape[-1] != Z.shape[1] or v.ndim == 3 and len(v) != scenes.shape[1]:
        raise ValueError(f"vectors: need (n_objects, {Z.shape[1]}) or ({scenes.shape[1]}, n_objects, "
                         f"{Z.shape[1]}), got shape {v.shape}")
    checks.integers(scenes, "scenes", 0, v.shape[-2] - 1)
    parts = [v[scenes[:, s]] if v.ndim == 2 else v[s, scenes[:, s]] for s in range(scenes.shape[1])]
    return Z.mean(0) + np.sum(parts, axis=0)


def level2(U, values) -> tuple:
    """Fit objects as sums of concept vectors: U (n, D) object vectors, values (n, C) value indices.

    Returns (reconstruction (n, D), concept vectors: list over concepts of (V_k, D) main effects)."""
    U = as_embeddings("U", U).numpy()
    values = checks.integers(values, "values", 0, ndim=2)
    checks.same_length(U, values, "U", "values")
    mu = U.mean(0)
    W = []
    for c in range(values.shape[1]):
        vk = values[:, c]
        W.append(np.stack([(U[vk == v] - mu).mean(0) if (vk == v).any() else np.zeros(U.shape[1])
                           for v in range(vk.max() + 1)]))
    rec = mu + sum(W[c][values[:, c]] for c in range(values.shape[1]))
    return rec, W


def r2(Z, Zhat) -> float:
    """Coefficient of determination 1 - sum ||z - zhat||^2 / sum ||z - mean z||^2 (over all rows and dims)."""
    Z, Zhat = _z(Z), as_embeddings("Zhat", Zhat, Z.shape[1]).numpy()
    if Z.shape != Zhat.shape or not ((Z - Z.mean(0)) ** 2).sum() > 0:
        raise ValueError(f"Z and Zhat: r2 needs two arrays of one shape and Z with some variance, got shapes "
                         f"{Z.shape} and {Zhat.shape}")
    return float(1 - ((Z - Zhat) ** 2).sum() / ((Z - Z.mean(0)) ** 2).sum())


def retrieval(Zhat, Z, target=None) -> float:
    """Fraction of rows of Zhat whose nearest row of Z (cosine) is ``target`` (default: the same row index)."""
    Zhat = as_embeddings("Zhat", Zhat)
    Z = as_embeddings("Z", Z, Zhat.shape[1])
    sim = -cosine_distances(Zhat.numpy(), Z.numpy())
    if target is None:
        target = np.arange(len(Zhat))
    else:   # one row index of Z per row of Zhat: never broadcast, never wrapped
        target = checks.integers(target, "target", 0, len(Z) - 1, ndim=1)
        checks.same_length(Zhat, target, "Zhat", "target")
    return float((sim.argmax(1) == target).mean())


def probe_accuracy(Z_train, y_train, Z_test, y_test, C: float = 1.0) -> float:
    """Accuracy of a logistic-regression probe (on standardised features) fitted on (Z_train, y_train), tested
    on (Z_test, y_test)."""
    clf = make_pipeline(StandardScaler(), LogisticRegression(C=C, max_iter=1000))
    clf.fit(np.asarray(Z_train, float), y_train)
    return float(clf.score(np.asarray(Z_test, float), y_test))


def labels(scenes, values) -> dict:
    """{"concepts": (N, k*C) value of each (slot, concept), "objects": (N, k) object id of each slot}."""
    values = checks.integers(values, "values", 0, ndim=2)
    scenes = checks.integers(scenes, "scenes", 0, len(values) - 1, ndim=2)
    return {"concepts": values[scenes].reshape(len(scenes), -1), "objects": scenes}


def probe_suite(Z_fit, Z_eval, scenes, values, seed: int = 0, train_frac: float = 0.5) -> dict:
    """Mean probe accuracy for concepts (per slot and concept) and objects (per slot).

    Probes are fitted on ``Z_fit`` of a seeded ``train_frac`` of scenes and scored on ``Z_eval`` of the others
    (pass the same matrix twice for ordinary probing; pass real embeddings and reconstructions to probe the
    reconstructions)."""
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(scenes))
    tr, te = order[: int(len(order) * train_frac)], order[int(len(order) * train_frac):]
    out = {}
    for name, y in labels(scenes, values).items():
        out[name] = float(np.mean([probe_accuracy(Z_fit[tr], y[tr, j], Z_eval[te], y[te, j])
                                   for j in range(y.shape[1])]))
    return out


def design(scenes, values, kind: str, n_objects: int) -> np.ndarray:
    """One-hot design (N, F) of a per-(slot, concept value) ("concepts") or per-(slot, object) ("objects") model."""
    values = checks.integers(values, "values", 0, ndim=2)
    n_objects = checks.integer(n_objects, "n_objects")
    scenes = checks.integers(scenes, "scenes", 0, n_objects - 1, ndim=2)
    width = n_objects if kind == "objects" else int((values.max(0) + 1).sum()) if values.size else 0
    # the identity matrices, the one-hot columns per slot and their concatenation (float64)
    checks.check_budget(8.0 * (2 * len(scenes) * scenes.shape[1] + max(n_objects, width)) * width
                        + 2.0 * (scenes.nbytes + values.nbytes),
                        f"design of {width} columns (n_objects={n_objects}, values up to "
                        f"{values.max() if values.size else 0})")
    cols = []
    for s in range(scenes.shape[1]):
        if kind == "objects":
            cols.append(np.eye(n_objects)[scenes[:, s]])
        elif kind == "concepts":
            for c in range(values.shape[1]):
                cols.append(np.eye(values[:, c].max() + 1)[values[scenes[:, s], c]])
        else:
            raise ValueError(f"kind={kind!r}: expected 'concepts' or 'objects'")
    return np.concatenate(cols, axis=1)


def additive_part(Z, scenes, values, kind: str, permute_seed: int | None = None) -> np.ndarray:
    """Least-squares fit of centred Z on the one-hot design (N, D). ``permute_seed``: the control, the same fit
    with the design's rows (scene labels) shuffled, so that it captures no real structure."""
    Z = _z(Z)
    X = design(scenes, values, kind, len(values))
    if permute_seed is not None:
        X = X[np.random.default_rng(permute_seed).permutation(len(X))]
    Zc = Z - Z.mean(0)
    coef, *_ = np.linalg.lstsq(X, Zc, rcond=None)
    return X @ coef


def removal_ablation(Z, scenes, values, seed: int = 0) -> dict:
    """Probe accuracies (concepts, objects) after subtracting nothing, the concept part, the object part, and
    each part fitted with permuted scene labels (controls). Returns {condition: {"concepts", "objects"}}."""
    Z = _z(Z)
    conds = {"none": Z,
             "- concept part": Z - additive_part(Z, scenes, values, "concepts"),
             "- object part": Z - additive_part(Z, scenes, values, "objects"),
             "- concept part (permuted ids)": Z - additive_part(Z, scenes, values, "concepts", seed + 1),
             "- object part (permuted ids)": Z - additive_part(Z, scenes, values, "objects", seed + 1)}
    return {k: probe_suite(v, v, scenes, values, seed) for k, v in conds.items()}


def edit_retrieval(Z, scenes, values, vectors, concept_sizes) -> float:
    """Top-1 accuracy of counterfactual edits z' = z_s - u_o + u_o' among all rows of Z.

    For each scene, slot and concept, o' = o with that concept set to each other value; the edit is right when
    the nearest real scene (cosine) is the scene with o' in that slot. ``vectors``: (n_objects, D) or
    (k, n_objects, D). Scenes whose edited version is not among ``scenes`` are skipped."""
    Z = _z(Z)
    scenes, values = np.asarray(scenes), np.asarray(values)
    v = np.asarray(vectors, float)
    index = {tuple(r): i for i, r in enumerate(scenes)}
    obj_of = {tuple(val): o for o, val in enumerate(values)}
    edits, targets = [], []
    for i, r in enumerate(scenes):
        for s, o in enumerate(r):
            for c, size in enumerate(concept_sizes):
                for val in range(size):
                    if val == values[o, c]:
                        continue
                    new = values[o].copy()
                    new[c] = val
                    o2 = obj_of.get(tuple(new))
                    r2_ = r.copy()
                    r2_[s] = o2 if o2 is not None else -1
                    j = index.get(tuple(r2_))
                    if j is None:
                        continue
                    vo, vo2 = (v[o], v[o2]) if v.ndim == 2 else (v[s, o], v[s, o2])
                    edits.append(Z[i] - vo + vo2)
                    targets.append(j)
    if not edits:
        raise ValueError("scenes: no edit lands on a scene in the set")
    return retrieval(np.array(edits), Z, np.array(targets))


def mds3(vectors, seed: int = 0) -> np.ndarray:
    """(n, D) -> (n, 3) metric MDS of the cosine distances (scikit-learn, seeded)."""
    d = cosine_distances(as_embeddings("vectors", vectors).numpy())
    d = (d + d.T) / 2
    np.fill_diagonal(d, 0)
    mds = MDS(n_components=3, metric="precomputed", random_state=seed, n_init=1, init="random")
    return mds.fit_transform(d)


def arrow_agreement(Z, n_objects: int, n_draws: int = 2000, seed: int = 0) -> np.ndarray:
    """Scenes as sums, tested on parallelograms. ``Z`` (n*n, D): embeddings of every ordered scene (left, right),
    row ``left * n + right``. For ``n_draws`` random left objects l != l' and right objects r != r': the cosine
    between the arrow z(l, r) - z(l', r) and the arrow z(l, r') - z(l', r') (the same change of the left object,
    beside two different right objects). A sum z = mu + a_left + b_right gives 1 exactly; unrelated scene vectors
    give about 0. Returns (n_draws,) cosines."""
    n = checks.integer(n_objects, "n_objects", 2)
    n_draws = checks.integer(n_draws, "n_draws")
    Z = _z(Z)
    if len(Z) != n * n:
        raise ValueError(f"Z: need the {n * n} ordered scenes of {n} objects (row left * n + right), got {len(Z)}")
    g = np.random.default_rng(seed)
    G = Z.reshape(n, n, -1)
    l, r = g.integers(0, n, n_draws), g.integers(0, n, n_draws)
    l2, r2 = (l + g.integers(1, n, n_draws)) % n, (r + g.integers(1, n, n_draws)) % n
    a, b = G[l, r] - G[l2, r], G[l, r2] - G[l2, r2]
    norm = np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1)
    return (a * b).sum(-1) / np.maximum(norm, 1e-12)
