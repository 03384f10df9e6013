"""The stored runs that set the judge against the labellers, and the labellers against each other (chapter 5).

Each function builds the content of one file in ``data/semantic/`` from the blind verdicts stored in
``data/judge_cache/`` (:mod:`compbook.cppn.audit.labelling`) with the measures of :mod:`compbook.cppn.audit.agreement`;
``python -m compbook.cppn semantic choose|validate|second|overlap`` writes it, and chapter 5 reads it:

* :func:`choice_run`: the candidates' thresholds and the default judge, chosen on the first batch
  (``choice.json``);
* :func:`validation_run`: the chosen thresholds on a later batch of the same labeller (``validation_batch2.json``);
* :func:`second_labeller_run`: the default judge and the choice against another labeller
  (``validation_batch3.json``);
* :func:`overlap_run`: a third labeller on items the first two answered (``overlap.json``), drawn by
  :func:`overlap_items` (:data:`OVERLAP`).
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Sequence

from . import agreement, labelling
from ..judges import semantic
from ..judges.base import SSIM_THRESHOLD

#: the overlap draw: per earlier labeller, its keys and how many items of each answer
OVERLAP = ((labelling.LABELLER_KEYS, labelling.LABELLER, {"yes": 14, "no": 13, "can't tell": 13}),
           (("labeller_key_batch3.json",), labelling.SECOND_LABELLER, {"no": 12, "yes": 28}))
#: the overlap key's first item number per concept
OVERLAP_STARTS = {"skull": 20000, "butterfly": 21000, "apple": 22000}


def validation_path(key_name: str) -> Path:
    """``data/semantic/validation_<batch>.json`` of a key ``labeller_key_<batch>.json``."""
    return semantic.choice_path().parent / f"validation_{Path(key_name).stem.removeprefix('labeller_key_')}.json"


def choice_run(key_name: str = "labeller_key.json") -> dict:
    """:func:`agreement.choose` on the labelled items of ``key_name``: the content of ``choice.json``."""
    key, answers = agreement.answered_items(key_name)
    return agreement.choose(key, answers, labelling.render_items(key))


def validation_run(key_name: str) -> dict:
    """:func:`agreement.validate` on a later labelled batch (its key in ``data/judge_cache/``) with the
    thresholds of ``choice.json``: the content of :func:`validation_path`."""
    key, answers = agreement.answered_items(key_name)
    thresholds = semantic.read_choice()["thresholds"]
    return agreement.validate(key, answers, labelling.render_items(key), thresholds) | {"key": key_name}


def stored_answers(key_name: str, labeller: str) -> tuple[str, list, list]:
    """``(identity, items, answers)``: ``labeller``'s stored verdicts on the items of ``key_name``."""
    identity = labelling.labeller_identity(labeller)
    items, answers = agreement.answered([key_name], identity)
    if not items:
        raise ValueError(f"no answers of {labeller!r} stored for {key_name} (run labelling store --labeller first)")
    return identity, items, answers


def second_labeller_run(key_name: str, labeller: str, first_keys: Sequence[str], seed: int = 0,
                        command: str = "") -> dict:
    """The default judge at its fixed threshold against another labeller's verdicts on ``key_name``, their
    verdicts per network kind and delta, and the choice made on one labeller validated on the other
    (:func:`agreement.cross_labeller`): the content of ``validation_batch3.json`` (``made_by``: ``command``)."""
    t0 = time.perf_counter()
    identity, items, answers = stored_answers(key_name, labeller)
    first_items, first_answers = agreement.answered(first_keys)
    images, first_images = labelling.render_items(items), labelling.render_items(first_items)
    choice = semantic.read_choice()
    fixed = dict(choice["thresholds"]) | {"ssim": SSIM_THRESHOLD}
    scores = {k: agreement.judge_scores(k, images, items) for k in (*fixed, *agreement.VARIANTS)}
    per_item = [{"item": it["item"], "concept": it["concept"], "kind": it["kind"], "delta": it["question"]["delta"],
                 "answer": a} | {k: round(float(v[j]), 4) for k, v in scores.items()}
                for j, (it, a) in enumerate(zip(items, answers))]
    out = {"made_by": command, "key": key_name, "identity": identity, "first_keys": list(first_keys),
           "default": {"kind": choice["chosen"], "threshold": choice["thresholds"][choice["chosen"]]},
           "fixed": {k: {"threshold": t, "rows": agreement.labeller_rows(items, answers, scores[k] >= t, seed)}
                     for k, t in fixed.items()},
           "items": per_item,
           "verdicts": {"kind_delta": agreement.answer_rows(items, answers),
                        "concept_kind_delta": agreement.answer_rows(items, answers, ("concept", "kind", "delta")),
                        "first_kind_delta": agreement.answer_rows(first_items, first_answers)},
           "cross": agreement.cross_labeller((first_items, first_answers, first_images),
                                             (items, answers, images), seed=seed,
                                             names=("labeller 1", "labeller 2"))}
    out["seconds"] = round(time.perf_counter() - t0, 1)
    return out


def overlap_run(key_name: str, labeller: str, command: str = "") -> dict:
    """The overlap set: ``labeller`` against each earlier labeller on that labeller's items
    (:func:`agreement.pairwise`), their yes rates, ``labeller``'s yes rate reweighted to each earlier batch
    (:func:`agreement.reweighted_yes`), and the default judge at its fixed threshold against ``labeller``: the
    content of ``overlap.json`` (``made_by``: ``command``)."""
    t0 = time.perf_counter()
    identity, items, third = stored_answers(key_name, labeller)
    choice = semantic.read_choice()
    kind, t = choice["chosen"], choice["thresholds"][choice["chosen"]]
    judge = agreement.judge_scores(kind, labelling.render_items(items), items)
    out = {"made_by": command, "key": key_name, "identity": identity, "default": {"kind": kind, "threshold": t},
           "groups": [], "items": []}
    for keys, who, _ in OVERLAP:
        idx = [j for j, it in enumerate(items) if it["labeller"] == who]
        orig = labelling.answers_for([items[j] for j in idx], identity=labelling.labeller_identity(who))
        thr = [third[j] for j in idx]
        verdict = ["yes" if judge[j] >= t else "no" for j in idx]
        batch = Counter(agreement.answered(list(keys), labelling.labeller_identity(who))[1])
        out["groups"].append({
            "labeller": who, "batches": list(keys), "n": len(idx), "batch_counts": dict(batch),
            "labellers": agreement.pairwise(orig, thr),
            "third_yes_reweighted": agreement.reweighted_yes(orig, thr, batch),
            "original_yes_batch": batch["yes"] / sum(batch.values()),
            "judge_vs_third": agreement.pairwise(verdict, thr),
            "judge_vs_original": agreement.pairwise(verdict, orig)})
        out["items"] += [{"item": items[j]["item"], "concept": items[j]["concept"], "kind": items[j]["kind"],
                          "labeller": who, "of": items[j]["of"], "original": o, "third": third[j],
                          "judge_score": round(float(judge[j]), 4)} for j, o in zip(idx, orig)]
    out["seconds"] = round(time.perf_counter() - t0, 1)
    return out


def overlap_items(seed: int = 20) -> list[dict]:
    """Items labellers 1 and 2 answered (:data:`OVERLAP`, :func:`labelling.stratified_draw` with ``seed``, then
    ``seed + 1``), shuffled per concept and numbered from :data:`OVERLAP_STARTS` (``seed + 2``), each with its
    original item (``of``), ``batch`` and ``labeller``."""
    items = []
    for j, (keys, who, counts) in enumerate(OVERLAP):
        got, answers = [], []
        for k in keys:
            its, ans = agreement.answered([k], labelling.labeller_identity(who))
            got += [it | {"batch": k, "labeller": who} for it in its]
            answers += ans
        items += [{f: v for f, v in it.items() if f != "answer"}
                  for it in labelling.stratified_draw(got, answers, counts, seed + j)]
    return labelling.number_by_concept(items, OVERLAP_STARTS, seed + len(OVERLAP))
