"""Declared transformations for training the semantic classifier judge (:mod:`compbook.cppn.judges.semantic`).

Our choice, stated in :data:`DECLARED` and stored beside the weights: the classifier never sees a network's
perturbation. For each concept it learns "yes" from transformations of the concept's reference render that keep
the object (positives) and "no" from images that are not the object (negatives). Images are ``(N, 3, 64, 64)``
float32 in [0, 1]; every random draw comes from one ``torch.Generator``.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

RES = 64

DECLARED = {
    "positives (label 1 for the reference's concept)": [
        "affine: scale 0.85-1.15, rotation +-12 degrees, shift +-12% of the width (border pixels extend)",
        "local part warps (p 0.6): 1-2 Gaussian displacement bumps, radius 0.10-0.25, amplitude <= 0.10",
        "local part edits (p 0.5): 1-2 Gaussian spots, radius 0.06-0.20, blended 50-100% to a random colour",
        "colour: contrast 0.7-1.3, brightness +-0.1, saturation 0.6-1.3; hue rotation +-90 degrees (p 0.4); "
        "grey (p 0.1); pixel noise sd <= 0.04 (p 0.2)",
    ],
    "negatives (label 0 for every concept)": [
        "the other concepts' references under the positive transformations (0 for this concept, 1 for theirs)",
        "renders of random CPPNs (uniform_cppn: depth 1-8, width 4-16, mixed activations, hsv or grey; and "
        "randomly initialised dense networks of the three Picbreeder shapes), with the colour transformations",
        "global warps of a reference: a smooth random displacement field over the whole image, amplitude 0.25-0.6",
        "patch scrambles of a reference: its 4x4 tiles shuffled",
        "noise: uniform pixel noise, or smooth noise (4x4 to 16x16 upsampled)",
        "blobs: 1-3 random ellipses of random colours on a random flat background (a red ball included)",
        "flat colour images",
    ],
}


def _u(g, n, lo, hi):
    return lo + (hi - lo) * torch.rand(n, generator=g)


def _identity_grid(n: int) -> torch.Tensor:
    t = torch.linspace(-1, 1, RES)
    y, x = torch.meshgrid(t, t, indexing="ij")
    return torch.stack([x, y], -1).expand(n, RES, RES, 2).clone()


def affine(x, g, scale=(0.85, 1.15), rot=12.0, shift=0.12):
    """Random scale, rotation and shift (``grid_sample``, border padding)."""
    n = len(x)
    s, a = _u(g, n, *scale), _u(g, n, -rot, rot) * math.pi / 180
    tx, ty = _u(g, n, -shift, shift), _u(g, n, -shift, shift)
    theta = torch.stack([torch.stack([torch.cos(a) / s, -torch.sin(a) / s, tx], -1),
                         torch.stack([torch.sin(a) / s, torch.cos(a) / s, ty], -1)], 1)
    grid = F.affine_grid(theta, (n, 3, RES, RES), align_corners=False)
    return F.grid_sample(x, grid, padding_mode="border", align_corners=False)


def _bumps(g, n, k, radius, amp):
    """A displacement field ``(n, H, W, 2)``: ``k`` Gaussian bumps with random centres and directions."""
    grid = _identity_grid(n)
    disp = torch.zeros_like(grid)
    for _ in range(k):
        c = _u(g, 2 * n, -0.7, 0.7).reshape(n, 1, 1, 2)
        r = _u(g, n, *radius).reshape(n, 1, 1, 1)
        d = (_u(g, 2 * n, -1, 1).reshape(n, 1, 1, 2)) * _u(g, n, 0, amp).reshape(n, 1, 1, 1)
        disp += d * torch.exp(-((grid - c) ** 2).sum(-1, keepdim=True) / (2 * r * r))
    return grid, disp


def local_warp(x, g, radius=(0.10, 0.25), amp=0.10):
    grid, disp = _bumps(g, len(x), int(torch.randint(1, 3, (1,), generator=g)), radius, amp)
    return F.grid_sample(x, grid + disp, padding_mode="border", align_corners=False)


def global_warp(x, g, amp=(0.25, 0.6)):
    """A smooth random displacement over the whole image (a negative: the object is taken apart)."""
    n = len(x)
    field = F.interpolate(torch.randn(n, 2, 4, 4, generator=g), size=(RES, RES), mode="bicubic",
                          align_corners=False).permute(0, 2, 3, 1)
    grid = _identity_grid(n) + field * _u(g, n, *amp).reshape(n, 1, 1, 1)
    return F.grid_sample(x, grid, padding_mode="reflection", align_corners=False)


def part_edit(x, g, radius=(0.06, 0.20)):
    n = len(x)
    grid = _identity_grid(n)
    out = x.clone()
    for _ in range(int(torch.randint(1, 3, (1,), generator=g))):
        c = _u(g, 2 * n, -0.7, 0.7).reshape(n, 1, 1, 2)
        r = _u(g, n, *radius).reshape(n, 1, 1, 1)
        m = torch.exp(-((grid - c) ** 2).sum(-1, keepdim=True) / (2 * r * r)).permute(0, 3, 1, 2)
        m = m * _u(g, n, 0.5, 1.0).reshape(n, 1, 1, 1)
        colour = torch.rand(n, 3, 1, 1, generator=g)
        out = out * (1 - m) + colour * m
    return out


def _hue_matrix(angle: torch.Tensor) -> torch.Tensor:
    """Rotation about the grey axis of RGB by ``angle`` (radians): ``(n, 3, 3)``."""
    k = torch.ones(3) / math.sqrt(3)
    kx = torch.tensor([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    c, s = torch.cos(angle).reshape(-1, 1, 1), torch.sin(angle).reshape(-1, 1, 1)
    return c * torch.eye(3) + s * kx + (1 - c) * torch.outer(k, k)


def colour(x, g):
    """Contrast, brightness, saturation, sometimes a hue rotation, grey, pixel noise (see :data:`DECLARED`)."""
    n = len(x)
    grey = x.mean(1, keepdim=True)
    x = grey + (x - grey) * _u(g, n, 0.6, 1.3).reshape(n, 1, 1, 1)                 # saturation
    rot = (torch.rand(n, generator=g) < 0.4) * _u(g, n, -math.pi / 2, math.pi / 2)
    x = torch.einsum("nij,njhw->nihw", _hue_matrix(rot), x)
    mean = x.mean(dim=(1, 2, 3), keepdim=True)
    x = mean + (x - mean) * _u(g, n, 0.7, 1.3).reshape(n, 1, 1, 1) + _u(g, n, -0.1, 0.1).reshape(n, 1, 1, 1)
    to_grey = (torch.rand(n, generator=g) < 0.1).reshape(n, 1, 1, 1)
    x = torch.where(to_grey, x.mean(1, keepdim=True).expand_as(x), x)
    noisy = (torch.rand(n, generator=g) < 0.2).reshape(n, 1, 1, 1)
    x = x + noisy * torch.randn(x.shape, generator=g) * _u(g, n, 0, 0.04).reshape(n, 1, 1, 1)
    return x.clamp(0, 1)


def positives(refs, g):
    """Object-keeping transformations of ``refs`` ``(n, 3, 64, 64)``."""
    x = affine(refs, g)
    n = len(x)
    w = (torch.rand(n, generator=g) < 0.6).reshape(n, 1, 1, 1)
    x = torch.where(w, local_warp(x, g), x)
    e = (torch.rand(n, generator=g) < 0.5).reshape(n, 1, 1, 1)
    x = torch.where(e, part_edit(x, g), x)
    return colour(x, g)


def scramble(x, g, tiles: int = 4):
    n, t = len(x), RES // tiles
    blocks = x.unfold(2, t, t).unfold(3, t, t).reshape(n, 3, tiles * tiles, t, t)
    perm = torch.stack([torch.randperm(tiles * tiles, generator=g) for _ in range(n)])
    blocks = blocks[torch.arange(n)[:, None], :, perm].permute(0, 2, 1, 3, 4)
    return blocks.reshape(n, 3, tiles, tiles, t, t).permute(0, 1, 2, 4, 3, 5).reshape(n, 3, RES, RES)


def noise(n, g):
    smooth = torch.rand(n, generator=g) < 0.5
    size = int(torch.randint(4, 17, (1,), generator=g))
    low = F.interpolate(torch.rand(n, 3, size, size, generator=g), size=(RES, RES), mode="bilinear",
                        align_corners=False)
    return torch.where(smooth.reshape(n, 1, 1, 1), low, torch.rand(n, 3, RES, RES, generator=g))


def blobs(n, g):
    grid = _identity_grid(n).permute(0, 3, 1, 2)                          # (n, 2, H, W)
    x = torch.rand(n, 3, 1, 1, generator=g).expand(n, 3, RES, RES).clone()
    for _ in range(int(torch.randint(1, 4, (1,), generator=g))):
        c = _u(g, 2 * n, -0.5, 0.5).reshape(n, 2, 1, 1)
        r = torch.stack([_u(g, n, 0.15, 0.7), _u(g, n, 0.15, 0.7)], 1).reshape(n, 2, 1, 1)
        inside = (((grid - c) / r) ** 2).sum(1, keepdim=True) <= 1
        x = torch.where(inside, torch.rand(n, 3, 1, 1, generator=g), x)
    return x


def flat(n, g):
    return torch.rand(n, 3, 1, 1, generator=g).expand(n, 3, RES, RES).clone()


def random_cppn_pool(n: int = 240, seed: int = 0) -> torch.Tensor:
    """Renders ``(n, 3, 64, 64)`` of random CPPNs: uniform ones of random sizes and dense networks of the
    three Picbreeder shapes at their random initialisation (a quarter of the pool)."""
    from .. import picbreeder
    from ..network import CPPN, uniform_cppn
    g = torch.Generator().manual_seed(seed)
    shapes = [picbreeder.layerize(picbreeder.load_genome(c)) for c in ("skull", "butterfly", "apple")]
    acts = ["tanh", "sin", "gaussian", "sigmoid"]
    out = []
    with torch.no_grad():
        for k in range(n):
            if k % 4 == 0:
                pb = shapes[(k // 4) % 3]
                m = CPPN(pb.activations, pb.color, seed=10_000 + k)
            else:
                depth = int(torch.randint(1, 9, (1,), generator=g))
                width = int(torch.randint(4, 17, (1,), generator=g))
                counts = {a: 0 for a in acts}
                for _ in range(width):
                    counts[acts[int(torch.randint(0, 4, (1,), generator=g))]] += 1
                counts = {a: c for a, c in counts.items() if c}
                color = "hsv" if torch.rand(1, generator=g) < 0.7 else "gray"
                m = uniform_cppn(depth, width, counts, color, seed=10_000 + k)
            out.append(m.render(RES).float().permute(2, 0, 1))
    return torch.stack(out)


def batch(refs: torch.Tensor, pool: torch.Tensor, n: int, g: torch.Generator):
    """A training batch: ``x (n, 3, 64, 64)``, multi-label ``y (n, len(refs))``; half positives (random
    concepts), half negatives spread evenly over the six negative kinds of :data:`DECLARED`."""
    k = len(refs)
    n_pos = n // 2
    which = torch.randint(0, k, (n_pos,), generator=g)
    xs, ys = [positives(refs[which], g)], [F.one_hot(which, k).float()]
    m = -(-(n - n_pos) // 6)
    pick = lambda size: refs[torch.randint(0, k, (size,), generator=g)]    # noqa: E731
    negs = [colour(pool[torch.randint(0, len(pool), (m,), generator=g)], g),
            colour(global_warp(affine(pick(m), g), g), g), scramble(positives(pick(m), g), g),
            noise(m, g), blobs(m, g), flat(m, g)]
    neg = torch.cat(negs)[: n - n_pos]
    xs.append(neg)
    ys.append(torch.zeros(len(neg), k))
    return torch.cat(xs).clamp(0, 1), torch.cat(ys)
