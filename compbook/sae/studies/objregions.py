"""Regions that can follow objects: tiny-VLM variants whose patch attention is free of raster order (chapter 15).

The book's tiny VLM reads the image first in one causal sequence, so patch ``i`` can only attend to patches
``0..i`` and its attention mass is spread over ``i + 1`` of them: the image-block attention mostly encodes raster
position, and S2AE's regions follow position rather than objects. A real VLM has tokens before its image (a
system prompt, attention sinks) and a ViT whose patches attend to each other both ways. Two variants (our
choices, parameters of :class:`ObjectVLM`):

* ``n_prefix`` learned **prefix (sink) tokens** before the patches (the sequence stays causal);
* ``bidirectional``: the prefix and patch block attend to each other in both directions (the ViT analogue),
  the caption stays causal.

Both are trained as the book's tiny VLM is (:class:`compbook.sae.vlm.Recipe`: scenes, steps, optimiser; see
:data:`RECIPES`), on the
quadrant layout (``"grid2"``) and on a **layout-neutral** one (``"grid3"``: a 3x3 grid of smaller objects whose
cells do not line up with the quadrants, so proximity alone no longer fits the objects). :func:`region_table`
measures region purity (:func:`compbook.sae.metrics.region_purity`) of the paper's regions, of attention alone
and of proximity alone, and how the symmetrised patch attention correlates with "same object" and with raster
order ``1 / (max(i, j) + 1)``.

Command (stores the six models in ``data/sae/objvlm/``)::

    nice -n 5 python -m compbook.sae objregions
"""

from __future__ import annotations

from dataclasses import asdict

import numpy as np
import pandas as pd
import torch

from ...results import checkpoints
from ... import checks
from ..metrics import region_purity
from ..regions import average_linkage, grid_distance, image_attention, patch_regions
from ..vlm import Recipe, TinyVLM, TinyVLMConfig, VLMTrainConfig, caption_accuracy, train_vlm, vlm_config
from ...results import door

FORMAT = "compbook-object-vlm/1"
STORE = "sae/objvlm"
#: The variants (our choice): name -> (n_prefix, bidirectional).
VARIANTS = {"causal (the book's)": (0, False), "4 prefix tokens": (4, False), "bidirectional patches": (0, True)}
#: The layouts (names of :data:`compbook.scenes.LAYOUTS`) the variants are trained and scored on: the
#: quadrants and the layout-neutral 3x3 grid.
OBJECT_VLM_LAYOUTS = ("grid2", "grid3")
#: The training recipe per layout (our choice): the book's for the quadrants; on the 3x3 layout (9 slots, smaller
#: objects) 600 steps leave the captions' concept words at 33-55% accuracy, so those models train 2000 steps.
RECIPES = {"grid2": Recipe(), "grid3": Recipe(steps=2000)}


class ObjectVLM(TinyVLM):
    """:class:`TinyVLM` with ``n_prefix`` learned tokens before the patches and, if ``bidirectional``, full
    attention within the prefix + patch block. ``n_prefix = 0, bidirectional = False`` is the book's model."""

    def __init__(self, cfg: TinyVLMConfig, n_prefix: int = 0, bidirectional: bool = False):
        checks.instance(cfg, "cfg", TinyVLMConfig)
        n_prefix = checks.integer(n_prefix, "n_prefix", 0)                # 2.7 is refused, never truncated
        checks.boolean(bidirectional, "bidirectional")
        # the prefix and the model's weights, each drawn then copied into its parameter (twice float32)
        checks.check_budget(8.0 * (n_prefix * cfg.d_model + cfg.n_weights),
                            f"n_prefix={n_prefix} learned prefix tokens in a model of d_model={cfg.d_model}")
        if cfg.text_only:
            raise ValueError("cfg: text_only models have no image block")
        super().__init__(cfg)
        self.n_prefix, self.bidirectional = n_prefix, bool(bidirectional)
        g = torch.Generator().manual_seed(cfg.seed + 1)
        self.prefix = torch.nn.Parameter(0.02 * torch.randn(self.n_prefix, cfg.d_model, generator=g))

    def n_image_tokens(self) -> int:
        return self.n_prefix + self.cfg.n_patches

    @property
    def patch_idx(self) -> torch.Tensor:
        """Positions of the image patches in the sequence."""
        return torch.arange(self.n_prefix, self.n_image_tokens())

    def embed(self, patches, tokens):
        x = super().embed(patches, tokens)
        return torch.cat([self.prefix.expand(len(x), -1, -1), x], 1)

    def mask(self, t: int) -> torch.Tensor:
        """Bool (t, t), True where attention is allowed: causal, plus the whole image block if bidirectional."""
        m = torch.ones(t, t, dtype=torch.bool).tril()
        if self.bidirectional:
            m[: self.n_image_tokens(), : self.n_image_tokens()] = True
        return m

    def run(self, patches, tokens, need_weights: bool = True):
        x = self.embed(patches, tokens)
        mask = self.mask(x.shape[1])
        hidden, attns = [x], []
        for blk in self.blocks:
            x, a = blk(x, need_weights, mask=mask)
            hidden.append(x)
            attns.append(a)
        return self.head(self.ln_f(x[:, self.n_image_tokens():])), hidden, attns


def train_object_vlm(cfg: TinyVLMConfig, n_prefix: int, bidirectional: bool, scenes, tcfg: VLMTrainConfig,
                     progress: bool = False) -> tuple[ObjectVLM, dict]:
    """Train an :class:`ObjectVLM` exactly as :func:`compbook.sae.vlm.train_vlm` trains the book's model."""
    return train_vlm(cfg, scenes, tcfg, progress, model=ObjectVLM(cfg, n_prefix, bidirectional))


def load_object_vlm(path, n_prefix: int, bidirectional: bool) -> tuple[ObjectVLM, dict]:
    """A stored :class:`ObjectVLM` (``n_prefix`` prefix tokens, ``bidirectional``) -> (model in eval mode,
    sidecar metadata). ValueError naming the file and what differs: a sidecar without ``config``, a config with
    an unknown or missing field, tensors of another width, vocabulary, depth or prefix count than the sidecar
    and the arguments say (:func:`compbook.checks.sidecar_agrees`), renamed or edited tensors."""
    from ..vlm import sidecar_config, vlm_facts

    header = checkpoints.read_header(path, format=FORMAT)
    where = checkpoints.files(path)[0]
    model = ObjectVLM(sidecar_config(header, where), n_prefix, bidirectional)
    meta = checks.mapping(header.get("metadata", {}), f"{where}: sidecar field 'metadata'")

    def facts(t):
        if t["prefix"].shape[0] != model.n_prefix:
            raise ValueError(f"n_prefix={model.n_prefix}: {where.with_suffix('.safetensors')} stores "
                             f"{t['prefix'].shape[0]} prefix tokens")
        return vlm_facts(t)

    tensors, _ = checkpoints.load(path, format=FORMAT, names=model.state_dict(), facts=facts)
    model.load_state_dict(tensors)
    return model.eval(), meta


def _name(variant: str, layout: str) -> str:
    n_prefix, bidi = VARIANTS[variant]
    return f"{STORE}/{layout}_prefix{n_prefix}_{'bidi' if bidi else 'causal'}"


def stored_object_vlm(variant: str, layout: str, recipe: Recipe | None = None, retrain: bool = False,
                      progress: bool = False) -> tuple[ObjectVLM, dict]:
    """The variant ``variant`` (a key of :data:`VARIANTS`) trained on ``layout`` scenes, from ``data/sae/objvlm/``
    when stored with the same recipe, else trained (``make_scenes(recipe.n_train, seed=recipe.train_seed,
    layout=layout)``) and stored. Metadata: recipe, layout, variant, held-out caption accuracy, seconds."""

    if variant not in VARIANTS:
        raise ValueError(f"variant={variant!r}: expected one of {tuple(VARIANTS)}")
    if layout not in OBJECT_VLM_LAYOUTS:
        raise ValueError(f"layout={layout!r}: expected one of {OBJECT_VLM_LAYOUTS}")
    recipe = recipe or RECIPES[layout]
    n_prefix, bidi = VARIANTS[variant]
    want = {"recipe": asdict(recipe), "layout": layout, "n_prefix": n_prefix, "bidirectional": bidi}
    made = {}

    def make():
        made["model"] = _train_object_vlm(recipe, want, door.made_path(_name(variant, layout)), progress)

    def recorded(stem):
        meta = checks.mapping(checkpoints.read_header(stem, format=FORMAT).get("metadata"),
                              f"{stem}.json: sidecar field 'metadata'")
        return {k: meta.get(k) for k in want}

    # stored (fetched outside a checkout) with the same recipe, else trained: a model of another recipe is retrained
    path = door.stored_or_made(_name(variant, layout), want, make, recorded=recorded, stale="remake",
                               remake=retrain, command="python -m compbook.sae objregions", log=None)
    return made["model"] if made else load_object_vlm(path, n_prefix, bidi)


def _train_object_vlm(recipe: Recipe, want: dict, path, progress: bool) -> tuple[ObjectVLM, dict]:
    """Train the object VLM ``want`` describes on its layout's scenes and store it at ``path``."""
    from ..data import make_scenes

    layout, n_prefix, bidi = want["layout"], want["n_prefix"], want["bidirectional"]
    train = make_scenes(recipe.n_train, seed=recipe.train_seed, layout=layout)
    test = make_scenes(recipe.n_test, seed=recipe.test_seed, layout=layout)
    tcfg = VLMTrainConfig(steps=recipe.steps, batch=recipe.batch, lr=recipe.lr, seed=recipe.seed)
    model, info = train_object_vlm(vlm_config(train, recipe), n_prefix, bidi, train, tcfg, progress)
    meta = {**want, "accuracy": caption_accuracy(model, test), "seconds": info["seconds"],
            "final loss": info["losses"][-1]}
    checkpoints.save(path, model.state_dict(), {"config": asdict(model.cfg), "metadata": meta}, format=FORMAT)
    return model, meta


@torch.no_grad()
def patch_attention(model: ObjectVLM, scenes, batch: int = 100) -> torch.Tensor:
    """Image-block attention (N, P, P) of ``model`` on ``scenes``, mean over layers and heads (the paper's "all")."""
    from ..vlm import check_batch_size

    checks.instance(model, "model", TinyVLM)
    if not all(hasattr(scenes, a) for a in ("patches", "tokens", "__len__")):
        raise ValueError(f"scenes must be a SceneSet (patches, tokens), got {type(scenes).__name__}")
    if len(scenes) == 0:
        raise ValueError("scenes: no scenes to read the attention of")
    batch = checks.integer(batch, "batch")
    check_batch_size(model.cfg, min(batch, len(scenes)), scenes.tokens.shape[1] + getattr(model, "n_prefix", 0),
                     "patch_attention")
    out = []
    for i in range(0, len(scenes), batch):
        _, _, attns = model.run(scenes.patches[i:i + batch], scenes.tokens[i:i + batch])
        out.append(image_attention(torch.stack(attns, 1), model.patch_idx))
    return torch.cat(out)


def attention_correlations(attn: torch.Tensor, labels: torch.Tensor) -> dict:
    """Mean over images of the Pearson correlation, over patch pairs i != j, of the symmetrised attention with
    "same object" (both patches on one object, background excluded) and with raster order 1 / (max(i, j) + 1)."""
    attn = checks.tensor(attn, "attn", (None, None, None))
    n, p, _ = attn.shape
    if n == 0 or p < 2:
        raise ValueError(f"attn: need at least one image of two patches, got shape {tuple(attn.shape)}")
    labels = torch.as_tensor(checks.integers(labels, "labels", -1, ndim=2))
    if attn.shape[2] != p or tuple(labels.shape) != (n, p):
        raise ValueError(f"attn (N, P, P) and labels (N, P) do not fit: got {tuple(attn.shape)} and "
                         f"{tuple(torch.as_tensor(labels).shape)}")
    a = (attn + attn.transpose(1, 2)) / 2
    off = ~torch.eye(p, dtype=torch.bool)
    i = torch.arange(p)
    raster = (1.0 / (torch.maximum(i[:, None], i[None]) + 1).float())[off]
    same, ras = [], []
    for m in range(n):
        x = a[m][off]
        lab = labels[m]
        s = ((lab[:, None] == lab[None]) & (lab[:, None] >= 0))[off].float()
        if s.std() > 0:
            same.append(float(torch.corrcoef(torch.stack([x, s]))[0, 1]))
        ras.append(float(torch.corrcoef(torch.stack([x, raster]))[0, 1]))
    return {"corr same object": float(np.mean(same)), "corr raster order": float(np.mean(ras))}


def region_row(model: ObjectVLM, scenes, n_regions: int = 20) -> dict:
    """Purity of the paper's regions and of attention alone, and the attention correlations, on ``scenes``."""
    attn = patch_attention(model, scenes)
    return {"purity (paper's regions)": region_purity(patch_regions(attn, scenes.grid, n_regions), scenes.labels),
            "purity (attention only)": region_purity(patch_regions(attn, scenes.grid, n_regions, exponent=0.0),
                                                     scenes.labels),
            **attention_correlations(attn, scenes.labels)}


def proximity_purity(scenes, n_regions: int = 20) -> float:
    """Purity of regions from proximity alone (the grid distance, no attention): the layout's own baseline."""
    from ..data import SceneSet

    checks.instance(scenes, "scenes", SceneSet)
    d = grid_distance(*scenes.grid).expand(len(scenes), -1, -1)
    return region_purity(average_linkage(d, n_regions), scenes.labels)


def region_table(n_test: int = 200, seed: int = 11, retrain: bool = False) -> pd.DataFrame:
    """One row per (layout, variant): caption accuracy on concept words, purity and correlations on ``n_test``
    fresh scenes of that layout (seed ``seed``), beside proximity alone."""
    from ..data import make_scenes

    rows = []
    for layout in OBJECT_VLM_LAYOUTS:
        scenes = make_scenes(n_test, seed=seed, layout=layout)
        base = proximity_purity(scenes)
        for variant in VARIANTS:
            model, meta = stored_object_vlm(variant, layout, retrain=retrain)
            rows.append({"layout": layout, "variant": variant,
                         "concept-word accuracy": meta["accuracy"]["concept words"], **region_row(model, scenes),
                         "purity (proximity only)": base, "train s": meta["seconds"]})
    return pd.DataFrame(rows)
