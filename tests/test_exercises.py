"""The exercise checks' shared machinery: a right answer passes, a planted mistake is named, a non-answer is
refused politely (never a traceback)."""

import os
import signal
import threading
import time

import numpy as np
import pytest
import torch

from compbook.book import exercises
from compbook.book.exercises import Checked, as_array, check_function, check_value, close


def ref_sum(x):
    return x.sum(axis=-1)


MISTAKES = {"the mean instead of the sum": lambda x: x.mean(axis=-1)}
CASES = [(np.random.default_rng(s).normal(size=(3, 4)),) for s in range(3)]


def test_the_reference_passes_and_says_what_was_tried():
    r = check_function(ref_sum, ref_sum, CASES, "row sums", MISTAKES)
    assert r.passed and "3 random cases" in r.message


def test_a_planted_mistake_is_named():
    r = check_function(lambda x: x.mean(axis=-1), ref_sum, CASES, "row sums", MISTAKES)
    assert not r.passed and "the mean instead of the sum" in r.message


def test_an_unknown_wrong_answer_fails_without_a_name():
    r = check_function(lambda x: x.max(axis=-1), ref_sum, CASES, "row sums", MISTAKES)
    assert not r.passed and "mean" not in r.message


def test_an_array_of_the_right_shape_says_where_it_differs():
    def one_off(x):
        out = ref_sum(x)
        out[1] += 1.0
        return out
    r = check_function(one_off, ref_sum, CASES, "row sums")
    assert not r.passed and "differs in 1 of 3 entries (first at (1,)" in r.message, r.message


def test_a_raising_function_is_reported_not_raised():
    def broken(x):
        raise KeyError("oops")
    r = check_function(broken, ref_sum, CASES, "row sums")
    assert not r.passed and "KeyError" in r.message


@pytest.mark.parametrize("answer, says", [(..., "placeholder"), (None, "None"), ("x", "function"),
                                          (lambda x: None, "returned None")])
def test_non_answers_are_refused_politely(answer, says):
    r = check_function(answer, ref_sum, CASES, "row sums")
    assert isinstance(r, Checked) and not r.passed and says in r.message


def test_the_stub_as_given_is_an_invitation_not_a_failure():
    def row_sums(x):
        """Sum each row."""
        ...   # your code
    for r in (check_function(row_sums, ref_sum, CASES, "row sums"), check_value(..., 0.5, "the bound")):
        assert isinstance(r, Checked) and not r.passed and r.pending
        assert repr(r).startswith("Your turn: ") and "not yet" not in repr(r) and "None" not in repr(r)
        assert "\n" not in repr(r) and r._repr_markdown_().startswith("**Your turn:**")
    assert "`row_sums`" in check_function(row_sums, ref_sum, CASES, "row sums").message


def test_only_the_untouched_stub_is_one():
    def started(x):
        y = x.sum(axis=-1)          # forgot to return it

    def passes(x):
        pass
    assert exercises.is_stub(passes) and not exercises.is_stub(started) and not exercises.is_stub(ref_sum)
    r = check_function(started, ref_sum, CASES, "row sums")
    assert not r.passed and not r.pending and "returned None" in r.message
    assert not exercises.is_stub(len)       # no Python source: checked as any answer is


def _chapter_exercise_cells():
    import json
    from pathlib import Path
    for path in sorted((Path(__file__).resolve().parents[1] / "chapters").glob("[0-9][0-9]_*.ipynb")):
        cells = json.loads(path.read_text())["cells"]
        start = next(i for i, c in enumerate(cells) if c["cell_type"] == "markdown"
                     and "".join(c["source"]).lstrip().startswith("## Exercises"))
        yield path, ["".join(c["source"]) for c in cells[start:] if c["cell_type"] == "code"
                     and "assert result.passed" not in "".join(c["source"])        # the folded solutions
                     and "remove-cell" not in c["metadata"].get("tags", [])]       # bookkeeping: glue, ...


@pytest.mark.parametrize("path, cells", list(_chapter_exercise_cells()), ids=lambda x: getattr(x, "stem", ""))
def test_every_chapters_stubs_say_your_turn(path, cells):
    """Each chapter's reader cell, run as the page gives it, shows one "Your turn" line (its last expression)."""
    import ast
    import linecache
    space = {}
    stubs = 0
    for k, src in enumerate(cells):
        name = f"<{path.stem} exercise cell {k}>"
        linecache.cache[name] = (len(src), None, src.splitlines(True), name)     # as IPython keeps a cell
        tree = ast.parse(src)
        last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        exec(compile(tree, name, "exec"), space)
        if last is not None:
            shown = eval(compile(ast.Expression(last.value), name, "eval"), space)
            assert isinstance(shown, Checked) and shown.pending and repr(shown).startswith("Your turn: "), \
                f"{path.name} cell {k}: {shown!r}"
            stubs += 1
    assert stubs >= 2, f"{path.name}: {stubs} reader cells"


def test_an_input_edited_in_place_spoils_no_comparison():
    def edits(x):
        x *= 0
        return ref_sum(x)
    r = check_function(edits, ref_sum, CASES, "row sums")
    assert not r.passed       # the reader's edit did not change the reference's input


@pytest.mark.parametrize("answer, passed", [(0.5, True), (np.float32(0.5), True), (torch.tensor(0.5), True),
                                            (0.6, False), ("0.5", False), (True, False), (float("nan"), False)])
def test_values(answer, passed):
    assert check_value(answer, 0.5, "the bound", {"an off-by-one": 0.6}).passed is passed


def test_a_value_mistake_is_named():
    r = check_value(0.6, 0.5, "the bound", {"an off-by-one in N": 0.6})
    assert "off-by-one" in r.message


def test_close_needs_the_same_shape():
    assert not close(np.zeros(3), np.zeros((3, 1)))
    assert close(np.zeros(3), torch.zeros(3))


def test_the_repr_is_one_line():
    assert repr(check_value(0.5, 0.5, "w")).startswith("correct:")
    assert "\n" not in repr(check_value(1.5, 0.5, "w"))


# -- a reader's function that hangs, exits or returns the wrong type -----------------------------------------------
def endless(x):
    while True:
        pass


def sleeps(x):
    time.sleep(60)


def swallows(x):
    """An endless loop that catches everything once: the time limit must ring again."""
    try:
        endless(x)
    except BaseException:
        endless(x)


@pytest.mark.parametrize("answer", [endless, sleeps, swallows], ids=["loop", "sleep", "loop catching once"])
def test_a_function_that_never_returns_is_stopped_at_the_time_limit(answer):
    t0 = time.perf_counter()
    r = check_function(answer, ref_sum, CASES, "row sums", seconds=0.3)
    took = time.perf_counter() - t0             # unstopped, the function runs 60 s or for ever: a loose bound
    assert took < 30, f"took {took:.1f} s: the time limit did not stop the reader's function"
    assert not r.passed and "still running after 0.3 s" in r.message and "case 1 of 3" in r.message, r.message


def test_the_time_limit_is_a_module_setting(monkeypatch):
    monkeypatch.setattr(exercises, "TIME_LIMIT", 0.2)
    t0 = time.perf_counter()
    assert "after 0.2 s" in check_function(endless, ref_sum, CASES, "row sums").message
    assert time.perf_counter() - t0 < 30


def test_a_function_that_never_returns_is_stopped_in_another_thread():
    out = []
    worker = threading.Thread(target=lambda: out.append(check_function(endless, ref_sum, CASES, "row sums",
                                                                       seconds=0.3)))
    worker.start()
    worker.join(60)
    assert not worker.is_alive(), "the check in a thread never returned: the thread's watch sent nothing"
    assert not out[0].passed and "still running" in out[0].message


def test_a_slow_but_finite_function_within_the_limit_passes():
    def slow(x):
        time.sleep(0.05)
        return ref_sum(x)
    assert check_function(slow, ref_sum, CASES, "row sums", seconds=60).passed


@pytest.mark.parametrize("error", [SystemExit(3), KeyboardInterrupt(), GeneratorExit()],
                         ids=["SystemExit", "KeyboardInterrupt", "GeneratorExit"])
def test_anything_the_readers_code_raises_is_reported(error):
    def raises(x):
        raise error
    r = check_function(raises, ref_sum, CASES, "row sums")
    assert not r.passed and type(error).__name__ in r.message


def _check_interrupted_under(handler, seconds: float):
    """Run a check on a function that never ends on its own, with ``handler`` as the SIGINT handler, and send
    SIGINT once the function has started (it says so). Returns ``(result or the exception raised, started,
    the handler during the check)``; the caller's handler is put back after."""
    started = threading.Event()

    def runs_until_stopped(x):
        started.set()
        while True:
            pass

    def interrupt_once_started():
        if started.wait(60):
            os.kill(os.getpid(), signal.SIGINT)

    old = signal.signal(signal.SIGINT, handler)
    try:
        sender = threading.Thread(target=interrupt_once_started, daemon=True)
        sender.start()
        try:
            out = check_function(runs_until_stopped, ref_sum, CASES, "row sums", seconds=seconds)
        except BaseException as e:          # noqa: BLE001: the test reads what the check raised
            out = e
        sender.join()
        during = signal.getsignal(signal.SIGINT)
    finally:
        signal.signal(signal.SIGINT, old)
    return out, started.is_set(), during


def test_a_real_interrupt_still_stops_the_check():
    """Ctrl-C while the reader's function runs stops the check (nothing but the interrupt can end it before its
    120 s limit). Python's own Ctrl-C handler is installed for the test, as in a kernel or a terminal: a process a
    shell starts in the background inherits SIGINT ignored, and an ignored interrupt is rightly left ignored."""
    out, started, _ = _check_interrupted_under(signal.default_int_handler, seconds=120)
    assert started and isinstance(out, KeyboardInterrupt), out


def test_an_ignored_interrupt_stays_ignored_and_the_limit_still_stops_the_function():
    """Where SIGINT is ignored (a background job), the check leaves it ignored: the interrupt does not stop it,
    its time limit does, and the handler is as it was after."""
    out, started, during = _check_interrupted_under(signal.SIG_IGN, seconds=1.0)
    assert started and during == signal.SIG_IGN
    assert isinstance(out, Checked) and not out.passed and "still running" in out.message, out


def test_a_timer_set_before_the_check_still_rings():
    """The caller's timer (far longer than the check) runs on after the check, not restarted, and rings its own
    handler; shortened afterwards so the test need not wait for it."""
    rang = threading.Event()
    handler = lambda *a: rang.set()            # noqa: E731
    old = signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, 600)
    try:
        check_function(endless, ref_sum, CASES, "row sums", seconds=0.2)
        left = signal.getitimer(signal.ITIMER_REAL)[0]
        assert 0 < left < 600, f"the caller's timer was cancelled or restarted by the check ({left:.3f} s left)"
        assert signal.getsignal(signal.SIGALRM) is handler, "the caller's alarm handler was not restored"
        signal.setitimer(signal.ITIMER_REAL, 0.01)
        deadline = time.monotonic() + 60
        while not rang.is_set() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert rang.is_set(), "the caller's alarm handler did not ring"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


@pytest.mark.parametrize("answer, says", [
    (lambda x: "0.5", "returned a str, expected an array of shape (3,)"),
    (lambda x: ref_sum(x).astype(complex), "returned complex values"),
    (lambda x: float(ref_sum(x)[0]), "returned a float, expected an array of shape (3,)"),
    (lambda x: {"sum": ref_sum(x)}, "returned a dict"),
    (lambda x: [str(v) for v in ref_sum(x)], "returned a list")])
def test_a_wrong_type_is_refused_by_name_before_values_are_compared(answer, says):
    r = check_function(answer, ref_sum, CASES, "row sums", MISTAKES)
    assert not r.passed and says in r.message, r.message


def test_a_string_number_is_refused_for_a_number():
    r = check_function(lambda x: str(float(x.sum())), lambda x: float(x.sum()), CASES, "the total")
    assert not r.passed and "returned a str, expected a float" in r.message, r.message
    assert as_array("0.5") is None, "a string was read as a number: '0.5' would pass for 0.5"


@pytest.mark.parametrize("seconds", [0, -1, float("nan"), "5"])
def test_a_time_limit_that_is_not_a_positive_number_is_refused(seconds):
    with pytest.raises(ValueError, match="seconds"):
        check_function(ref_sum, ref_sum, CASES, "row sums", seconds=seconds)


def test_no_exercise_check_ends_two_chapters():
    """One exercise per idea: each ``check_*`` is imported by the exercises of one chapter at most."""
    import json
    import re
    from collections import defaultdict
    from pathlib import Path
    used = defaultdict(list)
    for path in sorted((Path(__file__).resolve().parents[1] / "chapters").glob("*.ipynb")):
        code = "\n".join("".join(c["source"]) for c in json.loads(path.read_text())["cells"]
                         if c["cell_type"] == "code")
        for block in re.findall(r"from compbook\.\w+\.exercises import \(?([^)]*)\)?", code):
            for name in re.findall(r"check_\w+", block):
                used[name].append(path.stem)
    shared = {name: chapters for name, chapters in used.items() if len(set(chapters)) > 1}
    assert used and not shared, f"exercise checks used by more than one chapter: {shared}"
