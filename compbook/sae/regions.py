"""Patch regions for S2AE: attention + spatial proximity, then average-linkage clustering (chapter 15).

Facts (the paper's public trainer's recipe, constants as parameters):

1. ``A``: attention probabilities averaged over all layers and heads, restricted to the image-patch block
   (:func:`image_attention`).
2. Symmetrise ``(A + A^T) / 2``; distance ``max - A`` min-max normalised to [0, 1]; times the Manhattan grid
   distance (normalised by its maximum) to the power 0.02, which is 0 on the diagonal (:func:`region_distance`).
3. Agglomerative clustering on that precomputed distance, average linkage, ``min(20, P)`` clusters.

The trainer of the paper fits one scikit-learn ``AgglomerativeClustering`` per image per step. Here
:func:`average_linkage` runs the same merges for a whole batch of images at once, vectorised over the batch in
numpy (one ``argmin`` over cached nearest neighbours per merge; numpy because its per-call overhead on these small
arrays is a fraction of torch's), and gives the same partition as scikit-learn (tested; exact ties aside).
"""

from __future__ import annotations

import numpy as np
import torch

from .. import checks

N_REGIONS = 20
SPATIAL_EXPONENT = 0.02


def dense_labels(labels: torch.Tensor) -> torch.Tensor:
    """``labels`` (B, P) integers renumbered per row to ``0..n-1`` in increasing order (``n``: the row's distinct
    labels; int64, same shape): the same partition of each row's patches, with labels at most ``P - 1`` whatever
    the input's values (a label of 10^9 would otherwise size a buffer by it). Sort-based: O(B P) memory."""
    labels = torch.as_tensor(labels)
    if labels.ndim != 2:
        raise ValueError(f"labels must be (B, P) integer labels, got shape {tuple(labels.shape)}")
    ordered, order = labels.long().sort(1)
    rank = torch.zeros_like(ordered)
    rank[:, 1:] = (ordered[:, 1:] != ordered[:, :-1]).cumsum(1)
    return torch.empty_like(rank).scatter_(1, order, rank)


def grid_distance(rows: int, cols: int) -> torch.Tensor:
    """Manhattan distance between the patches of a ``rows x cols`` grid (row-major), divided by its max: (P, P)."""
    rows, cols = checks.integer(rows, "rows"), checks.integer(cols, "cols")
    checks.check_budget(8.0 * 3 * (rows * cols) ** 2, f"grid_distance of a {rows} x {cols} grid")
    r, c = torch.meshgrid(torch.arange(rows), torch.arange(cols), indexing="ij")
    rc = torch.stack([r.reshape(-1), c.reshape(-1)], 1).double()
    d = torch.cdist(rc, rc, p=1)
    return d / d.max().clamp_min(1.0)


def image_attention(attentions: torch.Tensor, patch_idx: torch.Tensor) -> torch.Tensor:
    """Mean attention over layers and heads, image-patch block only.

    ``attentions`` (B, L, H, T, T) or (L, H, T, T); ``patch_idx`` (P,) token positions of the patches (row-major).
    Returns (B, P, P) (or (P, P)).
    """
    a = checks.tensor(attentions, "attentions", finite=False)
    patch_idx = torch.as_tensor(checks.integers(patch_idx, "patch_idx", 0, ndim=1))
    single = a.ndim == 4
    if single:
        a = a[None]
    if a.ndim != 5 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"attentions: shape {tuple(a.shape)}, expected (B, layers, heads, T, T)")
    if a.is_floating_point() and not torch.isfinite(a).all():
        raise ValueError("attentions: contains NaN or infinite values")
    idx = torch.as_tensor(checks.integers(patch_idx, "patch_idx", 0, a.shape[-1] - 1, ndim=1, min_size=1))
    m = a.mean(dim=(1, 2))[:, idx][:, :, idx]
    return m[0] if single else m


def region_distance(attn: torch.Tensor, grid: tuple[int, int], exponent: float = SPATIAL_EXPONENT) -> torch.Tensor:
    """The S2AE distance (B, P, P), float64, from image-block attention ``attn`` (B, P, P) on ``grid`` (rows, cols)."""
    a = checks.tensor(attn, "attn", finite=False)
    exponent = checks.real(exponent, "exponent", 0)       # a negative one makes the diagonal 0 ** -e = inf
    checks.allocation(tuple(a.shape), "attn (the distances, float64)", 8 * 4)
    a = a.double()
    single = a.ndim == 2
    if single:
        a = a[None]
    rows, cols = (checks.integer(g, "grid") for g in checks.sequence(grid, "grid", 2, 2))
    if a.ndim != 3 or a.shape[1] != a.shape[2] or a.shape[1] != rows * cols:
        raise ValueError(f"attn: shape {tuple(a.shape)}, expected (B, P, P) with P = {rows}*{cols}")
    if not torch.isfinite(a).all():
        raise ValueError("attn: contains NaN or infinite values")
    a = (a + a.transpose(1, 2)) / 2
    d = a.amax(dim=(1, 2), keepdim=True) - a
    lo, hi = d.amin(dim=(1, 2), keepdim=True), d.amax(dim=(1, 2), keepdim=True)
    d = (d - lo) / (hi - lo).clamp_min(1e-12)
    d = d * grid_distance(rows, cols).pow(exponent)      # 0 ** 0.02 = 0 on the diagonal
    return d[0] if single else d


def check_n_regions(n_regions: int, n_patches: int) -> int:
    """``n_regions`` as an int; ValueError when it is < 1 or more than the ``n_patches`` patches."""
    if not 1 <= checks.integer(n_regions, "n_regions", None) <= n_patches:
        raise ValueError(f"n_regions={n_regions}: must be between 1 and the number of patches ({n_patches})")
    return int(n_regions)


def average_linkage(dist: torch.Tensor, n_clusters: int) -> torch.Tensor:
    """Average-linkage agglomerative clustering of a batch of precomputed distances, all images at once.

    ``dist`` (B, P, P) (or (P, P)), read from its upper triangle as scikit-learn does; returns int64 labels (B, P)
    in 0..n_clusters-1, numbered by first appearance. Each of the ``P - n_clusters`` merges joins, in every image,
    the two clusters with the smallest average distance, and updates distances by Lance-Williams:
    ``d(i+j, m) = (n_i d(i, m) + n_j d(j, m)) / (n_i + n_j)``.
    """
    d = checks.tensor(dist, "dist", finite=False)
    # its float64 copies: torch's, NumPy's, the two upper triangles and their sum (before the copy)
    checks.allocation(tuple(d.shape), "dist (the float64 copies to merge in)", 8 * 6)
    d = d.detach().cpu().double().numpy().copy()                                      # numpy: small arrays
    single = d.ndim == 2
    if single:
        d = d[None]
    if d.ndim != 3 or d.shape[1] != d.shape[2]:
        raise ValueError(f"dist: shape {d.shape}, expected (B, P, P)")
    if not np.isfinite(d).all():
        raise ValueError("dist: contains NaN or infinite values")
    n_clusters = check_n_regions(n_clusters, d.shape[1])
    b, p, _ = d.shape
    n_clusters = check_n_regions(n_clusters, p)
    d = np.triu(d, 1) + np.triu(d, 1).transpose(0, 2, 1)     # the upper triangle, as scikit-learn reads it
    ar = np.arange(b)
    d[:, np.arange(p), np.arange(p)] = np.inf
    size = np.ones((b, p))
    labels = np.tile(np.arange(p), (b, 1))
    rows = np.concatenate([ar, ar])
    nn_idx = d.argmin(2)                   # each cluster's nearest neighbour: (B, P)
    nn_val = np.take_along_axis(d, nn_idx[..., None], 2)[..., 0]
    for _ in range(p - n_clusters):
        a = nn_val.argmin(1)
        c = nn_idx[ar, a]
        i, j = np.minimum(a, c), np.maximum(a, c)               # keep i, retire j
        si, sj = size[ar, i], size[ar, j]
        new = (si[:, None] * d[ar, i] + sj[:, None] * d[ar, j]) / (si + sj)[:, None]      # (B, P)
        new[ar, i] = np.inf
        new[ar, j] = np.inf
        both = np.concatenate([i, j])
        upd = np.concatenate([new, np.full_like(new, np.inf)])                          # rows i, then j
        d[rows, both] = upd
        d[rows, :, both] = upd
        size[ar, i] = si + sj
        size[ar, j] = 0
        labels = np.where(labels == j[:, None], i[:, None], labels)
        # average linkage: d(m, i+j) >= min(d(m, i), d(m, j)) >= nn_val[m], so only the merged row and the rows
        # whose nearest neighbour was i or j can change their nearest neighbour
        stale = (nn_idx == i[:, None]) | (nn_idx == j[:, None])
        stale[ar, i] = True
        stale[ar, j] = False
        nn_val[ar, j] = np.inf
        bi, mi = np.nonzero(stale)
        sub = d[bi, mi]
        nn_idx[bi, mi] = sub.argmin(1)
        nn_val[bi, mi] = sub[np.arange(len(bi)), nn_idx[bi, mi]]
    out = _first_appearance(torch.as_tensor(labels, dtype=torch.long))
    return out[0] if single else out


def _first_appearance(labels: torch.Tensor) -> torch.Tensor:
    """Relabel each row of (B, P) cluster ids as 0, 1, ... in order of first appearance."""
    b, p = labels.shape
    first = torch.full((b, p), p, dtype=torch.long)
    pos = torch.arange(p).expand(b, p)
    first = first.scatter_reduce(1, labels, pos, reduce="amin")      # first position of each cluster id
    rank = first.argsort(1).argsort(1)                               # clusters ordered by first position
    return rank.gather(1, labels)


def default_regions(n_regions: int | None, n_patches: int) -> int:
    """``n_regions``, or the paper's ``min(20, P)`` when None; ValueError when more regions than patches."""
    return min(N_REGIONS, n_patches) if n_regions is None else check_n_regions(n_regions, n_patches)


def patch_regions(attn: torch.Tensor, grid: tuple[int, int], n_regions: int | None = None,
                  exponent: float = SPATIAL_EXPONENT) -> torch.Tensor:
    """Region labels (B, P) per image from image-block attention (B, P, P); ``n_regions`` each (default
    ``min(20, P)``, the paper's choice)."""
    d = region_distance(attn, grid, exponent)
    return average_linkage(d, default_regions(n_regions, d.shape[-1]))


def sklearn_regions(dist: np.ndarray, n_clusters: int) -> np.ndarray:
    """The reference the paper's trainer uses: one scikit-learn fit per image. (B, P, P) -> (B, P) labels."""
    d = np.asarray(dist)
    check_n_regions(n_clusters, d.shape[-1] if d.ndim else 0)
    from sklearn.cluster import AgglomerativeClustering

    out = []
    for d in np.asarray(dist, dtype=np.float64):
        fit = AgglomerativeClustering(n_clusters=n_clusters, metric="precomputed", linkage="average").fit(d)
        out.append(fit.labels_)
    return _first_appearance(torch.as_tensor(np.stack(out), dtype=torch.long)).numpy()


def split_regions(labels, grid: tuple[int, int]) -> np.ndarray:
    """Chapter 15: per image, how many regions are in more than one piece (their patches not all joined through
    side-by-side neighbours on the patch grid). ``labels`` (B, P) region labels, ``grid`` (rows, cols) with
    ``rows * cols == P``; returns (B,) int."""
    labels = np.asarray(labels)
    rows, cols = (checks.integer(n, name, 1) for n, name in zip(grid, ("grid rows", "grid cols")))
    if labels.ndim != 2 or labels.shape[1] != rows * cols:
        raise ValueError(f"labels must be (B, {rows * cols}) for a {rows} x {cols} grid, got shape {labels.shape}")
    from skimage.measure import label as pieces     # connected components on the grid
    return np.array([sum(pieces(lab == region, connectivity=1, return_num=True)[1] > 1
                         for region in np.unique(lab))
                     for lab in labels.reshape(-1, rows, cols)], dtype=int)
