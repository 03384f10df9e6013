"""Picbreeder against SGD twins under every judge, with intervals (chapter 5 and Part A's claims table).

``python -m compbook.cppn reread`` scores the three Picbreeder networks and their stored SGD twins
(:mod:`compbook.cppn.twins`) with each judge (the default semantic judge, the other semantic candidate, SSIM to the own
render) at several deltas, and reads the model labeller's blind verdicts (:mod:`compbook.cppn.audit.labelling`) of the
same networks; every score comes with a 95% Wilson interval over its perturbations. Writes ``data/emc2/reread.json``,
which the chapters load (a precomputed result: about ten CPU minutes).
"""

from __future__ import annotations

import time
from typing import Sequence

import numpy as np

from ... import checks, results
from . import agreement, labelling
from .. import panel, picbreeder, twins
from ..data import store
from ..judges import semantic
from ..judges.registry import make_judge
from ..panel import panel_verdicts, score_row
from ...results import door


def _row(concept, kind, judge_name, delta, verdicts: np.ndarray, extra=None) -> dict:
    return score_row(verdicts, concept=concept, network=kind, judge=judge_name, delta=delta) | (extra or {})


def machine_scores(judge_map: dict, deltas=(0.5, 1.0, 2.0), sample: int = 200, pb_sample: int | None = None,
                   seed: int = 0, progress: bool = False, concepts: Sequence[str] = twins.TARGETS) -> list[dict]:
    """Rows (concept, network, judge, delta, score, k, n, ci95, unperturbed): Picbreeder networks over every non-zero
    weight (or a seeded ``pb_sample``), the SGD twins over a seeded ``sample`` of weights each, pooled over seeds
    (``per_seed`` holds each). Every judge sees the same renders. Each concept's rows depend on that concept alone
    (seeded samples), so ``concepts`` may be split across processes (``--concepts``, ``--merge``). ``unperturbed`` is
    ``[k, n]`` of :func:`compbook.cppn.panel.unperturbed_counts` for the row's networks."""
    _check_settings(deltas, sample, pb_sample, seed, concepts)
    for name, j in checks.mapping(judge_map, "judge_map", 1).items():
        checks.non_empty_str(name, "judge_map (a name)")
        if not callable(j) or not isinstance(getattr(j, "identity", None), str):
            raise ValueError(f"judge_map[{name!r}] must be a judge (callable with an 'identity'), got {j!r:.60}")
    rows = []
    for c in concepts:
        nets = [("picbreeder", picbreeder.layerize(picbreeder.load_genome(c)), pb_sample)]
        nets += [("sgd", m, sample) for m in twins.load_twins(c)]
        base = {kind: panel.unperturbed_counts([m for k, m, _ in nets if k == kind], judge_map, c)
                for kind in ("picbreeder", "sgd")}
        for d in deltas:
            rec = {kind: [] for kind in ("picbreeder", "sgd")}
            for kind, model, n in nets:
                rec[kind].append(panel_verdicts(model, judge_map, c, d, sample=n, seed=seed, progress=progress))
            for kind, recs in rec.items():
                for name in judge_map:
                    v = np.concatenate([x[name] for x in recs])
                    extra = {"per_seed": [round(float(x[name].mean()), 4) for x in recs]} if kind == "sgd" else {}
                    rows.append(_row(c, kind, name, d, v, extra | {"unperturbed": base[kind][name]}))
    return rows


#: the judge name of the first model labeller's rows, and of its rows on the earlier twins
LABELLER_ROWS = "model labeller 1"
EARLIER = f"earlier twins: {LABELLER_ROWS}"


def _check_settings(deltas, sample, pb_sample, seed, concepts) -> None:
    for i, d in enumerate(checks.sequence(deltas, "deltas")):
        checks.real(d, f"deltas[{i}]", nonzero=True)
    checks.integer(sample, "sample")
    checks.optional_integer(pb_sample, "pb_sample")
    checks.seed(seed)
    if concepts is not None:
        for c in checks.sequence(concepts, "concepts"):
            checks.choice(c, "concepts", twins.TARGETS)


def labeller_scores(key: Sequence[dict], answers: Sequence[str | None], current=None) -> list[dict]:
    """Rows of the first model labeller's verdicts per concept, network kind and delta (perturbed items only);
    "can't tell" counts as no (as stored); ``cant_tell`` says how many; ``unperturbed`` ``[k, n]``: of the networks' own
    unperturbed renders labelled, how many the labeller called the concept.

    ``current`` (the ``source`` names of the twins scored now): the rows named :data:`LABELLER_ROWS` then hold
    only those twins' SGD items, and rows named :data:`EARLIER` the other twins' (the Picbreeder rows, every
    batch, appear under both names); None: one set of rows over every item."""
    key = checks.sequence(key, "key", 0)
    answers = checks.sequence(answers, "answers", 0)
    checks.same_length(key, answers, "key", "answers")
    for i, (it, a) in enumerate(zip(key, answers)):
        if not isinstance(it, dict) or not all(k in it for k in ("concept", "kind", "question")) \
                or not isinstance(it["question"], dict):
            raise ValueError(f"key[{i}] must be a key item with concept, kind and question, got {it!r:.80}")
        if a not in ("yes", "no", "can't tell", None):
            raise ValueError(f"answers[{i}] must be 'yes', 'no', \"can't tell\" or None, got {a!r}")
    if current is not None:
        current = set(checks.sequence(list(current) if isinstance(current, (set, frozenset)) else current,
                                      "current", 0))
        now = [it["kind"] == "picbreeder" or it["source"] in current for it in key]
        before = [it["kind"] == "picbreeder" or it["source"] not in current for it in key]
        pick = lambda keep: ([it for it, k in zip(key, keep) if k], [a for a, k in zip(answers, keep) if k])  # noqa
        rows = labeller_scores(*pick(now))
        return rows + [r | {"judge": EARLIER} for r in labeller_scores(*pick(before))]
    rows = []
    for c in twins.TARGETS:
        for kind in ("picbreeder", "sgd"):
            base = [a == "yes" for it, a in zip(key, answers) if it["concept"] == c and it["kind"] == kind
                    and it["question"]["weight"] is None and a is not None]
            for d in sorted({it["question"]["delta"] for it in key if it["question"]["weight"] is not None}):
                its = [(it, a) for it, a in zip(key, answers) if it["concept"] == c and it["kind"] == kind
                       and it["question"]["weight"] is not None and it["question"]["delta"] == d and a is not None]
                a = [a for _, a in its]
                rows.append(_row(c, kind, LABELLER_ROWS, d, np.array([x == "yes" for x in a]),
                                 {"cant_tell": sum(x == "can't tell" for x in a), "unperturbed": [sum(base), len(base)],
                                  "sources": sorted({it["source"] for it, _ in its if "source" in it})}))
    return rows


def merge(parts: Sequence[dict]) -> dict:
    """One ``reread.json`` from the part files of a run split by ``--concepts`` (same settings, every concept
    once); the rows in :data:`compbook.cppn.twins.TARGETS` order, the labeller rows last, seconds summed."""
    parts = checks.sequence(parts, "parts")
    for i, p in enumerate(parts):
        need = ("made_by", "seconds", "twins", "chosen", "concepts", "rows", "labeller_rows")
        if not isinstance(p, dict) or any(k not in p for k in need):
            raise ValueError(f"parts[{i}] must be a part file with {list(need)}, got {p!r:.80}")
        checks.real(p["seconds"], f"parts[{i}]['seconds']", 0)
    if len({p["chosen"] for p in parts}) != 1:
        raise ValueError(f"parts: made with different chosen judges: {sorted({p['chosen'] for p in parts})}")
    made = {p["made_by"] for p in parts}
    if len(made) != 1:
        raise ValueError(f"parts: made with different settings: {sorted(made)}")
    got = [c for p in parts for c in p["concepts"]]
    if sorted(got) != sorted(twins.TARGETS):
        raise ValueError(f"parts: need each of {list(twins.TARGETS)} once, got {got}")
    rows = [r for c in twins.TARGETS for p in parts for r in p["rows"] if r["concept"] == c]
    return {"made_by": made.pop(), "seconds": round(sum(p["seconds"] for p in parts), 1),
            "twins": {c: h for p in parts for c, h in p["twins"].items()}, "chosen": parts[0]["chosen"],
            "rows": rows + parts[0]["labeller_rows"]}


def run(sample: int = 200, pb_sample: int | None = None, deltas: Sequence[float] = (0.5, 1.0, 2.0),
        concepts: Sequence[str] | None = None, made_by: str = "") -> dict:
    """Score every network under every judge (:func:`machine_scores`) and read the model labeller's verdicts
    (:func:`labeller_scores`): the content of ``data/emc2/reread.json`` (``python -m compbook.cppn reread``).

    With ``concepts`` only those are scored, and the result is a part file for :func:`merge` (its ``rows`` the
    machine rows, ``labeller_rows`` the labeller's)."""
    _check_settings(deltas, sample, pb_sample, 0, concepts)
    if not isinstance(made_by, str):
        raise ValueError(f"made_by must be a str (the command line), got {type(made_by).__name__}")
    t0 = time.perf_counter()
    choice = semantic.read_choice()
    judge_map = {f"{k}{' (default)' if k == choice['chosen'] else ''}": make_judge(k, threshold=t)
                 for k, t in choice["thresholds"].items()}
    ssim = make_judge("ssim")
    judge_map[agreement.SSIM_LABEL] = ssim
    part = concepts is not None
    concepts = list(concepts or twins.TARGETS)
    rows = machine_scores(judge_map, tuple(deltas), sample, pb_sample, concepts=concepts)
    key = [it for f in labelling.LABELLER_KEYS
           for it in results.json_file(door.stored_path(f"judge_cache/{f}"), "labeller key")["items"]]
    current = {n.source for n in labelling.networks() if n.kind == "sgd"}
    labelled = labeller_scores(key, labelling.answers_for(key), current)
    out = {"made_by": made_by, "seconds": round(time.perf_counter() - t0, 1),
           "twins": {c: [store.content_hash(m) for m in twins.load_twins(c)] for c in concepts},
           "chosen": choice["chosen"], "rows": rows + labelled}
    return out | {"rows": rows, "labeller_rows": labelled, "concepts": concepts} if part else out
