"""The recipe's model (chapter 13): two token encoders, the temperature, the loss, and the stored model.

Facts kept from the released code (``oshapio/binding-concepts-complexity``, ``models.py``, ``train_clean.py``;
read, not copied):

* two encoders of one architecture (scene, query): token embedding, sinusoidal positions, pre-LN transformer
  encoder layers (GELU, no dropout, no final norm), the output at the last non-pad token (end of scene), a linear
  projection; Xavier-uniform init of every matrix;
* loss: cosine logits times ``exp(tau)`` (tau learnable, from 1.15, i.e. 3.16; scale capped at 10) and a soft
  cross-entropy per scene over the batch's queries (target = present queries, normalised), averaged over scenes
  with at least one present query, summed over the concept and the object task.

A trained model is stored as ``<stem>.safetensors`` + ``<stem>.json`` (:func:`save_recipe`, :func:`load_recipe`;
:mod:`compbook.results.checkpoints`), under :func:`store_dir` by :func:`stem_for`.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from ...results import checkpoints
from ... import checks, config
from .config import RecipeConfig
from .data import concept_query_tokens, query_tokens, recipe_scene_tokens
from ...results import door

#: the stored model's format
FORMAT = "compbook-recipe-model/1"


def sinusoid(n: int, d: int) -> torch.Tensor:
    """(n, d) sinusoidal positions (sin on even, cos on odd channels; base 10,000)."""
    n, d = checks.integer(n, "n"), checks.integer(d, "d")
    if d % 2:
        raise ValueError(f"d must be even (sin and cos channels in pairs), got {d}")
    checks.check_budget(12.0 * n * d, f"sinusoid positions ({n} x {d})")
    pos = torch.arange(n, dtype=torch.float32)[:, None]
    div = torch.exp(torch.arange(0, d, 2, dtype=torch.float32) * (-math.log(10000.0) / d))
    pe = torch.zeros(n, d)
    pe[:, 0::2] = torch.sin(pos * div)
    pe[:, 1::2] = torch.cos(pos * div)
    return pe


class TokenEncoder(nn.Module):
    """Token embedding + sinusoidal positions, pre-LN transformer encoder, output at the last non-pad token,
    linear projection (the released ``SceneEncoder``'s default path, rewritten)."""

    def __init__(self, cfg: RecipeConfig):
        super().__init__()
        checks.instance(cfg, "cfg", RecipeConfig)
        with torch.device("meta"):
            layer = nn.TransformerEncoderLayer(cfg.d_model, cfg.n_heads, dim_feedforward=cfg.d_ff)
            # the layer built once and copied into each of the n_layers (and one init's temporaries), the
            # embedding and the projection
            n_weights = (sum(p.numel() for p in layer.parameters()) * (cfg.n_layers + 2)
                         + (cfg.vocab + cfg.d_out + 1) * cfg.d_model)
        checks.check_budget(4.0 * n_weights + 12.0 * cfg.scene_len * cfg.d_model,
                            f"a recipe token encoder of d_model={cfg.d_model}, d_ff={cfg.d_ff}")
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


class RecipeEncoder(nn.Module):
    """Scene encoder, query encoder and the temperature tau (scale = exp(tau), capped)."""

    def __init__(self, cfg: RecipeConfig):
        super().__init__()
        self.cfg = checks.instance(cfg, "cfg", RecipeConfig)
        self.scene = TokenEncoder(cfg)
        self.query = TokenEncoder(cfg)
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


def batch_loss(model: RecipeEncoder, cfg: RecipeConfig, scenes: np.ndarray, q: dict) -> torch.Tensor:
    """Concept term + object term of the released loss on one batch."""
    dev = model.tau.device
    zs = F.normalize(model.scene(recipe_scene_tokens(cfg, scenes).to(dev)), dim=1, eps=1e-6)
    loss = soft_ce(model.logits(None, concept_query_tokens(cfg, q["concept_tokens"]).to(dev), zs),
                   torch.from_numpy(q["concept_labels"]).to(dev))
    return loss + soft_ce(model.logits(None, query_tokens(cfg, q["object_queries"]).to(dev), zs),
                          torch.from_numpy(q["object_labels"]).to(dev))


def save_recipe(model: RecipeEncoder, record: dict, stem: str | os.PathLike) -> None:
    """``stem.safetensors`` (weights) + ``stem.json`` (config, log, seconds, floors)."""
    checkpoints.save(stem, model.state_dict(), record, format=FORMAT)


def load_recipe(stem: str | os.PathLike) -> tuple[RecipeEncoder, dict]:
    """Inverse of :func:`save_recipe`: the model (eval mode) and its record (a stored model is fetched first
    outside a checkout: :func:`compbook.results.door.stored_path`)."""
    stem = door.stored_path(checkpoints.stem(stem))
    record = checkpoints.read_header(stem, format=FORMAT)
    where = checkpoints.files(stem)[0]
    cfg = config_of(record, where)
    model = RecipeEncoder(cfg)
    tensors = checkpoints.load(stem, format=FORMAT, names=model.state_dict())[0]
    for k, v in model.state_dict().items():   # the sidecar's config says the shapes: name the one that differs
        if tuple(tensors[k].shape) != tuple(v.shape):
            raise ValueError(f"{where}: tensor {k!r} has shape {tuple(tensors[k].shape)}, the sidecar's config "
                             f"says {tuple(v.shape)} (config edited, or another model's weights?)")
    model.load_state_dict(tensors)
    model.eval()
    return model, record


def config_of(record, where) -> RecipeConfig:
    """The :class:`RecipeConfig` of a stored record: a missing ``config`` or an unknown or missing field is refused
    by name (``where``: the file, for the message)."""
    import dataclasses
    cfg = checks.mapping(record, f"{where}").get("config")
    if not isinstance(cfg, dict):
        raise ValueError(f"{where}: no 'config' object in the record (edited, or not a recipe model?)")
    fields = {f.name for f in dataclasses.fields(RecipeConfig)}
    unknown, missing = sorted(set(cfg) - fields), sorted(fields - set(cfg))
    if unknown or missing:
        raise ValueError(f"{where}: config has unknown fields {unknown}, missing fields {missing}")
    return RecipeConfig(**cfg)


def store_dir() -> Path:
    """Where the recipe's models are stored: ``data/binding/`` in CPU mode, ``data/binding/full/`` in full
    mode (a full-size model never takes a CPU model's file name)."""
    return door.made_path(config.by_mode(cpu="binding", full="binding/full"))


def stem_for(cfg: RecipeConfig, directory=None, prefix: str = "recipe") -> Path:
    """``<directory>/<prefix>_C<C>V<V>_cov<coverage>_s<seed>`` (``directory`` default :func:`store_dir`)."""
    checks.safe_name(prefix, "prefix")
    directory = store_dir() if directory is None else Path(directory)
    return directory / f"{prefix}_C{cfg.n_concepts}V{cfg.n_values}_cov{cfg.coverage:g}_s{cfg.seed}"
