"""Save and load CPPNs: weights and masks in safetensors, the architecture in JSON (no pickles).

A checkpoint is two files, ``NAME.safetensors`` and ``NAME.json``. :func:`content_hash` identifies a network by
its architecture and exact weights, so caches (e.g. judge verdicts) can be keyed by what a network *is*.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

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
