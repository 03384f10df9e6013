"""The CLEVR-2D experiment of chapters 10-11: split, train (or load from ``data/binding/``), evaluate.

``load_or_train(swap_negatives)`` returns a trained :class:`~compbook.binding.train.DualStack` and its
:class:`Setup`; it loads ``data/binding/clevr2d_{swap|noswap}`` when present and trains (then saves) otherwise,
or always with ``retrain=True``. From the shell: ``python -m compbook.binding clevr --retrain``.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, asdict

import numpy as np

from ..results import checkpoints
from .. import checks, config
from .. import scenes as S
from . import data as D
from .encoders import EncoderConfig
from .recognition import concept_recognition, recognise
from .splits import coverage_split
from .train import DualStack, DualTrainConfig, train_stack
from ..results import door

MAX_LEN = 12


@dataclass(frozen=True)
class Setup(config.ModeConfig):
    """The CLEVR-2D experiment's choices (ours): coverage, seed, resolution, models, steps."""

    FULL = dict(res=224, n_models=8, steps=5000, batch=256)   # full mode: 224 px, 5000 steps, 8 models
    SMOKE = dict(n_models=2, steps=6, batch=8)

    coverage: float = 0.75
    seed: int = 0
    res: int = 32
    n_models: int = 2
    steps: int = 800
    batch: int = 64

    def __post_init__(self):
        checks.real(self.coverage, "coverage", 0, 1, low_open=True)
        checks.seed(self.seed)
        for name in ("res", "n_models", "steps", "batch"):
            checks.integer(getattr(self, name), name)


def default_setup() -> Setup:
    """CPU mode: 32 px, 800 steps, 2 models; full mode: 224 px, 5000 steps, 8 models."""
    return Setup.for_mode()


def encoder_config(setup: Setup) -> EncoderConfig:
    """The encoder sizes we use for CLEVR-2D (our choice)."""
    vocab = S.vocabulary(S.clevr2d())
    return EncoderConfig(res=setup.res, channels=(16, 32, 32), d_out=64, vocab_size=len(vocab), max_len=MAX_LEN,
                         width=32, layers=2, heads=4)


def scene_sets(setup: Setup) -> dict:
    """{"train", "val", "test"}: (N, 2) object-id pairs of the coverage split (test: held-out objects only)."""
    split = coverage_split(24, setup.coverage, seed=setup.seed)
    return {"train": split.train, "val": split.val, "test": split.test, "train_objects": split.train_objects,
            "test_objects": split.test_objects}


def evaluate(stack: DualStack, pairs, res: int) -> dict:
    """Recognition accuracies of every model on two-object scenes ``pairs`` (N, 2).

    Returns {"concept", "object", "swap", "caption"}: (M,) accuracies; "swap" = the present objects above the
    two swapped ones only (scenes where a swap changes something); "caption" = the scene's own two-object
    caption above its swapped caption (same scenes).
    """
    space = S.clevr2d()
    imgs = S.render_images(space, pairs, res=res)
    zi = stack.encode_images(imgs)
    zo = stack.encode_texts(D.object_queries(space, MAX_LEN))
    zc = {c: stack.encode_texts(q) for c, q in D.concept_queries(space, MAX_LEN).items()}
    opos = D.object_positives(space, pairs)
    vpos = {c: D.value_positives(space, pairs, c) for c in zc}
    sq, spos = D.swap_only_positives(space, pairs)
    keep = sq[:, 0] >= 0
    cand = np.zeros_like(opos)
    for i in np.flatnonzero(keep):
        cand[i, sq[i]] = True
    zt = stack.encode_texts(D.tokenize(space, [D.scene_caption(space, r) for r in pairs], MAX_LEN))
    zs = stack.encode_texts(D.tokenize(space, [D.scene_caption(space, r[2:]) for r in sq[keep]], MAX_LEN))
    out = {"concept": [], "object": [], "swap": [], "caption": []}
    for m in range(stack.n_models):
        out["concept"].append(concept_recognition(zi[m], {c: zc[c][m] for c in zc}, vpos).mean())
        out["object"].append(recognise(zi[m], zo[m], opos).mean())
        out["swap"].append(recognise(zi[m][keep], zo[m], opos[keep], cand[keep]).mean())
        own, other = (zi[m][keep] * zt[m][keep]).sum(-1), (zi[m][keep] * zs[m]).sum(-1)
        out["caption"].append((own > other).float().mean().item())
    return {k: np.array(v) for k, v in out.items()}


def swappable(pairs) -> np.ndarray:
    """(N,) bool for two-object scenes ``pairs`` (N, 2): the scenes whose objects differ in colour *and* in shape,
    the only ones where swapping the colours gives two other objects (chapter 10's "swapped only" and caption
    measures count these)."""
    return D.swap_only_positives(S.clevr2d(), _pairs(pairs))[0][:, 0] >= 0


def _pairs(pairs, min_size: int = 0) -> np.ndarray:
    """``pairs`` checked: an (N, 2) integer array of CLEVR-2D object ids, at least ``min_size`` rows."""
    pairs = checks.integers(pairs, "pairs", 0, S.clevr2d().n_objects - 1, ndim=2, min_size=min_size)
    if pairs.shape[1] != 2:
        raise ValueError(f"pairs: need (N, 2) object ids, got shape {pairs.shape}")
    return pairs


def chance(pairs) -> dict:
    """Chapter 10's chance levels: the share of the scenes ``pairs`` (N, 2) that a random order of the queries
    passes, per measure of :func:`evaluate` (``{"concept", "object", "swap", "caption"}``, floats).

    k present queries among n come out on top in 1 of C(n, k) orders. Concepts: the colours and the shapes
    apart (k = 1 or 2 of each), both must pass; objects: k = 1 or 2 of the 24 object queries; swap: the 2
    present among the 4 present and swapped objects (scenes of :func:`swappable` only); caption: 1 in 2.
    """
    from math import comb
    space, pairs = S.clevr2d(), _pairs(pairs, min_size=1)
    vals = space.object_values(pairs)                      # (N, 2 objects, C concepts)
    k = 1 + (vals[:, 0] != vals[:, 1])                     # (N, C): present values of each concept
    concept = np.prod([[1 / comb(n, int(j)) for n, j in zip(space.sizes, row)] for row in k], axis=1)
    k_obj = 1 + (pairs[:, 0] != pairs[:, 1])
    obj = [1 / comb(space.n_objects, int(j)) for j in k_obj]
    return {"concept": float(np.mean(concept)), "object": float(np.mean(obj)), "swap": 1 / comb(4, 2),
            "caption": 1 / 2}


def checkpoint_name(swap_negatives: bool, setup: Setup | None = None) -> str:
    """Where the stack of ``setup`` is stored under ``data/``: ``binding/clevr2d_{swap|noswap}`` for the CPU
    setup (``Setup()``), with ``_<8 hex of the setup>`` appended for any other (full mode gets its own files)."""
    name = f"binding/clevr2d_{'swap' if checks.boolean(swap_negatives, 'swap_negatives') else 'noswap'}"
    if setup is None or checks.instance(setup, "setup", Setup) == Setup():
        return name
    return f"{name}_{hashlib.sha256(json.dumps(asdict(setup), sort_keys=True).encode()).hexdigest()[:8]}"


def train(setup: Setup, swap_negatives: bool, progress: bool = True):
    """Train ``setup.n_models`` encoders at once; selection on the validation scenes (concept + object)."""
    space = S.clevr2d()
    sets = scene_sets(setup)
    data = D.build_pairs(space, sets["train"], sets["train_objects"], res=setup.res, max_len=MAX_LEN,
                         seed=setup.seed)

    def val_score(stack):
        r = evaluate(stack, sets["val"], setup.res)
        return (r["concept"] + r["object"]) / 2

    cfg = DualTrainConfig(steps=setup.steps, batch=setup.batch, swap_negatives=swap_negatives, seed=setup.seed)
    return train_stack(encoder_config(setup), cfg, data, setup.n_models, val_score=val_score, progress=progress), cfg


def load_or_train(swap_negatives: bool, retrain: bool = False, setup: Setup | None = None, save: bool = True):
    """(stack, setup, info): the stored models of ``data/binding/`` unless ``retrain`` or none stored.

    ``info`` holds how the models were made (train config, seconds, selected steps, validation scores).
    Each setup has its own files (:func:`checkpoint_name`); a stored stack whose recorded setup is not this one
    (an edited or misplaced file) is refused with ``ValueError``, never served nor trained over (pass
    ``retrain=True`` to replace it).
    """
    checks.boolean(retrain, "retrain")
    checks.boolean(save, "save")
    setup = default_setup() if setup is None else checks.instance(setup, "setup", Setup)
    name = checkpoint_name(swap_negatives, setup)
    if not save and (retrain or not door.is_stored(name)):
        return _trained(setup, swap_negatives, None)
    made = []
    path = door.stored_or_made(
        name, asdict(setup), lambda: made.append(_trained(setup, swap_negatives, door.made_path(name))),
        recorded=_recorded_setup, remake=retrain,
        command=f"load_or_train({swap_negatives}, retrain=True) (chapter 10's RETRAIN)")
    if made:
        return made[0]
    stack = DualStack.load(path)
    return stack, setup, stack.metadata


def _recorded_setup(stem):
    """The setup a stored stack was trained for (its sidecar's ``metadata.setup``)."""
    from .train import FORMAT
    return checks.mapping(checkpoints.read_header(stem, format=FORMAT).get("metadata"),
                          f"{stem}.json: sidecar field 'metadata'").get("setup")


def _trained(setup: Setup, swap_negatives: bool, path):
    """Train the stack of ``setup`` (stored at ``path`` unless None): ``(stack, setup, info)``."""
    t0 = time.perf_counter()
    result, cfg = train(setup, swap_negatives)
    info = {"setup": asdict(setup), "train": asdict(cfg), "seconds": round(time.perf_counter() - t0, 1),
            "best_step": result.best_step.tolist(), "val": result.val.tolist(),
            "final_loss": result.losses[-1].tolist(), "lr_first_last": [result.lrs[0], result.lrs[-1]]}
    if path is not None:
        result.stack.save(path, info)
    result.stack.metadata = info
    return result.stack, setup, info


def held_out_embeddings(swap_negatives: bool, sets: dict):
    """Chapter 12's reading of chapter 10's stored encoders on the given scene sets: ``(train, test)``, each
    ``(values, embeddings)`` of the scenes ``sets["train"]`` and ``sets["test"]`` (each (S, 2) object-id pairs,
    e.g. from :func:`scene_sets`): values (S, 2, C) slot-concept indices, embeddings (S, D) from the first
    stored model's image encoder (only that model is run)."""
    checks.mapping(sets, "sets")
    missing = [k for k in ("train", "test") if k not in sets]
    if missing:
        raise ValueError(f"sets: needs the keys 'train' and 'test' (as scene_sets gives), missing {missing}")
    stack, setup, _ = load_or_train(swap_negatives)
    first = DualStack(stack.cfg, 1, stack.seed, params={k: v[:1] for k, v in stack.params.items()},
                      device=stack.device)
    space, out = S.clevr2d(), []
    for part in ("train", "test"):
        pairs = _pairs(sets[part], min_size=1)
        z = first.encode_images(S.render_images(space, pairs, res=setup.res))[0].numpy()
        out.append((space.object_values(pairs), z))
    return out[0], out[1]


def scene_embeddings(pairs, untrained_seed: int = 7) -> dict:
    """Chapter 11's embeddings of the two-object scenes ``pairs`` (N, 2): ``{"image", "text", "image,
    untrained"}``, each an (N, D) float array. "image" and "text": the first stored plain model (chapter 10's,
    :func:`load_or_train`) on the scenes' images (at the setup's resolution) and on their captions; "image,
    untrained": an image encoder of the same layers with random weights (seed ``untrained_seed``)."""
    space, pairs = S.clevr2d(), _pairs(pairs, min_size=1)
    stack, setup, _ = load_or_train(False)
    untrained = DualStack(encoder_config(setup), n_models=1, seed=checks.seed(untrained_seed))
    images = S.render_images(space, pairs, res=setup.res)
    captions = D.tokenize(space, [D.scene_caption(space, p) for p in pairs], MAX_LEN)
    return {"image": stack.encode_images(images)[0].numpy(), "text": stack.encode_texts(captions)[0].numpy(),
            "image, untrained": untrained.encode_images(images)[0].numpy()}


def phrase_embeddings() -> np.ndarray:
    """Chapter 11's one-object phrases: the first stored plain model's text embedding of "a {colour} {shape}"
    for every object of CLEVR-2D, in object-id order, an (|O|, D) float array."""
    space = S.clevr2d()
    stack, _, _ = load_or_train(False)
    return stack.encode_texts(D.object_queries(space, MAX_LEN))[0].numpy()
