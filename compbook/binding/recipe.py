"""The released controlled-model recipe, scaled down (chapter 13, issue 21).

Read against the paper's public code (``oshapio/binding-concepts-complexity``: ``README.md`` section 7,
``amortization/train_clean.py``, ``models.py``, ``scenes.py``; read, not copied). Facts kept from it:

* object space: C concepts x V values, object id ``o`` has values ``(o // V**k) % V``; the split shuffles the
  ids with ``np.random.RandomState(split_seed).permutation`` and keeps the first ``int(|O| coverage)`` (at least
  1, at most ``|O| - 1``) as training objects;
* scenes: fresh every step, each with 1..``max_objects`` objects (uniform count), objects drawn uniformly with
  replacement from the allowed objects; tokens ``[soo, v_0, V + v_1, ..., eoo] * n + [eos]`` then pads;
* queries built per batch: the batch's distinct concept values (at most 64, a random subset) as ``[value, eos]``,
  and its distinct present objects (at most 64) plus 1 swap negative per multi-object scene (one concept of one
  object replaced by the other object's) as ``[soo, values, eoo, eos]``; labels = which queries each scene holds;
* two encoders of one architecture (scene, query): token embedding, sinusoidal positions, pre-LN transformer
  encoder layers (GELU, no dropout, no final norm), the output at the last non-pad token (end of scene), a linear
  projection; Xavier-uniform init of every matrix;
* loss: cosine logits times ``exp(tau)`` (tau learnable, from 1.15, i.e. 3.16; scale capped at 10) and a soft
  cross-entropy per scene over the batch's queries (target = present queries, normalised), averaged over scenes
  with at least one present query, summed over the concept and the object task;
* AdamW (weight decay 0.1 on every parameter, tau included), linear warm-up over 10% of the steps, then linear
  decay to 0, stepped every step;
* the paper's metric: set separation per scene over the batch's queries (min present > max absent).

Our choices (parameters of :class:`RecipeConfig`, said in the chapter): a miniature model (2 layers x 64, 4
heads, feed-forward 4 x width; released 6 x 256 with torch's default 2048), batch 256 (released 512), 8,000 steps
(released 50,000), the learning rate (released 3e-5 for 6 x 256 over 50k steps; ours in the config, chosen on
seen-object validation only), the *final* weights (no checkpoint selection: the released code selects on the test
split, which we do not copy), query sequences cut to their own length (exact: pads are masked), and the
diagnostics: swap-only binding on two-object scenes whose objects differ in every concept, and a simulated
bag-of-concepts model on the same metric. ``RecipeConfig.for_mode("full")`` is the released recipe.
"""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from .. import checkpoints, checks
from ..stats import wilson
from ..config import device as run_device
from ..config import mode as run_mode

TIE = 0.0   # strict separation, as released: min present > max absent


@dataclass(frozen=True)
class RecipeConfig:
    """One controlled model of the recipe. Released values in comments; ours said "our choice"."""

    n_concepts: int = 2            # released README: 2
    n_values: int = 50             # released README: 20; the claim is for |O| >= 2,500 (our choice: 50)
    max_objects: int = 2           # released: 2
    coverage: float = 0.5          # released README: 0.8 (swept in the paper)
    split_seed: int = 0            # released: 0
    d_model: int = 64              # our choice (released 256)
    n_heads: int = 4               # released: 4
    n_layers: int = 2              # our choice (released 6)
    d_ff: int = 256                # our choice, 4 x width (released: torch default 2048)
    d_out: int = 64                # released: 64
    steps: int = 8000              # our choice (released 50,000)
    batch: int = 256               # our choice (released 512)
    lr: float = 3e-4               # our choice (released 3e-5 at 6 x 256): best seen binding, lr probe
    weight_decay: float = 0.1      # released
    warmup_frac: float = 0.1       # released
    tau_init: float = 1.15         # released: exp(1.15) = 3.16
    scale_max: float = 10.0        # released (training)
    n_concept_queries: int = 64    # released
    n_object_queries: int = 64     # released
    n_swaps: int = 1               # released: 1 swap negative per multi-object scene
    seed: int = 0                  # our choice: init and data stream
    eval_every: int = 1000         # our choice
    eval_scenes: int = 2000        # our choice: swap-only scenes per eval set
    eval_batches: int = 10         # released: 10 test batches

    def __post_init__(self):
        checks.integer(self.n_concepts, "n_concepts", 2)
        checks.integer(self.n_values, "n_values", 2)
        checks.integer(self.max_objects, "max_objects", 2)
        checks.real(self.coverage, "coverage", 0.0, 1.0, low_open=True, high_open=True)
        for name in ("d_model", "n_heads", "n_layers", "d_ff", "d_out", "steps", "batch",
                     "n_concept_queries", "n_object_queries", "eval_every", "eval_scenes", "eval_batches"):
            checks.integer(getattr(self, name), name, 1)
        checks.integer(self.n_swaps, "n_swaps", 0)
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads})")
        checks.real(self.lr, "lr", 0.0, low_open=True)
        checks.real(self.weight_decay, "weight_decay", 0.0)
        checks.real(self.warmup_frac, "warmup_frac", 0.0, 1.0, high_open=True)
        checks.real(self.scale_max, "scale_max", 0.0, low_open=True)

    @classmethod
    def for_mode(cls, mode: str | None = None, **overrides) -> "RecipeConfig":
        """``"cpu"``: the miniature (defaults); ``"full"``: the released recipe (6 x 256, d_ff 2048,
        50,000 steps x 512, lr 3e-5) at our object space. ``mode`` defaults to ``$COMPBOOK_MODE``."""
        mode = checks.choice(run_mode() if mode is None else mode, "mode", ("cpu", "full"))
        base = cls() if mode == "cpu" else cls(d_model=256, n_layers=6, d_ff=2048, steps=50000,
                                               batch=512, lr=3e-5, eval_every=2000)
        return replace(base, **overrides)

    # token ids, as released: values, then soo, eoo, eos, pad
    @property
    def n_objects(self) -> int:
        return self.n_values ** self.n_concepts

    @property
    def soo(self) -> int:
        return self.n_concepts * self.n_values

    @property
    def eoo(self) -> int:
        return self.soo + 1

    @property
    def eos(self) -> int:
        return self.soo + 2

    @property
    def pad(self) -> int:
        return self.soo + 3

    @property
    def vocab(self) -> int:
        return self.soo + 4

    @property
    def scene_len(self) -> int:
        return (self.n_concepts + 2) * self.max_objects + 1


# ----------------------------------------------------------------------------------------------- data

def object_values(cfg: RecipeConfig, ids) -> np.ndarray:
    """(N, C) concept values of object ids (released convention: value k = (id // V**k) % V)."""
    ids = checks.integers(ids, "ids", 0, cfg.n_objects - 1)
    base = cfg.n_values ** np.arange(cfg.n_concepts, dtype=np.int64)
    return (ids[..., None] // base) % cfg.n_values


def object_ids(cfg: RecipeConfig, values) -> np.ndarray:
    """Inverse of :func:`object_values`."""
    values = checks.integers(values, "values", 0, cfg.n_values - 1)
    return (values * cfg.n_values ** np.arange(cfg.n_concepts, dtype=np.int64)).sum(-1)


def split_objects(cfg: RecipeConfig) -> tuple[np.ndarray, np.ndarray]:
    """(train ids, test ids) as released: a RandomState(split_seed) permutation, first int(|O| rho) train."""
    total = cfg.n_objects
    perm = np.random.RandomState(cfg.split_seed).permutation(total)
    n_train = min(max(1, int(total * cfg.coverage)), total - 1)
    return perm[:n_train].astype(np.int64), perm[n_train:].astype(np.int64)


def sample_scenes(cfg: RecipeConfig, allowed: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """(n, max_objects) object ids, -1 for an empty slot: 1..max_objects objects (uniform count), each drawn
    uniformly with replacement from ``allowed`` (vectorised)."""
    n = checks.integer(n, "n")
    checks.check_budget(8.0 * 3 * n * cfg.max_objects, f"sample_scenes of {n} scenes")
    allowed = np.asarray(allowed, dtype=np.int64)
    if allowed.size == 0:
        raise ValueError("allowed must hold at least one object")
    count = rng.integers(1, cfg.max_objects + 1, size=n)
    ids = allowed[rng.integers(0, len(allowed), size=(n, cfg.max_objects))]
    ids[np.arange(cfg.max_objects)[None, :] >= count[:, None]] = -1
    return ids


def scene_tokens(cfg: RecipeConfig, scenes: np.ndarray) -> torch.Tensor:
    """(N, scene_len) tokens ``[soo, v_0, V + v_1, .., eoo] * n + [eos] + pads`` (vectorised)."""
    scenes = np.asarray(scenes, dtype=np.int64)
    n, m = scenes.shape
    block = cfg.n_concepts + 2
    tok = np.full((n, cfg.scene_len), cfg.pad, dtype=np.int64)
    present = scenes >= 0
    vals = object_values(cfg, np.where(present, scenes, 0)) + np.arange(cfg.n_concepts) * cfg.n_values
    blocks = np.concatenate([np.full((n, m, 1), cfg.soo), vals, np.full((n, m, 1), cfg.eoo)], axis=2)
    blocks[~present] = cfg.pad
    tok[:, :m * block] = blocks.reshape(n, m * block)
    tok[np.arange(n), present.sum(1) * block] = cfg.eos
    return torch.from_numpy(tok)


def query_tokens(cfg: RecipeConfig, ids) -> torch.Tensor:
    """(Q, C + 3) object queries ``[soo, values, eoo, eos]`` (the released pads after them are masked)."""
    vals = object_values(cfg, ids) + np.arange(cfg.n_concepts) * cfg.n_values
    q = len(vals)
    tok = np.concatenate([np.full((q, 1), cfg.soo), vals, np.full((q, 1), cfg.eoo), np.full((q, 1), cfg.eos)], 1)
    return torch.from_numpy(tok.astype(np.int64))


def concept_query_tokens(cfg: RecipeConfig, tokens) -> torch.Tensor:
    """(Q, 2) concept queries ``[value token, eos]``."""
    tokens = np.asarray(tokens, dtype=np.int64)
    return torch.from_numpy(np.stack([tokens, np.full_like(tokens, cfg.eos)], 1))


def swap_negatives(cfg: RecipeConfig, scenes: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Released swaps: for each scene with >= 2 objects, ``n_swaps`` times, an ordered pair of its objects
    (i1, i2) and a concept k at random; object i1 with concept k taken from i2. Returns object ids."""
    scenes = np.asarray(scenes, dtype=np.int64)
    multi = scenes[(scenes >= 0).sum(1) >= 2]
    if cfg.n_swaps == 0 or len(multi) == 0:
        return np.empty(0, dtype=np.int64)
    multi = np.repeat(multi, cfg.n_swaps, axis=0)
    count = (multi >= 0).sum(1)
    # a random ordered pair of distinct present slots (present slots come first)
    i1 = (rng.random(len(multi)) * count).astype(np.int64)
    i2 = (i1 + 1 + (rng.random(len(multi)) * (count - 1)).astype(np.int64)) % count
    k = rng.integers(0, cfg.n_concepts, size=len(multi))
    rows = np.arange(len(multi))
    v1 = object_values(cfg, multi[rows, i1])
    v2 = object_values(cfg, multi[rows, i2])
    v1[rows, k] = v2[rows, k]
    return object_ids(cfg, v1)


def presence(scenes: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """(N, Q) float labels: does scene n hold object query q."""
    scenes = np.asarray(scenes)
    if scenes.ndim != 2:
        raise ValueError(f"scenes must be (N, max_objects) object ids, got shape {scenes.shape}")
    return (scenes[:, :, None] == np.asarray(queries)[None, None, :]).any(1).astype(np.float32)


def concept_presence(cfg: RecipeConfig, scenes: np.ndarray, tokens: np.ndarray) -> np.ndarray:
    """(N, Q) float labels: does scene n hold concept-value token q."""
    scenes = np.asarray(scenes)
    vals = object_values(cfg, np.where(scenes >= 0, scenes, 0)) + np.arange(cfg.n_concepts) * cfg.n_values
    vals[scenes < 0] = -1
    vals = vals.reshape(len(scenes), -1)
    return (vals[:, :, None] == np.asarray(tokens)[None, None, :]).any(1).astype(np.float32)


def batch_queries(cfg: RecipeConfig, scenes: np.ndarray, rng: np.random.Generator,
                  allowed_queries: np.ndarray | None = None) -> dict:
    """The released per-batch query sets and labels for ``scenes`` (see the module docstring).
    ``allowed_queries``: object ids swaps may be (None = every object, as released in training)."""
    scenes = np.asarray(scenes, dtype=np.int64)
    vals = object_values(cfg, np.where(scenes >= 0, scenes, 0)) + np.arange(cfg.n_concepts) * cfg.n_values
    ctok = np.unique(vals[scenes >= 0])
    ctok = ctok[rng.permutation(len(ctok))[:cfg.n_concept_queries]]
    pos = np.unique(scenes[scenes >= 0])
    pos = pos[rng.permutation(len(pos))[:cfg.n_object_queries]]
    swaps = swap_negatives(cfg, scenes, rng)
    if allowed_queries is not None:
        swaps = swaps[np.isin(swaps, allowed_queries)]
    oq = np.unique(np.concatenate([pos, swaps]))
    return {"concept_tokens": ctok, "concept_labels": concept_presence(cfg, scenes, ctok),
            "object_queries": oq, "object_labels": presence(scenes, oq)}


# ---------------------------------------------------------------------------------------------- model

def sinusoid(n: int, d: int) -> torch.Tensor:
    """(n, d) sinusoidal positions (sin on even, cos on odd channels; base 10,000)."""
    n, d = checks.integer(n, "n"), checks.integer(d, "d")
    pos = torch.arange(n, dtype=torch.float32)[:, None]
    div = torch.exp(torch.arange(0, d, 2, dtype=torch.float32) * (-math.log(10000.0) / d))
    pe = torch.zeros(n, d)
    pe[:, 0::2] = torch.sin(pos * div)
    pe[:, 1::2] = torch.cos(pos * div)
    return pe


class Encoder(nn.Module):
    """Token embedding + sinusoidal positions, pre-LN transformer encoder, output at the last non-pad token,
    linear projection (the released ``SceneEncoder``'s default path, rewritten)."""

    def __init__(self, cfg: RecipeConfig):
        super().__init__()
        self.pad = cfg.pad
        self.embed = nn.Embedding(cfg.vocab, cfg.d_model)
        self.register_buffer("pe", sinusoid(cfg.scene_len, cfg.d_model), persistent=False)
        layer = nn.TransformerEncoderLayer(cfg.d_model, cfg.n_heads, dim_feedforward=cfg.d_ff, dropout=0.0,
                                           activation="gelu", batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, cfg.n_layers, enable_nested_tensor=False)
        self.proj = nn.Linear(cfg.d_model, cfg.d_out)
        for p in self.parameters():
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        pad = tokens == self.pad
        x = self.embed(tokens) + self.pe[: tokens.shape[1]]
        x = self.blocks(x, src_key_padding_mask=pad)
        last = (~pad).sum(1) - 1
        return self.proj(x[torch.arange(len(x)), last])


class DualEncoder(nn.Module):
    """Scene encoder, query encoder and the temperature tau (scale = exp(tau), capped)."""

    def __init__(self, cfg: RecipeConfig):
        super().__init__()
        self.cfg = cfg
        self.scene = Encoder(cfg)
        self.query = Encoder(cfg)
        self.tau = nn.Parameter(torch.tensor(float(cfg.tau_init)))

    def scale(self) -> torch.Tensor:
        return torch.exp(self.tau).clamp(max=self.cfg.scale_max)

    def logits(self, scene_tok: torch.Tensor, query_tok: torch.Tensor, z_scene=None) -> torch.Tensor:
        zs = F.normalize(self.scene(scene_tok), dim=1, eps=1e-6) if z_scene is None else z_scene
        zq = F.normalize(self.query(query_tok), dim=1, eps=1e-6)
        return self.scale() * zs @ zq.T


def soft_ce(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Released loss: cross-entropy against labels / sum(labels), averaged over rows with a positive."""
    labels = torch.as_tensor(labels, dtype=logits.dtype)
    total = labels.sum(1, keepdim=True)
    active = total[:, 0] > 0
    if not active.any():
        return logits.new_zeros(())
    per_row = -(labels / (total + 1e-10) * F.log_softmax(logits, 1)).sum(1)
    return per_row[active].mean()


def separation(logits, labels) -> np.ndarray:
    """Per active row (>= 1 positive): min positive logit > max negative logit (bool)."""
    logits = np.asarray(logits, dtype=np.float64)
    labels = np.asarray(labels) > 0
    active = labels.any(1)
    lo = np.where(labels, logits, np.inf).min(1)
    hi = np.where(labels, -np.inf, logits).max(1)
    return (lo > hi + TIE)[active]


def batch_loss(model: DualEncoder, cfg: RecipeConfig, scenes: np.ndarray, q: dict) -> torch.Tensor:
    """Concept term + object term of the released loss on one batch."""
    dev = model.tau.device
    zs = F.normalize(model.scene(scene_tokens(cfg, scenes).to(dev)), dim=1, eps=1e-6)
    loss = soft_ce(model.logits(None, concept_query_tokens(cfg, q["concept_tokens"]).to(dev), zs),
                   torch.from_numpy(q["concept_labels"]).to(dev))
    return loss + soft_ce(model.logits(None, query_tokens(cfg, q["object_queries"]).to(dev), zs),
                          torch.from_numpy(q["object_labels"]).to(dev))


def lr_factor(cfg: RecipeConfig, step: int) -> float:
    """Released schedule: linear warm-up over warmup_frac of the steps, then linear decay to 0."""
    step = checks.integer(step, "step", 0)
    warm = int(cfg.warmup_frac * cfg.steps)
    if step < warm:
        return step / max(1, warm)
    return max(0.0, (cfg.steps - step) / max(1, cfg.steps - warm))


# ----------------------------------------------------------------------------------------- evaluation

def binding_scenes(cfg: RecipeConfig, pool: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """(n, 2) ordered two-object scenes from ``pool`` whose objects differ in every concept (rejection)."""
    pool = np.asarray(pool, dtype=np.int64)
    v = object_values(cfg, pool)
    if len(pool) == 0 or any(len(np.unique(v[:, k])) < 2 for k in range(cfg.n_concepts)):
        raise ValueError(f"pool: {len(pool)} objects hold no two that differ in every concept")
    out = np.empty((0, 2), dtype=np.int64)
    for _ in range(1000):
        if len(out) >= n:
            return out
        s = pool[rng.integers(0, len(pool), size=(4 * n, 2))]
        v = object_values(cfg, s)
        out = np.concatenate([out, s[(v[:, 0] != v[:, 1]).all(1)]])[:n]
    if len(out) < n:
        raise ValueError(f"pool: too few pairs of its {len(pool)} objects differ in every concept")
    return out


def swap_sets(cfg: RecipeConfig, scenes: np.ndarray) -> np.ndarray:
    """(N, 2**C - 2) all objects recombining the two objects' concept values, except the two themselves."""
    v = object_values(cfg, scenes)                       # (N, 2, C)
    masks = [m for m in np.ndindex(*(2,) * cfg.n_concepts) if len(set(m)) > 1]
    cols = [object_ids(cfg, v[:, list(m), np.arange(cfg.n_concepts)]) for m in masks]
    return np.stack(cols, 1)


@torch.no_grad()
def swap_binding(model: DualEncoder, cfg: RecipeConfig, scenes: np.ndarray) -> np.ndarray:
    """Per scene: both present objects score above every swap of them (bool)."""
    scenes = np.asarray(scenes, dtype=np.int64)
    model.eval()
    dev = model.tau.device
    zs = F.normalize(model.scene(scene_tokens(cfg, scenes).to(dev)), dim=1, eps=1e-6)
    cand = np.concatenate([scenes, swap_sets(cfg, scenes)], 1)
    uniq, inv = np.unique(cand, return_inverse=True)
    zq = F.normalize(model.query(query_tokens(cfg, uniq).to(dev)), dim=1, eps=1e-6)
    logits = (zs @ zq.T).cpu().numpy()[np.arange(len(scenes))[:, None], inv.reshape(cand.shape)]
    return logits[:, :2].min(1) > logits[:, 2:].max(1) + TIE


def bag_of_concepts(cfg: RecipeConfig, scenes: np.ndarray, queries: np.ndarray, concept: bool = False,
                    rng: np.random.Generator | None = None) -> np.ndarray:
    """A simulated bag-of-concepts model's cosine logits: scene = sum of its objects' concept one-hots,
    object query = its concept one-hots, concept query = one one-hot; ties broken by a 1e-9 jitter when
    ``rng`` is given (our choice: the floor such a model reaches by luck)."""
    scenes = np.asarray(scenes, dtype=np.int64)
    d = cfg.n_concepts * cfg.n_values
    vals = object_values(cfg, np.where(scenes >= 0, scenes, 0)) + np.arange(cfg.n_concepts) * cfg.n_values
    s = np.zeros((len(scenes), d))
    for j in range(scenes.shape[1]):
        for k in range(cfg.n_concepts):
            np.add.at(s, (np.arange(len(scenes))[scenes[:, j] >= 0], vals[scenes[:, j] >= 0, j, k]), 1.0)
    queries = np.asarray(queries, dtype=np.int64)
    q = np.zeros((len(queries), d))
    if concept:
        q[np.arange(len(queries)), queries] = 1.0
    else:
        qv = object_values(cfg, queries) + np.arange(cfg.n_concepts) * cfg.n_values
        for k in range(cfg.n_concepts):
            q[np.arange(len(queries)), qv[:, k]] = 1.0
    s /= np.linalg.norm(s, axis=1, keepdims=True)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    logits = s @ q.T
    if rng is not None:
        logits = logits + 1e-9 * rng.random(logits.shape)
    return logits


def binding_by_swap_split(model, cfg: RecipeConfig, scenes: np.ndarray):
    """Swap-only binding split by how many of a scene's swaps are training objects (0, 1, 2 for C = 2):
    a model that binds does not care; one that scores objects by their training history does."""
    import pandas as pd
    ok = swap_binding(model, cfg, scenes)
    n_train = np.isin(swap_sets(cfg, scenes), split_objects(cfg)[0]).sum(1)
    rows = [{"swaps that are train objects": k, "scenes": int((n_train == k).sum()),
             "binding": float(ok[n_train == k].mean()) if (n_train == k).any() else float("nan")}
            for k in range(2 ** cfg.n_concepts - 1)]
    return pd.DataFrame(rows).set_index("swaps that are train objects")


def eval_sets(cfg: RecipeConfig, seed: int = 12345) -> dict:
    """Fixed evaluation data (our choice of seed): swap-only scenes of seen (train) and unseen (test)
    objects, and ``eval_batches`` released-style batches per split with their query sets."""
    train, test = split_objects(cfg)
    rng = np.random.default_rng(seed)
    out = {"seen_binding": binding_scenes(cfg, train, cfg.eval_scenes, rng),
           "unseen_binding": binding_scenes(cfg, test, cfg.eval_scenes, rng)}
    allq = np.arange(cfg.n_objects)
    for name, pool in (("seen", train), ("unseen", test)):
        batches = []
        for _ in range(cfg.eval_batches):
            s = sample_scenes(cfg, pool, cfg.batch, rng)
            batches.append((s, batch_queries(cfg, s, rng, allq)))
        out[name + "_batches"] = batches
    return out


@torch.no_grad()
def paper_metric(model, cfg: RecipeConfig, batches, task: str = "objects", jitter: bool = True) -> np.ndarray:
    """Released metric: per-scene set separation over each batch's query set (active scenes only).
    ``model`` None scores the simulated bag-of-concepts model (ties broken at random when ``jitter``,
    else a tie fails, as the strict released comparison would)."""
    out = []
    rng = np.random.default_rng(0)
    for scenes, q in batches:
        if task == "objects":
            queries, labels = q["object_queries"], q["object_labels"]
        else:
            queries, labels = q["concept_tokens"], q["concept_labels"]
        if model is None:
            logits = bag_of_concepts(cfg, scenes, queries, concept=task != "objects",
                                     rng=rng if jitter else None)
        else:
            model.eval()
            tok = query_tokens(cfg, queries) if task == "objects" else concept_query_tokens(cfg, queries)
            dev = model.tau.device
            logits = model.logits(scene_tokens(cfg, scenes).to(dev), tok.to(dev)).cpu().numpy()
        out.append(separation(logits, labels))
    return np.concatenate(out)


def evaluate(model, cfg: RecipeConfig, sets: dict) -> dict:
    """The go/no-go diagnostics on fixed eval sets."""
    return {"seen_binding": float(swap_binding(model, cfg, sets["seen_binding"]).mean()),
            "unseen_binding": float(swap_binding(model, cfg, sets["unseen_binding"]).mean()),
            "seen_paper": float(paper_metric(model, cfg, sets["seen_batches"]).mean()),
            "unseen_paper": float(paper_metric(model, cfg, sets["unseen_batches"]).mean()),
            "unseen_concepts": float(paper_metric(model, cfg, sets["unseen_batches"], "concepts").mean())}


def floors(cfg: RecipeConfig, sets: dict, n_sim: int = 20000, seed: int = 0) -> dict:
    """Chance of swap-only binding for random logits (simulated) and the bag-of-concepts scores (swap-only:
    its positives and swaps tie exactly, so it scores 0 strictly and chance with ties broken at random)."""
    rng = np.random.default_rng(seed)
    k = 2 ** cfg.n_concepts - 2
    r = rng.standard_normal((n_sim, 2 + k))
    chance = float((r[:, :2].min(1) > r[:, 2:].max(1)).mean())
    boc = {}
    for name in ("seen_binding", "unseen_binding"):
        sc = sets[name][:500]
        cand = np.concatenate([sc, swap_sets(cfg, sc)], 1)
        lg = np.stack([bag_of_concepts(cfg, sc[i:i + 1], cand[i])[0] for i in range(len(sc))])
        boc[name] = float((lg[:, :2].min(1) > lg[:, 2:].max(1)).mean())
    return {"swap_chance_sim": chance, "swap_chance_exact": 2 / ((2 + k) * (1 + k)),
            "boc_seen_binding": boc["seen_binding"], "boc_unseen_binding": boc["unseen_binding"],
            "boc_unseen_paper": float(paper_metric(None, cfg, sets["unseen_batches"]).mean()),
            "boc_unseen_paper_strict": float(paper_metric(None, cfg, sets["unseen_batches"],
                                                          jitter=False).mean()),
            "boc_seen_paper": float(paper_metric(None, cfg, sets["seen_batches"]).mean()),
            "boc_unseen_concepts": float(paper_metric(None, cfg, sets["unseen_batches"], "concepts").mean())}


# ------------------------------------------------------------------------------------------- training

#: the resumable training state's checkpoint format (:mod:`compbook.checkpoints`: safetensors + JSON, no pickle)
STATE_FORMAT = "compbook-recipe-state/1"
#: the stored model's format
FORMAT = "compbook-recipe-model/1"


def _save_state(path, cfg, model, opt, step, rng, log, seconds) -> None:
    """The whole training state: weights, AdamW's moments and step counts, both random streams, the log."""
    opt_sd = opt.state_dict()
    tensors = {f"model.{k}": v for k, v in model.state_dict().items()}
    tensors |= {f"opt.{i}.{k}": v for i, s in opt_sd["state"].items() for k, v in s.items()}
    tensors["torch_rng"] = torch.get_rng_state()
    header = {"config": asdict(cfg), "param_groups": opt_sd["param_groups"], "step": step,
              "rng": rng.bit_generator.state, "log": log, "seconds": seconds}
    checkpoints.save(path, tensors, header, format=STATE_FORMAT)


def _load_state(path, cfg, model, opt, rng, device) -> tuple[int, list, float]:
    """Restore what :func:`_save_state` wrote into ``model``, ``opt`` and ``rng``; ``(step, log, seconds)``.
    A state of another config is refused (``ValueError`` naming the checkpoint)."""
    header = checkpoints.read_header(path, format=STATE_FORMAT)
    if header.get("config") != asdict(cfg):
        raise ValueError(f"checkpoint {path} was made with another config; remove it or pass another")
    tensors, _ = checkpoints.load(path, format=STATE_FORMAT)
    model.load_state_dict({k[6:]: v.to(device) for k, v in tensors.items() if k.startswith("model.")})
    state: dict = {}
    for k, v in tensors.items():
        if k.startswith("opt."):
            _, i, name = k.split(".", 2)
            state.setdefault(int(i), {})[name] = v if name == "step" else v.to(device)
    opt.load_state_dict({"state": state, "param_groups": header["param_groups"]})
    rng.bit_generator.state = header["rng"]
    torch.set_rng_state(tensors["torch_rng"])
    return header["step"], header["log"], header["seconds"]


#: the eval sets :func:`train` reads (:func:`eval_sets` makes them)
SET_NAMES = frozenset({"seen_binding", "unseen_binding", "seen_batches", "unseen_batches"})


def train(cfg: RecipeConfig, checkpoint: str | os.PathLike | None = None, sets: dict | None = None,
          stop_after: int | None = None, progress: bool = True,
          device: str | torch.device = "cpu") -> tuple[DualEncoder, dict]:
    """Train one model by the recipe; resumes from ``checkpoint`` when it exists and saves it at every
    evaluation. ``stop_after``: stop after that many steps in this call (tests of resume). Returns the model
    (final weights) and a record with the log (every ``eval_every`` steps and at the end) and seconds.
    ``device``: where the model runs (the data are generated on the CPU either way)."""
    checks.instance(cfg, "cfg", RecipeConfig)
    stop_after = checks.optional_integer(stop_after, "stop_after")
    device = checks.torch_device(device, "device")
    if checkpoint is not None and (not isinstance(checkpoint, (str, os.PathLike)) or str(checkpoint) == ""):
        raise ValueError(f"checkpoint must be a path (str or os.PathLike) or None, got {checkpoint!r}")
    if sets is not None:
        missing = sorted(SET_NAMES - set(checks.mapping(sets, "sets")))
        if missing:
            raise ValueError(f"sets must be eval_sets(cfg)'s dict, missing {missing}")
    with torch.device("meta"):
        n_weights = sum(p.numel() for p in DualEncoder(cfg).parameters())
    n_tokens = cfg.max_objects * (cfg.n_concepts + 2) + 1
    # one step's activations: the batch's scenes and the query set, each token (4 d_model + d_ff) per layer
    tokens = cfg.batch * n_tokens + (cfg.n_object_queries + cfg.n_concept_queries) * (cfg.n_concepts + 2)
    acts = tokens * (4 * cfg.d_model + cfg.d_ff) * cfg.n_layers
    checks.check_budget(4.0 * (4 * n_weights + acts), f"training a recipe model of d_model={cfg.d_model}, "
                                                      f"batch={cfg.batch}")
    torch.manual_seed(cfg.seed)
    model = DualEncoder(cfg).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    rng = np.random.default_rng(cfg.seed)
    train_ids, _ = split_objects(cfg)
    step, log, seconds = 0, [], 0.0
    path = Path(checkpoint) if checkpoint is not None else None
    if path is not None and checkpoints.files(path)[0].exists():
        step, log, seconds = _load_state(path, cfg, model, opt, rng, device)
    end = cfg.steps if stop_after is None else min(cfg.steps, step + stop_after)
    t0 = time.perf_counter()
    while step < end:
        for g in opt.param_groups:
            g["lr"] = cfg.lr * lr_factor(cfg, step)
        model.train()
        scenes = sample_scenes(cfg, train_ids, cfg.batch, rng)
        q = batch_queries(cfg, scenes, rng)     # released training: swaps may be any object
        loss = batch_loss(model, cfg, scenes, q)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        step += 1
        if step % cfg.eval_every == 0 or step == cfg.steps:
            seconds += time.perf_counter() - t0
            entry = {"step": step, "loss": float(loss.detach()), "scale": float(model.scale().detach()),
                     "lr": cfg.lr * lr_factor(cfg, step - 1), "seconds": round(seconds, 1)}
            if sets is not None:
                entry.update(evaluate(model, cfg, sets))
            log.append(entry)
            if progress:
                print(json.dumps(entry), flush=True)
            if path is not None:
                _save_state(path, cfg, model, opt, step, rng, log, seconds)
            t0 = time.perf_counter()
    seconds += time.perf_counter() - t0
    return model, {"config": asdict(cfg), "log": log, "seconds": round(seconds, 1), "steps": step}


def save(model: DualEncoder, record: dict, stem: str | os.PathLike) -> None:
    """``stem.safetensors`` (weights) + ``stem.json`` (config, log, seconds, floors)."""
    checkpoints.save(stem, model.state_dict(), record, format=FORMAT)


def load(stem: str | os.PathLike) -> tuple[DualEncoder, dict]:
    """Inverse of :func:`save`."""
    record = checkpoints.read_header(stem, format=FORMAT)
    cfg = RecipeConfig(**record["config"])
    model = DualEncoder(cfg)
    model.load_state_dict(checkpoints.load(stem, format=FORMAT, names=model.state_dict())[0])
    model.eval()
    return model, record


def lr_probe(cfg: RecipeConfig, lrs, steps: int) -> list[dict]:
    """Our choice of learning rate: short runs (``steps``, the same schedule shape) per lr, scored on
    *seen* objects only (swap-only binding and the paper's metric on fresh scenes of training objects);
    the unseen split is not evaluated here."""
    out = []
    for lr in lrs:
        c = replace(cfg, lr=float(lr), steps=int(steps), eval_every=int(steps))
        sets = eval_sets(c)
        model, rec = train(c, progress=False)
        out.append({"lr": float(lr), "steps": int(steps), "seconds": rec["seconds"],
                    "loss": rec["log"][-1]["loss"],
                    "seen_binding": float(swap_binding(model, c, sets["seen_binding"]).mean()),
                    "seen_paper": float(paper_metric(model, c, sets["seen_batches"]).mean())})
        print(json.dumps(out[-1]), flush=True)
    return out


def stem_for(cfg: RecipeConfig, directory="data/binding", prefix: str = "recipe") -> Path:
    checks.safe_name(prefix, "prefix")
    return Path(directory) / f"{prefix}_C{cfg.n_concepts}V{cfg.n_values}_cov{cfg.coverage:g}_s{cfg.seed}"


def load_records(directory="data/binding", n_values: int = 50, seed: int = 0) -> list[dict]:
    """Every stored recipe model's JSON record for ``n_values`` and ``seed`` (C = 2), sorted by coverage."""
    n_values, seed = checks.integer(n_values, "n_values", 2), checks.integer(seed, "seed", 0)
    recs = [checks.json_file(p, "recipe record") for p in Path(directory).glob(f"recipe_C2V{n_values}_cov*_s{seed}.json")]
    return sorted(recs, key=lambda r: r["config"]["coverage"])


def coverage_table(records: list[dict]):
    """One row per model: final swap-only binding (seen, unseen) with Wilson 95% intervals over the eval
    scenes (``compbook.stats.wilson``), the paper's metric, chance and the bag-of-concepts floor."""
    import pandas as pd

    rows = []
    for r in records:
        n = r["config"]["eval_scenes"]
        f = r["final"]
        row = {"coverage": r["config"]["coverage"], "steps": r["steps"], "seconds": r["seconds"]}
        for k in ("seen_binding", "unseen_binding"):
            lo, hi = wilson(round(f[k] * n), n)
            row.update({k: f[k], k + "_lo": lo, k + "_hi": hi})
        row.update({"seen_paper": f["seen_paper"], "unseen_paper": f["unseen_paper"],
                    "boc_unseen_paper": r["floors"]["boc_unseen_paper"],
                    "chance": r["floors"]["swap_chance_sim"]})
        rows.append(row)
    return pd.DataFrame(rows).set_index("coverage")


def go_no_go(record: dict, seen_min: float = 0.9) -> tuple[bool, str]:
    """Go if final seen binding >= ``seen_min`` and unseen binding's Wilson interval lies above chance."""
    f, n = record["final"], record["config"]["eval_scenes"]
    lo, _ = wilson(round(f["unseen_binding"] * n), n)
    chance = record["floors"]["swap_chance_sim"]
    go = f["seen_binding"] >= seen_min and lo > chance
    why = (f"seen binding {f['seen_binding']:.2f} ({'>=' if f['seen_binding'] >= seen_min else '<'} "
           f"{seen_min}), unseen {f['unseen_binding']:.2f} (95% low {lo:.2f} vs chance {chance:.2f})")
    return go, why


def run_one(cfg: RecipeConfig, out, checkpoint=None, command: str = "", prefix: str = "recipe") -> dict:
    """Train (resuming from ``checkpoint``, default ``/tmp/<stem>_state``), evaluate, store; the record."""
    stem = stem_for(cfg, out, prefix)
    sets = eval_sets(cfg)
    ckpt = checkpoint or f"/tmp/{stem.name}_state"
    model, record = train(cfg, ckpt, sets, device=run_device())
    record["final"] = evaluate(model, cfg, sets)
    record["floors"] = floors(cfg, sets)
    if command:
        record["made_by"] = command
    record["mode"] = run_mode()
    record["threads"] = torch.get_num_threads()
    save(model.cpu(), record, stem)
    print(json.dumps({"final": record["final"], "floors": record["floors"], "seconds": record["seconds"]}))
    return record
