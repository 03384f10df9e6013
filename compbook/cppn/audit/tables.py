"""Part A's chapter tables: the loaders and table builders chapters 3, 4 and 6-9 show as pandas DataFrames.

A chapter calls one function per table instead of picking keys out of JSON itself:

* :func:`stored` loads one chapter's part of ``data/emc2/partA_reread.json`` (``python -m compbook.cppn experiments
  --write``); :func:`pick` finds one score row by its labels;
* :func:`score_table` turns score rows (:func:`compbook.cppn.runs.experiments.judged`) into one column per judge,
  ``"0.83 [0.77, 0.88]"`` (:func:`compbook.stats.fmt`); :func:`chapter6`, :func:`chapter8`, :func:`chapter9`
  build the stored runs' tables (:func:`chapter6_fer`, :func:`chapter7_fer`, :func:`chapter8_fer`: the same with
  FER's networks), :func:`pruning_table`, :func:`optimizer_table`, :func:`unknown_table`,
  :func:`depth_table` the live ones;
* :func:`rho_checks`, :func:`edge_budget` and :func:`target_summary` (chapter 3), :func:`etf_table` (chapter 4).
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import pandas as pd

from ... import checks, results
from ...stats import fmt, mean_ci
from .. import frames, panel, volume_ratio
from ...results import door


# -- stored runs and rows ------------------------------------------------------------------------------------------
def stored(chapter: str) -> dict:
    """One chapter's stored run (``"chapter6"`` ... ``"chapter9"``, ``"theory"``) from
    ``data/emc2/partA_reread.json``."""
    from ..runs.experiments import STORED_FILE
    data = results.json_file(door.stored_path(STORED_FILE, "python -m compbook.cppn experiments --write"),
                            "stored Part A results")
    if chapter not in data:
        raise ValueError(f"chapter must be one of {sorted(data)}, got {chapter!r}")
    return data[chapter]


def pick(rows: Sequence[dict], **match) -> dict:
    """The one row of ``rows`` whose keys equal ``match`` (e.g. ``name="SP", judge="default"``); ValueError when
    none or several match."""
    hits = [r for r in rows if all(r.get(k) == v for k, v in match.items())]
    if len(hits) != 1:
        raise ValueError(f"rows: expected one row with {match}, found {len(hits)} of {len(rows)}")
    return hits[0]


def score_table(rows: Sequence[dict], index: str = "name", digits: int = 2, unperturbed: bool = True
                ) -> pd.DataFrame:
    """Chapters 6, 8 and 9: one row per ``row[index]``, one column per judge holding ``"score [lo, hi]"``; with
    ``unperturbed``, also the share of networks whose own render the default judge accepts."""
    checks.sequence(rows, "rows")
    checks.integer(digits, "digits", 0)
    out: dict = {}
    for r in rows:
        line = out.setdefault(r[index], {})
        line[r["judge"]] = fmt(r, digits)
        if unperturbed and r["judge"] == panel.DEFAULT and "unperturbed" in r:
            line["own render ok"] = r["unperturbed"]
    return pd.DataFrame(out).T


# -- chapter 6 -----------------------------------------------------------------------------------------------------
def pruning_table(rows: Sequence[dict], final: dict, target) -> pd.DataFrame:
    """Chapter 6, this run: sparsity, MSE and the judges' scores of each retrained network (``final``: method ->
    model)."""
    from .. import prune, train
    table = score_table(rows)
    table.insert(0, "MSE", [round(train.mse(final[n], target), 4) for n in table.index])
    table.insert(0, "sparsity", [round(prune.sparsity(final[n].masks), 3) for n in table.index])
    table.index.name = "method (seed 0)"
    return table


def chapter6(ch6: dict | None = None) -> pd.DataFrame:
    """Chapter 6, the stored run (default :func:`stored` ``("chapter6")``): mean MSE over seeds and the scores."""
    ch6 = ch6 or stored("chapter6")
    table = score_table(ch6["rows"])
    table.insert(0, "MSE (mean)", [round(float(np.mean(ch6["mse"][n])), 4) for n in table.index])
    table.index.name = f"method ({len(ch6['seeds'])} seeds)"
    return table


def chapter6_fer(ch6: dict | None = None, pooled: bool = False) -> pd.DataFrame:
    """Chapter 6 on FER's networks and the FER twins (default :func:`stored` ``("chapter6fer")``): per (kind,
    target, method) SP's mean sparsity, the mean MSE and each judge's ``score [lo, hi]``; ``pooled``: only the
    rows pooled over targets (``target="all"``)."""
    ch6 = ch6 or stored("chapter6fer")
    out: dict = {}
    for r in ch6["rows"]:
        if (r["target"] == "all") != pooled:
            continue
        key = (r["kind"], r["target"], r["name"])
        line = out.setdefault(key, {} if pooled else {
            "SP sparsity": round(float(np.mean(ch6["levels"][f"{r['kind']} {r['target']}"])), 2),
            "MSE": round(float(np.mean(ch6["mse"][f"{r['kind']} {r['target']}"][r["name"]])), 4)})
        line["networks"] = r["networks"]
        line[r["judge"]] = fmt(r)
        if r["judge"] == panel.DEFAULT and "unperturbed" in r:
            line["own render ok"] = r["unperturbed"]
    return pd.DataFrame(out).T.rename_axis(["kind", "target", "method"])


# -- chapter 7 -----------------------------------------------------------------------------------------------------
def depth_table(sweeps: dict, intervals: dict) -> pd.DataFrame:
    """Chapter 7, this run: per target and depth, the mean MSE and each judge's ``score [lo, hi]``
    (``intervals[target][judge]``: :meth:`compbook.cppn.depth.DepthSweep.intervals`)."""
    return pd.concat({n: pd.DataFrame(
        {"MSE": sw.mean("loss").round(4), **{j: [fmt(r) for r in intervals[n][j]] for j in intervals[n]}},
        index=pd.Index(sw.depths, name="depth")) for n, sw in sweeps.items()}, names=["target"])


def depth_summary(sweeps: dict, ratios: dict) -> pd.DataFrame:
    """Chapter 7's closing table: compression ratio, peak depth and mean score at every depth, per target."""
    first = next(iter(sweeps.values()))
    return pd.DataFrame({
        "ratio": [ratios[n] for n in sweeps], "peak": [sw.peak() for sw in sweeps.values()],
        **{f"depth {d}": [sw.mean("score")[k] for sw in sweeps.values()] for k, d in enumerate(first.depths)}},
        index=pd.Index(list(sweeps), name="target")).round(3)


def chapter7_fer(ch7: dict | None = None) -> pd.DataFrame:
    """Chapter 7 with FER's networks (default :func:`stored` ``("chapter7fer")``): per target FER's depth and
    width, the PNG ratio, the default line's raw and rounded depth, and each (network, judge)'s score."""
    ch7 = ch7 or stored("chapter7fer")
    rows = {}
    for n, t in ch7["targets"].items():
        rows[n] = {"FER depth": t["depth"], "width": t["width"], "ratio": round(t["ratio"], 2),
                   "line": round(t["line"], 1), "predicted": t["predicted"]}
        rows[n] |= {f"{r['name']} {r['judge']}": fmt(r) for r in t["rows"]}
    return pd.DataFrame(rows).T.rename_axis("target")


# -- chapter 8 -----------------------------------------------------------------------------------------------------
def lr_table(runs: dict, best: dict) -> pd.DataFrame:
    """Chapter 8's learning-rate grid: per (optimizer, lr) the mean and per-seed final MSE, the seconds, and an
    arrow at each optimizer's best lr (``runs``: :attr:`compbook.cppn.runs.experiments.OptimizerRun.runs`)."""
    from ..runs.experiments import finite_mean
    return pd.DataFrame([{"optimizer": opt, "lr": lr, "mean MSE": finite_mean(r.final_loss),
                          "MSE per seed": np.round(r.final_loss, 4).tolist(), "seconds": round(r.seconds, 1),
                          "best": "<-" if best[opt] == lr else ""}
                         for (opt, lr), r in runs.items()]).set_index(["optimizer", "lr"])


def optimizer_table(rows: Sequence[dict], mse: dict) -> pd.DataFrame:
    """Chapter 8: per optimizer the final MSE (mean over seeds with a bootstrap 95% interval, ``mse``:
    optimizer -> one loss per seed) and each judge's ``score [lo, hi]``."""
    table = score_table(rows, unperturbed=False)
    table.insert(0, "MSE", [fmt(mean_ci(mse[o]), 4) for o in table.index])
    return table


def chapter8(ch8: dict | None = None) -> pd.DataFrame:
    """Chapter 8, the stored run (default :func:`stored` ``("chapter8")``)."""
    ch8 = ch8 or stored("chapter8")
    return optimizer_table(ch8["rows"], ch8["mse"])


def chapter8_fer(ch8: dict | None = None) -> pd.DataFrame:
    """Chapter 8 on FER's architecture (default :func:`stored` ``("chapter8fer")``): :func:`optimizer_table`
    with each optimizer's best rate."""
    ch8 = ch8 or stored("chapter8fer")
    table = optimizer_table(ch8["rows"], ch8["mse"])
    table.insert(0, "best lr", [ch8["best_lr"][o] for o in table.index])
    return table


# -- chapter 9 -----------------------------------------------------------------------------------------------------
def unknown_table(rows: dict, mses: dict) -> pd.DataFrame:
    """Chapter 9: per (target, network kind) the mean MSE and each judge's ``score [lo, hi]`` (``rows``: target ->
    score rows, ``mses``: target -> kind -> mean MSE)."""
    out: dict = {}
    for n, rs in rows.items():
        for r in rs:
            line = out.setdefault((n, r["name"]), {"MSE": round(float(mses[n][r["name"]]), 4)})
            line[r["judge"]] = fmt(r)
            if r["judge"] == panel.DEFAULT:
                line["default: own render ok"] = r["unperturbed"]
    return pd.DataFrame(out).T.rename_axis(["target", "network"])


def chapter9(ch9: dict | None = None) -> pd.DataFrame:
    """Chapter 9, the stored run (default :func:`stored` ``("chapter9")``): :func:`unknown_table` of its targets,
    MSE averaged over seeds."""
    ch9 = ch9 or stored("chapter9")
    t = ch9["targets"]
    return unknown_table({n: v["rows"] for n, v in t.items()},
                         {n: {k: float(np.mean(m)) for k, m in v["mse"].items()} for n, v in t.items()})


def unknown_summary(ratios: dict, predicted: dict, used: dict, rows: dict) -> pd.DataFrame:
    """Chapter 9's closing table: ratio, predicted and trained depth, and each (judge, kind)'s score per target."""
    return pd.DataFrame({"ratio": ratios, "predicted": predicted, "trained": used,
                         **{f"{j} {k}": {n: pick(rows[n], name=k, judge=j)["score"] for n in rows}
                            for j in panel.JUDGE_NAMES for k in ("dense", "SP")}}).round(3)


# -- chapters 3 and 4 ----------------------------------------------------------------------------------------------
def tiny_targets() -> dict:
    """Chapter 3's four tiny targets (``name -> LayeredDAG``): one unit, two units, a chain, a fan-in."""
    def dag(*masks):
        return volume_ratio.LayeredDAG(tuple(np.array(m, dtype=bool) for m in masks))
    return {"one unit": dag([[1, 1]], [[1]]),                  # out = f(x1, x2)
            "two units": dag([[1, 0], [1, 1]], [[1, 1]]),      # width 2, depth 1
            "chain": dag([[1, 0]], [[1]], [[1]]),              # depth 2, width 1
            "fan-in": dag([[1, 0], [0, 1]], [[1, 1]], [[1]])}  # width 2, depth 2


def rho_checks(targets: dict, p: float = 0.5, n_mc: int = 200_000, max_edges: int = 18, sizes=range(1, 4)
               ) -> pd.DataFrame:
    """Chapter 3: rho three ways (every mask enumerated, the closed form, Monte Carlo with its standard error) for
    each target and network W x L (W, L in ``sizes``) that fits it with at most ``max_edges`` possible edges.
    Monte Carlo seed = the row's number."""
    checks.real(p, "p", 0, 1, low_open=True)
    checks.integer(n_mc, "n_mc")
    checks.check_budget(8.0 * n_mc * max_edges, "rho_checks' Monte Carlo masks")
    rows = []
    for name, target in targets.items():
        for W in sizes:
            for L in sizes:
                N = sum(a * b for a, b in volume_ratio.network_shapes(target, W, L))
                if N > max_edges or W < target.width or L < target.depth:
                    continue
                est, se = volume_ratio.rho_monte_carlo(target, W, L, p, n=n_mc, seed=len(rows))
                rows.append(dict(target=name, W=W, L=L, N=N, enumerated=volume_ratio.rho_exact(target, W, L, p),
                                 closed_form=volume_ratio.rho(target, W, L, p), monte_carlo=est, mc_stderr=se))
    return pd.DataFrame(rows)


def rho_check_view(table: pd.DataFrame) -> pd.DataFrame:
    """Chapter 3: :func:`rho_checks`' rows as the reader reads them: rho by the closed form (4 significant
    digits), the enumerated and the Monte Carlo rho as ratios to it (1 is agreement: two printed numbers that
    agree to rounding can differ in their last digit, ratios cannot)."""
    t = checks.instance(table, "table", pd.DataFrame)
    return pd.DataFrame({"target": t.target, "W": t.W, "L": t.L, "edges N": t.N,
                         "rho, closed form": [f"{v:.4g}" for v in t.closed_form],
                         "enumerated / closed form": (t.enumerated / t.closed_form).round(4),
                         "Monte Carlo / closed form": (t.monte_carlo / t.closed_form).round(3)})


def edge_budget(name: str, p: float = 0.5) -> pd.Series:
    """Chapter 3: one Picbreeder target's layered DAG counted at its peak ``(W_min, L*)``.

    A Series: inputs / outputs, hidden widths, the target's edges split into genome links, carry edges (copies
    of a value one layer up) and read-out edges, W_min, L*, the live units that read a hidden layer
    (``U(L*) = w_2 + ... + w_{L*} + n_out``), the network's possible edges and ``log10 rho`` there
    (one decimal)."""
    from .. import picbreeder
    if not isinstance(name, str):
        raise ValueError(f"name must be a target's name (a str), got {name!r}")
    genome = picbreeder.load_genome(name)
    t = volume_ratio.dag_from_genome(genome)
    n_read = int(t.masks[-1].sum())
    shapes = volume_ratio.network_shapes(t, t.width, t.depth)
    return pd.Series({
        "inputs / outputs": f"{t.n_in} / {t.n_out}",
        "hidden widths": ", ".join(str(w) for w in t.widths),
        "target edges": t.n_edges, "of them: genome links": len(genome.links),
        "of them: carry edges": t.n_edges - len(genome.links) - n_read, "of them: read-out edges": n_read,
        "widest layer Wₘᵢₙ": t.width, "hidden layers L*": t.depth,
        "units reading a hidden layer U(L*)": sum(t.widths[1:]) + t.n_out,
        "possible edges at (Wₘᵢₙ, L*)": sum(o * i for o, i in shapes),
        "log₁₀ ρ at (Wₘᵢₙ, L*)": round(volume_ratio.log_rho(t, t.width, t.depth, p) / math.log(10), 1)},
        name=name, dtype=object)


def target_summary(names: Sequence[str] = ("skull", "butterfly", "apple"), p: float = 0.5) -> pd.DataFrame:
    """Chapter 3: per Picbreeder target its W_min, L*, edges, log10 rho at the sweet spot, and how many halvings
    of rho one more unit of width or one more layer costs there."""
    from .. import picbreeder
    rows = []
    for name in names:
        t = volume_ratio.dag_from_genome(picbreeder.load_genome(name))
        rows.append({"target": name, "W_min": t.width, "L*": t.depth, "edges": t.n_edges,
                     "log10 rho peak": volume_ratio.log_rho(t, t.width, t.depth, p) / math.log(10),
                     "halvings / unit W": volume_ratio.width_decay_rate(t, t.depth, p) / math.log(2),
                     "halvings / layer": volume_ratio.depth_decay_rate(t, t.width, p) / math.log(2)})
    return pd.DataFrame(rows).set_index("target")


def etf_frames() -> dict:
    """Chapter 4's equiangular tight frames: simplices in d = 2..8 and Paley ETFs for q = 5, 13, 17, 29 (name ->
    ``(r, d)`` array)."""
    etfs = {f"simplex d={d}": frames.simplex_etf(d) for d in range(2, 9)}
    etfs.update({f"Paley q={q}": frames.paley_etf(q) for q in (5, 13, 17, 29)})
    return etfs


def etf_table(etfs: dict | None = None) -> pd.DataFrame:
    """Chapter 4: per frame (default :func:`etf_frames`) r, d, coherence, Welch bound and |difference|, plus
    ``angle spread`` (max - min of |<f_i, f_j>|, 0 when equiangular) and ``tightness`` (max |F^T F - r/d I|, 0
    when tight)."""
    rows = []
    for name, F in (etfs or etf_frames()).items():
        r, d = F.shape
        G = np.abs(F @ F.T)[~np.eye(r, dtype=bool)]
        rows.append(dict(frame=name, r=r, d=d, coherence=frames.mutual_coherence(F),
                         welch_bound=frames.welch_bound(r, d),
                         angle_spread=float(G.max() - G.min()),
                         tightness=float(np.abs(F.T @ F - r / d * np.eye(d)).max())))
    table = pd.DataFrame(rows).set_index("frame")
    table["|difference|"] = (table.coherence - table.welch_bound).abs()
    return table


# -- chapter 5: the live score and the stored re-read -------------------------------------------------------------
def live_scores(pb_models: dict, sgd: dict, judge, fallback, cfg) -> dict:
    """Chapter 5's live scores: ``{(name, "Picbreeder" | "SGD", seed, delta): ScoreResult}`` for the targets and
    seeds ``cfg`` (:class:`~compbook.cppn.runs.experiments.BenchConfig`) names, at ``cfg.delta`` and ``cfg.res``. Each
    score asks ``judge`` (e.g. stored VLM verdicts), or ``fallback`` where it has no verdict (the result's
    ``source`` says which answered)."""
    from .. import emc2
    from ..judges.cache import score_or_fall_back

    def score(model, concept, sample):
        return score_or_fall_back(lambda j: emc2.compositional_score(
            model, j, concept, delta=cfg.delta, res=cfg.res, sample=sample, progress=False), judge, fallback)

    out = {}
    for name in cfg.live:
        out[(name, "Picbreeder", 0, cfg.delta)] = score(pb_models[name], name, cfg.pb_sample)
        for s in cfg.live_seeds:
            out[(name, "SGD", s, cfg.delta)] = score(sgd[name][s], name, cfg.sample)
    return out


def pooled_row(results: dict, name: str, kind: str, seeds: Sequence[int], delta: float) -> dict:
    """``{"score", "ci95", "k", "n"}`` over every perturbation of ``kind``'s networks (chapter 5): the verdicts of
    ``results[(name, kind, seed, delta)]`` for each seed, pooled, with a 95% Wilson interval."""
    from ...stats import wilson
    v = np.concatenate([results[(name, kind, s, delta)].verdicts.numpy() for s in seeds])
    k, n = int(v.sum()), len(v)
    return {"score": k / n, "ci95": list(wilson(k, n)), "k": k, "n": n}


def ci_cell(row: dict) -> str:
    """``0.83 [0.77, 0.88] n=150``: a score row with its count (chapter 5's tables)."""
    for key in ("score", "ci95", "n"):
        if key not in checks.mapping(row, "row"):
            raise ValueError(f"row must hold 'score', 'ci95' and 'n', got keys {sorted(row)}")
    return f"{fmt(row)} n={row['n']}"


def per_network_scores(reread: dict, counted: dict | None = None, judge: str | None = None) -> pd.DataFrame:
    """Chapter 5's main figure, one row per network, target and delta: ``score`` with a 95% Wilson interval
    (``lo``, ``hi``) and ``n`` judged perturbations, under ``judge`` (a judge name of ``reread.json``; default:
    the chosen one). Rows: the Picbreeder network and each SGD twin (its own seeded sample, ``n`` the pooled
    count over the twins) from the stored re-read; with ``counted`` (``data/emc2/counting.json``) also FER's SGD
    networks at the default judge, rule ``"nonzero"`` and the fixed ``+delta`` policy (its one delta)."""
    from ...stats import wilson
    checks.mapping(reread, "reread")
    if "rows" not in reread or "chosen" not in reread:
        raise ValueError("reread: needs 'rows' and 'chosen' (is it data/emc2/reread.json?)")
    judge = judge or next((r["judge"] for r in reread["rows"] if r["judge"].split(" ")[0] == reread["chosen"]), None)
    rows = [r for r in reread["rows"] if r["judge"] == judge]
    if not rows:
        raise ValueError(f"judge {judge!r}: no rows in reread")
    out = []
    for r in rows:
        if r["network"] == "picbreeder":
            out.append({"target": r["concept"], "network": "Picbreeder", "delta": r["delta"], "k": r["k"],
                        "n": r["n"]})
            continue
        per = r.get("per_seed") or []
        n = r["n"] // len(per) if per else 0
        out += [{"target": r["concept"], "network": f"SGD twin {s}", "delta": r["delta"],
                 "k": int(round(x * n)), "n": n} for s, x in enumerate(per)]
    if counted is not None:
        checks.mapping(counted, "counted")
        out += [{"target": r["target"], "network": "FER's SGD", "delta": counted["scale"], "k": r["k"],
                 "n": r["n"]} for r in counted["rows"] if r["kind"] == "fer" and r["rule"] == "nonzero"
                and r["policy"] == "fixed" and r["judge"] == "default"]
    df = pd.DataFrame(out)
    df["score"] = df.k / df.n
    df["lo"], df["hi"] = zip(*(wilson(int(k), int(n)) for k, n in zip(df.k, df.n)))
    return df



# -- chapter 5: a second labeller -----------------------------------------------------------------------
#: how chapter 5 names the network kinds of the labelled items
KIND_NAMES = {"picbreeder": "Picbreeder", "sgd": "our twins", "fer": "FER's SGD", "fertwin": "FER-arch twins"}


def _cell(value: float, ci) -> str:
    return fmt({"score": value, "ci95": ci}) if np.isfinite(value) else "-"


def labeller_kind_table(result: dict, first_kinds: Sequence[str] = ("picbreeder",)) -> pd.DataFrame:
    """The model labellers' verdicts per labeller, network kind and delta from a stored second-labeller run
    (``data/semantic/validation_batch3.json``): counts, yes of all items and yes of yes/no, each with a 95%
    Wilson interval. The first labeller's rows are shown for ``first_kinds`` only (its twins are other networks)."""
    checks.mapping(result, "result")
    rows = [("labeller 2", r) for r in result["verdicts"]["kind_delta"]] + \
           [("labeller 1", r) for r in result["verdicts"]["first_kind_delta"] if r["kind"] in first_kinds]
    out = pd.DataFrame([{"labeller": who, "network": KIND_NAMES.get(r["kind"], r["kind"]), "delta": r["delta"],
                         "n": r["n"], "yes": r["yes"], "no": r["no"], "can't tell": r["cant_tell"],
                         "yes of all": _cell(r["score"], r["ci95"]),
                         "yes of yes/no": _cell(r["yes_of_yes_no"], r["ci95_yes_no"])} for who, r in rows])
    return out.set_index(["labeller", "network", "delta"])


def labeller_agreement_table(result: dict, judges: Sequence[str] | None = None) -> pd.DataFrame:
    """The judges at their fixed thresholds against the second labeller (stored run): per judge and network
    kind, the answer counts, the judge's yes on "can't tell" items, the agreement a judge that always says yes
    would reach (the labeller's yes rate), agreement, balanced accuracy and kappa on the yes/no items with 95%
    intervals (Wilson; a bootstrap within each of the labeller's classes for balanced accuracy and kappa, which cannot
    show the uncertainty of a class of one or two items), and the judge's recall on the labeller's "no" items (Wilson:
    the interval that shows how few they are)."""
    checks.mapping(result, "result")
    judges = list(result["fixed"]) if judges is None else list(judges)
    rows = []
    for j in judges:
        for r in result["fixed"][j]["rows"]:
            rows.append({"judge": f"{j} {result['fixed'][j]['threshold']:g}",
                         "network": KIND_NAMES.get(r["network"], r["network"]), "yes/no": r["n"],
                         "can't tell": r["cant_tell"], "judge yes on ?": r["judge_yes_on_cant_tell"],
                         "always yes": round(r["labeller_yes"], 2),
                         "agreement": _cell(r["agreement"], r["agreement_ci"]),
                         "balanced": _cell(r["balanced_accuracy"], r["balanced_ci"]),
                         "kappa": _cell(r["kappa"], r["kappa_ci"]), "labeller no": r["no"],
                         "judge no on them": _cell(r["recall_no"], r["recall_no_ci"])})
    return pd.DataFrame(rows).set_index(["judge", "network"])


def cross_labeller_table(cross: dict) -> pd.DataFrame:
    """Chosen on one labeller, validated on the other (:func:`compbook.cppn.audit.agreement.cross_labeller`): per
    direction, candidate and network kind the threshold, the balanced accuracy on the choosing labeller's
    held-out half (all kinds), and the balanced accuracy and agreement on the other labeller's items."""
    checks.mapping(cross, "cross")
    rows = []
    for d in cross["directions"]:
        for cand, val in d["validation"].items():
            own = d["choice_held_out"][cand][0]["balanced_accuracy"]
            for r in val:
                rows.append({"chosen on": d["chosen_on"], "candidate": cand + (" *" if cand == d["chosen"] else ""),
                             "threshold": d["thresholds"][cand],
                             "network": KIND_NAMES.get(r["network"], r["network"]),
                             "bal. own held-out": round(own, 3), "n other": r["n"],
                             "bal. other": _cell(r["balanced_accuracy"], r["balanced_ci"]),
                             "agr. other": _cell(r["agreement"], r["agreement_ci"])})
    return pd.DataFrame(rows).set_index(["chosen on", "candidate", "network"])


def overlap_table(result: dict) -> pd.DataFrame:
    """The overlap set (``data/semantic/overlap.json``, ``python -m compbook.cppn semantic overlap``): one
    column per earlier labeller's items, rows: yes rates (of all items, 95% Wilson) of the earlier labeller,
    the third labeller and the default judge on the sample; yes on the whole earlier batch, the earlier
    labeller's and the third labeller's reweighted to it (a point estimate); then the earlier labeller against
    the third (same one of three answers; agreement and kappa where both said yes or no) and the judge against
    the third (agreement and kappa where the third said yes or no)."""
    checks.mapping(result, "result")
    names = {"labeller 1": "labeller 1's items", "labeller 2": "labeller 2's items"}
    cols = {}
    for g in result["groups"]:
        p, j = g["labellers"], g["judge_vs_third"]
        cols[names.get(g["labeller"], g["labeller"])] = {
            "items": str(g["n"]),
            "yes: their labeller": _cell(p["first"]["yes_rate"], p["first"]["yes_rate_ci"]),
            "yes: labeller 3": _cell(p["second"]["yes_rate"], p["second"]["yes_rate_ci"]),
            "yes: default judge": _cell(j["first"]["yes_rate"], j["first"]["yes_rate_ci"]),
            "batch yes: their labeller": f"{g['original_yes_batch']:.2f}",
            "batch yes: labeller 3 (est.)": f"{g['third_yes_reweighted']:.2f}",
            "same answer (of 3)": _cell(p["exact"], p["exact_ci"]),
            "both yes/no": str(p["n_yes_no"]),
            "agreement on them": _cell(p["agreement_yes_no"], p["agreement_yes_no_ci"]),
            "kappa on them": f"{p['kappa_yes_no']:.2f}",
            "judge vs 3: yes/no items": str(j["n_yes_no"]),
            "judge vs 3: agreement": _cell(j["agreement_yes_no"], j["agreement_yes_no_ci"]),
            "judge vs 3: kappa": f"{j['kappa_yes_no']:.2f}"}
    return pd.DataFrame(cols)
