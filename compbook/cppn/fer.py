"""FER's own SGD networks (Kumar et al. 2025): the paper's SGD side, loaded into a :class:`~compbook.cppn.CPPN`.

FER publishes the SGD-trained CPPNs behind its figures in its repository as ``data/sgd_<name>/{arch,params,args}.pkl``
(pickles). They are read from there, pinned and checked by digest (:mod:`compbook.cppn.data.fer_files`: a local
``shared/fer/`` folder, else downloaded and cached), by an unpickler that builds only NumPy arrays and an
``argparse.Namespace`` and runs nothing else (:mod:`compbook.cppn.data.fer_pickle`); no JAX. Facts about the format
(FER's ``src/cppn.py``, a flax module):

- ``arch.pkl`` is FER's architecture string ``"<depth>;<act>:<n>,<act>:<n>,..."``, e.g. the skull's
  ``"12;cache:15,gaussian:4,identity:2,sin:1"``: 12 hidden layers, each with that activation mix in that order
  (15 cache neurons, then 4 gaussian, ...), no biases, then a dense layer to (h, s, v);
- ``params.pkl`` is the flat float32 vector of jax's parameter dict in *sorted key order* (``Dense_0, Dense_1,
  Dense_10, Dense_11, ..., Dense_2, ...``: sorted as strings), each kernel stored ``(in, out)``; ours are
  ``(out, in)``, so every kernel is transposed;
- ``args.pkl`` holds FER's training arguments (``seed``, ``arch``, ``n_iters``, ``lr``, ...);
- FER's inputs are ``(y, x, d, bias)`` with FER's ``y`` varying along columns: FER's first input is our ``x``
  (columns), its second our ``y`` (rows). :data:`FER_INPUTS_AS_OURS` is that mapping (checked by the render:
  swapped, the skull renders at 8 dB instead of 33.7 dB).
"""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path

import numpy as np
import torch

from .. import checks
from .data import fer_files, fer_pickle
from .network import ACTIVATIONS, CPPN, INPUT_NAMES, layout_from_counts

NAMES = ("skull", "butterfly", "apple")
#: FER's files of one network, in its folder ``data/sgd_<name>/`` (``args.pkl`` is optional in a folder you give).
FILES = ("arch.pkl", "params.pkl", "args.pkl")
#: FER's input order (fact, FER's code) and which of our inputs each one is.
FER_INPUTS = ("y", "x", "d", "bias")
FER_INPUTS_AS_OURS = {"y": "x", "x": "y", "d": "d", "bias": "bias"}
N_OUT = 3   # FER's networks draw (h, s, v)
#: FER's architecture strings for its SGD networks (fact: FER's ``data/sgd_<name>/arch.pkl``), for twins of FER's
#: architecture that need no download.
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


def find_fer(name: str, download: bool = True) -> dict[str, Path]:
    """FER's files of SGD network ``name``: ``{"arch.pkl": path, "params.pkl": path, "args.pkl": path}``, each
    FER's ``data/sgd_<name>/<file>`` checked by digest, from a local ``shared/fer/`` or the cache after a download
    (:func:`compbook.cppn.data.fer_files.fetch`)."""
    if name not in NAMES:
        raise ValueError(f"name must be one of {NAMES} or a folder holding FER's {', '.join(FILES)}, got {name!r}")
    return {f: fer_files.fetch(f"data/sgd_{name}/{f}", download) for f in FILES}


def _files_of(source) -> dict[str, Path]:
    """A name's files (:func:`find_fer`), or those of a folder holding FER's ``arch.pkl`` and ``params.pkl``."""
    if isinstance(source, str) and source in NAMES:
        return find_fer(source)
    if not isinstance(source, (str, os.PathLike)) or str(source) == "" or (
            isinstance(source, str) and len(Path(source).parts) == 1 and not Path(source).exists()):
        raise ValueError(f"source must be one of {NAMES} or a folder holding FER's {', '.join(FILES)}, "
                         f"got {source!r}")
    folder = Path(source)
    if not folder.exists():
        raise FileNotFoundError(f"source: {folder} does not exist (a folder holding FER's {', '.join(FILES)})")
    if not folder.is_dir():
        raise ValueError(f"source: {folder} is not a folder holding FER's network ({', '.join(FILES)})")
    missing = [f for f in FILES[:2] if not (folder / f).is_file()]
    if missing:
        raise ValueError(f"{folder}: not a FER network folder (missing {missing})")
    return {f: folder / f for f in FILES if (folder / f).is_file()}


def _read(source) -> dict:
    """``{"arch": str, "params": float32 (n,), "args": dict, "path": params.pkl}`` of a name or a folder."""
    files = _files_of(source)
    arch = fer_pickle.load(files["arch.pkl"])
    params = fer_pickle.load(files["params.pkl"])
    args = fer_pickle.load(files["args.pkl"]) if "args.pkl" in files else argparse.Namespace()
    if not isinstance(arch, str):
        raise ValueError(f"{files['arch.pkl']}: expected FER's architecture string, got {type(arch).__name__}")
    if not isinstance(params, np.ndarray):
        raise ValueError(f"{files['params.pkl']}: expected a flat array of FER's parameters, got "
                         f"{type(params).__name__}")
    if not isinstance(args, argparse.Namespace):
        raise ValueError(f"{files['args.pkl']}: expected FER's argparse.Namespace, got {type(args).__name__}")
    params_to_weights(params, arch)                       # the params fit the arch (ValueError naming both)
    return {"arch": arch, "params": params, "args": vars(args), "path": files["params.pkl"]}


def load_fer(source: str | os.PathLike) -> CPPN:
    """FER's SGD network as a :class:`CPPN`: a name (``"skull"``, ``"butterfly"``, ``"apple"``) or a folder
    holding FER's ``arch.pkl`` and ``params.pkl``."""
    z = _read(source)
    return fer_cppn(z["params"], z["arch"])


def fer_info(source: str | os.PathLike) -> dict:
    """What FER's files say about its training: arch, args (text), parameter count, steps (``n_iters``)."""
    z = _read(source)
    steps = z["args"].get("n_iters")
    return {"arch": z["arch"], "args": str(z["args"]), "n_params": int(z["params"].size),
            "steps": int(steps) if isinstance(steps, int) else None, "path": str(z["path"])}


def available(download: bool = True) -> bool:
    """Whether all three FER networks are here: found locally or (``download``) downloaded from FER's
    repository (or ``$COMPBOOK_PICBREEDER_URL``). A download that fails or brings other bytes is an error
    naming the URL, not False. The chapters say where they came from with :func:`source_note`."""
    try:
        return all(len(find_fer(n, download)) == len(FILES) for n in NAMES)
    except FileNotFoundError:
        return False


def source_note() -> str:
    """One line for a chapter: where FER's networks come from (a local folder, named by its last two parts, or
    the cache of downloads), without a path of the machine that runs it (a page shows it)."""
    paths = [p for n in NAMES for p in find_fer(n).values()]
    if all(fer_files.cache_dir() in p.parents for p in paths):
        url = fer_files.source_url("data/sgd_skull/params.pkl")[0].removesuffix("/data/sgd_skull/params.pkl")
        where = f"downloaded from {url} into compbook's download cache"
    else:       # the folder's last two parts (shared/fer): never a path of the machine that runs it
        where = "found in " + ", ".join(sorted({"/".join(p.parents[2].parts[-2:]) for p in paths}))
    return (f"FER's SGD networks ({', '.join(NAMES)}): FER's data/sgd_<name>/*.pkl at commit "
            f"{fer_files.COMMIT[:7]}, {where}")
