"""Numbers in a chapter's prose come from its run: ``glue`` hands them to the book.

Every main chapter (and the notes chapters) writes a result into its text as a MyST-NB glue role,
``{glue:text}`name:.3f```, filled at build time from the value the chapter computed. ``glue`` stores the value
under that name without displaying it, and returns it, so the cell can use it too. Where MyST-NB is not installed
(a plain Jupyter or Colab session), nothing is stored and the value is returned unchanged: the chapter still runs.

>>> r2 = glue("image_r2", 0.926)      # then in markdown: R^2 = {glue:text}`image_r2:.3f`
"""

from __future__ import annotations

import math
import re

import numpy as np

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def glue(name: str, value, display: bool = False):
    """Store ``value`` (a number or a short string) for ``{glue:text}`name```; return ``value``.

    Numbers are stored as Python floats / ints (a numpy or torch scalar would print its type in some formats).
    Refuses a name a glue role could not spell and a non-finite number (a NaN in the prose is a bug upstream).
    """
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(f"name: {name!r} is not a glue name (letters, digits and _, not starting with a digit)")
    stored = _plain(name, value)
    try:
        from myst_nb import glue as _myst_glue
    except ImportError:          # plain Jupyter / Colab: the prose shows the role, the value is still returned
        return value
    _myst_glue(name, stored, display=display)
    return value


def _plain(name: str, value):
    if hasattr(value, "item") and getattr(value, "ndim", 0) == 0:      # numpy / torch scalars
        value = value.item()
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        if not math.isfinite(float(value)):
            raise ValueError(f"{name}: the value to glue is {value}, not a finite number")
        return float(value)
    if isinstance(value, str):
        return value
    raise ValueError(f"{name}: glue takes a number or a string, not {type(value).__name__}")


def say(*parts, sep: str = " ", width: int = 80) -> None:
    """Print ``parts`` as ``print`` would, each line wrapped to ``width`` columns (the book's page is about 80
    wide; a longer printed line overflows its column). Continuation lines are indented by two spaces."""
    from .results import wrap           # the one wrapping rule (provenance lines use it too)
    text = sep.join(str(p) for p in parts)
    for line in text.splitlines() or [""]:
        print(wrap(line, width) if len(line) > width else line)
