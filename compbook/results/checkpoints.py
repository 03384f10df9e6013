"""One checkpoint format for every part of the book: tensors in safetensors, everything else in JSON (no pickles).

A checkpoint is two files, ``NAME.safetensors`` and ``NAME.json``. The JSON sidecar holds a ``format`` string
naming what the tensors are (``"compbook-cppn/1"``, ``"compbook-topk-sae/1"``, ...), the caller's header (a config,
metadata) and ``tensor_digest``, a SHA-256 of every tensor's name, dtype, shape and bytes: a truncated or edited
file is refused on load, never served. The sidecar also records ``made_by``, the command that made it. Writes go
to temporary names in the same folder, then are renamed, so a failure leaves no half-written checkpoint behind;
a checkpoint written into the registered ``data/`` is recorded in its registry, and one read from there is
verified against it (:mod:`compbook.results`).

Used by :mod:`compbook.cppn.data.store` (CPPNs), :mod:`compbook.binding` (dual encoders, controlled models) and
:mod:`compbook.sae` (SAEs, the tiny VLM).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Mapping

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from .. import checks, results


SUFFIXES = (".json", ".safetensors")


def stem(path) -> Path:
    """``path`` without a ``.json`` / ``.safetensors`` suffix (``run.json`` and ``run`` name the same checkpoint;
    other dots stay: ``recipe_cov0.5`` is a stem); ``ValueError`` if empty."""
    if not isinstance(path, (str, os.PathLike)) or str(path) == "":
        raise ValueError(f"path must be a checkpoint path (str or os.PathLike), got {path!r}")
    path = Path(path)
    return path.with_suffix("") if path.suffix in SUFFIXES else path


def files(path) -> tuple[Path, Path]:
    """``(NAME.json, NAME.safetensors)`` of checkpoint ``path``."""
    s = stem(path)
    return s.with_name(s.name + ".json"), s.with_name(s.name + ".safetensors")


def tensor_digest(tensors: Mapping[str, torch.Tensor]) -> str:
    """SHA-256 (hex, 16 chars) of the tensors' names, dtypes, shapes and exact bytes, in name order."""
    h = hashlib.sha256()
    for name in sorted(tensors):
        t = tensors[name].detach().cpu().contiguous()
        h.update(f"{name}|{t.dtype}|{tuple(t.shape)}|".encode())
        h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    return h.hexdigest()[:16]


def shapes(tensors: Mapping[str, torch.Tensor]) -> dict:
    """``{name: [dtype, [shape]]}`` of the tensors, as the sidecar records them (``tensor_shapes``): what lets
    :func:`load` say which tensor differs, not only that the digest does."""
    return {k: [str(tensors[k].dtype).removeprefix("torch."), list(tensors[k].shape)] for k in sorted(tensors)}


def save(path, tensors: Mapping[str, torch.Tensor], header: dict, *, format: str, made_by: str | None = None) -> Path:
    """Write ``path.safetensors`` and ``path.json`` (``header`` plus ``format``, ``made_by`` and
    ``tensor_digest``) and record both in the registry (:func:`compbook.results.record`); returns the JSON path.
    ``made_by``: the command that made it (default: ``header``'s, else :func:`compbook.results.made_by`).
    Everything is checked before anything is written; ``ValueError`` for a header that JSON cannot hold exactly
    (NaN, tensors, sets)."""
    cfg_path, st_path = files(path)
    if not isinstance(header, dict):
        raise ValueError(f"header must be a dict, got {type(header).__name__}")
    for k, v in tensors.items():
        checks.instance(v, f"tensors[{k!r}]", torch.Tensor)
    tensors = {k: v.detach().cpu().contiguous() for k, v in tensors.items()}
    command = made_by or header.get("made_by") or results.made_by(cfg_path)
    try:
        text = json.dumps(results.place_made_by({"format": format} | header, command)
                          | {"tensor_digest": tensor_digest(tensors), "tensor_shapes": shapes(tensors)},
                          indent=1, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise ValueError(f"metadata is not JSON-able ({e}): {header!r:.200}; nothing was written") from None
    cfg_path.parent.mkdir(parents=True, exist_ok=True)
    tmp_st, tmp_cfg = (p.with_name(f".{p.name}.{os.getpid()}.tmp") for p in (st_path, cfg_path))
    try:
        save_file(tensors, str(tmp_st))
        tmp_cfg.write_text(text)
        os.replace(tmp_st, st_path)
        os.replace(tmp_cfg, cfg_path)
    finally:
        tmp_st.unlink(missing_ok=True)
        tmp_cfg.unlink(missing_ok=True)
    results.record(st_path, cfg_path, command=command)
    return cfg_path


def read_header(path, *, format: str) -> dict:
    """The JSON sidecar of checkpoint ``path`` as a dict, its ``format`` checked; ``ValueError`` naming the file
    (``FileNotFoundError`` when it is missing)."""
    cfg_path = files(path)[0]
    checks.file_path(cfg_path, "checkpoint file")
    results.verify(cfg_path)
    try:
        header = json.loads(cfg_path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"{cfg_path}: not valid JSON ({e})") from e
    if not isinstance(header, dict):
        raise ValueError(f"{cfg_path}: expected a JSON object (a compbook checkpoint sidecar), "
                         f"got a JSON {type(header).__name__}")
    if header.get("format") != format:
        raise ValueError(f"{cfg_path}: format {header.get('format')!r} is not {format!r}")
    return header


def load(path, *, format: str, names=None, facts=None) -> tuple[dict[str, torch.Tensor], dict]:
    """``(tensors, header)`` of a checkpoint written by :func:`save`.

    Refused with ``ValueError`` naming the file: another format, a sidecar that is not a JSON object, a truncated
    or unreadable safetensors file, tensors whose digest differs from the sidecar's (edited, or the two files of
    different checkpoints), and, given ``names``, a set of tensor names other than ``names``.

    Before the digest, so that the message says what differs (:func:`compbook.checks.sidecar_agrees`):
    ``names`` may be a mapping of tensors (a model's ``state_dict()`` built from the sidecar): each stored
    tensor's shape and dtype must then be the expected one, named when not; ``facts``, a callable
    ``tensors -> {sidecar field: value the tensors imply}`` (a width read off a weight's shape, a count of
    models), names the sidecar field that disagrees."""
    header = read_header(path, format=format)
    cfg_path, st_path = files(path)
    checks.file_path(st_path, "checkpoint file")
    results.verify(st_path)
    try:
        tensors = load_file(str(st_path))
    except (SafetensorError, OSError, ValueError, RuntimeError) as e:
        raise ValueError(f"{st_path}: not a readable safetensors file, truncated or corrupt ({e})") from None
    if names is not None and set(tensors) != set(names):
        raise ValueError(f"{st_path}: tensor names differ from the expected ones "
                         f"(missing {sorted(set(names) - set(tensors))}, extra {sorted(set(tensors) - set(names))})")
    recorded, stored = header.get("tensor_shapes"), shapes(tensors)
    recorded = recorded if isinstance(recorded, dict) else None
    implied, failed = None, None
    if facts is not None:           # first: the sidecar field that disagrees says most
        try:
            implied = facts(tensors)
        except (KeyError, IndexError, AttributeError, TypeError, RuntimeError) as e:
            failed = e
        if implied is not None:
            checks.sidecar_agrees(header, implied, cfg_path)
    if recorded is not None and set(recorded) != set(stored):
        raise ValueError(f"{st_path}: tensor names differ from those in {cfg_path.name} (missing "
                         f"{sorted(set(recorded) - set(stored))}, extra {sorted(set(stored) - set(recorded))}: "
                         f"renamed, or tensors of another checkpoint)")
    if failed is not None:
        raise ValueError(f"{st_path}: the tensors do not have the layout {cfg_path.name} describes "
                         f"({type(failed).__name__}: {failed})")
    for k in sorted(stored) if recorded is not None else ():
        if _normal(recorded[k]) != stored[k]:
            raise ValueError(f"{st_path}: tensor {k!r} is {stored[k][0]} of shape {tuple(stored[k][1])}, but "
                             f"{cfg_path.name} records {recorded[k]!r:.80} (edited sidecar, or tensors of "
                             f"another checkpoint)")
    if isinstance(names, Mapping):
        for k in sorted(names):
            want = names[k]
            if isinstance(want, torch.Tensor) and (tuple(want.shape) != tuple(tensors[k].shape)
                                                   or want.dtype != tensors[k].dtype):
                raise ValueError(f"{st_path}: tensor {k!r} is {tensors[k].dtype} of shape "
                                 f"{tuple(tensors[k].shape)}, but the sidecar {cfg_path.name} describes "
                                 f"{want.dtype} of shape {tuple(want.shape)} (edited sidecar, or tensors of "
                                 f"another checkpoint)")
    if "tensor_digest" in header and tensor_digest(tensors) != header["tensor_digest"]:
        raise ValueError(f"{st_path}: tensor values do not match the digest in {cfg_path.name}"
                         f"{', though names and shapes agree' if recorded is not None else ''} (edited values, "
                         f"or the two files belong to different checkpoints)")
    return tensors, header


def _normal(v):
    return [_normal(x) for x in v] if isinstance(v, (list, tuple)) else v
