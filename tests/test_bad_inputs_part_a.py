"""Bad and hostile inputs to Part A's newer modules: ``compbook.cppn.judges.semantic``,
``labelling``, ``reader_labels``, ``agreement``, ``reread`` and ``claims``.

As ``tests/test_bad_inputs.py``: each case must raise ``ValueError`` within a second, before any work, and leave
the shared files (copies of stored caches, keys and ``choice.json``, some truncated or edited) byte-identical.
Stored files of another config, truncated or edited, are refused, never served; names used in file paths
(a key's ``source``, a key file's name) cannot leave their folder.
"""

import json
import shutil
import types

import numpy as np
import pytest
from refusal import assert_refused
import torch

from compbook.cppn.audit import agreement, claims, labelling, reader_labels, reread
from compbook.cppn import network as cppn
from compbook.cppn.judges import registry, semantic
from compbook.results.paths import data_dir

SECONDS = 1.0
HANG = 5
_nan = float("nan")


def _row(score, lo, hi, **kw):
    return {"score": score, "ci95": [lo, hi]} | kw


@pytest.fixture(scope="module")
def c(tmp_path_factory):
    d = tmp_path_factory.mktemp("bad_part_a")
    ns = types.SimpleNamespace(dir=d)
    data = data_dir()
    key = json.loads((data / "judge_cache" / "labeller_key.json").read_text())
    ns.items = [dict(it) for it in key["items"][:6]]
    ns.answers = ["yes", "no", "can't tell", "yes", None, "no"]
    ns.images = torch.rand(6, 64, 64, 3, generator=torch.Generator().manual_seed(0))
    ns.model = cppn.uniform_cppn(2, 4, seed=0)
    ns.net = labelling.Network("skull", "picbreeder", 0, "picbreeder:skull", ns.model)
    # copies of stored files, good and broken
    choice = json.loads(semantic.choice_path().read_text())
    ns.choice = choice
    (d / "choice.json").write_text(json.dumps(choice))
    (d / "choice_cut.json").write_text(json.dumps(choice)[:200])
    (d / "choice_edited.json").write_text(json.dumps(choice | {"thresholds": choice["thresholds"]
                                                               | {"reference": 0.61}}))
    other = "classifier" if choice["chosen"] == "reference" else "reference"
    (d / "choice_swapped.json").write_text(json.dumps(choice | {"chosen": other}))
    (d / "choice_unknown.json").write_text(json.dumps(choice | {"chosen": "vlm",
                                                                "thresholds": {"vlm": 0.5}}))
    (d / "choice_list.json").write_text("[1, 2]")
    (d / "key.json").write_text(json.dumps(key | {"items": ns.items}))
    (d / "key_cut.json").write_text(json.dumps(key | {"items": ns.items})[:300])
    (d / "key_other.json").write_text(json.dumps(key | {"protocol": "another protocol", "items": ns.items}))
    (d / "key_twice.json").write_text(json.dumps(key | {"items": ns.items + ns.items[:1]}))
    (d / "key_noitems.json").write_text(json.dumps({"note": "x", "protocol": key["protocol"]}))
    (d / "key_strings.json").write_text(json.dumps(key | {"items": ["a", "b"]}))
    cache = data / "judge_cache" / "model-labeller-1-8a60dcf2.json"
    shutil.copy(cache, d / "cache.json")
    (d / "cache_cut.json").write_text(cache.read_text()[:500])
    (d / "labels.txt").write_text(f"{ns.items[0]['item']} y\n")
    (d / "folder").mkdir()
    (d / "weights.safetensors").write_bytes(b"\0" * 64)
    ns.reread = json.loads((data / "emc2" / "reread.json").read_text())
    ns.stored = json.loads((data / "emc2" / "partA_reread.json").read_text())
    ns.a, ns.b = _row(0.6, 0.5, 0.7), _row(0.3, 0.2, 0.4)
    ns.kn = {"score": 0.5, "ci95": [0.4, 0.6], "k_n": [[5, 10], [5, 10]]}
    return ns


class _NotAJudge:
    identity = "x"


CASES = {
    # -- compbook.cppn.judges.semantic -------------------------------------------------------------------------
    "check_known_concept 'dog'": lambda c: semantic.check_known_concept("dog"),
    "check_known_concept ['skull']": lambda c: semantic.check_known_concept(["skull"]),
    "prepare a numpy array": lambda c: semantic.prepare(np.zeros((1, 8, 8, 3))),
    "prepare (8, 8, 3) without N": lambda c: semantic.prepare(torch.zeros(8, 8, 3)),
    "prepare NaN": lambda c: semantic.prepare(torch.full((1, 8, 8, 3), _nan)),
    "prepare no images (0, 64, 64, 3)": lambda c: semantic.prepare(torch.zeros(0, 64, 64, 3)),
    "prepare (1, 20000, 20000, 3) (memory)": lambda c: semantic.prepare(torch.zeros(1, 1, 1, 3).expand(
        1, 20000, 20000, 3)),
    "reference 'dog'": lambda c: semantic.reference("dog"),
    "ssim_batched shapes differ": lambda c: semantic.ssim_batched(torch.zeros(1, 3, 8, 8), torch.zeros(1, 3, 9, 9)),
    "ssim_batched win=1": lambda c: semantic.ssim_batched(torch.zeros(1, 3, 8, 8), torch.zeros(1, 3, 8, 8), win=1),
    "ssim_batched win=9 on 8 px": lambda c: semantic.ssim_batched(torch.zeros(1, 3, 8, 8), torch.zeros(1, 3, 8, 8),
                                                                 win=9),
    "ssim_batched strings": lambda c: semantic.ssim_batched("x", "y"),
    "ssim_batched NaN": lambda c: semantic.ssim_batched(torch.full((1, 3, 8, 8), _nan), torch.zeros(1, 3, 8, 8)),
    "ssim_batched (3, 8, 8) without N": lambda c: semantic.ssim_batched(torch.zeros(3, 8, 8), torch.zeros(3, 8, 8)),
    "reference_scores scales=()": lambda c: semantic.reference_scores(c.images[:1], "skull", scales=()),
    "reference_scores scales=(4,)": lambda c: semantic.reference_scores(c.images[:1], "skull", scales=(4,)),
    "reference_scores scales=(0,)": lambda c: semantic.reference_scores(c.images[:1], "skull", scales=(0,)),
    "reference_scores scales='64'": lambda c: semantic.reference_scores(c.images[:1], "skull", scales="64"),
    "reference_scores shift=-1": lambda c: semantic.reference_scores(c.images[:1], "skull", shift=-1),
    "reference_scores shift=2.5": lambda c: semantic.reference_scores(c.images[:1], "skull", shift=2.5),
    "reference_scores shift=100": lambda c: semantic.reference_scores(c.images[:1], "skull", shift=100),
    "reference_scores concept 'dog'": lambda c: semantic.reference_scores(c.images[:1], "dog"),
    "image_reference_scores ref NaN": lambda c: semantic.image_reference_scores(c.images[:1],
                                                                               torch.full((3, 64, 64), _nan)),
    "image_reference_scores ref values 255": lambda c: semantic.image_reference_scores(
        c.images[:1], torch.full((3, 64, 64), 255.0)),
    "image_reference_scores chunk=0": lambda c: semantic.image_reference_scores(c.images[:1],
                                                                               torch.zeros(3, 64, 64), chunk=0),
    "ReferenceJudge scales=()": lambda c: semantic.ReferenceJudge(0.5, scales=()),
    "ReferenceJudge shift=-1": lambda c: semantic.ReferenceJudge(0.5, shift=-1),
    "ReferenceJudge threshold nan": lambda c: semantic.ReferenceJudge(_nan),
    "ImageReferenceJudge target a string": lambda c: semantic.ImageReferenceJudge("skull"),
    "ImageReferenceJudge target (8, 8)": lambda c: semantic.ImageReferenceJudge(np.zeros((8, 8))),
    "ImageReferenceJudge target NaN": lambda c: semantic.ImageReferenceJudge(torch.full((8, 8, 3), _nan)),
    "ImageReferenceJudge scales=(0,)": lambda c: semantic.ImageReferenceJudge(torch.zeros(8, 8, 3), scales=(0,)),
    "load_classifier a directory": lambda c: semantic.load_classifier(c.dir / "folder"),
    "load_classifier a file of zeros": lambda c: semantic.load_classifier(c.dir / "weights.safetensors"),
    "ClassifierJudge threshold 2": lambda c: semantic.ClassifierJudge(2),
    "train_classifier steps=0": lambda c: semantic.train_classifier(steps=0, progress=False),
    "train_classifier steps=2.5": lambda c: semantic.train_classifier(steps=2.5, progress=False),
    "train_classifier batch=0": lambda c: semantic.train_classifier(steps=1, batch=0, progress=False),
    "train_classifier lr=nan": lambda c: semantic.train_classifier(steps=1, lr=_nan, progress=False),
    "train_classifier lr=-1": lambda c: semantic.train_classifier(steps=1, lr=-1, progress=False),
    "train_classifier seed=0.5": lambda c: semantic.train_classifier(steps=1, seed=0.5, progress=False),
    "train_classifier batch=10**7 (memory)": lambda c: semantic.train_classifier(steps=1, batch=10 ** 7,
                                                                                progress=False),
    "weights_path folder=5": lambda c: semantic.weights_path(5),
    "choice_path folder=5": lambda c: semantic.choice_path(5),
    "make_judge unknown name": lambda c: registry.make_judge("oracle"),
    "make_judge reference threshold nan": lambda c: registry.make_judge("reference", threshold=_nan),
    "make_judge an unknown option": lambda c: registry.make_judge("ssim", colour="rgb"),
    "make_judges a string": lambda c: registry.make_judges("ssim"),
    "read_choice truncated choice.json": lambda c: semantic.read_choice(c.dir / "choice_cut.json"),
    "read_choice threshold edited by hand": lambda c: semantic.read_choice(c.dir / "choice_edited.json"),
    "read_choice chosen swapped by hand": lambda c: semantic.read_choice(c.dir / "choice_swapped.json"),
    "read_choice an unknown kind": lambda c: semantic.read_choice(c.dir / "choice_unknown.json"),
    "read_choice a JSON list": lambda c: semantic.read_choice(c.dir / "choice_list.json"),
    "read_choice a directory": lambda c: semantic.read_choice(c.dir / "folder"),
    "default_judge truncated choice.json": lambda c: semantic.default_judge(c.dir / "choice_cut.json"),
    "default_judge edited choice.json": lambda c: semantic.default_judge(c.dir / "choice_edited.json"),
    # -- compbook.cppn.audit.labelling -------------------------------------------------------------------------------
    "labeller_identity labeller=5": lambda c: labelling.labeller_identity(5),
    "labeller_identity labeller ''": lambda c: labelling.labeller_identity(""),
    "networks concepts 'skull' (a string)": lambda c: labelling.networks("skull"),
    "networks concept 'dog'": lambda c: labelling.networks(["dog"]),
    "networks no concepts": lambda c: labelling.networks([]),
    "load_network '../../etc/passwd'": lambda c: labelling.load_network("../../etc/passwd"),
    "load_network an absolute path": lambda c: labelling.load_network("/etc/passwd"),
    "load_network 'picbreeder:../x'": lambda c: labelling.load_network("picbreeder:../x"),
    "load_network 5": lambda c: labelling.load_network(5),
    "load_network ''": lambda c: labelling.load_network(""),
    "plan_items no networks": lambda c: labelling.plan_items([]),
    "plan_items a string, not a Network": lambda c: labelling.plan_items(["skull"]),
    "plan_items deltas=()": lambda c: labelling.plan_items([c.net], deltas=()),
    "plan_items delta nan": lambda c: labelling.plan_items([c.net], deltas=(_nan,)),
    "plan_items delta 0": lambda c: labelling.plan_items([c.net], deltas=(0.0,)),
    "plan_items per_sgd=-1": lambda c: labelling.plan_items([c.net], per_sgd=-1),
    "plan_items per_picbreeder=2.5": lambda c: labelling.plan_items([c.net], per_picbreeder=2.5),
    "plan_items start=0.5": lambda c: labelling.plan_items([c.net], start=0.5),
    "plan_items seed=-1": lambda c: labelling.plan_items([c.net], seed=-1),
    "without_questions start='1'": lambda c: labelling.without_questions(c.items, [], "1"),
    "without_questions items without question": lambda c: labelling.without_questions([{"concept": "skull"}], [], 1),
    "render_items source '../../x'": lambda c: labelling.render_items([c.items[0] | {"source": "../../x"}]),
    "render_items items without source": lambda c: labelling.render_items([{"concept": "skull"}]),
    "render_items models a list": lambda c: labelling.render_items(c.items[:1], models=[c.model]),
    "render_items a weight outside the network": lambda c: labelling.render_items(
        [c.items[0] | {"question": c.items[0]["question"] | {"weight": [99, 0, 0]}}]),
    "reference concept 'dog'": lambda c: labelling.reference("dog"),
    "reference res=0": lambda c: labelling.reference("skull", 0),
    "contact_sheet 2 images, 1 number": lambda c: labelling.contact_sheet(c.images[:2], [1], "skull"),
    "contact_sheet scale=0": lambda c: labelling.contact_sheet(c.images[:1], [1], "skull", scale=0),
    "contact_sheet scale=10**5 (memory)": lambda c: labelling.contact_sheet(c.images[:1], [1], "skull",
                                                                            scale=10 ** 5),
    "contact_sheet rows=-1": lambda c: labelling.contact_sheet(c.images[:0], [], "skull", rows=-1),
    "contact_sheet NaN images": lambda c: labelling.contact_sheet(torch.full((1, 64, 64, 3), _nan), [1], "skull"),
    "contact_sheet concept 'dog'": lambda c: labelling.contact_sheet(c.images[:1], [1], "dog"),
    "write_sheets per_sheet=0": lambda c: labelling.write_sheets(c.items, c.images, c.dir / "sheets0", per_sheet=0),
    "write_sheets cols=0": lambda c: labelling.write_sheets(c.items, c.images, c.dir / "sheets1", cols=0),
    "write_sheets 3 images for 6 items": lambda c: labelling.write_sheets(c.items, c.images[:3], c.dir / "sheets2"),
    "write_sheets into a file": lambda c: labelling.write_sheets(c.items, c.images, c.dir / "labels.txt"),
    "read_labels a directory": lambda c: labelling.read_labels(c.dir / "folder"),
    "read_labels a binary file": lambda c: labelling.read_labels(c.dir / "weights.safetensors"),
    "read_labels a JSON file": lambda c: labelling.read_labels(c.dir / "key.json"),
    "store_verdicts answer 'maybe'": lambda c: labelling.store_verdicts(c.items, {c.items[0]["item"]: "maybe"},
                                                                        c.dir / "new_cache.json"),
    "store_verdicts labels a list": lambda c: labelling.store_verdicts(c.items, ["y"], c.dir / "new_cache.json"),
    "store_verdicts item '1000' (a string)": lambda c: labelling.store_verdicts(c.items, {"1000": "y"},
                                                                               c.dir / "new_cache.json"),
    "store_verdicts no labels": lambda c: labelling.store_verdicts(c.items, {}, c.dir / "new_cache.json"),
    "store_verdicts into a truncated cache": lambda c: labelling.store_verdicts(
        c.items, {c.items[0]["item"]: "y"}, c.dir / "cache_cut.json"),
    "store_verdicts into a cache of another identity": lambda c: labelling.store_verdicts(
        c.items, {c.items[0]["item"]: "y"}, c.dir / "cache.json", identity="human:someone else|protocol=x"),
    "store_verdicts items with repeated numbers": lambda c: labelling.store_verdicts(
        c.items + c.items[:1], {c.items[0]["item"]: "y"}, c.dir / "new_cache.json"),
    "labeller_judge identity=5": lambda c: labelling.labeller_judge(c.dir / "cache.json", identity=5),
    "labeller_judge truncated cache": lambda c: labelling.labeller_judge(c.dir / "cache_cut.json"),
    "answers_for truncated cache": lambda c: labelling.answers_for(c.items, c.dir / "cache_cut.json"),
    "answers_for items without question": lambda c: labelling.answers_for([{"concept": "skull"}],
                                                                          c.dir / "cache.json"),
    "LabelWidget images an int": lambda c: reader_labels.LabelWidget(c.items, 5),
    "LabelWidget 3 images for 6 items": lambda c: reader_labels.LabelWidget(c.items, c.images[:3]),
    "LabelWidget answer 'maybe'": lambda c: reader_labels.LabelWidget(c.items, c.images).answer("maybe"),
    "relabel_items fraction=0": lambda c: labelling.relabel_items(c.items, 0),
    "relabel_items fraction=-1": lambda c: labelling.relabel_items(c.items, -1),
    "relabel_items fraction=2": lambda c: labelling.relabel_items(c.items, 2),
    "relabel_items fraction nan": lambda c: labelling.relabel_items(c.items, _nan),
    "relabel_items no items": lambda c: labelling.relabel_items([], 0.5),
    "read_key truncated": lambda c: labelling.read_key(c.dir / "key_cut.json"),
    "read_key of another protocol": lambda c: labelling.read_key(c.dir / "key_other.json"),
    "read_key an item twice": lambda c: labelling.read_key(c.dir / "key_twice.json"),
    "read_key without items": lambda c: labelling.read_key(c.dir / "key_noitems.json"),
    "read_key items strings": lambda c: labelling.read_key(c.dir / "key_strings.json"),
    "read_key a directory": lambda c: labelling.read_key(c.dir / "folder"),
    "write_key note=5": lambda c: labelling.write_key(c.dir / "new_key.json", c.items, 5),
    "write_key items not JSON-able": lambda c: labelling.write_key(c.dir / "new_key.json", [{"x": object()}], "n"),
    "write_key items with NaN": lambda c: labelling.write_key(c.dir / "new_key.json", [{"x": _nan}], "n"),
    # -- compbook.cppn.audit.agreement -------------------------------------------------------------------------------
    "metrics lengths differ": lambda c: agreement.metrics([True], [True, False]),
    "metrics strings": lambda c: agreement.metrics(["yes", "no"], [True, False]),
    "metrics NaN": lambda c: agreement.metrics([_nan, 1.0], [True, False]),
    "metrics values 2": lambda c: agreement.metrics([2, 0], [True, False]),
    "metrics a (2, 2) array": lambda c: agreement.metrics([[True, False]] * 2, [[True, False]] * 2),
    "split seed=0.5": lambda c: agreement.split(c.items, 0.5),
    "split items without kind": lambda c: agreement.split([{"concept": "skull"}]),
    "labelled lengths differ": lambda c: agreement.labelled(c.items, c.answers[:3]),
    "labelled answer 'maybe'": lambda c: agreement.labelled(c.items[:1], ["maybe"]),
    "judge_scores kind 'bogus' (no items)": lambda c: agreement.judge_scores("bogus", c.images[:0], []),
    "judge_scores kind 'bogus'": lambda c: agreement.judge_scores("bogus", c.images, c.items),
    "judge_scores 3 images for 6 items": lambda c: agreement.judge_scores("reference", c.images[:3], c.items),
    "judge_scores images a list": lambda c: agreement.judge_scores("reference", [0] * 6, c.items),
    "best_threshold empty grid": lambda c: agreement.best_threshold(np.ones(2), np.array([True, False]), []),
    "best_threshold lengths differ": lambda c: agreement.best_threshold(np.ones(3), np.array([True, False]), [0.5]),
    "best_threshold NaN scores": lambda c: agreement.best_threshold(np.array([_nan, 1]), np.array([True, False]),
                                                                   [0.5]),
    "best_threshold NaN in grid": lambda c: agreement.best_threshold(np.ones(2), np.array([True, False]), [_nan]),
    "kind_rows lengths differ": lambda c: agreement.kind_rows(c.items, np.ones(6, bool), np.ones(5, bool)),
    "kind_rows mask of ints": lambda c: agreement.kind_rows(c.items, np.ones(6, bool), np.ones(6, bool),
                                                            mask=np.arange(6)),
    "table held of floats": lambda c: agreement.table(c.items, np.ones(6, bool), np.ones(6, bool),
                                                      np.full(6, 0.5)),
    "choose no kinds": lambda c: agreement.choose(c.items, c.answers, c.images, kinds=()),
    "choose kind 'ssim'": lambda c: agreement.choose(c.items, c.answers, c.images, kinds=("ssim",)),
    "choose answers shorter than items": lambda c: agreement.choose(c.items, c.answers[:4], c.images),
    "choose 3 images for 6 items": lambda c: agreement.choose(c.items, c.answers, c.images[:3]),
    "choose answer 'maybe'": lambda c: agreement.choose(c.items, ["maybe"] * 6, c.images),
    "choose seed=0.5": lambda c: agreement.choose(c.items, c.answers, c.images, seed=0.5),
    "answered_items '../../etc/passwd'": lambda c: agreement.answered_items("../../etc/passwd"),
    "answered_items an absolute path": lambda c: agreement.answered_items(str(c.dir / "key.json")),
    "answered_items 5": lambda c: agreement.answered_items(5),
    "validate thresholds {'bogus': 0.5}": lambda c: agreement.validate(c.items, c.answers, c.images, {"bogus": 0.5}),
    "validate threshold nan": lambda c: agreement.validate(c.items, c.answers, c.images, {"reference": _nan}),
    "validate threshold '0.5'": lambda c: agreement.validate(c.items, c.answers, c.images, {"reference": "0.5"}),
    "validate 3 images for 6 items": lambda c: agreement.validate(c.items, c.answers, c.images[:3],
                                                                  {"reference": 0.5}),
    "self_agreement answer 'maybe'": lambda c: agreement.self_agreement([{"of": 1, "item": 2}], {1: "maybe"},
                                                                        {2: "y"}),
    "self_agreement first a list": lambda c: agreement.self_agreement([{"of": 1, "item": 2}], ["y"], {2: "y"}),
    "self_agreement relabel without 'of'": lambda c: agreement.self_agreement([{"item": 2}], {1: "y"}, {2: "y"}),
    # -- compbook.cppn.audit.reread ------------------------------------------------------------------------------------
    "machine_scores no judges": lambda c: reread.machine_scores({}),
    "machine_scores a judge that is a string": lambda c: reread.machine_scores({"x": "ssim"}),
    "machine_scores a judge without identity": lambda c: reread.machine_scores({"x": _NotAJudge()}),
    "machine_scores deltas=()": lambda c: reread.machine_scores({"x": semantic.ReferenceJudge()}, deltas=()),
    "machine_scores delta nan": lambda c: reread.machine_scores({"x": semantic.ReferenceJudge()}, deltas=(_nan,)),
    "machine_scores delta 0": lambda c: reread.machine_scores({"x": semantic.ReferenceJudge()}, deltas=(0,)),
    "machine_scores sample=0": lambda c: reread.machine_scores({"x": semantic.ReferenceJudge()}, sample=0),
    "machine_scores sample=-1": lambda c: reread.machine_scores({"x": semantic.ReferenceJudge()}, sample=-1),
    "machine_scores pb_sample=2.5": lambda c: reread.machine_scores({"x": semantic.ReferenceJudge()}, pb_sample=2.5),
    "machine_scores seed=0.5": lambda c: reread.machine_scores({"x": semantic.ReferenceJudge()}, seed=0.5),
    "machine_scores concepts 'skull' (a string)": lambda c: reread.machine_scores({"x": semantic.ReferenceJudge()},
                                                                                 concepts="skull"),
    "machine_scores concept 'dog'": lambda c: reread.machine_scores({"x": semantic.ReferenceJudge()},
                                                                    concepts=["dog"]),
    "machine_scores no concepts": lambda c: reread.machine_scores({"x": semantic.ReferenceJudge()}, concepts=[]),
    "labeller_scores answers shorter than key": lambda c: reread.labeller_scores(c.items, c.answers[:3]),
    "labeller_scores answer 'maybe'": lambda c: reread.labeller_scores(c.items, ["maybe"] * 6),
    "labeller_scores current a string": lambda c: reread.labeller_scores(c.items, c.answers, current="emc2/x"),
    "labeller_scores items without question": lambda c: reread.labeller_scores([{"concept": "skull"}], ["yes"]),
    "merge no parts": lambda c: reread.merge([]),
    "merge parts not dicts": lambda c: reread.merge(["a"]),
    "merge parts without rows": lambda c: reread.merge([{"made_by": "x", "concepts": ["skull"]}]),
    "merge parts with different chosen judges": lambda c: reread.merge([
        {"made_by": "m", "seconds": 1, "twins": {}, "chosen": ch, "concepts": cs, "rows": [], "labeller_rows": []}
        for ch, cs in (("reference", ["skull"]), ("classifier", ["butterfly", "apple"]))]),
    "merge seconds nan": lambda c: reread.merge([
        {"made_by": "m", "seconds": _nan, "twins": {}, "chosen": "reference", "concepts": ["skull", "butterfly",
                                                                                            "apple"],
         "rows": [], "labeller_rows": []}]),
    "run sample=0": lambda c: reread.run(sample=0),
    "run deltas=()": lambda c: reread.run(deltas=()),
    "run concepts ['dog']": lambda c: reread.run(concepts=["dog"]),
    "run made_by=5": lambda c: reread.run(made_by=5),
    # -- compbook.cppn.audit.claims ------------------------------------------------------------------------------------
    "verdict paper='more'": lambda c: claims.verdict(c.a, c.b, "more"),
    "verdict score outside its interval": lambda c: claims.verdict(_row(0.9, 0.1, 0.2), c.b),
    "verdict a string score": lambda c: claims.verdict(_row("x", 0.1, 0.2), c.b),
    "verdict ci95 of 3 numbers": lambda c: claims.verdict({"score": 0.5, "ci95": [0.4, 0.5, 0.6]}, c.b),
    "verdict a NaN number": lambda c: claims.verdict(_nan, c.b),
    "verdict a bool": lambda c: claims.verdict(True, c.b),
    "verdict_zero tolerance=2": lambda c: claims.verdict_zero(c.a, 2),
    "verdict_zero rule 'strict'": lambda c: claims.verdict_zero(c.a, rule="strict"),
    "probability_verdict p=1.5": lambda c: claims.probability_verdict(1.5),
    "probability_verdict level=2": lambda c: claims.probability_verdict(0.5, level=2),
    "probability_verdict level nan": lambda c: claims.probability_verdict(0.5, level=_nan),
    "probability_verdict level=0": lambda c: claims.probability_verdict(0.5, level=0),
    "difference n_boot=0": lambda c: claims.difference(c.kn, c.kn, n_boot=0),
    "difference n_boot=2.5": lambda c: claims.difference(c.kn, c.kn, n_boot=2.5),
    "difference n_boot=10**9 (memory)": lambda c: claims.difference(c.kn, c.kn, n_boot=10 ** 9),
    "difference seed=0.5": lambda c: claims.difference(c.kn, c.kn, seed=0.5),
    "difference a row without k_n": lambda c: claims.difference(c.a, c.kn),
    "difference k_n with k > n": lambda c: claims.difference(c.kn | {"k_n": [[5, 3]]}, c.kn),
    "difference k_n empty": lambda c: claims.difference(c.kn | {"k_n": []}, c.kn),
    "judge_kind name 5": lambda c: claims.judge_kind(5, "reference"),
    "judge_kind chosen None": lambda c: claims.judge_kind("reference", None),
    "drew_concept not a dict": lambda c: claims.drew_concept(5),
    "drew_concept unperturbed [1]": lambda c: claims.drew_concept({"unperturbed": [1]}),
    "drew_concept unperturbed [2, 1] (k > n)": lambda c: claims.drew_concept({"unperturbed": [2, 1]}),
    "drew_concept unperturbed [-1, 2]": lambda c: claims.drew_concept({"unperturbed": [-1, 2]}),
    "chapter5_claims a list": lambda c: claims.chapter5_claims([]),
    "chapter5_claims rule 'strict' (no rows)": lambda c: claims.chapter5_claims({"chosen": "x", "rows": []},
                                                                               rule="strict"),
    "chapter5_claims rows without judge": lambda c: claims.chapter5_claims({"chosen": "x", "rows": [{"n": 1}]}),
    "chapter5_claims judge name 5": lambda c: claims.chapter5_claims(
        {"chosen": "x", "rows": [{"judge": 5, "concept": "skull", "delta": 0.5, "network": "sgd", "n": 1}]}),
    "chapter5_claims require_drawn='no'": lambda c: claims.chapter5_claims(c.reread, require_drawn="no"),
    "chapter6_claims {}": lambda c: claims.chapter6_claims({}),
    "chapter6_claims rule 'strict'": lambda c: claims.chapter6_claims(c.stored["chapter6"], rule="strict"),
    "chapter6_claims tolerance nan": lambda c: claims.chapter6_claims(c.stored["chapter6"], tolerance=_nan),
    "chapter7_claims {}": lambda c: claims.chapter7_claims({}),
    "chapter7_claims rule 'strict'": lambda c: claims.chapter7_claims(c.stored["chapter7"], rule="strict"),
    "chapter8_claims {}": lambda c: claims.chapter8_claims({}),
    "chapter8_claims no MSE values": lambda c: claims.chapter8_claims(
        c.stored["chapter8"] | {"mse": {"muon": [], "adam": []}}),
    "chapter9_claims {}": lambda c: claims.chapter9_claims({}),
    "theory_claims {}": lambda c: claims.theory_claims({}),
    "theory_claims a list": lambda c: claims.theory_claims([]),
    "p_shallower depth 'a'": lambda c: claims.p_shallower({"a": 1.0}, {"2": 1.0}),
    "p_shallower a share nan": lambda c: claims.p_shallower({"1": _nan}, {"2": 1.0}),
    "p_shallower a share -0.5": lambda c: claims.p_shallower({"1": -0.5, "2": 1.5}, {"2": 1.0}),
    "p_shallower shares summing to 2": lambda c: claims.p_shallower({"1": 1.0, "2": 1.0}, {"2": 1.0}),
    "p_shallower a list": lambda c: claims.p_shallower([1], {"2": 1.0}),
    "p_shallower empty": lambda c: claims.p_shallower({}, {"2": 1.0}),
    "peak_set level=2": lambda c: claims.peak_set({"1": 1.0}, level=2),
    "peak_set level nan": lambda c: claims.peak_set({"1": 1.0}, level=_nan),
    "peak_set empty": lambda c: claims.peak_set({}),
    "peak_set a share nan": lambda c: claims.peak_set({"1": _nan}),
    "predictor_verdict predicted 2.5": lambda c: claims.predictor_verdict(2.5, [2], [1, 2, 3]),
    "predictor_verdict peaks outside depths": lambda c: claims.predictor_verdict(2, [7], [1, 2, 3]),
    "predictor_verdict depths strings": lambda c: claims.predictor_verdict(2, ["2"], ["1", "2"]),
    "predictor_verdict depth 2.5": lambda c: claims.predictor_verdict(2, [2.5], [1, 2.5]),
    "table rule 'strict'": lambda c: claims.table(c.reread, c.stored, rule="strict"),
    "table stored a string": lambda c: claims.table(c.reread, "theory chapter6"),
    "table tolerance=5": lambda c: claims.table(c.reread, c.stored, tolerance=5),
    "table require_drawn='yes'": lambda c: claims.table(c.reread, c.stored, require_drawn="yes"),
}


@pytest.mark.parametrize("call", list(CASES.values()), ids=list(CASES))
def test_bad_input_raises_value_error_quickly(c, call):
    assert_refused(lambda: call(c), [c.dir, data_dir() / "judge_cache"], SECONDS, HANG)


def test_there_are_at_least_150_cases():
    assert len(CASES) >= 150


def test_stored_files_still_load_and_give_the_same_numbers(c):
    """The other side: the stored files the chapters read pass every new check, with the same results."""
    choice = semantic.read_choice()
    assert choice == c.choice
    assert semantic.read_choice(c.dir / "choice.json") == c.choice
    judge = semantic.default_judge()
    assert judge.kind == c.choice["chosen"] and judge.threshold == c.choice["thresholds"][c.choice["chosen"]]
    key = labelling.read_key(data_dir() / "judge_cache" / "labeller_key.json")
    answers = labelling.answers_for(key)
    assert len(key) == len(answers) and sum(a is not None for a in answers) > 300
    items, labels = agreement.labelled(key, answers)
    assert len(items) == len(labels) == sum(a in ("yes", "no") for a in answers)
    assert agreement.metrics([True, False, True], [True, True, True])["agreement"] == pytest.approx(2 / 3)
    rows = claims.table(c.reread, c.stored)
    assert len(rows) > 20 and {r["verdict"] for r in rows} <= {claims.REPRODUCED, claims.NOT_REPRODUCED,
                                                                claims.INCONCLUSIVE}
    assert claims.drew_concept({"unperturbed": [1, 1]}) and not claims.drew_concept({"unperturbed": [0, 1]})
    assert claims.peak_set({"2": 0.9, "3": 0.1}) == [2, 3]
    assert claims.p_shallower({"2": 1.0}, {"3": 1.0}) == 1.0
    assert labelling.load_network("picbreeder:skull") is not None
    assert labelling.load_network(key[0]["source"]) is not None
