"""FER's pickles read without JAX and without running anything they name: NumPy arrays and a ``Namespace`` only.

FER (``akarshkumar0101/fer``) stores each network as three pickles (``../shared/fer/README.md``, read with
``pickletools``, which executes nothing):

- ``params.pkl``: a JAX array, pickled as ``jax._src.array._reconstruct_array(fun, args, arr_state, aval_state)``
  around a NumPy array (``fun`` is ``numpy._core.multiarray._reconstruct``, ``args`` ``(numpy.ndarray, (0,),
  b'b')``, ``arr_state`` the array's ``__setstate__`` tuple with a ``numpy.dtype``); JAX's function builds the
  NumPy array and moves it to a device. Here it builds the same NumPy array and stops there;
- ``args.pkl``: an ``argparse.Namespace`` of plain values;
- ``arch.pkl``: a plain string.

:func:`loads` is a ``pickle.Unpickler`` whose ``find_class`` answers only those globals (:data:`ALLOWED`),
each mapped to a NumPy or standard-library object that checks its arguments; any other global (``os.system``,
``builtins.eval``, a class with ``__reduce__`` ...) is refused with :class:`RefusedGlobal` naming it, before it is
imported or called. Pickles from older NumPy name ``numpy.core.multiarray._reconstruct``; both names are allowed.
"""

from __future__ import annotations

import argparse
import io
import pickle
from pathlib import Path

import numpy as np

from ... import checks

#: The largest pickle read (FER's largest, the apple's ``params.pkl``, is 186 kB).
MAX_BYTES = 16 * 2**20
#: NumPy's own array constructor (``numpy._core.multiarray._reconstruct`` on NumPy 2, ``numpy.core...`` before).
_NP_RECONSTRUCT = np.zeros(1).__reduce__()[0]


class RefusedGlobal(pickle.UnpicklingError, ValueError):
    """A pickle names a global that FER's pickles never name (the message names it and the source)."""


def _dtype(obj, align=False, copy=False) -> np.dtype:
    """``numpy.dtype(...)`` as NumPy pickles it, refusing object dtypes (an array of Python objects)."""
    dt = np.dtype(obj, bool(align), bool(copy))
    if dt.hasobject:
        raise ValueError(f"dtype {dt} holds Python objects; FER's arrays are numbers")
    return dt


def _reconstruct(subtype, shape, dtype) -> np.ndarray:
    """NumPy's ``_reconstruct`` as NumPy pickles it: an empty ndarray, filled by ``__setstate__`` (a larger
    ``shape`` here would allocate before any data is read)."""
    if subtype is not np.ndarray or tuple(shape) != (0,):
        raise ValueError(f"_reconstruct({getattr(subtype, '__name__', subtype)!r}, {shape!r}): NumPy pickles an "
                         f"ndarray as _reconstruct(ndarray, (0,), ...)")
    return _NP_RECONSTRUCT(np.ndarray, (0,), dtype)


def _reconstruct_array(fun, args, arr_state, aval_state) -> np.ndarray:
    """What JAX's ``jax._src.array._reconstruct_array`` does before it moves the array to a device: the NumPy
    array. ``fun`` must be NumPy's constructor; the array must hold numbers."""
    if fun is not _reconstruct or not isinstance(args, tuple):
        raise ValueError(f"_reconstruct_array: expected NumPy's _reconstruct and its arguments, got {fun!r}")
    if not isinstance(aval_state, dict):
        raise ValueError(f"_reconstruct_array: aval_state must be a dict, got {type(aval_state).__name__}")
    arr = fun(*args)
    arr.__setstate__(arr_state)
    if arr.dtype.hasobject:
        raise ValueError("_reconstruct_array: the array holds Python objects")
    return arr


#: ``(module, name)`` -> what it stands for here: every global FER's pickles name, and nothing else.
ALLOWED = {
    ("jax._src.array", "_reconstruct_array"): _reconstruct_array,
    ("numpy._core.multiarray", "_reconstruct"): _reconstruct,
    ("numpy.core.multiarray", "_reconstruct"): _reconstruct,
    ("numpy", "ndarray"): np.ndarray,
    ("numpy", "dtype"): _dtype,
    ("argparse", "Namespace"): argparse.Namespace,
}


class _Unpickler(pickle.Unpickler):
    def __init__(self, file, where: str):
        super().__init__(file)
        self.where = where

    def find_class(self, module: str, name: str):
        if (module, name) in ALLOWED:
            return ALLOWED[(module, name)]
        raise RefusedGlobal(f"{self.where}: refused global {module}.{name}: FER's pickles name only "
                            f"{', '.join(sorted(f'{m}.{n}' for m, n in ALLOWED))}; this is not one of them")

    def persistent_load(self, pid):
        raise RefusedGlobal(f"{self.where}: refused a persistent id {pid!r}: FER's pickles hold none")


def loads(data: bytes, where: str = "<bytes>"):
    """The object pickled in ``data``, built only from :data:`ALLOWED` (NumPy arrays, ``argparse.Namespace``,
    plain values). :class:`RefusedGlobal` naming the global for anything else; ``ValueError`` naming ``where``
    for bytes that are not such a pickle."""
    if not isinstance(data, (bytes, bytearray)):
        raise ValueError(f"{where}: data must be bytes, got {type(data).__name__}")
    if len(data) > MAX_BYTES:
        raise ValueError(f"{where}: {len(data)} bytes, more than {MAX_BYTES}: not one of FER's pickles")
    try:
        return _Unpickler(io.BytesIO(data), where).load()
    except RefusedGlobal:
        raise
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, IndexError, KeyError,
            MemoryError, OverflowError) as e:
        raise ValueError(f"{where}: not one of FER's pickles ({type(e).__name__}: {e})") from e


def load(path) -> object:
    """:func:`loads` of a file (``ValueError`` for a folder or a file over :data:`MAX_BYTES`)."""
    path = checks.file_path(Path(path), "FER pickle")
    if path.stat().st_size > MAX_BYTES:
        raise ValueError(f"{path}: {path.stat().st_size} bytes, more than {MAX_BYTES}: not one of FER's pickles")
    return loads(path.read_bytes(), str(path))
