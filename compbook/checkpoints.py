"""Save and load CPPNs: weights and masks in safetensors, the architecture in JSON (no pickles).

A checkpoint is two files, ``NAME.safetensors`` and ``NAME.json``. :func:`content_hash` identifies a network by
its architecture and exact weights, so caches (e.g. judge verdicts) can be keyed by what a network *is*.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from . import checks
from .cppn import CPPN

FORMAT = "compbook-cppn/1"


def save_cppn(model: CPPN, path, metadata: dict | None = None) -> Path:
    """Write ``path.safetensors`` and ``path.json``; returns the JSON path. ``metadata`` must be JSON-able.

    Everything is checked before anything is written, and each file is written under a temporary name in the
    same folder, then renamed: a failure leaves no half-written checkpoint behind.
    """
    checks.instance(model, "model", CPPN)
    if metadata is not None and not isinstance(metadata, dict):
        raise ValueError(f"metadata must be a dict or None, got {type(metadata).__name__}")
    path = _stem(path)
    tensors = {}
    for l, (w, m) in enumerate(zip(model.weights, model.masks)):
        tensors[f"weight{l}"] = w.detach().cpu().contiguous()
        tensors[f"mask{l}"] = m.detach().cpu().contiguous()
    config = {"format": FORMAT, "activations": model.activations, "color": model.color,
              "content_hash": content_hash(model), "metadata": metadata or {}}
    try:
        text = json.dumps(config, indent=1, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise ValueError(f"metadata is not JSON-able ({e}): {metadata!r:.200}; nothing was written") from None
    path.parent.mkdir(parents=True, exist_ok=True)
    st_path, cfg_path = path.with_suffix(".safetensors"), path.with_suffix(".json")
    tmp_st, tmp_cfg = (p.with_name(f".{p.name}.{os.getpid()}.tmp") for p in (st_path, cfg_path))
    try:
        save_file(tensors, str(tmp_st))
        tmp_cfg.write_text(text)
        os.replace(tmp_st, st_path)
        os.replace(tmp_cfg, cfg_path)
    finally:
        tmp_st.unlink(missing_ok=True)
        tmp_cfg.unlink(missing_ok=True)
    return cfg_path


def _stem(path) -> Path:
    if not isinstance(path, (str, os.PathLike)) or str(path) == "":
        raise ValueError(f"path must be a checkpoint path (str or os.PathLike), got {path!r}")
    return Path(path).with_suffix("")


def _read_config(cfg_path: Path) -> dict:
    """The JSON sidecar as a dict with ``format``, ``activations`` and ``color``; ``ValueError`` naming it."""
    checks.file_path(cfg_path, "checkpoint file")
    try:
        config = json.loads(cfg_path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"{cfg_path}: not valid JSON ({e})") from e
    if not isinstance(config, dict):
        raise ValueError(f"{cfg_path}: expected a JSON object (a compbook checkpoint sidecar), "
                         f"got a JSON {type(config).__name__}")
    if config.get("format") != FORMAT:
        raise ValueError(f"{cfg_path}: format {config.get('format')!r} is not {FORMAT!r}")
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
    path = _stem(path)
    cfg_path, st_path = path.with_suffix(".json"), path.with_suffix(".safetensors")
    config = _read_config(cfg_path)
    checks.file_path(st_path, "checkpoint file")
    try:
        tensors = load_file(str(st_path))
    except (SafetensorError, OSError, ValueError, RuntimeError) as e:
        raise ValueError(f"{st_path}: not a readable safetensors file, truncated or corrupt ({e})") from None
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


def load_metadata(path) -> dict:
    """The ``metadata`` dict stored beside a checkpoint."""
    return _read_config(_stem(path).with_suffix(".json")).get("metadata", {})


def content_hash(model: CPPN) -> str:
    """SHA-256 (hex, 16 chars) of the architecture and the exact effective weights of ``model``."""
    checks.instance(model, "model", CPPN)
    h = hashlib.sha256(json.dumps([model.activations, model.color]).encode())
    for w in model.effective_weights():
        h.update(str(tuple(w.shape)).encode())
        h.update(w.detach().cpu().to(torch.float64).contiguous().numpy().tobytes())
    return h.hexdigest()[:16]
