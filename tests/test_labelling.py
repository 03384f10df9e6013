"""compbook.cppn.audit.labelling: blind contact sheets and the verdict caches."""

import json

import pytest
import torch

from compbook.cppn import emc2, judges, picbreeder
from compbook.cppn.audit import labelling
from compbook.cppn.network import CPPN


@pytest.fixture(scope="module")
def nets():
    pb = picbreeder.layerize(picbreeder.load_genome("skull"))
    sgd = CPPN(pb.activations, pb.color, seed=0)
    return [labelling.Network("skull", "picbreeder", 0, "picbreeder:skull", pb),
            labelling.Network("skull", "sgd", 0, "x", sgd)]


def test_plan_mixes_kinds_and_deltas_and_has_unperturbed_items(nets):
    items = labelling.plan_items(nets, (0.5, 2.0), per_picbreeder=5, per_sgd=3, start=101)
    assert len(items) == (1 + 2 * 5) + (1 + 2 * 3)
    assert [it["item"] for it in items] == list(range(101, 101 + len(items)))
    kinds = [it["kind"] for it in items]
    assert kinds != sorted(kinds) and kinds != sorted(kinds, reverse=True), "items are not shuffled"
    assert sum(it["question"]["weight"] is None for it in items) == 2


def test_rendered_items_are_the_engines_perturbations(nets):
    items = labelling.plan_items(nets[:1], (1.0,), per_picbreeder=4)
    imgs = labelling.render_items(items, {"picbreeder:skull": nets[0].model})
    for it, img in zip(items, imgs):
        q = it["question"]
        want = nets[0].model.render(64) if q["weight"] is None else emc2.render_perturbations(
            nets[0].model, [tuple(q["weight"])], [q["delta"]], 64)[0]
        assert torch.allclose(img, want, atol=1e-6)


def test_sheet_shows_numbers_only_and_fits(nets, tmp_path):
    items = labelling.plan_items(nets, (0.5,), per_picbreeder=3, per_sgd=2)
    imgs = torch.rand(len(items), 64, 64, 3)
    sheets = labelling.write_sheets(items, imgs, tmp_path, per_sheet=4, cols=2)
    assert len(sheets) == -(-len(items) // 4) and all(p.exists() for p in sheets)


def test_labels_round_trip_through_a_cached_judge(nets, tmp_path):
    items = labelling.plan_items(nets, (0.5,), per_picbreeder=2, per_sgd=2)
    f = tmp_path / "labels.txt"
    f.write_text("# comment\n" + "\n".join(f"{it['item']} {a}" for it, a in zip(items, "yn?yn?")) + "\n")
    labels = labelling.read_labels(f)
    path = labelling.store_verdicts(items, labels, tmp_path / "h.json")
    judge = labelling.labeller_judge(path)
    imgs = torch.zeros(len(items), 64, 64, 3)
    v = judge(imgs, "skull", questions=[it["question"] for it in items])
    assert v.tolist() == [a == "y" for a in "yn?yn?"]
    assert labelling.answers_for(items, path) == [labelling.ANSWERS[a] for a in "yn?yn?"]


def test_another_labeller_or_protocol_is_refused(nets, tmp_path):
    items = labelling.plan_items(nets[:1], (0.5,), per_picbreeder=1)
    path = labelling.store_verdicts(items, {items[0]["item"]: "y"}, tmp_path / "h.json")
    with pytest.raises(ValueError, match="not of"):
        labelling.labeller_judge(path, identity=labelling.labeller_identity("someone else"))
    with pytest.raises(ValueError):
        labelling.store_verdicts(items, {items[0]["item"]: "y"}, path,
                                 identity=labelling.labeller_identity(protocol="other"))


def test_a_cache_under_its_former_human_name_is_served_under_the_model_name(nets, tmp_path):
    """Caches written before the rename (identity ``human:book authors|...``, file named after it) still serve
    their verdicts, checked under the stored identity and re-keyed to :func:`labeller_identity`."""
    items = labelling.plan_items(nets[:1], (0.5,), per_picbreeder=3)[:3]
    new = labelling.labeller_identity()
    old = judges.former_identities(new)
    assert old == ["human:book authors|" + new.split("|", 1)[1]] and judges.current_identity(old[0]) == new
    entries = {judges.entry_key(old[0], it["concept"], it["question"]):
               {"concept": it["concept"], "question": json.loads(judges.canonical_json(it["question"])),
                "verdict": a == "y", "detail": {"answer": labelling.ANSWERS[a]}}
               for it, a in zip(items, "yn?")}
    judges.write_cache(tmp_path / judges.cache_file_name(old[0]), old[0], entries)
    path = judges.cache_path(new, tmp_path)
    assert path.name == judges.cache_file_name(old[0])
    assert labelling.answers_for(items, path) == ["yes", "no", "can't tell"]
    got = labelling.labeller_judge(path)(torch.zeros(3, 64, 64, 3), "skull",
                                         questions=[it["question"] for it in items])
    assert got.tolist() == [True, False, False]
    assert judges.cache_path(labelling.labeller_identity("labeller 9"), tmp_path).name.startswith("model-labeller-9-")


def test_a_changed_answer_is_an_error_not_a_silent_overwrite(nets, tmp_path):
    items = labelling.plan_items(nets[:1], (0.5,), per_picbreeder=1)
    path = labelling.store_verdicts(items, {items[0]["item"]: "y"}, tmp_path / "h.json")
    with pytest.raises(ValueError, match="already stored"):
        labelling.store_verdicts(items, {items[0]["item"]: "n"}, path)


def test_a_verdict_is_not_served_for_another_question(nets, tmp_path):
    items = labelling.plan_items(nets[:1], (0.5,), per_picbreeder=1)
    path = labelling.store_verdicts(items, {items[0]["item"]: "y"}, tmp_path / "h.json")
    other = dict(items[-1]["question"]) | {"delta": 0.25}
    with pytest.raises(judges.CacheMiss):
        labelling.labeller_judge(path)(torch.zeros(1, 64, 64, 3), "skull", questions=[other])


@pytest.mark.parametrize("text", ["1 yes\n", "x y\n", "1 y\n1 n\n"])
def test_bad_label_lines_are_refused(tmp_path, text):
    f = tmp_path / "l.txt"
    f.write_text(text)
    with pytest.raises(ValueError):
        labelling.read_labels(f)


def test_relabel_items_are_renumbered_and_point_back(nets):
    items = labelling.plan_items(nets, (0.5, 1.0), per_picbreeder=10, per_sgd=5)
    again = labelling.relabel_items(items, 0.2)
    assert len(again) == round(0.2 * len(items))
    by = {it["item"]: it for it in items}
    assert all(by[a["of"]]["question"] == a["question"] for a in again)
    assert [a["item"] for a in again] == list(range(9001, 9001 + len(again)))


def test_without_questions_drops_asked_ones_and_renumbers():
    from compbook.cppn.audit.labelling import without_questions
    q = lambda w: {"model": "m", "weight": w, "delta": 0.5, "policy": "plus", "res": 64}   # noqa: E731
    items = [{"concept": "skull", "question": q([0, 0, i]), "item": 10 + i} for i in range(4)]
    asked = [{"concept": "skull", "question": q([0, 0, 1])}, {"concept": "apple", "question": q([0, 0, 2])}]
    out = without_questions(items, asked, 500)
    assert [it["question"]["weight"][2] for it in out] == [0, 2, 3], "same question of another concept kept"
    assert [it["item"] for it in out] == [500, 501, 502]
    assert items[0]["item"] == 10, "the input must not be renumbered in place"


def test_fer_and_fertwin_kinds_load_render_and_count_per_kind(tmp_path):
    from compbook.cppn import fer, twins
    if not fer.available() or not twins.stored_fer_twins("skull"):
        pytest.fail("FER's networks (../shared/fer or FER's repository) or a stored FER-architecture twin are missing")
    nets = labelling.networks(["skull"], ("fer", "fertwin"))
    kinds = [n.kind for n in nets]
    assert kinds[0] == "fer" and set(kinds[1:]) == {"fertwin"}
    assert len(kinds) == 1 + len(twins.stored_fer_twins("skull"))
    assert nets[0].source == "fer:skull" and nets[1].source.startswith("emc2/fertwin_skull_seed")
    items = labelling.plan_items(nets[:2], (0.5, 2.0), per_sgd=1, per_kind={"fer": 3, "fertwin": 2}, seed=4)
    by = {k: [it for it in items if it["kind"] == k] for k in ("fer", "fertwin")}
    assert len(by["fer"]) == 1 + 2 * 3 and len(by["fertwin"]) == 1 + 2 * 2
    imgs = labelling.render_items(items)            # rebuilt from the key's sources, hashes checked
    fer_plain = next(j for j, it in enumerate(items) if it["kind"] == "fer" and it["question"]["weight"] is None)
    assert torch.allclose(imgs[fer_plain], fer.load_fer("skull").render(64), atol=1e-6)


def test_unknown_kind_or_fer_name_is_refused(nets):
    with pytest.raises(ValueError, match="kinds"):
        labelling.networks(["skull"], ("vlm",))
    with pytest.raises(ValueError, match="source"):
        labelling.load_network("fer:cat")
    with pytest.raises(ValueError, match="per_kind"):
        labelling.plan_items(nets, per_kind={"gan": 2})


def _answered(n=30):
    concepts = ("skull", "butterfly", "apple")
    items = [{"concept": concepts[j % 3], "item": 100 + j, "question": {"j": j}} for j in range(n)]
    answers = [("yes", "no", "can't tell", "yes", "yes")[j % 5] for j in range(n)]
    return items, answers


def test_stratified_draw_takes_counts_per_answer_spread_over_concepts():
    items, answers = _answered(60)
    got = labelling.stratified_draw(items, answers, {"yes": 9, "no": 6, "can't tell": 100}, seed=3)
    by = {a: [g for g in got if g["answer"] == a] for a in ("yes", "no", "can't tell")}
    assert [len(by[a]) for a in by] == [9, 6, answers.count("can't tell")]   # all where fewer
    for a in ("yes", "no"):      # round-robin over concepts: every concept equally often
        assert sorted(g["concept"] for g in by[a]).count("skull") == len(by[a]) // 3
    orig = {it["item"]: a for it, a in zip(items, answers)}
    assert all(orig[g["of"]] == g["answer"] for g in got) and len({g["of"] for g in got}) == len(got)
    assert got == labelling.stratified_draw(items, answers, {"yes": 9, "no": 6, "can't tell": 100}, seed=3)
    assert got != labelling.stratified_draw(items, answers, {"yes": 9, "no": 6, "can't tell": 100}, seed=4)
    with pytest.raises(ValueError, match="counts"):
        labelling.stratified_draw(items, answers, {"maybe": 2})


def test_number_by_concept_shuffles_within_concept_from_its_start():
    items, _ = _answered(30)
    out = labelling.number_by_concept(items, {"skull": 500, "butterfly": 600, "apple": 700}, seed=1)
    assert [it["concept"] for it in out] == ["skull"] * 10 + ["butterfly"] * 10 + ["apple"] * 10
    assert [it["item"] for it in out] == [*range(500, 510), *range(600, 610), *range(700, 710)]
    skull_q = [it["question"]["j"] for it in out[:10]]
    assert sorted(skull_q) == list(range(0, 30, 3)) and skull_q != sorted(skull_q)
    assert items[0]["item"] == 100                          # copies: the input is untouched
    with pytest.raises(ValueError, match="starts"):
        labelling.number_by_concept(items, {"skull": 500})


def test_judge_verdicts_ask_one_concept_at_a_time():
    items = [{"concept": c} for c in ("skull", "apple", "skull")]
    asked = []
    judge = lambda imgs, c: asked.append((c, list(imgs))) or [c == "skull"] * len(imgs)
    assert labelling.judge_verdicts(judge, items, torch.arange(3)) == [True, False, True]
    assert [(c, [int(i) for i in x]) for c, x in asked] == [("apple", [1]), ("skull", [0, 2])]
