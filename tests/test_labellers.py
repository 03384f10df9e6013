"""compbook.cppn.audit.labellers: the stored runs of ``semantic choose|validate|second|overlap`` are rebuilt exactly."""

import json

import pytest

from compbook.cppn.audit import labellers, labelling
from compbook.results.paths import data_file

pytestmark = pytest.mark.usefixtures("one_thread")


def _stored(name):
    return json.loads(data_file(name).read_text())


def _close(a, b, where="") -> None:
    """``a == b``, numbers to 2e-4 (a stored score is rounded to 4 decimals; a rerun on another machine may
    round the last one the other way)."""
    if isinstance(a, dict):
        assert list(a) == list(b), where
        for k in a:
            _close(a[k], b[k], f"{where}/{k}")
    elif isinstance(a, list):
        assert len(a) == len(b), where
        for j, (x, y) in enumerate(zip(a, b)):
            _close(x, y, f"{where}[{j}]")
    elif isinstance(a, float) and not isinstance(b, bool):
        assert b == pytest.approx(a, abs=2e-4), where
    else:
        assert a == b, where


def _same_but_seconds(built: dict, stored: dict) -> None:
    _close(json.loads(json.dumps({k: v for k, v in built.items() if k not in ("seconds", "made_by")})),
           {k: v for k, v in stored.items() if k not in ("seconds", "made_by")})


def test_overlap_items_rebuild_the_stored_key():
    """The draw behind ``labelling overlap --seed 20`` gives the stored key's items, in order."""
    key = _stored("judge_cache/labeller_key_overlap.json")
    assert labellers.overlap_items(20) == key["items"]
    assert labellers.overlap_items(21) != key["items"]          # the seed matters


def test_overlap_run_rebuilds_overlap_json():
    stored = _stored("semantic/overlap.json")
    built = labellers.overlap_run(stored["key"], labelling.THIRD_LABELLER, stored["made_by"])
    _same_but_seconds(built, stored)              # keys in the same order too: the same file text


def test_validation_run_rebuilds_the_second_batch():
    stored = _stored("semantic/validation_batch2.json")
    built = labellers.validation_run("labeller_key_batch2.json")
    _same_but_seconds(built, stored)
    assert labellers.validation_path("labeller_key_batch2.json") == data_file("semantic/validation_batch2.json")


def test_stored_answers_refuses_a_labeller_with_no_answers():
    identity, items, answers = labellers.stored_answers("labeller_key_overlap.json", labelling.THIRD_LABELLER)
    assert identity == labelling.labeller_identity(labelling.THIRD_LABELLER) and len(items) == len(answers) == 80
    with pytest.raises(ValueError, match="no answers"):
        labellers.stored_answers("labeller_key.json", labelling.SECOND_LABELLER)
