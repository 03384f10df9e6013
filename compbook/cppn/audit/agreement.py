"""How well a CPU judge agrees with the stored blind verdicts of the model labellers (chapter 5).

Items are the labelling key's (:mod:`compbook.cppn.audit.labelling`); "can't tell" answers are left out. The items are
cut, seeded and stratified by concept and network kind, into a *calibration* half (each candidate's threshold is the one
with the best balanced accuracy there) and a *held-out* half (the default judge is the candidate with the best held-out
balanced accuracy, ties broken by Cohen's kappa). ``python -m compbook.cppn semantic choose`` does it and writes
``data/semantic/choice.json``; no Picbreeder-vs-SGD score enters the choice.

A second labeller: :func:`labeller_rows` scores a judge at its fixed threshold against another
labeller's verdicts per network kind (Picbreeder, our twins, FER's SGD networks, twins of FER's architecture)
with intervals (:func:`with_intervals`) and "can't tell" counts; :func:`cross_labeller` chooses on one labeller
and validates on the other, each way round; :func:`answer_rows` gives a labeller's verdicts per kind and delta.
``python -m compbook.cppn semantic second`` writes ``data/semantic/validation_batch3.json``. :func:`pairwise`:
two labellers on the same items (the overlap set, ``semantic overlap``).
"""

from __future__ import annotations

import json

from typing import Sequence

import numpy as np
import torch

from ... import checks
from ...stats import wilson  # noqa: F401 (re-exported: agreement.wilson)
from ..judges import semantic
from ..judges.base import SSIM_THRESHOLD
from ..judges.semantic import THRESHOLD_GRID   # one grid: read_choice checks stored thresholds against it
from ...results import door


def metrics(labels: Sequence[bool], judge: Sequence[bool]) -> dict:
    """Agreement, balanced accuracy (mean of the judge's recall on the items ``labels`` says yes and no to) and
    Cohen's kappa of two bool sequences; ``n``, and the labeller's "yes" rate. NaN where a class is missing."""
    h, j = checks.bools(labels, "labels"), checks.bools(judge, "judge")
    checks.same_length(h, j, "labels", "judge")
    n = len(h)
    if n == 0:
        return {"n": 0, "agreement": float("nan"), "balanced_accuracy": float("nan"), "kappa": float("nan"),
                "labeller_yes": float("nan")}
    agree = float((h == j).mean())
    tpr = float(j[h].mean()) if h.any() else float("nan")
    tnr = float((~j[~h]).mean()) if (~h).any() else float("nan")
    pe = h.mean() * j.mean() + (1 - h.mean()) * (1 - j.mean())
    kappa = float((agree - pe) / (1 - pe)) if pe < 1 else float("nan")
    return {"n": n, "agreement": agree, "balanced_accuracy": (tpr + tnr) / 2, "kappa": kappa,
            "labeller_yes": float(h.mean())}


def split(items: Sequence[dict], seed: int = 0) -> np.ndarray:
    """Bool ``(N,)``: True for the held-out half, stratified by (concept, kind), seeded."""
    _check_items(items, ("concept", "kind"))
    rng = np.random.default_rng(checks.seed(seed))
    held = np.zeros(len(items), dtype=bool)
    groups: dict = {}
    for j, it in enumerate(items):
        groups.setdefault((it["concept"], it["kind"]), []).append(j)
    for key in sorted(groups):
        idx = rng.permutation(groups[key])
        held[idx[: len(idx) // 2]] = True
    return held


ANSWER_VALUES = ("yes", "no", "can't tell", None)


def _check_items(items, keys, name: str = "items") -> list:
    items = checks.sequence(items, name, 0)
    for i, it in enumerate(items):
        if not isinstance(it, dict) or any(k not in it for k in keys):
            raise ValueError(f"{name}[{i}] must be a key item with {list(keys)}, got {it!r:.80}")
    return items


def _check_answers(items, answers) -> list:
    answers = checks.sequence(answers, "answers", 0)
    checks.same_length(items, answers, "items", "answers")
    for i, a in enumerate(answers):
        if a not in ANSWER_VALUES:
            raise ValueError(f"answers[{i}] must be one of {ANSWER_VALUES}, got {a!r}")
    return answers


def _check_images(images, n: int) -> None:
    if not isinstance(images, torch.Tensor) or images.ndim != 4:
        raise ValueError(f"images must be a tensor (N, H, W, 3), got {type(images).__name__}")
    if len(images) != n:
        raise ValueError(f"images and items must have the same length, got {len(images)} and {n}")


def labelled(items: Sequence[dict], answers: Sequence[str | None]) -> tuple[list[dict], np.ndarray]:
    """The items answered yes or no, and their verdicts (True = yes)."""
    answers = _check_answers(_check_items(items, ()), answers)
    keep = [j for j, a in enumerate(answers) if a in ("yes", "no")]
    return [items[j] for j in keep], np.array([answers[j] == "yes" for j in keep])


#: Variants of the reference judge (fixed before the second labeller's answers were read): the
#: default averages the best-shift SSIM at 64, 32 and 16 px; ``reference-min`` takes the *lowest* of the three
#: (a render must match at every scale: stricter on local damage that the coarse scales average away);
#: ``reference-64`` keeps the 64 px scale only. Their thresholds use the reference grid.
VARIANTS = {"reference-min": "min", "reference-64": (64,)}
SCORE_KINDS = ("reference", "classifier", "ssim", *VARIANTS)
#: how tables name SSIM to the own render at its threshold (not a candidate: it does not answer "is this a <concept>?")
SSIM_LABEL = f"ssim (own render, {SSIM_THRESHOLD:g})"


def grid(kind: str) -> list:
    """The threshold grid of a candidate (a variant uses the reference grid)."""
    checks.choice(kind, "kind", (*THRESHOLD_GRID, *VARIANTS))
    return THRESHOLD_GRID["reference" if kind in VARIANTS else kind]


def _variant_scores(kind: str, images: torch.Tensor, concept: str) -> np.ndarray:
    if VARIANTS[kind] == "min":
        per = [semantic.reference_scores(images, concept, scales=(s,)).numpy() for s in (64, 32, 16)]
        return np.min(per, axis=0)
    return semantic.reference_scores(images, concept, scales=VARIANTS[kind]).numpy()


def judge_scores(kind: str, images: torch.Tensor, items: Sequence[dict]) -> np.ndarray:
    """Each item's continuous score under candidate ``kind`` (``"reference"``, ``"classifier"``, ``"ssim"``:
    SSIM against the item's own network's unperturbed render, which the key's ``source`` rebuilds; or a
    reference variant of :data:`VARIANTS`)."""
    from . import labelling
    checks.choice(kind, "kind", SCORE_KINDS)
    items = _check_items(items, ("concept", "source"))
    _check_images(images, len(items))
    out = np.zeros(len(items))
    for c in sorted({it["concept"] for it in items}):
        idx = [j for j, it in enumerate(items) if it["concept"] == c]
        if kind == "reference":
            out[idx] = semantic.reference_scores(images[idx], c).numpy()
        elif kind == "classifier":
            out[idx] = semantic.classifier_scores(images[idx], c).numpy()
        elif kind in VARIANTS:
            out[idx] = _variant_scores(kind, images[idx], c)
        elif kind == "ssim":
            from ..judges import ssim_scores
            for src in sorted({items[j]["source"] for j in idx}):
                sub = [j for j in idx if items[j]["source"] == src]
                with torch.no_grad():
                    ref = labelling.load_network(src).render(labelling.RES)
                out[sub] = ssim_scores(images[sub], ref).numpy()
        else:
            raise ValueError(f"kind must be 'reference', 'classifier' or 'ssim', got {kind!r}")
    return out


def best_threshold(scores: np.ndarray, labels: np.ndarray, grid: Sequence[float]) -> float:
    """The grid threshold with the best balanced accuracy of ``scores >= t`` against ``labels`` (first on ties).
    ``labels`` must hold both classes (balanced accuracy of one class is undefined)."""
    scores = checks.reals(scores, "scores", ndim=1)
    labels = checks.bools(labels, "labels", len(scores))
    if labels.all() or not labels.any():
        raise ValueError(f"labels must hold both classes (balanced accuracy needs a yes and a no), got "
                         f"{int(labels.sum())} yes of {len(labels)}")
    grid = [checks.real(t, f"grid[{i}]") for i, t in enumerate(checks.sequence(grid, "grid"))]
    ba = [metrics(labels, scores >= t)["balanced_accuracy"] for t in grid]
    return float(grid[int(np.nanargmax(ba))])


#: network kinds in table order (:data:`compbook.cppn.audit.labelling.KINDS`)
KIND_ORDER = ("picbreeder", "sgd", "fer", "fertwin")


def _kinds_of(kinds: np.ndarray) -> tuple:
    """Picbreeder and sgd always (the earlier tables' rows), then any other kind present, in table order."""
    present = set(kinds.tolist())
    return ("picbreeder", "sgd") + tuple(k for k in KIND_ORDER[2:] if k in present)


def kind_rows(items, labels, verdicts, mask=None) -> list[dict]:
    """Metrics rows over the items ``mask`` keeps (default all): all network kinds together, then each kind
    (picbreeder and sgd always, fer and fertwin where present)."""
    kinds = np.array([it["kind"] for it in _check_items(items, ("kind",))])
    labels = checks.bools(labels, "labels", len(kinds))
    verdicts = checks.bools(verdicts, "verdicts", len(kinds))
    mask = np.ones(len(kinds), dtype=bool) if mask is None else checks.bools(mask, "mask", len(kinds))
    rows = []
    for kind in ("all", *_kinds_of(kinds)):
        m = mask & ((kinds == kind) if kind != "all" else True)
        rows.append({"network": kind} | metrics(labels[m], verdicts[m]))
    return rows


def table(items, labels, verdicts, held) -> list[dict]:
    """Metrics rows: all items and per network kind, on the held-out half and on everything."""
    held = checks.bools(held, "held", len(items))
    return [{"split": part} | r for part, mask in (("held-out", held), ("all", np.ones_like(held)))
            for r in kind_rows(items, labels, verdicts, mask)]


def choose(items: Sequence[dict], answers: Sequence[str | None], images: torch.Tensor,
           kinds=("reference", "classifier"), seed: int = 0) -> dict:
    """Thresholds on the calibration half, then the default by held-out balanced accuracy (kappa on ties).

    ``images`` ``(N, 64, 64, 3)`` are the items' renders. SSIM (own render, at its documented threshold) is
    reported beside them but is not a candidate: it does not answer "is this a <concept>?".
    """
    items = _check_items(items, ("concept", "kind", "source"))
    answers = _check_answers(items, answers)
    _check_images(images, len(items))
    seed = checks.seed(seed)
    for k in checks.sequence(kinds, "kinds"):
        checks.choice(k, "kinds", (*semantic.CANDIDATE_KINDS, *VARIANTS))
    keep = [j for j, a in enumerate(answers) if a in ("yes", "no")]
    items_l, labels = labelled(items, answers)
    imgs = images[keep]
    held = split(items_l, seed)
    out = {"n_labelled": len(items_l), "n_cant_tell": sum(a == "can't tell" for a in answers),
           "thresholds": {}, "tables": {}, "split_seed": seed}
    scores = {k: judge_scores(k, imgs, items_l) for k in (*kinds, "ssim")}
    for k in kinds:
        t = best_threshold(scores[k][~held], labels[~held], grid(k))
        out["thresholds"][k] = t
        out["tables"][k] = table(items_l, labels, scores[k] >= t, held)
    out["tables"][SSIM_LABEL] = table(items_l, labels, scores["ssim"] >= SSIM_THRESHOLD, held)
    held_rows = {k: out["tables"][k][0] for k in kinds}
    out["chosen"] = max(kinds, key=lambda k: (held_rows[k]["balanced_accuracy"], held_rows[k]["kappa"]))
    out["rule"] = ("candidate with the best held-out balanced accuracy (ties: kappa); thresholds: best "
                   "balanced accuracy on the calibration half")
    return out


def answered_items(key_name: str) -> tuple[list[dict], list[str]]:
    """The items of a key in ``data/judge_cache/`` with a stored answer of the first labeller, and those answers."""
    from . import labelling
    checks.safe_name(key_name, "key_name")
    key = labelling.read_key(door.stored_path(f"judge_cache/{key_name}"))
    answers = labelling.answers_for(key)
    have = [j for j, a in enumerate(answers) if a is not None]
    return [key[j] for j in have], [answers[j] for j in have]


def validate(items: Sequence[dict], answers: Sequence[str | None], images: torch.Tensor,
             thresholds: dict) -> dict:
    """Every candidate at its *fixed* threshold (``thresholds``, from the choice) and SSIM (own render,
    :data:`SSIM_LABEL`) on a new labelled batch that took no part in the choice: metric rows for all items and
    per network kind."""
    items = _check_items(items, ("concept", "kind", "source"))
    answers = _check_answers(items, answers)
    _check_images(images, len(items))
    for k, t in checks.mapping(thresholds, "thresholds", 1).items():
        checks.choice(k, "thresholds (a kind)", (*semantic.CANDIDATE_KINDS, *VARIANTS))
        checks.real(t, f"thresholds[{k!r}]", -1, 1)
    keep = [j for j, a in enumerate(answers) if a in ("yes", "no")]
    items_l, labels = labelled(items, answers)
    imgs = images[keep]
    verdicts = {k: judge_scores(k, imgs, items_l) >= t for k, t in thresholds.items()}
    verdicts[SSIM_LABEL] = judge_scores("ssim", imgs, items_l) >= SSIM_THRESHOLD
    return {"n_labelled": len(items_l), "n_cant_tell": sum(a == "can't tell" for a in answers),
            "thresholds": dict(thresholds),
            "tables": {k: kind_rows(items_l, labels, v) for k, v in verdicts.items()}}


def self_agreement(relabel: Sequence[dict], first: dict[int, str], second: dict[int, str]) -> dict:
    """The labeller against themself: ``relabel`` items (``"of"``: the original item number), ``first`` and
    ``second`` answers ({item: 'y'|'n'|'?'}). Exact agreement over all three answers, and agreement and kappa
    over the items answered yes/no both times."""
    _check_items(relabel, ("of", "item"), "relabel")
    for name, d in (("first", first), ("second", second)):
        for n, a in checks.mapping(d, name).items():
            if a not in ("y", "n", "?"):
                raise ValueError(f"{name}[{n!r}] must be 'y', 'n' or '?', got {a!r}")
    pairs = [(first[it["of"]], second[it["item"]]) for it in relabel if it["of"] in first and it["item"] in second]
    both = [(a == "y", b == "y") for a, b in pairs if a != "?" and b != "?"]
    m = metrics([a for a, _ in both], [b for _, b in both])
    return {"n": len(pairs), "exact": float(np.mean([a == b for a, b in pairs])) if pairs else float("nan"),
            "n_yes_no_both": len(both), "agreement_yes_no": m["agreement"], "kappa_yes_no": m["kappa"]}


# -- a second labeller -------------------------------------------------------------------------------------
def with_intervals(labels: Sequence[bool], judge: Sequence[bool], n_boot: int = 2000, seed: int = 0) -> dict:
    """:func:`metrics` with 95% intervals: Wilson for the agreement and for the judge's recall on the
    labeller's yes items (``recall_yes``) and no items (``recall_no``); a seeded percentile bootstrap, resampling
    items within each class of ``labels``, for the balanced accuracy and kappa. NaN intervals where a class is
    missing."""
    h, j = checks.bools(labels, "labels"), checks.bools(judge, "judge")
    checks.same_length(h, j, "labels", "judge")
    n_boot = checks.integer(n_boot, "n_boot", 1)
    m = metrics(h, j)
    nan2 = [float("nan")] * 2
    m["agreement_ci"] = list(wilson(int((h == j).sum()), len(h))) if len(h) else nan2
    for name, cls in (("recall_yes", h), ("recall_no", ~h)):
        k, n = int((j[cls] == h[cls]).sum()), int(cls.sum())
        m[name], m[name + "_ci"] = (k / n, list(wilson(k, n))) if n else (float("nan"), nan2)
    if not (h.any() and (~h).any()):
        return m | {"balanced_ci": nan2, "kappa_ci": nan2}
    rng = np.random.default_rng(checks.seed(seed))
    yes, no = np.flatnonzero(h), np.flatnonzero(~h)
    draws = []
    for _ in range(n_boot):
        idx = np.concatenate([rng.choice(yes, len(yes)), rng.choice(no, len(no))])
        d = metrics(h[idx], j[idx])
        draws.append((d["balanced_accuracy"], d["kappa"]))
    draws = np.array(draws)
    q = lambda col: [float(np.nanquantile(draws[:, col], 0.025)),  # noqa: E731
                     float(np.nanquantile(draws[:, col], 0.975))]
    return m | {"balanced_ci": q(0), "kappa_ci": q(1)}


def labeller_rows(items: Sequence[dict], answers: Sequence[str | None], verdicts: Sequence[bool],
                  seed: int = 0) -> list[dict]:
    """A judge's ``verdicts`` on *every* item (can't tell included) against one labeller's ``answers``: per
    network kind ("all" first, then the kinds present in :data:`KIND_ORDER`) the answer counts, the judge's yes
    rate on the "can't tell" items, and :func:`with_intervals` on the items answered yes or no."""
    items = _check_items(items, ("kind",))
    answers = _check_answers(items, answers)
    v = checks.bools(verdicts, "verdicts", len(items))
    kinds = np.array([it["kind"] for it in items])
    a = np.array([str(x) for x in answers])
    rows = []
    for kind in ("all", *[k for k in KIND_ORDER if k in set(kinds.tolist())]):
        m = np.ones(len(items), bool) if kind == "all" else kinds == kind
        yn = m & np.isin(a, ("yes", "no"))
        ct = m & (a == "can't tell")
        rows.append({"network": kind, "items": int(m.sum()), "yes": int((m & (a == "yes")).sum()),
                     "no": int((m & (a == "no")).sum()), "cant_tell": int(ct.sum()),
                     "judge_yes_on_cant_tell": int(v[ct].sum())}
                    | with_intervals(a[yn] == "yes", v[yn], seed=seed))
    return rows


def answered(key_names: Sequence[str], identity: str | None = None) -> tuple[list[dict], list[str]]:
    """:func:`answered_items` over several keys in ``data/judge_cache/``, for the labeller ``identity``
    (default: the first labeller, :func:`compbook.cppn.audit.labelling.labeller_identity`)."""
    from . import labelling
    items, answers = [], []
    for k in checks.sequence(key_names, "key_names"):
        key = labelling.read_key(door.stored_path(f"judge_cache/{checks.safe_name(k, 'key_names')}"))
        got = labelling.answers_for(key, identity=identity)
        items += [it for it, x in zip(key, got) if x is not None]
        answers += [x for x in got if x is not None]
    return items, answers


def threshold_curve(scores, labels, kinds, grid_values: Sequence[float]) -> dict:
    """Balanced accuracy of ``scores >= t`` for each ``t`` of ``grid_values``, for all items and per kind."""
    scores = np.asarray(scores, dtype=float)
    labels = checks.bools(labels, "labels", len(scores))
    kinds = np.asarray(kinds)
    out = {}
    for kind in ("all", *[k for k in KIND_ORDER if k in set(kinds.tolist())]):
        m = np.ones(len(scores), bool) if kind == "all" else kinds == kind
        out[kind] = [metrics(labels[m], scores[m] >= t)["balanced_accuracy"] for t in grid_values]
    return out


def cross_labeller(first: tuple, second: tuple, kinds=("reference", "classifier", *VARIANTS), seed: int = 0,
                   names=("labeller 1", "labeller 2")) -> dict:
    """Choose on one labeller, validate on the other, each way round. ``first`` and ``second`` are
    ``(items, answers, images)``. Each direction: :func:`choose` on the choosing labeller (thresholds on its
    calibration half, the candidate on its held-out half), then every candidate at its threshold scored on
    *all* of the other labeller's items (:func:`labeller_rows`). Also per labeller: the reference judge's
    balanced accuracy at every threshold of its grid (:func:`threshold_curve`) and the best of them on all its
    yes/no items ("where the threshold would sit if this labeller alone chose it")."""
    names = [checks.non_empty_str(n, "names") for n in checks.sequence(names, "names", 2, 2)]
    batches = dict(zip(names, (first, second)))
    scores = {}
    for name, (items, answers, images) in batches.items():
        _check_answers(_check_items(items, ("concept", "kind", "source")), answers)
        _check_images(images, len(items))
        scores[name] = {k: judge_scores(k, images, items) for k in kinds}
    out = {"names": names, "split_seed": seed, "candidates": list(kinds), "directions": [], "curves": {}}
    for a, b in (names, names[::-1]):
        ch = choose(*batches[a], kinds=kinds, seed=seed)
        items_b, answers_b, _ = batches[b]
        val = {k: labeller_rows(items_b, answers_b, scores[b][k] >= t, seed) for k, t in ch["thresholds"].items()}
        out["directions"].append({"chosen_on": a, "validated_on": b, "thresholds": ch["thresholds"],
                                  "chosen": ch["chosen"], "n_choice": ch["n_labelled"],
                                  "choice_held_out": {k: v[:1] for k, v in ch["tables"].items()},
                                  "validation": val})
    for name, (items, answers, _) in batches.items():
        yn = [j for j, x in enumerate(answers) if x in ("yes", "no")]
        labels = np.array([answers[j] == "yes" for j in yn])
        s = scores[name]["reference"][yn]
        g = grid("reference")
        out["curves"][name] = {"grid": g, "balanced": threshold_curve(s, labels, [items[j]["kind"] for j in yn], g),
                               "best_all": best_threshold(s, labels, g)}
    return out


def answer_rows(items: Sequence[dict], answers: Sequence[str | None], by=("kind", "delta")) -> list[dict]:
    """One labeller's verdicts as scores: per group of ``by`` (item fields, or ``delta`` / ``perturbed`` from the
    question) the yes / no / can't tell counts, the score yes / all (can't tell counts as not yes, as the cache
    stores it) with its Wilson interval, and yes / (yes + no) with its Wilson interval."""
    items = _check_items(items, ("kind", "question"))
    answers = _check_answers(items, answers)
    fields = checks.sequence(by, "by")
    groups: dict = {}
    for it, a in zip(items, answers):
        if a is None:
            continue
        q = it["question"]
        key = tuple(q["delta"] if f == "delta" else q["weight"] is not None if f == "perturbed" else it[f]
                    for f in fields)
        groups.setdefault(key, []).append(a)
    rows = []
    for key in sorted(groups, key=lambda k: tuple((KIND_ORDER.index(x) if x in KIND_ORDER else 9, str(x))
                                                  if isinstance(x, str) else (0, x) for x in k)):
        g = groups[key]
        y, n, c = g.count("yes"), g.count("no"), g.count("can't tell")
        rows.append(dict(zip(fields, key)) | {
            "n": len(g), "yes": y, "no": n, "cant_tell": c, "score": y / len(g), "ci95": list(wilson(y, len(g))),
            "yes_of_yes_no": y / (y + n) if y + n else float("nan"),
            "ci95_yes_no": list(wilson(y, y + n)) if y + n else [float("nan")] * 2})
    return rows


def pairwise(first: Sequence[str | None], second: Sequence[str | None]) -> dict:
    """Two labellers on the same items (answers "yes", "no", "can't tell"; None: not answered, left out).

    ``n``: items both answered; ``exact`` (with ``exact_ci``, Wilson 95%): the share given the same one of the
    three answers; on the ``n_yes_no`` items both answered yes or no, ``agreement_yes_no`` (Wilson) and Cohen's
    ``kappa_yes_no``; per labeller (``first``, ``second``) the answer counts and ``yes_rate``: yes of all ``n``
    (can't tell counts as not yes, as the cache stores it), with its Wilson interval; ``table``: the 3x3 counts
    (row: first's answer, column: second's)."""
    first, second = checks.sequence(first, "first", 0), checks.sequence(second, "second", 0)
    checks.same_length(first, second, "first", "second")
    for name, seq in (("first", first), ("second", second)):
        for i, a in enumerate(seq):
            if a not in ANSWER_VALUES:
                raise ValueError(f"{name}[{i}] must be one of {ANSWER_VALUES}, got {a!r}")
    pairs = [(a, b) for a, b in zip(first, second) if a is not None and b is not None]
    n = len(pairs)
    nan2 = [float("nan")] * 2
    same = sum(a == b for a, b in pairs)
    both = [(a == "yes", b == "yes") for a, b in pairs if a != "can't tell" and b != "can't tell"]
    m = metrics([a for a, _ in both], [b for _, b in both])
    k_yn = sum(a == b for a, b in both)
    out = {"n": n, "exact": same / n if n else float("nan"), "exact_ci": list(wilson(same, n)) if n else nan2,
           "n_yes_no": len(both), "agreement_yes_no": m["agreement"],
           "agreement_yes_no_ci": list(wilson(k_yn, len(both))) if both else nan2, "kappa_yes_no": m["kappa"]}
    for name, col in (("first", 0), ("second", 1)):
        got = [p[col] for p in pairs]
        y = got.count("yes")
        out[name] = {"yes": y, "no": got.count("no"), "cant_tell": got.count("can't tell"),
                     "yes_rate": y / n if n else float("nan"), "yes_rate_ci": list(wilson(y, n)) if n else nan2}
    names = ("yes", "no", "can't tell")
    out["table"] = [[sum(p == (r, c) for p in pairs) for c in names] for r in names]
    return out


def reweighted_yes(original: Sequence[str], other: Sequence[str | None], batch_counts: dict) -> float:
    """How often labeller ``other`` would say yes on a whole batch, from a sample drawn per answer of the
    ``original`` labeller: the mean over answers ``a`` of ``other``'s yes rate on the sampled items answered
    ``a``, weighted by ``batch_counts[a]`` (how many items of the batch the original labeller answered ``a``).
    A point estimate (NaN where an answer with batch items has no sampled item ``other`` answered)."""
    original = checks.sequence(original, "original", 0)
    checks.same_length(original, other, "original", "other")
    _check_answers(original, original)
    _check_answers(original, other)
    counts = {a: checks.integer(k, f"batch_counts[{a!r}]", 0)
              for a, k in checks.mapping(batch_counts, "batch_counts", 1).items()}
    total, acc = sum(counts.values()), 0.0
    if total == 0:
        raise ValueError("batch_counts must count at least one item")
    for a, k in counts.items():
        got = [o == "yes" for x, o in zip(original, other) if x == a and o is not None]
        if k and not got:
            return float("nan")
        acc += k * (float(np.mean(got)) if got else 0.0)
    return acc / total
