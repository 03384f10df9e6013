"""Run mode: CPU (default, minutes on a laptop) or full (GPU / Colab, the papers' scale); torch's threads.

One environment variable switches every chapter: ``COMPBOOK_MODE=full``. Chapters read sizes through
:func:`by_mode`, so a CPU run and a full run differ only in those numbers, which each chapter prints.

Importing compbook sets torch's intra-op threads once (:func:`set_threads`): one thread, compbook's small models'
fastest on a shared CPU, unless ``COMPBOOK_THREADS=N`` says otherwise or ``OMP_NUM_THREADS`` /
``MKL_NUM_THREADS`` is set (then torch keeps the count it read). NumPy's and SciPy's BLAS (scikit-learn's probes
and MDS run on it) get the same count. No chapter or command sets them by hand.
"""

from __future__ import annotations

import contextlib
import os

import torch
from threadpoolctl import threadpool_limits

MODE_VARIABLE = "COMPBOOK_MODE"
MODES = ("cpu", "full")
#: ``COMPBOOK_SMOKE=1`` with ``COMPBOOK_MODE=full``: full mode's code paths, stores and object spaces at a CPU
#: test's step, seed and sample counts (``make test`` runs every chapter so; CONTRIBUTING.md, "Full-mode smoke")
SMOKE_VARIABLE = "COMPBOOK_SMOKE"
#: ``COMPBOOK_FULL_SUBSET=1`` with ``COMPBOOK_MODE=full``: each long chapter's named subset (its config's ``SUBSET``:
#: e.g. one target, fewer seeds), to fit a GPU session; each chapter prints its time (:mod:`compbook.runs.estimate`)
SUBSET_VARIABLE = "COMPBOOK_FULL_SUBSET"


def mode() -> str:
    """The current run mode, ``"cpu"`` or ``"full"``, read from ``$COMPBOOK_MODE`` (default ``"cpu"``)."""
    value = os.environ.get(MODE_VARIABLE, "cpu").strip().lower() or "cpu"
    if value not in MODES:
        raise ValueError(f"${MODE_VARIABLE}={value!r}: expected one of {MODES}")
    return value


def is_full() -> bool:
    """True in full mode (``COMPBOOK_MODE=full``)."""
    return mode() == "full"


def _switch(variable: str, what: str) -> bool:
    """A ``0``/``1`` switch read from ``$variable`` (unset: off); anything else is refused, naming ``what``."""
    value = os.environ.get(variable, "").strip()
    if value not in ("", "0", "1"):
        raise ValueError(f"${variable}={value!r}: expected 1 ({what}) or 0 / unset")
    return value == "1"


def smoke() -> bool:
    """True when ``$COMPBOOK_SMOKE`` is ``1`` (``0`` or unset: False; anything else is refused). It shrinks
    full mode only: in CPU mode it changes nothing."""
    return _switch(SMOKE_VARIABLE, "full-mode smoke")


def full_subset() -> bool:
    """True when ``$COMPBOOK_FULL_SUBSET`` is ``1`` (``0`` or unset: False; anything else is refused). It shrinks
    full mode only, to each config's ``SUBSET``: in CPU mode it changes nothing."""
    return _switch(SUBSET_VARIABLE, "full mode's named subsets")


def is_smoke() -> bool:
    """True in the full-mode smoke (``COMPBOOK_MODE=full`` and ``COMPBOOK_SMOKE=1``)."""
    return is_full() and smoke()


_UNSET = object()


def by_mode(cpu, full, smoke=_UNSET):
    """Return ``cpu`` in CPU mode and ``full`` in full mode (a chapter's size knob); ``smoke``, when given, in the
    full-mode smoke (``COMPBOOK_SMOKE=1``; without it the smoke uses ``full``)."""
    if not is_full():
        return cpu
    return smoke if smoke is not _UNSET and is_smoke() else full


def device(mode_name: str | None = None) -> torch.device:
    """``cuda`` in full mode when a GPU is present, else ``cpu`` (CPU mode never uses a GPU: same numbers);
    ``mode_name`` (one of :data:`MODES`; default this process's :func:`mode`): the device of that mode here (a
    sweep's worker runs its config's mode); ``ValueError`` for another name."""
    if mode_name is not None and mode_name not in MODES:
        raise ValueError(f"config mode={mode_name!r}: expected one of {MODES}")
    full = is_full() if mode_name is None else mode_name == "full"
    return torch.device("cuda" if full and torch.cuda.is_available() else "cpu")


#: the share of the machine's free memory a budget may take (our choice: room for Python, the kernel, plots)
MEMORY_SHARE = 0.8


def available_memory_mb(device=None) -> float:
    """Free memory in MiB where tensors of ``device`` live: the GPU's free memory for a CUDA device
    (``torch.cuda.mem_get_info``), else the machine's available RAM (``MemAvailable`` of ``/proc/meminfo``, or
    the physical pages where that file is missing)."""
    device = torch.device(device) if device is not None else torch.device("cpu")
    if device.type == "cuda":
        free, _ = torch.cuda.mem_get_info(device)
        return free / 2 ** 20
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") / 2 ** 20


class ModeConfig:
    """Mixin for an experiment's config dataclass: the book's one config idiom.

    ``Config.for_mode()`` is ``Config()`` in CPU mode and ``Config.full()`` in full mode; a chapter writes
    ``cfg = Config.for_mode()`` and ``print(cfg)``. A subclass says what full mode changes in ``FULL`` (field ->
    value), or overrides :meth:`full`; ``SMOKE`` says what the full-mode smoke (``COMPBOOK_SMOKE=1``) shrinks
    further: step, seed and sample counts, never the code path; ``SUBSET`` a named part of full mode that fits a
    GPU session (``COMPBOOK_FULL_SUBSET=1``: e.g. one target, fewer seeds).
    """

    FULL: dict = {}
    SMOKE: dict = {}
    SUBSET: dict = {}

    @classmethod
    def full(cls):
        """The papers' scale: the defaults with ``FULL``'s fields replaced (then ``SUBSET``'s under
        ``COMPBOOK_FULL_SUBSET=1``, and ``SMOKE``'s in the smoke)."""
        import dataclasses
        return dataclasses.replace(cls(), **(cls.FULL | (cls.SUBSET if full_subset() else {})
                                             | (cls.SMOKE if smoke() else {})))

    @classmethod
    def for_mode(cls):
        """``cls()`` in CPU mode, :meth:`full` in full mode (``COMPBOOK_MODE=full``)."""
        return cls.full() if is_full() else cls()

    def __str__(self) -> str:
        """``Name(field=value, ...)`` wrapped to lines of at most 80 characters (what ``print(cfg)`` shows)."""
        return dataclass_text(self)


def dataclass_text(obj) -> str:
    """A dataclass as ``Name(field=value, ...)`` wrapped to lines of at most 80 characters."""
    import dataclasses
    import textwrap
    parts = ", ".join(f"{f.name}={getattr(obj, f.name)!r}" for f in dataclasses.fields(obj))
    return textwrap.fill(parts + ")", 80, initial_indent=f"{type(obj).__name__}(", subsequent_indent="    ",
                         break_long_words=False, break_on_hyphens=False)


# -- torch's threads: chosen once, when compbook is imported -----------------------------------------------------------
#: ``COMPBOOK_THREADS=N`` (a positive integer): torch's intra-op threads for compbook's work, whatever else is set
THREADS_VARIABLE = "COMPBOOK_THREADS"
#: variables torch itself reads its thread count from: when one is set (and ``COMPBOOK_THREADS`` is not), the
#: user chose, and compbook leaves torch's count as it is
TORCH_THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")
#: compbook's choice when nobody chose (measured: benchmarks/bench_threads.py): its models are small and its
#: loops take many short steps, where one thread is as fast as two on a quiet 2-core machine and several times
#: faster beside a busy core (two threads wait on each other at every step); a GPU's work is not affected
DEFAULT_THREADS = 1


def threads() -> int | None:
    """The intra-op thread count compbook gives torch: ``$COMPBOOK_THREADS`` when set (a positive integer;
    anything else is refused), None (torch keeps its own) when ``$OMP_NUM_THREADS`` or ``$MKL_NUM_THREADS`` is
    set, else :data:`DEFAULT_THREADS`."""
    value = os.environ.get(THREADS_VARIABLE, "").strip()
    if value:
        if not value.isdigit() or int(value) < 1:
            raise ValueError(f"${THREADS_VARIABLE}={value!r}: expected a positive integer (torch's threads)")
        return int(value)
    if any(os.environ.get(v, "").strip() for v in TORCH_THREAD_VARIABLES):
        return None
    return DEFAULT_THREADS


def set_threads(n: int | None = None) -> int:
    """Set torch's intra-op threads, and the BLAS threads of NumPy and SciPy, to ``n`` (a positive integer;
    default :func:`threads`, where None leaves both as they are); returns torch's count in use. The one place
    compbook sets them: once when compbook is imported, then only where asked (a sweep worker's CPUs, a command's
    ``--threads``). A reader's own ``torch.set_num_threads`` after the import wins."""
    if n is None:
        n = threads()
    elif isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"threads must be a positive integer, got {n!r}")
    if n is not None:
        if n != torch.get_num_threads():
            torch.set_num_threads(n)
        _set_blas_threads(n)
    return torch.get_num_threads()


#: what BLAS libraries loaded after the import (SciPy's own OpenBLAS, loaded with scikit-learn) read their thread
#: count from; compbook sets it only where nobody else did
BLAS_VARIABLE = "OPENBLAS_NUM_THREADS"
_blas_variable_ours: str | None = None


def _set_blas_threads(n: int) -> None:
    """BLAS at ``n`` threads: the libraries loaded now through threadpoolctl, those loaded later through
    :data:`BLAS_VARIABLE`; left alone where the user set that variable. Measured: chapters 11 and 12 (scikit-learn on
    NumPy/SciPy's OpenBLAS) beside a busy core took 1.3x to 1.4x longer with BLAS's default two threads."""
    global _blas_variable_ours
    if os.environ.get(BLAS_VARIABLE) not in (None, _blas_variable_ours):
        return                                       # the user chose BLAS's threads
    threadpool_limits(limits=n, user_api="blas")
    os.environ[BLAS_VARIABLE] = _blas_variable_ours = str(n)


@contextlib.contextmanager
def using_threads(n: int):
    """Run the ``with`` block with ``n`` torch (and BLAS) threads (:func:`set_threads`), torch's count before
    restored after (BLAS's too: to that count)."""
    before = torch.get_num_threads()
    set_threads(n)
    try:
        yield
    finally:
        set_threads(before)
