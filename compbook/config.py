"""Run mode: CPU (default, minutes on a laptop) or full (GPU / Colab, the papers' scale).

One environment variable switches every chapter: ``COMPBOOK_MODE=full``. Chapters read sizes through
:func:`by_mode`, so a CPU run and a full run differ only in those numbers, which each chapter prints.
"""

from __future__ import annotations

import os

import torch

MODE_VARIABLE = "COMPBOOK_MODE"
MODES = ("cpu", "full")


def mode() -> str:
    """The current run mode, ``"cpu"`` or ``"full"``, read from ``$COMPBOOK_MODE`` (default ``"cpu"``)."""
    value = os.environ.get(MODE_VARIABLE, "cpu").strip().lower() or "cpu"
    if value not in MODES:
        raise ValueError(f"${MODE_VARIABLE}={value!r}: expected one of {MODES}")
    return value


def is_full() -> bool:
    """True in full mode (``COMPBOOK_MODE=full``)."""
    return mode() == "full"


def by_mode(cpu, full):
    """Return ``cpu`` in CPU mode and ``full`` in full mode (a chapter's size knob)."""
    return full if is_full() else cpu


def device() -> torch.device:
    """``cuda`` in full mode when a GPU is present, else ``cpu`` (CPU mode never uses a GPU: same numbers)."""
    return torch.device("cuda" if is_full() and torch.cuda.is_available() else "cpu")


class ModeConfig:
    """Mixin for an experiment's config dataclass: the book's one config idiom.

    ``Config.for_mode()`` is ``Config()`` in CPU mode and ``Config.full()`` in full mode; a chapter writes
    ``cfg = Config.for_mode()`` and ``print(cfg)``. A subclass says what full mode changes in ``FULL`` (field ->
    value), or overrides :meth:`full`.
    """

    FULL: dict = {}

    @classmethod
    def full(cls):
        """The papers' scale: the defaults with ``FULL``'s fields replaced."""
        import dataclasses
        return dataclasses.replace(cls(), **cls.FULL)

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
