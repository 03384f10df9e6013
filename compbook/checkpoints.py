"""Save and load CPPNs: weights and masks in safetensors, the architecture in JSON (no pickles).

A checkpoint is two files, ``NAME.safetensors`` and ``NAME.json``. :func:`content_hash` identifies a network by
its architecture and exact weights, so caches (e.g. judge verdicts) can be keyed by what a network *is*.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Sequence

import torch
from safetensors.torch import load_file, save_file

from . import paths
from .cppn import CPPN

FORMAT = "compbook-cppn/1"


def save_cppn(model: CPPN, path, metadata: dict | None = None) -> Path:
    """Write ``path.safetensors`` and ``path.json``; returns the JSON path. ``metadata`` must be JSON-able."""
    path = Path(path).with_suffix("")
    path.parent.mkdir(parents=True, exist_ok=True)
    tensors = {}
    for l, (w, m) in enumerate(zip(model.weights, model.masks)):
        tensors[f"weight{l}"] = w.detach().cpu().contiguous()
        tensors[f"mask{l}"] = m.detach().cpu().contiguous()
    save_file(tensors, str(path.with_suffix(".safetensors")))
    config = {"format": FORMAT, "activations": model.activations, "color": model.color,
              "content_hash": content_hash(model), "metadata": metadata or {}}
    path.with_suffix(".json").write_text(json.dumps(config, indent=1))
    return path.with_suffix(".json")


def load_cppn(path) -> CPPN:
    """Load a checkpoint written by :func:`save_cppn`; checks the format and the stored content hash."""
    path = Path(path).with_suffix("")
    cfg_path, st_path = path.with_suffix(".json"), path.with_suffix(".safetensors")
    for p in (cfg_path, st_path):
        if not p.is_file():
            raise FileNotFoundError(f"checkpoint file {p} does not exist")
    try:
        config = json.loads(cfg_path.read_text())
    except json.JSONDecodeError as e:
        raise ValueError(f"{cfg_path}: not valid JSON ({e})") from e
    if config.get("format") != FORMAT:
        raise ValueError(f"{cfg_path}: format {config.get('format')!r} is not {FORMAT!r}")
    tensors = load_file(str(st_path))
    n = len(config["activations"]) + 1
    missing = [k for l in range(n) for k in (f"weight{l}", f"mask{l}") if k not in tensors]
    if missing:
        raise ValueError(f"{st_path}: missing tensors {missing}")
    model = CPPN(config["activations"], config["color"], [tensors[f"weight{l}"] for l in range(n)],
                 [tensors[f"mask{l}"] for l in range(n)])
    if content_hash(model) != config.get("content_hash"):
        raise ValueError(f"{st_path}: weights do not match the content hash in {cfg_path.name} (corrupt or edited)")
    return model


def load_metadata(path) -> dict:
    """The ``metadata`` dict stored beside a checkpoint."""
    return json.loads(Path(path).with_suffix(".json").read_text()).get("metadata", {})


def content_hash(model: CPPN) -> str:
    """SHA-256 (hex, 16 chars) of the architecture and the exact effective weights of ``model``."""
    h = hashlib.sha256(json.dumps([model.activations, model.color]).encode())
    for w in model.effective_weights():
        h.update(str(tuple(w.shape)).encode())
        h.update(w.detach().cpu().to(torch.float64).contiguous().numpy().tobytes())
    return h.hexdigest()[:16]


# -- stored networks under data/ (chapter 5's SGD twins) -------------------------------------------------
TWIN_RECIPE = "train.fit_many, adam, unit-normalised gradient (chapter 5)"


def twin_stem(name: str, res: int, steps: int, seed: int) -> str:
    """An SGD twin's checkpoint path under ``data/`` without suffix, e.g. ``emc2/sgd_skull_48px_1000steps_seed0``."""
    return f"emc2/sgd_{name}_{int(res)}px_{int(steps)}steps_seed{int(seed)}"


def find_checkpoint(stem: str) -> Path | None:
    """The checkpoint's JSON path (fetched from the repository outside a checkout), or None when absent."""
    try:
        found = [paths.data_file(stem + ext) for ext in (".json", ".safetensors")]
    except FileNotFoundError:
        return None
    return found[0] if all(p.exists() for p in found) else None


def sgd_twins(name: str, template: CPPN, target: torch.Tensor, seeds: Sequence[int], steps: int, lr: float,
              regenerate: bool = False) -> tuple[list[CPPN], str]:
    """SGD twins (chapter 5): dense CPPNs with ``template``'s activations, one per seed, fitted to ``target`` ``(res, res, 3)``.

    Returns ``(models, how)``; ``how`` says whether they were loaded (and from where) or trained and saved.
    ``regenerate`` trains even when checkpoints exist (and overwrites them).
    """
    if not seeds:
        raise ValueError("seeds: expected at least one seed")
    from . import train   # train imports nothing from here; keep checkpoints light to import

    target = train.as_target(target)
    res = int(target.shape[0])
    stems = [twin_stem(name, res, steps, s) for s in seeds]
    found = [None if regenerate else find_checkpoint(stem) for stem in stems]
    if all(found):
        return [load_cppn(p) for p in found], f"loaded from {found[0].parent}"
    models = [CPPN(template.activations, template.color, seed=s) for s in seeds]
    fit = train.fit_many(models, target, steps=steps, lr=lr)
    for s, stem, model in zip(seeds, stems, fit.models):
        meta = {"target": name, "res": res, "steps": steps, "lr": lr, "seed": s, "recipe": TWIN_RECIPE}
        save_cppn(model, paths.data_dir() / stem, meta)
    return fit.models, f"trained in {fit.seconds:.0f} s, saved to {paths.data_dir() / 'emc2'}"
