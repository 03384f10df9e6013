"""Train a stack of same-shape SAEs at once (chapter 15's k / lambda study on the sweep runner).

:func:`fit_stack` is :func:`compbook.sae.s2ae.fit_sae` for ``S`` SAEs of one shape (``d_in``, ``d_sae``, ``k``) and
one budget (steps, batch of images, learning rate): their weights are stacked, ``W_enc (S, d_in, d_sae)``,
``W_dec (S, d_sae, d_in)``, ``b_enc (S, d_sae)``, ``b_dec (S, d_in)``, and one batched matmul per step encodes
and decodes every SAE's own batch. Each SAE keeps its own seed (its batches), lambda, region count and penalty
weights; Adam is elementwise, so one optimiser over the stacked tensors is S optimisers. The stacked decoder keeps
the layout of a single SAE's (``W_dec`` is a transposed copy of ``W_enc``), so on the CPU every SAE of the stack
ends **bit-identical** to :func:`~compbook.sae.s2ae.fit_sae`'s (tested); on a GPU the batched kernels may round
differently (differences of float32 rounding, growing with the steps).
"""

from __future__ import annotations

import time

import torch
from tqdm.auto import tqdm

from ... import checks
from ...config import device as default_device
from ..regions import default_regions, patch_regions
from ..s2ae import SAEData, SAETrainConfig, TrainResult, _sparse_penalties, binarize_ste, check_data, step_bytes
from ..topk import TopKSAE, fvu_loss

#: Fields every SAE of a stack must share (the batched shapes and the one optimiser); the others may differ.
SHARED = ("d_sae", "k", "steps", "batch_images", "lr", "regions_every_step")


def check_stack(saes, cfgs) -> tuple[list, list]:
    """``(saes, cfgs)`` as lists of equal length >= 1 of :class:`TopKSAE` and :class:`SAETrainConfig`, one shape
    (``d_in``, ``d_sae``, ``k``) and the :data:`SHARED` fields equal; ValueError naming what differs."""
    saes = list(checks.sequence(saes, "saes", 1))
    cfgs = list(checks.sequence(cfgs, "cfgs", len(saes), len(saes)))
    for i, (s, c) in enumerate(zip(saes, cfgs)):
        checks.instance(s, f"saes[{i}]", TopKSAE)
        checks.instance(c, f"cfgs[{i}]", SAETrainConfig)
        if (s.d_in, s.d_sae, s.k) != (saes[0].d_in, c.d_sae, c.k):
            raise ValueError(f"saes[{i}]: d_in={s.d_in}, d_sae={s.d_sae}, k={s.k}; expected d_in={saes[0].d_in} "
                             f"and cfgs[{i}]'s d_sae={c.d_sae}, k={c.k}")
        for f in SHARED:
            if getattr(c, f) != getattr(cfgs[0], f):
                raise ValueError(f"cfgs[{i}].{f}={getattr(c, f)!r} differs from cfgs[0]'s {getattr(cfgs[0], f)!r}: "
                                 f"a stack shares {SHARED}")
    return saes, cfgs


def _stacked(saes: list, dev) -> tuple[list, torch.Tensor]:
    """The leaf parameters ``[W_enc, W_dec storage, b_enc, b_dec]`` on ``dev`` and the ``W_dec (S, d_sae, d_in)``
    view; the decoder is stored transposed when the SAEs' are (as :class:`TopKSAE` makes them), so each slice has
    the single SAE's memory layout (and its matmuls their rounding)."""
    transposed = all(s.W_dec.stride() == (1, s.d_sae) for s in saes)

    def stack(name, t=False):
        return torch.nn.Parameter(torch.stack([getattr(s, name).detach().T if t else getattr(s, name).detach()
                                               for s in saes]).to(dev))
    w_enc, w_dec = stack("W_enc"), stack("W_dec", transposed)
    params = [w_enc, w_dec, stack("b_enc"), stack("b_dec")]
    return params, (w_dec.transpose(1, 2) if transposed else w_dec)


def _clip(params: list, clip: float) -> None:
    """:func:`torch.nn.utils.clip_grad_norm_` of each SAE of the stack over its own four gradients."""
    for i in range(params[0].shape[0]):
        grads = [p.grad[i] for p in params]
        total = torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads, 2.0)), 2.0)
        torch._foreach_mul_(grads, torch.clamp(clip / (total + 1e-6), max=1.0))


def _losses(params, w_dec, pidx, x, valid, regs, cfgs) -> list:
    """Each SAE's loss on its batch (:func:`compbook.sae.s2ae.s2ae_loss`'s ops): ``x`` (S, B, T, d_in), ``valid``
    (S, B, T), ``regs`` per SAE the batch's region labels (B, P) or None."""
    w_enc, _, b_enc, b_dec = params
    s, b, t, d = x.shape
    pre = torch.relu(torch.bmm(x.reshape(s, b * t, d) - b_dec[:, None], w_enc) + b_enc[:, None])
    vals, idx = pre.topk(cfgs[0].k, dim=-1, sorted=False)
    z = torch.zeros(s, b * t, w_enc.shape[2], dtype=vals.dtype, device=vals.device).scatter(-1, idx, vals)
    x_hat = (torch.bmm(z, w_dec) + b_dec[:, None]).reshape(s, b, t, d)
    out = []
    for i, c in enumerate(cfgs):
        loss = fvu_loss(x[i][valid[i]], x_hat[i][valid[i]])
        if c.lam > 0:
            v, j = vals[i].reshape(b, t, -1)[:, pidx], idx[i].reshape(b, t, -1)[:, pidx]
            gs, es = _sparse_penalties(binarize_ste(v), j, regs[i], c.d_sae)
            loss = loss + c.lam * (c.gs_weight * gs + c.es_weight * es)
        out.append(loss)
    return out


def fit_stack(saes, data: SAEData, cfgs, progress: bool = False, schedule=None, clip: float | None = None,
              device=None) -> list:
    """Train ``saes`` (initialised :class:`TopKSAE` s of one shape) on ``data`` at once, SAE ``i`` as
    :func:`compbook.sae.s2ae.fit_sae` ``(saes[i], data, cfgs[i], schedule=schedule, clip=clip)`` trains it (its
    seed's batches, its lambda and regions); ``schedule`` and ``clip`` as there, for every SAE. Trains on
    ``device`` (default :func:`compbook.config.device`); writes the trained weights back into ``saes`` (on the CPU)
    and returns one :class:`TrainResult` per SAE (``seconds``: the stack's time over ``S``)."""
    saes, cfgs = check_stack(saes, cfgs)
    check_data(data, saes[0].d_in, any(c.lam > 0 for c in cfgs))
    if schedule is not None and not callable(schedule):
        raise ValueError(f"schedule must be a function step -> lr factor or None, got {schedule!r:.60}")
    if clip is not None:
        clip = checks.real(clip, "clip", 0, low_open=True)
    dev = torch.device(device) if device is not None else default_device()
    n, p = data.acts.shape[0], len(data.patch_idx)
    checks.check_budget(sum(step_bytes(c, saes[0].d_in, n, data.acts.shape[1], p) for c in cfgs),
                        f"training a stack of {len(saes)} SAEs", device=dev)
    fixed = {}                                               # regions once per (count, exponent): the VLM is frozen
    keys = [(default_regions(c.n_regions, p), c.exponent) for c in cfgs]
    for c, key in zip(cfgs, keys):
        if c.lam > 0 and not c.regions_every_step and key not in fixed:
            fixed[key] = data.regions(*key)
    params, w_dec = _stacked(saes, dev)
    pidx = data.patch_idx.to(dev)
    opt = torch.optim.Adam(params, lr=cfgs[0].lr)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, schedule) if schedule is not None else None
    gens = [torch.Generator().manual_seed(c.seed) for c in cfgs]
    losses = []
    t0 = time.perf_counter()
    for _ in tqdm(range(cfgs[0].steps), disable=not progress, desc=f"stack of {len(saes)} SAEs"):
        idx = [torch.randint(0, n, (min(cfgs[0].batch_images, n),), generator=g) for g in gens]
        regs = []
        for c, i, key in zip(cfgs, idx, keys):
            reg = None if c.lam == 0 else (patch_regions(data.attn[i], data.grid, *key) if c.regions_every_step
                                           else fixed[key][i])
            regs.append(None if reg is None else reg.to(dev))
        x = torch.stack([data.acts[i] for i in idx]).to(dev)
        valid = torch.stack([data.valid[i] for i in idx]).to(dev)
        loss = _losses(params, w_dec, pidx, x, valid, regs, cfgs)
        opt.zero_grad(set_to_none=True)
        torch.stack(loss).sum().backward()
        if clip is not None:
            _clip(params, clip)
        opt.step()
        if sched is not None:
            sched.step()
        with torch.no_grad():                                # TopKSAE.normalize_decoder, slice by slice
            w_dec.div_(w_dec.norm(dim=2, keepdim=True).clamp_min(1e-12))
        losses.append(torch.stack(loss).detach())
    seconds = time.perf_counter() - t0
    per_step = torch.stack(losses).cpu().T.tolist() if losses else [[] for _ in saes]
    out = []
    for i, sae in enumerate(saes):
        with torch.no_grad():
            for name, prm in zip(("W_enc", "W_dec", "b_enc", "b_dec"), (params[0], w_dec, params[2], params[3])):
                getattr(sae, name).copy_(prm[i].cpu())
        out.append(TrainResult(sae.cpu(), per_step[i], seconds / len(saes)))
    return out
