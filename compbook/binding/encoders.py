"""Small dual encoders trained from scratch (chapter 10): a CNN for images, a transformer for captions.

A :class:`DualEncoder` maps an image (H, W, 3) and a caption's token ids (L,) to unit vectors of ``d_out``; the
score of a pair is their cosine times a learned temperature ``exp(logit_scale)`` (CLIP's). :func:`clip_loss`
is CLIP's symmetric contrastive loss, optionally with *swap negatives* (captions with one concept exchanged
between the two objects, as in the paper's released code) added to the image -> text side.

Everything is written with plain tensor ops so that many models train at once under ``torch.func.vmap`` with
stacked weights (``compbook.binding.train``).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, asdict

import torch
import torch.nn as nn
import torch.nn.functional as F

from .. import checks


@dataclass(frozen=True)
class EncoderConfig:
    """Sizes of one dual encoder (our choice: small enough to train in a minute on a CPU)."""

    res: int = 64                   # image side (pixels); must be a multiple of 16
    channels: tuple = (32, 64, 64)  # CNN widths: a stride-4 stem, then two stride-2 convolutions
    d_out: int = 64                 # embedding width (64-256)
    vocab_size: int = 32
    max_len: int = 16               # longest caption in tokens, with <bos>/<eos>
    width: int = 64                 # text transformer width
    layers: int = 2
    heads: int = 4
    temperature: float = 0.07       # initial temperature; exp(logit_scale) = 1 / temperature, learned

    def __post_init__(self):
        res = checks.integer(self.res, "res", 16, 1024)
        if res % 16:
            raise ValueError(f"res must be a multiple of 16 (the CNN's strides), got {self.res!r}")
        for name in ("d_out", "vocab_size", "max_len", "width", "layers", "heads"):
            checks.integer(getattr(self, name), name)
        if self.width % self.heads:
            raise ValueError(f"width={self.width} must be divisible by heads={self.heads}")
        checks.sequence(self.channels, "channels", 3, 3)
        if any(checks.integer(ch, "channels") < 1 for ch in self.channels):
            raise ValueError(f"channels must be positive integers, got {self.channels!r}")
        checks.real(self.temperature, "temperature", 0, low_open=True)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["channels"] = list(self.channels)
        return d

    @classmethod
    def from_dict(cls, d: dict, where: str = "encoder config") -> "EncoderConfig":
        """The config of a stored dict (a sidecar's): unknown or missing fields are refused by name."""
        d = checks.mapping(d, where)
        fields = {f.name for f in dataclasses.fields(cls)}
        unknown, missing = sorted(set(d) - fields), sorted(fields - set(d))
        if unknown or missing:
            raise ValueError(f"{where}: unknown fields {unknown}, missing fields {missing} (an edited or other file?)")
        checks.sequence(d["channels"], f"{where}.channels", 3, 3)
        return cls(**{**d, "channels": tuple(d["channels"])})


class ImageEncoder(nn.Module):
    """(B, H, W, 3) in [0, 1] -> (B, d_out). Flattening the last feature map keeps where things are."""

    def __init__(self, cfg: EncoderConfig):
        super().__init__()
        if cfg.res % 16:
            raise ValueError(f"res={cfg.res}: must be a multiple of 16")
        c1, c2, c3 = cfg.channels
        self.stem = nn.Conv2d(3, c1, 4, stride=4)
        self.conv1 = nn.Conv2d(c1, c2, 3, stride=2, padding=1)
        self.conv2 = nn.Conv2d(c2, c3, 3, stride=2, padding=1)
        self.head = nn.Linear(c3 * (cfg.res // 16) ** 2, cfg.d_out)

    def forward(self, x):
        h = F.gelu(self.stem(x.permute(0, 3, 1, 2) - 0.5))
        h = F.gelu(self.conv1(h))
        h = F.gelu(self.conv2(h))
        return self.head(h.flatten(1))


class Block(nn.Module):
    """Pre-norm transformer block (bidirectional attention, pad keys masked)."""

    def __init__(self, width: int, heads: int):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.fc1, self.fc2 = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)

    def forward(self, h, pad):
        b, l, w = h.shape
        q, k, v = self.qkv(self.ln1(h)).reshape(b, l, 3, self.heads, w // self.heads).permute(2, 0, 3, 1, 4)
        att = q @ k.transpose(-1, -2) / math.sqrt(w // self.heads)
        att = att.masked_fill(pad[:, None, None, :], -1e9).softmax(-1)
        h = h + self.proj((att @ v).transpose(1, 2).reshape(b, l, w))
        return h + self.fc2(F.gelu(self.fc1(self.ln2(h))))


class TextEncoder(nn.Module):
    """(B, L) token ids (0 = pad) -> (B, d_out): token + position embeddings, blocks, mean over non-pad tokens."""

    def __init__(self, cfg: EncoderConfig):
        super().__init__()
        self.tok = nn.Embedding(cfg.vocab_size, cfg.width)
        self.pos = nn.Parameter(0.02 * torch.randn(cfg.max_len, cfg.width))
        self.blocks = nn.ModuleList(Block(cfg.width, cfg.heads) for _ in range(cfg.layers))
        self.ln = nn.LayerNorm(cfg.width)
        self.head = nn.Linear(cfg.width, cfg.d_out)

    def forward(self, ids):
        pad = ids == 0
        h = self.tok(ids) + self.pos[: ids.shape[1]]
        for blk in self.blocks:
            h = blk(h, pad)
        keep = (~pad).unsqueeze(-1).to(h.dtype)
        return self.head((self.ln(h) * keep).sum(1) / keep.sum(1).clamp(min=1))


class DualEncoder(nn.Module):
    """Image encoder f, caption encoder q and a learned temperature; both outputs unit-normalised."""

    def __init__(self, cfg: EncoderConfig):
        super().__init__()
        self.cfg = cfg
        self.image = ImageEncoder(cfg)
        self.text = TextEncoder(cfg)
        self.logit_scale = nn.Parameter(torch.tensor(math.log(1 / cfg.temperature)))

    def encode_image(self, x):
        """(B, H, W, 3) -> (B, d_out), unit norm."""
        return F.normalize(self.image(x), dim=-1)

    def encode_text(self, ids):
        """(B, L) -> (B, d_out), unit norm."""
        return F.normalize(self.text(ids), dim=-1)

    def scale(self):
        """exp(logit_scale), clamped at 100 as in CLIP."""
        return self.logit_scale.exp().clamp(max=100.0)

    def loss(self, images, ids, swap_ids=None, swap_valid=None):
        """CLIP loss of one batch; see :func:`clip_loss`."""
        zi, zt = self.encode_image(images), self.encode_text(ids)
        zs = None if swap_ids is None else self.encode_text(swap_ids)
        return clip_loss(zi, zt, self.scale(), zs, swap_valid)


def clip_loss(zi, zt, scale, zs=None, swap_valid=None):
    """Symmetric InfoNCE over a batch of B matched (image, caption) pairs.

    zi, zt (B, D) unit vectors; scale a scalar; zs (B, D) optional swap-negative captions, one per image,
    used only where ``swap_valid`` (B,) bool (a swap that changes the caption). Returns the mean of the
    image -> text and text -> image cross-entropies.
    """
    # dtypes only: clip_loss runs under vmap (training), where a data-dependent check (NaN) cannot run
    zi, zt = checks.tensor(zi, "zi", finite=False), checks.tensor(zt, "zt", finite=False)
    if zs is not None:
        zs = checks.tensor(zs, "zs", finite=False)
    if zi.ndim != 2 or zi.shape != zt.shape:
        raise ValueError(f"zi and zt must be matched (B, D) batches, got {tuple(zi.shape)} and {tuple(zt.shape)}")
    if zs is not None and (swap_valid is None or zs.shape != zi.shape):
        raise ValueError("zs needs swap_valid (B,) and the shape of zi")
    logits = scale * zi @ zt.T
    target = torch.arange(len(zi), device=zi.device)
    i2t = logits
    if zs is not None:
        extra = scale * (zi * zs).sum(-1, keepdim=True)
        extra = torch.where(swap_valid.unsqueeze(-1), extra, torch.full_like(extra, -1e4))
        i2t = torch.cat([logits, extra], dim=1)
    return 0.5 * (F.cross_entropy(i2t, target) + F.cross_entropy(logits.T, target))
