"""FER's own SGD networks (Kumar et al. 2025): the paper's SGD side, loaded into a :class:`~compbook.cppn.CPPN`.

FER publishes the SGD-trained CPPNs behind its figures; ``../shared/picbreeder/fer_sgd/<name>.npz`` holds them
converted to numpy, unchanged in value (``../shared/picbreeder/README.md``). Facts about the format (FER's
``src/cppn.py``, a flax module):

- ``arch`` is FER's architecture string ``"<depth>;<act>:<n>,<act>:<n>,..."``, e.g. the skull's
  ``"12;cache:15,gaussian:4,identity:2,sin:1"``: 12 hidden layers, each with that activation mix in that order
  (15 cache neurons, then 4 gaussian, ...), no biases, then a dense layer to (h, s, v);
- ``params`` is the flat float32 vector of jax's parameter dict in *sorted key order* (``Dense_0, Dense_1,
  Dense_10, Dense_11, ..., Dense_2, ...``: sorted as strings), each kernel stored ``(in, out)``; ours are
  ``(out, in)``, so every kernel is transposed;
- FER's inputs are ``(y, x, d, bias)`` with FER's ``y`` varying along columns: FER's first input is our ``x``
  (columns), its second our ``y`` (rows). :data:`FER_INPUTS_AS_OURS` is that mapping (checked by the render:
  swapped, the skull renders at 8 dB instead of 33.7 dB).

:func:`load_fer` finds a file the way genomes are found (:func:`compbook.cppn.picbreeder.find_shared`), or
downloads it from ``$COMPBOOK_PICBREEDER_URL/fer_sgd/<name>.npz`` when that is set (kept only when it reads as
FER's network). FER's own repository holds pickled jax arrays, which this project does not unpickle, so there is
no other download: without either the loader says where it looked, and :func:`source_note` says so in a chapter.
"""

from __future__ import annotations

import io
import os
import re
import zipfile
from pathlib import Path

import numpy as np
import torch

from .. import checks
from . import picbreeder
from .network import ACTIVATIONS, CPPN, INPUT_NAMES, layout_from_counts

NAMES = ("skull", "butterfly", "apple")
FOLDER = "fer_sgd"
#: FER's input order (fact, FER's code) and which of our inputs each one is.
FER_INPUTS = ("y", "x", "d", "bias")
FER_INPUTS_AS_OURS = {"y": "x", "x": "y", "d": "d", "bias": "bias"}
N_OUT = 3   # FER's networks draw (h, s, v)
#: FER's architecture strings for its SGD networks (fact: the ``arch`` of ``fer_sgd/<name>.npz``, FER's
#: ``data/sgd_<name>/arch.pkl``), for twins of FER's architecture where the files are absent.
FER_ARCH = {"skull": "12;cache:15,gaussian:4,identity:2,sin:1",
            "butterfly": "16;cache:17,gaussian:4,sigmoid:1,sin:1",
            "apple": "33;cache:28,gaussian:3,sigmoid:5,sin:2"}
_ARCH = re.compile(r"^\s*(\d+)\s*;\s*([A-Za-z_]+\s*:\s*\d+(\s*,\s*[A-Za-z_]+\s*:\s*\d+)*)\s*$")


def parse_arch(arch: str) -> tuple[int, dict[str, int]]:
    """FER's architecture string -> ``(depth, {activation: count, ...})`` in the string's order.

    ``ValueError`` naming ``arch`` when it does not parse, names an unknown activation, repeats one, or has a
    depth or width of 0."""
    if not isinstance(arch, str):
        raise ValueError(f"arch must be FER's architecture string like '12;cache:15,sin:1', got {arch!r}")
    m = _ARCH.match(arch)
    if not m:
        raise ValueError(f"arch {arch!r} does not parse: expected '<depth>;<activation>:<count>,...' "
                         f"(e.g. '12;cache:15,gaussian:4,identity:2,sin:1')")
    depth = int(m.group(1))
    counts: dict[str, int] = {}
    for part in m.group(2).split(","):
        name, n = (t.strip() for t in part.split(":"))
        if name not in ACTIVATIONS:
            raise ValueError(f"arch {arch!r}: unknown activation {name!r}; known: {sorted(ACTIVATIONS)}")
        if name in counts:
            raise ValueError(f"arch {arch!r}: activation {name!r} appears twice")
        counts[name] = int(n)
    if depth < 1 or sum(counts.values()) < 1:
        raise ValueError(f"arch {arch!r}: depth and width must be >= 1 (got {depth}, {sum(counts.values())})")
    width = sum(counts.values())
    # 16 bytes a weight, as the network's own check (network.check_size): weights, masks and their copies
    checks.check_budget(16.0 * (depth * width * width + 7 * width), f"arch {arch!r}'s weights")
    return depth, counts


def arch_layout(arch: str) -> list[list[str]]:
    """Our per-layer activation lists for FER's architecture string (every hidden layer the same mix)."""
    depth, counts = parse_arch(arch)
    return [layout_from_counts(counts) for _ in range(depth)]


def arch_string(depth: int, counts: dict[str, int]) -> str:
    """The inverse of :func:`parse_arch`."""
    checks.integer(depth, "depth")
    for k, v in checks.mapping(counts, "counts", 1).items():
        checks.choice(k, "counts (activation)", ACTIVATIONS)
        checks.integer(v, f"counts[{k!r}]")
    return f"{int(depth)};" + ",".join(f"{k}:{int(v)}" for k, v in counts.items())


def kernel_shapes(arch: str) -> list[tuple[int, int]]:
    """FER's kernel shapes ``(in, out)`` of ``Dense_0 .. Dense_depth`` (inputs 4, outputs 3)."""
    depth, counts = parse_arch(arch)
    width = sum(counts.values())
    return [(len(FER_INPUTS), width)] + [(width, width)] * (depth - 1) + [(width, N_OUT)]


def _sorted_keys(n_layers: int) -> list[int]:
    """Layer indices in jax's sorted-key order: ``Dense_0, Dense_1, Dense_10, ...`` sorted as strings."""
    return [int(k.split("_")[1]) for k in sorted(f"Dense_{i}" for i in range(n_layers))]


def _input_permutation() -> list[int]:
    """``perm[j]``: the column of our input layer that FER's input ``j`` feeds."""
    return [INPUT_NAMES.index(FER_INPUTS_AS_OURS[n]) for n in FER_INPUTS]


def params_to_weights(params, arch: str) -> list[torch.Tensor]:
    """FER's flat parameter vector -> our weights, one ``(out, in)`` float32 tensor per layer (inputs in our
    (x, y, d, bias) order). ``ValueError`` naming both lengths when ``params`` does not fit ``arch``."""
    shapes = kernel_shapes(arch)
    p = np.asarray(params)
    if p.ndim != 1 or not np.issubdtype(p.dtype, np.floating):
        raise ValueError(f"params must be a flat float vector, got shape {p.shape} dtype {p.dtype}")
    need = sum(a * b for a, b in shapes)
    if p.size != need:
        raise ValueError(f"params has {p.size} values but arch {arch!r} needs {need} "
                         f"({len(shapes)} kernels {shapes[0]}, {shapes[1]}..., {shapes[-1]})")
    if not np.isfinite(p).all():
        raise ValueError("params hold NaN or inf")
    kernels, off = {}, 0
    for i in _sorted_keys(len(shapes)):
        a, b = shapes[i]
        kernels[i] = p[off:off + a * b].reshape(a, b)
        off += a * b
    weights = [torch.tensor(kernels[i].T.copy(), dtype=torch.float32) for i in range(len(shapes))]
    w0 = torch.zeros_like(weights[0])
    w0[:, _input_permutation()] = weights[0]
    weights[0] = w0
    return weights


def weights_to_params(model: CPPN) -> np.ndarray:
    """The inverse of :func:`params_to_weights`: a dense CPPN of FER's layout -> FER's flat vector."""
    ws = [w.detach().double().numpy() for w in model.effective_weights()]
    kernels = [ws[0][:, _input_permutation()].T] + [w.T for w in ws[1:]]
    return np.concatenate([kernels[i].reshape(-1) for i in _sorted_keys(len(kernels))]).astype(np.float32)


def fer_cppn(params, arch: str) -> CPPN:
    """A dense hsv CPPN with FER's architecture and parameters."""
    return CPPN(arch_layout(arch), color="hsv", weights=params_to_weights(params, arch))


def find_fer(name: str) -> Path:
    """The path of FER's SGD network ``name`` (``fer_sgd/<name>.npz`` in the folders genomes are found in, or
    downloaded from ``$COMPBOOK_PICBREEDER_URL`` when set)."""
    if name not in NAMES:
        raise ValueError(f"name must be one of {NAMES} or a path to a .npz, got {name!r}")
    return picbreeder.fetch_shared(f"{FOLDER}/{name}.npz", _check_npz)


def _check_npz(raw: bytes) -> None:
    """A download check: the bytes are FER's network (a .npz without pickles whose params fit its arch)."""
    try:
        with np.load(io.BytesIO(raw), allow_pickle=False) as z:
            if not {"params", "arch"} <= set(z.files):
                raise ValueError(f"not a FER network file (has {sorted(z.files)}, needs params and arch)")
            params_to_weights(z["params"], str(z["arch"]))
    except (OSError, EOFError, zipfile.BadZipFile) as e:
        raise ValueError(f"not a .npz file ({e})") from None


def _read(source) -> dict:
    path = find_fer(source) if isinstance(source, str) and source in NAMES else Path(source)
    if path.is_dir():
        raise ValueError(f"source: {path} is a folder, not a FER network file (.npz)")
    if not path.is_file():
        raise FileNotFoundError(f"FER network file {path} not found")
    with np.load(path, allow_pickle=False) as z:
        missing = {"params", "arch"} - set(z.files)
        if missing:
            raise ValueError(f"{path}: not a FER network file (missing {sorted(missing)})")
        return {k: z[k] for k in z.files} | {"path": path}


def load_fer(source: str | os.PathLike) -> CPPN:
    """FER's SGD network as a :class:`CPPN`: a name (``"skull"``, ``"butterfly"``, ``"apple"``) or a .npz path."""
    z = _read(source)
    return fer_cppn(z["params"], str(z["arch"]))


def fer_info(source: str | os.PathLike) -> dict:
    """What FER's file says about its training: arch, args (text), steps, final and best loss."""
    z = _read(source)
    losses = np.asarray(z.get("losses", np.zeros(0)), dtype=float)
    return {"arch": str(z["arch"]), "args": str(z.get("args", "")), "n_params": int(z["params"].size),
            "steps": int(losses.size), "final_loss": float(losses[-1]) if losses.size else None,
            "best_loss": float(losses.min()) if losses.size else None, "path": str(z["path"])}


def available() -> bool:
    """Whether all three FER networks are here: found in the shared folders, or downloaded from
    ``$COMPBOOK_PICBREEDER_URL`` when it is set (a download that fails there is an error, not False). The chapters
    and tests use it to decide what to skip; :func:`source_note` says why."""
    if all(picbreeder.find_shared(f"{FOLDER}/{n}.npz") is not None for n in NAMES):
        return True
    if not os.environ.get(picbreeder.URL_VARIABLE):
        return False
    return all(find_fer(n).is_file() for n in NAMES)


def source_note() -> str:
    """One line for a chapter: that FER's networks are here, or that they are not and how to get them."""
    if all(picbreeder.find_shared(f"{FOLDER}/{n}.npz") is not None for n in NAMES):
        return f"FER's SGD networks: {', '.join(NAMES)} found ({FOLDER}/ of the Picbreeder folder)"
    return (f"FER's SGD networks not found (fer.find_fer('skull') says where it looked). FER publishes them "
            f"as pickles, which this book does not read: set ${picbreeder.URL_VARIABLE} to a folder URL holding "
            f"{FOLDER}/<name>.npz, or ${picbreeder.ENV_VARIABLE} to a local folder. The sections on them are "
            f"skipped.")
