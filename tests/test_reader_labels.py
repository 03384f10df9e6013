"""compbook.cppn.audit.reader_labels: a reader's own verdicts (the widget, the labels file, the judges' agreement)."""

import pytest
import torch

from compbook.cppn import judges, picbreeder
from compbook.cppn.audit import labelling, reader_labels


@pytest.fixture(scope="module")
def skull_items():
    """Key items of the layerized Picbreeder skull: its unperturbed render and two perturbations."""
    pb = picbreeder.layerize(picbreeder.load_genome("skull"))
    return labelling.plan_items([labelling.Network("skull", "picbreeder", 0, "picbreeder:skull", pb)], (0.5,),
                                per_picbreeder=2)


def test_a_readers_own_answers_are_kept_apart_from_the_model_labellers(skull_items, tmp_path):
    """The widget stores a reader's (human) answers under the reader's identity, never a model labeller's."""
    assert labelling.labeller_identity().startswith("model:labeller 1|")
    assert labelling.reader_identity().startswith("human:reader|")
    items = skull_items
    w = reader_labels.LabelWidget(items, torch.zeros(len(items), 64, 64, 3), tmp_path / "mine.json")
    assert w.identity == labelling.reader_identity()
    w.answer("n")
    assert w.answers() == ["no"] + [None] * (len(items) - 1)
    assert judges.read_cache(tmp_path / "mine.json")[0] == labelling.reader_identity()
    assert reader_labels.reader_answers(items, tmp_path / "mine.json") == w.answers()
    with pytest.raises(ValueError, match="not of"):
        labelling.labeller_judge(tmp_path / "mine.json")
    with pytest.raises(ValueError, match="path"):
        reader_labels.reader_answers(items, None)


# -- the reader's labels file -------------------------------------------------------------------------------------
def _reader_items():
    return [{"item": n, "concept": "skull"} for n in (11, 12, 13, 14, 15, 16)]


def test_reader_agreement_matches_a_hand_count(tmp_path):
    path = tmp_path / "mine.txt"
    path.write_text("# my verdicts\n11 y\n12 n\n13 y\n14 ?\n15 n\n99 y\n")   # 16 unanswered, 99 not an item
    judge = [True, True, False, True, False, True]            # vs mine: 11 ok, 12 no, 13 no, 15 ok -> 2 of 4
    stored = ["yes", "no", "can't tell", "no", "yes", None]   # 11 ok, 12 ok, 13 left out, 15 no -> 2 of 3
    got = reader_labels.reader_agreement(_reader_items(), {"judge": judge, "stored": stored}, path)
    assert (got["labelled"], got["yes_no"], got["cant_tell"]) == (5, 4, 1)
    assert got["judges"]["judge"] == {"agree": 2, "n": 4, "agreement": 0.5}
    assert got["judges"]["stored"]["agree"] == 2 and got["judges"]["stored"]["n"] == 3
    assert got["judges"]["stored"]["agreement"] == pytest.approx(2 / 3)


def test_no_labels_file_means_none_and_the_variable_names_the_file(tmp_path, monkeypatch):
    items = _reader_items()
    assert reader_labels.reader_agreement(items, {"judge": [True] * 6}, tmp_path / "absent.txt") is None
    monkeypatch.setenv(reader_labels.READER_LABELS_VARIABLE, str(tmp_path / "env.txt"))
    assert reader_labels.reader_labels_path() == tmp_path / "env.txt"
    reader_labels.write_reader_labels({12: "n", 11: "y"})
    assert (tmp_path / "env.txt").read_text().splitlines()[1:] == ["11 y", "12 n"]
    got = reader_labels.reader_agreement(items, {"judge": [True] * 6})
    assert got["judges"]["judge"] == {"agree": 1, "n": 2, "agreement": 0.5}


def test_the_widget_writes_the_readers_file_and_resumes_there(tmp_path):
    items = _reader_items()
    path = tmp_path / "sub" / "mine.txt"
    w = reader_labels.LabelWidget(items, [None] * 6, labels_file=path)
    w.answer("y"), w.answer("?")
    assert labelling.read_labels(path) == {11: "y", 12: "?"}
    again = reader_labels.LabelWidget(items, [None] * 6, labels_file=path)
    assert again.pos == 2 and again.labels == {11: "y", 12: "?"}


@pytest.mark.parametrize("bad", [
    lambda p: reader_labels.reader_agreement(_reader_items(), {"judge": [True] * 5}, p),
    lambda p: reader_labels.reader_agreement(_reader_items(), {"judge": ["maybe"] * 6}, p),
    lambda p: reader_labels.reader_agreement(_reader_items(), {}, p),
    lambda p: reader_labels.write_reader_labels({1: "yes"}, p),
    lambda p: reader_labels.write_reader_labels({-1: "y"}, p),
    lambda p: reader_labels.reader_labels_path(p.parent),
])
def test_bad_reader_input_is_refused(tmp_path, bad):
    p = tmp_path / "mine.txt"
    p.write_text("11 y\n")
    with pytest.raises(ValueError):
        bad(p)


def test_reader_items_are_seeded_and_spread_over_concepts_and_kinds():
    items = reader_labels.reader_items(per_group=2, seed=5)
    groups = [(it["concept"], it["kind"]) for it in items]
    assert len(items) == 12 and all(groups.count(g) == 2 for g in set(groups))
    assert all(it["question"]["weight"] is not None for it in items)
    assert [it["item"] for it in reader_labels.reader_items(per_group=2, seed=5)] == [it["item"] for it in items]
