"""Controlled dual encoders on the symbolic track, many trained at once (chapter 13, "Coverage and multiplicative
binding").

The paper's controlled models (fact): a scene encoder reads a token scene ``[soo, c0 v, c1 v, ..., eoo] * n +
[eos]`` (:class:`compbook.binding.symbolic.SymbolicTokens`), a query encoder reads one object ``[soo, values,
eoo]``; both are transformers scored by cosine similarity with a learned temperature, trained contrastively with
*swap negatives* (objects that recombine the scene's own concept values). Trained at a coverage rho, they are
asked to recognise scenes of objects they never saw.

Our choices (parameters of :class:`ControlledConfig`): two-object scenes; pre-LayerNorm blocks without affine
LayerNorm weights; mean pooling over non-pad tokens; a scene-to-object InfoNCE in which each present object is
scored against every batch object absent from the scene, including all ``2^C - 2`` swaps of the scene's two
objects; CPU-mode sizes small enough that a 50-model sweep fits in minutes.

Batching: every weight has a leading model axis ``M``; one forward pass is a handful of batched ``einsum`` s for
all M models, each with its own initialisation, its own train split (coverage) and its own batches. AdamW is
elementwise, so minimising the sum of the M losses trains M independent models. The LR schedule (linear warm-up,
cosine decay) is stepped every step and recorded. Model selection keeps, per model, the weights with the best
*validation* object recognition (validation scenes of train objects, train objects as candidates); the test
split is never touched during training (:func:`train_controlled` does not receive it).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

from .. import checks, config
from ..config import ModeConfig
from . import paper
from .splits import CoverageSplit
from .symbolic import SymbolicTokens
from .recognition import TIE, recognise
from .train import optimizer_step


@dataclass(frozen=True)
class ControlledConfig(ModeConfig):
    """Architecture and training of one controlled model (defaults: CPU mode, our choice). ``FULL``: the
    released models' shape (6 layers x 256, 512-d output; |O| = 50^3 = 125,000 at C = 3)."""

    FULL = dict(n_values=50, d_model=paper.figure("released_recipe")["d_model"],
                n_layers=paper.figure("released_recipe")["n_layers"], n_heads=8, d_out=paper.figure("d_out"),
                steps=20000, batch=256, lr=5e-4, warmup=1000, eval_every=1000, eval_scenes=1024)
    # the smoke also narrows the model (CONTRIBUTING.md's smoke table): encoding the 100,000 train objects of
    # |O| = 125,000 with the released 6 x 256 model takes minutes on a CPU at every evaluation
    SMOKE = dict(steps=8, batch=16, warmup=2, eval_every=4, eval_scenes=32, d_model=32, n_layers=1)
    SUBSET = dict(steps=5000)   # a GPU session (COMPBOOK_FULL_SUBSET=1): a quarter of the steps

    n_concepts: int = 3
    n_values: int = 5
    d_model: int = 32
    n_layers: int = 1
    n_heads: int = 4
    d_out: int = 32
    steps: int = 1200
    batch: int = 32
    lr: float = 3e-3
    warmup: int = 100
    weight_decay: float = 0.01
    eval_every: int = 400
    eval_scenes: int = 128
    n_swaps: int = 6             # swap negatives per scene per step (of the 2^C - 2; 6 = all at C = 3)
    pool: str = "mean"           # "mean" over non-pad tokens, or "last" (the last non-pad token, as released)
    pos_scale: float = 0.1       # init std of the learned position embeddings (token embeddings: 0.1)
    shared: bool = False         # one transformer reads scenes and queries (query = a one-object sequence)
    scale_init: float = 10.0     # learned inverse temperature: initial value and cap
    scale_max: float = 100.0
    object_attention: bool = False   # ablation: layer 0's tokens attend only within their own object

    def __post_init__(self):
        if self.pool not in ("mean", "last"):
            raise ValueError(f"pool={self.pool!r}: must be 'mean' or 'last'")
        for name in ("n_concepts", "n_values", "d_model", "n_layers", "n_heads", "d_out", "steps", "batch",
                     "eval_every", "eval_scenes", "n_swaps"):
            checks.integer(getattr(self, name), name, 0 if name == "n_swaps" else 1)
        checks.integer(self.warmup, "warmup", 0)
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model={self.d_model} must be divisible by n_heads={self.n_heads}")
        checks.real(self.lr, "lr", 0, low_open=True)
        checks.real(self.weight_decay, "weight_decay", 0)
        checks.real(self.pos_scale, "pos_scale", 0)
        checks.real(self.scale_init, "scale_init", 0, low_open=True)
        checks.real(self.scale_max, "scale_max", self.scale_init)

    @property
    def tokens(self) -> SymbolicTokens:
        return SymbolicTokens(self.n_concepts, self.n_values)


# ---------------------------------------------------------------- stacked transformer encoders

def _encoder_shapes(cfg: ControlledConfig, n_pos: int) -> dict:
    d, h = cfg.d_model, 4 * cfg.d_model
    shapes = {"embed": (cfg.tokens.vocab_size, d), "pos": (n_pos, d), "out": (d, cfg.d_out)}
    for l in range(cfg.n_layers):
        shapes.update({f"l{l}.qkv": (d, 3 * d), f"l{l}.proj": (d, d), f"l{l}.fc1": (d, h), f"l{l}.b1": (h,),
                       f"l{l}.fc2": (h, d), f"l{l}.b2": (d,)})
    return shapes


def scene_encoder_parameters(cfg: ControlledConfig) -> int:
    """Chapter 13: the number of parameters of one scene encoder of ``cfg`` (its token table, positions,
    transformer layers and output map), as :func:`init_params` builds it; no weights are made."""
    checks.instance(cfg, "cfg", ControlledConfig)
    shapes = _encoder_shapes(cfg, 2 * (cfg.n_concepts + 2) + 1)
    return sum(math.prod(shape) for shape in shapes.values())


def init_params(cfg: ControlledConfig, n_models: int, seeds) -> dict:
    """Stacked parameters ``{"scene.*"|"query.*": (M, ...)}`` plus ``"log_scale" (M,)``; model m from seeds[m]."""
    checks.instance(cfg, "cfg", ControlledConfig)
    n_models = checks.integer(n_models, "n_models")
    check_training_size(cfg, n_models)
    seeds = checks.integers(seeds, "seeds", 0, ndim=1).tolist()
    if len(seeds) != n_models:
        raise ValueError(f"seeds: {len(seeds)} seeds for {n_models} models")
    n_scene = 2 * (cfg.n_concepts + 2) + 1
    shapes = {f"scene.{k}": s for k, s in _encoder_shapes(cfg, n_scene).items()}
    if not cfg.shared:
        shapes.update({f"query.{k}": s for k, s in _encoder_shapes(cfg, cfg.n_concepts + 2).items()})
    per_model = []
    for seed in seeds:
        g = torch.Generator().manual_seed(int(seed))
        p = {}
        for name, shape in shapes.items():
            if name.endswith((".b1", ".b2")):
                p[name] = torch.zeros(shape)
            elif name.endswith("embed"):
                p[name] = 0.1 * torch.randn(shape, generator=g)
            elif name.endswith("pos"):
                p[name] = cfg.pos_scale * torch.randn(shape, generator=g)
            else:   # fan-in scaled
                p[name] = torch.randn(shape, generator=g) / math.sqrt(shape[0])
        p["log_scale"] = torch.tensor(math.log(cfg.scale_init))
        per_model.append(p)
    return {k: torch.stack([p[k] for p in per_model]).requires_grad_(True) for k in per_model[0]}


def _weights_of(params: dict, prefix: str, cfg: ControlledConfig) -> dict:
    prefix = "scene" if cfg.shared else prefix
    return {k[len(prefix) + 1:]: v for k, v in params.items() if k.startswith(prefix + ".")}


def _embed(p: dict, tokens: torch.Tensor) -> torch.Tensor:
    """Token + position embeddings (M, N, T, d) of tokens (M, N, T)."""
    M, N, T = tokens.shape
    return p["embed"][torch.arange(M)[:, None, None], tokens] + p["pos"][:, None, :T]


def _attention_inputs(p: dict, x: torch.Tensor, l: int, cfg: ControlledConfig):
    """Layer ``l``'s heads ``q, k, v`` (M, N, H, T, d/H) from the residual stream x (M, N, T, d)."""
    M, N, T, d = x.shape
    y = F.layer_norm(x, (d,))
    q, k, v = torch.einsum("mntd,mde->mnte", y, p[f"l{l}.qkv"]).split(d, dim=-1)
    return (t.reshape(M, N, T, cfg.n_heads, d // cfg.n_heads).transpose(2, 3) for t in (q, k, v))


def _block(p: dict, x: torch.Tensor, l: int, keep: torch.Tensor, cfg: ControlledConfig) -> torch.Tensor:
    """One pre-LayerNorm block (attention over non-pad keys, then the MLP) on x (M, N, T, d)."""
    M, N, T, d = x.shape
    q, k, v = _attention_inputs(p, x, l, cfg)
    a = F.scaled_dot_product_attention(q, k, v, attn_mask=_attention_mask(keep, l, cfg))
    x = x + torch.einsum("mntd,mde->mnte", a.transpose(2, 3).reshape(M, N, T, d), p[f"l{l}.proj"])
    y = F.layer_norm(x, (d,))
    y = F.gelu(torch.einsum("mntd,mdh->mnth", y, p[f"l{l}.fc1"]) + p[f"l{l}.b1"][:, None, None])
    return x + torch.einsum("mnth,mhd->mntd", y, p[f"l{l}.fc2"]) + p[f"l{l}.b2"][:, None, None]


def _attention_mask(keep: torch.Tensor, l: int, cfg: ControlledConfig) -> torch.Tensor:
    """Which keys each query may see (M, N, 1, T|1, T): the non-pad ones; with ``object_attention``, at layer 0
    only those of the query's own object (the closing eos sees every token)."""
    mask = keep[:, :, None, None, :]
    if cfg.object_attention and l == 0:
        T = keep.shape[-1]
        obj = torch.arange(T) // (cfg.n_concepts + 2)
        own = (obj[:, None] == obj[None, :]) | (obj[:, None] >= 2)      # (T, T); the eos row sees all
        mask = mask & own
    return mask


def params_device(params: dict) -> torch.device:
    """Where a stack's parameters live (tokens are moved there; results come back to the CPU for numpy)."""
    return next(iter(params.values())).device


def encode(params: dict, prefix: str, tokens: torch.Tensor, cfg: ControlledConfig) -> torch.Tensor:
    """Stacked encoder ``prefix`` ("scene"/"query") on tokens (M, N, T) -> unit embeddings (M, N, d_out), on the
    parameters' device."""
    p = _weights_of(params, prefix, cfg)
    tokens = tokens.to(params_device(params))
    M, N, T = tokens.shape
    keep = tokens != cfg.tokens.pad                                     # (M, N, T)
    x = _embed(p, tokens)
    d = cfg.d_model
    for l in range(cfg.n_layers):
        x = _block(p, x, l, keep, cfg)
    if cfg.pool == "last":
        last = keep.sum(2, keepdim=True).clamp(min=1) - 1                # (M, N, 1)
        pooled = F.layer_norm(x.gather(2, last[..., None].expand(M, N, 1, d))[:, :, 0], (d,))
    else:
        w = keep.unsqueeze(-1).to(x.dtype)
        pooled = F.layer_norm((x * w).sum(2) / w.sum(2).clamp(min=1), (d,))
    return F.normalize(torch.einsum("mnd,mde->mne", pooled, p["out"]), dim=-1)


#: bytes of one chunk's activations in :func:`embed` (our choice: a few hundred MiB, so that |O| = 125,000
#: candidates of the released 6 x 256 model encode within a T4's memory, and a CPU's)
EMBED_CHUNK_BYTES = 256 * 2 ** 20


@torch.no_grad()
def embed(params: dict, prefix: str, tokens: torch.Tensor, cfg: ControlledConfig) -> torch.Tensor:
    """:func:`encode` for reading, not training: tokens (M, N, T) -> embeddings (M, N, d_out) on the CPU, encoded
    in chunks of N whose activations (the MLP's 4 d_model per token) fit :data:`EMBED_CHUNK_BYTES`: every object
    of a 125,000-object space is encoded without holding all their activations at once."""
    M, N, T = tokens.shape
    per_item = 4.0 * M * T * 4 * cfg.d_model
    chunk = max(1, int(EMBED_CHUNK_BYTES // per_item))
    return torch.cat([encode(params, prefix, tokens[:, i:i + chunk], cfg).cpu() for i in range(0, max(N, 1), chunk)],
                     dim=1)



@torch.no_grad()
def scene_embeddings(params, cfg: ControlledConfig, scenes) -> np.ndarray:
    """Scene embeddings (M, S, D) of each model for its scenes (M, S, 2)."""
    return embed(params, "scene", scene_tokens(cfg, scenes), cfg).numpy()

@torch.no_grad()
def scene_attention(params: dict, cfg: ControlledConfig, scenes, layer: int = 0) -> np.ndarray:
    """The scene encoder's attention weights at ``layer`` (M, H, T, T), averaged over scenes (M, S, 2):
    row t is where token t looks (chapter 13: by object or by concept?)."""
    if not 0 <= layer < cfg.n_layers:
        raise ValueError(f"layer={layer!r}: the model has layers 0..{cfg.n_layers - 1}")
    p = _weights_of(params, "scene", cfg)
    tokens = scene_tokens(cfg, scenes).to(params_device(params))
    x = _embed(p, tokens)
    keep = tokens != cfg.tokens.pad
    for l in range(layer):
        x = _block(p, x, l, keep, cfg)
    q, k, _ = _attention_inputs(p, x, layer, cfg)
    logits = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    return torch.softmax(logits.masked_fill(~_attention_mask(keep, layer, cfg), -torch.inf), -1).mean(1).cpu().numpy()


def own_object_attention(attn: np.ndarray, cfg: ControlledConfig) -> np.ndarray:
    """From :func:`scene_attention` (M, H, T, T): per model and head (M, H), the share of each value token's
    attention to the *other value tokens* that goes to its own object's (0.5 = blind to objects; 1 = only its
    own object, what binding by attention needs)."""
    C = cfg.n_concepts
    own, other = np.zeros(attn.shape[:2]), np.zeros(attn.shape[:2])
    for o in (0, 1):
        vals = [o * (C + 2) + 1 + c for c in range(C)]
        others = [(1 - o) * (C + 2) + 1 + c for c in range(C)]
        for t in vals:
            own += attn[..., t, [u for u in vals if u != t]].sum(-1) / (C - 1)
            other += attn[..., t, others].sum(-1) / C
    return own / (own + other)


def scene_tokens(cfg: ControlledConfig, scenes) -> torch.Tensor:
    """Object-id scenes (..., 2) -> token scenes (..., 2*(C+2)+1), as ``SymbolicTokens.encode`` (vectorised)."""
    return _scene_tokens(cfg, _checked_scenes(cfg, scenes))


def _checked_scenes(cfg: ControlledConfig, scenes) -> np.ndarray:
    """``scenes`` as an int array (..., 2) of object ids in range; else ``ValueError``."""
    s = checks.integers(scenes, "scenes", 0, cfg.tokens.space.n_objects - 1, min_size=1)
    if s.ndim < 1 or s.shape[-1] != 2:
        raise ValueError(f"scenes must be two-object scenes (..., 2), got shape {s.shape}")
    return s


def _scene_tokens(cfg: ControlledConfig, s: np.ndarray) -> torch.Tensor:
    """:func:`scene_tokens` of checked scenes (the training step's: no check per step)."""
    objs = _object_tokens(cfg, s).flatten(-2)                           # (..., 2*(C+2))
    return torch.cat([objs, torch.full((*s.shape[:-1], 1), cfg.tokens.eos)], dim=-1)


def object_tokens(cfg: ControlledConfig, objects) -> torch.Tensor:
    """Object ids (...) -> query tokens (..., C+2): ``[soo, values, eoo]`` (a one-object scene without eos)."""
    o = checks.integers(objects, "objects", 0, cfg.tokens.space.n_objects - 1, min_size=1)
    checks.check_budget(8.0 * 4 * o.size * (cfg.n_concepts + 2), f"query tokens of {o.size:,} objects")
    return _object_tokens(cfg, o)


def _object_tokens(cfg: ControlledConfig, o: np.ndarray) -> torch.Tensor:
    """:func:`object_tokens` of checked ids (the training step's: no check per step)."""
    vals = cfg.tokens.space.object_values(o.reshape(-1)).reshape(-1, cfg.n_concepts)
    body = vals + np.arange(cfg.n_concepts) * cfg.n_values
    toks = np.concatenate([np.full((len(body), 1), cfg.tokens.soo), body, np.full((len(body), 1), cfg.tokens.eoo)], 1)
    return torch.as_tensor(toks).reshape(*o.shape, -1)


def swaps(cfg: ControlledConfig, scenes) -> np.ndarray:
    """Two-object scenes (..., 2) -> (..., 2^C) ids of every object taking each concept from either object
    (the two present objects and their ``2^C - 2`` swaps; duplicates where the objects share values)."""
    s = np.asarray(scenes)
    if s.ndim < 1 or s.shape[-1] != 2:
        raise ValueError(f"scenes must be two-object scenes (..., 2), got shape {s.shape}")
    space = cfg.tokens.space
    a, b = space.object_values(s[..., 0].reshape(-1)), space.object_values(s[..., 1].reshape(-1))
    bits = np.array(list(np.ndindex(*(2,) * cfg.n_concepts)), bool)    # (2^C, C)
    combos = np.where(bits[None], b[:, None], a[:, None])               # (N, 2^C, C)
    return space.object_id(combos.reshape(-1, cfg.n_concepts)).reshape(*s.shape[:-1], len(bits))


# ---------------------------------------------------------------- loss, selection, training

def query_embeddings(params, cfg: ControlledConfig, qids: np.ndarray) -> torch.Tensor:
    """Query embeddings (M, Q, D) of object ids (M, Q). A query depends on its object only, so when the space
    has no more objects than Q (|O| = 125 with 256 queries a step) every object is encoded once and the rows
    gathered: the same embeddings for a fraction of the work."""
    qids = checks.integers(qids, "qids", 0, cfg.tokens.space.n_objects - 1, ndim=2, min_size=1)
    return _query_embeddings(params, cfg, qids)


def _query_embeddings(params, cfg: ControlledConfig, qids: np.ndarray) -> torch.Tensor:
    """:func:`query_embeddings` of checked ids (the training step's)."""
    M, Q = qids.shape
    n_obj = cfg.tokens.space.n_objects
    if n_obj > Q:
        return encode(params, "query", _object_tokens(cfg, qids), cfg)
    every = encode(params, "query", _object_tokens(cfg, np.tile(np.arange(n_obj), (M, 1))), cfg)
    idx = torch.as_tensor(qids, dtype=torch.long, device=every.device)[..., None].expand(M, Q, every.shape[-1])
    return every.gather(1, idx)


def contrastive_loss(params, cfg: ControlledConfig, scenes: np.ndarray, swap_pick=None) -> torch.Tensor:
    """Scenes (M, B, 2) object ids -> per-model loss (M,): each present object against every absent batch
    object for its scene, InfoNCE with the model's learned temperature. The queries are the batch's present
    objects plus, per scene, the swaps ``swap_pick`` (M, B, n) indexes into :func:`swaps` (default: all).
    The arguments are checked here; the training step calls ``_contrastive_loss`` on its own draws."""
    scenes = _checked_scenes(cfg, scenes)
    if scenes.ndim != 3:
        raise ValueError(f"scenes must have shape (M, B, 2), got {scenes.shape}")
    if swap_pick is not None:
        swap_pick = checks.integers(swap_pick, "swap_pick", 0, 2 ** cfg.n_concepts - 1, ndim=3)
        if swap_pick.shape[:2] != scenes.shape[:2]:
            raise ValueError(f"swap_pick has shape {swap_pick.shape}, scenes {scenes.shape}: need (M, B, n)")
    return _contrastive_loss(params, cfg, scenes, swap_pick)


def _contrastive_loss(params, cfg: ControlledConfig, scenes: np.ndarray, swap_pick=None) -> torch.Tensor:
    """:func:`contrastive_loss` of checked scenes and picks (one training step: no check per step)."""
    M, B, _ = scenes.shape
    sw = swaps(cfg, scenes)
    if swap_pick is not None:
        sw = np.take_along_axis(sw, swap_pick, axis=-1)
    qids = np.concatenate([scenes, sw], axis=-1).reshape(M, -1)         # (M, Q) includes the present objects
    z = encode(params, "scene", _scene_tokens(cfg, scenes), cfg)       # (M, B, D)
    q = _query_embeddings(params, cfg, qids)                            # (M, Q, D)
    scale = params["log_scale"].clamp(max=math.log(cfg.scale_max)).exp()[:, None, None]
    logits = scale * torch.einsum("mbd,mqd->mbq", z, q)
    s, qi = torch.as_tensor(scenes, device=logits.device), torch.as_tensor(qids, device=logits.device)
    pos = (qi[:, None, :] == s[:, :, :1]) | (qi[:, None, :] == s[:, :, 1:])   # (M, B, Q)
    neg_lse = torch.logsumexp(logits.masked_fill(pos, -torch.inf), dim=-1, keepdim=True)
    per_pos = -logits + torch.logaddexp(logits, neg_lse)
    return (per_pos * pos).sum((1, 2)) / pos.sum((1, 2))


@torch.no_grad()
def object_recognition(params, cfg: ControlledConfig, scenes, candidates, n_scenes=None) -> np.ndarray:
    """Object recognition accuracy (M,) of each model on its scenes (M, S, 2) against its candidate objects
    (M, K) ids (must hold every present object): :func:`compbook.binding.recognise` per model, over the first
    ``n_scenes[m]`` scenes (default all; padded rows are ignored)."""
    scenes, candidates = np.asarray(scenes), np.asarray(candidates)
    n_scenes = [scenes.shape[1]] * len(scenes) if n_scenes is None else n_scenes
    z = embed(params, "scene", scene_tokens(cfg, scenes), cfg)
    q = embed(params, "query", object_tokens(cfg, candidates), cfg)
    out = []
    for m, n in enumerate(n_scenes):
        s, c = scenes[m, :n], candidates[m]
        pos = (c[None, :] == s[:, :1]) | (c[None, :] == s[:, 1:])
        out.append(recognise(z[m, :n], q[m], pos).mean())
    return np.array(out)


def subsample(rows: np.ndarray, n: int, seed: int) -> np.ndarray:
    """A fixed, seeded subset of at most ``n`` scenes (the same at every evaluation)."""
    n = checks.integer(n, "n", 1)
    if len(rows) <= n:
        return rows
    return rows[np.sort(np.random.default_rng(seed).choice(len(rows), n, replace=False))]


def _padded(arrays) -> np.ndarray:
    """Ragged (N_m, ...) arrays -> (M, max N, ...) by repeating each one's rows cyclically."""
    n = max(len(a) for a in arrays)
    return np.stack([a[np.arange(n) % len(a)] for a in arrays])


@dataclass
class ControlledResult:
    """params: the selected models (stacked); losses (steps, M); lrs (steps,); val (evals, M) validation
    object recognition; best_step (M,); seconds."""

    params: dict
    losses: np.ndarray
    lrs: np.ndarray
    val: np.ndarray
    best_step: np.ndarray
    seconds: float = 0.0
    seeds: list = field(default_factory=list)


def _split_parts(split: CoverageSplit):
    """The three parts training may see: train scenes, validation scenes, train objects (never ``split.test``)."""
    return np.asarray(split.train), np.asarray(split.val), np.asarray(split.train_objects)


def training_bytes(cfg: ControlledConfig, n_models: int = 1) -> float:
    """Bytes a stack of ``n_models`` holds while it trains (float32): the weights, their initial draw, the best
    weights kept, the gradients and AdamW's two moments (6 copies); one step's activations at ``cfg.batch``
    (16 d_model floats per token per layer and the attention probabilities, twice: forward and backward); and
    an evaluation's embeddings of its scenes and of every object as a candidate (no gradients)."""
    n_scene, n_query = 2 * (cfg.n_concepts + 2) + 1, cfg.n_concepts + 2
    n_weights = sum(math.prod(s) for s in _encoder_shapes(cfg, n_scene).values()) * (1 if cfg.shared else 2)

    def acts(n_seqs, length):      # one batch of sequences through every layer
        return n_seqs * length * (16 * cfg.d_model + 2 * cfg.n_heads * length) * cfg.n_layers

    train = acts(cfg.batch, n_scene) + acts(cfg.batch * (2 + cfg.n_swaps), n_query)
    evaluation = acts(cfg.eval_scenes, n_scene) + acts(cfg.tokens.space.n_objects, n_query)
    return 4.0 * n_models * (6 * n_weights + 2 * train + evaluation)


def check_training_size(cfg: ControlledConfig, n_models: int, device=None) -> None:
    """Refuse (``checks.check_budget``) a stack whose weights (with gradients and AdamW's moments) and one step's
    activations (:func:`training_bytes`) would not fit in memory, before anything is allocated."""
    n_models = checks.integer(n_models, "n_models")
    checks.check_budget(training_bytes(cfg, n_models), f"training {n_models} controlled model(s)",
                        device=config.device() if device is None else device)


def _check_split(split, cfg: ControlledConfig, m: int):
    """The parts of ``splits[m]`` training reads (:func:`_split_parts`), checked: a :class:`CoverageSplit` with
    train and validation scenes (S, 2) and train objects, every id an object of ``cfg``'s space."""
    checks.instance(split, f"splits[{m}]", CoverageSplit)
    n_obj = cfg.n_values ** cfg.n_concepts
    parts = _split_parts(split)
    for name, part, ndim in zip(("train", "val", "train_objects"), parts, (2, 2, 1)):
        checks.integers(part, f"splits[{m}].{name}", 0, n_obj - 1, ndim=ndim, min_size=1)
        if ndim == 2 and part.shape[1] != 2:
            raise ValueError(f"splits[{m}].{name} must be two-object scenes (S, 2), got shape {part.shape}")
    return parts


def _draw_batch(gens, n_train: torch.Tensor, cfg: ControlledConfig) -> tuple[np.ndarray, np.ndarray]:
    """One step's draws, model m's from its own generator ``gens[m]``: train-scene rows (M, B) below
    ``n_train[m]`` and swap picks (M, B, n_swaps) in 1..2^C - 2 (the present objects are 0 and 2^C - 1)."""
    u = torch.stack([torch.rand(cfg.batch, generator=g) for g in gens])
    idx = (u * n_train[:, None]).long().numpy()
    v = torch.stack([torch.rand(cfg.batch, cfg.n_swaps, generator=g) for g in gens])
    return idx, 1 + (v * (2 ** cfg.n_concepts - 2)).long().numpy()


def train_controlled(cfg: ControlledConfig, splits, seeds, progress: bool = True, device=None) -> ControlledResult:
    """Train one model per (split, seed) pair at once: ``splits`` and ``seeds`` are equal-length lists.

    Model m trains on ``splits[m].train`` with init and batches from ``seeds[m]`` (its own random stream: a model
    trained in a stack of one, or beside any others, sees the same batches; on a CPU at one thread it ends with
    the same weights, bit for bit); every ``eval_every`` steps (and at the end) its validation object
    recognition (``splits[m].val`` scenes, candidates: its train objects) selects its weights. The test split
    is never read here. ``device``: where the stack trains (default ``config.device()``, a GPU in full mode).
    """
    checks.instance(cfg, "cfg", ControlledConfig)
    splits = checks.sequence(splits, "splits")
    seeds = checks.integers(seeds, "seeds", 0, ndim=1).tolist()
    if len(splits) != len(seeds):
        raise ValueError(f"splits, seeds: need equal, non-zero lengths, got {len(splits)} and {len(seeds)}")
    M = len(splits)
    device = config.device() if device is None else checks.torch_device(device, "device")
    check_training_size(cfg, M, device)
    parts = [_check_split(s, cfg, m) for m, s in enumerate(splits)]
    train = _padded([p[0] for p in parts])
    n_train = torch.as_tensor([len(p[0]) for p in parts])
    val_rows = [subsample(p[1], cfg.eval_scenes, s) for p, s in zip(parts, seeds)]
    val, n_val = _padded(val_rows), [len(v) for v in val_rows]
    cands = _padded([p[2] for p in parts])
    params = {k: v.detach().to(device).requires_grad_(True) for k, v in init_params(cfg, M, seeds).items()}
    opt = torch.optim.AdamW(list(params.values()), lr=cfg.lr, weight_decay=cfg.weight_decay)
    warm = torch.optim.lr_scheduler.LinearLR(opt, 1.0 / cfg.warmup, 1.0, total_iters=cfg.warmup)
    cos = torch.optim.lr_scheduler.CosineAnnealingLR(opt, max(cfg.steps - cfg.warmup, 1))
    sched = torch.optim.lr_scheduler.SequentialLR(opt, [warm, cos], milestones=[cfg.warmup])
    gens = [torch.Generator().manual_seed(int(s)) for s in seeds]     # model m's own batches: any stack, same
    best = np.full(M, -np.inf)
    best_params = {k: v.detach().clone() for k, v in params.items()}
    best_step = np.zeros(M, int)
    losses, lrs, vals = [], [], []
    t0 = time.perf_counter()
    for step in tqdm(range(cfg.steps), disable=not progress, desc=f"training {M} models"):
        idx, pick = _draw_batch(gens, n_train, cfg)
        batch = train[np.arange(M)[:, None], idx]
        loss = _contrastive_loss(params, cfg, batch, pick)
        optimizer_step(opt, sched, loss, losses, lrs)
        if (step + 1) % cfg.eval_every == 0 or step + 1 == cfg.steps:
            score = object_recognition(params, cfg, val, cands, n_val)
            vals.append(score)
            better = score > best
            best = np.maximum(best, score)
            keep = torch.as_tensor(better, device=device)
            for k, v in params.items():
                best_params[k][keep] = v.detach()[keep]
            best_step[better] = step + 1
    return ControlledResult({k: v.detach().cpu() for k, v in best_params.items()}, np.array(losses), np.array(lrs),
                            np.array(vals), best_step, time.perf_counter() - t0, list(seeds))


@torch.no_grad()
def stacked_swap_logits(params, cfg: ControlledConfig, scenes) -> np.ndarray:
    """Each model's cosine logits (M, S, 2^C) of its two-object scenes (M, S, 2) against the present objects and
    their swaps, in :func:`swaps` order (column 0 the left object, the last column the right one)."""
    scenes = np.asarray(scenes)
    z = embed(params, "scene", scene_tokens(cfg, scenes), cfg)         # (M, S, D)
    sw = swaps(cfg, scenes)                                             # (M, S, 2^C)
    q = embed(params, "query", object_tokens(cfg, sw.reshape(len(sw), -1)), cfg).reshape(*sw.shape, -1)
    return torch.einsum("msd,msqd->msq", z, q).cpu().numpy()


def swap_logits(params, cfg: ControlledConfig, scenes) -> np.ndarray:
    """One model's logits (S, 2^C) of scenes (S, 2) against their objects and swaps: the chapter's recognition
    matrix (:func:`stacked_swap_logits` of a stack of one)."""
    return stacked_swap_logits(params, cfg, np.asarray(scenes)[None])[0]


def swap_recognition(params, cfg: ControlledConfig, scenes) -> np.ndarray:
    """Binding alone (M,): the fraction of each model's scenes (M, S, 2) whose two present objects both score
    above every swap that recombines their values (scenes whose swaps all equal a present object are left out).
    A bag-of-concepts model, which scores only the values present, cannot pass it."""
    scenes = np.asarray(scenes)
    return swap_separation(stacked_swap_logits(params, cfg, scenes), swaps(cfg, scenes), scenes)


def swap_separation(logits, swapped, scenes) -> np.ndarray:
    """:func:`swap_recognition` from logits (M, S, 2^C) of the objects ``swapped`` (M, S, 2^C) of scenes
    (M, S, 2): the fraction per model of scenes whose present objects beat every other swap (ties fail); NaN
    for a model none of whose scenes has a swap distinct from its objects."""
    logits, sw, scenes = np.asarray(logits), np.asarray(swapped), np.asarray(scenes)
    pos = (sw == scenes[..., :1]) | (sw == scenes[..., 1:])
    has_neg = (~pos).any(-1)
    ok = np.where(pos, logits, np.inf).min(-1) > np.where(pos, -np.inf, logits).max(-1) + TIE
    return np.array([ok[m][has_neg[m]].mean() if has_neg[m].any() else np.nan for m in range(len(scenes))])


def swap_chance(cfg: ControlledConfig, scenes) -> float:
    """What :func:`swap_recognition` scores by chance on scenes (S, 2): the mean over scenes (with a swap
    that is a third object) of ``2 / (k (k - 1))``, the chance that a random order of the scene's ``k``
    distinct candidates (the two present objects and their distinct swaps) puts both present objects first."""
    sw = swaps(cfg, np.asarray(scenes))
    k = np.array([len(np.unique(row)) for row in sw])
    k = k[k > 2]
    if not len(k):
        raise ValueError("scenes: none has a swap that is a third object")
    return float(np.mean(2.0 / (k * (k - 1))))
