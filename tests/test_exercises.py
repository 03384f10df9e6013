"""The exercise checks' shared machinery: a right answer passes, a planted mistake is named, a non-answer is
refused politely (never a traceback)."""

import numpy as np
import pytest
import torch

from compbook.exercises import Checked, check_function, check_value, close


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
