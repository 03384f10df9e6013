"""Argument checks shared by every module: one place that says what a valid argument is.

Each check returns the value converted (``int``, ``float``, ``Path``, a tensor) or raises ``ValueError`` whose
message names the argument, what was expected and what was given, e.g.
``"res must be an integer >= 1, got 2.5"``. They are cheap (no copies of large data) so a public function can
call them first, before any heavy work.

The render budget lives here too: :func:`check_render_size` refuses a render whose buffers would exceed
:func:`render_budget_mb` (default :data:`RENDER_BUDGET_MB`, or ``$COMPBOOK_RENDER_BUDGET_MB``) before anything
is allocated.
"""

from __future__ import annotations

import math
import numbers
import os
import re
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np
import torch


#: Default budget for one render's buffers, in MiB (our choice: a 2-core, 24 GiB CI machine renders its
#: largest book images, 256 px, with a few MiB; a reader's 2000 px render of a 12 x 22 CPPN fits).
RENDER_BUDGET_MB = 2048
RENDER_BUDGET_VARIABLE = "COMPBOOK_RENDER_BUDGET_MB"
#: The smallest default budget for the buffers of one call that builds data or trains (scene lists, padded ids,
#: image batches, weights), in MiB; the default is the machine's free memory (:func:`memory_budget_mb`). The unit
#: tests pin ``$COMPBOOK_MEMORY_BUDGET_MB`` to this value, so that their refusals are the same on every machine.
MEMORY_BUDGET_MB = 1024
MEMORY_BUDGET_VARIABLE = "COMPBOOK_MEMORY_BUDGET_MB"
#: Bytes every guarded call is taken to need beside its estimate: its frames, small temporaries and the checked
#: copies of small inputs (measured: tens of KiB; tests/test_memory_guards.py).
CALL_BYTES = 2 ** 16


def integer(value, name: str, minimum: int | None = 1, maximum: int | None = None) -> int:
    """``value`` as an ``int`` in ``[minimum, maximum]``: the one rule for whole numbers (sizes, counts,
    resolutions, seeds, steps) across the package. An int, a numpy integer, an integral float (``64.0`` is 64)
    or a 0-d integer array / tensor is accepted; bools, strings, NaN, inf and fractions (``2.7`` is never
    truncated to 2) are refused, naming ``name``."""
    if isinstance(value, (np.ndarray, torch.Tensor)) and value.ndim == 0 and value.dtype not in (np.bool_,
                                                                                             torch.bool):
        value = value.item()
    ok = isinstance(value, (numbers.Integral, np.integer)) and not isinstance(value, (bool, np.bool_))
    if not ok and isinstance(value, (numbers.Real, np.floating)) and not isinstance(value, (bool, np.bool_)):
        ok = math.isfinite(value) and float(value).is_integer()   # 3.0 is the integer 3
    if ok and minimum is not None and value < minimum or ok and maximum is not None and value > maximum:
        ok = False
    if not ok:
        raise ValueError(f"{name} must be an integer {_interval(minimum, maximum)}, got {value!r}")
    return int(value)


#: The largest seed: torch's generators take seeds up to 2**64 - 1, so every derived stream ``seed + offset`` of
#: a seed up to 2**63 - 1 still fits (a larger one would fail deep inside torch, not name the argument).
SEED_MAX = 2 ** 63 - 1


def seed(value, name: str = "seed", minimum: int | None = 0) -> int:
    """``value`` as a random seed: :func:`integer` in ``[minimum, SEED_MAX]`` (the one rule for seeds)."""
    return integer(value, name, minimum, SEED_MAX)


def optional_integer(value, name: str, minimum: int | None = 1, maximum: int | None = None) -> int | None:
    """``None``, or :func:`integer`."""
    return None if value is None else integer(value, name, minimum, maximum)


def _interval(minimum, maximum) -> str:
    if minimum is not None and maximum is not None:
        return f"in [{minimum}, {maximum}]"
    if minimum is not None:
        return f">= {minimum}"
    return f"<= {maximum}" if maximum is not None else "(any)"


def real(value, name: str, low: float | None = None, high: float | None = None, *, low_open: bool = False,
         high_open: bool = False, nonzero: bool = False) -> float:
    """``value`` as a finite ``float`` in the interval ``low .. high`` (open ends when ``low_open`` /
    ``high_open``; ``nonzero`` also refuses 0). Strings, bools, complex numbers, NaN and inf are refused."""
    ok = isinstance(value, (numbers.Real, np.floating, np.integer)) and not isinstance(value, (bool, np.bool_))
    ok = ok and math.isfinite(_to_float(value))
    if ok:
        v = float(value)
        ok = not (low is not None and (v < low or low_open and v == low)) \
            and not (high is not None and (v > high or high_open and v == high)) and not (nonzero and v == 0)
    if not ok:
        lo = "" if low is None else f"{'>' if low_open else '>='} {low:g}"
        hi = "" if high is None else f"{'<' if high_open else '<='} {high:g}"
        rng = " and ".join(p for p in (lo, hi) if p)
        what = "a finite non-zero number" if nonzero else "a finite number"
        raise ValueError(f"{name} must be {what}{' ' + rng if rng else ''}, got {value!r}")
    return float(value)


def _to_float(value) -> float:
    """``float(value)``, or ``inf`` (with the sign) for an integer too large for a float (``10**400``): a size or a
    number beyond any budget or range, never an ``OverflowError``."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def instance(value, name: str, cls: type, hint: str = ""):
    """``value`` if it is an instance of ``cls``, else ``ValueError`` naming ``name``, ``cls`` and what was given."""
    if not isinstance(value, cls):
        raise ValueError(f"{name} must be a {cls.__module__}.{cls.__name__}{hint}, got {type(value).__name__}")
    return value


def choice(value, name: str, options: Iterable[str]) -> str:
    """``value`` if it is one of ``options`` (names), else ``ValueError`` listing them."""
    options = list(options)
    if not isinstance(value, str) or value not in options:
        raise ValueError(f"{name} must be one of {options}, got {value!r}")
    return value


def boolean(value, name: str) -> bool:
    """``value`` if it is a bool (a string such as ``"False"`` would be true: refused)."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def non_empty_str(value, name: str) -> str:
    """``value`` as a non-empty, non-blank string."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{name} must be a non-empty string, got {value!r}")
    return value


def file_path(path, what: str = "file") -> Path:
    """``path`` as a ``Path`` to an existing regular file: ``FileNotFoundError`` when nothing is there,
    ``ValueError`` when it is a folder or something else (both messages name the path and ``what``)."""
    if not isinstance(path, (str, os.PathLike)) or str(path) == "":
        raise ValueError(f"{what} path must be a str or os.PathLike, got {path!r}")
    p = Path(path)
    if p.is_dir():
        raise ValueError(f"{what} {p} is a directory, not a file")
    if not p.exists():
        raise FileNotFoundError(f"{what} {p} does not exist")
    if not p.is_file():
        raise ValueError(f"{what} {p} is not a regular file")
    return p


def tensor(value, name: str, shape: Sequence[int | None] | None = None, *, low: float | None = None,
           high: float | None = None, floating: bool = True, finite: bool = True) -> torch.Tensor:
    """``value`` (tensor, array or nested list) as a real tensor with optional ``shape`` (``None`` entries are
    free), finite values (unless ``finite=False``), within ``[low, high]`` when given. Complex values are
    refused."""
    try:
        t = value if isinstance(value, torch.Tensor) else torch.as_tensor(np.asarray(value))
    except (TypeError, ValueError, RuntimeError) as e:
        raise ValueError(f"{name} must be a tensor or array of numbers, got {type(value).__name__} ({e})") from None
    if t.is_complex():
        raise ValueError(f"{name}: complex values are not supported, got dtype {t.dtype}")
    if floating and not t.is_floating_point():
        raise ValueError(f"{name} must hold floating-point numbers, got dtype {t.dtype}")
    if shape is not None and (t.ndim != len(shape) or any(s is not None and s != n for s, n in zip(shape, t.shape))):
        want = "(" + ", ".join("*" if s is None else str(s) for s in shape) + ")"
        raise ValueError(f"{name} must have shape {want}, got {tuple(t.shape)}")
    if finite and t.numel() and t.is_floating_point() and not bool(torch.isfinite(t).all()):
        raise ValueError(f"{name} contains NaN or inf")
    if t.numel() and (low is not None or high is not None):
        lo, hi = float(t.min()), float(t.max())
        if (low is not None and lo < low) or (high is not None and hi > high):
            raise ValueError(f"{name} must lie in [{low if low is not None else '-inf'}, "
                             f"{high if high is not None else 'inf'}], got values in [{lo:.4g}, {hi:.4g}]")
    return t


def budget_mb(variable: str = RENDER_BUDGET_VARIABLE, default: float = RENDER_BUDGET_MB) -> float:
    """A budget in MiB: ``$variable`` if set (a positive number, else ``ValueError``), else ``default``. The one
    reader of every budget (:func:`render_budget_mb`, :func:`memory_budget_mb`)."""
    raw = os.environ.get(variable, "").strip()
    if not raw:
        return float(default)
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"${variable}={raw!r}: expected a positive number of MiB")
    return value


def render_budget_mb() -> float:
    """The render budget in MiB: ``$COMPBOOK_RENDER_BUDGET_MB`` if set, else :data:`RENDER_BUDGET_MB`."""
    return budget_mb(RENDER_BUDGET_VARIABLE, RENDER_BUDGET_MB)


def check_render_size(res, values_per_pixel: float, bytes_per_value: int, what: str,
                      budget_mb: float | None = None, batch: int = 1) -> int:
    """Check ``res`` (a positive integer) and refuse a render whose buffers would need more than the budget.

    ``values_per_pixel`` is how many numbers the render keeps per pixel at its peak (a caller's estimate),
    ``batch`` how many images at once. ``budget_mb`` (MiB) defaults to :func:`render_budget_mb`. Returns ``res``.
    """
    res = integer(res, "res")
    budget = render_budget_mb() if budget_mb is None else real(budget_mb, "budget_mb", 0, low_open=True)
    need = _to_float(res) ** 2 * values_per_pixel * bytes_per_value * max(int(batch), 1) / 2**20
    if need > budget:
        raise ValueError(f"res={res}: {what} would need about {need:,.0f} MiB of buffers, over the render budget "
                         f"of {budget:,.0f} MiB (pass budget_mb=..., or set ${RENDER_BUDGET_VARIABLE})")
    return res


# -- shared checks for sizes, sequences, ids and names used in file paths -------------------------------------------
def memory_budget_mb(device=None) -> float:
    """The data budget in MiB: ``$COMPBOOK_MEMORY_BUDGET_MB`` if set, else the machine's: :data:`config.MEMORY_SHARE
    <compbook.config.MEMORY_SHARE>` of the free memory where ``device``'s tensors live (the GPU's for a CUDA
    device, else available RAM; :func:`compbook.config.available_memory_mb`), never under
    :data:`MEMORY_BUDGET_MB`. A run that fits the machine is not refused; one that does not is refused before it
    starts."""
    from . import config
    machine = max(MEMORY_BUDGET_MB, config.MEMORY_SHARE * config.available_memory_mb(device))
    return budget_mb(MEMORY_BUDGET_VARIABLE, machine)


def check_budget(n_bytes: float, what: str, budget_mb: float | None = None, device=None) -> float:
    """Refuse, before anything is allocated, a call whose buffers would need ``n_bytes`` (a caller's estimate)
    over the budget (``budget_mb`` MiB, default :func:`memory_budget_mb` of ``device``, where the buffers
    live), with :data:`CALL_BYTES` beside it. The estimate must be an upper bound of what the call allocates
    (intermediates, copies, gradients and optimizer state included): each guard's is measured against the call
    in tests/test_memory_guards.py. Returns ``n_bytes``."""
    budget = memory_budget_mb(device) if budget_mb is None else real(budget_mb, "budget_mb", 0, low_open=True)
    need = (_to_float(n_bytes) + CALL_BYTES) / 2**20
    if not math.isfinite(need) or need > budget:
        raise ValueError(f"{what} would need about {need:,.0f} MiB, over the memory budget of {budget:,.0f} MiB "
                         f"(pass smaller sizes, or set ${MEMORY_BUDGET_VARIABLE})")
    return n_bytes


def torch_device(value, name: str = "device") -> torch.device:
    """``value`` (``"cpu"``, ``"cuda:0"``, a ``torch.device``) as a ``torch.device`` this machine has: an unknown
    name or a missing GPU is refused before anything is moved there."""
    try:
        dev = torch.device(value)
    except (RuntimeError, TypeError, ValueError) as e:
        raise ValueError(f"{name} must be a torch device name such as 'cpu' or 'cuda', got {value!r} "
                         f"({str(e).splitlines()[0]})") from None
    mps = getattr(torch.backends, "mps", None)
    if dev.type == "cuda" and not torch.cuda.is_available() or dev.type == "mps" and not (
            mps is not None and mps.is_available()):
        raise ValueError(f"{name}={value!r}: this machine has no such device")
    return dev


def sequence(value, name: str, min_len: int = 1, max_len: int | None = None) -> list:
    """``value`` (a list, tuple, range, numpy array or tensor, its items along the first axis; not a string,
    bytes, dict or set) as a list of ``min_len .. max_len`` items."""
    if isinstance(value, (str, bytes, dict, set, frozenset)) or not isinstance(
            value, (Sequence, np.ndarray, torch.Tensor)) or getattr(value, "ndim", 1) == 0:
        raise ValueError(f"{name} must be a list or tuple, got {type(value).__name__} {value!r:.60}")
    n = len(value)
    if n < min_len or max_len is not None and n > max_len:
        raise ValueError(f"{name} must have {_interval(min_len, max_len)} items, got {n}")
    return list(value)


def mapping(value, name: str, min_len: int = 0) -> dict:
    """``value`` if it is a dict with at least ``min_len`` entries."""
    if not isinstance(value, dict):
        raise ValueError(f"{name} must be a dict, got {type(value).__name__} {value!r:.60}")
    if len(value) < min_len:
        raise ValueError(f"{name} must have at least {min_len} entries, got {len(value)}")
    return value


_INT64_MAX = 2 ** 63 - 1


def integers(value, name: str, minimum: int | None = None, maximum: int | None = None, ndim: int | None = None,
             min_size: int = 0) -> np.ndarray:
    """``value`` (an int, a nested list or an array) as an int64 array of ``ndim`` dims (None: any), at least
    ``min_size`` entries, each in ``[minimum, maximum]``. Bools, strings, NaN and fractions are refused (2.0 is
    the integer 2)."""
    try:
        a = np.asarray(value)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{name} must be integers, got {type(value).__name__} ({e})") from None
    if a.dtype == object or a.dtype.kind in "USbBVcmM":
        raise ValueError(f"{name} must be integers, got {a.dtype} {value!r:.60}")
    if a.dtype.kind == "f":
        if a.size and not (np.isfinite(a).all() and (a == np.round(a)).all()):
            raise ValueError(f"{name} must be integers, got non-integer values such as "
                             f"{a[~(np.isfinite(a) & (a == np.round(a)))].flat[0]!r}")
    wraps = (a >= 2.0 ** 63) | (a < -2.0 ** 63) if a.dtype.kind == "f" else a > np.uint64(_INT64_MAX) \
        if a.dtype.kind == "u" else None
    if wraps is not None and wraps.any():
        big = a[wraps].flat[0]
        raise ValueError(f"{name} must be integers in the int64 range, got {big!r} (it would wrap around)")
    if ndim is not None and a.ndim != ndim:
        raise ValueError(f"{name} must be a {ndim}-D list of integers, got shape {a.shape}")
    if a.size < min_size:
        raise ValueError(f"{name} must hold at least {min_size} integers, got {a.size}")
    a = a.astype(np.int64)
    if a.size and (minimum is not None and a.min() < minimum or maximum is not None and a.max() > maximum):
        raise ValueError(f"{name} must be integers {_interval(minimum, maximum)}, got values in "
                         f"[{a.min()}, {a.max()}]")
    return a


def _array(value, name: str, what: str) -> np.ndarray:
    """``value`` (a tensor, array, number or nested list) as a numpy array; ``ValueError`` saying ``what`` it
    must be when numpy cannot read it (a ragged list, say)."""
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().numpy()
    try:
        return np.asarray(value)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{name} must be {what}, got {type(value).__name__} ({e})") from None


def reals(value, name: str, ndim: int | None = None, finite: bool = True) -> np.ndarray:
    """``value`` (a number, nested list, array or tensor) as a float64 array of real numbers of ``ndim`` dims
    (None: any), finite unless ``finite=False``. Bools, strings, objects (e.g. a ragged list) and complex
    numbers are refused: the values would be coerced, not read."""
    a = _array(value, name, "real numbers")
    if a.dtype.kind not in "fiu":
        raise ValueError(f"{name} must hold real numbers (ints or floats), got dtype {a.dtype} {value!r:.60}")
    if ndim is not None and a.ndim != ndim:
        raise ValueError(f"{name} must be a {ndim}-D array of numbers, got shape {a.shape}")
    if finite and a.size and not np.isfinite(a).all():
        raise ValueError(f"{name} contains NaN or inf")
    return a.astype(np.float64)


def bools(value, name: str, n: int | None = None) -> np.ndarray:
    """``value`` as a 1-D bool array (bools, or the integers 0 and 1) of length ``n`` when given."""
    a = _array(value, name, "True/False values")
    if a.dtype != bool:
        if a.dtype.kind not in "iu" or a.size and not np.isin(a, (0, 1)).all():
            raise ValueError(f"{name} must be True/False values, got {a.dtype} {value!r:.60}")
        a = a.astype(bool)
    if a.ndim != 1 or n is not None and len(a) != n:
        raise ValueError(f"{name} must be 1-D of length {n if n is not None else 'N'}, got shape {a.shape}")
    return a


def same_length(a, b, name_a: str, name_b: str) -> int:
    """``len(a)``, after ``ValueError`` when ``len(b)`` differs (paired inputs)."""
    try:
        n_a, n_b = len(a), len(b)
    except TypeError:
        raise ValueError(f"{name_a} and {name_b} must both be lists (paired inputs), got {type(a).__name__} and "
                         f"{type(b).__name__}") from None
    if n_a != n_b:
        raise ValueError(f"{name_a} and {name_b} must have the same length, got {len(a)} and {len(b)}")
    return len(a)


# -- names in file paths: the one rule (the registry of stored results reads its paths by it) ---------------------
_SAFE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*")


def safe_name(value, name: str) -> str:
    """``value`` as one file or folder name that cannot leave its folder: letters, digits, ``_ . + -``, not
    starting with a dot, no separator, no ``..``."""
    if not isinstance(value, str) or not _SAFE_NAME.fullmatch(value) or ".." in value:
        raise ValueError(f"{name} must be a plain file name (letters, digits, _ . + -; no '/', no '..'), "
                         f"got {value!r}")
    return value


def safe_path(folder, relative, name: str) -> Path:
    """``folder / relative`` where ``relative`` (``"emc2/twin_skull"``) is a relative path of :func:`safe_name`
    parts separated by ``/``, so the result stays inside ``folder`` (resolved: a link out of it is refused too)."""
    if not isinstance(relative, str) or not relative or relative.startswith("/") or "\\" in relative:
        raise ValueError(f"{name} must be a relative path inside {folder} (parts joined by '/'), got {relative!r}")
    for part in relative.split("/"):
        safe_name(part, f"{name} (part {part!r} of {relative!r})")
    path = Path(folder) / relative
    if not path.resolve().is_relative_to(Path(folder).resolve()):
        raise ValueError(f"{name}={relative!r} leaves its folder {folder} (a link?)")
    return path


# -- shared rules for values, indices, sidecars and allocations ------------------------------------------------------
def _array_view(value, name: str):
    """``value`` as a numpy array or a torch tensor (no copy of either); numbers and lists become arrays."""
    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "biufc":
            raise ValueError(f"{name} must hold real numbers, got an array of dtype {value.dtype} (an object array "
                             f"is not read: convert it to floats first)")
        return value
    try:
        a = np.asarray(value)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{name} must be numbers, got {type(value).__name__} ({e})") from None
    if a.dtype.kind not in "biuf":
        raise ValueError(f"{name} must hold real numbers, got {a.dtype} {value!r:.60}")
    return a


def finite(value, name: str):
    """``value`` (a number, array or tensor) if every entry is finite; ``ValueError`` naming ``name``, how many
    entries are NaN or inf and where the first one is. The finite-values rule: NaN in is refused, never NaN
    out. Returns ``value`` unchanged (no copy)."""
    a = _array_view(value, name)
    if isinstance(a, torch.Tensor):
        if a.is_complex():
            raise ValueError(f"{name}: complex values are not supported, got dtype {a.dtype}")
        if not a.is_floating_point() or not a.numel():
            return value
        bad = ~torch.isfinite(a.detach())
        if bool(bad.any()):
            first = tuple(int(i) for i in torch.nonzero(bad)[0])
            raise ValueError(f"{name} contains NaN or inf ({int(bad.sum())} of {a.numel()} values, the first at "
                             f"index {first}: {a.detach()[first].item() if first else a.item()})")
        return value
    if a.dtype.kind == "c":
        raise ValueError(f"{name}: complex values are not supported, got dtype {a.dtype}")
    if a.dtype.kind != "f" or not a.size:
        return value
    bad = ~np.isfinite(a)
    if bad.any():
        first = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ValueError(f"{name} contains NaN or inf ({int(bad.sum())} of {a.size} values, the first at index "
                         f"{first}: {a[first] if first else a.item()})")
    return value


def value_range(value, name: str, low: float | None = None, high: float | None = None, hint: str = ""):
    """``value`` (a number, array or tensor of activations, pixels, probabilities) if it is finite
    (:func:`finite`) and every entry lies in ``[low, high]`` (``None``: open); ``ValueError`` naming ``name``,
    the interval and the range found (plus ``hint``). The value-range rule. Returns ``value`` unchanged."""
    finite(value, name)
    a = _array_view(value, name)
    n = a.numel() if isinstance(a, torch.Tensor) else a.size
    if not n or low is None and high is None:
        return value
    if isinstance(a, torch.Tensor):
        lo, hi = float(a.detach().min()), float(a.detach().max())
    else:
        lo, hi = float(a.min()), float(a.max())
    if low is not None and lo < low or high is not None and hi > high:
        raise ValueError(f"{name} must lie in [{'-inf' if low is None else f'{low:g}'}, "
                         f"{'inf' if high is None else f'{high:g}'}], got values in [{lo:.4g}, {hi:.4g}]"
                         f"{hint}")
    return value


def unit_image(value, name: str = "image"):
    """``value`` (an image or a batch of images, array or tensor, floats) if its values lie in [0, 1]: the
    image-range rule. 8-bit data (values up to 255) is refused with a hint, never rescaled by a guess, and so
    are NaN and inf. Returns ``value`` unchanged."""
    a = _array_view(value, name)
    floating = a.is_floating_point() if isinstance(a, torch.Tensor) else a.dtype.kind == "f"
    if not floating:
        raise ValueError(f"{name} must hold floats in [0, 1], got dtype {a.dtype} (8-bit data: divide by 255)")
    finite(a, name)
    n = a.numel() if isinstance(a, torch.Tensor) else a.size
    hi = float(a.detach().max() if isinstance(a, torch.Tensor) else a.max()) if n else 0.0
    hint = " (values up to 255 look like 8-bit data: divide by 255)" if 1 < hi <= 255 else ""
    return value_range(value, name, 0.0, 1.0, hint)


def index(value, name: str, size, what: str = "") -> int | np.ndarray:
    """``value`` (one index, or a list / array of them) as an ``int`` (or an int64 array) in ``[0, size - 1]``:
    the index-range rule. A negative index is refused (never wraps to the last row), so is ``size`` itself
    (never spills into the next region), and so are fractions, bools and NaN (:func:`integer`). ``what`` names
    the thing indexed (``"latents"``)."""
    size = integer(size, f"size of {what or name}", 0)
    of = f" ({what} has {size})" if what else f" (size {size})"
    if size == 0:
        raise ValueError(f"{name}={value!r:.60}: there is nothing to index{of}")
    if isinstance(value, (numbers.Number, np.number)) or isinstance(value, (np.ndarray, torch.Tensor)) and \
            value.ndim == 0:
        v = value.item() if isinstance(value, (np.ndarray, torch.Tensor)) else value
        try:
            return integer(v, name, 0, size - 1)
        except ValueError:
            raise ValueError(f"{name} must be an index in [0, {size - 1}]{of}, got {value!r}") from None
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().numpy()
    a = integers(value, name)
    if a.size and (a.min() < 0 or a.max() >= size):
        bad = a[(a < 0) | (a >= size)].flat[0]
        raise ValueError(f"{name} must be indices in [0, {size - 1}]{of}, got {bad}")
    return a


def fields(value, name: str, allowed: Iterable[str], required: Iterable[str] = ()) -> dict:
    """``value`` if it is a dict whose keys are all in ``allowed`` and include every ``required`` one;
    ``ValueError`` naming ``name`` and the unknown or missing keys (a config with a misspelled key, a JSON file
    without a field). Returns ``value``."""
    mapping(value, name)
    allowed, required = list(allowed), list(required)
    unknown = [k for k in value if k not in allowed]
    if unknown:
        raise ValueError(f"{name}: unknown field(s) {unknown!r:.120}; known: {allowed}")
    missing = [k for k in required if k not in value]
    if missing:
        raise ValueError(f"{name}: missing field(s) {missing}")
    return value


def from_fields(cls, value, name: str):
    """``cls(**value)`` for a dataclass ``cls``, after :func:`fields` (unknown keys, missing required keys);
    a ``TypeError`` of the constructor becomes a ``ValueError`` naming ``name``."""
    import dataclasses
    fs = dataclasses.fields(cls)
    required = [f.name for f in fs if f.init and f.default is dataclasses.MISSING
                and f.default_factory is dataclasses.MISSING]
    fields(value, name, [f.name for f in fs if f.init], required)
    try:
        return cls(**value)
    except TypeError as e:
        raise ValueError(f"{name}: {e}") from None


_MISSING = object()


def _field(header: dict, dotted: str):
    node = header
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return _MISSING
        node = node[part]
    return node


def sidecar_agrees(header, facts: dict, where) -> dict:
    """Refuse a sidecar (``header``, a JSON dict) that disagrees with the tensors it describes: ``facts`` maps a
    sidecar field (dotted for nested ones: ``"config.d_sae"``) to the value the tensors imply (a width read off
    a weight's shape, a count of stored models). ``ValueError`` naming ``where`` (the file), the field, the
    sidecar's value and the tensors'; a field the sidecar lacks is named as missing. The sidecar-against-tensors
    rule. A fact may be a pair ``(read, implied)``: ``read(stated)`` is compared instead (the widths of a list of
    layers: ``"activations": (lambda a: [len(l) for l in a], [3, 3])``). Returns ``header``."""
    mapping(header, f"{where} (sidecar)")
    for key, implied in facts.items():
        read = None
        if isinstance(implied, tuple) and len(implied) == 2 and callable(implied[0]):
            read, implied = implied
        stated = _field(header, key)
        if stated is _MISSING:
            raise ValueError(f"{where}: the sidecar has no field {key!r} (the tensors say {implied!r:.80})")
        if read is not None:
            try:
                stated = read(stated)
            except (TypeError, ValueError, KeyError, IndexError, AttributeError):
                raise ValueError(f"{where}: sidecar field {key!r} is {stated!r:.80}, which the tensors' "
                                 f"{implied!r:.80} cannot be read against") from None
        if _normal(stated) != _normal(implied):
            raise ValueError(f"{where}: sidecar field {key!r} gives {stated!r:.80}, but the tensors say "
                             f"{implied!r:.80} (edited sidecar, or tensors of another checkpoint)")
    return header


def _normal(v):
    if isinstance(v, (tuple, list)):
        return [_normal(x) for x in v]
    if isinstance(v, (np.integer, np.floating)):
        return v.item()
    return v


def allocation(shape, name: str, bytes_per_value: int = 4, budget_mb: float | None = None) -> tuple:
    """The memory-estimate rule before a large allocation: ``shape`` (a tuple of whole numbers, each checked
    with :func:`integer`, 0 allowed) would take ``prod(shape) * bytes_per_value`` bytes; refused above the budget
    (:func:`check_budget`, default :func:`memory_budget_mb`) with a message naming ``name``, the shape asked,
    its size and the budget. Returns the shape as ints."""
    dims = tuple(integer(d, f"{name} (dimension {i})", 0) for i, d in enumerate(sequence(shape, name, 0)))
    n_bytes = _to_float(math.prod(dims)) * bytes_per_value
    check_budget(n_bytes, f"{name} of shape {dims}", budget_mb)
    return dims
