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
    from ..results import wrap           # the one wrapping rule (provenance lines use it too)
    text = sep.join(str(p) for p in parts)
    for line in text.splitlines() or [""]:
        print(wrap(line, width) if len(line) > width else line)


def readable(table, digits: int = 4):
    """``table`` (a pandas DataFrame or Series) as a reader should meet it: every number with at most
    ``digits`` significant digits (and at most 3 decimals; a float column of whole numbers as integers), and
    every missing value written ``n/a``. Returns a DataFrame of strings (the values are for the eye; compute
    with the original).

    >>> readable(pd.DataFrame({"r2": [0.785078, float("nan")], "n": [12, 7]}))   # r2: 0.785, n/a
    """
    import pandas as pd
    if not isinstance(digits, int) or not 1 <= digits <= 15:
        raise ValueError(f"digits: {digits!r} is not an integer between 1 and 15")
    if isinstance(table, pd.Series):
        table = table.to_frame()
    if not isinstance(table, pd.DataFrame):
        raise ValueError(f"table: expected a pandas DataFrame or Series, got {type(table).__name__}")
    out = table.copy().astype(object)
    for col in table.columns:
        floats = [float(v) for v in table[col] if isinstance(v, (float, np.floating)) and math.isfinite(v)]
        whole = all(v.is_integer() for v in floats)
        out[col] = [_cell(v, digits, whole) for v in table[col]]
    return out


def _cell(value, digits: int, whole: bool) -> str:
    import pandas as pd
    if isinstance(value, (list, tuple)):        # a list in a cell (per-seed values): each number alike
        return "[" + ", ".join(_cell(v, digits, False) for v in value) + "]"
    if value is None or (not isinstance(value, (str, bytes)) and np.ndim(value) == 0 and pd.isna(value)):
        return "n/a"
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (float, np.floating)) and whole:
        value = int(value)
    if isinstance(value, (int, np.integer)):
        return f"{int(value):,}" if abs(int(value)) >= 10000 else str(int(value))
    if isinstance(value, (float, np.floating)):
        v = float(value)
        before = int(math.floor(math.log10(abs(v)))) + 1 if abs(v) >= 1 else 1
        return f"{v:.{max(0, min(3, digits - before))}f}"
    return str(value)
