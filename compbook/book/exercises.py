"""Checked exercises: the reader's answer against the reference, on fresh seeded inputs, with the likely mistake named.

Every ``check_<what>(answer)`` in ``compbook.<part>.exercises`` returns a :class:`Checked`: ``passed`` and a short
message, shown as one line in Jupyter. A wrong answer is never a traceback: the check compares the answer with the
reference and, where it differs, with the planted wrong answers a reader is likely to write (TopK before ReLU, the
mean instead of the sum, an off-by-one...), and names the one it matches. Something that is not an answer yet (the
placeholder ``...``, ``None``, a string, a function returning ``None``) is refused politely, so a notebook whose
exercise cells are left as they are still runs top to bottom; the stub as the chapter gives it (``...``, a function
whose body is ``...``) gets one line, "Your turn: fill in `f` above, then run this cell.", not a failure.

A reader's function runs through :func:`run_answer`: under a time limit (:data:`TIME_LIMIT` seconds per call, a
parameter), with everything it raises reported (``SystemExit`` and a ``KeyboardInterrupt`` it raises itself
included; a real interrupt, Ctrl-C or the kernel's stop button, still stops the check), and what it returns
refused by its type ("returned a str, expected a float") before any value is compared.

>>> check_value(0.5, reference=0.5, what="the bound")
correct: the bound = 0.5
"""

from __future__ import annotations

import numbers
import signal
import threading
import time
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping

import numpy as np
import torch

from .. import checks

#: How long a reader's function may run on one case before its check gives up, in seconds (our choice: every
#: reference answers a case in well under a second on a laptop CPU; a reader's slower loop still fits).
TIME_LIMIT = 5.0


#: what a check says before the reader has written anything (the stub as the chapter gives it)
YOUR_TURN = "Your turn"


@dataclass(frozen=True)
class Checked:
    """A check's verdict on an answer: ``passed`` and what was tried or what went wrong; ``pending`` when there
    is no answer yet (the chapter's stub as it stands), said as an invitation, not a failure."""

    passed: bool
    message: str
    pending: bool = False

    def __bool__(self) -> bool:
        return self.passed

    def __repr__(self) -> str:
        if self.pending:
            return f"{YOUR_TURN}: {self.message}"
        return ("correct: " if self.passed else "not yet: ") + self.message

    def _repr_markdown_(self) -> str:
        if self.pending:
            return f"**{YOUR_TURN}:** {self.message}"
        mark = "**correct**" if self.passed else "**not yet**"
        return f"{mark}: {self.message}"


def correct(message: str) -> Checked:
    return Checked(True, message)


def wrong(message: str) -> Checked:
    return Checked(False, message)


def your_turn(message: str) -> Checked:
    """No answer yet: the stub as the chapter gives it (see :func:`is_stub`)."""
    return Checked(False, message, pending=True)


def not_an_answer(answer, kind: str) -> Checked | None:
    """A polite refusal when ``answer`` is not an answer of the kind wanted (``"function"`` or ``"number"``...);
    ``None`` when it is one. The chapter's stub left as it is (the placeholder ``...``, a function whose body is
    only ``...``) is an invitation (:func:`your_turn`), not a failure."""
    if answer is Ellipsis:
        return your_turn(f"replace the placeholder `...` above with your {kind}, then run this cell.")
    if kind == "function" and callable(answer) and is_stub(answer):
        return your_turn(f"fill in `{getattr(answer, '__name__', 'the function')}` above, then run this cell.")
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


def is_stub(fn) -> bool:
    """Whether ``fn`` is an exercise's stub as written: a function whose body (after a docstring) is nothing but
    ``...`` or ``pass``. Read from its source (a notebook cell's, which IPython keeps); a function whose source
    cannot be read is not called a stub (its output is checked as any answer's is)."""
    import ast
    import inspect
    import textwrap
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError, IndentationError):
        return False
    defs = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))]
    name = getattr(fn, "__name__", None)
    found = [d for d in defs if getattr(d, "name", "<lambda>") == name]
    if len(found) != 1:
        return False
    body = found[0].body if isinstance(found[0].body, list) else [ast.Expr(found[0].body)]
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str) and len(body) > 1:
        body = body[1:]                               # a docstring
    return all(isinstance(b, ast.Pass) or isinstance(b, ast.Expr) and isinstance(b.value, ast.Constant)
               and b.value.value is Ellipsis for b in body)


def _is_number(x) -> bool:
    if isinstance(x, (int, float, np.integer, np.floating)):
        return True
    return isinstance(x, (np.ndarray, torch.Tensor)) and x.ndim == 0


def as_array(value) -> np.ndarray | None:
    """``value`` as a float64 numpy array, or ``None`` when it is not an array of real numbers (a string such as
    ``"0.5"``, complex values, objects, a ragged list: never converted, so never compared)."""
    if isinstance(value, torch.Tensor):
        return None if value.is_complex() else value.detach().cpu().double().numpy()
    if isinstance(value, (str, bytes)):
        return None
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError, RuntimeError):
        return None
    return arr.astype(np.float64) if arr.dtype.kind in "biuf" else None


def kind(value) -> str:
    """What ``value`` is, in a reader's words: ``"a float"``, ``"an int"``, ``"a bool"``, ``"a str"``, ``"complex
    values"``, ``"an array of shape (3, 4)"``, ``"a dict"``..."""
    if isinstance(value, (bool, np.bool_)):
        return "a bool"
    if isinstance(value, (numbers.Integral, np.integer)):
        return "an int"
    if isinstance(value, (numbers.Real, np.floating)):
        return "a float"
    if isinstance(value, (complex, np.complexfloating)) or getattr(value, "dtype", None) is not None and (
            value.is_complex() if isinstance(value, torch.Tensor) else np.iscomplexobj(value)):
        return "complex values"
    if isinstance(value, (np.ndarray, torch.Tensor)):
        if value.ndim == 0:
            return kind(value.item())
        arr = as_array(value)
        return f"an array of shape {tuple(value.shape)}" if arr is not None else f"an array of {value.dtype}"
    return f"a {type(value).__name__}"


def wrong_kind(got, want) -> str | None:
    """Why the output ``got`` cannot be compared with the reference's ``want`` (a string or complex values for a
    number, a number for an array, an array for a number...): ``"returned a str, expected a float"``; None when it
    can (a list for an array is fine; values and shapes are compared after)."""
    a, b = as_array(got), as_array(want)
    if b is None:
        return None
    if a is None or (a.ndim == 0) != (b.ndim == 0):
        return f"returned {kind(got)}, expected {kind(want)}"
    return None


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
                   atol: float = 1e-6, seconds: float | None = None) -> Checked:
    """Run the reader's function (through :func:`run_answer`, ``seconds`` per case) and the reference on each case
    (a tuple of arguments); refuse an output of the wrong type (:func:`wrong_kind`); where the outputs differ, run
    each planted wrong version on that case and name the one whose output the reader's matches."""
    refused = not_an_answer(answer, "function")
    if refused is not None:
        return refused
    cases = list(cases)
    for n, args in enumerate(cases):
        got, failed = run_answer(answer, _copies(args), what, f"case {n + 1} of {len(cases)}: {_describe(args)}",
                                 seconds)
        if failed is not None:
            return failed
        want = reference(*_copies(args))
        why = wrong_kind(got, want)
        if why is not None:
            return wrong(f"{what}: your function {why} (case {n + 1} of {len(cases)}: {_describe(args)})")
        if not close(got, want, rtol, atol):
            return wrong(f"{what}: case {n + 1} of {len(cases)} ({_describe(args)}) gives "
                         + _difference(got, want, rtol, atol) + _named(got, mistakes, args, rtol, atol))
    return correct(f"{what}: matches the reference on {len(cases)} random cases ({_describe(cases[0])}, ...)")


class _TimeUp(BaseException):
    """Raised inside a reader's function that ran past its time limit (a ``BaseException``: an ``except
    Exception`` in the reader's code does not swallow it)."""


def run_answer(answer: Callable, args: tuple, what: str, where: str = "", seconds: float | None = None):
    """Call the reader's ``answer(*args)`` and return ``(output, None)``, or ``(None, Checked)`` saying why there is
    no output to compare: it ran past ``seconds`` (default :data:`TIME_LIMIT`), raised anything (``SystemExit``
    and a ``KeyboardInterrupt`` it raised itself included), or returned None. A real interrupt (Ctrl-C, the
    kernel's stop button) is not swallowed: it stops the check. ``where`` (e.g. ``"case 2 of 5: shape (3, 4)"``)
    goes into the message. In the main thread a timer signal stops the function (a loop or a sleep); in another
    thread an exception is sent to the thread (a pure-Python loop)."""
    limit = checks.real(TIME_LIMIT if seconds is None else seconds, "seconds", 0, low_open=True)
    at = f" (on {where})" if where else ""
    watch = _SignalWatch(limit) if _signals_usable() else _ThreadWatch(limit)
    try:
        with watch:
            got = answer(*args)
    except _TimeUp:
        return None, wrong(f"{what}: your function was still running after {limit:g} s{at}: an endless loop? "
                           f"(a slow answer: pass a larger seconds=)")
    except BaseException as e:          # the reader's code, whatever it raised: report, never a traceback
        if isinstance(e, KeyboardInterrupt) and watch.interrupted:
            raise                        # a real interrupt stops the check
        said = f": {e}" if str(e) else ""
        return None, wrong(f"{what}: your function raised {type(e).__name__}{said}{at}")
    if got is None:
        return None, wrong(f"{what}: your function returned None (a missing `return`?)")
    return got, None


def _signals_usable() -> bool:
    """The main thread of a POSIX Python whose alarm handler can be put back (not one installed outside Python)."""
    return hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread() and \
        signal.getsignal(signal.SIGALRM) is not None


class _SignalWatch:
    """The main thread's watch: ``SIGALRM`` after ``seconds`` (then every 0.1 s, past a bare ``except:``) raises
    :class:`_TimeUp` in the running code; ``SIGINT`` is marked as a real interrupt and passed on. The handlers and
    any timer set before are restored after."""

    def __init__(self, seconds: float):
        self.seconds, self.armed, self.interrupted = seconds, False, False

    def _alarm(self, signum, frame):
        if self.armed:
            raise _TimeUp()

    def _interrupt(self, signum, frame):
        self.interrupted = True
        if callable(self.old_int):
            self.old_int(signum, frame)
        elif self.old_int != signal.SIG_IGN:
            raise KeyboardInterrupt

    def __enter__(self):
        self.old_alarm = signal.signal(signal.SIGALRM, self._alarm)
        self.old_int = signal.getsignal(signal.SIGINT)
        if self.old_int is not None:         # None: a handler from outside Python, left as it is
            signal.signal(signal.SIGINT, self._interrupt)
        self.armed, self.start = True, time.monotonic()
        self.old_timer = signal.setitimer(signal.ITIMER_REAL, max(self.seconds, 1e-3), 0.1)
        return self

    def __exit__(self, *exc):
        self.armed = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        left = self.old_timer[0] - (time.monotonic() - self.start)
        signal.signal(signal.SIGALRM, self.old_alarm)
        if self.old_int is not None:
            signal.signal(signal.SIGINT, self.old_int)
        if self.old_timer[0] > 0:          # a timer set before (e.g. a test's alarm): running again
            signal.setitimer(signal.ITIMER_REAL, max(left, 1e-3), self.old_timer[1])
        return False


class _ThreadWatch:
    """Another thread's watch: after ``seconds`` (then every 0.1 s) :class:`_TimeUp` is sent to the thread
    (``PyThreadState_SetAsyncExc``: it stops Python code, not a call blocked in C). A ``KeyboardInterrupt`` here
    was raised by the code (signals reach only the main thread)."""

    def __init__(self, seconds: float):
        self.seconds, self.interrupted = seconds, False
        self.done = threading.Event()

    def _watch(self, thread_id: int):
        import ctypes
        wait = self.seconds
        while not self.done.wait(wait):
            ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), ctypes.py_object(_TimeUp))
            wait = 0.1

    def __enter__(self):
        self.watcher = threading.Thread(target=self._watch, args=(threading.get_ident(),), daemon=True)
        self.watcher.start()
        return self

    def __exit__(self, *exc):
        import ctypes
        self.done.set()
        self.watcher.join()
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(threading.get_ident()), None)   # none pending
        return False


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
