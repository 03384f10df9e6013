"""Part A's claims table: each claim of paper A, reproduced / not reproduced / inconclusive (``notes_part_a_claims``).

Numbers come from files a command in this repository wrote, never typed by hand:

- ``data/emc2/reread.json`` (``python -m compbook.cppn reread``): chapter 5, Picbreeder against the SGD twins;
- ``data/emc2/partA_reread.json`` (``python -m compbook.cppn experiments --write``): chapters 3-4 (theory checks)
  and 6-9 (pruning, depth, optimizer, unknown targets), in CPU mode with more seeds than a chapter runs live.

The verdict rule (:func:`compbook.stats.verdict`, shared with Part C's claims table) is our choice and a
parameter (:data:`RULES`): with ``"separated"`` (the default) a claim that
one score exceeds another is *reproduced* when the paper's direction holds and the two 95% intervals do not
overlap, *not reproduced* when the opposite direction holds with non-overlapping intervals, and *inconclusive*
when they overlap. ``"point"`` reads only the point estimates (no noise allowance: a weaker rule, for
comparison). A claim about a value (``"scores 0"``) compares the interval with the value plus a tolerance.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from ... import checks, results
from ..paper import figure
from .reread import LABELLER_ROWS
from .tables import pick
# the verdict rule is the book's (compbook.stats.verdict, shared with Part C); re-exported here
from ...stats import (
    DIRECTIONS, INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED, RULES, fmt, interval_of as _interval, mean_ci,
    pooled_draws, verdict
)
from ...results import door


def verdict_zero(row, tolerance: float = 0.02, rule: str = "separated") -> str:
    """The paper says the score is its baselines' (``paper.figure("baseline_score")``, 0): reproduced when the
    row's upper bound is at most that plus ``tolerance`` (our choice), not reproduced when its lower bound is
    above it; else inconclusive (``rule="point"``: the score)."""
    tolerance = checks.real(tolerance, "tolerance", 0, 1)
    rule = checks.choice(rule, "rule", RULES)
    s, lo, hi = _interval(row, "row")
    bar = figure("baseline_score") + tolerance
    if rule == "point":
        return REPRODUCED if s <= bar else NOT_REPRODUCED
    return REPRODUCED if hi <= bar else NOT_REPRODUCED if lo > bar else INCONCLUSIVE


def probability_verdict(p: float, level: float = 0.95, rule: str = "separated") -> str:
    """A bootstrap probability ``p`` that the paper's direction holds: reproduced when ``p >= (1 + level) / 2``,
    not reproduced when ``p <= (1 - level) / 2``, else inconclusive (``rule="point"``: ``p`` against 0.5)."""
    p = checks.real(p, "p", 0, 1)
    level = checks.real(level, "level", 0, 1, low_open=True, high_open=True)
    rule = checks.choice(rule, "rule", RULES)
    if rule == "point":
        return REPRODUCED if p > 0.5 else NOT_REPRODUCED if p < 0.5 else INCONCLUSIVE
    return REPRODUCED if p >= (1 + level) / 2 else NOT_REPRODUCED if p <= (1 - level) / 2 else INCONCLUSIVE


def difference(a: dict, b: dict, n_boot: int = 4000, seed: int = 0) -> dict:
    """``a - b`` of two stored score rows (with per-network counts ``k_n``), with a bootstrap 95% interval
    (networks, then weights, drawn independently for ``a`` and ``b``)."""
    from ..panel import groups_from_counts
    n_boot = checks.integer(n_boot, "n_boot", 2)
    seed = checks.seed(seed)
    draws = []
    for j, row in enumerate((a, b)):
        if not isinstance(row, dict) or "k_n" not in row:
            raise ValueError(f"{'ab'[j]} must be a stored row with 'k_n', got {row!r:.80}")
        checks.sequence(row["k_n"], f"{'ab'[j]}['k_n']")
        checks.real(row.get("score"), f"{'ab'[j]}['score']")
    groups = [groups_from_counts(row["k_n"]) for row in (a, b)]      # each refused by its own estimate
    held = sum(x.nbytes + 128.0 for g in groups for x in g)
    # the verdicts, pooled_draws' five (n_boot, G) arrays of 8 bytes, and the draws and their difference
    checks.check_budget(held + 8.0 * n_boot * (5 * max(len(g) for g in groups) + 3), f"difference: n_boot={n_boot}")
    for j, g in enumerate(groups):
        draws.append(pooled_draws([x.mean() for x in g], [len(x) for x in g], n_boot, np.random.default_rng(seed + j)))
    d = draws[0] - draws[1]
    return {"score": float(a["score"] - b["score"]),
            "ci95": [float(np.quantile(d, 0.025)), float(np.quantile(d, 0.975))]}


# -- reading the stored files -------------------------------------------------------------------------------------
def judge_kind(name: str, chosen: str) -> str | None:
    """``"default"``, ``"ssim"`` or the model labeller's row name (:data:`compbook.cppn.audit.reread.LABELLER_ROWS`)
    for a judge name of ``reread.json`` (None: another judge, or the labeller's rows on the earlier twins)."""
    checks.non_empty_str(name, "name")
    checks.non_empty_str(chosen, "chosen")
    if name.startswith(LABELLER_ROWS):
        return LABELLER_ROWS
    if name.startswith("ssim"):
        return "ssim"
    return "default" if name.split(" ")[0] == chosen else None


def drew_concept(row: dict) -> bool:
    """Did every network of a ``reread.json`` row draw its concept before any weight moved, for that judge?
    (``row["unperturbed"]`` ``[k, n]``: k of its n networks' own renders accepted; a row without it counts as
    yes; with ``n = 0``, no network's render was judged: yes.)"""
    checks.mapping(row, "row")
    kn = checks.integers(row.get("unperturbed", (0, 0)), "row['unperturbed']", 0, ndim=1)
    if len(kn) != 2 or kn[0] > kn[1]:
        raise ValueError(f"row['unperturbed'] must be [k, n] with 0 <= k <= n, got {row['unperturbed']!r}")
    return int(kn[0]) == int(kn[1])


def chapter5_claims(reread: dict, rule: str = "separated", require_drawn: bool = True) -> list[dict]:
    """Picbreeder above the SGD twins, per concept and delta, under each judge of ``reread.json``.

    ``require_drawn`` (our choice, the default): a comparison in which some network's own unperturbed render
    already fails the judge (:func:`drew_concept`) is *inconclusive* whatever the scores: "still a skull after
    the perturbation" means little for a network that did not draw one. The row says which side failed."""
    checks.boolean(require_drawn, "require_drawn")
    rule = checks.choice(rule, "rule", RULES)
    checks.mapping(reread, "reread")
    for key in ("chosen", "rows"):
        if key not in reread:
            raise ValueError(f"reread: no {key!r} key (is it data/emc2/reread.json?)")
    for i, r in enumerate(checks.sequence(reread["rows"], "reread['rows']", 0)):
        if not isinstance(r, dict) or not all(k in r for k in ("judge", "concept", "delta", "network", "n")):
            raise ValueError(f"reread['rows'][{i}] must be a row with judge, concept, delta, network and n, "
                             f"got {r!r:.80}")
        checks.non_empty_str(r["judge"], f"reread['rows'][{i}]['judge']")
    out = []
    rows = [r | {"kind": judge_kind(r["judge"], reread["chosen"])} for r in reread["rows"]]
    for c in sorted({r["concept"] for r in rows}):
        for d in sorted({r["delta"] for r in rows if r["concept"] == c}):
            for kind in ("default", "ssim", LABELLER_ROWS):
                pair = {r["network"]: r for r in rows if r["concept"] == c and r["delta"] == d
                        and r["kind"] == kind and r["n"] > 0}
                if set(pair) != {"picbreeder", "sgd"}:
                    continue
                pb, sgd = pair["picbreeder"], pair["sgd"]
                result, numbers = verdict(pb, sgd, "greater", rule), f"{fmt(pb)} vs {fmt(sgd)}"
                failed = [f"{name} drew {r['unperturbed'][0]}/{r['unperturbed'][1]}" for name, r in
                          (("Picbreeder", pb), ("twins", sgd)) if not drew_concept(r)]
                if failed:
                    numbers += f"; {', '.join(failed)}"
                    result = INCONCLUSIVE if require_drawn else result
                out.append(_claim(f"Picbreeder {c} above its SGD twins (delta {d:g})", 5, kind, numbers, result))
    return out


def _claim(claim, chapter, judge, numbers, result) -> dict:
    return {"claim": claim, "chapter": chapter, "judge": judge, "this run": numbers, "verdict": result}


def chapter6_claims(ch6: dict, rule: str = "separated", tolerance: float = 0.02) -> list[dict]:
    """SP above every baseline; the paper's baselines score 0 (the baselines ``ch6["rows"]`` holds: FER's
    networks have no Lottery Ticket, :func:`fer_claims`)."""
    rule = checks.choice(rule, "rule", RULES)
    tolerance = checks.real(tolerance, "tolerance", 0, 1)
    _need(ch6, "ch6", "rows")
    out = []
    names = {r["name"] for r in ch6["rows"]}
    for j in ("default", "ssim"):
        sp = pick(ch6["rows"], name="SP", judge=j)
        for m in (m for m in ("magnitude", "wanda", "structured (Taylor)", "lottery ticket", "random") if m in names):
            row = pick(ch6["rows"], name=m, judge=j)
            out.append(_claim(f"SP above {m} (matched sparsity)", 6, j, f"{fmt(sp)} vs {fmt(row)}",
                              verdict(sp, row, "greater", rule)))
        base = [pick(ch6["rows"], name=m, judge=j) for m in ("magnitude", "wanda", "structured (Taylor)",
                                                              "lottery ticket") if m in names]
        top = max(base, key=lambda r: r["ci95"][0])
        out.append(_claim("the paper's baselines score 0", 6, j, f"highest: {top['name']} {fmt(top)}",
                          verdict_zero(top, tolerance, rule)))
    return out


def _peak_above_edges(iv: list[dict], rule: str) -> tuple[str, str]:
    inner = max(iv[1:-1], key=lambda r: r["score"])
    edge = max((iv[0], iv[-1]), key=lambda r: r["score"])
    return (f"depth {inner['depth']} {fmt(inner)} vs depth {edge['depth']} {fmt(edge)}",
            verdict(inner, edge, "greater", rule))


def _need(d, name: str, *keys) -> dict:
    checks.mapping(d, name)
    missing = [k for k in keys if k not in d]
    if missing:
        raise ValueError(f"{name}: no {missing} (run python -m compbook.cppn experiments --write)")
    return d


def _frequencies(freq, name: str) -> dict[int, float]:
    """``freq`` (depth -> share) as ``{int: float}``: depths integers >= 1, shares in [0, 1] adding up to 1."""
    checks.mapping(freq, name, 1)
    out = {}
    for k, v in freq.items():
        d = int(checks.integers(k if not isinstance(k, str) else (int(k) if k.strip().isdigit() else k),
                                f"{name} (a depth)", 1, ndim=0))
        out[d] = checks.real(v, f"{name}[{k!r}]", 0, 1)
    if abs(sum(out.values()) - 1) > 1e-6:
        raise ValueError(f"{name}: shares must add up to 1, got {sum(out.values()):.6g}")
    return out


def p_shallower(freq_a: dict, freq_b: dict) -> float:
    """P(peak of a < peak of b) when each is drawn from its bootstrap peak frequencies (depth -> share)."""
    fa = _frequencies(freq_a, "freq_a")
    fb = _frequencies(freq_b, "freq_b")
    return float(sum(pa * pb for da, pa in fa.items() for db, pb in fb.items() if da < db))


def peak_set(freq: dict, level: float = 0.95) -> list[int]:
    """The most frequent bootstrap peaks (depth -> share) whose shares add up to at least ``level``."""
    level = checks.real(level, "level", 0, 1, low_open=True)
    freq = _frequencies(freq, "freq")
    out, total = [], 0.0
    for d, f in sorted(((int(k), v) for k, v in freq.items()), key=lambda kv: (-kv[1], kv[0])):
        if total >= level:
            break
        out.append(d)
        total += f
    return sorted(out)


def near_depths(predicted: int, depths: Sequence[int]) -> list[int]:
    """The swept depths that stand for a predicted depth (chapter 7): ``[predicted]`` if it was swept, else
    the two swept depths around it. A prediction outside ``depths`` (ints >= 1, shape ``(D,)``) is a
    ValueError: no swept depth stands for it."""
    predicted = checks.integer(predicted, "predicted")
    d = sorted(int(x) for x in checks.integers(depths, "depths", 1, ndim=1))
    if not d or not d[0] <= predicted <= d[-1]:
        raise ValueError(f"predicted must lie within depths {d}, got {predicted}")
    if predicted in d:
        return [predicted]
    return [max(x for x in d if x < predicted), min(x for x in d if x > predicted)]


def verdict_grid(verdicts: Sequence[dict], names: dict | None = None):
    """Verdict rows (``claim``, ``judge``, ``verdict``; a ``chapterN_claims`` list) as a table: one row per
    claim in reading order, one column per judge, renamed by ``names`` (judge -> column name)."""
    import pandas as pd
    checks.sequence(verdicts, "verdicts", 1)
    for r in verdicts:
        if not isinstance(r, dict) or not {"claim", "judge", "verdict"} <= set(r):
            raise ValueError(f"verdicts: each needs claim, judge and verdict, got {r!r:.80}")
    order = list(dict.fromkeys(r["claim"] for r in verdicts))
    judges = list(dict.fromkeys(r["judge"] for r in verdicts))
    grid = pd.DataFrame(verdicts).pivot(index="claim", columns="judge", values="verdict")
    grid = grid.reindex(index=order, columns=judges).rename_axis(index=None, columns=None)
    return grid.rename(columns=names or {})


def predictor_verdict(predicted: int, peaks: Sequence[int], depths: Sequence[int]) -> str:
    """The PNG line's depth against the 95% set of bootstrap peaks (:func:`peak_set`) of a sweep over
    ``depths`` (our rule). A prediction outside the swept range cannot be tested: inconclusive. Inside, it
    stands for the swept depths next to it (itself, or the two around it): reproduced when the set holds
    nothing else, not reproduced when the set holds none of them, else inconclusive."""
    predicted = checks.integer(predicted, "predicted")
    peaks = [int(x) for x in checks.integers(peaks, "peaks", 1, ndim=1)]
    depths = [int(x) for x in checks.integers(depths, "depths", 1, ndim=1)]
    if not peaks or not depths or not set(peaks) <= set(depths):
        raise ValueError(f"peaks must be a non-empty subset of depths, got {list(peaks)} and {list(depths)}")
    d = sorted(depths)
    if not d[0] <= predicted <= d[-1]:
        return INCONCLUSIVE
    near = set(near_depths(predicted, d))
    if set(peaks) <= near:
        return REPRODUCED
    return NOT_REPRODUCED if not set(peaks) & near else INCONCLUSIVE


def chapter7_claims(ch7: dict, rule: str = "separated") -> list[dict]:
    """A peak inside the depth range; the simpler target (higher PNG ratio) peaks shallower; the PNG line
    (:data:`compbook.cppn.depth.DEFAULT_LINE`) predicts the peak."""
    from ..depth import DEFAULT_LINE
    rule = checks.choice(rule, "rule", RULES)
    _need(ch7, "ch7", "targets")
    out = []
    t = ch7["targets"]
    for j in ("default", "ssim"):
        for n, tg in t.items():
            numbers, v = _peak_above_edges(tg["intervals"][j], rule)
            out.append(_claim(f"{n}: score peaks inside the depth range", 7, j, numbers, v))
        for n, tg in t.items():
            pred = max(1, int(round(float(DEFAULT_LINE(tg["ratio"])))))
            peaks = peak_set(tg["peak_frequencies"][j])
            depths = [r["depth"] for r in tg["intervals"][j]]
            out.append(_claim(f"{n}: the PNG depth line predicts the peak", 7, j,
                              f"line {pred}; 95% of peaks in {peaks}", predictor_verdict(pred, peaks, depths)))
        if len(t) >= 2:
            simple, hard = sorted(t, key=lambda n: -t[n]["ratio"])[:2]
            p = p_shallower(t[simple]["peak_frequencies"][j], t[hard]["peak_frequencies"][j])
            out.append(_claim(f"{simple} (simpler) peaks shallower than {hard}", 7, j,
                              f"peaks {t[simple]['peak'][j]} vs {t[hard]['peak'][j]}; P = {p:.2f}",
                              probability_verdict(p, rule=rule)))
    return out


def chapter8_claims(ch8: dict, rule: str = "separated") -> list[dict]:
    """Muon: lower loss and a higher score than Adam."""
    rule = checks.choice(rule, "rule", RULES)
    _need(ch8, "ch8", "mse", "rows")
    mu, ad = mean_ci(ch8["mse"]["muon"]), mean_ci(ch8["mse"]["adam"])
    four = lambda r: f"{r['score']:.4f} [{r['ci95'][0]:.4f}, {r['ci95'][1]:.4f}]"   # noqa: E731
    out = [_claim("Muon reaches a lower loss than Adam", 8, "(MSE)", f"{four(mu)} vs {four(ad)}",
                  verdict(mu, ad, "less", rule))]
    for j in ("default", "ssim"):
        m, a = pick(ch8["rows"], name="muon", judge=j), pick(ch8["rows"], name="adam", judge=j)
        out.append(_claim("Muon scores higher than Adam", 8, j, f"{fmt(m)} vs {fmt(a)}",
                          verdict(m, a, "greater", rule)))
    return out


def chapter9_claims(ch9: dict, rule: str = "separated") -> list[dict]:
    """SP raises the score on unknown targets; less so for the two-object scene."""
    rule = checks.choice(rule, "rule", RULES)
    _need(ch9, "ch9", "targets")
    out = []
    t = ch9["targets"]
    single = [n for n in t if n not in ("butterfly + apple", "butterfly", "apple")]
    for j in ("default", "ssim"):
        for n in single + ["butterfly + apple"]:
            sp, de = pick(t[n]["rows"], name="SP", judge=j), pick(t[n]["rows"], name="dense", judge=j)
            out.append(_claim(f"{n}: SP above dense", 9, j, f"{fmt(sp)} vs {fmt(de)}",
                              verdict(sp, de, "greater", rule)))
        gains = {n: difference(pick(t[n]["rows"], name="SP", judge=j), pick(t[n]["rows"], name="dense", judge=j))
                 for n in single + ["butterfly + apple"]}
        best = max(single, key=lambda n: gains[n]["ci95"][0])
        out.append(_claim("SP's gain smaller for the two-object scene", 9, j,
                          f"gain {fmt(gains['butterfly + apple'])} vs {best} {fmt(gains[best])}",
                          verdict(gains["butterfly + apple"], gains[best], "less", rule)))
    return out


def theory_claims(theory: dict) -> list[dict]:
    """Chapters 3-4: exact checks of the book's model of rho and of the Welch bound (no noise)."""
    _need(theory, "theory", "welch", "volume")
    w, v = theory["welch"], theory["volume"]
    return [
        _claim("rho peaks at (W_min, L*) for the skull", 3, "(model)",
               f"argmax {tuple(v['argmax'])}, (W_min, L*) = {tuple(v['sweet_spot'])}",
               REPRODUCED if v["argmax"] == v["sweet_spot"] else NOT_REPRODUCED),
        _claim("rho decays exponentially in W and L", 3, "(model)",
               f"log10 steps: W {v['step_W']:.2f}, L {v['step_L']:.2f}",
               REPRODUCED if v["step_W"] < 0 and v["step_L"] < 0 and v["constant_steps"] else NOT_REPRODUCED),
        _claim("Welch bound: coherence >= bound for every frame", 4, "(exact)",
               f"min gap {w['min_gap']:.1e} over {w['frames']} frames", REPRODUCED if w["min_gap"] >= -1e-9
               else NOT_REPRODUCED),
        _claim("Welch bound: ETFs meet it", 4, "(exact)", f"max gap {w['etf_gap']:.1e}",
               REPRODUCED if w["etf_gap"] < 1e-6 else NOT_REPRODUCED),
    ]


def counting_claims(counted: dict, rule: str = "separated") -> list[dict]:
    """Picbreeder above FER's own SGD networks (the paper's SGD side), under every counting rule and delta policy
    of ``counted`` (``data/emc2/counting.json``, :mod:`compbook.cppn.audit.counting`) and each of its judges: pooled
    scores over the networks of each kind with their 95% intervals (chapter 5, re-read in notes_part_a_claims)."""
    from . import counting
    rule = checks.choice(rule, "rule", RULES)
    checks.mapping(counted, "counted")
    kinds = counting.table(counted, "kind")
    out = []
    for (r, policy, judge), g in kinds.groupby(["rule", "policy", "judge"], sort=False):
        by = {row.kind: {"score": row.score, "ci95": [row.lo, row.hi]} for row in g.itertuples()}
        if not {"picbreeder", "fer"} <= set(by):
            continue
        pb, fer = by["picbreeder"], by["fer"]
        kind = "default" if judge.startswith("default") else judge
        out.append(_claim(f"Picbreeder above FER's SGD networks (weights: {r}, delta: {policy})", 5, kind,
                          f"{fmt(pb)} vs {fmt(fer)}", verdict(pb, fer, "greater", rule)))
    return out


def labeller_claims(labelled: dict, rule: str = "separated") -> list[dict]:
    """Picbreeder above FER's SGD networks and above the FER-architecture twins, per delta, on the blind verdicts
    of the second labeller (``data/semantic/validation_batch3.json``, ``python -m compbook.cppn semantic
    second``; chapter 5): the share of perturbed renders still called the concept, Wilson 95% intervals over all
    items (a "can't tell" counts as no)."""
    rule = checks.choice(rule, "rule", RULES)
    verdicts = checks.mapping(labelled, "labelled").get("verdicts")
    rows = verdicts.get("kind_delta") if isinstance(verdicts, dict) else None
    if not isinstance(rows, list):
        raise ValueError("labelled: expected a stored run with ['verdicts']['kind_delta'] rows (python -m "
                         f"compbook.cppn semantic second), got keys {sorted(labelled)[:8]}")
    by = {}
    for r in rows:
        name = "labelled['verdicts']['kind_delta'] row"
        if not isinstance(r, dict) or not {"kind", "delta", "score", "ci95"} <= set(r):
            raise ValueError(f"{name}: expected a dict with kind, delta, score, ci95, got {r!r:.80}")
        by[(r["kind"], float(r["delta"]))] = r
    out = []
    for other, name in (("fer", "FER's SGD networks"), ("fertwin", "FER twins")):
        for delta in sorted(d for k, d in by if k == "picbreeder" and d > 0):
            if (other, delta) not in by:
                continue
            pb, sg = by[("picbreeder", delta)], by[(other, delta)]
            out.append(_claim(f"Picbreeder above {name} (delta {delta:g})", 5, SECOND_LABELLER_ROWS,
                              f"{fmt(pb)} vs {fmt(sg)}", verdict(pb, sg, "greater", rule)))
    return out


def load_labelled() -> dict:
    """The second labeller's stored validation run, ``data/semantic/validation_batch3.json``."""
    return results.json_file(door.stored_path("semantic/validation_batch3.json"), "stored validation")


#: How the rows of :func:`fer_claims` begin (notes_part_a_claims counts them apart).
#: the judge name of the claims read off the second model labeller's verdicts (FER's networks, chapter 5)
SECOND_LABELLER_ROWS = "model labeller 2"
FER_LABELS = {"fer": "FER's networks", "fertwin": "FER twins", "8fer": "FER's architecture, dense"}


def fer_claims(stored: dict, chapter: int, rule: str = "separated", tolerance: float = 0.02) -> list[dict]:
    """Chapters 6 and 8 re-read on the paper's SGD side (``stored["chapter6fer"]``, ``["chapter8fer"]``,
    :func:`compbook.cppn.runs.experiments.run_chapter6_fer` and ``run_chapter8_fer``): chapter 6's claims on FER's
    networks and on the FER twins, each pooled over its targets (``target="all"``), and chapter 8's on FER's
    architecture. A missing section gives no rows; chapter 7 has none (its FER networks test no claim)."""
    checks.mapping(stored, "stored")
    if chapter not in (6, 7, 8) or isinstance(chapter, bool):
        raise ValueError(f"chapter must be 6, 7 or 8, got {chapter!r}")
    out = []
    if chapter == 6 and "chapter6fer" in stored:
        rows = _need(stored["chapter6fer"], "stored['chapter6fer']", "rows")["rows"]
        for kind in ("fer", "fertwin"):
            mine = [r for r in rows if r.get("kind") == kind and r.get("target") == "all"]
            out += [c | {"claim": f"{FER_LABELS[kind]}: {c['claim']}"}
                    for c in (chapter6_claims({"rows": mine}, rule, tolerance) if mine else [])]
    if chapter == 8 and "chapter8fer" in stored:
        out += [c | {"claim": f"{FER_LABELS['8fer']}: {c['claim']}"}
                for c in chapter8_claims(stored["chapter8fer"], rule)]
    return out


def is_fer_reread(row: dict) -> bool:
    """Is ``row`` one of :func:`fer_claims`'s (chapters 6-8 re-read with FER's networks)?"""
    return checks.mapping(row, "row").get("claim", "").startswith(tuple(FER_LABELS.values()))


def table(reread: dict, stored: dict, rule: str = "separated", tolerance: float = 0.02,
          require_drawn: bool = True, counted: dict | None = None, labelled: dict | None = None) -> list[dict]:
    """Every claim row, chapters in order (see the chapter functions; ``require_drawn``:
    :func:`chapter5_claims`); with ``counted`` (``data/emc2/counting.json``) also :func:`counting_claims`; with
    ``labelled`` (:func:`load_labelled`) also :func:`labeller_claims`; where
    ``stored`` holds them, :func:`fer_claims` after chapters 6 and 8."""
    rule = checks.choice(rule, "rule", RULES)
    checks.real(tolerance, "tolerance", 0, 1)
    checks.boolean(require_drawn, "require_drawn")
    checks.mapping(stored, "stored")
    for key in ("theory", "chapter6", "chapter7", "chapter8", "chapter9"):
        if key not in stored:
            raise ValueError(f"stored: no {key!r} (run python -m compbook.cppn experiments --write)")
    fer = counting_claims(counted, rule) if counted is not None else []
    fer += labeller_claims(labelled, rule) if labelled is not None else []
    return (theory_claims(stored["theory"]) + chapter5_claims(reread, rule, require_drawn) + fer
            + chapter6_claims(stored["chapter6"], rule, tolerance) + fer_claims(stored, 6, rule, tolerance)
            + chapter7_claims(stored["chapter7"], rule) + chapter8_claims(stored["chapter8"], rule)
            + fer_claims(stored, 8, rule) + chapter9_claims(stored["chapter9"], rule))


def load() -> tuple[dict, dict]:
    """``(reread.json, partA_reread.json)`` from ``data/emc2/``."""
    from ..runs.experiments import STORED_FILE
    return (results.json_file(door.stored_path("emc2/reread.json"), "stored re-read"),
            results.json_file(door.stored_path(STORED_FILE), "stored Part A results"))


# -- chapter 5's readings: Picbreeder against SGD ---------------------------------------------------------------
READ = {REPRODUCED: "reproduced: Picbreeder above", NOT_REPRODUCED: "not reproduced: SGD above",
        INCONCLUSIVE: "inconclusive: intervals overlap"}


def reading(pb: dict, sg: dict, rule: str = "separated") -> str:
    """The paper's claim (Picbreeder above SGD) read from two rows ``{"score", "ci95"}`` (:func:`verdict`);
    inconclusive when a network's unperturbed render already fails the judge (:func:`drew_concept`)."""
    if not (drew_concept(pb) and drew_concept(sg)):
        return "inconclusive: fails unperturbed"
    return READ[verdict(pb, sg, rule=rule)]


def readings(reread: dict, judge: str | None = None) -> pd.DataFrame:
    """Chapter 5's verdict on the paper's claim per target and delta under ``judge`` (default: the chosen one):
    Picbreeder against the SGD twins pooled (:func:`reading`), one column per delta."""
    import pandas as pd
    checks.mapping(reread, "reread")
    judge = judge or next((r["judge"] for r in reread["rows"] if r["judge"].split(" ")[0] == reread["chosen"]), None)
    by = {(r["concept"], r["network"], r["delta"]): r for r in reread["rows"] if r["judge"] == judge}
    if not by:
        raise ValueError(f"judge {judge!r}: no rows in reread")
    rows = [{"target": c, "delta": d, "reading": reading(r, by[(c, "sgd", d)]).split(":")[0]}
            for (c, net, d), r in by.items() if net == "picbreeder"]
    return pd.DataFrame(rows).pivot(index="target", columns="delta", values="reading")


def reading_table(reread: dict, judge: str | None = None) -> pd.DataFrame:
    """Chapter 5's verdict table with the numbers it reads: one row per target and delta (index ``(target,
    δ)``), columns ``Picbreeder`` and ``SGD twins pooled`` (``"0.57 [0.49, 0.65]"``, 95% Wilson) and the
    ``reading`` of :func:`readings`, under ``judge`` (default: the chosen one)."""
    import pandas as pd
    from ...stats import fmt
    read = readings(reread, judge).stack()
    judge = judge or next(r["judge"] for r in reread["rows"] if r["judge"].split(" ")[0] == reread["chosen"])
    by = {(r["concept"], r["network"], r["delta"]): r for r in reread["rows"] if r["judge"] == judge}
    rows = [{"target": c, "δ": f"{d:g}", "Picbreeder": fmt(by[(c, "picbreeder", d)]),
             "SGD twins pooled": fmt(by[(c, "sgd", d)]), "reading": v} for (c, d), v in read.items()]
    return pd.DataFrame(rows).set_index(["target", "δ"])


def live_table(results: dict, cfg, reread: dict | None = None):
    """Chapter 5's live scores (:func:`compbook.cppn.audit.tables.live_scores`) as a table: Picbreeder and the SGD
    seeds pooled (Wilson), and the reading, per target. With ``reread`` (``data/emc2/reread.json``) each target's
    stored row at the same delta and judge follows its live one (index ``(target, run)``, run ``"this run"`` or
    ``"stored"``): the live run scores a seeded sample of the weights, the stored one more of them, and the page
    quotes the stored value, so a reader sees both numbers with their counts side by side."""
    import pandas as pd
    from .tables import ci_cell, pooled_row
    rows = []
    if reread is not None:
        checks.mapping(reread, "reread")
        judge = next((r["judge"] for r in reread["rows"] if r["judge"].split(" ")[0] == reread["chosen"]), None)
        by = {(r["concept"], r["network"], r["delta"]): r for r in reread["rows"] if r["judge"] == judge}
    for name in cfg.live:
        pb = pooled_row(results, name, "Picbreeder", [0], cfg.delta)
        sg = pooled_row(results, name, "SGD", cfg.live_seeds, cfg.delta)
        seeds = "SGD twins" if reread is not None else f"SGD seeds {list(cfg.live_seeds)}"
        rows.append({"target": name, "run": "this run", "Picbreeder": ci_cell(pb), seeds: ci_cell(sg),
                     "reading": reading(pb, sg)})
        if reread is not None and (name, "picbreeder", cfg.delta) in by:
            pb, sg = by[(name, "picbreeder", cfg.delta)], by[(name, "sgd", cfg.delta)]
            rows.append({"target": name, "run": "stored", "Picbreeder": ci_cell(pb), seeds: ci_cell(sg),
                         "reading": reading(pb, sg)})
    table = pd.DataFrame(rows).set_index(["target", "run"])
    return table if reread is not None else table.droplevel("run")


def reread_table(reread: dict, steps_now: dict):
    """Chapter 5's stored re-read (``data/emc2/reread.json``) as one table: per target, delta and judge, Picbreeder
    and SGD with intervals and the reading. A judge whose SGD verdicts were given on twins of another run than
    the ones trained for ``steps_now[target]`` steps is marked ``*`` (the first model labeller's verdicts of the first
    batch)."""
    import pandas as pd
    from .tables import ci_cell
    by = {(r["concept"], r["network"], r["judge"], r["delta"]): r for r in reread["rows"]}
    rows = []
    for (c, net, j, d), r in by.items():
        if net != "picbreeder":
            continue
        sg = by[(c, "sgd", j, d)]
        earlier = "sources" in sg and not any(f"_{steps_now[c]}steps" in x for x in sg["sources"])
        rows.append({"target": c, "delta": d, "judge": j + (" *" if earlier else ""), "Picbreeder": ci_cell(r),
                     "SGD": ci_cell(sg), "reading": reading(r, sg)})
    return pd.DataFrame(rows).sort_values(["target", "delta", "judge"])
