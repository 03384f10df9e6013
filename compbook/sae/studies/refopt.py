"""An optimiser option faithful to S2AE's public trainer (``liaoweiduo/mmsae``), beside ours (chapter 15).

Facts read from the reference trainer (a ``transformers.Trainer`` with its default ``TrainingArguments``):

* the encoder is an ``nn.Linear(d_in, d_sae)`` with PyTorch's default initialisation (weight and bias uniform in
  ``+-1/sqrt(d_in)``, the bound of ``kaiming_uniform_(a=sqrt(5))``); ``W_dec`` is a copy of the encoder weight,
  *not* renormalised at initialisation (only after every step); ``b_dec`` starts at 0;
* AdamW with the ``transformers`` defaults (weight decay 0, so Adam; betas 0.9 / 0.999, eps 1e-8), a **linear**
  learning-rate decay to 0 over the run without warm-up (scheduler ``"linear"``, ``warmup_steps = 0``), gradient
  clipping at norm **1.0** (``max_grad_norm``); the decoder rows are set to unit norm after each step.

Ours (:func:`compbook.sae.s2ae.train_sae`): Adam at a constant rate, no clipping, unit-norm random ``W_enc``
columns with ``W_dec = W_enc.T``, ``b_enc = 0`` and ``b_dec`` at the data mean.

:class:`ReferenceTrainConfig` is a :class:`~compbook.sae.s2ae.SAETrainConfig` with the reference's options as fields
(so a stored SAE of one never serves the other: the fields are part of the key of
:func:`compbook.sae.experiment.stored_runs`); :func:`train_sae_reference` trains with them. The learning rate
stays a parameter: the reference's example script sets none (so ``transformers``' 5e-5 for a 7B model's SAE);
the book keeps its own rate so that only the listed options differ (our choice).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from ... import checks

from ..s2ae import SAEData, SAETrainConfig, TrainResult, fit_sae
from ..topk import TopKSAE

SCHEDULES = ("linear", "constant")
INITS = ("linear", "ours")
B_DEC_INITS = ("zero", "mean")


@dataclass
class ReferenceTrainConfig(SAETrainConfig):
    """:class:`SAETrainConfig` plus the reference trainer's optimisation (defaults: the reference's)."""
    schedule: str = "linear"        # "linear": lr decays linearly to 0 over ``steps``; "constant": ours
    clip: float | None = 1.0        # max gradient norm (None: no clipping, ours)
    init: str = "linear"            # "linear": nn.Linear's default; "ours": TopKSAE's
    b_dec_init: str = "zero"        # "zero": the reference; "mean": the data mean, ours

    def __post_init__(self):
        super().__post_init__()                     # the base config's checks (sizes, rates, seed)
        for name, allowed in (("schedule", SCHEDULES), ("init", INITS), ("b_dec_init", B_DEC_INITS)):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name}={getattr(self, name)!r}: expected one of {allowed}")
        if self.clip is not None:                   # a bool is not a norm: refused by checks.real
            checks.real(self.clip, "clip", 0, low_open=True)


def linear_init(sae: TopKSAE, seed: int) -> TopKSAE:
    """Re-initialise ``sae`` as the reference does: ``nn.Linear(d_in, d_sae)``'s default distribution for the
    encoder weight and bias (uniform in ``+-1/sqrt(d_in)``), ``W_dec`` a copy of that weight (rows not
    normalised), ``b_dec = 0``. Deterministic in ``seed``."""
    checks.instance(sae, "sae", TopKSAE)
    g = torch.Generator().manual_seed(checks.seed(seed))
    bound = 1.0 / math.sqrt(sae.d_in)
    weight = (torch.rand(sae.d_sae, sae.d_in, generator=g) * 2 - 1) * bound      # nn.Linear layout (out, in)
    bias = (torch.rand(sae.d_sae, generator=g) * 2 - 1) * bound
    with torch.no_grad():
        sae.W_enc.copy_(weight.T)
        sae.W_dec.copy_(weight)
        sae.b_enc.copy_(bias)
        sae.b_dec.zero_()
    return sae


def linear_decay(step: int, steps: int) -> float:
    """The learning-rate factor of ``transformers``' linear schedule without warm-up at ``step`` (0-based)."""
    step, steps = checks.integer(step, "step", 0), checks.integer(steps, "steps")
    return max(0.0, (steps - step) / max(1, steps))


def reference_start(data: SAEData, cfg: SAETrainConfig) -> tuple[TopKSAE, ReferenceTrainConfig, object]:
    """What :func:`train_sae_reference` trains from: the initialised SAE (``cfg.init``, ``cfg.b_dec_init``), the
    config as a :class:`ReferenceTrainConfig` (a plain :class:`SAETrainConfig` means ours) and the learning-rate
    schedule (a function step -> factor, or None for a constant rate)."""
    from ..s2ae import check_data

    checks.instance(cfg, "cfg", SAETrainConfig)
    check_data(data, None, cfg.lam > 0)
    ref = cfg if isinstance(cfg, ReferenceTrainConfig) else ReferenceTrainConfig(
        **{**cfg.__dict__, "schedule": "constant", "clip": None, "init": "ours", "b_dec_init": "mean"})
    sae = TopKSAE(data.acts.shape[-1], ref.d_sae, ref.k, seed=ref.seed)
    if ref.init == "linear":
        linear_init(sae, ref.seed)
    with torch.no_grad():
        if ref.b_dec_init == "mean":
            sae.b_dec.copy_(data.tokens.mean(0))
        else:
            sae.b_dec.zero_()
    steps = ref.steps
    schedule = (lambda t: linear_decay(t, steps)) if ref.schedule == "linear" else None
    return sae, ref, schedule


def train_sae_reference(data: SAEData, cfg: SAETrainConfig, progress: bool = True) -> TrainResult:
    """Train like :func:`compbook.sae.s2ae.train_sae` (same batches, loss and penalties for the same seed) with
    the optimisation of ``cfg`` (a :class:`ReferenceTrainConfig`; a plain :class:`SAETrainConfig` means ours)."""
    sae, ref, schedule = reference_start(data, cfg)
    return fit_sae(sae, data, ref, progress, schedule=schedule, clip=ref.clip, desc="SAE (reference optim)")
