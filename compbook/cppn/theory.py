"""Theory made executable: compositional sparsity, the volume ratio rho(W, L), the Welch bound (chapters 2-4).

Three small toolkits, all pure functions on numpy arrays (float64):

* **Frames and the Welch bound** (chapter 4). ``F (r, d)`` holds r feature directions in R^d, one per row.
  :func:`mutual_coherence` is the worst interference max_{i != j} |<f_i, f_j>| of the unit-normalised rows,
  :func:`welch_bound` its lower bound, :func:`simplex_etf` / :func:`paley_etf` / :func:`naimark_complement`
  build equiangular tight frames that meet it, :func:`minimise_coherence` searches for a good frame for any (r, d).
* **Local interference** (chapter 2). With compositional sparsity a node reads only its k local primitives
  (``groups``: one tuple of feature indices per node). :func:`local_coherence`, :func:`local_welch_bound` and
  :func:`local_orthogonal_frame` show that every local set can be exactly orthogonal while r > d globally.
* **The volume ratio** (chapter 3). :class:`LayeredDAG` is a target DAG in layers; :func:`log_rho` is the closed
  form of our model of rho(W, L), :func:`rho_exact` enumerates every mask, :func:`rho_monte_carlo` samples them.

The rho model (our choice; chapter 3 states and derives it). A configuration of a width-W, depth-L network
(``n_in`` inputs, L hidden layers of W units, ``n_out`` outputs) is a connectivity mask with every possible edge
between consecutive layers present independently with probability ``p``. The target sits at a canonical place:
its layer-l units are units ``0..w_l-1`` of hidden layer l, and the L - L* surplus layers are identity copies of
its last hidden layer. A unit is *live* when a path of present edges leads from it to an output. The mask is in
the compositional basin when its live edges (present edges into live units) are exactly the embedded target's
edges: every target edge present, nothing else feeding the computation; surplus units may do anything as long as
nobody live reads them.
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
    norms = np.linalg.norm(F, axis=1, keepdims=True)
    if (norms == 0).any():
        raise ValueError(f"F has zero rows {np.flatnonzero(norms[:, 0] == 0).tolist()}: a direction needs norm > 0")
    return F / norms


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
    seed = checks.optional_integer(seed, "seed", 0)
    checks.allocation((d, d), f"orthonormal_frame in R^{d}", 8 * 3)
    if seed is None:
        return np.eye(d)[:r]
    Q, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((d, d)))
    return Q[:r]


def frame_from_gram(G, d: int) -> np.ndarray:
    """A frame ``F (r, d)`` with ``F F^T`` the best rank-d approximation of a symmetric ``G (r, r)`` (exact if rank <= d)."""
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
    seed = checks.integer(seed, "seed", 0)
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


def dag_layout(depths: dict) -> dict:
    """Positions for drawing a DAG: ``{node: (x, y)}`` with x = the node's depth and the nodes of one depth spread
    evenly over y in [-1, 1] (in sorted order). ``depths``: ``{node: depth}``, e.g. ``genome.depths()``."""
    by_depth: dict = {}
    for node, dep in sorted(depths.items()):
        by_depth.setdefault(dep, []).append(node)
    return {node: (float(dep), 0.0 if len(nodes) == 1 else -1.0 + 2.0 * i / (len(nodes) - 1))
            for dep, nodes in by_depth.items() for i, node in enumerate(nodes)}


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
    seed = checks.integer(seed, "seed", 0)
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


# -- the volume ratio rho(W, L) (chapter 3) -----------------------------------------------------------------------
@dataclass(frozen=True, eq=False)                 # eq=False: arrays do not compare or hash as values
class LayeredDAG:
    """A target DAG in layers: ``masks[l] (out, in)`` bool for l = 0..L*, ``masks[0]`` reads the n_in inputs,
    ``masks[L*]`` is the output layer. Every unit must be live (have a path to an output): see :meth:`trimmed`."""
    masks: tuple[np.ndarray, ...]

    def __post_init__(self):
        masks = tuple(np.asarray(m).astype(bool) for m in self.masks)
        if len(masks) < 2:
            raise ValueError(f"LayeredDAG needs >= 1 hidden layer (>= 2 masks), got {len(masks)}")
        for l, m in enumerate(masks):
            if m.ndim != 2 or min(m.shape) < 1:
                raise ValueError(f"LayeredDAG: mask {l} must be a non-empty (out, in) matrix, got shape {m.shape}")
            if l and m.shape[1] != masks[l - 1].shape[0]:
                raise ValueError(f"LayeredDAG: mask {l} reads {m.shape[1]} units but layer {l} has "
                                 f"{masks[l - 1].shape[0]}")
        object.__setattr__(self, "masks", masks)
        dead = [(l + 1, i) for l, alive in enumerate(live_units(masks)[1:-1]) for i in np.flatnonzero(~alive)]
        if dead:
            raise ValueError(f"LayeredDAG: units {dead[:5]} (layer, index) reach no output; use .trimmed()")

    @classmethod
    def trimmed(cls, masks) -> "LayeredDAG":
        """Drop hidden units with no path to an output, then build the DAG."""
        masks = [np.asarray(m).astype(bool) for m in masks]
        keep = live_units(masks)
        out = [m[keep[l + 1]][:, keep[l]] for l, m in enumerate(masks)]
        return cls(tuple(out))

    @property
    def n_in(self) -> int:
        return self.masks[0].shape[1]

    @property
    def n_out(self) -> int:
        return self.masks[-1].shape[0]

    @property
    def widths(self) -> list[int]:
        """Hidden-layer widths w_1..w_{L*}."""
        return [m.shape[0] for m in self.masks[:-1]]

    @property
    def depth(self) -> int:
        """L*: the number of hidden layers."""
        return len(self.masks) - 1

    @property
    def width(self) -> int:
        """W_min: the widest hidden layer."""
        return max(self.widths)

    @property
    def n_edges(self) -> int:
        return int(sum(m.sum() for m in self.masks))


def live_units(masks) -> list[np.ndarray]:
    """Per layer (inputs first, outputs last), bool ``(..., width)``: units with a path of edges to an output.

    ``masks[l] (..., out, in)`` bool, with optional leading batch dimensions.
    """
    masks = [np.asarray(m, dtype=bool) for m in masks]
    live = [np.ones(masks[-1].shape[:-1], dtype=bool)]
    for m in masks[::-1]:
        live.insert(0, (m & live[0][..., :, None]).any(axis=-2))
    return live


def dag_from_genome(genome) -> LayeredDAG:
    """The layered target of a Picbreeder genome: :func:`compbook.cppn.picbreeder.layerize` (no padding), trimmed."""
    from .picbreeder import layerize
    model = layerize(genome, pad_to_width=False)
    return LayeredDAG.trimmed([m.numpy() != 0 for m in model.masks])


def network_shapes(target: LayeredDAG, W: int, L: int) -> list[tuple[int, int]]:
    """``(out, in)`` of every layer of the width-W, depth-L network with the target's inputs and outputs."""
    W, L = _positive_int(W, "W"), _positive_int(L, "L")
    checks.instance(target, "target", LayeredDAG)
    checks.check_budget(24.0 * L, f"the layer list of a network of width W={W} and depth L={L}")
    sizes = [target.n_in] + [W] * L + [target.n_out]
    return list(zip(sizes[1:], sizes[:-1]))


def embed(target: LayeredDAG, W: int, L: int) -> list[np.ndarray]:
    """The target at its canonical place in a width-W, depth-L network: bool masks of :func:`network_shapes`.

    Target layer l -> units 0..w_l-1 of hidden layer l; layers L*+1..L copy units 0..w_{L*}-1 one to one; the
    output layer reads them as the target's output layer reads layer L*. ValueError if W < W_min or L < L*.
    """
    shapes = network_shapes(target, W, L)
    checks.check_budget(float(sum(a * b for a, b in shapes)), f"embed: the masks of width W={W}, depth L={L}")
    if W < target.width or L < target.depth:
        raise ValueError(f"embed: the target (W_min={target.width}, L*={target.depth}) does not fit in "
                         f"W={W}, L={L}")
    out = [np.zeros(s, dtype=bool) for s in shapes]
    for l, m in enumerate(target.masks[:-1]):
        out[l][: m.shape[0], : m.shape[1]] = m
    last = target.widths[-1]
    for l in range(target.depth, L):
        out[l][np.arange(last), np.arange(last)] = True
    out[-1][:, :last] = target.masks[-1]
    return out


def in_basin(masks, target: LayeredDAG, W: int, L: int) -> np.ndarray:
    """Bool ``(B,)``: which of B masks (``masks[l] (B, out, in)``) are in the compositional basin (module doc).

    Straight from the definition: the live edges (present edges into live units) equal the embedded target.
    """
    masks = [np.asarray(m, dtype=bool) for m in masks]
    shapes = network_shapes(target, W, L)
    if [m.shape[1:] for m in masks] != shapes:
        raise ValueError(f"in_basin: mask shapes {[m.shape for m in masks]} must be (B, out, in) with {shapes}")
    if W < target.width or L < target.depth:
        return np.zeros(masks[0].shape[0], dtype=bool)
    live = live_units(masks)
    ok = np.ones(masks[0].shape[0], dtype=bool)
    for l, (m, e) in enumerate(zip(masks, embed(target, W, L))):
        ok &= ((m & live[l + 1][:, :, None]) == e).all(axis=(1, 2))
    return ok


def log_rho(target: LayeredDAG, W: int, L: int, p: float = 0.5) -> float:
    """Closed form of ln rho(W, L) in our model (-inf when W < W_min or L < L*).

    rho = p^E(L) (1-p)^K(W, L): the E(L) = |E_T| + (L - L*) w_{L*} embedded edges present, and the
    K = n_in w_1 + W U(L) - E(L) other edges into live units absent, where U(L) = w_2 + ... + w_{L*}
    + (L - L*) w_{L*} + n_out counts the live units that read a hidden layer.
    """
    _check_p(p)
    W, L = _positive_int(W, "W"), _positive_int(L, "L")
    if W < target.width or L < target.depth:
        return -math.inf
    E, U = _edges_and_readers(target, L)
    K = target.n_in * target.widths[0] + W * U - E
    return E * math.log(p) + K * math.log1p(-p)


def _edges_and_readers(target: LayeredDAG, L: int) -> tuple[int, int]:
    extra = L - target.depth
    E = target.n_edges + extra * target.widths[-1]
    U = sum(target.widths[1:]) + extra * target.widths[-1] + target.n_out
    return E, U


def rho(target: LayeredDAG, W: int, L: int, p: float = 0.5) -> float:
    """rho(W, L) = exp(:func:`log_rho`) (underflows to 0 for large networks: plot :func:`log_rho` instead)."""
    return math.exp(log_rho(target, W, L, p))


def width_decay_rate(target: LayeredDAG, L: int, p: float = 0.5) -> float:
    """-d ln rho / dW at depth L (exact per unit of width, W >= W_min): U(L) ln(1/(1-p))."""
    _check_p(p)
    return _edges_and_readers(target, _positive_int(L, "L"))[1] * -math.log1p(-p)


def depth_decay_rate(target: LayeredDAG, W: int, p: float = 0.5) -> float:
    """-d ln rho / dL at width W (exact per extra layer, L >= L*): w_{L*} (ln(1/p) + (W - 1) ln(1/(1-p)))."""
    _check_p(p)
    W = _positive_int(W, "W")
    return target.widths[-1] * (-math.log(p) - (W - 1) * math.log1p(-p))


def log_relabelling_bound(target: LayeredDAG, W: int, L: int) -> float:
    """ln of an upper bound on how many placements of the target a width-W, depth-L network has (0 if none fits).

    Our rho fixes one canonical placement. Any injective map of each layer's w_l target units (and of the copy
    layers' w_{L*} units) to the W slots is equally compositional: sum_l ln(W! / (W - w_l)!) over the L hidden
    layers. Counting each as a separate basin over-counts (placements overlap), so ln rho + this is an upper bound
    on the log of a placement-free rho. It grows like (sum_l w_l) ln W: slower than the exponential decay.
    """
    W, L = _positive_int(W, "W"), _positive_int(L, "L")
    if W < target.width or L < target.depth:
        return 0.0
    widths = target.widths + [target.widths[-1]] * (L - target.depth)
    return float(sum(math.lgamma(W + 1) - math.lgamma(W - w + 1) for w in widths))


def _check_p(p) -> float:
    return checks.real(p, "p (edge probability)", 0, 1, low_open=True, high_open=True)


MAX_ENUMERATED_EDGES = 22


def rho_exact(target: LayeredDAG, W: int, L: int, p: float = 0.5, chunk: int = 2**16) -> float:
    """rho by brute force: the p-weighted sum over all 2^N masks of the network that :func:`in_basin` accepts.

    Independent of the closed form: only the basin's definition is used. N (possible edges) <= 22.
    """
    _check_p(p)
    chunk = _positive_int(chunk, "chunk")
    shapes = network_shapes(target, W, L)
    sizes = [a * b for a, b in shapes]
    N = sum(sizes)
    if N > MAX_ENUMERATED_EDGES:
        raise ValueError(f"rho_exact: {N} possible edges is too many to enumerate (max {MAX_ENUMERATED_EDGES})")
    total, bits = 0.0, np.arange(N)
    for start in range(0, 2**N, chunk):
        codes = np.arange(start, min(start + chunk, 2**N), dtype=np.int64)
        flat = (codes[:, None] >> bits) & 1 == 1                             # (B, N)
        splits = np.split(flat, np.cumsum(sizes)[:-1], axis=1)
        ok = in_basin([s.reshape(-1, *sh) for s, sh in zip(splits, shapes)], target, W, L)
        n_on = flat[ok].sum(axis=1)
        total += float(np.sum(p ** n_on * (1 - p) ** (N - n_on)))
    return total


def rho_monte_carlo(target: LayeredDAG, W: int, L: int, p: float = 0.5, n: int = 100_000,
                    seed: int = 0, chunk: int = 20_000) -> tuple[float, float]:
    """(estimate, standard error) of rho from n random masks (edges i.i.d. Bernoulli(p)).

    The standard error is sqrt(rho_hat (1 - rho_hat) / n); plain sampling, so only useful where rho >~ 10/n.
    """
    _check_p(p)
    n = _positive_int(n, "n")
    seed, chunk = checks.integer(seed, "seed", 0), _positive_int(chunk, "chunk")
    shapes = network_shapes(target, W, L)
    checks.check_budget(9.0 * min(chunk, n) * sum(a * b for a, b in shapes),
                        f"rho_monte_carlo: chunk={chunk} masks at a time")
    rng, hits = np.random.default_rng(seed), 0
    for start in range(0, n, chunk):
        b = min(chunk, n - start)
        hits += int(in_basin([rng.random((b, *s)) < p for s in shapes], target, W, L).sum())
    est = hits / n
    return est, math.sqrt(est * (1 - est) / n)


# -- the chapters' settings and sweeps (chapters 2-4) ---------------------------------------------------------------
@dataclass
class VolumeConfig(ModeConfig):
    """Chapter 3's knobs (our choices): each edge present with probability ``p_edge``; ``n_mc`` Monte Carlo
    masks per case (full mode: 2,000,000)."""
    p_edge: float = 0.5
    n_mc: int = 200_000
    FULL = dict(n_mc=2_000_000)


@dataclass
class WelchConfig(ModeConfig):
    """Chapter 4's knobs (our choices): ``steps`` x ``restarts`` of :func:`minimise_coherence` per frame, r up to
    ``r_max`` features for each d of ``d_values`` (full mode: 5000 steps, r up to 24)."""
    steps: int = 1500
    restarts: int = 8
    r_max: int = 12
    d_values: tuple = (2, 3, 4, 5)
    FULL = dict(steps=5000, r_max=24)


def coherence_sweep(rs: Sequence[int], ds: Sequence[int], steps: int = 1500, restarts: int = 8) -> dict:
    """Chapter 4: ``{(r, d): coherence}`` of :func:`minimise_coherence` for every r of ``rs`` and d of ``ds``
    (seed ``100 r + d``, as the chapter's other frames)."""
    return {(r, d): mutual_coherence(minimise_coherence(r, d, steps=steps, seed=r * 100 + d, restarts=restarts))
            for d in ds for r in rs}


def log10_rho_grid(target: "LayeredDAG", Ws: Sequence[int], Ls: Sequence[int], p: float = 0.5) -> np.ndarray:
    """Chapter 3: ``(len(Ls), len(Ws))`` array of log10 rho(W, L) (:func:`log_rho`; -inf where the target does not
    fit), rows = depths, columns = widths."""
    return np.array([[log_rho(target, W, L, p) for W in Ws] for L in Ls]) / math.log(10)


def relabelling_peak(target: "LayeredDAG", p: float = 0.5, span: int = 10) -> dict:
    """Chapter 3: where ln rho + :func:`log_relabelling_bound` peaks on the ``span`` x ``span`` grid from
    (W_min, L*), and what one unit of width above W_min gains in placements and loses in rho (nats)."""
    w0, l0 = target.width, target.depth
    bound = {(W, L): log_rho(target, W, L, p) + log_relabelling_bound(target, W, L)
             for W in range(w0, w0 + span) for L in range(l0, l0 + span)}
    return {"peak": max(bound, key=bound.get),
            "gain": log_relabelling_bound(target, w0 + 1, l0) - log_relabelling_bound(target, w0, l0),
            "loss": width_decay_rate(target, l0, p)}


def dimension_sweep(groups: Sequence[Sequence[int]], r: int, ds: Sequence[int], steps: int = 1000) -> dict:
    """Chapter 2: for each dimension d of ``ds``, the global Welch bound, the coherence of the best global frame
    :func:`minimise_coherence` finds, and the local coherence of :func:`local_orthogonal_frame` (seed 0).
    Returns ``{"d", "welch", "best_global", "local"}`` (lists, one entry per d)."""
    ds = list(ds)
    return {"d": ds, "welch": [welch_bound(r, d) for d in ds],
            "best_global": [mutual_coherence(minimise_coherence(r, d, steps=steps, seed=0)) for d in ds],
            "local": [local_coherence(local_orthogonal_frame(groups, r, d, seed=0), groups) for d in ds]}
