"""How well a CPU judge agrees with blind human verdicts (chapter 5, issue 11).

Items are the labelling key's (:mod:`compbook.cppn.labelling`); "can't tell" answers are left out. The items are cut,
seeded and stratified by concept and network kind, into a *calibration* half (each candidate's threshold is the
one with the best balanced accuracy there) and a *held-out* half (the default judge is the candidate with the best
held-out balanced accuracy, ties broken by Cohen's kappa). ``python -m compbook.cppn semantic choose`` does it and
writes ``data/semantic/choice.json``; no Picbreeder-vs-SGD score enters the choice.
"""

from __future__ import annotations

import json

from typing import Sequence

import numpy as np
import torch

from .. import checks
from ..stats import wilson  # noqa: F401 (re-exported: agreement.wilson)
from .judges import semantic

THRESHOLD_GRID = {"reference": np.round(np.arange(0.05, 0.96, 0.025), 3).tolist(),
                  "classifier": np.round(np.arange(0.05, 0.96, 0.05), 3).tolist()}
assert THRESHOLD_GRID == semantic.THRESHOLD_GRID   # one grid: read_choice checks stored thresholds against it


def metrics(human: Sequence[bool], judge: Sequence[bool]) -> dict:
    """Agreement, balanced accuracy (mean of the judge's recall on human-yes and human-no items) and Cohen's
    kappa of two bool sequences; ``n``, and the human "yes" rate. NaN where a class is missing."""
    h, j = checks.bools(human, "human"), checks.bools(judge, "judge")
    checks.same_length(h, j, "human", "judge")
    n = len(h)
    if n == 0:
        return {"n": 0, "agreement": float("nan"), "balanced_accuracy": float("nan"), "kappa": float("nan"),
                "human_yes": float("nan")}
    agree = float((h == j).mean())
    tpr = float(j[h].mean()) if h.any() else float("nan")
    tnr = float((~j[~h]).mean()) if (~h).any() else float("nan")
    pe = h.mean() * j.mean() + (1 - h.mean()) * (1 - j.mean())
    kappa = float((agree - pe) / (1 - pe)) if pe < 1 else float("nan")
    return {"n": n, "agreement": agree, "balanced_accuracy": (tpr + tnr) / 2, "kappa": kappa,
            "human_yes": float(h.mean())}


def split(items: Sequence[dict], seed: int = 0) -> np.ndarray:
    """Bool ``(N,)``: True for the held-out half, stratified by (concept, kind), seeded."""
    _check_items(items, ("concept", "kind"))
    rng = np.random.default_rng(checks.integer(seed, "seed", 0))
    held = np.zeros(len(items), dtype=bool)
    groups: dict = {}
    for j, it in enumerate(items):
        groups.setdefault((it["concept"], it["kind"]), []).append(j)
    for key in sorted(groups):
        idx = rng.permutation(groups[key])
        held[idx[: len(idx) // 2]] = True
    return held


ANSWERS = ("yes", "no", "can't tell", None)


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
        if a not in ANSWERS:
            raise ValueError(f"answers[{i}] must be one of {ANSWERS}, got {a!r}")
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


def judge_scores(kind: str, images: torch.Tensor, items: Sequence[dict]) -> np.ndarray:
    """Each item's continuous score under candidate ``kind`` (``"reference"``, ``"classifier"``, ``"ssim"``:
    SSIM against the item's own network's unperturbed render, which the key's ``source`` rebuilds)."""
    from . import labelling
    checks.choice(kind, "kind", ("reference", "classifier", "ssim"))
    items = _check_items(items, ("concept", "source"))
    _check_images(images, len(items))
    out = np.zeros(len(items))
    for c in sorted({it["concept"] for it in items}):
        idx = [j for j, it in enumerate(items) if it["concept"] == c]
        if kind == "reference":
            out[idx] = semantic.reference_scores(images[idx], c).numpy()
        elif kind == "classifier":
            out[idx] = semantic.ClassifierJudge().scores(images[idx], c).numpy()
        elif kind == "ssim":
            from .judges import ssim_scores
            for src in sorted({items[j]["source"] for j in idx}):
                sub = [j for j in idx if items[j]["source"] == src]
                with torch.no_grad():
                    ref = labelling.load_network(src).render(labelling.RES)
                out[sub] = ssim_scores(images[sub], ref).numpy()
        else:
            raise ValueError(f"kind must be 'reference', 'classifier' or 'ssim', got {kind!r}")
    return out


def best_threshold(scores: np.ndarray, human: np.ndarray, grid: Sequence[float]) -> float:
    """The grid threshold with the best balanced accuracy of ``scores >= t`` against ``human`` (first on ties)."""
    scores = checks.reals(scores, "scores", ndim=1)
    human = checks.bools(human, "human", len(scores))
    grid = [checks.real(t, f"grid[{i}]") for i, t in enumerate(checks.sequence(grid, "grid"))]
    ba = [metrics(human, scores >= t)["balanced_accuracy"] for t in grid]
    return float(grid[int(np.nanargmax(ba))])


def kind_rows(items, human, verdicts, mask=None) -> list[dict]:
    """Metrics rows over the ``mask``ed items (default all): all network kinds together, then each kind."""
    kinds = np.array([it["kind"] for it in _check_items(items, ("kind",))])
    human = checks.bools(human, "human", len(kinds))
    verdicts = checks.bools(verdicts, "verdicts", len(kinds))
    mask = np.ones(len(kinds), dtype=bool) if mask is None else checks.bools(mask, "mask", len(kinds))
    rows = []
    for kind in ("all", "picbreeder", "sgd"):
        m = mask & ((kinds == kind) if kind != "all" else True)
        rows.append({"network": kind} | metrics(human[m], verdicts[m]))
    return rows


def table(items, human, verdicts, held) -> list[dict]:
    """Metrics rows: all items and per network kind, on the held-out half and on everything."""
    held = checks.bools(held, "held", len(items))
    return [{"split": part} | r for part, mask in (("held-out", held), ("all", np.ones_like(held)))
            for r in kind_rows(items, human, verdicts, mask)]


def choose(items: Sequence[dict], answers: Sequence[str | None], images: torch.Tensor,
           kinds=("reference", "classifier"), seed: int = 0) -> dict:
    """Thresholds on the calibration half, then the default by held-out balanced accuracy (kappa on ties).

    ``images`` ``(N, 64, 64, 3)`` are the items' renders. SSIM (own render, threshold 0.5 as documented) is
    reported beside them but is not a candidate: it does not answer "is this a <concept>?".
    """
    items = _check_items(items, ("concept", "kind", "source"))
    answers = _check_answers(items, answers)
    _check_images(images, len(items))
    seed = checks.integer(seed, "seed", 0)
    for k in checks.sequence(kinds, "kinds"):
        checks.choice(k, "kinds", semantic.KINDS)
    keep = [j for j, a in enumerate(answers) if a in ("yes", "no")]
    items_l, human = labelled(items, answers)
    imgs = images[keep]
    held = split(items_l, seed)
    out = {"n_labelled": len(items_l), "n_cant_tell": sum(a == "can't tell" for a in answers),
           "thresholds": {}, "tables": {}, "split_seed": seed}
    scores = {k: judge_scores(k, imgs, items_l) for k in (*kinds, "ssim")}
    for k in kinds:
        t = best_threshold(scores[k][~held], human[~held], THRESHOLD_GRID[k])
        out["thresholds"][k] = t
        out["tables"][k] = table(items_l, human, scores[k] >= t, held)
    out["tables"]["ssim (own render, 0.5)"] = table(items_l, human, scores["ssim"] >= 0.5, held)
    held_rows = {k: out["tables"][k][0] for k in kinds}
    out["chosen"] = max(kinds, key=lambda k: (held_rows[k]["balanced_accuracy"], held_rows[k]["kappa"]))
    out["rule"] = ("candidate with the best held-out balanced accuracy (ties: kappa); thresholds: best "
                   "balanced accuracy on the calibration half")
    return out


def answered_items(key_name: str) -> tuple[list[dict], list[str]]:
    """The items of a key in ``data/judge_cache/`` that have a stored human answer, and those answers."""
    from . import labelling
    from ..paths import data_dir
    checks.safe_name(key_name, "key_name")
    key = labelling.read_key(data_dir() / "judge_cache" / key_name)
    answers = labelling.answers_for(key)
    have = [j for j, a in enumerate(answers) if a is not None]
    return [key[j] for j in have], [answers[j] for j in have]


def validate(items: Sequence[dict], answers: Sequence[str | None], images: torch.Tensor,
             thresholds: dict) -> dict:
    """Every candidate at its *fixed* threshold (``thresholds``, from the choice) and SSIM (own render, 0.5) on
    a new labelled batch that took no part in the choice: metric rows for all items and per network kind."""
    items = _check_items(items, ("concept", "kind", "source"))
    answers = _check_answers(items, answers)
    _check_images(images, len(items))
    for k, t in checks.mapping(thresholds, "thresholds", 1).items():
        checks.choice(k, "thresholds (a kind)", semantic.KINDS)
        checks.real(t, f"thresholds[{k!r}]", -1, 1)
    keep = [j for j, a in enumerate(answers) if a in ("yes", "no")]
    items_l, human = labelled(items, answers)
    imgs = images[keep]
    verdicts = {k: judge_scores(k, imgs, items_l) >= t for k, t in thresholds.items()}
    verdicts["ssim (own render, 0.5)"] = judge_scores("ssim", imgs, items_l) >= 0.5
    return {"n_labelled": len(items_l), "n_cant_tell": sum(a == "can't tell" for a in answers),
            "thresholds": dict(thresholds),
            "tables": {k: kind_rows(items_l, human, v) for k, v in verdicts.items()}}


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
