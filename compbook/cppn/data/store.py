"""Save and load CPPNs (chapters 5-9): weights and masks in safetensors, the architecture in JSON (no pickles).

A checkpoint is two files, ``NAME.safetensors`` and ``NAME.json``, in the book's one format
(:mod:`compbook.cppn.data.store`). :func:`content_hash` identifies a network by its architecture and exact weights,
so caches (e.g. judge verdicts) can be keyed by what a network *is*.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import torch

from ... import checks
from ...results.checkpoints import files, load as _load, read_header, save as _save
from ..network import COLOR_MODES, CPPN

FORMAT = "compbook-cppn/1"


def save_cppn(model: CPPN, path, metadata: dict | None = None, made_by: str | None = None) -> Path:
    """Write ``path.safetensors`` and ``path.json``; returns the JSON path. ``metadata`` must be JSON-able;
    ``made_by``: the command that made it (default: :func:`compbook.results.checkpoints.save`'s).

    Everything is checked before anything is written; a failure leaves no half-written checkpoint behind.
    """
    checks.instance(model, "model", CPPN)
    if metadata is not None and not isinstance(metadata, dict):
        raise ValueError(f"metadata must be a dict or None, got {type(metadata).__name__}")
    tensors = {}
    for l, (w, m) in enumerate(zip(model.weights, model.masks)):
        tensors[f"weight{l}"], tensors[f"mask{l}"] = w, m
    header = {"activations": model.activations, "color": model.color, "content_hash": content_hash(model),
              "metadata": metadata or {}}
    return _save(path, tensors, header, format=FORMAT, made_by=made_by)


def _read_config(path) -> dict:
    """The JSON sidecar as a dict with ``format``, ``activations`` and ``color``; ``ValueError`` naming it."""
    config = read_header(path, format=FORMAT)
    cfg_path = files(path)[0]
    missing = [k for k in ("activations", "color") if k not in config]
    if missing:
        raise ValueError(f"{cfg_path}: missing fields {missing}")
    if not isinstance(config.get("metadata", {}), dict):
        raise ValueError(f"{cfg_path}: 'metadata' must be a JSON object")
    return config


def load_cppn(path) -> CPPN:
    """Load a checkpoint written by :func:`save_cppn`; checks the format and the stored content hash.

    Every problem with the files raises ``ValueError`` naming the file (``FileNotFoundError`` when one is missing).
    """
    cfg_path, st_path = files(path)
    config = _read_config(path)
    tensors, _ = _load(path, format=FORMAT, facts=_facts)
    n = len(config["activations"]) + 1 if isinstance(config["activations"], list) else 0
    missing = [k for l in range(n) for k in (f"weight{l}", f"mask{l}") if k not in tensors]
    if missing:
        raise ValueError(f"{st_path}: missing tensors {missing}")
    try:
        model = CPPN(config["activations"], config["color"], [tensors[f"weight{l}"] for l in range(n)],
                     [tensors[f"mask{l}"] for l in range(n)])
    except ValueError as e:
        raise ValueError(f"{st_path} does not fit the architecture in {cfg_path.name} ({e})") from None
    if content_hash(model) != config.get("content_hash"):
        raise ValueError(f"{st_path}: weights do not match the content hash in {cfg_path.name} (corrupt or edited)")
    return model


def _facts(tensors) -> dict:
    """What the tensors say about the sidecar (:func:`compbook.checks.sidecar_agrees`): the hidden layers'
    widths (``activations``) and the output width (``color``)."""
    n = sum(1 for k in tensors if k.startswith("weight"))
    weights = [tensors[f"weight{l}"] for l in range(n)]
    widths = [int(w.shape[0]) for w in weights[:-1]]
    colors = {v: k for k, v in COLOR_MODES.items()}
    out = int(weights[-1].shape[0]) if weights else 0
    return {"activations": (lambda a: [len(l) for l in a] if isinstance(a, list) else a, widths),
            "color": colors.get(out, f"{out} outputs")}


def load_metadata(path) -> dict:
    """The ``metadata`` dict stored beside a checkpoint."""
    return _read_config(path).get("metadata", {})


def content_hash(model: CPPN) -> str:
    """SHA-256 (hex, 16 chars) of the architecture and the exact effective weights of ``model``."""
    checks.instance(model, "model", CPPN)
    h = hashlib.sha256(json.dumps([model.activations, model.color]).encode())
    for w in model.effective_weights():
        h.update(str(tuple(w.shape)).encode())
        h.update(w.detach().cpu().to(torch.float64).contiguous().numpy().tobytes())
    return h.hexdigest()[:16]
