"""Where a sweep's records live: one checkpoint per config, ``<key>.json`` and ``<key>.safetensors``.

A record is a dict: JSON values, and tensors (torch) or arrays (numpy) anywhere inside nested dicts. The tensors go
to the ``.safetensors`` file (named by their path, ``params/W_enc``), everything else to the ``.json`` header with
the sweep's name, the key and the config; non-finite floats are kept (``{"__float__": "nan"}``), numpy scalars
become Python numbers, tuples lists. :func:`read_record` gives back the record with each tensor of its own type,
dtype and shape.

Writing is :func:`compbook.results.checkpoints.save` (the tensors first, the header last, each by a rename), so a record
is complete or absent: a sweep killed at any moment resumes with the configs whose header is missing. A store
inside a registered data folder (``data/``) is one folder artifact of the results registry.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import torch

from ...results import checkpoints
from ... import results

FORMAT = "compbook-sweep-record/1"
_FLOAT = "__float__"


def _plain(value, where: str):
    """``value`` with numpy scalars as Python numbers and non-finite floats encoded, for JSON."""
    if isinstance(value, dict):
        return {str(k): _plain(v, f"{where}/{k}") for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return {_FLOAT: repr(value)}
    if isinstance(value, (torch.Tensor, np.ndarray)):
        raise ValueError(f"record field {where} is a tensor inside a list; keep tensors in dicts")
    return value


def _unplain(value):
    if isinstance(value, dict):
        if set(value) == {_FLOAT}:
            return float(value[_FLOAT])
        return {k: _unplain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_unplain(v) for v in value]
    return value


def split(record: dict, prefix: str = "") -> tuple[dict, dict, dict]:
    """``(json_part, tensors, kinds)``: the record without its tensors, the tensors by path (torch, on the CPU)
    and each path's kind (``"torch"`` or ``"numpy"``)."""
    rest, tensors, kinds = {}, {}, {}
    for k, v in record.items():
        k = str(k)
        if "/" in k:
            raise ValueError(f"record field {prefix}{k!r}: keys of a record may not hold '/'")
        path = prefix + k
        if isinstance(v, torch.Tensor):
            tensors[path], kinds[path] = v.detach().cpu().contiguous(), "torch"
        elif isinstance(v, np.ndarray):
            if v.dtype == object:
                raise ValueError(f"record field {path} is an object array; give numbers")
            tensors[path], kinds[path] = torch.from_numpy(np.ascontiguousarray(v)), "numpy"
        elif isinstance(v, dict):
            sub, t, kd = split(v, path + "/")
            rest[k] = sub
            tensors |= t
            kinds |= kd
        else:
            rest[k] = _plain(v, path)
    return rest, tensors, kinds


def join(rest: dict, tensors: dict, kinds: dict) -> dict:
    """The record :func:`split` took apart."""
    record = _unplain(rest)
    for path, kind in kinds.items():
        *parents, leaf = path.split("/")
        node = record
        for p in parents:
            node = node.setdefault(p, {})
        t = tensors[path]
        node[leaf] = t.numpy() if kind == "numpy" else t
    return record


def record_path(store, key: str) -> Path:
    """The header file of ``key``'s record in ``store``."""
    return Path(store) / f"{key}.json"


def write_record(store, sweep_name: str, key: str, config: dict, record: dict, command: str | None = None) -> Path:
    """Store ``record`` (of ``config``, key ``key``) in folder ``store``, atomically and registered."""
    store = Path(store)
    command = command or results.made_by(store)
    rest, tensors, kinds = split(record)
    header = {"sweep": sweep_name, "key": key, "config": _plain(config, "config"), "record": rest,
              "tensor_kinds": kinds}
    results.register_folder(store, command)
    return checkpoints.save(store / key, tensors, header, format=FORMAT, made_by=command)


def read_record(store, key: str, sweep_name: str | None = None, config: dict | None = None) -> dict:
    """The record stored under ``key``; ``ValueError`` when it belongs to another sweep or config."""
    tensors, header = checkpoints.load(Path(store) / key, format=FORMAT)
    where = record_path(store, key)
    if header.get("key") != key:
        raise ValueError(f"{where}: holds key {header.get('key')!r}, not {key!r}")
    if sweep_name is not None and header.get("sweep") != sweep_name:
        raise ValueError(f"{where}: belongs to sweep {header.get('sweep')!r}, not {sweep_name!r}")
    if config is not None and header.get("config") != _plain(config, "config"):
        raise ValueError(f"{where}: was made for another config than the one asked")
    return join(header["record"], tensors, header.get("tensor_kinds", {}))


def stored_keys(store) -> set[str]:
    """Keys whose record header is in ``store`` (complete records)."""
    store = Path(store)
    if not store.is_dir():
        return set()
    return {p.stem for p in store.glob("*.json") if not p.name.startswith(".")}
