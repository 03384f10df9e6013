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

from .. import checkpoints, checks

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
            checks.integer(getattr(self, name), name)
        if not 1 <= checks.integer(self.k, "k", None) <= int(self.d_sae):
            raise ValueError(f"k={self.k}: must satisfy 1 <= k <= d_sae={self.d_sae}")
        # W_enc and W_dec in float32, refused before allocating (checks.memory_budget_mb)
        checks.check_budget(2 * self.d_in * self.d_sae * 4, f"a TopK SAE of d_in={self.d_in} x d_sae={self.d_sae}")


def check_activations(x: torch.Tensor, d_in: int, name: str = "x", dtype: torch.dtype | None = None
                      ) -> torch.Tensor:
    """``x`` as a float tensor (..., d_in) (of ``dtype`` when given); ValueError naming ``name`` on a wrong width,
    integer, bool, complex or non-numeric values (activations are floats: ints are likely token ids) or NaN/inf.
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
        raise ValueError(f"{name}: last dimension is {tuple(x.shape)[-1:] or 'missing'}, expected width d_in={d_in}")
    if not torch.isfinite(x).all():
        raise ValueError(f"{name}: contains NaN or infinite activations")
    return x


class TopKSAE(nn.Module):
    """TopK SAE ``TopKSAE(d_in, d_sae, k, seed=0)``: ``encode (N, d_in) -> (N, d_sae)``, ``decode``, ``forward``."""

    def __init__(self, d_in: int, d_sae: int, k: int, seed: int = 0):
        super().__init__()
        self.cfg = TopKSAEConfig(int(d_in), int(d_sae), int(k), int(seed))
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

    def pre_acts(self, x: torch.Tensor) -> torch.Tensor:
        """``ReLU((x - b_dec) W_enc + b_enc)``: (N, d_in) -> (N, d_sae), before the TopK."""
        x = check_activations(x, self.d_in).to(self.W_enc.dtype)
        return torch.relu((x - self.b_dec) @ self.W_enc + self.b_enc)

    def encode_topk(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The kept values and their latent indices, both (N, k) (a value may be 0: ReLU before TopK)."""
        return self.pre_acts(x).topk(self.k, dim=-1, sorted=False)

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        """Sparse code (N, d_sae): the top ``k`` of the ReLU'd pre-activations, zeros elsewhere."""
        vals, idx = self.encode_topk(x)
        return self.scatter(vals, idx)

    def scatter(self, vals: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
        """Dense code (N, d_sae) from :meth:`encode_topk`'s values and indices."""
        return torch.zeros(*vals.shape[:-1], self.d_sae, dtype=vals.dtype, device=vals.device).scatter(-1, idx, vals)

    def decode(self, z: torch.Tensor) -> torch.Tensor:
        """``z W_dec + b_dec``: (N, d_sae) -> (N, d_in)."""
        z = torch.as_tensor(z)
        if z.ndim < 1 or z.shape[-1] != self.d_sae:
            raise ValueError(f"z: last dimension is {tuple(z.shape)[-1:]}, expected d_sae={self.d_sae}")
        return z @ self.W_dec + self.b_dec

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Reconstruction ``x_hat`` (N, d_in)."""
        return self.decode(self.encode(x))

    @torch.no_grad()
    def normalize_decoder(self) -> None:
        """Rescale every row of ``W_dec`` to unit L2 norm (the paper's trainer: after every optimiser step)."""
        self.W_dec.div_(self.W_dec.norm(dim=1, keepdim=True).clamp_min(1e-12))


# -- metrics -------------------------------------------------------------------------------------------------------
def fvu_loss(x: torch.Tensor, x_hat: torch.Tensor) -> torch.Tensor:
    """FVU as a differentiable scalar: ``sum ||x - x_hat||^2 / sum ||x - mean(x)||^2`` over the N rows of (N, d)."""
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
    checks.tensor(x_hat, "x_hat", finite=False)
    if x.numel() == 0 or not torch.isfinite(x).all() or float(x.reshape(-1, x.shape[-1]).var(0).sum()) == 0:
        raise ValueError(f"x: FVU needs finite data with some variance, got shape {tuple(x.shape)}")
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
    """Load a :func:`save_sae` checkpoint; ValueError on a wrong format or missing/misshapen tensors."""
    tensors, cfg = checkpoints.load(path, format=FORMAT)
    c = cfg["config"]
    sae = TopKSAE(c["d_in"], c["d_sae"], c["k"], c.get("seed", 0))
    try:
        sae.load_state_dict(tensors, strict=True)
    except RuntimeError as e:
        raise ValueError(f"{path}.safetensors: does not match its config ({e})") from e
    return sae
