"""The CLEVR-2D experiment of chapters 10-11: split, train (or load from ``data/binding/``), evaluate.

``load_or_train(swap_negatives)`` returns a trained :class:`~compbook.binding.train.DualStack` and its
:class:`Setup`; it loads ``data/binding/clevr2d_{swap|noswap}`` when present and trains (then saves) otherwise,
or always with ``retrain=True``. From the shell: ``python -m compbook.binding.clevr --retrain``.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass, asdict

import numpy as np

from .. import config, paths
from .. import scenes as S
from . import data as D
from .encoders import EncoderConfig
from .recognition import concept_recognition, recognition
from .train import DualStack, TrainConfig, train_stack

MAX_LEN = 12


@dataclass(frozen=True)
class Setup:
    """The CLEVR-2D experiment's choices (ours): coverage, seed, resolution, models, steps."""

    coverage: float = 0.75
    seed: int = 0
    res: int = 32
    n_models: int = 2
    steps: int = 800
    batch: int = 64


def default_setup() -> Setup:
    """CPU mode: 32 px, 800 steps, 2 models; full mode: 224 px, 5000 steps, 8 models."""
    return config.by_mode(Setup(), Setup(res=224, n_models=8, steps=5000, batch=256))


def encoder_config(setup: Setup) -> EncoderConfig:
    """The encoder sizes we use for CLEVR-2D (our choice)."""
    vocab = S.vocabulary(S.clevr2d())
    return EncoderConfig(res=setup.res, channels=(16, 32, 32), d_out=64, vocab_size=len(vocab), max_len=MAX_LEN,
                         width=32, layers=2, heads=4)


def scene_sets(setup: Setup) -> dict:
    """{"train", "val", "test"}: (N, 2) object-id pairs of the coverage split (test: held-out objects only)."""
    split = S.coverage_split(24, setup.coverage, seed=setup.seed)
    return {"train": split.train, "val": split.val, "test": split.test, "train_objects": split.train_objects,
            "test_objects": split.test_objects}


def evaluate(stack: DualStack, pairs, res: int) -> dict:
    """Recognition accuracies of every model on two-object scenes ``pairs`` (N, 2).

    Returns {"concept", "object", "swap"}: (M,) accuracies; "swap" = the present objects above the two swapped
    ones only (scenes where a swap changes something).
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
    out = {"concept": [], "object": [], "swap": []}
    for m in range(stack.n_models):
        out["concept"].append(concept_recognition(zi[m], {c: zc[c][m] for c in zc}, vpos).mean())
        out["object"].append(recognition(zi[m], zo[m], opos).mean())
        out["swap"].append(recognition(zi[m][keep], zo[m], opos[keep], cand[keep]).mean())
    return {k: np.array(v) for k, v in out.items()}


def checkpoint_name(swap_negatives: bool) -> str:
    return f"binding/clevr2d_{'swap' if swap_negatives else 'noswap'}"


def train(setup: Setup, swap_negatives: bool, progress: bool = True):
    """Train ``setup.n_models`` encoders at once; selection on the validation scenes (concept + object)."""
    space = S.clevr2d()
    sets = scene_sets(setup)
    data = D.build_pairs(space, sets["train"], sets["train_objects"], res=setup.res, max_len=MAX_LEN,
                         seed=setup.seed)

    def val_score(stack):
        r = evaluate(stack, sets["val"], setup.res)
        return (r["concept"] + r["object"]) / 2

    cfg = TrainConfig(steps=setup.steps, batch=setup.batch, swap_negatives=swap_negatives, seed=setup.seed)
    return train_stack(encoder_config(setup), cfg, data, setup.n_models, val_score=val_score, progress=progress), cfg


def load_or_train(swap_negatives: bool, retrain: bool = False, setup: Setup | None = None, save: bool = True):
    """(stack, setup, info): the stored models of ``data/binding/`` unless ``retrain`` or none stored.

    ``info`` holds how the models were made (train config, seconds, selected steps, validation scores).
    A stored stack made with a different setup is not used: it is retrained (caches never answer another
    question).
    """
    setup = setup or default_setup()
    path = paths.data_file(checkpoint_name(swap_negatives) + ".json").with_suffix("")
    if not retrain and path.with_suffix(".json").exists():
        stack = DualStack.load(path)
        if stack.metadata.get("setup") == asdict(setup):
            return stack, setup, stack.metadata
    t0 = time.perf_counter()
    result, cfg = train(setup, swap_negatives)
    info = {"setup": asdict(setup), "train": asdict(cfg), "seconds": round(time.perf_counter() - t0, 1),
            "best_step": result.best_step.tolist(), "val": result.val.tolist(),
            "final_loss": result.losses[-1].tolist(), "lr_first_last": [result.lrs[0], result.lrs[-1]]}
    if save:
        result.stack.save(path, info)
    result.stack.metadata = info
    return result.stack, setup, info


def main(argv=None):
    p = argparse.ArgumentParser(description="Train the CLEVR-2D dual encoders of chapters 10-11.")
    p.add_argument("--retrain", action="store_true", help="train even when data/binding/ has the models")
    p.add_argument("--swap", choices=["both", "on", "off"], default="both")
    a = p.parse_args(argv)
    import torch
    torch.set_num_threads(1)   # small models on a shared CPU: one thread is fastest (measured: 2 threads 30x slower)
    for sw in {"both": (False, True), "on": (True,), "off": (False,)}[a.swap]:
        stack, setup, info = load_or_train(sw, retrain=a.retrain)
        print(checkpoint_name(sw), "seconds", info["seconds"], "best steps", info["best_step"])


if __name__ == "__main__":
    main()
