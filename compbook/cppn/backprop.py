"""The trainer's engine: a CPPN's MSE and its weight gradient, with the backward pass written out by hand.

Autograd records every small op of the forward pass (a matmul, a mask, a slice and two or three elementwise ops per
activation, per layer) and replays them backward. A CPPN layer is narrow (22 neurons in FER's architecture), so on
a CPU most of an autograd step is that bookkeeping, not arithmetic. Written out, a layer is

    forward    z_l = W_l h_{l-1},   h_l = act(z_l),   d_l = act'(z_l)   (kept for the backward pass)
    backward   g_z = g_h * d_l,     dL/dW_l = g_z h_{l-1}^T,            g_{h_{l-1}} = W_l^T g_z

with activations stored neurons-major, ``(..., neurons, N)`` for N pixels (as in :mod:`compbook.cppn.emc2`'s fast
engine): a layer is one matmul with the pixels as its long dimension, and a neuron's pixels are contiguous.
Each hidden layer's neurons are permuted once so that each activation is one slice (identity and cache neurons
cost nothing): the permuted network is the same function, and :meth:`Backprop.to_model_order` undoes it.
The colour head (HSV and its clips, 3 x N values) goes through autograd on :func:`~compbook.cppn.outputs_to_rgb`
itself, so the image is defined in one place. :func:`autograd_loss_and_grads` is the plain-autograd reference the
tests check this engine against (and ``benchmarks/bench_train.py`` times it against).
"""

from __future__ import annotations

import copy
from typing import Sequence

import torch

from .. import checks, config
from .network import CPPN, active_runs, coordinate_grid, grouped_layout, outputs_to_rgb


def _activate_(z: torch.Tensor, name: str) -> None:
    """Overwrite ``z`` with ``act(z)``, Picbreeder's definitions (as ``cppn.ACTIVATIONS``), without temporaries."""
    if name == "gaussian":                       # 2 exp(-z^2) - 1
        z.square_().neg_().exp_().mul_(2.0).sub_(1.0)
    elif name == "sigmoid":                      # 2 logistic(z) - 1
        z.sigmoid_().mul_(2.0).sub_(1.0)
    elif name in ("sin", "cos", "tanh", "relu"):
        getattr(z, name + "_")()
    else:
        raise ValueError(f"backprop: no hand-written pass for activation {name!r}")


def _derivative_(z: torch.Tensor, a: torch.Tensor, name: str) -> torch.Tensor:
    """Overwrite ``z`` (a saved pre-activation) with ``act'(z)``, given ``a = act(z)``; returns ``z``."""
    if name == "gaussian":                       # -2 z (a + 1)
        return z.addcmul_(z, a).mul_(-2.0)
    if name == "sigmoid":                        # (1 - a^2) / 2
        return torch.mul(a, a, out=z).sub_(1.0).mul_(-0.5)
    if name == "tanh":                           # 1 - a^2
        return torch.mul(a, a, out=z).sub_(1.0).neg_()
    if name == "sin":
        return z.cos_()
    if name == "cos":
        return z.sin_().neg_()
    if name == "relu":                           # 1 where z > 0, else 0 (as autograd's relu)
        return z.sign_().clamp_(min=0.0)
    raise ValueError(f"backprop: no hand-written pass for activation {name!r}")


#: CPU group size, our choice: from ``benchmarks/bench_train.py``-style timings on a 2-core CPU, at 64 px all 16
#: networks in one pass were fastest, at 256 px one network at a time about 15% faster than one pass of 16
#: (cache-bound)
CPU_GROUP_BYTES = 6 * 2 ** 20
#: GPU: a layer array may take this share of the free memory (our choice: a pass keeps about ``2 depth + 4`` such
#: arrays, so a 12-layer network's pass stays under half the free memory)
GPU_GROUP_SHARE = 1 / 64


def default_group_bytes(device) -> int:
    """Bytes of one layer array of a group of networks (:class:`Backprop`'s ``group_bytes``): a CPU's
    :data:`CPU_GROUP_BYTES` (cache-sized), or :data:`GPU_GROUP_SHARE` of a GPU's free memory, so that a GPU
    trains a stack in one pass or a few large ones, never in groups of 1-4 networks."""
    device = torch.device(device)
    if device.type == "cuda":
        return max(CPU_GROUP_BYTES, int(GPU_GROUP_SHARE * config.available_memory_mb(device) * 2 ** 20))
    return CPU_GROUP_BYTES


def _rows(buffer: torch.Tensor, rows: int) -> torch.Tensor:
    """The first ``rows * N`` values of ``buffer (..., R, N)`` as a contiguous ``(..., rows, N)`` view."""
    *lead, _, n = buffer.shape
    return buffer.reshape(-1)[: buffer[..., :1, :].numel() * rows].view(*lead, rows, n)


class Backprop:
    """MSE of CPPNs of ``model``'s architecture against ``target``, and the gradient w.r.t. their weights.

    Args:
        model: gives the architecture (activations, colour mode) and the dtype; its weights are not used.
        target: ``(H, W, 3)`` or ``(B, H, W, 3)`` float tensor in [0, 1] (square), broadcast against the weights.
        straight_through: gradients pass the output clips as identities (see :func:`compbook.cppn.outputs_to_rgb`).
        device: where to compute (default: the target's device).
        group_bytes: a stack of networks ``(B, out, in)`` is passed in groups whose largest layer array
            (``group x neurons x N`` values) fits in this many bytes, None for one pass; default
            :func:`default_group_bytes` of the device (a CPU's cache, or a GPU's free memory).

    Weights go in and out as lists of ``(..., out, in)`` tensors, one per layer, in the engine's neuron order:
    :meth:`to_engine_order` / :meth:`to_model_order` convert (masks too). The loss is the mean over pixels and
    channels, one value per leading index, ``(...)``.
    """

    def __init__(self, model: CPPN, target: torch.Tensor, straight_through: bool = True, device=None,
                 group_bytes: int | None | str = "auto"):
        checks.instance(model, "model", CPPN)
        checks.instance(target, "target", torch.Tensor, " (H, W, 3) or (B, H, W, 3)")
        if target.ndim not in (3, 4) or target.shape[-1] != 3 or target.shape[-2] != target.shape[-3] \
                or 0 in target.shape:
            raise ValueError(f"target must be a square RGB tensor (H, W, 3) or (B, H, W, 3), got "
                             f"{tuple(target.shape)}")
        checks.check_render_size(target.shape[-2], 8 + 4 * max(model.widths), model.mask0.element_size(),
                                 "Backprop's buffers (target)", batch=target.shape[0] if target.ndim == 4 else 1)
        checks.unit_image(target, "target")
        device = target.device if device is None else torch.device(device)
        if isinstance(group_bytes, str) and group_bytes == "auto":
            group_bytes = default_group_bytes(device)
        if group_bytes is not None:
            group_bytes = checks.integer(group_bytes, "group_bytes")
        dtype = model.mask0.dtype
        self.depth, self.color, self.straight_through = model.depth, model.color, straight_through
        self.group_bytes = group_bytes
        self.res = res = target.shape[-2]
        self.coords = coordinate_grid(res, dtype=dtype, device=device).T.contiguous()       # (4, N)
        self.target = target.to(device, dtype).reshape(*target.shape[:-3], res * res, 3)   # (..., N, 3)
        layouts = [grouped_layout(names) for names in model.activations]
        self.orders = [None if order == sorted(order) else torch.tensor(order, device=device)
                       for order, _ in layouts]
        self.inverses = [None if o is None else torch.argsort(o) for o in self.orders]
        self.runs = [active_runs(runs) for _, runs in layouts]                           # identities cost nothing
        self.layers = [[names[i] for i in order] for names, (order, _) in zip(model.activations, layouts)]
        self._reference: CPPN | None = None
        self._buffers: dict = {}

    # -- neuron order ------------------------------------------------------------------------------------------
    def _permute(self, tensors: Sequence[torch.Tensor], orders) -> list[torch.Tensor]:
        out = []
        for l, t in enumerate(tensors):
            if l < self.depth and orders[l] is not None:           # this layer's neurons: rows
                t = t.index_select(-2, orders[l])
            if l > 0 and orders[l - 1] is not None:                # the previous layer's neurons: columns
                t = t.index_select(-1, orders[l - 1])
            out.append(t)
        return out

    def to_engine_order(self, tensors: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        """Weights or masks ``(..., out, in)`` in the model's neuron order -> the engine's (a permuted copy)."""
        return self._permute([t.to(self.coords.device) for t in tensors], self.orders)

    def to_model_order(self, tensors: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        """Inverse of :meth:`to_engine_order`."""
        return self._permute(tensors, self.inverses)

    # -- the pass ----------------------------------------------------------------------------------------------
    def _workspace(self, weights: Sequence[torch.Tensor]) -> dict:
        """Buffers for the big ``(..., neurons, N)`` arrays, allocated once per batch shape and reused: a fresh
        array per layer per step costs more than the arithmetic on a CPU (page faults)."""
        lead, dtype = tuple(weights[0].shape[:-2]), weights[0].dtype
        key = (lead, dtype)
        if key not in self._buffers:
            n, dev = self.coords.shape[-1], self.coords.device
            new = lambda rows: torch.empty(*lead, rows, n, dtype=dtype, device=dev)
            widest = max(w.shape[-1] for w in weights)
            self._buffers[key] = dict(
                z=[new(w.shape[-2]) for w in weights],                            # z_l, then h_l in place
                saved=[[new(b - a) for _, a, b in runs] for runs in self.runs],    # z_l of non-identity runs
                g=[new(widest), new(widest)])                                     # dL/dh, ping-pong
        return self._buffers[key]

    def loss_and_grads(self, weights: Sequence[torch.Tensor], grads: bool = True):
        """``(loss (...), [dL/dW_l (..., out, in)] or None)`` for weights in the engine's order.

        ``dL/dW_l`` is the gradient of each network's own loss (the sum over leading indices, differentiated).
        It is dense: multiply by the mask yourself when weights are masked. A stack of B networks is passed in
        groups whose layer arrays fit in ``group_bytes`` (see the class docstring).
        """
        lead = weights[0].shape[:-2]
        if len(lead) != 1 or self.group_bytes is None:
            return self._pass(weights, self.target, grads)
        per_network = self.coords.shape[-1] * max(w.shape[-2] for w in weights) * weights[0].element_size()
        group = max(1, self.group_bytes // per_network)
        if group >= lead[0]:
            return self._pass(weights, self.target, grads)
        parts = [self._pass([w[i:i + group] for w in weights],
                            self.target[i:i + group] if self.target.ndim == 3 else self.target, grads)
                 for i in range(0, lead[0], group)]
        loss = torch.cat([loss for loss, _ in parts])
        return loss, None if not grads else [torch.cat(g) for g in zip(*(g for _, g in parts))]

    @torch.no_grad()
    def _pass(self, weights: Sequence[torch.Tensor], target: torch.Tensor, grads: bool):
        """One forward and backward pass over ``weights`` (any leading dims) against ``target (..., N, 3)``."""
        ws = self._workspace(weights)
        h, inputs = self.coords, []
        for l, w in enumerate(weights):
            inputs.append(h)
            z = torch.matmul(w, h, out=ws["z"][l])                                # (..., out, N)
            if l < self.depth:
                for (name, a, b), saved in zip(self.runs[l], ws["saved"][l]):
                    if grads:
                        saved.copy_(z[..., a:b, :])
                    _activate_(z[..., a:b, :], name)
            h = z
        out = h.detach().requires_grad_(grads)
        with torch.enable_grad():
            rgb = outputs_to_rgb(out.transpose(-1, -2), self.color, straight_through=self.straight_through)
            loss = ((rgb - target) ** 2).mean(dim=(-2, -1))
            if not grads:
                return loss.detach(), None
            (g,) = torch.autograd.grad(loss.sum(), out)
        result = [None] * len(weights)
        for l in reversed(range(len(weights))):
            if l < self.depth:                           # g: dL/dh_l -> dL/dz_l
                for (name, a, b), saved in zip(self.runs[l], ws["saved"][l]):
                    g[..., a:b, :].mul_(_derivative_(saved, ws["z"][l][..., a:b, :], name))
            result[l] = torch.matmul(g, inputs[l].transpose(-1, -2))
            if l > 0:                                    # dL/dh_{l-1}, into the other ping-pong buffer
                g = torch.matmul(weights[l].transpose(-1, -2), g, out=_rows(ws["g"][l % 2], inputs[l].shape[-2]))
        return loss.detach(), result


    def autograd_loss_and_grads(self, weights: Sequence[torch.Tensor]):
        """What :meth:`loss_and_grads` returns, computed by plain autograd instead (the reference; slower)."""
        if self._reference is None:   # the network in the engine's neuron order
            self._reference = CPPN(self.layers, self.color).to(self.coords.device, self.coords.dtype)
        image = self.target.reshape(*self.target.shape[:-2], self.res, self.res, 3)
        return autograd_loss_and_grads(self._reference, image, weights, self.straight_through)


def autograd_loss_and_grads(model: CPPN, target: torch.Tensor, weights: Sequence[torch.Tensor],
                            straight_through: bool = True):
    """The reference: the same ``(loss, grads)`` by autograd through ``model.forward`` (model neuron order)."""
    res = target.shape[-2]
    params = [w.detach().clone().requires_grad_(True) for w in weights]
    coords = coordinate_grid(res, dtype=params[0].dtype, device=params[0].device)
    out = model.forward(coords, params, [torch.ones_like(w) for w in params])
    rgb = outputs_to_rgb(out, model.color, straight_through=straight_through)
    flat = target.to(rgb.dtype).reshape(*target.shape[:-3], res * res, 3)
    loss = ((rgb - flat) ** 2).mean(dim=(-2, -1))
    grads = torch.autograd.grad(loss.sum(), params)
    return loss.detach(), list(grads)


def gradient_error(model: CPPN, target, straight_through: bool = True) -> float:
    """Max over layers of ``max |engine - autograd| / max |autograd|`` for ``model``'s weights on ``target``
    ``(H, W, 3)`` (computed in float64: what is left is rounding, ~1e-15, unless the engine is wrong)."""
    from ..book.images import as_target
    checks.instance(model, "model", CPPN)
    target = as_target(target).double()
    model = copy.deepcopy(model).double()
    weights = [w.detach() for w in model.effective_weights()]
    engine = Backprop(model, target, straight_through)
    _, by_hand = engine.loss_and_grads(engine.to_engine_order(weights))
    _, reference = autograd_loss_and_grads(model, target, weights, straight_through)
    return max(float((a - b).abs().max() / b.abs().max().clamp_min(1e-300))
               for a, b in zip(engine.to_model_order(by_hand), reference))
