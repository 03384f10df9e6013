"""Frames, their coherence and the Welch bound, globally and under compositional sparsity (chapters 2 and 4).

Pure functions on numpy arrays (float64). ``F (r, d)`` holds r feature directions in R^d, one per row.

* **The Welch bound** (chapter 4). :func:`mutual_coherence` is the worst interference max_{i != j} |<f_i, f_j>| of
  the unit-normalised rows, :func:`welch_bound` its lower bound, :func:`simplex_etf` / :func:`paley_etf` /
  :func:`naimark_complement` build equiangular tight frames that meet it, :func:`minimise_coherence` searches for
  a good frame for any (r, d); :class:`WelchConfig` and :func:`coherence_sweep` are the chapter's settings and sweep.
* **Local interference** (chapter 2). With compositional sparsity a node reads only its k local primitives
  (``groups``: one tuple of feature indices per node, :func:`genome_groups`). :func:`local_coherence`,
  :func:`local_welch_bound` and :func:`local_orthogonal_frame` show that every local set can be exactly orthogonal
  while r > d globally; :func:`dimension_sweep` is the chapter's sweep over d.

The volume ratio of chapter 3 is :mod:`compbook.cppn.volume_ratio`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .. import checks
from ..config import ModeConfig

_positive_int = checks.integer


# -- frames, coherence and the Welch bound (chapter 4) ------------------------------------------------------------
def normalise_rows(F) -> np.ndarray:
    """The rows of ``F (r, d)`` scaled to unit L2 norm (float64); raises ValueError on a zero or non-finite row,
    or on complex entries (real frames only here; :func:`mutual_coherence` also takes complex frames)."""
    return _unit_rows(F, allow_complex=False)


def _unit_rows(F, allow_complex: bool) -> np.ndarray:
    A = np.asarray(F)
    if np.iscomplexobj(A) and not allow_complex:
        raise ValueError("F has complex entries: only real frames are supported here (coherence accepts complex)")
    try:
        F = A.astype(np.complex128 if np.iscomplexobj(A) else np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"F must be an (r, d) matrix of numbers, got dtype {A.dtype}") from None
    if F.ndim != 2 or F.shape[0] < 1 or F.shape[1] < 1:
        raise ValueError(f"F must be a non-empty (r, d) matrix, got shape {F.shape}")
    if not np.isfinite(F).all():
        raise ValueError("F contains NaN or inf")
    scale = np.abs(F).max(axis=1, keepdims=True)          # rows scaled first: 1e300 entries do not overflow
    if (scale == 0).any():
        raise ValueError(f"F has zero rows {np.flatnonzero(scale[:, 0] == 0).tolist()}: a direction needs norm > 0")
    F = F / scale
    return F / np.linalg.norm(F, axis=1, keepdims=True)


def mutual_coherence(F) -> float:
    """max_{i != j} |<f_i, f_j>| over the unit-normalised rows of ``F (r, d)``, r >= 2: the worst interference.

    Complex frames use the Hermitian inner product ``<f_i, f_j> = sum_k f_ik conj(f_jk)``."""
    U = _unit_rows(F, allow_complex=True)
    if U.shape[0] < 2:
        raise ValueError(f"coherence needs at least r = 2 rows, got F of shape {U.shape}")
    G = np.abs(U @ U.conj().T)
    np.fill_diagonal(G, 0.0)
    return float(G.max())


def welch_bound(r: int, d: int) -> float:
    """Lower bound on the coherence of any r unit vectors in R^d: sqrt((r - d) / (d (r - 1))) if r > d, else 0."""
    r, d = _positive_int(r, "r"), _positive_int(d, "d")
    return math.sqrt((r - d) / (d * (r - 1))) if r > d else 0.0


def orthonormal_frame(r: int, d: int, seed: int | None = None) -> np.ndarray:
    """``(r, d)`` orthonormal rows (r <= d): coherence 0 = the Welch bound. A random rotation if ``seed`` is given."""
    r, d = _positive_int(r, "r"), _positive_int(d, "d")
    if r > d:
        raise ValueError(f"orthonormal_frame: r = {r} orthonormal vectors do not fit in R^{d} (need r <= d)")
    seed = None if seed is None else checks.seed(seed)
    checks.allocation((d, d), f"orthonormal_frame in R^{d}", 8 * 6)     # the draw, QR's copy, Q, R and work
    if seed is None:
        return np.eye(d)[:r]
    Q, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((d, d)))
    return Q[:r]


def frame_from_gram(G, d: int) -> np.ndarray:
    """A frame ``F (r, d)`` with ``F F^T`` the best rank-d approximation of a symmetric ``G (r, r)``
    (exact if rank <= d)."""
    G = np.asarray(G, dtype=np.float64)
    d = _positive_int(d, "d")
    if G.ndim != 2 or G.shape[0] != G.shape[1] or not np.allclose(G, G.T):
        raise ValueError(f"G must be a symmetric square matrix, got shape {G.shape}")
    vals, vecs = np.linalg.eigh(G)
    top = np.argsort(vals)[::-1][:d]
    return vecs[:, top] * np.sqrt(np.clip(vals[top], 0.0, None))


def simplex_etf(d: int) -> np.ndarray:
    """The simplex frame: r = d + 1 unit vectors in R^d with all |<f_i, f_j>| = 1/d (an ETF), shape ``(d+1, d)``."""
    d = _positive_int(d, "d")
    r = d + 1
    checks.allocation((r, r), f"simplex_etf(d={d})'s Gram matrix (d + 1, d + 1)", 8 * 7)   # G, its terms, eigh's
    G = (r * np.eye(r) - np.ones((r, r))) / d  # unit diagonal, -1/d off it, rank d
    return normalise_rows(frame_from_gram(G, d))


def _is_prime(q: int) -> bool:
    return q >= 2 and all(q % k for k in range(2, int(math.isqrt(q)) + 1))


def paley_etf(q: int) -> np.ndarray:
    """Paley's real ETF from a prime q = 1 (mod 4): r = q + 1 unit vectors in R^{(q+1)/2}, coherence 1/sqrt(q).

    Built from the symmetric conference matrix C (order q + 1, C^2 = q I): the Gram matrix I + C/sqrt(q) has
    eigenvalues 0 and 2 only, so it is a rank-(q+1)/2 Gram of unit vectors with all |<f_i, f_j>| = 1/sqrt(q).
    q = 5 gives the 6 diagonals of the icosahedron in R^3.
    """
    q = _positive_int(q, "q", 2)
    if not _is_prime(q) or q % 4 != 1:
        raise ValueError(f"paley_etf: q must be a prime with q % 4 == 1 (5, 13, 17, 29, ...), got {q}")
    squares = {(k * k) % q for k in range(1, q)}
    chi = np.array([0] + [1 if a in squares else -1 for a in range(1, q)])
    C = np.zeros((q + 1, q + 1))
    C[0, 1:] = C[1:, 0] = 1
    C[1:, 1:] = chi[(np.arange(q)[None, :] - np.arange(q)[:, None]) % q]
    return normalise_rows(frame_from_gram(np.eye(q + 1) + C / math.sqrt(q), (q + 1) // 2))


def naimark_complement(F) -> np.ndarray:
    """The Naimark complement of a unit-norm tight frame ``F (r, d)``, r > d: r unit vectors in R^{r-d}.

    An ETF maps to an ETF (coherence scales by d / (r - d)), so every ETF gives a second one for free.
    """
    U = normalise_rows(F)
    r, d = U.shape
    if r <= d:
        raise ValueError(f"naimark_complement needs r > d, got F of shape {U.shape}")
    if not np.allclose(U.T @ U, (r / d) * np.eye(d), atol=1e-8):
        raise ValueError("naimark_complement: F is not a tight frame (F^T F must equal (r/d) I)")
    return normalise_rows(frame_from_gram(np.eye(r) - (d / r) * (U @ U.T), r - d))


def coherence_surrogate(X, p: float) -> tuple[np.ndarray, np.ndarray]:
    """The smooth stand-in for coherence that :func:`minimise_coherence` descends, and its gradient.

    ``X (B, r, d)``: B frames, rows not necessarily unit. With U the unit rows and A_ij = |<u_i, u_j>| (i != j),
    c = max A and S = mean_{i != j} (A_ij / c)^p, the surrogate is c S^(1/p), a p-norm of the off-diagonal Gram:
    it is <= c and tends to c as p grows (dividing by c only keeps the powers in floating-point range; c is held
    constant in the gradient, which then is that of the plain p-norm). Returns ``(loss (B,), grad (B, r, d))``.
    """
    loss, dX, _, _ = _surrogate(np.asarray(X, dtype=np.float64), p)
    return loss, dX


def _surrogate(X: np.ndarray, p: float):
    """:func:`coherence_surrogate`, also returning the unit rows ``U (B, r, d)`` and coherences ``c (B,)``."""
    B, r, _ = X.shape
    norms = np.linalg.norm(X, axis=-1, keepdims=True)
    U = X / norms
    G = U @ U.transpose(0, 2, 1)
    A = np.abs(G) * (1 - np.eye(r))
    c = A.max(axis=(1, 2), keepdims=True)
    S = (A / c) ** p
    n = r * (r - 1)
    mean = S.sum(axis=(1, 2), keepdims=True) / n
    loss = c * mean ** (1 / p)
    dG = mean ** (1 / p - 1) / n * (A / c) ** (p - 1) * np.sign(G)     # d loss / d G_ij (off-diagonal)
    dU = (dG + dG.transpose(0, 2, 1)) @ U
    dX = (dU - U * (dU * U).sum(-1, keepdims=True)) / norms              # through the row normalisation
    return loss[:, 0, 0], dX, U, c[:, 0, 0]


def minimise_coherence(r: int, d: int, steps: int = 1500, seed: int = 0, restarts: int = 8,
                       lr: float = 0.02, p_start: float = 8.0, p_end: float = 256.0) -> np.ndarray:
    """A frame ``(r, d)`` of unit rows with coherence close to the optimum, found by gradient descent.

    The max is not smooth, so we minimise its p-norm surrogate (:func:`coherence_surrogate`) with p annealed
    geometrically from ``p_start`` to ``p_end`` (a larger p is closer to the max), by Adam on the raw rows,
    ``restarts`` random starts at once. Returns the start with the lowest true coherence seen at any step.
    A heuristic: it reaches the Welch bound where an ETF exists and the search finds it, and stays above it where
    none exists (e.g. r > d(d+1)/2, the Gerzon bound, or d = 2 where the optimum is cos(pi/r)).
    """
    r, d = _positive_int(r, "r", 2), _positive_int(d, "d")
    steps, restarts = _positive_int(steps, "steps"), _positive_int(restarts, "restarts")
    lr = checks.real(lr, "lr", 0, low_open=True)
    p_start = checks.real(p_start, "p_start", 1)
    p_end = checks.real(p_end, "p_end", p_start)
    seed = checks.seed(seed)
    checks.allocation((restarts, r, d), f"minimise_coherence: restarts={restarts} frames ({r}, {d})", 8 * 8)
    if r <= d:
        return orthonormal_frame(r, d)                                      # exact: coherence 0
    X = np.random.default_rng(seed).standard_normal((restarts, r, d))
    m, v = np.zeros_like(X), np.zeros_like(X)
    beta1, beta2, eps = 0.9, 0.999, 1e-12
    best, best_c = X[0], math.inf
    for t in range(1, steps + 1):
        p = p_start * (p_end / p_start) ** ((t - 1) / max(steps - 1, 1))
        _, g, U, c = _surrogate(X, p)                                       # U: unit rows, c: their coherences
        if c.min() < best_c:
            best_c, best = float(c.min()), U[int(c.argmin())].copy()
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g * g
        X = X - lr * (m / (1 - beta1**t)) / (np.sqrt(v / (1 - beta2**t)) + eps)
        X = X / np.linalg.norm(X, axis=-1, keepdims=True)                  # keep the scale fixed (lr is an angle)
    return best


# -- local interference under compositional sparsity (chapter 2) --------------------------------------------------
def _check_groups(groups, r: int) -> list[tuple[int, ...]]:
    out = []
    for g in checks.sequence(groups, "groups", 0):
        g = tuple(checks.index(i, "groups: each feature index", r, "the frame's rows")
                  for i in checks.sequence(g, "groups: each group", 0))
        if any(i < 0 or i >= r for i in g) or len(set(g)) != len(g):
            raise ValueError(f"groups: {g} must hold distinct feature indices in 0..{r - 1}")
        out.append(g)
    return out


def dag_layout(depths: dict, edges: Sequence | None = None, sweeps: int = 8) -> dict:
    """Positions for drawing a DAG: ``{node: (x, y)}`` with x = the node's depth and the nodes of one depth spread
    evenly over y in [-1, 1] (in sorted order). ``depths``: ``{node: depth}``, e.g. ``genome.depths()``.

    With ``edges`` (``(source, target)`` pairs of nodes in ``depths``), each column is reordered by the mean height
    of its nodes' neighbours (the barycentre heuristic, ``sweeps`` passes) so that fewer links cross (chapter 2's
    skull graph); the order with the fewest crossings seen is kept."""
    by_depth: dict = {}
    for node, dep in sorted(depths.items()):
        by_depth.setdefault(dep, []).append(node)

    def place(columns):
        return {node: (float(dep), 0.0 if len(nodes) == 1 else -1.0 + 2.0 * i / (len(nodes) - 1))
                for dep, nodes in columns.items() for i, node in enumerate(nodes)}

    if edges is None:
        return place(by_depth)
    sweeps = checks.integer(sweeps, "sweeps", 0)
    edges = [tuple(e) for e in checks.sequence(edges, "edges")]
    if any(len(e) != 2 or e[0] not in depths or e[1] not in depths for e in edges):
        raise ValueError("edges must be (source, target) pairs of nodes in depths")
    nbrs: dict = {node: [] for node in depths}
    for a, b in edges:
        nbrs[a].append(b), nbrs[b].append(a)
    best = place(by_depth)
    fewest = dag_crossings(best, edges)
    for _ in range(sweeps):
        pos = place(by_depth)
        for dep in sorted(by_depth):   # each column by its neighbours' mean height
            col = by_depth[dep]
            key = {n: np.mean([pos[m][1] for m in nbrs[n]]) if nbrs[n] else pos[n][1] for n in col}
            by_depth[dep] = sorted(col, key=lambda n: key[n])
            pos = place(by_depth)
        crossings = dag_crossings(pos, edges)   # counted once per sweep
        if crossings < fewest:
            best, fewest = pos, crossings
    return best


def dag_crossings(pos: dict, edges: Sequence) -> int:
    """How many pairs of straight links cross in a drawing: ``pos`` ``{node: (x, y)}``, ``edges`` ``(source,
    target)`` pairs. Two links cross where their segments meet at one point that is not a shared end."""
    edges = [tuple(e) for e in checks.sequence(edges, "edges", 0)]
    if any(len(e) != 2 or e[0] not in pos or e[1] not in pos for e in edges):
        raise ValueError("edges must be (source, target) pairs of nodes in pos")
    segs = [(np.asarray(pos[a], float), np.asarray(pos[b], float)) for a, b in edges]

    def side(p, q, r):
        return np.sign((q[0] - p[0]) * (r[1] - p[1]) - (q[1] - p[1]) * (r[0] - p[0]))

    count = 0
    for i, (p1, p2) in enumerate(segs):
        for p3, p4 in segs[i + 1:]:
            if {tuple(p1), tuple(p2)} & {tuple(p3), tuple(p4)}:
                continue   # links that share a node meet there, not cross
            if side(p1, p2, p3) * side(p1, p2, p4) < 0 and side(p3, p4, p1) * side(p3, p4, p2) < 0:
                count += 1
    return count


def genome_groups(genome) -> tuple[list, list[tuple[int, ...]]]:
    """A genome's local primitives: ``(keys, groups)`` with ``keys`` every node (index = feature index) and one
    group per non-input node: the sorted indices of the nodes it reads (its arity is the group's size)."""
    keys = [n.key for n in genome.nodes]
    index = {k: i for i, k in enumerate(keys)}
    reads: dict = {}
    for link in genome.links:
        reads.setdefault(link.target, set()).add(index[link.source])
    return keys, [tuple(sorted(reads.get(n.key, ()))) for n in genome.nodes if n.kind != "in"]


def local_coherence(F, groups: Sequence[Sequence[int]]) -> float:
    """The worst interference a node sees: max over groups (a node's local primitives) of their coherence.

    ``F (r, d)``; ``groups``: one sequence of row indices per node. Groups with fewer than 2 members add 0.
    """
    U = normalise_rows(F)
    groups = _check_groups(groups, U.shape[0])
    return max([mutual_coherence(U[list(g)]) for g in groups if len(g) >= 2], default=0.0)


def local_welch_bound(groups: Sequence[Sequence[int]], d: int) -> float:
    """max over groups of welch_bound(|group|, d): 0 exactly when every node has arity k <= d."""
    d = _positive_int(d, "d")
    return max([welch_bound(len(g), d) for g in groups if len(g) >= 1], default=0.0)


def cooccurrence(groups: Sequence[Sequence[int]], r: int) -> np.ndarray:
    """``(r, r)`` bool: features i != j that some node reads together (they must not interfere)."""
    r = _positive_int(r, "r")
    checks.allocation((r, r), f"cooccurrence of r={r} features", 1)
    A = np.zeros((r, r), dtype=bool)
    for g in _check_groups(groups, r):
        A[np.ix_(g, g)] = True
    np.fill_diagonal(A, False)
    return A


def greedy_colouring(A) -> np.ndarray:
    """A proper colouring of the graph with adjacency ``A (r, r)`` (DSatur order): ``(r,)`` ints 0..n_colours-1.

    Features of one colour never meet at a node, so they may share directions; the count is an upper bound on the
    chromatic number.
    """
    A = np.asarray(A, dtype=bool)
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise ValueError(f"A must be a square adjacency matrix (r, r), got shape {A.shape}")
    r = A.shape[0]
    colour = -np.ones(r, dtype=int)
    for _ in range(r):
        sat = [len({colour[j] for j in np.flatnonzero(A[i]) if colour[j] >= 0}) if colour[i] < 0 else -1
               for i in range(r)]
        i = max(range(r), key=lambda k: (sat[k], A[k].sum(), -k))
        used = {colour[j] for j in np.flatnonzero(A[i])}
        colour[i] = next(c for c in range(r) if c not in used)
    return colour


def local_orthogonal_frame(groups: Sequence[Sequence[int]], r: int, d: int, seed: int = 0,
                           steps: int = 600) -> np.ndarray:
    """``(r, d)`` unit rows in which every group is exactly orthogonal (local coherence 0), when a colouring allows.

    Colour the co-occurrence graph (:func:`greedy_colouring`); give each colour class its own block of the d
    coordinates (mutually orthogonal blocks; one coordinate each, then spare coordinates one by one to the class
    with the most members per coordinate); inside a block spread the class's vectors with
    :func:`minimise_coherence`. Raises ValueError when more than d colours are needed. Only the local coherence is
    guaranteed (zero); the global coherence is whatever the blocks allow.
    """
    r, d = _positive_int(r, "r"), _positive_int(d, "d")
    seed = checks.seed(seed)
    colour = greedy_colouring(cooccurrence(groups, r))
    n_colours = int(colour.max()) + 1
    if n_colours > d:
        raise ValueError(f"local_orthogonal_frame: the groups need {n_colours} colours > d = {d}")
    sizes = np.bincount(colour, minlength=n_colours)
    dims = np.ones(n_colours, dtype=int)
    for _ in range(d - n_colours):
        need = np.where(sizes > dims, sizes / dims, 0.0)
        if need.max() == 0:
            break
        dims[int(np.argmax(need))] += 1
    edges = np.concatenate([[0], np.cumsum(dims)])
    blocks = [np.arange(edges[c], edges[c + 1]) for c in range(n_colours)]
    F = np.zeros((r, d))
    for c, block in enumerate(blocks):
        members = np.flatnonzero(colour == c)
        if len(members) == 1:
            F[members[0], block[0]] = 1.0
        else:
            F[np.ix_(members, block)] = minimise_coherence(len(members), len(block), steps=steps, seed=seed + c)
    return F


# -- the chapters' settings and sweeps (chapters 2 and 4) -----------------------------------------------------------
@dataclass
class WelchConfig(ModeConfig):
    """Chapter 4's knobs (our choices): ``steps`` x ``restarts`` of :func:`minimise_coherence` per frame, r up to
    ``r_max`` features for each d of ``d_values`` (full mode: 5000 steps, r up to 24)."""
    steps: int = 1500
    restarts: int = 8
    r_max: int = 12
    d_values: tuple = (2, 3, 4, 5)
    FULL = dict(steps=5000, r_max=24)
    # the smoke: the chapter's checks (ETF frames meet the bound to 1e-6) need CPU mode's 1500 steps to converge,
    # so the smoke shortens the sweep instead
    SMOKE = dict(steps=1500, r_max=12)


def coherence_sweep(rs: Sequence[int], ds: Sequence[int], steps: int = 1500, restarts: int = 8) -> dict:
    """Chapter 4: ``{(r, d): coherence}`` of :func:`minimise_coherence` for every r of ``rs`` and d of ``ds``
    (seed ``100 r + d``, as the chapter's other frames)."""
    return {(r, d): mutual_coherence(minimise_coherence(r, d, steps=steps, seed=r * 100 + d, restarts=restarts))
            for d in ds for r in rs}


def dimension_sweep(groups: Sequence[Sequence[int]], r: int, ds: Sequence[int], steps: int = 1000) -> dict:
    """Chapter 2: for each dimension d of ``ds``, the global Welch bound, the coherence of the best global frame
    :func:`minimise_coherence` finds, and the local coherence of :func:`local_orthogonal_frame` (seed 0).
    Returns ``{"d", "welch", "best_global", "local"}`` (lists, one entry per d)."""
    ds = list(ds)
    return {"d": ds, "welch": [welch_bound(r, d) for d in ds],
            "best_global": [mutual_coherence(minimise_coherence(r, d, steps=steps, seed=0)) for d in ds],
            "local": [local_coherence(local_orthogonal_frame(groups, r, d, seed=0), groups) for d in ds]}
