"""S2AE: structured sparsity on image patches, and the SAE trainer (chapter 15).

Facts from the paper and its public trainer:

* Binarise the TopK code with a straight-through estimator: ``Z_hat = bin(Z) + Z - sg(Z)``, ``bin = 1`` where a
  latent is kept by the TopK and positive (:func:`binarize_ste`): the penalties count usage, not magnitude.
* Group profile ``s^g_j = sqrt(mean over the patches of region g of Z_hat[:, j]^2 + 1e-8)``.
* Group sparsity ``GS = mean_g mean_j s^g_j`` (within regions); exclusive sparsity
  ``ES = mean_j (mean_g s^g_j)^2`` (across regions).
* Loss ``FVU + lambda (100 GS + 500 ES)``, ``lambda = 0.01``, the penalties on image patches only;
  ``lambda = 0`` is the vanilla TopK SAE.

:func:`group_sparsity` / :func:`exclusive_sparsity` take one image (the reference API); :func:`batch_penalties`
computes both for a batch of images from the dense codes, and :func:`sparse_penalties` from the TopK's kept
entries only (what the trainer uses: same values and gradients, a fraction of the work). :func:`train_sae` trains
vanilla or S2AE SAEs on the activations of :mod:`compbook.sae.vlm`. Our choices, all parameters of
:class:`SAETrainConfig`: Adam, learning rate, batch of whole images (all their tokens), ``b_dec`` initialised to the
data mean, penalties averaged over images, regions computed once per image (the VLM is frozen; the paper's
trainer recomputes them each step, ``regions_every_step=True``, with the same result).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field

import torch
from tqdm.auto import tqdm

from .. import checks
from ..config import dataclass_text, device
from .regions import SPATIAL_EXPONENT, default_regions, dense_labels, patch_regions
from .topk import TopKSAE, check_activations, fvu_loss

EPS = 1e-8
GS_WEIGHT = 100.0
ES_WEIGHT = 500.0
LAMBDA = 0.01


class _BinarizeSTE(torch.autograd.Function):
    """Forward ``(z > 0)``, backward the identity: the value and gradient of ``bin(z) + z - sg(z)`` in one op."""

    @staticmethod
    def forward(ctx, z):
        return (z > 0).to(z.dtype)

    @staticmethod
    def backward(ctx, grad):
        return grad


def binarize_ste(z: torch.Tensor) -> torch.Tensor:
    """``bin(z) + z - sg(z)``: forward value 1 where ``z > 0`` (kept by TopK, positive), else 0; gradient of ``z``."""
    checks.tensor(z, "z")
    return _BinarizeSTE.apply(z)


def _check_regions(z_hat: torch.Tensor, regions) -> tuple[torch.Tensor, torch.Tensor]:
    """``(z_hat, regions)``: one image's code ``z_hat`` (P, d_sae) of finite floats with at least one patch, and
    its ``regions`` (P,) int labels (any values) as int64 on the code's device."""
    z_hat = checks.tensor(z_hat, "z_hat", (None, None))
    if z_hat.shape[0] == 0:
        raise ValueError(f"z_hat: no image patches to penalise, got shape {tuple(z_hat.shape)}")
    if isinstance(regions, torch.Tensor):
        if regions.is_floating_point() or regions.is_complex() or regions.dtype == torch.bool:
            raise ValueError(f"regions must hold integer region labels, got dtype {regions.dtype}")
        regions = regions.detach().cpu().numpy()
    regions = checks.integers(regions, "regions", ndim=1)
    if regions.shape != tuple(z_hat.shape[:1]):
        raise ValueError(f"regions: expected an int array of shape ({z_hat.shape[0]},), got {regions.shape}")
    return z_hat, torch.from_numpy(regions).to(z_hat.device)


def group_profiles(z_hat: torch.Tensor, regions) -> torch.Tensor:
    """``s^g_j`` (G, d_sae) for one image: ``z_hat`` (P, d_sae), ``regions`` (P,) int labels (any values)."""
    z_hat, regions = _check_regions(z_hat, regions)
    _, inv = torch.unique(regions, return_inverse=True)
    onehot = torch.nn.functional.one_hot(inv).T.to(z_hat.dtype)        # (G, P)
    mean_sq = (onehot @ z_hat.pow(2)) / onehot.sum(1, keepdim=True)
    return torch.sqrt(mean_sq + EPS)


def group_sparsity(z_hat: torch.Tensor, regions) -> torch.Tensor:
    """GS = mean over regions g and latents j of ``s^g_j`` (a scalar tensor with gradients)."""
    return group_profiles(z_hat, regions).mean()


def exclusive_sparsity(z_hat: torch.Tensor, regions) -> torch.Tensor:
    """ES = mean over latents j of ``(mean_g s^g_j)^2`` (a scalar tensor with gradients)."""
    return group_profiles(z_hat, regions).mean(0).pow(2).mean()


def region_labels(regions, shape: tuple, name: str = "regions") -> torch.Tensor:
    """``regions`` (a tensor, array or nested list) as int64 region labels of ``shape`` (B, P), each ``>= 0`` (a
    negative label would wrap to the last region, a fraction be truncated: both refused, naming ``name``),
    renumbered per image to ``0..n-1`` (:func:`compbook.sae.regions.dense_labels`).

    Why renumber: GS and ES read a label only as "these patches of this image share a region" (each image's
    penalty is its own, and an unused label is an absent region, masked out by ``present``), so the penalties
    are the same for any labels of the same partition (tested), while the buffers are sized by the largest
    label: labels up to 10^9 asked for a (B, 10^9, P) one-hot. Renumbered, G <= P."""
    if not isinstance(regions, torch.Tensor):
        regions = torch.as_tensor(checks.integers(regions, name))
    if regions.is_floating_point() or regions.is_complex() or regions.dtype == torch.bool:
        raise ValueError(f"{name} must hold integer region labels, got dtype {regions.dtype}")
    if tuple(regions.shape) != tuple(shape):
        raise ValueError(f"{name}: shape {tuple(regions.shape)}, expected {tuple(shape)}")
    if regions.numel() and int(regions.min()) < 0:
        raise ValueError(f"{name} must be region labels >= 0, got {int(regions.min())}")
    return dense_labels(regions)


def batch_penalties(z_hat: torch.Tensor, regions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """GS and ES of every image of a batch, averaged over the images.

    ``z_hat`` (B, P, d_sae) finite; ``regions`` (B, P) int labels in ``0..G-1`` (a label may be unused in an
    image). Equal to the mean over images of :func:`group_sparsity` / :func:`exclusive_sparsity` (tested).
    """
    z_hat = checks.tensor(z_hat, "z_hat", (None, None, None))
    b, p, _ = z_hat.shape
    if b * p == 0:
        raise ValueError(f"z_hat: no image patches to penalise, got shape {tuple(z_hat.shape)}")
    regions = region_labels(regions, (b, p))
    g, d, e = int(regions.max()) + 1, z_hat.shape[2], z_hat.element_size()
    # the one-hot (int64, then z_hat's dtype), Z_hat^2, and the (B, G, d) sums with _gs_es's four steps on them
    checks.check_budget((8 + e) * b * g * p + e * b * p * d + 6 * e * b * g * d,
                        f"batch_penalties of {b} images x {p} patches in {g} regions x d_sae={d}")
    onehot = torch.nn.functional.one_hot(regions.long(), g).transpose(1, 2).to(z_hat.dtype)   # (B, G, P)
    count = onehot.sum(2, keepdim=True)                                                        # (B, G, 1)
    present = (count > 0).to(z_hat.dtype)
    return _gs_es(torch.bmm(onehot, z_hat.pow(2)) / count.clamp_min(1), present)


def _gs_es(mean_sq: torch.Tensor, present: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """GS and ES averaged over images from ``mean_sq`` (B, G, d) = mean of Z_hat^2 per region; ``present``
    (B, G, 1) is 1 for the regions an image has."""
    s = torch.sqrt(mean_sq + EPS) * present
    n_groups = present.sum(1)                                                                  # (B, 1)
    gs = s.mean(2).sum(1) / n_groups[:, 0]
    es = (s.sum(1) / n_groups).pow(2).mean(1)
    return gs.mean(), es.mean()


# -- training ------------------------------------------------------------------------------------------------------
@dataclass
class SAETrainConfig:
    """How :func:`train_sae` trains (``lam = 0``: vanilla TopK SAE; the paper's S2AE: ``lam = 0.01``)."""
    d_sae: int = 512
    k: int = 16
    lam: float = 0.0
    gs_weight: float = GS_WEIGHT
    es_weight: float = ES_WEIGHT
    n_regions: int | None = None        # None: min(20, patches), the paper's choice
    exponent: float = SPATIAL_EXPONENT
    steps: int = 1000
    batch_images: int = 32
    lr: float = 1e-3
    seed: int = 0
    regions_every_step: bool = False    # True: cluster the batch's images inside each step, as the paper's trainer

    def __str__(self) -> str:
        return dataclass_text(self)       # print(cfg) fits the page

    def __post_init__(self):
        self.seed = checks.seed(self.seed)
        checks.boolean(self.regions_every_step, "regions_every_step")
        d_sae = checks.integer(self.d_sae, "d_sae")
        if not 1 <= checks.integer(self.k, "k", None) <= d_sae:
            raise ValueError(f"k={self.k}: must satisfy 1 <= k <= d_sae={d_sae}")
        for name in ("lam", "gs_weight", "es_weight"):
            checks.real(getattr(self, name), name, 0)
        checks.optional_integer(self.n_regions, "n_regions")
        checks.real(self.exponent, "exponent", 0)
        checks.integer(self.steps, "steps")
        checks.integer(self.batch_images, "batch_images")
        checks.real(self.lr, "lr", 0, low_open=True)
        # one token per image (a floor: fit_sae checks one step's buffers with the data's sizes, step_bytes)
        checks.check_budget(8.0 * d_sae * checks.integer(self.batch_images, "batch_images"), f"d_sae={d_sae}")


@dataclass
class SAEData:
    """Activations for SAE training, one row per image (from :func:`compbook.sae.vlm.extract`).

    ``acts`` (N, T, d); ``valid`` (N, T) bool (False on padding); ``patch_idx`` (P,) positions of the image
    patches (row-major on ``grid``); ``attn`` (N, P, P) image-block attention (mean over layers and heads);
    ``question`` the digest of the model, scenes and layer that made them
    (:func:`compbook.sae.experiment.question_digest`), None when unknown.
    """
    acts: torch.Tensor
    valid: torch.Tensor
    patch_idx: torch.Tensor
    grid: tuple[int, int]
    attn: torch.Tensor | None = None
    question: str | None = None     # what made these activations (experiment.question_digest), when known

    def __post_init__(self):
        if self.question is not None and not re.fullmatch(r"[0-9a-f]{64}", str(self.question)):
            raise ValueError(f"question must be None or the 64 hex digits of "
                             f"compbook.sae.experiment.question_digest, got {self.question!r}")
        self.acts = check_activations(self.acts, checks.tensor(self.acts, "acts", (None, None, None),
                                                               finite=False).shape[-1], "acts", torch.float32)
        if not isinstance(self.valid, torch.Tensor) or self.valid.dtype != torch.bool:
            raise ValueError(f"valid must be a bool tensor (N, T) (False on padding), got "
                             f"{getattr(self.valid, 'dtype', type(self.valid).__name__)}")
        if self.valid.shape != self.acts.shape[:2]:
            raise ValueError(f"valid: shape {tuple(self.valid.shape)}, expected {tuple(self.acts.shape[:2])}")
        n, t = self.valid.shape
        if not isinstance(self.patch_idx, torch.Tensor) or self.patch_idx.is_floating_point():
            checks.integers(self.patch_idx, "patch_idx", ndim=1)       # a fraction is refused, never truncated
        self.patch_idx = torch.as_tensor(checks.index(torch.as_tensor(self.patch_idx).reshape(-1), "patch_idx", t,
                                                      "each image's token sequence")).long()
        rows, cols = (checks.integer(g, "grid", 0) for g in checks.sequence(self.grid, "grid", 2, 2))
        if rows * cols != len(self.patch_idx):
            raise ValueError(f"grid={tuple(self.grid)!r} has {rows * cols} cells for {len(self.patch_idx)} patch "
                             f"positions (patch_idx)")
        self.grid = (rows, cols)
        if self.attn is not None:
            p = len(self.patch_idx)
            self.attn = checks.tensor(self.attn, "attn", (n, p, p))

    @property
    def tokens(self) -> torch.Tensor:
        """All valid tokens (M, d), image patches and text."""
        return self.acts[self.valid]

    def regions(self, n_regions: int | None = None, exponent: float = SPATIAL_EXPONENT) -> torch.Tensor:
        """Region labels (N, P) of every image (batched clustering)."""
        if self.attn is None:
            raise ValueError("attn: SAEData has no attention maps; S2AE needs them for the regions")
        return patch_regions(self.attn, self.grid, n_regions, exponent)


@dataclass
class TrainResult:
    sae: TopKSAE
    losses: list = field(default_factory=list)
    seconds: float = 0.0


def sparse_penalties(vals_hat: torch.Tensor, idx: torch.Tensor, regions: torch.Tensor,
                     d_sae: int) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`batch_penalties` from the TopK's kept entries only: ``vals_hat`` (B, P, k) binarised kept values,
    ``idx`` (B, P, k) their latents in ``0..d_sae-1`` (an id equal to ``d_sae`` would spill into the next
    region's slots: refused, :func:`compbook.checks.index`), ``regions`` (B, P) labels in ``0..G-1``. Same values
    and gradients (the dense code is 0 elsewhere, where the square's gradient is 0), without touching the
    (B, P, d_sae) code."""
    d_sae = checks.integer(d_sae, "d_sae")
    vals_hat = checks.tensor(vals_hat, "vals_hat", (None, None, None))
    b, p, k = vals_hat.shape
    idx = checks.tensor(idx, "idx", (b, p, k), floating=False)
    if idx.is_floating_point() or idx.dtype == torch.bool:
        raise ValueError(f"idx must hold integer latent ids, got dtype {idx.dtype}")
    checks.index(idx, "idx", d_sae, "the SAE's d_sae latents")
    if b * p == 0:
        raise ValueError(f"vals_hat: no image patches to penalise, got shape {tuple(vals_hat.shape)}")
    regions = region_labels(regions, (b, p))
    g, e = int(regions.max()) + 1, vals_hat.element_size()
    # the slots (int64, twice), the kept values squared, and the (B, G, d_sae) sums with _gs_es's steps on them
    checks.check_budget(2 * 8 * b * p * k + e * b * p * k + 6 * e * b * g * d_sae,     # ints: no overflow
                        f"sparse_penalties of {b} images in {g} regions x d_sae={d_sae}")
    return _sparse_penalties(vals_hat, idx.long(), regions, d_sae)


def _sparse_penalties(vals_hat, idx, regions, d_sae):
    """:func:`sparse_penalties` without the checks (the trainer's own TopK indices and regions)."""
    b, p, k = vals_hat.shape
    g = int(regions.max()) + 1
    slot = (regions.long()[:, :, None] * d_sae + idx).reshape(b, -1)                          # (B, P k)
    sums = vals_hat.new_zeros(b, g * d_sae).scatter_add(1, slot, vals_hat.pow(2).reshape(b, -1))
    count = vals_hat.new_zeros(b, g).scatter_add_(1, regions.long(), vals_hat.new_ones(b, p))
    present = (count > 0).to(vals_hat.dtype)[:, :, None]                                     # (B, G, 1)
    return _gs_es(sums.reshape(b, g, d_sae) / count.clamp_min(1)[:, :, None], present)


def s2ae_loss(sae: TopKSAE, x: torch.Tensor, valid: torch.Tensor, patch_idx: torch.Tensor,
              regions: torch.Tensor | None, cfg: SAETrainConfig) -> torch.Tensor:
    """One batch's loss: FVU over all valid tokens, plus ``lam (gs GS + es ES)`` over image patches (B, P).
    ``x`` (B, T, d_in), ``valid`` (B, T) bool with a valid token, ``patch_idx`` (P,) positions in ``0..T-1``,
    ``regions`` (B, P) labels (needed when ``cfg.lam > 0``)."""
    checks.instance(sae, "sae", TopKSAE)
    checks.instance(cfg, "cfg", SAETrainConfig)
    x = check_activations(checks.tensor(x, "x", (None, None, sae.d_in), finite=False), sae.d_in, "x")
    b, t, d = x.shape
    if not isinstance(valid, torch.Tensor) or valid.dtype != torch.bool or tuple(valid.shape) != (b, t):
        raise ValueError(f"valid must be a bool tensor of shape {(b, t)} (False on padding), got "
                         f"{getattr(valid, 'dtype', type(valid).__name__)} {tuple(getattr(valid, 'shape', ()))}")
    if not bool(valid.any()):
        raise ValueError("valid: the batch has no valid token (its loss would be 0 and its biases NaN)")
    patch_idx = torch.as_tensor(checks.index(torch.as_tensor(patch_idx).cpu(), "patch_idx", t, "the batch's tokens"),
                                device=x.device)
    if cfg.lam > 0:
        if regions is None:
            raise ValueError("regions: S2AE (cfg.lam > 0) needs the region labels (B, P) of the batch; got None")
        regions = region_labels(regions, (b, len(patch_idx)))
    return _s2ae_loss(sae, x, valid, patch_idx, regions, cfg)


def _s2ae_loss(sae: TopKSAE, x: torch.Tensor, valid: torch.Tensor, patch_idx: torch.Tensor,
               regions: torch.Tensor | None, cfg: SAETrainConfig) -> torch.Tensor:
    """:func:`s2ae_loss` on arguments it would accept (``regions`` renumbered, :func:`region_labels`), unchecked:
    the training loop's step, whose entry point :func:`fit_sae` checked the data once."""
    b, t, d = x.shape
    vals, idx = sae._encode_topk(x.reshape(b * t, d))
    loss = fvu_loss(x[valid], sae._decode(sae._scatter(vals, idx)).reshape(b, t, d)[valid])
    if cfg.lam > 0:
        vals, idx = vals.reshape(b, t, -1)[:, patch_idx], idx.reshape(b, t, -1)[:, patch_idx]
        gs, es = _sparse_penalties(binarize_ste(vals), idx, regions, sae.d_sae)
        loss = loss + cfg.lam * (cfg.gs_weight * gs + cfg.es_weight * es)
    return loss


def train_sae(data: SAEData, cfg: SAETrainConfig, progress: bool = True) -> TrainResult:
    """Train a TopK SAE (``cfg.lam = 0``) or an S2AE (``cfg.lam > 0``) on ``data``; deterministic given ``cfg.seed``."""
    checks.instance(cfg, "cfg", SAETrainConfig)
    check_data(data, None, cfg.lam > 0)
    sae = TopKSAE(data.acts.shape[-1], cfg.d_sae, cfg.k, seed=cfg.seed)
    with torch.no_grad():
        sae.b_dec.copy_(data.tokens.mean(0))                 # our choice: start b_dec at the data mean
    return fit_sae(sae, data, cfg, progress)


def check_data(data, d_in: int | None = None, needs_attention: bool = False, name: str = "data") -> SAEData:
    """``data`` if it is a non-empty :class:`SAEData` whose tokens have width ``d_in`` (when given), whose patch
    positions lie inside its tokens, with attention maps (N, P, P) when ``needs_attention`` (S2AE's regions)."""
    checks.instance(data, name, SAEData)
    n, t, d = data.acts.shape
    if n == 0:
        raise ValueError(f"{name}.acts: no images (N = 0)")
    empty = torch.nonzero(~data.valid.any(1)).flatten()
    if len(empty):                         # a batch of such images has no token: loss 0, NaN biases
        raise ValueError(f"{name}.valid: {len(empty)} image(s) without a valid token (the first: image "
                         f"{int(empty[0])}); drop them before training")
    if d_in is not None and d != d_in:
        raise ValueError(f"{name}.acts: tokens of width {d}, the SAE reads d_in={d_in}")
    idx = checks.integers(data.patch_idx, f"{name}.patch_idx", 0, t - 1, ndim=1)
    if needs_attention:
        if data.attn is None:
            raise ValueError(f"{name}.attn: S2AE (lam > 0) needs the attention maps for its regions; got None")
        checks.tensor(data.attn, f"{name}.attn", (n, len(idx), len(idx)))
    return data


def step_bytes(cfg: SAETrainConfig, d_in: int, n_images: int, n_tokens: int, n_patches: int) -> float:
    """Bytes one SAE holds while :func:`fit_sae` trains it on ``n_images`` of ``n_tokens`` tokens (``n_patches``
    image patches), float32: its weights' gradients, Adam's two moments and the decoder's renormalisation (4
    copies of the 2 d_in d_sae weights); a batch's activations, codes and reconstructions with autograd's saved
    tensors and their gradients (10 d_in + 6 d_sae floats a token, measured); with ``cfg.lam > 0`` the penalties
    twice over (their backward), and the regions: 7 float64 (P, P) distances an image (region_distance's, then
    average_linkage's copies), for every image at once unless ``cfg.regions_every_step``."""
    b = min(cfg.batch_images, n_images)
    out = 4.0 * (4 * 2 * d_in * cfg.d_sae + b * n_tokens * (10 * d_in + 6 * cfg.d_sae))
    if cfg.lam > 0:
        g = default_regions(cfg.n_regions, n_patches)
        out += 2 * (24.0 * b * n_patches * cfg.k + 24.0 * b * g * cfg.d_sae)
        out += 56.0 * (b if cfg.regions_every_step else n_images) * n_patches ** 2
    return out


def fit_sae(sae: TopKSAE, data: SAEData, cfg: SAETrainConfig, progress: bool = True, schedule=None,
            clip: float | None = None, desc: str = "SAE") -> TrainResult:
    """The training loop of :func:`train_sae` on an initialised ``sae``: Adam at ``cfg.lr`` on seeded batches of
    ``cfg.batch_images`` images, S2AE's penalties when ``cfg.lam > 0``, the decoder renormalised after each step.
    ``schedule(step) -> lr factor`` and gradient-norm ``clip`` are the reference trainer's options
    (:mod:`compbook.sae.studies.refopt`); None (ours): a constant lr, no clipping. Trains on
    :func:`compbook.config.device` (a GPU in full mode where there is one) and returns the SAE on the CPU."""
    checks.instance(sae, "sae", TopKSAE)
    checks.instance(cfg, "cfg", SAETrainConfig)
    check_data(data, sae.cfg.d_in, cfg.lam > 0)
    if (sae.cfg.d_sae, sae.cfg.k) != (cfg.d_sae, cfg.k):
        raise ValueError(f"sae: d_sae={sae.cfg.d_sae}, k={sae.cfg.k} differ from cfg's d_sae={cfg.d_sae}, k={cfg.k}")
    if schedule is not None and not callable(schedule):
        raise ValueError(f"schedule must be a function step -> lr factor or None, got {schedule!r:.60}")
    if clip is not None:
        checks.real(clip, "clip", 0, low_open=True)
    n, p = data.acts.shape[0], len(data.patch_idx)
    dev = device()                                           # cuda in full mode on a GPU, else cpu
    checks.check_budget(step_bytes(cfg, sae.cfg.d_in, n, data.acts.shape[1], p),
                        f"training an SAE of d_sae={cfg.d_sae} on batches of {cfg.batch_images} images", device=dev)
    n_regions = default_regions(cfg.n_regions, p)
    regions = None
    if cfg.lam > 0 and not cfg.regions_every_step:
        # the VLM is frozen: same attention, same regions (renumbered per image once, as each step's would be)
        regions = dense_labels(data.regions(n_regions, cfg.exponent))
    sae.to(dev)
    pidx = data.patch_idx.to(dev)
    opt = torch.optim.Adam(sae.parameters(), lr=cfg.lr)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, schedule) if schedule is not None else None
    g = torch.Generator().manual_seed(cfg.seed)
    res = TrainResult(sae)
    t0 = time.perf_counter()
    for _ in tqdm(range(cfg.steps), disable=not progress, desc=f"{desc} lam={cfg.lam:g}"):
        idx = torch.randint(0, n, (min(cfg.batch_images, n),), generator=g)
        reg = None
        if cfg.lam > 0:
            reg = (dense_labels(patch_regions(data.attn[idx], data.grid, n_regions, cfg.exponent))
                   if cfg.regions_every_step else regions[idx])
        # the data were checked once above (check_data): the step itself checks nothing
        loss = _s2ae_loss(sae, data.acts[idx].to(dev), data.valid[idx].to(dev), pidx,
                          None if reg is None else reg.to(dev), cfg)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if clip is not None:
            torch.nn.utils.clip_grad_norm_(sae.parameters(), clip)
        opt.step()
        if sched is not None:
            sched.step()
        sae.normalize_decoder()
        res.losses.append(loss.item())
    res.seconds = time.perf_counter() - t0
    sae.cpu()                                                # stored and scored on the CPU
    return res
