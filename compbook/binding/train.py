"""Train many small dual encoders at once: stacked weights, ``torch.func.vmap`` (chapter 10, the benchmark).

:class:`DualStack` holds M :class:`~compbook.binding.encoders.DualEncoder` s as stacked parameters (every
tensor has a leading model axis M). One training step evaluates all M losses with ``vmap(functional_call)``
and sums them: Adam(W) is elementwise, so this is exactly M independent trainings, each with its own seed and
its own batches. The LR schedule (linear warm-up, cosine decay) is stepped after every step and recorded.
Model selection keeps, per model, the weights with the best *validation* score; never the test split.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, asdict, field
from pathlib import Path

import numpy as np
import torch
from torch.func import functional_call, stack_module_state, vmap
from tqdm.auto import tqdm

from ..results import checkpoints
from .. import checks, config
from .data import PairData
from .encoders import DualEncoder, EncoderConfig

FORMAT = "compbook-dual-stack/1"



def optimizer_step(opt, sched, loss: torch.Tensor, losses: list, lrs: list) -> None:
    """One step for a stack of models (chapters 10 and 13): ``loss`` (M,) summed and backpropagated, the
    optimizer and the LR schedule stepped (the schedule really is stepped: ``lrs`` records the LR used), and
    the per-model losses appended to ``losses``."""
    opt.zero_grad(set_to_none=True)
    loss.sum().backward()
    opt.step()
    lrs.append(opt.param_groups[0]["lr"])
    sched.step()
    losses.append(loss.detach().cpu().numpy().copy())

@dataclass(frozen=True)
class DualTrainConfig:
    """Training knobs (our choices; CPU mode: one model in about a minute)."""

    steps: int = 800
    batch: int = 128
    lr: float = 2e-3
    weight_decay: float = 0.05
    warmup: int = 50
    swap_negatives: bool = True
    p_full: float = 0.5          # probability of the full caption; else a partial one (one concept per object)
    eval_every: int = 100
    seed: int = 0

    def __post_init__(self):
        for name in ("steps", "batch", "eval_every"):
            checks.integer(getattr(self, name), name)
        checks.integer(self.warmup, "warmup", 0)
        checks.seed(self.seed)
        checks.real(self.lr, "lr", 0, low_open=True)
        checks.real(self.weight_decay, "weight_decay", 0)
        checks.real(self.p_full, "p_full", 0, 1)


class DualStack:
    """M dual encoders with stacked parameters ``params[name]`` of shape (M, ...), on ``device`` (default
    :func:`compbook.config.device`: a GPU in full mode). Inputs may live anywhere; embeddings come back on the
    CPU."""

    def __init__(self, cfg: EncoderConfig, n_models: int = 1, seed: int = 0, params: dict | None = None,
                 device=None):
        checks.instance(cfg, "cfg", EncoderConfig)
        n_models = checks.integer(n_models, "n_models")
        seed = checks.seed(seed)
        if params is None:   # weights, built one model at a time, stacked, then copied: 3 times the stack at peak
            n = n_parameters(cfg)
            checks.check_budget(4.0 * n * (3 * n_models + 2), f"DualStack of {n_models} model(s)")
        self.cfg, self.n_models, self.seed = cfg, n_models, seed
        if params is None:
            models = []
            for m in range(n_models):
                torch.manual_seed(seed * 1000 + m)
                models.append(DualEncoder(cfg))
            params, _ = stack_module_state(models)
        self.device = torch.device(device) if device is not None else config.device()
        self.params = {k: v.detach().to(self.device).clone().requires_grad_(True) for k, v in params.items()}
        self.base = DualEncoder(cfg).to("meta")

    def loss(self, images, ids, swap=None, swap_valid=None) -> torch.Tensor:
        """Per-model losses (M,) for per-model batches: images (M, B, H, W, 3), ids (M, B, L), swap (M, B, L),
        swap_valid (M, B)."""
        if swap is None:
            return vmap(lambda p, x, t: _method_call(self.base, p, "loss", x, t))(self.params, images, ids)
        return vmap(lambda p, x, t, s, v: _method_call(self.base, p, "loss", x, t, s, v))(
            self.params, images, ids, swap, swap_valid)

    @torch.no_grad()
    def encode_images(self, images, chunk: int = 256) -> torch.Tensor:
        """Shared images (N, H, W, 3) float32 in [0, 1] -> (M, N, D) unit embeddings of every model."""
        r = self.cfg.res
        images = checks.tensor(images, "images", (None, r, r, 3), low=0.0, high=1.0)
        if images.dtype != torch.float32:
            raise ValueError(f"images must be float32 (the encoders' weights), got {images.dtype}")
        chunk = checks.integer(chunk, "chunk")
        f = vmap(lambda p, x: _method_call(self.base, p, "encode_image", x), in_dims=(0, None))
        return torch.cat([f(self.params, torch.as_tensor(images[i:i + chunk]).to(self.device)).cpu()
                          for i in range(0, len(images), chunk)], dim=1)

    @torch.no_grad()
    def encode_texts(self, ids, chunk: int = 512) -> torch.Tensor:
        """Shared token ids (N, L <= max_len) in ``0..vocab_size-1`` -> (M, N, D) unit embeddings of every model."""
        ids = checks.tensor(ids, "ids", (None, None), floating=False)
        if ids.is_floating_point() or ids.dtype == torch.bool:
            raise ValueError(f"ids must hold integer token ids, got dtype {ids.dtype}")
        checks.tensor(ids, "ids", low=0, high=self.cfg.vocab_size - 1, floating=False)
        if ids.shape[1] > self.cfg.max_len:
            raise ValueError(f"ids: captions of {ids.shape[1]} tokens, the encoder reads at most "
                             f"max_len={self.cfg.max_len}")
        chunk = checks.integer(chunk, "chunk")
        f = vmap(lambda p, t: _method_call(self.base, p, "encode_text", t), in_dims=(0, None))
        return torch.cat([f(self.params, torch.as_tensor(ids[i:i + chunk]).to(self.device)).cpu()
                          for i in range(0, len(ids), chunk)], dim=1)

    def model(self, m: int) -> DualEncoder:
        """Model m (``0..n_models-1``) as an ordinary DualEncoder (a copy)."""
        m = checks.integer(m, "m", 0, self.n_models - 1)
        net = DualEncoder(self.cfg)
        net.load_state_dict({k: v[m].detach().clone() for k, v in self.params.items()})
        return net

    def save(self, path, metadata: dict | None = None) -> Path:
        """Write ``path.safetensors`` (stacked weights) and ``path.json`` (configs, metadata); returns the JSON."""
        meta = {"encoder": self.cfg.to_dict(), "n_models": self.n_models, "seed": self.seed,
                "metadata": metadata or {}}
        return checkpoints.save(path, {k: v.detach().cpu() for k, v in self.params.items()}, meta, format=FORMAT)

    @classmethod
    def load(cls, path) -> "DualStack":
        """Read a stack written by :meth:`save` (format and tensor names checked)."""
        header = checkpoints.read_header(path, format=FORMAT)
        for key in ("encoder", "n_models", "seed"):
            if key not in header:
                raise ValueError(f"{checkpoints.files(path)[0]}: the sidecar has no {key!r} field (edited?)")
        cfg = EncoderConfig.from_dict(header["encoder"], f"{checkpoints.files(path)[0]} encoder")
        n_models = checks.integer(header["n_models"], "the sidecar's n_models")
        with torch.device("meta"):
            want = DualEncoder(cfg).state_dict()
        tensors, meta = checkpoints.load(path, format=FORMAT, names=set(want))
        for k, v in tensors.items():   # the sidecar says the shapes: name the field that disagrees
            if tuple(v.shape) != (n_models, *want[k].shape):
                raise ValueError(f"{checkpoints.files(path)[1]}: tensor {k!r} has shape {tuple(v.shape)}, the "
                                 f"sidecar's n_models={n_models} and encoder config say "
                                 f"{(n_models, *want[k].shape)}")
        stack = cls(cfg, meta["n_models"], meta["seed"], params=tensors)
        stack.metadata = meta["metadata"]
        return stack


def _method_call(base, params, method, *args):
    """Call ``base.<method>(*args)`` with ``params`` swapped in (functional_call on a method wrapper)."""
    return functional_call(_MethodModule(base, method), {f"m.{k}": v for k, v in params.items()}, args)


class _MethodModule(torch.nn.Module):
    """Wraps one method of a module as ``forward`` so that ``functional_call`` can reach it."""

    def __init__(self, m, method):
        super().__init__()
        self.m, self.method = m, method

    def forward(self, *args):
        return getattr(self.m, self.method)(*args)


def lr_lambda(cfg: DualTrainConfig):
    """Step -> LR factor: linear warm-up over ``warmup`` steps, then cosine decay to 0 at ``steps``."""
    def f(step):
        if step < cfg.warmup:
            return (step + 1) / cfg.warmup
        return 0.5 * (1 + math.cos(math.pi * (step - cfg.warmup) / max(cfg.steps - cfg.warmup, 1)))
    return f


@dataclass
class DualTrainResult:
    """stack: the selected models; losses (steps, M); lrs (steps,) the LR actually used; val (evals, M) the
    validation scores; best_step (M,) the step each model was selected at; seconds."""

    stack: DualStack
    losses: np.ndarray
    lrs: np.ndarray
    val: np.ndarray = field(default_factory=lambda: np.zeros((0,)))
    best_step: np.ndarray = field(default_factory=lambda: np.zeros((0,)))
    seconds: float = 0.0


def _batch(data, idx, gen, cfg):
    """Gather per-model batches: idx (M, B) rows of ``data``; caption variant drawn per item."""
    m, b = idx.shape
    n_var = data.captions.shape[1]
    full = torch.rand(m, b, generator=gen) < cfg.p_full
    var = torch.where(full, 0, torch.randint(1, max(n_var, 2), (m, b), generator=gen).clamp(max=n_var - 1))
    ids = data.captions[idx, var]
    return data.images[idx], ids, data.swap[idx], data.swap_valid[idx] & full


def n_parameters(enc: EncoderConfig) -> int:
    """Number of weights of one dual encoder of ``enc``, counted without allocating them (meta device); a size
    over the memory budget is refused first, from a float estimate (a meta tensor's size may overflow)."""
    checks.instance(enc, "enc", EncoderConfig)
    c1, c2, c3 = (float(ch) for ch in enc.channels)
    w = float(enc.width)
    rough = (48 * c1 + 9 * c1 * c2 + 9 * c2 * c3 + c3 * (enc.res // 16) ** 2 * enc.d_out
             + (enc.vocab_size + enc.max_len) * w + 12 * w * w * enc.layers + w * enc.d_out)
    # the weights and their initialisation's temporaries
    checks.check_budget(8.0 * rough, f"one dual encoder of width={enc.width}, layers={enc.layers}")
    with torch.device("meta"):
        return sum(p.numel() for p in DualEncoder(enc).parameters())


def training_bytes(enc: EncoderConfig, cfg: DualTrainConfig, n_models: int) -> float:
    """Bytes :func:`train_stack` holds (float32): per model the weights, their gradients, AdamW's two moments and
    the best weights kept (5 copies; the stack's build needs 3, before); and one step's batch: the images (3
    copies) and the activations of each image (the CNN's maps, 3 a layer) and of its caption and swap caption
    (16 width + heads x length floats a token per layer), twice (forward and backward)."""
    c1, c2, c3 = (float(c) for c in enc.channels)
    r = float(enc.res)
    image = 3 * 3 * r * r + 2 * 3 * (c1 * (r / 4) ** 2 + c2 * (r / 8) ** 2 + c3 * (r / 16) ** 2)
    text = 2 * 2 * enc.max_len * (16 * enc.width + enc.heads * enc.max_len) * enc.layers
    return 4.0 * n_models * (5 * n_parameters(enc) + cfg.batch * (image + text + 4 * cfg.batch))


def check_pair_data(data, enc: EncoderConfig) -> None:
    """``ValueError`` naming the field unless ``data`` is a non-empty :class:`~compbook.binding.data.PairData`
    that ``enc`` can read: images (N, res, res, 3) finite floats in [0, 1], captions (N, V, L <= max_len), swap
    (N, L) token ids in ``0..vocab_size-1``, swap_valid (N,) bools."""
    checks.instance(data, "data", PairData)
    images = checks.tensor(data.images, "data.images", (None, enc.res, enc.res, 3), low=0.0, high=1.0)
    if images.dtype != torch.float32:
        raise ValueError(f"data.images must be float32 (the encoders' weights), got {images.dtype}")
    n = len(images)
    if n == 0:
        raise ValueError("data.images: no training scenes (N = 0)")
    for name, shape in (("captions", (n, None, None)), ("swap", (n, None))):
        ids = checks.tensor(getattr(data, name), f"data.{name}", shape, floating=False)
        if ids.is_floating_point() or ids.dtype == torch.bool:
            raise ValueError(f"data.{name} must hold integer token ids, got dtype {ids.dtype}")
        checks.tensor(ids, f"data.{name}", low=0, high=enc.vocab_size - 1, floating=False)
        if ids.shape[-1] > enc.max_len:
            raise ValueError(f"data.{name}: captions of {ids.shape[-1]} tokens, the encoder reads at most "
                             f"max_len={enc.max_len}")
    valid = torch.as_tensor(data.swap_valid)
    if valid.dtype != torch.bool or tuple(valid.shape) != (n,):
        raise ValueError(f"data.swap_valid must be ({n},) bools, got {valid.dtype} {tuple(valid.shape)}")


def train_stack(enc: EncoderConfig, cfg: DualTrainConfig, data, n_models: int = 1, val_score=None,
                progress: bool = True) -> DualTrainResult:
    """Train ``n_models`` dual encoders on ``data`` (a :class:`~compbook.binding.data.PairData`) at once.

    Model m starts from seed ``cfg.seed * 1000 + m`` and draws its own batches. ``val_score(stack) -> (M,)``
    (higher is better), called every ``eval_every`` steps and at the end, selects each model's weights.
    """
    checks.instance(enc, "enc", EncoderConfig)
    checks.instance(cfg, "cfg", DualTrainConfig)
    n_models = checks.integer(n_models, "n_models")
    check_pair_data(data, enc)
    if val_score is not None and not callable(val_score):
        raise ValueError(f"val_score must be a function stack -> (M,) scores or None, got {val_score!r:.60}")
    checks.check_budget(training_bytes(enc, cfg, n_models), f"training {n_models} dual encoder(s) of res={enc.res}",
                        device=config.device())
    stack = DualStack(enc, n_models, cfg.seed)
    opt = torch.optim.AdamW(list(stack.params.values()), lr=cfg.lr, weight_decay=cfg.weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_lambda(cfg))
    gen = torch.Generator().manual_seed(cfg.seed)
    n = len(data.images)
    losses, lrs, vals, best = [], [], [], None
    best_params = {k: v.detach().clone() for k, v in stack.params.items()}
    best_step = np.zeros(n_models, int)
    t0 = time.perf_counter()
    for step in tqdm(range(cfg.steps), disable=not progress, desc=f"training {n_models} model(s)"):
        idx = torch.randint(0, n, (n_models, cfg.batch), generator=gen)
        x, ids, swap, valid = (t.to(stack.device) for t in _batch(data, idx, gen, cfg))
        loss = stack.loss(x, ids, swap, valid) if cfg.swap_negatives else stack.loss(x, ids)
        optimizer_step(opt, sched, loss, losses, lrs)
        if val_score is not None and ((step + 1) % cfg.eval_every == 0 or step + 1 == cfg.steps):
            score = np.asarray(val_score(stack), float)
            vals.append(score)
            better = score > (best if best is not None else -np.inf)
            best = score if best is None else np.maximum(best, score)
            keep = torch.as_tensor(better, device=stack.device)
            for k, v in stack.params.items():
                best_params[k][keep] = v.detach()[keep]
            best_step[better] = step + 1
    if val_score is not None:
        with torch.no_grad():
            for k, v in stack.params.items():
                v.copy_(best_params[k])
    return DualTrainResult(stack, np.array(losses), np.array(lrs), np.array(vals), best_step,
                       time.perf_counter() - t0)
