"""Checked exercises: the reader's answer against the reference, on fresh seeded inputs, with the likely mistake named.

Every ``check_<what>(answer)`` in ``compbook.<part>.exercises`` returns a :class:`Checked`: ``passed`` and a short
message, shown as one line in Jupyter. A wrong answer is never a traceback: the check compares the answer with the
reference and, where it differs, with the planted wrong answers a reader is likely to write (TopK before ReLU, the
mean instead of the sum, an off-by-one...), and names the one it matches. Something that is not an answer yet (the
placeholder ``...``, ``None``, a string, a function returning ``None``) is refused politely, so a notebook whose
exercise cells are left as they are still runs top to bottom.

>>> check_value(0.5, reference=0.5, what="the bound")
correct: the bound = 0.5
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Mapping

import numpy as np
import torch


@dataclass(frozen=True)
class Checked:
    """A check's verdict on an answer: ``passed`` and what was tried or what went wrong."""

    passed: bool
    message: str

    def __bool__(self) -> bool:
        return self.passed

    def __repr__(self) -> str:
        return ("correct: " if self.passed else "not yet: ") + self.message

    def _repr_markdown_(self) -> str:
        mark = "**correct**" if self.passed else "**not yet**"
        return f"{mark}: {self.message}"


def correct(message: str) -> Checked:
    return Checked(True, message)


def wrong(message: str) -> Checked:
    return Checked(False, message)


def not_an_answer(answer, kind: str) -> Checked | None:
    """A polite refusal when ``answer`` is not an answer of the kind wanted (``"function"`` or ``"number"``...);
    ``None`` when it is one."""
    if answer is Ellipsis:
        return wrong(f"no answer yet: replace the placeholder `...` with your {kind}")
    if answer is None:
        return wrong(f"the answer is None: your {kind} is missing (a function that forgot `return`?)")
    if kind == "function" and not callable(answer):
        return wrong(f"expected a function, got {type(answer).__name__}: pass the function itself, not a call")
    if kind == "number":
        if isinstance(answer, (str, bytes)):
            return wrong(f"expected a number, got the string {answer!r}")
        if isinstance(answer, bool) or not _is_number(answer):
            return wrong(f"expected a number, got {type(answer).__name__}")
    if kind == "array" and isinstance(answer, (str, bytes, dict)):
        return wrong(f"expected an array, got {type(answer).__name__}")
    return None


def _is_number(x) -> bool:
    if isinstance(x, (int, float, np.integer, np.floating)):
        return True
    return isinstance(x, (np.ndarray, torch.Tensor)) and x.ndim == 0


def as_array(value) -> np.ndarray | None:
    """``value`` as a float64 numpy array, or ``None`` when it is not array-like."""
    if isinstance(value, torch.Tensor):
        return value.detach().double().cpu().numpy()
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        return None
    return arr


def close(a, b, rtol: float = 1e-4, atol: float = 1e-6) -> bool:
    """Whether two answers agree: same shape and values within tolerance (NaN never agrees)."""
    a, b = as_array(a), as_array(b)
    if a is None or b is None or a.shape != b.shape:
        return False
    return bool(np.all(np.isfinite(a)) and np.allclose(a, b, rtol=rtol, atol=atol))


def _short(value) -> str:
    arr = as_array(value)
    if arr is None:
        return type(value).__name__
    if arr.ndim == 0:
        return f"{float(arr):.4g}"
    return f"an array of shape {tuple(arr.shape)}"


def check_value(answer, reference, what: str, mistakes: Mapping[str, object] | None = None,
                rtol: float = 1e-3, atol: float = 1e-6) -> Checked:
    """A number (or array) against the reference; where it matches a planted wrong value, name that mistake."""
    refused = not_an_answer(answer, "number" if np.ndim(reference) == 0 else "array")
    if refused is not None:
        return refused
    if close(answer, reference, rtol, atol):
        return correct(f"{what} = {_short(reference)}")
    for mistake, value in (mistakes or {}).items():
        if close(answer, value, rtol, atol):
            return wrong(f"{what}: you gave {_short(answer)}; that is what {mistake} gives")
    arr = as_array(answer)
    if arr is not None and arr.shape != np.shape(reference):
        return wrong(f"{what}: shape {arr.shape}, expected {np.shape(reference)}")
    return wrong(f"{what}: you gave {_short(answer)}, which is not it (no common mistake matches it either)")


def check_function(answer: Callable, reference: Callable, cases: Iterable[tuple], what: str,
                   mistakes: Mapping[str, Callable] | None = None, rtol: float = 1e-4,
                   atol: float = 1e-6) -> Checked:
    """Run the reader's function and the reference on each case (a tuple of arguments); where the outputs differ,
    run each planted wrong version on that case and name the one whose output the reader's matches."""
    refused = not_an_answer(answer, "function")
    if refused is not None:
        return refused
    cases = list(cases)
    for n, args in enumerate(cases):
        try:
            got = answer(*_copies(args))
        except Exception as e:       # the reader's code: report, never a traceback
            return wrong(f"{what}: your function raised {type(e).__name__}: {e} (on case {n + 1} of {len(cases)}: "
                         f"{_describe(args)})")
        if got is None:
            return wrong(f"{what}: your function returned None (a missing `return`?)")
        want = reference(*_copies(args))
        if not close(got, want, rtol, atol):
            return wrong(f"{what}: case {n + 1} of {len(cases)} ({_describe(args)}) gives "
                         + _difference(got, want, rtol, atol) + _named(got, mistakes, args, rtol, atol))
    return correct(f"{what}: matches the reference on {len(cases)} random cases ({_describe(cases[0])}, ...)")


def _difference(got, want, rtol: float, atol: float) -> str:
    """How an answer differs from the reference: the two values, or for arrays of one shape, where they differ."""
    a, b = as_array(got), as_array(want)
    if a is None or b is None or a.ndim == 0 or a.shape != b.shape:
        return f"{_short(got)}, expected {_short(want)}"
    off = ~np.isclose(a, b, rtol=rtol, atol=atol) | ~np.isfinite(a)
    first = tuple(int(i) for i in np.argwhere(off)[0])
    return (f"an array of the right shape {a.shape} that differs in {int(off.sum())} of {a.size} entries "
            f"(first at {first}: {a[first]:.4g}, expected {b[first]:.4g})")


def _named(got, mistakes, args, rtol, atol) -> str:
    for mistake, wrong_version in (mistakes or {}).items():
        try:
            if close(got, wrong_version(*_copies(args)), rtol, atol):
                return f"; that is what {mistake} gives"
        except Exception:
            continue
    return ""


def _copies(args: tuple) -> tuple:
    """Fresh copies of array arguments: a reader's function that edits its input in place spoils no comparison."""
    return tuple(a.clone() if isinstance(a, torch.Tensor) else a.copy() if isinstance(a, np.ndarray) else a
                 for a in args)


def _describe(args: tuple) -> str:
    parts = []
    for a in args:
        if isinstance(a, (torch.Tensor, np.ndarray)):
            parts.append(f"shape {tuple(a.shape)}")
        else:
            parts.append(repr(a) if len(repr(a)) < 20 else type(a).__name__)
    return ", ".join(parts)


def rng(seed: int = 0) -> np.random.Generator:
    """The checks' random inputs: seeded, so a check says the same thing on every run."""
    return np.random.default_rng(seed)
