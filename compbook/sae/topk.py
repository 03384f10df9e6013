"""A TopK sparse autoencoder, as in S2AE's public trainer (chapters 14 and 15).

Facts from the paper and its public trainer:

* ``pre = ReLU((x - b_dec) W_enc + b_enc)``, then keep the top ``k`` entries of ``pre``. The ReLU comes *before*
  the TopK, so a token can have fewer than ``k`` active latents (ties at 0 are not active).
* ``x_hat = z W_dec + b_dec``.
* ``W_dec`` starts as a copy of ``W_enc`` (``W_dec = W_enc.T``) and its rows are renormalised to unit norm after
  every optimiser step (:meth:`TopKSAE.normalize_decoder`).
* Names and shapes as in SAELens: ``W_enc (d_in, d_sae)``, ``W_dec (d_sae, d_in)``, ``b_enc (d_sae,)``,
  ``b_dec (d_in,)``. Checkpoints are ``NAME.safetensors`` + ``NAME.json`` (:func:`save_sae`, :func:`load_sae`).

Metrics: :func:`fvu` (fraction of variance unexplained), EV = 1 - FVU, :func:`l0` and :func:`dead_latents`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from ..results import checkpoints
from .. import checks

FORMAT = "compbook-topk-sae/1"


@dataclass
class TopKSAEConfig:
    """Architecture of a :class:`TopKSAE` (d_in: residual width, d_sae: dictionary size, k: latents kept)."""
    d_in: int
    d_sae: int
    k: int
    seed: int = 0

    def __post_init__(self):
        for name in ("d_in", "d_sae"):
            setattr(self, name, checks.integer(getattr(self, name), name))
        self.k = checks.integer(self.k, "k", 1, self.d_sae)        # k <= d_sae: the TopK keeps k of d_sae
        self.seed = checks.seed(self.seed)
        # W_enc and W_dec in float32, refused before allocating (checks.memory_budget_mb)
        checks.check_budget(2 * self.d_in * self.d_sae * 4, f"a TopK SAE of d_in={self.d_in} x d_sae={self.d_sae}")


def check_activations(x: torch.Tensor, d_in: int, name: str = "x", dtype: torch.dtype | None = None,
                      width: str = "d_in") -> torch.Tensor:
    """``x`` as a float tensor (..., d_in) (of ``dtype`` when given); ValueError naming ``name`` on a wrong width
    (called ``width`` in the message), integer, bool, complex or non-numeric values (activations are floats: ints
    are likely token ids) or NaN/inf (:func:`compbook.checks.finite`: NaN in is refused, never NaN out).
    """
    if not isinstance(x, torch.Tensor):
        try:
            x = torch.as_tensor(np.asarray(x))
        except (TypeError, ValueError, RuntimeError) as e:
            raise ValueError(f"{name} must be a float tensor of activations, got {type(x).__name__} ({e})") \
                from None
    if x.is_complex():
        raise ValueError(f"{name}: complex activations are not supported, got dtype {x.dtype}")
    if not torch.is_floating_point(x):
        raise ValueError(f"{name} must hold floating-point activations, got dtype {x.dtype}")
    if dtype is not None and x.dtype != dtype:
        raise ValueError(f"{name} must be {dtype} (the SAE's weights), got {x.dtype}; convert it first")
    if x.ndim < 1 or x.shape[-1] != d_in:
        raise ValueError(f"{name}: last dimension is {tuple(x.shape)[-1:] or 'missing'}, expected width "
                         f"{width}={d_in}")
    checks.finite(x, name)
    return x


class TopKSAE(nn.Module):
    """TopK SAE ``TopKSAE(d_in, d_sae, k, seed=0)``: ``encode (N, d_in) -> (N, d_sae)``, ``decode``, ``forward``."""

    def __init__(self, d_in: int, d_sae: int, k: int, seed: int = 0):
        super().__init__()
        self.cfg = TopKSAEConfig(d_in, d_sae, k, seed)            # whole numbers checked there, never truncated
        g = torch.Generator().manual_seed(self.cfg.seed)
        w = torch.randn(self.cfg.d_in, self.cfg.d_sae, generator=g)
        w = w / w.norm(dim=0, keepdim=True)          # unit columns, so the copy W_enc.T has unit rows
        self.W_enc = nn.Parameter(w)
        self.W_dec = nn.Parameter(w.T.clone())      # the paper's trainer: W_dec initialised as a copy of W_enc
        self.b_enc = nn.Parameter(torch.zeros(self.cfg.d_sae))
        self.b_dec = nn.Parameter(torch.zeros(self.cfg.d_in))

    @property
    def d_in(self) -> int:
        return self.cfg.d_in

    @property
    def d_sae(self) -> int:
        return self.cfg.d_sae

    @property
    def k(self) -> int:
        return self.cfg.k

    # The public methods check their input once (finite floats of the right width); the training loop calls the
    # unchecked ``_`` methods on batches its entry point checked (checks at the door, not in the hot loop).
    def pre_acts(self, x: torch.Tensor) -> torch.Tensor:
        """``ReLU((x - b_dec) W_enc + b_enc)``: (N, d_in) -> (N, d_sae), before the TopK."""
        return self._pre_acts(check_activations(x, self.d_in))

    def _pre_acts(self, x: torch.Tensor) -> torch.Tensor:
        """:meth:`pre_acts` of finite float activations (N, d_in), unchecked."""
        x = x.to(self.W_enc.dtype)
        return torch.relu((x - self.b_dec) @ self.W_enc + self.b_enc)

    def encode_topk(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The kept values and their latent indices, both (N, k) (a value may be 0: ReLU before TopK)."""
        return self.pre_acts(x).topk(self.k, dim=-1, sorted=False)

    def _encode_topk(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """:meth:`encode_topk` of finite float activations (N, d_in), unchecked."""
        return self._pre_acts(x).topk(self.k, dim=-1, sorted=False)

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        """Sparse code (N, d_sae): the top ``k`` of the ReLU'd pre-activations, zeros elsewhere."""
        vals, idx = self.encode_topk(x)
        return self._scatter(vals, idx)

    def scatter(self, vals: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
        """Dense code (N, d_sae) from :meth:`encode_topk`'s values and indices: ``idx`` latent ids in
        ``0..d_sae-1`` (an id equal to ``d_sae`` or a negative one is refused, :func:`compbook.checks.index`),
        the shape of ``vals``."""
        vals = checks.tensor(vals, "vals")
        idx = checks.tensor(idx, "idx", tuple(vals.shape), floating=False)
        if idx.is_floating_point() or idx.dtype == torch.bool:
            raise ValueError(f"idx must hold integer latent ids, got dtype {idx.dtype}")
        checks.index(idx, "idx", self.d_sae, "the SAE's d_sae latents")
        return self._scatter(vals, idx.long())

    def _scatter(self, vals: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
        """:meth:`scatter` without the checks (``idx`` from :meth:`encode_topk`)."""
        return torch.zeros(*vals.shape[:-1], self.d_sae, dtype=vals.dtype, device=vals.device).scatter(-1, idx, vals)

    def decode(self, z: torch.Tensor) -> torch.Tensor:
        """``z W_dec + b_dec``: (N, d_sae) -> (N, d_in); ``z`` finite floats (NaN in is refused, never NaN out)."""
        return self._decode(check_activations(z, self.d_sae, "z", width="d_sae"))

    def _decode(self, z: torch.Tensor) -> torch.Tensor:
        """:meth:`decode` of a finite float code (N, d_sae), unchecked."""
        return z.to(self.W_dec.dtype) @ self.W_dec + self.b_dec

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Reconstruction ``x_hat`` (N, d_in)."""
        return self._decode(self._scatter(*self.encode_topk(x)))

    @torch.no_grad()
    def normalize_decoder(self) -> None:
        """Rescale every row of ``W_dec`` to unit L2 norm (the paper's trainer: after every optimiser step)."""
        self.W_dec.div_(self.W_dec.norm(dim=1, keepdim=True).clamp_min(1e-12))


# -- metrics -------------------------------------------------------------------------------------------------------
def fvu_loss(x: torch.Tensor, x_hat: torch.Tensor) -> torch.Tensor:
    """FVU as a differentiable scalar: ``sum ||x - x_hat||^2 / sum ||x - mean(x)||^2`` over the N rows of (N, d).
    ``x`` and ``x_hat``: finite float tensors of one shape with at least one row (no rows: no variance to explain,
    refused rather than a loss of 0)."""
    x, x_hat = checks.tensor(x, "x"), checks.tensor(x_hat, "x_hat")
    if x.ndim < 1 or x.numel() == 0:
        raise ValueError(f"x: FVU needs at least one row of activations, got shape {tuple(x.shape)} (no valid "
                         f"token?)")
    if x.shape != x_hat.shape:
        raise ValueError(f"x_hat: shape {tuple(x_hat.shape)} differs from x's {tuple(x.shape)}")
    x = x.reshape(-1, x.shape[-1])
    x_hat = x_hat.reshape(-1, x.shape[-1])
    total = (x - x.mean(0, keepdim=True)).pow(2).sum()
    return (x - x_hat).pow(2).sum() / total.clamp_min(torch.finfo(x.dtype).tiny)


def fvu(x: torch.Tensor, x_hat: torch.Tensor) -> float:
    """Fraction of variance unexplained (a float); explained variance EV = 1 - FVU. ``ValueError`` when ``x``
    has no variance (FVU is undefined there)."""
    x = checks.tensor(x, "x", finite=False)
    checks.finite(checks.tensor(x_hat, "x_hat", finite=False), "x_hat")        # NaN in: refused, never NaN out
    rows = x.reshape(-1, x.shape[-1]) if x.ndim >= 1 else x.reshape(1, 1)
    # one row, or rows all alike, has no variance: FVU would divide by zero (a silent 0 or 1e38), refused
    if x.ndim < 2 or x.numel() == 0 or not torch.isfinite(x).all() or float(rows.var(0, correction=0).sum()) == 0:
        raise ValueError(f"x: FVU needs finite data (N, d) with some variance over its rows, got shape "
                         f"{tuple(x.shape)}")
    with torch.no_grad():
        return float(fvu_loss(torch.as_tensor(x), torch.as_tensor(x_hat)))


def l0(z: torch.Tensor) -> float:
    """Mean number of active (nonzero) latents per row of a code (N, d_sae)."""
    z = checks.tensor(z, "z", finite=True, floating=False)
    if z.ndim < 1 or z.numel() == 0:
        raise ValueError(f"z must be a non-empty code (N, d_sae), got shape {tuple(z.shape)}")
    return float((z != 0).float().sum(-1).mean())


def dead_latents(z: torch.Tensor) -> torch.Tensor:
    """Bool (d_sae,): latents never active on any row of ``z`` (N, d_sae) (our choice: over the data given)."""
    z = checks.tensor(z, "z", floating=False)
    if z.ndim < 1:
        raise ValueError(f"z must be a code (N, d_sae), got shape {tuple(z.shape)}")
    return ~(z != 0).reshape(-1, z.shape[-1]).any(0)


# -- checkpoints -----------------------------------------------------------------------------------------------------
def save_sae(sae: TopKSAE, path, metadata: dict | None = None) -> Path:
    """Write ``path.safetensors`` (W_enc, W_dec, b_enc, b_dec) and ``path.json`` (config); returns the JSON path."""
    checks.instance(sae, "sae", TopKSAE)
    return checkpoints.save(path, dict(sae.named_parameters()), {"config": asdict(sae.cfg),
                                                                  "metadata": metadata or {}}, format=FORMAT)


def load_sae(path) -> TopKSAE:
    """Load a :func:`save_sae` checkpoint; ValueError naming the file and what differs: another format, a sidecar
    without its ``config`` (or with an unknown or missing field, :func:`compbook.checks.fields`), tensors
    renamed or of another width than the sidecar says (:func:`compbook.checks.sidecar_agrees`), edited values."""
    header = checkpoints.read_header(path, format=FORMAT)
    where = checkpoints.files(path)[0]
    c = checks.from_fields(TopKSAEConfig, checks.mapping(header.get("config"), f"{where}: sidecar field 'config'"),
                           f"{where}: sidecar field 'config'")
    sae = TopKSAE(c.d_in, c.d_sae, c.k, c.seed)
    tensors, _ = checkpoints.load(path, format=FORMAT, names=sae.state_dict(), facts=lambda t: {
        "config.d_in": t["W_enc"].shape[0], "config.d_sae": t["W_enc"].shape[1]})
    sae.load_state_dict(tensors, strict=True)
    return sae
