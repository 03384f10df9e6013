"""The k / lambda study of chapter 15: where S2AE's L0 mechanism can act, and the chapter's k chosen from it.

At small k a TopK SAE's token has many more positive pre-activations than kept latents, so pushing a kept latent
down only lets the next one in: S2AE's usage penalties cannot lower L0. This module trains one SAE per
(k, lambda, seed) on the same data and budget through the sweep runner (:mod:`compbook.sae.runs.tasks`,
:mod:`compbook.runs.sweeps`: one config per SAE, keyed by the training config, the data's digest and the device; the
records in ``data/sae/study/sweep/``, the SAEs stored before the runner still served from ``data/sae/study/k{k}/``,
so a rerun resumes), scores each on held-out scenes and measures that slack:

* ``positive pre``: the mean number of positive pre-activations (``ReLU`` before TopK) per image patch;
* ``k-th kept = 0``: the share of image patches whose k-th largest pre-activation is 0 (fewer than k positive,
  so L0 < k there);
* ``k-th value`` / ``(k+1)-th value``: their medians over the patches (a small gap: the next latent is close).

:func:`choose_k` picks the chapter's k from the **vanilla** rows only (our choice, a parameter: the smallest k
whose vanilla EV reaches the paper's regime, EV >= 0.99), before any vanilla vs S2AE comparison.
:func:`reread` turns a paired difference into reproduced / not reproduced / inconclusive (our rule).

Sizes: :class:`compbook.sae.sizes.PartCRun` (the CPU defaults are this module's defaults; a command runs at the
mode's). Command (the study of the chapter, about 10 minutes of one core; resumable)::

    nice -n 5 python -m compbook.sae study
    python -m compbook.sae study --backend ray --address HEAD:6379     # the same SAEs on a Ray cluster
"""

from __future__ import annotations

import dataclasses
import io
import json
import time

import numpy as np
import pandas as pd
import torch

from ... import checks, results
from ...stats import difference_row, fmt_pm, reread
from .. import experiment as ex, paper
from ..s2ae import SAEData, SAETrainConfig, check_data
from ..sizes import PartCRun
from ...results import door

#: The CPU sizes (Part C's size table, :class:`compbook.sae.sizes.PartCRun`): the functions' defaults.
CPU = PartCRun()
KS, LAMS, SEEDS, STEPS = CPU.ks, CPU.lams, tuple(range(CPU.seeds)), CPU.steps
#: The chapter's setting (chapters 15-16): tiny VLM block 2, 600 training and 200 held-out scenes.
N_TRAIN, N_TEST, LAYER = CPU.n_train, CPU.n_test, CPU.layer
BASE, STORE = CPU.base(), CPU.store
#: The rule that picks k (our choice): the smallest k whose vanilla EV reaches the paper's regime.
EV_TARGET = paper.EV_MIN


def store_of(k: int, store: str = STORE, optimiser: str = "ours") -> str:
    """Folder (under ``data/``) of the stored SAEs of one k (and optimiser)."""
    k = checks.integer(k, "k")
    checks.safe_path("data", store, "store")
    checks.safe_name(optimiser, "optimiser")
    return f"{store}/k{k}" if optimiser == "ours" else f"{store}/{optimiser}_k{k}"


def study_runs(train: SAEData, base: SAETrainConfig = BASE, ks=KS, lams=LAMS, seeds=SEEDS, store: str = STORE,
               retrain: bool = False, progress: bool = False, log=None, **options) -> list:
    """One SAE per (k, lambda, seed), trained through the sweep runner (:func:`compbook.sae.runs.tasks.trained`:
    ``options`` are :func:`compbook.runs.sweeps.run`'s backend, address, workers, retries, per_task) or loaded when
    stored for this config and data (the runner's records in ``data/<store>/sweep/``, the earlier files in
    ``data/<store>/k{k}/``): [{"k", "lam", "method", "seed", "sae", "train s"}], k by k, seed by seed."""
    from ..runs import tasks

    checks.instance(base, "base", SAETrainConfig)
    ks = checks.integers(ks, "ks", 1, ndim=1, min_size=1).tolist()
    lams = [checks.real(lam, "lams", 0) for lam in checks.sequence(lams, "lams")]
    seeds = checks.integers(seeds, "seeds", 0, ndim=1, min_size=1).tolist()
    check_data(train, None, any(lam > 0 for lam in lams), "train")
    for k in ks:                           # every config is checked before anything is trained
        dataclasses.replace(base, k=k)
        store_of(k, store)
    if log is not None and not callable(log):
        raise ValueError(f"log must be a function (str) -> None or None, got {log!r:.60}")
    plan = [(dataclasses.replace(base, k=int(k), lam=lam, seed=int(seed)), store_of(k, store))
            for k in ks for seed in seeds for lam in lams]
    runs = tasks.trained(train, plan, store, retrain=retrain, progress=progress, log=log, **options)
    for r, (c, _) in zip(runs, plan):
        r["k"], r["lam"] = c.k, c.lam
    return runs


def _lam_of(method: str) -> float:
    return 0.0 if method == "vanilla" else float(method.split("=")[1].rstrip(")"))


@torch.no_grad()
def slack(sae, data: SAEData) -> dict:
    """Positive pre-activations per image patch, the share whose k-th kept value is 0, the medians of the k-th
    and (k+1)-th largest pre-activations (see the module docstring)."""
    ex._check_pair(sae, data)
    x = data.acts[:, data.patch_idx].reshape(-1, data.acts.shape[-1])
    pre = sae.pre_acts(x)
    k = sae.k
    top = pre.topk(min(k + 1, sae.d_sae), dim=-1).values
    kth = top[:, k - 1]
    nxt = top[:, k] if top.shape[1] > k else torch.zeros_like(kth)
    return {"positive pre": float((pre > 0).sum(-1).float().mean()),
            "k-th kept = 0": float((kth == 0).float().mean()),
            "k-th value": float(kth.median()), "(k+1)-th value": float(nxt.median())}


def study_table(runs: list, test: SAEData, masks: torch.Tensor) -> pd.DataFrame:
    """One row per run: k, lambda, seed, EV, L0 (all tokens and patches), dead, mIoU, the slack, train s."""
    runs = checks.sequence(runs, "runs")
    for i, r in enumerate(runs):
        checks.fields(checks.mapping(r, f"runs[{i}]"), f"runs[{i}]", r, ("k", "lam", "method", "seed", "sae",
                                                                         "train s"))
    rows = []
    for r in runs:
        rows.append({"k": r["k"], "lambda": r["lam"], "method": r["method"], "seed": r["seed"],
                     **ex.score(r["sae"], test, masks), **slack(r["sae"], test), "train s": r["train s"]})
    return pd.DataFrame(rows)


COLUMNS = ("EV", "L0", "L0 patches", "mIoU", "positive pre", "k-th kept = 0")


def study_summary(df: pd.DataFrame, columns=COLUMNS) -> pd.DataFrame:
    """Mean and 95% t-interval over seeds (:func:`compbook.sae.experiment.summarise`) per (k, lambda)."""
    _columns(df, "df", ("k", "method", *columns))
    parts = []
    for k, g in df.groupby("k", sort=True):
        s = ex.summarise(g, columns)
        s.insert(0, "k", k)
        parts.append(s)
    out = pd.concat(parts)
    out.index = [f"k={k}, {m}" for k, m in zip(out.k, out.index)]
    return out.drop(columns="k")


def choose_k(df: pd.DataFrame, ev_target: float = EV_TARGET) -> int:
    """The smallest k whose **vanilla** mean EV over seeds is >= ``ev_target`` (the largest-EV k if none).

    Our choice (a parameter): only vanilla rows are read, so the choice cannot depend on how S2AE does."""
    checks.real(ev_target, "ev_target", None, 1)
    _columns(df, "df", ("k", "lambda", "EV"))
    v = df[df["lambda"] == 0].groupby("k")["EV"].mean().sort_index()
    if v.empty:
        raise ValueError("df: no vanilla (lambda = 0) rows to choose k from")
    ok = v[v >= ev_target]
    return int(ok.index[0]) if len(ok) else int(v.idxmax())


def _columns(df, name: str, columns) -> pd.DataFrame:
    """``df`` if it is a DataFrame with every column of ``columns``; ValueError naming the missing ones."""
    checks.instance(df, name, pd.DataFrame)
    missing = sorted(set(columns) - set(df.columns))
    if missing:
        raise ValueError(f"{name}: missing columns {missing} (has {sorted(map(str, df.columns))})")
    return df


def paired(df: pd.DataFrame, k: int, lam: float, columns=("EV", "L0", "L0 patches", "mIoU")) -> pd.DataFrame:
    """S2AE (``lam``) - vanilla at ``k``, paired by seed: mean and 95% t half-width per column."""
    g = df[df.k == k]
    rows = {}
    for c in columns:
        m, h = ex.paired_difference(g, c, "vanilla", ex.method_name(lam))
        rows[c] = {"S2AE - vanilla": m, "95% +-": h}
    return pd.DataFrame(rows).T


def reading_table(df: pd.DataFrame, lams=None, l0_share: float = paper.L0_SHARE,
                  miou_rel: float = paper.MIOU_GAIN, columns=("EV", "L0 patches", "mIoU")) -> pd.DataFrame:
    """S2AE - vanilla paired by seed at every k of :func:`study_table`'s ``df`` and every S2AE lambda in ``lams``
    (default: all of ``df``'s but 0), with :func:`reread` of L0 (the paper's drop, ``l0_share`` of k) and mIoU
    (the paper's gain, ``miou_rel`` of vanilla's mIoU at that k; chapter 15 and its notes). One row per
    (k, lambda): ``"<column>"`` the mean, ``"<column> ±"`` the 95% half-width, "L0 reading", "mIoU reading"."""
    missing = {"k", "lambda", "method", "seed", *columns} - set(df.columns)
    if missing:
        raise ValueError(f"df: columns {sorted(missing)} missing (a study_table is expected)")
    lams = sorted(set(df["lambda"]) - {0.0}) if lams is None else [checks.real(x, "lams", 0) for x in lams]
    rows = []
    for k in sorted(df.k.unique()):
        van = df[(df.k == k) & (df["lambda"] == 0)]["mIoU"].mean()
        for lam in lams:
            d = paired(df, k, lam, columns)
            row = {"k": int(k), "lambda": lam}
            for c, (m, h) in d.iterrows():
                row[c], row[f"{c} ±"] = float(m), float(h)
            if "L0 patches" in columns:
                row["L0 reading"] = reread(row["L0 patches"], row["L0 patches ±"], -1, l0_share * k)
            if "mIoU" in columns:
                row["mIoU reading"] = reread(row["mIoU"], row["mIoU ±"], +1, miou_rel * van)
            rows.append(row)
    return pd.DataFrame(rows)


def shown(reading: pd.DataFrame, digits: int = 3) -> pd.DataFrame:
    """:func:`reading_table` for the page: each difference as "+0.024 ± 0.003" (at most 4 significant digits)."""
    out = reading.copy()
    for c in [c for c in reading.columns if f"{c} ±" in reading.columns]:
        out[c] = [fmt_pm(m, h, digits, signed=True) for m, h in zip(reading[c], reading[f"{c} ±"])]
        out = out.drop(columns=f"{c} ±")
    return out


def run(n_seeds: int | None = None, retrain: bool = False, reference: bool = False,
        sizes: PartCRun | None = None, **options) -> None:
    """Train (or load) the study's SAEs at ``sizes`` (default: the mode's), write the tables and print the
    summary; ``reference`` also trains the reference optimiser's SAEs at the chosen k (``python -m compbook.sae
    study``). ``options``: where the sweep runs (:func:`compbook.runs.sweeps.run`'s backend, address, workers ...)."""
    t0 = time.perf_counter()
    sz = sizes or PartCRun.for_mode()

    def log(msg):
        print(f"[{time.perf_counter() - t0:7.1f} s] {msg}", flush=True)

    s = ex.load_setting(sz.n_train, sz.n_test, sz.layer)
    seeds = tuple(range(n_seeds or sz.seeds))
    runs = study_runs(s.train, sz.base(), sz.ks, sz.lams, seeds, sz.store, retrain=retrain, progress=True,
                      log=log, **options)
    df = study_table(runs, s.test, s.test_scenes.masks)
    k = choose_k(df)
    log(f"chosen k = {k}")
    out = write_table(df, sz.table("study"))
    log(f"wrote {out}")
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(study_summary(df))
    if reference:
        ref_runs = reference_runs(s.train, k, seeds, base=sz.base(), store=sz.store, retrain=retrain,
                                  **options)
        log(f"reference optimiser at k={k}: {len(ref_runs)} SAEs")
        opt = optimiser_table(runs, ref_runs, k, s.test, s.test_scenes.masks)
        write_table(opt, sz.table("optimiser"))
        with pd.option_context("display.width", 200, "display.max_columns", 20):
            print(ex.summarise(opt.assign(method=lambda d: d.optimiser + ", " + d.method)))
    log("done")


def write_table(df: pd.DataFrame, relative: str, extend: bool = False, sizes: dict | None = None):
    """Write a study table (no SAE objects) to ``data/<relative>``: ``{"made_by": ..., "rows": [JSON
    records]}`` (:func:`compbook.results.write_json`), with ``sizes`` (the run's sizes, what a reader checks
    before it serves the table) when given; ``extend``: the table holds rows of earlier runs, so its
    ``made_by`` keeps their commands. Returns the path."""

    path = door.made_path(relative, "relative")
    command = None
    if extend and path.is_file():
        command = results.joined(results.json_file(path, "stored table").get("made_by"), results.made_by(path))
    body = {"rows": json.loads(df.to_json(orient="records"))} | ({"sizes": sizes} if sizes is not None else {})
    return results.write_json(path, body, command)


def read_table(relative: str = CPU.table("study")) -> pd.DataFrame:
    """A table written by :func:`write_table` (e.g. chapter 15's study, read by chapter 16), loaded through the
    registry (:func:`compbook.results.load`)."""

    checks.safe_path("data", relative, "relative")
    rows = results.load(relative.removesuffix(".json")).data["rows"]
    return pd.read_json(io.StringIO(json.dumps(rows)), orient="records")


def reference_runs(train: SAEData, k: int, seeds=SEEDS, lams=(0.0, 0.01), base: SAETrainConfig = BASE,
                   store: str = STORE, retrain: bool = False, **options) -> list:
    """The reference optimiser's SAEs (:mod:`compbook.sae.studies.refopt`) at ``k``, same data, seeds and budget,
    through the sweep runner as :func:`study_runs` (earlier files in ``data/<store>/reference_k{k}/``)."""
    from ..runs import tasks
    from .refopt import ReferenceTrainConfig

    cfg = ReferenceTrainConfig(**{**dataclasses.asdict(base), "k": int(k)})
    seeds = checks.integers(seeds, "seeds", 0, ndim=1, min_size=1).tolist()
    lams = [checks.real(lam, "lams", 0) for lam in checks.sequence(lams, "lams")]
    check_data(train, None, any(lam > 0 for lam in lams), "train")
    where = store_of(k, store, "reference")
    plan = [(dataclasses.replace(cfg, lam=lam, seed=int(seed)), where) for seed in seeds for lam in lams]
    runs = tasks.trained(train, plan, store, optimiser="reference", retrain=retrain, **options)
    for r in runs:
        r["k"], r["lam"] = int(k), _lam_of(r["method"])
    return runs


def optimiser_table(ours: list, reference: list, k: int, test: SAEData, masks: torch.Tensor) -> pd.DataFrame:
    """Rows of :func:`study_table` for both optimisers at ``k`` (the lambdas of ``reference``), column
    ``optimiser`` = "ours" / "reference"."""
    lams = {r["lam"] for r in reference}
    mine = [r for r in ours if r["k"] == k and r["lam"] in lams]
    return pd.concat([study_table(mine, test, masks).assign(optimiser="ours"),
                      study_table(reference, test, masks).assign(optimiser="reference")], ignore_index=True)


#: Object-scale region counts (our choice): on the 8x8 patch grid, 4 and 8 regions give about 16 and 8 patches per
#: region (objects here cover ~8-16 patches), against the paper's ``min(20, P)`` = 20 (about 3 patches a region).
REGION_COUNTS = CPU.counts
REGION_SEEDS = SEEDS


def region_store(n_regions: int, store: str = STORE) -> str:
    """Folder (under ``data/``) of the S2AEs trained with ``n_regions`` regions per image."""
    checks.safe_path("data", store, "store")
    return f"{store}/regions/n{checks.integer(n_regions, 'n_regions')}"


def region_runs(train: SAEData, counts=REGION_COUNTS, k: int = 32, lam: float = 0.01, seeds=REGION_SEEDS,
                base: SAETrainConfig = BASE, store: str = STORE, retrain: bool = False, log=None, **options) -> list:
    """Vanilla and S2AE with the paper's regions at ``k`` (the study's SAEs) and S2AE with each region count of
    ``counts``, same data, seeds and budget, in one run of the sweep runner (``options``: as
    :func:`study_runs`; earlier files in ``data/<store>/k{k}/`` and ``data/<store>/regions/n{n}/``):
    [{"k", "lam", "regions", "method", "seed", "sae", "train s"}]; method "vanilla" or "S2AE, {n} regions"."""
    from ..runs import tasks

    counts = [checks.integer(n, "counts", 1) for n in checks.sequence(counts, "counts")]
    base = dataclasses.replace(base, k=int(k), n_regions=None)
    seeds = checks.integers(seeds, "seeds", 0, ndim=1, min_size=1).tolist()
    lam = checks.real(lam, "lam", 0)
    check_data(train, None, True, "train")
    if log is not None and not callable(log):
        raise ValueError(f"log must be a function (str) -> None or None, got {log!r:.60}")
    plan = [(dataclasses.replace(base, lam=x, seed=int(s)), store_of(k, store)) for s in seeds for x in (0.0, lam)]
    for n in counts:
        plan += [(dataclasses.replace(base, n_regions=int(n), lam=lam, seed=int(s)), region_store(n, store))
                 for s in seeds]
    runs = tasks.trained(train, plan, store, retrain=retrain, log=log, **options)
    n_paper = min(paper.REGIONS, len(train.patch_idx))
    for r, (c, _) in zip(runs, plan):
        n = c.n_regions or (n_paper if c.lam else 0)
        r.update(k=int(k), lam=c.lam, regions=n, method="vanilla" if n == 0 else f"S2AE, {n} regions")
    return runs


def region_purities(data: SAEData, labels: torch.Tensor, counts) -> dict:
    """Per region count: purity (:func:`compbook.sae.metrics.region_purity`) of the paper's regions (attention +
    proximity, :meth:`SAEData.regions`) and of proximity alone, on ``data``'s images (``labels`` (N, P))."""
    from ..metrics import region_purity
    from ..regions import average_linkage, grid_distance

    spatial = grid_distance(*data.grid).expand(len(labels), -1, -1)
    return {int(n): {"purity (regions)": region_purity(data.regions(int(n)), labels),
                     "purity (proximity only)": region_purity(average_linkage(spatial, int(n)), labels)}
            for n in counts}


def region_table(runs: list, test: SAEData, masks: torch.Tensor, labels: torch.Tensor) -> pd.DataFrame:
    """:func:`study_table` rows plus ``regions`` (0 for vanilla) and, for S2AE rows, the purity of that many
    regions and of proximity alone on the held-out images (:func:`region_purities`)."""
    df = study_table(runs, test, masks)
    df.insert(3, "regions", [r["regions"] for r in runs])
    pur = region_purities(test, labels, sorted({r["regions"] for r in runs if r["regions"]}))
    for c in ("purity (regions)", "purity (proximity only)"):
        df[c] = [pur[n][c] if n else np.nan for n in df.regions]
    return df


def region_reading(df: pd.DataFrame, l0_share: float, miou_rel: float) -> pd.DataFrame:
    """One row per S2AE region count of :func:`region_table`'s ``df``: patches per region, region purity beside
    proximity alone, S2AE - vanilla paired by seed (EV, L0 patches, mIoU: "mean ± 95% half-width") and
    :func:`reread` of L0 (the paper's drop ``l0_share`` of k) and mIoU (the paper's gain ``miou_rel`` of
    vanilla's mIoU)."""
    _columns(df, "df", ("method", "k", "regions", "seed", "purity (regions)", "purity (proximity only)", "EV",
                        "L0 patches", "mIoU"))
    van = df[df.method == "vanilla"]
    if van.empty:
        raise ValueError("df: no vanilla rows to pair with")
    k = int(van.k.iloc[0])
    rows = []
    for n, g in df[df.regions > 0].groupby("regions", sort=True):
        both = pd.concat([van, g])
        method = g.method.iloc[0]
        row = {"regions": int(n), "seeds": len(g)}
        row |= {c: float(g[c].iloc[0]) for c in ("purity (regions)", "purity (proximity only)")}
        d = {c: ex.paired_difference(both, c, "vanilla", method) for c in ("EV", "L0 patches", "mIoU")}
        row |= {f"{c} S2AE - vanilla": fmt_pm(m, h, signed=True) for c, (m, h) in d.items()}
        row["L0 reading"] = reread(*d["L0 patches"], -1, l0_share * k)
        row["mIoU reading"] = reread(*d["mIoU"], +1, miou_rel * van.mIoU.mean())
        rows.append(row)
    return pd.DataFrame(rows).set_index("regions")


def run_regions(counts=REGION_COUNTS, n_seeds: int | None = None, k: int = 32, lam: float = 0.01,
                retrain: bool = False, sizes: PartCRun | None = None, **options) -> None:
    """Train (or load) the region-count S2AEs at ``k`` and ``lam`` at ``sizes`` (default: the mode's), write
    ``data/sae/study/regions/table.json`` and print the reading (``python -m compbook.sae study --regions 4 8``)."""
    t0 = time.perf_counter()
    sz = sizes or PartCRun.for_mode()

    def log(msg):
        print(f"[{time.perf_counter() - t0:7.1f} s] {msg}", flush=True)

    s = ex.load_setting(sz.n_train, sz.n_test, sz.layer)
    log("setting loaded")
    runs = region_runs(s.train, counts, k, lam, tuple(range(n_seeds or sz.seeds)), sz.base(), sz.store,
                       retrain=retrain, log=log, **options)
    df = region_table(runs, s.test, s.test_scenes.masks, s.test_scenes.labels)
    log(f"wrote {write_table(df, sz.table('regions'))}")
    with pd.option_context("display.width", 250, "display.max_columns", 20):
        print(ex.summarise(df, ("EV", "L0 patches", "mIoU")))
        print(region_reading(df, paper.L0_SHARE, paper.MIOU_GAIN))
    log("done")
