"""A tiny vision-language model, and residual-stream + attention extraction (chapter 14).

:class:`TinyVLM` is a small decoder-only transformer (nanoGPT style, pre-LayerNorm) that reads one sequence:
the image's patch tokens (a linear embedding of each 4x4 RGB patch plus a learned position per grid cell), then
the caption tokens. Attention is causal over the whole sequence, as in Qwen2.5-VL's language model. The loss is
next-token cross-entropy on the caption only, so the caption is predicted *conditioned on the image*. With
``text_only=True`` the same model sees the caption alone: the baseline that shows how much the image is read.

:func:`extract` returns the residual stream after a chosen layer for every token, the token types (image patch /
text / padding), the patches' grid coordinates and the attention probabilities of every layer and head. The same
function accepts a transformers Qwen2.5-VL (loaded with ``attn_implementation="eager"``; see
:func:`extract_hf`), which is how a reader with weights runs the paper's setting.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
from torch import nn
from torch.nn import functional as F
from tqdm.auto import tqdm

from ..results import checkpoints
from .. import checks, config
from .data import SceneSet
from ..results import door

FORMAT = "compbook-tiny-vlm/1"
IMAGE, TEXT, PAD = 0, 1, -1


@dataclass
class TinyVLMConfig:
    """Sizes of a :class:`TinyVLM` (our choice; ``text_only``: the caption-only baseline)."""
    vocab_size: int
    patch_dim: int = 48
    grid: tuple = (8, 8)
    max_text: int = 32
    d_model: int = 64
    n_layers: int = 4
    n_heads: int = 4
    d_mlp: int = 256
    text_only: bool = False
    pad_id: int = 0
    seed: int = 0

    def __post_init__(self):
        for name in ("vocab_size", "patch_dim", "max_text", "d_model", "n_layers", "n_heads", "d_mlp"):
            checks.integer(getattr(self, name), name)
        for g in checks.sequence(self.grid, "grid", 2, 2):
            checks.integer(g, "grid")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads})")
        checks.integer(self.pad_id, "pad_id", 0, self.vocab_size - 1)
        checks.seed(self.seed)
        checks.boolean(self.text_only, "text_only")      # a string such as "no" would be true
        checks.check_budget(4.0 * 4 * self.n_weights, f"a TinyVLM of d_model={self.d_model}, "
                            f"n_layers={self.n_layers}, d_mlp={self.d_mlp}, vocab_size={self.vocab_size} "
                            f"(weights, gradients and Adam's moments)")

    @property
    def n_weights(self) -> float:
        """About how many weights a model of this config has (an upper bound of the layers' biases and norms)."""
        d = self.d_model
        return float(self.n_layers * (4 * d * d + 2 * d * self.d_mlp + 16 * d) + 2 * self.vocab_size * d
                     + (self.patch_dim + self.grid[0] * self.grid[1] + self.max_text) * d)

    @property
    def n_patches(self) -> int:
        return self.grid[0] * self.grid[1]


class Block(nn.Module):
    """Pre-LayerNorm block; attention written out so that its probabilities can be returned."""

    def __init__(self, cfg: TinyVLMConfig):
        super().__init__()
        self.n_heads = cfg.n_heads
        self.ln1, self.ln2 = nn.LayerNorm(cfg.d_model), nn.LayerNorm(cfg.d_model)
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)
        self.proj = nn.Linear(cfg.d_model, cfg.d_model)
        self.mlp = nn.Sequential(nn.Linear(cfg.d_model, cfg.d_mlp), nn.GELU(), nn.Linear(cfg.d_mlp, cfg.d_model))

    def forward(self, x: torch.Tensor, need_weights: bool = False,
                mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor | None]:
        """(B, T, d) -> (B, T, d) and attention probabilities (B, H, T, T) (None unless ``need_weights``:
        training uses the fused kernel, which computes the same attention without returning it). ``mask``
        (T, T) bool, True where attention is allowed; None: causal (chapter 15's object VLMs pass others)."""
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).reshape(b, t, 3, self.n_heads, d // self.n_heads).permute(2, 0, 3, 1, 4)
        probs = None
        if need_weights:
            scores = q @ k.transpose(-1, -2) / (d // self.n_heads) ** 0.5
            allowed = torch.ones(t, t, dtype=torch.bool, device=x.device).tril() if mask is None else mask
            probs = scores.masked_fill(~allowed, float("-inf")).softmax(-1)
            y = probs @ v
        elif mask is None:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.ln2(x)), probs


class TinyVLM(nn.Module):
    """``forward(patches (B, P, patch_dim), tokens (B, L)) -> logits (B, L, vocab)`` at the caption positions."""

    def __init__(self, cfg: TinyVLMConfig):
        checks.instance(cfg, "cfg", TinyVLMConfig)
        super().__init__()
        self.cfg = cfg
        torch.manual_seed(cfg.seed)
        self.patch_embed = nn.Linear(cfg.patch_dim, cfg.d_model)
        self.patch_pos = nn.Parameter(0.02 * torch.randn(cfg.n_patches, cfg.d_model))
        self.tok_embed = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.tok_pos = nn.Parameter(0.02 * torch.randn(cfg.max_text, cfg.d_model))
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.ln_f = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, cfg.vocab_size)

    def n_image_tokens(self) -> int:
        return 0 if self.cfg.text_only else self.cfg.n_patches

    @property
    def patch_idx(self) -> torch.Tensor:
        """Positions (P,) of the image patches in the sequence: the image block comes first."""
        return torch.arange(self.n_image_tokens())

    def embed(self, patches: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        """The input sequence (B, P + L, d): patch tokens then caption tokens (caption only when text_only).
        ``tokens`` ids in ``0..vocab_size-1`` and finite ``patches`` (:func:`check_inputs`)."""
        check_inputs(self.cfg, patches, tokens)
        text = self.tok_embed(tokens) + self.tok_pos[: tokens.shape[1]]
        if self.cfg.text_only:
            return text
        return torch.cat([self.patch_embed(patches) + self.patch_pos, text], 1)

    def run(self, patches, tokens, need_weights: bool = True) -> tuple[torch.Tensor, list, list]:
        """Logits (B, L, V), residual streams [(B, T, d)] * (n_layers + 1) (0: embeddings), attentions
        [(B, H, T, T)] * n_layers (Nones unless ``need_weights``)."""
        x = self.embed(patches, tokens)
        hidden, attns = [x], []
        for blk in self.blocks:
            x, a = blk(x, need_weights)
            hidden.append(x)
            attns.append(a)
        logits = self.head(self.ln_f(x[:, self.n_image_tokens():]))
        return logits, hidden, attns

    def forward(self, patches, tokens) -> torch.Tensor:
        return self.run(patches, tokens, need_weights=False)[0]


def caption_loss(model: TinyVLM, patches, tokens, pad_id: int) -> torch.Tensor:
    """Next-token cross-entropy over the caption (targets tokens[1:], padding ignored)."""
    checks.instance(model, "model", TinyVLM)
    tokens = checks.tensor(tokens, "tokens", (None, None), floating=False)
    if tokens.is_floating_point() or tokens.dtype == torch.bool:
        raise ValueError(f"tokens must hold integer token ids, got dtype {tokens.dtype}")
    pad_id = checks.integer(pad_id, "pad_id", 0, model.cfg.vocab_size - 1)
    check_inputs(model.cfg, patches, tokens)
    logits = model(patches, tokens[:, :-1])
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tokens[:, 1:].reshape(-1), ignore_index=pad_id)


@torch.no_grad()
def caption_accuracy(model: TinyVLM, scenes, batch: int = 256) -> dict:
    """Teacher-forced next-token accuracy on ``scenes`` (a :class:`compbook.sae.data.SceneSet`): over all caption
    targets (``all``) and over the words that name a colour or shape (``concept words``)."""
    batch = checks.integer(batch, "batch")
    checks.instance(model, "model", TinyVLM)
    checks.instance(scenes, "scenes", SceneSet)
    if len(scenes) == 0:
        raise ValueError("scenes: no scenes to score the captions on")
    check_inputs(model.cfg, scenes.patches, scenes.tokens[:, :-1], "scenes.patches", "scenes.tokens")
    if not bool((scenes.tokens[:, 1:] != scenes.vocab.pad_id).any()):
        raise ValueError("scenes: no caption token to predict (all padding)")
    check_batch_size(model.cfg, min(batch, len(scenes)), scenes.tokens.shape[1], "caption_accuracy")
    model.eval()
    hits, total, chits, ctotal = 0, 0, 0, 0
    for i in range(0, len(scenes), batch):
        tok = scenes.tokens[i:i + batch]
        pred = model(scenes.patches[i:i + batch], tok[:, :-1]).argmax(-1)
        tgt = tok[:, 1:]
        keep = tgt != scenes.vocab.pad_id
        concept = scenes.token_concept[i:i + batch, 1:] >= 0
        hits += int(((pred == tgt) & keep).sum())
        total += int(keep.sum())
        chits += int(((pred == tgt) & concept).sum())
        ctotal += int(concept.sum())
    return {"all": hits / total, "concept words": chits / ctotal if ctotal else float("nan")}


@dataclass
class VLMTrainConfig:
    """How :func:`train_vlm` trains (our choice)."""
    steps: int = 1500
    batch: int = 64
    lr: float = 3e-3
    weight_decay: float = 0.01
    seed: int = 0

    def __post_init__(self):
        checks.integer(self.steps, "steps")
        checks.integer(self.batch, "batch")
        checks.real(self.lr, "lr", 0, low_open=True)
        checks.real(self.weight_decay, "weight_decay", 0)
        checks.seed(self.seed)


def check_inputs(cfg: TinyVLMConfig, patches, tokens, patches_name: str = "patches",
                 tokens_name: str = "tokens") -> None:
    """``ValueError`` naming the argument unless ``tokens`` (B, L <= max_text) are integer ids in
    ``0..vocab_size-1`` and ``patches`` (B, n_patches, patch_dim) finite floats (any when ``text_only``)."""
    tokens = checks.tensor(tokens, tokens_name, (None, None), floating=False)
    if tokens.is_floating_point() or tokens.dtype == torch.bool:
        raise ValueError(f"{tokens_name} must hold integer token ids, got dtype {tokens.dtype}")
    checks.tensor(tokens, tokens_name, low=0, high=cfg.vocab_size - 1, floating=False)
    if tokens.shape[1] > cfg.max_text:
        raise ValueError(f"{tokens_name}: {tokens.shape[1]} caption tokens, the model reads at most "
                         f"max_text={cfg.max_text}")
    if not cfg.text_only:
        patches = checks.tensor(patches, patches_name, (len(tokens), cfg.n_patches, cfg.patch_dim))
        if patches.dtype != torch.float32:
            raise ValueError(f"{patches_name} must be float32 (the model's weights), got {patches.dtype}")


def check_batch_size(cfg: TinyVLMConfig, batch: int, n_text: int, what: str, training: bool = False) -> None:
    """Refuse (``checks.check_budget``) a forward pass of ``batch`` sequences whose activations and attention
    probabilities of every layer (twice: forward and backward) would not fit in memory, before anything is
    allocated; ``training``: with the model built on the way, its initialisation's temporaries, the gradients and
    AdamW's two moments (5 copies of :attr:`TinyVLMConfig.n_weights`, float32)."""
    t = (0 if cfg.text_only else cfg.n_patches) + n_text
    per_seq = cfg.n_layers * (cfg.n_heads * t * t + t * (4 * cfg.d_model + cfg.d_mlp)) + t * cfg.vocab_size
    checks.check_budget(4.0 * (2 * batch * per_seq + (5 * cfg.n_weights if training else 0)),
                        f"{what} on {batch} sequences of {t} tokens")


def train_vlm(cfg: TinyVLMConfig, scenes, tcfg: VLMTrainConfig, progress: bool = True,
              model: nn.Module | None = None) -> tuple[TinyVLM, dict]:
    """Train a :class:`TinyVLM` on ``scenes`` (or ``model``, a variant built on ``cfg``: chapter 15's object
    VLMs); AdamW with cosine decay; deterministic given the seeds. Trains on :func:`compbook.config.device` (a
    GPU in full mode) and returns the model on the CPU, where it is stored and read."""
    checks.instance(cfg, "cfg", TinyVLMConfig)
    checks.instance(tcfg, "tcfg", VLMTrainConfig)
    checks.instance(scenes, "scenes", SceneSet)
    if len(scenes) == 0:
        raise ValueError("scenes: no scenes to train on")
    check_inputs(cfg, scenes.patches, scenes.tokens[:, :-1], "scenes.patches", "scenes.tokens")
    if model is not None:
        checks.instance(model, "model", nn.Module)
    check_batch_size(cfg, tcfg.batch, scenes.tokens.shape[1], "training", training=True)
    model = TinyVLM(cfg) if model is None else model
    dev = config.device()
    model.to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=tcfg.lr, weight_decay=tcfg.weight_decay)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, tcfg.steps)
    g = torch.Generator().manual_seed(tcfg.seed)
    losses, t0 = [], time.perf_counter()
    model.train()
    for _ in tqdm(range(tcfg.steps), disable=not progress, desc="text-only" if cfg.text_only else "tiny VLM"):
        idx = torch.randint(0, len(scenes), (tcfg.batch,), generator=g)
        loss = caption_loss(model, scenes.patches[idx].to(dev), scenes.tokens[idx].to(dev), scenes.vocab.pad_id)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        losses.append(loss.item())
    model.eval()
    model.cpu()
    return model, {"losses": losses, "seconds": time.perf_counter() - t0}


def save_vlm(model: TinyVLM, path, metadata: dict | None = None) -> Path:
    """``path.safetensors`` (weights) + ``path.json`` (config, metadata); returns the JSON path."""
    checks.instance(model, "model", TinyVLM)
    return checkpoints.save(path, model.state_dict(), {"config": asdict(model.cfg), "metadata": metadata or {}},
                            format=FORMAT)


def load_vlm(path) -> tuple[TinyVLM, dict]:
    """A :func:`save_vlm` checkpoint -> (model in eval mode, metadata). ValueError naming the file and what
    differs: a sidecar without ``config`` or ``metadata``, a config with an unknown or missing field, tensors of
    another width, vocabulary or depth than the sidecar says, renamed or edited tensors."""
    header = checkpoints.read_header(path, format=FORMAT)
    model = TinyVLM(sidecar_config(header, checkpoints.files(path)[0]))
    meta = checks.mapping(header.get("metadata"), f"{checkpoints.files(path)[0]}: sidecar field 'metadata'")
    tensors, _ = checkpoints.load(path, format=FORMAT, names=model.state_dict(), facts=vlm_facts)
    model.load_state_dict(tensors)
    return model.eval(), meta


def sidecar_config(header: dict, where) -> TinyVLMConfig:
    """The :class:`TinyVLMConfig` of a checkpoint sidecar's ``config`` (unknown or missing fields refused,
    naming ``where`` and the field)."""
    name = f"{where}: sidecar field 'config'"
    c = dict(checks.mapping(header.get("config"), name))
    if isinstance(c.get("grid"), list):
        c["grid"] = tuple(c["grid"])
    return checks.from_fields(TinyVLMConfig, c, name)


def vlm_facts(tensors: dict) -> dict:
    """What a TinyVLM's tensors say of its sidecar's config: width, vocabulary, depth, patch size and grid."""
    n_layers = len({k.split(".")[1] for k in tensors if k.startswith("blocks.")})
    return {"config.d_model": tensors["tok_embed.weight"].shape[1],
            "config.vocab_size": tensors["tok_embed.weight"].shape[0], "config.n_layers": n_layers,
            "config.patch_dim": tensors["patch_embed.weight"].shape[1],
            "config.max_text": tensors["tok_pos"].shape[0]}


# -- extraction ----------------------------------------------------------------------------------------------------
@dataclass
class Extraction:
    """What :func:`extract` returns. ``resid`` (B, T, d) after the chosen layer; ``token_type`` (B, T) 0 image
    patch, 1 text, -1 padding; ``patch_rc`` (B, T, 2) grid row/column of image patches (-1 elsewhere);
    ``attentions`` (B, layers, heads, T, T); ``patch_idx`` (P,) positions of the patches (row-major), ``grid``.
    Learned prefix tokens before the patches (:class:`compbook.sae.studies.objregions.ObjectVLM`) are marked -1: not
    data."""
    resid: torch.Tensor
    token_type: torch.Tensor
    patch_rc: torch.Tensor
    attentions: torch.Tensor
    patch_idx: torch.Tensor
    grid: tuple
    layer: int = 0
    extra: dict = field(default_factory=dict)


def _check_layer(layer: int, n_layers: int) -> int:
    """``layer`` as an int in ``0..n_layers`` (0 = embeddings, l = after block l)."""
    try:
        return checks.integer(layer, "layer", 0, n_layers)
    except ValueError:
        raise ValueError(f"layer={layer!r}: must be an integer in 0..{n_layers} (0 = embeddings, l = after "
                         f"block l)") from None


def _patch_coords(b: int, t: int, patch_idx: torch.Tensor, grid: tuple) -> torch.Tensor:
    rc = torch.full((b, t, 2), -1, dtype=torch.long)
    cells = torch.arange(grid[0] * grid[1])
    rc[:, patch_idx] = torch.stack([cells // grid[1], cells % grid[1]], 1)
    return rc


def check_attentions(attentions, model_name: str) -> None:
    """ValueError (argument ``model``) when a forward pass returned no attention probabilities."""
    if attentions is None or len(attentions) == 0 or any(a is None for a in attentions):
        raise ValueError(f"model: {model_name} returned no attentions; load it with "
                         "attn_implementation='eager' (e.g. from_pretrained(..., attn_implementation='eager')) "
                         "and call it with output_attentions=True (SDPA/flash attention never return them)")


@torch.no_grad()
def extract(model, inputs, layer: int) -> Extraction:
    """Residual stream after ``layer``, token types, patch coordinates and all attention probabilities.

    ``model`` a :class:`TinyVLM` with ``inputs = (patches (B, P, patch_dim), tokens (B, L))``, or a transformers
    Qwen2.5-VL with ``inputs`` the processor's output (see :func:`extract_hf`).
    """
    if not isinstance(model, TinyVLM):
        if not hasattr(model, "config"):
            raise ValueError(f"model must be a TinyVLM or a transformers Qwen2.5-VL, got {type(model).__name__}")
        return extract_hf(model, inputs, layer)
    patches, tokens = checks.sequence(inputs, "inputs (patches, tokens)", 2, 2)
    checks.instance(model, "model", TinyVLM)
    layer = _check_layer(layer, model.cfg.n_layers)
    tokens = checks.tensor(tokens, "tokens", (None, None), floating=False, finite=False)
    check_batch_size(model.cfg, len(tokens), tokens.shape[1], "extract")   # before reading every value
    check_inputs(model.cfg, patches, tokens)
    _, hidden, attns = model.run(patches, tokens)
    check_attentions(attns, "TinyVLM")
    b, t = hidden[layer].shape[:2]
    p = model.n_image_tokens()
    patch_idx = model.patch_idx
    token_type = torch.full((b, t), TEXT, dtype=torch.long)
    token_type[:, :p] = PAD                         # learned prefix tokens before the patches are not data
    token_type[:, patch_idx] = IMAGE
    token_type[:, p:][tokens == model.cfg.pad_id] = PAD
    return Extraction(hidden[layer], token_type, _patch_coords(b, t, patch_idx, model.cfg.grid),
                      torch.stack(attns, 1), patch_idx, model.cfg.grid if p else (0, 0), layer)


@torch.no_grad()
def extract_hf(model, inputs: dict, layer: int) -> Extraction:
    """:func:`extract` for a transformers Qwen2.5-VL (one image per sample, the same grid for the batch).

    ``inputs``: ``input_ids`` (B, T), ``attention_mask``, ``pixel_values``, ``image_grid_thw`` (B, 3) as the
    processor returns them. Image tokens are where ``input_ids == config.image_token_id``; their grid is
    ``(h, w) // spatial_merge_size`` from ``image_grid_thw``, row-major, as Qwen2.5-VL's merger lays them out.
    """
    cfg = model.config
    n_layers = cfg.get_text_config().num_hidden_layers
    layer = _check_layer(layer, n_layers)
    out = model(**inputs, output_hidden_states=True, output_attentions=True, return_dict=True)
    check_attentions(getattr(out, "attentions", None), type(model).__name__)
    ids = inputs["input_ids"]
    b, t = ids.shape
    merge = cfg.vision_config.spatial_merge_size
    thw = inputs["image_grid_thw"]
    if len(thw) != b or not (thw == thw[0]).all() or int(thw[0, 0]) != 1:
        raise ValueError("inputs: extract_hf needs one still image per sample and the same grid for the batch")
    grid = (int(thw[0, 1]) // merge, int(thw[0, 2]) // merge)
    is_img = ids == cfg.image_token_id
    pos = is_img[0].nonzero().flatten()
    if not (is_img.sum(1) == grid[0] * grid[1]).all() or not (is_img == is_img[0]).all():
        raise ValueError(f"inputs: each sample needs {grid[0] * grid[1]} image tokens at the same positions")
    token_type = torch.full((b, t), TEXT, dtype=torch.long)
    token_type[is_img] = IMAGE
    if "attention_mask" in inputs:
        token_type[inputs["attention_mask"] == 0] = PAD
    return Extraction(out.hidden_states[layer].float(), token_type, _patch_coords(b, t, pos, grid),
                      torch.stack([a.float() for a in out.attentions], 1), pos, grid, layer)


# -- the book's stored pair: the tiny VLM and its text-only baseline ---------------------------------------------
@dataclass
class Recipe:
    """Everything that decides the stored models (our choice); a stored pair is used only if its recipe matches."""
    n_train: int = 2000
    n_test: int = 300
    train_seed: int = 0
    test_seed: int = 1
    d_model: int = 48
    n_layers: int = 3
    n_heads: int = 4
    d_mlp: int = 192
    steps: int = 600
    batch: int = 32
    lr: float = 3e-3
    seed: int = 0

    def __post_init__(self):
        for name in ("n_train", "n_test", "d_model", "n_layers", "n_heads", "d_mlp", "steps", "batch"):
            checks.integer(getattr(self, name), name)
        for name in ("train_seed", "test_seed", "seed"):
            checks.integer(getattr(self, name), name, 0)
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads})")
        checks.real(self.lr, "lr", 0, low_open=True)


STORE = "sae/tiny_vlm"


def vlm_config(scenes, recipe: Recipe, text_only: bool = False) -> TinyVLMConfig:
    """The :class:`TinyVLMConfig` of ``recipe`` for scenes shaped like ``scenes``."""
    checks.instance(scenes, "scenes", SceneSet)
    checks.instance(recipe, "recipe", Recipe)
    return TinyVLMConfig(vocab_size=len(scenes.vocab), patch_dim=scenes.patches.shape[-1], grid=scenes.grid,
                         max_text=scenes.tokens.shape[1], d_model=recipe.d_model, n_layers=recipe.n_layers,
                         n_heads=recipe.n_heads, d_mlp=recipe.d_mlp, text_only=text_only,
                         pad_id=scenes.vocab.pad_id, seed=recipe.seed)


def pretrained_vlm(retrain: bool = False, recipe: Recipe | None = None, progress: bool = True):
    """(tiny VLM, text-only baseline, metadata) from ``data/sae/``; trains and stores both when ``retrain``,
    when the files are missing or when their recipe differs from ``recipe``. Metadata holds the held-out caption
    accuracies of both, their training seconds and the recipe."""

    recipe = recipe or Recipe()
    made = {}

    def make():
        made["models"] = _train_pair(recipe, progress)

    stems = [door.stored_or_made(f"{STORE}{suffix}", asdict(recipe), make, recorded=_recorded_recipe,
                                 stale="remake", remake=retrain and not made, command="python -m compbook.sae vlm")
             for suffix in ("", "_text_only")]
    if made:
        return made["models"]
    (vlm, meta), (text, _) = load_vlm(stems[0]), load_vlm(stems[1])
    return vlm, text, meta


def _recorded_recipe(stem):
    """The recipe a stored tiny VLM was trained with (its metadata's ``recipe``)."""
    return checkpoints.read_header(stem, format=FORMAT).get("metadata", {}).get("recipe")


def _train_pair(recipe: Recipe, progress: bool):
    """Train the tiny VLM and its text-only baseline of ``recipe`` and store both: ``(vlm, text, metadata)``."""
    from .data import make_scenes

    train = make_scenes(recipe.n_train, seed=recipe.train_seed)
    test = make_scenes(recipe.n_test, seed=recipe.test_seed)
    tcfg = VLMTrainConfig(steps=recipe.steps, batch=recipe.batch, lr=recipe.lr, seed=recipe.seed)
    vlm, vinfo = train_vlm(vlm_config(train, recipe), train, tcfg, progress)
    text, tinfo = train_vlm(vlm_config(train, recipe, text_only=True), train, tcfg, progress)
    meta = {"recipe": asdict(recipe), "torch": torch.__version__,
            "accuracy": {"vlm": caption_accuracy(vlm, test), "text only": caption_accuracy(text, test)},
            "seconds": {"vlm": vinfo["seconds"], "text only": tinfo["seconds"]},
            "final loss": {"vlm": vinfo["losses"][-1], "text only": tinfo["losses"][-1]}}
    save_vlm(vlm, door.made_path(STORE), meta)
    save_vlm(text, door.made_path(f"{STORE}_text_only"), meta)
    return vlm, text, meta
