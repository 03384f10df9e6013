"""Fit CPPNs to a target image by gradient descent (chapter 1), one at a time or many at once.

FER's recipe: mean squared error between the render and the target, Adam on the gradient normalised to unit L2
norm, lr 3e-3 (3e-4 for the apple), 100k steps at 256x256. Masks are respected: a masked weight gets zero
gradient and is re-zeroed after every step, whatever the optimizer does.

Our choice (``straight_through=True``): the gradient passes Picbreeder's output clips (saturation and brightness
clipped to [0, 1]) as if they were identities. The loss value is the true MSE; without this, a network whose
initial brightness exceeds 1 (a white image) gets exactly zero gradient and never trains.

:func:`fit_many` trains B networks of one architecture together: weights are stacked ``(B, out, in)`` and every
layer is one batched matmul.

Gradients come from :class:`compbook.cppn.backprop.Backprop`, the forward and backward pass written out by hand (about
2x faster than autograd for these narrow networks on a CPU); ``benchmarks/bench_train.py`` measures both, and
single against batched.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np
import torch
from tqdm.auto import tqdm

from .. import checks, config
from ..book.images import as_target  # noqa: F401 (the trainer's target check, re-exported)
from .backprop import Backprop
from .network import CPPN
from .optim import muon

OptimizerFactory = Callable[[list[torch.Tensor], float], torch.optim.Optimizer]


def adam(params, lr):
    """FER's optimizer: plain Adam (the gradient it sees is already unit-normalised); fused: one kernel a step."""
    return torch.optim.Adam(params, lr=lr, fused=True)


OPTIMIZERS: dict[str, OptimizerFactory] = {"adam": adam, "muon": muon}
GRADIENTS = ("backprop", "autograd")   # how a step's gradient is computed: by hand (default) or by autograd


@dataclass
class FitResult:
    """What a fit returns: the trained model(s), the loss history and the wall time."""
    models: list[CPPN]
    losses: np.ndarray            # (steps,) for one model, (steps, B) for a batch: MSE before each step
    seconds: float
    config: dict = field(default_factory=dict)

    @property
    def model(self) -> CPPN:
        return self.models[0]

    @property
    def final_loss(self):
        """MSE of the trained model(s) on the target (after the last step)."""
        return self.config["final_loss"]


def _normalise_grads_(grads: Sequence[torch.Tensor], batched: bool) -> None:
    """Scale gradients to unit L2 norm, over all layers (per model when ``batched``)."""
    dims = tuple(range(1, grads[0].ndim)) if batched else None
    sq = sum((g * g).sum(dim=dims) if dims else (g * g).sum() for g in grads)
    scale = 1.0 / (sq.sqrt() + 1e-12)
    for g in grads:
        g.mul_(scale.reshape(-1, *[1] * (g.ndim - 1)) if batched else scale)


def _train(template: CPPN, weights: list[torch.Tensor], masks: list[torch.Tensor], target: torch.Tensor,
           steps: int, lr: float, optimizer: str | OptimizerFactory, normalize_grad: bool, progress: bool,
           desc: str, straight_through: bool = True, gradients: str = "backprop", stop=None,
           check_every: int = 1000, keep_best: bool = False):
    """Train ``weights`` (``(out, in)`` each, or stacks ``(B, out, in)``) with ``masks``; gradients by
    :class:`~compbook.cppn.backprop.Backprop` (the pass written out, or autograd), on a GPU in full mode if any.
    ``stop(losses (steps,) or (steps, B))`` is asked every ``check_every`` steps; True ends training there.
    ``keep_best``: return each network's weights at its lowest loss seen (losses are measured before each
    step, and once more after the last), instead of the last weights."""
    engine = Backprop(template, target, straight_through, device=config.device())
    loss_and_grads = engine.loss_and_grads if gradients == "backprop" else engine.autograd_loss_and_grads
    masks = engine.to_engine_order(masks)
    dense = all(bool(m.all()) for m in masks)
    params = [torch.nn.Parameter(w.detach() * m) for w, m in zip(engine.to_engine_order(weights), masks)]
    make = OPTIMIZERS[optimizer] if isinstance(optimizer, str) else optimizer
    opt = make(params, lr)
    # the losses go into one preallocated (steps, ...) log: a small tensor kept per step fragmented the heap
    # (measured: RSS grew ~90 MB per 1,000 steps for 3 twins)
    log, done = None, 0
    best = _BestWeights(params) if keep_best else None
    for step in tqdm(range(steps), desc=desc, disable=not progress, leave=False):
        if stop is not None and step and step % check_every == 0 and stop(log[:done].cpu().numpy()):
            break
        loss, grads = loss_and_grads(params)
        if log is None:
            log = torch.empty((steps, *loss.shape), dtype=loss.dtype, device=loss.device)
        log[step], done = loss.detach(), step + 1
        if best is not None:
            best.update(loss, params)
        if not dense:
            for g, m in zip(grads, masks):
                g.mul_(m)
        if normalize_grad:
            _normalise_grads_(grads, batched=params[0].ndim == 3)
        for p, g in zip(params, grads):   # fused Adam reads a grad in its parameter's memory layout: autograd's
            p.grad = g.contiguous()        # batched grads come transposed, and were misread
        opt.step()
        if not dense:
            with torch.no_grad():
                for p, m in zip(params, masks):
                    p.mul_(m)
    final, _ = engine.loss_and_grads(params, grads=False)
    if best is not None:
        best.update(final, params)
        params, final = best.weights, best.loss
    params = [p.detach().cpu() for p in engine.to_model_order(params)]
    if not all(bool(torch.isfinite(p).all()) for p in params):
        raise ValueError(f"training diverged: weights became NaN or inf within {steps} steps at lr={lr} "
                         f"(optimizer {getattr(optimizer, '__name__', optimizer)!s}); use a smaller lr")
    return params, log[:done].cpu().numpy() if done else np.zeros((0,)), final.cpu()


class _BestWeights:
    """Each network's lowest loss so far and a copy of its weights then (``keep_best``); weights are
    ``(out, in)`` or stacks ``(B, out, in)``, the loss a scalar or ``(B,)``."""

    def __init__(self, params):
        self.weights = [p.detach().clone() for p in params]
        self.loss = None

    def update(self, loss, params) -> None:
        loss = loss.detach()
        better = torch.ones_like(loss, dtype=torch.bool) if self.loss is None else loss < self.loss
        if not bool(better.any()):
            return
        self.loss = loss.clone() if self.loss is None else torch.where(better, loss, self.loss)
        for w, p in zip(self.weights, params):
            if p.ndim == 3:
                w[better] = p.detach()[better]
            else:
                w.copy_(p.detach())


def _check_settings(steps, lr, optimizer, gradients, **flags) -> tuple[int, float]:
    """Check the trainer's settings before any work: ``steps`` an integer >= 0, ``lr`` a finite number > 0,
    ``optimizer`` a name in :data:`OPTIMIZERS` or a callable factory, ``gradients`` in :data:`GRADIENTS`, and
    the boolean ``flags``. Returns ``(steps, lr)``."""
    steps = checks.integer(steps, "steps", 0)
    lr = checks.real(lr, "lr", 0, low_open=True)
    if isinstance(optimizer, str):
        checks.choice(optimizer, "optimizer", OPTIMIZERS)
    elif not callable(optimizer):
        raise ValueError(f"optimizer must be one of {list(OPTIMIZERS)} or a factory (params, lr) -> Optimizer, "
                         f"got {optimizer!r}")
    checks.choice(gradients, "gradients", GRADIENTS)
    for name, value in flags.items():
        checks.boolean(value, name)
    return steps, lr


def _check_model(model, name: str = "model") -> CPPN:
    return checks.instance(model, name, CPPN)


def fit(model: CPPN, target, steps: int = 1000, lr: float = 3e-3, optimizer: str | OptimizerFactory = "adam",
        normalize_grad: bool = True, progress: bool = True, straight_through: bool = True,
        gradients: str = "backprop") -> FitResult:
    """Fit ``model`` (a copy; the argument is left unchanged) to ``target`` ``(H, W, 3)`` in [0, 1].

    Returns a :class:`FitResult` whose ``losses`` is ``(steps,)``. Deterministic: the same model, target and
    settings give the same losses (initial weights come from the model's own seed). ``gradients="autograd"``
    computes the same gradient by autograd (to float rounding; slower): the reference. The optimizer sees each
    layer's neurons grouped by activation (an exact re-ordering, undone on return): Adam, SGD and Muon do not
    depend on the order.
    """
    steps, lr = _check_settings(steps, lr, optimizer, gradients, normalize_grad=normalize_grad,
                                progress=progress, straight_through=straight_through)
    _check_model(model)
    target = as_target(target)
    if target.ndim != 3:
        raise ValueError(f"target: fit takes one image (H, W, 3), got {tuple(target.shape)}; use fit_many")
    t0 = time.perf_counter()
    params, losses, final = _train(model, list(model.weights), model.masks, target, steps, lr, optimizer,
                                   normalize_grad, progress, desc="fit", straight_through=straight_through,
                                   gradients=gradients)
    trained = model.clone_with(weights=params)
    cfg = dict(steps=steps, lr=lr, res=target.shape[0], final_loss=float(final))
    return FitResult([trained], losses, time.perf_counter() - t0, cfg)


def fit_many(models: Sequence[CPPN], target, steps: int = 1000, lr: float = 3e-3,
             optimizer: str | OptimizerFactory = "adam", normalize_grad: bool = True,
             progress: bool = True, straight_through: bool = True, gradients: str = "backprop",
             stop: Callable[[np.ndarray], bool] | None = None, check_every: int = 1000,
             keep_best: bool = False) -> FitResult:
    """Fit B models of one architecture at once (stacked weights, batched matmuls); masks may differ per model.

    ``target`` is one image ``(H, W, 3)`` shared by all, or one per model ``(B, H, W, 3)``. Each model's
    gradient is normalised on its own, so every model follows exactly the path :func:`fit` would give it
    (up to float rounding). ``losses`` is ``(steps, B)``. ``stop``: a rule asked every ``check_every`` steps
    with the losses so far ``(steps_done, B)``; True ends training early (``losses`` then has fewer rows;
    :func:`compbook.cppn.twins.plateaued`). Without it (the default) training runs ``steps`` steps.
    ``keep_best``: each model comes back with its weights at its lowest training loss, not its last ones.
    """
    steps, lr = _check_settings(steps, lr, optimizer, gradients, normalize_grad=normalize_grad,
                                progress=progress, straight_through=straight_through)
    check_every = checks.integer(check_every, "check_every", 1)
    if stop is not None and not callable(stop):
        raise ValueError(f"stop must be None or a callable losses -> bool, got {stop!r}")
    if isinstance(models, CPPN) or not isinstance(models, Sequence) or len(models) < 1:
        raise ValueError(f"models must be a non-empty list of CPPNs, got {type(models).__name__}")
    template = _check_model(models[0], "models[0]")
    for i, m in enumerate(models):
        _check_model(m, f"models[{i}]")
        if m.activations != template.activations or m.color != template.color:
            raise ValueError(f"models[{i}] has another architecture than models[0]; fit_many needs one shape")
        if m.mask0.dtype != template.mask0.dtype:
            raise ValueError(f"models[{i}] is {m.mask0.dtype} but models[0] is {template.mask0.dtype}; "
                             f"fit_many needs one dtype")
    target = as_target(target)
    if target.ndim == 4 and target.shape[0] != len(models):
        raise ValueError(f"target: {target.shape[0]} images for {len(models)} models")
    weights = [torch.stack([m.weights[l].detach() for m in models]) for l in range(len(template.shapes))]
    masks = [torch.stack([m.masks[l] for m in models]) for l in range(len(template.shapes))]
    t0 = time.perf_counter()
    params, losses, final = _train(template, weights, masks, target, steps, lr, optimizer, normalize_grad,
                                   progress, desc=f"fit x{len(models)}", straight_through=straight_through,
                                   gradients=gradients, stop=stop, check_every=check_every,
                                   keep_best=checks.boolean(keep_best, "keep_best"))
    trained = [template.clone_with(weights=[p[b] for p in params], masks=[m[b] for m in masks])
               for b in range(len(models))]
    cfg = dict(steps=len(losses), lr=lr, res=target.shape[-2], final_loss=final.numpy())
    return FitResult(trained, losses, time.perf_counter() - t0, cfg)


def mse(model: CPPN, target) -> float:
    """Mean squared error between ``model.render`` at the target's resolution and ``target`` ``(H, W, 3)``."""
    _check_model(model)
    target = as_target(target)
    if target.ndim != 3:
        raise ValueError(f"target: mse takes one image (H, W, 3), got {tuple(target.shape)}")
    with torch.no_grad():
        return float(((model.render(target.shape[0]) - target) ** 2).mean())


def fit_budget() -> tuple[int, int]:
    """Chapter 1's fit size ``(res, steps)``: CPU mode 48 px and 1000 steps (our choice); full mode FER's
    256 px and 100,000 steps (:mod:`compbook.cppn.paper`), 20 steps in the full-mode smoke."""
    from . import paper
    res = config.by_mode(cpu=48, full=paper.figure("fer_res"))
    return res, config.by_mode(cpu=1000, full=paper.figure("fer_steps"), smoke=20)
