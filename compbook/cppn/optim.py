"""Muon: momentum whose update is orthogonalised by a Newton-Schulz iteration (chapter 8).

Muon (Keller Jordan, 2024) keeps a momentum buffer per weight matrix like SGD, but before stepping it replaces the
update ``M = U S V^T`` by (approximately) ``U V^T``: every singular direction moves by the same amount, so a few
large directions can no longer dominate the step. ``U V^T`` is computed without an SVD by iterating an odd
polynomial on the matrix: :func:`newton_schulz`.

Ours follows ``torch.optim.Muon`` (itself Keller Jordan's reference) with two differences, both parameters:

* it works on stacked weights ``(B, out, in)`` (every matrix orthogonalised on its own), so
  :func:`compbook.cppn.train.fit_many` can train B networks with it; ``torch.optim.Muon`` refuses non-2-D tensors;
* it computes in the parameter's dtype (float32) by default; torch casts to bfloat16 (``dtype=torch.bfloat16``
  reproduces that). Our default ``weight_decay`` is 0 (a CPPN has no overfitting to fight; torch's is 0.1).

Masks: the orthogonalised update is dense, so it has entries where a mask removed a weight. The trainer re-zeroes
masked weights after every step (see :mod:`compbook.cppn.train`), so they stay exactly zero; the update it keeps is
the masked part of an orthogonal matrix (no longer exactly orthogonal: an approximation we accept, stated here).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from .. import checks

#: The quintic's coefficients (a, b, c) from the Muon reference: phi(s) = a s + b s^3 + c s^5 on singular values.
NS_COEFFICIENTS = (3.4445, -4.7750, 2.0315)


def newton_schulz(G: torch.Tensor, steps: int = 5, coefficients=NS_COEFFICIENTS, eps: float = 1e-7,
                  dtype: torch.dtype | None = None) -> torch.Tensor:
    """Approximately orthogonalise ``G`` ``(..., m, n)``: returns ``X`` of the same shape with ``X ~ U V^T``.

    ``X`` is first divided by its Frobenius norm (per matrix), which bounds every singular value by 1; then
    ``steps`` times ``X <- a X + (b A + c A^2) X`` with ``A = X X^T``, which maps each singular value s to
    ``phi(s) = a s + b s^3 + c s^5`` and leaves the singular vectors alone. With the reference's coefficients
    phi is steep at 0 and oscillates around 1, so after 5 steps the singular values lie roughly in [0.7, 1.2]
    (not exactly 1: the reference's trade of accuracy for speed). When ``m > n`` the iteration runs on the
    transpose (its Gram matrix is the smaller one). Computed in ``dtype`` (default: ``G``'s own); the input is
    never modified. A zero matrix maps to zero, an empty one (``(0, n)``) to itself; ``G`` must be real
    floating-point and finite (``ValueError`` naming ``G``).
    """
    checks.instance(G, "G", torch.Tensor, " (..., m, n)")
    if G.ndim < 2:
        raise ValueError(f"G: shape {tuple(G.shape)} is not a matrix or a stack of matrices (..., m, n)")
    checks.tensor(G, "G")                               # real floating-point, finite (an int64 G is refused)
    steps = checks.integer(steps, "steps", 0)
    a, b, c = _coefficients(coefficients)
    eps = checks.real(eps, "eps", 0, low_open=True)
    if G.numel() == 0:                                  # no entries (a (0, n) matrix): nothing to orthogonalise
        return G.clone()
    X = G.to(dtype or G.dtype)
    tall = X.shape[-2] > X.shape[-1]
    if tall:
        X = X.mT
    X = X / X.norm(dim=(-2, -1), keepdim=True).clamp(min=eps)
    lead = X.shape[:-2]
    X = X.reshape(-1, *X.shape[-2:])  # (N, m, n): baddbmm fuses "beta M + alpha P Q" like the reference's addmm
    for _ in range(int(steps)):
        A = X @ X.mT                                       # (N, m, m) Gram matrix
        B = torch.baddbmm(A, A, A, beta=b, alpha=c)        # b A + c A^2
        X = torch.baddbmm(X, B, X, beta=a)                 # a X + B X
    X = X.reshape(*lead, *X.shape[-2:])
    return (X.mT if tall else X).to(G.dtype)


def _coefficients(coefficients) -> tuple[float, float, float]:
    """``coefficients`` as three finite numbers ``(a, b, c)``."""
    if isinstance(coefficients, (str, bytes)) or not hasattr(coefficients, "__len__") or len(coefficients) != 3:
        raise ValueError(f"coefficients must be three numbers (a, b, c), got {coefficients!r:.60}")
    return tuple(checks.real(v, "coefficients") for v in coefficients)


def shape_scale(shape) -> float:
    """The reference's step scale for an ``(out, in)`` matrix: ``sqrt(max(1, out / in))`` (torch's "original")."""
    out, inp = shape[-2], shape[-1]
    return math.sqrt(max(1.0, out / inp))


class Muon(torch.optim.Optimizer):
    """Muon for matrices ``(out, in)`` or stacks of them ``(B, out, in)`` (one network per leading index).

    Per step, for each parameter ``W`` with gradient ``g`` (``mu`` = momentum):
    ``buf <- mu buf + (1 - mu) g``; ``u = (1 - mu) g + mu buf`` with Nesterov, else ``buf``;
    ``W <- W (1 - lr wd) - lr shape_scale(W) newton_schulz(u)``. This is ``torch.optim.Muon``'s update
    (same momentum form, coefficients, normalisation and scale); see the module docstring for the differences.
    """

    def __init__(self, params, lr: float = 0.02, momentum: float = 0.95, nesterov: bool = True,
                 weight_decay: float = 0.0, ns_steps: int = 5, coefficients=NS_COEFFICIENTS, eps: float = 1e-7,
                 dtype: torch.dtype | None = None):
        lr = checks.real(lr, "lr", 0, low_open=True)
        momentum = checks.real(momentum, "momentum", 0, 1, high_open=True)
        weight_decay = checks.real(weight_decay, "weight_decay", 0)
        ns_steps = checks.integer(ns_steps, "ns_steps", 0)
        nesterov = checks.boolean(nesterov, "nesterov")
        eps = checks.real(eps, "eps", 0, low_open=True)
        coefficients = _coefficients(coefficients)
        defaults = dict(lr=lr, momentum=momentum, nesterov=nesterov, weight_decay=weight_decay,
                        ns_steps=ns_steps, coefficients=tuple(coefficients), eps=eps, dtype=dtype)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim not in (2, 3):
                    raise ValueError(f"params: Muon takes matrices (out, in) or stacks (B, out, in), "
                                     f"got a tensor of shape {tuple(p.shape)}")

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            mu, lr = group["momentum"], group["lr"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if "momentum_buffer" not in state:
                    state["momentum_buffer"] = torch.zeros_like(p.grad)
                buf = state["momentum_buffer"]
                buf.lerp_(p.grad, 1 - mu)
                update = p.grad.lerp(buf, mu) if group["nesterov"] else buf
                update = newton_schulz(update, group["ns_steps"], group["coefficients"], group["eps"],
                                       group["dtype"])
                p.mul_(1 - lr * group["weight_decay"])
                p.add_(update, alpha=-lr * shape_scale(p.shape))
        return loss


def muon(params, lr):
    """Factory for :data:`compbook.cppn.train.OPTIMIZERS` (``optimizer="muon"``): :class:`Muon` with our defaults.

    Every layer of the CPPN, the 4-input first layer and the output layer included, is a Muon matrix (our choice;
    the reference hands embeddings and output heads to Adam instead). ``lr`` is Muon's: about 10x Adam's.
    """
    return Muon(params, lr=lr)


#: the classical cubic Newton-Schulz step phi(s) = 1.5 s - 0.5 s^3 (chapter 8 compares it with the quintic).
CUBIC_COEFFICIENTS = (1.5, -0.5, 0.0)


def singular_value_map(s: torch.Tensor, steps: int = 5, coefficients=NS_COEFFICIENTS) -> torch.Tensor:
    """What ``steps`` Newton-Schulz steps do to one singular value ``s`` (any shape, elementwise): the odd
    polynomial ``phi(s) = a s + b s^3 + c s^5`` applied ``steps`` times (chapter 8's figure)."""
    steps = checks.integer(steps, "steps", 0)
    a, b, c = _coefficients(coefficients)
    s = checks.finite(s, "s")
    for _ in range(steps):
        s = a * s + b * s**3 + c * s**5
    return s


def against_torch_muon(steps: int = 10, shape=(22, 8), seed: int = 1, **settings) -> dict | None:
    """Chapter 8's check of :class:`Muon` against ``torch.optim.Muon`` (torch >= 2.9; ``None`` without it): both
    take ``steps`` steps from one random ``shape`` matrix on the same random gradients (``settings``: default
    lr 0.02, momentum 0.95, Nesterov, weight decay 0.1). Returns how far the reference moved the matrix
    (``"moved"``, max |change|) and our largest deviation from it with the Newton-Schulz iteration in bfloat16
    (``"bfloat16"``) and float32 (``"float32"``)."""
    steps, seed = checks.integer(steps, "steps", 0), checks.seed(seed)
    shape = tuple(checks.integer(d, f"shape (dimension {i})", 0) for i, d in enumerate(checks.sequence(shape, "shape")))
    if len(shape) != 2 or 0 in shape:
        raise ValueError(f"shape must be a matrix shape (out, in), got {shape}")
    # the start, the gradients and their copies, three trajectories with the optimizers' momentum and the
    # Newton-Schulz iteration's matrices (about 12 of the shape) and its (k, k) Gram products, k the smaller side
    checks.check_budget(4.0 * (shape[0] * shape[1] * (steps + 12) + 4 * min(shape) ** 2), f"shape {shape}")
    if not hasattr(torch.optim, "Muon"):
        return None
    settings = dict(dict(lr=0.02, momentum=0.95, nesterov=True, weight_decay=0.1), **settings)
    g = torch.Generator().manual_seed(seed)
    w0 = torch.randn(*shape, generator=g)
    grads = [torch.randn(*shape, generator=g) for _ in range(steps)]

    def trajectory(make):
        p = torch.nn.Parameter(w0.clone())
        opt = make([p])
        for gr in grads:
            p.grad = gr.clone()
            opt.step()
        return p.detach()

    ref = trajectory(lambda ps: torch.optim.Muon(ps, **settings))
    ours16 = trajectory(lambda ps: Muon(ps, **settings, dtype=torch.bfloat16))
    ours32 = trajectory(lambda ps: Muon(ps, **settings))
    return {"moved": float((ref - w0).abs().max()), "bfloat16": float((ours16 - ref).abs().max()),
            "float32": float((ours32 - ref).abs().max())}


def largest_rise(losses, start: int = 0, window: int = 1) -> dict:
    """Chapter 8: where the mean training loss (the curve the chapter plots) rises most, and which seeds rose.

    ``losses`` has shape ``(steps, seeds)``, one loss per step and seed; the mean is over seeds. Looking from step
    ``start`` on, finds the pair of steps ``low < step <= low + window`` whose mean loss grew most, as a ratio
    (``window=1``: the largest one-step rise; a longer window catches a rise that builds over several steps).
    ``low`` is the lowest mean in the ``window`` steps before ``step``. Returns ``low``, ``step``, ``mean_ratio``
    (mean at ``step`` over mean at ``low``), ``ratios`` (each seed's own ratio over the same steps, shape
    ``(seeds,)``) and ``rose`` (the seeds whose own loss grew, ratio above 1).
    """
    L = np.asarray(losses, dtype=float)
    if L.ndim != 2 or L.shape[0] < 2 or L.shape[1] < 1 or not np.isfinite(L).all() or (L <= 0).any():
        raise ValueError(f"losses: need positive finite values of shape (steps >= 2, seeds), got shape {L.shape}")
    if not 0 <= start < L.shape[0] - 1:
        raise ValueError(f"start must lie in [0, {L.shape[0] - 2}], got {start}")
    window = checks.integer(window, "window", 1)
    mean = L.mean(axis=1)
    best = (-np.inf, start, start + 1)
    for t in range(start + 1, len(mean)):
        lo = max(start, t - window)
        low = lo + int(np.argmin(mean[lo:t]))
        if mean[t] / mean[low] > best[0]:
            best = (mean[t] / mean[low], low, t)
    ratio, low, t = best
    ratios = L[t] / L[low]
    return dict(low=low, step=t, mean_ratio=float(ratio), ratios=ratios,
                rose=[int(k) for k in np.flatnonzero(ratios > 1)])
